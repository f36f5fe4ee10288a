/*
 * loop.c - tracer_run: spawn, seize, and the event loop.
 *
 *   while ((pid = wait4(-1, &status, __WALL, &ru)) >= 0)
 *           handle_status(t, pid, status, &ru);
 *
 * Stops are sorted into kinds, one handler each: seccomp (decode, decide,
 * apply, record), fork/vfork/clone (a new tracee), exec (re-check the
 * program, record it), exit, group-stop (PTRACE_LISTEN) and
 * signal-delivery (the signal goes on to the code). Decisions are applied
 * in one place, apply_verdict(). The run ends when the last tracee is gone.
 */
#include "tracer-int.h"
#include "args.h"
#include "decode.h"
#include "pyframe.h"
#include "spawn.h"

#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/errnames.h"
#include "../common/log.h"

#define X32_SYSCALL_BIT	    0x40000000
#define MAX_DENIAL_LIST	    1000
#define MAX_PRINTED_DENIALS 50
#define NAME_CACHE	    1024

static char *name_cache[NAME_CACHE];

long long tracer_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Syscall name for nr (static or cached for the process lifetime). */
static const char *syscall_name(long nr)
{
	const struct syscall_desc *d = tracer_syscall_desc(nr);

	if (d)
		return d->name;
	if (nr < 0 || nr >= NAME_CACHE)
		return "unknown";
	if (!name_cache[nr]) {
		char *n = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE,
							   (int)nr);
		if (!n)
			return "unknown";
		name_cache[nr] = n;
	}
	return name_cache[nr];
}

/* ------------------------------------------------------------------ */
/* the tracee table                                                    */

static unsigned bucket(pid_t tid)
{
	return (unsigned)tid % TRACEE_BUCKETS;
}

struct tracee *tracee_find(struct tracer *t, pid_t tid)
{
	struct tracee *x;

	pthread_mutex_lock(&t->lock);
	for (x = t->tab[bucket(tid)]; x; x = x->next)
		if (x->tid == tid)
			break;
	pthread_mutex_unlock(&t->lock);
	return x;
}

/* Reads "Tgid:" and "PPid:" from /proc/TID/status. */
static void proc_ids(pid_t tid, pid_t *tgid, pid_t *ppid)
{
	char buf[2048];
	char *p;

	*tgid = tid;
	*ppid = 0;
	if (proc_read(tid, "status", buf, sizeof(buf)) <= 0)
		return;
	if ((p = strstr(buf, "\nTgid:")))
		*tgid = (pid_t)atoi(p + 6);
	if ((p = strstr(buf, "\nPPid:")))
		*ppid = (pid_t)atoi(p + 6);
}

/* Field 22 of /proc/TID/stat: start time in clock ticks since boot. */
static long long proc_start_ticks(pid_t tid)
{
	char buf[1024];
	const char *f = proc_stat_fields(tid, buf, sizeof(buf));
	long long ticks = 0;

	if (!f || sscanf(f,
			 "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u "
			 "%*u %*d %*d %*d %*d %*d %*d %llu",
			 &ticks) != 1)
		return 0;
	return ticks;
}

/* exe and argv (as JSON) of a process, from /proc. */
static void proc_exe_argv(pid_t pid, char *exe, size_t en, char *argv,
			  size_t an)
{
	char path[64], buf[8192];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, exe, en - 1);
	exe[n > 0 ? n : 0] = '\0';

	snprintf(argv, an, "[]");
	n = proc_read(pid, "cmdline", buf, sizeof(buf));
	if (n <= 0)
		return;
	size_t used = 1, i = 0;
	argv[0] = '[';
	while (i < (size_t)n) {
		size_t len = strnlen(buf + i, (size_t)n - i);
		char js[2048];
		int jl = args_json_string(js, sizeof(js), buf + i,
					  len > 512 ? 512 : len);
		if (jl < 0 || used + (size_t)jl + 3 >= an)
			break;
		used += (size_t)snprintf(argv + used, an - used, "%s%s",
					 used > 1 ? "," : "", js);
		i += len + 1;
	}
	snprintf(argv + used, an - used, "]");
}

/*
 * Who a new tracee is. From the event that announced it when there is one
 * (by: the thread that forked or cloned it, whose clone flags ward saw):
 * nothing to read. Otherwise (its first stop came before that event) from
 * /proc.
 */
static void identify(struct tracer *t, struct tracee *x,
		     const struct tracee *by, struct tracee **parent)
{
	char exe[WARD_PATH_MAX], argv[4096];

	if (by) {
		struct tracee *p = tracee_find(t, by->tgid);
		bool thread = by->clone_flags & CLONE_THREAD;

		x->tgid = thread ? by->tgid : x->tid;
		x->ppid = thread || (by->clone_flags & CLONE_PARENT)
				  ? (p ? p->ppid : 0)
				  : by->tgid;
		*parent = thread ? p : tracee_find(t, x->ppid);
		x->vfork_child = !thread &&
				 (by->clone_flags & (CLONE_VM | CLONE_VFORK)) ==
					 (CLONE_VM | CLONE_VFORK);
		if (!thread && p && p->exe) {
			x->exe = strdup(p->exe);
			x->argv = p->argv ? strdup(p->argv) : NULL;
		}
		return;
	}
	proc_ids(x->tid, &x->tgid, &x->ppid);
	*parent = tracee_find(t, x->tgid != x->tid ? x->tgid : x->ppid);
	if (x->tgid != x->tid)
		return;
	proc_exe_argv(x->tid, exe, sizeof(exe), argv, sizeof(argv));
	x->exe = exe[0] ? strdup(exe) : NULL;
	x->argv = strdup(argv);
}

/* A tracee seen for the first time: add it and record it. by: see
 * identify(); may be NULL. */
static struct tracee *tracee_add(struct tracer *t, pid_t tid,
				 const struct tracee *by)
{
	struct tracee *x = calloc(1, sizeof(*x));
	struct tracee *parent = NULL;

	if (!x)
		return NULL;
	x->tid = tid;
	x->slot = -1;
	identify(t, x, by, &parent);
	scratch_attach(t, x); /* its address space, counted from now */
	pthread_mutex_lock(&t->lock);
	x->serial = ++t->next_serial;
	x->next = t->tab[bucket(tid)];
	t->tab[bucket(tid)] = x;
	t->live++;
	pthread_mutex_unlock(&t->lock);
	/* After it is in the table: an unpin on the output thread (pin.c)
	 * either finds it there or has set t->unpinned before we look. */
	tracer_pin_follow(t, tid);
	t->res->processes++;

	struct audit_process ap = {
		.serial = x->serial,
		.parent_serial = parent ? parent->serial : 0,
		.pid = tid,
		.tgid = x->tgid,
		.ppid = x->ppid,
		.kind = tid == x->tgid ? "process" : "thread",
		.start_ns = tracer_now_ns(),
		.start_ticks = proc_start_ticks(tid),
		.exe = x->exe,
		.argv_json = x->argv,
	};
	if (tid != x->tgid) {
		struct tracee *leader = tracee_find(t, x->tgid);
		ap.exe = leader ? leader->exe : NULL;
	}
	evq_process_start(t, &ap);
	if (atomic_load(&t->stop_reason) != STOP_NONE)
		kill(tid, SIGKILL); /* born after the run was stopped */
	return x;
}

static void tracee_free(struct tracee *x)
{
	scratch_detach(x);
	free(x->ask_key);
	free(x->ask_target);
	free(x->ask_question);
	free(x->exe);
	free(x->argv);
	free(x);
}

/* tc's allowed clone is over: its new task is a tracee now, or it
 * failed (tc stops again, or ends, without its event). */
static void clone_done(struct tracer *t, struct tracee *tc)
{
	if (!tc->clone_pending)
		return;
	tc->clone_pending = false;
	t->clones_pending--;
}

/* tc's held row goes to the queue: with the call's result when has, or
 * without one (the call never returned: a successful exec, the thread's
 * end). */
static void release_pending(struct tracer *t, struct tracee *tc, bool has,
			    long long result)
{
	tc->exit_stop = false;
	evq_resolve(t, tc->tid, -1, has, result);
}

/* tc ended, or ran a new program: its held row, with the result the
 * kernel wrote if its call returned first (retbpf.c), else none. */
static void release_ended(struct tracer *t, struct tracee *tc)
{
	if (!evq_held(t, tc->tid))
		return;
	retbpf_drain(t);
	release_pending(t, tc, false, 0);
}

/* Continue tc; to its syscall's exit stop when its row waits there for
 * the call's result. */
static void resume(struct tracee *tc)
{
	ptrace(tc->exit_stop ? PTRACE_SYSCALL : PTRACE_CONT, tc->tid, 0, 0);
}

static void tracee_remove(struct tracer *t, struct tracee *gone)
{
	clone_done(t, gone);	/* ended in its clone */
	release_ended(t, gone); /* ended in its call, or after it */
	tracer_ask_gone(t, gone); /* ended while it was asked */
	pthread_mutex_lock(&t->lock);
	for (struct tracee **pp = &t->tab[bucket(gone->tid)]; *pp;
	     pp = &(*pp)->next) {
		if (*pp == gone) {
			*pp = gone->next;
			t->live--;
			break;
		}
	}
	pthread_mutex_unlock(&t->lock);
	tracee_free(gone);
}

void tracer_stop(struct tracer *t, enum stop_reason why, const char *cause)
{
	int none = STOP_NONE;

	pthread_mutex_lock(&t->lock);
	if (atomic_compare_exchange_strong(&t->stop_reason, &none, (int)why))
		snprintf(t->stop_cause, sizeof(t->stop_cause), "%s", cause);
	for (int b = 0; b < TRACEE_BUCKETS; b++)
		for (struct tracee *x = t->tab[b]; x; x = x->next)
			kill(x->tid, SIGKILL);
	for (int i = 0; i < t->nparked; i++)
		kill(t->parked[i].tid, SIGKILL);
	/* an init that never made the code's process (or still lives) is no
	 * tracee */
	if (t->ns.init_fd >= 0)
		syscall(SYS_pidfd_send_signal, t->ns.init_fd, SIGKILL, NULL, 0);
	/* a zygote fork's set-up processes are no tracees either */
	if (tracer_zyg_pending(t)) {
		if (t->zyg.a > 0)
			kill(t->zyg.a, SIGKILL);
		if (t->zyg.b > 0)
			kill(t->zyg.b, SIGKILL);
	}
	pthread_mutex_unlock(&t->lock);
}

/* ------------------------------------------------------------------ */
/* applying a verdict                                                  */

/* The target as recorded: ev->path itself for most events (no copy on
 * the stop path), else formatted into buf. */
static const char *event_target(const struct ward_event *ev, char *buf,
				size_t n)
{
	const struct ward_sockaddr *sa = &ev->sa;

	if (ev->cls == WARD_CLASS_NET) {
		if (ev->net_op == WARD_NET_SOCKET)
			snprintf(buf, n, "family %d", ev->sock_family);
		else if (!sa->present)
			snprintf(buf, n, "(no address)");
		else if (sa->family == AF_UNIX)
			snprintf(buf, n, "unix:%s%s", sa->abstract ? "@" : "",
				 sa->unix_path);
		else if (sa->family == AF_INET6 && !sa->v4mapped)
			snprintf(buf, n, "[%s]:%d", sa->addr, sa->port);
		else if (sa->addr[0])
			snprintf(buf, n, "%s:%d", sa->addr, sa->port);
		else
			snprintf(buf, n, "family %d", sa->family);
		return buf;
	}
	if (ev->cls == WARD_CLASS_FS && ev->has_path2) {
		snprintf(buf, n, "%s -> %s", ev->path, ev->path2);
		return buf;
	}
	return ev->path;
}

static void note_denial(struct tracer *t, const struct ward_event *ev,
			const struct policy_verdict *v, const char *target)
{
	struct tracer_result *r = t->res;
	const char *action = v->action == POLICY_KILL ? "kill"
			     : v->would_deny	      ? "would-deny"
						      : "deny";

	if (t->o->print_denials && r->denials <= MAX_PRINTED_DENIALS)
		fprintf(stderr, "ward: %s %s %s: rule %s: %s%s%s\n", action,
			ev->name, target, v->rule, v->reason,
			v->err ? " -> " : "",
			v->err ? ward_errno_name(v->err) : "");
	if (t->o->print_denials && r->denials == MAX_PRINTED_DENIALS + 1)
		fprintf(stderr,
			"ward: more than %d denials: the rest are "
			"recorded, not printed (ward show last --denied)\n",
			MAX_PRINTED_DENIALS);
	if (r->n_denials >= MAX_DENIAL_LIST)
		return;
	if (r->n_denials % 16 == 0) {
		struct tracer_denial *nl = realloc(
			r->denial_list, (r->n_denials + 16) * sizeof(*nl));
		if (!nl)
			return;
		r->denial_list = nl;
	}
	struct tracer_denial *d = &r->denial_list[r->n_denials++];
	snprintf(d->syscall, sizeof(d->syscall), "%s", ev->name);
	snprintf(d->target, sizeof(d->target), "%s", target);
	snprintf(d->action, sizeof(d->action), "%s",
		 v->would_deny ? "audit" : action);
	snprintf(d->rule, sizeof(d->rule), "%s", v->rule);
	d->err = v->err;
}

/* The raw column (docs/schema.md): ev->raw for paths and signals (no copy
 * on the stop path), an address formatted into buf, or NULL. */
static const char *event_raw(const struct ward_event *ev, char *buf, size_t n)
{
	if (ev->cls == WARD_CLASS_NET)
		return tracer_net_raw(ev, buf, n);
	return ev->raw[0] ? ev->raw : NULL;
}

/* How a row gets its result (events.result). */
enum rec_result {
	RES_NONE, /* never returns (killed) */
	RES_ERR,  /* ward answered -v->err itself (denied, or skipped) */
	RES_EXIT, /* the kernel runs it: held until its exit stop */
};

/* 0, or -EIO when the record failed (the run is then stopped: a denial
 * or kill is committed and synced before the code goes past it). */
static int record_event(struct tracer *t, struct tracee *tc,
			const struct ward_event *ev,
			const struct policy_verdict *v, const char *target,
			const char *bt, enum rec_result res)
{
	char rbuf[TRACER_NET_RAW_MAX];
	static const char *const decisions[] = {
		[POLICY_ALLOW] = "allow",
		[POLICY_DENY] = "deny",
		[POLICY_KILL] = "kill",
	};
	struct audit_event e = {
		.ts_ns = tracer_now_ns(),
		.pid = tc->tgid,
		.tid = tc->tid,
		.proc_serial = tc->serial,
		.nr = ev->nr,
		.syscall = ev->name,
		.args_json = ev->args_json[0] ? ev->args_json : "{}",
		.raw = event_raw(ev, rbuf, sizeof(rbuf)),
		.target = target[0] ? target : NULL,
		.decision = decisions[v->action],
		.rule = v->rule,
		.reason = v->reason,
		/* for an allow: the errno ward answered itself, if any */
		.err = v->action == POLICY_DENY || !v->would_deny ? v->err : 0,
		.would_deny = v->would_deny,
		.backtrace = bt,
		.pyframes = t->pyf[0] ? t->pyf : NULL, /* untrusted */
		.has_result = res == RES_ERR,
		.result = res == RES_ERR ? -(long long)v->err : 0,
	};

	t->res->events++;
	if (res == RES_EXIT)
		return evq_hold(t, tc->tid, &e, !tc->exit_stop);
	if (v->action == POLICY_ALLOW)
		return evq_push(t, &e);
	return evq_write_now(t, &e);
}

/* Skip the syscall: number -1, return value -err (x86_64). */
static int skip_syscall(pid_t tid, int err)
{
	if (ptrace(PTRACE_POKEUSER, tid,
		   offsetof(struct user_regs_struct, orig_rax),
		   (void *)-1L) < 0)
		return -errno;
	if (ptrace(PTRACE_POKEUSER, tid, offsetof(struct user_regs_struct, rax),
		   (void *)(long)-err) < 0)
		return -errno;
	return 0;
}

/* A connect or send to a unix socket path that does not exist. */
static bool missing_unix_peer(const struct ward_event *ev)
{
	return ev->cls == WARD_CLASS_NET && ev->sa.present &&
	       ev->sa.family == AF_UNIX && !ev->sa.abstract &&
	       ev->sa.unix_path[0] && !ev->exists &&
	       (ev->net_op == WARD_NET_CONNECT || ev->net_op == WARD_NET_SEND);
}

/* An allowed exec: the program the kernel must run, by name and by file
 * (looked up in the tracee's own view of the file system). */
static void exec_approved(struct tracee *tc, const struct ward_event *ev)
{
	char where[WARD_PATH_MAX + 32];
	struct stat st;

	tc->in_exec = true;
	snprintf(tc->exec_path, sizeof(tc->exec_path), "%s", ev->path);
	tc->exec_dev = 0;
	tc->exec_ino = 0;
	snprintf(where, sizeof(where), "/proc/%d/root%s", (int)tc->tid,
		 ev->path);
	if (stat(where, &st) == 0) {
		tc->exec_dev = st.st_dev;
		tc->exec_ino = st.st_ino;
	}
}

/* The one place where decisions take effect. */
static void apply_verdict(struct tracer *t, struct tracee *tc,
			  const struct ward_event *ev,
			  const struct policy_verdict *v)
{
	char buf[WARD_PATH_MAX * 2 + 8];
	const char *target = event_target(ev, buf, sizeof(buf));
	const char *bt = NULL;
	int copied;
	struct policy_verdict no;

	if (v->action == POLICY_ASK) {
		/* every question is answered before (ask.c): never here,
		 * but if so, no */
		no = *v;
		no.action = POLICY_DENY;
		no.err = v->err ? v->err : EACCES;
		v = &no;
	}
	if (v->backtrace &&
	    tracer_backtrace(tc->tid, tc->tgid, t->bt, sizeof(t->bt)) == 0)
		bt = t->bt;
	/* the Python frames, from the code's memory: recorded, never
	 * judged ("" when not CPython or nothing to read) */
	t->pyf[0] = '\0';
	if (v->backtrace)
		tracer_pyframes(tc->tid, tc->tgid, tracer_ns_pid(t, tc->tid),
				t->pyf, sizeof(t->pyf));

	switch (v->action) {
	case POLICY_ALLOW:
		if (ev->cls == WARD_CLASS_EXEC)
			exec_approved(tc, ev);
		if (missing_unix_peer(ev)) {
			/* Answer for the kernel: a socket appearing there
			 * between the check and the call must not be reached. */
			struct policy_verdict a = *v;
			a.err = ENOENT;
			if (skip_syscall(tc->tid, ENOENT) == 0)
				ptrace(PTRACE_CONT, tc->tid, 0, 0);
			record_event(t, tc, ev, &a, target, bt, RES_ERR);
			break;
		}
		/* The kernel reads ward's copies of the arguments; the code
		 * runs on while ward records. */
		copied = scratch_apply(t, tc);
		if (copied == -EAGAIN) {
			/* Every slot is held by a syscall still in flight
			 * (64 threads blocked in checked calls): this one
			 * fails and may be tried again. */
			struct policy_verdict d = *v;
			d.action = POLICY_DENY;
			d.err = EAGAIN;
			d.rule = "copy";
			snprintf(d.reason, sizeof(d.reason),
				 "%s: no free slot for the argument copies",
				 ev->name);
			record_event(t, tc, ev, &d, target, bt, RES_ERR);
			t->res->denials++;
			note_denial(t, ev, &d, target);
			if (skip_syscall(tc->tid, EAGAIN) == 0)
				ptrace(PTRACE_CONT, tc->tid, 0, 0);
			break;
		}
		if (copied < 0) {
			char cause[160];
			snprintf(cause, sizeof(cause),
				 "%s: the checked arguments could not be "
				 "copied (%s)",
				 ev->name, strerror(-copied));
			struct policy_verdict k = *v;
			k.action = POLICY_KILL;
			k.rule = "copy";
			snprintf(k.reason, sizeof(k.reason), "%s", cause);
			record_event(t, tc, ev, &k, target, bt, RES_NONE);
			tracer_stop(t, STOP_POLICY, cause);
			break;
		}
		/* The row waits for the call's result: from the kernel's
		 * sys_exit (retbpf.c; held before the thread goes on), or at
		 * its exit stop, before the code runs on. The stop it takes
		 * when its copies are given back there, before ward's code
		 * runs, and for a would-be denial (so that a session's result
		 * cannot overtake it: copy_side). */
		tc->exit_stop = copied || v->would_deny || !tc->execed ||
				!retbpf_covers(t, ev->nr);
		if (tc->exit_stop) {
			ptrace(PTRACE_SYSCALL, tc->tid, 0, 0);
			record_event(t, tc, ev, v, target, bt, RES_EXIT);
		} else {
			record_event(t, tc, ev, v, target, bt, RES_EXIT);
			ptrace(PTRACE_CONT, tc->tid, 0, 0);
		}
		if (v->would_deny) {
			t->res->denials++;
			note_denial(t, ev, v, target);
		}
		break;
	case POLICY_ASK: /* made a denial above */
	case POLICY_DENY:
		if (record_event(t, tc, ev, v, target, bt, RES_ERR) < 0)
			return; /* killed (evq_failed): it goes no further */
		t->res->denials++;
		note_denial(t, ev, v, target);
		if (skip_syscall(tc->tid, v->err) < 0) {
			if (errno != ESRCH)
				tracer_stop(
					t, STOP_POLICY,
					"a denied syscall could not be skipped");
			return;
		}
		ptrace(PTRACE_CONT, tc->tid, 0, 0);
		break;
	case POLICY_KILL: {
		char cause[256];
		record_event(t, tc, ev, v, target, bt, RES_NONE);
		t->res->denials++;
		note_denial(t, ev, v, target);
		snprintf(cause, sizeof(cause), "policy kill: %s %s (rule %s)",
			 ev->name, target, v->rule);
		tracer_stop(t, STOP_POLICY, cause);
		break;
	}
	}
}

/* ------------------------------------------------------------------ */
/* stop handlers                                                       */

static void deny_with(struct policy_verdict *v, int err, const char *rule,
		      const char *reason)
{
	v->action = POLICY_DENY;
	v->err = err;
	v->rule = rule;
	v->would_deny = false;
	v->log = false;
	v->backtrace = true;
	snprintf(v->reason, sizeof(v->reason), "%s", reason);
}

/* A limit of the run's reached at this call: the run ends with it, the
 * call killed and recorded under rule. */
static void limit_kill(struct tracer *t, struct tracee *tc,
		       const struct ward_event *ev, struct policy_verdict *v,
		       const char *rule, const char *cause, bool backtrace)
{
	tracer_stop(t, STOP_LIMIT, cause);
	deny_with(v, 0, rule, cause);
	v->action = POLICY_KILL;
	v->backtrace = backtrace;
	apply_verdict(t, tc, ev, v);
}

static void on_seccomp(struct tracer *t, struct tracee *tc)
{
	struct ptrace_syscall_info si;
	struct ward_event *ev = &t->ev;
	struct policy_verdict v;
	const struct syscall_desc *d;
	int rc;

	clone_done(t, tc); /* a clone that failed: its next syscall */
	/* its last call returned: its result, before this call's row (the
	 * ring is read without a lock on the held rows: every trapped call
	 * passes here) */
	if (t->rb && atomic_load(&t->n_held))
		retbpf_drain(t);
	memset(&si, 0, sizeof(si));
	if (ptrace(PTRACE_GET_SYSCALL_INFO, tc->tid, sizeof(si), &si) < 0) {
		if (errno != ESRCH)
			tracer_stop(t, STOP_POLICY,
				    "PTRACE_GET_SYSCALL_INFO failed");
		return;
	}
	if (si.op != PTRACE_SYSCALL_INFO_SECCOMP ||
	    si.arch != AUDIT_ARCH_X86_64 || (si.seccomp.nr & X32_SYSCALL_BIT)) {
		/* The filter kills foreign ABIs; reaching here is a bug. */
		tracer_stop(t, STOP_POLICY, "syscall from a foreign ABI");
		return;
	}
	ward_event_reset(ev);
	copy_reset(&t->cp);
	memcpy(t->cp.args, si.seccomp.args, sizeof(t->cp.args));
	ev->pid = tc->tgid;
	ev->tid = tc->tid;
	ev->nr = (int)si.seccomp.nr;
	ev->name = syscall_name((long)si.seccomp.nr);
	d = tracer_syscall_desc((long)si.seccomp.nr);
	rc = d ? d->decode(t, tc, &si, ev) : dec_other(t, tc, &si, ev);
	if (rc == -ESRCH)
		return; /* died under us (SIGKILL) */
	if (rc == 0)
		args_request(ev); /* what ward recheck rebuilds it from */
	if (tc->tid == t->root && !tc->execed)
		/* ward's own code before the interpreter's execve, in
		 * ward's own memory (start.c): its arguments are ward's,
		 * which nothing of the code's can change, and a scratch
		 * area made now would be made in ward. */
		copy_reset(&t->cp);
	int copy_err = 0;
	if (rc == 0 && (t->cp.nregs > 0 || t->cp.nr >= 0) &&
	    !(t->cp.in_place = scratch_in_place(t, tc, ev->nr))) {
		/* Copies need the scratch area of this address space. */
		int p = scratch_prepare(t, tc);
		if (p > 0)
			return; /* made first; this syscall stops again */
		copy_err = p;
	}
	if (copy_err < 0) {
		char why[160];
		snprintf(why, sizeof(why),
			 "no scratch area for the argument copies: %s",
			 strerror(-copy_err));
		deny_with(&v, -copy_err, "copy", why);
	} else if (rc < 0) {
		char why[160];
		snprintf(why, sizeof(why), "arguments could not be read: %s",
			 strerror(-rc));
		deny_with(&v, -rc, "decode", why);
	} else if ((t->o->zygote_handoff_fd > 0 || t->o->zygote_child) &&
		   tracer_zyg_floor(ev->nr, si.seccomp.args)) {
		/* only a zygote run's filter lets these stop here; past a
		 * fork's set-up (zygote.c) nothing of ward's makes them */
		deny_with(&v, EPERM, "floor.zygote",
			  "unshare or a new seccomp filter: the kill floor "
			  "(a zygote run traps it)");
		v.action = POLICY_KILL;
	} else {
		policy_check(t->o->policy, ev, &v);
#ifdef WARD_TEST_HOOKS
		tracer_landlock_test_fs_off(t, ev, &v);
#endif
	}
	/* an "ask": the thread waits, stopped, for its answer (ask.c) */
	if (v.action == POLICY_ASK) {
		char tb[WARD_PATH_MAX * 2 + 8];
		if (tracer_ask(t, tc, ev, event_target(ev, tb, sizeof(tb)),
			       &v) > 0)
			return;
	} else if (tc->ask_key) {
		tracer_ask_gone(t, tc); /* an answer for another call */
	}
	/* The record's own bound. Every decision is a row of the database,
	 * outside every limit of the code's: a loop of trapped calls would
	 * grow it (and fill the disk it is on) for as long as the run
	 * lasts. Past limits.events rows, the next decided syscall ends the
	 * run, recorded as the kill it is: nothing is left unrecorded. */
	if (t->o->limits.events > 0 && t->res->events >= t->o->limits.events) {
		char cause[160];
		snprintf(cause, sizeof(cause),
			 "event limit reached: %lld decided syscalls recorded, "
			 "the most a run may record",
			 t->o->limits.events);
		/* no backtrace: the call is not the cause, the count is */
		limit_kill(t, tc, ev, &v, "limits.events", cause, false);
		return;
	}
	/* ward's count (the clones allowed and not yet seen too), or the
	 * pids cgroup (which also counts zombies) having refused a fork
	 * already: the same limit either way */
	if (v.action == POLICY_ALLOW && ev->cls == WARD_CLASS_PROC &&
	    t->o->limits.procs > 0 &&
	    (t->live + t->clones_pending >= t->o->limits.procs ||
	     tracer_cgroup_pids_refused(t))) {
		char cause[128];
		tracer_procs_cause(t, cause, sizeof(cause));
		/* The run ends here: the clone never happens. */
		limit_kill(t, tc, ev, &v, "limits.procs", cause, true);
		return;
	}
	if (ev->cls == WARD_CLASS_PROC && v.action == POLICY_ALLOW) {
		tc->clone_pending = true;
		t->clones_pending++;
	}
	if (ev->cls == WARD_CLASS_PROC) {
		tc->clone_flags = ev->clone_flags;
		/* another process on this fd table: opens can fill it
		 * unseen (copy.c) */
		if ((ev->clone_flags & CLONE_FILES) &&
		    !(ev->clone_flags & CLONE_THREAD))
			t->files_shared = true;
	}
	if (ev->nr == __NR_io_setup && v.action == POLICY_ALLOW)
		scratch_mark_async(tc); /* AIO: the kernel writes later */
	apply_verdict(t, tc, ev, &v);
}

/* A child's first stop, and even its end, may reach ward before its
 * parent's fork event: the event then names a tracee already recorded and
 * gone. True (and forgotten) when tid is one of those. */
static bool forget_gone(struct tracer *t, pid_t tid)
{
	unsigned n = t->n_gone < 64 ? t->n_gone : 64;

	for (unsigned i = 0; i < n; i++)
		if (t->gone[i] == tid) {
			t->gone[i] = 0;
			return true;
		}
	return false;
}

/* ---- new tasks that stop before their parent's event ---- */

/* How long a new task waits for its parent's event before ward looks it
 * up in /proc (the parent killed between the clone and its event). */
#define PARK_US 20000

static int parked_at(struct tracer *t, pid_t tid)
{
	for (int i = 0; i < t->nparked; i++)
		if (t->parked[i].tid == tid)
			return i;
	return -1;
}

/* Hold tid (stopped) for its parent's event. False when it cannot wait. */
static bool park(struct tracer *t, pid_t tid)
{
	bool ok;

	pthread_mutex_lock(&t->lock);
	ok = t->nparked < (int)(sizeof(t->parked) / sizeof(t->parked[0]));
	if (ok) {
		t->parked[t->nparked].tid = tid;
		t->parked[t->nparked].since_us = mono_us();
		t->nparked++;
	}
	pthread_mutex_unlock(&t->lock);
	return ok;
}

/* No longer held; true when it was. Every exit and clone event asks:
 * without a held task (nearly always) no lock is taken (only this
 * thread changes the list). */
static bool unpark(struct tracer *t, pid_t tid)
{
	int i;

	if (t->nparked == 0)
		return false;
	pthread_mutex_lock(&t->lock);
	i = parked_at(t, tid);
	if (i >= 0)
		t->parked[i] = t->parked[--t->nparked];
	pthread_mutex_unlock(&t->lock);
	return i >= 0;
}

/* A held task, now known (by its parent's event, or from /proc): on. */
static void release_parked(struct tracer *t, pid_t tid, const struct tracee *by)
{
	if (!tracee_add(t, tid, by)) {
		tracer_stop(t, STOP_AUDIT, "out of memory");
		kill(tid, SIGKILL);
	}
	ptrace(PTRACE_CONT, tid, 0, 0);
}

bool tracer_unpark(struct tracer *t, pid_t tid)
{
	return unpark(t, tid);
}

struct tracee *tracer_release_parked(struct tracer *t, pid_t tid)
{
	release_parked(t, tid, NULL);
	return tracee_find(t, tid);
}

struct tracee *tracer_tracee_add(struct tracer *t, pid_t tid)
{
	return tracee_add(t, tid, NULL);
}

/* Tasks held past PARK_US: looked up in /proc instead. */
static void release_stale(struct tracer *t)
{
	long long now = mono_us();

	for (int i = 0; i < t->nparked;) {
		pid_t tid = t->parked[i].tid;
		if (now - t->parked[i].since_us < PARK_US) {
			i++;
			continue;
		}
		unpark(t, tid);
		release_parked(t, tid, NULL);
		i = 0;
	}
}

static void on_new_child(struct tracer *t, struct tracee *tc, int event)
{
	unsigned long msg = 0;

	if (t->o->zygote_handoff_fd > 0 && tc->tgid == t->root &&
	    event == PTRACE_EVENT_FORK &&
	    ptrace(PTRACE_GETEVENTMSG, tc->tid, 0, &msg) == 0 && msg > 0) {
		/* the template's fork: a sandbox's, handed off (zygote.c);
		 * one that is already a tracee (not held) ran under this
		 * run: never handed off */
		pid_t pid = (pid_t)msg;
		bool held = unpark(t, pid);
		if (!held && (tracee_find(t, pid) || forget_gone(t, pid))) {
			kill(pid, SIGKILL);
			int32_t none = -1;
			if (write(t->o->zygote_handoff_fd, &none,
				  sizeof(none)) < 0)
				warn("zygote: the hand-off fd: %s",
				     strerror(errno));
		} else {
			tracer_zyg_handoff(t, pid, held);
		}
		clone_done(t, tc);
		resume(tc);
		return;
	}
	if (ptrace(PTRACE_GETEVENTMSG, tc->tid, 0, &msg) == 0 && msg > 0) {
		struct tracee *child = tracee_find(t, (pid_t)msg);
		if (!child && unpark(t, (pid_t)msg)) {
			release_parked(t, (pid_t)msg, tc);
			child = tracee_find(t, (pid_t)msg);
		} else if (!child && !forget_gone(t, (pid_t)msg)) {
			child = tracee_add(t, (pid_t)msg, tc);
		}
		clone_done(t, tc);
		/* A second thread, or a process that may run alongside its
		 * parent: parallelism wins (pin.c). Not while a session's
		 * interpreter starts (node starts its platform threads
		 * first): its ready line unpins it (output.c). */
		if (atomic_load(&t->pinned) && child && t->o->side_in <= 0 &&
		    (child->tgid == tc->tgid || event != PTRACE_EVENT_VFORK))
			tracer_unpin(t, child->tgid == tc->tgid
						? "the code started a second "
						  "thread"
						: "the code started a process "
						  "that may run alongside its "
						  "parent");
	}
	resume(tc); /* the clone's result at its exit stop */
}

/* The running program is the file approved at entry (when it could be
 * looked up then: a program that is not a named file has only its name). */
static bool same_file(const struct tracee *tc)
{
	char where[64];
	struct stat st;

	if (!tc->exec_dev && !tc->exec_ino)
		return true;
	snprintf(where, sizeof(where), "/proc/%d/exe", (int)tc->tid);
	return stat(where, &st) == 0 && st.st_dev == tc->exec_dev &&
	       st.st_ino == tc->exec_ino;
}

/*
 * After a successful execve: the thread is now the group leader (a
 * non-leader thread that execs takes the leader's tid) running a new image.
 * The program must be the one the policy approved at syscall entry.
 */
static void on_exec(struct tracer *t, struct tracee *tc)
{
	unsigned long former = 0;
	char exe[WARD_PATH_MAX], argv[4096];

	/* the execve succeeded: it never returns (a thread of the process
	 * that was in a call of its own is gone too) */
	release_ended(t, tc);
	if (ptrace(PTRACE_GETEVENTMSG, tc->tid, 0, &former) == 0 &&
	    (pid_t)former != tc->tid) {
		struct tracee *old = tracee_find(t, (pid_t)former);
		if (old) {
			tc->in_exec = old->in_exec;
			memcpy(tc->exec_path, old->exec_path,
			       sizeof(tc->exec_path));
			tc->exec_dev = old->exec_dev;
			tc->exec_ino = old->exec_ino;
			evq_process_exit(t, old->serial, tracer_now_ns(), 0, 0);
			tracee_remove(t, old);
		}
	}
	/* A new image: the old address space and its copies are gone. */
	scratch_detach(tc);
	scratch_attach(t, tc);
	tc->execed = true;
	tc->vfork_child = false;
	proc_exe_argv(tc->tid, exe, sizeof(exe), argv, sizeof(argv));
	debug("[%d] exec %s", tc->serial, exe);
	free(tc->exe);
	free(tc->argv);
	tc->exe = strdup(exe);
	tc->argv = strdup(argv);
	evq_process_exec(t, tc->serial, tracer_now_ns(), exe, argv);

	if (!tc->in_exec || strcmp(exe, tc->exec_path) != 0 || !same_file(tc)) {
		struct ward_event *ev = &t->ev;
		struct policy_verdict v;
		ward_event_reset(ev);
		ev->pid = tc->tgid;
		ev->tid = tc->tid;
		ev->nr = -1;
		ev->name = "exec-check";
		ev->cls = WARD_CLASS_EXEC;
		ev->access = WARD_FS_EXEC;
		ev->exists = true;
		snprintf(ev->path, sizeof(ev->path), "%s", exe);
		snprintf(ev->raw, sizeof(ev->raw), "%s", tc->exec_path);
		policy_check(t->o->policy, ev, &v);
		if (v.action != POLICY_ALLOW) {
			v.action = POLICY_KILL;
			snprintf(v.reason, sizeof(v.reason),
				 "executed %s, not the approved %s", exe,
				 tc->exec_path);
			apply_verdict(t, tc, ev, &v);
			return;
		}
	}
	tc->in_exec = false;
	ptrace(PTRACE_CONT, tc->tid, 0, 0);
}

/* A session's interpreter exited (tracer_opts.end_with_root): the
 * processes it left go too (its own threads are gone already). */
static void end_rest(struct tracer *t)
{
	bool others = false;

	pthread_mutex_lock(&t->lock);
	for (int b = 0; b < TRACEE_BUCKETS; b++)
		for (struct tracee *x = t->tab[b]; x; x = x->next)
			others = others || x->tgid != t->root;
	pthread_mutex_unlock(&t->lock);
	if (others)
		tracer_stop(t, STOP_ENDED,
			    t->o->end_cause
				    ? t->o->end_cause
				    : "the session's interpreter exited; the "
				      "processes it left were ended");
}

static void on_exit_status(struct tracer *t, pid_t pid, int status)
{
	struct tracee *tc = tracee_find(t, pid);
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;

	if (pid == t->root) {
		t->res->exit_code = code;
		t->res->signal = sig;
		if (t->o->end_with_root)
			end_rest(t);
	}
	if (!tc)
		return;
	evq_process_exit(t, tc->serial, tracer_now_ns(), code, sig);
	if (sig == SIGKILL && tracer_cgroup_oom_kills(t) > 0) {
		char cause[160];
		snprintf(cause, sizeof(cause),
			 "memory limit of %lld MiB reached (%s): the kernel "
			 "killed a process of the run",
			 t->o->limits.memory_bytes >> 20, t->res->memory_by);
		tracer_stop(t, STOP_LIMIT, cause);
	}
	tracer_cgroup_check_pids(t);
	if (sig == SIGXCPU)
		tracer_stop(t, STOP_LIMIT, "cpu time limit reached");
	else if (sig == SIGXFSZ)
		tracer_stop(t, STOP_LIMIT, "file size limit reached");
	t->gone[t->n_gone++ % 64] = tc->tid;
	tracee_remove(t, tc);
}

/* A kill by the seccomp floor happens in the kernel, without a stop: the
 * record names it here, from the dying thread's registers (floorkill.c). */
static void on_exit_stop(struct tracer *t, struct tracee *tc)
{
	unsigned long status = 0;
	struct policy_verdict v;

	release_ended(t, tc); /* ended in its call, or after it */
	if (ptrace(PTRACE_GETEVENTMSG, tc->tid, 0, &status) == 0 &&
	    tracer_floor_killed(tc->tid, status, &t->ev, &v)) {
		t->ev.pid = tc->tgid;
		apply_verdict(t, tc, &t->ev, &v);
	}
	ptrace(PTRACE_CONT, tc->tid, 0, 0);
}

static bool is_stop_signal(int sig)
{
	return tracer_is_stop_signal(sig);
}

static void handle_status(struct tracer *t, pid_t pid, int status)
{
	struct tracee *tc;
	int sig, event;

	/* a zygote fork's set-up processes (zygote.c) */
	if (t->zyg.state && tracer_zyg_pending(t) &&
	    tracer_zyg_stop(t, pid, status))
		return;
	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		unpark(t, pid); /* killed while held */
		on_exit_status(t, pid, status);
		return;
	}
	if (!WIFSTOPPED(status))
		return;
	if (tracer_ns_init_stop(t, pid, status)) {
		/* the init made the code's first process: its parent's
		 * event is this one */
		if (t->root && unpark(t, t->root))
			release_parked(t, t->root, NULL);
		return;
	}
	tc = tracee_find(t, pid);
	if (!tc) {
		bool held = unpark(t, pid);
		/* A first stop before the parent's event (which always
		 * follows, unless the parent dies first): wait for it. */
		if (!held && (unsigned)status >> 16 == PTRACE_EVENT_STOP &&
		    !is_stop_signal(WSTOPSIG(status)) && pid != t->root &&
		    atomic_load(&t->stop_reason) == STOP_NONE && park(t, pid))
			return;
		tc = tracee_add(t, pid, NULL);
		if (!tc) {
			tracer_stop(t, STOP_AUDIT, "out of memory");
			return;
		}
	}
	if (atomic_load(&t->stop_reason) != STOP_NONE) {
		kill(pid, SIGKILL);
		ptrace(PTRACE_CONT, pid, 0, 0);
		return;
	}
	sig = WSTOPSIG(status);
	event = (unsigned)status >> 16;
	if (sig == (SIGTRAP | 0x80)) {
		/* syscall-exit stop: of an allowed call (its result, its
		 * copies given back) or of ward's own injected call */
		long long ret = 0;
		int got = scratch_on_exit(t, tc, &ret);
		if (got != 0)
			release_pending(t, tc, got > 0, ret);
		ptrace(PTRACE_CONT, pid, 0, 0);
		return;
	}
	switch (event) {
	case PTRACE_EVENT_SECCOMP: on_seccomp(t, tc); break;
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
	case PTRACE_EVENT_CLONE: on_new_child(t, tc, event); break;
	case PTRACE_EVENT_EXEC: on_exec(t, tc); break;
	case PTRACE_EVENT_STOP:
		if (is_stop_signal(sig))
			ptrace(PTRACE_LISTEN, pid, 0, 0); /* group-stop */
		else
			resume(tc); /* new tracee */
		break;
	case 0:
		/* signal-delivery-stop: the signal goes on to the code */
		ptrace(PTRACE_CONT, pid, 0, (void *)(long)sig);
		break;
	case PTRACE_EVENT_EXIT: on_exit_stop(t, tc); break;
	default: /* VFORK_DONE: the vfork returns next */ resume(tc); break;
	}
}

/* A thread answered (ask.c): its stop is handled again, as it came. */
static void ask_again(struct tracer *t, struct tracee *tc)
{
	if (atomic_load(&t->stop_reason) != STOP_NONE) {
		kill(tc->tid, SIGKILL);
		ptrace(PTRACE_CONT, tc->tid, 0, 0);
		return;
	}
	on_seccomp(t, tc);
}

/*
 * The next stop of any tracee. On VMs the dominant cost of a trap is not
 * the two context switches but waking an idle CPU for each of them. With
 * more than one CPU, ward polls for the next stop for up to opts.spin_us
 * before it sleeps: a syscall burst then costs one wake-up per trap
 * instead of two. The CPU this takes is bounded by spin_us per trap.
 */
static pid_t next_stop(struct tracer *t, int *status)
{
	pid_t w;

	/* Not while pinned: the code needs the CPU ward would spin on. */
	if (t->o->spin_us > 0 && t->ncpus > 1 && !atomic_load(&t->pinned)) {
		long long until = mono_us() + t->o->spin_us;
		do {
			w = waitpid(-1, status, __WALL | WNOHANG);
			if (w != 0)
				return w;
		} while (mono_us() < until);
	}
	/* With tasks held for their parent's event: not past PARK_US
	 * (0: time to look them up). With threads waiting for answers
	 * (ask.c): the others' stops served as they come, answers read
	 * between them. */
	while (t->nparked > 0 || t->n_asking > 0 ||
	       atomic_load(&t->n_pasking) > 0) {
		struct timespec nap = { 0, 100000 };
		w = waitpid(-1, status, __WALL | WNOHANG);
		if (w != 0)
			return w;
		if (t->nparked > 0)
			release_stale(t);
		if (t->n_asking > 0 || atomic_load(&t->n_pasking) > 0)
			/* the others' next stop found within 100 us, as
			 * for parked tasks */
			tracer_ask_poll(t, t->nparked > 0 ? 0 : 100,
					ask_again);
		if (t->nparked > 0)
			nanosleep(&nap, NULL);
	}
	/* a proxy question (ask.c) interrupts it: EINTR, and round again */
	if (!tracer_ask_may_block(t)) {
		errno = EINTR;
		return -1;
	}
	w = waitpid(-1, status, __WALL);
	atomic_store(&t->in_wait, false);
	return w;
}

/* ------------------------------------------------------------------ */
/* set-up and tear-down                                                */

static int make_pipes(struct tracer *t, struct spawn_fds *f, int *sync_w)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	t->out_fd[1] = p[0];
	f->out_w = p[1];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	t->out_fd[2] = p[0];
	f->err_w = p[1];
	if (t->o->drop_user && (fchown(f->out_w, t->o->uid, t->o->gid) < 0 ||
				fchown(f->err_w, t->o->uid, t->o->gid) < 0))
		return -errno; /* the code's own stdout, as natively: it
				* may reopen /dev/stdout (mode 0600) */
	/* a zygote child's is a socket: its Landlock ruleset comes on it
	 * too (zygote.c) */
	if (t->o->zygote_child
		    ? socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) < 0
		    : pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	f->sync_r = p[0];
	*sync_w = p[1];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	t->err_fd = p[0];
	f->err_pipe_w = p[1];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	f->view_r = p[0];
	t->view_w = p[1];
	return 0;
}

static int make_fds(struct tracer *t, const sigset_t *sigs)
{
	t->wake_fd = eventfd(0, EFD_CLOEXEC);
	t->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	t->sig_fd = signalfd(-1, sigs, SFD_CLOEXEC);
	if (t->wake_fd < 0 || t->kick_fd < 0 || t->sig_fd < 0)
		return -errno;
	if (t->o->limits.wall_ms > 0) {
		struct itimerspec its = { 0 };
		t->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
		if (t->timer_fd < 0)
			return -errno;
		its.it_value.tv_sec = t->o->limits.wall_ms / 1000;
		its.it_value.tv_nsec = (t->o->limits.wall_ms % 1000) * 1000000;
		if (timerfd_settime(t->timer_fd, 0, &its, NULL) < 0)
			return -errno;
	}
	return 0;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static const char *final_status(struct tracer *t, struct tracer_result *r)
{
	switch (atomic_load(&t->stop_reason)) {
	case STOP_TIMEOUT: return "timeout";
	case STOP_SIGNAL: return "aborted";
	case STOP_POLICY: return "killed";
	case STOP_LIMIT: return "limit";
	case STOP_AUDIT: return "error";
	default: break;
	}
	if (r->setup_error[0])
		return "error";
	return r->exit_code == 0 && r->signal == 0 ? "ok" : "error";
}

/* The argument-copies layer; at the end of the run, with its counts. */
static void copies_layer(struct tracer *t)
{
	char d[sizeof(t->res->layers[0].detail)];
	int n = snprintf(
		d, sizeof(d), "%s",
		scratch_can_seal()
			? "checked arguments passed to the kernel from a "
			  "read-only scratch area sealed with mseal"
			: "checked arguments passed to the kernel from a "
			  "read-only scratch area, NOT sealed (this kernel "
			  "lacks mseal, Linux 6.10): the code could "
			  "mprotect it writable");

	if (n > 0 && (size_t)n < sizeof(d))
		snprintf(d + n, sizeof(d) - (size_t)n, "%s",
			 t->copy_private
				 ? "; in place when only their thread can "
				   "write them"
				 : "; always (no PROCMAP_QUERY, Linux 6.11)");
	if (t->n_copied || t->n_in_place) {
		size_t used = strlen(d);
		snprintf(d + used, sizeof(d) - used,
			 "; %lld copied, %lld in place", t->n_copied,
			 t->n_in_place);
	}
	tracer_layer_add(t->res, "argument-copies", true, d);
}

/* The layers every run has: the child loads the filters before its
 * execve, or the run fails with a set-up error. The seccomp layer once the
 * filter is compiled (seccomp_layer). */
/* How each call's result reaches the record (events.result). */
void tracer_results_layer(struct tracer *t)
{
	char why[200], d[300];

	if (retbpf_open(t, why, sizeof(why)) == 0)
		snprintf(d, sizeof(d),
			 "each call's return value from the kernel's sys_exit "
			 "(a BPF program for this run's pid namespace); an "
			 "exit stop where the call's copies or a would-be "
			 "denial need one");
	else
		snprintf(d, sizeof(d),
			 "each call's return value at its exit stop (the "
			 "kernel's sys_exit cannot be used: %s)",
			 why);
	tracer_layer_add(t->res, "results", true, d);
}

static void record_core_layers(struct tracer *t)
{
	char d[200];

	/* first, as always; its detail once the filter is compiled */
	tracer_layer_add(t->res, "seccomp", true,
			 "guard filter and the policy's filter: kill list, "
			 "native architecture only");
	snprintf(d, sizeof(d), "%s: policy %s",
		 policy_audit_mode(t->o->policy)
			 ? "audit mode, would-be denials recorded, none made"
			 : "every sensitive syscall decided",
		 policy_name(t->o->policy));
	tracer_layer_add(t->res, "ptrace", true, d);
	copies_layer(t);
}

static void seccomp_layer(struct tracer *t, const struct sock_fprog *f)
{
	char d[200];

	snprintf(d, sizeof(d),
		 "guard filter and the policy's filter (%u instructions): "
		 "kill list, native architecture only",
		 (unsigned)f->len);
	tracer_layer_add(t->res, "seccomp", true, d);
}

/* After a refused start: the child is killed (with it, in its pid
 * namespace, anything it forked). Let every stop of theirs go (a traced
 * process stops at its exit, holding the output pipes the output thread
 * reads to their end) until none is left. */
static void reap_all(void)
{
	int st;

	for (;;) {
		pid_t w = waitpid(-1, &st, __WALL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return;
		if (WIFSTOPPED(st))
			ptrace(PTRACE_CONT, w, 0, 0);
	}
}

static pid_t refuse(pid_t pid, int rc)
{
	kill(pid, SIGKILL);
	reap_all();
	return rc;
}

static const long seize_opts = PTRACE_O_EXITKILL | PTRACE_O_TRACESECCOMP |
			       PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACECLONE |
			       PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
			       PTRACE_O_TRACEEXEC | PTRACE_O_TRACEEXIT;

static int set_limits(pid_t pid, const struct ward_limits *l, bool as);

/* An attached process's rlimits, as spawn_code sets its own: set from
 * outside (prlimit), the memory limit only when no cgroup holds it. A
 * root without CAP_SYS_RESOURCE (some containers) may not prlimit a
 * process of another uid: then a helper with the process's own uid and
 * gid does, which may lower its limits (all ward asks) but never raise
 * them. */
static int attach_limits(pid_t pid, const struct ward_limits *l, bool as)
{
	char path[32];
	struct stat st;
	int rc = set_limits(pid, l, as);

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (rc != -EPERM || stat(path, &st) < 0)
		return rc;
	pid_t h = fork();
	if (h < 0)
		return -errno;
	if (h == 0) {
		if (setgroups(0, NULL) < 0 ||
		    setresgid(st.st_gid, st.st_gid, st.st_gid) < 0 ||
		    setresuid(st.st_uid, st.st_uid, st.st_uid) < 0)
			_exit(EPERM);
		_exit(-set_limits(pid, l, as) & 0x7f);
	}
	int ws;
	while (waitpid(h, &ws, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(ws) ? -WEXITSTATUS(ws) : -EINTR;
}

static int set_limits(pid_t pid, const struct ward_limits *l, bool as)
{
	const struct {
		int res;
		long long v, hard_extra;
	} set[] = {
		{ RLIMIT_CPU, l->cpu_s, 1 },
		{ RLIMIT_FSIZE, l->fsize_bytes, 0 },
		{ RLIMIT_NOFILE, l->nofile, 0 },
		{ RLIMIT_AS, as ? l->memory_bytes : 0, 0 },
	};
	struct rlimit nocore = { 0, 0 };

	if (prlimit(pid, RLIMIT_CORE, &nocore, NULL) < 0)
		return -errno;
	for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++) {
		struct rlimit rl = { (rlim_t)set[i].v,
				     (rlim_t)(set[i].v + set[i].hard_extra) };
		if (set[i].v > 0 && prlimit(pid, set[i].res, &rl, NULL) < 0)
			return -errno;
	}
	return 0;
}

/* An attached process, once seized, must be what tracer_opts.attach
 * says: one thread (no other runs unseized), no_new_privs, a seccomp
 * filter (its trapped calls stop at ward), no effective capability.
 * 0, or -EPERM with setup_error saying which. */
static int attach_check(struct tracer *t, pid_t pid)
{
	static const struct {
		const char *key, *want;
	} need[] = {
		{ "Threads:", "1" },
		{ "NoNewPrivs:", "1" },
		{ "Seccomp:", "2" },
		{ "CapEff:", "0000000000000000" },
	};
	char path[64], line[256];
	bool seen[4] = { false };

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f) {
		snprintf(t->res->setup_error, sizeof(t->res->setup_error),
			 "the attached process: %s: %s", path, strerror(errno));
		return -ESRCH;
	}
	while (fgets(line, sizeof(line), f)) {
		for (size_t i = 0; i < 4; i++) {
			size_t k = strlen(need[i].key);
			if (strncmp(line, need[i].key, k))
				continue;
			char *v = line + k + strspn(line + k, " \t");
			v[strcspn(v, "\n")] = '\0';
			seen[i] = !strcmp(v, need[i].want);
		}
	}
	fclose(f);
	for (size_t i = 0; i < 4; i++)
		if (!seen[i]) {
			snprintf(t->res->setup_error,
				 sizeof(t->res->setup_error),
				 "the attached process is not ready to be "
				 "supervised: its %s is not %s",
				 need[i].key, need[i].want);
			return -EPERM;
		}
	/* what ward saw, not what the maker says it loaded */
	tracer_layer_add(t->res, "seccomp", true,
			 "attached: the process's own filters (its maker's; "
			 "checked in /proc: Seccomp 2, NoNewPrivs 1, one "
			 "thread, no effective capability)");
	return 0;
}

/* The child (started or attached) seized and released: the output
 * thread, its cgroups, PTRACE_SEIZE, the layers it requires, then ward's
 * first byte and, once the run is recorded, 'g'. Returns pid, or -errno
 * with the child killed and reaped. */
static pid_t seize_and_release(struct tracer *t, pid_t pid, int sync_w)
{
	int rc;

	/* The output thread from here on: it waits for the record thread
	 * (begun before the clone), then reads the code's output. */
	t->go_fd = sync_w;
	rc = tracer_io_start(t);
	if (rc < 0) {
		snprintf(t->res->setup_error, sizeof(t->res->setup_error),
			 "pthread_create: %s", strerror(-rc));
		return refuse(pid, rc);
	}
	/* The child's word on its cgroups before it is seized: it runs
	 * nothing of the code's before the first go byte (below), and a
	 * child killed now (the record failed: tracer_stop) dies at once
	 * and closes the pipe. Seized first, it would wait in its exit stop
	 * for this thread, which waited for its word: for ever. */
	const char *go = "r";
	if (tracer_cgroup_enter(t, pid) == 0)
		go = "c";
	debug("child in its cgroups: %s", go[0] == 'c' ? "yes" : "no");
	if (t->o->attach &&
	    (rc = attach_limits(pid, &t->o->limits, go[0] == 'r')) < 0) {
		snprintf(t->res->setup_error, sizeof(t->res->setup_error),
			 "the attached process's rlimits (prlimit): %s",
			 strerror(-rc));
		return refuse(pid, rc);
	}
	if (ptrace(PTRACE_SEIZE, pid, 0, (void *)seize_opts) < 0) {
		rc = -errno;
		snprintf(t->res->setup_error, sizeof(t->res->setup_error),
			 "ptrace(PTRACE_SEIZE): %s%s", strerror(-rc),
			 rc == -EPERM
				 ? " (is ward itself being traced, or does "
				   "/proc/sys/kernel/yama/ptrace_scope "
				   "forbid tracing children?)"
				 : "");
		return refuse(pid, rc);
	}
	/* Seized: a thread it makes from now on is traced too. */
	if (t->o->attach && (rc = attach_check(t, pid)) < 0)
		return refuse(pid, rc);
	t->res->memory_by = go[0] == 'c'
				    ? (t->cg_v2 ? "cgroup v2" : "cgroup v1")
			    : t->o->limits.memory_bytes > 0 ? "rlimit"
							    : "none";
	/* Every layer is recorded by now: refuse before the code runs. */
	rc = tracer_layers_required(t->res, t->o->require_layers);
	if (rc < 0)
		return refuse(pid, rc);
	/*
	 * The first byte lets the init make the code's process (ns.c), or the
	 * code go on with its set-up; the second ('g') lets the code execve.
	 * The second goes once the run is recorded, after the first: whichever
	 * of this thread and the record thread (tracer_record_begin) comes
	 * second writes it.
	 */
	pthread_mutex_lock(&t->go_lock);
	if (t->rec_state < 0) {
		pthread_mutex_unlock(&t->go_lock);
		return refuse(pid, -EIO); /* the record failed: nothing runs */
	}
	rc = write(sync_w, go, 1) == 1 &&
			     (t->rec_state == 0 || write(sync_w, "g", 1) == 1)
		     ? 0
		     : -errno;
	t->go_sent = rc == 0;
	pthread_mutex_unlock(&t->go_lock);
	return rc < 0 ? refuse(pid, rc) : pid;
}

/* Start: clone (start.c), seize, release. Returns the child's pid or
 * -errno. */
static pid_t start_child(struct tracer *t, const struct sock_fprog *filter,
			 struct spawn_fds *f, int sync_w)
{
	/* the run's init, or the code */
	pid_t pid = tracer_start_child(t, filter, f, sync_w);
	int rc;

	if (pid < 0)
		return pid;
	debug("child %d cloned", (int)pid);
	/* The run's file tree, planned here while the child makes its
	 * namespaces (it waits for the plan before its mounts). */
	rc = 0;
	if (t->ns.flags & CLONE_NEWNS) {
		char why[200];
		rc = tracer_view_plan(t->o->policy, t->o->interpreter,
				      t->o->workdir, &t->view, why,
				      sizeof(why));
		if (rc < 0)
			snprintf(t->res->setup_error,
				 sizeof(t->res->setup_error),
				 "the run's file tree: %s", why);
		else if (write(t->view_w, "v", 1) != 1)
			rc = -errno;
		debug("view planned: %zu operations, %zu mounts", t->view.nops,
		      t->view.nbinds);
	}
	close_fd(&t->view_w); /* EOF: the child ends, if it still waits */
	if (rc < 0)
		return refuse(pid, rc);
	/* The child's ends: its word on its cgroups ends with it. */
	for (int i = 0; i < 2; i++)
		close_fd(&f->cg_self[i]);
	close_fd(&f->cg_ack_w);
	return seize_and_release(t, pid, sync_w);
}

/* Whether pid's namespace name (under /proc/PID/ns/) differs from ward's. */
static bool ns_differs(pid_t pid, const char *name)
{
	char path[80];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, name);
	if (stat(path, &a) < 0)
		/* a pid namespace unshared but with no process yet has no
		 * reaper, and the kernel shows no link for it */
		return errno == ENOENT && !strcmp(name, "pid_for_children") &&
		       kill(pid, 0) == 0;
	snprintf(path, sizeof(path), "/proc/self/ns/%s", name);
	return stat(path, &b) == 0 && a.st_ino != b.st_ino;
}

/* Which of ward's own namespaces the attached process has left: recorded
 * as what they are, made by its maker. A pid namespace it unshared is its
 * children's (pid_for_children): the process itself stays where it was,
 * as ward's init does; the layer is active with a pid namespace and a
 * mount namespace of its own. */
static void attached_ns_layer(struct tracer *t, pid_t pid)
{
	static const char *const names[] = { "mnt", "net", "ipc", "uts",
					     "user" };
	char d[200];
	size_t n = 0;
	bool own_pid = ns_differs(pid, "pid"),
	     kids_pid = ns_differs(pid, "pid_for_children");

	d[0] = '\0';
	if (own_pid || kids_pid)
		n = (size_t)snprintf(d, sizeof(d), "%s",
				     own_pid ? "pid" : "pid (its children's)");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (ns_differs(pid, names[i]) && n < sizeof(d))
			n += (size_t)snprintf(d + n, sizeof(d) - n, "%s%s",
					      n ? ", " : "", names[i]);
	char detail[300];
	snprintf(detail, sizeof(detail),
		 "attached: the process's own namespaces, made by its maker: "
		 "%s",
		 n ? d : "none");
	tracer_layer_add(t->res, "namespaces",
			 (own_pid || kids_pid) && ns_differs(pid, "mnt"),
			 detail);
}

/* Attach: the caller's process (tracer_opts.attach) seized and released.
 * Returns its pid or -errno. */
static pid_t attach_child(struct tracer *t, struct spawn_fds *f, int sync_w)
{
	struct tracer_attach_fds af = { f->out_w, f->err_w, f->sync_r };
	pid_t pid = t->o->attach(t->o->attach_arg, &af);

	close_fd(&t->view_w);
	if (pid < 0) {
		snprintf(t->res->setup_error, sizeof(t->res->setup_error),
			 "the process to attach to: %s", strerror((int)-pid));
		return pid;
	}
	debug("attaching to %d", (int)pid);
	attached_ns_layer(t, pid);
	return seize_and_release(t, pid, sync_w);
}

static void tracer_record_begin(struct tracer *t)
{
	char err[sizeof(t->rec_err)];
	struct audit *au = NULL;
	int rc = 0;

	if (t->o->record) {
		err[0] = '\0';
		rc = t->o->record(t->o->record_arg, &au, err, sizeof(err));
		if (rc == 0 && !au)
			rc = -EIO;
	}
	if (rc == 0) {
		pthread_mutex_lock(&t->w_lock);
		if (au)
			t->audit = au;
		pthread_mutex_unlock(&t->w_lock);
		debug("run recorded: the code may start");
	} else {
		snprintf(t->rec_err, sizeof(t->rec_err), "%s",
			 err[0] ? err : "the run could not be recorded");
		if (!t->audit_err)
			t->audit_err = rc;
		tracer_stop(t, STOP_AUDIT, "the run could not be recorded");
	}
	pthread_mutex_lock(&t->go_lock);
	t->rec_state = rc == 0 ? 1 : -1;
	if (rc == 0 && t->go_sent && write(t->go_fd, "g", 1) != 1)
		debug("the child is gone before its go"); /* its end says why */
	pthread_mutex_unlock(&t->go_lock);
}

static void *rec_main(void *arg)
{
	tracer_record_begin(arg);
	return NULL;
}

/* The output thread first, then the main thread at the end (after the
 * output thread is joined): never both at once. */
void tracer_record_wait(struct tracer *t)
{
	if (!t->rec_started)
		return;
	if (t->rec_on_caller)
		t->o->record_join(t->o->record_arg);
	else
		pthread_join(t->rec_thread, NULL);
	t->rec_started = false;
}

/* The tracer (~115 KB, mostly scratch buffers a run may never use) in
 * pages of its own: zero from the kernel, each touched only when used.
 * From calloc, all of them were written at once (about 28 first touches
 * of fresh memory, 0.2 ms on a paravirtualized VM) before the code could
 * start. */
static struct tracer *tracer_alloc(void)
{
	void *m = mmap(NULL, sizeof(struct tracer), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return m == MAP_FAILED ? NULL : m;
}

/* The tracer's state for a run of o into res, before anything is made:
 * every fd -1, the locks, what this kernel and CPU set offer. */
static void tracer_init(struct tracer *t, const struct tracer_opts *o,
			struct tracer_result *res)
{
	t->o = o;
	t->res = res;
	t->self_pid = getpid();
	t->out_fd[0] = t->out_fd[1] = t->out_fd[2] = -1;
	t->err_fd = t->wake_fd = t->sig_fd = t->timer_fd = t->kick_fd = -1;
	t->cg_fd = t->cg_pids_fd = t->cg_pids_events = t->cg_ack_fd = -1;
	t->go_fd = -1;
	t->view_w = -1;
	t->ns.init_fd = -1;
	t->spawn.end_r = t->spawn.end_w = -1;
	t->audit = o->audit;
	t->next_serial = o->first_serial;
	pthread_mutex_init(&t->go_lock, NULL);
	/* TEST ONLY: WARD_TEST_COPY_ALWAYS=1 copies every checked argument,
	 * as a kernel without PROCMAP_QUERY does (tests compare both). */
	t->copy_private = scratch_can_query() &&
			  !(tracer_test_env("WARD_TEST_COPY_ALWAYS") &&
			    !strcmp(tracer_test_env("WARD_TEST_COPY_ALWAYS"), "1"));
	{
		cpu_set_t cpus;
		t->ncpus = sched_getaffinity(0, sizeof(cpus), &cpus) == 0
				   ? CPU_COUNT(&cpus)
				   : 1;
	}
	pthread_mutex_init(&t->lock, NULL);
	pthread_mutex_init(&t->q_lock, NULL);
	pthread_mutex_init(&t->w_lock, NULL);
}

/* The record is begun on a thread of its own from here, in parallel with
 * the sandbox's set-up (it opens the database and writes the run's row: a
 * few ms), not on the output thread, which can only start after the
 * clone. The child is cloned while it runs: the child's side (spawn.c,
 * ns.c) takes no lock another thread may hold (no allocation, no stdio).
 * 0, or -errno with setup_error set. */
static int record_start(struct tracer *t)
{
	const struct tracer_opts *o = t->o;
	int rc = 0;

	if (o->record) {
		/* on the caller's thread when it has one (a thread made here
		 * costs ward ~0.2 ms of this set-up on a VM like ours) */
		t->rec_on_caller =
			o->record_run_on && o->record_join &&
			o->record_run_on(o->record_arg, rec_main, t) == 0;
		rc = t->rec_on_caller
			     ? 0
			     : tracer_thread_start(t, &t->rec_thread, rec_main);
		t->rec_started = rc == 0;
		if (rc < 0) {
			snprintf(t->res->setup_error,
				 sizeof(t->res->setup_error),
				 "pthread_create: %s", strerror(-rc));
			return rc;
		}
	} else {
		t->rec_state = 1; /* o->audit, begun by the caller */
	}
	return 0;
}

/* Stops, one at a time, until the last tracee is gone (ECHILD). */
static void event_loop(struct tracer *t)
{
	int status;

	for (;;) {
		pid_t w = next_stop(t, &status);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			break; /* ECHILD: the last tracee is gone */
		}
		handle_status(t, w, status);
	}
}

/* After the run: every fd of t and f and *sync_w closed, the tracee
 * table and the locks freed (every thread is joined). */
static void tracer_release(struct tracer *t, struct spawn_fds *f, int *sync_w)
{
	for (int s = 1; s <= 2; s++)
		close_fd(&t->out_fd[s]);
	close_fd(&t->err_fd);
	close_fd(&t->wake_fd);
	close_fd(&t->sig_fd);
	close_fd(&t->timer_fd);
	close_fd(&t->kick_fd);
	close_fd(&t->ns.init_fd); /* every thread that could stop is joined */
	close_fd(&f->out_w);
	close_fd(&f->err_w);
	close_fd(&f->sync_r);
	close_fd(&f->err_pipe_w);
	close_fd(&f->cg_self[0]);
	close_fd(&f->cg_self[1]);
	close_fd(&f->cg_ack_w);
	close_fd(&f->view_r);
	close_fd(&t->view_w);
	close_fd(sync_w);
	for (int b = 0; b < TRACEE_BUCKETS; b++) {
		while (t->tab[b]) {
			struct tracee *x = t->tab[b];
			t->tab[b] = x->next;
			tracee_free(x);
		}
	}
	tracer_ask_free(t);
	tracer_zyg_end(t);
	pthread_mutex_destroy(&t->lock);
	pthread_mutex_destroy(&t->q_lock);
	pthread_mutex_destroy(&t->w_lock);
	pthread_mutex_destroy(&t->go_lock);
}

/* What a zygote child's run needs of its policy (zygote.c): what its
 * template's filter and namespaces can serve. */
static int zygote_child_ok(const struct tracer_opts *o,
			   struct tracer_result *res)
{
	const char *why = NULL;

	if (!o->attach)
		why = "a zygote child is attached, never spawned";
	else if (policy_syscall_rule_count(o->policy) > 0)
		why = "the policy has raw syscall rules (a fork waits on a "
		      "read before it is supervised)";
	else if (policy_net_beyond_loopback(o->policy) ||
		 policy_net_proxy(o->policy))
		why = "the policy's network needs more than a loopback of "
		      "the fork's own";
	if (!why)
		return 0;
	snprintf(res->setup_error, sizeof(res->setup_error), "zygote: %s",
		 why);
	return -EINVAL;
}

int tracer_run(const struct tracer_opts *o, struct tracer_result *res)
{
	struct tracer *t = tracer_alloc();
	struct spawn_fds f = { .out_w = -1,
			       .err_w = -1,
			       .sync_r = -1,
			       .err_pipe_w = -1,
			       .cg_self = { -1, -1 },
			       .cg_ack_w = -1,
			       .view_r = -1 };
	struct sock_fprog filter = { 0, NULL };
	sigset_t sigs, old;
	int sync_w = -1, rc;
	long long t0 = mono_ms();
	struct tracer_opts proxy_opts;
	char **proxy_env = NULL;
	pid_t pid;

	memset(res, 0, sizeof(*res));
	res->status = "error";
	res->memory_by = "none";
	if (!t)
		return -ENOMEM;
	if (policy_net_proxy(o->policy)) {
		/* the code's environment names the proxy (proxy.c) */
		proxy_opts = *o;
		proxy_opts.envp = proxy_env = tracer_proxy_env(o->envp);
		if (!proxy_env) {
			munmap(t, sizeof(*t));
			return -ENOMEM;
		}
		o = &proxy_opts;
	}
	tracer_init(t, o, res);

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &sigs, &old);

	rc = make_pipes(t, &f, &sync_w);
	if (rc == 0)
		rc = make_fds(t, &sigs);
	if (rc < 0) {
		if (!res->setup_error[0])
			snprintf(res->setup_error, sizeof(res->setup_error),
				 "creating pipes: %s", strerror(-rc));
		goto out;
	}
	rc = tracer_pin_start(t);
	if (rc < 0) {
		snprintf(res->setup_error, sizeof(res->setup_error),
			 "pinning to CPU %d: %s", t->pin_cpu, strerror(-rc));
		goto out;
	}
	/* The record, begun while the sandbox is set up (record_start). */
	rc = record_start(t);
	if (rc < 0)
		goto out;
	tracer_dircache_init(o->policy);
	tracer_cgroup_setup(t); /* else the rlimit */
	if (!o->attach)		/* else entered from outside */
		tracer_cgroup_self(t, f.cg_self, &f.cg_ack_w);
	debug("cgroups set up");
	record_core_layers(t);
	if (o->attach) {
		rc = o->zygote_child ? zygote_child_ok(o, res) : 0;
		/* a zygote child's Landlock domain is made for it, after
		 * its own mounts (zygote.c) */
		if (rc == 0 && o->zygote_child)
			rc = tracer_landlock_setup(t);
		if (rc < 0)
			goto out;
		pid = attach_child(t, &f, sync_w);
		goto started;
	}
	rc = tracer_landlock_setup(t);
	if (rc < 0)
		goto out;
	debug("landlock ruleset planned");

	/* The filter last: it compiles while the above is done. */
	if (o->zygote_handoff_fd > 0) {
		/* the template's variant (zygote.c): never built in */
		if (o->prepared) {
			struct sock_fprog unused = { 0, NULL };
			tracer_prepared_take(o->prepared, &unused, NULL, 0);
			free(unused.filter);
		}
		rc = tracer_filter_build_zyg(o->policy, &filter,
					     res->setup_error,
					     sizeof(res->setup_error));
	} else if (o->prepared)
		rc = tracer_prepared_take(o->prepared, &filter,
					  res->setup_error,
					  sizeof(res->setup_error));
	else
		rc = tracer_filter_build(o->policy, &filter, res->setup_error,
					 sizeof(res->setup_error));
	if (rc < 0)
		goto out;
	debug("filter ready (%u instructions, %s)", (unsigned)filter.len,
	      rc == 1 ? "built in" : "compiled for this policy");
	seccomp_layer(t, &filter);
	f.landlock = &t->landlock;
	if (o->zygote_handoff_fd > 0) {
		/* a template's domain would deny its forks their own mounts
		 * (Landlock skips the directory a mount covers): each fork
		 * gets a domain of its own instead (zygote.c) */
		f.landlock = NULL;
		tracer_layer_add(res, "landlock", false,
				 "not for a zygote template, which runs only "
				 "ward's warm-up: each sandbox forked from it "
				 "gets its own domain");
	}
	f.view = &t->view;
	pid = start_child(t, &filter, &f, sync_w);
started:
	close_fd(&f.out_w);
	close_fd(&f.err_w);
	close_fd(&f.sync_r);
	close_fd(&f.err_pipe_w);
	close_fd(&f.view_r);
	if (pid < 0) {
		rc = pid;
		goto out;
	}
	t->root = pid;
	debug("child %d seized", (int)pid);
	tracer_results_layer(t); /* its pid namespace is there now */
	if (o->zygote_child) {
		/* its set-up first; the code's process comes at its end
		 * (zygote.c) */
		tracer_zyg_attached(t, pid);
	} else if (!t->ns.init) { /* else its child, at its fork */
		struct tracee *x = tracee_add(t, pid, NULL);
		if (x && o->attach)
			x->execed = true; /* its maker's approved image */
	}

	if (policy_net_proxy(o->policy) &&
	    (!t->ns.init || !(t->ns.flags & CLONE_NEWNET)))
		tracer_stop(t, STOP_POLICY,
			    "net.allow_domains needs the run's own network "
			    "namespace (none here, or the policy lets the code "
			    "reach peers beyond loopback directly, or audit "
			    "mode)");
	event_loop(t);
	tracer_proxy_stop(t);
	debug("last tracee gone");
	copies_layer(t);
	retbpf_drain(t);
	tracer_io_finish(t);
	evq_drain(t);
	debug("output drained, events recorded");
	rc = t->audit_err;

out:
	tracer_proxy_stop(t);
	tracer_io_finish(t);   /* when start_child failed after starting it */
	tracer_record_wait(t); /* when the output thread never started */
	retbpf_close(t);       /* no thread reads results any more */
	evq_drop_held(t);      /* rows of a run that never started */
	tracer_start_end(t);   /* no child is left: see start.c */
	if (!res->setup_error[0] && t->rec_err[0])
		snprintf(res->setup_error, sizeof(res->setup_error), "%s",
			 t->rec_err);
	tracer_landlock_free(&t->landlock);
	tracer_view_free(&t->view);
	tracer_dircache_free();
	tracer_backtrace_release();
	tracer_unpin(t, NULL);
	tracer_pin_record(t);
	tracer_cgroup_release(t);
	res->duration_ms = mono_ms() - t0;
	res->status = final_status(t, res);
	snprintf(res->cause, sizeof(res->cause), "%s", t->stop_cause);
	if (!res->cause[0] && res->setup_error[0])
		snprintf(res->cause, sizeof(res->cause),
			 "sandbox set-up failed: %s", res->setup_error);
	if (res->setup_error[0] && rc == 0)
		rc = -ECHILD;
	tracer_release(t, &f, &sync_w);
	free(filter.filter);
	free(proxy_env);
	munmap(t, sizeof(*t));
	/* Drop signals that arrived after the run, then restore the mask. */
	struct timespec zero = { 0, 0 };
	while (sigtimedwait(&sigs, NULL, &zero) > 0)
		;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

void tracer_result_free(struct tracer_result *res)
{
	if (!res)
		return;
	for (int s = 0; s < 3; s++) {
		free(res->out[s]);
		res->out[s] = NULL;
	}
	free(res->denial_list);
	res->denial_list = NULL;
}

int tracer_probe(char *msg, size_t n)
{
	const struct scmp_version *v = seccomp_version();
	int api = seccomp_api_get();

	if (!v || api < 3) {
		snprintf(msg, n,
			 "libseccomp API level %d: ward needs level 3 or later "
			 "(SECCOMP_RET_KILL_PROCESS, Linux 4.14)",
			 api);
		return -ENOSYS;
	}
	return 0;
}
