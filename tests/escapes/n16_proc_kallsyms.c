/* N16: read /proc/kallsyms (kernel addresses) and /proc/1/environ. */
#include "escape.h"

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	result(open("/proc/kallsyms", O_RDONLY));
	say("AFTER");
	return 0;
}
