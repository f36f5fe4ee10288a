/*
 * zygote.c - the fork broker of a warm pool's template worker, and the
 * child worker's request to it (zygote.h says what passes between them).
 *
 * The broker trusts the template for nothing but the order of its answers:
 * a pid read from the hand-off pipe is the fork of the request just made
 * only while every earlier request was answered in time. A late or strange
 * answer ends the broker's use of the template (-EPIPE), so that no child
 * worker can ever be handed another's process. Pids of forks nobody asked
 * for (the warm-up's own subprocesses) are read off before each request.
 */
#include "tools/agent/zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"

struct ws_zbroker {
	int lfd, tctl, handoff;
	bool broken;
	pthread_mutex_t lock; /* one fork request at a time on tctl */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char run_id[64];
	char policy_sha[72];
};

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* fd readable (POLLIN) within ms: 0, -ETIMEDOUT, or -errno. */
static int wait_in(int fd, long long ms)
{
	long long end = mono_ms() + ms;

	for (;;) {
		struct pollfd q = { fd, POLLIN, 0 };
		long long left = end - mono_ms();
		int r = poll(&q, 1, left > 0 ? (int)left : 0);
		if (r > 0)
			return 0;
		if (r == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

static int unix_addr(const char *path, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	memcpy(sa->sun_path, path, strlen(path));
	return 0;
}

int ws_zyg_send_fds(int sock, char byte, const int *fds, int n)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 8)];
	struct iovec iov = { &byte, 1 };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = CMSG_SPACE(sizeof(int) * n) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

	if (n < 1 || n > 8)
		return -EINVAL;
	memset(cbuf, 0, sizeof(cbuf));
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * n);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
	while (sendmsg(sock, &mh, MSG_NOSIGNAL) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

/* One message of one byte with its fds (owned by the caller, CLOEXEC):
 * *n of them, at most max (more are closed and make it -EBADMSG, as does
 * a truncated control part). 0, -EPIPE (EOF) or -errno. */
static int recv_fds(int sock, char *byte, int *fds, int max, int *n)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 16)];
	struct iovec iov = { byte, 1 };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	ssize_t r;
	int got = 0, bad = 0;

	*n = 0;
	while ((r = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC)) < 0)
		if (errno != EINTR)
			return -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c;
	     c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		int *in = (int *)CMSG_DATA(c);
		for (int i = 0; i < k; i++) {
			if (got < max)
				fds[got++] = in[i];
			else {
				close(in[i]);
				bad = 1;
			}
		}
	}
	*n = got;
	if (r == 0)
		return -EPIPE;
	return bad || (mh.msg_flags & MSG_CTRUNC) ? -EBADMSG : 0;
}

/* The template's first byte on tctl: 'R', it is up. 0 or -errno. */
static int template_up(int tctl)
{
	char r = 0;
	int rc = wait_in(tctl, WS_ZYG_TIMEOUT_MS);

	if (!rc && recv(tctl, &r, 1, 0) != 1)
		rc = -EPIPE;
	return rc ? rc : r == 'R' ? 0 : -EBADMSG;
}

int ws_zbroker_new(const char *path, int tctl, int handoff_r,
		   const char *run_id, const char *policy_sha,
		   struct ws_zbroker **out, char *err, size_t n)
{
	struct ws_zbroker *b = calloc(1, sizeof(*b));
	struct sockaddr_un sa;
	int rc;

	*out = NULL;
	if (!b)
		return -ENOMEM;
	b->tctl = tctl;
	b->handoff = handoff_r;
	snprintf(b->run_id, sizeof(b->run_id), "%s", run_id);
	snprintf(b->policy_sha, sizeof(b->policy_sha), "%s", policy_sha);
	snprintf(b->path, sizeof(b->path), "%s", path);
	pthread_mutex_init(&b->lock, NULL);
	rc = unix_addr(path, &sa);
	b->lfd = rc ? -1 : socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (!rc && b->lfd < 0)
		rc = -errno;
	if (!rc)
		unlink(path);
	/* 0600 from its making on: no moment when others may connect */
	mode_t old = umask(0177);
	if (!rc && bind(b->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		rc = -errno;
	umask(old);
	if (!rc && (chmod(path, 0600) < 0 || listen(b->lfd, 16) < 0))
		rc = -errno;
	if (rc) {
		snprintf(err, n, "the zygote's broker socket %s: %s", path,
			 strerror(-rc));
		ws_zbroker_free(b);
		return rc;
	}
	if ((rc = template_up(tctl)) < 0) {
		snprintf(err, n, "the zygote template %s",
			 rc == -ETIMEDOUT ? "did not say it is up within 10 s"
					  : "said no 'R' (up) first");
		ws_zbroker_free(b);
		return rc;
	}
	*out = b;
	return 0;
}

int ws_zbroker_fd(const struct ws_zbroker *b)
{
	return b->lfd;
}

void ws_zbroker_free(struct ws_zbroker *b)
{
	if (!b)
		return;
	if (b->lfd >= 0) {
		close(b->lfd);
		unlink(b->path);
	}
	pthread_mutex_destroy(&b->lock);
	free(b);
}

/* The hand-off pipe's pids of forks nobody asked for, read off. */
static void drain_handoff(struct ws_zbroker *b)
{
	pid_t pid;

	while (wait_in(b->handoff, 0) == 0 &&
	       read(b->handoff, &pid, sizeof(pid)) == sizeof(pid))
		warn("zygote: the template forked process %d unasked; it was "
		     "handed off to nobody",
		     (int)pid);
}

/* The template's answer to 'F': the fork's pid, -EAGAIN (it could not
 * fork: it goes on), or -EPIPE (it cannot be trusted any more). */
static pid_t template_answer(struct ws_zbroker *b, char *err, size_t n)
{
	char k = 0;
	pid_t pid = -1;
	int rc = wait_in(b->tctl, WS_ZYG_TIMEOUT_MS);

	if (!rc)
		rc = recv(b->tctl, &k, 1, 0) == 1 ? 0 : -EPIPE;
	if (!rc && k == 'E') {
		snprintf(err, n, "the zygote template could not fork");
		return -EAGAIN;
	}
	if (!rc && k != 'K')
		rc = -EBADMSG;
	if (!rc)
		rc = wait_in(b->handoff, WS_ZYG_TIMEOUT_MS);
	if (!rc && read(b->handoff, &pid, sizeof(pid)) != sizeof(pid))
		rc = -EPIPE;
	if (rc) {
		snprintf(err, n, "the zygote template %s",
			 rc == -ETIMEDOUT ? "did not answer within 10 s"
			 : rc == -EBADMSG ? "answered what is not a fork's"
					  : "is gone");
		b->broken = true;
		return -EPIPE;
	}
	if (pid <= 0) {
		snprintf(err, n,
			 "the template's fork could not be handed off "
			 "(it was killed)");
		return -EAGAIN;
	}
	return pid;
}

/* One fork of the template for these fds (borrowed): its pid or -errno. */
static pid_t broker_fork(struct ws_zbroker *b, const int *fds, char *err,
			 size_t n)
{
	pid_t pid;

	pthread_mutex_lock(&b->lock);
	if (b->broken) {
		snprintf(err, n, "the zygote template is out of order");
		pthread_mutex_unlock(&b->lock);
		return -EPIPE;
	}
	drain_handoff(b);
	int rc = ws_zyg_send_fds(b->tctl, 'F', fds, WS_ZYG_NFDS);
	if (rc < 0) {
		snprintf(err, n, "the zygote template %s%s",
			 rc == -EPIPE ? "is gone" : "cannot be asked: ",
			 rc == -EPIPE ? "" : strerror(-rc));
		b->broken = true;
		pthread_mutex_unlock(&b->lock);
		return -EPIPE;
	}
	pid = template_answer(b, err, n);
	pthread_mutex_unlock(&b->lock);
	return pid;
}

static void answer(int conn, json_t *j)
{
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	if (!s)
		return;
	size_t len = strlen(s);
	s[len] = '\n'; /* over the NUL: one line */
	if (send(conn, s, len + 1, MSG_NOSIGNAL) < 0)
		warn_errno("zygote: a child worker's request");
	free(s);
}

/* A connected peer that is this process's user (the socket's mode keeps
 * others out; this keeps a mistake in its place from mattering). */
static bool peer_ok(int conn)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);

	return getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &uc, &len) == 0 &&
	       uc.uid == geteuid();
}

int ws_zbroker_serve(struct ws_zbroker *b)
{
	int conn = accept4(b->lfd, NULL, NULL, SOCK_CLOEXEC), fds[8], nf = 0;
	char byte = 0, err[200] = "";
	pid_t pid = -EBADMSG;

	if (conn < 0)
		return errno == EINTR || errno == EAGAIN ||
				       errno == ECONNABORTED
			       ? 0
			       : -errno;
	int rc = peer_ok(conn) ? wait_in(conn, WS_ZYG_TIMEOUT_MS) : -EPERM;
	if (!rc)
		rc = recv_fds(conn, &byte, fds, 8, &nf);
	if (!rc && (nf != WS_ZYG_NFDS || byte != 'F'))
		rc = -EBADMSG;
	if (rc)
		snprintf(err, sizeof(err),
			 "a fork request is one byte 'F' with exactly %d fds "
			 "(this one: %s, %d fds)",
			 WS_ZYG_NFDS, strerror(-rc), nf);
	else
		pid = broker_fork(b, fds, err, sizeof(err));
	for (int i = 0; i < nf; i++)
		close(fds[i]);
	if (pid > 0)
		answer(conn, json_pack("{s:i, s:s, s:s}", "pid", (int)pid,
				       "template_run", b->run_id,
				       "policy_sha256", b->policy_sha));
	else
		answer(conn, json_pack("{s:s}", "error", err));
	close(conn);
	return pid == -EPIPE ? -EPIPE : 0;
}

/* The broker's one line, parsed (a new reference) within ms, or NULL. */
static json_t *read_answer(int sock, long long ms, char *err, size_t n)
{
	char buf[1024];
	size_t len = 0;
	long long end = mono_ms() + ms;

	while (!memchr(buf, '\n', len)) {
		int rc = wait_in(sock, end - mono_ms());
		ssize_t r = rc ? -1
			       : read(sock, buf + len, sizeof(buf) - 1 - len);
		if (r <= 0 || len + (size_t)r >= sizeof(buf) - 1) {
			snprintf(err, n, "the zygote's broker %s",
				 rc == -ETIMEDOUT ? "did not answer in time"
						  : "gave no answer");
			return NULL;
		}
		len += (size_t)r;
	}
	buf[len] = '\0';
	json_t *j = json_loads(buf, JSON_DISABLE_EOF_CHECK, NULL);
	if (!j)
		snprintf(err, n, "the zygote's broker answered no JSON");
	return j;
}

/* The broker's answer's pid, once its policy is policy_sha. */
static pid_t answer_pid(json_t *j, const char *policy_sha, char *run_id,
			size_t run_id_len, char *err, size_t n)
{
	const char *e = json_string_value(json_object_get(j, "error"));
	const char *run = json_string_value(json_object_get(j, "template_run"));
	const char *sha =
		json_string_value(json_object_get(j, "policy_sha256"));
	json_int_t pid = json_integer_value(json_object_get(j, "pid"));

	if (e || !run || !sha || pid <= 0) {
		snprintf(err, n, "%s",
			 e ? e
			   : "the zygote's broker answered "
			     "no pid");
		return -EAGAIN;
	}
	if (strcmp(sha, policy_sha)) {
		snprintf(err, n,
			 "the zygote template runs another policy "
			 "(sha256 %.12s..., this session's %.12s...): "
			 "a fork keeps its template's filters and "
			 "Landlock domain, so it is refused",
			 sha, policy_sha);
		return -EPERM;
	}
	snprintf(run_id, run_id_len, "%s", run);
	return (pid_t)pid;
}

pid_t ws_zygote_fork(const char *path, const int fds[WS_ZYG_NFDS],
		     const char *policy_sha, char *run_id, size_t run_id_len,
		     char *err, size_t n)
{
	struct sockaddr_un sa;
	int sock = -1, rc = unix_addr(path, &sa);
	json_t *j = NULL;
	pid_t pid;

	if (!rc && (sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		rc = -errno;
	if (!rc && connect(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		rc = -errno;
	if (!rc)
		rc = ws_zyg_send_fds(sock, 'F', fds, WS_ZYG_NFDS);
	if (rc) {
		snprintf(err, n, "the zygote's broker %s: %s", path,
			 strerror(-rc));
		if (sock >= 0)
			close(sock);
		return rc;
	}
	/* behind other requests, each up to two waits on the template */
	j = read_answer(sock, 6 * WS_ZYG_TIMEOUT_MS, err, n);
	close(sock);
	pid = j ? answer_pid(j, policy_sha, run_id, run_id_len, err, n)
		: -EPIPE;
	json_decref(j);
	return pid;
}
