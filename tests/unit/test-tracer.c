/*
 * test-tracer.c - the tracer's pure parts, run against this very process:
 * lexical normalization, path resolution (cwd, dirfd, symlinks, dangling
 * links, /proc/self), bounded memory reads, the args JSON builder, the
 * syscall table, and the guard seccomp filter (evaluated here and loaded
 * into a child).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../common/floor.h"
#include "../../policy/policy.h"
#include "../../tracer/args.h"
#include "../../tracer/tracer-int.h"
#include "tap.h"

static char tmp[256];

static void normalize_cases(void)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "/", "/" },
		{ "//a//b/", "/a/b" },
		{ "/a/./b/.", "/a/b" },
		{ "/a/../b", "/b" },
		{ "/../../x", "/x" },
		{ "/a/b/../../..", "/" },
		{ "/a/b/c/../d", "/a/b/d" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[64];
		snprintf(buf, sizeof(buf), "%s", cases[i].in);
		tracer_normalize(buf);
		is_str(buf, cases[i].out, cases[i].in);
	}
}

static void resolve_cases(void)
{
	char want[512], out[WARD_PATH_MAX], path[512];
	bool exists;
	pid_t me = getpid();
	int dfd;

	snprintf(path, sizeof(path), "%s/dir", tmp);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/dir/file", tmp);
	close(open(path, O_CREAT | O_WRONLY, 0600));
	snprintf(path, sizeof(path), "%s/link", tmp);
	symlink("dir/file", path);
	snprintf(path, sizeof(path), "%s/dangling", tmp);
	symlink("/nonexistent-ward-dir/target", path);
	snprintf(path, sizeof(path), "%s/dangling2", tmp);
	symlink("dir/newfile", path);
	if (chdir(tmp) < 0)
		abort();

	snprintf(want, sizeof(want), "%s/dir/file", tmp);
	ok(tracer_resolve(me, me, RESOLVE_CWD, "dir/file", true, out,
			  sizeof(out), &exists) == 0 &&
		   !strcmp(out, want) && exists,
	   "relative to cwd: %s", out);
	ok(tracer_resolve(me, me, RESOLVE_CWD, "link", true, out, sizeof(out),
			  &exists) == 0 &&
		   !strcmp(out, want) && exists,
	   "symlink followed: %s", out);
	snprintf(want, sizeof(want), "%s/link", tmp);
	ok(tracer_resolve(me, me, RESOLVE_CWD, "link", false, out, sizeof(out),
			  &exists) == 0 &&
		   !strcmp(out, want),
	   "symlink not followed (O_NOFOLLOW): %s", out);
	ok(tracer_resolve(me, me, RESOLVE_CWD, "dangling", true, out,
			  sizeof(out), &exists) == 0 &&
		   !strcmp(out, "/nonexistent-ward-dir/target") && !exists,
	   "dangling link resolved to where the kernel would create: %s", out);
	snprintf(want, sizeof(want), "%s/dir/newfile", tmp);
	ok(tracer_resolve(me, me, RESOLVE_CWD, "dangling2", true, out,
			  sizeof(out), &exists) == 0 &&
		   !strcmp(out, want) && !exists,
	   "relative dangling link: %s", out);
	snprintf(want, sizeof(want), "%s/new", tmp);
	ok(tracer_resolve(me, me, RESOLVE_CWD, "dir/../new", true, out,
			  sizeof(out), &exists) == 0 &&
		   !strcmp(out, want) && !exists,
	   "new file through ..: %s", out);
	dfd = open("dir", O_RDONLY | O_DIRECTORY);
	snprintf(want, sizeof(want), "%s/dir/file", tmp);
	ok(tracer_resolve(me, me, dfd, "file", true, out, sizeof(out),
			  &exists) == 0 &&
		   !strcmp(out, want),
	   "relative to a dirfd: %s", out);
	ok(tracer_resolve(me, me, dfd, "../../../../../../../etc/passwd", true,
			  out, sizeof(out), &exists) == 0 &&
		   !strcmp(out, "/etc/passwd"),
	   ".. through a dirfd: %s", out);
	snprintf(want, sizeof(want), "%s/dir", tmp);
	ok(tracer_resolve(me, me, dfd, "", true, out, sizeof(out), &exists) ==
			   0 &&
		   !strcmp(out, want),
	   "empty path is the dirfd itself: %s", out);
	is_int(tracer_resolve(me, me, 987, "x", true, out, sizeof(out),
			      &exists),
	       -EBADF, "bad dirfd is EBADF");
	ok(tracer_resolve(me, me, RESOLVE_CWD, "/nonexistent-a/b/../c", true,
			  out, sizeof(out), &exists) == 0 &&
		   !strcmp(out, "/nonexistent-a/c") && !exists,
	   "missing parent: lexical: %s", out);
	snprintf(want, sizeof(want), "/proc/%d/status", (int)me);
	ok(tracer_resolve(me, me, RESOLVE_CWD, "/proc/self/status", true, out,
			  sizeof(out), &exists) == 0 &&
		   !strcmp(out, want),
	   "/proc/self means the tracee: %s", out);
	snprintf(want, sizeof(want), "%s/dir/file", tmp);
	char fdlink[64];
	int fd = open("dir/file", O_RDONLY);
	snprintf(fdlink, sizeof(fdlink), "/proc/self/fd/%d", fd);
	ok(tracer_resolve(me, me, RESOLVE_CWD, fdlink, true, out, sizeof(out),
			  &exists) == 0 &&
		   !strcmp(out, want),
	   "magic link /proc/self/fd/N resolved: %s", out);
	close(fd);
	close(dfd);
}

/* The directory cache gives the same answers as the long way, and is
 * not used where the policy lets the code change names. */
static void dircache_cases(void)
{
	struct policy *p = NULL;
	struct policy_error err;
	char path[512], out[WARD_PATH_MAX], want[512], wd[600];
	bool exists = true;
	pid_t me = getpid();

	if (policy_load_profile("default", &p, &err) < 0) {
		ok(0, "load the default profile");
		return;
	}
	snprintf(wd, sizeof(wd), "%s/work", tmp);
	mkdir(wd, 0700);
	policy_set_workdir(p, wd);
	ok(policy_names_fixed(p, "/usr/lib/python3"), "/usr/lib is fixed");
	ok(policy_names_fixed(p, tmp), "the workdir's parent is fixed");
	ok(!policy_names_fixed(p, wd), "the workdir is not");
	snprintf(path, sizeof(path), "%s/sub", wd);
	ok(!policy_names_fixed(p, path), "below the workdir is not");
	ok(!policy_names_fixed(p, "/proc/self"), "/proc is not");

	tracer_dircache_init(p);
	for (int pass = 0; pass < 2; pass++) {
		snprintf(path, sizeof(path), "%s/dir/file", tmp);
		ok(tracer_resolve(me, me, RESOLVE_CWD, path, true, out,
				  sizeof(out), &exists) == 0 &&
			   !strcmp(out, path) && exists,
		   "cached dir, pass %d: %s", pass, out);
		snprintf(path, sizeof(path), "%s/dir/missing", tmp);
		ok(tracer_resolve(me, me, RESOLVE_CWD, path, true, out,
				  sizeof(out), &exists) == 0 &&
			   !strcmp(out, path) && !exists,
		   "cached dir, missing name, pass %d", pass);
		snprintf(path, sizeof(path), "%s/link", tmp);
		snprintf(want, sizeof(want), "%s/dir/file", tmp);
		ok(tracer_resolve(me, me, RESOLVE_CWD, path, true, out,
				  sizeof(out), &exists) == 0 &&
			   !strcmp(out, want),
		   "a final symlink is still followed, pass %d: %s", pass, out);
		ok(tracer_resolve(me, me, RESOLVE_CWD, path, false, out,
				  sizeof(out), &exists) == 0 &&
			   !strcmp(out, path),
		   "and not followed with O_NOFOLLOW, pass %d", pass);
	}
	is_int(tracer_dircache_used(), 0,
	       "nothing under /tmp is cached (others can write there)");
	for (int pass = 0; pass < 2; pass++)
		ok(tracer_resolve(me, me, RESOLVE_CWD, "/usr/lib/os-release",
				  true, out, sizeof(out), &exists) == 0 &&
			   exists && !strncmp(out, "/usr/lib/", 9),
		   "a file under /usr/lib, pass %d: %s", pass, out);
	ok(tracer_dircache_used() == 1, "/usr/lib was cached (%d)",
	   tracer_dircache_used());
	ok(tracer_resolve(me, me, RESOLVE_CWD, "/usr/lib/ward-no-such-file",
			  true, out, sizeof(out), &exists) == 0 &&
		   !exists && !strcmp(out, "/usr/lib/ward-no-such-file"),
	   "a missing name in a cached directory");
	/* A symlinked directory resolves to its target, cached or not. */
	snprintf(path, sizeof(path), "%s/dirlink", tmp);
	snprintf(want, sizeof(want), "%s/dir", tmp);
	symlink(want, path);
	snprintf(path, sizeof(path), "%s/dirlink/file", tmp);
	snprintf(want, sizeof(want), "%s/dir/file", tmp);
	for (int pass = 0; pass < 2; pass++)
		ok(tracer_resolve(me, me, RESOLVE_CWD, path, true, out,
				  sizeof(out), &exists) == 0 &&
			   !strcmp(out, want),
		   "through a symlinked dir, pass %d: %s", pass, out);
	/* In the workdir nothing is cached: a swapped symlink is seen. */
	char l[600], t1[600], t2[600];
	snprintf(t1, sizeof(t1), "%s/a", wd);
	snprintf(t2, sizeof(t2), "%s/b", wd);
	mkdir(t1, 0700);
	mkdir(t2, 0700);
	snprintf(l, sizeof(l), "%s/l", wd);
	symlink(t1, l);
	snprintf(path, sizeof(path), "%s/l/x", wd);
	tracer_resolve(me, me, RESOLVE_CWD, path, true, out, sizeof(out),
		       &exists);
	snprintf(want, sizeof(want), "%s/x", t1);
	is_str(out, want, "workdir symlink, first target");
	unlink(l);
	symlink(t2, l);
	tracer_resolve(me, me, RESOLVE_CWD, path, true, out, sizeof(out),
		       &exists);
	snprintf(want, sizeof(want), "%s/x", t2);
	is_str(out, want, "workdir symlink swapped: the new target");
	int before = tracer_dircache_used();
	snprintf(path, sizeof(path), "%s/y", t2);
	tracer_resolve(me, me, RESOLVE_CWD, path, true, out, sizeof(out),
		       &exists);
	is_int(tracer_dircache_used(), before, "workdir dirs are not cached");
	tracer_dircache_free();
	policy_free(p);
}

static void umem_cases(void)
{
	char buf[64];
	pid_t me = getpid();
	long pg = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	/* a string ending exactly at the end of a page followed by a hole */
	munmap(m + pg, (size_t)pg);
	memcpy(m + pg - 6, "abcde", 6);
	is_int(umem_read_str(me, (uint64_t)(uintptr_t)(m + pg - 6), buf,
			     sizeof(buf)),
	       0, "string ending at a page boundary");
	is_str(buf, "abcde", "its contents");
	memcpy(m + pg - 4, "wxyz", 4); /* no NUL before the hole */
	is_int(umem_read_str(me, (uint64_t)(uintptr_t)(m + pg - 4), buf,
			     sizeof(buf)),
	       -EFAULT, "unterminated string running into a hole is EFAULT");
	memset(m, 'a', (size_t)pg);
	is_int(umem_read_str(me, (uint64_t)(uintptr_t)m, buf, 16),
	       -ENAMETOOLONG, "over-long string is ENAMETOOLONG");
	is_int(umem_read(me, 0, buf, 4), -EFAULT, "NULL is EFAULT");
	munmap(m, (size_t)pg);
}

static void args_cases(void)
{
	struct ward_event *ev = calloc(1, sizeof(*ev));

	ward_event_reset(ev);
	args_str(ev, "path", "a\"b\\c\n");
	args_int(ev, "fd", -100);
	args_raw(ev, "argv", "[\"x\"]");
	is_str(ev->args_json,
	       "{\"path\":\"a\\\"b\\\\c\\n\",\"fd\":-100,\"argv\":[\"x\"]}",
	       "args JSON is escaped and well formed");
	ward_event_reset(ev);
	char big[4000];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	args_str(ev, "a", "1");
	args_str(ev, "big", big);
	args_str(ev, "after", "2");
	is_str(ev->args_json, "{\"a\":\"1\",\"...\":true}",
	       "too long: cut at a key, marked");
	free(ev);
}

static void table_cases(void)
{
	const struct syscall_desc *d = tracer_syscall_desc(SYS_openat);

	ok(d && !strcmp(d->name, "openat") && d->trap == TRAP_ALWAYS,
	   "openat is trapped");
	d = tracer_syscall_desc(SYS_newfstatat);
	ok(d && d->trap == TRAP_STAT, "newfstatat is in the stat family");
	ok(tracer_syscall_desc(SYS_read) == NULL, "read is not in the table");
	ok(tracer_syscall_desc(-1) == NULL &&
		   tracer_syscall_desc(100000) == NULL,
	   "out-of-range numbers are not");
	bool read_allowed = false, open_allowed = false;
	for (const char *const *a = tracer_allow_list; *a; a++) {
		read_allowed |= !strcmp(*a, "read");
		open_allowed |= !strcmp(*a, "openat") ||
				!strcmp(*a, "execve") ||
				!strcmp(*a, "connect") || !strcmp(*a, "ptrace");
	}
	ok(read_allowed && !open_allowed,
	   "the allow list has read, no sensitive syscall");
}

/* A classic-BPF evaluator for what the guard and libseccomp's programs
 * use: a program's answer for one syscall, without the kernel, and how
 * many instructions it ran (*steps, when not NULL). */
static unsigned bpf_eval(const struct sock_fprog *prog, int nr, unsigned arch,
			 const uint64_t args[6], unsigned *steps)
{
	struct seccomp_data d = { .nr = nr, .arch = arch };
	unsigned a = 0, n = 0;

	memcpy(d.args, args, sizeof(d.args));
	for (unsigned pc = 0; pc < prog->len; pc++) {
		const struct sock_filter *f = &prog->filter[pc];
		unsigned k = f->k;
		bool jump;

		if (steps)
			*steps = ++n;
		switch (f->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			if (k + 4 > sizeof(d))
				return 0xdead;
			memcpy(&a, (const char *)&d + k, 4);
			continue;
		case BPF_RET | BPF_K: return k;
		case BPF_JMP | BPF_JA: pc += k; continue;
		case BPF_JMP | BPF_JEQ | BPF_K: jump = a == k; break;
		case BPF_JMP | BPF_JGT | BPF_K: jump = a > k; break;
		case BPF_JMP | BPF_JGE | BPF_K: jump = a >= k; break;
		case BPF_JMP | BPF_JSET | BPF_K: jump = (a & k) != 0; break;
		default: return 0xdead;
		}
		pc += jump ? f->jt : f->jf;
	}
	return 0xdead; /* fell off the end */
}

static unsigned guard_eval(int nr, unsigned arch, const uint64_t args[6])
{
	return bpf_eval(&tracer_guard, nr, arch, args, NULL);
}

#define HI 0xdead000000000000ULL /* junk in the high half */

static void guard_cases(void)
{
	const uint64_t hi = HI;
	uint64_t a[6] = { 0 };
	int agree = 0, n = 0;

	ok(tracer_guard.len > 0, "the guard was built (%u instructions)",
	   tracer_guard.len);
	is_int(guard_eval(SYS_read, AUDIT_ARCH_I386, a),
	       SECCOMP_RET_KILL_PROCESS, "guard: i386 kills");
	is_int(guard_eval(SYS_read | 0x40000000, AUDIT_ARCH_X86_64, a),
	       SECCOMP_RET_KILL_PROCESS, "guard: x32 numbers kill");
	is_int(guard_eval(SYS_read, AUDIT_ARCH_X86_64, a), SECCOMP_RET_ALLOW,
	       "guard: read passes");
	/* Every prctl option 0..127 and the named big ones, with and without
	 * junk in the high half: the guard and the policy's floor agree. */
	for (unsigned o = 0; o < 132; o++) {
		unsigned opt = o < 128 ? o
				       : (unsigned[]){ 0x59616d61, 0x53564d41,
						       0x41555856,
						       0xffffffffu }[o - 128];
		for (int h = 0; h < 2; h++) {
			unsigned long long ra[6] = { (h ? hi : 0) | opt };
			unsigned val, want;
			a[0] = ra[0];
			want = opt == PR_SET_SECCOMP ? SECCOMP_RET_KILL_PROCESS
			       : ward_arg_floor("prctl", ra, &val)
				       ? SECCOMP_RET_TRACE
				       : SECCOMP_RET_ALLOW;
			agree += guard_eval(SYS_prctl, AUDIT_ARCH_X86_64, a) ==
				 want;
			n++;
		}
	}
	is_int(agree, n, "guard: prctl options as the floor says, low 32 bits");
	/* clang-format off */
	static const struct {
		int nr;
		uint64_t a0, a1;
		unsigned want;
		const char *what;
	} cases[] = {
		{ SYS_prctl, HI | PR_SET_NAME, 0, SECCOMP_RET_ALLOW,
		  "PR_SET_NAME with high junk passes" },
		{ SYS_prctl, PR_SET_DUMPABLE, 0, SECCOMP_RET_TRACE,
		  "PR_SET_DUMPABLE goes to ward" },
		{ SYS_prctl, HI | PR_SET_SECCOMP, 0, SECCOMP_RET_KILL_PROCESS,
		  "PR_SET_SECCOMP kills" },
		{ SYS_personality, 0xffffffffu, 0, SECCOMP_RET_ALLOW,
		  "personality query passes" },
		{ SYS_personality, HI, 0, SECCOMP_RET_ALLOW,
		  "PER_LINUX with high junk passes" },
		{ SYS_personality, 0x0040000, 0, SECCOMP_RET_TRACE,
		  "ADDR_NO_RANDOMIZE goes to ward" },
		{ SYS_ioctl, 0, HI | TIOCSTI, SECCOMP_RET_TRACE,
		  "TIOCSTI with high junk goes to ward" },
		{ SYS_ioctl, 0, TIOCLINUX, SECCOMP_RET_TRACE,
		  "TIOCLINUX goes to ward" },
		{ SYS_ioctl, 0, TCGETS, SECCOMP_RET_ALLOW, "TCGETS passes" },
		{ SYS_clone, SIGCHLD | CLONE_VM | CLONE_THREAD | CLONE_SIGHAND,
		  0, SECCOMP_RET_ALLOW,
		  "thread clone passes (ward traps it next)" },
	};
	/* clang-format on */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char what[96];
		uint64_t c[6] = { cases[i].a0, cases[i].a1 };
		snprintf(what, sizeof(what), "guard: %s", cases[i].what);
		is_int(guard_eval(cases[i].nr, AUDIT_ARCH_X86_64, c),
		       cases[i].want, what);
	}
	n = agree = 0;
	for (int bit = 0; bit < 32; bit++) {
		a[0] = hi | SIGCHLD | (1ULL << bit);
		bool floor = (1u << bit) & WARD_CLONE_FLOOR;
		agree += guard_eval(SYS_clone, AUDIT_ARCH_X86_64, a) ==
			 (floor ? SECCOMP_RET_KILL_PROCESS : SECCOMP_RET_ALLOW);
		n += floor;
	}
	is_int(agree, 32, "guard: clone kills on exactly the floor's flags");
	is_int(n, 9, "the clone floor: 8 namespaces and CLONE_UNTRACED");
}

/* In a child with only the guard loaded (no tracer: TRACE fails the call
 * with ENOSYS): what the kernel really does. Exit status = failed checks. */
static int guard_child(void)
{
	char name[16];
	int bad = 0;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &tracer_guard) < 0)
		return 100;
	bad += syscall(SYS_prctl, 0xdead000000000000ULL | PR_GET_NAME, name, 0,
		       0, 0) != 0;
	errno = 0;
	bad += !(syscall(SYS_prctl, PR_SET_PTRACER, -1L, 0, 0, 0) < 0 &&
		 errno == ENOSYS);
	errno = 0;
	bad += !(syscall(SYS_personality, 0x0040000) < 0 && errno == ENOSYS);
	errno = 0;
	bad += !(syscall(SYS_ioctl, 0, 0xffffffff00000000ULL | TIOCSTI, "x") <
			 0 &&
		 errno == ENOSYS);
	bad += syscall(SYS_personality, 0xffffffffUL) < 0;
	return bad;
}

static void guard_kernel_cases(void)
{
	int st = -1;
	pid_t pid = fork();

	if (pid == 0)
		_exit(guard_child());
	waitpid(pid, &st, 0);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	   "kernel: the guard passes allowed values, stops the others "
	   "(status %#x)",
	   st);
	pid = fork();
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0,
			    &tracer_guard) < 0)
			_exit(100);
		syscall(SYS_clone,
			0xdead000000000000ULL | CLONE_NEWUSER | SIGCHLD, 0, 0,
			0, 0);
		_exit(0); /* both parent and a child would get here */
	}
	waitpid(pid, &st, 0);
	ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS,
	   "kernel: clone(CLONE_NEWUSER) with high junk is killed (status "
	   "%#x)",
	   st);
}

/* The programs built into ward (gen/filters.c) are what a run would
 * compile: for both values of trap_stat, and for every shipped profile
 * (none has raw syscall rules); a policy with one is compiled. */
static void builtin_filter_cases(void)
{
	const struct tracer_builtin_filters *b = &tracer_builtin_filters;
	struct policy_error perr;
	char msg[256];

	for (int i = 0; i < 2; i++) {
		struct sock_fprog p = { 0, NULL };
		int rc = tracer_filter_compile(i == 1, NULL, &p, msg,
					       sizeof(msg));

		ok(rc == 0 && p.len > 0 && p.len == b->len[i] &&
			   !memcmp(p.filter, b->prog[i],
				   p.len * sizeof(struct sock_filter)),
		   "built-in program %d (trap_stat %s) is the compiled one "
		   "(%u and %u instructions)",
		   i, i ? "true" : "false", (unsigned)p.len,
		   (unsigned)b->len[i]);
		free(p.filter);
	}
	for (const char *const *n = policy_profile_names(); *n; n++) {
		struct policy *pol = NULL;
		struct sock_fprog p = { 0, NULL }, c = { 0, NULL };
		int rc = policy_load_profile(*n, &pol, &perr);

		if (rc == 0)
			rc = tracer_filter_build(pol, &p, msg, sizeof(msg));
		int rc2 = pol ? tracer_filter_compile(policy_trap_stat(pol),
						      NULL, &c, msg,
						      sizeof(msg))
			      : -1;
		ok(rc == 1 && rc2 == 0 && p.len == c.len &&
			   !memcmp(p.filter, c.filter,
				   p.len * sizeof(struct sock_filter)),
		   "profile %s: built in (%d), the same program", *n, rc);
		free(p.filter);
		free(c.filter);
		policy_free(pol);
	}
	/* What each program answers for every syscall number, and in how
	 * many steps: libseccomp's binary tree, not a chain of compares the
	 * kernel would walk ~450 times when the filter is loaded (its action
	 * cache) and a trapped call once per call. */
	for (int i = 0; i < 2; i++) {
		struct sock_fprog p = { b->len[i],
					(struct sock_filter *)b->prog[i] };
		const uint64_t zero[6] = { 0 };
		unsigned worst = 0, steps = 0, bad = 0, wrong = 0;

		for (int nr = 0; nr < 512; nr++) {
			unsigned act = bpf_eval(&p, nr, AUDIT_ARCH_X86_64, zero,
						&steps);
			char *name = seccomp_syscall_resolve_num_arch(
				SCMP_ARCH_NATIVE, nr);
			unsigned want = SECCOMP_RET_TRACE;

			if (steps > worst)
				worst = steps;
			bad += act == 0xdead;
			if (!name)
				continue;
			if (ward_in_kill_floor(name))
				want = SECCOMP_RET_KILL_PROCESS;
			else if (!strcmp(name, "clone3"))
				want = SECCOMP_RET_ERRNO | ENOSYS;
			for (const char *const *al = tracer_allow_list; *al;
			     al++)
				if (!strcmp(*al, name))
					want = SECCOMP_RET_ALLOW;
			if (!strcmp(name, "openat") ||
			    !strcmp(name, "execve") ||
			    !strcmp(name, "connect") || !strcmp(name, "read") ||
			    !strcmp(name, "ptrace") ||
			    !strcmp(name, "clone3") || !strcmp(name, "bpf"))
				wrong += act != want;
			free(name);
		}
		ok(bad == 0 && wrong == 0 && worst <= 48,
		   "built-in program %d: a binary tree (at most %u of %u "
		   "instructions run for any syscall; %u unreadable, %u "
		   "wrong)",
		   i, worst, (unsigned)p.len, bad, wrong);
		ok(bpf_eval(&p, SYS_read, AUDIT_ARCH_I386, zero, NULL) ==
			   SECCOMP_RET_KILL_PROCESS,
		   "built-in program %d: i386 kills", i);
	}
	const char *raw =
		"{\"version\": 1, \"name\": \"raw\", \"syscalls\": [{\"name\": "
		"\"getuid\", \"action\": \"log\"}]}";
	struct policy *pol = NULL;
	struct sock_fprog p = { 0, NULL };
	int rc = policy_load_string(raw, "raw", &pol, &perr);

	if (rc == 0)
		rc = tracer_filter_build(pol, &p, msg, sizeof(msg));
	ok(rc == 0 && p.len > 0 && p.len != b->len[0],
	   "a raw syscall rule: compiled for the policy (%d, %u instructions)",
	   rc, (unsigned)p.len);
	free(p.filter);
	policy_free(pol);
}

int main(void)
{
	char cwd[512];

	snprintf(tmp, sizeof(tmp), "/tmp/ward-unit-XXXXXX");
	if (!mkdtemp(tmp) || !getcwd(cwd, sizeof(cwd)))
		return 99;
	char *real = realpath(tmp, NULL);
	snprintf(tmp, sizeof(tmp), "%s", real);
	free(real);
	normalize_cases();
	resolve_cases();
	dircache_cases();
	umem_cases();
	args_cases();
	table_cases();
	guard_cases();
	guard_kernel_cases();
	builtin_filter_cases();
	if (chdir(cwd) < 0)
		return 99;
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		ok(0, "cleanup");
	return done_testing();
}
