/* R08: the environment of an allowed execve (uname) holds one entry that a
 * thread of the parent flips between a harmless name and LD_PRELOAD while
 * the forked child execs; the preloaded object (this very file, whose
 * constructor runs in the new program) creates the workdir marker. ward
 * must strip LD_PRELOAD from what the new program gets, whatever the
 * timing. Each attempt is a fork and exec: N_EXEC attempts. */
#include "escape.h"
#include <sys/mman.h>
#include <sys/wait.h>

#define N_EXEC 100

static char *entry;

__attribute__((constructor)) static void payload(void)
{
	payload_if_asked();
}

static void to_bad(void *unused)
{
	(void)unused;
	memcpy(entry, "LD_PRELOAD", 10);
}

static void to_good(void *unused)
{
	(void)unused;
	memcpy(entry, "XX_PRELOAD", 10);
}

int attack(int argc, char **argv)
{
	static struct racer r = { .even = 1, .bad = to_bad, .good = to_good };
	pthread_t t;
	long i;

	entry = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (entry == MAP_FAILED)
		return result(-1), 1;
	snprintf(entry, 4096, "XX_PRELOAD=%s/%s", ARG("wd"), ARG("so"));
	pthread_create(&t, NULL, racer_thread, &r);
	for (i = 0; i < N_EXEC; i++) {
		char *const av[] = { "uname", NULL };
		char *const env[] = { entry, "ESC_PAYLOAD=1", NULL };

		run_child("/usr/bin/uname", av, env, 1);
	}
	racer_stop(&r);
	pthread_join(t, NULL);
	wins(0, i); /* the marker tells */
	return 0;
}
