/* R13: the path of openat lives in a MAP_PRIVATE, read-only mapping of a
 * workdir file, and a forked sibling rewrites the file with pwrite. The
 * victim is single-threaded and never writes the mapping, so its page is
 * still the page cache's: private to it in name only, it changes with the
 * file. ward leaves arguments in place only in private anonymous memory;
 * here it must copy. */
#include "escape.h"
#include <sys/mman.h>
#include <sys/wait.h>

struct state {
	struct racer r;
	int fd;
	char good[4096], bad[4096];
};

static void file_put(int fd, const char *s)
{
	if (pwrite(fd, s, strlen(s) + 1, 0) < 0)
		say("pwrite: %s", errname(errno));
}

static void file_bad(void *a)
{
	struct state *s = a;

	file_put(s->fd, s->bad);
}

static void file_good(void *a)
{
	struct state *s = a;

	file_put(s->fd, s->good);
}

int attack(int argc, char **argv)
{
	char name[4200];
	long w = 0, i;
	struct state *s;
	const char *path;
	pid_t pid;

	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s == MAP_FAILED)
		return result(-1), 1;
	twin_paths(s->good, s->bad, sizeof(s->good), ARG("secret"), ARG("wd"));
	snprintf(name, sizeof(name), "%s/pathfile", ARG("wd"));
	s->fd = open(name, O_CREAT | O_RDWR | O_TRUNC, 0644);
	if (s->fd < 0 || ftruncate(s->fd, 8192) < 0)
		return result(-1), 1;
	file_put(s->fd, s->good);
	path = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE, s->fd, 0);
	if (path == MAP_FAILED)
		return result(-1), 1;
	s->r.bad = file_bad;
	s->r.good = file_good;
	s->r.arg = s;
	/* one plain attempt with the bad value first: the denial the record
	 * must show, whatever the race does (escape.h, "The racer") */
	w += open_leaks(s->bad, ARG("token"));
	pid = fork();
	if (pid == 0) {
		racer_loop(&s->r);
		_exit(0);
	}
	for (i = 0; i < RACE_N; i++)
		w += open_leaks(path, ARG("token"));
	racer_stop(&s->r);
	waitpid(pid, NULL, 0);
	wins(w, i);
	return 0;
}
