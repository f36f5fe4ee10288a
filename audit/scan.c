/*
 * scan.c - reading the decisions of many runs fast (ward recheck, ward
 * learn): the runs in start order without their code or policy text, and
 * each run's events through one statement prepared once and rebound per
 * run. Rows are streamed: nothing of a run is held in memory.
 */
#include "audit/audit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit-int.h"

struct audit_scan {
	struct audit *a;
	sqlite3_stmt *st;
	bool has_result; /* the events table has a result column */
};

static const char *ctext(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i);
}

int audit_runs_brief_each(struct audit *a, long long since_ns,
			  int (*fn)(const struct audit_run_brief *, void *),
			  void *arg)
{
	static const char sql[] =
		"SELECT id, started_ns, workdir, policy_name, status,"
		" interpreter FROM runs WHERE started_ns >= ?1"
		" ORDER BY started_ns, rowid";
	sqlite3_stmt *st = NULL;
	int rc, r = 0;

	pthread_mutex_lock(&a->lock);
	rc = sqlite3_prepare_v2(a->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK) {
		r = audit_sqlfail(a, rc, a->path);
		goto out;
	}
	sqlite3_bind_int64(st, 1, since_ns);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct audit_run_brief b;
		const char *id = ctext(st, 0);

		memset(&b, 0, sizeof(b));
		snprintf(b.id, sizeof(b.id), "%s", id ? id : "");
		b.started_ns = sqlite3_column_int64(st, 1);
		b.workdir = ctext(st, 2);
		b.policy_name = ctext(st, 3);
		b.status = ctext(st, 4);
		b.interpreter = ctext(st, 5);
		if ((r = fn(&b, arg)) != 0)
			goto out;
	}
	if (rc != SQLITE_DONE)
		r = audit_sqlfail(a, rc, a->path);
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&a->lock);
	return r;
}

#define SCAN_COLS                                                              \
	"SELECT seq, pid, tid, nr, syscall, args, raw, target,"                \
	" decision, rule, errno, would_deny, proc_serial"
#define SCAN_FROM " FROM events WHERE run_id = ?1 ORDER BY seq"

int audit_scan_open(struct audit *a, struct audit_scan **out)
{
	static const char sql[] = SCAN_COLS SCAN_FROM;
	static const char sql_result[] = SCAN_COLS ", result" SCAN_FROM;
	struct audit_scan *s = calloc(1, sizeof(*s));
	int rc;

	*out = NULL;
	if (!s)
		return audit_fail(a, -ENOMEM, "out of memory");
	s->a = a;
	pthread_mutex_lock(&a->lock);
	s->has_result = a->v5_cols; /* events.result: version 5 */
	rc = sqlite3_prepare_v2(a->db, s->has_result ? sql_result : sql, -1,
				&s->st, NULL);
	if (rc != SQLITE_OK) {
		rc = audit_sqlfail(a, rc, a->path);
		pthread_mutex_unlock(&a->lock);
		free(s);
		return rc;
	}
	pthread_mutex_unlock(&a->lock);
	*out = s;
	return 0;
}

int audit_scan_run(struct audit_scan *s, const char *run_id,
		   int (*fn)(const struct audit_event_row *, void *), void *arg)
{
	struct audit *a = s->a;
	sqlite3_stmt *st = s->st;
	int rc, r = 0;

	pthread_mutex_lock(&a->lock);
	sqlite3_reset(st);
	sqlite3_bind_text(st, 1, run_id, -1, SQLITE_TRANSIENT);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct audit_event_row ev;
		struct audit_event *e = &ev.e;

		memset(&ev, 0, sizeof(ev));
		ev.seq = sqlite3_column_int64(st, 0);
		e->pid = (pid_t)sqlite3_column_int64(st, 1);
		e->tid = (pid_t)sqlite3_column_int64(st, 2);
		e->nr = sqlite3_column_type(st, 3) == SQLITE_NULL
				? -1
				: (int)sqlite3_column_int64(st, 3);
		e->syscall = ctext(st, 4);
		e->args_json = ctext(st, 5);
		e->raw = ctext(st, 6);
		e->target = ctext(st, 7);
		e->decision = ctext(st, 8);
		e->rule = ctext(st, 9);
		e->err = (int)sqlite3_column_int64(st, 10);
		e->would_deny = sqlite3_column_int64(st, 11) != 0;
		e->proc_serial = (int)sqlite3_column_int64(st, 12);
		if (s->has_result &&
		    sqlite3_column_type(st, 13) == SQLITE_INTEGER) {
			e->has_result = true;
			e->result = sqlite3_column_int64(st, 13);
		}
		if ((r = fn(&ev, arg)) != 0)
			break;
	}
	if (!r && rc != SQLITE_DONE)
		r = audit_sqlfail(a, rc, a->path);
	sqlite3_reset(st);
	pthread_mutex_unlock(&a->lock);
	return r;
}

void audit_scan_close(struct audit_scan *s)
{
	if (!s)
		return;
	sqlite3_finalize(s->st);
	free(s);
}
