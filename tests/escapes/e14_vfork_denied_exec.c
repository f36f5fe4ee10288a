/* E14: vfork, then execve of a program the policy denies, in the child
 * (which borrows the parent's memory and stack while the parent is
 * stopped): the child gets the error and exits, the parent goes on. */
#include "escape.h"
#include <sys/wait.h>

int attack(int argc, char **argv)
{
	char *const av[] = { "sh", "-c", "echo won > marker", NULL };
	char *const env[] = { NULL };
	int st = 0;
	pid_t pid;

	(void)argc;
	(void)argv;
	pid = vfork();
	if (pid == 0) {
		execve("/bin/sh", av, env);
		_exit(errno);
	}
	waitpid(pid, &st, 0);
	errno = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
	result(errno ? -1 : 0);
	say("AFTER");
	return 0;
}
