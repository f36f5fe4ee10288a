/*
 * ttyask.c - ward run's answers to "ask" rules: a thread that reads the
 * tracer's questions (tracer_opts.ask_fd) and asks on the controlling
 * terminal, /dev/tty, never the code's stdin. No terminal: no thread, and
 * every question is denied at once by the tracer.
 */
#include "ttyask.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void say(int tty, const char *s)
{
	size_t n = strlen(s);

	while (n > 0) {
		ssize_t w = write(tty, s, n);
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/* The user's answer to one question, within timeout_ms: "allow_once",
 * "allow_always" or "deny". The end of sock (the run is over) ends the
 * wait: deny. */
static const char *prompt(struct ward_ttyask *q, const char *question,
			  long long timeout_ms)
{
	char buf[256], line[64];
	long long end = mono_ms() + timeout_ms;
	size_t n = 0;

	snprintf(buf, sizeof(buf),
		 "ward: the code asks: %s\n"
		 "ward: allow [o]nce, [a]lways for this run, or [d]eny? "
		 "(deny in %lld s) ",
		 question, (timeout_ms + 999) / 1000);
	say(q->tty, buf);
	for (;;) {
		long long left = end - mono_ms();
		struct pollfd p[2] = { { q->tty, POLLIN, 0 },
				       { q->fd[1], POLLIN, 0 } };
		if (left <= 0 || poll(p, 2, (int)left) <= 0) {
			say(q->tty, "\nward: no answer: denied\n");
			return "deny";
		}
		if (p[1].revents & (POLLHUP | POLLERR))
			return "deny";
		if (!(p[0].revents & POLLIN))
			continue;
		ssize_t r = read(q->tty, line + n, sizeof(line) - 1 - n);
		if (r <= 0)
			return "deny";
		n += (size_t)r;
		line[n] = '\0';
		if (!strchr(line, '\n') && n < sizeof(line) - 1)
			continue;
		switch (line[0]) {
		case 'o':
		case 'O':
		case 'y':
		case 'Y': return "allow_once";
		case 'a':
		case 'A': return "allow_always";
		default: return "deny";
		}
	}
}

static void answer(struct ward_ttyask *q, json_int_t id, const char *a)
{
	json_t *j = json_pack("{s:{s:I, s:s, s:s}}", "answer", "id", id,
			      "answer", a, "by", q->who);
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	if (!s)
		return; /* the tracer's timeout denies it */
	size_t n = strlen(s);
	s[n] = '\n';
	/* a failed send: the run is over, nobody waits */
	ssize_t w = send(q->fd[1], s, n + 1, MSG_NOSIGNAL);
	(void)w;
	free(s);
}

static void *ttyask_main(void *arg)
{
	struct ward_ttyask *q = arg;
	char buf[8192];
	size_t len = 0;

	for (;;) {
		ssize_t r = recv(q->fd[1], buf + len, sizeof(buf) - 1 - len, 0);
		char *nl;
		if (r <= 0)
			return NULL;
		len += (size_t)r;
		buf[len] = '\0';
		while ((nl = strchr(buf, '\n'))) {
			*nl = '\0';
			json_t *j = json_loads(buf, 0, NULL);
			json_t *a = json_object_get(j, "ask");
			json_int_t id =
				json_integer_value(json_object_get(a, "id"));
			json_int_t tmo = json_integer_value(
				json_object_get(a, "timeout_ms"));
			const char *text = json_string_value(
				json_object_get(a, "question"));
			if (id > 0 && text)
				answer(q, id, prompt(q, text, tmo));
			json_decref(j);
			len -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, len + 1);
		}
		if (len == sizeof(buf) - 1)
			len = 0; /* not the tracer's: it times out */
	}
}

int ward_ttyask_start(struct ward_ttyask *q)
{
	char name[64];

	q->fd[0] = q->fd[1] = q->tty = -1;
	q->started = false;
	q->tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (q->tty < 0)
		return -ENXIO; /* no terminal: nobody to ask */
	/* the terminal's own name (/dev/tty names whichever is ours) */
	snprintf(name, sizeof(name), "/dev/tty");
	for (int fd = 2; fd >= 0; fd--)
		if (isatty(fd) && ttyname_r(fd, name, sizeof(name)) == 0)
			break;
	snprintf(q->who, sizeof(q->who), "ward run: terminal %s (uid %d)", name,
		 (int)getuid());
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, q->fd) < 0 ||
	    pthread_create(&q->thread, NULL, ttyask_main, q) != 0) {
		int e = errno ? errno : EAGAIN;
		ward_ttyask_stop(q);
		return -e;
	}
	q->started = true;
	return q->fd[0];
}

void ward_ttyask_stop(struct ward_ttyask *q)
{
	if (q->started) {
		shutdown(q->fd[0], SHUT_RDWR); /* EOF: the thread ends */
		pthread_join(q->thread, NULL);
		q->started = false;
	}
	for (int i = 0; i < 2; i++)
		if (q->fd[i] >= 0)
			close(q->fd[i]);
	if (q->tty >= 0)
		close(q->tty);
	q->fd[0] = q->fd[1] = q->tty = -1;
}
