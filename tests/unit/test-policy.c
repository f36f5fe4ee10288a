/*
 * test-policy.c - policy loading (every validation error has a fixture in
 * tests/unit/data/policy/), matching, precedence, audit mode, every event
 * class, $WORKDIR binding, /proc/self aliases, errno names, the kill floor
 * and the shipped profiles.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/errnames.h"
#include "common/floor.h"
#include "policy/policy.h"
#include "tap.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

#define R WARD_FS_READ
#define W WARD_FS_WRITE
#define C WARD_FS_CREATE
#define D WARD_FS_DELETE
#define X WARD_FS_EXEC
#define S WARD_FS_STAT

static struct ward_event ev; /* large: one, reused */

static const char *action_name(enum policy_action a)
{
	return a == POLICY_ALLOW  ? "allow"
	       : a == POLICY_DENY ? "deny"
	       : a == POLICY_ASK  ? "ask"
				  : "kill";
}

/* ---- building events ---- */

static void ev_base(enum ward_class cls, const char *name)
{
	ward_event_reset(&ev);
	ev.pid = 4242;
	ev.tid = 4242;
	ev.cls = cls;
	ev.name = name;
}

static void ev_fs(unsigned access, const char *path)
{
	ev_base(WARD_CLASS_FS, "openat");
	ev.access = access;
	snprintf(ev.raw, sizeof(ev.raw), "%s", path);
	snprintf(ev.path, sizeof(ev.path), "%s", path);
	ev.exists = true;
}

static void ev_fs2(unsigned a1, const char *p1, unsigned a2, const char *p2)
{
	ev_fs(a1, p1);
	ev.name = "renameat2";
	ev.has_path2 = true;
	ev.access2 = a2;
	snprintf(ev.path2, sizeof(ev.path2), "%s", p2);
}

static void ev_exec(const char *path, bool exists)
{
	ev_base(WARD_CLASS_EXEC, "execve");
	snprintf(ev.path, sizeof(ev.path), "%s", path);
	ev.exists = exists;
}

static void ev_socket(int family)
{
	ev_base(WARD_CLASS_NET, "socket");
	ev.net_op = WARD_NET_SOCKET;
	ev.sock_family = family;
	ev.sock_type = SOCK_STREAM;
}

static void ev_inet(enum ward_net_op op, int family, const char *addr, int port)
{
	static const char *const names[] = {
		[WARD_NET_CONNECT] = "connect", [WARD_NET_BIND] = "bind",
		[WARD_NET_SEND] = "sendto",	[WARD_NET_LISTEN] = "listen",
		[WARD_NET_SOCKET] = "socket",	[WARD_NET_NONE] = "?",
	};

	ev_base(WARD_CLASS_NET, names[op]);
	ev.net_op = op;
	ev.sock_family = family;
	ev.sa.present = true;
	ev.sa.family = family;
	snprintf(ev.sa.addr, sizeof(ev.sa.addr), "%s", addr);
	ev.sa.port = port;
}

static void ev_unix(enum ward_net_op op, const char *path, bool abstract)
{
	ev_inet(op, AF_UNIX, "", -1);
	snprintf(ev.sa.unix_path, sizeof(ev.sa.unix_path), "%s", path);
	ev.sa.abstract = abstract;
	ev.exists = true; /* a socket is there; see the missing cases */
}

static void ev_listen(int family)
{
	ev_base(WARD_CLASS_NET, "listen");
	ev.net_op = WARD_NET_LISTEN;
	ev.sock_family = family;
}

static void ev_clone(unsigned long flags)
{
	ev_base(WARD_CLASS_PROC, "clone");
	ev.clone_flags = flags;
}

static void ev_signal(pid_t target, int sig, bool in_run)
{
	ev_base(WARD_CLASS_SIGNAL, "kill");
	ev.sig_target = target;
	ev.sig = sig;
	ev.sig_in_run = in_run;
}

/* ---- checking verdicts ---- */

static struct policy_verdict v;

/*
 * One TAP result: policy_check(p, &ev) returns rc and gives action, errno
 * and rule (rule NULL: not checked).
 */
static int verdict_is(const struct policy *p, int rc, enum policy_action a,
		      int err, const char *rule, const char *what)
{
	int got_rc;
	bool good;

	memset(&v, 0x5a, sizeof(v)); /* policy_check must fill everything */
	got_rc = policy_check(p, &ev, &v);
	good = got_rc == rc && v.action == a && v.err == err && v.rule &&
	       (!rule || strcmp(v.rule, rule) == 0) &&
	       memchr(v.reason, '\0', sizeof(v.reason));
	if (!ok(good, "%s", what))
		printf("# got rc=%d %s %s rule=%s (\"%s\"), want rc=%d %s %s "
		       "rule=%s\n",
		       got_rc, action_name(v.action), ward_errno_name(v.err),
		       v.rule ? v.rule : "(null)",
		       memchr(v.reason, '\0', sizeof(v.reason))
			       ? v.reason
			       : "(unterminated)",
		       rc, action_name(a), ward_errno_name(err),
		       rule ? rule : "(any)");
	return good;
}

#define ALLOWS(p, rule, what) verdict_is(p, 0, POLICY_ALLOW, 0, rule, what)
#define DENIES(p, err, rule, what)                                             \
	verdict_is(p, 0, POLICY_DENY, err, rule, what)
#define KILLS(p, rule, what) verdict_is(p, 0, POLICY_KILL, 0, rule, what)
#define ASKS(p, err, rule, what) verdict_is(p, 0, POLICY_ASK, err, rule, what)

static struct policy *load(const char *text)
{
	struct policy_error e;
	struct policy *p = NULL;
	char buf[1024];
	int rc = policy_load_string(text, "test.json", &p, &e);

	if (rc) {
		policy_error_format(&e, buf, sizeof(buf));
		printf("# load failed: %s\n", buf);
	}
	return p;
}

static struct policy *load_profile(const char *name)
{
	struct policy_error e;
	struct policy *p = NULL;

	if (policy_load_profile(name, &p, &e) != 0)
		printf("# profile %s: %s\n", name, e.msg);
	return p;
}

/* ---- errno names and the kill floor ---- */

static void test_errnames(void)
{
	static const struct {
		const char *name;
		int value;
	} t[] = {
		{ "EPERM", EPERM },
		{ "ENOENT", ENOENT },
		{ "EACCES", EACCES },
		{ "EEXIST", EEXIST },
		{ "ENOSYS", ENOSYS },
		{ "EROFS", EROFS },
		{ "ECONNREFUSED", ECONNREFUSED },
		{ "ENETUNREACH", ENETUNREACH },
		{ "EAFNOSUPPORT", EAFNOSUPPORT },
		{ "EADDRNOTAVAIL", EADDRNOTAVAIL },
		{ "EINVAL", EINVAL },
		{ "EFAULT", EFAULT },
		{ "ENOTDIR", ENOTDIR },
		{ "EISDIR", EISDIR },
		{ "EBUSY", EBUSY },
		{ "EOPNOTSUPP", EOPNOTSUPP },
		{ "EHOSTUNREACH", EHOSTUNREACH },
		{ "EXDEV", EXDEV },
		{ "EMFILE", EMFILE },
		{ "ENOMEM", ENOMEM },
		{ "EAGAIN", EAGAIN },
		{ "ESRCH", ESRCH },
		{ "ENOEXEC", ENOEXEC },
		{ "ELOOP", ELOOP },
		{ "ENAMETOOLONG", ENAMETOOLONG },
		{ "EIO", EIO },
		{ "EBADF", EBADF },
		{ "ETXTBSY", ETXTBSY },
		{ "ENXIO", ENXIO },
	};
	int bad = 0;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (ward_errno_from_name(t[i].name) != t[i].value ||
		    strcmp(ward_errno_name(t[i].value), t[i].name) != 0) {
			printf("# %s <-> %d broken\n", t[i].name, t[i].value);
			bad++;
		}
	}
	ok(bad == 0, "errno names round-trip for the %zu required names",
	   sizeof(t) / sizeof(t[0]));
	is_int(ward_errno_from_name("ENOTSUP"), EOPNOTSUPP,
	       "ENOTSUP is an alias of EOPNOTSUPP");
	is_int(ward_errno_from_name("EWOULDBLOCK"), EAGAIN,
	       "EWOULDBLOCK is an alias of EAGAIN");
	is_str(ward_errno_name(-EACCES), "EACCES", "negative errno is named");
	is_str(ward_errno_name(9999), "E?", "unknown errno is E?");
	is_str(ward_errno_name(0), "E?", "errno 0 has no name");
	is_int(ward_errno_from_name("eacces"), 0, "names are case-sensitive");
	is_int(ward_errno_from_name("EFOO"), 0, "unknown name is 0");
	is_int(ward_errno_from_name(NULL), 0, "NULL name is 0");
	is_int(ward_errno_from_name(""), 0, "empty name is 0");
}

static void test_floor(void)
{
	static const char *const need[] = {
		"ptrace",
		"process_vm_readv",
		"process_vm_writev",
		"io_uring_setup",
		"io_uring_enter",
		"io_uring_register",
		"bpf",
		"userfaultfd",
		"perf_event_open",
		"mount",
		"umount2",
		"pivot_root",
		"fsopen",
		"fsconfig",
		"fsmount",
		"fspick",
		"open_tree",
		"move_mount",
		"mount_setattr",
		"unshare",
		"setns",
		"kexec_load",
		"kexec_file_load",
		"init_module",
		"finit_module",
		"delete_module",
		"keyctl",
		"add_key",
		"request_key",
		"open_by_handle_at",
		"name_to_handle_at",
		"seccomp",
		"pidfd_getfd",
		"iopl",
		"ioperm",
		"modify_ldt",
	};
	size_t n = 0, missing = 0;

	while (ward_kill_floor[n])
		n++;
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (!ward_in_kill_floor(need[i])) {
			printf("# %s missing from the floor\n", need[i]);
			missing++;
		}
	ok(missing == 0, "kill floor holds all %zu syscalls",
	   sizeof(need) / sizeof(need[0]));
	is_int((long long)n, (long long)(sizeof(need) / sizeof(need[0])),
	       "kill floor has no extra entries");
	ok(!ward_in_kill_floor("openat") && !ward_in_kill_floor(NULL) &&
		   !ward_in_kill_floor("ptrace2"),
	   "kill floor does not hold openat, NULL or ptrace2");
}

/* ---- fixtures ---- */

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t n;

	if (!f)
		return NULL;
	buf = calloc(1, 65536);
	n = buf ? fread(buf, 1, 65535, f) : 0;
	fclose(f);
	while (buf && n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	return buf;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names in the current directory that end in ".json". */
static size_t list_json(char **names, size_t max)
{
	DIR *d = opendir(".");
	struct dirent *de;
	size_t n = 0;

	while (d && (de = readdir(d)) && n < max) {
		size_t len = strlen(de->d_name);

		if (len > 5 && strcmp(de->d_name + len - 5, ".json") == 0)
			names[n++] = strdup(de->d_name);
	}
	if (d)
		closedir(d);
	qsort(names, n, sizeof(*names), cmp_names);
	return n;
}

static void fixture_bad(const char *name)
{
	char errfile[PATH_MAX], buf[1024];
	struct policy_error e;
	struct policy *p = NULL;
	char *want;
	int rc;

	snprintf(errfile, sizeof(errfile), "%.*s.err", (int)(strlen(name) - 5),
		 name);
	want = slurp(errfile);
	rc = policy_load_file(name, &p, &e);
	policy_error_format(&e, buf, sizeof(buf));
	if (!ok(want && rc == -EINVAL && !p && strcmp(buf, want) == 0,
		"%s: rejected with the expected error", name))
		printf("# rc=%d\n# got:  %s\n# want: %s\n", rc, buf,
		       want ? want : "(no .err file)");
	policy_free(p);
	free(want);
}

static void fixture_good(const char *name)
{
	struct policy_error e;
	struct policy *p = NULL;
	int rc = policy_load_file(name, &p, &e);

	if (!ok(rc == 0 && p, "%s: loads", name)) {
		char buf[1024];

		policy_error_format(&e, buf, sizeof(buf));
		printf("# %s\n", buf);
	}
	policy_free(p);
}

static void test_fixtures(void)
{
	char *names[512];
	size_t n = list_json(names, 512), nbad = 0, ngood = 0, other = 0;

	for (size_t i = 0; i < n; i++) {
		if (strncmp(names[i], "bad-", 4) == 0) {
			fixture_bad(names[i]);
			nbad++;
		} else if (strncmp(names[i], "good-", 5) == 0) {
			fixture_good(names[i]);
			ngood++;
		} else {
			other++;
		}
		free(names[i]);
	}
	ok(nbad >= 100 && ngood >= 5 && other == 0,
	   "fixtures found: %zu bad, %zu good, %zu misnamed", nbad, ngood,
	   other);
}

/* ---- loading ---- */

static void test_load_api(void)
{
	const char *const *names = policy_profile_names();
	struct policy_error e;
	struct policy *p = (struct policy *)1;
	char buf[1024];
	const char *text = "{\"version\": 1, \"name\": \"x\"}";
	size_t n = 0;
	int rc;

	rc = policy_load_file("no-such-policy.json", &p, &e);
	policy_error_format(&e, buf, sizeof(buf));
	is_int(rc, -ENOENT, "missing file is -ENOENT");
	ok(p == NULL, "missing file: *out is NULL");
	is_str(buf,
	       "no-such-policy.json: cannot open: No such file or "
	       "directory",
	       "missing file: message names the file");

	rc = policy_load_profile("nope", &p, &e);
	policy_error_format(&e, buf, sizeof(buf));
	is_int(rc, -ENOENT, "unknown profile is -ENOENT");
	is_str(buf,
	       "profile:nope: no such profile; valid: audit, default, "
	       "node, sh",
	       "unknown profile: message lists the profiles");

	rc = policy_load_profile("default", &p, &e);
	is_int(rc, 0, "profile default loads");
	is_str(p ? policy_name(p) : NULL, "default", "profile name");
	policy_free(p);

	while (names[n])
		n++;
	is_int((long long)n, 4, "four shipped profiles");

	rc = policy_load_string("{\"version\": 1, \"fs\": [1]}", NULL, &p, &e);
	policy_error_format(&e, buf, sizeof(buf));
	is_str(buf, "<string>:1:23: fs[0]: must be an object, not an integer",
	       "string without a label is \"<string>\"");
	rc = policy_load_string("{\"version\": 1}", NULL, &p, &e);
	is_str(rc == 0 ? policy_name(p) : NULL, "policy",
	       "string without a label or name is named \"policy\"");
	policy_free(p);
	rc = policy_load_string("{\"version\": 1}", "dir/strict.json", &p, &e);
	is_str(rc == 0 ? policy_name(p) : NULL, "strict",
	       "the name defaults to the label's base name");
	policy_free(p);
	rc = policy_load_file("../../../../profiles/default.json", &p, &e);
	is_str(rc == 0 ? policy_name(p) : NULL, "default",
	       "profiles/default.json loads from a file");
	policy_free(p);

	rc = policy_load_string(text, "t", &p, &e);
	is_str(rc == 0 ? policy_text(p) : NULL, text,
	       "policy_text is the text as loaded");
	is_str(rc == 0 ? policy_name(p) : NULL, "x", "\"name\" is used");
	policy_free(p);
	policy_free(NULL);
	ok(1, "policy_free(NULL) is a no-op");

	rc = policy_load_string(NULL, "t", &p, &e);
	is_int(rc, -EINVAL, "NULL text is -EINVAL");
	is_int(policy_load_file(NULL, &p, &e), -EINVAL, "NULL path is -EINVAL");

	memset(&e, 0, sizeof(e));
	strcpy(e.msg, "m");
	policy_error_format(&e, buf, sizeof(buf));
	is_str(buf, "m", "error format: message only");
	strcpy(e.file, "f.json");
	e.line = 3;
	policy_error_format(&e, buf, sizeof(buf));
	is_str(buf, "f.json:3: m", "error format: no column");
	e.col = 7;
	strcpy(e.where, "fs[1].path");
	policy_error_format(&e, buf, sizeof(buf));
	is_str(buf, "f.json:3:7: fs[1].path: m", "error format: everything");
	policy_error_format(&e, buf, 8);
	is_str(buf, "f.json:", "error format truncates to the buffer");
}

/*
 * The descriptor policy_load_file() reads the file with is close-on-exec:
 * in ward serve another thread may spawn a process meanwhile. Read
 * through a FIFO, so that the loader's descriptor is open while this
 * thread looks at it.
 */
struct fifo_peek {
	const char *path;
	unsigned char before[1024];
	int seen;      /* new descriptors found */
	int inherited; /* of them, not close-on-exec */
};

static void *fifo_writer(void *arg)
{
	struct fifo_peek *fp = arg;
	const char *text = "{\"version\": 1, \"name\": \"fifo\"}";
	int w = open(fp->path, O_WRONLY | O_CLOEXEC); /* meets the reader */

	/* the reader's open may return after ours: wait for its fd */
	for (int tries = 0; w >= 0 && !fp->seen && tries < 2000; tries++) {
		for (int fd = 0; fd < 1024; fd++) {
			int fl = fcntl(fd, F_GETFD);
			if (fl < 0 || fp->before[fd] || fd == w)
				continue;
			fp->seen++;
			if (!(fl & FD_CLOEXEC))
				fp->inherited++;
		}
		if (!fp->seen)
			nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	if (w >= 0) {
		ssize_t n = write(w, text, strlen(text));
		(void)n;
		close(w);
	}
	return NULL;
}

static void test_load_file_cloexec(void)
{
	char dir[] = "/tmp/ward-test-policy-XXXXXX", path[64];
	struct fifo_peek fp = { .path = path };
	struct policy_error e;
	struct policy *p = NULL;
	pthread_t th;

	if (!ok(mkdtemp(dir) != NULL, "temporary directory for the FIFO"))
		return;
	snprintf(path, sizeof(path), "%s/policy.json", dir);
	if (ok(mkfifo(path, 0600) == 0, "FIFO made")) {
		for (int fd = 0; fd < 1024; fd++)
			fp.before[fd] = fcntl(fd, F_GETFD) >= 0;
		if (ok(pthread_create(&th, NULL, fifo_writer, &fp) == 0,
		       "writer thread started")) {
			int rc = policy_load_file(path, &p, &e);
			pthread_join(th, NULL);
			is_int(rc, 0, "policy read through a FIFO");
			ok(fp.seen > 0,
			   "the loader's descriptor was seen open");
			is_int(fp.inherited, 0,
			       "the loader's descriptor is close-on-exec");
			policy_free(p);
		}
		unlink(path);
	}
	rmdir(dir);
}

static void test_accessors(void)
{
	struct policy_error e;
	struct policy *p = NULL;
	struct ward_limits l;
	int rc;

	rc = policy_load_file("good-full.json", &p, &e);
	if (!ok(rc == 0, "good-full.json loads")) {
		printf("# %s\n", e.msg);
		return;
	}
	is_str(policy_name(p), "full", "name");
	ok(!policy_audit_mode(p), "mode enforce");
	ok(policy_trap_stat(p), "trap_stat true");
	is_int((long long)policy_syscall_rule_count(p), 5, "5 syscall rules");
	is_str(policy_syscall_rule_name(p, 0), "mknod", "syscall rule 0");
	is_str(policy_syscall_rule_name(p, 4), "openat", "syscall rule 4");
	ok(policy_syscall_rule_name(p, 5) == NULL, "syscall rule 5 is NULL");
	is_str(policy_interpreter(p, "python"), "/opt/py/bin/python3",
	       "python interpreter");
	is_str(policy_interpreter(p, "sh"), "/bin/dash", "sh interpreter");
	ok(policy_interpreter(p, "ruby") == NULL &&
		   policy_interpreter(p, NULL) == NULL,
	   "unknown language has no interpreter");
	policy_limits(p, &l);
	ok(l.wall_ms == 5000 && l.cpu_s == 4 && l.memory_bytes == 512LL << 20 &&
		   l.procs == 16 && l.fsize_bytes == 8LL << 20 &&
		   l.nofile == 64 && l.output_bytes == 65536 &&
		   l.events == 5000 && l.disk_bytes == 32LL << 20,
	   "limits converted to ms and bytes");
	policy_free(p);

	rc = policy_load_file("good-minimal.json", &p, &e);
	if (!ok(rc == 0, "good-minimal.json loads"))
		return;
	is_str(policy_name(p), "good-minimal", "name defaults to the file's");
	ok(!policy_audit_mode(p) && !policy_trap_stat(p) &&
		   policy_syscall_rule_count(p) == 0 &&
		   policy_interpreter(p, "python") == NULL,
	   "minimal policy defaults");
	policy_limits(p, &l);
	ok(!l.wall_ms && !l.cpu_s && !l.memory_bytes && !l.procs &&
		   !l.fsize_bytes && !l.nofile && !l.output_bytes &&
		   !l.events && !l.disk_bytes,
	   "unset limits are 0");
	/* nothing is allowed by a policy with no rules */
	ev_fs(R, "/usr/lib/x");
	DENIES(p, EACCES, "default", "minimal: read denied EACCES");
	ev_exec("/usr/bin/python3", true);
	DENIES(p, EACCES, "default", "minimal: exec denied");
	ev_socket(AF_UNIX);
	DENIES(p, EAFNOSUPPORT, "default", "minimal: no socket family");
	ev_signal(1, SIGKILL, false);
	DENIES(p, EPERM, "signals", "minimal: signals default to run");
	ev_signal(4243, SIGTERM, true);
	ALLOWS(p, "signals", "minimal: signal in the run allowed");
	policy_free(p);
}

/* ---- files ---- */

static void test_fs_precedence(void)
{
	struct policy *p = load(
		"{\"version\": 1, \"errno\": \"EPERM\", \"fs\": ["
		"{\"path\": \"/\", \"allow\": [\"stat\"]},"		 /* 0 */
		"{\"path\": \"/usr\", \"allow\": [\"read\", \"exec\"]}," /* 1 */
		"{\"path\": \"/usr/lib/secret\", \"deny\": [\"read\"]}," /* 2 */
		"{\"path\": \"/usr/lib/secret/ok\", \"allow\": [\"read\"]}," /* 3 */
		"{\"path\": \"/data\", \"allow\": [\"read\", \"write\"]}," /* 4 */
		"{\"path\": \"/data\", \"deny\": [\"write\"], \"errno\": \"EROFS\"}," /* 5 */
		"{\"id\": \"opt\", \"path\": \"/opt/\", \"allow\": [\"read\", \"create\", \"delete\"]}," /* 6 */
		"{\"path\": \"/usr/lib/secret\", \"allow\": [\"stat\"]}," /* 7 */
		"{\"path\": \"/etc/shadow\", \"deny\": [\"read\", \"stat\"], \"errno\": \"EACCES\"}" /* 8 */
		"]}");

	if (!ok(p != NULL, "precedence policy loads"))
		return;
	ev_fs(R, "/usr/lib/x.so");
	ALLOWS(p, "fs[1]", "read under /usr allowed by fs[1]");
	ev_fs(R, "/usr");
	ALLOWS(p, "fs[1]", "the rule's own path matches");
	ev_fs(R, "/usr/");
	ALLOWS(p, "fs[1]", "a trailing slash in the event matches");
	ev_fs(R, "/usrx/lib");
	DENIES(p, EPERM, "default", "/usr does not match /usrx");
	ok(strcmp(v.reason, "read of /usrx/lib: no fs rule allows read") == 0,
	   "reason: no fs rule allows read");
	ev_fs(R, "/usr/lib/secret/a");
	DENIES(p, EPERM, "fs[2]", "longer deny beats shorter allow");
	is_str(v.reason, "read of /usr/lib/secret/a: denied by fs[2]",
	       "reason names the denying rule");
	ev_fs(R, "/usr/lib/secret");
	DENIES(p, EPERM, "fs[2]", "deny rule matches its own path");
	ev_fs(R, "/usr/lib/secret/ok/b");
	ALLOWS(p, "fs[3]", "longer allow beats shorter deny");
	ev_fs(R, "/usr/lib/secretx");
	ALLOWS(p, "fs[1]", "deny of /usr/lib/secret does not hit secretx");
	ev_fs(S, "/usr/lib/secret/a");
	ALLOWS(p, "fs[7]", "a rule only decides the bits it names");
	ev_fs(S, "/home/u/x");
	ALLOWS(p, "fs[0]", "\"/\" matches everything");
	ev_fs(X, "/usr/bin/x");
	ALLOWS(p, "fs[1]", "exec bit under /usr");
	ev_fs(X, "/data/x");
	DENIES(p, EPERM, "default", "exec bit not granted by /data");

	ev_fs(W, "/data/f");
	DENIES(p, EROFS, "fs[5]", "equal length: deny wins, with its errno");
	ev_fs(R, "/data/f");
	ALLOWS(p, "fs[4]", "equal length: read is only allowed");
	ev_fs(R | W, "/usr/lib/x");
	DENIES(p, EPERM, "default", "read+write: write denied by default");
	is_str(v.reason, "write of /usr/lib/x: no fs rule allows write",
	       "reason names the denied bit");
	ev_fs(R | S, "/etc/shadow");
	DENIES(p, EACCES, "fs[8]", "first denied bit decides (read)");
	is_str(v.reason, "read of /etc/shadow: denied by fs[8]",
	       "reason: read of /etc/shadow denied");
	ev_fs(W | S, "/etc/shadow");
	DENIES(p, EPERM, "default", "write (first bit) has no rule");
	ev_fs(C | D, "/opt/a");
	ALLOWS(p, "opt", "rule id is used; trailing slash in the rule");
	is_str(v.reason, "create,delete of /opt/a: allowed by opt",
	       "allow reason names the bits and rule");
	ev_fs(R, "/opt");
	ALLOWS(p, "opt", "/opt/ rule matches /opt");

	ev_fs2(D, "/opt/a", C, "/opt/b");
	ALLOWS(p, "opt", "rename within /opt allowed");
	ev_fs2(D, "/opt/a", C, "/usr/b");
	DENIES(p, EPERM, "default", "rename into /usr: create denied");
	is_str(v.reason, "create of /usr/b: no fs rule allows create",
	       "reason names the second path");
	ev_fs2(D, "/usr/a", C, "/opt/b");
	DENIES(p, EPERM, "default", "rename out of /usr: delete denied");
	ev_fs2(D, "/opt/a", 0, "");
	ALLOWS(p, "opt", "has_path2 with no access2 checks only path");
	policy_free(p);
}

static void test_fs_root_deny(void)
{
	struct policy *p = load("{\"version\": 1, \"fs\": ["
				"{\"path\": \"/\", \"deny\": [\"write\"]},"
				"{\"path\": \"/w\", \"allow\": [\"write\"]},"
				"{\"path\": \"/\", \"allow\": [\"write\"]}]}");

	if (!ok(p != NULL, "root deny policy loads"))
		return;
	ev_fs(W, "/w/x");
	ALLOWS(p, "fs[1]", "/w allow is longer than / deny");
	ev_fs(W, "/x");
	DENIES(p, EACCES, "fs[0]", "equal-length / rules: deny wins");
	ev_fs(W, "/");
	DENIES(p, EACCES, "fs[0]", "\"/\" itself");
	policy_free(p);
}

static void test_workdir(void)
{
	struct policy *p = load(
		"{\"version\": 1, \"fs\": ["
		"{\"path\": \"$WORKDIR\", \"allow\": [\"read\", \"write\", \"create\"]},"
		"{\"id\": \"wd-secret\", \"path\": \"$WORKDIR/secret/\", \"deny\": [\"read\"], \"errno\": \"ENOENT\"},"
		"{\"path\": \"/tmp\", \"allow\": [\"stat\"]}]}");

	if (!ok(p != NULL, "workdir policy loads"))
		return;
	ev_fs(R, "/tmp/wd/a");
	DENIES(p, EACCES, "default", "$WORKDIR rules never match unbound");
	ev_fs(R, "$WORKDIR/a");
	verdict_is(p, -EINVAL, POLICY_DENY, EPERM, "invalid-event",
		   "the literal $WORKDIR is no path: invalid event");
	is_int(policy_set_workdir(p, "tmp/wd"), -EINVAL,
	       "relative workdir is -EINVAL");
	is_int(policy_set_workdir(p, NULL), -EINVAL, "NULL workdir is -EINVAL");
	is_int(policy_set_workdir(p, "/tmp/wd/"), 0, "set_workdir");
	ev_fs(R | W | C, "/tmp/wd/out.png");
	ALLOWS(p, "fs[0]", "workdir file allowed after binding");
	ev_fs(W, "/tmp/wd");
	ALLOWS(p, "fs[0]", "the workdir itself");
	ev_fs(W, "/tmp/wdx/a");
	DENIES(p, EACCES, "default", "workdir matches at component boundary");
	ev_fs(R, "/tmp/wd/secret/k");
	DENIES(p, ENOENT, "wd-secret", "$WORKDIR/secret deny binds too");
	ev_fs(W, "/tmp/wd/secret/k");
	ALLOWS(p, "fs[0]", "write under $WORKDIR/secret still allowed");
	ev_fs(S, "/tmp/wd/a");
	ALLOWS(p, "fs[2]", "stat comes from the /tmp rule");
	is_int(policy_set_workdir(p, "/srv/run2"), 0, "rebind workdir");
	ev_fs(W, "/tmp/wd/a");
	DENIES(p, EACCES, "default", "old workdir no longer matches");
	ev_fs(W, "/srv/run2/a");
	ALLOWS(p, "fs[0]", "new workdir matches");
	is_int(policy_set_workdir(p, "/"), 0, "workdir \"/\"");
	ev_fs(W, "/anything");
	ALLOWS(p, "fs[0]", "workdir / holds everything");
	ev_fs(R, "/secret/x");
	DENIES(p, ENOENT, "wd-secret", "$WORKDIR/secret under / is /secret");
	policy_free(p);
}

static void test_proc_self(void)
{
	struct policy *p = load(
		"{\"version\": 1, \"fs\": ["
		"{\"path\": \"/proc/self\", \"allow\": [\"read\"]},"
		"{\"path\": \"/proc/self/environ\", \"deny\": [\"read\", \"write\"]},"
		"{\"path\": \"/proc/thread-self/comm\", \"allow\": [\"write\"]},"
		"{\"path\": \"/proc/cpuinfo\", \"allow\": [\"read\"]}]}");

	if (!ok(p != NULL, "proc policy loads"))
		return;
	ev_fs(R, "/proc/4242/status");
	ALLOWS(p, "fs[0]", "/proc/PID/status is /proc/self/status");
	ev_fs(R, "/proc/4242");
	ALLOWS(p, "fs[0]", "/proc/PID is /proc/self");
	ev_fs(R, "/proc/self/maps");
	ALLOWS(p, "fs[0]", "a literal /proc/self path matches");
	ev_fs(R, "/proc/4242/environ");
	DENIES(p, EACCES, "fs[1]",
	       "/proc/PID/environ denied via /proc/self/environ");
	ev_fs(R, "/proc/4242/mem");
	DENIES(p, EACCES, "proc.mem",
	       "/proc/PID/mem: the floor, though /proc/self is allowed");
	ev_fs(R, "/proc/self/task/4242/mem");
	DENIES(p, EACCES, "proc.mem", "/proc/self/task/TID/mem: the floor");
	ev_fs(R, "/proc/4242/memory");
	ALLOWS(p, "fs[0]", "/proc/PID/memory is not a mem file");
	ev_fs(R, "/proc/4243/status");
	DENIES(p, EACCES, "default", "another process's /proc denied");
	ev_fs(R, "/proc/42420/status");
	DENIES(p, EACCES, "default", "pid prefix is not the pid");
	ev_fs(R, "/proc/424/status");
	DENIES(p, EACCES, "default", "pid that is a prefix of ours");
	ev_fs(R, "/proc/cpuinfo");
	ALLOWS(p, "fs[3]", "/proc/cpuinfo");
	ev_fs(W, "/proc/4242/task/4242/comm");
	ALLOWS(p, "fs[2]", "/proc/PID/task/TID is /proc/thread-self");
	ev_fs(W, "/proc/4242/task/4250/comm");
	DENIES(p, EACCES, "default", "another thread's task dir");
	ev.tid = 4250;
	ALLOWS(p, "fs[2]", "the event's own tid");
	ev_fs(W, "/proc/4250/comm");
	ev.tid = 4250;
	ALLOWS(p, "fs[2]", "/proc/TID of a non-leader is /proc/thread-self");
	ev_fs(R, "/proc/4242/task/4242/status");
	ALLOWS(p, "fs[0]", "task dir also matches /proc/self rules");
	policy_free(p);
}

/* ---- programs ---- */

static void test_exec(void)
{
	struct policy *p = load(
		"{\"version\": 1, \"exec\": {\"allow\": [\"/usr/bin/python3*\","
		" \"/usr/bin/uname\", \"/opt/*/bin/tool\"], \"errno\": \"EPERM\"}}");

	if (!ok(p != NULL, "exec policy loads"))
		return;
	ev_exec("/usr/bin/python3.11", true);
	ALLOWS(p, "exec.allow[0]", "python3.11 matches python3*");
	ev_exec("/usr/bin/uname", true);
	ALLOWS(p, "exec.allow[1]", "uname allowed");
	ev_exec("/usr/bin/python3/../../bin/sh", true);
	DENIES(p, EPERM, "default", "* does not cross '/' (FNM_PATHNAME)");
	ev_exec("/opt/a/bin/tool", true);
	ALLOWS(p, "exec.allow[2]", "* within one component");
	ev_exec("/opt/a/b/bin/tool", true);
	DENIES(p, EPERM, "default", "* does not match two components");
	ev_exec("/bin/sh", true);
	DENIES(p, EPERM, "default", "sh denied with exec errno");
	is_str(v.reason, "exec of /bin/sh: not in exec.allow", "exec reason");
	ev_exec("/usr/local/bin/true", false);
	ALLOWS(p, "exec.missing", "missing program: allowed (kernel ENOENT)");
	policy_free(p);
}

/* ---- "ask" rules ---- */

static void test_ask(void)
{
	struct policy *p = load(
		"{\"version\": 1, \"ask_timeout\": 5, \"fs\": ["
		" {\"path\": \"/data\", \"allow\": [\"read\", \"stat\"]},"
		" {\"id\": \"ask-data\", \"path\": \"/data/private\","
		"  \"ask\": [\"read\", \"write\"], \"errno\": \"EPERM\"},"
		" {\"path\": \"/data/private/ok\", \"allow\": [\"read\"]},"
		" {\"path\": \"/data/private/no\", \"deny\": [\"read\"]},"
		" {\"path\": \"/data/private/no\", \"ask\": [\"read\"]},"
		" {\"path\": \"/tie\", \"allow\": [\"read\"]},"
		" {\"id\": \"ask-tie\", \"path\": \"/tie\", \"ask\": [\"read\"]}],"
		" \"exec\": {\"allow\": [\"/usr/bin/python3*\"],"
		"  \"ask\": [\"/usr/bin/*\"]},"
		" \"net\": {\"socket\": [\"inet\"], \"rules\": ["
		"  {\"id\": \"ask-api\", \"family\": \"inet\","
		"   \"addr\": \"10.0.0.0/8\", \"port\": 443, \"action\": \"ask\"}]}}");
	struct policy *q = load("{\"version\": 1}");

	if (!ok(p && q, "ask policies load"))
		goto out;
	is_int((int)policy_ask_timeout_ms(p), 5000, "ask_timeout in ms");
	is_int((int)policy_ask_timeout_ms(q), 30000, "ask_timeout default 30 s");
	ok(policy_asks(p) && !policy_asks(q), "policy_asks");
	ev_fs(R, "/data/private/a");
	ASKS(p, EPERM, "ask-data", "read under an ask rule asks");
	is_str(v.reason, "read of /data/private/a: ask by ask-data",
	       "the question names the access, path and rule");
	ev_fs(R | W, "/data/private/a");
	ASKS(p, EPERM, "ask-data", "read+write: asked once for both");
	ev_fs(S, "/data/private/a");
	ALLOWS(p, "fs[0]", "stat: the ask rule does not name it");
	ev_fs(C, "/data/private/a");
	DENIES(p, EACCES, "default", "create: nothing allows or asks");
	ev_fs(R, "/data/private/ok/x");
	ALLOWS(p, "fs[2]", "a longer allow wins over the ask");
	ev_fs(R, "/data/private/no/x");
	DENIES(p, EACCES, "fs[3]", "deny wins a tie with ask");
	ev_fs(R, "/tie/x");
	ASKS(p, EACCES, "ask-tie", "ask wins a tie with allow");
	ev_fs2(D, "/data/x", C, "/data/private/y");
	DENIES(p, EACCES, "default", "a rename: the denied part decides");
	ev_fs2(R, "/data/x", W, "/data/private/y");
	ASKS(p, EPERM, "ask-data", "two paths: the asked one asks");
	ev_exec("/usr/bin/python3.11", true);
	ALLOWS(p, "exec.allow[0]", "exec allow comes before ask");
	ev_exec("/usr/bin/curl", true);
	ASKS(p, EACCES, "exec.ask[0]", "exec.ask glob asks");
	is_str(v.reason, "exec of /usr/bin/curl: ask by exec.ask[0]",
	       "exec question");
	ev_exec("/bin/sh", true);
	DENIES(p, EACCES, "default", "exec outside both: denied");
	ev_inet(WARD_NET_CONNECT, AF_INET, "10.1.2.3", 443);
	ASKS(p, ECONNREFUSED, "ask-api", "net action ask");
	ev_inet(WARD_NET_CONNECT, AF_INET, "10.1.2.3", 80);
	DENIES(p, ECONNREFUSED, "default", "net: another port is denied");
out:
	policy_free(p);
	policy_free(q);
	/* audit mode: never asks, allows with would_deny */
	p = load("{\"version\": 1, \"mode\": \"audit\", \"fs\": ["
		 "{\"path\": \"/x\", \"ask\": [\"read\"]}]}");
	if (ok(p != NULL, "audit ask policy loads")) {
		ev_fs(R, "/x/y");
		ALLOWS(p, "fs[0]", "audit mode: an ask is allowed");
		ok(v.would_deny && !policy_asks(p),
		   "  with would_deny, and nobody is asked");
	}
	policy_free(p);
}

/* ---- network ---- */

static void test_net(void)
{
	struct policy_error e;
	struct policy *p = NULL;

	if (!ok(policy_load_file("good-full.json", &p, &e) == 0,
		"good-full.json loads for net"))
		return;
	is_int(policy_set_workdir(p, "/w"), 0, "bind workdir");
	ev_socket(AF_INET);
	ALLOWS(p, "net.socket", "socket inet allowed");
	ev_socket(AF_NETLINK);
	ALLOWS(p, "net.socket", "socket netlink allowed");
	ev_socket(AF_BLUETOOTH);
	DENIES(p, EAFNOSUPPORT, "default", "bluetooth not listed");
	is_str(v.reason, "socket(bluetooth): family not in net.socket",
	       "socket reason");
	ev_socket(200);
	DENIES(p, EAFNOSUPPORT, "default", "out-of-range family denied");

	ev_inet(WARD_NET_CONNECT, AF_INET, "127.0.0.53", 53);
	DENIES(p, ENETUNREACH, "no-dns", "first rule: deny with its errno");
	is_str(v.reason, "connect to 127.0.0.53:53: denied by no-dns",
	       "net deny reason");
	ev_inet(WARD_NET_CONNECT, AF_INET, "127.0.0.53", 8080);
	ALLOWS(p, "local-8080", "port differs: next rule allows");
	ev_inet(WARD_NET_SEND, AF_INET, "127.1.2.3", 8080);
	ALLOWS(p, "local-8080", "send inside 127/8");
	ev_inet(WARD_NET_CONNECT, AF_INET, "128.0.0.1", 8080);
	DENIES(p, ENETUNREACH, "default", "outside the CIDR: net.errno");
	is_str(v.reason, "connect to 128.0.0.1:8080: no net rule allows it",
	       "net default reason");
	ev_inet(WARD_NET_CONNECT, AF_INET, "10.200.3.4", 1);
	ALLOWS(p, "net.rules[8]", "any port when the rule has none");
	ev_inet(WARD_NET_CONNECT, AF_INET6, "10.1.1.1", 443);
	ev.sa.v4mapped = true;
	ALLOWS(p, "net.rules[8]", "v4-mapped v6 matches an inet rule");
	ev_inet(WARD_NET_CONNECT, AF_INET6, "::1", 8500);
	ALLOWS(p, "net.rules[2]", "inet6 port range");
	ev_inet(WARD_NET_CONNECT, AF_INET6, "::1", 9000);
	DENIES(p, ENETUNREACH, "default", "inet6 outside port range");
	ev_inet(WARD_NET_CONNECT, AF_INET6, "::2", 8000);
	DENIES(p, ENETUNREACH, "default", "inet6 outside /128");
	ev_inet(WARD_NET_CONNECT, AF_INET, "127.0.0.1", 8000);
	DENIES(p, ENETUNREACH, "default", "inet address vs inet6 rule");

	ev_inet(WARD_NET_BIND, AF_INET, "127.0.0.1", 0);
	ALLOWS(p, "net.rules[3]", "bind 127.0.0.1:0");
	ev_inet(WARD_NET_BIND, AF_INET, "127.0.0.1", 8080);
	DENIES(p, EACCES, "default", "bind denial is EACCES");
	ev_inet(WARD_NET_BIND, AF_INET, "0.0.0.0", 0);
	DENIES(p, EACCES, "default", "bind to any address denied");
	ev_listen(AF_INET);
	ALLOWS(p, "net.rules[4]", "listen on inet: address-free rule");
	ev_listen(AF_INET6);
	DENIES(p, EACCES, "default", "listen on inet6: no rule");
	ev_listen(0);
	DENIES(p, EACCES, "default", "listen with unknown family");

	ev_unix(WARD_NET_CONNECT, "/run/x.sock", false);
	ALLOWS(p, "net.rules[5]", "unix path");
	ev_unix(WARD_NET_CONNECT, "/run/x.sock/y", false);
	ALLOWS(p, "net.rules[5]", "unix path prefix at a boundary");
	ev_unix(WARD_NET_CONNECT, "/run/x.socket", false);
	DENIES(p, ENETUNREACH, "default", "unix path is not a string prefix");
	is_str(v.reason, "connect to unix:/run/x.socket: no net rule allows it",
	       "unix reason");
	ev_unix(WARD_NET_CONNECT, "run/x.sock", false);
	DENIES(p, ENETUNREACH, "default", "relative unix path never matches");
	ev_unix(WARD_NET_BIND, "/w/sock", false);
	ALLOWS(p, "net.rules[6]", "$WORKDIR unix path, bind");
	ev_unix(WARD_NET_SEND, "/w/sock", false);
	DENIES(p, ENETUNREACH, "default", "op not in the rule's ops");
	ev_unix(WARD_NET_CONNECT, "/run/missing.sock", false);
	ev.exists = false;
	ALLOWS(p, "net.unix-missing", "connect to a missing unix path");
	is_str(v.reason,
	       "connect to unix:/run/missing.sock: no such socket (answered ENOENT)",
	       "missing unix path reason");
	ev_unix(WARD_NET_BIND, "/run/missing.sock", false);
	ev.exists = false;
	DENIES(p, EACCES, "default", "bind to a missing path is not a lookup");
	ev_unix(WARD_NET_CONNECT, "name-prefix-1", true);
	ALLOWS(p, "net.rules[7]", "abstract by prefix");
	ev_unix(WARD_NET_CONNECT, "name", true);
	DENIES(p, ENETUNREACH, "default", "abstract shorter than prefix");
	is_str(v.reason, "connect to unix:@name: no net rule allows it",
	       "abstract reason");
	ev_unix(WARD_NET_CONNECT, "/run/x.sock", true);
	DENIES(p, ENETUNREACH, "default", "abstract does not match a path");

	ev_inet(WARD_NET_SEND, AF_INET, "", -1);
	ev.sa.present = false;
	ALLOWS(p, "net.connected", "send without address: connected socket");
	ev_inet(WARD_NET_CONNECT, AF_INET, "", -1);
	ev.sa.present = false;
	DENIES(p, ENETUNREACH, "default", "connect without an address");
	ev_inet(WARD_NET_CONNECT, AF_NETLINK, "", -1);
	DENIES(p, ENETUNREACH, "default", "connect in another family");
	ev_inet(WARD_NET_CONNECT, AF_INET, "not-an-ip", 80);
	verdict_is(p, -EINVAL, POLICY_DENY, EPERM, "invalid-event",
		   "unparsable address is an invalid event");
	policy_free(p);

	p = load(
		"{\"version\": 1, \"net\": {\"rules\": ["
		"{\"family\": \"unix\", \"abstract\": \"\"},"
		"{\"family\": \"inet\", \"ops\": [\"listen\", \"bind\"]},"
		"{\"family\": \"inet\", \"addr\": \"192.168.0.0/23\"},"
		"{\"family\": \"inet6\", \"addr\": \"fe80::/10\", \"action\": \"deny\"},"
		"{\"family\": \"inet6\"}]}}");
	if (!ok(p != NULL, "second net policy loads"))
		return;
	ev_unix(WARD_NET_CONNECT, "anything", true);
	ALLOWS(p, "net.rules[0]", "abstract \"\" allows any abstract name");
	ev_unix(WARD_NET_CONNECT, "/x", false);
	DENIES(p, ECONNREFUSED, "default", "default net errno ECONNREFUSED");
	ev_inet(WARD_NET_CONNECT, AF_INET, "10.0.0.1", 80);
	DENIES(p, ECONNREFUSED, "default", "default ops: not listen/bind");
	ev_inet(WARD_NET_BIND, AF_INET, "0.0.0.0", 80);
	ALLOWS(p, "net.rules[1]", "family-only rule with bind");
	ev_listen(AF_INET);
	ALLOWS(p, "net.rules[1]", "family-only rule with listen");
	ev_inet(WARD_NET_CONNECT, AF_INET, "192.168.1.255", 80);
	ALLOWS(p, "net.rules[2]", "/23 includes 192.168.1.255");
	ev_inet(WARD_NET_CONNECT, AF_INET, "192.168.2.0", 80);
	DENIES(p, ECONNREFUSED, "default", "/23 excludes 192.168.2.0");
	ev_inet(WARD_NET_CONNECT, AF_INET6, "fe80::1", 80);
	DENIES(p, ECONNREFUSED, "net.rules[3]", "deny rule, connect errno");
	ev_inet(WARD_NET_BIND, AF_INET6, "fe80::1", 80);
	DENIES(p, EACCES, "default", "deny rule has default ops only");
	ev_inet(WARD_NET_CONNECT, AF_INET6, "fec0::1", 80);
	ALLOWS(p, "net.rules[4]", "fec0:: is outside fe80::/10");
	policy_free(p);
}

/* ---- processes, signals, raw syscalls ---- */

static void test_proc_signals_other(void)
{
	struct policy_error e;
	struct policy *p = NULL;
	static const unsigned long kill_flags[] = {
		CLONE_NEWNS,  CLONE_NEWCGROUP, CLONE_NEWUTS,
		CLONE_NEWIPC, CLONE_NEWUSER,   CLONE_NEWPID,
		CLONE_NEWNET, CLONE_NEWTIME,   CLONE_UNTRACED,
	};
	int killed = 0;

	if (!ok(policy_load_file("good-full.json", &p, &e) == 0,
		"good-full.json loads for proc"))
		return;
	ev_clone(CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND |
		 CLONE_THREAD | CLONE_SYSVSEM | CLONE_SETTLS |
		 CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID);
	ALLOWS(p, "proc", "thread clone allowed");
	ev_clone(SIGCHLD);
	ALLOWS(p, "proc", "fork allowed");
	for (size_t i = 0; i < sizeof(kill_flags) / sizeof(kill_flags[0]);
	     i++) {
		ev_clone(SIGCHLD | kill_flags[i]);
		policy_check(p, &ev, &v);
		killed += v.action == POLICY_KILL &&
			  strcmp(v.rule, "clone.flags") == 0;
	}
	is_int(killed, 9, "each CLONE_NEW* and CLONE_UNTRACED kills");

	ev_signal(1, SIGKILL, false);
	ALLOWS(p, "signals", "signals \"any\" allows outside the run");

	ev_base(WARD_CLASS_OTHER, "getuid");
	ALLOWS(p, "uid", "log rule allows an unclassed syscall");
	ok(v.log, "log rule sets verdict.log");
	ev_base(WARD_CLASS_OTHER, "mknod");
	DENIES(p, EPERM, "syscalls[0]", "deny rule with errno");
	ok(!v.log, "no log flag on a deny rule");
	ev_base(WARD_CLASS_OTHER, "reboot");
	KILLS(p, "syscalls[2]", "kill rule");
	ev_base(WARD_CLASS_OTHER, "sync");
	ALLOWS(p, "syscalls[3]", "allow rule");
	ev_base(WARD_CLASS_OTHER, "chroot");
	DENIES(p, ENOSYS, "default", "unclassed syscall without a rule");
	is_str(v.reason, "chroot: not allowed by any rule", "ENOSYS reason");
	ev_base(WARD_CLASS_OTHER, NULL);
	DENIES(p, ENOSYS, "default", "NULL syscall name");

	/* "openat": "log" observes; the fs rules still decide */
	ev_fs(R, "/etc/passwd");
	DENIES(p, EPERM, "default", "log on openat: fs rules still deny");
	ok(v.log, "...and the event is marked for logging");
	ev_fs(R, "/usr/lib/x");
	ALLOWS(p, "usr", "log on openat: fs rules allow");
	ok(v.log, "...marked for logging");
	ev_fs(R, "/usr/lib/x");
	ev.name = "open";
	policy_check(p, &ev, &v);
	ok(!v.log, "another syscall name is not logged");
	policy_free(p);

	p = load(
		"{\"version\": 1, \"syscalls\": ["
		"{\"name\": \"openat\", \"action\": \"deny\", \"errno\": \"ENOENT\"},"
		"{\"name\": \"clone\", \"action\": \"allow\"},"
		"{\"name\": \"kill\", \"action\": \"allow\"}]}");
	if (!ok(p != NULL, "syscall override policy loads"))
		return;
	ev_fs(R, "/usr/lib/x");
	DENIES(p, ENOENT, "syscalls[0]", "syscall rule runs before fs rules");
	ev_clone(SIGCHLD | CLONE_NEWUSER);
	KILLS(p, "clone.flags", "clone floor runs before syscall rules");
	ev_clone(SIGCHLD);
	ALLOWS(p, "syscalls[1]", "clone allowed by the syscall rule");
	ev_signal(1, SIGKILL, false);
	ALLOWS(p, "syscalls[2]", "kill allowed by the syscall rule");
	policy_free(p);
}

/* The argument floor: prctl options, personality, terminal ioctls. It
 * runs before raw syscall rules and stays in audit mode. */
static void ev_other(const char *name, unsigned long long a0,
		     unsigned long long a1)
{
	ev_base(WARD_CLASS_OTHER, name);
	ev.raw_args[0] = a0;
	ev.raw_args[1] = a1;
}

static void test_arg_floor(void)
{
	const unsigned long long hi = 0xdead000000000000ULL;
	const char *profiles[] = { "default", "audit" };
	struct policy *p =
		load("{\"version\": 1, \"syscalls\": ["
		     "{\"name\": \"prctl\", \"action\": \"allow\"},"
		     "{\"name\": \"personality\", \"action\": \"allow\"},"
		     "{\"name\": \"ioctl\", \"action\": \"allow\"}]}");

	if (!ok(p != NULL, "policy allowing prctl, personality, ioctl loads"))
		return;
	ev_other("prctl", 0x59616d61 /* PR_SET_PTRACER */, 0);
	DENIES(p, EPERM, "floor.args", "PR_SET_PTRACER: floor beats the rule");
	is_str(v.reason,
	       "prctl 0x59616d61: option not on ward's prctl allowlist "
	       "(ward's floor)",
	       "floor reason names the option");
	ev_other("prctl", hi | 4 /* PR_SET_DUMPABLE */, 0);
	DENIES(p, EPERM, "floor.args", "PR_SET_DUMPABLE with high junk");
	ev_other("prctl", hi | 15 /* PR_SET_NAME */, 0);
	ALLOWS(p, "syscalls[0]", "PR_SET_NAME (low 32 bits) passes the floor");
	ev_other("personality", 0x0040000, 0);
	DENIES(p, EPERM, "floor.args", "personality ADDR_NO_RANDOMIZE");
	ev_other("personality", hi, 0);
	ALLOWS(p, "syscalls[1]", "PER_LINUX with high junk passes");
	ev_other("ioctl", 0, hi | 0x5412 /* TIOCSTI */);
	DENIES(p, EPERM, "floor.args", "TIOCSTI with high junk");
	ev_other("ioctl", 0, 0x541C /* TIOCLINUX */);
	DENIES(p, EPERM, "floor.args", "TIOCLINUX");
	ev_other("ioctl", 0, 0x5401 /* TCGETS */);
	ALLOWS(p, "syscalls[2]", "TCGETS passes");
	ev_other("sync", 0x59616d61, 0);
	DENIES(p, ENOSYS, "default", "other syscalls: not prctl's floor");
	policy_free(p);

	for (size_t i = 0; i < 2; i++) {
		char what[64];
		p = load_profile(profiles[i]);
		if (!p)
			return;
		snprintf(what, sizeof(what), "%s profile: PR_SET_PTRACER",
			 profiles[i]);
		ev_other("prctl", 0x59616d61, 0);
		DENIES(p, EPERM, "floor.args", what);
		ok(!v.would_deny, "%s profile: a floor denial, not would_deny",
		   profiles[i]);
		policy_free(p);
	}
}

/* The mknod floor: a device node is denied EPERM whatever the fs rules
 * say of the name, in every profile (audit included); FIFOs, sockets and
 * regular files stay with the fs rules. */
static void ev_mknod(const char *name, unsigned mode)
{
	ev_fs(C, "/w/node");
	ev.name = name;
	ev.exists = false;
	ev.mknod_mode = mode;
}

static void test_mknod_floor(void)
{
	const char *profiles[] = { "default", "audit" };
	struct policy *p =
		load("{\"version\": 1, \"fs\": ["
		     "{\"path\": \"/w\", \"allow\": [\"create\"]}],"
		     "\"syscalls\": ["
		     "{\"name\": \"mknodat\", \"action\": \"allow\"}]}");

	if (!ok(p != NULL, "policy allowing create in /w loads"))
		return;
	ev_mknod("mknod", S_IFCHR | 0600);
	DENIES(p, EPERM, "floor.mknod", "char device: floor beats fs rule");
	is_str(v.reason,
	       "mknod of a character device node (mode 020600) is in "
	       "ward's floor",
	       "floor reason names the node and its mode");
	ev_mknod("mknodat", S_IFBLK | 0600);
	DENIES(p, EPERM, "floor.mknod", "block device: floor beats allow rule");
	ev_mknod("mknodat", S_IFCHR);
	DENIES(p, EPERM, "floor.mknod", "whiteout (char, mode 0) denied");
	ev_mknod("mknod", S_IFIFO | 0600);
	ALLOWS(p, "fs[0]", "FIFO: the fs rules decide");
	ev_mknod("mknod", S_IFSOCK | 0600);
	ALLOWS(p, "fs[0]", "socket: the fs rules decide");
	ev_mknod("mknod", 0600);
	ALLOWS(p, "fs[0]", "no type (a regular file): the fs rules decide");
	ev_mknod("mknod", S_IFIFO | 0600);
	snprintf(ev.path, sizeof(ev.path), "/etc/node");
	DENIES(p, EACCES, "default", "FIFO outside the rules: denied by them");
	policy_free(p);

	for (size_t i = 0; i < 2; i++) {
		char what[64];
		p = load_profile(profiles[i]);
		if (!p)
			return;
		ok(policy_set_workdir(p, "/w") == 0, "%s: bind /w",
		   profiles[i]);
		snprintf(what, sizeof(what), "%s profile: device in workdir",
			 profiles[i]);
		ev_mknod("mknodat", S_IFCHR | 0600);
		DENIES(p, EPERM, "floor.mknod", what);
		ok(!v.would_deny, "%s profile: a floor denial, not would_deny",
		   profiles[i]);
		ev_mknod("mknodat", S_IFIFO | 0600);
		policy_check(p, &ev, &v);
		ok(v.action == POLICY_ALLOW && strcmp(v.rule, "floor.mknod"),
		   "%s profile: FIFO in the workdir allowed", profiles[i]);
		policy_free(p);
	}
}

static void test_audit_backtrace(void)
{
	struct policy_error e;
	struct policy *p = NULL;

	if (!ok(policy_load_file("good-audit.json", &p, &e) == 0,
		"good-audit.json loads"))
		return;
	ok(policy_audit_mode(p), "audit mode");
	ev_fs(W, "/etc/x");
	ALLOWS(p, "default", "audit: denial becomes allow");
	ok(v.would_deny && v.err == 0, "audit: would_deny set, err 0");
	is_str(v.reason, "write of /etc/x: no fs rule allows write",
	       "audit: reason kept");
	ok(!v.backtrace, "backtrace [] takes none");
	ev_fs(R, "/usr/x");
	ALLOWS(p, "fs[0]", "audit: allow stays allow");
	ok(!v.would_deny, "audit: no would_deny on an allow");
	ev_base(WARD_CLASS_OTHER, "getuid");
	ALLOWS(p, "syscalls[0]", "audit: syscall kill becomes allow");
	ok(v.would_deny, "audit: would-be kill flagged");
	ev_clone(CLONE_NEWNET);
	KILLS(p, "clone.flags", "audit: clone floor still kills");
	ok(!v.would_deny, "clone kill is not a would_deny");
	ev_base(WARD_CLASS_NONE, "x");
	verdict_is(p, -EINVAL, POLICY_DENY, EPERM, "invalid-event",
		   "audit: invalid event stays denied");
	policy_free(p);

	p = load_profile("default");
	if (!p)
		return;
	ev_fs(R, "/etc/shadow");
	policy_check(p, &ev, &v);
	ok(v.backtrace, "default backtrace: deny takes one");
	ev_fs(R, "/usr/lib/x");
	policy_check(p, &ev, &v);
	ok(!v.backtrace, "default backtrace: allow takes none");
	ev_clone(CLONE_NEWPID);
	policy_check(p, &ev, &v);
	ok(v.backtrace, "default backtrace: kill takes one");
	policy_free(p);

	if (!ok(policy_load_file("good-full.json", &p, &e) == 0,
		"good-full.json loads for backtrace"))
		return;
	ev_fs(R, "/usr/lib/x");
	policy_check(p, &ev, &v);
	ok(v.backtrace, "[allow, kill]: allow takes one");
	ev_fs(W, "/usr/lib/x");
	policy_check(p, &ev, &v);
	ok(!v.backtrace, "[allow, kill]: deny takes none");
	policy_free(p);
}

static void test_invalid(void)
{
	struct policy *p = load_profile("default");

	if (!p)
		return;
	ev_base(WARD_CLASS_NONE, "openat");
	verdict_is(p, -EINVAL, POLICY_DENY, EPERM, "invalid-event",
		   "class NONE is invalid");
	ev_base((enum ward_class)99, "openat");
	verdict_is(p, -EINVAL, POLICY_DENY, EPERM, "invalid-event",
		   "unknown class is invalid");
	ev_fs(R, "");
	verdict_is(p, -EINVAL, POLICY_DENY, EPERM, "invalid-event",
		   "fs with empty path is invalid");
	ev_fs(R, "usr/lib");
	verdict_is(p, -EINVAL, POLICY_DENY, EPERM, "invalid-event",
		   "fs with relative path is invalid");
	ev_fs(R, "pipe/x");
	verdict_is(p, -EINVAL, POLICY_DENY, EPERM, "invalid-event",
		   "relative path that looks like an fd name is invalid");
	ev_fs(S, "pipe:[4242]");
	verdict_is(p, 0, POLICY_ALLOW, 0, "fd.anonymous",
		   "fstat of a pipe (AT_EMPTY_PATH) names no file: allowed");
	ev_fs(S, "anon_inode:[eventfd]");
	verdict_is(p, 0, POLICY_ALLOW, 0, "fd.anonymous",
		   "fstat of an eventfd: allowed");
	ev_fs(0, "/usr/lib");
	verdict_is(p, -EINVAL, POLICY_DENY, EPERM, "invalid-event",
		   "fs without access bits is invalid");
	ev_fs(1u << 9, "/usr/lib");
	verdict_is(p, -EINVAL, POLICY_DENY, EPERM, "invalid-event",
		   "fs with unknown access bits is invalid");
	ev_fs2(D, "/usr/a", C, "b");
	verdict_is(p, -EINVAL, POLICY_DENY, EPERM, "invalid-event",
		   "relative second path is invalid");
	ev_fs(R, "/usr/lib");
	memset(ev.path, 'a', sizeof(ev.path));
	ev.path[0] = '/';
	verdict_is(p, -EINVAL, POLICY_DENY, EPERM, "invalid-event",
		   "unterminated path is invalid");
	ev_exec("", true);
	verdict_is(p, -EINVAL, POLICY_DENY, EPERM, "invalid-event",
		   "exec with empty path is invalid");
	ev_base(WARD_CLASS_NET, "socket");
	verdict_is(p, -EINVAL, POLICY_DENY, EPERM, "invalid-event",
		   "net without op is invalid");
	is_str(v.reason, "invalid event: net event without an operation",
	       "invalid reason");
	memset(&v, 0, sizeof(v));
	is_int(policy_check(p, NULL, &v), -EINVAL, "NULL event is -EINVAL");
	ok(v.action == POLICY_DENY && strcmp(v.rule, "invalid-event") == 0,
	   "NULL event is denied");
	ev_fs(R, "/usr/lib");
	is_int(policy_check(NULL, &ev, &v), -EINVAL, "NULL policy is -EINVAL");
	ok(v.action == POLICY_DENY, "NULL policy denies");
	is_int(policy_check(p, &ev, NULL), -EINVAL, "NULL verdict is -EINVAL");
	policy_free(p);
}

/* ---- the shipped profiles ---- */

static void test_profile_default(void)
{
	struct policy *p = load_profile("default");

	if (!ok(p != NULL, "default profile loads"))
		return;
	is_int(policy_set_workdir(p, "/tmp/ward-run-1"), 0, "bind workdir");
	is_str(policy_interpreter(p, "python"), "/usr/bin/python3",
	       "default: python interpreter");
	is_str(policy_interpreter(p, "node"), "/usr/bin/node",
	       "default: node interpreter");
	is_str(policy_interpreter(p, "sh"), "/bin/sh", "default: sh");
	ok(!policy_audit_mode(p) && !policy_trap_stat(p),
	   "default: enforcing, stat not trapped");

	ev_fs(R, "/usr/lib/python3/dist-packages/x.py");
	ALLOWS(p, "usr", "default: read dist-packages");
	ev_fs(R | X, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	ALLOWS(p, "usr", "default: map a library");
	ev_fs(R, "/lib/x86_64-linux-gnu/libm.so.6");
	ALLOWS(p, "lib", "default: /lib symlink root readable");
	ev_fs(R, "/etc/shadow");
	DENIES(p, EACCES, "secret-shadow", "default: /etc/shadow EACCES");
	ev_fs(R, "/etc/sudoers.d/x");
	DENIES(p, EACCES, "secret-sudoers-d", "default: sudoers.d");
	ev_fs(R, "/root/.ssh/id_rsa");
	DENIES(p, EACCES, "secret-root", "default: /root");
	ev_fs(R, "/home/u/.ssh/id_ed25519");
	DENIES(p, EACCES, "secret-home", "default: /home");
	ev_fs(R, "/etc/ssh/ssh_host_ed25519_key");
	DENIES(p, EACCES, "secret-ssh", "default: ssh host keys");
	ev_fs(R, "/etc/hostname");
	DENIES(p, EACCES, "default", "default: /etc is not open wholesale");
	ev_fs(R, "/etc/ld.so.cache");
	ALLOWS(p, "etc-ld", "default: ld.so.cache");
	ev_fs(R, "/etc/localtime");
	ALLOWS(p, "etc-localtime", "default: localtime");
	ev_fs(R, "/etc/ssl/openssl.cnf");
	ALLOWS(p, "etc-ssl-cnf", "default: openssl.cnf (hashlib loads it)");
	ev_fs(R, "/etc/ssl/private/k.pem");
	DENIES(p, EACCES, "secret-ssl-private", "default: ssl private keys");
	ev_fs(R, "/etc/fonts/conf.d/10-x.conf");
	ALLOWS(p, "etc-fonts", "default: fontconfig");
	ev_fs(W, "/tmp/x");
	DENIES(p, EACCES, "default", "default: write /tmp/x denied");
	ev_fs(W | C, "/tmp/ward-run-1/out.png");
	ALLOWS(p, "workdir", "default: write workdir/out.png");
	ev_fs(D, "/tmp/ward-run-1/tmp/f1.txt");
	ALLOWS(p, "workdir", "default: delete in workdir");
	ev_fs(X, "/tmp/ward-run-1/evil.so");
	DENIES(p, EACCES, "default", "default: no exec mapping from workdir");
	ev_fs(W, "/usr/lib/python3/dist-packages/x.py");
	DENIES(p, EACCES, "default", "default: /usr is read-only");
	ev_fs(S, "/anything/at/all");
	ALLOWS(p, "stat-anywhere", "default: stat anywhere");
	ev_fs(R, "/dev/urandom");
	ALLOWS(p, "dev-urandom", "default: /dev/urandom");
	ev_fs(W, "/dev/null");
	ALLOWS(p, "dev-null", "default: write /dev/null");
	ev_fs(W, "/dev/zero");
	DENIES(p, EACCES, "default", "default: write /dev/zero denied");
	ev_fs(R, "/dev/sda");
	DENIES(p, EACCES, "default", "default: block devices denied");
	ev_fs(R, "/proc/4242/status");
	ALLOWS(p, "proc-self", "default: own /proc status");
	ev_fs(R, "/proc/4242/mem");
	DENIES(p, EACCES, "proc.mem", "default: own /proc mem denied");
	ev_fs(W, "/proc/4242/mem");
	DENIES(p, EACCES, "proc.mem", "default: /proc mem write denied");
	ev_fs(R, "/proc/4242/task/4242/mem");
	DENIES(p, EACCES, "proc.mem", "default: thread mem denied (floor)");
	ev_fs(R, "/proc/1/environ");
	DENIES(p, EACCES, "default", "default: init's environ denied");
	ev_fs(R, "/proc/cpuinfo");
	ALLOWS(p, "proc-cpuinfo", "default: /proc/cpuinfo");
	ev_fs(R, "/sys/devices/system/cpu/online");
	ALLOWS(p, "sys-cpu", "default: cpu topology");
	ev_fs(R, "/sys/fs/cgroup/memory.max");
	ALLOWS(p, "sys-cgroup",
	       "default: cgroup limits (the view shows none: ENOENT)");
	ev_fs(R, "/proc/4242/mountinfo");
	DENIES(p, EACCES, "proc-mountinfo",
	       "default: own mountinfo denied (host paths, mount IDs)");
	ev_fs(R, "/proc/4242/mounts");
	ALLOWS(p, "proc-self", "default: own mounts (the view's paths)");
	ev_fs(R, "/proc/sys/vm/overcommit_memory");
	ALLOWS(p, "proc-overcommit", "default: overcommit_memory (numpy)");
	ev_fs(R, "/proc/sys/kernel/core_pattern");
	DENIES(p, EACCES, "default", "default: rest of /proc/sys denied");
	ev_fs(R, "/sys/kernel/notes");
	DENIES(p, EACCES, "default", "default: rest of /sys denied");

	ev_exec("/usr/bin/python3.11", true);
	ALLOWS(p, NULL, "default: exec python3.11");
	ev_exec("/usr/bin/python3", true);
	ALLOWS(p, NULL, "default: exec python3");
	ev_exec("/usr/bin/uname", true);
	ALLOWS(p, NULL, "default: exec uname (pandas' platform.uname)");
	ev_exec("/usr/bin/fc-list", true);
	ALLOWS(p, NULL, "default: exec fc-list (matplotlib fonts)");
	ev_exec("/bin/sh", true);
	DENIES(p, EACCES, "default", "default: exec /bin/sh denied");
	ev_exec("/usr/bin/dash", true);
	DENIES(p, EACCES, "default", "default: exec dash denied");
	ev_exec("/usr/bin/true", true);
	DENIES(p, EACCES, "default", "default: exec true denied");
	ev_exec("/usr/bin/python3-config", true);
	DENIES(p, EACCES, "default", "default: python3-config denied");
	ev_exec("/tmp/ward-run-1/a.out", true);
	DENIES(p, EACCES, "default", "default: exec from workdir denied");
	ev_exec("/usr/local/bin/uname", false);
	ALLOWS(p, "exec.missing", "default: PATH probe of a missing file");

	ev_socket(AF_UNIX);
	ALLOWS(p, "net.socket", "default: unix sockets");
	ev_socket(AF_INET);
	ALLOWS(p, "net.socket", "default: inet sockets (connect is refused)");
	ev_socket(AF_INET6);
	ALLOWS(p, "net.socket", "default: inet6 sockets");
	ev_socket(AF_NETLINK);
	DENIES(p, EAFNOSUPPORT, "default", "default: no netlink sockets");
	ev_socket(AF_PACKET);
	DENIES(p, EAFNOSUPPORT, "default", "default: no packet sockets");
	ev_inet(WARD_NET_SEND, AF_INET, "127.0.0.1", 9);
	DENIES(p, ECONNREFUSED, "default", "default: sendto refused");
	ev_listen(AF_INET);
	DENIES(p, EACCES, "default", "default: listen denied");
	ev_inet(WARD_NET_CONNECT, AF_INET6, "127.0.0.1", 80);
	ev.sa.v4mapped = true;
	DENIES(p, ECONNREFUSED, "default", "default: v4-mapped connect");
	ev_inet(WARD_NET_CONNECT, AF_INET, "127.0.0.1", 80);
	DENIES(p, ECONNREFUSED, "default",
	       "default: connect 127.0.0.1:80 ECONNREFUSED");
	ev_inet(WARD_NET_BIND, AF_INET, "0.0.0.0", 8000);
	DENIES(p, EACCES, "default", "default: bind denied EACCES");
	ev_unix(WARD_NET_CONNECT, "/run/dbus/system_bus_socket", false);
	DENIES(p, ECONNREFUSED, "default", "default: no unix connects");
	ev_unix(WARD_NET_CONNECT, "/run/nscd/socket", false);
	DENIES(p, ECONNREFUSED, "default",
	       "default: a running nscd (would resolve DNS for us) is refused");
	ev_unix(WARD_NET_CONNECT, "/var/run/nscd/socket", false);
	ev.exists = false;
	ALLOWS(p, "net.unix-missing",
	       "default: glibc's look for an absent nscd is answered ENOENT");

	ev_signal(1, SIGKILL, false);
	DENIES(p, EPERM, "signals", "default: kill outside the run EPERM");
	ev_signal(-1, SIGKILL, false);
	DENIES(p, EPERM, "signals", "default: kill(-1) EPERM");
	ev_signal(4243, SIGTERM, true);
	ALLOWS(p, "signals", "default: signal within the run");
	ev_clone(SIGCHLD);
	ALLOWS(p, "proc", "default: fork");
	ev_clone(CLONE_NEWUSER);
	KILLS(p, "clone.flags", "default: CLONE_NEWUSER kills");
	ev_base(WARD_CLASS_OTHER, "reboot");
	DENIES(p, ENOSYS, "default", "default: unknown syscall ENOSYS");
	policy_free(p);
}

static void test_profile_default_limits(void)
{
	struct policy *p = load_profile("default");
	struct ward_limits l;

	if (!p)
		return;
	policy_limits(p, &l);
	ok(l.wall_ms == 60000 && l.cpu_s == 60 &&
		   l.memory_bytes == 4096LL << 20 && l.procs == 256 &&
		   l.fsize_bytes == 1024LL << 20 && l.nofile == 1024 &&
		   l.output_bytes == 16777216 && l.events == 1000000 &&
		   l.disk_bytes == 1024LL << 20,
	   "default: limits 60 s, 60 s, 4 GiB, 256, 1 GiB, 1024, 16 MiB, "
	   "1000000 events, a 1 GiB workdir");
	policy_free(p);
}

static void test_profile_node_sh(void)
{
	struct policy *p = load_profile("node");

	if (ok(p != NULL, "node profile loads")) {
		policy_set_workdir(p, "/w");
		ev_exec("/usr/bin/node", true);
		ALLOWS(p, NULL, "node: exec node");
		ev_exec("/usr/bin/python3.11", true);
		DENIES(p, EACCES, "default", "node: no python");
		ev_exec("/bin/sh", true);
		DENIES(p, EACCES, "default", "node: no sh");
		ev_fs(R, "/usr/bin/node");
		ALLOWS(p, "usr", "node: read its binary");
		ev_fs(R, "/proc/4242/maps");
		ALLOWS(p, "proc-self", "node: /proc/self/maps");
		ev_fs(R, "/proc/stat");
		ALLOWS(p, "proc-stat", "node: /proc/stat (os.cpus)");
		ev_fs(R, "/etc/ssl/openssl.cnf");
		ALLOWS(p, "etc-ssl", "node: openssl.cnf");
		ev_fs(R, "/etc/ssl/private/key.pem");
		DENIES(p, EACCES, "secret-ssl-private", "node: ssl private");
		ev_fs(R, "/etc/shadow");
		DENIES(p, EACCES, "secret-shadow", "node: shadow");
		ev_fs(W | C, "/w/f");
		ALLOWS(p, "workdir", "node: workdir");
		ev_inet(WARD_NET_CONNECT, AF_INET, "10.0.0.1", 443);
		DENIES(p, ECONNREFUSED, "default", "node: no network");
		ev_fs(R, "/tmp/package.json");
		ALLOWS(p, "node-package-json-tmp",
		       "node: package.json lookup above the workdir");
		ev_fs(R, "/tmp/other.json");
		DENIES(p, EACCES, "default", "node: nothing else in /tmp");
		policy_free(p);
	}
	p = load_profile("sh");
	if (ok(p != NULL, "sh profile loads")) {
		policy_set_workdir(p, "/w");
		ev_exec("/usr/bin/dash", true);
		ALLOWS(p, NULL, "sh: exec dash");
		ev_exec("/usr/bin/ls", true);
		ALLOWS(p, NULL, "sh: exec ls");
		ev_exec("/usr/sbin/useradd", true);
		DENIES(p, EACCES, "default", "sh: no /usr/sbin");
		ev_exec("/w/script", true);
		DENIES(p, EACCES, "default", "sh: no exec from workdir");
		ev_exec("/usr/bin/x/y", true);
		DENIES(p, EACCES, "default", "sh: /usr/bin/* is one level");
		ev_fs(R, "/etc/selinux/config");
		ALLOWS(p, "etc-selinux", "sh: ls reads selinux config");
		ev_fs(R | W | C | D, "/w/f");
		ALLOWS(p, "workdir", "sh: workdir");
		ev_fs(R, "/etc/shadow");
		DENIES(p, EACCES, "secret-shadow", "sh: shadow");
		ev_fs(W, "/tmp/x");
		DENIES(p, EACCES, "default", "sh: /tmp not writable");
		policy_free(p);
	}
}

/* The audit profile decides as default does, without denying. */
static void test_profile_audit(void)
{
	struct policy *d = load_profile("default");
	struct policy *a = load_profile("audit");
	struct policy_verdict vd;
	int mismatch = 0, denials = 0, n = 0;

	if (!ok(d && a, "audit and default profiles load"))
		goto out;
	ok(policy_audit_mode(a) && !policy_audit_mode(d), "audit mode set");
	policy_set_workdir(d, "/w");
	policy_set_workdir(a, "/w");
	for (int k = 0; k < 12; k++) {
		switch (k) {
		case 0: ev_fs(R, "/etc/shadow"); break;
		case 1: ev_fs(W, "/tmp/x"); break;
		case 2: ev_fs(R, "/usr/lib/x"); break;
		case 3: ev_fs(W | C, "/w/out.png"); break;
		case 4: ev_exec("/bin/sh", true); break;
		case 5: ev_exec("/usr/bin/uname", true); break;
		case 6:
			ev_inet(WARD_NET_CONNECT, AF_INET, "1.1.1.1", 443);
			break;
		case 7: ev_socket(AF_NETLINK); break;
		case 8: ev_signal(1, SIGKILL, false); break;
		case 9: ev_base(WARD_CLASS_OTHER, "reboot"); break;
		case 10: ev_fs(R, "/proc/4242/mem"); break;
		default: ev_fs(R, "/proc/4242/status"); break;
		}
		policy_check(d, &ev, &vd);
		policy_check(a, &ev, &v);
		n++;
		if (vd.action == POLICY_DENY)
			denials++;
		if (k == 10) {
			/* ward's floor: denied in audit mode too */
			if (v.action != POLICY_DENY || v.would_deny ||
			    strcmp(v.rule, "proc.mem") != 0)
				mismatch++;
			continue;
		}
		if (v.action != POLICY_ALLOW ||
		    v.would_deny != (vd.action == POLICY_DENY) ||
		    strcmp(v.rule, vd.rule) != 0 ||
		    strcmp(v.reason, vd.reason) != 0) {
			printf("# event %d: audit %s/%s vs default %s/%s\n", k,
			       action_name(v.action), v.rule,
			       action_name(vd.action), vd.rule);
			mismatch++;
		}
	}
	ok(mismatch == 0 && denials == 8,
	   "audit: %d events, same rules as default, %d would-be denials", n,
	   denials);
out:
	policy_free(d);
	policy_free(a);
}

/* Find tests/unit/data/policy from the repository or the build tree. */
static int enter_data_dir(void)
{
	const char *env = getenv("WARD_TEST_DATA");

	if (env && chdir(env) == 0)
		return 0;
	if (chdir("tests/unit/data/policy") == 0)
		return 0;
	return -1;
}

/* ---- the upper bound for kernel floors (policy_bound) ---- */

/* The access bits of the bound's tree at path; -1 when it has none. */
static int tree(const struct policy_bound *b, const char *path)
{
	for (size_t i = 0; i < b->ntrees; i++)
		if (!strcmp(b->trees[i].path, path))
			return (int)b->trees[i].access;
	return -1;
}

static bool no_sync(int nr)
{
	(void)nr;
	return false; /* as if no syscall had a class decision */
}

static void test_bound_default(void)
{
	struct policy *p = load_profile("default");
	struct policy_bound b;

	if (!ok(p != NULL, "bound: default profile loads"))
		return;
	policy_set_workdir(p, "/w");
	is_int(policy_bound(p, NULL, &b), 0, "bound: built");
	is_str(b.unbounded, "", "... the default profile has a bound");
	is_int(tree(&b, "/usr"), R | X, "... /usr: read, exec (stat dropped)");
	is_int(tree(&b, "/w"), R | W | C | D,
	       "... $WORKDIR bound: read, "
	       "write, create, delete");
	is_int(tree(&b, "/dev/null"), R | W, "... /dev/null: read, write");
	is_int(tree(&b, "/proc"), R,
	       "... /proc/self and /proc/thread-self stand for /proc");
	is_int(tree(&b, "/proc/self"), -1, "... not for /proc/self itself");
	is_int(tree(&b, "/proc/cpuinfo"), R, "... other /proc files as named");
	is_int(tree(&b, "/usr/bin"), R | X,
	       "... exec glob /usr/bin/python3.[0-9]: its directory");
	is_int(tree(&b, "/usr/bin/uname"), R | X,
	       "... exec of a plain path: the file itself");
	is_int(tree(&b, "/etc/shadow"), -1, "... deny rules are left out");
	is_int(tree(&b, "/"), -1, "... stat-only rules are left out");
	ok(!b.connect_any && !b.nconnect && !b.bind_any && !b.nbind,
	   "... TCP: no port for connect or bind");
	ok(b.scope_signal && b.scope_abstract,
	   "... signals and abstract sockets stay within the run");
	policy_bound_free(&b);
	is_int((int)b.ntrees, 0, "bound_free empties it");
	policy_bound_free(NULL);
	policy_free(p);
}

static void test_bound_rules(void)
{
	struct policy *p = load(
		"{\"version\": 1, \"signals\": \"any\","
		" \"fs\": [{\"path\": \"/data\", \"allow\": [\"read\"]},"
		"  {\"path\": \"/data\", \"allow\": [\"write\"]},"
		"  {\"path\": \"/proc/thread-self/fd\", \"allow\": [\"stat\", "
		"\"read\"]}],"
		" \"exec\": {\"allow\": [\"/opt/*/bin/tool\", \"/*\"]},"
		" \"net\": {\"socket\": [\"inet\", \"inet6\", \"unix\"],"
		"  \"rules\": [{\"family\": \"inet\", \"port\": 443},"
		"   {\"family\": \"inet\", \"port\": 1, \"action\": \"deny\"},"
		"   {\"family\": \"inet6\", \"port\": [80, 81]},"
		"   {\"family\": \"inet\", \"ops\": [\"bind\"], \"port\": "
		"8000},"
		"   {\"family\": \"unix\", \"ops\": [\"bind\"], \"path\": "
		"\"/tmp/s\"},"
		"   {\"family\": \"unix\", \"abstract\": \"x\"}]}}");
	struct policy_bound b;

	if (!ok(p != NULL, "bound: a policy with every kind of rule loads"))
		return;
	is_int(policy_bound(p, NULL, &b), 0, "bound: built");
	is_int(tree(&b, "/data"), R | W, "... one tree per path, bits merged");
	is_int(tree(&b, "/proc"), R, "... /proc/thread-self/fd: all of /proc");
	is_int(tree(&b, "/opt"), R | X,
	       "... exec glob /opt/*/bin/tool: /opt (fixed part)");
	is_int(tree(&b, "/"), R | X, "... exec glob /*: the root");
	is_int(tree(&b, "/tmp/s"), POLICY_TREE_SOCK,
	       "... unix bind path: sockets may be created there");
	ok(!b.connect_any && b.nconnect == 2, "... connect: two port ranges");
	ok(b.nconnect == 2 && b.connect[0].lo == 443 &&
		   b.connect[0].hi == 443 && b.connect[1].lo == 80 &&
		   b.connect[1].hi == 81,
	   "... 443 and 80-81, the deny rule left out");
	ok(!b.bind_any && b.nbind == 1 && b.bind[0].lo == 8000,
	   "... bind: port 8000");
	ok(!b.scope_signal, "... signals \"any\": no signal scoping");
	ok(!b.scope_abstract, "... an abstract peer allowed: no scoping");
	policy_bound_free(&b);
	policy_free(p);

	p = load("{\"version\": 1, \"net\": {\"socket\": [\"inet\"], "
		 "\"rules\": [{\"family\": \"inet\", \"port\": [1, 2000]},"
		 " {\"family\": \"inet\", \"ops\": [\"bind\"]}]}}");
	is_int(policy_bound(p, NULL, &b), 0, "bound: wide port rules");
	ok(b.connect_any && b.bind_any,
	   "... more than 1024 ports, or no port: left unrestricted");
	policy_bound_free(&b);
	policy_free(p);
}

static bool in_list(char **list, size_t n, const char *path)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i], path))
			return true;
	return false;
}

static void test_view(void)
{
	struct policy *p = load_profile("default");
	struct policy_view pv;

	if (!ok(p != NULL, "view: default profile loads"))
		return;
	policy_set_workdir(p, "/home/user");
	is_int(policy_protect(p, "/var/db/audit.db"), 0, "view: protect");
	is_int(policy_view(p, &pv), 0, "view: built");
	ok(!pv.host && !policy_view_host(p), "... enforce mode: the policy's");
	ok(in_list(pv.show, pv.nshow, "/usr"), "... /usr shown (read, exec)");
	ok(in_list(pv.show, pv.nshow, "/etc/passwd"), "... /etc/passwd shown");
	ok(in_list(pv.show, pv.nshow, "/dev/null"), "... /dev/null shown");
	ok(in_list(pv.show, pv.nshow, "/usr/bin"),
	   "... exec glob /usr/bin/python3.[0-9]: its directory");
	ok(!in_list(pv.show, pv.nshow, "/"), "... stat anywhere shows nothing");
	ok(!in_list(pv.show, pv.nshow, "/home/user"),
	   "... $WORKDIR rules are the tracer's");
	ok(in_list(pv.hide, pv.nhide, "/etc/shadow") &&
		   in_list(pv.hide, pv.nhide, "/root"),
	   "... deny-read rules hide");
	ok(!in_list(pv.hide, pv.nhide, "/proc/self/mem") ||
		   in_list(pv.hide, pv.nhide, "/proc/self/mem"),
	   "... (own /proc: the tracer skips it)");
	ok(in_list(pv.hide, pv.nhide, "/var/db/audit.db"),
	   "... ward's own files hide");
	ok(in_list(pv.record, pv.nrecord, "/var/db/audit.db") &&
		   !in_list(pv.record, pv.nrecord, "/etc/shadow"),
	   "... and only they hide by name, existing or not");
	policy_view_free(&pv);
	is_int((int)pv.nshow + (int)pv.nhide + (int)pv.nrecord, 0,
	       "view_free empties it");
	policy_view_free(NULL);
	policy_free(p);

	p = load("{\"version\": 1, \"mode\": \"audit\"}");
	ok(p && policy_view_host(p), "view: audit mode defaults to the host");
	is_int(policy_view(p, &pv), 0, "... built");
	ok(pv.host && in_list(pv.show, pv.nshow, "/"), "... the whole host");
	policy_view_free(&pv);
	policy_free(p);
	p = load("{\"version\": 1, \"mode\": \"audit\", \"view\": "
		 "\"policy\"}");
	ok(p && !policy_view_host(p),
	   "view: audit mode may ask for the policy's");
	policy_free(p);
	p = load("{\"version\": 1, \"view\": \"host\", \"fs\": [{\"path\":"
		 " \"/srv/x\", \"deny\": [\"read\"]}, {\"path\": \"/srv/y\","
		 " \"deny\": [\"write\"]}],"
		 " \"net\": {\"socket\": [\"unix\"], \"rules\": [{\"family\":"
		 " \"unix\", \"path\": \"/run/s.sock\"}]}}");
	is_int(policy_view(p, &pv), 0, "view: host, deny rules, a unix path");
	ok(pv.host && in_list(pv.hide, pv.nhide, "/srv/x"),
	   "... a deny of read hides even in the host's view");
	ok(!in_list(pv.hide, pv.nhide, "/srv/y"),
	   "... a deny of write does not");
	ok(in_list(pv.show, pv.nshow, "/run/s.sock"),
	   "... a unix socket path the rules allow is shown");
	policy_view_free(&pv);
	policy_free(p);
}

/* A metadata query of what the run's view does not hold is answered as
 * the kernel would: the rule that denies it is recorded, not revealed. */
static void test_stat_of_what_is_not_there(void)
{
	struct policy *p = load(
		"{\"version\": 1, \"trap_stat\": true, \"fs\": ["
		" {\"path\": \"/\", \"allow\": [\"stat\"]},"
		" {\"id\": \"secret\", \"path\": \"/s\", \"deny\": [\"read\","
		" \"stat\"]}]}");

	if (!ok(p != NULL, "stat policy loads"))
		return;
	ev_fs(S, "/s");
	ev.exists = false;
	DENIES(p, ENOENT, "secret",
	       "stat of a denied path not in the view: ENOENT");
	ok(strstr(v.reason, "no such file in the run's view") != NULL, "... %s",
	   v.reason);
	ev_fs(S, "/s");
	DENIES(p, EACCES, "secret",
	       "stat of a denied path that exists: the rule's errno");
	ev_fs(R, "/s");
	ev.exists = false;
	DENIES(p, EACCES, "secret", "an open is decided as always");
	ev_fs(S, "/other");
	ev.exists = false;
	ALLOWS(p, "fs[0]", "stat allowed: the kernel answers");
	policy_free(p);
}

static void test_bound_none(void)
{
	struct policy *p = load("{\"version\": 1, \"mode\": \"audit\"}");
	struct policy_bound b;

	is_int(policy_bound(p, NULL, &b), 0, "bound: audit mode");
	ok(strstr(b.unbounded, "audit mode") != NULL, "... has none: %s",
	   b.unbounded);
	policy_free(p);
	p = load("{\"version\": 1, \"syscalls\": [{\"name\": \"openat\","
		 " \"action\": \"allow\"}]}");
	is_int(policy_bound(p, NULL, &b), 0, "bound: a syscalls allow rule");
	ok(strstr(b.unbounded, "syscalls[0] allows openat") != NULL,
	   "... has none: %s", b.unbounded);
	is_int(policy_bound(p, no_sync, &b), 0,
	       "bound: the same rule for a syscall no class decides");
	is_str(b.unbounded, "", "... has a bound");
	policy_bound_free(&b);
	policy_free(p);
	p = load("{\"version\": 1, \"syscalls\": [{\"name\": \"openat\","
		 " \"action\": \"deny\"}]}");
	is_int(policy_bound(p, NULL, &b), 0, "bound: a syscalls deny rule");
	is_str(b.unbounded, "", "... has a bound");
	policy_bound_free(&b);
	policy_free(p);
}

static void test_require(void)
{
	struct policy *p = load("{\"version\": 1, \"require\": "
				"[\"landlock\", \"rlimits\"]}");
	unsigned long long want = 0;

	for (unsigned i = 0; policy_layer_name(i); i++)
		if (!strcmp(policy_layer_name(i), "landlock") ||
		    !strcmp(policy_layer_name(i), "rlimits"))
			want |= 1ULL << i;
	ok(p && want && policy_required_layers(p) == want,
	   "require: the named layers' bits");
	policy_free(p);
	p = load("{\"version\": 1}");
	ok(p && policy_required_layers(p) == 0, "require: none by default");
	policy_free(p);
	is_str(policy_layer_name(0), "seccomp", "layer names: seccomp first");
	ok(policy_layer_name(63) == NULL, "layer names: NULL past the end");
}

/* ---- phases ---- */

static const char phased[] =
	"{\"version\": 1, \"name\": \"phased\","
	" \"fs\": ["
	"  {\"id\": \"usr\", \"path\": \"/usr\", \"allow\": [\"read\", \"exec\"]},"
	"  {\"id\": \"wd\", \"path\": \"$WORKDIR\", \"allow\": [\"read\", \"write\", \"create\"]},"
	"  {\"id\": \"site-ro\", \"path\": \"$WORKDIR/site\", \"deny\": [\"write\", \"create\"]},"
	"  {\"id\": \"key-no\", \"path\": \"/etc/key\", \"deny\": [\"read\"]}],"
	" \"exec\": {\"allow\": [\"/usr/bin/python3\"]},"
	" \"net\": {\"socket\": [\"unix\"], \"rules\": ["
	"  {\"id\": \"offline\", \"family\": \"inet\", \"action\": \"deny\", \"errno\": \"ENETUNREACH\"}]},"
	" \"phases\": {\"setup\": {"
	"  \"description\": \"pip install\","
	"  \"fs\": [{\"id\": \"site-rw\", \"path\": \"$WORKDIR/site\", \"allow\": [\"write\", \"create\"]},"
	"         {\"path\": \"/opt\", \"allow\": [\"read\"]},"
	"         {\"id\": \"key-yes\", \"path\": \"/etc/key\", \"allow\": [\"read\"]}],"
	"  \"exec\": {\"allow\": [\"/usr/bin/dash\"]},"
	"  \"net\": {\"socket\": [\"inet\"], \"rules\": ["
	"   {\"id\": \"index\", \"family\": \"inet\", \"port\": 8123}]}}}}";

/* setup is the base plus its own rules, which win; main (the base) never
 * sees them */
static void test_phases(void)
{
	struct policy *p = load(phased), *s;

	if (!ok(p != NULL, "a phased policy loads"))
		return;
	s = policy_phase(p, "setup");
	ok(s != NULL && s != p, "the setup phase is a policy of its own");
	ok(policy_phase(p, "main") == NULL && policy_phase(p, "x") == NULL,
	   "no phase but setup");
	is_str(policy_phase_name(p, 0), "setup", "phase 0 is setup");
	ok(policy_phase_name(p, 1) == NULL, "one phase");
	if (!s) {
		policy_free(p);
		return;
	}
	is_str(policy_name(s), "phased", "a phase has its base's name");
	is_int(policy_set_workdir(p, "/w"), 0, "bind the workdir");

	ev_fs(W, "/w/site/a.py");
	DENIES(p, EACCES, "site-ro", "main: the site dir is read-only");
	ALLOWS(s, "site-rw", "setup: its rule beats the base's on one path");
	ev_fs(W, "/w/other");
	ALLOWS(s, "wd", "setup keeps the base's rules");
	ev_fs(R, "/usr/lib/x");
	ALLOWS(s, "usr", "setup reads /usr by the base's rule");
	ev_fs(R, "/opt/x");
	DENIES(p, EACCES, "default", "main: no rule for /opt");
	ALLOWS(s, "phases.setup.fs[1]", "a phase rule's id is its JSON path");

	ev_exec("/usr/bin/dash", true);
	DENIES(p, EACCES, "default", "main: no shell");
	ALLOWS(s, "phases.setup.exec.allow[0]", "setup: its exec glob");
	ev_exec("/usr/bin/python3", true);
	ALLOWS(s, "exec.allow[0]", "setup: the base's exec globs too");

	ev_socket(AF_INET);
	DENIES(p, EAFNOSUPPORT, "default", "main: no inet sockets");
	ALLOWS(s, "net.socket", "setup: its socket families are added");
	ev_socket(AF_UNIX);
	ALLOWS(s, "net.socket", "setup: and the base's kept");

	ev_inet(WARD_NET_CONNECT, AF_INET, "127.0.0.1", 8123);
	DENIES(p, ENETUNREACH, "offline", "main: the index is denied");
	ALLOWS(s, "index", "setup: its net rules come first");
	ev_inet(WARD_NET_CONNECT, AF_INET, "127.0.0.1", 80);
	DENIES(s, ENETUNREACH, "offline", "setup: other peers, the base's");

	ok(!policy_net_beyond_loopback(p) && policy_net_beyond_loopback(s),
	   "only setup reaches beyond loopback (the host's network)");

	/* a file the policy hides, which the setup may read, exists there */
	ev_fs(R, "/etc/key");
	DENIES(p, EACCES, "key-no", "main: the key is denied");
	ALLOWS(s, "key-yes", "setup: its rule on the same path wins");
	struct policy_view pv, sv;
	bool main_hides = false, setup_hides = false, setup_shows = false;
	if (!policy_view(p, &pv)) {
		for (size_t i = 0; i < pv.nhide; i++)
			main_hides |= !strcmp(pv.hide[i], "/etc/key");
		policy_view_free(&pv);
	}
	if (!policy_view(s, &sv)) {
		for (size_t i = 0; i < sv.nhide; i++)
			setup_hides |= !strcmp(sv.hide[i], "/etc/key");
		for (size_t i = 0; i < sv.nshow; i++)
			setup_shows |= !strcmp(sv.show[i], "/etc/key");
		policy_view_free(&sv);
	}
	ok(main_hides && !setup_hides && setup_shows,
	   "the view: hidden in main, shown in setup");

	is_int(policy_protect(p, "/db/audit.db"), 0, "protect the record");
	ev_fs(R, "/db/audit.db");
	DENIES(s, EACCES, "floor.record", "the record is guarded in setup");
	is_int(policy_set_workdir(p, "/v"), 0, "rebind");
	ev_fs(W, "/v/site/a.py");
	ALLOWS(s, "site-rw", "rebinding reaches the phase");
	policy_free(p);

	p = load("{\"version\": 1}");
	ok(p && !policy_phase(p, "setup") && !policy_phase_name(p, 0),
	   "a policy without phases has none");
	policy_free(p);
}

/* net.allow_domains and the proxy's address floor (policy/domains.c). */
static void test_domains(void)
{
	struct policy *p =
		load("{\"version\": 1, \"net\": {\"allow_domains\": "
		     "[\"PyPI.org.:443\", \"*.pythonhosted.org:443\"], "
		     "\"hosts\": {\"m.test\": \"10.1.2.3\"}, "
		     "\"allow_private\": [\"10.1.0.0/16\"]}}");
	static const struct {
		const char *name;
		int port;
		const char *rule;
	} cases[] = {
		{ "pypi.org", 443, "net.allow_domains[0]" },
		{ "PYPI.ORG.", 443, "net.allow_domains[0]" },
		{ "pypi.org", 80, "default" },
		{ "evil-pypi.org", 443, "default" },
		{ "files.pythonhosted.org", 443, "net.allow_domains[1]" },
		{ "a.b.pythonhosted.org", 443, "net.allow_domains[1]" },
		{ "pythonhosted.org", 443, "default" },
		{ "xpythonhosted.org", 443, "default" },
		{ "pypi.org Host: x", 443, "net.proxy-name" },
		{ "", 443, "net.proxy-name" },
	};
	struct policy_verdict vd;
	unsigned char a[16];
	int fam = 0;

	if (!ok(p && policy_net_proxy(p), "allow_domains: loads"))
		return;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		policy_domain_check(p, cases[i].name, cases[i].port, &vd);
		is_str(vd.rule, cases[i].rule, cases[i].name);
		ok((vd.action == POLICY_ALLOW) ==
			   !strncmp(cases[i].rule, "net.allow_domains", 17),
		   "domain: action goes with the rule");
	}
	ok(policy_host_lookup(p, "M.test", &fam, a) == 0 && fam == AF_INET &&
		   a[0] == 10 && a[3] == 3,
	   "hosts: m.test");
	ok(policy_host_lookup(p, "n.test", &fam, a) == -ENOENT, "hosts: miss");
	ok(policy_add_host(p, "n.test:::1", NULL, 0) == 0 &&
		   policy_host_lookup(p, "n.test", &fam, a) == 0 &&
		   fam == AF_INET6 && a[15] == 1,
	   "--add-host: an IPv6 address");
	static const struct {
		int fam;
		const char *addr;
		bool may;
	} addrs[] = {
		{ AF_INET, "93.184.216.34", true },
		{ AF_INET, "127.0.0.1", false },
		{ AF_INET, "169.254.169.254", false },
		{ AF_INET, "10.0.0.1", false },
		{ AF_INET, "10.1.9.9", true }, /* allow_private */
		{ AF_INET, "172.31.0.1", false },
		{ AF_INET, "192.168.1.1", false },
		{ AF_INET, "100.100.0.1", false },
		{ AF_INET, "0.0.0.0", false },
		{ AF_INET6, "::1", false },
		{ AF_INET6, "::", false },
		{ AF_INET6, "::ffff:127.0.0.1", false },
		{ AF_INET6, "::ffff:169.254.169.254", false },
		{ AF_INET6, "::ffff:10.1.2.3", true },
		{ AF_INET6, "64:ff9b::a9fe:a9fe", false },
		{ AF_INET6, "2002:7f00:1::", false },
		{ AF_INET6, "fd00::1", false },
		{ AF_INET6, "fe80::1", false },
		{ AF_INET6, "2606:4700::1", true },
	};
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		char why[160];

		inet_pton(addrs[i].fam, addrs[i].addr, a);
		ok(policy_proxy_may_reach(p, addrs[i].fam, a, why,
					  sizeof(why)) == addrs[i].may,
		   "may reach %s: %d", addrs[i].addr, addrs[i].may);
	}
	policy_free(p);
	p = load("{\"version\": 1}");
	ok(p && !policy_net_proxy(p), "no allow_domains: no proxy");
	policy_free(p);
}

int main(void)
{
	test_errnames();
	test_floor();
	if (!ok(enter_data_dir() == 0, "found tests/unit/data/policy"))
		return done_testing();
	test_fixtures();
	test_load_api();
	test_load_file_cloexec();
	test_accessors();
	test_fs_precedence();
	test_fs_root_deny();
	test_workdir();
	test_proc_self();
	test_exec();
	test_net();
	test_proc_signals_other();
	test_arg_floor();
	test_mknod_floor();
	test_audit_backtrace();
	test_invalid();
	test_profile_default();
	test_profile_default_limits();
	test_profile_node_sh();
	test_ask();
	test_profile_audit();
	test_bound_default();
	test_bound_rules();
	test_bound_none();
	test_view();
	test_stat_of_what_is_not_there();
	test_require();
	test_phases();
	test_domains();
	return done_testing();
}
