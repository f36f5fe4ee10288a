/* R15: a single-threaded parent vforks children that exec the static
 * exec_probe with an environment entry in a MAP_SHARED page, which a
 * forked sibling process flips between a harmless name and
 * LD_PRELOAD=<workdir object>. The vforking thread is the parent's only
 * one, so the environment stays in place only if each of its pieces lies
 * in memory no other task can write; this one does not: ward must copy
 * and strip. RACE_N whole execs; the probe creates the workdir marker when
 * LD_PRELOAD reaches it. */
#include "escape.h"
#include <sys/mman.h>

struct shared {
	struct racer r;
	char entry[4096];
};

int attack(int argc, char **argv)
{
	struct shared *s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pid;
	long n;

	if (s == MAP_FAILED)
		return result(-1), 1;
	s->r = (struct racer){ .even = 1,
			       .bad = env_to_preload,
			       .good = env_to_harmless,
			       .arg = s->entry };
	snprintf(s->entry, sizeof(s->entry), "XX_PRELOAD=%s/%s", ARG("wd"),
		 ARG("so"));
	pid = fork();
	if (pid == 0) {
		racer_loop(&s->r);
		_exit(0);
	}
	n = probe_race(ARG("probe"), &s->r, false);
	racer_stop(&s->r); /* also when it failed to start */
	waitpid(pid, NULL, 0);
	if (n < 0)
		return result(-1), 1;
	wins(0, n); /* the marker tells */
	return 0;
}
