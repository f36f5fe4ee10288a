/* P22: rename the canary inside its world-writable directory (DAC allows
 * it): the directory must stay as it was. */
#include "escape.h"

int attack(int argc, char **argv)
{
	char to[4096];

	snprintf(to, sizeof(to), "%s/renamed", ARG("sdir"));
	result(rename(ARG("rw"), to));
	say("AFTER");
	return 0;
}
