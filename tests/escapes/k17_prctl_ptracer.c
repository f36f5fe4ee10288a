/* K17: prctl(PR_SET_PTRACER, any): lets any process ptrace us (Yama);
 * not on the prctl allowlist. */
#include "escape.h"
#include <sys/prctl.h>

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	result(prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0));
	say("AFTER");
	return 0;
}
