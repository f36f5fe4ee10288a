/* R07: the argv of an allowed execve (uname) lives in memory a thread of
 * the parent keeps flipping ("-s" <-> "-n") while the forked child execs:
 * the record must show the argv the new program really got. Each attempt
 * is a whole fork and exec (milliseconds), so this race runs N_EXEC times,
 * not RACE_N; the runner compares every recorded argv with the output. */
#include "escape.h"
#include <sys/mman.h>
#include <sys/wait.h>

#define N_EXEC 100

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
	char *const env[] = { NULL };
	pthread_t t;
	long i;

	(void)argc;
	(void)argv;
	arg1 = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (arg1 == MAP_FAILED)
		return result(-1), 1;
	strcpy(arg1, "-s");
	pthread_create(&t, NULL, racer_thread, &r);
	for (i = 0; i < N_EXEC; i++) {
		char line[256] = "";
		int p[2];
		pid_t pid;
		ssize_t n;

		if (pipe(p) < 0)
			break;
		pid = fork();
		if (pid == 0) {
			char *av[] = { "uname", arg1, NULL };
			dup2(p[1], 1);
			execve("/usr/bin/uname", av, env);
			_exit(127);
		}
		close(p[1]);
		n = read(p[0], line, sizeof(line) - 1);
		close(p[0]);
		waitpid(pid, NULL, 0);
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
