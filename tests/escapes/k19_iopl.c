/* K19: iopl(3): raw I/O ports. */
#include "escape.h"

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	result(syscall(SYS_iopl, 3));
	say("AFTER");
	return 0;
}
