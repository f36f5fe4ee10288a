/*
 * escape.h - what every attack of the escape corpus shares.
 *
 * An attack is a shared object with one entry point, attack(argc, argv),
 * which tests/integ/test_escapes.py loads into the default profile's own
 * interpreter (python3, through ctypes) under ward: the code then runs as
 * any code ward supervises, with no exec of a program of ours. Arguments
 * come as key=value (secret=PATH token=TEXT ...). The attack reports on
 * stdout, unbuffered, in lines the runner parses:
 *
 *   RESULT <ok|ERRNO-NAME>   the outcome of the attempt that matters
 *   WINS <n> OF <m>          races: attempts that reached the canary
 *   GOT <text>               anything read that might be the secret
 *   AFTER                    printed once the attempt returned (a KILL
 *                            case must never print it)
 */
#ifndef WARD_ESCAPE_H
#define WARD_ESCAPE_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

/* Race cases loop at least this often and pass only with no win. */
#ifndef RACE_N
#define RACE_N 100000 /* make test-full; make test compiles fewer in */
#endif

static __attribute__((unused)) const char *esc_arg(int argc, char **argv,
						   const char *key)
{
	size_t n = strlen(key);

	for (int i = 0; i < argc; i++)
		if (!strncmp(argv[i], key, n) && argv[i][n] == '=')
			return argv[i] + n + 1;
	return "";
}

#define ARG(k) esc_arg(argc, argv, k)

static __attribute__((unused)) void say(const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	if (write(1, buf, (size_t)n) < 0)
		_exit(99);
}

static __attribute__((unused)) const char *errname(int e)
{
	const char *s = strerrorname_np(e);
	return s ? s : "E?";
}

/* Report the attempt: rc >= 0 is success, else errno names the failure. */
static __attribute__((unused)) long result(long rc)
{
	if (rc < 0)
		say("RESULT %s", errname(errno));
	else
		say("RESULT ok");
	return rc;
}

/* Did fd give the secret? Prints what it read, so that the runner sees a
 * leak even if the attack miscounts. */
static __attribute__((unused)) int leaked(int fd, const char *token)
{
	char buf[256];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return 0;
	buf[n] = 0;
	if (!strstr(buf, token))
		return 0;
	say("GOT %s", buf);
	return 1;
}

/* dir + slashes + "/" + name, padded with slashes to len bytes (at least
 * the plain length): the twin of a racing path, so that a torn copy is
 * always one whole name or the other. */
static __attribute__((unused)) void padded(char *dst, size_t n, const char *dir,
					   const char *name, size_t len)
{
	size_t l = (size_t)snprintf(dst, n, "%s", dir);

	while (l + 1 + strlen(name) < len && l + 2 < n)
		dst[l++] = '/';
	snprintf(dst + l, n - l, "/%s", name);
}

/* Burn a little time without a syscall (a racing thread's half-period). */
static __attribute__((unused)) void spin(int n)
{
	for (volatile int i = 0; i < n; i++)
		__asm__ volatile("pause");
}

/* The secret in bad, a workdir file of the same length in good (created
 * empty): the two states of a racing path. */
static __attribute__((unused)) void
twin_paths(char *good, char *bad, size_t n, const char *secret, const char *wd)
{
	int fd;

	snprintf(bad, n, "%s", secret);
	padded(good, n, wd, "ok", strlen(bad));
	fd = open(good, O_CREAT | O_WRONLY, 0644);
	if (fd >= 0)
		close(fd);
}

/* One attempt: open path for reading; 1 if it gave the secret. */
static __attribute__((unused)) int open_leaks(const char *path,
					      const char *token)
{
	int fd = open(path, O_RDONLY);
	int w;

	if (fd < 0)
		return 0;
	w = leaked(fd, token);
	close(fd);
	return w;
}

/* Copy the file from into the open file out (a payload for exec cases). */
static __attribute__((unused)) void copy_into(int out, const char *from)
{
	char buf[65536];
	int in = open(from, O_RDONLY);
	ssize_t n;

	if (in < 0 || out < 0) {
		say("copy of %s failed: %s", from, errname(errno));
		return;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			say("copy of %s: short write", from);
	close(in);
}

/* The common racer states: a string buffer holding one of two strings. */
struct flip_str {
	char *dst;
	const char *good, *bad;
};

static __attribute__((unused)) void str_bad(void *a)
{
	struct flip_str *f = a;

	strcpy(f->dst, f->bad);
}

static __attribute__((unused)) void str_good(void *a)
{
	struct flip_str *f = a;

	strcpy(f->dst, f->good);
}

/* Run path in a child with stdout on /dev/null (quiet) and wait for it. */
static __attribute__((unused)) void
run_child(const char *path, char *const av[], char *const env[], int quiet)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (quiet) {
			int null = open("/dev/null", O_WRONLY);
			dup2(null, 1);
		}
		execve(path, av, env);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

/* Run path in a vfork()ed child (cheap: no copy of this big process)
 * with stdout on fd out, and wait for it. Returns its pid, or -1. */
static __attribute__((unused)) pid_t
run_vchild(const char *path, char *const av[], char *const env[], int out)
{
	pid_t pid = vfork();

	if (pid == 0) {
		dup2(out, 1);
		execve(path, av, env);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return pid;
}

/* The payload of LD_PRELOAD/LD_AUDIT cases, for a constructor: in a
 * program started with ESC_PAYLOAD set (not in the attacker itself),
 * create the workdir marker. */
static __attribute__((unused)) void payload_if_asked(void)
{
	if (getenv("ESC_PAYLOAD")) {
		int fd = open("marker", O_CREAT | O_WRONLY, 0644);

		if (fd >= 0)
			close(fd);
		say("PAYLOAD RAN");
	}
}

static __attribute__((unused)) void wins(long w, long of)
{
	say("WINS %ld OF %ld", w, of);
}

/*
 * The racer: a thread (or a forked process, for memory shared between
 * processes) that keeps flipping an argument to a "bad" state for a few
 * microseconds (busy: a sleep would last the 50 us timer slack), then back
 * to "good" for a varying 0.2-1 ms (asleep). The window that matters is
 * between ward's read of the argument and the kernel's, ~10-30 us here, so
 * a short bad state lands in it about as often as a long one would, and
 * ward, which must deny every bad state it sees, is not flooded with
 * denials. A racer spinning without end would only take the CPU ward needs
 * on a small machine (every trap then waits a scheduler slice) and win
 * less. The state lives in memory the caller provides (shared when it
 * forks). With "even" set, the bad state lasts as long as the good one
 * (asleep too): for races of few, slow attempts (a whole exec each),
 * where the bad state must be there half of the time.
 * With short bad states, a few thousand attempts (make test's RACE_N) may
 * never meet one: a case whose record must show the denial makes one
 * plain attempt with the bad value before the race. The race itself is
 * judged by its wins and the canaries.
 */
struct racer {
	atomic_int stop;
	int even;
	void (*bad)(void *);
	void (*good)(void *);
	void *arg;
};

static __attribute__((unused)) long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static __attribute__((unused)) void racer_loop(struct racer *r)
{
	unsigned x = 12345;

	while (!atomic_load(&r->stop)) {
		struct timespec ts = { 0, 0 };
		long until;

		x = x * 1103515245u + 12345u;
		until = now_ns() + 1000 + (long)((x >> 16) % 5) * 1000;
		ts.tv_nsec = 200000 + (long)((x >> 8) % 801) * 1000;
		r->bad(r->arg);
		if (r->even)
			nanosleep(&ts, NULL);
		while (now_ns() < until)
			__asm__ volatile("pause");
		r->good(r->arg);
		nanosleep(&ts, NULL);
	}
}

static __attribute__((unused)) void *racer_thread(void *r)
{
	racer_loop(r);
	return NULL;
}

static __attribute__((unused)) void racer_stop(struct racer *r)
{
	atomic_store(&r->stop, 1);
}

/* R08, R14, R15: an environment entry ("XX_PRELOAD=<object>") that a
 * racer flips to LD_PRELOAD and back while vfork()ed children exec the
 * static exec_probe RACE_N times (it creates the workdir marker when
 * LD_PRELOAD reaches it). probe_race: the racer r (arg: the entry) runs
 * in a thread of this process for the time of the execs (thread), or
 * runs already in a forked process, stopped after them. Returns the
 * number of execs, or -1 when /dev/null cannot be opened. */
static __attribute__((unused)) void env_to_preload(void *entry)
{
	memcpy(entry, "LD_PRELOAD", 10);
}

static __attribute__((unused)) void env_to_harmless(void *entry)
{
	memcpy(entry, "XX_PRELOAD", 10);
}

static __attribute__((unused)) long probe_race(const char *probe,
					       struct racer *r, bool thread)
{
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	pthread_t t;
	long i;

	if (null < 0)
		return -1;
	if (thread)
		pthread_create(&t, NULL, racer_thread, r);
	for (i = 0; i < RACE_N; i++) {
		char *const av[] = { "exec_probe", NULL };
		char *const env[] = { r->arg, NULL };

		run_vchild(probe, av, env, null);
	}
	racer_stop(r);
	if (thread)
		pthread_join(t, NULL);
	close(null);
	return i;
}

/* R08, R14: the whole attack with a racer thread, entry being 4096 bytes
 * of the kind of memory the case is about. */
static __attribute__((unused)) int env_race_thread(char *entry, char **argv,
						   int argc)
{
	static struct racer r = { .even = 1,
				  .bad = env_to_preload,
				  .good = env_to_harmless };
	long n;

	if (!entry)
		return result(-1), 1;
	snprintf(entry, 4096, "XX_PRELOAD=%s/%s", ARG("wd"), ARG("so"));
	r.arg = entry;
	n = probe_race(ARG("probe"), &r, true);
	if (n < 0)
		return result(-1), 1;
	wins(0, n); /* the marker tells */
	return 0;
}

#endif
