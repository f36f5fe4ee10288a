/* P20: change the writable canary's times by name. */
#include "escape.h"
#include <sys/stat.h>

int attack(int argc, char **argv)
{
	struct timespec ts[2] = { { 1, 0 }, { 1, 0 } };

	result(utimensat(AT_FDCWD, ARG("rw"), ts, 0));
	say("AFTER");
	return 0;
}
