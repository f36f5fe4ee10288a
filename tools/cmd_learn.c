/* cmd_learn.c - `ward learn` (being written). */
#include "cmds.h"

#include "../common/log.h"

int ward_cmd_learn(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return WARD_EXIT_INTERNAL;
}
