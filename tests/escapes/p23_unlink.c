/* P23: unlink the canary (its directory is world-writable). */
#include "escape.h"

int attack(int argc, char **argv)
{
	result(unlink(ARG("rw")));
	say("AFTER");
	return 0;
}
