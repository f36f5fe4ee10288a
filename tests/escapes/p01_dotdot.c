/* P01: climb out of the workdir with "..": $WORKDIR/../../..<secret>. */
#include "escape.h"

int attack(int argc, char **argv)
{
	char p[8192];
	int fd;

	snprintf(p, sizeof(p), "%s/../../../../../../..%s", ARG("wd"),
		 ARG("secret"));
	fd = (int)result(open(p, O_RDONLY));
	say("AFTER");
	if (fd >= 0)
		leaked(fd, ARG("token"));
	return 0;
}
