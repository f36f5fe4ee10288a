/*
 * test-recheck.c - rebuilding an event from its audit row
 * (policy/event-json.c) for ward recheck, and the generalization of ward
 * learn (policy/learn.c), and the "why" key of policy rules.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "policy/event-json.h"
#include "policy/learn.h"
#include "policy/policy.h"
#include "tap.h"

static struct ward_event ev; /* large: one, reused */

static int from_row(const char *syscall, const char *args, const char *raw,
		    const char *target, char *why)
{
	struct policy_row r = {
		.syscall = syscall,
		.nr = 0,
		.pid = 100,
		.tid = 100,
		.args_json = args,
		.raw = raw,
		.target = target,
	};

	why[0] = '\0';
	return policy_event_from_row(&r, &ev, why, 160);
}

static void test_rebuild(void)
{
	char why[160];

	is_int(from_row("openat",
			"{\"path\":\"x\",\"flags\":\"O_WRONLY|O_CREAT\","
			"\"access\":\"write,create\"}",
			"x", "/w/x", why),
	       0, "openat rebuilds");
	is_int(ev.cls, WARD_CLASS_FS, "openat is a file event");
	is_int((int)ev.access, WARD_FS_WRITE | WARD_FS_CREATE,
	       "access from the recorded access");
	is_str(ev.path, "/w/x", "path is the target");
	is_str(ev.raw, "x", "raw kept");

	is_int(from_row("rename",
			"{\"path\":\"a\",\"path2\":\"b\",\"access\":\"delete\","
			"\"access2\":\"create,delete\"}",
			"a", "/w/a -> /w/b", why),
	       0, "rename rebuilds");
	ok(ev.has_path2 && !strcmp(ev.path, "/w/a") &&
		   !strcmp(ev.path2, "/w/b") &&
		   ev.access2 == (WARD_FS_CREATE | WARD_FS_DELETE),
	   "rename: both paths and both accesses");
	is_int(from_row("rename",
			"{\"path\":\"a\",\"path2\":\"b\",\"access\":\"delete\"}",
			"a", "/w/a -> b -> /w/c", why),
	       -EINVAL, "a target that splits two ways is refused");

	is_int(from_row("openat",
			"{\"path\":\"/etc/passwd\",\"flags\":\"O_RDONLY\"}",
			"/etc/passwd", "/etc/passwd", why),
	       -EINVAL, "a row without access (older ward) is refused");
	ok(strstr(why, "access") != NULL, "  and says why: %s", why);
	is_int(from_row("openat", "not json", NULL, "/x", why), -EINVAL,
	       "args that are not JSON are refused");
	is_int(from_row("openat", "{\"access\":\"read,fly\"}", NULL, "/x", why),
	       -EINVAL, "an unknown access name is refused");

	is_int(from_row("execve",
			"{\"path\":\"/usr/bin/id\",\"argv\":[\"id\"],"
			"\"exists\":true}",
			"/usr/bin/id", "/usr/bin/id", why),
	       0, "execve rebuilds");
	ok(ev.cls == WARD_CLASS_EXEC && ev.exists &&
		   !strcmp(ev.path, "/usr/bin/id"),
	   "execve: program and exists");
	is_int(from_row("execve", "{\"path\":\"/x\",\"argv\":[]}", "/x", "/x",
			why),
	       -EINVAL, "execve without exists is refused");

	is_int(from_row("connect",
			"{\"fd\":3,\"family\":\"AF_INET\",\"addr\":\"127.0.0.1\","
			"\"port\":8080}",
			NULL, "127.0.0.1:8080", why),
	       0, "connect rebuilds");
	ok(ev.cls == WARD_CLASS_NET && ev.net_op == WARD_NET_CONNECT &&
		   ev.sa.present && ev.sa.family == AF_INET &&
		   ev.sa.port == 8080 && !strcmp(ev.sa.addr, "127.0.0.1"),
	   "connect: family, address, port");
	is_int(from_row("connect",
			"{\"fd\":3,\"family\":\"AF_UNIX\",\"path\":\"/run/s\"}",
			"/run/s", "unix:/run/s", why),
	       -EINVAL, "unix connect without exists is refused");
	is_int(from_row("sendto", "{\"fd\":3,\"len\":5}", NULL, NULL, why), 0,
	       "send without an address rebuilds");
	ok(ev.net_op == WARD_NET_SEND && !ev.sa.present,
	   "  as a send on a connected socket");
	is_int(from_row("sendto", "{\"fd\":3,\"...\":true}", NULL, NULL, why),
	       -EINVAL, "a cut send without its address is refused");
	is_int(from_row("socket",
			"{\"family\":\"AF_NETLINK\",\"type\":3,\"protocol\":0}",
			NULL, "family 16", why),
	       0, "socket rebuilds");
	is_int(ev.sock_family, AF_NETLINK, "socket family");

	is_int(from_row("kill", "{\"pid\":1,\"sig\":9,\"in_run\":false}", NULL,
			"pid 1", why),
	       0, "kill rebuilds");
	ok(ev.cls == WARD_CLASS_SIGNAL && ev.sig == 9 && ev.sig_target == 1 &&
		   !ev.sig_in_run,
	   "kill: signal, target, outside the run");
	is_int(from_row("kill", "{\"pid\":1,\"sig\":9}", NULL, "pid 1", why),
	       -EINVAL, "kill without in_run is refused");

	is_int(from_row("clone", "{\"flags\":\"0x3d0f00\"}", NULL,
			"flags 0x3d0f00", why),
	       0, "clone rebuilds");
	is_int((int)ev.clone_flags, 0x3d0f00, "clone flags");
	is_int(from_row("ptrace",
			"{\"args\":[\"0x10\",\"0x1\",\"0\",\"0\",\"0\",\"0\"]}",
			NULL, NULL, why),
	       0, "another syscall rebuilds from its raw arguments");
	ok(ev.cls == WARD_CLASS_OTHER && ev.raw_args[0] == 0x10,
	   "  raw arguments");

	is_int(from_row("mknodat",
			"{\"dirfd\":\"AT_FDCWD\",\"path\":\"n\",\"mode\":"
			"\"020600\",\"type\":\"S_IFCHR\",\"dev\":\"1:3\","
			"\"access\":\"create\"}",
			"n", "/w/n", why),
	       0, "mknodat rebuilds");
	is_int((int)ev.mknod_mode, 020600, "  with its mode (the floor's)");
	is_int(from_row("mknod", "{\"path\":\"n\",\"access\":\"create\"}", "n",
			"/w/n", why),
	       -EINVAL, "mknod without its mode is refused");
	ok(policy_rule_is_floor("floor.mknod"), "floor.mknod is kept");

	ok(policy_rule_is_floor("clone.flags") &&
		   policy_rule_is_floor("floor.args") &&
		   policy_rule_is_floor("proc.mem") &&
		   policy_rule_is_floor("copy") &&
		   policy_rule_is_floor("limits.procs") &&
		   policy_rule_is_floor("limits.events") &&
		   !policy_rule_is_floor("default") &&
		   !policy_rule_is_floor("workdir") &&
		   !policy_rule_is_floor(NULL),
	   "floor rules are kept, policy rules are not");
}

/* Rebuilt rows judged by a policy give what the recording policy said. */
static void test_recheck_verdicts(void)
{
	struct policy *p = NULL;
	struct policy_error err;
	struct policy_verdict v;
	char why[160];

	if (policy_load_profile("default", &p, &err) < 0) {
		ok(0, "default profile loads");
		return;
	}
	policy_set_workdir(p, "/w");
	from_row("openat", "{\"path\":\"/etc/shadow\",\"access\":\"read\"}",
		 "/etc/shadow", "/etc/shadow", why);
	policy_check(p, &ev, &v);
	ok(v.action == POLICY_DENY && !strcmp(v.rule, "secret-shadow"),
	   "a read of /etc/shadow is denied by secret-shadow (%s)", v.rule);
	from_row("openat", "{\"path\":\"o\",\"access\":\"write,create\"}", "o",
		 "/w/o", why);
	policy_check(p, &ev, &v);
	ok(v.action == POLICY_ALLOW && !strcmp(v.rule, "workdir"),
	   "a write in $WORKDIR is allowed by workdir (%s)", v.rule);
	from_row("connect",
		 "{\"family\":\"AF_UNIX\",\"path\":\"/nope\",\"exists\":false}",
		 "/nope", "unix:/nope", why);
	policy_check(p, &ev, &v);
	ok(v.action == POLICY_ALLOW && !strcmp(v.rule, "net.unix-missing"),
	   "a unix connect to nothing is net.unix-missing (%s)", v.rule);
	policy_free(p);
}

static struct learn *learner(unsigned threshold)
{
	struct learn *l = NULL;

	if (learn_new(threshold, &l) < 0)
		return NULL;
	learn_interpreter(l, "python", "/usr/bin/python3.11");
	return l;
}

/* One file event; result: the kernel's return value when known (has). */
static void learn_fs_res(struct learn *l, const char *path, unsigned access,
			 const char *wd, bool has, long long result)
{
	struct learn_src s = { .run_id = "r1",
			       .seq = 1,
			       .syscall = "openat",
			       .target = path,
			       .has_result = has,
			       .result = result };

	ward_event_reset(&ev);
	ev.cls = WARD_CLASS_FS;
	ev.pid = ev.tid = 42;
	ev.access = access;
	snprintf(ev.path, sizeof(ev.path), "%s", path);
	learn_event(l, &ev, wd, &s);
}

static void learn_fs(struct learn *l, const char *path, unsigned access,
		     const char *wd)
{
	struct learn_src s = {
		.run_id = "r1", .seq = 1, .syscall = "openat", .target = path
	};

	ward_event_reset(&ev);
	ev.cls = WARD_CLASS_FS;
	ev.pid = ev.tid = 42;
	ev.access = access;
	snprintf(ev.path, sizeof(ev.path), "%s", path);
	learn_event(l, &ev, wd, &s);
}

/* The fs rule for path in text, as a JSON object (new reference), or NULL. */
static json_t *fs_rule(const char *text, const char *path)
{
	json_t *root = json_loads(text, 0, NULL), *r = NULL, *e;
	size_t i;

	json_array_foreach(json_object_get(root, "fs"), i, e)
	{
		if (!strcmp(json_string_value(json_object_get(e, "path")),
			    path))
			r = json_incref(e);
	}
	json_decref(root);
	return r;
}

static bool allows(json_t *rule, const char *access)
{
	json_t *e;
	size_t i;

	json_array_foreach(json_object_get(rule, "allow"), i, e)
	{
		if (!strcmp(json_string_value(e), access))
			return true;
	}
	return false;
}

static void test_learn(void)
{
	struct learn *l = learner(3);
	struct policy *p = NULL;
	struct policy_error err;
	char *text = NULL, path[64];
	json_t *r;

	if (!l) {
		ok(0, "learn_new");
		return;
	}
	/* 4 files in one system directory: folded (threshold 3) */
	for (int i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "/opt/data/f%d", i);
		learn_fs(l, path, WARD_FS_READ, "/tmp/ward-abc");
	}
	/* 2 in another: kept exact */
	learn_fs(l, "/opt/two/a", WARD_FS_READ, "/tmp/ward-abc");
	learn_fs(l, "/opt/two/b", WARD_FS_READ, "/tmp/ward-abc");
	/* the workdir of two runs */
	learn_fs(l, "/tmp/ward-abc/in.csv", WARD_FS_READ, "/tmp/ward-abc");
	learn_fs(l, "/tmp/ward-xyz/out.txt", WARD_FS_WRITE | WARD_FS_CREATE,
		 "/tmp/ward-xyz");
	/* the interpreter's tree */
	learn_fs(l, "/usr/lib/python3.11/os.py", WARD_FS_READ, "/tmp/ward-abc");
	learn_fs(l, "/usr/lib/python3.11/json/__init__.py", WARD_FS_READ,
		 "/tmp/ward-abc");
	/* a write in the tree stays exact */
	learn_fs(l, "/usr/lib/python3.11/__pycache__/x.pyc",
		 WARD_FS_WRITE | WARD_FS_CREATE, "/tmp/ward-abc");
	/* the process's own /proc entry */
	learn_fs(l, "/proc/42/status", WARD_FS_READ, "/tmp/ward-abc");
	/* 5 files in /etc: a top-level directory is never a rule */
	for (int i = 0; i < 5; i++) {
		snprintf(path, sizeof(path), "/etc/f%d", i);
		learn_fs(l, path, WARD_FS_READ, "/tmp/ward-abc");
	}

	is_int(learn_policy_text(l, "t", "test", &text), 0, "policy text");
	if (!text) {
		learn_free(l);
		return;
	}
	r = fs_rule(text, "/opt/data");
	ok(r && allows(r, "read") && !allows(r, "write"),
	   "4 files past the threshold fold into /opt/data, read only");
	ok(r && strstr(json_string_value(json_object_get(r, "why")),
		       "4 events"),
	   "  its why counts the events: %s",
	   r ? json_string_value(json_object_get(r, "why")) : "-");
	json_decref(r);
	r = fs_rule(text, "/opt/data/f0");
	ok(!r, "  the folded files have no rule of their own");
	json_decref(r);
	r = fs_rule(text, "/opt/two/a");
	ok(r != NULL, "2 files under the threshold stay exact");
	json_decref(r);
	r = fs_rule(text, "/opt/two");
	ok(!r, "  and their directory gets no rule");
	json_decref(r);
	r = fs_rule(text, "$WORKDIR/in.csv");
	ok(r && allows(r, "read"), "the workdir becomes $WORKDIR");
	json_decref(r);
	r = fs_rule(text, "$WORKDIR/out.txt");
	ok(r && allows(r, "write") && allows(r, "create"),
	   "  for every run's own workdir");
	json_decref(r);
	r = fs_rule(text, "/usr/lib/python3.11");
	ok(r && allows(r, "read") && !allows(r, "write"),
	   "the interpreter's tree is one read rule");
	json_decref(r);
	r = fs_rule(text, "/usr/lib/python3.11/__pycache__/x.pyc");
	ok(r && allows(r, "write") && !allows(r, "read"),
	   "  a write inside it stays exact");
	json_decref(r);
	r = fs_rule(text, "/proc/self/status");
	ok(r != NULL, "/proc/PID of the process becomes /proc/self");
	json_decref(r);
	r = fs_rule(text, "/etc");
	ok(!r, "no rule on a top-level directory, whatever the count");
	json_decref(r);
	r = fs_rule(text, "/etc/f4");
	ok(r != NULL, "  its files stay exact");
	json_decref(r);

	is_int(policy_load_string(text, "learned", &p, &err), 0,
	       "the learned policy loads (with its why keys)");
	if (p) {
		struct policy_verdict v;

		policy_set_workdir(p, "/tmp/ward-new");
		ward_event_reset(&ev);
		ev.cls = WARD_CLASS_FS;
		ev.access = WARD_FS_READ;
		ev.pid = ev.tid = 7;
		strcpy(ev.path, "/tmp/ward-new/in.csv");
		policy_check(p, &ev, &v);
		ok(v.action == POLICY_ALLOW, "it allows the same read in a new "
					     "workdir");
		ev.access = WARD_FS_WRITE;
		strcpy(ev.path, "/tmp/ward-new/in.csv");
		policy_check(p, &ev, &v);
		ok(v.action == POLICY_DENY, "  but not a write there");
		ev.access = WARD_FS_WRITE | WARD_FS_CREATE;
		strcpy(ev.path, "/tmp/elsewhere");
		policy_check(p, &ev, &v);
		ok(v.action == POLICY_DENY, "  nor a write outside");
		policy_free(p);
	}
	free(text);
	learn_free(l);
}

static void test_learn_net(void)
{
	struct learn *l = learner(8);
	struct learn_src s = { .run_id = "r2",
			       .seq = 5,
			       .syscall = "connect",
			       .target = "127.0.0.1:8080",
			       .would_deny = "default" };
	struct policy *p = NULL;
	struct policy_error err;
	struct policy_verdict v;
	char *text = NULL;

	if (!l)
		return;
	ward_event_reset(&ev);
	ev.cls = WARD_CLASS_NET;
	ev.net_op = WARD_NET_CONNECT;
	ev.sa.present = true;
	ev.sa.family = AF_INET;
	strcpy(ev.sa.addr, "127.0.0.1");
	ev.sa.port = 8080;
	learn_event(l, &ev, "/w", &s);
	ward_event_reset(&ev);
	ev.cls = WARD_CLASS_EXEC;
	ev.exists = true;
	strcpy(ev.path, "/usr/bin/uname");
	learn_event(l, &ev, "/w", &s);
	ward_event_reset(&ev);
	ev.cls = WARD_CLASS_EXEC;
	ev.exists = false;
	strcpy(ev.path, "/usr/local/bin/uname");
	learn_event(l, &ev, "/w", &s);

	is_int(learn_policy_text(l, "t", "test", &text), 0, "policy text");
	ok(text && strstr(text, "\"port\":8080") &&
		   strstr(text, "\"addr\":\"127.0.0.1\""),
	   "the peer is learned exactly");
	ok(text && strstr(text, "\"/usr/bin/uname\"") &&
		   !strstr(text, "/usr/local/bin/uname"),
	   "the program run is in exec.allow, the missing one is not");
	ok(text && strstr(text, "REVIEW"),
	   "what the recording policy would have denied is flagged");
	ok(learn_flagged(l) == 2, "two flagged rules (%zu)", learn_flagged(l));
	if (text && policy_load_string(text, "learned", &p, &err) == 0) {
		policy_set_workdir(p, "/w");
		ward_event_reset(&ev);
		ev.cls = WARD_CLASS_NET;
		ev.net_op = WARD_NET_CONNECT;
		ev.sa.present = true;
		ev.sa.family = AF_INET;
		strcpy(ev.sa.addr, "127.0.0.1");
		ev.sa.port = 8081;
		policy_check(p, &ev, &v);
		ok(v.action == POLICY_DENY, "a connect to another port is "
					    "denied");
		policy_free(p);
	} else {
		ok(0, "the learned policy loads");
	}
	free(text);
	learn_free(l);
}

/* What the policy says about access to path, with $WORKDIR at wd. */
static enum policy_action judge(struct policy *p, const char *wd,
				const char *path, unsigned access)
{
	struct policy_verdict v;

	policy_set_workdir(p, wd);
	ward_event_reset(&ev);
	ev.cls = WARD_CLASS_FS;
	ev.pid = ev.tid = 7;
	ev.access = access;
	snprintf(ev.path, sizeof(ev.path), "%s", path);
	policy_check(p, &ev, &v);
	return v.action;
}

#define RWCD (WARD_FS_READ | WARD_FS_WRITE | WARD_FS_CREATE | WARD_FS_DELETE)

/* Names made at random (Python's tempfile) fold into their directory: a
 * re-run makes new ones. */
static void test_learn_random_names(void)
{
	struct learn *l = learner(8);
	const char *wd = "/tmp/ward-abc";
	struct policy *p = NULL;
	struct policy_error err;
	char *text = NULL;
	json_t *r;

	if (!l)
		return;
	/* TMPDIR: gettempdir()'s probe, NamedTemporaryFile, mkdtemp and a
	 * file in it */
	learn_fs(l, "/tmp/ward-abc/tmp/sjg8pc37", RWCD & ~WARD_FS_READ, wd);
	learn_fs(l, "/tmp/ward-abc/tmp/tmpyudn8mkl", RWCD, wd);
	learn_fs(l, "/tmp/ward-abc/tmp/tmpvzz3vv_9",
		 WARD_FS_CREATE | WARD_FS_READ | WARD_FS_DELETE, wd);
	learn_fs(l, "/tmp/ward-abc/tmp/tmpvzz3vv_9/a.txt",
		 WARD_FS_WRITE | WARD_FS_CREATE, wd);
	/* mkstemp(dir='out', suffix='.csv') and a name of its own there */
	learn_fs(l, "/tmp/ward-abc/out/tmp5sz2njun.csv", RWCD, wd);
	learn_fs(l, "/tmp/ward-abc/out/report_2024.csv",
		 WARD_FS_WRITE | WARD_FS_CREATE, wd);
	/* mkdtemp(prefix='job-', dir='work') with a file in it */
	learn_fs(l, "/tmp/ward-abc/work/job-1h6flbf7", WARD_FS_CREATE, wd);
	learn_fs(l, "/tmp/ward-abc/work/job-1h6flbf7/x/y.txt",
		 WARD_FS_WRITE | WARD_FS_CREATE, wd);
	/* names that look random but were not made by the code, or are
	 * words: exact */
	learn_fs(l, "/opt/cache/a1b2c3d4.json", WARD_FS_READ, wd);
	learn_fs(l, "/tmp/ward-abc/v2_final.txt",
		 WARD_FS_WRITE | WARD_FS_CREATE, wd);
	/* the run's own /tmp may fold; another top-level directory not */
	learn_fs(l, "/tmp/tmpab12cd_x", RWCD, wd);
	learn_fs(l, "/etc/tmpab12cd_x", WARD_FS_CREATE | WARD_FS_WRITE, wd);

	is_int(learn_policy_text(l, "t", "test", &text), 0, "policy text");
	if (!text) {
		learn_free(l);
		return;
	}
	r = fs_rule(text, "$WORKDIR/tmp");
	ok(r && allows(r, "read") && allows(r, "write") &&
		   allows(r, "create") && allows(r, "delete") &&
		   !allows(r, "exec"),
	   "everything under the code's TMPDIR is one rule on $WORKDIR/tmp, "
	   "with the access seen");
	ok(r && strstr(json_string_value(json_object_get(r, "why")),
		       "4 events"),
	   "  its why counts the 4 events");
	json_decref(r);
	ok(!strstr(text, "\"path\":\"$WORKDIR/tmp/"),
	   "  nothing under it is a rule of its own");
	r = fs_rule(text, "$WORKDIR/out");
	ok(r && allows(r, "create") && allows(r, "write") &&
		   allows(r, "delete"),
	   "a tempfile name created elsewhere folds into its directory");
	json_decref(r);
	r = fs_rule(text, "$WORKDIR/out/report_2024.csv");
	ok(r == NULL, "  which covers the other file written there");
	json_decref(r);
	r = fs_rule(text, "$WORKDIR/work");
	ok(r && allows(r, "create") && allows(r, "write"),
	   "a random directory with a custom prefix, and what is in it, fold "
	   "into the directory it was made in");
	json_decref(r);
	r = fs_rule(text, "/opt/cache/a1b2c3d4.json");
	ok(r != NULL, "a random-looking name only read stays exact");
	json_decref(r);
	r = fs_rule(text, "$WORKDIR/v2_final.txt");
	ok(r != NULL, "a name that is a word and a number stays exact");
	json_decref(r);
	r = fs_rule(text, "/tmp");
	ok(r && allows(r, "create"), "the run's own /tmp may be the fold");
	json_decref(r);
	r = fs_rule(text, "/etc/tmpab12cd_x");
	ok(r != NULL, "  another top-level directory is never a rule");
	json_decref(r);

	if (policy_load_string(text, "learned", &p, &err) == 0) {
		/* the run's workdir as the code sees it (not under /tmp) */
		const char *nw = "/home/user";

		ok(judge(p, nw, "/home/user/tmp/tmpqq77zz_1",
			 WARD_FS_WRITE | WARD_FS_CREATE) == POLICY_ALLOW &&
			   judge(p, nw, "/home/user/tmp/p43dwqc0",
				 WARD_FS_WRITE | WARD_FS_CREATE) ==
				   POLICY_ALLOW &&
			   judge(p, nw, "/home/user/work/job-k3j2l1x9/x/y.txt",
				 WARD_FS_WRITE | WARD_FS_CREATE) ==
				   POLICY_ALLOW,
		   "a re-run's new random names are allowed");
		ok(judge(p, nw, "/home/user/secret",
			 WARD_FS_WRITE | WARD_FS_CREATE) == POLICY_DENY,
		   "  but not other names in the workdir");
		policy_free(p);
	} else {
		ok(0, "the learned policy loads: %s", err.msg);
	}
	free(text);
	learn_free(l);
}

/* A call the kernel answered ENOENT is no reason to widen the policy. */
static void test_learn_failed_probes(void)
{
	struct learn *l = learner(3), *ctl = learner(3);
	const char *wd = "/tmp/ward-abc";
	char *text = NULL, *ctext = NULL, path[64];
	json_t *r;

	if (!l || !ctl) {
		learn_free(l);
		learn_free(ctl);
		return;
	}
	for (int i = 0; i < 6; i++) {
		/* a search that found nothing: past the threshold */
		snprintf(path, sizeof(path), "/opt/probe/m%d.py", i);
		learn_fs_res(l, path, WARD_FS_READ, wd, true, -ENOENT);
		learn_fs_res(ctl, path, WARD_FS_READ, wd, false, 0);
	}
	/* 4 reads in a directory that fold, and a failed open for writing
	 * there (open(name, "r+") of nothing) */
	for (int i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "/opt/mix/f%d", i);
		learn_fs_res(l, path, WARD_FS_READ, wd, true, 3);
	}
	learn_fs_res(l, "/opt/mix/gone", WARD_FS_READ | WARD_FS_WRITE, wd, true,
		     -ENOENT);
	/* a package directory that is not there, in the interpreter's tree */
	learn_fs_res(l, "/usr/local/lib/python3.11/dist-packages", WARD_FS_READ,
		     wd, true, -ENOENT);
	/* failed once, found once: an ordinary rule */
	learn_fs_res(l, "/opt/once/a", WARD_FS_READ, wd, true, -ENOENT);
	learn_fs_res(l, "/opt/once/a", WARD_FS_READ, wd, true, 0);
	/* another failure is not a probe */
	learn_fs_res(l, "/opt/acc/a", WARD_FS_READ, wd, true, -EACCES);

	is_int(learn_policy_text(l, "t", "test", &text), 0, "policy text");
	is_int(learn_policy_text(ctl, "t", "test", &ctext), 0,
	       "policy text without results");
	if (!text || !ctext)
		goto out;
	r = fs_rule(ctext, "/opt/probe");
	ok(r != NULL, "without results, 6 reads fold into their directory");
	json_decref(r);
	r = fs_rule(text, "/opt/probe");
	ok(r == NULL, "6 reads answered ENOENT do not fold");
	json_decref(r);
	r = fs_rule(text, "/opt/probe/m5.py");
	ok(r && allows(r, "read") &&
		   strstr(json_string_value(json_object_get(r, "why")),
			  "failed with ENOENT"),
	   "  each is allowed exactly, and its why says why: %s",
	   r ? json_string_value(json_object_get(r, "why")) : "-");
	json_decref(r);
	r = fs_rule(text, "/opt/mix");
	ok(r && allows(r, "read") && !allows(r, "write"),
	   "a fold of what succeeded takes neither a failed write's access "
	   "nor its count");
	json_decref(r);
	r = fs_rule(text, "/opt/mix/gone");
	ok(r && allows(r, "write"), "  which stays exact");
	json_decref(r);
	r = fs_rule(text, "/usr/local/lib/python3.11");
	ok(r == NULL, "a missing directory in the interpreter's tree makes no "
		      "tree rule");
	json_decref(r);
	r = fs_rule(text, "/usr/local/lib/python3.11/dist-packages");
	ok(r != NULL, "  only an exact one");
	json_decref(r);
	r = fs_rule(text, "/opt/once/a");
	ok(r && !strstr(json_string_value(json_object_get(r, "why")),
			"never generalized"),
	   "a path found once is no probe");
	json_decref(r);
	r = fs_rule(text, "/opt/acc/a");
	ok(r && !strstr(json_string_value(json_object_get(r, "why")), "ENOENT"),
	   "another errno is no probe");
	json_decref(r);
out:
	free(text);
	free(ctext);
	learn_free(l);
	learn_free(ctl);
}

static void test_why_key(void)
{
	struct policy *p = NULL;
	struct policy_error err;
	char msg[512];

	is_int(policy_load_string(
		       "{\"version\": 1, \"fs\": [{\"path\": \"/x\", "
		       "\"allow\": [\"read\"], \"why\": \"needed\"}], "
		       "\"exec\": {\"allow\": [], \"why\": \"none\"}}",
		       "t", &p, &err),
	       0, "a rule may have a why");
	policy_free(p);
	p = NULL;
	is_int(policy_load_string("{\"version\": 1,\n\"fs\": [{\"path\": "
				  "\"/x\", \"allow\": [\"read\"],\n  \"why\": "
				  "3}]}",
				  "t.json", &p, &err),
	       -EINVAL, "a why that is not a string is an error");
	policy_error_format(&err, msg, sizeof(msg));
	ok(strstr(msg, "t.json:3:") && strstr(msg, "fs[0].why"),
	   "  naming the place: %s", msg);
	policy_free(p);
}

/* ward recheck keeps rows decided by these as ward's own: no policy rule
 * may take their names. */
static void test_reserved_ids(void)
{
	static const char *const ids[] = { "copy",	   "decode",
					   "limits.procs", "limits.events",
					   "proc.mem",	   "floor.args",
					   "floor.mine" };
	struct policy *p = NULL;
	struct policy_error err;
	char text[256];

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		snprintf(text, sizeof(text),
			 "{\"version\": 1, \"fs\": [{\"id\": \"%s\", "
			 "\"path\": \"/x\", \"deny\": [\"read\"]}]}",
			 ids[i]);
		ok(policy_load_string(text, "t", &p, &err) == -EINVAL,
		   "rule id \"%s\" is refused: %s", ids[i], err.msg);
		policy_free(p);
		p = NULL;
	}
}

int main(void)
{
	test_rebuild();
	test_recheck_verdicts();
	test_learn();
	test_learn_net();
	test_learn_random_names();
	test_learn_failed_probes();
	test_why_key();
	test_reserved_ids();
	return done_testing();
}
