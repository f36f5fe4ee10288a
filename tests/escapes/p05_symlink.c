/* P05: a symlink in the workdir pointing at the secret, opened by its
 * harmless name. */
#include "escape.h"

int attack(int argc, char **argv)
{
	int fd;

	if (symlink(ARG("secret"), "innocent") < 0)
		say("symlink: %s", errname(errno));
	fd = (int)result(open("innocent", O_RDONLY));
	say("AFTER");
	if (fd >= 0)
		leaked(fd, ARG("token"));
	return 0;
}
