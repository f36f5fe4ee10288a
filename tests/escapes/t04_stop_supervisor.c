/* T04: SIGSTOP the supervisor: a stopped ward is a stopped decision
 * maker; every trapped call would then hang (or, if ward let go, run
 * undecided). */
#include "escape.h"
#include <signal.h>

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	result(kill(getppid(), SIGSTOP));
	say("AFTER");
	return 0;
}
