/* K12: process_vm_writev into the process outside the run (same uid as the
 * code, so only ward stands in the way). */
#include "escape.h"
#include <sys/uio.h>

int attack(int argc, char **argv)
{
	char buf[8] = "PWNED";
	struct iovec l = { buf, sizeof(buf) }, r = { (void *)0x10000, 8 };

	result(process_vm_writev(atoi(ARG("bystander")), &l, 1, &r, 1, 0));
	say("AFTER");
	return 0;
}
