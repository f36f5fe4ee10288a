/* K05: the x32 ABI: openat | 0x40000000 (__X32_SYSCALL_BIT). A filter
 * comparing syscall numbers exactly would let it through; this kernel has
 * no x32, others may. The guard kills any x32 number. */
#include "escape.h"

int attack(int argc, char **argv)
{
	result(syscall(0x40000000L | 257, AT_FDCWD, ARG("secret"), O_RDONLY));
	say("AFTER");
	return 0;
}
