/* U08: a malformed .eh_frame_hdr: PT_GNU_EH_FRAME points far outside the
 * file and the table claims 2^31 entries. */
#include "escape.h"
#include "unwind.h"

int attack(int argc, char **argv)
{
	unsigned long base = elf_mapped("lib.so", ESC_HDR_OUT);

	if (!base)
		return result(-1), 1;
	deny_from(ARG("secret"), base + ESC_RET);
	say("AFTER");
	return 0;
}
