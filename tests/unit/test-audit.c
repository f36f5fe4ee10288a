/*
 * test-audit.c - audit/: creation, schema marker, writer (every column read
 * back through a second SQLite connection), batching and durability
 * semantics, two writer threads, the reader, and the error paths.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "tests/unit/tap.h"

static char tmpdir[] = "/tmp/ward-test-audit-XXXXXX";

static const char *tpath(const char *name)
{
	static char buf[8][512];
	static int i;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", tmpdir, name);
	return buf[i];
}

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p);
}

/* ------------------------- second connection ------------------------- */

static sqlite3 *peek_open(const char *path)
{
	sqlite3 *db = NULL;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) !=
	    SQLITE_OK) {
		printf("# cannot open %s: %s\n", path, sqlite3_errmsg(db));
		sqlite3_close(db);
		return NULL;
	}
	return db;
}

static long long q_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	long long v = -999;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	else
		printf("# %s: %s\n", sql, sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return v;
}

/* The first column of the first row as text ("(null)" for NULL); static. */
static const char *q_text(sqlite3 *db, const char *sql)
{
	static char buf[8][4096];
	static int i;
	sqlite3_stmt *st = NULL;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "(error)");
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(st, 0);

		snprintf(buf[i], sizeof(buf[i]), "%s", t ? t : "(null)");
	} else {
		printf("# %s: %s\n", sql, sqlite3_errmsg(db));
	}
	sqlite3_finalize(st);
	return buf[i];
}

/* Whether the blob the query yields equals want[0..len). */
static int q_blob_eq(sqlite3 *db, const char *sql, const void *want, size_t len)
{
	sqlite3_stmt *st = NULL;
	int eq = 0;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW) {
		const void *b = sqlite3_column_blob(st, 0);
		size_t n = (size_t)sqlite3_column_bytes(st, 0);

		eq = n == len && (!len || memcmp(b, want, len) == 0);
		if (!eq)
			printf("# blob: %zu bytes, want %zu\n", n, len);
	}
	sqlite3_finalize(st);
	return eq;
}

__attribute__((format(printf, 1, 2))) static const char *fmt(const char *f, ...)
{
	static char buf[4][1024];
	static int i;
	va_list ap;

	i = (i + 1) % 4;
	va_start(ap, f);
	vsnprintf(buf[i], sizeof(buf[i]), f, ap);
	va_end(ap);
	return buf[i];
}

/* ------------------------------ fixtures ------------------------------ */

static const char code[] = "print('hi')\0tail";

static struct audit_run_info run_info(long long start_ns)
{
	return (struct audit_run_info){
		.argv_json = "[\"ward\",\"run\",\"x.py\"]",
		.language = "python",
		.interpreter = "/usr/bin/python3",
		.code = code,
		.code_len = sizeof(code) - 1,
		.code_sha256 = "c0de",
		.code_name = "x.py",
		.policy_name = "default",
		.policy_json = "{\"version\":1}",
		.policy_sha256 = "9011c7",
		.workdir = "/tmp/w",
		.limits_json = "{\"wall_s\":60}",
		.host = "testhost",
		.kernel = "6.18 #1",
		.ward_version = "0.1.0",
		.uid = 65534,
		.start_ns = start_ns,
	};
}

static struct audit_event event(long long ts, const char *decision)
{
	return (struct audit_event){
		.ts_ns = ts,
		.pid = 100,
		.tid = 101,
		.proc_serial = 1,
		.nr = 257,
		.syscall = "openat",
		.args_json = "{\"path\":\"/etc/shadow\"}",
		.raw = "../etc/shadow",
		.target = "/etc/shadow",
		.decision = decision,
		.rule = "default",
		.reason = "not in any read rule",
		.err = strcmp(decision, "allow") ? 13 : 0,
		.backtrace = strcmp(decision, "allow") ? "[[\"libc\",4096]]"
						       : NULL,
	};
}

static struct audit *open_rw(const char *path)
{
	struct audit *a = NULL;
	char err[512] = "";
	int r = audit_open(path, false, &a, err, sizeof(err));

	if (r)
		printf("# audit_open(%s): %d %s\n", path, r, err);
	return a;
}

/* fsync as the code under test calls it: the directories synced are noted
 * (by inode), then the call is made. */
static ino_t synced_dirs[64];
static int n_synced_dirs;

int fsync(int fd)
{
	struct stat st;

	if (!fstat(fd, &st) && S_ISDIR(st.st_mode) && n_synced_dirs < 64)
		synced_dirs[n_synced_dirs++] = st.st_ino;
	return (int)syscall(SYS_fsync, fd);
}

static bool dir_synced(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return false;
	for (int i = 0; i < n_synced_dirs; i++)
		if (synced_dirs[i] == st.st_ino)
			return true;
	return false;
}

/* -------------------------------- tests -------------------------------- */

/* A seal log that ward makes is in its directory for good before a seal
 * goes into it (the directory synced); one that exists with seals is
 * opened without that cost. */
static void test_seal_log_made_durable(void)
{
	const char *dir = tpath("seals"), *log = tpath("seals/seal.log");
	struct audit *a;

	ok(mkdir(dir, 0700) == 0, "seal log directory made");
	setenv("WARD_SEAL_LOG", log, 1);
	n_synced_dirs = 0;
	a = open_rw(tpath("seals.db"));
	ok(a != NULL, "open with a new seal log");
	ok(access(log, F_OK) == 0, "the seal log is made");
	ok(dir_synced(dir), "its directory is synced");
	audit_close(a);
	int fd = open(log, O_WRONLY | O_APPEND | O_CLOEXEC);
	ok(fd >= 0 && write(fd, "x\n", 2) == 2, "a line in the log");
	if (fd >= 0)
		close(fd);
	n_synced_dirs = 0;
	a = open_rw(tpath("seals.db"));
	ok(a != NULL && !dir_synced(dir),
	   "a log with lines in it: no directory sync");
	audit_close(a);
	unsetenv("WARD_SEAL_LOG");
}


static void test_default_path(void)
{
	char buf[64];

	setenv("WARD_DB", "/w/db", 1);
	setenv("XDG_STATE_HOME", "/xdg", 1);
	setenv("HOME", "/home/u", 1);
	is_int(audit_default_path("/x/y.db", buf, sizeof(buf)), 0,
	       "default_path: explicit");
	is_str(buf, "/x/y.db", "default_path: explicit wins");
	audit_default_path("", buf, sizeof(buf));
	is_str(buf, "/w/db", "default_path: empty explicit -> $WARD_DB");
	unsetenv("WARD_DB");
	audit_default_path(NULL, buf, sizeof(buf));
	is_str(buf, "/xdg/ward/audit.db", "default_path: $XDG_STATE_HOME");
	setenv("XDG_STATE_HOME", "rel", 1);
	audit_default_path(NULL, buf, sizeof(buf));
	is_str(buf, "/home/u/.local/state/ward/audit.db",
	       "default_path: relative XDG_STATE_HOME ignored, $HOME used");
	unsetenv("XDG_STATE_HOME");
	unsetenv("HOME");
	is_int(audit_default_path(NULL, buf, sizeof(buf)), -ENOENT,
	       "default_path: no HOME -> -ENOENT");
	is_int(audit_default_path("/a/very/long/path/that/does/not/fit/in/"
				  "sixty/four/bytes/at/all.db",
				  buf, sizeof(buf)),
	       -ENAMETOOLONG, "default_path: -ENAMETOOLONG");
}

/* Permission bits of path, or -1. */
static int mode_of(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : (int)(st.st_mode & 07777);
}

/* Marks the fds open now (below 1024) in set. */
static void fd_snapshot(unsigned char set[1024])
{
	memset(set, 0, 1024);
	for (int fd = 0; fd < 1024; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			set[fd] = 1;
}

/* Every fd opened since the snapshot is close-on-exec; counts them. */
static int new_fds_cloexec(const unsigned char before[1024], int *n)
{
	int ok_all = 1;

	*n = 0;
	for (int fd = 0; fd < 1024; fd++) {
		int fl = fcntl(fd, F_GETFD);

		if (fl < 0 || before[fd])
			continue;
		++*n;
		if (!(fl & FD_CLOEXEC)) {
			printf("# fd %d is not close-on-exec\n", fd);
			ok_all = 0;
		}
	}
	return ok_all;
}

static void test_create(void)
{
	const char *path = tpath("new/state/audit.db");
	struct audit *a;
	sqlite3 *db;
	mode_t old = umask(0277); /* would make 0600 into 0400 */
	unsigned char fds[1024];
	int nfds = 0;

	fd_snapshot(fds);
	a = open_rw(path);
	umask(old);
	ok(a != NULL, "open creates the database and its parents");
	if (!a)
		return;
	is_str(audit_path(a), path, "audit_path");
	is_int(mode_of(path), 0600,
	       "database file is mode 0600 despite "
	       "umask 0277");
	is_int(mode_of(tpath("new/state")), 0700,
	       "created directory is mode 0700");
	is_int(mode_of(tpath("new")), 0700,
	       "created parent directory is mode 0700");
	ok(new_fds_cloexec(fds, &nfds), "every fd the handle opened is "
					"close-on-exec");
	ok(nfds >= 3, "... db, wal and shm are open (%d new fds)", nfds);
	db = peek_open(path);
	is_str(q_text(db, "PRAGMA journal_mode"), "wal", "journal_mode is WAL");
	is_int(q_int(db, "PRAGMA user_version"), 7, "user_version is 7");
	is_int(q_int(db, "PRAGMA application_id"), 0x77617264,
	       "application_id is 'ward'");
	is_str(q_text(db, "SELECT value FROM ward_meta WHERE key = "
			  "'application'"),
	       "ward", "ward_meta marker");
	is_int(q_int(db, "SELECT count(*) FROM sqlite_schema WHERE name IN "
			 "('runs','processes','events','outputs',"
			 "'events_decision','denials')"),
	       6, "tables, index and view exist");
	is_int(mode_of(tpath("new/state/audit.db-wal")), 0600,
	       "WAL file has the database's mode 0600");
	sqlite3_close(db);
	audit_close(a);
	new_fds_cloexec(fds, &nfds);
	is_int(nfds, 0, "audit_close closes every fd it opened");
	a = open_rw(path);
	ok(a != NULL, "reopening an existing ward database works");
	audit_close(a);
	audit_close(NULL);
	ok(1, "audit_close(NULL) is a no-op");
}

/* A full run, every column read back through a second connection. */
static void test_write_read_back(void)
{
	static const char bin[] = "a\0b\xff\n\x01z";
	const char *path = tpath("rb.db");
	struct audit *a = open_rw(path);
	char id[AUDIT_RUN_ID_LEN + 1] = "";
	struct audit_run_info ri = run_info(1000000000000LL);
	struct audit_process p1 = {
		.serial = 1,
		.parent_serial = 0,
		.pid = 100,
		.tgid = 100,
		.ppid = 99,
		.kind = "process",
		.start_ns = 1000000000100LL,
		.start_ticks = 4242,
		.exe = NULL,
		.argv_json = NULL,
	};
	struct audit_process p2 = {
		.serial = 2,
		.parent_serial = 1,
		.pid = 102,
		.tgid = 100,
		.ppid = 99,
		.kind = "thread",
		.start_ns = 1000000000300LL,
		.start_ticks = 4243,
		.exe = "/usr/bin/python3",
		.argv_json = "[\"python3\"]",
	};
	struct audit_event e1 = event(1000000000200LL, "allow");
	struct audit_event e2 = event(1000000000400LL, "deny");
	struct audit_event e3 = event(1000000000600LL, "kill");
	struct audit_run_end re = {
		.end_ns = 1000000900000LL,
		.duration_ms = 900,
		.exit_code = -1,
		.signal = 9,
		.status = "killed",
		.cause = "policy kill: ptrace",
		.stdout_bytes = 8,
		.stderr_bytes = 3,
		.stdout_truncated = true,
		.stderr_truncated = false,
		.events = 3,
		.denials = 2,
		.processes = 2,
	};
	sqlite3 *db;
	int r;

	if (!ok(a != NULL, "open for the read-back test"))
		return;
	is_int(audit_run_begin(a, &ri, id), 0, "run_begin");
	ok(strlen(id) == 16 && strspn(id, "0123456789abcdef") == 16,
	   "run id is 16 lowercase hex chars (%s)", id);
	is_int(audit_process_start(a, &p1), 0, "process_start 1");
	is_int(audit_process_exec(a, 1, 1000000000150LL, "/usr/bin/python3",
				  "[\"python3\",\"x.py\"]"),
	       0, "process_exec");
	is_int(audit_event(a, &e1), 0, "event allow");
	is_int(audit_process_start(a, &p2), 0, "process_start 2 (thread)");
	is_int(audit_event(a, &e2), 0, "event deny");
	is_int(audit_output(a, 1000000000500LL, AUDIT_STDOUT, bin,
			    sizeof(bin) - 1),
	       0, "output with NUL and 0xff");
	is_int(audit_output(a, 1000000000550LL, AUDIT_STDERR, "err", 3), 0,
	       "stderr output");
	is_int(audit_output(a, 1000000000560LL, AUDIT_STDERR, "", 0), 0,
	       "empty output chunk is accepted and not stored");
	e3.would_deny = false;
	is_int(audit_event(a, &e3), 0, "event kill");
	is_int(audit_process_exit(a, 2, 1000000000700LL, 0, 0), 0,
	       "process_exit 2");
	is_int(audit_process_exit(a, 1, 1000000000800LL, -1, 9), 0,
	       "process_exit 1 by signal");
	r = audit_run_end(a, &re);
	is_int(r, 0, "run_end");
	if (r)
		printf("# %s\n", audit_errmsg(a));

	db = peek_open(path);
	is_int(q_int(db, fmt("SELECT count(*) FROM runs WHERE id = '%s'", id)),
	       1, "runs: one row");
#define RUNCOL(col, want)                                                      \
	is_str(q_text(db,                                                      \
		      fmt("SELECT " col " FROM runs WHERE id = '%s'", id)),    \
	       want, "runs." col)
	RUNCOL("started_ns", "1000000000000");
	RUNCOL("ended_ns", "1000000900000");
	RUNCOL("duration_ms", "900");
	RUNCOL("argv", "[\"ward\",\"run\",\"x.py\"]");
	RUNCOL("language", "python");
	RUNCOL("interpreter", "/usr/bin/python3");
	RUNCOL("code_name", "x.py");
	RUNCOL("code_sha256", "c0de");
	RUNCOL("policy_name", "default");
	RUNCOL("policy_json", "{\"version\":1}");
	RUNCOL("policy_sha256", "9011c7");
	RUNCOL("workdir", "/tmp/w");
	RUNCOL("limits", "{\"wall_s\":60}");
	RUNCOL("uid", "65534");
	RUNCOL("exit_code", "-1");
	RUNCOL("signal", "9");
	RUNCOL("status", "killed");
	RUNCOL("cause", "policy kill: ptrace");
	RUNCOL("stdout_bytes", "8");
	RUNCOL("stderr_bytes", "3");
	RUNCOL("stdout_truncated", "1");
	RUNCOL("stderr_truncated", "0");
	RUNCOL("events", "3");
	RUNCOL("denials", "2");
	RUNCOL("processes", "2");
	RUNCOL("host", "testhost");
	RUNCOL("kernel", "6.18 #1");
	RUNCOL("ward_version", "0.1.0");
	RUNCOL("typeof(code)", "blob");
#undef RUNCOL
	ok(q_blob_eq(db, fmt("SELECT code FROM runs WHERE id = '%s'", id), code,
		     sizeof(code) - 1),
	   "runs.code: all bytes, NUL included");

#define PCOL(serial, col, want)                                                \
	is_str(q_text(db, fmt("SELECT " col " FROM processes WHERE run_id = "  \
			      "'%s' AND serial = " #serial,                    \
			      id)),                                            \
	       want, "processes[" #serial "]." col)
	PCOL(1, "parent_serial", "(null)");
	PCOL(1, "pid", "100");
	PCOL(1, "tgid", "100");
	PCOL(1, "ppid", "99");
	PCOL(1, "kind", "process");
	PCOL(1, "start_ns", "1000000000100");
	PCOL(1, "start_ticks", "4242");
	PCOL(1, "exe", "/usr/bin/python3");
	PCOL(1, "argv", "[\"python3\",\"x.py\"]");
	PCOL(1, "exec_ns", "1000000000150");
	PCOL(1, "exit_ns", "1000000000800");
	PCOL(1, "exit_code", "-1");
	PCOL(1, "signal", "9");
	PCOL(2, "parent_serial", "1");
	PCOL(2, "pid", "102");
	PCOL(2, "kind", "thread");
	PCOL(2, "exe", "/usr/bin/python3");
	PCOL(2, "argv", "[\"python3\"]");
	PCOL(2, "exec_ns", "(null)");
	PCOL(2, "exit_code", "0");
	PCOL(2, "signal", "0");
#undef PCOL

#define ECOL(seq, col, want)                                                   \
	is_str(q_text(db, fmt("SELECT " col " FROM events WHERE run_id = "     \
			      "'%s' AND seq = " #seq,                          \
			      id)),                                            \
	       want, "events[" #seq "]." col)
	is_int(q_int(db, fmt("SELECT count(*) FROM events WHERE run_id = '%s'",
			     id)),
	       3, "events: three rows");
	ECOL(1, "ts_ns", "1000000000200");
	ECOL(1, "pid", "100");
	ECOL(1, "tid", "101");
	ECOL(1, "proc_serial", "1");
	ECOL(1, "nr", "257");
	ECOL(1, "syscall", "openat");
	ECOL(1, "args", "{\"path\":\"/etc/shadow\"}");
	ECOL(1, "raw", "../etc/shadow");
	ECOL(1, "target", "/etc/shadow");
	ECOL(1, "decision", "allow");
	ECOL(1, "rule", "default");
	ECOL(1, "reason", "not in any read rule");
	ECOL(1, "errno", "0");
	ECOL(1, "would_deny", "0");
	ECOL(1, "backtrace", "(null)");
	ECOL(2, "decision", "deny");
	ECOL(2, "errno", "13");
	ECOL(2, "backtrace", "[[\"libc\",4096]]");
	ECOL(3, "decision", "kill");
	ECOL(3, "ts_ns", "1000000000600");
#undef ECOL
	is_int(q_int(db, fmt("SELECT count(*) FROM denials WHERE run_id = '%s'",
			     id)),
	       2, "denials view: deny and kill");

	is_int(q_int(db, fmt("SELECT count(*) FROM outputs WHERE run_id = '%s'",
			     id)),
	       2, "outputs: two rows (empty chunk not stored)");
	is_str(q_text(db,
		      fmt("SELECT stream || ' ' || seq || ' ' || ts_ns FROM "
			  "outputs WHERE run_id = '%s' AND seq = 1",
			  id)),
	       "stdout 1 1000000000500", "outputs[1]: stream, seq, ts_ns");
	ok(q_blob_eq(db,
		     fmt("SELECT data FROM outputs WHERE run_id = '%s' "
			 "AND seq = 1",
			 id),
		     bin, sizeof(bin) - 1),
	   "outputs[1].data: exact bytes incl. NUL and 0xff");
	is_str(q_text(db, fmt("SELECT stream || ' ' || seq || ' ' || data FROM "
			      "outputs WHERE run_id = '%s' AND seq = 2",
			      id)),
	       "stderr 2 err", "outputs[2]: stderr chunk");
	sqlite3_close(db);
	audit_close(a);
}

/* Semantics documented in audit.h: a row is visible to other connections
 * after its batch commits; deny/kill and audit_flush commit at once. */
static void test_batching(void)
{
	const char *path = tpath("batch.db");
	struct audit *a = open_rw(path);
	char id[AUDIT_RUN_ID_LEN + 1];
	struct audit_run_info ri = run_info(5);
	struct audit_process p = { .serial = 1,
				   .pid = 7,
				   .tgid = 7,
				   .ppid = 1,
				   .kind = "process",
				   .start_ns = 6 };
	struct audit_event allow = event(10, "allow"), deny = event(11, "deny");
	sqlite3 *db;

	if (!ok(a != NULL, "open for the batching test"))
		return;
	audit_run_begin(a, &ri, id);
	db = peek_open(path);
	is_str(q_text(db, fmt("SELECT status FROM runs WHERE id = '%s'", id)),
	       "running", "run row committed by run_begin, status running");
	audit_process_start(a, &p);
	audit_event(a, &allow);
	audit_output(a, 12, AUDIT_STDOUT, "x", 1);
	is_int(q_int(db, "SELECT count(*) FROM events"), 0,
	       "allow event not visible before a commit");
	is_int(q_int(db, "SELECT count(*) FROM processes"), 0,
	       "process row not visible before a commit");
	audit_event(a, &deny);
	is_int(q_int(db, "SELECT count(*) FROM events"), 2,
	       "deny commits at once, with the allow queued before it");
	is_int(q_int(db, "SELECT count(*) FROM processes") +
		       q_int(db, "SELECT count(*) FROM outputs"),
	       2, "deny commit includes queued process and output rows");
	audit_event(a, &allow);
	is_int(q_int(db, "SELECT count(*) FROM events"), 2,
	       "a later allow waits again");
	is_int(audit_flush(a), 0, "audit_flush");
	is_int(q_int(db, "SELECT count(*) FROM events"), 3,
	       "audit_flush commits it");
	for (int i = 0; i < 255; i++)
		audit_event(a, &allow);
	is_int(q_int(db, "SELECT count(*) FROM events"), 3,
	       "255 queued allows not visible");
	audit_event(a, &allow);
	is_int(q_int(db, "SELECT count(*) FROM events"), 259,
	       "the 256th queued row commits the batch");
	audit_event(a, &allow);
	is_int(audit_flush(a), 0, "flush");
	is_int(audit_flush(a), 0, "flush with nothing queued");
	is_str(q_text(db, "SELECT min(seq) || '-' || max(seq) || '/' || "
			  "count(*) FROM events"),
	       "1-260/260",
	       "events.seq is 1..N without gaps, outputs have their own");
	audit_event(a, &allow);
	audit_close(a); /* without run_end */
	is_int(q_int(db, "SELECT count(*) FROM events"), 261,
	       "audit_close commits what was queued");
	is_str(q_text(db,
		      fmt("SELECT status || ' ' || (ended_ns > 0) FROM runs "
			  "WHERE id = '%s'",
			  id)),
	       "aborted 1", "a run closed without run_end is 'aborted'");
	is_str(q_text(db, fmt("SELECT cause FROM runs WHERE id = '%s'", id)),
	       "ward closed the record without ending the run",
	       "... and says why");
	sqlite3_close(db);
}

static void test_validation(void)
{
	struct audit *a = open_rw(tpath("val.db"));
	char id[AUDIT_RUN_ID_LEN + 1];
	struct audit_run_info ri = run_info(1);
	struct audit_event bad = event(2, "maybe");
	struct audit_process p = { .serial = 0, .kind = "process" };
	struct audit_run_end re = { .status = "fine" };
	struct audit_event ok_ev = event(3, "allow");

	if (!ok(a != NULL, "open for validation"))
		return;
	is_int(audit_event(a, &ok_ev), -EINVAL,
	       "event before run_begin: -EINVAL");
	ok(strstr(audit_errmsg(a), "no run in progress") != NULL,
	   "... message: %s", audit_errmsg(a));
	audit_run_begin(a, &ri, id);
	is_int(audit_run_begin(a, &ri, id), -EINVAL,
	       "second run_begin while running: -EINVAL");
	is_int(audit_event(a, &bad), -EINVAL, "bad decision: -EINVAL");
	ok_ev.syscall = NULL;
	is_int(audit_event(a, &ok_ev), -EINVAL, "no syscall name: -EINVAL");
	is_int(audit_process_start(a, &p), -EINVAL, "serial 0: -EINVAL");
	p.serial = 3;
	p.kind = "fiber";
	is_int(audit_process_start(a, &p), -EINVAL, "bad kind: -EINVAL");
	is_int(audit_output(a, 1, (enum audit_stream)3, "x", 1), -EINVAL,
	       "bad stream: -EINVAL");
	is_int(audit_output(a, 1, AUDIT_STDOUT, NULL, 4), -EINVAL,
	       "NULL data: -EINVAL");
	is_int(audit_run_end(a, &re), -EINVAL, "bad status: -EINVAL");
	is_int(audit_process_exec(a, 42, 5, "/bin/true", NULL), 0,
	       "exec of an unknown serial is queued");
	is_int(audit_flush(a), -ENOENT, "... and fails at the commit: -ENOENT");
	ok(strstr(audit_errmsg(a), "no process with serial 42") != NULL,
	   "... message: %s", audit_errmsg(a));
	re.status = "ok";
	is_int(audit_run_end(a, &re), 0, "run_end ok");
	is_int(audit_output(a, 1, AUDIT_STDOUT, "x", 1), -EINVAL,
	       "output after run_end: -EINVAL");
	audit_close(a);
}

/* ------------------------------ threads ------------------------------ */

#define NTHREAD_ROWS 3000

struct writer_arg {
	struct audit *a;
	int failures;
};

static void *event_writer(void *arg)
{
	struct writer_arg *w = arg;

	for (int i = 1; i <= NTHREAD_ROWS; i++) {
		struct audit_event e = event(i, i % 500 ? "allow" : "deny");

		if (audit_event(w->a, &e))
			w->failures++;
	}
	return NULL;
}

static void *output_writer(void *arg)
{
	struct writer_arg *w = arg;
	char chunk[64];

	for (int i = 1; i <= NTHREAD_ROWS; i++) {
		int n = snprintf(chunk, sizeof(chunk), "line %d\n", i);

		if (audit_output(w->a, i, AUDIT_STDERR, chunk, (size_t)n))
			w->failures++;
		if (i % 100 == 0 && audit_flush(w->a))
			w->failures++;
	}
	return NULL;
}

/* ts_ns is each thread's own counter: in seq order it must rise by one. */
static int ordered(sqlite3 *db, const char *table, const char *id)
{
	char sql[256];
	sqlite3_stmt *st = NULL;
	long long prev_seq = 0, want_ts = 1;
	int good = 1;

	snprintf(sql, sizeof(sql),
		 "SELECT seq, ts_ns FROM %s WHERE run_id = "
		 "'%s' ORDER BY seq",
		 table, id);
	sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	while (good && sqlite3_step(st) == SQLITE_ROW) {
		long long seq = sqlite3_column_int64(st, 0);
		long long ts = sqlite3_column_int64(st, 1);

		good = seq > prev_seq && ts == want_ts++;
		prev_seq = seq;
	}
	sqlite3_finalize(st);
	return good && want_ts == NTHREAD_ROWS + 1;
}

static void test_threads(void)
{
	const char *path = tpath("threads.db");
	struct audit *a = open_rw(path);
	char id[AUDIT_RUN_ID_LEN + 1];
	struct audit_run_info ri = run_info(1);
	struct writer_arg wa, wb;
	struct audit_run_end re = { .status = "ok" };
	pthread_t ta, tb;
	sqlite3 *db;

	if (!ok(a != NULL, "open for the threads test"))
		return;
	audit_run_begin(a, &ri, id);
	wa = (struct writer_arg){ .a = a };
	wb = (struct writer_arg){ .a = a };
	pthread_create(&ta, NULL, event_writer, &wa);
	pthread_create(&tb, NULL, output_writer, &wb);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	is_int(wa.failures + wb.failures, 0, "threads: no call failed");
	is_int(audit_run_end(a, &re), 0, "threads: run_end");
	db = peek_open(path);
	is_int(q_int(db, "SELECT count(*) FROM events"), NTHREAD_ROWS,
	       "threads: every event stored");
	is_int(q_int(db, "SELECT count(*) FROM outputs"), NTHREAD_ROWS,
	       "threads: every output chunk stored");
	is_int(q_int(db, "SELECT max(seq) FROM events"), NTHREAD_ROWS,
	       "threads: events.seq has no gaps");
	is_int(q_int(db, "SELECT max(seq) FROM outputs"), NTHREAD_ROWS,
	       "threads: outputs.seq has no gaps");
	ok(ordered(db, "events", id),
	   "threads: events in seq order are in the writer's order");
	ok(ordered(db, "outputs", id),
	   "threads: outputs in seq order are in the writer's order");
	sqlite3_close(db);
	audit_close(a);
}

/* Two writers on one file (two wards): a batch waiting in memory holds no
 * lock, so the second one's run_begin does not wait for the first. */
static void test_two_writers(void)
{
	const char *path = tpath("shared.db");
	struct audit *a = open_rw(path), *b = open_rw(path);
	char ida[AUDIT_RUN_ID_LEN + 1], idb[AUDIT_RUN_ID_LEN + 1];
	struct audit_run_info ri = run_info(1);
	struct audit_event allow = event(2, "allow");
	struct audit_run_end re = { .status = "ok" };
	struct timespec t0, t1;
	sqlite3 *db;

	if (!ok(a && b, "two handles on one file")) {
		audit_close(a);
		audit_close(b);
		return;
	}
	audit_run_begin(a, &ri, ida);
	for (int i = 0; i < 100; i++)
		audit_event(a, &allow);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	is_int(audit_run_begin(b, &ri, idb), 0,
	       "second writer begins a run while the first has rows queued");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ok(t1.tv_sec - t0.tv_sec < 2, "... without waiting for the lock");
	audit_event(b, &allow);
	is_int(audit_run_end(b, &re), 0, "second writer ends its run");
	is_int(audit_run_end(a, &re), 0, "first writer ends its run");
	db = peek_open(path);
	is_int(q_int(db, fmt("SELECT count(*) FROM events WHERE run_id = '%s'",
			     ida)),
	       100, "first run: all its events");
	is_int(q_int(db, fmt("SELECT count(*) FROM events WHERE run_id = '%s'",
			     idb)),
	       1, "second run: its event");
	sqlite3_exec(db, "PRAGMA foreign_keys = ON", NULL, NULL, NULL);
	sqlite3_exec(db, fmt("DELETE FROM runs WHERE id = '%s'", ida), NULL,
		     NULL, NULL);
	is_int(q_int(db, fmt("SELECT count(*) FROM events WHERE run_id = '%s'",
			     ida)),
	       0, "deleting a run deletes its events (cascade)");
	sqlite3_close(db);
	audit_close(a);
	audit_close(b);
}

/* ------------------------------ reader ------------------------------ */

static void insert_run_row(sqlite3 *db, const char *id, long long started)
{
	char sql[256];

	snprintf(sql, sizeof(sql),
		 "INSERT INTO runs(id, started_ns, code) "
		 "VALUES ('%s', %lld, zeroblob(1000))",
		 id, started);
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		printf("# insert: %s\n", sqlite3_errmsg(db));
}

static void test_find_run(void)
{
	const char *path = tpath("find.db");
	struct audit *a = open_rw(path), *ro = NULL;
	char id[AUDIT_RUN_ID_LEN + 1] = "", err[256];
	sqlite3 *db;

	if (!ok(a != NULL, "open for find_run"))
		return;
	is_int(audit_find_run(a, "last", id), -ENOENT,
	       "find_run last in an empty database: -ENOENT");
	db = peek_open(path);
	insert_run_row(db, "abc0000000000001", 300);
	insert_run_row(db, "abc0000000000002", 100);
	insert_run_row(db, "def0000000000000", 200);
	sqlite3_close(db);
	audit_close(a);
	is_int(audit_open(path, true, &ro, err, sizeof(err)), 0,
	       "readonly open of an existing database");
	if (!ro)
		return;
	is_int(audit_find_run(ro, "abc0000000000002", id), 0, "find: full id");
	is_str(id, "abc0000000000002", "find: full id result");
	is_int(audit_find_run(ro, "de", id), 0, "find: unique prefix");
	is_str(id, "def0000000000000", "find: unique prefix result");
	is_int(audit_find_run(ro, "ABC0000000000001", id), 0,
	       "find: case-insensitive");
	is_int(audit_find_run(ro, "abc", id), -EINVAL,
	       "find: ambiguous prefix -EINVAL");
	is_int(audit_find_run(ro, "abc1", id), -ENOENT,
	       "find: no match -ENOENT");
	is_int(audit_find_run(ro, "xyz", id), -ENOENT,
	       "find: non-hex query -ENOENT");
	is_int(audit_find_run(ro, "", id), -ENOENT,
	       "find: empty query -ENOENT");
	is_int(audit_find_run(ro, "abc00000000000010", id), -ENOENT,
	       "find: longer than an id -ENOENT");
	is_int(audit_find_run(ro, "last", id), 0, "find: last");
	is_str(id, "abc0000000000001", "find: last is the latest started");
	{
		char rid[AUDIT_RUN_ID_LEN + 1];
		struct audit_run_info ri = run_info(1);

		is_int(audit_run_begin(ro, &ri, rid), -EROFS,
		       "readonly handle refuses to write: -EROFS");
	}
	audit_close(ro);
}

struct collect {
	char text[4096];
	int n;
};

static int collect_run(const struct audit_run *r, void *arg)
{
	struct collect *c = arg;
	size_t len = strlen(c->text);

	snprintf(c->text + len, sizeof(c->text) - len, "%s:%zu/%zu:%s ", r->id,
		 r->code_len, r->code_total, r->status ? r->status : "?");
	return ++c->n == 100 ? 7 : 0;
}

static int collect_item(const struct audit_item *it, void *arg)
{
	struct collect *c = arg;
	size_t len = strlen(c->text);
	static const char *const k[] = { "start", "exec", "exit", "event",
					 "output" };
	long long id = it->proc	   ? it->proc->p.serial
		       : it->event ? it->event->seq
				   : it->output->seq;

	snprintf(c->text + len, sizeof(c->text) - len, "%lld:%s%lld ",
		 it->ts_ns, k[it->kind], id);
	c->n++;
	return 0;
}

static int count_proc(const struct audit_proc_row *p, void *arg)
{
	struct collect *c = arg;
	size_t len = strlen(c->text);

	snprintf(c->text + len, sizeof(c->text) - len, "%d/%d/%d%s ",
		 p->p.serial, p->p.parent_serial, p->exited ? p->exit_code : 99,
		 p->execed ? "x" : "");
	c->n++;
	return 0;
}

static int count_event(const struct audit_event_row *e, void *arg)
{
	struct collect *c = arg;
	size_t len = strlen(c->text);

	snprintf(c->text + len, sizeof(c->text) - len, "%lld:%s:%d ", e->seq,
		 e->e.decision, e->e.err);
	c->n++;
	return 0;
}

static int count_output(const struct audit_output_row *o, void *arg)
{
	struct collect *c = arg;

	c->n += (int)o->len + (o->stream == AUDIT_STDERR ? 1000 : 0);
	return 0;
}

static void test_reader(void)
{
	const char *path = tpath("reader.db");
	struct audit *a = open_rw(path);
	char id[AUDIT_RUN_ID_LEN + 1], id2[AUDIT_RUN_ID_LEN + 1];
	struct audit_run_info ri = run_info(100);
	struct audit_process p1 = { .serial = 1,
				    .pid = 5,
				    .tgid = 5,
				    .ppid = 1,
				    .kind = "process",
				    .start_ns = 110 };
	struct audit_process p2 = { .serial = 2,
				    .parent_serial = 1,
				    .pid = 6,
				    .tgid = 6,
				    .ppid = 5,
				    .kind = "process",
				    .start_ns = 150 };
	struct audit_event e = event(150, "allow");
	struct audit_run_end re = { .end_ns = 300,
				    .status = "error",
				    .exit_code = 1 };
	struct collect c = { "", 0 };
	char big[600];

	if (!ok(a != NULL, "open for the reader test"))
		return;
	audit_run_begin(a, &ri, id);
	audit_process_start(a, &p1);
	audit_process_exec(a, 1, 120, "/bin/sh", "[\"sh\"]");
	audit_output(a, 150, AUDIT_STDOUT, "hi\n", 3); /* output 1 */
	audit_event(a, &e);			       /* event 1 */
	audit_process_start(a, &p2);		       /* ts 150 too */
	audit_process_exit(a, 2, 150, 0, 0);
	audit_output(a, 140, AUDIT_STDERR, "e", 1); /* output 2, earlier */
	audit_process_exit(a, 1, 200, 1, 0);
	audit_run_end(a, &re);

	is_int(audit_timeline_each(a, id, collect_item, &c), 0, "timeline");
	is_str(c.text,
	       "110:start1 120:exec1 140:output2 150:start2 150:event1 "
	       "150:output1 150:exit2 200:exit1 ",
	       "timeline: by time; at equal time starts, events, outputs, exits");

	memset(big, 'x', sizeof(big));
	ri = run_info(200);
	ri.code = big;
	ri.code_len = sizeof(big);
	audit_run_begin(a, &ri, id2);
	c = (struct collect){ "", 0 };
	is_int(audit_runs_each(a, 0, collect_run, &c), 0, "runs_each");
	{
		char want[256];

		snprintf(want, sizeof(want),
			 "%s:256/600:running %s:16/16:error ", id2, id);
		is_str(c.text, want,
		       "runs_each: newest first, code cut to 256");
	}
	c = (struct collect){ "", 0 };
	audit_runs_each(a, 1, collect_run, &c);
	is_int(c.n, 1, "runs_each: limit 1");
	c = (struct collect){ "", 99 };
	is_int(audit_runs_each(a, 0, collect_run, &c), 7,
	       "runs_each: a nonzero callback result stops and is returned");
	c = (struct collect){ "", 0 };
	is_int(audit_run_read(a, id2, collect_run, &c), 0, "run_read");
	ok(strstr(c.text, ":600/600:") != NULL, "run_read: whole code");
	is_int(audit_run_read(a, "0000000000000000", collect_run, &c), -ENOENT,
	       "run_read: unknown id -ENOENT");

	c = (struct collect){ "", 0 };
	audit_processes_each(a, id, count_proc, &c);
	is_str(c.text, "1/0/1x 2/1/0 ", "processes_each: serial order, fields");
	c = (struct collect){ "", 0 };
	audit_events_each(a, id, count_event, &c);
	is_str(c.text, "1:allow:0 ", "events_each");
	c = (struct collect){ "", 0 };
	audit_outputs_each(a, id, count_output, &c);
	is_int(c.n, 1004, "outputs_each: both streams, lengths");
	audit_close(a);
}

static int collect_count(const struct audit_syscall_count *k, void *arg)
{
	struct collect *c = arg;
	size_t len = strlen(c->text);

	snprintf(c->text + len, sizeof(c->text) - len,
		 "%s:%lld/%lld/%lld/%lld ", k->syscall, k->allowed, k->denied,
		 k->killed, k->would_deny);
	c->n++;
	return 0;
}

/* Per-syscall counts and the denials of one run (ward show --summary). */
static void test_counts_and_denials(void)
{
	struct audit *a = open_rw(tpath("counts.db"));
	char id[AUDIT_RUN_ID_LEN + 1], other[AUDIT_RUN_ID_LEN + 1];
	struct audit_run_info ri = run_info(1);
	struct audit_event e = event(2, "allow");
	struct audit_run_end re = { .status = "ok" };
	struct collect c = { "", 0 };

	if (!ok(a != NULL, "open for counts"))
		return;
	audit_run_begin(a, &ri, id);
	for (int i = 0; i < 3; i++)
		audit_event(a, &e); /* seq 1-3: openat allow */
	e.would_deny = true;
	audit_event(a, &e); /* 4: openat would deny */
	e = event(3, "deny");
	audit_event(a, &e); /* 5: openat deny */
	e = event(4, "kill");
	e.syscall = "ptrace";
	audit_event(a, &e); /* 6: ptrace kill */
	e = event(5, "allow");
	e.syscall = "connect";
	audit_event(a, &e); /* 7 */
	audit_event(a, &e); /* 8 */
	audit_run_end(a, &re);
	audit_run_begin(a, &ri, other); /* must not be counted */
	e = event(6, "deny");
	audit_event(a, &e);
	audit_run_end(a, &re);

	is_int(audit_syscall_counts_each(a, id, collect_count, &c), 0,
	       "syscall_counts_each");
	is_str(c.text, "openat:4/1/0/1 connect:2/0/0/0 ptrace:0/0/1/0 ",
	       "... allowed/denied/killed/would_deny per syscall, most "
	       "frequent first");
	c = (struct collect){ "", 0 };
	is_int(audit_denials_each(a, id, count_event, &c), 0, "denials_each");
	is_str(c.text, "4:allow:0 5:deny:13 6:kill:13 ",
	       "... deny, kill and would-deny events by seq");
	audit_close(a);
}

/* ------------------------------ stale runs ------------------------------ */

#define REAP_CAUSE                                                             \
	"ward stopped before the run ended (killed or crashed); the record "   \
	"holds what was written until then"

/* A pid no process has now. */
static pid_t dead_pid(void)
{
	for (pid_t pid = 3000; pid < 4194304; pid++)
		if (kill(pid, 0) != 0 && errno == ESRCH)
			return pid;
	return -1;
}

static long long self_ticks(void)
{
	char buf[1024] = "";
	long long t = 0;
	FILE *f = fopen("/proc/self/stat", "r");
	const char *p;

	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	p = strrchr(buf, ')');
	if (p && sscanf(p + 2,
			"%*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
			"%*s %*s %*s %*s %*s %*s %*s %*s %lld",
			&t) != 1)
		t = 0;
	return t;
}

static void boot_id(char *buf, size_t n)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

	buf[0] = '\0';
	if (f) {
		if (fgets(buf, (int)n, f))
			buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
}

/* A running run written straight into the database. */
static void insert_stale(sqlite3 *db, const char *id, const char *host,
			 const char *boot, long long pid, long long ticks)
{
	const char *sql = fmt("INSERT INTO runs(id, started_ns, host, boot_id,"
			      " ward_pid, ward_start_ticks) VALUES ('%s', 5,"
			      " %s%s%s, %s%s%s, %lld, %lld)",
			      id, host ? "'" : "", host ? host : "NULL",
			      host ? "'" : "", boot ? "'" : "",
			      boot ? boot : "NULL", boot ? "'" : "", pid,
			      ticks);

	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		printf("# %s: %s\n", sql, sqlite3_errmsg(db));
}

static const char *status_of(sqlite3 *db, const char *id)
{
	return q_text(db, fmt("SELECT status FROM runs WHERE id = '%s'", id));
}

static void test_reap(void)
{
	const char *path = tpath("reap.db");
	struct audit *w = open_rw(path), *live = open_rw(path), *ro = NULL;
	char dead_id[AUDIT_RUN_ID_LEN + 1], live_id[AUDIT_RUN_ID_LEN + 1];
	char next_id[AUDIT_RUN_ID_LEN + 1], boot[64], err[256];
	struct audit_run_info ri = run_info(1000000000000LL);
	struct audit_process p = { .serial = 1,
				   .pid = 7,
				   .tgid = 7,
				   .ppid = 1,
				   .kind = "process",
				   .start_ns = 1000001000000LL };
	struct audit_event allow = event(1000002000000LL, "allow");
	struct audit_event deny = event(1000004000000LL, "deny");
	struct audit_run_end re = { .status = "ok" };
	struct utsname un;
	long long ticks = self_ticks();
	pid_t gone = dead_pid();
	int n = -1;
	sqlite3 *db;

	boot_id(boot, sizeof(boot));
	uname(&un);
	if (!ok(w && live, "open two handles for the reap test") ||
	    !ok(gone > 0 && ticks > 0 && boot[0],
		"a dead pid (%d), our start ticks, the boot id", (int)gone)) {
		audit_close(w);
		audit_close(live);
		return;
	}
	/* the dead ward's run: begun, some rows committed, never ended */
	ri.host = NULL;
	is_int(audit_run_begin(w, &ri, dead_id), 0, "run_begin");
	audit_process_start(w, &p);
	audit_event(w, &allow);
	audit_output(w, 1000005000000LL, AUDIT_STDOUT, "x", 1);
	audit_event(w, &deny); /* ts 4 ms: earlier than the output */
	audit_process_exit(w, 1, 1000003000000LL, 0, 0);
	audit_flush(w);
	db = peek_open(path);
	is_str(q_text(db, fmt("SELECT host || ' ' || ward_pid || ' ' || "
			      "ward_start_ticks || ' ' || boot_id FROM runs "
			      "WHERE id = '%s'",
			      dead_id)),
	       fmt("%s %d %lld %s", un.nodename, (int)getpid(), ticks, boot),
	       "run_begin records host (from uname when not given), pid, "
	       "start ticks and boot id");
	sqlite3_exec(db,
		     fmt("UPDATE runs SET ward_pid = %d WHERE id = '%s'",
			 (int)gone, dead_id),
		     NULL, NULL, NULL);

	/* the other cases, written directly */
	insert_stale(db, "a000000000000001", un.nodename, boot, getpid(),
		     ticks + 1); /* pid reused by another process */
	insert_stale(db, "a000000000000002", un.nodename, "another-boot",
		     getpid(), ticks); /* an earlier boot */
	insert_stale(db, "a000000000000003", "elsewhere", boot, gone, ticks);
	insert_stale(db, "a000000000000004", un.nodename, NULL, gone, ticks);
	insert_stale(db, "a000000000000005", un.nodename, boot, getpid(),
		     ticks); /* alive: this very process */
	insert_stale(db, "a000000000000006", un.nodename, boot, 1, 0);

	is_int(audit_reap_stale(live, &n), 0, "reap_stale");
	is_int(n, 3, "... closed three runs");
	is_str(status_of(db, dead_id), "aborted", "dead pid: aborted");
	is_str(q_text(db,
		      fmt("SELECT cause FROM runs WHERE id = '%s'", dead_id)),
	       REAP_CAUSE, "... with the cause");
	is_str(q_text(db, fmt("SELECT ended_ns || ' ' || duration_ms || ' ' || "
			      "events || ' ' || denials || ' ' || processes || "
			      "' ' || (exit_code IS NULL) FROM runs WHERE id = "
			      "'%s'",
			      dead_id)),
	       "1000005000000 5 2 1 1 1",
	       "... ended at its latest row, duration, counts, no exit status");
	is_str(status_of(db, "a000000000000001"), "aborted",
	       "live pid with another start time (reused): aborted");
	is_str(status_of(db, "a000000000000002"), "aborted",
	       "run of another boot on this host: aborted");
	is_str(q_text(db, "SELECT ended_ns || ' ' || duration_ms FROM runs "
			  "WHERE id = 'a000000000000002'"),
	       "5 0", "... a run without rows ends at its start");
	is_str(status_of(db, "a000000000000003"), "running",
	       "run of another host: left alone");
	is_str(status_of(db, "a000000000000004"), "running",
	       "run without a boot id: left alone");
	is_str(status_of(db, "a000000000000005"), "running",
	       "run of a live ward (own pid and start time): left alone");
	is_str(status_of(db, "a000000000000006"), "running",
	       "pid 1 (alive, start time unknown): left alone");
	is_int(audit_reap_stale(live, &n), 0, "reap_stale again");
	is_int(n, 0, "... closes nothing more");

	/* audit_run_begin reaps, and never its own live run */
	ri = run_info(2000000000000LL);
	is_int(audit_run_begin(live, &ri, live_id), 0, "run_begin (live run)");
	insert_stale(db, "a000000000000007", un.nodename, boot, gone, ticks);
	is_int(audit_reap_stale(live, &n), 0, "reap with a live run open");
	is_str(status_of(db, live_id), "running", "... the live run stays");
	is_int(n, 1, "... the stale one is closed");
	insert_stale(db, "a000000000000008", un.nodename, boot, gone, ticks);
	is_int(audit_run_end(live, &re), 0, "run_end");
	is_int(audit_run_begin(live, &ri, next_id), 0, "next run_begin");
	is_str(status_of(db, "a000000000000008"), "aborted",
	       "run_begin closes a dead ward's run");
	is_int(audit_run_end(live, &re), 0, "run_end");
	sqlite3_exec(db,
		     "UPDATE runs SET status = 'ok' WHERE id = "
		     "'a000000000000001'",
		     NULL, NULL, NULL);
	is_int(audit_open(path, true, &ro, err, sizeof(err)), 0, "open ro");
	is_int(audit_reap_stale(ro, &n), -EROFS, "readonly handle: -EROFS");
	audit_close(ro);
	sqlite3_close(db);
	audit_close(live);
	audit_close(w);
}

/* A v1 file from before the writer's identity was recorded. */
static void test_prerelease_upgrade(void)
{
	const char *path = tpath("prerelease.db");
	struct audit *a = open_rw(path), *ro = NULL;
	char id[AUDIT_RUN_ID_LEN + 1], err[256];
	struct collect c = { "", 0 };
	sqlite3 *db;

	audit_close(a);
	db = peek_open(path);
	sqlite3_exec(db,
		     "DROP INDEX runs_running;"
		     "ALTER TABLE runs DROP COLUMN ward_pid;"
		     "ALTER TABLE runs DROP COLUMN ward_start_ticks;"
		     "ALTER TABLE runs DROP COLUMN boot_id;",
		     NULL, NULL, NULL);
	insert_run_row(db, "b000000000000001", 1);
	is_int(q_int(db, "SELECT count(*) FROM pragma_table_info('runs') "
			 "WHERE name = 'boot_id'"),
	       0, "prerelease: a file without the ward columns");
	is_int(audit_open(path, true, &ro, err, sizeof(err)), 0,
	       "prerelease: opens readonly");
	is_int(audit_run_read(ro, "b000000000000001", collect_run, &c), 0,
	       "prerelease: readonly read works");
	is_int(audit_find_run(ro, "last", id), 0, "... and find_run");
	is_int(q_int(db, "SELECT count(*) FROM pragma_table_info('runs') "
			 "WHERE name = 'boot_id'"),
	       0, "prerelease: readonly leaves the file alone");
	audit_close(ro);
	a = open_rw(path);
	ok(a != NULL, "prerelease: opens read-write");
	is_int(q_int(db, "SELECT count(*) FROM pragma_table_info('runs') "
			 "WHERE name IN ('ward_pid', 'ward_start_ticks', "
			 "'boot_id')"),
	       3, "... which adds the columns");
	is_int(q_int(db, "SELECT count(*) FROM sqlite_schema WHERE name = "
			 "'runs_running'"),
	       1, "... and the index");
	audit_close(a);
	sqlite3_close(db);
}

static int get_layers(const struct audit_run *r, void *arg)
{
	snprintf(arg, 256, "%s", r->layers_json ? r->layers_json : "NULL");
	return 0;
}

/* A version 1 file (no runs.layers): read as is, migrated when written. */
/* Turns a fresh (version 7) file back into what version 6 had. */
#define V6_UNDO "ALTER TABLE outputs DROP COLUMN cmd;"
/* ... and into what version 4 had (the table phases stays: unread). */
#define V5_UNDO V6_UNDO "ALTER TABLE events DROP COLUMN result;"
/* ... and into what version 3 had. */
#define V4_UNDO                                                                \
	V5_UNDO "ALTER TABLE runs DROP COLUMN env;"                            \
		"ALTER TABLE runs DROP COLUMN chain;"                          \
		"ALTER TABLE events DROP COLUMN pyframes;"                     \
		"ALTER TABLE events DROP COLUMN hash;"                         \
		"ALTER TABLE outputs DROP COLUMN hash;"                        \
		"DROP TABLE inputs;"

static void test_v1_migration(void)
{
	const char *path = tpath("v1.db");
	struct audit *a = open_rw(path), *ro = NULL;
	struct audit_run_info ri = run_info(1000);
	struct audit_run_end re = { .status = "ok",
				    .layers_json = "[{\"name\":\"x\"}]" };
	char id[AUDIT_RUN_ID_LEN + 1], err[256], got[256] = "";
	sqlite3 *db;

	audit_close(a);
	db = peek_open(path);
	sqlite3_exec(db,
		     "ALTER TABLE runs DROP COLUMN layers;" V4_UNDO
		     "PRAGMA user_version = 1;",
		     NULL, NULL, NULL);
	insert_run_row(db, "c000000000000001", 1);
	is_int(audit_open(path, true, &ro, err, sizeof(err)), 0,
	       "v1: opens readonly");
	is_int(audit_run_read(ro, "c000000000000001", get_layers, got), 0,
	       "v1: readonly read works");
	is_str(got, "NULL", "... layers read as NULL");
	audit_close(ro);
	is_int(q_int(db, "PRAGMA user_version"), 1,
	       "v1: readonly leaves the version alone");
	a = open_rw(path);
	ok(a != NULL, "v1: opens read-write");
	is_int(q_int(db, "PRAGMA user_version"), 7, "... which migrates to 7");
	is_int(q_int(db, "SELECT count(*) FROM pragma_table_info('runs') "
			 "WHERE name = 'layers'"),
	       1, "... adding runs.layers");
	is_str(q_text(db, "SELECT value FROM ward_meta WHERE key = "
			  "'schema_version'"),
	       "7", "... and ward_meta says 7");
	is_int(q_int(db, "SELECT count(*) FROM sqlite_schema WHERE name IN "
			 "('cells', 'artifacts')"),
	       2, "... and has the session tables");
	is_int(audit_run_begin(a, &ri, id), 0, "v1 migrated: run_begin");
	is_int(audit_run_end(a, &re), 0, "... run_end with layers");
	is_int(audit_run_read(a, id, get_layers, got), 0, "... read back");
	is_str(got, "[{\"name\":\"x\"}]", "... layers as written");
	is_int(audit_run_read(a, "c000000000000001", get_layers, got), 0,
	       "... the old run");
	is_str(got, "NULL", "... has no layers");
	is_int(q_int(db, "SELECT count(*) FROM pragma_table_info('events') "
			 "WHERE name IN ('hash', 'pyframes')"),
	       2, "... events has hash and pyframes (v4)");
	is_int(q_int(db, "SELECT count(*) FROM sqlite_schema WHERE name = "
			 "'inputs'"),
	       1, "... and the inputs table (v4)");
	audit_close(a);
	sqlite3_close(db);
}

/* A version 3 file (no v4 columns) gains them on a read-write open. */
static void test_migrate_v3(void)
{
	const char *path = tpath("v3.db");
	struct audit *a = open_rw(path);
	sqlite3 *db;

	audit_close(a);
	db = peek_open(path);
	sqlite3_exec(db, V4_UNDO "PRAGMA user_version = 3;", NULL, NULL, NULL);
	is_int(q_int(db, "SELECT count(*) FROM pragma_table_info('runs') "
			 "WHERE name IN ('env', 'chain')"),
	       0, "v3: no runs.env/chain");
	a = open_rw(path);
	ok(a != NULL, "v3: opens read-write");
	is_int(q_int(db, "PRAGMA user_version"), 7, "... which migrates to 7");
	is_int(q_int(db, "SELECT count(*) FROM pragma_table_info('runs') "
			 "WHERE name IN ('env', 'chain')"),
	       2, "... adding runs.env and runs.chain");
	is_int(q_int(db, "SELECT count(*) FROM pragma_table_info('outputs') "
			 "WHERE name = 'hash'"),
	       1, "... and outputs.hash");
	audit_close(a);
	sqlite3_close(db);
}

static int count_results(const struct audit_event_row *r, void *arg)
{
	int *n = arg;

	n[0]++;
	n[1] += r->e.has_result;
	return 0;
}

static int count_problems(const struct audit_problem *p, void *arg)
{
	(void)p;
	(*(int *)arg)++;
	return 0;
}

/* A version 4 file (no events.result): its chained rows read and verify
 * as they were, readonly and after the migration to 5. */
static void test_migrate_v4(void)
{
	const char *path = tpath("v4.db");
	struct audit *a = open_rw(path), *ro = NULL;
	struct audit_run_info ri = run_info(1000);
	struct audit_run_end re = { .status = "ok", .events = 2 };
	struct audit_event e = { .ts_ns = 5,
				 .pid = 1,
				 .tid = 1,
				 .nr = 257,
				 .syscall = "openat",
				 .decision = "allow" };
	char id[AUDIT_RUN_ID_LEN + 1], err[256];
	struct audit_verify v;
	int n[2] = { 0, 0 }, problems = 0;
	sqlite3 *db;

	audit_run_begin(a, &ri, id);
	audit_event(a, &e);
	audit_event(a, &e);
	is_int(audit_run_end(a, &re), 0, "v4: a run of two events");
	audit_close(a);
	db = peek_open(path);
	sqlite3_exec(db, V5_UNDO "PRAGMA user_version = 4;", NULL, NULL, NULL);
	is_int(audit_open(path, true, &ro, err, sizeof(err)), 0,
	       "v4: opens readonly");
	is_int(audit_events_each(ro, id, count_results, n), 0,
	       "... its events read");
	ok(n[0] == 2 && n[1] == 0, "... two, without results");
	audit_verify_key(ro);
	is_int(audit_verify_run(ro, id, &v, count_problems, &problems), 0,
	       "... verified");
	ok(problems == 0 && v.seal_checked, "... intact");
	audit_close(ro);
	a = open_rw(path);
	is_int(q_int(db, "PRAGMA user_version"), 7, "v4: migrates to 7");
	audit_close(a);
	audit_open(path, true, &ro, err, sizeof(err));
	audit_verify_key(ro);
	problems = 0;
	is_int(audit_verify_run(ro, id, &v, count_problems, &problems), 0,
	       "... verified after");
	ok(problems == 0 && v.seal_checked, "... still intact");
	audit_close(ro);
	sqlite3_close(db);
}

/* ------------------------------- cells -------------------------------- */

static void test_cells(void)
{
	const char *path = tpath("cells.db");
	struct audit *a = open_rw(path), *b = open_rw(path), *ro = NULL;
	struct audit_run_info ri = run_info(1000);
	char id[AUDIT_RUN_ID_LEN + 1], err[256];
	sqlite3 *db;

	is_int(audit_run_begin(a, &ri, id), 0, "cells: a run");
	/* another handle (the server) writes the cells of a's run */
	struct audit_cell c = { .run_id = id,
				.n = 1,
				.code = "x = 1\0y",
				.code_len = 7,
				.started_ns = 10,
				.ended_ns = 20,
				.status = "ok",
				.result_json = "{\"status\":\"ok\"}" };
	is_int(audit_cell(b, &c), 0, "cell 1 recorded by another handle");
	c.n = 2;
	c.status = "timeout";
	is_int(audit_cell(b, &c), 0, "cell 2");
	is_int(audit_cell(b, &c), -EINVAL, "the same cell twice: -EINVAL");
	c.n = 3;
	c.run_id = "0000000000000000";
	is_int(audit_cell(b, &c), -EINVAL, "a cell of no run: -EINVAL");
	c.result_json = NULL;
	is_int(audit_cell(b, &c), -EINVAL, "a cell without a result: -EINVAL");
	struct audit_artifact f = { .run_id = id,
				    .cell = 2,
				    .path = "out/r.txt",
				    .size = 8,
				    .sha256 = "ab",
				    .ts_ns = 30 };
	is_int(audit_artifact(b, &f), 0, "an artifact");
	is_int(audit_open(path, true, &ro, err, sizeof(err)), 0, "readonly");
	is_int(audit_cell(ro, &c), -EINVAL, "readonly, bad cell: -EINVAL");
	c.result_json = "{}";
	is_int(audit_cell(ro, &c), -EROFS, "readonly: -EROFS");
	audit_close(ro);
	db = peek_open(path);
	is_int(q_int(db, "SELECT count(*) FROM cells"), 2, "two cells");
	is_int(q_int(db, "SELECT length(CAST(code AS BLOB)) FROM cells "
			 "WHERE n = 1"),
	       7, "... code whole, NUL included");
	is_str(q_text(db, "SELECT group_concat(status) FROM cells"),
	       "ok,timeout", "... statuses");
	is_str(q_text(db, "SELECT path || ':' || cell || ':' || size FROM "
			  "artifacts"),
	       "out/r.txt:2:8", "... the artifact");
	sqlite3_close(db);
	audit_close(b);
	audit_close(a);
}

/* ------------------------------ refusals ------------------------------ */

static void test_foreign(void)
{
	const char *path = tpath("foreign.db");
	struct audit *a = NULL;
	char err[512] = "";
	sqlite3 *db = NULL;
	int r;

	sqlite3_open(path, &db);
	sqlite3_exec(db,
		     "CREATE TABLE notes(x); INSERT INTO notes VALUES (1);"
		     "PRAGMA user_version = 7",
		     NULL, NULL, NULL);
	sqlite3_close(db);
	r = audit_open(path, false, &a, err, sizeof(err));
	is_int(r, -EPROTO, "foreign SQLite database: -EPROTO");
	ok(a == NULL, "... and no handle");
	ok(strstr(err, path) && strstr(err, "not a ward audit database"),
	   "... message names the path: %s", err);
	db = peek_open(path);
	is_str(q_text(db, "PRAGMA journal_mode"), "delete",
	       "foreign database left alone: journal mode unchanged");
	is_int(q_int(db, "PRAGMA user_version"), 7,
	       "foreign database left alone: user_version unchanged");
	is_int(q_int(db, "SELECT count(*) FROM sqlite_schema"), 1,
	       "foreign database left alone: no tables added");
	sqlite3_close(db);
	is_int(audit_open(path, true, &a, err, sizeof(err)), -EPROTO,
	       "foreign database, readonly: -EPROTO");

	/* a ward database from a newer ward */
	path = tpath("newer.db");
	a = open_rw(path);
	audit_close(a);
	db = peek_open(path);
	sqlite3_exec(db, "PRAGMA user_version = 8", NULL, NULL, NULL);
	sqlite3_close(db);
	is_int(audit_open(path, false, &a, err, sizeof(err)), -EPROTO,
	       "schema version 8: -EPROTO");
	ok(strstr(err, "newer") != NULL, "... message: %s", err);
}

static void test_not_db(void)
{
	const char *path = tpath("text.db");
	struct audit *a = NULL;
	char err[512] = "";
	FILE *f = fopen(path, "w");

	for (int i = 0; f && i < 100; i++)
		fprintf(f, "this is not a database, line %d\n", i);
	if (f)
		fclose(f);
	is_int(audit_open(path, false, &a, err, sizeof(err)), -EIO,
	       "a text file: -EIO");
	ok(strstr(err, path) && strstr(err, "not an SQLite database"),
	   "... message: %s", err);
	is_int(audit_open(path, true, &a, err, sizeof(err)), -EIO,
	       "a text file, readonly: -EIO");
	is_int(audit_open(tmpdir, false, &a, err, sizeof(err)), -EISDIR,
	       "a directory: -EISDIR");
	ok(strstr(err, tmpdir) != NULL, "... message: %s", err);
}

static void test_readonly_missing(void)
{
	const char *path = tpath("missing/none.db");
	struct audit *a = NULL;
	char err[512] = "";
	struct stat st;

	is_int(audit_open(path, true, &a, err, sizeof(err)), -ENOENT,
	       "readonly open of a missing file: -ENOENT");
	ok(strstr(err, path) != NULL, "... message names the path: %s", err);
	ok(stat(tpath("missing"), &st) != 0, "... and creates nothing");
	is_int(audit_open(NULL, false, &a, err, sizeof(err)), -EINVAL,
	       "NULL path: -EINVAL");
}

/* audit_open on path as an unprivileged user; returns its result and
 * message through a pipe (root would pass any permission check). */
static int open_as_nobody(const char *path, char *err, size_t errlen)
{
	int fds[2], status, r = -999;
	pid_t pid;

	if (pipe(fds))
		return -999;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct audit *a = NULL;
		char msg[512] = "";

		close(fds[0]);
		if (geteuid() == 0 &&
		    (setgroups(0, NULL) || setgid(65534) || setuid(65534)))
			_exit(2);
		r = audit_open(path, false, &a, msg, sizeof(msg));
		audit_close(a);
		if (write(fds[1], &r, sizeof(r)) != sizeof(r) ||
		    write(fds[1], msg, sizeof(msg)) != sizeof(msg))
			_exit(3);
		_exit(0);
	}
	close(fds[1]);
	if (pid > 0 && read(fds[0], &r, sizeof(r)) == sizeof(r)) {
		char msg[512];

		if (read(fds[0], msg, sizeof(msg)) == sizeof(msg))
			snprintf(err, errlen, "%s", msg);
	}
	close(fds[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	return r;
}

static void test_eacces(void)
{
	char err[512] = "";
	const char *ro = tpath("ro");

	mkdir(ro, 0555);
	chmod(ro, 0555);
	chmod(tmpdir, 0711); /* let the unprivileged child reach ro/ */
	is_int(open_as_nobody(tpath("ro/sub/audit.db"), err, sizeof(err)),
	       -EACCES, "unwritable directory (mkdir): -EACCES");
	ok(strstr(err, tpath("ro/sub")) != NULL,
	   "... message names the path: %s", err);
	is_int(open_as_nobody(tpath("ro/audit.db"), err, sizeof(err)), -EACCES,
	       "unwritable directory (create): -EACCES");
	ok(strstr(err, tpath("ro/audit.db")) != NULL,
	   "... message names the path: %s", err);
	chmod(tmpdir, 0700);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_default_path();
	test_create();
	test_write_read_back();
	test_batching();
	test_validation();
	test_threads();
	test_two_writers();
	test_find_run();
	test_reader();
	test_counts_and_denials();
	test_reap();
	test_prerelease_upgrade();
	test_v1_migration();
	test_migrate_v3();
	test_migrate_v4();
	test_cells();
	test_foreign();
	test_not_db();
	test_readonly_missing();
	test_eacces();
	test_seal_log_made_durable();
	nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	ok(access(tmpdir, F_OK) != 0, "temporary directory removed");
	return done_testing();
}
