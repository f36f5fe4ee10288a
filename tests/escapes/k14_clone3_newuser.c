/* K14: clone3 with CLONE_NEWUSER: its flags live in a struct that BPF
 * cannot read, so clone3 answers ENOSYS (libc falls back to clone). */
#include "escape.h"
#include <linux/sched.h>
#include <sched.h>
#include <sys/wait.h>

int attack(int argc, char **argv)
{
	struct clone_args ca;
	long pid;

	(void)argc;
	(void)argv;
	memset(&ca, 0, sizeof(ca));
	ca.flags = CLONE_NEWUSER;
	ca.exit_signal = SIGCHLD;
	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0)
		_exit(0);
	result(pid);
	if (pid > 0)
		waitpid((pid_t)pid, NULL, 0);
	say("AFTER");
	return 0;
}
