/* P09: hard-link the writable canary (mode 0666, so the kernel's
 * protected_hardlinks allows it) into the workdir, then write through the
 * workdir name. */
#include "escape.h"

int attack(int argc, char **argv)
{
	int fd;

	result(link(ARG("rw"), "h"));
	say("AFTER");
	fd = open("h", O_WRONLY | O_TRUNC);
	if (fd >= 0) {
		say("WROTE %zd", write(fd, "PWNED\n", 6));
		close(fd);
	}
	return 0;
}
