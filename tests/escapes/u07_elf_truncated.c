/* U07: a real shared object (the attack's own) cut to 2 KiB and mapped
 * executable beyond its end: its headers promise segments, a dynamic
 * section and an .eh_frame_hdr that are not in the file. */
#include "escape.h"
#include "unwind.h"

int attack(int argc, char **argv)
{
	static char buf[2048];
	int fd = open(ARG("so"), O_RDONLY | O_CLOEXEC);
	unsigned long base;

	if (fd < 0 || read(fd, buf, sizeof(buf)) != sizeof(buf))
		return result(-1), 1;
	close(fd);
	if (write_file("cut.so", buf, sizeof(buf)))
		return result(-1), 1;
	base = map_exec("cut.so", 4096, 0);
	if (!base)
		return result(-1), 1;
	deny_from(ARG("secret"), base + ESC_RET);
	say("AFTER");
	return 0;
}
