/* P25: list the secret's directory (open O_DIRECTORY + getdents64). */
#include "escape.h"
#include <dirent.h>

int attack(int argc, char **argv)
{
	int fd = (int)result(open(ARG("sdir"), O_RDONLY | O_DIRECTORY));
	char buf[4096];

	say("AFTER");
	if (fd >= 0)
		say("LISTED %ld",
		    syscall(SYS_getdents64, fd, buf, sizeof(buf)));
	return 0;
}
