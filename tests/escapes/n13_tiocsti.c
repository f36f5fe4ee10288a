/* N13: TIOCSTI pushes a character into the terminal's input queue (run as
 * the user who reads it, outside the sandbox); with junk in the high 32
 * bits of the request too (the kernel reads an int: CVE-2019-10063). */
#include "escape.h"
#include <sys/ioctl.h>

int attack(int argc, char **argv)
{
	char c = 'x';
	long r1, r2;
	int e1;

	(void)argc;
	(void)argv;
	r1 = syscall(SYS_ioctl, 0, (unsigned long)TIOCSTI, &c);
	e1 = errno;
	r2 = syscall(SYS_ioctl, 0, 0xdead000000000000UL | TIOCSTI, &c);
	say("PLAIN %s", r1 < 0 ? errname(e1) : "ok");
	result(r2);
	say("AFTER");
	return 0;
}
