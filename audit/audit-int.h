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

#include <jansson.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>

#include "audit/audit.h"
#include "common/sha256.h"

#define AUDIT_SCHEMA_VERSION 7
#define AUDIT_APPLICATION_ID 0x77617264 /* "ward", PRAGMA application_id */
#define AUDIT_BUSY_MS	     10000	/* wait this long for the lock */
#define AUDIT_BATCH_ROWS     256	/* commit after this many rows */
#define AUDIT_BATCH_BYTES    (1 << 20)	/* ... or this much queued data */
/* kept free past the WAL during a run, for its end (open.c) */
#define AUDIT_RESERVE_BYTES (4 << 20)

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

/* The hash chain (chain.c). Events and outputs have one chain each. */
enum audit_chain_table {
	AUDIT_CHAIN_EVENTS,
	AUDIT_CHAIN_OUTPUTS,
	AUDIT_CHAIN__COUNT
};
#define AUDIT_HASH_TEXT_LEN (64 + 1 + 32) /* "link:tag" in hex */
struct audit_chain_state {
	uint8_t link[WARD_SHA256_LEN]; /* the last row's link */
	long long count;	       /* rows chained */
};
/* The database's chain key (DB.key) with its HMAC states. */
struct audit_chain_key {
	bool loaded;
	uint8_t key[32];
	char id[17]; /* hex of the first 8 bytes of SHA-256("ward-key-id-v1"
		      * || key) */
	struct ward_sha256 inner, outer;
	long long since_ns; /* the key file's mtime: every run begun after it
			     * is chained */
};

#define AUDIT_SEAL_ST_COUNT 7

/* A run's place in the chain of runs (seal version 2, anchor.c): the
 * number of its seal in the database and the run sealed before it. */
struct audit_run_link {
	long long n; /* 1 for the first seal of the chain */
	bool has_prev;
	char prev_run[AUDIT_RUN_ID_LEN + 1];
	uint8_t prev_seal[WARD_SHA256_LEN];
};

/* A seal made in the transaction under way: its line for the seal log,
 * written once the transaction commits. */
struct audit_seal_note {
	struct audit_seal_note *next;
	char run[AUDIT_RUN_ID_LEN + 1];
	char line[];
};

struct audit {
	sqlite3 *db;
	char *path;
	bool readonly;
	bool ward_cols;	 /* runs has ward_pid, ward_start_ticks, boot_id */
	bool layers_col; /* runs has layers (version 2) */
	bool v4_cols;	 /* runs.env/chain, events.pyframes/hash, outputs.hash,
			  * inputs (version 4) */
	bool v5_cols;	 /* events.result (version 5) */
	bool v6_tables;	 /* the table phases (version 6) */
	bool v7_cols;	 /* outputs.cmd (version 7) */
	pthread_mutex_t lock;
	sqlite3_stmt *st[ST__COUNT];
	/* the files this writer opened (open.c): the database and its WAL,
	 * by device and inode, checked before each commit */
	bool ident;
	dev_t db_dev, wal_dev;
	ino_t db_ino, wal_ino;

	/* the run being written; run_id[0] == '\0' when none */
	char run_id[AUDIT_RUN_ID_LEN + 1];
	long long event_seq;  /* last events.seq given out in this run */
	long long output_seq; /* last outputs.seq given out in this run */
	bool end_queued;      /* the run's end row is in the queue */
	/* the run's first failed commit (-errno, 0: none) and its message,
	 * kept until the run ends: its rows stay queued (writer.c) */
	int fail_err;
	char fail_msg[512];
	size_t end_lost;   /* rows its end could not write (salvage_end) */
	bool seal_pending; /* seal the run in the batch that ends it */
	bool seal_stored;  /* ... over its rows as stored (writer.c) */
	struct audit_chain_state chain[AUDIT_CHAIN__COUNT];
	struct audit_chain_key key;
	/* the keys of the chains merged in (ward merge: DB.keys), by id;
	 * verifying picks a run's key by the key id its seal names */
	struct audit_chain_key *keyring;
	size_t n_keyring;
	char *last_chain; /* runs.chain of the last run sealed */
	/* the seal's statements (chain.c), prepared once per handle */
	sqlite3_stmt *seal_st[AUDIT_SEAL_ST_COUNT];

	struct audit_wal wal; /* the WAL as found before the open */
	/* the seal log (anchor.c): -1 when none */
	int seal_log_fd;
	char *seal_log;
	int syslog_fd; /* $WARD_SEAL_SYSLOG: a syslog socket, -1 when none */
	char *syslog_path;
	char seal_log_err[600];
	struct audit_seal_note *notes, **notes_tail;

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
/* ward merge (chain.c): appends k to DB.keys (made mode 0600), synced. 0 or
 * -errno with the message. The key of the chain key_id, loaded by
 * audit_keyring_load(), or NULL. */
int audit_keyring_add(struct audit *a, const struct audit_chain_key *k);
const struct audit_chain_key *audit_keyring_find(const struct audit *a,
						 const char *key_id);

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

/*
 * The files of the "ward" VFS (vfs.c): audit_vfs_wrap wraps its xOpen so
 * that every file's I/O goes through vfs.c; audit_vfs_io_error returns
 * (and clears) the SQLITE_IOERR_* code of the last call underneath that
 * failed on this thread, 0 if none.
 *
 * Fault injection, only in a build with -DWARD_FAULTS (build/ward-faults,
 * libaudit-faults.a): the calls $WARD_FAULT names fail; audit_faults_set
 * replaces them (and zeroes the counts) at any time; audit_faults_calls
 * says how many calls of a kind ("write", "sync", "lock", "read") were
 * made, and audit_faults_injected how many failed; audit_faults_busy_ms is
 * the busy timeout ($WARD_FAULT_BUSY_MS, else dflt).
 */
void audit_vfs_wrap(sqlite3_vfs *vfs);
int audit_vfs_io_error(void);
/* SQLite's message for rc on a's connection, or, when a call underneath
 * failed on this thread since the last look (audit_vfs_io_error), that it
 * was the disk (SQLite calls a read the disk failed a malformed file);
 * buf holds it then. */
const char *audit_sqlmsg(struct audit *a, int rc, char *buf, size_t n);
void audit_faults_set(const char *spec);
long audit_faults_calls(const char *kind);
long audit_faults_injected(void);
int audit_faults_busy_ms(int dflt);

/* The busy timeout of a connection, ms. */
#ifdef WARD_FAULTS
#define AUDIT_BUSY_TIMEOUT_MS audit_faults_busy_ms(AUDIT_BUSY_MS)
#else
#define AUDIT_BUSY_TIMEOUT_MS AUDIT_BUSY_MS
#endif

/* A writer's files are still the ones it opened: the database at its
 * path (not deleted, not replaced by another file) and its -wal. 0, or
 * -ESTALE with a->errmsg saying what happened (open.c). */
int audit_check_identity(struct audit *a);
/* Records the identity checked by audit_check_identity (open.c). */
int audit_identity_init(struct audit *a);
/* Reserves AUDIT_RESERVE_BYTES past the WAL's end: 0, or -ENOSPC with
 * a->errmsg set when the disk has not that much left (open.c). */
int audit_reserve(struct audit *a);

/* Writer internals (writer.c). */
int audit_writer_prepare(struct audit *a);
void audit_writer_finish(struct audit *a); /* drops the queue, finalizes */
int audit_commit_batch(struct audit *a);
int audit_end_unfinished(struct audit *a); /* close without run_end */

/* Chain internals (chain.c). */
/* Loads DB.key (create: make it, mode 0600, when missing). 0 or -errno
 * with a->errmsg. */
int audit_chain_key_load(struct audit *a, bool create);
void audit_chain_reset(struct audit *a); /* a new run: empty chains */
/* Chains one row: v holds the table's ncols columns but hash, in the
 * table's order; out receives the text of its hash column. */
void audit_chain_row(struct audit *a, enum audit_chain_table t,
		     const struct audit_val *v, int ncols,
		     char out[AUDIT_HASH_TEXT_LEN + 1]);
/* Inside the transaction that ends the run: reads the run row, its
 * processes and inputs, and writes runs.chain. */
int audit_chain_seal(struct audit *a);
/* Prepares the seal's statements ahead (a writer's open: the run's end
 * then compiles no SQL); failures are left to their use, which reports
 * them. audit_chain_finish finalizes them. */
void audit_chain_prepare(struct audit *a);
void audit_chain_finish(struct audit *a);
/* Seals a run the reaper closed (its ward died) with the heads its rows
 * have now: rows lost from its end cannot be told. */
int audit_chain_seal_reaped(struct audit *a, const char *run_id);
/* Hex (lowercase) of n bytes into out (2n + 1 bytes), and back (-1 on
 * anything but 2n hex digits). */
void audit_hex(const uint8_t *b, size_t n, char *out);
int audit_unhex(const char *s, size_t n, uint8_t *out);

/* The chain of runs (anchor.c). Inside the sealing transaction: the next
 * run's place, from ward_meta's head; then the head moved to run_id (and
 * the seal noted for the seal log). 0 or -errno with a->errmsg. */
int audit_link_next(struct audit *a, struct audit_run_link *l);
int audit_link_store(struct audit *a, const char *run_id,
		     const struct audit_run_link *l,
		     const uint8_t seal[WARD_SHA256_LEN], const char *sealed_by,
		     const char *cells_seal);
/* A session's cells sealed by its server (audit_seal_cells): their line
 * for the seal log, once the transaction commits. 0 or -ENOMEM. */
int audit_cells_note(struct audit *a, const char *run_id, const char *seal,
		     const char *cells_seal);
/* n and prev of a version 2 runs.chain object: 0, or -1 if malformed. */
int audit_link_parse(json_t *chain, struct audit_run_link *l);
/* After the transaction that may have sealed runs: committed, their lines
 * go to the seal log (a failure is kept for audit_seal_log_error());
 * otherwise they are dropped. */
void audit_seals_done(struct audit *a, bool committed);
/* Opens $WARD_SEAL_LOG for a writer handle, if set. 0 or -errno. */
/* Makes a file just created durable in its directory (fsync of the
 * directory): 0 or -errno. */
int audit_sync_parent(const char *path);
int audit_seal_log_open(struct audit *a);
void audit_seal_log_close(struct audit *a);
/* A writer found the WAL lost (a->wal): kept in ward_meta ('wal_lost
 * TIME') with the newest seal and the running runs of the database file,
 * so that every later `ward verify` reports it. 0 or -errno. */
int audit_wal_loss_record(struct audit *a);
/* Copies the WAL into the database file after a run's end (anchor.c). */
void audit_checkpoint(struct audit *a);

/* One statement committed at once (cells.c): sql with the values bound by
 * fill, after the queued batch; what names it in errors. */
int audit_exec_one(struct audit *a, const char *sql, const char *what,
		   int (*fill)(sqlite3_stmt *, const void *), const void *arg);

#endif
