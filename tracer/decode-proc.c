/*
 * decode-proc.c - programs, new processes, signals and other processes.
 */
#include "tracer-int.h"
#include "args.h"
#include "decode.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define A(i) (si->seccomp.args[i])

enum { ARGV_MAX = 256, ARG_MAX_LEN = 1024 };

/* argv as a JSON array into buf (bounded; "..." marks the cut). */
static int read_argv(pid_t tid, uint64_t argv, char *buf, size_t n)
{
	size_t used = 1;

	buf[0] = '[';
	buf[1] = '\0';
	if (argv == 0)
		goto close;
	uint64_t ptrs[32];
	size_t have = 0, at = 0;

	for (int i = 0; i < ARGV_MAX; i++) {
		uint64_t p;
		char arg[ARG_MAX_LEN];
		char js[ARG_MAX_LEN * 6 + 3];
		int rc;

		if (at == have) {
			/* the next pointers, up to the end of their page */
			uint64_t a = argv + 8u * (unsigned)i;
			size_t room = (4096 - (a & 4095)) / 8;
			have = room < 32 ? room : 32;
			at = 0;
			rc = umem_read(tid, a, ptrs, have * 8);
			if (rc < 0)
				return rc;
		}
		p = ptrs[at++];
		if (p == 0)
			break;
		rc = umem_read_str(tid, p, arg, sizeof(arg));
		if (rc < 0 && rc != -ENAMETOOLONG)
			return rc;
		int jl = args_json_string(js, sizeof(js), arg, strlen(arg));
		if (jl < 0 || used + (size_t)jl + 8 >= n) {
			snprintf(buf + used, n - used, "%s\"...\"",
				 i ? "," : "");
			used = strlen(buf);
			break;
		}
		used += (size_t)snprintf(buf + used, n - used, "%s%s",
					 i ? "," : "", js);
	}
close:
	if (used + 2 <= n) {
		buf[used] = ']';
		buf[used + 1] = '\0';
	}
	return 0;
}

static int exec_common(struct tracer *t, struct tracee *tc,
		       struct ward_event *ev, int dirfd, uint64_t path,
		       uint64_t argv, bool follow)
{
	char js[1200];
	int rc;

	ev->cls = WARD_CLASS_EXEC;
	ev->access = WARD_FS_EXEC;
	rc = decode_path(t, tc, dirfd, path, follow, false, ev);
	if (rc < 0)
		return rc;
	rc = read_argv(tc->tid, argv, js, sizeof(js));
	if (rc < 0)
		return rc;
	args_raw(ev, "argv", js);
	return 0;
}

int dec_execve(struct tracer *t, struct tracee *tc,
	       const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return exec_common(t, tc, ev, RESOLVE_CWD, A(0), A(1), true);
}

int dec_execveat(struct tracer *t, struct tracee *tc,
		 const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	int dirfd = (int)(uint32_t)A(0) == AT_FDCWD ? RESOLVE_CWD
						    : (int)(uint32_t)A(0);
	uint64_t path = A(1);

	if (A(4) & AT_EMPTY_PATH) {
		char c = 1;
		if (umem_read(tc->tid, path, &c, 1) == 0 && c == '\0')
			path = PATH_SELF;
	}
	if (A(4))
		args_fmt(ev, "flags", "%#llx", (unsigned long long)A(4));
	return exec_common(t, tc, ev, dirfd, path, A(2),
			   !(A(4) & AT_SYMLINK_NOFOLLOW));
}

static void clone_common(struct ward_event *ev, unsigned long flags)
{
	ev->cls = WARD_CLASS_PROC;
	ev->clone_flags = flags;
	args_fmt(ev, "flags", "%#lx", flags);
	snprintf(ev->path, sizeof(ev->path), "flags %#lx", flags);
}

int dec_clone(struct tracer *t, struct tracee *tc,
	      const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	(void)t;
	(void)tc;
	clone_common(ev, (unsigned long)A(0));
	return 0;
}

int dec_fork(struct tracer *t, struct tracee *tc,
	     const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	(void)t;
	(void)tc;
	(void)si;
	clone_common(ev, SIGCHLD);
	return 0;
}

int dec_vfork(struct tracer *t, struct tracee *tc,
	      const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	(void)t;
	(void)tc;
	(void)si;
	clone_common(ev, CLONE_VM | CLONE_VFORK | SIGCHLD);
	return 0;
}

/*
 * Pids the code passes are of its own pid namespace (ns.c): in_run says
 * whether one names a tracee, and ward's number goes to the record when
 * it differs.
 */
static bool in_run(struct tracer *t, struct ward_event *ev, const char *key,
		   pid_t pid)
{
	pid_t host = tracer_ns_host_pid(t, pid);

	if (host && host != pid)
		args_int(ev, key, host);
	return host > 0;
}

/* Is every process in group pgid part of the run? A group whose leader is
 * a tracee is; otherwise some tracee must be in it (groups cannot span
 * sessions, and the run is its own session). */
static bool group_in_run(struct tracer *t, pid_t pgid)
{
	bool found = false;

	if (tracer_ns_host_pid(t, pgid))
		return true;
	pthread_mutex_lock(&t->lock);
	for (int b = 0; b < TRACEE_BUCKETS && !found; b++)
		for (struct tracee *x = t->tab[b]; x && !found; x = x->next)
			if (x->tid == x->tgid && tracer_ns_pgrp(x->tid) == pgid)
				found = true;
	pthread_mutex_unlock(&t->lock);
	return found;
}

static void signal_common(struct tracer *t, struct ward_event *ev, pid_t target,
			  int sig, bool in_run)
{
	(void)t;
	ev->cls = WARD_CLASS_SIGNAL;
	ev->sig_target = target;
	ev->sig = sig;
	ev->sig_in_run = in_run;
	args_int(ev, "pid", target);
	args_int(ev, "sig", sig);
	snprintf(ev->path, sizeof(ev->path), "pid %d", (int)target);
}

int dec_kill(struct tracer *t, struct tracee *tc,
	     const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	pid_t pid = (pid_t)(int32_t)A(0);
	bool in;

	(void)tc;
	if (pid > 0)
		in = in_run(t, ev, "host_pid", pid);
	else if (pid == 0)
		in = true; /* own group: inside the run's session */
	else if (pid == -1)
		in = false; /* every process ward's uid may signal */
	else
		in = pid != INT32_MIN && group_in_run(t, -pid);
	signal_common(t, ev, pid, (int)(int32_t)A(1), in);
	return 0;
}

int dec_tkill(struct tracer *t, struct tracee *tc,
	      const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	pid_t tid = (pid_t)(int32_t)A(0);

	(void)tc;
	signal_common(t, ev, tid, (int)(int32_t)A(1),
		      in_run(t, ev, "host_tid", tid));
	return 0;
}

static bool thread_in_run(struct tracer *t, struct ward_event *ev, pid_t tgid,
			  pid_t tid)
{
	pid_t host = in_run(t, ev, "host_tid", tid) ? tracer_ns_host_pid(t, tid)
						    : 0;
	struct tracee *x = host ? tracee_find(t, host) : NULL;

	return x && x->tgid == tracer_ns_host_pid(t, tgid);
}

int dec_tgkill(struct tracer *t, struct tracee *tc,
	       const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	pid_t tgid = (pid_t)(int32_t)A(0), tid = (pid_t)(int32_t)A(1);

	(void)tc;
	signal_common(t, ev, tid, (int)(int32_t)A(2),
		      thread_in_run(t, ev, tgid, tid));
	args_int(ev, "tgid", tgid);
	return 0;
}

int dec_rt_sigqueueinfo(struct tracer *t, struct tracee *tc,
			const struct ptrace_syscall_info *si,
			struct ward_event *ev)
{
	pid_t pid = (pid_t)(int32_t)A(0);

	(void)tc;
	signal_common(t, ev, pid, (int)(int32_t)A(1),
		      in_run(t, ev, "host_pid", pid));
	return 0;
}

int dec_rt_tgsigqueueinfo(struct tracer *t, struct tracee *tc,
			  const struct ptrace_syscall_info *si,
			  struct ward_event *ev)
{
	pid_t tgid = (pid_t)(int32_t)A(0), tid = (pid_t)(int32_t)A(1);

	(void)tc;
	signal_common(t, ev, tid, (int)(int32_t)A(2),
		      thread_in_run(t, ev, tgid, tid));
	return 0;
}

/* The pid a tracee's pidfd refers to, from /proc/TID/fdinfo; 0 if none. */
static pid_t pidfd_target(pid_t tid, int fd)
{
	char what[48], buf[1024];
	char *p;

	snprintf(what, sizeof(what), "fdinfo/%d", fd);
	if (proc_read(tid, what, buf, sizeof(buf)) <= 0)
		return 0;
	p = strstr(buf, "\nPid:");
	return p ? (pid_t)atoi(p + 5) : 0;
}

int dec_pidfd_send_signal(struct tracer *t, struct tracee *tc,
			  const struct ptrace_syscall_info *si,
			  struct ward_event *ev)
{
	pid_t pid = pidfd_target(tc->tid, (int)(int32_t)A(0));

	signal_common(t, ev, pid, (int)(int32_t)A(1),
		      pid > 0 && tracee_find(t, pid));
	args_int(ev, "pidfd", (int)(int32_t)A(0));
	return 0;
}

int dec_pidfd_open(struct tracer *t, struct tracee *tc,
		   const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	pid_t pid = (pid_t)(int32_t)A(0);

	(void)tc;
	signal_common(t, ev, pid, 0, in_run(t, ev, "host_pid", pid));
	return 0;
}

/* prlimit64 on another process (pid 0, itself, stays in the kernel). */
int dec_prlimit64(struct tracer *t, struct tracee *tc,
		  const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	pid_t pid = (pid_t)(int32_t)A(0);

	(void)tc;
	signal_common(t, ev, pid, 0, in_run(t, ev, "host_pid", pid));
	args_int(ev, "resource", (int)(int32_t)A(1));
	return 0;
}

int dec_other(struct tracer *t, struct tracee *tc,
	      const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	char js[256];

	(void)t;
	(void)tc;
	ev->cls = WARD_CLASS_OTHER;
	for (int i = 0; i < 6; i++)
		ev->raw_args[i] = A(i);
	snprintf(
		js, sizeof(js),
		"[\"%#llx\",\"%#llx\",\"%#llx\",\"%#llx\",\"%#llx\",\"%#llx\"]",
		(unsigned long long)A(0), (unsigned long long)A(1),
		(unsigned long long)A(2), (unsigned long long)A(3),
		(unsigned long long)A(4), (unsigned long long)A(5));
	args_raw(ev, "args", js);
	return 0;
}
