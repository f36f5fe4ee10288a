/* K15: clone(CLONE_UNTRACED): a child the supervisor is not attached to
 * would run every allowed syscall unseen. Killed (rule clone.flags). */
#include "escape.h"
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>

int attack(int argc, char **argv)
{
	long pid;

	pid = syscall(SYS_clone, CLONE_UNTRACED | SIGCHLD, 0, NULL, NULL, 0);
	if (pid == 0) {
		int fd = open(ARG("secret"), O_RDONLY);
		if (fd >= 0)
			leaked(fd, ARG("token"));
		_exit(0);
	}
	result(pid);
	if (pid > 0)
		waitpid((pid_t)pid, NULL, 0);
	say("AFTER");
	return 0;
}
