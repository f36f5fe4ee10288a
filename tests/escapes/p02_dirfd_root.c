/* P02: a directory fd on "/" (O_PATH, as a stat would need), then openat
 * relative to it: the path string alone ("var/tmp/...") names nothing. */
#include "escape.h"

int attack(int argc, char **argv)
{
	int dir = open("/", O_PATH | O_DIRECTORY);
	int fd;

	if (dir < 0)
		dir = open("/", O_RDONLY | O_DIRECTORY);
	fd = (int)result(openat(dir, ARG("secret") + 1, O_RDONLY));
	say("AFTER");
	if (fd >= 0)
		leaked(fd, ARG("token"));
	return 0;
}
