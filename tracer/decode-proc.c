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

/* A NULL-terminated array of strings (argv, envp) in the tracee: its
 * pointers read a run at a time (up to the end of their page), its strings
 * a page at a time (umem_read_str_win). */
struct str_array {
	uint64_t ptrs[32];
	size_t have, at;
	struct umem_page pg;
};

static void str_array_init(struct str_array *pr)
{
	pr->have = pr->at = 0;
	pr->pg.addr = 0;
}

/* The i-th pointer (the calls go 0, 1, 2, ...), or -errno. */
static int next_ptr(pid_t tid, struct str_array *pr, uint64_t array, int i,
		    uint64_t *p)
{
	if (pr->at == pr->have) {
		uint64_t a = array + 8u * (unsigned)i;
		size_t room = (4096 - (a & 4095)) / 8;
		int rc;

		pr->have = room < 32 ? room : 32;
		pr->at = 0;
		rc = umem_read(tid, a, pr->ptrs, pr->have * 8);
		if (rc < 0) {
			pr->have = 0;
			return rc;
		}
	}
	*p = pr->ptrs[pr->at++];
	return 0;
}

/* argv as a JSON array into buf (bounded; "..." marks the cut). */
static int read_argv(pid_t tid, uint64_t argv, char *buf, size_t n)
{
	static struct str_array pr;
	size_t used = 1;

	buf[0] = '[';
	buf[1] = '\0';
	if (argv == 0)
		goto close;
	str_array_init(&pr);
	for (int i = 0; i < ARGV_MAX; i++) {
		uint64_t p;
		char arg[ARG_MAX_LEN];
		char js[ARG_MAX_LEN * 6 + 3];
		int rc = next_ptr(tid, &pr, argv, i, &p);

		if (rc < 0)
			return rc;
		if (p == 0)
			break;
		rc = umem_read_str_win(tid, &pr.pg, p, arg, sizeof(arg));
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

/*
 * Variables that make the dynamic loader or libc load code or read files
 * the program did not ask for: never passed to a new program.
 */
static bool loader_var(const char *kv)
{
	static const char *const names[] = {
		"LD_PRELOAD=",	    "LD_AUDIT=",	 "LD_LIBRARY_PATH=",
		"LD_ORIGIN_PATH=",  "LD_PROFILE=",	 "LD_DEBUG_OUTPUT=",
		"LD_DYNAMIC_WEAK=", "LD_USE_LOAD_BIAS=", "LD_BIND_NOT=",
		"GCONV_PATH=",	    "GLIBC_TUNABLES=",	 "MALLOC_TRACE=",
		"LOCPATH=",	    "NLSPATH=",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strncmp(kv, names[i], strlen(names[i])) == 0)
			return true;
	return false;
}

/*
 * The new program's environment, copied for the kernel (the code cannot
 * add a variable after the check) without the loader's variables. The
 * names removed go to the record. The strings go first in the slot, then
 * the pointer array (made addresses by relocation). With nothing removed,
 * each piece read is noted: the environment stays in place when no other
 * task can write any of them (copy.c).
 */
static int copy_env(struct tracer *t, struct tracee *tc,
		    const struct ptrace_syscall_info *si, int envi,
		    struct ward_event *ev)
{
	enum { ENV_MAX = COPY_RELOCS - 1 };
	static uint64_t offs[COPY_RELOCS];
	static struct str_array pr;
	uint64_t envp = A(envi), ptr;
	char kv[WARD_PATH_MAX];
	char removed[512] = "[";
	size_t rlen = 1;
	int n = 0, rc;
	long at;

	if (envp == 0)
		return 0; /* NULL: an empty environment, in a register */
	str_array_init(&pr);
	for (int i = 0;; i++) {
		if (i == ENV_MAX)
			return -E2BIG;
		rc = next_ptr(tc->tid, &pr, envp, i, &ptr);
		if (rc < 0)
			return rc;
		if (ptr == 0)
			break;
		rc = umem_read_str_win(tc->tid, &pr.pg, ptr, kv, sizeof(kv));
		if (rc == -ENAMETOOLONG)
			return -E2BIG; /* ward copies at most a page each */
		if (rc < 0)
			return rc;
		if (loader_var(kv)) {
			char js[160];
			size_t eq = strcspn(kv, "=");
			int jl = args_json_string(js, sizeof(js), kv,
						  eq < 64 ? eq : 64);
			if (jl > 0 && rlen + (size_t)jl + 3 < sizeof(removed))
				rlen += (size_t)snprintf(
					removed + rlen, sizeof(removed) - rlen,
					"%s%s", rlen > 1 ? "," : "", js);
			continue;
		}
		size_t len = strlen(kv) + 1;
		at = copy_put(&t->cp, kv, len, 1);
		if (at < 0)
			return (int)at;
		offs[n++] = (uint64_t)at;
		rc = copy_piece(&t->cp, ptr, len);
		if (rc < 0)
			return rc;
	}
	offs[n] = 0;
	at = copy_put(&t->cp, offs, 8u * (unsigned)(n + 1), 8);
	if (at < 0)
		return (int)at;
	for (int i = 0; i < n; i++) {
		rc = copy_reloc(&t->cp, (size_t)at + 8u * (unsigned)i);
		if (rc < 0)
			return rc;
	}
	/* the array read: n pointers and the NULL after them */
	if (rlen == 1 && copy_piece(&t->cp, envp, 8u * (unsigned)(n + 1)) == 0)
		copy_arg_at_pieces(&t->cp, envi, (uint64_t)at);
	else
		copy_arg_at(&t->cp, envi, (uint64_t)at);
	if (rlen > 1) {
		snprintf(removed + rlen, sizeof(removed) - rlen, "]");
		args_raw(ev, "env_removed", removed);
	}
	return 0;
}

/* argv is recorded as passed; what runs is read again from the new image
 * at PTRACE_EVENT_EXEC (loop.c), so a change after the check shows. */
static int exec_common(struct tracer *t, struct tracee *tc,
		       struct ward_event *ev,
		       const struct ptrace_syscall_info *si, int dirfd,
		       int pathi, int argvi, int envi, bool follow)
{
	char js[1200];
	int rc;

	ev->cls = WARD_CLASS_EXEC;
	ev->access = WARD_FS_EXEC;
	rc = decode_path(t, tc, dirfd, si, pathi, follow, false, ev);
	if (rc < 0)
		return rc;
	rc = read_argv(tc->tid, A(argvi), js, sizeof(js));
	if (rc < 0)
		return rc;
	args_raw(ev, "argv", js);
	return copy_env(t, tc, si, envi, ev);
}

int dec_execve(struct tracer *t, struct tracee *tc,
	       const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return exec_common(t, tc, ev, si, RESOLVE_CWD, 0, 1, 2, true);
}

int dec_execveat(struct tracer *t, struct tracee *tc,
		 const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	int dirfd = (int)(uint32_t)A(0) == AT_FDCWD ? RESOLVE_CWD
						    : (int)(uint32_t)A(0);
	int pathi = 1;

	if (A(4) & AT_EMPTY_PATH) {
		char c = 1;
		if (umem_read(tc->tid, A(1), &c, 1) == 0 && c == '\0')
			pathi = 1 | PATH_EMPTY;
	}
	if (A(4))
		args_fmt(ev, "flags", "%#llx", (unsigned long long)A(4));
	return exec_common(t, tc, ev, si, dirfd, pathi, 2, 3,
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

	if (!host) /* ended, its parent not told yet: still the run's */
		host = tracer_ns_unreaped(t, pid, false);
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
	/* members that have ended but are not yet reaped still hold the
	 * group (the kernel signals it without error) */
	return found || tracer_ns_unreaped(t, pgid, true);
}

/* target is the pid the signal goes to, as passed (pidfd_send_signal: as
 * ward sees it); ev->raw says what the code passed, "pid N" unless the
 * caller writes another form. */
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
	memcpy(ev->raw, ev->path, strlen(ev->path) + 1);
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
	snprintf(ev->raw, sizeof(ev->raw), "tid %d", (int)tid);
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
	snprintf(ev->raw, sizeof(ev->raw), "tgid %d tid %d", (int)tgid,
		 (int)tid);
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
	snprintf(ev->raw, sizeof(ev->raw), "tgid %d tid %d", (int)tgid,
		 (int)tid);
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
	snprintf(ev->raw, sizeof(ev->raw), "pidfd %d", (int)(int32_t)A(0));
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
