/*
 * test-rundiff.c - tools/review/rundiff: the normalizer (masks of
 * workdirs, fds, pids, addresses, temporary names), the digits heuristic,
 * and the comparison of two runs loaded from a real database written
 * here with the audit writer (processes by order of appearance, the first
 * divergence, exits, outputs, hints).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/review/rundiff.h"
#include "tests/unit/tap.h"

static void mask_is(const char *in, const char *wd, const char *want)
{
	char *got = rd_mask(in, wd);

	is_str(got, want, in);
	free(got);
}

static void test_mask(void)
{
	const char *wd = "/tmp/ward-AbC123";

	mask_is("/tmp/ward-AbC123/data.txt", wd, "$WORKDIR/data.txt");
	mask_is("/tmp/ward-AbC123", wd, "$WORKDIR");
	mask_is("/tmp/ward-AbC1234/x", wd, "/tmp/ward-AbC1234/x");
	mask_is("[\"/tmp/ward-Zz9yX8/a\"]", wd, "[\"$WORKDIR/a\"]");
	mask_is("/var/tmp/run/x", "/var/tmp/run", "$WORKDIR/x");
	mask_is("/var/tmp/runner/x", "/var/tmp/run", "/var/tmp/runner/x");
	mask_is("/proc/4242/status", NULL, "/proc/$PID/status");
	mask_is("/proc/4242/task/4243/comm", NULL, "/proc/$PID/task/$TID/comm");
	mask_is("/proc/self/maps", NULL, "/proc/self/maps");
	mask_is("ip 0x7ffd12345678 flags 0x80000 mode 0x1ff", NULL,
		"ip $ADDR flags 0x80000 mode 0x1ff");
	mask_is("ab0x1234567", NULL, "ab0x1234567");
	mask_is("/tmp/ward-AbC123/tmp/tmpab_c9x1z/f", wd,
		"$WORKDIR/tmp/$TMPNAME/f");
	mask_is("/tmp/ward-AbC123/tmp/tmpfile.txt", wd,
		"$WORKDIR/tmp/tmpfile.txt");
	mask_is("", wd, "");
}

static void line_is(const char *args, const char *target, const char *want,
		    const char *what)
{
	struct audit_event e = {
		.syscall = "connect",
		.args_json = args,
		.target = target,
		.decision = "deny",
		.rule = "net",
		.err = ECONNREFUSED,
		.pid = 77,
		.tid = 78,
		.ts_ns = 123,
	};
	char *got = rd_event_line(&e, "/tmp/ward-AbC123");

	is_str(got, want, what);
	free(got);
}

static void test_event_line(void)
{
	line_is("{\"fd\":3,\"addr\":\"127.0.0.1\",\"port\":80}", "127.0.0.1:80",
		"connect {\"addr\":\"127.0.0.1\",\"fd\":\"$FD\",\"port\":80} -> "
		"127.0.0.1:80: deny (net) ECONNREFUSED",
		"fd masked, keys sorted, pid/tid/time not in the line");
	line_is("{\"dirfd\":-100,\"dirfd2\":7,\"pidfd\":5,\"path\":"
		"\"/tmp/ward-AbC123/x\"}",
		NULL,
		"connect {\"dirfd\":\"$FD\",\"dirfd2\":\"$FD\",\"path\":"
		"\"$WORKDIR/x\",\"pidfd\":\"$FD\"}: deny (net) ECONNREFUSED",
		"dirfds, pidfd and the workdir");
	line_is("{\"pid\":4242,\"host_pid\":99,\"sig\":9}", "pid 4242",
		"connect {\"host_pid\":\"$PID\",\"pid\":\"$PID\",\"sig\":9} -> "
		"pid 4242: deny (net) ECONNREFUSED",
		"pids over 1 masked (the target text keeps its number)");
	line_is("{\"pid\":-1,\"sig\":9}", NULL,
		"connect {\"pid\":-1,\"sig\":9}: deny (net) ECONNREFUSED",
		"pid -1 (every process) kept");
	line_is("{\"args\":[\"0x7ffc00001000\",\"0x3\"]}", NULL,
		"connect {\"args\":[\"$ADDR\",\"0x3\"]}: deny (net) "
		"ECONNREFUSED",
		"addresses in raw arguments");
	line_is("not json {", NULL,
		"connect not json {: deny (net) ECONNREFUSED",
		"arguments that are not JSON are kept as masked text");
}

static void test_digits(void)
{
	ok(rd_only_digits_differ("0.123\n", 6, "0.98\n", 5),
	   "numbers of other lengths");
	ok(rd_only_digits_differ("t=12 ms", 7, "t=9 ms", 6), "a time");
	ok(!rd_only_digits_differ("abc", 3, "abd", 3), "a letter differs");
	ok(!rd_only_digits_differ("1 a", 3, "1 a b", 5), "more text");
	ok(rd_only_digits_differ("", 0, "", 0), "empty");
}

/* ------------------------ runs in a database ------------------------ */

static char dir[] = "/tmp/ward-rdtest-XXXXXX";
static const char *later_kind = "process"; /* kind of processes 2.. */

struct ev {
	int serial;
	const char *syscall, *args, *target, *decision;
};

/* Writes a run whose processes have these serials (parent: the first),
 * with the events and output given; returns its id in id. */
static int write_run(struct audit *a, const char *workdir, const int *serials,
		     size_t n_serials, const struct ev *evs, size_t n_evs,
		     const char *out, int exit_code, char *id)
{
	struct audit_run_info ri = {
		.argv_json = "[\"ward\",\"run\"]",
		.language = "python",
		.interpreter = "/usr/bin/python3",
		.code = "x",
		.code_len = 1,
		.code_sha256 = "00",
		.code_name = "-c",
		.policy_name = "t",
		.policy_json = "{}",
		.policy_sha256 = "00",
		.workdir = workdir,
		.limits_json = "{}",
		.start_ns = 1,
	};
	int r = audit_run_begin(a, &ri, id);

	for (size_t i = 0; !r && i < n_serials; i++) {
		struct audit_process p = {
			.serial = serials[i],
			.parent_serial = i ? serials[0] : 0,
			.pid = 1000 + serials[i] * 7, /* differs per run */
			.tgid = 1000 + serials[i] * 7,
			.kind = i ? later_kind : "process",
			.exe = "/usr/bin/python3",
			.argv_json = "[\"python3\"]",
		};
		r = audit_process_start(a, &p);
	}
	for (size_t i = 0; !r && i < n_evs; i++) {
		struct audit_event e = {
			.ts_ns = (long long)i * 1000 + serials[0],
			.pid = 1,
			.tid = 1,
			.proc_serial = evs[i].serial,
			.syscall = evs[i].syscall,
			.args_json = evs[i].args,
			.target = evs[i].target,
			.decision = evs[i].decision,
			.rule = "r",
			.reason = "because",
			.err = strcmp(evs[i].decision, "allow") ? EACCES : 0,
		};
		r = audit_event(a, &e);
	}
	if (!r && out)
		r = audit_output(a, 5, AUDIT_STDOUT, out, strlen(out));
	struct audit_run_end re = { .end_ns = 9,
				    .exit_code = exit_code,
				    .status = exit_code ? "error" : "ok" };
	if (!r)
		r = audit_run_end(a, &re);
	return r;
}

static void test_compare(void)
{
	char path[300], err[256] = "", id1[17], id2[17], id3[17], id4[17];
	struct audit *a = NULL;
	struct rd_run r1, r2, r3, r4;
	struct rd_diff d;

	if (!mkdtemp(dir)) {
		skip("mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "%s/a.db", dir);
	if (!ok(audit_open(path, false, &a, err, sizeof(err)) == 0,
		"open a database: %s", err))
		return;
	/* Run 1: processes 1, 2; run 2 the same with serials 5, 9 and
	 * another workdir, fd and pid: equivalent. */
	const int s1[] = { 1, 2 }, s2[] = { 5, 9 };
	const struct ev e1[] = {
		{ 1, "openat", "{\"path\":\"/tmp/ward-aaaaaa/in\",\"fd\":3}",
		  "/tmp/ward-aaaaaa/in", "allow" },
		{ 2, "kill", "{\"pid\":1234}", NULL, "allow" },
		{ 1, "connect", "{\"fd\":4}", "1.2.3.4:80", "deny" },
	};
	const struct ev e2[] = {
		{ 5, "openat", "{\"path\":\"/tmp/ward-bbbbbb/in\",\"fd\":5}",
		  "/tmp/ward-bbbbbb/in", "allow" },
		{ 9, "kill", "{\"pid\":4321}", NULL, "allow" },
		{ 5, "connect", "{\"fd\":6}", "1.2.3.4:80", "deny" },
	};
	/* Run 3: the second decision of process 1 allowed; output differs
	 * only in digits. Run 4: a third process. */
	const struct ev e3[] = {
		{ 1, "openat", "{\"path\":\"/tmp/ward-cccccc/in\",\"fd\":3}",
		  "/tmp/ward-cccccc/in", "allow" },
		{ 2, "kill", "{\"pid\":1234}", NULL, "allow" },
		{ 1, "connect", "{\"fd\":4}", "1.2.3.4:80", "allow" },
	};
	const int s4[] = { 1, 2, 3 };
	ok(write_run(a, "/tmp/ward-aaaaaa", s1, 2, e1, 3, "n=1\n", 0, id1) == 0,
	   "run 1 written");
	ok(write_run(a, "/tmp/ward-bbbbbb", s2, 2, e2, 3, "n=1\n", 0, id2) == 0,
	   "run 2 written");
	ok(write_run(a, "/tmp/ward-cccccc", s1, 2, e3, 3, "n=27\n", 0, id3) ==
		   0,
	   "run 3 written");
	ok(write_run(a, "/tmp/ward-dddddd", s4, 3, e1, 3, "n=1\n", 3, id4) == 0,
	   "run 4 written");
	ok(rd_load(a, id1, &r1) == 0 && rd_load(a, id2, &r2) == 0 &&
		   rd_load(a, id3, &r3) == 0 && rd_load(a, id4, &r4) == 0,
	   "runs loaded: %s", audit_errmsg(a));
	is_int(r1.n_procs, 2, "two processes");
	is_int(r2.procs[2].serial, 9, "serial 9 is the second process");
	is_int(r2.procs[2].parent, 1, "its parent is the first");
	is_int(r2.procs[2].n_ev, 1, "its event is its own");

	rd_compare(&r1, &r2, &d);
	ok(d.equivalent, "other serials, pids, fds and workdir: equivalent");

	rd_compare(&r1, &r3, &d);
	ok(!d.equivalent && d.ev_differs, "a decision differs");
	is_int(d.proc, 1, "in process 1");
	is_int(d.index, 2, "its second decision");
	is_int(d.a_seq, 3, "seq in run 1");
	ok(d.a_line && strstr(d.a_line, ": deny (r) EACCES") &&
		   strstr(d.b_line, ": allow (r)"),
	   "both lines: %s | %s", d.a_line, d.b_line);
	is_int(d.procs_differing, 1, "one process differs");
	ok(d.out_differs[1] && d.out_at[1] == 2, "stdout differs at byte 2");
	ok(d.n_maybe == 1 && strstr(d.maybe[0], "only in digits"),
	   "digits hint: %s", d.n_maybe ? d.maybe[0] : "none");

	rd_compare(&r1, &r4, &d);
	ok(!d.equivalent && d.exit_differs, "exit differs");
	is_int(d.proc, 3, "process 3 is only in run 4");
	ok(d.proc_what && strstr(d.proc_what, "only in the second"),
	   "said so: %s", d.proc_what ? d.proc_what : "");
	is_int(d.n_maybe, 0, "no hint");

	/* Run 5: process 2 is a thread, and a read of /dev/urandom. */
	struct rd_run r5;
	char id5[17];
	const struct ev e5[] = {
		{ 1, "openat", "{\"path\":\"/tmp/ward-eeeeee/in\",\"fd\":3}",
		  "/tmp/ward-eeeeee/in", "allow" },
		{ 2, "kill", "{\"pid\":1234}", NULL, "allow" },
		{ 1, "connect", "{\"fd\":4}", "1.2.3.4:80", "deny" },
		{ 1, "openat", "{\"path\":\"/dev/urandom\"}", "/dev/urandom",
		  "allow" },
	};
	later_kind = "thread";
	ok(write_run(a, "/tmp/ward-eeeeee", s1, 2, e5, 4, "n=1\n", 0, id5) == 0,
	   "run 5 written");
	ok(rd_load(a, id5, &r5) == 0, "run 5 loaded");
	is_int(r5.threads, 1, "one thread");
	is_int(r5.timerand, 1, "one time/random call");
	rd_compare(&r1, &r5, &d);
	ok(!d.equivalent && d.proc == 1 && d.ev_differs && d.index == 3 &&
		   !d.a_line && d.b_line,
	   "process 1: run 5 has one decision more");
	is_int(d.procs_differing, 2, "and process 2 differs in kind");
	ok(d.n_maybe == 2 && strstr(d.maybe[0], "threads (0 and 1)") &&
		   strstr(d.maybe[1], "time or randomness (0 and 1; first: "
				      "openat"),
	   "thread and randomness hints: %s / %s",
	   d.n_maybe > 0 ? d.maybe[0] : "", d.n_maybe > 1 ? d.maybe[1] : "");
	rd_run_free(&r5);

	json_t *j = rd_json(&r1, &r3, &(struct rd_diff){ 0 });
	ok(j != NULL, "json");
	json_decref(j);
	rd_run_free(&r1);
	rd_run_free(&r2);
	rd_run_free(&r3);
	rd_run_free(&r4);
	ok(rd_load(a, "0000000000000000", &r1) == -ENOENT, "no such run");
	rd_run_free(&r1);
	audit_close(a);
	unlink(path);
	snprintf(path, sizeof(path), "%s/a.db-wal", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/a.db-shm", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/a.db.key", dir);
	unlink(path);
	if (rmdir(dir) < 0)
		printf("# rmdir %s: %s\n", dir, strerror(errno));
}

int main(void)
{
	test_mask();
	test_event_line();
	test_digits();
	test_compare();
	return done_testing();
}
