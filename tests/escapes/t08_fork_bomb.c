/* T08: a fork bomb: every process forks as fast as it can. The process
 * limit must end it, and none of the processes may outlive the run. */
#include "escape.h"

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	for (int i = 0; i < 100000; i++) {
		pid_t p = fork();
		if (p < 0)
			continue;
	}
	for (;;)
		pause();
	return 0;
}
