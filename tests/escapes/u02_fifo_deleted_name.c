/* U02: as U01, the FIFO named as /proc/PID/maps shows a deleted file:
 * "lib.so (deleted)". */
#include "escape.h"
#include "unwind.h"

int attack(int argc, char **argv)
{
	unsigned long base = elf_mapped("lib.so", ESC_GOOD);

	if (!base)
		return result(-1), 1;
	if (unlink("lib.so") < 0 || mkfifo("lib.so (deleted)", 0666) < 0)
		say("fifo: %s", errname(errno));
	deny_from(ARG("secret"), base + ESC_RET);
	say("AFTER");
	return 0;
}
