/* N12: look for fds the code did not open (ward's own, or its parent's:
 * the test starts ward holding the secret open): fstat 3..1023 and read
 * whatever is there. */
#include "escape.h"
#include <sys/stat.h>

int attack(int argc, char **argv)
{
	int found = 0;

	for (int fd = 3; fd < 1024; fd++) {
		struct stat st;
		char p[64], l[4096];
		ssize_t n;

		if (fstat(fd, &st) < 0)
			continue;
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		n = readlink(p, l, sizeof(l) - 1);
		l[n > 0 ? n : 0] = 0;
		/* Python's own (the attack .so, pipes) are expected. */
		say("FD %d %s", fd, l);
		if (strstr(l, "ward-escape-") || strstr(l, ".db"))
			found++;
		leaked(fd, ARG("token"));
	}
	errno = EBADF;
	result(found ? 0 : -1);
	say("AFTER");
	return 0;
}
