/* U10: a 3 GiB sparse file, a valid ELF at its start, mapped executable
 * (the case's policy allows files that large). */
#include "escape.h"
#include "unwind.h"

int attack(int argc, char **argv)
{
	static uint8_t img[ESC_SIZE];
	int fd = open("huge.so", O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0644);
	unsigned long base;

	esc_elf(img, ESC_GOOD);
	if (fd < 0 || write(fd, img, sizeof(img)) != sizeof(img) ||
	    ftruncate(fd, 3ll << 30) < 0) {
		say("huge.so: %s", errname(errno));
		return result(-1), 1;
	}
	close(fd);
	base = map_exec("huge.so", 4096, 0);
	if (!base)
		return result(-1), 1;
	deny_from(ARG("secret"), base + ESC_RET);
	say("AFTER");
	unlink("huge.so");
	return 0;
}
