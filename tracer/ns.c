/*
 * ns.c - namespaces as a kernel floor for the run, and the run's init.
 *
 * ward clones its first child with CLONE_NEWPID, NEWNS, NEWIPC, NEWUTS,
 * NEWNET (unless the policy lets the code reach peers beyond loopback:
 * then the host's network stays and the connect rules decide) and, when
 * ward is not root, NEWUSER (the invoking uid and gid mapped to
 * themselves). That child is pid 1 of the new pid namespace: ward's own
 * code, no exec, no seccomp filter. It must not run the code: pid 1
 * ignores every signal it has no handler for, even one it sends itself,
 * so a script that kills itself with SIGTERM would not die as it does
 * natively. So the child is the run's init:
 *
 *   ward --clone(VM|NEW*)--> init (pid 1) --clone(VM|VFORK)--> the code
 *   (pid 2) --exec
 *
 * Both share ward's memory until the code's execve (start.c: no copy of
 * ward is made; the init keeps sharing it, running nothing but its reaping
 * loop). How the code is seized before it runs: ward PTRACE_SEIZEs the
 * init with the usual options (TRACEVFORK among them) before releasing it
 * through the sync pipe. The init sets up the namespaces and clones; the
 * kernel attaches the new process to ward inside that clone, before it
 * runs one instruction, with the init's options (EXITKILL, TRACESECCOMP,
 * ...): the same state as the first child had before namespaces. At the
 * init's vfork event ward takes the new pid as the run's root process and
 * detaches the init (which waits in the kernel until the code has execed):
 * it makes no trapped syscall (no filter), is not part of the code, and is
 * neither recorded as a process nor counted. Untraced, it is also
 * protected by the kernel like any pid 1: signals from the code do
 * nothing, and its memory, which is ward's, is out of the code's reach
 * (/proc/PID/mem is refused by the floor; ptrace and process_vm_writev
 * kill).
 *
 * The init dies with ward (PR_SET_PDEATHSIG SIGKILL on the spawner thread,
 * which lives to the end of the run: start.c; the code's processes
 * have PTRACE_O_EXITKILL), and when the init dies the kernel kills every
 * process of the namespace. It reaps until no child is left, so the run
 * ends when the code's tree is gone, as before.
 *
 * Mounts (in the init, before the clone): everything propagation-private;
 * the whole tree made read-only with one recursive mount_setattr, so
 * nothing of the host is writable whatever the supervisor decides; a fresh
 * /proc for the new pid namespace; tmpfs on /tmp and /dev/shm; the workdir
 * (cloned with open_tree before the tree became read-only) attached back
 * writable at the same path. No pivot_root: every path keeps its name, so
 * the policy's rules mean the same inside.
 */
#include "tracer-int.h"
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/log.h"

#define NS_HOSTNAME "ward"

/* ------------------------------------------------------------------ */
/* ward's side                                                         */

int tracer_ns_plan(const struct tracer *t)
{
	int f = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS;

	if (!policy_net_beyond_loopback(t->o->policy))
		f |= CLONE_NEWNET;
	if (geteuid() != 0)
		f |= CLONE_NEWUSER;
	return f;
}

/* The probe's child: nothing but its exit (on a stack ASan does not
 * know of, like the run's children). */
SPAWN_SIDE static int probe_main(void *arg)
{
	(void)arg;
	_exit(0);
}

bool tracer_view_possible(void)
{
	static int possible = -1;

	if (possible < 0) {
		/* the namespaces a run's clone asks for that a system may
		 * refuse (pid and mount, and user without root; ipc and uts
		 * come with them, ~0.1 ms more to ask); CLONE_VFORK: back
		 * when it is gone */
		static char stack[16384] __attribute__((aligned(16)));
		int f = CLONE_NEWPID | CLONE_NEWNS |
			(geteuid() ? CLONE_NEWUSER : 0);
		pid_t pid = clone(probe_main, stack + sizeof(stack),
				  CLONE_VM | CLONE_VFORK | f | SIGCHLD, NULL);
		int st;

		possible = pid > 0;
		if (pid > 0)
			while (waitpid(pid, &st, __WALL) < 0 && errno == EINTR)
				;
	}
	return possible;
}

void tracer_ns_record(struct tracer *t, int f, int err)
{
	char d[200];

	if (!f) {
		snprintf(d, sizeof(d),
			 "the kernel refused them (clone: %s); the run has "
			 "the host's pid, mount, net, ipc and uts namespaces",
			 strerror(err));
		tracer_layer_add(t->res, "namespaces", false, d);
		return;
	}
	snprintf(d, sizeof(d),
		 "pid (own /proc), mount (%s, the workdir at " TRACER_HOME
		 ", own /tmp, /dev/shm), %s, ipc, uts, cgroup%s",
		 policy_view_host(t->o->policy) ? "the host read-only but /home"
			      : "only what the policy shows, read-only",
		 f & CLONE_NEWNET ? "net (loopback only)"
				  : "net: the host's (the policy allows peers "
				    "beyond loopback)",
		 f & CLONE_NEWUSER ? ", user (ward's uid and gid mapped)" : "");
	tracer_layer_add(t->res, "namespaces", true, d);
}

/*
 * A stop of the init (it is traced from its seize to its clone of the
 * code, a vfork event). At that event the new process is the code: the
 * run's root from now on; the init is let go. Returns true when pid is
 * the init.
 */
bool tracer_ns_init_stop(struct tracer *t, pid_t pid, int status)
{
	int event = (unsigned)status >> 16;
	unsigned long msg = 0;
	char root[64];

	if (!t->ns.init || pid != t->ns.init)
		return false;
	if (event != PTRACE_EVENT_FORK && event != PTRACE_EVENT_VFORK) {
		int sig = event == 0 ? WSTOPSIG(status) : 0;
		ptrace(PTRACE_CONT, pid, 0, (void *)(long)sig);
		return true;
	}
	if (ptrace(PTRACE_GETEVENTMSG, pid, 0, &msg) == 0 && msg > 0)
		t->root = (pid_t)msg;
	/* The run's root directory, for resolving paths as the code's
	 * kernel will (resolve.c): its mounts are all in place now. */
	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && t->ns.flags & CLONE_NEWNS)
		tracer_stop(t, STOP_POLICY,
			    "the run's root directory cannot be opened");
	else if (t->ns.flags & CLONE_NEWNS)
		tracer_resolve_ns(t, fd);
	else if (fd >= 0)
		close(fd);
	/* The proxy listens in the run's network namespace before the code
	 * runs (proxy.c); without it the run does not start. */
	if (tracer_proxy_start(t, pid, tracer_spawn_proxy_fd(t)) < 0)
		tracer_stop(t, STOP_POLICY,
			    "net.allow_domains: ward's proxy could not be set "
			    "up in the run's network namespace");
	debug("init %d forked the code: %d", (int)pid, (int)t->root);
	ptrace(PTRACE_DETACH, pid, 0, 0);
	return true;
}

/* The last number on line key ("NSpid:") of /proc/PID/status; 0 if none. */
static pid_t status_last(pid_t pid, const char *key)
{
	char buf[2048];
	const char *p, *end;
	long v = 0;

	if (proc_read(pid, "status", buf, sizeof(buf)) <= 0)
		return 0;
	p = strstr(buf, key);
	if (!p)
		return 0;
	p += strlen(key);
	end = strchr(p, '\n');
	if (!end)
		end = p + strlen(p);
	while (p < end) {
		char *q;
		long x = strtol(p, &q, 10);
		if (q == p)
			break;
		v = x;
		p = q;
	}
	return (pid_t)v;
}

/* The tracee's pid in the code's namespace (cached: it never changes). */
static pid_t tracee_nspid(struct tracee *x)
{
	if (!x->nspid)
		x->nspid = status_last(x->tid, "NSpid:");
	return x->nspid;
}

pid_t tracer_ns_host_pid(struct tracer *t, pid_t nspid)
{
	pid_t host = 0;

	if (nspid <= 0)
		return 0;
	if (!(t->ns.flags & CLONE_NEWPID))
		return tracee_find(t, nspid) ? nspid : 0;
	pthread_mutex_lock(&t->lock);
	for (int b = 0; b < TRACEE_BUCKETS && !host; b++)
		for (struct tracee *x = t->tab[b]; x && !host; x = x->next)
			if (tracee_nspid(x) == nspid)
				host = x->tid;
	pthread_mutex_unlock(&t->lock);
	return host;
}

pid_t tracer_ns_pid(struct tracer *t, pid_t host)
{
	struct tracee *x;

	if (!(t->ns.flags & CLONE_NEWPID))
		return host;
	x = tracee_find(t, host);
	return x ? tracee_nspid(x) : 0;
}

pid_t tracer_ns_pgrp(pid_t host)
{
	return status_last(host, "NSpgid:");
}

/* The session of host (as ward sees it) if it has ended and waits to be
 * reaped (a zombie), else 0: from /proc/HOST/stat, "pid (comm) state ppid
 * pgrp session ...", comm read past its last ')'. */
static pid_t zombie_session(pid_t host)
{
	char buf[1024];
	const char *p;
	char state;
	int ppid, pgrp, sid;

	if (proc_read(host, "stat", buf, sizeof(buf)) <= 0)
		return 0;
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %d %d %d", &state, &ppid, &pgrp, &sid) != 4)
		return 0;
	return state == 'Z' ? (pid_t)sid : 0;
}

pid_t tracer_ns_unreaped(struct tracer *t, pid_t id, bool group)
{
	unsigned n = t->n_gone < 64 ? t->n_gone : 64;

	if (id <= 0 || !t->root)
		return 0;
	for (unsigned i = 0; i < n; i++) {
		pid_t h = t->gone[i];
		/* a zombie's pid is not reused before it is reaped, and no
		 * process outside the run can be in the run's session */
		if (h <= 0 || zombie_session(h) != t->root)
			continue;
		if (group ? tracer_ns_pgrp(h) == id
			  : status_last(h, "NSpid:") == id &&
				    status_last(h, "Tgid:") == h)
			return h;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* the init's side (runs in the cloned child; never returns to ward)   */

SPAWN_SIDE int tracer_write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	int err = n == (ssize_t)strlen(text) ? 0 : n < 0 ? -errno : -EIO;
	close(fd);
	return err;
}

SPAWN_SIDE static void write_file(const char *path, const char *text)
{
	int rc = tracer_write_text(path, text);

	if (rc < 0) {
		errno = -rc;
		spawn_fail(path);
	}
}

/* Map ward's uid and gid to themselves: the code sees who it is. */
SPAWN_SIDE static void map_ids(const struct spawn_fds *f)
{
	char m[64];

	write_file("/proc/self/setgroups", "deny");
	snprintf(m, sizeof(m), "%u %u 1\n", (unsigned)f->ns_uid,
		 (unsigned)f->ns_uid);
	write_file("/proc/self/uid_map", m);
	snprintf(m, sizeof(m), "%u %u 1\n", (unsigned)f->ns_gid,
		 (unsigned)f->ns_gid);
	write_file("/proc/self/gid_map", m);
}

SPAWN_SIDE int tracer_loopback_up(void)
{
	struct ifreq ifr;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = 0;

	if (s < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		rc = -errno;
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (!rc && ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		rc = -errno;
	close(s);
	return rc;
}

/* The egress proxy's listening socket (proxy.c), made here so that it
 * lives in the run's network namespace: ward takes it from this process
 * with pidfd_getfd before the code runs. CLOEXEC: the code's process,
 * which gets a copy of this fd table, loses it at its execve; the init
 * closes its own in init_reap. */
SPAWN_SIDE static int proxy_socket(void)
{
	struct sockaddr_in sa;
	int fd, one = 1;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(POLICY_PROXY_PORT);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		spawn_fail("socket (ward's proxy)");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 64) < 0)
		spawn_fail("bind/listen on 127.0.0.1:3128 (ward's proxy)");
	return fd;
}

/* The run's file tree: the policy's view (view.c), the workdir at
 * TRACER_HOME. The workdir is cloned first: the view's root is attached
 * on the host's /tmp, where ward's temporary workdirs are. */
SPAWN_SIDE static void mounts(const struct spawn_ctx *c, int flags)
{
	int wd;

	/* Nothing done here may reach the host's mount namespace. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		spawn_fail("making the run's mounts private");
	wd = open_tree(AT_FDCWD, c->o->workdir,
		       OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (wd < 0)
		spawn_fail("open_tree of the workdir");
	tracer_view_build(c->f.view, c->o, wd, flags & CLONE_NEWPID);
}

SPAWN_SIDE __attribute__((noreturn)) static void init_reap(void)
{
	/* Hold nothing of ward's: the output pipes end when the code's
	 * processes close them. */
	syscall(SYS_close_range, 0U, ~0U, 0);
	for (;;) {
		if (wait(NULL) < 0 && errno != EINTR)
			_exit(0); /* ECHILD: the code's tree is gone */
	}
}

/* The code's process: a CLONE_VFORK child of the init, on its own stack
 * in the spawn area (the init waits in the kernel until it has execed or
 * died, so the two never run at once). */
SPAWN_SIDE static int code_main(void *arg)
{
	spawn_code(arg);
}

SPAWN_SIDE void tracer_ns_child(struct spawn_ctx *c)
{
	const struct spawn_fds *f = &c->f;

	if (!f->ns_flags)
		return;
	if (f->ns_flags & CLONE_NEWUSER)
		map_ids(f);
	if (f->ns_flags & CLONE_NEWUTS &&
	    sethostname(NS_HOSTNAME, strlen(NS_HOSTNAME)) < 0)
		spawn_fail("sethostname in the run's uts namespace");
	if (f->ns_flags & CLONE_NEWNET) {
		if (unshare(CLONE_NEWNET) < 0)
			spawn_fail("unshare(CLONE_NEWNET): the run's network "
				   "namespace");
		int rc = tracer_loopback_up();
		if (rc < 0) {
			errno = -rc;
			spawn_fail("bringing loopback up in the run's network "
				   "namespace");
		}
		if (f->proxy)
			c->proxy_fd = proxy_socket();
	}
	if (f->ns_flags & CLONE_NEWNS) {
		/* ward plans the view while this process makes its
		 * namespaces; EOF: it could not (its error says why) */
		char v = 0;
		if (c->view_fd < 0 || read(c->view_fd, &v, 1) != 1 || v != 'v')
			_exit(127);
		close(c->view_fd);
		mounts(c, f->ns_flags);
	}
	if (!(f->ns_flags & CLONE_NEWPID))
		return;
	spawn_wait_seized(c); /* the clone must be traced, in the cgroups */
	/* In its cgroups now: they are the root of what the run sees of
	 * cgroups (/proc/self/cgroup says "/", not which slot of ward's) */
	if (unshare(CLONE_NEWCGROUP) < 0)
		spawn_fail("unshare(CLONE_NEWCGROUP): the run's cgroup "
			   "namespace");
	/* TEST ONLY: an init that never forks (tests/integ/test_contain.py:
	 * the run's stop must still end it). */
	if (tracer_test_env("WARD_TEST_INIT_STALL"))
		pause();
	if (clone(code_main, c->code_stack, CLONE_VM | CLONE_VFORK | SIGCHLD,
		  c) < 0)
		spawn_fail("clone of the code's process");
	init_reap();
}
