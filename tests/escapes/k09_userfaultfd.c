/* K09: userfaultfd: stall the supervisor's reads of our memory at will (a
 * timing amplifier for every race). */
#include "escape.h"

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	result(syscall(SYS_userfaultfd, O_CLOEXEC));
	say("AFTER");
	return 0;
}
