/* T05: kill(-1, SIGKILL): every process the uid may signal, including the
 * process outside the run (same uid). */
#include "escape.h"
#include <signal.h>

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	result(kill(-1, SIGKILL));
	say("AFTER");
	return 0;
}
