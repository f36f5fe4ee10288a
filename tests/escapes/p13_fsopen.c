/* P13: the new mount API: fsopen("tmpfs"). In the kill floor. */
#include "escape.h"

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	result(syscall(SYS_fsopen, "tmpfs", 0));
	say("AFTER");
	return 0;
}
