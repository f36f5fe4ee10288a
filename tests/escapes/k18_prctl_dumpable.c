/* K18: prctl(PR_SET_DUMPABLE, 0): a non-dumpable process hides its memory
 * and /proc entries from the supervisor. */
#include "escape.h"
#include <sys/prctl.h>

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	result(prctl(PR_SET_DUMPABLE, 0, 0, 0, 0));
	say("AFTER");
	return 0;
}
