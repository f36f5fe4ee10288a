/*
 * test-chain.c - audit/chain.c: the hash chain written with each run, its
 * seal, the key file, audit_verify_run() on an intact and on tampered
 * records (through a second SQLite connection), and the cost per row.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit-int.h"
#include "tests/unit/tap.h"

static char tmpdir[] = "/tmp/ward-test-chain-XXXXXX";

static const char *tpath(const char *name)
{
	static char buf[4][512];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", tmpdir, name);
	return buf[i];
}

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p);
}

static void sql(const char *db, const char *q)
{
	sqlite3 *c = NULL;
	char *err = NULL;

	sqlite3_open(db, &c);
	if (sqlite3_exec(c, q, NULL, NULL, &err) != SQLITE_OK)
		printf("# %s: %s\n", q, err);
	sqlite3_free(err);
	sqlite3_close(c);
}

static const struct audit_run_info run_info = {
	.argv_json = "[\"ward\"]",
	.language = "python",
	.interpreter = "/usr/bin/python3",
	.code = "print(1)\0x",
	.code_len = 10,
	.code_sha256 = "00",
	.code_name = "-c",
	.policy_name = "default",
	.policy_json = "{}",
	.policy_sha256 = "00",
	.workdir = "/tmp/w",
	.limits_json = "{}",
	.host = "h",
	.kernel = "k",
	.ward_version = "t",
	.uid = 1,
	.start_ns = 1,
};

/* A run of n events (every 10th a denial), n/4 output chunks and two
 * processes, ended. */
static int make_run(const char *db, int n, char id[AUDIT_RUN_ID_LEN + 1])
{
	struct audit *a = NULL;
	char err[512] = "";
	int r = audit_open(db, false, &a, err, sizeof(err));

	if (r) {
		printf("# %s\n", err);
		return r;
	}
	r = audit_run_begin(a, &run_info, id);
	for (int p = 1; !r && p <= 2; p++) {
		struct audit_process pr = { .serial = p,
					    .parent_serial = p - 1,
					    .pid = 100 + p,
					    .tgid = 100 + p,
					    .ppid = 100,
					    .kind = "process",
					    .start_ns = p };
		r = audit_process_start(a, &pr);
	}
	for (int i = 0; !r && i < n; i++) {
		struct audit_event e = {
			.ts_ns = 10 + i,
			.pid = 101,
			.tid = 101,
			.proc_serial = 1,
			.nr = 257,
			.syscall = "openat",
			.args_json = "{\"flags\":\"O_RDONLY|O_CLOEXEC\"}",
			.raw = "lib.so",
			.target = "/usr/lib/x86_64-linux-gnu/lib.so",
			.decision = i % 10 == 9 ? "deny" : "allow",
			.rule = "usr",
			.reason = "read of /usr/lib/x86_64-linux-gnu/lib.so: "
				  "allowed by usr",
			.err = i % 10 == 9 ? 13 : 0,
			/* the kernel's result, and rows without one (a
			 * call that never returned, a row of schema 4) */
			.has_result = i % 3 != 0,
			.result = i % 10 == 9 ? -13 : i,
		};
		r = audit_event(a, &e);
		if (!r && i % 4 == 0)
			r = audit_output(a, 10 + i, AUDIT_STDOUT, "out\0put\n",
					 8);
	}
	if (!r)
		r = audit_process_exit(a, 2, 99, 0, 0);
	if (!r) {
		struct audit_run_end re = { .end_ns = 1000,
					    .status = "ok",
					    .events = n,
					    .processes = 2 };
		r = audit_run_end(a, &re);
	}
	if (r)
		printf("# %s\n", audit_errmsg(a));
	audit_close(a);
	return r;
}

struct got {
	int n;
	char first[256];
	long long row;
};

static int collect(const struct audit_problem *p, void *arg)
{
	struct got *g = arg;

	if (!g->n++) {
		snprintf(g->first, sizeof(g->first), "%s %s", p->table,
			 p->column ? p->column : "");
		g->row = p->row;
	}
	return 0;
}

/* Verifies id in db (with its key unless nokey): problems found. */
static int verify(const char *db, const char *id, bool nokey, struct got *g,
		  struct audit_verify *v)
{
	struct audit *a = NULL;
	char err[512] = "";
	int r = audit_open(db, true, &a, err, sizeof(err));

	memset(g, 0, sizeof(*g));
	if (r) {
		printf("# %s\n", err);
		return -1;
	}
	if (!nokey && audit_verify_key(a))
		printf("# key: %s\n", audit_errmsg(a));
	r = audit_verify_run(a, id, v, collect, g);
	if (r)
		printf("# verify: %d %s\n", r, audit_errmsg(a));
	audit_close(a);
	return r ? -1 : g->n;
}

static void test_intact_and_key(void)
{
	const char *db = tpath("a.db");
	char id[AUDIT_RUN_ID_LEN + 1], q[256];
	struct audit_verify v;
	struct got g;
	struct stat st;

	ok(make_run(db, 1000, id) == 0, "a run of 1000 events recorded");
	ok(stat(tpath("a.db.key"), &st) == 0 && (st.st_mode & 0777) == 0600,
	   "the key is made beside the database, mode 0600");
	is_int(verify(db, id, false, &g, &v), 0, "intact: no problem");
	ok(v.sealed && v.keyed && v.key_checked && v.seal_checked &&
		   v.rows[0] == 1000 && v.rows[1] == 250,
	   "sealed, keyed, checked; 1000 events and 250 outputs");
	is_int(verify(db, id, true, &g, &v), 0, "without the key: intact");
	ok(!v.key_checked && v.key_note[0], "... and says what it skipped");

	snprintf(q, sizeof(q),
		 "UPDATE events SET target = '/etc/shadow' WHERE run_id = '%s'"
		 " AND seq = 500",
		 id);
	sql(db, q);
	verify(db, id, false, &g, &v);
	ok(g.n == 1 && g.row == 500 && !strcmp(g.first, "events "),
	   "an edited event is named: %s %lld", g.first, g.row);
	ok(verify(db, id, true, &g, &v) == 1 && g.row == 500,
	   "... also without the key (the link breaks)");
	snprintf(q, sizeof(q),
		 "UPDATE processes SET exit_code = 1 WHERE run_id = '%s'"
		 " AND serial = 2",
		 id);
	sql(db, q);
	verify(db, id, false, &g, &v);
	ok(v.problems == 2, "an edited process row is a second problem");
	/* the kernel's result is part of the record: edited, taken away,
	 * or added where none was */
	{
		static const struct {
			const char *set;
			int seq;
		} edits[] = { { "result = 0", 20 },
			      { "result = NULL", 101 },
			      { "result = 5", 301 } };
		for (unsigned i = 0; i < 3; i++) {
			snprintf(q, sizeof(q),
				 "UPDATE events SET %s WHERE run_id = '%s'"
				 " AND seq = %d",
				 edits[i].set, id, edits[i].seq);
			sql(db, q);
			verify(db, id, false, &g, &v);
			ok(v.problems == 3 + i, "%s: a problem (%u)",
			   edits[i].set, v.problems);
		}
	}

	/* a key that others can read is refused */
	chmod(tpath("a.db.key"), 0644);
	{
		struct audit *a = NULL;
		char err[512] = "";

		audit_open(db, true, &a, err, sizeof(err));
		ok(audit_verify_key(a) == -EPERM &&
			   strstr(audit_errmsg(a), "chmod 600"),
		   "a key readable by others is refused: %s", audit_errmsg(a));
		audit_close(a);
		audit_open(db, false, &a, err, sizeof(err));
		ok(audit_run_begin(a, &run_info, id) == -EPERM,
		   "... and no run begins with it");
		audit_close(a);
	}
	chmod(tpath("a.db.key"), 0600);
}

static void test_unchained(void)
{
	const char *db = tpath("b.db");
	char id[AUDIT_RUN_ID_LEN + 1];
	struct audit_verify v;
	struct got g;

	ok(make_run(db, 10, id) == 0, "a run");
	/* a run of an older ward: no hashes, no seal, long before the key */
	sql(db, "INSERT INTO runs(id, started_ns, status) VALUES "
		"('00000000000000aa', 5, 'ok');"
		"INSERT INTO events(run_id, seq, ts_ns, pid, tid, nr, syscall,"
		" decision) VALUES ('00000000000000aa', 1, 6, 1, 1, 0, 'read',"
		" 'allow')");
	is_int(verify(db, "00000000000000aa", false, &g, &v), 0,
	       "a run from before the chain: no problem");
	ok(v.unchained && !v.sealed, "... reported unchained");
}

/* A run ended on handle a (open): 0 or the error. */
static int end_run_on(struct audit *a, char id[AUDIT_RUN_ID_LEN + 1])
{
	struct audit_event e = { .ts_ns = 2,
				 .pid = 101,
				 .tid = 101,
				 .nr = 257,
				 .syscall = "openat",
				 .decision = "allow",
				 .rule = "usr" };
	struct audit_run_end re = { .end_ns = 3, .status = "ok", .events = 1 };
	int r = audit_run_begin(a, &run_info, id);

	if (!r)
		r = audit_event(a, &e);
	return r ? r : audit_run_end(a, &re);
}

/* Statements of the handle's connection: how many are busy (holding a
 * read of the file), and whether the seal's update is among them. */
static int busy_statements(struct audit *a, bool *has_seal)
{
	int busy = 0;

	*has_seal = false;
	for (sqlite3_stmt *st = sqlite3_next_stmt(a->db, NULL); st;
	     st = sqlite3_next_stmt(a->db, st)) {
		busy += sqlite3_stmt_busy(st) != 0;
		if (!strncmp(sqlite3_sql(st), "UPDATE runs SET chain", 21))
			*has_seal = true;
	}
	return busy;
}

/* The seal's statements are compiled when the handle opens (the run's end
 * compiles no SQL) and kept: each seal leaves them reset (no read left
 * open), and a second run sealed on the same handle verifies. */
static void test_seal_statements_ahead(void)
{
	const char *db = tpath("c.db");
	char id1[AUDIT_RUN_ID_LEN + 1], id2[AUDIT_RUN_ID_LEN + 1], err[512];
	struct audit *a = NULL;
	struct audit_verify v;
	struct got g;
	bool seal;

	ok(make_run(db, 10, id1) == 0, "a database with a run");
	ok(audit_open(db, false, &a, err, sizeof(err)) == 0, "opened: %s",
	   a ? "" : err);
	busy_statements(a, &seal);
	ok(seal, "the seal's statement is prepared with the handle");
	ok(end_run_on(a, id1) == 0 && end_run_on(a, id2) == 0,
	   "two runs ended on one handle");
	is_int(busy_statements(a, &seal), 0,
	       "no statement is left busy after the seals");
	{
		sqlite3 *c = NULL;
		int log = -1, done = -2;

		sqlite3_open(db, &c);
		ok(sqlite3_wal_checkpoint_v2(c, NULL,
					     SQLITE_CHECKPOINT_TRUNCATE, &log,
					     &done) == SQLITE_OK &&
			   log == done,
		   "another connection checkpoints all of the WAL "
		   "(%d of %d frames)",
		   done, log);
		sqlite3_close(c);
	}
	audit_close(a);
	is_int(verify(db, id1, false, &g, &v), 0, "the first run verifies");
	ok(v.sealed && v.seal_checked, "... sealed");
	is_int(verify(db, id2, false, &g, &v), 0, "the second run verifies");
	ok(v.sealed && v.seal_checked, "... sealed");
}

/* The cost per row: the chain alone (one SHA-256 link and one HMAC tag),
 * and audit_event() with its batch commits, for scale. */
static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void bench(void)
{
	const char *db = tpath("bench.db");
	struct audit *a = NULL;
	char err[512] = "", id[AUDIT_RUN_ID_LEN + 1],
	     hash[AUDIT_HASH_TEXT_LEN + 1];
	const int n = 200000;
	struct audit_val v[18] = { 0 };
	double t0, t1;

	if (audit_open(db, false, &a, err, sizeof(err)) ||
	    audit_run_begin(a, &run_info, id)) {
		ok(0, "bench: open");
		return;
	}
	for (int i = 0; i < 18; i++)
		v[i] = (struct audit_val){ .t = V_INT, .i = i };
	v[0] = (struct audit_val){ .t = V_TEXT, .p = id, .n = 16 };
	v[8] = (struct audit_val){ .t = V_TEXT,
				   .p = "{\"flags\":\"O_RDONLY|O_CLOEXEC\"}",
				   .n = 31 };
	v[10] = (struct audit_val){ .t = V_TEXT,
				    .p = "/usr/lib/x86_64-linux-gnu/libc.so.6",
				    .n = 35 };
	v[13] = (struct audit_val){ .t = V_TEXT,
				    .p = "read of /usr/lib/x86_64-linux-gnu/"
					 "libc.so.6: allowed by usr",
				    .n = 59 };
	{
		/* for scale: SHA-256 alone over the same bytes (about 330) */
		static char buf[330];
		struct ward_sha256 c;
		uint8_t d[WARD_SHA256_LEN];

		t0 = now_s();
		for (int i = 0; i < n; i++) {
			ward_sha256_init(&c);
			ward_sha256_update(&c, buf, sizeof(buf));
			ward_sha256_final(&c, d);
		}
		t1 = now_s();
		printf("# one SHA-256 of 330 bytes: %.2f us\n",
		       (t1 - t0) * 1e6 / n);
	}
	t0 = now_s();
	for (int i = 0; i < n; i++)
		audit_chain_row(a, AUDIT_CHAIN_EVENTS, v, 18, hash);
	t1 = now_s();
	printf("# chain: %.2f us per event row (SHA-256 link + HMAC tag)\n",
	       (t1 - t0) * 1e6 / n);
	ok((t1 - t0) * 1e6 / n < 20, "the chain costs little per row");
	audit_close(a);
	{
		char id2[AUDIT_RUN_ID_LEN + 1];

		t0 = now_s();
		make_run(tpath("bench2.db"), 50000, id2);
		t1 = now_s();
		printf("# a run of 50000 events through audit_event (queued, "
		       "batched, committed, chained): %.2f us per event\n",
		       (t1 - t0) * 1e6 / 50000);
	}
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_intact_and_key();
	test_unchained();
	test_seal_statements_ahead();
	bench();
	nftw(tmpdir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	return done_testing();
}
