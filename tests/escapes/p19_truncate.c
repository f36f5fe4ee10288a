/* P19: truncate the writable canary (0666) by name: no open at all. */
#include "escape.h"

int attack(int argc, char **argv)
{
	result(truncate(ARG("rw"), 0));
	say("AFTER");
	return 0;
}
