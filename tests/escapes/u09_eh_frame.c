/* U09: malformed .eh_frame: a search table whose FDE lies 1 GiB away,
 * then an FDE whose CIE pointer points at the FDE itself. Two denials,
 * one through each. */
#include "escape.h"
#include "unwind.h"

int attack(int argc, char **argv)
{
	unsigned long out = elf_mapped("out.so", ESC_FDE_OUT);
	unsigned long self = elf_mapped("self.so", ESC_CIE_SELF);

	if (!out || !self)
		return result(-1), 1;
	deny_from(ARG("secret"), out + ESC_RET);
	deny_from(ARG("secret"), self + ESC_RET);
	say("AFTER");
	return 0;
}
