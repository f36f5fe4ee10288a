/* P03: AT_FDCWD passed as 0x00000000ffffff9c (the kernel reads an int)
 * with a relative path that climbs from the workdir to the secret: a
 * decoder comparing 64 bits would not see AT_FDCWD. */
#include "escape.h"

int attack(int argc, char **argv)
{
	char rel[8192] = "";
	long fd;

	(void)argc;
	for (int i = 0; i < 16; i++)
		strcat(rel, "../");
	strcat(rel, ARG("secret") + 1);
	fd = result(syscall(SYS_openat, 0x00000000ffffff9cUL, rel, O_RDONLY));
	say("AFTER");
	if (fd >= 0)
		leaked((int)fd, ARG("token"));
	return 0;
}
