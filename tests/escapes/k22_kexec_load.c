/* K22: kexec_load (boot another kernel). */
#include "escape.h"

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	result(syscall(SYS_kexec_load, 0, 0, NULL, 0));
	say("AFTER");
	return 0;
}
