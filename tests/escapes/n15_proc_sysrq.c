/* N15: write /proc/sysrq-trigger and /proc/sys/kernel/core_pattern (host
 * kernel knobs through procfs; DAC stops nobody here only as non-root,
 * so the open must be refused by the policy first). */
#include "escape.h"

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	result(open("/proc/sys/kernel/core_pattern", O_WRONLY));
	say("AFTER");
	return 0;
}
