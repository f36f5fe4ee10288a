/* P14: unshare(CLONE_NEWUSER|CLONE_NEWNS): a user namespace gives full
 * capabilities inside it, then mounts. Killed by the floor. */
#include "escape.h"
#include <sched.h>

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	result(unshare(CLONE_NEWUSER | CLONE_NEWNS));
	say("AFTER");
	return 0;
}
