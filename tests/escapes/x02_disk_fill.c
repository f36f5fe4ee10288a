/* X02: fill the disk from the workdir: write 1 MiB blocks until a write
 * fails (the file size limit: EFBIG; SIGXFSZ ignored so that the write
 * reports it). The file is removed after. */
#include "escape.h"
#include <signal.h>

int attack(int argc, char **argv)
{
	static char block[1 << 20];
	long mb = 0;
	int fd = open("fill", O_CREAT | O_WRONLY | O_TRUNC, 0644);

	(void)argc;
	(void)argv;
	signal(SIGXFSZ, SIG_IGN);
	memset(block, 'x', sizeof(block));
	for (;;) {
		if (write(fd, block, sizeof(block)) != (ssize_t)sizeof(block))
			break;
		if (++mb > 4096)
			break;
	}
	say("MB %ld", mb);
	result(mb > 4096 ? 0 : -1);
	say("AFTER");
	close(fd);
	unlink("fill");
	return 0;
}
