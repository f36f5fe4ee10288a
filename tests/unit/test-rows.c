/*
 * test-rows.c - audit/rows.c: every column of a row by its name and type
 * (blobs with NULs, NULL, the v4 hash columns), the per-table order, the
 * joins for OCSF, audit_next_run's order and --since, an unknown run, a
 * missing table, and stopping early.
 */
#include <errno.h>
#include <ftw.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/audit.h"
#include "audit/rows.h"
#include "tests/unit/tap.h"

static char tmpdir[] = "/tmp/ward-test-rows-XXXXXX";

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p);
}

static const char code[] = "print(1)\0\xff";

static void begin(struct audit *a, long long start, char *id)
{
	struct audit_run_info ri = {
		.argv_json = "[\"ward\"]",
		.language = "python",
		.interpreter = "/usr/bin/python3",
		.code = code,
		.code_len = sizeof(code) - 1,
		.code_sha256 = "c0de",
		.code_name = "-c",
		.policy_name = "default",
		.policy_json = "{}",
		.policy_sha256 = "9011c7",
		.workdir = "/tmp/w",
		.limits_json = "{}",
		.host = "h",
		.kernel = "k",
		.ward_version = "0.1.0",
		.uid = 1000,
		.start_ns = start,
	};
	is_int(audit_run_begin(a, &ri, id), 0, "run_begin");
}

struct seen {
	int rows, stop_at;
	long long last_key;
	bool ordered, blob_ok, null_ok, has_hash, join_ok;
	char types[256];
};

static int count_row(const struct audit_col *c, int n, void *arg)
{
	struct seen *s = arg;
	const struct audit_col *k = audit_col_get(c, n, "seq");
	const struct audit_col *d = audit_col_get(c, n, "data");
	const struct audit_col *bt = audit_col_get(c, n, "backtrace");
	const struct audit_col *pe = audit_col_get(c, n, "p_exe");

	if (!k)
		k = audit_col_get(c, n, "serial");
	if (k) {
		s->ordered = s->ordered && k->type == AUDIT_COL_INT &&
			     k->i > s->last_key;
		s->last_key = k->i;
	}
	if (d)
		s->blob_ok = d->type == AUDIT_COL_BLOB && d->n == 3 &&
			     !memcmp(d->p, "a\0b", 3);
	if (bt)
		s->null_ok = bt->type == AUDIT_COL_NULL;
	if (audit_col_get(c, n, "hash"))
		s->has_hash = true;
	if (pe)
		s->join_ok = pe->type == AUDIT_COL_TEXT &&
			     !strcmp(pe->p, "/usr/bin/python3");
	s->rows++;
	return s->stop_at && s->rows == s->stop_at ? 42 : 0;
}

static struct seen each(struct audit *a, enum audit_rows_what w, const char *id,
			int stop_at, int *r)
{
	struct seen s = { .ordered = true, .stop_at = stop_at };

	*r = audit_rows_each(a, w, id, count_row, &s);
	return s;
}

int main(void)
{
	struct audit *a = NULL;
	char err[256] = "", db[600], id1[AUDIT_RUN_ID_LEN + 1],
	     id2[AUDIT_RUN_ID_LEN + 1], id3[AUDIT_RUN_ID_LEN + 1],
	     got[AUDIT_RUN_ID_LEN + 1] = "", next[AUDIT_RUN_ID_LEN + 1];
	struct audit_process p = { .serial = 1,
				   .pid = 10,
				   .tgid = 10,
				   .ppid = 1,
				   .kind = "process",
				   .start_ns = 1000,
				   .exe = "/usr/bin/python3",
				   .argv_json = "[\"python3\"]" };
	struct audit_event e = { .ts_ns = 1001,
				 .pid = 10,
				 .tid = 10,
				 .proc_serial = 1,
				 .nr = 257,
				 .syscall = "openat",
				 .args_json = "{}",
				 .decision = "allow",
				 .rule = "r",
				 .reason = "ok" };
	struct audit_run_end re = { .end_ns = 5000, .status = "ok" };
	struct seen s;
	long long after = 0;
	int r, order = 0;

	if (!mkdtemp(tmpdir))
		return 1;
	snprintf(db, sizeof(db), "%s/a.db", tmpdir);
	if (!ok(audit_open(db, false, &a, err, sizeof(err)) == 0, "open: %s",
		err))
		return done_testing();
	/* three runs; the second started first */
	begin(a, 3000, id1);
	audit_process_start(a, &p);
	for (int i = 0; i < 5; i++) {
		e.ts_ns = 1001 + i;
		audit_event(a, &e);
	}
	audit_output(a, 1010, AUDIT_STDOUT, "a\0b", 3);
	audit_run_end(a, &re);
	begin(a, 1000, id2);
	audit_run_end(a, &re);
	begin(a, 2000, id3);
	audit_run_end(a, &re);
	audit_close(a);
	a = NULL;
	if (!ok(audit_open(db, true, &a, err, sizeof(err)) == 0,
		"open readonly: %s", err))
		return done_testing();

	s = each(a, AUDIT_ROWS_EVENTS, id1, 0, &r);
	is_int(r, 0, "events: 0");
	is_int(s.rows, 5, "events: every row");
	ok(s.ordered, "events: by seq");
	ok(s.null_ok, "events: a NULL column is AUDIT_COL_NULL");
	ok(s.has_hash, "events: the v4 hash column is given by name");
	s = each(a, AUDIT_ROWS_OUTPUTS, id1, 0, &r);
	ok(r == 0 && s.rows == 1 && s.blob_ok,
	   "outputs: data is a blob, NULs kept");
	s = each(a, AUDIT_ROWS_EVENTS_PROC, id1, 0, &r);
	ok(r == 0 && s.rows == 5 && s.join_ok,
	   "events with their process: p_exe joined");
	s = each(a, AUDIT_ROWS_PROCESSES_PARENT, id1, 0, &r);
	ok(r == 0 && s.rows == 1, "processes with their parent");
	s = each(a, AUDIT_ROWS_RUN, id1, 0, &r);
	ok(r == 0 && s.rows == 1, "the run row");
	s = each(a, AUDIT_ROWS_EVENTS, id1, 2, &r);
	ok(r == 42 && s.rows == 2, "fn's non-zero stops and is returned");
	s = each(a, AUDIT_ROWS_EVENTS, "0000000000000000", 0, &r);
	ok(r == 0 && s.rows == 0, "an unknown run has no rows");
	s = each(a, (enum audit_rows_what)99, id1, 0, &r);
	is_int(r, -EINVAL, "an unknown table: -EINVAL");

	/* runs in start order, then from --since */
	while (audit_next_run(a, -1, &after, got, next) == 0) {
		const char *want = order == 0 ? id2 : order == 1 ? id3 : id1;

		ok(!strcmp(next, want), "next run %d in start order", order);
		memcpy(got, next, sizeof(got));
		order++;
	}
	is_int(order, 3, "every run once");
	got[0] = '\0';
	r = audit_next_run(a, 2000, &after, got, next);
	ok(r == 0 && !strcmp(next, id3), "since: the run started at it");
	memcpy(got, next, sizeof(got));
	r = audit_next_run(a, 2000, &after, got, next);
	ok(r == 0 && !strcmp(next, id1), "since: then the later one");
	memcpy(got, next, sizeof(got));
	is_int(audit_next_run(a, 2000, &after, got, next), -ENOENT,
	       "since: then none");
	is_int(audit_rows_snapshot(a, true), 0, "snapshot begins");
	s = each(a, AUDIT_ROWS_EVENTS, id1, 0, &r);
	ok(r == 0 && s.rows == 5, "rows inside a snapshot");
	is_int(audit_rows_snapshot(a, false), 0, "snapshot ends");
	audit_close(a);

	/* a table the file does not have: no rows, no error */
	{
		sqlite3 *raw = NULL;

		if (sqlite3_open(db, &raw) == SQLITE_OK &&
		    sqlite3_exec(raw, "DROP TABLE inputs", NULL, NULL, NULL) ==
			    SQLITE_OK &&
		    audit_open(db, true, &a, err, sizeof(err)) == 0) {
			s = each(a, AUDIT_ROWS_INPUTS, id1, 0, &r);
			ok(r == 0 && s.rows == 0, "a missing table: no rows");
			audit_close(a);
		} else {
			ok(0, "dropping a table: %s",
			   raw ? sqlite3_errmsg(raw) : err);
		}
		sqlite3_close(raw);
	}
	nftw(tmpdir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	return done_testing();
}
