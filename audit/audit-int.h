/*
 * audit-int.h - shared inside audit/ only.
 *
 * Writer model: rows are queued in memory (struct row, one malloc each,
 * strings copied) and written by commit_batch() in one short transaction
 * with prepared statements. The SQLite write lock is therefore held only
 * while a batch is written, never while the traced code runs, so several
 * ward processes can share one database. Every function here expects
 * a->lock to be held by its caller.
 */
#ifndef WARD_AUDIT_AUDIT_INT_H
#define WARD_AUDIT_AUDIT_INT_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>

#include "audit/audit.h"

#define AUDIT_SCHEMA_VERSION 4
#define AUDIT_APPLICATION_ID 0x77617264 /* "ward", PRAGMA application_id */
#define AUDIT_BUSY_MS	     10000	/* wait this long for the lock */
#define AUDIT_BATCH_ROWS     256	/* commit after this many rows */
#define AUDIT_BATCH_BYTES    (1 << 20)	/* ... or this much queued data */

/* Prepared statements of a writer handle. */
enum audit_stmt {
	ST_BEGIN,
	ST_COMMIT,
	ST_ROLLBACK,
	ST_RUN_BEGIN,
	ST_RUN_END,
	ST_PROC_START,
	ST_PROC_EXEC,
	ST_PROC_EXIT,
	ST_EVENT,
	ST_OUTPUT,
	ST__COUNT
};

/* One value to bind; text and blobs are borrowed until queued/bound. */
enum audit_vtype { V_NULL, V_INT, V_TEXT, V_BLOB };
struct audit_val {
	enum audit_vtype t;
	long long i;
	const void *p;
	size_t n; /* bytes of a blob (text: strlen) */
};

/* A queued row: values point into the same allocation. */
struct audit_row {
	struct audit_row *next;
	enum audit_stmt st;
	int nval;
	size_t bytes; /* copied data, for the batch size limit */
	struct audit_val v[];
};

struct audit {
	sqlite3 *db;
	char *path;
	bool readonly;
	bool ward_cols;	 /* runs has ward_pid, ward_start_ticks, boot_id */
	bool layers_col; /* runs has layers (version 2) */
	bool v4_cols;	 /* runs.env/chain, events.pyframes/hash, outputs.hash,
			  * inputs (version 4) */
	pthread_mutex_t lock;
	sqlite3_stmt *st[ST__COUNT];

	/* the run being written; run_id[0] == '\0' when none */
	char run_id[AUDIT_RUN_ID_LEN + 1];
	long long event_seq;  /* last events.seq given out in this run */
	long long output_seq; /* last outputs.seq given out in this run */
	bool end_queued;      /* the run's end row is in the queue */

	/* the batch not yet written */
	struct audit_row *head, **tail;
	unsigned queued;
	size_t queued_bytes;

	char errmsg[512];
};

/* Sets a->errmsg (printf style). Returns err unchanged for chaining. */
__attribute__((format(printf, 3, 4))) int audit_fail(struct audit *a, int err,
						     const char *fmt, ...);
/* Maps an SQLite result code to -errno and sets a->errmsg to
 * "what: <sqlite message>". */
int audit_sqlfail(struct audit *a, int rc, const char *what);
int audit_errno_of(int rc);

/* Creates the schema in an empty database, or checks an existing one:
 * 0, -EPROTO (foreign or newer), -EIO (not a database / SQLite error). */
int audit_schema_setup(struct audit *a);

/* The identity of this ward process, recorded with each run (runs.host,
 * ward_pid, ward_start_ticks, boot_id) and compared by audit_reap_stale().
 * What cannot be read is 0 or "". */
struct audit_self {
	pid_t pid;
	long long start_ticks; /* field 22 of /proc/self/stat */
	char boot_id[64];      /* /proc/sys/kernel/random/boot_id */
	char host[256];	       /* uname() nodename */
};
void audit_self_get(struct audit_self *s);
/* audit_reap_stale() with a->lock held. */
int audit_reap_locked(struct audit *a, const struct audit_self *me,
		      int *reaped);

/* Writer internals (writer.c). */
int audit_writer_prepare(struct audit *a);
void audit_writer_finish(struct audit *a); /* drops the queue, finalizes */
int audit_commit_batch(struct audit *a);
int audit_end_unfinished(struct audit *a); /* close without run_end */
/* One statement committed at once (cells.c): sql with the values bound by
 * fill, after the queued batch; what names it in errors. */
int audit_exec_one(struct audit *a, const char *sql, const char *what,
		   int (*fill)(sqlite3_stmt *, const void *), const void *arg);

#endif
