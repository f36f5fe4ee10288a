/* N17: open /proc/self/exe for writing (runc CVE-2019-5736: overwrite the
 * interpreter the host runs next). */
#include "escape.h"

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	result(open("/proc/self/exe", O_WRONLY));
	say("AFTER");
	return 0;
}
