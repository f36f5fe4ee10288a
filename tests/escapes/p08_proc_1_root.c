/* P08: another process's root: /proc/1/root (init's view of the file
 * system, outside any chroot or mount namespace of the run). */
#include "escape.h"

int attack(int argc, char **argv)
{
	char p[4096];
	int fd;

	snprintf(p, sizeof(p), "/proc/1/root%s", ARG("secret"));
	fd = (int)result(open(p, O_RDONLY));
	say("AFTER");
	if (fd >= 0)
		leaked(fd, ARG("token"));
	return 0;
}
