/* K02: io_uring_enter and io_uring_register on a made-up fd (as if a ring
 * had been passed in from outside): killed by the floor whatever the fd. */
#include "escape.h"

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	result(syscall(SYS_io_uring_register, 0, 0, NULL, 0));
	say("AFTER");
	return 0;
}
