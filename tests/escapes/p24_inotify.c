/* P24: watch a directory the policy keeps secret (/root: denied even to
 * stat) with inotify: every name created, opened or removed in it would
 * show up, a side channel the stat-style rules must cover too. */
#include "escape.h"
#include <sys/inotify.h>

int attack(int argc, char **argv)
{
	int in = inotify_init1(IN_CLOEXEC);

	(void)argc;
	(void)argv;
	result(inotify_add_watch(in, "/root", IN_ALL_EVENTS));
	say("AFTER");
	return 0;
}
