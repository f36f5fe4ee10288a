/*
 * reader.c - finding runs and reading them back (ward runs, ward show).
 * Statements are prepared per call: reading is not a hot path.
 */
#include "audit/audit.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "audit/audit-int.h"

/* The columns of runs, as a format: the code expression, the ward
 * columns, the layers column, then what follows FROM (run_sql). */
#define RUN_COLS_FMT                                                           \
	"SELECT id, started_ns, ended_ns, duration_ms, argv, language,"        \
	" interpreter, code_name, %s, length(code), code_sha256,"              \
	" policy_name, policy_json, policy_sha256, workdir, limits, uid,"      \
	" exit_code, signal, status, cause, stdout_bytes, stderr_bytes,"       \
	" stdout_truncated, stderr_truncated, events, denials, processes,"     \
	" host, kernel, ward_version, %s, %s FROM runs %s"
/* A file from before version 1 was released, opened readonly, may lack
 * these (see schema.c): they read as NULL then. Likewise runs.layers in a
 * version 1 file opened readonly. */
#define WARD_COLS    "ward_pid, ward_start_ticks, boot_id"
#define NO_WARD_COLS "NULL, NULL, NULL"

#define PROC_COLS                                                              \
	" serial, parent_serial, pid, tgid, ppid, kind, start_ns,"             \
	" start_ticks, exe, argv, exec_ns, exit_ns, exit_code, signal "

#define EVENT_COLS                                                             \
	"SELECT seq, ts_ns, pid, tid, proc_serial, nr, syscall, args, raw,"    \
	" target, decision, rule, reason, errno, would_deny, backtrace,"       \
	" pyframes, result FROM events WHERE run_id = ?1 "

#define OUTPUT_COLS                                                            \
	"SELECT seq, ts_ns, stream, data, cmd FROM outputs WHERE run_id = ?1 "

static int prep(struct audit *a, const char *sql, sqlite3_stmt **st)
{
	int rc = sqlite3_prepare_v2(a->db, sql, -1, st, NULL);

	return rc == SQLITE_OK ? 0 : audit_sqlfail(a, rc, a->path);
}

static const char *ctext(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i);
}

static long long cint(sqlite3_stmt *st, int i, long long null_value)
{
	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return null_value;
	return sqlite3_column_int64(st, i);
}

/* ---------------------------- find_run ---------------------------- */

/* The single id the statement yields (with ?1 bound to arg, if any):
 * 0, -ENOENT (none), -EINVAL (more than one). */
static int one_id(struct audit *a, const char *sql, const char *lo,
		  const char *hi, char run_id[AUDIT_RUN_ID_LEN + 1])
{
	sqlite3_stmt *st = NULL;
	int r = prep(a, sql, &st), rc, found = 0;

	if (r)
		return r;
	if (lo) {
		sqlite3_bind_text(st, 1, lo, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, hi, -1, SQLITE_STATIC);
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && found < 2) {
		const char *id = ctext(st, 0);

		if (found++ == 0)
			snprintf(run_id, AUDIT_RUN_ID_LEN + 1, "%s",
				 id ? id : "");
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		r = audit_sqlfail(a, rc, a->path);
	sqlite3_finalize(st);
	if (r)
		return r;
	if (!found)
		return audit_fail(a, -ENOENT, "no run matches");
	if (found > 1)
		return audit_fail(a, -EINVAL, "more than one run matches");
	return 0;
}

int audit_find_run(struct audit *a, const char *query,
		   char run_id[AUDIT_RUN_ID_LEN + 1])
{
	char lo[AUDIT_RUN_ID_LEN + 1], hi[AUDIT_RUN_ID_LEN + 2];
	size_t n = query ? strlen(query) : 0;
	int r;

	if (query && !strcmp(query, "last")) {
		pthread_mutex_lock(&a->lock);
		r = one_id(a,
			   "SELECT id FROM runs ORDER BY started_ns DESC,"
			   " rowid DESC LIMIT 1",
			   NULL, NULL, run_id);
		pthread_mutex_unlock(&a->lock);
		return r;
	}
	if (n == 0 || n > AUDIT_RUN_ID_LEN)
		return audit_fail(a, -ENOENT, "no run matches");
	for (size_t i = 0; i < n; i++) {
		lo[i] = (char)tolower((unsigned char)query[i]);
		if (!isxdigit((unsigned char)lo[i]))
			return audit_fail(a, -ENOENT, "no run matches");
	}
	lo[n] = '\0';
	/* ids are lowercase hex: those with the prefix are in [lo, lo+"g") */
	snprintf(hi, sizeof(hi), "%sg", lo);
	pthread_mutex_lock(&a->lock);
	r = one_id(a,
		   "SELECT id FROM runs WHERE id >= ?1 AND id < ?2"
		   " ORDER BY id LIMIT 2",
		   lo, hi, run_id);
	pthread_mutex_unlock(&a->lock);
	return r;
}

/* ------------------------------ runs ------------------------------ */

static void fill_run(sqlite3_stmt *st, struct audit_run *r)
{
	const char *id = ctext(st, 0);

	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "%s", id ? id : "");
	r->started_ns = cint(st, 1, -1);
	r->ended_ns = cint(st, 2, -1);
	r->duration_ms = cint(st, 3, -1);
	r->argv_json = ctext(st, 4);
	r->language = ctext(st, 5);
	r->interpreter = ctext(st, 6);
	r->code_name = ctext(st, 7);
	r->code = sqlite3_column_blob(st, 8);
	r->code_len = (size_t)sqlite3_column_bytes(st, 8);
	r->code_total = (size_t)cint(st, 9, 0);
	r->code_sha256 = ctext(st, 10);
	r->policy_name = ctext(st, 11);
	r->policy_json = ctext(st, 12);
	r->policy_sha256 = ctext(st, 13);
	r->workdir = ctext(st, 14);
	r->limits_json = ctext(st, 15);
	r->uid = cint(st, 16, -1);
	r->has_exit = sqlite3_column_type(st, 17) != SQLITE_NULL;
	r->exit_code = (int)cint(st, 17, 0);
	r->signal = (int)cint(st, 18, 0);
	r->status = ctext(st, 19);
	r->cause = ctext(st, 20);
	r->stdout_bytes = cint(st, 21, -1);
	r->stderr_bytes = cint(st, 22, -1);
	r->stdout_truncated = (int)cint(st, 23, -1);
	r->stderr_truncated = (int)cint(st, 24, -1);
	r->events = cint(st, 25, -1);
	r->denials = cint(st, 26, -1);
	r->processes = cint(st, 27, -1);
	r->host = ctext(st, 28);
	r->kernel = ctext(st, 29);
	r->ward_version = ctext(st, 30);
	r->ward_pid = cint(st, 31, -1);
	r->ward_start_ticks = cint(st, 32, -1);
	r->boot_id = ctext(st, 33);
	r->layers_json = ctext(st, 34);
}

/* The SELECT of runs with the columns this file has; tail follows FROM.
 * whole_code: the code whole, else its first AUDIT_LIST_CODE_MAX bytes. */
static const char *run_sql(const struct audit *a, bool whole_code,
			   const char *tail, char *buf, size_t n)
{
	_Static_assert(AUDIT_LIST_CODE_MAX == 256, "the SQL below says 256");
	snprintf(buf, n, RUN_COLS_FMT,
		 whole_code ? "code" : "substr(code, 1, 256)",
		 a->ward_cols ? WARD_COLS : NO_WARD_COLS,
		 a->layers_col ? "layers" : "NULL", tail);
	return buf;
}

/* Steps st, calling fill + fn per row. Returns fn's nonzero value, 0 at
 * the end, or -errno. Finalizes st. */
#define EACH_ROW(a, st, rowtype, fill, fn, arg)                                \
	({                                                                     \
		int _r = 0, _rc;                                               \
		rowtype _row;                                                  \
		while (!_r && (_rc = sqlite3_step(st)) == SQLITE_ROW) {        \
			fill(st, &_row);                                       \
			_r = fn(&_row, arg);                                   \
		}                                                              \
		if (!_r && _rc != SQLITE_DONE)                                 \
			_r = audit_sqlfail(a, _rc, (a)->path);                 \
		sqlite3_finalize(st);                                          \
		_r;                                                            \
	})

int audit_runs_each(struct audit *a, int limit, audit_run_fn fn, void *arg)
{
	return audit_runs_filter_each(a, NULL, limit, fn, arg);
}

#define FILTER_MAX_NAMES 32 /* statuses or languages in one filter */

/* " AND col IN (?N, ...)" for n names, numbered from *param. */
static void where_in(char *buf, size_t n, const char *col, size_t names,
		     int *param)
{
	size_t len = strlen(buf);

	if (!names)
		return;
	snprintf(buf + len, n - len, " AND %s IN (", col);
	for (size_t i = 0; i < names; i++) {
		len = strlen(buf);
		snprintf(buf + len, n - len, "%s?%d", i ? ", " : "",
			 (*param)++);
	}
	len = strlen(buf);
	snprintf(buf + len, n - len, ")");
}

/* The WHERE clause of f (parameters from ?2; ?1 is the limit). */
static void filter_sql(const struct audit_run_filter *f, char *buf, size_t n)
{
	int param = 2;
	size_t len;

	snprintf(buf, n, "WHERE 1");
	if (!f)
		return;
	where_in(buf, n, "status", f->n_statuses, &param);
	where_in(buf, n, "language", f->n_languages, &param);
	len = strlen(buf);
	if (f->has_since)
		len += (size_t)snprintf(buf + len, n - len,
					" AND started_ns >= ?%d", param++);
	if (f->has_until)
		len += (size_t)snprintf(buf + len, n - len,
					" AND started_ns <= ?%d", param++);
	if (f->denied)
		snprintf(buf + len, n - len,
			 " AND (denials > 0 OR (denials IS NULL AND EXISTS"
			 " (SELECT 1 FROM events e WHERE e.run_id = runs.id"
			 " AND e.decision IN ('deny', 'kill'))))");
}

static void filter_bind(sqlite3_stmt *st, const struct audit_run_filter *f)
{
	int param = 2;

	if (!f)
		return;
	for (size_t i = 0; i < f->n_statuses; i++)
		sqlite3_bind_text(st, param++, f->statuses[i], -1,
				  SQLITE_STATIC);
	for (size_t i = 0; i < f->n_languages; i++)
		sqlite3_bind_text(st, param++, f->languages[i], -1,
				  SQLITE_STATIC);
	if (f->has_since)
		sqlite3_bind_int64(st, param++, f->since_ns);
	if (f->has_until)
		sqlite3_bind_int64(st, param++, f->until_ns);
}

int audit_runs_filter_each(struct audit *a, const struct audit_run_filter *f,
			   int limit, audit_run_fn fn, void *arg)
{
	sqlite3_stmt *st = NULL;
	char where[2048], tail[2560], sql[4096];
	int r;

	if (f && (f->n_statuses > FILTER_MAX_NAMES ||
		  f->n_languages > FILTER_MAX_NAMES))
		return audit_fail(a, -EINVAL, "more than %d names in a filter",
				  FILTER_MAX_NAMES);
	filter_sql(f, where, sizeof(where));
	snprintf(tail, sizeof(tail),
		 "%s ORDER BY started_ns DESC, rowid DESC LIMIT ?1", where);
	pthread_mutex_lock(&a->lock);
	r = prep(a, run_sql(a, false, tail, sql, sizeof(sql)), &st);
	if (!r) {
		sqlite3_bind_int64(st, 1, limit > 0 ? limit : -1);
		filter_bind(st, f);
		r = EACH_ROW(a, st, struct audit_run, fill_run, fn, arg);
	}
	pthread_mutex_unlock(&a->lock);
	return r;
}

struct read_one {
	audit_run_fn fn;
	void *arg;
	bool seen;
};

static int read_one_cb(const struct audit_run *r, void *arg)
{
	struct read_one *ro = arg;

	ro->seen = true;
	return ro->fn(r, ro->arg);
}

int audit_run_read(struct audit *a, const char *run_id, audit_run_fn fn,
		   void *arg)
{
	struct read_one ro = { .fn = fn, .arg = arg };
	sqlite3_stmt *st = NULL;
	char sql[1024];
	int r;

	pthread_mutex_lock(&a->lock);
	r = prep(a, run_sql(a, true, "WHERE id = ?1", sql, sizeof(sql)), &st);
	if (!r) {
		sqlite3_bind_text(st, 1, run_id, -1, SQLITE_STATIC);
		r = EACH_ROW(a, st, struct audit_run, fill_run, read_one_cb,
			     &ro);
	}
	if (!r && !ro.seen)
		r = audit_fail(a, -ENOENT, "no run %s", run_id);
	pthread_mutex_unlock(&a->lock);
	return r;
}

/* -------------------- processes, events, outputs -------------------- */

/* Columns PROC_COLS starting at column off. */
static void fill_proc_at(sqlite3_stmt *st, int off, struct audit_proc_row *p)
{
	memset(p, 0, sizeof(*p));
	p->p.serial = (int)cint(st, off + 0, 0);
	p->p.parent_serial = (int)cint(st, off + 1, 0);
	p->p.pid = (pid_t)cint(st, off + 2, 0);
	p->p.tgid = (pid_t)cint(st, off + 3, 0);
	p->p.ppid = (pid_t)cint(st, off + 4, 0);
	p->p.kind = ctext(st, off + 5);
	p->p.start_ns = cint(st, off + 6, 0);
	p->p.start_ticks = cint(st, off + 7, -1);
	p->p.exe = ctext(st, off + 8);
	p->p.argv_json = ctext(st, off + 9);
	p->execed = sqlite3_column_type(st, off + 10) != SQLITE_NULL;
	p->exec_ns = cint(st, off + 10, 0);
	p->exited = sqlite3_column_type(st, off + 11) != SQLITE_NULL;
	p->exit_ns = cint(st, off + 11, 0);
	p->exit_code = (int)cint(st, off + 12, 0);
	p->signal = (int)cint(st, off + 13, 0);
}

static void fill_proc(sqlite3_stmt *st, struct audit_proc_row *p)
{
	fill_proc_at(st, 0, p);
}

static void fill_event(sqlite3_stmt *st, struct audit_event_row *ev)
{
	struct audit_event *e = &ev->e;

	memset(ev, 0, sizeof(*ev));
	ev->seq = cint(st, 0, 0);
	e->ts_ns = cint(st, 1, 0);
	e->pid = (pid_t)cint(st, 2, 0);
	e->tid = (pid_t)cint(st, 3, 0);
	e->proc_serial = (int)cint(st, 4, 0);
	e->nr = (int)cint(st, 5, -1);
	e->syscall = ctext(st, 6);
	e->args_json = ctext(st, 7);
	e->raw = ctext(st, 8);
	e->target = ctext(st, 9);
	e->decision = ctext(st, 10);
	e->rule = ctext(st, 11);
	e->reason = ctext(st, 12);
	e->err = (int)cint(st, 13, 0);
	e->would_deny = cint(st, 14, 0) != 0;
	e->backtrace = ctext(st, 15);
	e->pyframes = ctext(st, 16);
	e->has_result = sqlite3_column_type(st, 17) == SQLITE_INTEGER;
	e->result = e->has_result ? sqlite3_column_int64(st, 17) : 0;
}

static void fill_output(sqlite3_stmt *st, struct audit_output_row *o)
{
	const char *stream = ctext(st, 2);

	o->seq = cint(st, 0, 0);
	o->ts_ns = cint(st, 1, 0);
	o->stream = stream && !strcmp(stream, "stderr") ? AUDIT_STDERR
							: AUDIT_STDOUT;
	o->data = sqlite3_column_blob(st, 3);
	o->len = (size_t)sqlite3_column_bytes(st, 3);
	o->cmd = cint(st, 4, 0);
}

/* sql with the column named by at's first n characters (found by at)
 * read as NULL, into buf; false when sql does not have it. */
static bool old_col(const char *sql, const char *at, const char *col, char *buf,
		    size_t n)
{
	const char *p = strstr(sql, at);

	return p && snprintf(buf, n, "%.*s NULL%s", (int)(p - sql), sql,
			     p + strlen(col)) < (int)n;
}

/* Prepares sql with ?1 bound to run_id, under the lock held by caller. */
static int prep_run(struct audit *a, const char *sql, const char *run_id,
		    sqlite3_stmt **st)
{
	/* events.pyframes (version 4) and events.result (version 5) read as
	 * NULL in an older file opened readonly */
	char old[2048], older[2048];

	if (!a->v5_cols &&
	    old_col(sql, " result FROM", " result", old, sizeof(old)))
		sql = old;
	if (!a->v4_cols &&
	    old_col(sql, " pyframes,", " pyframes", older, sizeof(older)))
		sql = older;
	char oldest[2048];
	if (!a->v7_cols &&
	    old_col(sql, " cmd FROM", " cmd", oldest, sizeof(oldest)))
		sql = oldest;
	int r = prep(a, sql, st);

	if (!r)
		sqlite3_bind_text(*st, 1, run_id, -1, SQLITE_STATIC);
	return r;
}

int audit_processes_each(struct audit *a, const char *run_id,
			 int (*fn)(const struct audit_proc_row *, void *),
			 void *arg)
{
	sqlite3_stmt *st = NULL;
	int r;

	pthread_mutex_lock(&a->lock);
	r = prep_run(a,
		     "SELECT" PROC_COLS "FROM processes WHERE run_id = ?1"
		     " ORDER BY serial",
		     run_id, &st);
	if (!r)
		r = EACH_ROW(a, st, struct audit_proc_row, fill_proc, fn, arg);
	pthread_mutex_unlock(&a->lock);
	return r;
}

int audit_events_each(struct audit *a, const char *run_id,
		      int (*fn)(const struct audit_event_row *, void *),
		      void *arg)
{
	sqlite3_stmt *st = NULL;
	int r;

	pthread_mutex_lock(&a->lock);
	r = prep_run(a, EVENT_COLS "ORDER BY seq", run_id, &st);
	if (!r)
		r = EACH_ROW(a, st, struct audit_event_row, fill_event, fn,
			     arg);
	pthread_mutex_unlock(&a->lock);
	return r;
}

int audit_outputs_each(struct audit *a, const char *run_id,
		       int (*fn)(const struct audit_output_row *, void *),
		       void *arg)
{
	sqlite3_stmt *st = NULL;
	int r;

	pthread_mutex_lock(&a->lock);
	r = prep_run(a, OUTPUT_COLS "ORDER BY seq", run_id, &st);
	if (!r)
		r = EACH_ROW(a, st, struct audit_output_row, fill_output, fn,
			     arg);
	pthread_mutex_unlock(&a->lock);
	return r;
}

int audit_denials_each(struct audit *a, const char *run_id,
		       int (*fn)(const struct audit_event_row *, void *),
		       void *arg)
{
	sqlite3_stmt *st = NULL;
	int r;

	pthread_mutex_lock(&a->lock);
	r = prep_run(a,
		     EVENT_COLS "AND (decision <> 'allow' OR would_deny)"
				" ORDER BY seq",
		     run_id, &st);
	if (!r)
		r = EACH_ROW(a, st, struct audit_event_row, fill_event, fn,
			     arg);
	pthread_mutex_unlock(&a->lock);
	return r;
}

static void fill_count(sqlite3_stmt *st, struct audit_syscall_count *c)
{
	c->syscall = ctext(st, 0);
	c->allowed = cint(st, 1, 0);
	c->denied = cint(st, 2, 0);
	c->killed = cint(st, 3, 0);
	c->would_deny = cint(st, 4, 0);
}

int audit_syscall_counts_each(struct audit *a, const char *run_id,
			      int (*fn)(const struct audit_syscall_count *,
					void *),
			      void *arg)
{
	sqlite3_stmt *st = NULL;
	int r;

	pthread_mutex_lock(&a->lock);
	r = prep_run(a,
		     "SELECT syscall, sum(decision = 'allow'),"
		     " sum(decision = 'deny'), sum(decision = 'kill'),"
		     " sum(decision = 'allow' AND would_deny)"
		     " FROM events WHERE run_id = ?1 GROUP BY syscall"
		     " ORDER BY count(*) DESC, syscall",
		     run_id, &st);
	if (!r)
		r = EACH_ROW(a, st, struct audit_syscall_count, fill_count, fn,
			     arg);
	pthread_mutex_unlock(&a->lock);
	return r;
}

/* ---------------------------- timeline ---------------------------- */

/* One sorted source of timeline items and its current row. */
struct source {
	sqlite3_stmt *st;
	bool live;		 /* has a current row */
	long long ts, rank, seq; /* merge key */
	enum audit_item_kind kind;
	struct audit_proc_row proc;
	struct audit_event_row event;
	struct audit_output_row output;
};

enum { SRC_PROC, SRC_EVENT, SRC_OUTPUT, SRC_N };

static const char *const source_sql[SRC_N] = {
	/* phase 0 start, 1 exec, 2 exit */
	[SRC_PROC] = "SELECT 0 AS phase, start_ns AS ts," PROC_COLS
		     "FROM processes WHERE run_id = ?1"
		     " UNION ALL SELECT 1, exec_ns," PROC_COLS
		     "FROM processes WHERE run_id = ?1 AND exec_ns NOT NULL"
		     " UNION ALL SELECT 2, exit_ns," PROC_COLS
		     "FROM processes WHERE run_id = ?1 AND exit_ns NOT NULL"
		     " ORDER BY ts, phase, serial",
	[SRC_EVENT] = EVENT_COLS "ORDER BY ts_ns, seq",
	[SRC_OUTPUT] = OUTPUT_COLS "ORDER BY ts_ns, seq",
};

/* Moves src to its next row: 0, or -errno. */
static int source_next(struct audit *a, struct source *s, int which)
{
	int rc = sqlite3_step(s->st), phase;

	s->live = rc == SQLITE_ROW;
	if (rc != SQLITE_ROW)
		return rc == SQLITE_DONE ? 0 : audit_sqlfail(a, rc, a->path);
	switch (which) {
	case SRC_PROC:
		phase = (int)cint(s->st, 0, 0);
		fill_proc_at(s->st, 2, &s->proc);
		s->kind = phase == 0   ? AUDIT_ITEM_START
			  : phase == 1 ? AUDIT_ITEM_EXEC
				       : AUDIT_ITEM_EXIT;
		s->ts = cint(s->st, 1, 0);
		s->rank = phase == 2 ? 3 : 0;
		s->seq = s->proc.p.serial;
		break;
	case SRC_EVENT:
		fill_event(s->st, &s->event);
		s->kind = AUDIT_ITEM_EVENT;
		s->ts = s->event.e.ts_ns;
		s->rank = 1;
		s->seq = s->event.seq;
		break;
	default:
		fill_output(s->st, &s->output);
		s->kind = AUDIT_ITEM_OUTPUT;
		s->ts = s->output.ts_ns;
		s->rank = 2;
		s->seq = s->output.seq;
		break;
	}
	return 0;
}

static bool before(const struct source *x, const struct source *y)
{
	if (x->ts != y->ts)
		return x->ts < y->ts;
	if (x->rank != y->rank)
		return x->rank < y->rank;
	return x->seq < y->seq;
}

static struct audit_item item_of(const struct source *s)
{
	struct audit_item it = { .kind = s->kind, .ts_ns = s->ts };

	if (s->kind == AUDIT_ITEM_EVENT)
		it.event = &s->event;
	else if (s->kind == AUDIT_ITEM_OUTPUT)
		it.output = &s->output;
	else
		it.proc = &s->proc;
	return it;
}

static int merge(struct audit *a, struct source src[SRC_N],
		 int (*fn)(const struct audit_item *, void *), void *arg)
{
	int r = 0;

	for (int i = 0; i < SRC_N && !r; i++)
		r = src[i].st ? source_next(a, &src[i], i) : 0; /* NULL: none */
	while (!r) {
		int best = -1;
		struct audit_item it;

		for (int i = 0; i < SRC_N; i++)
			if (src[i].live &&
			    (best < 0 || before(&src[i], &src[best])))
				best = i;
		if (best < 0)
			break;
		it = item_of(&src[best]);
		r = fn(&it, arg);
		if (!r)
			r = source_next(a, &src[best], best);
	}
	return r;
}

/* merge() in one read transaction: the cursors see one snapshot even
 * while a run is being written. */
static int merge_snapshot(struct audit *a, struct source src[SRC_N],
			  int (*fn)(const struct audit_item *, void *),
			  void *arg)
{
	int r;

	if (sqlite3_exec(a->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return audit_sqlfail(a, SQLITE_ERROR, a->path);
	r = merge(a, src, fn, arg);
	for (int i = 0; i < SRC_N; i++)
		sqlite3_reset(src[i].st);
	sqlite3_exec(a->db, "COMMIT", NULL, NULL, NULL);
	return r;
}

int audit_timeline_each(struct audit *a, const char *run_id,
			int (*fn)(const struct audit_item *, void *), void *arg)
{
	struct source src[SRC_N];
	int r = 0;

	memset(src, 0, sizeof(src));
	pthread_mutex_lock(&a->lock);
	for (int i = 0; i < SRC_N && !r; i++)
		r = prep_run(a, source_sql[i], run_id, &src[i].st);
	if (!r)
		r = merge_snapshot(a, src, fn, arg);
	for (int i = 0; i < SRC_N; i++)
		sqlite3_finalize(src[i].st);
	pthread_mutex_unlock(&a->lock);
	return r;
}

/* ----------------------------- replay ----------------------------- */

int audit_replay_each(struct audit *a, const char *run_id, long long from_ns,
		      long long to_ns, unsigned what,
		      int (*fn)(const struct audit_item *, void *), void *arg)
{
#define REPLAY_RANGE "AND ts_ns >= ?2 AND ts_ns <= ?3 "
	struct source src[SRC_N];
	int r = 0;

	memset(src, 0, sizeof(src));
	pthread_mutex_lock(&a->lock);
	if (what & AUDIT_REPLAY_OUTPUTS)
		r = prep_run(a, OUTPUT_COLS REPLAY_RANGE "ORDER BY seq", run_id,
			     &src[SRC_OUTPUT].st);
	if (!r && (what & AUDIT_REPLAY_DENIALS))
		r = prep_run(
			a,
			EVENT_COLS
			"AND (decision <> 'allow' OR would_deny) " REPLAY_RANGE
			"ORDER BY ts_ns, seq",
			run_id, &src[SRC_EVENT].st);
	else if (!r && (what & AUDIT_REPLAY_EVENTS))
		r = prep_run(a, EVENT_COLS REPLAY_RANGE "ORDER BY ts_ns, seq",
			     run_id, &src[SRC_EVENT].st);
#undef REPLAY_RANGE
	for (int i = 0; i < SRC_N && !r; i++)
		if (src[i].st) {
			sqlite3_bind_int64(src[i].st, 2, from_ns);
			sqlite3_bind_int64(src[i].st, 3, to_ns);
		}
	if (!r)
		r = merge_snapshot(a, src, fn, arg);
	for (int i = 0; i < SRC_N; i++)
		sqlite3_finalize(src[i].st);
	pthread_mutex_unlock(&a->lock);
	return r;
}
