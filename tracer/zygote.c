/*
 * zygote.c - sandboxes forked from a warm template interpreter
 * (tracer_opts.zygote_handoff_fd, zygote_child; docs/performance.md and
 * docs/security.md "Forked sandboxes").
 *
 * The template is an ordinary run (its own record, the policy, ward's
 * namespaces, Landlock, limits) whose first process runs only ward's
 * warm-up and then forks on ward's request. Two differences:
 *  - its filter lets unshare and prctl(PR_SET_SECCOMP) stop at ward
 *    instead of dying in the kernel (filter.c, the zygote variants): a
 *    fork inherits the filter, and can never lift a kill;
 *  - each process it forks is handed off at its first stop, before it
 *    runs one instruction: detached, its pid written to the hand-off fd.
 *    Untraced, its trapped calls fail with ENOSYS; it waits on the sync
 *    pipe its new supervisor gave it (tracer_opts.attach).
 * The template's own unshare or filter install (none of ward's code makes
 * one) kills the template's run.
 *
 * A zygote child's supervisor seizes the fork (loop.c attach path; its
 * sync pipe is a socket) and drives its set-up, which runs only ward's
 * driver code. Every call it traps is judged here, in this order, and the
 * run is killed at the first call outside it:
 *
 *   A (the fork)   unshare(TRACER_ZYGOTE_UNSHARE): its own user, mount,
 *                  pid, net, ipc, uts and cgroup namespaces
 *   ward           at A's next trapped call: the namespaces are new; its
 *                  uid and gid mapped to themselves; the workdir, /tmp and
 *                  /dev/shm mounted and loopback up, from outside
 *   A              capset (its capabilities in its namespace dropped),
 *                  then a plain fork:
 *   B              pid 1 of the new pid namespace; a plain fork:
 *   C              the code's process, the run's first process from its
 *                  birth. Before it runs, ward mounts its /proc and makes
 *                  the run's Landlock ruleset in its mount namespace (a
 *                  helper that setns()es there), and sends it on the sync
 *                  socket. C restricts itself with exactly that ruleset
 *                  (kcmp), then installs exactly tracer_zygote_filter
 *                  (kills unshare, seccomp and a new filter in the kernel
 *                  from here on); at its next call ward checks it: no
 *                  capability, one filter more than A had, no namespace of
 *                  the template's.
 *
 * Why the template has no Landlock domain and C gets its own: Landlock
 * ignores the directory a mount covers, so a template's rules for its
 * workdir, /tmp and /proc would not reach the fork's own mounts there (all
 * its accesses beneath them would be refused), and a domain can only be
 * narrowed. The template runs only ward's warm-up, under its supervisor,
 * filter and view.
 *
 * A and B are never tracees: not recorded as processes, their calls not
 * events (ward's own code, as the init's are not); detached, they wait for
 * their child and end with it. B is the namespace's init for tracer_stop.
 * C's set-up calls are not events either. The run records where it came
 * from in its "zygote" layer.
 */
#include "tracer-int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/kcmp.h>
#include <linux/prctl.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/log.h"
#include "unwinder.h"

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif

/* ------------------------------------------------------------------ */
/* the filter a child installs                                         */

#define ZYG_JEQ(k, t, f) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t), (f))
static struct sock_filter zyg_insns[] = {
	/* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, arch)),
	/* 1 */ ZYG_JEQ(AUDIT_ARCH_X86_64, 0, 8),
	/* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
	/* 3 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 6, 0),
	/* 4 */ ZYG_JEQ(__NR_unshare, 5, 0),
	/* 5 */ ZYG_JEQ(__NR_seccomp, 4, 0),
	/* 6 */ ZYG_JEQ(__NR_prctl, 0, 2),
	/* 7 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, args)),
	/* 8 */ ZYG_JEQ(PR_SET_SECCOMP, 1, 0),
	/* 9 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	/* 10 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
};
static const struct sock_fprog zyg_prog = {
	.len = sizeof(zyg_insns) / sizeof(zyg_insns[0]),
	.filter = zyg_insns,
};

const struct sock_fprog *tracer_zygote_filter(void)
{
	return &zyg_prog;
}

/* ------------------------------------------------------------------ */
/* can this system make them                                           */

bool tracer_zygote_possible(void)
{
	static int possible = -1;

	if (possible >= 0)
		return possible;
	/* what a fork of the template will do: an unprivileged process
	 * with no_new_privs unshares all of them at once */
	pid_t pid = fork();
	if (pid == 0) {
		if (setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0 ||
		    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    unshare(TRACER_ZYGOTE_UNSHARE) < 0)
			_exit(1);
		_exit(0);
	}
	int st = 0;
	possible = pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		   WEXITSTATUS(st) == 0;
	return possible;
}

/* ------------------------------------------------------------------ */
/* the template's side                                                 */

/* A process the template forked (pid: from its parent's event): detached
 * at its first stop, its pid to the hand-off fd. held: its first stop was
 * seen already (loop.c parked it). */
void tracer_zyg_handoff(struct tracer *t, pid_t pid, bool held)
{
	int32_t out = -1;
	int st;

	if (!held) {
		/* its first stop comes at once (the kernel attached it in
		 * its parent's fork); an exit instead: it was killed */
		pid_t w;
		do
			w = waitpid(pid, &st, __WALL);
		while (w < 0 && errno == EINTR);
		held = w == pid && WIFSTOPPED(st);
	}
	if (held && ptrace(PTRACE_DETACH, pid, 0, 0) == 0)
		out = pid;
	else
		kill(pid, SIGKILL);
	debug("zygote: fork %d handed off: %s", (int)pid, out > 0 ? "yes" : "no");
	if (write(t->o->zygote_handoff_fd, &out, sizeof(out)) != sizeof(out))
		warn("zygote: the hand-off fd: %s", strerror(errno));
}

/* ------------------------------------------------------------------ */
/* the child's side                                                    */

enum {
	ZYG_ATTACHED = 1, /* A seized: its unshare comes */
	ZYG_UNSHARED,	  /* ward's part at A's next call */
	ZYG_MOUNTED,	  /* A: capset, its fork */
	ZYG_FORKED,	  /* B (pid 1): its fork */
	ZYG_C_SETUP,	  /* C: its Landlock domain, its filter */
	ZYG_C_FILTERED,	  /* C: checked at its next call */
	ZYG_DONE,
};

static const char *const zyg_ns[] = { "user", "mnt", "net", "ipc",
				      "uts",  "cgroup", "pid_for_children" };
#define ZYG_NNS (sizeof(zyg_ns) / sizeof(zyg_ns[0]))

static unsigned long long ns_ino(pid_t pid, const char *name)
{
	char path[80];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, name);
	return stat(path, &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

/* The value of key ("Seccomp_filters:") in /proc/PID/status; -1. */
static long long status_num(pid_t pid, const char *key, int base)
{
	char buf[4096], *p;

	if (proc_read(pid, "status", buf, sizeof(buf)) <= 0)
		return -1;
	p = strstr(buf, key);
	return p ? strtoll(p + strlen(key), NULL, base) : -1;
}

static void zyg_fail(struct tracer *t, const char *what)
{
	char cause[300];

	snprintf(cause, sizeof(cause), "zygote set-up: %s", what);
	tracer_stop(t, STOP_POLICY, cause);
	if (t->zyg.a > 0 && !t->zyg.a_detached)
		kill(t->zyg.a, SIGKILL);
	if (t->zyg.b > 0)
		kill(t->zyg.b, SIGKILL);
}

int tracer_zyg_attached(struct tracer *t, pid_t a)
{
	t->zyg.a = a;
	t->zyg.ruleset = -1;
	t->zyg.state = ZYG_ATTACHED;
	for (size_t i = 0; i < ZYG_NNS; i++)
		t->zyg.ns_before[i] = ns_ino(a, zyg_ns[i]);
	t->zyg.filters = status_num(a, "Seccomp_filters:", 10);
	long long uid = status_num(a, "Uid:", 10),
		  gid = status_num(a, "Gid:", 10);
	t->zyg.uid = (uid_t)uid;
	t->zyg.gid = (gid_t)gid;
	if (t->zyg.filters < 1 || uid < 0 || gid < 0) {
		zyg_fail(t, "the fork's /proc status cannot be read");
		return -ESRCH;
	}
	return 0;
}

void tracer_zyg_end(struct tracer *t)
{
	if (t->zyg.state && t->zyg.ruleset >= 0)
		close(t->zyg.ruleset);
	t->zyg.ruleset = -1;
}

/* A's uid and gid, themselves inside (ward writes the maps: root in the
 * parent namespace needs no setgroups "deny"). */
static int map_ids(struct tracer *t)
{
	char path[64], m[64];
	int rc;

	snprintf(m, sizeof(m), "%u %u 1\n", (unsigned)t->zyg.uid,
		 (unsigned)t->zyg.uid);
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)t->zyg.a);
	if ((rc = tracer_write_text(path, m)) < 0)
		return rc;
	snprintf(m, sizeof(m), "%u %u 1\n", (unsigned)t->zyg.gid,
		 (unsigned)t->zyg.gid);
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)t->zyg.a);
	return tracer_write_text(path, m);
}

/* Run fn(t, pid, sock) in a forked helper (setns needs a single-threaded
 * process, and ward's own namespaces must not change); its result. sock:
 * where the helper may send an fd back (SCM_RIGHTS). The helper makes
 * only system calls. */
static int in_helper(struct tracer *t,
		     int (*fn)(struct tracer *, pid_t, int), pid_t pid,
		     int sock)
{
	pid_t h = fork();
	int st;

	if (h < 0)
		return -errno;
	if (h == 0) {
		int rc = fn(t, pid, sock);
		_exit(rc < 0 ? (-rc & 0x7f) : 0);
	}
	while (waitpid(h, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFEXITED(st))
		return -WEXITSTATUS(st);
	return -EINTR;
}

static int setns_of(pid_t pid, const char *name, int type)
{
	char path[80];
	int fd, rc = 0;

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (setns(fd, type) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

/* In the helper: the workdir (cloned here, in ward's namespace), fresh
 * /tmp and /dev/shm, in A's mount namespace; loopback up in its network
 * namespace. */
static int mounts_of_a(struct tracer *t, pid_t a, int sock)
{
	const struct tracer_opts *o = t->o;
	char opts[64], path[80];
	int wd, netfd, rc;

	(void)sock;
	wd = (int)syscall(SYS_open_tree, AT_FDCWD, o->workdir,
			  OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (wd < 0)
		return -errno;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)a);
	netfd = open(path, O_RDONLY | O_CLOEXEC);
	if (netfd < 0)
		return -errno;
	if ((rc = setns_of(a, "mnt", CLONE_NEWNS)) < 0)
		return rc;
	if (syscall(SYS_move_mount, wd, "", AT_FDCWD, o->home,
		    MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return -errno;
	tracer_tmp_opts(o, opts, sizeof(opts)); /* as the view's */
	if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0 ||
	    mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, opts) <
		    0)
		return -errno;
	if (setns(netfd, CLONE_NEWNET) < 0)
		return -errno;
	return tracer_loopback_up();
}

/* One byte, what, with fd when >= 0 (unwinder.c's sender). */
static int send_fd(int sock, char what, int fd)
{
	return uw_send(sock, &what, 1, fd, 0) == 1 ? 0 : -errno;
}

static int recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))], c;
	struct iovec iov = { &c, 1 };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	int fd = -1;

	if (recvmsg(sock, &mh, MSG_CMSG_CLOEXEC) != 1)
		return -EIO;
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	if (cm && cm->cmsg_type == SCM_RIGHTS &&
	    cm->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd >= 0 ? fd : -EIO;
}

/* In the helper: a fresh /proc for the sandbox's pid namespace, mounted
 * by a process in it (the helper's child, for a moment: C is pid 2, B 1),
 * then the run's Landlock ruleset, its paths resolved in that mount
 * namespace (its own workdir, /tmp, /proc), sent back on sock. */
static int proc_and_ruleset(struct tracer *t, pid_t c, int sock)
{
	int rc, st;

	if ((rc = setns_of(c, "pid", CLONE_NEWPID)) < 0 ||
	    (rc = setns_of(c, "mnt", CLONE_NEWNS)) < 0)
		return rc;
	pid_t k = fork();
	if (k < 0)
		return -errno;
	if (k == 0)
		_exit(mount("proc", "/proc", "proc",
			    MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2") < 0
			      ? (errno & 0x7f ? errno & 0x7f : EIO)
			      : 0);
	while (waitpid(k, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		return WIFEXITED(st) ? -WEXITSTATUS(st) : -EINTR;
	if (!t->landlock.active)
		return 0;
	const char *what;
	int rs = tracer_landlock_build(&t->landlock, &what);
	if (rs < 0)
		return rs;
	return send_fd(sock, 'L', rs);
}

/* At A's first trapped call after its unshare: the namespaces are new,
 * then ward's part of its set-up. */
static int setup_a(struct tracer *t)
{
	char why[200];
	int rc;

	for (size_t i = 0; i < ZYG_NNS; i++) {
		unsigned long long now = ns_ino(t->zyg.a, zyg_ns[i]);
		/* a pid namespace with no process yet has no link */
		bool fresh_pid = !strcmp(zyg_ns[i], "pid_for_children") &&
				 now == 0;
		if (!fresh_pid && (now == 0 || now == t->zyg.ns_before[i])) {
			snprintf(why, sizeof(why),
				 "the fork's unshare made no %s namespace",
				 zyg_ns[i]);
			zyg_fail(t, why);
			return -EPERM;
		}
	}
	if ((rc = map_ids(t)) < 0 ||
	    (rc = in_helper(t, mounts_of_a, t->zyg.a, -1)) < 0) {
		snprintf(why, sizeof(why),
			 "mapping the fork's ids and mounting its workdir, "
			 "/tmp and /dev/shm: %s",
			 strerror(-rc));
		zyg_fail(t, why);
		return rc;
	}
	return 0;
}

/* prctl(PR_SET_SECCOMP) of exactly tracer_zygote_filter. */
static bool is_our_filter(pid_t tid, const uint64_t a[6])
{
	struct {
		unsigned short len;
		unsigned short pad[3];
		uint64_t filter;
	} fp;
	struct sock_filter got[sizeof(zyg_insns) / sizeof(zyg_insns[0])];

	if ((a[0] & 0xffffffffu) != PR_SET_SECCOMP ||
	    a[1] != SECCOMP_MODE_FILTER)
		return false;
	if (umem_read(tid, a[2], &fp, sizeof(fp)) < 0 ||
	    fp.len != zyg_prog.len)
		return false;
	if (umem_read(tid, fp.filter, got, sizeof(got)) < 0)
		return false;
	return memcmp(got, zyg_insns, sizeof(got)) == 0;
}

/* landlock_restrict_self of the ruleset ward made for this run. */
static bool is_our_ruleset(struct tracer *t, pid_t tid, const uint64_t a[6])
{
	return t->zyg.ruleset >= 0 && a[1] == 0 && a[0] < 1u << 20 &&
	       syscall(SYS_kcmp, getpid(), tid, KCMP_FILE, t->zyg.ruleset,
		       (unsigned long)a[0]) == 0;
}

static bool plain_fork(const uint64_t a[6])
{
	return !(a[0] & (CLONE_THREAD | CLONE_VM | CLONE_PARENT));
}

static bool c_calls(struct tracer *t, pid_t pid, long nr, const uint64_t *a)
{
	if (nr == __NR_landlock_restrict_self && !t->zyg.landlocked &&
	    is_our_ruleset(t, pid, a)) {
		t->zyg.landlocked = true;
		return true;
	}
	if (nr == __NR_prctl && is_our_filter(pid, a) &&
	    (t->zyg.landlocked || !t->landlock.active)) {
		t->zyg.state = ZYG_C_FILTERED;
		return true;
	}
	return false;
}

/* A trapped call of A, B or C in the set-up's order; false: killed. */
static bool setup_call(struct tracer *t, pid_t pid)
{
	struct ptrace_syscall_info si;
	char why[160];

	memset(&si, 0, sizeof(si));
	if (ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof(si), &si) < 0 ||
	    si.op != PTRACE_SYSCALL_INFO_SECCOMP ||
	    si.arch != AUDIT_ARCH_X86_64) {
		zyg_fail(t, "a set-up call could not be read");
		return false;
	}
	long nr = (long)si.seccomp.nr;
	const uint64_t *a = si.seccomp.args;
	const char *who = pid == t->zyg.a ? "the fork"
			  : pid == t->zyg.b ? "its pid 1"
					    : "its code's process";
	bool ok = false;

	if (pid == t->zyg.a && t->zyg.state == ZYG_UNSHARED) {
		if (setup_a(t) < 0)
			return false;
		t->zyg.state = ZYG_MOUNTED;
	}
	if (pid == t->zyg.a && t->zyg.state == ZYG_ATTACHED) {
		ok = nr == __NR_unshare && a[0] == TRACER_ZYGOTE_UNSHARE;
		if (ok)
			t->zyg.state = ZYG_UNSHARED;
	} else if (pid == t->zyg.a && t->zyg.state == ZYG_MOUNTED) {
		ok = nr == __NR_capset || (nr == __NR_clone && plain_fork(a));
	} else if (pid == t->zyg.b && t->zyg.state == ZYG_FORKED) {
		ok = nr == __NR_clone && plain_fork(a);
	} else if (pid == t->root && t->zyg.state == ZYG_C_SETUP) {
		ok = c_calls(t, pid, nr, a);
	}
	if (!ok) {
		snprintf(why, sizeof(why),
			 "%s made syscall %ld (0x%llx) out of its order", who,
			 nr, (unsigned long long)a[0]);
		zyg_fail(t, why);
	}
	return ok;
}

/* C, the code's process, once it has its filter: what the set-up
 * promised, before its first call of its own. */
static int check_c(struct tracer *t, pid_t c, char *why, size_t n)
{
	static const char *const caps[] = { "CapInh:", "CapPrm:", "CapEff:",
					    "CapAmb:" };

	for (size_t i = 0; i < 4; i++)
		if (status_num(c, caps[i], 16) != 0) {
			snprintf(why, n, "its code's process has %s", caps[i]);
			return -EPERM;
		}
	if (status_num(c, "NoNewPrivs:", 10) != 1 ||
	    status_num(c, "Seccomp_filters:", 10) != t->zyg.filters + 1) {
		snprintf(why, n, "its code's process lacks its filter");
		return -EPERM;
	}
	for (size_t i = 0; i + 1 < ZYG_NNS; i++)
		if (ns_ino(c, zyg_ns[i]) == t->zyg.ns_before[i]) {
			snprintf(why, n,
				 "its code's process is in the template's %s "
				 "namespace",
				 zyg_ns[i]);
			return -EPERM;
		}
	return 0;
}

static void record_layers(struct tracer *t)
{
	char d[200];

	snprintf(d, sizeof(d),
		 "forked from the template run %s (ward's own warm-up), then "
		 "set up before its code: own namespaces, ids, mounts, "
		 "Landlock domain, filter; no capability (checked)",
		 t->o->zygote_origin ? t->o->zygote_origin : "(unknown)");
	tracer_layer_add(t->res, "zygote", true, d);
	tracer_layer_add(t->res, "namespaces", true,
			 "the fork's own: user (its uid and gid only), pid, "
			 "mnt (the policy's view; its own workdir, /tmp, "
			 "/dev/shm, /proc), net (loopback only), ipc, uts, "
			 "cgroup");
}

/* B's fork: C is the run's first process from now on; B goes. Its
 * /proc and its Landlock ruleset are made before it runs. */
static void root_c(struct tracer *t, pid_t c)
{
	char why[200], root[64];
	int sp[2], rc;

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp) < 0) {
		zyg_fail(t, "socketpair");
		return;
	}
	rc = in_helper(t, proc_and_ruleset, c, sp[1]);
	close(sp[1]);
	if (rc == 0 && t->landlock.active && (t->zyg.ruleset = recv_fd(sp[0])) < 0)
		rc = t->zyg.ruleset;
	close(sp[0]);
	if (rc == 0)
		rc = send_fd(t->go_fd, t->landlock.active ? 'L' : 'N',
			     t->zyg.ruleset);
	if (rc < 0) {
		kill(c, SIGKILL);
		snprintf(why, sizeof(why),
			 "its /proc and Landlock domain: %s", strerror(-rc));
		zyg_fail(t, why);
		return;
	}
	snprintf(root, sizeof(root), "/proc/%d/root", (int)c);
	int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		kill(c, SIGKILL);
		zyg_fail(t, "its root directory cannot be opened");
		return;
	}
	tracer_resolve_ns(t, fd);
	t->ns.flags = TRACER_ZYGOTE_UNSHARE;
	t->root = c;
	/* B is the namespace's init, as ward's own is in a spawned run:
	 * tracer_stop kills the namespace through it, and the results BPF
	 * (retbpf.c) watches its pid namespace */
	t->ns.init = t->zyg.b;
	t->ns.init_fd = (int)syscall(SYS_pidfd_open, t->zyg.b, 0);
	tracer_results_layer(t);
	struct tracee *x = tracee_find(t, c);
	if (!x && tracer_unpark(t, c))
		x = tracer_release_parked(t, c);
	else if (!x)
		x = tracer_tracee_add(t, c);
	if (!x) {
		zyg_fail(t, "out of memory");
		return;
	}
	x->execed = true; /* the interpreter, from the fork */
	t->zyg.state = ZYG_C_SETUP;
	debug("zygote: the code's process is %d", (int)c);
}

static void on_fork(struct tracer *t, pid_t pid)
{
	unsigned long msg = 0;

	if (ptrace(PTRACE_GETEVENTMSG, pid, 0, &msg) < 0 || msg == 0) {
		zyg_fail(t, "a fork's pid cannot be read");
		return;
	}
	if (pid == t->zyg.a && t->zyg.state == ZYG_MOUNTED) {
		t->zyg.b = (pid_t)msg;
		t->zyg.state = ZYG_FORKED;
		/* held before its parent's event: it waited for it */
		if (tracer_unpark(t, t->zyg.b))
			ptrace(PTRACE_CONT, t->zyg.b, 0, 0);
		ptrace(PTRACE_DETACH, pid, 0, 0);
		t->zyg.a_detached = true;
		return;
	}
	if (pid == t->zyg.b && t->zyg.state == ZYG_FORKED) {
		root_c(t, (pid_t)msg);
		ptrace(PTRACE_DETACH, pid, 0, 0);
		t->zyg.b_detached = true;
		return;
	}
	kill((pid_t)msg, SIGKILL);
	zyg_fail(t, "a process forked out of the set-up's order");
}

/* C's calls until its first of its own: the set-up's, then the check. */
static bool c_stop(struct tracer *t, pid_t pid, int status)
{
	char why[200];

	if (!WIFSTOPPED(status) || (unsigned)status >> 16 != PTRACE_EVENT_SECCOMP)
		return false; /* its other stops: as any tracee's */
	if (t->zyg.state == ZYG_C_FILTERED) {
		if (check_c(t, pid, why, sizeof(why)) < 0) {
			zyg_fail(t, why);
			kill(pid, SIGKILL);
			ptrace(PTRACE_CONT, pid, 0, 0);
			return true;
		}
		tracer_zyg_end(t);
		record_layers(t);
		t->zyg.state = ZYG_DONE;
		return false; /* its first call of its own: decided */
	}
	if (setup_call(t, pid))
		ptrace(PTRACE_CONT, pid, 0, 0);
	else {
		kill(pid, SIGKILL);
		ptrace(PTRACE_CONT, pid, 0, 0);
	}
	return true;
}

bool tracer_zyg_stop(struct tracer *t, pid_t pid, int status)
{
	int event = (unsigned)status >> 16, sig;

	if (pid <= 0)
		return false;
	if (pid == t->root && t->zyg.state >= ZYG_C_SETUP)
		return c_stop(t, pid, status);
	if ((pid != t->zyg.a || t->zyg.a_detached) &&
	    (pid != t->zyg.b || t->zyg.b_detached))
		return false;
	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		if (pid == t->zyg.a)
			t->zyg.a = -1;
		else
			t->zyg.b = -1;
		zyg_fail(t, "a set-up process ended before the code started");
		return true;
	}
	if (!WIFSTOPPED(status))
		return true;
	if (atomic_load(&t->stop_reason) != STOP_NONE) {
		kill(pid, SIGKILL);
		ptrace(PTRACE_CONT, pid, 0, 0);
		return true;
	}
	sig = WSTOPSIG(status);
	switch (event) {
	case PTRACE_EVENT_SECCOMP:
		if (setup_call(t, pid))
			ptrace(PTRACE_CONT, pid, 0, 0);
		return true;
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
	case PTRACE_EVENT_CLONE: on_fork(t, pid); return true;
	case PTRACE_EVENT_EXEC:
		zyg_fail(t, "a set-up process executed a program");
		return true;
	case PTRACE_EVENT_STOP:
		if (tracer_is_stop_signal(sig))
			ptrace(PTRACE_LISTEN, pid, 0, 0);
		else
			ptrace(PTRACE_CONT, pid, 0, 0);
		return true;
	case 0: ptrace(PTRACE_CONT, pid, 0, (void *)(long)sig); return true;
	default: ptrace(PTRACE_CONT, pid, 0, 0); return true;
	}
}

bool tracer_zyg_pending(const struct tracer *t)
{
	return t->zyg.state > 0 && t->zyg.state < ZYG_DONE;
}

bool tracer_zyg_floor(long nr, const uint64_t args[6])
{
	return nr == __NR_unshare || nr == __NR_seccomp ||
	       (nr == __NR_prctl && (args[0] & 0xffffffffu) == PR_SET_SECCOMP);
}
