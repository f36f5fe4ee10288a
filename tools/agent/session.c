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
 * A cell is framed with a fresh random nonce; the driver echoes it. A
 * frame that does not parse, names another cell, or answers a cell a
 * second time is rejected and reported (channel_errors) and recorded
 * with the cell. One caller thread; the sessions run concurrently in
 * their own processes.
 */
#include "tools/agent/session.h"
#include "tools/agent/session-int.h"

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

enum {
	OUT_HEAD = 32 << 10, /* bytes of each stream returned from the start */
	OUT_TAIL = 32 << 10, /* ... and from the end */
	GRACE_MS = 2000,     /* after the timeout, for the interrupt to work */
	CLOSE_MS = 3000,     /* for a closed session's worker to finish */
	START_MS = 30000,    /* for a worker to record its run */
	MAX_READ = 64 << 20, /* files.read, files.write */
	MAX_FRAME = 256 << 20, /* a result frame (PNGs are in it) */
};

struct sess {
	struct sess *next;
	char id[24];
	char lang[8];
	char run_id[AUDIT_RUN_ID_LEN + 1];
	char *workdir;
	/* The workdir as the session sees it, held open: the worker mounts
	 * its quota in a mount namespace of its own (session-worker.c), so
	 * the server reaches the files through /proc/WORKER/root, and this fd
	 * keeps them reachable after the worker is gone; view names it. */
	int wd_fd;
	int wd_lock; /* its claim (ward_workdir_lock): a sweep spares it */
	char view[48];
	pid_t worker;
	int ctl, cells, res, out[3];
	long long created_ns, created_ms, last_ms;
	long long count;
	double timeout_s;
	char last_nonce[40];
	char ctlbuf[4096];
	size_t ctl_len;
	char *resbuf;
	size_t res_len, res_cap;
	bool res_skip;		/* inside a frame that was too long */
	json_t *pending_errors; /* channel errors seen between cells */
	bool dead;
	char end_status[16];
	char end_cause[300];
	bool end_known; /* the worker said how the interpreter ended: */
	int end_exit;	/* its exit status, 128+N for signal N */
	int end_signal;
	pid_t code_pid; /* the interpreter as this server sees it (0: not
			 * found yet) */
	bool retired;	/* a one-shot's: its driver has EOF and its worker
			 * ends on its own (its record too); expire() reaps
			 * it. Not listed, not found, not counted. */
};

struct ws_server {
	struct ws_config cfg;
	char db[PATH_MAX];
	struct audit *au;
	struct sess *list;
	int n;
	bool drop;
	int cancel[2]; /* ws_server_cancel: a byte interrupts the cell */
};

/* ------------------------------------------------------------------ */
/* small helpers                                                       */

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static long long realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((format(printf, 3, 4))) static int
fail(struct ws_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return -1;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int random_hex(char *out, size_t bytes)
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
static int base64_decode(const char *s, size_t n, unsigned char **out,
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

static int write_all(int fd, const void *p, size_t n)
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
static const char *wd(const struct sess *x)
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
	return wf_open_beneath(wd(x), path, flags, mode);
}

/* A path a request names: relative, inside the workdir, no "..". */
static int check_path(json_t *v, const char **out, struct ws_error *err)
{
	const char *p = json_string_value(v);

	if (!p || !*p || json_string_length(v) != strlen(p))
		return fail(err, WS_E_PARAMS,
			    "params.path: give a relative path (a non-empty "
			    "string without NUL bytes)");
	if (p[0] == '/')
		return fail(err, WS_E_FILE,
			    "%s: absolute paths are refused; give a path "
			    "relative to the session's workdir",
			    p);
	if (strlen(p) >= PATH_MAX)
		return fail(err, WS_E_FILE, "path too long");
	for (const char *c = p; *c;) {
		size_t l = strcspn(c, "/");
		if ((l == 2 && !strncmp(c, "..", 2)) || l == 0)
			return fail(
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

	if (wf_hash_file(wd(x), path, hex, &size) < 0)
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
static void read_ctl(struct sess *x)
{
	ssize_t n = read(x->ctl, x->ctlbuf + x->ctl_len,
			 sizeof(x->ctlbuf) - 1 - x->ctl_len);
	char *nl;

	if (n <= 0) {
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			return;
		close_fd(&x->ctl);
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
	long long end = mono_ms() + ms;

	while (x->worker > 0) {
		pid_t p = waitpid(x->worker, NULL, WNOHANG);
		if (p == x->worker || (p < 0 && errno == ECHILD)) {
			x->worker = -1;
			return true;
		}
		if (mono_ms() >= end)
			return false;
		if (x->ctl >= 0) {
			struct pollfd q = { x->ctl, POLLIN, 0 };
			if (poll(&q, 1, 10) > 0)
				read_ctl(x);
		} else {
			usleep(5000);
		}
	}
	return true;
}

/* Ends the session: EOF on the cell socket lets the driver finish (the
 * run ends "ok"); a worker that does not end in time is stopped with
 * SIGTERM (the run is recorded "aborted"), then SIGKILL. */
static void sess_stop(struct sess *x)
{
	close_fd(&x->cells);
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
	sess_stop(x);
	close_fd(&x->ctl);
	close_fd(&x->res);
	close_fd(&x->out[1]);
	close_fd(&x->out[2]);
	close_fd(&x->wd_fd);
	ward_rm_workdir(x->workdir); /* its lock too */
	close_fd(&x->wd_lock);
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
	long long end = mono_ms() + START_MS;
	char *nl;

	for (;;) {
		struct pollfd q = { x->ctl, POLLIN, 0 };
		long long left = end - mono_ms();
		if (left <= 0)
			return fail(err, WS_E_INTERNAL,
				    "the session's supervisor did not start "
				    "within %d s",
				    START_MS / 1000);
		if (poll(&q, 1, (int)left) <= 0)
			continue;
		ssize_t n = read(x->ctl, x->ctlbuf + x->ctl_len,
				 sizeof(x->ctlbuf) - 1 - x->ctl_len);
		if (n <= 0)
			return fail(err, WS_E_INTERNAL,
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
		rc = fail(err,
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
			return fail(err, WS_E_PARAMS,
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
		return fail(err, WS_E_PARAMS, "params.%s: must be a string",
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
		return fail(err, WS_E_PARAMS,
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
		return fail(err, WS_E_PARAMS,
			    "params.language: '%s' is not one of python, "
			    "node, sh",
			    lang);
	if (env && !json_is_null(env) && !json_is_object(env))
		return fail(err, WS_E_PARAMS,
			    "params.env: must be an object of strings");
	json_object_foreach(env, k, v)
	{
		if (!json_is_string(v) || !*k || strchr(k, '='))
			return fail(err, WS_E_PARAMS,
				    "params.env.%s: give a name without '=' "
				    "and a string value",
				    k);
	}
	int open = 0;
	for (struct sess *o = s->list; o; o = o->next)
		open += !o->retired;
	if (open >= s->cfg.max_sessions)
		return fail(err, WS_E_LIMIT,
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
		return fail(err, WS_E_INTERNAL, "out of memory");
	x->ctl = x->cells = x->res = x->out[1] = x->out[2] = x->out[0] = -1;
	x->wd_fd = -1;
	x->wd_lock = -1;
	x->worker = -1;
	snprintf(x->lang, sizeof(x->lang), "%s", lang);
	x->timeout_s = timeout;
	x->workdir = make_workdir(s->drop);
	if (!x->workdir) {
		free(x);
		return fail(err, WS_E_INTERNAL,
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
			close_fd(&ctl[i]);
			close_fd(&cells[i]);
			close_fd(&res[i]);
			close_fd(&o1[i]);
			close_fd(&o2[i]);
		}
		sess_free(x);
		return fail(err, WS_E_INTERNAL, "cannot make pipes: %s",
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
		return fail(err, WS_E_INTERNAL, "fork: %s", strerror(errno));
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
	int rc = line ? write_all(x->ctl, line, strlen(line)) : -ENOMEM;
	if (!rc)
		rc = write_all(x->ctl, "\n", 1);
	free(line);
	if (rc < 0) {
		sess_free(x);
		return fail(err, WS_E_INTERNAL,
			    "cannot configure the session's supervisor: %s",
			    strerror(-rc));
	}
	if (await_start(x, err) < 0) {
		sess_free(x);
		return -1;
	}
	hold_workdir(x);
	random_hex(x->id + 2, 8);
	memcpy(x->id, "s-", 2);
	x->created_ns = realtime_ns();
	x->created_ms = x->last_ms = mono_ms();
	x->pending_errors = json_array();
	x->next = s->list;
	s->list = x;
	s->n++;
	*out = x;
	return 0;
}

/* ------------------------------------------------------------------ */
/* cells                                                               */

struct capture {
	char head[OUT_HEAD];
	char tail[OUT_TAIL]; /* ring */
	size_t head_len, tail_pos;
	long long total;
};

static void cap_add(struct capture *c, const char *p, size_t n)
{
	c->total += (long long)n;
	while (n > 0 && c->head_len < OUT_HEAD) {
		c->head[c->head_len++] = *p++;
		n--;
	}
	for (size_t i = 0; i < n; i++) {
		c->tail[c->tail_pos % OUT_TAIL] = p[i];
		c->tail_pos++;
	}
}

/* The length of p's prefix that does not end inside a UTF-8 sequence
 * (streamed chunks are cut where the pipe was read, not at characters). */
static size_t utf8_whole(const char *p, size_t n)
{
	for (size_t back = 1; back <= 3 && back <= n; back++) {
		unsigned char c = (unsigned char)p[n - back];
		if ((c & 0xc0) == 0x80)
			continue; /* a continuation byte: look further back */
		size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
		return need > back ? n - back : n;
	}
	return n;
}

/* How many bytes at the start of a tail to leave out so that it does not
 * begin inside a character (the middle of the output was left out before
 * it): its leading continuation bytes, at most 3; 0 when there are more
 * (not UTF-8 anyway: nothing is left out). */
static size_t utf8_start(const char *p, size_t n)
{
	size_t i = 0;

	while (i < n && i < 3 && ((unsigned char)p[i] & 0xc0) == 0x80)
		i++;
	return i < n && ((unsigned char)p[i] & 0xc0) == 0x80 ? 0 : i;
}

/*
 * logs.stdout: the whole output as one string, or [head, tail] when it
 * was longer than both (cut between characters: valid UTF-8 stays valid);
 * *returned counts the bytes given back. Each part is text (ws_json_text);
 * exactly when some part is not valid UTF-8, *b64 is an array of the same
 * length with every part's bytes in base64 (logs.stdout_base64) in
 * *b64_out, else NULL.
 */
static json_t *cap_json(const struct capture *c, long long *returned,
			json_t **b64_out)
{
	json_t *arr = json_array();
	size_t tl = c->tail_pos < OUT_TAIL ? c->tail_pos : OUT_TAIL;
	char *tail = malloc(c->head_len + tl + 1);
	const char *part[2];
	size_t len[2], n = 0;
	bool exact = true;

	*b64_out = NULL;
	*returned = 0;
	if (!tail)
		return arr;
	for (size_t i = 0; i < tl; i++)
		tail[i] = c->tail[(c->tail_pos - tl + i) % OUT_TAIL];
	if (c->tail_pos <= OUT_TAIL) {
		/* nothing lost: head and tail are consecutive */
		memmove(tail + c->head_len, tail, tl);
		memcpy(tail, c->head, c->head_len);
		if (c->head_len + tl > 0) {
			part[n] = tail;
			len[n++] = c->head_len + tl;
		}
	} else {
		size_t skip = utf8_start(tail, tl);

		part[n] = c->head;
		len[n++] = utf8_whole(c->head, c->head_len);
		part[n] = tail + skip;
		len[n++] = tl - skip;
	}
	for (size_t i = 0; i < n; i++) {
		json_array_append_new(arr, ws_json_text(part[i], len[i]));
		exact = exact && ward_utf8_valid(part[i], len[i]);
		*returned += (long long)len[i];
	}
	if (!exact) {
		*b64_out = json_array();
		for (size_t i = 0; *b64_out && i < n; i++)
			json_array_append_new(
				*b64_out, view_json_base64(part[i], len[i]));
	}
	free(tail);
	return arr;
}

struct cell {
	struct sess *x;
	ws_stream_fn fn;
	void *fn_arg;
	struct capture out[3];
	char nonce[40];
	long long n;
	json_t *frame;	  /* the accepted result frame */
	json_t *errors;	  /* channel errors */
	char carry[3][4]; /* a character cut at the end of a chunk */
	size_t carry_len[3];
	int cancel_fd;	  /* the server's cancel pipe */
	bool cancelled;	  /* ws_server_cancel came while it ran */
	bool overdue;	  /* sh: interrupted at its timeout */
	long long int_ms; /* when it was last interrupted */
};

/* A cell's time limit: what was asked, and what the operator's cap
 * (ws_config.max_timeout_s) made of it. */
struct cell_limits {
	double timeout_s, asked_s;
	bool capped;
};

static struct cell_limits cell_limits_of(const struct ws_server *s,
					 double asked)
{
	struct cell_limits cl = { asked, asked, false };

	if (s->cfg.max_timeout_s > 0 && asked > s->cfg.max_timeout_s) {
		cl.timeout_s = s->cfg.max_timeout_s;
		cl.capped = true;
	}
	return cl;
}

static void stream_out(struct cell *c, int s, const char *p, size_t n)
{
	char buf[65536 + 4];
	size_t have = c->carry_len[s];

	if (!c->fn)
		return;
	memcpy(buf, c->carry[s], have);
	if (n)
		memcpy(buf + have, p, n);
	size_t whole = n ? utf8_whole(buf, have + n) : have + n;
	c->carry_len[s] = have + n - whole;
	memcpy(c->carry[s], buf + whole, c->carry_len[s]);
	if (whole)
		c->fn(c->fn_arg, s == 1 ? "stdout" : "stderr", buf, whole,
		      realtime_ns());
}

static void read_out(struct cell *c, int s)
{
	struct sess *x = c->x;
	char buf[65536];
	ssize_t n = read(x->out[s], buf, sizeof(buf));

	if (n <= 0) {
		if (n == 0 || (errno != EINTR && errno != EAGAIN))
			close_fd(&x->out[s]);
		return;
	}
	stream_out(c, s, buf, (size_t)n);
	cap_add(&c->out[s], buf, (size_t)n);
}

/* Everything already in the output pipes (the tracer wrote a result's
 * output before the result). */
static void drain_out(struct cell *c)
{
	for (;;) {
		struct pollfd q[2] = { { c->x->out[1], POLLIN, 0 },
				       { c->x->out[2], POLLIN, 0 } };
		if (poll(q, 2, 0) <= 0)
			return;
		for (int i = 0; i < 2; i++)
			if (q[i].revents)
				read_out(c, i + 1);
	}
}

__attribute__((format(printf, 2, 3))) static void
channel_error(json_t *list, const char *fmt, ...)
{
	char msg[300];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_array_append_new(list, json_string(msg));
}

/* One complete frame from the result channel. */
static void on_frame(struct cell *c, json_t *errors, const char *line,
		     size_t len)
{
	struct sess *x = c ? c->x : NULL;
	json_t *j = json_loadb(line, len, 0, NULL);
	const char *nonce = json_string_value(json_object_get(j, "nonce"));

	if (!j || !nonce) {
		channel_error(errors,
			      "a malformed result frame (%zu bytes) was "
			      "rejected",
			      len);
	} else if (c && !strcmp(nonce, c->nonce) &&
		   json_integer_value(json_object_get(j, "n")) == c->n) {
		if (c->frame) {
			channel_error(errors,
				      "a second result for cell %lld was "
				      "rejected",
				      c->n);
		} else {
			c->frame = j;
			return;
		}
	} else if (x && !strcmp(nonce, x->last_nonce)) {
		channel_error(errors, "a second result for an earlier cell was "
				      "rejected");
	} else {
		channel_error(errors,
			      "a result frame with an unknown nonce was "
			      "rejected");
	}
	json_decref(j);
}

/* Reads the result channel; frames are lines. */
static void read_res(struct sess *x, struct cell *c, json_t *errors)
{
	char buf[65536];
	ssize_t n = read(x->res, buf, sizeof(buf));
	char *nl;

	if (n <= 0) {
		if (n == 0 || (errno != EINTR && errno != EAGAIN))
			close_fd(&x->res);
		return;
	}
	if (x->res_len + (size_t)n + 1 > x->res_cap) {
		size_t cap = x->res_cap ? x->res_cap : 65536;
		while (cap < x->res_len + (size_t)n + 1)
			cap *= 2;
		char *nb = realloc(x->resbuf, cap);
		if (!nb)
			return;
		x->resbuf = nb;
		x->res_cap = cap;
	}
	memcpy(x->resbuf + x->res_len, buf, (size_t)n);
	x->res_len += (size_t)n;
	if (x->res_len > MAX_FRAME && !memchr(x->resbuf, '\n', x->res_len)) {
		channel_error(errors,
			      "a result frame longer than %d MiB was rejected",
			      MAX_FRAME >> 20);
		x->res_len = 0; /* and the rest of it, up to its newline */
		x->res_skip = true;
	}
	while ((nl = memchr(x->resbuf, '\n', x->res_len))) {
		size_t l = (size_t)(nl - x->resbuf);
		if (c)
			drain_out(c);
		if (!x->res_skip)
			on_frame(c, errors, x->resbuf, l);
		x->res_skip = false;
		x->res_len -= l + 1;
		memmove(x->resbuf, nl + 1, x->res_len);
	}
}

/* Reads what idle sessions wrote (output of background processes: it is
 * in the record; frames: flagged at the next cell) and notices ends. */
static void pump_idle(struct ws_server *s)
{
	for (struct sess *x = s->list; x; x = x->next) {
		char buf[65536];
		for (int i = 1; i <= 2; i++) {
			struct pollfd q = { x->out[i], POLLIN, 0 };
			while (x->out[i] >= 0 && poll(&q, 1, 0) > 0) {
				ssize_t n = read(x->out[i], buf, sizeof(buf));
				if (n <= 0) {
					close_fd(&x->out[i]);
					break;
				}
			}
		}
		struct pollfd r = { x->res, POLLIN, 0 };
		while (x->res >= 0 && poll(&r, 1, 0) > 0)
			read_res(x, NULL, x->pending_errors);
		struct pollfd q = { x->ctl, POLLIN, 0 };
		while (x->ctl >= 0 && poll(&q, 1, 0) > 0)
			read_ctl(x);
	}
}

struct den_ctx {
	long long from, to;
	json_t *list;
};

static int den_one(const struct audit_event_row *r, void *arg)
{
	struct den_ctx *d = arg;
	const struct audit_event *e = &r->e;

	if (e->ts_ns < d->from || e->ts_ns > d->to)
		return 0;
	const char *action = e->would_deny ? "audit" : e->decision;
	const char *target = e->target ? e->target : e->raw ? e->raw : "";
	json_array_append_new(
		d->list,
		json_pack("{s:s, s:o, s:s, s:s, s:s?}", "syscall",
			  e->syscall ? e->syscall : "?", "target",
			  ws_json_text(target, strlen(target)), "action",
			  action, "rule", e->rule ? e->rule : "", "errno",
			  e->err ? ward_errno_name(e->err) : NULL));
	return 0;
}

struct art_ctx {
	struct ws_server *s;
	struct sess *x;
	long long n;
	json_t *list;
};

static int art_one(const char *path, long long size, const char *sha256,
		   void *arg)
{
	struct art_ctx *c = arg;
	struct audit_artifact art = {
		.run_id = c->x->run_id,
		.cell = c->n,
		.path = path,
		.size = size,
		.sha256 = sha256,
		.ts_ns = realtime_ns(),
	};

	audit_artifact(c->s->au, &art);
	json_array_append_new(
		c->list, json_pack("{s:o, s:I, s:s}", "path",
				   ws_json_text(path, strlen(path)), "size",
				   (json_int_t)size, "sha256", sha256));
	return 0;
}

static json_t *artifacts(struct ws_server *s, struct sess *x,
			 const struct wf_snap *before, long long n)
{
	struct art_ctx c = { s, x, n, json_array() };

	wf_each_changed(wd(x), before, art_one, &c);
	return c.list;
}

static int send_cell(struct sess *x, struct cell *c, const char *code,
		     size_t len, double timeout)
{
	char head[256];
	int rc;

	if (!strcmp(x->lang, "sh")) {
		size_t lines = 0;
		for (size_t i = 0; i < len; i++)
			lines += code[i] == '\n';
		bool nl = len && code[len - 1] == '\n';
		snprintf(head, sizeof(head), "%s %lld %g %zu\n", c->nonce, c->n,
			 timeout, lines + !nl);
		rc = write_all(x->cells, head, strlen(head));
		if (!rc)
			rc = write_all(x->cells, code, len);
		if (!rc && !nl)
			rc = write_all(x->cells, "\n", 1);
		return rc;
	}
	snprintf(head, sizeof(head),
		 "{\"n\":%lld,\"nonce\":\"%s\",\"timeout_s\":%g,\"len\":%zu}\n",
		 c->n, c->nonce, timeout, len);
	rc = write_all(x->cells, head, strlen(head));
	return rc ? rc : write_all(x->cells, code, len);
}

/* The first pid listed in a /proc/PID/task/TID/children of process pid,
 * or -1: a child is listed under the thread that made it (a worker's init
 * under its spawner thread, tracer/start.c; the code under the init). */
static pid_t first_child(pid_t pid)
{
	char path[64], buf[64];
	struct dirent *e;
	pid_t found = -1;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while (found < 0 && (e = readdir(d))) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/children",
			 (int)pid, e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		long v = strtol(buf, NULL, 10);
		found = v > 0 ? (pid_t)v : -1;
	}
	closedir(d);
	return found;
}

/* True if pid is the init of a pid namespace (its last NSpid is 1). */
static bool is_ns_init(pid_t pid)
{
	char path[64], buf[4096];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	char *l = strstr(buf, "\nNSpid:"), *e;
	if (!l)
		return false;
	e = strchr(l + 1, '\n');
	if (e)
		*e = '\0';
	e = strrchr(l, '\t');
	return e && !strcmp(e + 1, "1");
}

/* The interpreter's pid: the worker's child, or that child's child when
 * the child is the run's init (tracer/ns.c). */
static pid_t code_pid(struct sess *x)
{
	if (x->code_pid > 0)
		return x->code_pid;
	pid_t p = x->worker > 0 ? first_child(x->worker) : -1;
	if (p > 0 && is_ns_init(p))
		p = first_child(p);
	if (p > 0)
		x->code_pid = p; /* not before the interpreter is there */
	return p;
}

/* Interrupts the running cell as Ctrl-C would: SIGINT to the
 * interpreter's process group (it is a session leader, tracer/spawn.c).
 * The drivers turn it into an exception in the cell's code (python:
 * KeyboardInterrupt; node: vm's breakOnSigint; sh: the command dies). */
static int interrupt_code(struct sess *x)
{
	pid_t p = code_pid(x);

	if (p <= 0)
		return -ESRCH;
	if (kill(getpgid(p) == p ? -p : p, SIGINT) < 0)
		return -errno;
	return 0;
}

/* node: the cancel as a line on the cells' channel too. The SIGINT stops
 * a running script; a cell that waits for its promise is ended by this
 * line (tools/agent/drivers/node.js says why). Never blocks: the driver has
 * read the cell, so the channel has room, and if it had none the SIGINT
 * and the grace still hold. */
static void cancel_line(struct sess *x, const struct cell *c)
{
	char line[80];
	int n;

	if (strcmp(x->lang, "node") || x->cells < 0)
		return;
	n = snprintf(line, sizeof(line), "{\"cancel\":\"%s\"}\n", c->nonce);
	/* gone or full: nothing more to do */
	(void)send(x->cells, line, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Waits for the cell's result, reading its output; true if it came.
 * A cancel (ws_server_cancel) interrupts the cell and leaves it GRACE_MS
 * to stop. An sh or node cell is interrupted here at int_at, its timeout
 * (> 0): node's vm would start a watchdog thread for each cell to time it
 * (its driver still times a cell waiting for a promise); python's driver
 * keeps its cells' time itself, which lets it raise the interrupt inside
 * the code. */
static bool await_result(struct cell *c, long long deadline, long long int_at)
{
	struct sess *x = c->x;

	while (!c->frame && !x->dead) {
		struct pollfd q[5] = { { x->out[1], POLLIN, 0 },
				       { x->out[2], POLLIN, 0 },
				       { x->res, POLLIN, 0 },
				       { x->ctl, POLLIN, 0 },
				       { c->cancelled ? -1 : c->cancel_fd,
					 POLLIN, 0 } };
		long long now = mono_ms(), left = deadline - now;
		if (left <= 0)
			return false;
		if (x->res < 0 && x->ctl < 0)
			return false;
		if (int_at > 0 && !c->overdue && !c->cancelled &&
		    now >= int_at) {
			c->overdue = true;
			interrupt_code(x);
			c->int_ms = now;
		}
		/* sh: a SIGINT that came while the shell was starting a
		 * command missed it (the shell only notes it): again */
		bool again = (c->cancelled || c->overdue) &&
			     !strcmp(x->lang, "sh");
		long long wait = left > 1000 ? 1000 : left;
		if (again && wait > 200)
			wait = 200;
		if (int_at > 0 && !c->overdue && wait > int_at - now)
			wait = int_at - now;
		int n = poll(q, 5, (int)wait);
		if (again && mono_ms() - c->int_ms >= 200) {
			interrupt_code(x);
			c->int_ms = mono_ms();
		}
		if (n <= 0)
			continue;
		if (q[4].revents) {
			c->cancelled = true;
			cancel_line(x, c);
			interrupt_code(x);
			c->int_ms = mono_ms();
			if (deadline > mono_ms() + GRACE_MS)
				deadline = mono_ms() + GRACE_MS;
		}
		if (q[0].revents)
			read_out(c, 1);
		if (q[1].revents)
			read_out(c, 2);
		if (q[2].revents)
			read_res(x, c, c->errors);
		if (q[3].revents)
			read_ctl(x);
	}
	if (!c->frame) {
		/* the worker ended: take the last of the output */
		drain_out(c);
		if (x->res >= 0)
			read_res(x, c, c->errors);
	}
	return c->frame != NULL;
}

static json_t *result_object(struct ws_server *s, struct cell *c,
			     const char *status, bool timed_out,
			     bool interrupted, json_t *error, long long t0,
			     long long start_ns, long long end_ns, json_t *arts,
			     bool one_shot, const struct cell_limits *cl)
{
	struct sess *x = c->x;
	json_t *o = json_object(), *logs = json_object(), *tr = json_object();
	long long ret[3] = { 0, 0, 0 };
	struct den_ctx d = { start_ns, end_ns, json_array() };
	json_t *frame = c->frame;
	json_t *results = json_object_get(frame, "results");
	int exit_code = strcmp(status, "ok") ? 1 : 0;

	if (frame && json_is_integer(json_object_get(frame, "exit_code")))
		exit_code = (int)json_integer_value(
			json_object_get(frame, "exit_code"));
	else if (!frame && x->end_known)
		exit_code = x->end_exit; /* the interpreter's own */
	for (int i = 1; i <= 2; i++) {
		static const char *const key[3][2] = {
			{ NULL, NULL },
			{ "stdout", "stdout_base64" },
			{ "stderr", "stderr_base64" },
		};
		json_t *exact;

		json_object_set_new(logs, key[i][0],
				    cap_json(&c->out[i], &ret[i], &exact));
		if (exact)
			json_object_set_new(logs, key[i][1], exact);
	}
	json_object_set_new(tr, "stdout",
			    json_boolean(ret[1] < c->out[1].total));
	json_object_set_new(tr, "stderr",
			    json_boolean(ret[2] < c->out[2].total));
	json_object_set_new(tr, "stdout_bytes_total",
			    json_integer(c->out[1].total));
	json_object_set_new(tr, "stdout_bytes_returned", json_integer(ret[1]));
	json_object_set_new(tr, "stderr_bytes_total",
			    json_integer(c->out[2].total));
	json_object_set_new(tr, "stderr_bytes_returned", json_integer(ret[2]));
	audit_denials_each(s->au, x->run_id, den_one, &d);

	json_object_set_new(o, "run_id", json_string(x->run_id));
	json_object_set_new(o, "session_id",
			    one_shot ? json_null() : json_string(x->id));
	json_object_set_new(o, "execution_count", json_integer(c->n));
	json_object_set_new(o, "status", json_string(status));
	json_object_set_new(o, "exit_code", json_integer(exit_code));
	json_object_set_new(o, "duration_ms", json_integer(mono_ms() - t0));
	if (timed_out || c->cancelled)
		json_object_set_new(o, "interrupted",
				    json_boolean(interrupted));
	json_object_set_new(o, "timeout_s", json_real(cl->timeout_s));
	if (cl->capped)
		json_object_set_new(o, "timeout_capped_from",
				    json_real(cl->asked_s));
	if (x->dead && !one_shot)
		json_object_set_new(o, "session_closed", json_true());
	json_object_set_new(o, "logs", logs);
	json_object_set(o, "results",
			json_is_array(results) ? results : json_array());
	if (!json_is_array(results))
		json_decref(json_object_get(o, "results"));
	json_object_set_new(o, "error", error ? error : json_null());
	json_object_set_new(o, "truncated", tr);
	json_object_set_new(o, "artifacts", arts);
	json_object_set_new(o, "policy",
			    json_pack("{s:b, s:o, s:s}", "denied",
				      json_array_size(d.list) > 0, "denials",
				      d.list, "audit_ref", x->run_id));
	if (json_array_size(c->errors))
		json_object_set(o, "channel_errors", c->errors);
	return o;
}

/* Runs one cell in x; *result on success. */
static int run_cell(struct ws_server *s, struct sess *x, const char *code,
		    size_t len, const struct cell_limits *cl, ws_stream_fn fn,
		    void *fn_arg, bool one_shot, json_t **result,
		    struct ws_error *err)
{
	struct cell *c = calloc(1, sizeof(*c));
	double timeout = cl->timeout_s;
	struct wf_snap before;
	bool timed_out = false, interrupted = false;
	const char *status = "ok";
	json_t *error = NULL;

	if (!c)
		return fail(err, WS_E_INTERNAL, "out of memory");
	pump_idle(s);
	c->x = x;
	c->fn = fn;
	c->fn_arg = fn_arg;
	c->cancel_fd = s->cancel[0];
	c->n = ++x->count;
	c->errors = x->pending_errors;
	x->pending_errors = json_array();
	if (random_hex(c->nonce, 16) < 0) {
		free(c);
		return fail(err, WS_E_INTERNAL, "no random bytes for a nonce");
	}
	wf_snap_take(wd(x), &before);
	long long start_ns = realtime_ns(), t0 = mono_ms();
	long long deadline = t0 + (long long)(timeout * 1000);
	int rc = x->dead ? -EPIPE : send_cell(x, c, code, len, timeout);
	bool by_ward = strcmp(x->lang, "python") && timeout > 0; /* sh, node */
	long long int_at = by_ward ? deadline : 0;
	bool got = !rc && await_result(c, deadline + GRACE_MS, int_at);
	stream_out(c, 1, NULL, 0); /* what is left of a cut character */
	stream_out(c, 2, NULL, 0);
	if (!got && rc < 0 && !x->dead) {
		/* the cell could not be sent: the interpreter is gone */
		sess_stop(x);
		if (!x->end_cause[0])
			snprintf(x->end_cause, sizeof(x->end_cause),
				 "the session's interpreter is gone (%s)",
				 strerror(-rc));
	}

	if (got) {
		json_t *f = c->frame, *e = json_object_get(f, "error");
		interrupted = json_is_true(json_object_get(f, "interrupted"));
		if (c->overdue && !c->cancelled &&
		    json_is_true(json_object_get(f, "sigint")) &&
		    json_is_object(e)) {
			/* node: the SIGINT at its timeout stopped the script;
			 * said as vm's own timeout says it */
			char v[96];
			const char *tb = json_string_value(
				json_object_get(e, "traceback"));
			const char *rest = tb ? strchr(tb, '\n') : NULL;
			snprintf(v, sizeof(v),
				 "Script execution timed out after %lldms",
				 (long long)(timeout * 1000 + 0.5));
			interrupted = true;
			error = json_pack("{s:s, s:s, s:s++}", "name", "Error",
					  "value", v, "traceback", "Error: ", v,
					  rest ? rest : "");
		}
		timed_out = interrupted;
		if (!error && json_is_object(e))
			error = json_incref(e);
		if (c->cancelled &&
		    (error || interrupted ||
		     json_integer_value(json_object_get(f, "exit_code")))) {
			status = "cancelled"; /* it stopped when interrupted */
			timed_out = false;
			interrupted = true;
			if (!error) /* sh: only an exit status */
				error = json_pack(
					"{s:s, s:s, s:s}", "name", "Cancelled",
					"value",
					"the cell was interrupted when its "
					"request was cancelled",
					"traceback", "");
		} else if (timed_out)
			status = "timeout";
		else if (error ||
			 json_integer_value(json_object_get(f, "exit_code")))
			status = "error";
	} else if (!x->dead) {
		/* no result within the timeout and the grace: end it (no
		 * point waiting for a driver that is stuck in the cell) */
		timed_out = !c->cancelled;
		status = c->cancelled ? "cancelled" : "timeout";
		if (x->worker > 0)
			kill(x->worker, SIGTERM);
		sess_stop(x);
		error = json_pack("{s:s, s:s, s:s}", "name",
				  c->cancelled ? "Cancelled" : "Timeout",
				  "value",
				  "the cell did not stop when interrupted; "
				  "the session was ended",
				  "traceback", "");
	} else {
		/* the code ended it (exit, a crash): an error with the
		 * interpreter's own exit status; a limit or a kill keeps its
		 * own status. The session is closed (not restarted: its
		 * state is gone, and the caller should know). */
		bool own = x->end_status[0] && strcmp(x->end_status, "ok") &&
			   strcmp(x->end_status, "error");
		char what[600];
		int sig = x->end_signal;
		status = c->cancelled ? "cancelled"
			 : own	      ? x->end_status
				      : "error";
		if (x->end_known && sig > 0)
			snprintf(what, sizeof(what),
				 "the interpreter was killed by signal %d "
				 "(SIG%s); the session is closed",
				 sig,
				 sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
		else if (x->end_known)
			snprintf(what, sizeof(what),
				 "the interpreter exited with status %d; the "
				 "session is closed",
				 x->end_exit);
		else
			snprintf(what, sizeof(what),
				 "the interpreter ended the session");
		if (x->end_cause[0]) {
			size_t l = strlen(what);
			snprintf(what + l, sizeof(what) - l, " (%s)",
				 x->end_cause);
		}
		error = json_pack("{s:s, s:s, s:s}", "name", "SessionEnded",
				  "value", what, "traceback", "");
	}
	snprintf(x->last_nonce, sizeof(x->last_nonce), "%s", c->nonce);
	long long end_ns = realtime_ns();
	json_t *arts = artifacts(s, x, &before, c->n);
	wf_snap_free(&before);
	json_t *o = result_object(s, c, status, timed_out, interrupted, error,
				  t0, start_ns, end_ns, arts, one_shot, cl);
	char *rj = json_dumps(o, JSON_COMPACT);
	struct audit_cell ac = {
		.run_id = x->run_id,
		.n = c->n,
		.code = code,
		.code_len = len,
		.started_ns = start_ns,
		.ended_ns = end_ns,
		.status = status,
		.result_json = rj ? rj : "{}",
	};
	int arc = audit_cell(s->au, &ac);
	free(rj);
	json_decref(c->frame);
	json_decref(c->errors);
	free(c);
	x->last_ms = mono_ms();
	if (arc < 0) {
		/* fail closed: a cell that is not recorded is not reported */
		json_decref(o);
		return fail(
			err, WS_E_INTERNAL,
			"audit database: the cell could not be recorded: %s",
			audit_errmsg(s->au));
	}
	*result = o;
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
			fail(err, WS_E_PARAMS,
			     "params.session_id: required (a session id from "
			     "session.create)");
		return NULL;
	}
	if (!id) {
		fail(err, WS_E_PARAMS, "params.session_id: must be a string");
		return NULL;
	}
	for (struct sess *x = s->list; x; x = x->next)
		if (!x->retired && !strcmp(x->id, id))
			return x;
	fail(err, WS_E_NO_SESSION,
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
	sess_stop(x);
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
	long long now = mono_ms();
	struct sess *x = s->list, *next;

	pump_idle(s);
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
	long long now_ms = mono_ms(), now_ns = realtime_ns();

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
		return fail(err, WS_E_PARAMS,
			    "params.code: required, a string of code");
	stream = json_object_get(p, "stream");
	if (stream && !json_is_boolean(stream))
		return fail(err, WS_E_PARAMS,
			    "params.stream: must be a boolean");
	if (get_str(p, "language", &lang, err) < 0 ||
	    get_num(p, "timeout_s", &timeout, err) < 0)
		return -1;
	if (lang && !valid_lang(lang))
		return fail(err, WS_E_PARAMS,
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
			return fail(err, WS_E_PARAMS,
				    "params.language: session %s runs %s, not "
				    "%s",
				    x->id, x->lang, lang);
		struct cell_limits cl =
			cell_limits_of(s, timeout > 0 ? timeout : x->timeout_s);
		rc = run_cell(s, x, json_string_value(code),
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
	struct cell_limits cl = cell_limits_of(s, x->timeout_s);
	rc = run_cell(s, x, json_string_value(code), json_string_length(code),
		      &cl, fn, arg, true, res, err);
	/* The answer need not wait for the end: EOF lets the driver finish,
	 * the worker records the run's end and exits by itself, and expire()
	 * reaps it (or stops it, CLOSE_MS on) and removes the workdir. */
	close_fd(&x->cells);
	x->retired = true;
	x->last_ms = mono_ms();
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
		return fail(err, WS_E_PARAMS,
			    "params: give exactly one of text and base64");
	if (text) {
		len = json_string_length(json_object_get(p, "text"));
		data = malloc(len + 1);
		if (data)
			memcpy(data, text, len);
	} else if (base64_decode(b, strlen(b), &data, &len) < 0) {
		return fail(err, WS_E_PARAMS,
			    "params.base64: not valid base64 (RFC 4648, "
			    "with padding)");
	}
	if (!data)
		return fail(err, WS_E_INTERNAL, "out of memory");
	if (len > MAX_READ) {
		free(data);
		return fail(err, WS_E_TOO_LARGE,
			    "%zu bytes: files of at most %d MiB can be written",
			    len, MAX_READ >> 20);
	}
	int fd = open_beneath(x, path,
			      O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
	int rc = fd < 0 ? fd : write_all(fd, data, len);
	if (fd >= 0 && !rc && s->drop &&
	    fchown(fd, WS_SANDBOX_UID, WS_SANDBOX_GID) < 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	free(data);
	if (rc < 0)
		return fail(
			err, WS_E_FILE,
			"%s: cannot write it in the session's workdir: %s%s",
			path, strerror(-rc),
			rc == -EXDEV || rc == -ELOOP
				? " (a symlink leads out of the workdir)"
			: rc == -ENOENT ? " (its directory does not exist)"
					: "");
	*res = file_entry(x, path);
	return *res ? 0
		    : fail(err, WS_E_FILE, "%s: written but unreadable", path);
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
		return fail(err, WS_E_FILE,
			    "%s: cannot read it in the session's workdir: %s%s",
			    path, strerror(-fd),
			    fd == -EXDEV
				    ? " (a symlink leads out of the workdir)"
				    : "");
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return fail(err, WS_E_FILE, "%s: not a regular file", path);
	}
	if (st.st_size > MAX_READ) {
		close(fd);
		return fail(err, WS_E_TOO_LARGE,
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
		return fail(err, WS_E_INTERNAL, "out of memory");
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
	wf_snap_take(wd(x), &sn);
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
		close_fd(&x->cells);
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
		rc = fail(err, WS_E_PARAMS, "params: must be an object");
		goto out;
	}
	expire(s);
	if (!method)
		rc = fail(err, WS_E_INVALID, "method: required");
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
		rc = fail(err, WS_E_METHOD,
			  "unknown method '%s'; methods: session.create, "
			  "session.list, session.close, run, files.write, "
			  "files.read, files.list",
			  method);
out:
	if (!params)
		json_decref(p);
	if (rc == 0 && !*result)
		rc = fail(err, WS_E_INTERNAL, "out of memory");
	return rc;
}
