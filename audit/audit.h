/*
 * audit.h - ward's record: one SQLite file (schema in docs/schema.md).
 * Knows nothing about ptrace.
 *
 * Lifecycle (writer):
 *   audit_open()            create/open the database, check the schema
 *   audit_run_begin()       one row in runs; returns the run id
 *   audit_process_*(), audit_event(), audit_output()   any order, batched
 *   audit_run_end()         final row update, made durable
 *   audit_close()
 *
 * Thread safety: all functions on one struct audit may be called from
 * several threads; an internal mutex serialises them.
 *
 * Durability: rows are written in batched transactions with prepared
 * statements (the traced code never waits on fsync). A "deny" or "kill"
 * event, audit_flush() and audit_run_end() commit at once; audit_run_end()
 * also syncs to disk. Errors: functions return 0 or -errno (-EIO for an
 * SQLite failure, with audit_errmsg() saying what).
 */
#ifndef WARD_AUDIT_AUDIT_H
#define WARD_AUDIT_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

struct audit;

#define AUDIT_RUN_ID_LEN 16 /* hex characters; the buffer needs +1 */

/*
 * Resolve the database path: explicit (non-NULL, non-empty) wins, then
 * $WARD_DB, then $XDG_STATE_HOME/ward/audit.db, then
 * $HOME/.local/state/ward/audit.db. Writes into buf. Returns 0 or
 * -ENAMETOOLONG / -ENOENT (no HOME).
 */
int audit_default_path(const char *explicit_path, char *buf, size_t n);

/*
 * Open (creating the file mode 0600 and its parent directories mode 0700
 * as needed) and set WAL, foreign keys and the schema (PRAGMA user_version).
 * readonly: open an existing file only, never create or migrate.
 * On success *out is owned by the caller (audit_close). On failure returns
 * -errno and writes a message naming the path and the cause into
 * errbuf: -ENOENT (readonly and missing), -EACCES, -EIO (not a database,
 * corrupt), -EPROTO (schema newer than this ward, or not ward's database).
 */
int audit_open(const char *path, bool readonly, struct audit **out,
	       char *errbuf, size_t errlen);
void audit_close(struct audit *a); /* flushes; NULL is a no-op */
const char *audit_errmsg(const struct audit *a); /* last error text */
const char *audit_path(const struct audit *a);

/* ---------------------------- writer ---------------------------- */

struct audit_run_info {
	const char *argv_json;      /* ward's own argv as a JSON array */
	const char *language;       /* "python", "node", "sh" */
	const char *interpreter;    /* absolute path */
	const char *code;           /* the code run (may contain NULs) */
	size_t code_len;
	const char *code_sha256;    /* hex */
	const char *code_name;      /* file name, "-c" or "-" */
	const char *policy_name;
	const char *policy_json;
	const char *policy_sha256;  /* hex */
	const char *workdir;
	const char *limits_json;    /* JSON object */
	const char *host;           /* hostname */
	const char *kernel;         /* uname -r and -v */
	const char *ward_version;
	uid_t uid;                  /* uid the code runs as */
	long long start_ns;         /* CLOCK_REALTIME */
};

/* Insert the run row and commit it. run_id receives a fresh random id
 * (AUDIT_RUN_ID_LEN hex chars). Returns 0 or -errno. */
int audit_run_begin(struct audit *a, const struct audit_run_info *ri,
		    char run_id[AUDIT_RUN_ID_LEN + 1]);

struct audit_run_end {
	long long end_ns;
	long long duration_ms;
	int exit_code;           /* -1 when killed by a signal */
	int signal;              /* 0 when exited */
	const char *status;      /* ok|error|timeout|killed|aborted|limit */
	const char *cause;       /* why the run ended that way, or NULL */
	long long stdout_bytes;  /* total written by the code */
	long long stderr_bytes;
	bool stdout_truncated;   /* not all of it was kept */
	bool stderr_truncated;
	long long events, denials, processes; /* counters */
};
/* Update the run row, commit and sync. Returns 0 or -errno. */
int audit_run_end(struct audit *a, const struct audit_run_end *re);

struct audit_process {
	int serial;              /* 1, 2, ... in order of appearance in the run */
	int parent_serial;       /* 0 for the first process */
	pid_t pid;               /* tid for threads */
	pid_t tgid;
	pid_t ppid;
	const char *kind;        /* "process" or "thread" */
	long long start_ns;
	long long start_ticks;   /* /proc/PID/stat starttime: with pid, an
				  * identity that survives pid reuse */
	const char *exe;         /* may be NULL (filled at exec) */
	const char *argv_json;   /* may be NULL */
};
int audit_process_start(struct audit *a, const struct audit_process *p);
int audit_process_exec(struct audit *a, int serial, long long ts_ns,
		       const char *exe, const char *argv_json);
/* exit_code -1 and signal N when killed by a signal. */
int audit_process_exit(struct audit *a, int serial, long long ts_ns,
		       int exit_code, int signal);

struct audit_event {
	long long ts_ns;
	pid_t pid, tid;
	int proc_serial;
	int nr;
	const char *syscall;
	const char *args_json;   /* JSON object text */
	const char *raw;         /* raw path/target as the code gave it, or NULL */
	const char *target;      /* resolved path / address, or NULL */
	const char *decision;    /* "allow", "deny", "kill" */
	const char *rule;
	const char *reason;
	int err;                 /* errno returned to the code on deny, else 0 */
	bool would_deny;         /* audit mode: would have been denied */
	const char *backtrace;   /* JSON array text, or NULL */
};
/* Appends one event (seq assigned in order). deny/kill commit at once. */
int audit_event(struct audit *a, const struct audit_event *e);

enum audit_stream { AUDIT_STDOUT = 1, AUDIT_STDERR = 2 };
/* Appends one output chunk. */
int audit_output(struct audit *a, long long ts_ns, enum audit_stream s,
		 const void *data, size_t len);

/* Commit the current batch now (no fsync). */
int audit_flush(struct audit *a);

/* ---------------------------- reader ---------------------------- */

/*
 * Find a run by full id, unique prefix, or "last". Writes the full id.
 * Returns 0, -ENOENT (no such run), -EINVAL (prefix is ambiguous).
 */
int audit_find_run(struct audit *a, const char *query,
		   char run_id[AUDIT_RUN_ID_LEN + 1]);

#endif
