/* K01: io_uring_setup: io_uring's own opens, connects and sends run in
 * kernel workers that seccomp never sees (an IORING_OP_OPENAT of the
 * secret would follow). The floor kills at setup. */
#include "escape.h"
#include <linux/io_uring.h>

int attack(int argc, char **argv)
{
	struct io_uring_params p;

	(void)argc;
	(void)argv;
	memset(&p, 0, sizeof(p));
	result(syscall(SYS_io_uring_setup, 8, &p));
	say("AFTER");
	return 0;
}
