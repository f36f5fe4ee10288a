/* K24: setns into init's network namespace through /proc/1/ns/net. */
#include "escape.h"
#include <sched.h>

int attack(int argc, char **argv)
{
	int fd = open("/proc/1/ns/net", O_RDONLY);

	(void)argc;
	(void)argv;
	say("NSFD %s", fd >= 0 ? "ok" : errname(errno));
	result(setns(fd, CLONE_NEWNET));
	say("AFTER");
	return 0;
}
