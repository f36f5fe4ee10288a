/* K13: pidfd_open on our own parent (ward's side of the tree), then
 * pidfd_getfd to steal one of its fds (the audit database, a pipe). */
#include "escape.h"

int attack(int argc, char **argv)
{
	long pfd;

	(void)argc;
	(void)argv;
	pfd = syscall(SYS_pidfd_open, getpid(), 0);
	say("PIDFD %s", pfd >= 0 ? "ok" : errname(errno));
	result(syscall(SYS_pidfd_getfd, pfd, 0, 0));
	say("AFTER");
	return 0;
}
