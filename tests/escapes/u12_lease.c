/* U12: a write lease (F_SETLEASE) on the mapped file, its SIGIO ignored:
 * an open of the file by anyone else waits for the lease to be broken,
 * 45 s by default, unless it is non-blocking. */
#include "escape.h"
#include "unwind.h"
#include <signal.h>

int attack(int argc, char **argv)
{
	static uint8_t img[ESC_SIZE];
	unsigned long base;
	int fd;

	signal(SIGIO, SIG_IGN);
	esc_elf(img, ESC_GOOD);
	if (write_file("lib.so", img, sizeof(img)))
		return result(-1), 1;
	fd = open("lib.so", O_RDONLY | O_CLOEXEC);
	base = fd < 0 ? 0
		      : (unsigned long)mmap(NULL, ESC_SIZE,
					    PROT_READ | PROT_EXEC, MAP_PRIVATE,
					    fd, 0);
	if (!base || base == (unsigned long)MAP_FAILED)
		return result(-1), 1;
	if (fcntl(fd, F_SETLEASE, F_WRLCK) < 0)
		say("lease: %s", errname(errno));
	else
		say("LEASED");
	deny_from(ARG("secret"), base + ESC_RET);
	say("AFTER");
	return 0;
}
