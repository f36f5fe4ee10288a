/* U03: the mapped file's name (plain and " (deleted)") becomes a symlink
 * to a device node (the canary's, char 1:3): whoever opens the mapping by
 * its name runs the device's open, as root. */
#include "escape.h"
#include "unwind.h"

int attack(int argc, char **argv)
{
	char dev[4096];
	unsigned long base = elf_mapped("lib.so", ESC_GOOD);

	if (!base)
		return result(-1), 1;
	snprintf(dev, sizeof(dev), "%s/dev", ARG("sdir"));
	if (unlink("lib.so") < 0 || symlink(dev, "lib.so") < 0 ||
	    symlink(dev, "lib.so (deleted)") < 0)
		say("symlink: %s", errname(errno));
	deny_from(ARG("secret"), base + ESC_RET);
	say("AFTER");
	return 0;
}
