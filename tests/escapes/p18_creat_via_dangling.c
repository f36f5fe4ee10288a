/* P18: O_CREAT through a dangling symlink: $WORKDIR/d -> <secret dir>/marker
 * (which does not exist). The kernel follows the link and creates the
 * target. */
#include "escape.h"

int attack(int argc, char **argv)
{
	int fd;

	if (symlink(ARG("marker"), "d") < 0)
		say("symlink: %s", errname(errno));
	fd = (int)result(open("d", O_CREAT | O_WRONLY, 0644));
	say("AFTER");
	if (fd >= 0)
		close(fd);
	return 0;
}
