/* K03: the i386 entry (int $0x80) with i386 numbers: 5 is open there (2 on
 * x86_64), so a filter that does not check the architecture reads the
 * wrong table. The guard kills any foreign architecture. */
#include "escape.h"

static char path[4096] __attribute__((aligned(16)));

int attack(int argc, char **argv)
{
	long r;

	snprintf(path, sizeof(path), "%s", ARG("secret"));
	/* The path must be below 4 GiB for the 32-bit ABI: a static in a
	 * shared object may not be; the kernel then fails with EFAULT, which
	 * is still an i386 syscall the guard must kill first. */
	__asm__ volatile("int $0x80"
			 : "=a"(r)
			 : "a"(5L), "b"((long)(uintptr_t)path), "c"(0L)
			 : "memory");
	say("RESULT %s", r < 0 ? errname((int)-r) : "ok");
	say("AFTER");
	return 0;
}
