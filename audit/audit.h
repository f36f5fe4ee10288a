/*
 * audit.h - ward's record: one SQLite file (schema in docs/schema.md).
 * Knows nothing about ptrace.
 *
 * Lifecycle (writer):
 *   audit_open()            create/open the database, check the schema
 *   audit_run_begin()       one row in runs; returns the run id (first
 *                           closes the runs of dead wards: audit_reap_stale)
 *   audit_process_*(), audit_event(), audit_output()   any order, batched
 *   audit_run_end()         final row update, made durable
 *   audit_close()
 *
 * Thread safety: all functions on one struct audit may be called from
 * several threads; an internal mutex serialises them.
 *
 * Durability: rows are written in batched transactions with prepared
 * statements (the traced code never waits on fsync). Rows wait in memory
 * until their batch is committed: after 256 rows or 1 MiB of data, and at
 * once for a "deny" or "kill" event, audit_flush(), audit_run_end() and
 * audit_close() (which commit everything queued before). Other connections
 * see a row only after that commit. Commits reach the WAL file at once (a
 * killed ward loses nothing committed); the run's row (audit_run_begin),
 * every deny or kill event and the run's end are also synced to disk
 * before the call returns (a power loss keeps them). The SQLite write
 * lock is held only while a batch is written, so several wards can share
 * one database.
 *
 * Errors: functions return 0 or -errno, with audit_errmsg() saying what:
 * -EINVAL (bad argument or a constraint the data broke), -EROFS (handle
 * opened readonly), -EBUSY (database locked longer than the busy timeout),
 * -ENOSPC, -ENOMEM, -ESTALE (the database file or its -wal was deleted or
 * replaced while open), -EIO (any other SQLite failure; an I/O error's
 * errno is named in the message). A batch is committed whole or not at
 * all: when a commit fails, every row stays queued, in order, and a run's
 * rows are never committed with a hole before them. The run's first
 * failure is kept (audit_run_failure()): from then on the calls that add
 * rows queue them and return it without trying to commit (the caller
 * should stop the run: nothing may run on unrecorded); audit_flush() and
 * audit_run_end() try again, and the run's end records status "error"
 * with the failure as its cause.
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
 * errbuf: -ENOENT (readonly and missing), -EACCES, -EISDIR, -ENAMETOOLONG,
 * -EINVAL (no path), -EIO (not a database, corrupt), -EPROTO (schema newer
 * than this ward, or not ward's database; such a file is never modified).
 */
int audit_open(const char *path, bool readonly, struct audit **out,
	       char *errbuf, size_t errlen);
/* Flushes and closes; NULL is a no-op. A run begun and not ended is
 * recorded as status 'aborted'. */
void audit_close(struct audit *a);
/* The last error's text; valid until the next call on a. */
const char *audit_errmsg(const struct audit *a);
const char *audit_path(const struct audit *a);

/* ---------------------------- writer ---------------------------- */

struct audit_run_info {
	const char *argv_json;	 /* ward's own argv as a JSON array */
	const char *language;	 /* "python", "node", "sh" */
	const char *interpreter; /* absolute path */
	const char *code;	 /* the code run (may contain NULs) */
	size_t code_len;
	const char *code_sha256; /* hex */
	const char *code_name;	 /* file name, "-c" or "-" */
	const char *policy_name;
	const char *policy_json;
	const char *policy_sha256; /* hex */
	const char *workdir;
	const char *limits_json; /* JSON object */
	const char *host;	 /* uname() nodename; NULL: looked up */
	const char *kernel;	 /* uname -r and -v */
	const char *ward_version;
	uid_t uid;	      /* uid the code runs as */
	long long start_ns;   /* CLOCK_REALTIME */
	const char *env_json; /* runs.env: what --env passed (JSON array,
			       * docs/schema.md), or NULL */
};

/* Insert the run row and commit it. run_id receives a fresh random id
 * (AUDIT_RUN_ID_LEN hex chars). The row also records who writes it: the
 * calling process's pid, its start time (field 22 of /proc/self/stat) and
 * the boot id (/proc/sys/kernel/random/boot_id), for audit_reap_stale().
 * Calls audit_reap_stale() first; a failure there is ignored. Returns 0
 * or -errno. */
int audit_run_begin(struct audit *a, const struct audit_run_info *ri,
		    char run_id[AUDIT_RUN_ID_LEN + 1]);

/*
 * Close the runs whose ward died: a run stays 'running' if the process
 * that began it was killed or crashed before audit_run_end(). Every run
 * with status 'running' and runs.host equal to this host's uname()
 * nodename is judged by its recorded writer: its ward is gone if the run
 * was recorded on another boot (boot_id differs), or on this boot by a pid
 * that no longer exists or now belongs to a process with another start
 * time. Such a run gets status 'aborted', cause "ward stopped before the
 * run ended (killed or crashed); the record holds what was written until
 * then", ended_ns = the latest timestamp among its events, outputs and
 * processes (started_ns if none), duration_ms from those, and events,
 * denials and processes counted from its rows; its exit status stays
 * NULL. Left alone: runs of other hosts, runs without a recorded boot id
 * or pid, and runs whose ward might be alive (a live pid this process may
 * not signal or whose start time it cannot read). A run whose ward ends it
 * meanwhile keeps that end.
 * *reaped (may be NULL) receives the number of runs closed. Returns 0,
 * -EROFS (readonly handle), -EBUSY, -ENOMEM, -EIO.
 */
int audit_reap_stale(struct audit *a, int *reaped);

/* For readers, at once: 1 when r is still 'running' but its ward is gone
 * (this host, and another boot, no such process, or its pid reused), as
 * audit_reap_stale() judges; 0 otherwise (ended, alive, another host,
 * cannot tell). Reads /proc only, never the database. */
struct audit_run;
int audit_run_ward_gone(const struct audit_run *r);

struct audit_run_end {
	long long end_ns;
	long long duration_ms;
	int exit_code;		/* -1 when killed by a signal */
	int signal;		/* 0 when exited */
	const char *status;	/* ok|error|timeout|killed|aborted|limit */
	const char *cause;	/* why the run ended that way, or NULL */
	long long stdout_bytes; /* total written by the code */
	long long stderr_bytes;
	bool stdout_truncated; /* not all of it was kept */
	bool stderr_truncated;
	long long events, denials, processes; /* counters */
	const char *layers_json; /* JSON array of the containment layers
				  * ({name, active, detail}), or NULL */
};
/* Update the run row, commit and sync. Returns 0 or -errno. If the run's
 * record failed (audit_run_failure(), or this commit), the run is recorded
 * with status "error" and the failure as its cause when that can still be
 * written, and -errno is returned either way (audit_errmsg() says whether
 * the end was recorded). The run is over when it returns: rows that could
 * not be written are dropped. */
int audit_run_end(struct audit *a, const struct audit_run_end *re);

/* The first failed commit of the run in progress: its -errno (0: none)
 * and its message into buf. */
int audit_run_failure(struct audit *a, char *buf, size_t n);

struct audit_process {
	int serial;	   /* 1, 2, ... in order of appearance in the run */
	int parent_serial; /* 0 for the first process */
	pid_t pid;	   /* tid for threads */
	pid_t tgid;
	pid_t ppid;
	const char *kind; /* "process" or "thread" */
	long long start_ns;
	long long start_ticks; /* /proc/PID/stat starttime: with pid, an
				  * identity that survives pid reuse */
	const char *exe;       /* may be NULL (filled at exec) */
	const char *argv_json; /* may be NULL */
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
	const char *args_json; /* JSON object text */
	const char *raw;      /* raw path/target as the code gave it, or NULL */
	const char *target;   /* resolved path / address, or NULL */
	const char *decision; /* "allow", "deny", "kill" */
	const char *rule;
	const char *reason;
	int err;	       /* errno returned to the code on deny, else 0 */
	bool would_deny;       /* audit mode: would have been denied */
	const char *backtrace; /* JSON array text, or NULL */
	const char *pyframes;  /* Python frames read from the code's memory
				* (untrusted), JSON object text, or NULL */
	/* events.result: the call's return value as the code got it (-errno
	 * when it failed; for a denial, -err). has_result false: NULL, the
	 * call never returned (a successful exec, an exit, a kill), or the
	 * row predates the column. */
	bool has_result;
	long long result;
};
/* Appends one event; its seq is 1, 2, ... in call order within the run.
 * deny/kill commit at once. */
int audit_event(struct audit *a, const struct audit_event *e);

enum audit_stream { AUDIT_STDOUT = 1, AUDIT_STDERR = 2 };
/* Appends one output chunk (its own seq 1, 2, ... in call order within
 * the run). An empty chunk is accepted and not stored. */
int audit_output(struct audit *a, long long ts_ns, enum audit_stream s,
		 const void *data, size_t len);
/* The same for the output of a session's command (run beside the cells,
 * tools/agent/session-cell.c) whose cells row is cmd (its n, > 0;
 * outputs.cmd). */
int audit_output_cmd(struct audit *a, long long ts_ns, enum audit_stream s,
		     long long cmd, const void *data, size_t len);

/* Commit the current batch now (no fsync); with a run in progress, first
 * check that the file is still the database opened (-ESTALE). */
int audit_flush(struct audit *a);

/*
 * Sessions (cells.c): one row per cell of a session's run, and one per
 * file a cell created or changed. They name their run (run_id), which may
 * be written by another process; each row is committed at once.
 */
struct audit_cell {
	const char *run_id;
	long long n; /* 1, 2, ... within the run */
	const char *code;
	size_t code_len;
	long long started_ns, ended_ns; /* CLOCK_REALTIME */
	const char *status;		/* as in the cell's result */
	const char *result_json;	/* the result object sent back */
};
int audit_cell(struct audit *a, const struct audit_cell *c);

struct audit_artifact {
	const char *run_id;
	long long cell;	  /* the cell after which it was seen */
	const char *path; /* relative to the workdir */
	long long size;
	const char *sha256; /* hex */
	long long ts_ns;
};
int audit_artifact(struct audit *a, const struct audit_artifact *f);
/* The cells of a run by n (pointers borrowed for the call; code may hold
 * NULs). A file older than schema version 3 has none. Iterator rules as
 * for the readers below. */
int audit_cells_each(struct audit *a, const char *run_id,
		     int (*fn)(const struct audit_cell *, void *), void *arg);

/* The files recorded as created or changed by a run (artifacts), by cell,
 * then path: a session's cells are 1, 2, ...; `ward run` records its own
 * as cell 0 when it ends. Iterator rules as for the readers below. */
int audit_artifacts_each(struct audit *a, const char *run_id,
			 int (*fn)(const struct audit_artifact *, void *),
			 void *arg);
/*
 * Phases (cells.c, schema version 6): a run with a setup phase (ward run
 * --setup, a session's setup) records one row per phase when it ends,
 * committed at once. Its processes are serials first_serial..last_serial
 * (0, 0: it started none), so each event, by its proc_serial, belongs to
 * exactly one phase.
 */
struct audit_phase {
	const char *run_id;
	long long n;			/* 1, 2, ... in order */
	const char *name;		/* "setup", "main" */
	long long started_ns, ended_ns; /* CLOCK_REALTIME */
	int first_serial, last_serial;
	const char *status; /* as a run's: ok|error|timeout|killed|... */
	int exit_code;	    /* its first process's; -1 when signalled */
	const char *cause;  /* or NULL */
	const char *code;   /* what the phase ran (NULL: the run's code) */
	size_t code_len;
	const char *layers_json; /* its containment layers, or NULL */
};
int audit_phase(struct audit *a, const struct audit_phase *p);
/* A run's phases by n (none in a file older than version 6, nor in a run
 * without phases). Iterator rules as for the readers below. */
int audit_phases_each(struct audit *a, const char *run_id,
		      int (*fn)(const struct audit_phase *, void *), void *arg);

/*
 * Inputs (inputs.c, schema version 4): the files `ward run --input` gave a
 * run, one row each, committed at once. data is NULL when the bytes were
 * not kept (over ward run's --keep-inputs cap); size and sha256 always are.
 */
struct audit_input {
	const char *run_id;
	long long n;	    /* 1, 2, ... in the order given */
	const char *name;   /* its name in the workdir */
	long long size;	    /* bytes */
	const char *sha256; /* hex, of the bytes the code got */
	const void *data;   /* size bytes, or NULL when not kept */
	size_t data_len;    /* read: the bytes at data (a reader checks it
			     * against size and sha256) */
};
int audit_input(struct audit *a, const struct audit_input *in);
/* A run's inputs by n (none in a file older than version 4). Iterator
 * rules as for the readers below. */
int audit_inputs_each(struct audit *a, const char *run_id,
		      int (*fn)(const struct audit_input *, void *), void *arg);
/* runs.env of a run: *out a malloc'd copy (the caller frees), NULL when
 * not recorded. 0, -ENOENT (no such run), -ENOMEM, -EIO. */
int audit_run_env(struct audit *a, const char *run_id, char **out);

/* ---------------------------- chain ---------------------------- */
/*
 * The tamper-evident record (chain.c; docs/schema.md "The hash chain").
 * Every events and outputs row carries a hash chained to the row before it
 * in its table (by seq) with a tag keyed by the database's chain key
 * (DB.key, mode 0600, made at the first run); audit_run_end() seals the
 * run: runs.chain holds both chains' heads and counts, tags of the run
 * row's columns, of its processes and inputs rows, and a keyed seal over
 * all of it.
 */

/* runs.chain of the run this handle ended last (JSON text), or NULL.
 * Valid until the next run ends or audit_close(). */
const char *audit_run_chain(const struct audit *a);

/* Use this key file instead of DB.key (verifying a copy). 0 or -errno
 * with audit_errmsg(). */
int audit_chain_key_file(struct audit *a, const char *path);

/* One thing wrong with a run's record. */
struct audit_problem {
	const char *table;  /* events, outputs, runs, processes, inputs */
	long long row;	    /* seq (events, outputs), serial (processes),
			     * n (inputs), or 0 */
	const char *column; /* the column, or NULL */
	const char *what;   /* in words */
};

struct audit_verify {
	char run_id[AUDIT_RUN_ID_LEN + 1];
	char status[16];   /* runs.status */
	bool unchained;	   /* recorded before the chain: nothing to check */
	bool sealed;	   /* runs.chain is there and parses */
	bool broken_seal;  /* runs.chain is there and does not parse */
	bool keyed;	   /* sealed with a key (hmac-sha256) */
	bool key_checked;  /* the key was at hand: tags checked */
	bool key_mismatch; /* a key was at hand, but not the sealing one */
	bool seal_checked; /* the seal was recomputed */
	char alg[16], key_id[17], seal[65];
	long long rows[2];   /* events, outputs found */
	char head[2][65];    /* the last stored link of each, hex */
	char key_note[256];  /* what could not be checked, and why */
	unsigned problems;   /* problems found (all, even past a stop) */
	bool cells_unsealed; /* it has cells or artifacts and no seal of them */
	long long link_n;    /* its place in the chain of runs (seal version
			      * 2), 0 when sealed before it */
	char prev_run[AUDIT_RUN_ID_LEN + 1]; /* the run sealed before it */
};

/*
 * Recompute the chains of one run (full id) and compare with its seal:
 * fn is called once per problem (return non-zero to stop; that value is
 * returned). Opens no key itself: the handle's key is used when it is
 * loaded (audit_verify_key()). Returns 0 (out says what was found),
 * -ENOENT (no such run), -EIO etc.
 */
int audit_verify_run(struct audit *a, const char *run_id,
		     struct audit_verify *out,
		     int (*fn)(const struct audit_problem *, void *),
		     void *arg);
/* The database as a whole: with chain, the chain of runs (each version 2
 * seal names its place n and the run sealed before it; ward_meta holds the
 * newest), and with seal_log (a path, or NULL) the seal log against it;
 * always, the WAL: lost now (audit_wal_state()) or lost before (a writer
 * found it so and recorded it in ward_meta). Problems go to fn with table
 * "chain of runs" (row: the place n, or 0), "seal log" (row: the line
 * number) or "WAL". 0 (out says what was found), or -errno. */
struct audit_links {
	long long linked; /* runs with a place in the chain */
	long long older;  /* runs sealed before the chain (version 1) */
	long long head_n; /* the newest place given (ward_meta), 0: none */
	char head_run[AUDIT_RUN_ID_LEN + 1];
	unsigned problems;
	bool log_checked;
	long long log_lines;  /* seal lines read */
	long long log_first;  /* the first place the log holds, 0: none */
	long long log_before; /* runs sealed before it: not in the log */
	unsigned wal_losses;  /* the WAL lost now, and losses recorded */
};
int audit_verify_links(struct audit *a, bool chain, const char *seal_log,
		       struct audit_links *out,
		       int (*fn)(const struct audit_problem *, void *),
		       void *arg);
/* The links of one run (full id) in the chain of runs, without reading
 * the rest of it run by run: the run sealed before it is there at the
 * place before with the seal it names, and the run at the place after (or
 * the chain's head) names it with its seal. Problems go to fn as in
 * audit_verify_links ("chain of runs"), *problems counts them; a run with
 * no place in the chain (sealed before it, or not sealed) has none. 0, or
 * -errno. */
int audit_verify_neighbours(struct audit *a, const char *run_id,
			    unsigned *problems,
			    int (*fn)(const struct audit_problem *, void *),
			    void *arg);
/* Whether DB-wal still holds what was committed to it: read (before the
 * database is opened: SQLite's first open rebuilds the index) from the
 * WAL index in DB-shm and the WAL's frames. lost: committed transactions
 * not yet copied into the database file cannot be read any more (what
 * says how). quick (a writer's open): the checksums of the frames before
 * the index's last one are not checked (ward verify does). 0, or
 * -ENAMETOOLONG. */
struct audit_wal {
	bool index, wal;	/* DB-shm's index is whole; DB-wal exists */
	long long index_frames; /* committed frames, as the index says */
	long long backfilled;	/* of them, copied into the file */
	long long wal_frames;	/* committed frames readable in DB-wal */
	bool lost;
	char what[600];
};
int audit_wal_check(const char *db_path, bool quick, struct audit_wal *out);
/* What audit_open() found of the WAL before it opened the database (a
 * reader of a lost WAL reads the database file alone: immutable). */
const struct audit_wal *audit_wal_state(const struct audit *a);
/* Load DB.key for verifying (never creates it). 0 or -errno with
 * audit_errmsg() saying why it is not at hand. */
int audit_verify_key(struct audit *a);
/*
 * Merged chains (ward merge, merge.c). ward_meta's AUDIT_MERGED_KEY || ID
 * holds the head of a chain merged in from another database (ID its key
 * id; JSON {head, source, runs, merged_ns}), DB.keys its key (lines "ID
 * HEX", mode 0600). audit_keyring_load() loads DB.keys (none: 0); then
 * audit_verify_run() checks each run with the key its seal names and
 * audit_verify_links() each merged chain against its own head. It
 * returns the keys loaded (0: none), or -errno with audit_errmsg().
 */
#define AUDIT_MERGED_KEY "merged_chain:"
int audit_keyring_load(struct audit *a);
/* Copies every run of src (opened read-only) into a, rows, hashes and
 * seals as they are, with src's chain (and those merged into src before):
 * one transaction. Refused (-EEXIST) when a holds one of its runs or one
 * of its chains already; -EBUSY when src has a run still running; -EPROTO
 * for another schema version; src's key must be at hand (src path +
 * .key). src_abs: src's absolute path, recorded. *runs: runs copied. */
int audit_merge(struct audit *a, struct audit *src, const char *src_abs,
		long long *runs);
/* Why the seal log ($WARD_SEAL_LOG) could not be written after a seal
 * committed (the run is recorded and sealed; its line is missing), or
 * NULL. Sticky for the handle. */
const char *audit_seal_log_error(const struct audit *a);
/* Seal the cells and artifacts of a session's run, written by the server
 * after the run's worker sealed the run (runs.chain gets their tags and a
 * seal bound to the run's). A run not sealed yet is left alone. 0 or
 * -errno. */
int audit_seal_cells(struct audit *a, const char *run_id);

/* ---------------------------- reader ---------------------------- */
/*
 * Reading works on any handle (open it readonly to inspect). The iterators
 * call fn once per row with a struct whose pointers are borrowed: valid
 * only during that call. fn returns 0 to go on; anything else stops the
 * iteration, which then returns that value. fn must not call audit
 * functions on the same handle (the handle's lock is held). Otherwise the
 * iterators return 0 at the end, or -errno (-EIO etc.) with audit_errmsg().
 * Text columns that are NULL in the database are NULL pointers.
 */

/* A growing list of run ids; free .id when done. */
struct audit_idlist {
	char (*id)[AUDIT_RUN_ID_LEN + 1];
	size_t n, cap;
};
/* Appends id. 0 or -ENOMEM. */
int audit_idlist_add(struct audit_idlist *l, const char *id);

/*
 * Find a run by full id, unique prefix, or "last" (the most recently
 * started). Case-insensitive. Writes the full id.
 * Returns 0, -ENOENT (no such run), -EINVAL (prefix is ambiguous).
 */
int audit_find_run(struct audit *a, const char *query,
		   char run_id[AUDIT_RUN_ID_LEN + 1]);

/* One row of runs. Integer columns that are NULL read as -1, except
 * exit_code and signal, which have has_exit. */
struct audit_run {
	char id[AUDIT_RUN_ID_LEN + 1];
	long long started_ns;
	long long ended_ns; /* -1 while running (or if ward died) */
	long long duration_ms;
	const char *argv_json, *language, *interpreter, *code_name;
	const void *code;  /* the code, or its first bytes (below) */
	size_t code_len;   /* bytes at code */
	size_t code_total; /* length of the whole code */
	const char *code_sha256, *policy_name, *policy_json, *policy_sha256;
	const char *workdir, *limits_json;
	long long uid;
	bool has_exit; /* exit_code and signal are recorded */
	int exit_code, signal;
	const char *status; /* running, or as in audit_run_end */
	const char *cause;
	long long stdout_bytes, stderr_bytes;
	int stdout_truncated, stderr_truncated; /* 0, 1, or -1 */
	long long events, denials, processes;
	const char *host, *kernel, *ward_version;
	long long ward_pid;	    /* the ward that wrote the run: pid, */
	long long ward_start_ticks; /* its start time in ticks, */
	const char *boot_id;	    /* and the boot it ran in */
	const char *layers_json;    /* JSON array, NULL if not recorded */
};
typedef int (*audit_run_fn)(const struct audit_run *r, void *arg);

#define AUDIT_LIST_CODE_MAX 256 /* code bytes given by audit_runs_each() */

/* Runs, most recently started first; limit <= 0 means all. Each run's code
 * is cut to its first AUDIT_LIST_CODE_MAX bytes (code_total says more). */
int audit_runs_each(struct audit *a, int limit, audit_run_fn fn, void *arg);

/* Which runs audit_runs_filter_each() gives: every limit set must hold.
 * Filtered in SQL (started_ns by its index). */
struct audit_run_filter {
	const char *const *statuses; /* status is one of these, if n_statuses */
	size_t n_statuses;
	const char *const *languages; /* language is one of these, if any */
	size_t n_languages;
	bool denied; /* runs with a deny or kill decision (runs.denials > 0,
		      * or, while it is NULL, counted from its events) */
	bool has_since, has_until; /* started_ns >= since_ns, <= until_ns */
	long long since_ns, until_ns;
};
/* As audit_runs_each(), limited by f (NULL: none). */
int audit_runs_filter_each(struct audit *a, const struct audit_run_filter *f,
			   int limit, audit_run_fn fn, void *arg);
/* The run with this full id, code whole. -ENOENT if there is none. */
int audit_run_read(struct audit *a, const char *run_id, audit_run_fn fn,
		   void *arg);

struct audit_proc_row {
	struct audit_process p; /* as written (parent_serial 0: none) */
	bool execed;		/* exec_ns is set (last successful exec) */
	long long exec_ns;
	bool exited; /* exit_ns, exit_code, signal are set */
	long long exit_ns;
	int exit_code, signal;
};

struct audit_event_row {
	long long seq;
	struct audit_event e; /* e.err is the positive errno, or 0;
			       * e.has_result/e.result: events.result */
};

struct audit_output_row {
	long long seq, ts_ns;
	enum audit_stream stream;
	const void *data; /* len bytes, may contain NULs */
	size_t len;
	long long cmd; /* outputs.cmd: a command's cells row n, or 0 */
};

/* All of a run's processes by serial, events by seq, outputs by seq. */
int audit_processes_each(struct audit *a, const char *run_id,
			 int (*fn)(const struct audit_proc_row *, void *),
			 void *arg);
int audit_events_each(struct audit *a, const char *run_id,
		      int (*fn)(const struct audit_event_row *, void *),
		      void *arg);
int audit_outputs_each(struct audit *a, const char *run_id,
		       int (*fn)(const struct audit_output_row *, void *),
		       void *arg);

/* The run's events decided deny or kill, or allowed with would_deny
 * (audit mode), by seq. */
int audit_denials_each(struct audit *a, const char *run_id,
		       int (*fn)(const struct audit_event_row *, void *),
		       void *arg);

/* How often one syscall was decided each way in a run. */
struct audit_syscall_count {
	const char *syscall;
	long long allowed, denied, killed; /* by decision */
	long long would_deny;		   /* allowed, but would_deny */
};
/* One row per syscall name recorded in the run, most frequent first
 * (then by name). */
int audit_syscall_counts_each(struct audit *a, const char *run_id,
			      int (*fn)(const struct audit_syscall_count *,
					void *),
			      void *arg);

/*
 * The timeline: process starts, execs and exits, events and output chunks
 * of one run merged by timestamp. At equal timestamps: starts and execs
 * (by serial), then events (by seq), then outputs (by seq), then exits
 * (by serial). Exactly one of proc, event, output is set, per kind.
 */
enum audit_item_kind {
	AUDIT_ITEM_START,
	AUDIT_ITEM_EXEC,
	AUDIT_ITEM_EXIT,
	AUDIT_ITEM_EVENT,
	AUDIT_ITEM_OUTPUT,
};
struct audit_item {
	enum audit_item_kind kind;
	long long ts_ns;
	const struct audit_proc_row *proc;
	const struct audit_event_row *event;
	const struct audit_output_row *output;
};
int audit_timeline_each(struct audit *a, const char *run_id,
			int (*fn)(const struct audit_item *, void *),
			void *arg);

/*
 * For replaying a run: its output chunks by seq (the order the code wrote
 * them), merged by time with its events (by ts_ns, seq); an event comes
 * before a chunk of the same time. Only rows with from_ns <= ts_ns <=
 * to_ns. what: AUDIT_REPLAY_* flags; items are AUDIT_ITEM_OUTPUT and
 * AUDIT_ITEM_EVENT. Iterator rules as above.
 */
enum {
	AUDIT_REPLAY_OUTPUTS = 1u << 0,
	AUDIT_REPLAY_EVENTS = 1u << 1,
	AUDIT_REPLAY_DENIALS = 1u << 2, /* only events decided deny or kill,
					 * or allowed with would_deny */
};
int audit_replay_each(struct audit *a, const char *run_id, long long from_ns,
		      long long to_ns, unsigned what,
		      int (*fn)(const struct audit_item *, void *), void *arg);

/*
 * Scanning many runs (scan.c; ward recheck, ward learn). Runs started at
 * or after since_ns (0: all), oldest first, without code or policy text.
 * Then each run's events by seq through one statement prepared once
 * (audit_scan_open) and rebound per run; the row has seq, pid, tid, nr,
 * syscall, args_json, raw, target, decision, rule, err and would_deny,
 * and has_result/result when the database's events table has a result
 * column (the rest is zero). Iterator rules as above.
 */
struct audit_run_brief {
	char id[AUDIT_RUN_ID_LEN + 1];
	long long started_ns;
	const char *workdir, *policy_name, *status, *interpreter;
};
int audit_runs_brief_each(struct audit *a, long long since_ns,
			  int (*fn)(const struct audit_run_brief *, void *),
			  void *arg);
struct audit_scan;
int audit_scan_open(struct audit *a, struct audit_scan **out);
int audit_scan_run(struct audit_scan *s, const char *run_id,
		   int (*fn)(const struct audit_event_row *, void *),
		   void *arg);
void audit_scan_close(struct audit_scan *s); /* NULL: no-op */

#endif
