/* R07: the argv of an allowed execve lives in memory a thread of the
 * parent keeps flipping ("-s" <-> "-n") while a vfork()ed child execs the
 * static exec_probe, which prints the argv[1] it got: the record must show
 * the argv the new program really got. RACE_N whole execs; the runner
 * compares every recorded argv with the printed one. */
#include "escape.h"
#include <sys/mman.h>
#include <sys/wait.h>

static char *arg1;

static void to_bad(void *unused)
{
	(void)unused;
	arg1[1] = 'n';
}

static void to_good(void *unused)
{
	(void)unused;
	arg1[1] = 's';
}

int attack(int argc, char **argv)
{
	static struct racer r = { .even = 1, .bad = to_bad, .good = to_good };
	const char *probe = ARG("probe");
	char *const env[] = { NULL };
	pthread_t t;
	long i;

	arg1 = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (arg1 == MAP_FAILED)
		return result(-1), 1;
	strcpy(arg1, "-s");
	pthread_create(&t, NULL, racer_thread, &r);
	for (i = 0; i < RACE_N; i++) {
		char *const av[] = { "exec_probe", arg1, NULL };
		char line[64] = "";
		int p[2];
		pid_t pid;
		ssize_t n;

		if (pipe(p) < 0)
			break;
		pid = run_vchild(probe, av, env, p[1]);
		close(p[1]);
		n = read(p[0], line, sizeof(line) - 1);
		close(p[0]);
		if (n > 0 && line[n - 1] == '\n')
			n--;
		line[n > 0 ? n : 0] = 0;
		say("EXEC %d %s", (int)pid, line);
	}
	racer_stop(&r);
	pthread_join(t, NULL);
	wins(0, i); /* judged by the runner from the EXEC lines */
	return 0;
}
