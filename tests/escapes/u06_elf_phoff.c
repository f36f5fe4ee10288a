/* U06: an executable mapping of an ELF whose program headers lie far
 * outside the file (e_phoff 0x7fff0000): an ELF parser that trusts the
 * header reads past its buffer. */
#include "escape.h"
#include "unwind.h"

int attack(int argc, char **argv)
{
	unsigned long base = elf_mapped("lib.so", ESC_PHOFF);

	if (!base)
		return result(-1), 1;
	deny_from(ARG("secret"), base + ESC_RET);
	say("AFTER");
	return 0;
}
