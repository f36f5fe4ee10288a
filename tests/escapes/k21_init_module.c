/* K21: init_module (load kernel code). */
#include "escape.h"

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	result(syscall(SYS_init_module, NULL, 0, ""));
	say("AFTER");
	return 0;
}
