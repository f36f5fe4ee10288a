/* U05: a mapping of a device itself (/dev/zero, private), and a denied
 * call "returning" into it: the mapping's file is a character device. */
#include "escape.h"
#include "unwind.h"

int attack(int argc, char **argv)
{
	unsigned long base = map_exec("/dev/zero", 4096, 0);

	if (!base) /* a noexec /dev: readable is enough for an unwinder */
		base = (unsigned long)mmap(NULL, 4096, PROT_READ, MAP_PRIVATE,
					   open("/dev/zero", O_RDONLY), 0);
	if (!base || base == (unsigned long)MAP_FAILED)
		return result(-1), 1;
	deny_from(ARG("secret"), base + ESC_RET);
	say("AFTER");
	return 0;
}
