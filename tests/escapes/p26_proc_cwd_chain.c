/* P26: the workdir's symlink to a directory above: $WORKDIR/up -> /var,
 * then "up/tmp/..../flag" (a directory symlink in the middle of the
 * path). */
#include "escape.h"

int attack(int argc, char **argv)
{
	char p[4096];
	int fd;

	if (symlink("/var", "up") < 0)
		say("symlink: %s", errname(errno));
	snprintf(p, sizeof(p), "up%s", ARG("secret") + 4);
	fd = (int)result(open(p, O_RDONLY));
	say("AFTER");
	if (fd >= 0)
		leaked(fd, ARG("token"));
	return 0;
}
