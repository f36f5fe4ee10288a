/* P16: mknod a character device 1:1 (/dev/mem) in the workdir. */
#include "escape.h"
#include <sys/stat.h>
#include <sys/sysmacros.h>

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	result(mknod("mem", S_IFCHR | 0666, makedev(1, 1)));
	say("AFTER");
	return 0;
}
