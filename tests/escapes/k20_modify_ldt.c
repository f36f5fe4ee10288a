/* K20: modify_ldt: 16-bit segments, a long history of kernel bugs. */
#include "escape.h"

int attack(int argc, char **argv)
{
	char buf[16];

	(void)argc;
	(void)argv;
	result(syscall(SYS_modify_ldt, 0, buf, sizeof(buf)));
	say("AFTER");
	return 0;
}
