/*
 * writer.c - recording a run: the run row, processes, events, outputs.
 *
 * Batching (see audit-int.h): rows wait in an in-memory queue and are
 * written by audit_commit_batch() in one transaction when AUDIT_BATCH_ROWS
 * rows or AUDIT_BATCH_BYTES of data are queued, at a deny/kill event, at
 * audit_flush(), audit_run_end() and audit_close(). A row is visible to
 * other connections once its batch is committed, never before. Commits
 * use synchronous=NORMAL (in the WAL file at once, survives ward being
 * killed; synced at checkpoints); the run's row, a deny or kill event and
 * audit_run_end() commit with synchronous=FULL, which syncs the WAL file:
 * they are on disk when the call returns. Under faults, see
 * audit_commit_batch() and audit_run_end().
 */
#include "audit/audit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <time.h>

#include "audit/audit-int.h"

static const char *const stmt_sql[ST__COUNT] = {
	[ST_BEGIN] = "BEGIN IMMEDIATE",
	[ST_COMMIT] = "COMMIT",
	[ST_ROLLBACK] = "ROLLBACK",
	[ST_RUN_BEGIN] =
		"INSERT INTO runs(id, started_ns, argv, language, interpreter,"
		" code_name, code, code_sha256, policy_name, policy_json,"
		" policy_sha256, workdir, limits, uid, host, kernel,"
		" ward_version, ward_pid, ward_start_ticks, boot_id, env) VALUES"
		" (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,"
		" ?15, ?16, ?17, ?18, ?19, ?20, ?21)",
	[ST_RUN_END] = "UPDATE runs SET ended_ns = ?2, duration_ms = ?3,"
		       " exit_code = ?4, signal = ?5, status = ?6, cause = ?7,"
		       " stdout_bytes = ?8, stderr_bytes = ?9,"
		       " stdout_truncated = ?10, stderr_truncated = ?11,"
		       " events = ?12, denials = ?13, processes = ?14,"
		       " layers = coalesce(?15, layers) WHERE id = ?1",
	[ST_PROC_START] =
		"INSERT INTO processes(run_id, serial, parent_serial, pid,"
		" tgid, ppid, kind, start_ns, start_ticks, exe, argv)"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
	[ST_PROC_EXEC] = "UPDATE processes SET exe = coalesce(?3, exe),"
			 " argv = coalesce(?4, argv), exec_ns = ?5"
			 " WHERE run_id = ?1 AND serial = ?2",
	[ST_PROC_EXIT] =
		"UPDATE processes SET exit_ns = ?3, exit_code = ?4, signal = ?5"
		" WHERE run_id = ?1 AND serial = ?2",
	[ST_EVENT] =
		"INSERT INTO events(run_id, seq, ts_ns, pid, tid, proc_serial,"
		" nr, syscall, args, raw, target, decision, rule, reason,"
		" errno, would_deny, backtrace, pyframes, hash, result)"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12,"
		" ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)",
	[ST_OUTPUT] = "INSERT INTO outputs(run_id, seq, ts_ns, stream, data,"
		      " cmd, hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
};

/* For error messages. */
static const char *const stmt_what[ST__COUNT] = {
	[ST_BEGIN] = "begin a transaction",
	[ST_COMMIT] = "commit",
	[ST_ROLLBACK] = "roll back",
	[ST_RUN_BEGIN] = "insert the run",
	[ST_RUN_END] = "update the run",
	[ST_PROC_START] = "insert a process",
	[ST_PROC_EXEC] = "record an exec",
	[ST_PROC_EXIT] = "record a process exit",
	[ST_EVENT] = "insert an event",
	[ST_OUTPUT] = "insert an output chunk",
};

/* ------------------------------ values ------------------------------ */

static struct audit_val vint(long long i)
{
	return (struct audit_val){ .t = V_INT, .i = i };
}

static struct audit_val vnull(void)
{
	return (struct audit_val){ .t = V_NULL };
}

/* NULL stays NULL. */
static struct audit_val vtext(const char *s)
{
	if (!s)
		return vnull();
	return (struct audit_val){ .t = V_TEXT, .p = s, .n = strlen(s) };
}

/* NULL stays NULL; an empty non-NULL blob is an empty blob. */
static struct audit_val vblob(const void *p, size_t n)
{
	if (!p)
		return vnull();
	return (struct audit_val){ .t = V_BLOB, .p = p, .n = n };
}

static int bind_vals(sqlite3_stmt *st, const struct audit_val *v, int n)
{
	int rc = SQLITE_OK;

	for (int i = 0; i < n && rc == SQLITE_OK; i++) {
		switch (v[i].t) {
		case V_NULL: rc = sqlite3_bind_null(st, i + 1); break;
		case V_INT: rc = sqlite3_bind_int64(st, i + 1, v[i].i); break;
		case V_TEXT:
			rc = sqlite3_bind_text64(st, i + 1, v[i].p, v[i].n,
						 SQLITE_STATIC, SQLITE_UTF8);
			break;
		case V_BLOB:
			rc = sqlite3_bind_blob64(st, i + 1,
						 v[i].n ? v[i].p : "", v[i].n,
						 SQLITE_STATIC);
			break;
		}
	}
	return rc;
}

/* Runs one statement with values; *rcp gets SQLite's code. Returns 0 or
 * -errno with a->errmsg set. UPDATEs must change exactly one row. */
static int exec_vals(struct audit *a, enum audit_stmt id,
		     const struct audit_val *v, int n, int *rcp)
{
	sqlite3_stmt *st = a->st[id];
	int rc = bind_vals(st, v, n);
	char buf[160];

	audit_vfs_io_error(); /* only this statement's */
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	*rcp = rc;
	if (rc != SQLITE_DONE)
		return audit_fail(a, audit_errno_of(rc), "%s: cannot %s: %s",
				  a->path, stmt_what[id],
				  audit_sqlmsg(a, rc, buf, sizeof(buf)));
	if ((id == ST_PROC_EXEC || id == ST_PROC_EXIT || id == ST_RUN_END) &&
	    sqlite3_changes(a->db) != 1)
		return id == ST_RUN_END
			       ? audit_fail(a, -ENOENT,
					    "%s: cannot %s: run "
					    "%s is not in the database",
					    a->path, stmt_what[id],
					    (const char *)v[0].p)
			       : audit_fail(a, -ENOENT,
					    "%s: cannot %s: no "
					    "process with serial %lld",
					    a->path, stmt_what[id], v[1].i);
	return 0;
}

static int exec_simple(struct audit *a, enum audit_stmt id)
{
	int rc;

	return exec_vals(a, id, NULL, 0, &rc);
}

/* ------------------------------ queue ------------------------------ */

static void free_queue(struct audit *a)
{
	struct audit_row *r, *next;

	for (r = a->head; r; r = next) {
		next = r->next;
		free(r);
	}
	a->head = NULL;
	a->tail = &a->head;
	a->queued = 0;
	a->queued_bytes = 0;
}

/* Copies the values (and the text and blobs they point to) into one
 * allocation at the end of the queue. 0 or -ENOMEM. */
static int queue_row(struct audit *a, enum audit_stmt id,
		     const struct audit_val *v, int n)
{
	size_t data = 0;
	struct audit_row *row;
	char *d;

	for (int i = 0; i < n; i++)
		if (v[i].t == V_TEXT || v[i].t == V_BLOB)
			data += v[i].n + 1;
	row = malloc(sizeof(*row) + (size_t)n * sizeof(row->v[0]) + data);
	if (!row)
		return audit_fail(a, -ENOMEM, "out of memory queuing a row");
	row->next = NULL;
	row->st = id;
	row->nval = n;
	row->bytes = data;
	d = (char *)&row->v[n];
	for (int i = 0; i < n; i++) {
		row->v[i] = v[i];
		if (v[i].t != V_TEXT && v[i].t != V_BLOB)
			continue;
		if (v[i].n)
			memcpy(d, v[i].p, v[i].n);
		d[v[i].n] = '\0';
		row->v[i].p = d;
		d += v[i].n + 1;
	}
	*a->tail = row;
	a->tail = &row->next;
	a->queued++;
	a->queued_bytes += data;
	return 0;
}

/* A statement without values whose failure is not reported (a->errmsg
 * keeps the error that matters). */
static void step_quiet(struct audit *a, enum audit_stmt id)
{
	sqlite3_step(a->st[id]);
	sqlite3_reset(a->st[id]);
}

/* Ends a failed transaction (SQLite may have rolled it back itself). */
static void rollback(struct audit *a)
{
	if (!sqlite3_get_autocommit(a->db))
		step_quiet(a, ST_ROLLBACK);
}

/* The run's record failed: the first error of its commits is kept (with
 * its message) until the run ends. Returns err. */
static int run_failed(struct audit *a, int err)
{
	if (err && a->run_id[0] && !a->fail_err) {
		a->fail_err = err;
		snprintf(a->fail_msg, sizeof(a->fail_msg), "%s", a->errmsg);
	}
	return err;
}

/* Takes the row *pp out of the queue and frees it. */
static void unlink_row(struct audit *a, struct audit_row **pp)
{
	struct audit_row *row = *pp;

	*pp = row->next;
	if (a->tail == &row->next)
		a->tail = pp;
	a->queued--;
	a->queued_bytes -= row->bytes;
	free(row);
}

/* Frees the first n rows of the queue (written). */
static void free_rows(struct audit *a, size_t n)
{
	while (a->head && n--) {
		struct audit_row *row = a->head;

		a->head = row->next;
		a->queued--;
		a->queued_bytes -= row->bytes;
		free(row);
	}
	if (!a->head) {
		a->tail = &a->head;
		a->queued = 0;
		a->queued_bytes = 0;
	}
}

/*
 * Writes the first n rows of the queue (all of them when n >= a->queued)
 * in one transaction, all of them or none: on any error (the lock stayed
 * busy, a write or sync failed, the disk is full, the file is no longer
 * the database opened) the transaction is rolled back and every row stays
 * queued, in order, with the seq and chain link it was given, for the
 * next attempt. So a committed row never follows a hole: a run's rows are
 * committed in seq order or not at all. A run's first failure is kept
 * (run_failed): commit_if_full then stops trying, and the run's end says
 * so. The seal goes with the batch that holds the run's end (the last
 * row): over the chains as ward made them, or, when rows at the end could
 * not be written (seal_stored), over the rows stored.
 */
static int commit_rows(struct audit *a, size_t n)
{
	bool all = n >= a->queued, sealed = false;
	struct audit_row **pp = &a->head;
	size_t kept = 0;
	int r, rc, row_err = 0;

	r = audit_check_identity(a);
	if (!r)
		r = exec_simple(a, ST_BEGIN);
	for (size_t i = 0; !r && *pp && i < n; i++) {
		struct audit_row *row = *pp;

		r = exec_vals(a, row->st, row->v, row->nval, &rc);
		if ((r == -ENOENT || r == -EINVAL) &&
		    !sqlite3_get_autocommit(a->db)) {
			/* the row itself is wrong (an update of a process
			 * never recorded, a constraint): a caller's bug, not
			 * a fault of the disk. It is dropped and returned; the
			 * others are written. */
			row_err = row_err ? row_err : r;
			r = 0;
			unlink_row(a, pp);
			continue;
		}
		pp = &row->next;
		kept++;
	}
	if (!r && all && a->seal_pending) {
		r = a->seal_stored ? audit_chain_seal_reaped(a, a->run_id)
				   : audit_chain_seal(a);
		sealed = !r;
	}
	if (!r)
		r = exec_simple(a, ST_COMMIT);
	if (a->notes) /* the seals just committed go to the seal log */
		audit_seals_done(a, !r);
	if (r) {
		rollback(a);
		if (sealed) { /* that seal was not committed */
			free(a->last_chain);
			a->last_chain = NULL;
		}
		return run_failed(a, r);
	}
	if (all)
		a->seal_pending = false;
	free_rows(a, all ? a->queued : kept);
	if (row_err) /* a->errmsg still says why */
		return row_err;
	/* the space for the rest of the run and its end, or stop it now */
	if (a->run_id[0] && !sealed && !a->end_queued && !a->fail_err)
		return run_failed(a, audit_reserve(a));
	return 0;
}

/*
 * Writes the queue in one transaction (commit_rows). With a run in
 * progress and nothing queued, it checks that the file is still the
 * database (the output thread's flush every 200 ms: a deleted or replaced
 * file is noticed then).
 */
int audit_commit_batch(struct audit *a)
{
	if (!a->head)
		return a->run_id[0] ? run_failed(a, audit_check_identity(a))
				    : 0;
	return commit_rows(a, a->queued);
}

/* A full batch is committed. After a failed commit only audit_flush() and
 * audit_run_end() try again (an attempt may wait the busy timeout): the
 * rows are queued and the run's first error returned. */
static int commit_if_full(struct audit *a)
{
	if (a->fail_err)
		return a->fail_err;
	if (a->queued >= AUDIT_BATCH_ROWS ||
	    a->queued_bytes >= AUDIT_BATCH_BYTES)
		return audit_commit_batch(a);
	return 0;
}

/*
 * synchronous = FULL (a commit syncs the WAL) or NORMAL. Not a prepared
 * statement: SQLite applies this PRAGMA when it compiles it, and stepping
 * a compiled one again changes nothing.
 */
static void set_sync(struct audit *a, bool full)
{
	sqlite3_exec(a->db,
		     full ? "PRAGMA synchronous = FULL"
			  : "PRAGMA synchronous = NORMAL",
		     NULL, NULL, NULL);
}

/* Commits the queue with synchronous=FULL: the WAL file is synced, so
 * everything committed so far is on disk when it returns. Copying the WAL
 * into the database is left to SQLite's automatic checkpoints (it is not
 * needed for durability and would cost every run another sync). */
static int commit_durable(struct audit *a)
{
	int r;

	set_sync(a, true);
	r = audit_commit_batch(a);
	set_sync(a, false);
	return r;
}

/* ------------------------------ setup ------------------------------ */

int audit_writer_prepare(struct audit *a)
{
	for (int i = 0; i < ST__COUNT; i++) {
		int rc = sqlite3_prepare_v3(a->db, stmt_sql[i], -1,
					    SQLITE_PREPARE_PERSISTENT,
					    &a->st[i], NULL);

		if (rc != SQLITE_OK)
			return audit_sqlfail(a, rc, stmt_what[i]);
	}
	audit_chain_prepare(a);
	return 0;
}

void audit_writer_finish(struct audit *a)
{
	free_queue(a);
	free(a->last_chain);
	a->last_chain = NULL;
	explicit_bzero(&a->key, sizeof(a->key));
	for (int i = 0; i < ST__COUNT; i++) {
		sqlite3_finalize(a->st[i]);
		a->st[i] = NULL;
	}
	audit_chain_finish(a);
}

/* The handle can take rows of a run. */
static int check_run(struct audit *a)
{
	if (a->readonly)
		return audit_fail(a, -EROFS, "%s: opened read-only", a->path);
	if (!a->run_id[0])
		return audit_fail(a, -EINVAL,
				  "no run in progress "
				  "(audit_run_begin() first)");
	return 0;
}

/* ------------------------------- runs ------------------------------- */

static int new_run_id(char id[AUDIT_RUN_ID_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char b[AUDIT_RUN_ID_LEN / 2];
	size_t got = 0;

	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(b); i++) {
		id[2 * i] = hex[b[i] >> 4];
		id[2 * i + 1] = hex[b[i] & 15];
	}
	id[AUDIT_RUN_ID_LEN] = '\0';
	return 0;
}

/* Inserts and commits the run row. -EEXIST if the id is taken. */
static int insert_run(struct audit *a, const struct audit_run_info *ri,
		      const struct audit_self *me, const char *id)
{
	const char *host = ri->host ? ri->host : me->host[0] ? me->host : NULL;
	const struct audit_val v[] = {
		vtext(id),
		vint(ri->start_ns),
		vtext(ri->argv_json),
		vtext(ri->language),
		vtext(ri->interpreter),
		vtext(ri->code_name),
		vblob(ri->code, ri->code_len),
		vtext(ri->code_sha256),
		vtext(ri->policy_name),
		vtext(ri->policy_json),
		vtext(ri->policy_sha256),
		vtext(ri->workdir),
		vtext(ri->limits_json),
		vint((long long)ri->uid),
		vtext(host),
		vtext(ri->kernel),
		vtext(ri->ward_version),
		vint(me->pid),
		me->start_ticks > 0 ? vint(me->start_ticks) : vnull(),
		me->boot_id[0] ? vtext(me->boot_id) : vnull(),
		vtext(ri->env_json),
	};
	int rc = SQLITE_OK, r = audit_check_identity(a);

	/* no run begins without the space to record its end */
	if (!r)
		r = audit_reserve(a);

	/* synced: the code starts only after its run row is on disk, so that
	 * a power loss cannot leave it run without a trace */
	set_sync(a, true);
	if (!r)
		r = exec_simple(a, ST_BEGIN);
	if (!r)
		r = exec_vals(a, ST_RUN_BEGIN, v,
			      (int)(sizeof(v) / sizeof(v[0])), &rc);
	if (!r)
		r = exec_simple(a, ST_COMMIT);
	if (r)
		rollback(a);
	set_sync(a, false);
	return rc == SQLITE_CONSTRAINT_PRIMARYKEY ? -EEXIST : r;
}

int audit_run_begin(struct audit *a, const struct audit_run_info *ri,
		    char run_id[AUDIT_RUN_ID_LEN + 1])
{
	char id[AUDIT_RUN_ID_LEN + 1];
	struct audit_self me;
	int r;

	audit_self_get(&me);
	pthread_mutex_lock(&a->lock);
	if (a->readonly)
		r = audit_fail(a, -EROFS, "%s: opened read-only", a->path);
	else if (a->run_id[0])
		r = audit_fail(a, -EINVAL, "run %s is still in progress",
			       a->run_id);
	else
		r = audit_commit_batch(a);
	/* Closing the runs of dead wards is housekeeping: its failure must
	 * not stop this run (the next one tries again). */
	/* No run without its chain key (made at the first run). */
	if (!r)
		r = audit_chain_key_load(a, true);
	if (!r)
		audit_reap_locked(a, &me, NULL);
	/* 64 random bits: a second collision means something else is wrong */
	for (int tries = 0; !r && tries < 3; tries++) {
		r = new_run_id(id);
		if (r) {
			r = audit_fail(a, r, "getrandom: %s", strerror(-r));
			break;
		}
		r = insert_run(a, ri, &me, id);
		if (r != -EEXIST)
			break;
	}
	if (!r) {
		memcpy(a->run_id, id, sizeof(id));
		memcpy(run_id, id, sizeof(id));
		a->event_seq = 0;
		a->output_seq = 0;
		a->end_queued = false;
		a->seal_pending = false;
		a->fail_err = 0;
		a->fail_msg[0] = '\0';
		a->end_lost = 0;
		a->seal_stored = false;
		free(a->last_chain); /* the seal printed is this run's or none */
		a->last_chain = NULL;
		audit_chain_reset(a);
	}
	pthread_mutex_unlock(&a->lock);
	return r;
}

static bool valid_status(const char *s)
{
	static const char *const ok[] = { "ok",	    "error",   "timeout",
					  "killed", "aborted", "limit" };

	for (size_t i = 0; s && i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strcmp(s, ok[i]))
			return true;
	return false;
}

static int queue_run_end(struct audit *a, const struct audit_run_end *re)
{
	const struct audit_val v[] = {
		vtext(a->run_id),	    vint(re->end_ns),
		vint(re->duration_ms),	    vint(re->exit_code),
		vint(re->signal),	    vtext(re->status),
		vtext(re->cause),	    vint(re->stdout_bytes),
		vint(re->stderr_bytes),	    vint(re->stdout_truncated),
		vint(re->stderr_truncated), vint(re->events),
		vint(re->denials),	    vint(re->processes),
		vtext(re->layers_json),
	};
	int r = queue_row(a, ST_RUN_END, v, (int)(sizeof(v) / sizeof(v[0])));

	if (!r)
		a->end_queued = a->seal_pending = true;
	return r;
}

/* Unlinks the queued end row of the run (a failed attempt's). */
static void drop_end_row(struct audit *a)
{
	for (struct audit_row **pp = &a->head; *pp; pp = &(*pp)->next) {
		if ((*pp)->st != ST_RUN_END)
			continue;
		unlink_row(a, pp);
		break;
	}
	a->end_queued = a->seal_pending = false;
}

/* The end of a run whose record failed: re, with status error and the
 * failure as its cause (into cause), and what was lost (lost rows that
 * could not be written, at the end of the record). */
static void failed_end(const struct audit *a, const struct audit_run_end *re,
		       struct audit_run_end *out, char *cause, size_t n,
		       size_t lost)
{
	int k;

	*out = *re;
	out->status = "error";
	k = snprintf(cause, n, "the audit database could not be written: %s",
		     a->fail_msg);
	if (lost && k > 0 && (size_t)k < n)
		snprintf(cause + k, n - (size_t)k,
			 "; the record ends before the run did: its last %zu "
			 "row%s could not be written",
			 lost, lost == 1 ? "" : "s");
	out->cause = cause;
}

/* The run is over, recorded or not: what could not be written is
 * dropped, and the handle can begin another. */
static void run_over(struct audit *a)
{
	free_queue(a);
	a->run_id[0] = '\0';
	a->end_queued = a->seal_pending = a->seal_stored = false;
	a->fail_err = 0;
	a->end_lost = 0;
}

/* The error audit_run_end() returns for a run whose record failed, with
 * what became of its end (r: the last attempt's result). */
static int failed_result(struct audit *a, int r)
{
	int err = a->fail_err;

	if (!r && a->end_lost)
		return audit_fail(a, err,
				  "%s; the run was stopped and is recorded "
				  "with status error, without its last %zu "
				  "row%s (they could not be written)",
				  a->fail_msg, a->end_lost,
				  a->end_lost == 1 ? "" : "s");
	if (!r)
		return audit_fail(a, err,
				  "%s; the run was stopped and is recorded "
				  "with status error, its rows up to the "
				  "stop all written",
				  a->fail_msg);
	return audit_fail(a, err,
			  "%s; the run was stopped, and its end could not "
			  "be recorded: it stays 'running' until the next "
			  "ward run marks it aborted",
			  a->fail_msg);
}

/* Attempts at the end of a run whose record failed while the lock stays
 * busy (each waits the busy timeout): the code is stopped, so waiting a
 * little longer costs it nothing and may save its record. */
#define END_BUSY_TRIES 3
/* Attempts at writing what fits of the queue, oldest rows first, when the
 * whole of it cannot be written (a full disk). */
#define SALVAGE_TRIES 12

/* Detaches the rows after the first k of the queue and returns them. */
static struct audit_row *split_queue(struct audit *a, size_t k)
{
	struct audit_row **pp = &a->head, *rest;

	for (size_t i = 0; *pp && i < k; i++)
		pp = &(*pp)->next;
	rest = *pp;
	*pp = NULL;
	a->tail = pp;
	for (struct audit_row *row = rest; row; row = row->next) {
		a->queued--;
		a->queued_bytes -= row->bytes;
	}
	return rest;
}

/* Appends rows detached by split_queue. */
static void join_queue(struct audit *a, struct audit_row *rest)
{
	*a->tail = rest;
	for (; rest; rest = rest->next) {
		a->tail = &rest->next;
		a->queued++;
		a->queued_bytes += rest->bytes;
	}
}

/*
 * The end of a run whose record failed, when the queue cannot be written
 * whole (not for a busy lock: each attempt would wait): the oldest rows
 * and the end together, in one transaction, fewer rows at each attempt
 * (half), down to the end alone. The rows left out are dropped, only ever
 * at the end of the record (no hole); the end says how many, with status
 * error, and is sealed over the rows as stored: verify checks what is
 * there.
 */
static int salvage_end(struct audit *a, const struct audit_run_end *re,
		       struct audit_run_end *fe, char *cause, size_t n)
{
	struct audit_row *rest = NULL;
	size_t total, k;
	int r = -EIO;

	drop_end_row(a);
	total = a->queued;
	k = total / 2; /* the whole of it has just failed */
	for (int tries = 0; tries < SALVAGE_TRIES; tries++) {
		join_queue(a, rest);
		rest = split_queue(a, k);
		failed_end(a, re, fe, cause, n, total - k);
		r = queue_run_end(a, fe);
		if (r)
			break;
		a->seal_stored = true;
		r = commit_durable(a);
		if (!r) {
			a->end_lost = total - k;
			break;
		}
		drop_end_row(a);
		if (!k)
			break;
		k /= 2;
	}
	join_queue(a, rest); /* dropped by run_over */
	return r;
}

/*
 * A run whose record failed (a commit failed during the run, or this
 * one) gets status error with the failure as its cause, and more attempts
 * to write what is queued: while the lock is busy, END_BUSY_TRIES; after
 * other errors, what fits (salvage_end). Either way the run is over when
 * this returns; an error means its record is not what the caller asked
 * for (audit_errmsg() says whether its end was written).
 */
int audit_run_end(struct audit *a, const struct audit_run_end *re)
{
	struct audit_run_end fe;
	char cause[sizeof(a->fail_msg) + 128];
	bool failed;
	int r;

	pthread_mutex_lock(&a->lock);
	r = check_run(a);
	if (!r && !valid_status(re->status))
		r = audit_fail(a, -EINVAL, "invalid run status '%s'",
			       re->status ? re->status : "(null)");
	if (r) {
		pthread_mutex_unlock(&a->lock);
		return r;
	}
	failed = a->fail_err != 0;
	if (failed)
		failed_end(a, re, &fe, cause, sizeof(cause), 0);
	drop_end_row(a);
	r = queue_run_end(a, failed ? &fe : re);
	if (!r)
		r = commit_durable(a);
	if (r && !failed && a->fail_err) {
		/* this commit failed first: its end says so */
		drop_end_row(a);
		failed_end(a, re, &fe, cause, sizeof(cause), 0);
		r = queue_run_end(a, &fe);
		if (!r)
			r = commit_durable(a);
	}
	for (int tries = 1; r == -EBUSY && tries < END_BUSY_TRIES; tries++)
		r = commit_durable(a);
	if (r && a->fail_err && r != -EBUSY && r != -ESTALE)
		r = salvage_end(a, re, &fe, cause, sizeof(cause));
	if (a->fail_err)
		r = failed_result(a, r);
	else if (!r)
		audit_checkpoint(a);
	run_over(a);
	pthread_mutex_unlock(&a->lock);
	return r;
}

/* audit_close() with a run still open: record that it never ended. */
int audit_end_unfinished(struct audit *a)
{
	struct timespec ts;
	int r;

	clock_gettime(CLOCK_REALTIME, &ts);
	const struct audit_val v[] = {
		vtext(a->run_id),
		vint((long long)ts.tv_sec * 1000000000LL + ts.tv_nsec),
		vnull(),
		vnull(),
		vnull(),
		vtext("aborted"),
		vtext(a->fail_err ? "ward closed the record without ending the "
				    "run, after the database could not be "
				    "written"
				  : "ward closed the record without ending "
				    "the run"),
		vnull(),
		vnull(),
		vnull(),
		vnull(),
		vnull(),
		vnull(),
		vnull(),
		vnull(),
	};

	drop_end_row(a);
	r = queue_row(a, ST_RUN_END, v, (int)(sizeof(v) / sizeof(v[0])));
	if (!r)
		a->seal_pending = true;
	if (!r)
		r = commit_durable(a);
	run_over(a);
	return r;
}

int audit_run_failure(struct audit *a, char *buf, size_t n)
{
	int r;

	pthread_mutex_lock(&a->lock);
	r = a->fail_err;
	if (n)
		snprintf(buf, n, "%s", r ? a->fail_msg : "");
	pthread_mutex_unlock(&a->lock);
	return r;
}

/* ---------------------------- processes ---------------------------- */

int audit_process_start(struct audit *a, const struct audit_process *p)
{
	int r;

	pthread_mutex_lock(&a->lock);
	r = check_run(a);
	if (!r && (p->serial <= 0 || !p->kind ||
		   (strcmp(p->kind, "process") && strcmp(p->kind, "thread"))))
		r = audit_fail(a, -EINVAL,
			       "process serial %d: bad serial "
			       "or kind",
			       p->serial);
	if (!r) {
		const struct audit_val v[] = {
			vtext(a->run_id),
			vint(p->serial),
			p->parent_serial > 0 ? vint(p->parent_serial) : vnull(),
			vint(p->pid),
			vint(p->tgid),
			vint(p->ppid),
			vtext(p->kind),
			vint(p->start_ns),
			vint(p->start_ticks),
			vtext(p->exe),
			vtext(p->argv_json),
		};

		r = queue_row(a, ST_PROC_START, v,
			      (int)(sizeof(v) / sizeof(v[0])));
	}
	if (!r)
		r = commit_if_full(a);
	pthread_mutex_unlock(&a->lock);
	return r;
}

int audit_process_exec(struct audit *a, int serial, long long ts_ns,
		       const char *exe, const char *argv_json)
{
	int r;

	pthread_mutex_lock(&a->lock);
	r = check_run(a);
	if (!r) {
		const struct audit_val v[] = {
			vtext(a->run_id), vint(serial), vtext(exe),
			vtext(argv_json), vint(ts_ns),
		};

		r = queue_row(a, ST_PROC_EXEC, v,
			      (int)(sizeof(v) / sizeof(v[0])));
	}
	if (!r)
		r = commit_if_full(a);
	pthread_mutex_unlock(&a->lock);
	return r;
}

int audit_process_exit(struct audit *a, int serial, long long ts_ns,
		       int exit_code, int signal)
{
	int r;

	pthread_mutex_lock(&a->lock);
	r = check_run(a);
	if (!r) {
		const struct audit_val v[] = {
			vtext(a->run_id), vint(serial), vint(ts_ns),
			vint(exit_code),  vint(signal),
		};

		r = queue_row(a, ST_PROC_EXIT, v,
			      (int)(sizeof(v) / sizeof(v[0])));
	}
	if (!r)
		r = commit_if_full(a);
	pthread_mutex_unlock(&a->lock);
	return r;
}

/* ------------------------- events and output ------------------------- */

static int queue_event(struct audit *a, const struct audit_event *e)
{
	char hash[AUDIT_HASH_TEXT_LEN + 1];
	struct audit_val v[] = {
		vtext(a->run_id), vint(++a->event_seq), vint(e->ts_ns),
		vint(e->pid), vint(e->tid),
		e->proc_serial > 0 ? vint(e->proc_serial) : vnull(),
		vint(e->nr), vtext(e->syscall), vtext(e->args_json),
		vtext(e->raw), vtext(e->target), vtext(e->decision),
		vtext(e->rule), vtext(e->reason),
		vint(e->err < 0 ? -(long long)e->err : e->err),
		vint(e->would_deny), vtext(e->backtrace), vtext(e->pyframes),
		/* result: chained only when not NULL (chain.c) */
		e->has_result ? vint(e->result) : vnull(),
		vnull(), /* hash: set by audit_chain_row() below */
	};
	int n = (int)(sizeof(v) / sizeof(v[0]));

	/* seq is given out here, under the lock, in queue order: the order
	 * of the chain is the order of seq in the table */
	audit_chain_row(a, AUDIT_CHAIN_EVENTS, v, e->has_result ? n - 1 : n - 2,
			hash);
	/* the table's order: ..., pyframes, hash, result */
	v[n - 1] = v[n - 2];
	v[n - 2] = vtext(hash);
	return queue_row(a, ST_EVENT, v, n);
}

int audit_event(struct audit *a, const struct audit_event *e)
{
	bool allow = e->decision && !strcmp(e->decision, "allow");
	bool stop = e->decision && (!strcmp(e->decision, "deny") ||
				    !strcmp(e->decision, "kill"));
	int r;

	pthread_mutex_lock(&a->lock);
	r = check_run(a);
	if (!r && (!e->syscall || (!allow && !stop)))
		r = audit_fail(a, -EINVAL,
			       "event: decision must be allow, "
			       "deny or kill and syscall must be set");
	if (!r)
		r = queue_event(a, e);
	if (!r)
		r = !stop	  ? commit_if_full(a)
		    : a->fail_err ? a->fail_err
				  : commit_durable(a);
	pthread_mutex_unlock(&a->lock);
	return r;
}

int audit_output(struct audit *a, long long ts_ns, enum audit_stream s,
		 const void *data, size_t len)
{
	return audit_output_cmd(a, ts_ns, s, 0, data, len);
}

int audit_output_cmd(struct audit *a, long long ts_ns, enum audit_stream s,
		     long long cmd, const void *data, size_t len)
{
	int r;

	pthread_mutex_lock(&a->lock);
	r = check_run(a);
	if (!r && ((s != AUDIT_STDOUT && s != AUDIT_STDERR) || (!data && len)))
		r = audit_fail(a, -EINVAL, "output: bad stream or data");
	if (!r && len) {
		char hash[AUDIT_HASH_TEXT_LEN + 1];
		struct audit_val v[] = {
			vtext(a->run_id),
			vint(++a->output_seq),
			vint(ts_ns),
			vtext(s == AUDIT_STDOUT ? "stdout" : "stderr"),
			vblob(data, len),
			cmd > 0 ? vint(cmd) : vnull(),
			vnull(), /* hash */
		};

		/* cmd is part of the record only when not NULL: a row of
		 * the run's own output hashes as before version 7 */
		audit_chain_row(a, AUDIT_CHAIN_OUTPUTS, v, cmd > 0 ? 6 : 5,
				hash);
		v[6] = vtext(hash);
		r = queue_row(a, ST_OUTPUT, v, (int)(sizeof(v) / sizeof(v[0])));
		if (!r)
			r = commit_if_full(a);
	}
	pthread_mutex_unlock(&a->lock);
	return r;
}

int audit_flush(struct audit *a)
{
	int r;

	pthread_mutex_lock(&a->lock);
	r = a->readonly ? 0 : audit_commit_batch(a);
	pthread_mutex_unlock(&a->lock);
	return r;
}
