/* T06: pidfd_open + pidfd_send_signal at the process outside the run. */
#include "escape.h"
#include <signal.h>

int attack(int argc, char **argv)
{
	long pfd = syscall(SYS_pidfd_open, atoi(ARG("bystander")), 0);

	say("PIDFD %s", pfd >= 0 ? "ok" : errname(errno));
	if (pfd < 0)
		return result(pfd), say("AFTER"), 0;
	result(syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0));
	say("AFTER");
	return 0;
}
