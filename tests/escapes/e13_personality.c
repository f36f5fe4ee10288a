/* E13: personality(READ_IMPLIES_EXEC): every readable mapping becomes
 * executable (W^X gone). Only PER_LINUX and the query pass. */
#include "escape.h"
#include <sys/personality.h>

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	result(personality(PER_LINUX | READ_IMPLIES_EXEC));
	say("AFTER");
	return 0;
}
