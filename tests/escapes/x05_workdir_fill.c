/* X05: fill the disk through the workdir, file after file, each one under
 * the file size limit (run with --max-disk 96M): the sum must be bounded
 * too (a tmpfs of that size on the workdir), or the code fills the file
 * system holding /tmp, the host's. The attack stops itself at 256 MiB, so
 * that a missing quota fails the case without filling the test machine. */
#include "escape.h"

int attack(int argc, char **argv)
{
	static char block[1 << 20];
	long mb = 0;
	int err = 0;

	(void)argc;
	(void)argv;
	memset(block, 'z', sizeof(block));
	for (int i = 0; i < 8 && !err; i++) {
		char name[32];
		snprintf(name, sizeof(name), "fill%d", i);
		int fd = open(name, O_CREAT | O_WRONLY | O_TRUNC, 0600);
		if (fd < 0) {
			err = errno;
			break;
		}
		for (int j = 0; j < 32; j++) {
			if (write(fd, block, sizeof(block)) !=
			    (ssize_t)sizeof(block)) {
				err = errno ? errno : ENOSPC;
				break;
			}
			mb++;
		}
		close(fd);
	}
	say("MB %ld", mb);
	errno = err;
	result(err ? -1 : 0);
	say("AFTER");
	return 0;
}
