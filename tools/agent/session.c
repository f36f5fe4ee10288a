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
 * with the cell. One caller thread; the sessions run concurrently in
 * their own processes.
 */
#include "tools/agent/session.h"
#include "tools/agent/session-int.h"
#include "tools/agent/session-server.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
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

static const char b64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Strict: only the alphabet, padding at the end. Returns -EINVAL. */
int ws_base64_decode(const char *s, size_t n, unsigned char **out,
		     size_t *len)
{
	unsigned char *p = malloc(n / 4 * 3 + 3);
	size_t o = 0;
	unsigned v = 0;
	int bits = 0, pad = 0;

	if (!p)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *c = s[i] ? strchr(b64, s[i]) : NULL;
		if (s[i] == '=') {
			pad++;
			continue;
		}
		if (!c || pad) {
			free(p);
			return -EINVAL;
		}
		v = v << 6 | (unsigned)(c - b64);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			p[o++] = (unsigned char)(v >> bits);
		}
	}
	if (pad > 2 || (n % 4 && pad)) {
		free(p);
		return -EINVAL;
	}
	*out = p;
	*len = o;
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

static int open_beneath(struct sess *x, const char *path, int flags,
			mode_t mode)
{
	return wf_open_beneath(ws_wd(x), path, flags, mode);
}

/* A path a request names: relative, inside the workdir, no "..". */
static int check_path(json_t *v, const char **out, struct ws_error *err)
{
	const char *p = json_string_value(v);

	if (!p || !*p || json_string_length(v) != strlen(p))
		return ws_fail(err, WS_E_PARAMS,
			       "params.path: give a relative path (a non-empty "
			       "string without NUL bytes)");
	if (p[0] == '/')
		return ws_fail(err, WS_E_FILE,
			       "%s: absolute paths are refused; give a path "
			       "relative to the session's workdir",
			       p);
	if (strlen(p) >= PATH_MAX)
		return ws_fail(err, WS_E_FILE, "path too long");
	for (const char *c = p; *c;) {
		size_t l = strcspn(c, "/");
		if ((l == 2 && !strncmp(c, "..", 2)) || l == 0)
			return ws_fail(
				err, WS_E_FILE,
				"%s: '..' and empty components are refused; "
				"paths stay inside the session's workdir",
				p);
		c += l;
		if (*c == '/')
			c++;
	}
	*out = p;
	return 0;
}

/* {path, size, sha256} of one file of the workdir, or NULL. */
static json_t *file_entry(struct sess *x, const char *path)
{
	char hex[WARD_SHA256_HEX_LEN + 1];
	long long size;

	if (wf_hash_file(ws_wd(x), path, hex, &size) < 0)
		return NULL;
	return json_pack("{s:o, s:I, s:s}", "path",
			 ws_json_text(path, strlen(path)), "size",
			 (json_int_t)size, "sha256", hex);
}

/* ------------------------------------------------------------------ */
/* sessions: start and end                                             */

static void parse_end(struct sess *x, const char *line)
{
	json_t *j = json_loads(line, 0, NULL), *end = json_object_get(j, "end");
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
	ws_close_fd(&x->cells);
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
	free(x);
}

static void unlink_sess(struct ws_server *s, struct sess *x)
{
	for (struct sess **pp = &s->list; *pp; pp = &(*pp)->next)
		if (*pp == x) {
			*pp = x->next;
			s->n--;
			return;
		}
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
						  int out, int err)
{
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

	prctl(PR_SET_PDEATHSIG, SIGTERM); /* the server gone: end the run */
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

/* Waits for the worker's first line: {"run_id"} or {"error"}. */
static int await_start(struct sess *x, struct ws_error *err)
{
	long long end = ws_mono_ms() + START_MS;
	char *nl;

	for (;;) {
		struct pollfd q = { x->ctl, POLLIN, 0 };
		long long left = end - ws_mono_ms();
		if (left <= 0)
			return ws_fail(err, WS_E_INTERNAL,
				       "the session's supervisor did not start "
				       "within %d s",
				       START_MS / 1000);
		if (poll(&q, 1, (int)left) <= 0)
			continue;
		ssize_t n = read(x->ctl, x->ctlbuf + x->ctl_len,
				 sizeof(x->ctlbuf) - 1 - x->ctl_len);
		if (n <= 0)
			return ws_fail(err, WS_E_INTERNAL,
				       "the session's supervisor ended before "
				       "it started the interpreter");
		x->ctl_len += (size_t)n;
		x->ctlbuf[x->ctl_len] = '\0';
		if ((nl = strchr(x->ctlbuf, '\n')))
			break;
	}
	*nl = '\0';
	json_t *j = json_loads(x->ctlbuf, 0, NULL);
	const char *id = json_string_value(json_object_get(j, "run_id"));
	const char *e = json_string_value(json_object_get(j, "error"));
	int rc = 0;
	if (id && strlen(id) == AUDIT_RUN_ID_LEN)
		snprintf(x->run_id, sizeof(x->run_id), "%s", id);
	else
		rc = ws_fail(err,
			     e && !strncmp(e, "bad policy", 10) ? WS_E_PARAMS
								: WS_E_INTERNAL,
			     "%s", e ? e : "the session's supervisor failed");
	x->ctl_len -= (size_t)(nl + 1 - x->ctlbuf);
	memmove(x->ctlbuf, nl + 1, x->ctl_len + 1);
	json_decref(j);
	return rc;
}

static bool valid_lang(const char *l)
{
	return l &&
	       (!strcmp(l, "python") || !strcmp(l, "node") || !strcmp(l, "sh"));
}

/* Checks that obj has only the keys named (NULL-terminated). */
static int only_keys(json_t *obj, struct ws_error *err, ...)
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

static int get_str(json_t *p, const char *key, const char **out,
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

static int get_num(json_t *p, const char *key, double *out,
		   struct ws_error *err)
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

static int sess_start(struct ws_server *s, json_t *p, struct sess **out,
		      struct ws_error *err)
{
	const char *lang = "python", *profile = NULL, *policy = NULL;
	double timeout = s->cfg.cell_timeout_s, memory_mb = 0;
	json_t *env = json_object_get(p, "env");
	const char *k;
	json_t *v;

	if (get_str(p, "language", &lang, err) < 0 ||
	    get_str(p, "profile", &profile, err) < 0 ||
	    get_str(p, "policy", &policy, err) < 0 ||
	    get_num(p, "timeout_s", &timeout, err) < 0 ||
	    get_num(p, "memory_mb", &memory_mb, err) < 0)
		return -1;
	if (!lang)
		lang = "python";
	if (!valid_lang(lang))
		return ws_fail(err, WS_E_PARAMS,
			       "params.language: '%s' is not one of python, "
			       "node, sh",
			       lang);
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
	int open = 0;
	for (struct sess *o = s->list; o; o = o->next)
		open += !o->retired;
	if (open >= s->cfg.max_sessions)
		return ws_fail(err, WS_E_LIMIT,
			       "%d sessions are open, the most this server "
			       "allows; close one first (session.close)",
			       s->cfg.max_sessions);
	if (!profile && !policy) {
		profile = s->cfg.profile;
		policy = s->cfg.policy;
		if (profile && !strcmp(profile, "default") &&
		    strcmp(lang, "python"))
			profile =
				lang; /* as ward run: a profile per language */
	}

	struct sess *x = calloc(1, sizeof(*x));
	int ctl[2] = { -1, -1 }, cells[2] = { -1, -1 }, res[2] = { -1, -1 },
	    o1[2] = { -1, -1 }, o2[2] = { -1, -1 };
	if (!x)
		return ws_fail(err, WS_E_INTERNAL, "out of memory");
	x->ctl = x->cells = x->res = x->out[1] = x->out[2] = x->out[0] = -1;
	x->wd_fd = -1;
	x->wd_lock = -1;
	x->worker = -1;
	snprintf(x->lang, sizeof(x->lang), "%s", lang);
	x->timeout_s = timeout;
	x->workdir = make_workdir(s->drop);
	if (!x->workdir) {
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
	pid_t pid = fork();
	if (pid == 0)
		exec_worker(ctl[1], cells[1], res[1], o1[1], o2[1]);
	close(ctl[1]);
	close(cells[1]);
	close(res[1]);
	close(o1[1]);
	close(o2[1]);
	x->ctl = ctl[0];
	x->cells = cells[0];
	x->res = res[0];
	x->out[1] = o1[0];
	x->out[2] = o2[0];
	x->worker = pid;
	if (pid < 0) {
		sess_free(x);
		return ws_fail(err, WS_E_INTERNAL, "fork: %s", strerror(errno));
	}

	json_t *cfg = json_pack("{s:s, s:s, s:s, s:f}", "language", lang, "db",
				s->db, "workdir", x->workdir, "max_life_s",
				s->cfg.max_life_s);
	if (profile)
		json_object_set_new(cfg, "profile", json_string(profile));
	if (policy)
		json_object_set_new(cfg, "policy", json_string(policy));
	if (memory_mb > 0)
		json_object_set_new(cfg, "memory_mb",
				    json_integer((json_int_t)memory_mb));
	if (env && json_is_object(env))
		json_object_set(cfg, "env", env);
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
	if (await_start(x, err) < 0) {
		sess_free(x);
		return -1;
	}
	hold_workdir(x);
	ws_random_hex(x->id + 2, 8);
	memcpy(x->id, "s-", 2);
	x->created_ns = ws_realtime_ns();
	x->created_ms = x->last_ms = ws_mono_ms();
	x->pending_errors = json_array();
	x->next = s->list;
	s->list = x;
	s->n++;
	*out = x;
	return 0;
}

/* ------------------------------------------------------------------ */
/* methods                                                             */

static struct sess *find_sess(struct ws_server *s, json_t *p, bool need,
			      struct ws_error *err)
{
	json_t *v = json_object_get(p, "session_id");
	const char *id = json_string_value(v);

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
	for (struct sess *x = s->list; x; x = x->next)
		if (!x->retired && !strcmp(x->id, id))
			return x;
	ws_fail(err, WS_E_NO_SESSION,
		"no session '%s' (it was closed, expired, or never existed; "
		"session.list shows the open ones)",
		id);
	return NULL;
}

static void close_sess(struct ws_server *s, struct sess *x)
{
	unlink_sess(s, x);
	/* the worker sealed the run when it ended; the cells and artifacts
	 * written here get their own seal, bound to it (audit/chain.c) */
	ws_sess_stop(x);
	if (x->run_id[0] && s->au)
		audit_seal_cells(s->au, x->run_id);
	sess_free(x);
}

static bool stale(const struct ws_server *s, const struct sess *x,
		  long long now)
{
	return x->dead || now - x->last_ms > s->cfg.idle_s * 1000 ||
	       now - x->created_ms > s->cfg.max_life_s * 1000;
}

/* Closes sessions that were idle too long, lived too long, or ended. */
static void expire(struct ws_server *s)
{
	long long now = ws_mono_ms();
	struct sess *x = s->list, *next;

	ws_pump_idle(s);
	for (; x; x = next) {
		next = x->next;
		if (x->retired ? reap(x, 0) || now - x->last_ms > CLOSE_MS
			       : stale(s, x, now))
			close_sess(s, x);
	}
}

static int m_create(struct ws_server *s, json_t *p, json_t **res,
		    struct ws_error *err)
{
	struct sess *x;

	if (only_keys(p, err, "language", "profile", "policy", "env",
		      "timeout_s", "memory_mb", NULL) < 0 ||
	    sess_start(s, p, &x, err) < 0)
		return -1;
	*res = json_pack("{s:s, s:s, s:s}", "session_id", x->id, "language",
			 x->lang, "run_id", x->run_id);
	return 0;
}

static int m_list(struct ws_server *s, json_t *p, json_t **res,
		  struct ws_error *err)
{
	json_t *arr = json_array();
	long long now_ms = ws_mono_ms(), now_ns = ws_realtime_ns();

	if (only_keys(p, err, NULL) < 0) {
		json_decref(arr);
		return -1;
	}
	for (struct sess *x = s->list; x; x = x->next) {
		if (x->retired)
			continue;
		double last =
			(double)(now_ns - (now_ms - x->last_ms) * 1000000) /
			1e9;
		json_array_append_new(
			arr, json_pack("{s:s, s:s, s:s, s:I, s:f, s:f}",
				       "session_id", x->id, "language", x->lang,
				       "run_id", x->run_id, "execution_count",
				       (json_int_t)x->count, "created",
				       (double)x->created_ns / 1e9, "last_used",
				       last));
	}
	*res = json_pack("{s:o}", "sessions", arr);
	return 0;
}

static int m_close(struct ws_server *s, json_t *p, json_t **res,
		   struct ws_error *err)
{
	struct sess *x;

	if (only_keys(p, err, "session_id", NULL) < 0)
		return -1;
	x = find_sess(s, p, true, err);
	if (!x)
		return -1;
	*res = json_pack("{s:s, s:b}", "session_id", x->id, "closed", 1);
	close_sess(s, x);
	return 0;
}

static int m_run(struct ws_server *s, json_t *p, ws_stream_fn fn, void *arg,
		 json_t **res, struct ws_error *err)
{
	json_t *code = json_object_get(p, "code"), *stream;
	const char *lang = NULL;
	struct sess *x = NULL;
	double timeout = 0;
	int rc;

	if (only_keys(p, err, "code", "language", "session_id", "timeout_s",
		      "stream", "profile", "policy", "env", "memory_mb",
		      NULL) < 0)
		return -1;
	if (!json_is_string(code))
		return ws_fail(err, WS_E_PARAMS,
			       "params.code: required, a string of code");
	stream = json_object_get(p, "stream");
	if (stream && !json_is_boolean(stream))
		return ws_fail(err, WS_E_PARAMS,
			       "params.stream: must be a boolean");
	if (get_str(p, "language", &lang, err) < 0 ||
	    get_num(p, "timeout_s", &timeout, err) < 0)
		return -1;
	if (lang && !valid_lang(lang))
		return ws_fail(err, WS_E_PARAMS,
			       "params.language: '%s' is not one of python, "
			       "node, sh",
			       lang);
	if (!json_is_true(stream))
		fn = NULL;
	if (json_object_get(p, "session_id") &&
	    !json_is_null(json_object_get(p, "session_id"))) {
		x = find_sess(s, p, true, err);
		if (!x)
			return -1;
		if (lang && strcmp(lang, x->lang))
			return ws_fail(
				err, WS_E_PARAMS,
				"params.language: session %s runs %s, not "
				"%s",
				x->id, x->lang, lang);
		struct cell_limits cl = ws_cell_limits_of(
			s, timeout > 0 ? timeout : x->timeout_s);
		rc = ws_run_cell(s, x, json_string_value(code),
				 json_string_length(code), &cl, fn, arg, false,
				 res, err);
		if (x->dead)
			close_sess(s, x);
		return rc;
	}
	/* One-shot: a fresh session for this code alone. */
	json_t *cp = json_deep_copy(p);
	json_object_del(cp, "code");
	json_object_del(cp, "stream");
	json_object_del(cp, "session_id");
	rc = sess_start(s, cp, &x, err);
	json_decref(cp);
	if (rc < 0)
		return -1;
	struct cell_limits cl = ws_cell_limits_of(s, x->timeout_s);
	rc = ws_run_cell(s, x, json_string_value(code),
			 json_string_length(code), &cl, fn, arg, true, res,
			 err);
	/* The answer need not wait for the end: EOF lets the driver finish,
	 * the worker records the run's end and exits by itself, and expire()
	 * reaps it (or stops it, CLOSE_MS on) and removes the workdir. */
	ws_close_fd(&x->cells);
	x->retired = true;
	x->last_ms = ws_mono_ms();
	return rc;
}

static int m_write(struct ws_server *s, json_t *p, json_t **res,
		   struct ws_error *err)
{
	const char *path, *text = NULL, *b = NULL;
	unsigned char *data = NULL;
	size_t len = 0;
	struct sess *x;

	if (only_keys(p, err, "session_id", "path", "text", "base64", NULL) <
		    0 ||
	    !(x = find_sess(s, p, true, err)) ||
	    check_path(json_object_get(p, "path"), &path, err) < 0 ||
	    get_str(p, "text", &text, err) < 0 ||
	    get_str(p, "base64", &b, err) < 0)
		return -1;
	if (!text == !b)
		return ws_fail(err, WS_E_PARAMS,
			       "params: give exactly one of text and base64");
	if (text) {
		len = json_string_length(json_object_get(p, "text"));
		data = malloc(len + 1);
		if (data)
			memcpy(data, text, len);
	} else if (ws_base64_decode(b, strlen(b), &data, &len) < 0) {
		return ws_fail(err, WS_E_PARAMS,
			       "params.base64: not valid base64 (RFC 4648, "
			       "with padding)");
	}
	if (!data)
		return ws_fail(err, WS_E_INTERNAL, "out of memory");
	if (len > MAX_READ) {
		free(data);
		return ws_fail(
			err, WS_E_TOO_LARGE,
			"%zu bytes: files of at most %d MiB can be written",
			len, MAX_READ >> 20);
	}
	int fd = open_beneath(x, path,
			      O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
	int rc = fd < 0 ? fd : ws_write_all(fd, data, len);
	if (fd >= 0 && !rc && s->drop &&
	    fchown(fd, WS_SANDBOX_UID, WS_SANDBOX_GID) < 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	free(data);
	if (rc < 0)
		return ws_fail(
			err, WS_E_FILE,
			"%s: cannot write it in the session's workdir: %s%s",
			path, strerror(-rc),
			rc == -EXDEV || rc == -ELOOP
				? " (a symlink leads out of the workdir)"
			: rc == -ENOENT ? " (its directory does not exist)"
					: "");
	*res = file_entry(x, path);
	return *res ? 0
		    : ws_fail(err, WS_E_FILE, "%s: written but unreadable",
			      path);
}

static int m_read(struct ws_server *s, json_t *p, json_t **res,
		  struct ws_error *err)
{
	const char *path;
	struct sess *x;
	struct stat st;

	if (only_keys(p, err, "session_id", "path", NULL) < 0 ||
	    !(x = find_sess(s, p, true, err)) ||
	    check_path(json_object_get(p, "path"), &path, err) < 0)
		return -1;
	int fd = open_beneath(x, path, O_RDONLY | O_NONBLOCK, 0);
	if (fd < 0)
		return ws_fail(
			err, WS_E_FILE,
			"%s: cannot read it in the session's workdir: %s%s",
			path, strerror(-fd),
			fd == -EXDEV ? " (a symlink leads out of the workdir)"
				     : "");
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return ws_fail(err, WS_E_FILE, "%s: not a regular file", path);
	}
	if (st.st_size > MAX_READ) {
		close(fd);
		return ws_fail(err, WS_E_TOO_LARGE,
			       "%s: %lld bytes; files of at most %d MiB can be "
			       "read",
			       path, (long long)st.st_size, MAX_READ >> 20);
	}
	size_t cap = (size_t)st.st_size + 1, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
		if (n == cap)
			break; /* grew meanwhile: keep what was there */
	}
	close(fd);
	if (!buf)
		return ws_fail(err, WS_E_INTERNAL, "out of memory");
	char hex[WARD_SHA256_HEX_LEN + 1];
	ward_sha256_hex(buf, n, hex);
	json_t *o = json_pack("{s:s, s:I, s:s, s:o}", "path", path, "size",
			      (json_int_t)n, "sha256", hex, "base64",
			      view_json_base64(buf, n));
	json_t *t = json_stringn(buf, n);
	if (t)
		json_object_set_new(o, "text", t);
	free(buf);
	*res = o;
	return 0;
}

static int m_files(struct ws_server *s, json_t *p, json_t **res,
		   struct ws_error *err)
{
	struct sess *x;
	struct wf_snap sn;
	json_t *arr = json_array();

	(void)s;
	if (only_keys(p, err, "session_id", NULL) < 0 ||
	    !(x = find_sess(s, p, true, err))) {
		json_decref(arr);
		return -1;
	}
	wf_snap_take(ws_wd(x), &sn);
	for (size_t i = 0; i < sn.n; i++) {
		json_t *e = sn.f[i].path ? file_entry(x, sn.f[i].path) : NULL;
		if (e)
			json_array_append_new(arr, e);
	}
	wf_snap_free(&sn);
	*res = json_pack("{s:o}", "files", arr);
	return 0;
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
	if (pipe2(s->cancel, O_CLOEXEC | O_NONBLOCK) < 0) {
		free(s);
		return -errno;
	}
	int rc = audit_default_path(s->cfg.db, s->db, sizeof(s->db));
	if (!rc)
		rc = audit_open(s->db, false, &s->au, msg, sizeof(msg));
	if (rc < 0) {
		close(s->cancel[0]);
		close(s->cancel[1]);
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

void ws_server_free(struct ws_server *s)
{
	if (!s)
		return;
	/* EOF to every driver first, so that they all end at once */
	for (struct sess *x = s->list; x; x = x->next)
		ws_close_fd(&x->cells);
	while (s->list)
		close_sess(s, s->list);
	audit_close(s->au);
	close(s->cancel[0]);
	close(s->cancel[1]);
	free(s);
}

void ws_server_cancel(struct ws_server *s)
{
	char b = 'c';
	ssize_t w = write(s->cancel[1], &b, 1);

	(void)w; /* full: a cancel is pending already */
}

void ws_server_cancel_clear(struct ws_server *s)
{
	char buf[64];

	while (read(s->cancel[0], buf, sizeof(buf)) > 0)
		;
}

const char *ws_server_db(const struct ws_server *s)
{
	return s->db;
}

void ws_server_tick(struct ws_server *s)
{
	expire(s);
}

int ws_call(struct ws_server *s, const char *method, json_t *params,
	    ws_stream_fn fn, void *fn_arg, json_t **result,
	    struct ws_error *err)
{
	json_t *p = params ? params : json_object();
	int rc;

	*result = NULL;
	err->code = 0;
	err->message[0] = '\0';
	if (!json_is_object(p)) {
		rc = ws_fail(err, WS_E_PARAMS, "params: must be an object");
		goto out;
	}
	expire(s);
	if (!method)
		rc = ws_fail(err, WS_E_INVALID, "method: required");
	else if (!strcmp(method, "session.create"))
		rc = m_create(s, p, result, err);
	else if (!strcmp(method, "session.list"))
		rc = m_list(s, p, result, err);
	else if (!strcmp(method, "session.close"))
		rc = m_close(s, p, result, err);
	else if (!strcmp(method, "run"))
		rc = m_run(s, p, fn, fn_arg, result, err);
	else if (!strcmp(method, "files.write"))
		rc = m_write(s, p, result, err);
	else if (!strcmp(method, "files.read"))
		rc = m_read(s, p, result, err);
	else if (!strcmp(method, "files.list"))
		rc = m_files(s, p, result, err);
	else
		rc = ws_fail(err, WS_E_METHOD,
			     "unknown method '%s'; methods: session.create, "
			     "session.list, session.close, run, files.write, "
			     "files.read, files.list",
			     method);
out:
	if (!params)
		json_decref(p);
	if (rc == 0 && !*result)
		rc = ws_fail(err, WS_E_INTERNAL, "out of memory");
	return rc;
}
