/* K04: int $0x80 exit (i386 nr 1): even an exit through the foreign entry
 * kills (the guard checks the architecture before anything else). */
#include "escape.h"

int attack(int argc, char **argv)
{
	long r;

	(void)argc;
	(void)argv;
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(1L), "b"(0L) : "memory");
	say("RESULT ok");
	say("AFTER");
	return 0;
}
