/*
 * session-cell.c - one cell run in a session (session.c owns the sessions):
 * the code framed and sent to the driver, its output captured (head and
 * tail, streamed to the caller), the result read from the pipe, the time
 * limit and the interrupt, and the result object with denials and
 * artifacts.
 */
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
	int cancel_fd;	  /* the call's cancel (ws_cancel) */
	bool cancelled;	  /* it fired while the cell ran */
	bool overdue;	  /* sh: interrupted at its timeout */
	bool asks_denied; /* its time up: its questions answered no */
	long long int_ms; /* when it was last interrupted */
};

struct cell_limits ws_cell_limits_of(const struct ws_server *s, double asked)
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
		      ws_realtime_ns());
}

static void read_out(struct cell *c, int s)
{
	struct sess *x = c->x;
	char buf[65536];
	ssize_t n = read(x->out[s], buf, sizeof(buf));

	if (n <= 0) {
		if (n == 0 || (errno != EINTR && errno != EAGAIN))
			ws_close_fd(&x->out[s]);
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

/* ------------------------------------------------------------------ */
/* commands beside the cells                                           */

enum {
	CMD_QUEUE = 4 << 20, /* a command's output not yet streamed */
	CMD_SLICE_MS = 20,   /* a command's thread reads or waits this long */
};

/* A command running in x (ws_cmd_run): its cell (output captured, nonce,
 * number, end frame) and what it wrote that its thread has not streamed
 * yet (up to CMD_QUEUE a stream; beyond, counted in dropped and said in
 * the stream once it is over). */
struct ws_cmd {
	struct ws_cmd *next;
	unsigned id;
	struct cell *c;
	struct ward_strbuf q[3];
	long long dropped[3];
	bool done;
};

void ws_cmds_init(struct sess *x)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&x->cmd_lock, NULL);
	pthread_mutex_init(&x->send_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&x->cmd_cond, &ca);
	pthread_condattr_destroy(&ca);
}

void ws_cmds_destroy(struct sess *x)
{
	pthread_mutex_destroy(&x->cmd_lock);
	pthread_mutex_destroy(&x->send_lock);
	pthread_cond_destroy(&x->cmd_cond);
}

bool ws_cmds_running(struct sess *x)
{
	pthread_mutex_lock(&x->cmd_lock);
	bool any = x->cmds != NULL;
	pthread_mutex_unlock(&x->cmd_lock);
	return any;
}

/* A frame of a command (it has "cmd"): its output, its start, its end;
 * one for no command running here is a channel error. */
static void cmd_frame(struct sess *x, json_t *j, json_t *errors)
{
	json_int_t id = json_integer_value(json_object_get(j, "cmd"));
	json_int_t cell_n = json_integer_value(json_object_get(j, "n"));
	const char *nonce = json_string_value(json_object_get(j, "nonce"));
	json_t *d = json_object_get(j, "d");
	struct ws_cmd *m;

	/* n too: the record files its output under n (outputs.cmd, the
	 * tracer's side_output in session-worker.c) */
	pthread_mutex_lock(&x->cmd_lock);
	for (m = x->cmds; m; m = m->next)
		if (m->id == id && m->c->n == cell_n &&
		    !strcmp(m->c->nonce, nonce))
			break;
	if (!m || m->done) {
		pthread_mutex_unlock(&x->cmd_lock);
		channel_error(errors, "a frame for no running command was "
				      "rejected");
		json_decref(j);
		return;
	}
	if (json_is_string(d)) {
		int i = json_integer_value(json_object_get(j, "s")) == 2 ? 2
									 : 1;
		unsigned char *b = NULL;
		size_t n = 0;

		if (ws_base64_decode(json_string_value(d),
				     json_string_length(d), &b, &n) == 0) {
			cap_add(&m->c->out[i], (const char *)b, n);
			if (m->c->fn && !m->dropped[i] &&
			    m->q[i].len + n <= CMD_QUEUE)
				ward_strbuf_append(&m->q[i], (const char *)b,
						   n);
			else if (m->c->fn)
				m->dropped[i] += (long long)n;
		}
		free(b);
	} else if (json_is_true(json_object_get(j, "end")) ||
		   json_object_get(j, "error")) {
		m->c->frame = json_incref(j);
		m->done = true;
	}
	pthread_cond_broadcast(&x->cmd_cond);
	pthread_mutex_unlock(&x->cmd_lock);
	json_decref(j);
}

/* One complete frame from the result channel. */
static void on_frame(struct sess *x, struct cell *c, json_t *errors,
		     const char *line, size_t len)
{
	json_t *j = json_loadb(line, len, 0, NULL);
	const char *nonce = json_string_value(json_object_get(j, "nonce"));

	if (j && nonce && json_object_get(j, "cmd")) {
		cmd_frame(x, j, errors); /* a command's, not the cell's */
		return;
	}
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
			ws_close_fd(&x->res);
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
			on_frame(x, c, errors, x->resbuf, l);
		x->res_skip = false;
		x->res_len -= l + 1;
		memmove(x->resbuf, nl + 1, x->res_len);
	}
}

/* Reads what an idle session wrote (output of background processes: it
 * is in the record; frames: flagged at the next cell) and notices its end.
 * The caller owns x's fds (x is busy, or the caller made it so). */
void ws_pump_sess(struct sess *x)
{
	char buf[65536];

	for (int i = 1; i <= 2; i++) {
		struct pollfd q = { x->out[i], POLLIN, 0 };
		while (x->out[i] >= 0 && poll(&q, 1, 0) > 0) {
			ssize_t n = read(x->out[i], buf, sizeof(buf));
			if (n <= 0) {
				ws_close_fd(&x->out[i]);
				break;
			}
		}
	}
	struct pollfd r = { x->res, POLLIN, 0 };
	while (x->res >= 0 && poll(&r, 1, 0) > 0)
		read_res(x, NULL, x->pending_errors);
	struct pollfd q = { x->ctl, POLLIN, 0 };
	while (x->ctl >= 0 && poll(&q, 1, 0) > 0)
		ws_read_ctl(x);
}

/* Every idle session, under the server's lock (the reads do not block:
 * each comes after a poll that said it would not); a session whose cell
 * runs is read by that cell. */
void ws_pump_idle(struct ws_server *s)
{
	pthread_mutex_lock(&s->lock);
	for (struct sess *x = s->list; x; x = x->next)
		if (!x->busy)
			ws_pump_sess(x);
	pthread_mutex_unlock(&s->lock);
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
		.ts_ns = ws_realtime_ns(),
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

	wf_each_changed(ws_wd(x), before, art_one, &c);
	return c.list;
}

/* The language whose driver answers the cell running in x. */
static const char *cell_lang(const struct sess *x)
{
	return x->ext ? x->ext->lang : x->lang;
}

static int send_cell_locked(struct sess *x, struct cell *c, const char *code,
			    size_t len, double timeout)
{
	char head[256];
	int rc;

	if (x->ext) { /* the hub's: a JSON body (session-ctx.c) */
		code = x->ext->body;
		len = x->ext->len;
	} else if (!strcmp(x->lang, "sh")) {
		size_t lines = 0;
		for (size_t i = 0; i < len; i++)
			lines += code[i] == '\n';
		bool nl = len && code[len - 1] == '\n';
		snprintf(head, sizeof(head), "%s %lld %g %zu\n", c->nonce, c->n,
			 timeout, lines + !nl);
		rc = ws_write_all(x->cells, head, strlen(head));
		if (!rc)
			rc = ws_write_all(x->cells, code, len);
		if (!rc && !nl)
			rc = ws_write_all(x->cells, "\n", 1);
		return rc;
	}
	snprintf(
		head, sizeof(head),
		"{\"n\":%lld,\"nonce\":\"%s\",\"timeout_s\":%g,\"len\":%zu%s}\n",
		c->n, c->nonce, timeout, len, x->ext ? ",\"x\":1" : "");
	rc = ws_write_all(x->cells, head, strlen(head));
	return rc ? rc : ws_write_all(x->cells, code, len);
}

/* Frames on the cells' channel are whole: commands send theirs too. */
static int send_cell(struct sess *x, struct cell *c, const char *code,
		     size_t len, double timeout)
{
	pthread_mutex_lock(&x->send_lock);
	int rc = x->cells < 0 ? -EPIPE
			      : send_cell_locked(x, c, code, len, timeout);
	pthread_mutex_unlock(&x->send_lock);
	return rc;
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

/* The interpreter's pid: the worker's child (a zygote's fork's, for a
 * pooled sandbox forked from the template), or that child's child when
 * the child is the run's init (tracer/ns.c). */
static pid_t code_pid(struct sess *x)
{
	if (x->code_pid > 0)
		return x->code_pid;
	pid_t root = x->fork_pid > 0 ? x->fork_pid : x->worker;
	pid_t p = root > 0 ? first_child(root) : -1;
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
	/* a call waiting for an answer is stopped: no SIGINT reaches its
	 * thread until the call is answered */
	ws_ask_cancel(x, "the cell was interrupted");
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

	if (strcmp(cell_lang(x), "node") || x->cells < 0)
		return;
	n = snprintf(line, sizeof(line), "{\"cancel\":\"%s\"}\n", c->nonce);
	/* gone or full: nothing more to do */
	pthread_mutex_lock(&x->send_lock);
	(void)send(x->cells, line, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
	pthread_mutex_unlock(&x->send_lock);
}

/* Waits for the cell's result, reading its output; true if it came.
 * A cancel (ws_cancel_fire) interrupts the cell and leaves it GRACE_MS
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
		long long now = ws_mono_ms(), left = deadline - now;
		if (left <= 0)
			return false;
		if (x->res < 0 && x->ctl < 0)
			return false;
		/* a call waiting for an answer at the cell's timeout: no,
		 * so that python's driver, which times its cells, can
		 * interrupt it (its thread is stopped until then) */
		if (!c->asks_denied && now >= deadline - GRACE_MS) {
			c->asks_denied = true;
			ws_ask_cancel(x, "the cell's time was up");
		}
		if (int_at > 0 && !c->overdue && !c->cancelled &&
		    now >= int_at) {
			c->overdue = true;
			interrupt_code(x);
			c->int_ms = now;
		}
		/* sh: a SIGINT that came while the shell was starting a
		 * command missed it (the shell only notes it): again */
		bool again = (c->cancelled || c->overdue) &&
			     !strcmp(cell_lang(x), "sh");
		long long wait = left > 1000 ? 1000 : left;
		if (again && wait > 200)
			wait = 200;
		if (int_at > 0 && !c->overdue && wait > int_at - now)
			wait = int_at - now;
		if (!c->asks_denied && wait > deadline - GRACE_MS - now)
			wait = deadline - GRACE_MS - now;
		int n = poll(q, 5, (int)wait);
		if (again && ws_mono_ms() - c->int_ms >= 200) {
			interrupt_code(x);
			c->int_ms = ws_mono_ms();
		}
		if (n <= 0)
			continue;
		if (q[4].revents) {
			c->cancelled = true;
			cancel_line(x, c);
			interrupt_code(x);
			c->int_ms = ws_mono_ms();
			if (deadline > ws_mono_ms() + GRACE_MS)
				deadline = ws_mono_ms() + GRACE_MS;
		}
		if (q[0].revents)
			read_out(c, 1);
		if (q[1].revents)
			read_out(c, 2);
		if (q[2].revents)
			read_res(x, c, c->errors);
		if (q[3].revents)
			ws_read_ctl(x);
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
	json_object_set_new(o, "duration_ms", json_integer(ws_mono_ms() - t0));
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

/* How a cell ended: its status, whether its time ran out or it was
 * interrupted, and its error object (a new reference, or NULL). */
struct cell_end {
	const char *status;
	bool timed_out, interrupted;
	json_t *error;
};

/* The driver answered: the frame's error and flags, the node timeout
 * said as vm's own timeout says it, a cancelled cell as cancelled. */
static void end_by_result(struct cell *c, double timeout, struct cell_end *ce)
{
	json_t *f = c->frame, *e = json_object_get(f, "error");
	ce->interrupted = json_is_true(json_object_get(f, "interrupted"));
	if (c->overdue && !c->cancelled &&
	    json_is_true(json_object_get(f, "sigint")) && json_is_object(e)) {
		/* node: the SIGINT at its timeout stopped the script;
		 * said as vm's own timeout says it */
		char v[96];
		const char *tb =
			json_string_value(json_object_get(e, "traceback"));
		const char *rest = tb ? strchr(tb, '\n') : NULL;
		snprintf(v, sizeof(v),
			 "Script execution timed out after %lldms",
			 (long long)(timeout * 1000 + 0.5));
		ce->interrupted = true;
		ce->error = json_pack("{s:s, s:s, s:s++}", "name", "Error",
				      "value", v, "traceback", "Error: ", v,
				      rest ? rest : "");
	}
	ce->timed_out = ce->interrupted;
	if (!ce->error && json_is_object(e))
		ce->error = json_incref(e);
	if (c->cancelled &&
	    (ce->error || ce->interrupted ||
	     json_integer_value(json_object_get(f, "exit_code")))) {
		ce->status = "cancelled"; /* it stopped when interrupted */
		ce->timed_out = false;
		ce->interrupted = true;
		if (!ce->error) /* sh: only an exit status */
			ce->error = json_pack(
				"{s:s, s:s, s:s}", "name", "Cancelled", "value",
				"the cell was interrupted when its "
				"request was cancelled",
				"traceback", "");
	} else if (ce->timed_out)
		ce->status = "timeout";
	else if (ce->error ||
		 json_integer_value(json_object_get(f, "exit_code")))
		ce->status = "error";
}

/* No result within the timeout and the grace: the session ended (no
 * point waiting for a driver that is stuck in the cell). */
static void end_stuck(struct sess *x, struct cell *c, struct cell_end *ce)
{
	ce->timed_out = !c->cancelled;
	ce->status = c->cancelled ? "cancelled" : "timeout";
	if (x->worker > 0)
		kill(x->worker, SIGTERM);
	ws_sess_stop(x);
	ce->error = json_pack("{s:s, s:s, s:s}", "name",
			      c->cancelled ? "Cancelled" : "Timeout", "value",
			      "the cell did not stop when interrupted; "
			      "the session was ended",
			      "traceback", "");
}

/* The code ended the session (exit, a crash): an error with the
 * interpreter's own exit status; a limit or a kill keeps its own status.
 * The session is closed (not restarted: its state is gone, and the caller
 * should know). */
static void end_by_code(struct sess *x, struct cell *c, struct cell_end *ce)
{
	bool own = x->end_status[0] && strcmp(x->end_status, "ok") &&
		   strcmp(x->end_status, "error");
	char what[600];
	int sig = x->end_signal;
	ce->status = c->cancelled ? "cancelled" : own ? x->end_status : "error";
	if (x->end_known && sig > 0)
		snprintf(what, sizeof(what),
			 "the interpreter was killed by signal %d "
			 "(SIG%s); the session is closed",
			 sig, sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
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
		snprintf(what + l, sizeof(what) - l, " (%s)", x->end_cause);
	}
	ce->error = json_pack("{s:s, s:s, s:s}", "name", "SessionEnded",
			      "value", what, "traceback", "");
}

/* The refusals of a Python cell's escape lines (!cmd, %pip) said with the
 * rule: the lines that could not start (the frame's "shell_failed", from
 * drivers/python.py, which cannot know why) and the exec denials of the
 * cell's time, from the record. The cell's error says them (one is made
 * when the code had none: the escape did not run, as the policy wills);
 * a failure with no exec denial is the command's own and stays as it is. */
static const char *str_at(json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v ? v : "";
}

static void note_refusals(struct ws_server *s, struct cell *c, long long from,
			  long long to, struct cell_end *ce)
{
	json_t *failed = json_object_get(c->frame, "shell_failed"), *v;
	struct den_ctx d = { from, to, NULL };
	struct ward_strbuf sb = WARD_STRBUF_INIT;
	bool any = false;
	size_t i;

	if (!json_array_size(failed) || !(d.list = json_array()))
		return;
	audit_denials_each(s->au, c->x->run_id, den_one, &d);
	json_array_foreach(failed, i, v)
	{
		/* the frame is the code's: a few lines, each cut short */
		if (i == 8) {
			ward_strbuf_puts(&sb, ", ...");
			break;
		}
		ward_strbuf_appendf(&sb, "%s%.200s", i ? ", " : "",
				    str_at(v, "line"));
	}
	ward_strbuf_puts(&sb, ": ward's policy denied");
	json_array_foreach(d.list, i, v)
	{
		const char *sc = str_at(v, "syscall"),
			   *err = str_at(v, "errno");

		if (strncmp(sc, "execve", 6) ||
		    strcmp(str_at(v, "action"), "deny"))
			continue;
		char one[PATH_MAX + 200];

		/* a shell tries each PATH entry: the same denial, once */
		snprintf(one, sizeof(one), " exec of %s (rule %s%s%s)",
			 str_at(v, "target"), str_at(v, "rule"),
			 *err ? ", " : "", err);
		if (strstr(ward_strbuf_str(&sb), one))
			continue;
		ward_strbuf_appendf(&sb, "%s%s", any ? ";" : "", one);
		any = true;
	}
	json_decref(d.list);
	if (any && !ce->error) {
		ce->error = json_pack("{s:s, s:s, s:s+}", "name",
				      "PolicyDenied", "value",
				      ward_strbuf_str(&sb), "traceback",
				      ward_strbuf_str(&sb), "\n");
		if (!strcmp(ce->status, "ok"))
			ce->status = "error";
	} else if (any) {
		const char *tb = json_string_value(
			json_object_get(ce->error, "traceback"));
		json_object_set_new(ce->error, "traceback",
				    json_pack("s++", tb ?: "",
					      ward_strbuf_str(&sb), "\n"));
	}
	ward_strbuf_free(&sb);
}

/* What a cell or command was, for its result and its row. */
struct cell_run {
	const char *code;
	size_t len;
	const struct cell_limits *cl;
	long long t0, start_ns;
	struct wf_snap *before;
	bool one_shot;
	json_t *mark; /* session-ctx.c's, or NULL */
};

/* The end of a cell or command c that ended as ce says (its error
 * taken): its result object, and its row recorded; c freed. */
static int cell_finish(struct ws_server *s, struct cell *c,
		       const struct cell_run *r, struct cell_end *ce,
		       json_t **result, struct ws_error *err)
{
	struct sess *x = c->x;
	long long end_ns = ws_realtime_ns();

	if (c->frame)
		note_refusals(s, c, r->start_ns, end_ns, ce);
	json_t *arts = artifacts(s, x, r->before, c->n);
	wf_snap_free(r->before);
	json_t *o = result_object(s, c, ce->status, ce->timed_out,
				  ce->interrupted, ce->error, r->t0,
				  r->start_ns, end_ns, arts, r->one_shot,
				  r->cl);
	if (r->mark)
		ws_ctx_mark(r->mark, o);
	if (x->warming)
		json_object_set_new(o, "phase", json_string("warmup"));
	char *rj = json_dumps(o, JSON_COMPACT);
	struct audit_cell ac = {
		.run_id = x->run_id,
		.n = c->n,
		.code = r->code,
		.code_len = r->len,
		.started_ns = r->start_ns,
		.ended_ns = end_ns,
		.status = ce->status,
		.result_json = rj ? rj : "{}",
	};
	/* a pool's warm-up is recorded when its session leaves the pool */
	int arc = x->warming ? ws_pool_keep_warmup(x, &ac, o)
			     : audit_cell(s->au, &ac);
	free(rj);
	json_decref(c->frame);
	json_decref(c->errors);
	free(c);
	x->last_ms = ws_mono_ms();
	if (arc < 0) {
		/* fail closed: a cell that is not recorded is not reported */
		json_decref(o);
		return ws_fail(
			err, WS_E_INTERNAL,
			"audit database: the cell could not be recorded: %s",
			audit_errmsg(s->au));
	}
	*result = o;
	return 0;
}

/* Runs one cell in x; *result on success. */
int ws_run_cell(struct ws_server *s, struct sess *x, const char *code,
		size_t len, const struct cell_limits *cl, ws_stream_fn fn,
		void *fn_arg, int cancel_fd, bool one_shot, json_t **result,
		struct ws_error *err)
{
	struct cell *c = calloc(1, sizeof(*c));
	double timeout = cl->timeout_s;
	struct wf_snap before;
	struct cell_end ce = { "ok", false, false, NULL };

	if (!c)
		return ws_fail(err, WS_E_INTERNAL, "out of memory");
	ws_pump_sess(x);
	c->x = x;
	c->fn = fn;
	c->fn_arg = fn_arg;
	c->cancel_fd = cancel_fd;
	c->n = __atomic_add_fetch(&x->count, 1, __ATOMIC_SEQ_CST);
	c->errors = x->pending_errors;
	x->pending_errors = json_array();
	if (ws_random_hex(c->nonce, 16) < 0) {
		free(c);
		return ws_fail(err, WS_E_INTERNAL,
			       "no random bytes for a nonce");
	}
	wf_snap_take(ws_wd(x), &before);
	long long start_ns = ws_realtime_ns(), t0 = ws_mono_ms();
	long long deadline = t0 + (long long)(timeout * 1000);
	int rc = x->dead ? -EPIPE : send_cell(x, c, code, len, timeout);
	bool by_ward = strcmp(cell_lang(x), "python") &&
		       timeout > 0; /* sh, node */
	long long int_at = by_ward ? deadline : 0;
	bool got = !rc && await_result(c, deadline + GRACE_MS, int_at);
	stream_out(c, 1, NULL, 0); /* what is left of a cut character */
	stream_out(c, 2, NULL, 0);
	if (!got && rc < 0 && !x->dead) {
		/* the cell could not be sent: the interpreter is gone */
		ws_sess_stop(x);
		if (!x->end_cause[0])
			snprintf(x->end_cause, sizeof(x->end_cause),
				 "the session's interpreter is gone (%s)",
				 strerror(-rc));
	}

	if (got)
		end_by_result(c, timeout, &ce);
	else if (!x->dead)
		end_stuck(x, c, &ce);
	else
		end_by_code(x, c, &ce);
	snprintf(x->last_nonce, sizeof(x->last_nonce), "%s", c->nonce);
	struct cell_run run = {
		.code = code,
		.len = len,
		.cl = cl,
		.t0 = t0,
		.start_ns = start_ns,
		.before = &before,
		.one_shot = one_shot,
		.mark = x->ext ? x->ext->mark : NULL,
	};
	return cell_finish(s, c, &run, &ce, result, err);
}

/* A command's frame on the cells' channel: its start (body), or a kill
 * (body NULL). */
static int cmd_send(struct sess *x, const struct ws_cmd *m, const char *body,
		    size_t blen, double timeout)
{
	static const char kill_body[] = "{\"op\":\"kill\"}";
	char head[200];
	int rc = -EPIPE;

	if (!body) {
		body = kill_body;
		blen = sizeof(kill_body) - 1;
	}
	snprintf(head, sizeof(head),
		 "{\"n\":%lld,\"nonce\":\"%s\",\"timeout_s\":%g,\"len\":%zu,"
		 "\"x\":1,\"cmd\":%u}\n",
		 m->c->n, m->c->nonce, timeout, blen, m->id);
	pthread_mutex_lock(&x->send_lock);
	if (x->cells >= 0) {
		rc = ws_write_all(x->cells, head, strlen(head));
		if (!rc)
			rc = ws_write_all(x->cells, body, blen);
	}
	pthread_mutex_unlock(&x->send_lock);
	return rc;
}

/* Reads x's channels for up to ms when no cell (or other reader) holds
 * them, handing frames to their commands: false when another holds them
 * (its reads hand them on). A cell waiting for its turn gets it within
 * CMD_SLICE_MS. */
static bool cmd_pump(struct ws_server *s, struct sess *x, int ms)
{
	pthread_mutex_lock(&s->lock);
	bool mine = !x->busy && !x->wq;
	if (mine)
		x->busy = true;
	pthread_mutex_unlock(&s->lock);
	if (!mine)
		return false;
	struct pollfd q[4] = { { x->out[1], POLLIN, 0 },
			       { x->out[2], POLLIN, 0 },
			       { x->res, POLLIN, 0 },
			       { x->ctl, POLLIN, 0 } };
	(void)poll(q, 4, ms);
	ws_pump_sess(x);
	pthread_mutex_lock(&s->lock);
	x->busy = false;
	pthread_cond_broadcast(&x->turn);
	pthread_mutex_unlock(&s->lock);
	return true;
}

/* Streams what m's frames brought since the last call (its thread's:
 * the caller's fn is called on the caller's thread); at the end, says
 * what was left out of the stream. */
static void cmd_stream(struct sess *x, struct ws_cmd *m, bool end)
{
	struct ward_strbuf q[3] = { WARD_STRBUF_INIT, WARD_STRBUF_INIT,
				    WARD_STRBUF_INIT };

	pthread_mutex_lock(&x->cmd_lock);
	for (int i = 1; i <= 2; i++) {
		q[i] = m->q[i];
		m->q[i] = (struct ward_strbuf)WARD_STRBUF_INIT;
	}
	pthread_mutex_unlock(&x->cmd_lock);
	for (int i = 1; i <= 2; i++) {
		for (size_t off = 0; off < q[i].len; off += 65536) {
			size_t n = q[i].len - off < 65536 ? q[i].len - off
							  : 65536;
			stream_out(m->c, i, q[i].buf + off, n);
		}
		ward_strbuf_free(&q[i]);
		if (!end)
			continue;
		stream_out(m->c, i, NULL, 0);
		if (m->dropped[i] && m->c->fn) {
			char note[160];
			int n = snprintf(
				note, sizeof(note),
				"\n[ward: %lld bytes of this command's "
				"output were not streamed (the reader "
				"fell %d MiB behind); its result has "
				"them]\n",
				m->dropped[i], CMD_QUEUE >> 20);
			stream_out(m->c, i, note, (size_t)n);
		}
	}
}

/* How a command that never sent its end ended. */
static void cmd_no_end(struct sess *x, struct cell *c, bool gone, bool sent,
		       struct cell_end *ce)
{
	if (x->dead && !gone) {
		end_by_code(x, c, ce);
		return;
	}
	ce->status = c->cancelled || gone ? "cancelled" : "timeout";
	ce->timed_out = !c->cancelled && !gone;
	ce->interrupted = true;
	ce->error = json_pack(
		"{s:s, s:s, s:s}", "name", gone ? "SessionEnded" : "Cancelled",
		"value",
		!sent  ? "the command could not be started: the session's "
			 "interpreter is gone"
		: gone ? "the command was killed: its session ended"
		       : "the command did not end when killed",
		"traceback", "");
}

/* m's end as the hub said it, or as ward saw it. */
static void cmd_end(struct sess *x, struct ws_cmd *m, double timeout, bool gone,
		    bool sent, struct cell_end *ce)
{
	struct cell *c = m->c;

	if (!c->frame) {
		cmd_no_end(x, c, gone, sent, ce);
		return;
	}
	end_by_result(c, timeout, ce);
	/* the hub killed it as its session ended (the hub's fd 5 ended) */
	gone = gone || json_is_true(json_object_get(c->frame, "session_end"));
	if (c->cancelled && !strcmp(ce->status, "cancelled")) {
		json_decref(ce->error);
		ce->error = json_pack("{s:s, s:s, s:s}", "name", "Cancelled",
				      "value",
				      "the command was killed when its request "
				      "was cancelled (a kill, or its caller "
				      "went away)",
				      "traceback", "");
	} else if (gone) {
		ce->status = "cancelled";
		json_decref(ce->error);
		ce->error = json_pack("{s:s, s:s, s:s}", "name", "SessionEnded",
				      "value",
				      "the command was killed: its session "
				      "ended (closed, killed or timed out)",
				      "traceback", "");
	}
}

/* m's thread: until its end, reads x's channels (when no cell does),
 * streams its output, and kills it when its call is cancelled, its
 * session ends or its time is over (the hub times it; this is ward's
 * backstop). *gone: killed because the session ended. */
static void cmd_wait(struct ws_server *s, struct sess *x, struct ws_cmd *m,
		     struct ws_cancel *cancel, double timeout, bool *gone)
{
	long long deadline =
		timeout > 0
			? ws_mono_ms() + (long long)(timeout * 1000) + GRACE_MS
			: LLONG_MAX;
	bool killed = false;

	for (;;) {
		cmd_stream(x, m, false);
		pthread_mutex_lock(&x->cmd_lock);
		bool done = m->done;
		pthread_mutex_unlock(&x->cmd_lock);
		long long now = ws_mono_ms();
		pthread_mutex_lock(&s->lock);
		bool g = x->gone;
		pthread_mutex_unlock(&s->lock);
		if (done || x->dead) {
			/* ended with its session (closed: the hub killed it) */
			if (!done && g && !m->c->cancelled)
				*gone = true;
			return;
		}
		bool fired = atomic_load(&cancel->fired);
		if (!killed && (fired || g || now >= deadline)) {
			m->c->cancelled = fired;
			*gone = g && !fired;
			killed = true;
			cmd_send(x, m, NULL, 0, 0);
			if (deadline > now + GRACE_MS)
				deadline = now + GRACE_MS;
		} else if (killed && now >= deadline) {
			return;
		}
		if (cmd_pump(s, x, CMD_SLICE_MS))
			continue;
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += CMD_SLICE_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&x->cmd_lock);
		if (!m->done)
			pthread_cond_timedwait(&x->cmd_cond, &x->cmd_lock, &ts);
		pthread_mutex_unlock(&x->cmd_lock);
	}
}

/* See session-server.h. */
int ws_cmd_run(struct ws_server *s, struct sess *x, const char *body,
	       size_t blen, const char *code, size_t len,
	       const struct cell_limits *cl, json_t *mark, ws_stream_fn fn,
	       void *fn_arg, struct ws_cancel *cancel, json_t **result,
	       struct ws_error *err)
{
	struct ws_cmd *m = calloc(1, sizeof(*m));
	struct cell *c = calloc(1, sizeof(*c));
	struct cell_end ce = { "ok", false, false, NULL };
	struct wf_snap before;
	bool gone = false;

	if (!m || !c || ws_random_hex(c->nonce, 16) < 0) {
		free(m);
		free(c);
		return ws_fail(err, WS_E_INTERNAL,
			       "cannot start a command (memory, random bytes)");
	}
	c->x = x;
	c->fn = fn;
	c->fn_arg = fn_arg;
	c->cancel_fd = cancel->fd;
	c->errors = json_array();
	c->n = __atomic_add_fetch(&x->count, 1, __ATOMIC_SEQ_CST);
	m->c = c;
	wf_snap_take(ws_wd(x), &before);
	long long start_ns = ws_realtime_ns(), t0 = ws_mono_ms();
	pthread_mutex_lock(&x->cmd_lock);
	m->id = ++x->cmd_next;
	m->next = x->cmds;
	x->cmds = m;
	pthread_mutex_unlock(&x->cmd_lock);
	bool sent = !x->dead && cmd_send(x, m, body, blen, cl->timeout_s) == 0;
	if (sent)
		cmd_wait(s, x, m, cancel, cl->timeout_s, &gone);
	pthread_mutex_lock(&x->cmd_lock);
	for (struct ws_cmd **pp = &x->cmds; *pp; pp = &(*pp)->next)
		if (*pp == m) {
			*pp = m->next;
			break;
		}
	pthread_mutex_unlock(&x->cmd_lock);
	cmd_stream(x, m, true);
	cmd_end(x, m, cl->timeout_s, gone, sent, &ce);
	for (int i = 1; i <= 2; i++)
		ward_strbuf_free(&m->q[i]);
	free(m);
	struct cell_run run = {
		.code = code,
		.len = len,
		.cl = cl,
		.t0 = t0,
		.start_ns = start_ns,
		.before = &before,
		.mark = mark,
	};
	return cell_finish(s, c, &run, &ce, result, err);
}
