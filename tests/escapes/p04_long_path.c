/* P04: a 4000-byte path to the secret padded with "/./" and "//" (under
 * PATH_MAX, so the kernel would open it): a decoder with a short buffer
 * that cuts the string must not decide on the cut. */
#include "escape.h"

int attack(int argc, char **argv)
{
	char p[4096] = "";
	size_t l;
	int fd;

	(void)argc;
	strcpy(p, "/var");
	while (strlen(p) + strlen(ARG("secret")) + 8 < 4000)
		strcat(p, "/./");
	l = strlen(p);
	snprintf(p + l, sizeof(p) - l, "%s", ARG("secret") + 4);
	say("LEN %zu", strlen(p));
	fd = (int)result(open(p, O_RDONLY));
	say("AFTER");
	if (fd >= 0)
		leaked(fd, ARG("token"));
	return 0;
}
