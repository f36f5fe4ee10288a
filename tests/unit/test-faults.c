/*
 * test-faults.c - the writer under faults (linked with libaudit-faults.a:
 * audit/vfs.c fails the calls audit_faults_set() names): a failed commit
 * keeps its rows queued and commits nothing; the run's failure is kept and
 * returned; a later attempt commits them with no hole; the run's end says
 * status error with the cause; a full WAL at the end writes what fits and
 * an end sealed over the rows stored; verify finds nothing wrong.
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit-int.h"
#include "audit/audit.h"
#include "tests/unit/tap.h"
#include "tests/unit/tmpdir.h"

/* One integer or text from a second connection ("" / -1 on error). */
static long long q_int(const char *path, const char *sql, const char *id)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	long long v = -1;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) ==
		    SQLITE_OK &&
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
		if (sqlite3_step(st) == SQLITE_ROW)
			v = sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static const char *q_text(const char *path, const char *sql, const char *id)
{
	static char buf[1024];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;

	buf[0] = '\0';
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) ==
		    SQLITE_OK &&
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
		if (sqlite3_step(st) == SQLITE_ROW &&
		    sqlite3_column_text(st, 0))
			snprintf(buf, sizeof(buf), "%s",
				 sqlite3_column_text(st, 0));
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	return buf;
}

static struct audit_run_info run_info(void)
{
	return (struct audit_run_info){
		.argv_json = "[\"ward\",\"run\",\"x.py\"]",
		.language = "python",
		.interpreter = "/usr/bin/python3",
		.code = "print(1)",
		.code_len = 8,
		.code_sha256 = "c0de",
		.code_name = "x.py",
		.policy_name = "default",
		.policy_json = "{\"version\":1}",
		.policy_sha256 = "9011c7",
		.workdir = "/tmp/w",
		.limits_json = "{}",
		.ward_version = "0.1.0",
		.uid = 65534,
		.start_ns = 1,
	};
}

static struct audit_event allow(long long ts)
{
	return (struct audit_event){
		.ts_ns = ts,
		.pid = 100,
		.tid = 100,
		.proc_serial = 0,
		.nr = 257,
		.syscall = "openat",
		.args_json = "{\"path\":\"x\"}",
		.target = "/tmp/w/x",
		.decision = "allow",
		.rule = "workdir",
	};
}

static struct audit_run_end end_ok(void)
{
	return (struct audit_run_end){ .end_ns = 2, .status = "ok" };
}

static int count_problems(const struct audit_problem *p, void *arg)
{
	(void)p;
	++*(int *)arg;
	return 0;
}

/* verify finds no problem in the run (0), else the count, -1 on error. */
static int problems(const char *path, const char *id)
{
	struct audit *r = NULL;
	struct audit_verify v;
	char err[256];
	int n = 0;

	if (audit_open(path, true, &r, err, sizeof(err)) < 0)
		return -1;
	audit_chain_key_load(r, false);
	if (audit_verify_run(r, id, &v, count_problems, &n) < 0)
		n = -1;
	audit_close(r);
	return n;
}

#define SEQ_SQL                                                                \
	"SELECT count(*) = max(seq) AND min(seq) = 1 FROM events"              \
	" WHERE run_id = ?1"

static void test_failed_commit_keeps_the_queue(void)
{
	const char *path = tpath("keep.db");
	struct audit *a = NULL;
	char id[AUDIT_RUN_ID_LEN + 1], msg[512], err[256];
	struct audit_event e = allow(10);
	struct audit_run_info ri = run_info();
	struct audit_run_end re = end_ok();
	int r;

	audit_faults_set(NULL);
	if (!ok(audit_open(path, false, &a, err, sizeof(err)) == 0, "open"))
		return;
	is_int(audit_run_begin(a, &ri, id), 0, "run begins");
	for (int i = 0; i < 5; i++)
		audit_event(a, &e);
	audit_output(a, 11, AUDIT_STDOUT, "hello\n", 6);
	audit_faults_set("write:1+:EIO");
	r = audit_flush(a);
	is_int(r, -EIO, "a commit whose write fails: -EIO");
	ok(strstr(audit_errmsg(a), "I/O error") != NULL,
	   "said as an I/O error: %s", audit_errmsg(a));
	is_int(q_int(path, "SELECT count(*) FROM events WHERE run_id = ?1", id),
	       0, "nothing of the failed batch committed");
	is_int(audit_run_failure(a, msg, sizeof(msg)), -EIO,
	       "the run's failure is kept");
	is_int(audit_event(a, &e), -EIO,
	       "a row after the failure is queued, the failure returned");
	audit_faults_set(NULL);
	is_int(audit_flush(a), 0, "a flush tries again and commits");
	is_int(q_int(path, "SELECT count(*) FROM events WHERE run_id = ?1", id),
	       6, "every queued row is there, the failed batch's too");
	is_int(q_int(path, SEQ_SQL, id), 1, "seq 1..6, no hole");
	is_int(q_int(path, "SELECT count(*) FROM outputs WHERE run_id = ?1",
		     id),
	       1, "the output row too");
	r = audit_run_end(a, &re);
	is_int(r, -EIO, "run_end of a failed run returns the failure");
	ok(strstr(audit_errmsg(a), "recorded with status error") != NULL,
	   "and says the end was recorded: %s", audit_errmsg(a));
	is_str(q_text(path, "SELECT status FROM runs WHERE id = ?1", id),
	       "error", "status error");
	ok(strstr(q_text(path, "SELECT cause FROM runs WHERE id = ?1", id),
		  "audit database could not be written") != NULL,
	   "the cause names the audit database");
	ok(q_text(path, "SELECT chain FROM runs WHERE id = ?1", id)[0],
	   "sealed");
	audit_close(a);
	is_int(problems(path, id), 0, "verify: no problem");
}

static void test_full_wal_at_the_end(void)
{
	const char *path = tpath("full.db");
	struct audit *a = NULL;
	char id[AUDIT_RUN_ID_LEN + 1], err[256], spec[64], big[2000];
	struct audit_run_info ri = run_info();
	struct audit_run_end re = end_ok();
	struct stat st;
	long long n;
	int r;

	audit_faults_set(NULL);
	if (!ok(audit_open(path, false, &a, err, sizeof(err)) == 0, "open"))
		return;
	is_int(audit_run_begin(a, &ri, id), 0, "run begins");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	struct audit_event e = allow(10);
	e.args_json = big; /* ~2 KB a row: a batch is many pages */
	for (int i = 0; i < 20; i++)
		audit_event(a, &e);
	is_int(audit_flush(a), 0, "20 rows committed");
	/* the WAL may grow 64 KiB more: some rows fit, not 200 */
	if (!ok(stat(tpath("full.db-wal"), &st) == 0, "the WAL is there"))
		return;
	snprintf(spec, sizeof(spec), "wal:%lld:ENOSPC",
		 (long long)st.st_size + 64 * 1024);
	audit_faults_set(spec);
	for (int i = 0; i < 200; i++)
		audit_event(a, &e);
	r = audit_flush(a);
	is_int(r, -ENOSPC, "the batch does not fit: -ENOSPC");
	r = audit_run_end(a, &re);
	is_int(r, -ENOSPC, "run_end returns the failure");
	ok(strstr(audit_errmsg(a), "without its last") != NULL,
	   "and says rows were lost at the end: %s", audit_errmsg(a));
	audit_faults_set(NULL);
	n = q_int(path, "SELECT count(*) FROM events WHERE run_id = ?1", id);
	ok(n > 20 && n < 220, "what fitted was written (%lld of 220)", n);
	is_int(q_int(path, SEQ_SQL, id), 1, "seq 1..N, no hole");
	is_str(q_text(path, "SELECT status FROM runs WHERE id = ?1", id),
	       "error", "status error");
	ok(strstr(q_text(path, "SELECT cause FROM runs WHERE id = ?1", id),
		  "could not be written") != NULL,
	   "the cause says what was lost: %s",
	   q_text(path, "SELECT cause FROM runs WHERE id = ?1", id));
	audit_close(a);
	is_int(problems(path, id), 0, "verify: the rows stored are sealed");
}

static void test_deleted_database(void)
{
	const char *path = tpath("gone.db");
	struct audit *a = NULL;
	char id[AUDIT_RUN_ID_LEN + 1], err[256];
	struct audit_run_info ri = run_info();
	struct audit_event e = allow(10);

	audit_faults_set(NULL);
	if (!ok(audit_open(path, false, &a, err, sizeof(err)) == 0, "open"))
		return;
	is_int(audit_run_begin(a, &ri, id), 0, "run begins");
	audit_event(a, &e);
	is_int(audit_flush(a), 0, "a row committed");
	unlink(path);
	audit_event(a, &e);
	is_int(audit_flush(a), -ESTALE, "the file deleted: -ESTALE");
	ok(strstr(audit_errmsg(a), "deleted") != NULL, "says so: %s",
	   audit_errmsg(a));
	is_int(audit_flush(a), -ESTALE, "and again with nothing new queued");
	audit_close(a);
}

int main(void)
{
	if (tmpdir_make("faults") < 0) {
		perror("mkdtemp");
		return 1;
	}
	test_failed_commit_keeps_the_queue();
	test_full_wal_at_the_end();
	test_deleted_database();
	tmpdir_remove();
	return done_testing();
}
