/*
 * minitracer.c - the floor for ward's design: a seccomp(RET_TRACE) + ptrace
 * supervisor with no policy, no audit and no decoding beyond what any
 * policy check needs at minimum. Per trapped syscall: PTRACE_GET_SYSCALL_INFO,
 * one process_vm_readv of the path (or sockaddr) argument, PTRACE_CONT.
 *
 * usage: minitracer [-v] [--stat] [--ns] PROG [ARGS...]
 *   --stat  also trap the stat family (ward's policy "trap_stat": true)
 *   --ns    run PROG in new pid (with its own /proc), mount (private),
 *           net (loopback up), ipc and uts namespaces, as ward's run does,
 *           without ward's other mounts (read-only host, tmpfs, workdir):
 *           what the namespaces add to the floor (needs root)
 *   -v      print "minitracer: stops N" on stderr at the end
 * Traps the same set as ward's tracer/syscalls.c TRAP_ALWAYS rows (minus the
 * argument-filtered sendto/prlimit64); clone3 answers ENOSYS as under ward.
 * Follows forks, clones and execs; group-stops are kept with PTRACE_LISTEN.
 * Exits with the program's status (128+N when killed by signal N).
 * Built by bench/bench.py: cc -O2 -o BUILD/minitracer bench/minitracer.c -lseccomp
 */
#define _GNU_SOURCE
#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

/* Which argument carries the path or address: "name:index". */
static const char *const design[] = { "open:0",
				      "openat:1",
				      "openat2:1",
				      "creat:0",
				      "unlink:0",
				      "unlinkat:1",
				      "rmdir:0",
				      "mkdir:0",
				      "mkdirat:1",
				      "mknod:0",
				      "mknodat:1",
				      "rename:0",
				      "renameat:1",
				      "renameat2:1",
				      "link:0",
				      "linkat:1",
				      "symlink:0",
				      "symlinkat:0",
				      "chmod:0",
				      "fchmodat:1",
				      "chown:0",
				      "lchown:0",
				      "fchownat:1",
				      "truncate:0",
				      "utime:0",
				      "utimes:0",
				      "utimensat:1",
				      "futimesat:1",
				      "setxattr:0",
				      "lsetxattr:0",
				      "removexattr:0",
				      "lremovexattr:0",
				      "chdir:0",
				      "inotify_add_watch:1",
				      "execve:0",
				      "execveat:1",
				      "socket:-",
				      "connect:1",
				      "bind:1",
				      "listen:-",
				      "sendmsg:-",
				      "sendmmsg:-",
				      "clone:-",
				      "fork:-",
				      "vfork:-",
				      "kill:-",
				      "tkill:-",
				      "tgkill:-",
				      "rt_sigqueueinfo:-",
				      "rt_tgsigqueueinfo:-",
				      "pidfd_send_signal:-",
				      "pidfd_open:-",
				      NULL };
static const char *const statfam[] = {
	"stat:0",	"lstat:0",    "newfstatat:1",
	"statx:1",	"access:0",   "faccessat:1",
	"faccessat2:1", "readlink:0", "readlinkat:1",
	"statfs:0",	NULL
};

static signed char argpos[1024]; /* -1: no memory argument */

static void add_list(scmp_filter_ctx ctx, const char *const *list)
{
	for (; *list; list++) {
		char name[64];
		const char *colon = strchr(*list, ':');
		snprintf(name, sizeof name, "%.*s", (int)(colon - *list),
			 *list);
		int nr = seccomp_syscall_resolve_name(name);
		if (nr < 0 || nr >= 1024)
			continue;
		argpos[nr] = colon[1] == '-' ? -1
					     : (signed char)(colon[1] - '0');
		if (seccomp_rule_add(ctx, SCMP_ACT_TRACE(0), nr, 0) < 0)
			fprintf(stderr, "minitracer: rule %s failed\n", name);
	}
}

/* --ns, in the child (pid 1 of the new pid namespace): the other
 * namespaces, a private mount tree, its own /proc, loopback up. */
static void enter_ns(void)
{
	struct ifreq ifr;
	int s;

	if (unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) <
		    0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL) < 0) {
		fprintf(stderr, "minitracer: --ns: %s\n", strerror(errno));
		_exit(126);
	}
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0 ||
	    (ifr.ifr_flags |= IFF_UP | IFF_RUNNING,
	     ioctl(s, SIOCSIFFLAGS, &ifr) < 0)) {
		fprintf(stderr, "minitracer: --ns: lo: %s\n", strerror(errno));
		_exit(126);
	}
	close(s);
}

static void child(int rd, int with_stat, int ns, char **argv)
{
	char c;
	if (ns)
		enter_ns();
	if (read(rd, &c, 1) != 1) /* wait until the parent has seized us */
		_exit(126);
	close(rd);
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		_exit(126);
	add_list(ctx, design);
	if (with_stat)
		add_list(ctx, statfam);
	seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	if (seccomp_load(ctx) < 0) { /* sets no_new_privs (default attr) */
		fprintf(stderr, "minitracer: seccomp_load failed\n");
		_exit(126);
	}
	seccomp_release(ctx);
	execv(argv[0], argv);
	fprintf(stderr, "minitracer: exec %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

int main(int argc, char **argv)
{
	int with_stat = 0, verbose = 0, ns = 0, i = 1, p[2];
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--stat"))
			with_stat = 1;
		else if (!strcmp(argv[i], "-v"))
			verbose = 1;
		else if (!strcmp(argv[i], "--ns"))
			ns = 1;
		else
			break;
	}
	if (i >= argc) {
		fprintf(stderr,
			"usage: minitracer [-v] [--stat] [--ns] PROG [ARGS...]\n");
		return 2;
	}
	/* Fill argpos in the parent too (the child's copy is its own). */
	scmp_filter_ctx tmp = seccomp_init(SCMP_ACT_ALLOW);
	add_list(tmp, design);
	add_list(tmp, statfam);
	seccomp_release(tmp);

	if (ns && unshare(CLONE_NEWPID) < 0) { /* the child is its pid 1 */
		perror("minitracer: unshare(CLONE_NEWPID)");
		return 125;
	}
	if (pipe(p) < 0) {
		perror("minitracer: pipe");
		return 125;
	}
	pid_t kid = fork();
	if (kid < 0) {
		perror("minitracer: fork");
		return 125;
	}
	if (kid == 0) {
		close(p[1]);
		child(p[0], with_stat, ns, argv + i);
	}
	close(p[0]);
	long opts = PTRACE_O_EXITKILL | PTRACE_O_TRACESECCOMP |
		    PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK |
		    PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC;
	if (ptrace(PTRACE_SEIZE, kid, 0, (void *)opts) < 0) {
		perror("minitracer: PTRACE_SEIZE");
		kill(kid, SIGKILL);
		return 125;
	}
	if (write(p[1], "g", 1) != 1)
		return 125;
	close(p[1]);

	long stops = 0;
	int rc = 125, st;
	static char buf[4096];
	for (;;) {
		pid_t pid = waitpid(-1, &st, __WALL);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			break; /* ECHILD: the last tracee is gone */
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			if (pid == kid)
				rc = WIFEXITED(st) ? WEXITSTATUS(st)
						   : 128 + WTERMSIG(st);
			continue;
		}
		int ev = (unsigned)st >> 16, sig = WSTOPSIG(st), inject = 0;
		if (ev == PTRACE_EVENT_SECCOMP) {
			struct __ptrace_syscall_info si;
			stops++;
			if (ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof si,
				   &si) > 0 &&
			    si.op == PTRACE_SYSCALL_INFO_SECCOMP &&
			    si.seccomp.nr < 1024 &&
			    argpos[si.seccomp.nr] >= 0) {
				uint64_t a =
					si.seccomp.args[argpos[si.seccomp.nr]];
				size_t n = 4096 -
					   (a & 4095); /* never cross a page */
				struct iovec l = { buf, n },
					     r = { (void *)(uintptr_t)a, n };
				if (a) /* a policy would inspect buf here */
					process_vm_readv(pid, &l, 1, &r, 1, 0);
			}
		} else if (ev == PTRACE_EVENT_STOP) {
			if (sig == SIGSTOP || sig == SIGTSTP ||
			    sig == SIGTTIN || sig == SIGTTOU) {
				ptrace(PTRACE_LISTEN, pid, 0,
				       0); /* group-stop */
				continue;
			}
		} else if (ev == 0) {
			inject = sig; /* signal-delivery-stop: pass it on */
		}
		ptrace(PTRACE_CONT, pid, 0, (void *)(long)inject);
	}
	if (verbose)
		fprintf(stderr, "minitracer: stops %ld\n", stops);
	return rc;
}
