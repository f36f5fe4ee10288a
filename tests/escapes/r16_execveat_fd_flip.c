/* R16: execveat(fd, "", AT_EMPTY_PATH) while a sibling thread dup2()s a
 * forbidden program (dash, which would write the workdir marker) and an
 * allowed one (the static exec_probe) onto that fd, in turn. The child
 * shares the attacker's fd table (CLONE_FILES), so the dup2 can land
 * between ward's check at the syscall's entry (which resolves the fd) and
 * the kernel's use of it: the entry check cannot be the guarantee. The
 * exec event's check is (docs/security.md, "Executing through a file
 * descriptor"): dash must never run a single instruction; the run is
 * killed at the first exec of a program ward did not approve. */
#include "escape.h"
#include <sched.h>
#include <sys/mman.h>

#define FD 100

static int good_fd, bad_fd;
static char *const av[] = { "x", "-c", "echo won > marker", NULL };
static char *const env[] = { NULL };

static void to_bad(void *unused)
{
	(void)unused;
	dup2(bad_fd, FD);
}

static void to_good(void *unused)
{
	(void)unused;
	dup2(good_fd, FD);
}

static int child(void *unused)
{
	(void)unused;
	syscall(SYS_execveat, FD, "", av, env, AT_EMPTY_PATH);
	_exit(127);
}

int attack(int argc, char **argv)
{
	static struct racer r = { .even = 1, .bad = to_bad, .good = to_good };
	const size_t stack_len = 64 * 1024;
	char *stack = mmap(NULL, stack_len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pthread_t t;
	long i;

	good_fd = open(ARG("probe"), O_PATH | O_CLOEXEC);
	bad_fd = open("/bin/dash", O_PATH | O_CLOEXEC);
	if (stack == MAP_FAILED || good_fd < 0 || bad_fd < 0 ||
	    dup2(good_fd, FD) < 0)
		return result(-1), 1;
	pthread_create(&t, NULL, racer_thread, &r);
	for (i = 0; i < RACE_N; i++) {
		pid_t pid = clone(child, stack + stack_len,
				  CLONE_VM | CLONE_VFORK | CLONE_FILES | SIGCHLD,
				  NULL);
		if (pid < 0)
			break;
		waitpid(pid, NULL, 0);
	}
	racer_stop(&r);
	pthread_join(t, NULL);
	wins(0, i); /* a win is dash running: the marker tells */
	say("AFTER");
	return 0;
}
