/* R03: write the checked path through /proc/self/mem, which ignores page
 * protections: the way to reach a read-only (even sealed) copy of an
 * argument in the tracee. The open itself must fail; if it did not, a
 * racing thread would rewrite the path through the file while the main
 * thread opens it. */
#include "escape.h"

static char path[4096], good[4096], bad[4096];
static int mem = -1;

static void to_bad(void *unused)
{
	(void)unused;
	if (pwrite(mem, bad, strlen(bad) + 1, (off_t)(uintptr_t)path) < 0)
		strcpy(path, bad);
}

static void to_good(void *unused)
{
	(void)unused;
	if (pwrite(mem, good, strlen(good) + 1, (off_t)(uintptr_t)path) < 0)
		strcpy(path, good);
}

int attack(int argc, char **argv)
{
	static struct racer r = { .bad = to_bad, .good = to_good };
	pthread_t t;
	long w = 0, i;

	mem = (int)result(open("/proc/self/mem", O_RDWR));
	say("AFTER");
	if (mem < 0)
		return 0;
	twin_paths(good, bad, sizeof(good), ARG("secret"), ARG("wd"));
	strcpy(path, good);
	pthread_create(&t, NULL, racer_thread, &r);
	for (i = 0; i < RACE_N; i++)
		w += open_leaks(path, ARG("token"));
	racer_stop(&r);
	pthread_join(t, NULL);
	wins(w, i);
	return 0;
}
