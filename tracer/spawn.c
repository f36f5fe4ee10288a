/*
 * spawn.c - the child side: from its clone to the interpreter's execve.
 *
 * The child blocks on a pipe until ward has PTRACE_SEIZEd it, so not one
 * syscall of the code runs unwatched. It then sets up, in this order: a new
 * session, stdio on ward's pipes and /dev/null, every other fd closed,
 * rlimits, the Landlock ruleset built, the unprivileged uid/gid (when ward
 * runs as root) with every capability gone, the workdir as cwd,
 * no_new_privs, Landlock applied, the seccomp filter, and execve. A failure is written as text to the set-up error pipe (fd 3,
 * CLOEXEC, so a successful execve closes it) and the child exits 127.
 *
 * The child shares ward's memory (CLONE_VM, start.c) while ward's threads
 * run, so it takes no lock of theirs and writes nothing of ward's but its
 * spawn_ctx and its own stack: no allocation, no stdio, no static
 * variables, no glibc call that acts on all threads (the set*id wrappers)
 * or forks with handlers (fork); only system calls and formatting into its
 * own buffers (ns.c and landlock.c's child side likewise). glibc's
 * wrappers write errno on the spawner thread's TLS, which nothing reads.
 */
#include "tracer-int.h"
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ERR_FD	3
#define SYNC_FD 4

SPAWN_SIDE __attribute__((noreturn)) static void fail(const char *what)
{
	char msg[512];
	int errsv = errno;
	int n = snprintf(msg, sizeof(msg), "%s: %s", what, strerror(errsv));

	if (n > 0) {
		ssize_t w = write(ERR_FD, msg, (size_t)n);
		(void)w;
	}
	_exit(127);
}

SPAWN_SIDE void spawn_fail(const char *what)
{
	fail(what);
}

SPAWN_SIDE static void set_limit(int res, long long v, long long hard_extra)
{
	struct rlimit rl;

	if (v <= 0)
		return;
	rl.rlim_cur = (rlim_t)v;
	rl.rlim_max = (rlim_t)(v + hard_extra);
	if (setrlimit(res, &rl) < 0)
		fail("setrlimit");
}

SPAWN_SIDE static void drop_caps(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capset, &h, d) < 0)
		fail("capset (drop all capabilities)");
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
}

/* Capabilities are numbered 0 to the kernel's last without a gap: EINVAL
 * is the first number past it. */
SPAWN_SIDE static void drop_bounding_set(void)
{
	for (int cap = 0; cap <= 63; cap++) {
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0)
			continue;
		if (errno == EINVAL && cap > 0)
			break;
		fail("prctl(PR_CAPBSET_DROP)");
	}
}

SPAWN_SIDE static void become_user(const struct tracer_opts *o)
{
	drop_bounding_set();
	/* The system calls, not glibc's wrappers: those change every thread
	 * glibc knows of, and the copy of ward's thread list names threads
	 * this process does not have (waiting on them, or on a lock one of
	 * them held, would never end). */
	if (syscall(SYS_setgroups, 0, NULL) < 0)
		fail("setgroups");
	if (syscall(SYS_setresgid, o->gid, o->gid, o->gid) < 0)
		fail("setresgid");
	if (syscall(SYS_setresuid, o->uid, o->uid, o->uid) < 0)
		fail("setresuid");
	if (getuid() != o->uid || geteuid() != o->uid || getgid() != o->gid)
		fail("uid/gid did not change");
}

SPAWN_SIDE static void reset_signals(void)
{
	sigset_t all;

	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL); /* EINVAL for KILL/STOP/RT internals */
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
}

/* ward's first byte (c->go_first): 'c' when it put us in a memory cgroup,
 * else 'r' (the rlimit is the limit). 0 until it came. */
SPAWN_SIDE void spawn_wait_seized(struct spawn_ctx *c)
{
	if (!c->go_first && read(SYNC_FD, &c->go_first, 1) != 1)
		_exit(127); /* ward went away before seizing us */
}

/* v1 cgroups: enter the slots by writing "0" (this thread, the only one)
 * to their tasks files, which takes no global lock in the kernel
 * (cgroup.c), and tell ward how it went, a byte each (0 or the errno).
 * First: ward waits for this to decide the memory limit's layer. */
SPAWN_SIDE static void enter_cgroups(const struct spawn_fds *f)
{
	unsigned char r[2] = { 0, 0 };

	if (f->cg_ack_w < 0)
		return;
	for (int i = 0; i < 2; i++) {
		if (f->cg_self[i] < 0)
			continue;
		if (write(f->cg_self[i], "0", 1) != 1)
			r[i] = errno > 0 && errno < 256 ? (unsigned char)errno
							: EIO;
		close(f->cg_self[i]);
	}
	if (write(f->cg_ack_w, r, sizeof(r)) != (ssize_t)sizeof(r))
		_exit(127);
	close(f->cg_ack_w);
}

SPAWN_SIDE void spawn_child(struct spawn_ctx *c)
{
	const struct tracer_opts *o = c->o;
	const struct spawn_fds *f = &c->f;
	int null;

	/* TEST ONLY (tests/integ/test_contain.py): a child that takes this
	 * many ms to say how its cgroups went, so that a failed record comes
	 * first. */
	const char *stall = tracer_test_env("WARD_TEST_SPAWN_STALL_MS");
	if (stall)
		usleep((useconds_t)atoi(stall) * 1000);
	enter_cgroups(f);
	reset_signals();
	/* Move our fds out of the way of 0..4 before placing them. */
	int out = fcntl(f->out_w, F_DUPFD_CLOEXEC, 10);
	int err = fcntl(f->err_w, F_DUPFD_CLOEXEC, 10);
	int sync = fcntl(f->sync_r, F_DUPFD_CLOEXEC, 10);
	int ep = fcntl(f->err_pipe_w, F_DUPFD_CLOEXEC, 10);
	int vr = f->view_r >= 0 ? fcntl(f->view_r, F_DUPFD_CLOEXEC, 10) : -1;
	null = o->has_stdin ? fcntl(o->stdin_fd, F_DUPFD_CLOEXEC, 10)
			    : open("/dev/null", O_RDONLY | O_CLOEXEC);
	int code[2] = { -1, -1 };
	int ncode = o->n_code_fds > 2 ? 2 : o->n_code_fds;
	for (int i = 0; i < ncode; i++) {
		code[i] = fcntl(o->code_fds[i], F_DUPFD_CLOEXEC, 10);
		if (code[i] < 0)
			_exit(127);
	}
	if (out < 0 || err < 0 || sync < 0 || ep < 0 || null < 0 ||
	    (f->view_r >= 0 && vr < 0))
		_exit(127);
	if (dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0 ||
	    dup3(ep, ERR_FD, O_CLOEXEC) < 0 || dup2(sync, SYNC_FD) < 0)
		_exit(127);
	/* A session's channels: fds 5, 6 without CLOEXEC (tracer.h). */
	for (int i = 0; i < ncode; i++)
		if (dup2(code[i], SYNC_FD + 1 + i) < 0)
			_exit(127);
	/* The view's word, if any, right after them (CLOEXEC: the init
	 * closes it once read). */
	c->view_fd = -1;
	if (vr >= 0) {
		c->view_fd = SYNC_FD + 1 + ncode;
		if (dup3(vr, c->view_fd, O_CLOEXEC) < 0)
			_exit(127);
	}
	if (syscall(SYS_close_range, SYNC_FD + 1 + ncode + (vr >= 0), ~0U, 0) <
	    0)
		fail("close_range");
	/* In new namespaces: set them up (while ward seizes us and places
	 * us in the run's cgroups) and, once it has, make the code's process,
	 * the init's child, which goes on in spawn_code (ns.c). */
	tracer_ns_child(c);
	spawn_code(c);
}

SPAWN_SIDE void spawn_code(struct spawn_ctx *c)
{
	const struct tracer_opts *o = c->o;
	const struct spawn_fds *f = &c->f;
	char go;

	spawn_wait_seized(c); /* without namespaces: here */
	bool rlimit_as = c->go_first != 'c';

	if (setsid() < 0)
		fail("setsid");
	set_limit(RLIMIT_CPU, o->limits.cpu_s, 1);
	set_limit(RLIMIT_FSIZE, o->limits.fsize_bytes, 0);
	set_limit(RLIMIT_NOFILE, o->limits.nofile, 0);
	set_limit(RLIMIT_CORE, 0, 0);
	struct rlimit nocore = { 0, 0 };
	setrlimit(RLIMIT_CORE, &nocore);
	/* Landlock's rules name files as this process sees them (its own
	 * mounts, once it has them), opened while it may still open any
	 * path; the ruleset is applied after no_new_privs (landlock.c). */
	int landlock = -1;
	if (f->landlock && f->landlock->active) {
		const char *what = "landlock";

		landlock = tracer_landlock_build(f->landlock, &what);
		if (landlock < 0) {
			errno = -landlock;
			fail(what);
		}
	}
	if (o->drop_user)
		become_user(o);
	drop_caps();
	/* The workdir where the policy and HOME say it is: in the run's own
	 * file tree (view.c), or where it is on the host without one. */
	const char *home = f->ns_flags & CLONE_NEWNS ? TRACER_HOME : o->workdir;
	if (o->home && strcmp(o->home, home)) {
		errno = EXDEV;
		fail(f->ns_flags & CLONE_NEWNS
			     ? "the run's file tree shows the workdir at "
			       TRACER_HOME ", but its policy and HOME name "
			       "another path"
			     : "without a mount namespace the workdir cannot be "
			       "shown at " TRACER_HOME
			       ", where its policy and HOME name it");
	}
	if (chdir(home) < 0)
		fail("chdir to the workdir");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		fail("prctl(PR_SET_NO_NEW_PRIVS)");
	if (landlock >= 0) {
		if (syscall(SYS_landlock_restrict_self, landlock, 0) < 0)
			fail("landlock_restrict_self");
		close(landlock);
	}
	/* The second byte: the run is recorded (tracer_opts.record), the
	 * code may start. EOF: ward went away, or could not record it.
	 * Before the filters: a policy may trap read or close. */
	if (read(SYNC_FD, &go, 1) != 1 || go != 'g')
		_exit(127);
	close(SYNC_FD);
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER,
		  o->zygote_handoff_fd > 0 ? &tracer_guard_zyg : &tracer_guard) <
	    0)
		fail("loading the guard seccomp filter");
	/* seccomp(2), not prctl: the guard kills prctl(PR_SET_SECCOMP). */
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, c->filter) < 0)
		fail("loading the seccomp filter");
	/* Last, so that nothing of ward's own (allocations in seccomp_load,
	 * a sanitizer's reserved shadow memory) runs under the code's limit. */
	if (rlimit_as)
		set_limit(RLIMIT_AS, o->limits.memory_bytes, 0);
	execve(o->interpreter, o->argv, o->envp);
	fail("execve of the interpreter");
}
