/* R06: a sibling thread flips execve's path between a name exec.allow
 * accepts (a python3.NN that does not exist: the kernel answers ENOENT, so
 * each losing attempt is cheap) and /bin/sh. A win replaces this process
 * with sh, which would create the workdir marker; ward must either never
 * let the kernel see the other name (a copy of the checked path) or kill
 * the run when the exec event shows a program it did not approve. */
#include "escape.h"

static char path[256], good[256], bad[256];
static struct flip_str fs = { path, good, bad };

int attack(int argc, char **argv)
{
	static struct racer r = { .bad = str_bad,
				  .good = str_good,
				  .arg = &fs };
	char *const av[] = { "sh", "-c", "echo won > marker", NULL };
	char *const env[] = { NULL };
	pthread_t t;
	long i;

	(void)argc;
	(void)argv;
	snprintf(good, sizeof(good), "/usr/bin/python3.99");
	padded(bad, sizeof(bad), "/usr/bin", "dash", strlen(good));
	strcpy(path, good);
	/* one plain attempt with the bad value first: the denial the record
	 * must show, whatever the race does (escape.h, "The racer") */
	execve(bad, av, env);
	pthread_create(&t, NULL, racer_thread, &r);
	for (i = 0; i < RACE_N; i++)
		execve(path, av, env);
	racer_stop(&r);
	pthread_join(t, NULL);
	wins(0, i); /* a win never comes back: the marker tells */
	return 0;
}
