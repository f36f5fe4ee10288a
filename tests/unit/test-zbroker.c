/*
 * test-zbroker.c - the fork broker between a template worker and its child
 * workers (tools/agent/zygote.c), against a fake template: a thread that
 * answers fork requests on the other end of tctl as the template's driver
 * does ('K' and the pid on the hand-off pipe, 'E', or nonsense).
 *
 * Shown: a template that does not say it is up ('R') first is refused;
 * the five fds reach the template in order and are the child's
 * own objects; the child gets the pid, the template's run and its policy;
 * another policy is refused (-EPERM); a request with another number of
 * fds is refused and the template not asked; an 'E' is an error and the
 * broker goes on; a pid nobody asked for is read off before a request, so
 * it is never handed to a child; a nonsense answer or a closed template
 * ends the broker (every later request refused); the socket is 0600 and
 * removed; the broker keeps none of the fds it passed on.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../../tools/agent/zygote.h"
#include "tap.h"
#include "tmpdir.h"

#define SHA "aaaa000011112222333344445555666677778888999900001111222233334444"

static int tctl[2], handoff[2];

struct fake {
	char answer;	  /* 'K', 'E', 'X'; 'N': expects none; 0: closes tctl */
	pid_t pid;	  /* written after 'K' */
	int got_fds;	  /* how many fds the request carried */
	char got_byte;	  /* and its byte */
	char first[8];	  /* what fds[0] (the child's stdout) led to */
	bool said_to_out; /* wrote "out" on the stdout it was given */
};

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	char cbuf[CMSG_SPACE(sizeof(int) * 8)];
	struct iovec iov = { &f->got_byte, 1 };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };

	if (f->answer == 'N')
		return NULL;
	if (f->answer == 0) {
		close(tctl[1]);
		tctl[1] = -1;
		return NULL;
	}
	if (recvmsg(tctl[1], &mh, MSG_CMSG_CLOEXEC) <= 0)
		return NULL;
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	int *fds = c ? (int *)CMSG_DATA(c) : NULL;
	f->got_fds = c ? (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int)) : 0;
	if (f->got_fds > 0)
		f->said_to_out = write(fds[0], "out", 3) == 3;
	for (int i = 0; i < f->got_fds; i++)
		close(fds[i]);
	if (send(tctl[1], &f->answer, 1, 0) != 1)
		return NULL;
	if (f->answer == 'K' && write(handoff[1], &f->pid, sizeof(f->pid)) < 0)
		return NULL;
	return NULL;
}

static void *serve_main(void *arg)
{
	static int rc;

	rc = ws_zbroker_serve(arg);
	return &rc;
}

struct child {
	int out[2], err[2], sync[2], cells[2], res[2];
	int fds[WS_ZYG_NFDS];
};

static void child_make(struct child *c)
{
	if (pipe2(c->out, O_CLOEXEC) || pipe2(c->err, O_CLOEXEC) ||
	    pipe2(c->sync, O_CLOEXEC) ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c->cells) ||
	    pipe2(c->res, O_CLOEXEC))
		exit(2);
	int fds[WS_ZYG_NFDS] = { c->out[1], c->err[1], c->sync[0], c->cells[1],
				 c->res[1] };
	memcpy(c->fds, fds, sizeof(fds));
}

static void child_free(struct child *c)
{
	int *all = (int *)c;

	for (int i = 0; i < 10; i++)
		close(all[i]);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

/* One request through broker b to a fake template answering as f. */
static pid_t request(struct ws_zbroker *b, const char *path, struct fake *f,
		     const char *sha, char *run, char *err, int *serve_rc)
{
	struct child c;
	pthread_t ft, st;
	void *src;

	child_make(&c);
	pthread_create(&ft, NULL, fake_main, f);
	pthread_create(&st, NULL, serve_main, b);
	pid_t pid = ws_zygote_fork(path, c.fds, sha, run, 64, err, 300);
	pthread_join(st, &src);
	pthread_join(ft, NULL);
	*serve_rc = *(int *)src;
	char buf[8] = "";
	/* the broker kept no copy of the child's stdout: EOF after "out" */
	close(c.out[1]);
	c.out[1] = -1;
	if (f->said_to_out && read(c.out[0], buf, sizeof(buf) - 1) == 3)
		memcpy(f->first, buf, 4);
	f->said_to_out = f->said_to_out && read(c.out[0], buf, 1) == 0;
	child_free(&c);
	return pid;
}

/* A request whose message carries n fds (not ws_zygote_fork's five). */
static void bad_count(struct ws_zbroker *b, const char *path, int n, char *line,
		      size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), fds[6];
	pthread_t st;

	for (int i = 0; i < n; i++)
		fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	pthread_create(&st, NULL, serve_main, b);
	ssize_t r = -1;
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    ws_zyg_send_fds(s, 'F', fds, n) == 0)
		r = read(s, line, len - 1);
	line[r > 0 ? r : 0] = '\0';
	pthread_join(st, NULL);
	close(s);
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

int main(void)
{
	struct ws_zbroker *b = NULL;
	char err[300] = "", run[64] = "", line[512];
	struct stat st;
	int src;

	if (tmpdir_make("zbroker") < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, tctl) ||
	    pipe2(handoff, O_CLOEXEC))
		return 2;
	const char *path = tpath("broker");
	if (send(tctl[1], "X", 1, 0) != 1)
		return 2;
	ok(ws_zbroker_new(path, tctl[0], handoff[0], "r", SHA, &b, err,
			  sizeof(err)) == -EBADMSG &&
		   strstr(err, "said no 'R'"),
	   "a template that does not say it is up first is refused: %s", err);
	if (send(tctl[1], "R", 1, 0) != 1)
		return 2;
	is_int(ws_zbroker_new(path, tctl[0], handoff[0], "run-of-template", SHA,
			      &b, err, sizeof(err)),
	       0, "the broker listens");
	int mrc = stat(path, &st);
	ok(mrc == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 0777) == 0600,
	   "its socket is 0600 (mode %o)", st.st_mode & 0777);
	int before = count_fds();

	struct fake f = { .answer = 'K', .pid = 4242 };
	pid_t pid = request(b, path, &f, SHA, run, err, &src);
	is_int(pid, 4242, "the child gets the fork's pid");
	is_str(run, "run-of-template", "and the template's run");
	is_int(f.got_fds, WS_ZYG_NFDS, "the template got five fds");
	is_int(f.got_byte, 'F', "with the byte 'F'");
	is_str(f.first, "out", "the first is the child's stdout");
	ok(f.said_to_out, "no copy of it is left open (EOF after the write)");
	is_int(count_fds(), before, "the broker keeps no fd of the request");

	/* a pid nobody asked for (the warm-up's subprocess) comes first */
	pid_t stray = 777;
	if (write(handoff[1], &stray, sizeof(stray)) < 0)
		return 2;
	f = (struct fake){ .answer = 'K', .pid = 4343 };
	pid = request(b, path, &f, SHA, run, err, &src);
	is_int(pid, 4343,
	       "an unasked fork's pid is read off, never handed out");

	f = (struct fake){ .answer = 'K', .pid = 4444 };
	pid = request(b, path, &f, "bbbb", run, err, &src);
	is_int(pid, -EPERM, "a template of another policy is refused");
	ok(strstr(err, "another policy") != NULL, "and says why: %s", err);

	bad_count(b, path, 4, line, sizeof(line));
	ok(strstr(line, "exactly 5 fds") && strstr(line, "4 fds"),
	   "a request with 4 fds is refused: %s", line);
	bad_count(b, path, 6, line, sizeof(line));
	ok(strstr(line, "exactly 5 fds") != NULL,
	   "a request with 6 fds is refused: %s", line);
	is_int(count_fds(), before, "their fds are closed");

	f = (struct fake){ .answer = 'E' };
	pid = request(b, path, &f, SHA, run, err, &src);
	ok(pid < 0 && strstr(err, "could not fork"), "'E' is an error: %s",
	   err);
	is_int(src, 0, "and the broker goes on");
	f = (struct fake){ .answer = 'K', .pid = 4545 };
	pid = request(b, path, &f, SHA, run, err, &src);
	is_int(pid, 4545, "the next fork is served");

	f = (struct fake){ .answer = 'X' };
	pid = request(b, path, &f, SHA, run, err, &src);
	ok(pid < 0 && strstr(err, "not a fork's"), "nonsense is an error: %s",
	   err);
	is_int(src, -EPIPE, "and ends the broker's use of the template");
	f = (struct fake){ .answer = 'N' };
	pid = request(b, path, &f, SHA, run, err, &src);
	char none;
	ok(pid < 0 && recv(tctl[1], &none, 1, MSG_DONTWAIT) < 0 &&
		   errno == EAGAIN,
	   "every later request is refused, the template not asked: %s", err);
	ws_zbroker_free(b);
	ok(stat(path, &st) < 0 && errno == ENOENT,
	   "the socket file is removed");

	/* a template that is gone */
	b = NULL;
	if (send(tctl[1], "R", 1, 0) != 1)
		return 2;
	is_int(ws_zbroker_new(path, tctl[0], handoff[0], "r", SHA, &b, err,
			      sizeof(err)),
	       0, "a second broker");
	f = (struct fake){ .answer = 0 };
	pid = request(b, path, &f, SHA, run, err, &src);
	ok(pid < 0 && strstr(err, "is gone"), "a closed template: %s", err);
	is_int(src, -EPIPE, "ends it");
	ws_zbroker_free(b);
	close(tctl[0]);
	close(handoff[0]);
	close(handoff[1]);
	tmpdir_remove();
	return done_testing();
}
