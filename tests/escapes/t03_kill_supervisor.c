/* T03: SIGKILL the supervisor (our parent), which would leave the code
 * running untraced if the tracees did not die with it. */
#include "escape.h"
#include <signal.h>

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	say("PPID %d", (int)getppid());
	result(kill(getppid(), SIGKILL));
	say("AFTER");
	return 0;
}
