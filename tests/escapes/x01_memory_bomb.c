/* X01: allocate and touch memory until something gives (run with --memory
 * 256M): the allocation must fail or the run end at its limit, and the
 * machine and the supervisor must not notice. */
#include "escape.h"
#include <sys/mman.h>

int attack(int argc, char **argv)
{
	long mb = 0;

	(void)argc;
	(void)argv;
	for (;;) {
		char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			break;
		memset(p, 1, 1 << 20);
		if (++mb > 8192)
			break;
	}
	say("MB %ld", mb);
	result(mb > 8192 ? 0 : -1);
	say("AFTER");
	return 0;
}
