/* P12: mount a tmpfs over the workdir's subdirectory (a private tree the
 * code controls). The mount family is in the kill floor. */
#include "escape.h"
#include <sys/mount.h>
#include <sys/stat.h>

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	mkdir("m", 0755);
	result(mount("none", "m", "tmpfs", 0, NULL));
	say("AFTER");
	return 0;
}
