/* T07: the code keeps making trapped calls (and forks a child that does
 * too) while the test harness SIGKILLs ward itself: every process of the
 * run must die with it (PTRACE_O_EXITKILL), none may go on untraced. */
#include "escape.h"
#include <sys/wait.h>

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	if (fork() == 0) {
		for (;;) {
			int fd = open(ARG("secret"), O_RDONLY);
			if (fd >= 0)
				leaked(fd, ARG("token"));
		}
	}
	say("READY");
	for (;;) {
		int fd = open(ARG("secret"), O_RDONLY);
		if (fd >= 0)
			leaked(fd, ARG("token"));
	}
	return 0;
}
