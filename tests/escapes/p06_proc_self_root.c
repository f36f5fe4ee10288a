/* P06: the secret through the magic link /proc/self/root. */
#include "escape.h"

int attack(int argc, char **argv)
{
	char p[4096];
	int fd;

	snprintf(p, sizeof(p), "/proc/self/root%s", ARG("secret"));
	fd = (int)result(open(p, O_RDONLY));
	say("AFTER");
	if (fd >= 0)
		leaked(fd, ARG("token"));
	return 0;
}
