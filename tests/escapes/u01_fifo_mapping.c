/* U01: the file behind an executable mapping is replaced by a FIFO of the
 * same name; then a denied call "returns" into that mapping. An unwinder
 * that opens the mapping's file by its name waits on the FIFO for ever
 * (ward's main thread, its timeout and its signals with it). */
#include "escape.h"
#include "unwind.h"

int attack(int argc, char **argv)
{
	unsigned long base = elf_mapped("lib.so", ESC_GOOD);

	if (!base)
		return result(-1), 1;
	if (unlink("lib.so") < 0 || mkfifo("lib.so", 0666) < 0)
		say("fifo: %s", errname(errno));
	deny_from(ARG("secret"), base + ESC_RET);
	say("AFTER");
	return 0;
}
