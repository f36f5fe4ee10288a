/* K16: clone with CLONE_NEWUSER|CLONE_NEWNS (the clone form of P14). */
#include "escape.h"
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>

int attack(int argc, char **argv)
{
	long pid;

	(void)argc;
	(void)argv;
	pid = syscall(SYS_clone, CLONE_NEWUSER | CLONE_NEWNS | SIGCHLD, 0, NULL,
		      NULL, 0);
	if (pid == 0)
		_exit(0);
	result(pid);
	if (pid > 0)
		waitpid((pid_t)pid, NULL, 0);
	say("AFTER");
	return 0;
}
