/* P10: an unnamed O_TMPFILE in the workdir (allowed: it is ours), then
 * linkat(AT_EMPTY_PATH via /proc/self/fd) gives it a name in the secret's
 * directory, which the code may not create in. */
#include "escape.h"

int attack(int argc, char **argv)
{
	char fdp[64];
	int fd = open(".", O_TMPFILE | O_WRONLY, 0644);

	say("TMPFILE %s", fd >= 0 ? "ok" : errname(errno));
	if (fd >= 0 && write(fd, "PWNED\n", 6) != 6)
		say("write failed");
	snprintf(fdp, sizeof(fdp), "/proc/self/fd/%d", fd);
	result(fd >= 0 ? linkat(AT_FDCWD, fdp, AT_FDCWD, ARG("marker"),
				AT_SYMLINK_FOLLOW)
		       : -1);
	say("AFTER");
	return 0;
}
