/*
 * session.c - sessions and one-shot runs behind ward serve and ward mcp
 * (the contract is tools/agent/session.h).
 *
 * One process per session. tracer_run blocks until the last tracee is
 * gone, reaps with waitpid(-1) and ptrace belongs to the thread that
 * seized, so two supervisors cannot share a process. Each session is
 * ward itself exec'd as a worker (session-worker.c; session-int.h lists
 * its fds): a fresh process that inherits nothing of the server's other
 * sessions or database handle, and whose death (EXITKILL) takes its code
 * with it. The server talks to the session's driver (tools/agent/drivers/)
 * directly over the cell socket and reads results from the pipe the
 * worker's tracer copies them to, after the output written before them:
 * when a result arrives, the cell's output is all there.
 *
 * Running a cell is session-cell.c; the types both files share are in
 * session-server.h.
 *
 * A cell is framed with a fresh random nonce; the driver echoes it. A
 * frame that does not parse, names another cell, or answers a cell a
 * second time is rejected and reported (channel_errors) and recorded
 * with the cell.
 *
 * Threads: any number of callers (session.h says what waits for what).
 * The server's lock guards the list of sessions and each session's turn
 * (session-server.h); it is never held while a cell runs or a worker
 * starts or ends. A run takes its session's turn (busy), owns the
 * session's fds while it runs, and gives the turn to the next run in
 * line; a session is freed by whoever drops its last reference (a
 * closing call waits for the calls that hold it). Workers are forked by
 * one thread of the server's own (spawner_main).
 */
#include "tools/agent/session.h"
#include "tools/agent/session-int.h"
#include "tools/agent/session-server.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/random.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "common/log.h"
#include "common/errnames.h"
#include "common/json.h"
#include "common/sha256.h"
#include "tools/run/runrec.h"
#include "tools/review/view.h"
#include "tools/run/workfiles.h"

/* ------------------------------------------------------------------ */
/* small helpers                                                       */

long long ws_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long long ws_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((format(printf, 3, 4))) int
ws_fail(struct ws_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return -1;
}

void ws_close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

int ws_random_hex(char *out, size_t bytes)
{
	unsigned char b[32];

	if (bytes > sizeof(b) || getrandom(b, bytes, 0) != (ssize_t)bytes)
		return -EIO;
	for (size_t i = 0; i < bytes; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
	return 0;
}

json_t *ws_json_text(const char *s, size_t len)
{
	return ward_json_text(s, len);
}

/* See session.h. A scan, not a parse: strings are skipped, the depth of
 * objects and arrays counted; the value after the first top-level "id"
 * key is parsed alone. */
json_t *ws_json_line_id(const char *p, size_t n)
{
	int depth = 0;

	for (size_t i = 0; i < n; i++) {
		if (p[i] == '{' || p[i] == '[') {
			depth++;
		} else if (p[i] == '}' || p[i] == ']') {
			depth--;
		} else if (p[i] == '"') {
			size_t k = i + 1;
			while (k < n && p[k] != '"')
				k += p[k] == '\\' ? 2 : 1;
			if (k >= n)
				return NULL;
			bool is_id = depth == 1 && k - i - 1 == 2 &&
				     !memcmp(p + i + 1, "id", 2);
			i = k;
			if (!is_id)
				continue;
			while (++k < n && (p[k] == ' ' || p[k] == '\t'))
				;
			if (k >= n || p[k] != ':')
				continue;
			json_t *id = json_loadb(
				p + k + 1, n - k - 1,
				JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK, NULL);
			if (json_is_integer(id) || json_is_string(id))
				return id;
			json_decref(id);
			return NULL;
		}
	}
	return NULL;
}

int ws_thread_detached(void *(*fn)(void *), void *arg)
{
	pthread_attr_t at;
	pthread_t th;
	int rc = pthread_attr_init(&at);

	if (rc)
		return rc;
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&th, &at, fn, arg);
	pthread_attr_destroy(&at);
	return rc;
}

void ws_time_in(struct timespec *ts, clockid_t clk, long ms)
{
	clock_gettime(clk, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

/* The servers' stop signals (ws_stop_signals): one set per process. */
static struct {
	void (*fn)(void *);
	void *arg;
	int wake[2];
} stop_sig;

static void stop_set(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
}

static void *stop_main(void *unused)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t set;
	char b = 's';
	int sig;

	(void)unused;
	stop_set(&set);
	if (sigwait(&set, &sig))
		return NULL;
	debug("SIG%s: cancelling the calls, closing the sessions",
	      sigabbrev_np(sig));
	/* a second one while that goes on: ward stops at once */
	sigaction(SIGTERM, &dfl, NULL);
	sigaction(SIGINT, &dfl, NULL);
	sigaction(SIGHUP, &dfl, NULL);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	stop_sig.fn(stop_sig.arg);
	ssize_t w = write(stop_sig.wake[1], &b, 1);
	(void)w;
	for (;;)
		pause(); /* alive, to take the second signal */
	return NULL;
}

int ws_stop_signals(void (*on_stop)(void *), void *arg, int *wake)
{
	sigset_t set;
	int rc;

	stop_sig.fn = on_stop;
	stop_sig.arg = arg;
	if (pipe2(stop_sig.wake, O_CLOEXEC) < 0)
		return -errno;
	stop_set(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	rc = ws_thread_detached(stop_main, NULL);
	if (rc)
		return -rc;
	*wake = stop_sig.wake[0];
	return 0;
}

int ws_write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n > 0) {
		ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
		if (w < 0 && errno == ENOTSOCK)
			w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* workdir files                                                       */

/* The session's workdir, for wf_*: its view once the worker has started
 * (a path that is a directory, not the fd's magic link: nftw walks it). */
const char *ws_wd(const struct sess *x)
{
	return x->view[0] ? x->view : x->workdir;
}

/* After the worker's start (its quota is mounted by then): the workdir in
 * the worker's mount namespace, held open. */
static void hold_workdir(struct sess *x)
{
	char p[PATH_MAX + 32];

	snprintf(p, sizeof(p), "/proc/%d/root%s", (int)x->worker, x->workdir);
	x->wd_fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (x->wd_fd < 0) /* not ours to look into: the host's view */
		x->wd_fd = open(x->workdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (x->wd_fd >= 0)
		snprintf(x->view, sizeof(x->view), "/proc/self/fd/%d/.",
			 x->wd_fd);
}

/* ------------------------------------------------------------------ */
/* sessions: start and end                                             */

/* A line of the worker's: {"end": ...} (how the run ended), or
 * {"zygote_pid"} (the fork it attached to: zygote-worker.c). */
static void parse_end(struct sess *x, const char *line)
{
	json_t *j = json_loads(line, 0, NULL), *end = json_object_get(j, "end");
	json_t *zp = json_object_get(j, "zygote_pid");

	if (json_integer_value(zp) > 0)
		x->fork_pid = (pid_t)json_integer_value(zp);
	const char *st = json_string_value(json_object_get(end, "status"));
	const char *cause = json_string_value(json_object_get(end, "cause"));
	const char *slog =
		json_string_value(json_object_get(end, "seal_log_error"));
	if (slog)
		warn("session %s: %s", x->id, slog);
	if (end) {
		json_int_t code = json_integer_value(
				   json_object_get(end, "exit_code")),
			   sig = json_integer_value(
				   json_object_get(end, "signal"));
		x->end_known = true;
		x->end_signal = (int)sig;
		x->end_exit = sig > 0 ? 128 + (int)sig : (int)code;
		x->dead = true;
		snprintf(x->end_status, sizeof(x->end_status), "%s",
			 st ? st : "error");
		snprintf(x->end_cause, sizeof(x->end_cause), "%s",
			 cause ? cause : "");
	}
	json_decref(j);
}

/* Reads what the worker says on the control socket; a closed socket
 * means the worker is gone. */
void ws_read_ctl(struct sess *x)
{
	ssize_t n = read(x->ctl, x->ctlbuf + x->ctl_len,
			 sizeof(x->ctlbuf) - 1 - x->ctl_len);
	char *nl;

	if (n <= 0) {
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			return;
		ws_close_fd(&x->ctl);
		if (!x->dead) {
			x->dead = true;
			snprintf(x->end_status, sizeof(x->end_status), "error");
			snprintf(x->end_cause, sizeof(x->end_cause),
				 "the session's supervisor ended");
		}
		return;
	}
	x->ctl_len += (size_t)n;
	x->ctlbuf[x->ctl_len] = '\0';
	while ((nl = strchr(x->ctlbuf, '\n'))) {
		*nl = '\0';
		if (!ws_ask_line(x, x->ctlbuf))
			parse_end(x, x->ctlbuf);
		x->ctl_len -= (size_t)(nl + 1 - x->ctlbuf);
		memmove(x->ctlbuf, nl + 1, x->ctl_len + 1);
	}
	if (x->ctl_len == sizeof(x->ctlbuf) - 1)
		x->ctl_len = 0; /* not ward's worker talking */
}

/* Waits up to ms for the worker to exit; true if it did. */
static bool reap(struct sess *x, long long ms)
{
	long long end = ws_mono_ms() + ms;

	while (x->worker > 0) {
		pid_t p = waitpid(x->worker, NULL, WNOHANG);
		if (p == x->worker || (p < 0 && errno == ECHILD)) {
			x->worker = -1;
			return true;
		}
		if (ws_mono_ms() >= end)
			return false;
		if (x->ctl >= 0) {
			struct pollfd q = { x->ctl, POLLIN, 0 };
			if (poll(&q, 1, 10) > 0)
				ws_read_ctl(x);
		} else {
			usleep(5000);
		}
	}
	return true;
}

/* Ends the session: EOF on the cell socket lets the driver finish (the
 * run ends "ok"); a worker that does not end in time is stopped with
 * SIGTERM (the run is recorded "aborted"), then SIGKILL. */
void ws_sess_stop(struct sess *x)
{
	pthread_mutex_lock(&x->send_lock); /* a command may be sending */
	ws_close_fd(&x->cells);
	pthread_mutex_unlock(&x->send_lock);
	if (!reap(x, CLOSE_MS) && x->worker > 0) {
		kill(x->worker, SIGTERM);
		if (!reap(x, CLOSE_MS) && x->worker > 0) {
			kill(x->worker, SIGKILL);
			reap(x, CLOSE_MS);
		}
	}
	x->dead = true;
}

static void sess_free(struct sess *x)
{
	if (!x)
		return;
	ws_sess_stop(x);
	ws_close_fd(&x->ctl);
	ws_close_fd(&x->res);
	ws_close_fd(&x->out[1]);
	ws_close_fd(&x->out[2]);
	ws_close_fd(&x->wd_fd);
	ward_rm_workdir(x->workdir); /* its lock too */
	ws_close_fd(&x->wd_lock);
	free(x->workdir);
	free(x->resbuf);
	json_decref(x->pending_errors);
	json_decref(x->metadata);
	json_decref(x->setup);
	ws_ctx_free(x);
	pthread_cond_destroy(&x->turn);
	ws_cmds_destroy(x);
	free(x);
}

static char *make_workdir(bool drop)
{
	char buf[64] = "/tmp/ward-XXXXXX", sub[80];

	if (!mkdtemp(buf))
		return NULL;
	snprintf(sub, sizeof(sub), "%s/tmp", buf);
	if (mkdir(sub, 0700) < 0 ||
	    (drop && (chown(buf, WS_SANDBOX_UID, WS_SANDBOX_GID) < 0 ||
		      chown(sub, WS_SANDBOX_UID, WS_SANDBOX_GID) < 0))) {
		ward_rm_workdir(buf);
		return NULL;
	}
	return strdup(buf);
}

/* Moves fd to a number >= 10, closing the old one (before dup2 to 0..5
 * so that no source is overwritten by an earlier target). */
static int lift(int fd)
{
	int n = fcntl(fd, F_DUPFD_CLOEXEC, 10);

	close(fd);
	return n;
}

__attribute__((noreturn)) static void exec_worker(int ctl, int cells, int res,
						  int out, int err, int nice)
{
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	sigset_t none;

	/* a server may block signals in its threads (ward mcp) */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	prctl(PR_SET_PDEATHSIG, SIGTERM); /* the server gone: end the run */
	if (nice > 0) /* a pool's refill: behind the sessions in use */
		setpriority(PRIO_PROCESS, 0, nice);
	ctl = lift(ctl);
	cells = lift(cells);
	res = lift(res);
	out = lift(out);
	err = lift(err);
	null = lift(null);
	if (ctl < 0 || cells < 0 || res < 0 || out < 0 || err < 0 || null < 0 ||
	    dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0 ||
	    dup2(ctl, WS_FD_CTL) < 0 || dup2(cells, WS_FD_CELLS) < 0 ||
	    dup2(res, WS_FD_RESULT) < 0)
		_exit(127);
	char *argv[] = { (char *)"ward", (char *)"serve",
			 (char *)"--session-worker", NULL };
	execv("/proc/self/exe", argv);
	_exit(127);
}

/* See session-server.h. */
int ws_ctl_line(struct sess *x, long long ms, int cancel_fd)
{
	long long end = ws_mono_ms() + ms;
	char *nl;

	while (!(nl = strchr(x->ctlbuf, '\n'))) {
		struct pollfd q[2] = { { x->ctl, POLLIN, 0 },
				       { cancel_fd, POLLIN, 0 } };
		long long left = end - ws_mono_ms();
		if (left <= 0)
			return 0;
		if (poll(q, 2, (int)left) <= 0)
			continue;
		if (q[1].revents)
			return 0;
		if (!q[0].revents)
			continue;
		ssize_t n = read(x->ctl, x->ctlbuf + x->ctl_len,
				 sizeof(x->ctlbuf) - 1 - x->ctl_len);
		if (n <= 0 || x->ctl_len + (size_t)n == sizeof(x->ctlbuf) - 1)
			return -1;
		x->ctl_len += (size_t)n;
		x->ctlbuf[x->ctl_len] = '\0';
	}
	*nl = '\0';
	return 1;
}

void ws_ctl_pop(struct sess *x)
{
	size_t n = strlen(x->ctlbuf) + 1;

	x->ctl_len = n > x->ctl_len ? 0 : x->ctl_len - n;
	memmove(x->ctlbuf, x->ctlbuf + n, x->ctl_len);
	x->ctlbuf[x->ctl_len] = '\0';
}

/* Waits for the worker's first line: {"run_id"} (and "setup" when it ran
 * one: after it, so the session starts with its setup done) or {"error"}.
 * extra_ms: the setup's time. */
static int await_start(struct sess *x, long long extra_ms, struct ws_error *err)
{
	int got = ws_ctl_line(x, START_MS + extra_ms, -1);

	/* a fork's pid may come first (the record is begun on a thread) */
	while (got > 0 && strstr(x->ctlbuf, "{\"zygote_pid\":") == x->ctlbuf) {
		parse_end(x, x->ctlbuf);
		ws_ctl_pop(x);
		got = ws_ctl_line(x, START_MS + extra_ms, -1);
	}

	if (got == 0)
		return ws_fail(err, WS_E_INTERNAL,
			       "the session's supervisor did not start "
			       "within %lld s",
			       (START_MS + extra_ms) / 1000);
	if (got < 0)
		return ws_fail(err, WS_E_INTERNAL,
			       "the session's supervisor ended before "
			       "it started the interpreter");
	json_t *j = json_loads(x->ctlbuf, 0, NULL);
	const char *id = json_string_value(json_object_get(j, "run_id"));
	const char *e = json_string_value(json_object_get(j, "error"));
	int rc = 0;
	x->setup = json_incref(json_object_get(j, "setup"));
	if (id && strlen(id) == AUDIT_RUN_ID_LEN && !e)
		snprintf(x->run_id, sizeof(x->run_id), "%s", id);
	else
		rc = ws_fail(err,
			     e && (!strncmp(e, "bad policy", 10) ||
				   !strncmp(e, "setup", 5))
				     ? WS_E_PARAMS
				     : WS_E_INTERNAL,
			     "%s", e ? e : "the session's supervisor failed");
	ws_ctl_pop(x);
	json_decref(j);
	return rc;
}

static bool valid_lang(const char *l)
{
	return l &&
	       (!strcmp(l, "python") || !strcmp(l, "node") || !strcmp(l, "sh"));
}

/* Checks that obj has only the keys named (NULL-terminated). */
int ws_only_keys(json_t *obj, struct ws_error *err, ...)
{
	const char *k;
	json_t *v;

	json_object_foreach(obj, k, v)
	{
		va_list ap;
		const char *a;
		bool ok = false;
		va_start(ap, err);
		while ((a = va_arg(ap, const char *)))
			if (!strcmp(a, k))
				ok = true;
		va_end(ap);
		if (!ok)
			return ws_fail(err, WS_E_PARAMS,
				       "params.%s: unknown parameter", k);
	}
	return 0;
}

int ws_get_str(json_t *p, const char *key, const char **out,
	       struct ws_error *err)
{
	json_t *v = json_object_get(p, key);

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return ws_fail(err, WS_E_PARAMS, "params.%s: must be a string",
			       key);
	*out = json_string_value(v);
	return 0;
}

int ws_get_num(json_t *p, const char *key, double *out, struct ws_error *err)
{
	json_t *v = json_object_get(p, key);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v) || json_number_value(v) <= 0)
		return ws_fail(err, WS_E_PARAMS,
			       "params.%s: must be a positive number", key);
	*out = json_number_value(v);
	return 0;
}

/* ------------------------------------------------------------------ */
/* the spawner thread                                                  */

struct ws_spawn {
	struct ws_spawn *next;
	int fds[5];
	int nice;
	pid_t pid;
	int err;
	bool done;
};

static void *spawner_main(void *arg)
{
	struct ws_server *s = arg;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		while (!s->spawn_q && !s->spawn_stop)
			pthread_cond_wait(&s->spawn_cond, &s->lock);
		struct ws_spawn *q = s->spawn_q;
		if (!q)
			break;
		s->spawn_q = q->next;
		pthread_mutex_unlock(&s->lock);
		pid_t pid = fork();
		if (pid == 0)
			exec_worker(q->fds[0], q->fds[1], q->fds[2], q->fds[3],
				    q->fds[4], q->nice);
		int e = errno;
		pthread_mutex_lock(&s->lock);
		q->pid = pid;
		q->err = e;
		q->done = true;
		pthread_cond_broadcast(&s->spawn_done);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* A worker forked by the spawner thread with these fds (exec_worker);
 * its pid, or -1 with errno. */
static pid_t spawn_worker(struct ws_server *s, int ctl, int cells, int res,
			  int out, int err, int nice)
{
	struct ws_spawn q = { .fds = { ctl, cells, res, out, err },
			      .nice = nice,
			      .pid = -1 };

	pthread_mutex_lock(&s->lock);
	q.next = s->spawn_q;
	s->spawn_q = &q;
	pthread_cond_signal(&s->spawn_cond);
	while (!q.done)
		pthread_cond_wait(&s->spawn_done, &s->lock);
	pthread_mutex_unlock(&s->lock);
	errno = q.err;
	return q.pid;
}

/* A lifetime asked for (seconds) in ms, within the server's max_life_s
 * (the worker's own wall limit); *capped says whether it was cut. */
static long long life_ms(const struct ws_server *s, double asked, bool *capped)
{
	bool cut = asked > s->cfg.max_life_s;

	if (capped)
		*capped = cut;
	return (long long)((cut ? s->cfg.max_life_s : asked) * 1000);
}

/* A slot under max_sessions, kept while the session starts (the lock is
 * not held while a worker starts: other calls go on). */
static int reserve_slot(struct ws_server *s, struct ws_error *err)
{
	int open;

	pthread_mutex_lock(&s->lock);
	open = s->starting;
	for (struct sess *o = s->list; o; o = o->next)
		open += !o->retired;
	if (open < s->cfg.max_sessions)
		s->starting++;
	pthread_mutex_unlock(&s->lock);
	if (open >= s->cfg.max_sessions)
		return ws_fail(err, WS_E_LIMIT,
			       "%d sessions are open, the most this server "
			       "allows; close one first (session.close)",
			       s->cfg.max_sessions);
	return 0;
}

/* params.env: absent, null, or an object of strings named without '='. */
int ws_check_env(json_t *env, struct ws_error *err)
{
	const char *k;
	json_t *v;

	if (env && !json_is_null(env) && !json_is_object(env))
		return ws_fail(err, WS_E_PARAMS,
			       "params.env: must be an object of strings");
	json_object_foreach(env, k, v)
	{
		if (!json_is_string(v) || !*k || strchr(k, '='))
			return ws_fail(err, WS_E_PARAMS,
				       "params.env.%s: give a name without '=' "
				       "and a string value",
				       k);
	}
	return 0;
}

static int check_metadata(json_t *md, struct ws_error *err)
{
	const char *k;
	json_t *v;

	if (!md || json_is_null(md))
		return 0;
	if (!json_is_object(md))
		return ws_fail(err, WS_E_PARAMS,
			       "params.metadata: must be an object of strings");
	json_object_foreach(md, k, v)
	{
		if (!json_is_string(v))
			return ws_fail(err, WS_E_PARAMS,
				       "params.metadata.%s: must be a string",
				       k);
	}
	return 0;
}

/* params.setup: code to run first under the policy's setup phase, as a
 * string (in the session's language) or {"code", "language"}; *out a new
 * {"code", "language"} or NULL. */
static int get_setup(json_t *p, const char *lang, json_t **out,
		     struct ws_error *err)
{
	json_t *v = json_object_get(p, "setup");
	const char *code = NULL, *sl = lang;

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (json_is_string(v)) {
		code = json_string_value(v);
	} else if (json_is_object(v)) {
		if (ws_only_keys(v, err, "code", "language", NULL) < 0 ||
		    ws_get_str(v, "code", &code, err) < 0 ||
		    ws_get_str(v, "language", &sl, err) < 0)
			return -1;
		sl = sl ? ws_lang_canon(sl) : lang;
	}
	if (!code)
		return ws_fail(err, WS_E_PARAMS,
			       "params.setup: give the setup's code, as a "
			       "string or {\"code\", \"language\"}");
	if (!valid_lang(sl))
		return ws_fail(err, WS_E_PARAMS,
			       "params.setup.language: '%s' is not one of "
			       "python, node, sh",
			       sl);
	*out = json_pack("{s:s, s:s}", "code", code, "language", sl);
	return *out ? 0 : ws_fail(err, WS_E_INTERNAL, "out of memory");
}

static int sess_start(struct ws_server *s, json_t *p, struct ws_cancel *oneshot,
		      struct sess **out, struct ws_error *err)
{
	struct ws_start st = { .lang = "python",
			       .timeout = s->cfg.cell_timeout_s,
			       .life_s = s->cfg.max_life_s,
			       .env = json_object_get(p, "env"),
			       .metadata = json_object_get(p, "metadata"),
			       .oneshot = oneshot };
	const char *lang = "python";
	json_t *env = st.env;

	if (ws_get_str(p, "language", &lang, err) < 0 ||
	    ws_get_str(p, "profile", &st.profile, err) < 0 ||
	    ws_get_str(p, "policy", &st.policy, err) < 0 ||
	    ws_get_num(p, "timeout_s", &st.timeout, err) < 0 ||
	    ws_get_num(p, "memory_mb", &st.memory_mb, err) < 0 ||
	    ws_get_num(p, "life_s", &st.life_s, err) < 0 ||
	    check_metadata(st.metadata, err) < 0)
		return -1;
	if (!lang)
		lang = "python";
	lang = ws_lang_canon(lang);
	if (!valid_lang(lang))
		return ws_fail(err, WS_E_PARAMS,
			       "params.language: '%s' is not one of python, "
			       "node, sh",
			       lang);
	if (ws_check_env(env, err) < 0 ||
	    get_setup(p, lang, &st.setup, err) < 0)
		return -1;
	st.lang = lang;
	if (!st.profile && !st.policy) {
		st.profile = s->cfg.profile;
		st.policy = s->cfg.policy;
		if (st.profile && !strcmp(st.profile, "default") &&
		    strcmp(lang, "python"))
			st.profile =
				lang; /* as ward run: a profile per language */
	}
	if (reserve_slot(s, err) < 0) {
		json_decref(st.setup);
		return -1;
	}
	struct sess *x = NULL;
	/* a pooled session has had no setup */
	int rc = st.setup ? 0 : ws_pool_take(s, &st, &x);
	if (!x)
		rc = ws_sess_spawn(s, &st, &x, err);
	json_decref(st.setup);
	pthread_mutex_lock(&s->lock);
	s->starting--;
	if (!rc) {
		x->next = s->list;
		s->list = x;
		s->n++;
		x->refs = 2; /* the list's and the caller's */
		debug("session %s started: %s, run %s, %d open", x->id, x->lang,
		      x->run_id, s->n);
	}
	pthread_mutex_unlock(&s->lock);
	*out = x;
	return rc;
}

static void cond_init(pthread_cond_t *c)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(c, &ca);
	pthread_condattr_destroy(&ca);
}

/* See session-server.h. */
int ws_sess_spawn(struct ws_server *s, const struct ws_start *st,
		  struct sess **out, struct ws_error *err)
{
	struct sess *x = calloc(1, sizeof(*x));
	int ctl[2] = { -1, -1 }, cells[2] = { -1, -1 }, res[2] = { -1, -1 },
	    o1[2] = { -1, -1 }, o2[2] = { -1, -1 };
	const char *lang = st->lang, *profile = st->profile,
		   *policy = st->policy;
	double memory_mb = st->memory_mb;
	json_t *env = st->env;
	if (!x)
		return ws_fail(err, WS_E_INTERNAL, "out of memory");
	cond_init(&x->turn);
	ws_cmds_init(x);
	x->ctl = x->cells = x->res = x->out[1] = x->out[2] = x->out[0] = -1;
	x->wd_fd = -1;
	x->wd_lock = -1;
	x->worker = -1;
	snprintf(x->lang, sizeof(x->lang), "%s", lang);
	x->timeout_s = st->timeout;
	x->workdir = make_workdir(s->drop);
	if (!x->workdir) {
		pthread_cond_destroy(&x->turn);
		ws_cmds_destroy(x);
		free(x);
		return ws_fail(err, WS_E_INTERNAL,
			       "cannot create a workdir in /tmp: %s",
			       strerror(errno));
	}
	x->wd_lock = ward_workdir_lock(x->workdir);
	if (x->wd_lock < 0)
		warn("workdir %s: no lock (%s): if ward is killed, nothing "
		     "will remove it",
		     x->workdir, strerror(-x->wd_lock));
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, cells) < 0 ||
	    pipe2(res, O_CLOEXEC) < 0 || pipe2(o1, O_CLOEXEC) < 0 ||
	    pipe2(o2, O_CLOEXEC) < 0) {
		int e = errno;
		for (int i = 0; i < 2; i++) {
			ws_close_fd(&ctl[i]);
			ws_close_fd(&cells[i]);
			ws_close_fd(&res[i]);
			ws_close_fd(&o1[i]);
			ws_close_fd(&o2[i]);
		}
		sess_free(x);
		return ws_fail(err, WS_E_INTERNAL, "cannot make pipes: %s",
			       strerror(e));
	}
	/* Room for output written between cells, read at the next call. */
	fcntl(o1[0], F_SETPIPE_SZ, 1 << 20);
	fcntl(o2[0], F_SETPIPE_SZ, 1 << 20);
	pid_t pid = spawn_worker(s, ctl[1], cells[1], res[1], o1[1], o2[1],
				 st->nice);
	int fork_errno = errno;
	close(ctl[1]);
	close(cells[1]);
	close(res[1]);
	close(o1[1]);
	close(o2[1]);
	x->ctl = ctl[0];
	x->srv = s;
	x->cells = cells[0];
	x->res = res[0];
	x->out[1] = o1[0];
	x->out[2] = o2[0];
	x->worker = pid;
	if (pid < 0) {
		sess_free(x);
		return ws_fail(err, WS_E_INTERNAL, "fork: %s",
			       strerror(fork_errno));
	}

	json_t *cfg = json_pack("{s:s, s:s, s:s, s:f}", "language", lang, "db",
				s->db, "workdir", x->workdir, "max_life_s",
				st->worker_life_s > 0 ? st->worker_life_s
						      : s->cfg.max_life_s);
	if (profile)
		json_object_set_new(cfg, "profile", json_string(profile));
	if (policy)
		json_object_set_new(cfg, "policy", json_string(policy));
	if (memory_mb > 0)
		json_object_set_new(cfg, "memory_mb",
				    json_integer((json_int_t)memory_mb));
	if (env && json_is_object(env))
		json_object_set(cfg, "env", env);
	if (st->zygote)
		json_object_set(cfg, "zygote", st->zygote);
	if (st->setup) { /* its time limit: the cells' */
		json_object_set(cfg, "setup", st->setup);
		json_object_set_new(cfg, "setup_timeout_s",
				    json_real(st->timeout));
	}
	char *line = json_dumps(cfg, JSON_COMPACT);
	json_decref(cfg);
	int rc = line ? ws_write_all(x->ctl, line, strlen(line)) : -ENOMEM;
	if (!rc)
		rc = ws_write_all(x->ctl, "\n", 1);
	free(line);
	if (rc < 0) {
		sess_free(x);
		return ws_fail(err, WS_E_INTERNAL,
			       "cannot configure the session's supervisor: %s",
			       strerror(-rc));
	}
	if (await_start(x, st->setup ? (long long)(st->timeout * 1000) : 0,
			err) < 0) {
		sess_free(x);
		return -1;
	}
	hold_workdir(x);
	ws_random_hex(x->id + 2, 8);
	memcpy(x->id, "s-", 2);
	x->created_ns = ws_realtime_ns();
	x->created_ms = x->last_ms = x->shown_last_ms = ws_mono_ms();
	x->expires_ms = x->created_ms + life_ms(s, st->life_s, NULL);
	x->pending_errors = json_array();
	if (st->metadata && json_is_object(st->metadata))
		x->metadata = json_deep_copy(st->metadata);
	if (st->oneshot) {
		x->oneshot = x->busy = true;
		x->running = st->oneshot;
	}
	*out = x;
	return 0;
}

/* ------------------------------------------------------------------ */
/* methods                                                             */

/* Lock held: remembers why x is gone, for the requests that name it. */
static void bury(struct ws_server *s, const struct sess *x, const char *why)
{
	struct ws_grave *g = &s->graves[s->graves_n++ % WS_GRAVES];

	snprintf(g->id, sizeof(g->id), "%s", x->id);
	snprintf(g->why, sizeof(g->why), "%s", why);
}

/* Lock held: why the session id is gone, or NULL. */
static const char *grave_of(const struct ws_server *s, const char *id)
{
	for (unsigned i = 0; i < WS_GRAVES && i < s->graves_n; i++) {
		const struct ws_grave *g =
			&s->graves[(s->graves_n - 1 - i) % WS_GRAVES];
		if (!strcmp(g->id, id))
			return g->why;
	}
	return NULL;
}

struct sess *ws_find_sess(struct ws_server *s, json_t *p, bool need,
			  struct ws_error *err)
{
	json_t *v = json_object_get(p, "session_id");
	const char *id = json_string_value(v), *why;
	struct sess *x;

	if (!v || json_is_null(v)) {
		if (need)
			ws_fail(err, WS_E_PARAMS,
				"params.session_id: required (a session id from "
				"session.create)");
		return NULL;
	}
	if (!id) {
		ws_fail(err, WS_E_PARAMS,
			"params.session_id: must be a string");
		return NULL;
	}
	pthread_mutex_lock(&s->lock);
	for (x = s->list; x; x = x->next)
		if (!x->retired && !x->oneshot && !strcmp(x->id, id))
			break;
	if (x)
		x->refs++;
	else if ((why = grave_of(s, id)))
		ws_fail(err, WS_E_NO_SESSION, "session '%s' %s", id, why);
	else
		ws_fail(err, WS_E_NO_SESSION,
			"no session '%s' (it was closed, expired, or never "
			"existed; session.list shows the open ones)",
			id);
	pthread_mutex_unlock(&s->lock);
	return x;
}

/* Closes x for good: nobody holds it any more. */
void ws_sess_finish(struct ws_server *s, struct sess *x)
{
	/* the worker sealed the run when it ended; the cells and artifacts
	 * written here get their own seal, bound to it (audit/chain.c) */
	ws_sess_stop(x);
	if (x->run_id[0] && s->au)
		audit_seal_cells(s->au, x->run_id);
	sess_free(x);
}

void ws_sess_put(struct ws_server *s, struct sess *x)
{
	pthread_mutex_lock(&s->lock);
	bool last = --x->refs == 0;
	pthread_cond_broadcast(&x->turn);
	pthread_mutex_unlock(&s->lock);
	if (last)
		ws_sess_finish(s, x);
}

/* Lock held: takes x off the list (why: for the requests that name it
 * later, NULL for none), interrupts its running cell, wakes the runs
 * waiting their turn, and drops the list's reference (the caller holds
 * one: its ws_sess_put closes x if it is the last). */
static void unlink_sess(struct ws_server *s, struct sess *x, const char *why)
{
	for (struct sess **pp = &s->list; *pp; pp = &(*pp)->next)
		if (*pp == x) {
			*pp = x->next;
			s->n--;
			break;
		}
	x->gone = true;
	if (why && !x->oneshot) {
		bury(s, x, why);
		debug("session %s (run %s) %s", x->id, x->run_id, why);
	}
	if (x->running)
		ws_cancel_fire(x->running);
	x->refs--;
	pthread_cond_broadcast(&x->turn);
}

/* Lock held: why x should be closed now, or NULL. */
static const char *stale(const struct ws_server *s, struct sess *x,
			 long long now, char *buf, size_t n)
{
	if (x->retired)
		return !x->busy && (reap(x, 0) || now - x->last_ms > CLOSE_MS)
			       ? ""
			       : NULL;
	if (now >= x->expires_ms) {
		snprintf(buf, n,
			 "expired: its lifetime ended (session.create life_s, "
			 "session.update, --max-life)");
		return buf;
	}
	if (x->busy)
		return NULL; /* its cell says what happens to it */
	if (x->dead) {
		snprintf(buf, n, "ended: its interpreter exited");
		return buf;
	}
	if (now - x->last_ms > s->cfg.idle_s * 1000 && !ws_cmds_running(x)) {
		snprintf(buf, n,
			 "expired: it was idle longer than %g s (--idle)",
			 s->cfg.idle_s);
		return buf;
	}
	return NULL;
}

/* Closes sessions that were idle too long, lived too long, or ended (a
 * running cell is interrupted when its session's lifetime ends). */
static void expire(struct ws_server *s)
{
	struct sess *x, *next, *victims = NULL;
	long long now = ws_mono_ms();
	char buf[96];

	ws_pump_idle(s);
	pthread_mutex_lock(&s->lock);
	for (x = s->list; x; x = next) {
		const char *why = stale(s, x, now, buf, sizeof(buf));
		next = x->next;
		if (!why)
			continue;
		x->refs++;
		unlink_sess(s, x, why);
		x->reap_next = victims;
		victims = x;
	}
	pthread_mutex_unlock(&s->lock);
	for (x = victims; x; x = next) {
		next = x->reap_next;
		ws_sess_put(s, x);
	}
}

/* When x's lifetime ends, on the wall clock (ms since the epoch): from its
 * start on both clocks, so that every answer says the same. */
static long long expires_wall_ms(const struct sess *x, long long expires_ms)
{
	return x->created_ns / 1000000 + (expires_ms - x->created_ms);
}

static int m_create(struct ws_server *s, json_t *p, json_t **res,
		    struct ws_error *err)
{
	struct sess *x;
	double life = s->cfg.max_life_s;
	bool capped = false;

	if (ws_only_keys(p, err, "language", "profile", "policy", "env",
			 "timeout_s", "memory_mb", "life_s", "metadata",
			 "setup", NULL) < 0 ||
	    ws_get_num(p, "life_s", &life, err) < 0 ||
	    sess_start(s, p, NULL, &x, err) < 0)
		return -1;
	life_ms(s, life, &capped);
	*res = json_pack("{s:s, s:s, s:s, s:I}", "session_id", x->id,
			 "language", x->lang, "run_id", x->run_id, "expires_ms",
			 (json_int_t)expires_wall_ms(x, x->expires_ms));
	if (*res && capped)
		json_object_set_new(*res, "life_capped_from", json_real(life));
	if (*res && x->setup) /* how its setup went */
		json_object_set(*res, "setup", x->setup);
	ws_sess_put(s, x);
	return 0;
}

static int m_list(struct ws_server *s, json_t *p, json_t **res,
		  struct ws_error *err)
{
	json_t *arr = json_array();
	long long now_ms = ws_mono_ms(), now_ns = ws_realtime_ns();

	if (ws_only_keys(p, err, NULL) < 0) {
		json_decref(arr);
		return -1;
	}
	pthread_mutex_lock(&s->lock);
	for (struct sess *x = s->list; x; x = x->next) {
		if (x->retired || x->oneshot)
			continue;
		double last = (double)(now_ns -
				       (now_ms - x->shown_last_ms) * 1000000) /
			      1e9;
		json_t *e = json_pack(
			"{s:s, s:s, s:s, s:I, s:f, s:f, s:I, s:I, s:b}",
			"session_id", x->id, "language", x->lang, "run_id",
			x->run_id, "execution_count",
			(json_int_t)x->shown_count, "created",
			(double)x->created_ns / 1e9, "last_used", last,
			"started_ms", (json_int_t)(x->created_ns / 1000000),
			"expires_ms",
			(json_int_t)expires_wall_ms(x, x->expires_ms),
			"running", x->busy);
		if (e)
			json_object_set_new(
				e, "metadata",
				x->metadata ? json_deep_copy(x->metadata)
					    : json_object());
		json_array_append_new(arr, e);
	}
	pthread_mutex_unlock(&s->lock);
	*res = json_pack("{s:o}", "sessions", arr);
	return 0;
}

/* session.update {session_id, life_s}: the session now ends life_s from
 * now, at the latest when the server's max_life_s since its start ends
 * (the worker's own wall limit). */
static int m_update(struct ws_server *s, json_t *p, json_t **res,
		    struct ws_error *err)
{
	double life = 0;
	struct sess *x;

	if (ws_only_keys(p, err, "session_id", "life_s", NULL) < 0 ||
	    ws_get_num(p, "life_s", &life, err) < 0)
		return -1;
	if (life <= 0)
		return ws_fail(err, WS_E_PARAMS,
			       "params.life_s: required, a positive number of "
			       "seconds");
	if (!(x = ws_find_sess(s, p, true, err)))
		return -1;
	long long now = ws_mono_ms(), want = now + (long long)(life * 1000),
		  cap = x->created_ms + life_ms(s, s->cfg.max_life_s, NULL);
	pthread_mutex_lock(&s->lock);
	x->expires_ms = want < cap ? want : cap;
	long long at = x->expires_ms;
	pthread_mutex_unlock(&s->lock);
	*res = json_pack("{s:s, s:I}", "session_id", x->id, "expires_ms",
			 (json_int_t)expires_wall_ms(x, at));
	if (*res && want > cap)
		json_object_set_new(*res, "life_capped_from", json_real(life));
	ws_sess_put(s, x);
	return 0;
}

/* A running cell is interrupted (its run returns "cancelled"), the runs
 * waiting their turn fail; the session is closed when they are done. */
static int m_close(struct ws_server *s, json_t *p, json_t **res,
		   struct ws_error *err)
{
	struct sess *x;

	if (ws_only_keys(p, err, "session_id", NULL) < 0 ||
	    !(x = ws_find_sess(s, p, true, err)))
		return -1;
	pthread_mutex_lock(&s->lock);
	if (!x->gone)
		unlink_sess(s, x, "was closed (session.close)");
	while (x->refs > 1)
		pthread_cond_wait(&x->turn, &s->lock);
	pthread_mutex_unlock(&s->lock);
	*res = json_pack("{s:s, s:b}", "session_id", x->id, "closed", 1);
	ws_sess_put(s, x);
	return 0;
}

/* The result of a run cancelled before its cell started. */
json_t *ws_cancelled_result(const struct sess *x)
{
	return json_pack("{s:s, s:s, s:n, s:s, s:i, s:i, s:{s:[], s:[]}, s:[], "
			 "s:{s:s, s:s, s:s}, s:{}, s:[], s:{s:b, s:[], s:s}}",
			 "run_id", x->run_id, "session_id", x->id,
			 "execution_count", "status", "cancelled", "exit_code",
			 1, "duration_ms", 0, "logs", "stdout", "stderr",
			 "results", "error", "name", "Cancelled", "value",
			 "the request was cancelled while it waited for the "
			 "session's running cell",
			 "traceback", "", "truncated", "artifacts", "policy",
			 "denied", 0, "denials", "audit_ref", x->run_id);
}

/* Waits for x's turn (FIFO, behind its running cell and the runs queued
 * before); then x is busy with cancel as its cell's. 0; 1: cancelled
 * while waiting; -1: x was closed meanwhile (err says why). */
int ws_take_turn(struct ws_server *s, struct sess *x, struct ws_cancel *cancel,
		 struct ws_error *err)
{
	struct ws_waiter w = { NULL }, **pp;
	int rc = 0;

	pthread_mutex_lock(&s->lock);
	for (pp = &x->wq; *pp; pp = &(*pp)->next)
		;
	*pp = &w;
	while (!x->gone && !atomic_load(&cancel->fired) &&
	       (x->busy || x->wq != &w)) {
		struct timespec ts;
		ws_time_in(&ts, CLOCK_MONOTONIC, 50); /* sees a cancel */
		pthread_cond_timedwait(&x->turn, &s->lock, &ts);
	}
	for (pp = &x->wq; *pp != &w; pp = &(*pp)->next)
		;
	*pp = w.next;
	if (x->gone) {
		const char *why = grave_of(s, x->id);
		rc = ws_fail(err, WS_E_NO_SESSION, "session '%s' %s", x->id,
			     why ? why : "was closed");
	} else if (atomic_load(&cancel->fired)) {
		rc = 1;
	} else {
		x->busy = true;
		x->running = cancel;
	}
	pthread_cond_broadcast(&x->turn);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* x's cell is over: the next run may go; a session whose interpreter
 * ended is closed. */
void ws_end_turn(struct ws_server *s, struct sess *x, json_t *res)
{
	pthread_mutex_lock(&s->lock);
	x->busy = false;
	x->running = NULL;
	x->shown_count = x->count;
	x->shown_last_ms = x->last_ms;
	if (x->dead && !x->gone && !x->oneshot)
		unlink_sess(s, x,
			    "ended: its interpreter exited or was ended "
			    "(the result of its last cell says why)");
	if (x->gone && res && !x->oneshot)
		json_object_set_new(res, "session_closed", json_true());
	pthread_cond_broadcast(&x->turn);
	pthread_mutex_unlock(&s->lock);
}

static int m_run(struct ws_server *s, json_t *p, ws_stream_fn fn, void *arg,
		 struct ws_cancel *cancel, json_t **res, struct ws_error *err)
{
	json_t *code = json_object_get(p, "code"), *stream;
	const char *lang = NULL;
	struct sess *x = NULL;
	double timeout = 0;
	int rc;

	if (ws_only_keys(p, err, "code", "language", "session_id", "timeout_s",
			 "stream", "profile", "policy", "env", "memory_mb",
			 "context_id", NULL) < 0)
		return -1;
	if (!json_is_string(code))
		return ws_fail(err, WS_E_PARAMS,
			       "params.code: required, a string of code");
	stream = json_object_get(p, "stream");
	if (stream && !json_is_boolean(stream))
		return ws_fail(err, WS_E_PARAMS,
			       "params.stream: must be a boolean");
	if (ws_get_str(p, "language", &lang, err) < 0 ||
	    ws_get_num(p, "timeout_s", &timeout, err) < 0)
		return -1;
	if (lang)
		lang = ws_lang_canon(lang);
	if (lang && !valid_lang(lang))
		return ws_fail(err, WS_E_PARAMS,
			       "params.language: '%s' is not one of python, "
			       "node (js), sh (bash)",
			       lang);
	if (!json_is_true(stream))
		fn = NULL;
	if (json_object_get(p, "session_id") &&
	    !json_is_null(json_object_get(p, "session_id"))) {
		x = ws_find_sess(s, p, true, err);
		if (!x)
			return -1;
		rc = ws_take_turn(s, x, cancel, err);
		if (rc == 1)
			*res = ws_cancelled_result(x);
		if (rc) {
			ws_sess_put(s, x);
			return rc < 0 ? -1 : 0;
		}
		pthread_mutex_lock(&s->lock);
		bool hub = ws_ctx_wanted(x, p, lang);
		pthread_mutex_unlock(&s->lock);
		if (hub) {
			/* another language, a context, env: the hub's */
			rc = ws_ctx_run(s, x, p, fn, arg, cancel, res, err);
		} else {
			struct cell_limits cl = ws_cell_limits_of(
				s, timeout > 0 ? timeout : x->timeout_s);
			rc = ws_run_cell(s, x, json_string_value(code),
					 json_string_length(code), &cl, fn, arg,
					 cancel->fd, false, res, err);
		}
		ws_end_turn(s, x, rc ? NULL : *res);
		ws_sess_put(s, x);
		return rc;
	}
	/* One-shot: a fresh session for this code alone, busy from the
	 * start (nobody else can find it). */
	if (json_object_get(p, "context_id") &&
	    !json_is_null(json_object_get(p, "context_id")))
		return ws_fail(err, WS_E_PARAMS,
			       "params.context_id: contexts are a session's; "
			       "give its session_id");
	json_t *cp = json_deep_copy(p);
	json_object_del(cp, "code");
	json_object_del(cp, "stream");
	json_object_del(cp, "session_id");
	rc = sess_start(s, cp, cancel, &x, err);
	json_decref(cp);
	if (rc < 0)
		return -1;
	struct cell_limits cl = ws_cell_limits_of(s, x->timeout_s);
	rc = ws_run_cell(s, x, json_string_value(code),
			 json_string_length(code), &cl, fn, arg, cancel->fd,
			 true, res, err);
	/* The answer need not wait for the end: EOF lets the driver finish,
	 * the worker records the run's end and exits by itself, and expire()
	 * reaps it (or stops it, CLOSE_MS on) and removes the workdir. */
	ws_close_fd(&x->cells);
	x->last_ms = ws_mono_ms();
	pthread_mutex_lock(&s->lock);
	x->retired = true;
	pthread_mutex_unlock(&s->lock);
	ws_end_turn(s, x, NULL);
	ws_sess_put(s, x);
	return rc;
}

/* ------------------------------------------------------------------ */
/* cancels                                                             */

struct ws_cancel *ws_cancel_new(void)
{
	struct ws_cancel *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->fd < 0) {
		free(c);
		return NULL;
	}
	atomic_init(&c->fired, false);
	return c;
}

void ws_cancel_fire(struct ws_cancel *c)
{
	uint64_t one = 1;

	if (!c || atomic_exchange(&c->fired, true))
		return;
	/* cannot fail: the counter is far from its limit */
	ssize_t w = write(c->fd, &one, sizeof(one));
	(void)w;
}

void ws_cancel_free(struct ws_cancel *c)
{
	if (!c)
		return;
	close(c->fd);
	free(c);
}

/* ------------------------------------------------------------------ */
/* the server                                                          */

int ws_server_new(const struct ws_config *cfg, struct ws_server **out)
{
	struct ws_server *s = calloc(1, sizeof(*s));
	char msg[512];

	*out = NULL;
	if (!s)
		return -ENOMEM;
	if (cfg)
		s->cfg = *cfg;
	if (!s->cfg.profile && !s->cfg.policy)
		s->cfg.profile = "default";
	/* what SIGKILLed wards (servers among them) left in /tmp */
	ward_sweep_workdirs();
	if (s->cfg.cell_timeout_s <= 0)
		s->cfg.cell_timeout_s = 30;
	if (s->cfg.max_timeout_s > 0 &&
	    s->cfg.cell_timeout_s > s->cfg.max_timeout_s)
		s->cfg.cell_timeout_s = s->cfg.max_timeout_s; /* the default */
	if (s->cfg.idle_s <= 0)
		s->cfg.idle_s = 600;
	if (s->cfg.max_life_s <= 0)
		s->cfg.max_life_s = 3600;
	if (s->cfg.max_sessions <= 0)
		s->cfg.max_sessions = 16;
	s->drop = geteuid() == 0;
	int rc = audit_default_path(s->cfg.db, s->db, sizeof(s->db));
	if (!rc)
		rc = audit_open(s->db, false, &s->au, msg, sizeof(msg));
	if (rc < 0) {
		free(s);
		return rc;
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->ask_lock, NULL);
	pthread_cond_init(&s->spawn_cond, NULL);
	pthread_cond_init(&s->spawn_done, NULL);
	rc = -pthread_create(&s->spawner, NULL, spawner_main, s);
	if (rc < 0) {
		audit_close(s->au);
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

/* Callers are done (no ws_call runs): every session is closed, all at
 * once. */
void ws_server_free(struct ws_server *s)
{
	struct sess *x, *next, *all = NULL;

	if (!s)
		return;
	ws_pool_free(s); /* its sessions closed as never used */
	pthread_mutex_lock(&s->lock);
	while ((x = s->list)) {
		x->refs++;
		if (!x->retired)
			debug("session %s (run %s) closed: the server ends",
			      x->id, x->run_id);
		unlink_sess(s, x, NULL);
		x->reap_next = all;
		all = x;
	}
	pthread_mutex_unlock(&s->lock);
	/* EOF to every driver first, so that they all end at once */
	for (x = all; x; x = x->reap_next) {
		pthread_mutex_lock(&x->send_lock);
		ws_close_fd(&x->cells);
		pthread_mutex_unlock(&x->send_lock);
	}
	for (x = all; x; x = next) {
		next = x->reap_next;
		ws_sess_put(s, x);
	}
	/* background commands' threads hold their sessions: they see them
	 * gone, record their commands as ended with them, and go */
	pthread_mutex_lock(&s->lock);
	while (s->bg_threads > 0) {
		pthread_mutex_unlock(&s->lock);
		usleep(10000);
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	ws_pzyg_free(s, s->zyg_end); /* its forks are closed by now */
	pthread_mutex_lock(&s->lock);
	s->spawn_stop = true;
	pthread_cond_signal(&s->spawn_cond);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->spawner, NULL);
	audit_close(s->au);
	pthread_cond_destroy(&s->spawn_cond);
	pthread_cond_destroy(&s->spawn_done);
	pthread_mutex_destroy(&s->lock);
	ws_ask_free(s);
	pthread_mutex_destroy(&s->ask_lock);
	free(s);
}

const char *ws_server_db(const struct ws_server *s)
{
	return s->db;
}

struct audit *ws_server_audit(const struct ws_server *s)
{
	return s->au;
}

void ws_server_tick(struct ws_server *s)
{
	expire(s);
}

static int dispatch(struct ws_server *s, const char *method, json_t *p,
		    ws_stream_fn fn, void *fn_arg, struct ws_cancel *cancel,
		    json_t **result, struct ws_error *err)
{
	int rc;

	if (!method)
		return ws_fail(err, WS_E_INVALID, "method: required");
	if (!strcmp(method, "session.create"))
		return m_create(s, p, result, err);
	if (!strcmp(method, "session.list"))
		return m_list(s, p, result, err);
	if (!strcmp(method, "session.update"))
		return m_update(s, p, result, err);
	if (!strcmp(method, "session.close"))
		return m_close(s, p, result, err);
	if (!strcmp(method, "run"))
		return m_run(s, p, fn, fn_arg, cancel, result, err);
	rc = ws_files_call(s, method, p, result, err);
	if (rc <= 0)
		return rc;
	rc = ws_ctx_call(s, method, p, fn, fn_arg, cancel, result, err);
	if (rc <= 0)
		return rc;
	rc = ws_ask_call(s, method, p, result, err);
	if (rc <= 0)
		return rc;
	return ws_fail(err, WS_E_METHOD,
		       "unknown method '%s'; methods: session.create, "
		       "session.list, session.update, session.close, run, "
		       "files.write, files.read, files.list, files.stat, "
		       "files.mkdir, files.remove, files.rename, "
		       "context.create, context.list, context.remove, "
		       "context.restart, command.run, command.wait, "
		       "command.kill, command.list, ask.list, ask.answer",
		       method);
}

int ws_call_c(struct ws_server *s, const char *method, json_t *params,
	      ws_stream_fn fn, void *fn_arg, struct ws_cancel *cancel,
	      json_t **result, struct ws_error *err)
{
	json_t *p = params ? params : json_object();
	/* a run (and a command) always has a cancel: session.close fires it */
	struct ws_cancel *own = NULL;
	int rc;

	*result = NULL;
	err->code = 0;
	err->message[0] = '\0';
	if (!json_is_object(p)) {
		rc = ws_fail(err, WS_E_PARAMS, "params: must be an object");
		goto out;
	}
	expire(s);
	if (!cancel && method &&
	    (!strcmp(method, "run") || !strcmp(method, "command.run") ||
	     !strcmp(method, "command.wait")) &&
	    !(cancel = own = ws_cancel_new())) {
		rc = ws_fail(err, WS_E_INTERNAL, "out of memory");
		goto out;
	}
	rc = dispatch(s, method, p, fn, fn_arg, cancel, result, err);
out:
	ws_cancel_free(own);
	if (!params)
		json_decref(p);
	if (rc == 0 && !*result)
		rc = ws_fail(err, WS_E_INTERNAL, "out of memory");
	return rc;
}

int ws_call(struct ws_server *s, const char *method, json_t *params,
	    ws_stream_fn fn, void *fn_arg, json_t **result,
	    struct ws_error *err)
{
	return ws_call_c(s, method, params, fn, fn_arg, NULL, result, err);
}
