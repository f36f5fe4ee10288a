/* R08: the environment of an allowed execve holds one entry that a thread
 * of the parent flips between a harmless name and LD_PRELOAD=<workdir
 * object> while a vfork()ed child execs the static exec_probe, which
 * creates the workdir marker when LD_PRELOAD reaches it (as a preloaded
 * object's constructor would in a dynamic program). ward must strip
 * LD_PRELOAD from what the new program gets, whatever the timing: RACE_N
 * whole execs. */
#include "escape.h"
#include <sys/mman.h>
#include <sys/wait.h>

static char *entry;

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
	const char *probe = ARG("probe");
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	pthread_t t;
	long i;

	entry = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (entry == MAP_FAILED || null < 0)
		return result(-1), 1;
	snprintf(entry, 4096, "XX_PRELOAD=%s/%s", ARG("wd"), ARG("so"));
	pthread_create(&t, NULL, racer_thread, &r);
	for (i = 0; i < RACE_N; i++) {
		char *const av[] = { "exec_probe", NULL };
		char *const env[] = { entry, NULL };

		run_vchild(probe, av, env, null);
	}
	racer_stop(&r);
	pthread_join(t, NULL);
	wins(0, i); /* the marker tells */
	return 0;
}
