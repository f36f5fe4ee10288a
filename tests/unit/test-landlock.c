/*
 * test-landlock.c - tracer/landlock.c: the plan for each ABI a kernel may
 * offer (0: none, 1, 2, 3, 4, 6, 7), the cases with no bound (audit mode,
 * a "syscalls" allow rule), and a ruleset built for real and applied in a
 * child, which then cannot open what no rule allows.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../policy/policy.h"
#include "../../tracer/tracer-int.h"
#include "tap.h"

#define SCOPE_ABSTRACT (1ULL << 0)
#define SCOPE_SIGNAL   (1ULL << 1)
#define NET_BIND       (1ULL << 0)
#define NET_CONNECT    (1ULL << 1)
#define FS_TRUNCATE    (1ULL << 14)

static char tmp[] = "/tmp/ward-unit-ll-XXXXXX";

static struct policy *profile(const char *name)
{
	struct policy_error e;
	struct policy *p = NULL;

	if (policy_load_profile(name, &p, &e) == 0)
		policy_set_workdir(p, tmp);
	return p;
}

static struct policy *text(const char *json)
{
	struct policy_error e;
	struct policy *p = NULL;

	if (policy_load_string(json, "t.json", &p, &e) == 0)
		policy_set_workdir(p, tmp);
	else
		printf("# %s\n", e.msg);
	return p;
}

static void abi_cases(void)
{
	struct policy *p = profile("default");
	struct tracer_landlock ll;

	is_int(tracer_landlock_plan(p, NULL, 0, &ll), 0, "ABI 0: planned");
	ok(!ll.active && strstr(ll.detail, "not available"),
	   "ABI 0: not active, says so: %s", ll.detail);
	tracer_landlock_free(&ll);

	tracer_landlock_plan(p, NULL, 1, &ll);
	ok(!ll.active && strstr(ll.detail, "ABI 1 only"),
	   "ABI 1: not used (renames across directories would fail): %s",
	   ll.detail);
	tracer_landlock_free(&ll);

	tracer_landlock_plan(p, NULL, 2, &ll);
	ok(ll.active && (ll.handled_fs & LANDLOCK_ACCESS_FS_REFER) &&
		   !(ll.handled_fs & FS_TRUNCATE) && !ll.handled_net &&
		   !ll.scoped,
	   "ABI 2: files with renames, no truncate, no net, no scoping");
	ok(strstr(ll.missing, "truncate not restricted (ABI 3)") &&
		   strstr(ll.missing, "no TCP port rules (ABI 4)") &&
		   strstr(ll.missing, "scoping (ABI 6)"),
	   "ABI 2: what is missing is named: %s", ll.missing);
	tracer_landlock_free(&ll);

	tracer_landlock_plan(p, NULL, 4, &ll);
	ok(ll.active && (ll.handled_fs & FS_TRUNCATE) &&
		   ll.handled_net == (NET_BIND | NET_CONNECT) && !ll.scoped,
	   "ABI 4: truncate and both TCP operations, no scoping");
	ok(!strstr(ll.missing, "TCP") && strstr(ll.missing, "ABI 6"),
	   "ABI 4: only scoping is missing: %s", ll.missing);
	tracer_landlock_free(&ll);

	tracer_landlock_plan(p, "/usr/bin/python3", 7, &ll);
	ok(ll.active && ll.scoped == (SCOPE_SIGNAL | SCOPE_ABSTRACT) &&
		   ll.handled_net == (NET_BIND | NET_CONNECT),
	   "ABI 7: signals and abstract sockets scoped, TCP handled");
	is_str(ll.missing, "", "ABI 7: nothing missing");
	ok(!(ll.handled_fs & (1ULL << 15)),
	   "ioctl on devices is not handled (the policy does not decide it)");
	ok(ll.ld_so[0] == '/' && strstr(ll.ld_so, "ld-linux"),
	   "the interpreter's dynamic loader is found: %s", ll.ld_so);
	ok(strstr(ll.detail, "ABI 7: ") &&
		   strstr(ll.detail, "TCP connect no port, bind no port"),
	   "detail: %s", ll.detail);
	tracer_landlock_free(&ll);
	policy_free(p);
}

/* The ABI 7 plan of a policy (NULL text: the audit profile). The plan
 * keeps its own copy of the bound, so the policy goes at once. */
static void plan7(const char *json, struct tracer_landlock *ll)
{
	struct policy *p = json ? text(json) : profile("audit");

	memset(ll, 0, sizeof(*ll));
	if (p)
		tracer_landlock_plan(p, NULL, 7, ll);
	policy_free(p);
}

static void unbounded_cases(void)
{
	struct tracer_landlock ll;

	plan7(NULL, &ll);
	ok(!ll.active && strstr(ll.detail, "off: audit mode"),
	   "audit profile: Landlock off: %s", ll.detail);
	tracer_landlock_free(&ll);

	plan7("{\"version\": 1, \"syscalls\": [{\"name\": \"openat\", "
	      "\"action\": \"allow\"}]}",
	      &ll);
	ok(!ll.active && strstr(ll.detail, "allows openat"),
	   "a syscalls rule allowing openat outright: off: %s", ll.detail);
	tracer_landlock_free(&ll);

	plan7("{\"version\": 1, \"syscalls\": [{\"name\": \"sync\", "
	      "\"action\": \"allow\"}]}",
	      &ll);
	ok(ll.active, "a syscalls rule for a syscall no rule decides: on");
	tracer_landlock_free(&ll);

	plan7("{\"version\": 1, \"signals\": \"any\", \"net\": {\"socket\":"
	      " [\"inet\", \"unix\"], \"rules\": [{\"family\": \"inet\"},"
	      " {\"family\": \"unix\", \"abstract\": \"\"}]}}",
	      &ll);
	ok(ll.active && !ll.scoped && ll.handled_net == NET_BIND,
	   "signals any, any abstract peer, connect to any port: not "
	   "restricted (bind still is)");
	ok(strstr(ll.detail, "connect not restricted, bind no port") &&
		   strstr(ll.detail, "scoped: nothing"),
	   "detail: %s", ll.detail);
	tracer_landlock_free(&ll);
}

/* In a child: apply the ruleset, then try path with flags. Returns 0 when
 * the open worked, else the errno (or 100+ for a set-up failure). */
static int child_open(const struct tracer_landlock *ll, const char *path,
		      int flags)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		const char *what;
		int rs = tracer_landlock_build(ll, &what);

		if (rs < 0)
			_exit(100);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    syscall(SYS_landlock_restrict_self, rs, 0) < 0)
			_exit(101);
		int fd = open(path, flags | O_CLOEXEC, 0644);
		_exit(fd >= 0 ? 0 : errno);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return 102;
	return WEXITSTATUS(st);
}

static void kernel_cases(void)
{
	struct policy *p = profile("default");
	struct tracer_landlock ll;
	char mine[300], outside[300];
	int abi = tracer_landlock_abi();

	if (abi < 2) {
		skip("the kernel offers Landlock ABI %d", abi);
		policy_free(p);
		return;
	}
	snprintf(mine, sizeof(mine), "%s/mine", tmp);
	snprintf(outside, sizeof(outside), "%s.outside", tmp);
	tracer_landlock_plan(p, "/usr/bin/python3", abi, &ll);
	is_int(child_open(&ll, mine, O_WRONLY | O_CREAT), 0,
	       "applied: creating a file in the workdir works");
	is_int(child_open(&ll, "/usr/bin/python3", O_RDONLY), 0,
	       "applied: reading /usr works");
	is_int(child_open(&ll, "/proc/self/status", O_RDONLY), 0,
	       "applied: reading /proc/self works");
	is_int(child_open(&ll, "/dev/null", O_WRONLY | O_TRUNC), 0,
	       "applied: /dev/null opens for writing, truncating");
	is_int(child_open(&ll, outside, O_WRONLY | O_CREAT), EACCES,
	       "applied: creating a file outside the trees: EACCES");
	is_int(child_open(&ll, "/etc/hostname", O_RDONLY), EACCES,
	       "applied: reading a file no rule allows: EACCES");
	is_int(child_open(&ll, "/etc/ld.so.cache", O_WRONLY), EACCES,
	       "applied: writing in a read-only tree: EACCES");
	ok(access(outside, F_OK) != 0, "... and nothing was created");
	tracer_landlock_free(&ll);
	policy_free(p);
	unlink(mine);
}

int main(void)
{
	if (!mkdtemp(tmp))
		return 99;
	abi_cases();
	unbounded_cases();
	kernel_cases();
	rmdir(tmp);
	ok(access(tmp, F_OK) != 0, "temporary directory removed");
	return done_testing();
}
