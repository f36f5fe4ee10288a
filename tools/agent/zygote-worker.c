/*
 * zygote-worker.c - a session worker's two zygote roles (config "zygote":
 * {"role", "broker", "warmup" | "origin"}; docs/performance.md, "The
 * warm pool and the zygote"; the broker: zygote.c).
 *
 * template: the run's interpreter is a template (WARD_ZYGOTE=template in
 * its environment, the warm-up code in WARD_ZYGOTE_WARMUP; the driver
 * drops both before it forks). Its fd 5 is tctl, the template's end of a
 * SOCK_SEQPACKET pair whose other end the broker holds; its fd 6 a pipe
 * this worker reads itself (not through the tracer, which drops a first
 * ready line): {"ward":"ready"} there says the warm-up is done. A thread
 * of the worker's then tells the server ({"zygote": "ready"} on the
 * control socket) and serves fork requests at the broker's path until the
 * server closes the cell socket (EOF: the template is told to end, by
 * EOF on its fd 5), the broker finds the template out of order, or the
 * run ends.
 *
 * child: the run attaches to a fork of the template (tracer_opts.attach):
 * the fds the tracer gives it, the cell socket and the result pipe are
 * sent to the broker, whose answer must name the template's run the
 * server gave (origin) and this worker's own policy.
 */
#include "tools/agent/session-int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "tools/agent/zygote.h"
#include "tools/run/runrec.h"

struct ws_zyg {
	bool template;
	const char *broker, *warmup, *origin; /* the config's (borrowed) */
	char pol_sha[72];
	char err[400]; /* why the attach failed (child) */
	int side_w;    /* the result pipe's write end (child; borrowed) */
	/* template: tctl, the hand-off pipe, the side pipe's read end
	 * (borrowed), the thread's stop (an eventfd) */
	int tctl[2], handoff[2], side_r, stop;
	struct ward_record *rec;
	pthread_t th;
	bool th_started;
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void zyg_free(struct ws_zyg *z)
{
	for (int i = 0; i < 2; i++) {
		close_fd(&z->tctl[i]);
		close_fd(&z->handoff[i]);
	}
	close_fd(&z->stop);
	free(z);
}

int ws_zyg_new(json_t *cfg, struct ws_zyg **out, char *err, size_t n)
{
	json_t *zc = json_object_get(cfg, "zygote");
	const char *role = NULL;
	struct ws_zyg *z;

	*out = NULL;
	if (!zc)
		return 0;
	if (!(z = calloc(1, sizeof(*z))))
		return -ENOMEM;
	z->tctl[0] = z->tctl[1] = z->handoff[0] = z->handoff[1] = -1;
	z->stop = z->side_r = z->side_w = -1;
	if (json_unpack(zc, "{s:s, s:s, s?s, s?s}", "role", &role, "broker",
			&z->broker, "warmup", &z->warmup, "origin",
			&z->origin) < 0 ||
	    (strcmp(role, "template") && strcmp(role, "child")) ||
	    (!strcmp(role, "template") && !z->warmup) ||
	    (!strcmp(role, "child") && !z->origin)) {
		snprintf(err, n,
			 "session worker: bad zygote configuration (give "
			 "{\"role\": \"template\", \"broker\", \"warmup\"} or "
			 "{\"role\": \"child\", \"broker\", \"origin\"})");
		free(z);
		return -EINVAL;
	}
	z->template = !strcmp(role, "template");
	*out = z;
	return 0;
}

const char *ws_zyg_warmup(const struct ws_zyg *z)
{
	return z && z->template ? z->warmup : NULL;
}

json_t *ws_zyg_env(const struct ws_zyg *z, json_t *env)
{
	json_t *e = env ? json_deep_copy(env) : json_object();

	if (e && z && z->template &&
	    (json_object_set_new(e, "WARD_ZYGOTE", json_string("template")) ||
	     json_object_set_new(e, "WARD_ZYGOTE_WARMUP",
				 json_string(z->warmup)))) {
		json_decref(e);
		return NULL;
	}
	return e;
}

/* ---- the child: its attach ---------------------------------------- */

/* tracer_opts.attach: a fork of the template, given the run's fds. */
static pid_t child_attach(void *arg, const struct tracer_attach_fds *fds)
{
	struct ws_zyg *z = arg;
	int f[WS_ZYG_NFDS] = { fds->out_w, fds->err_w, fds->sync_r, WS_FD_CELLS,
			       z->side_w };
	char run[64] = "";
	pid_t pid = ws_zygote_fork(z->broker, f, z->pol_sha, run, sizeof(run),
				   z->err, sizeof(z->err));

	if (pid > 0 && strcmp(run, z->origin)) {
		/* its sync pipe's EOF (the tracer's, at this error) ends it */
		snprintf(z->err, sizeof(z->err),
			 "the zygote's broker forked run %s's template, not "
			 "run %s's (replaced meanwhile)",
			 run, z->origin);
		return -ESTALE;
	}
	/* the server finds the interpreter in its tree (interrupts) */
	if (pid > 0)
		ws_worker_reply(json_pack("{s:i}", "zygote_pid", (int)pid));
	return pid;
}

/* ---- the template: the ready line, then the broker ------------------ */

/* What the template's first lines on fd 6 say: 1 ready, 0 not yet, -1 it
 * ended or failed first (why in err). */
static int ready_line(struct ws_zyg *z, char *buf, size_t *len, char *err,
		      size_t n)
{
	ssize_t r = read(z->side_r, buf + *len, 4095 - *len);
	char *nl;

	if (r <= 0) {
		if (!err[0])
			snprintf(err, n,
				 "it ended before its warm-up was done");
		return -1;
	}
	*len += (size_t)r;
	buf[*len] = '\0';
	while ((nl = strchr(buf, '\n'))) {
		*nl = '\0';
		if (!strcmp(buf, "{\"ward\":\"ready\"}"))
			return 1;
		/* the driver's failure (the warm-up's error), kept */
		json_t *j = json_loads(buf, 0, NULL);
		json_t *e = json_object_get(j, "error");
		const char *v = json_string_value(json_object_get(e, "value"));
		snprintf(err, n, "%s", v ? v : buf);
		json_decref(j);
		*len -= (size_t)(nl + 1 - buf);
		memmove(buf, nl + 1, *len + 1);
	}
	if (*len == 4095)
		*len = 0;
	return 0;
}

/* Waits for the ready line, the server's EOF or the stop: 1 ready, 0
 * stopped (by the server or the run's end), -1 failed (err). */
static int await_ready(struct ws_zyg *z, char *err, size_t n)
{
	char buf[4096];
	size_t len = 0;

	for (;;) {
		struct pollfd q[3] = { { z->side_r, POLLIN, 0 },
				       { WS_FD_CELLS, POLLIN, 0 },
				       { z->stop, POLLIN, 0 } };
		if (poll(q, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			snprintf(err, n, "poll: %s", strerror(errno));
			return -1;
		}
		if (q[1].revents || q[2].revents)
			return 0;
		int rc = ready_line(z, buf, &len, err, n);
		if (rc)
			return rc;
	}
}

/* Serves fork requests until the server's EOF, the stop, or a template
 * out of order. */
static void serve(struct ws_zyg *z, struct ws_zbroker *b)
{
	char drop[4096];

	for (;;) {
		struct pollfd q[4] = { { ws_zbroker_fd(b), POLLIN, 0 },
				       { WS_FD_CELLS, POLLIN, 0 },
				       { z->stop, POLLIN, 0 },
				       { z->side_r, POLLIN, 0 } };
		if (poll(q, 4, -1) < 0) {
			if (errno == EINTR)
				continue;
			warn_errno("zygote template: poll");
			return;
		}
		if (q[1].revents || q[2].revents)
			return;
		if (q[3].revents && read(z->side_r, drop, sizeof(drop)) <= 0)
			z->side_r = -1; /* ended: its run ends too */
		if (q[0].revents && ws_zbroker_serve(b) == -EPIPE) {
			warn("zygote template (run %s): out of order, ended",
			     z->rec->run_id);
			return;
		}
	}
}

static void *template_main(void *arg)
{
	struct ws_zyg *z = arg;
	struct ws_zbroker *b = NULL;
	char err[600] = "";
	int rc = await_ready(z, err, sizeof(err));

	/* the code has its end (it is up: the tracer gave it its fds), so
	 * that the broker's sends see the template gone when it is */
	if (rc > 0)
		close_fd(&z->tctl[1]);
	if (rc > 0 &&
	    ws_zbroker_new(z->broker, z->tctl[0], z->handoff[0], z->rec->run_id,
			   z->pol_sha, &b, err, sizeof(err)) < 0)
		rc = -1;
	if (rc > 0)
		ws_worker_reply(json_pack("{s:s, s:s}", "zygote", "ready",
					  "broker", z->broker));
	else if (rc < 0)
		ws_worker_reply(json_pack("{s:s+}", "error",
					  "the zygote template: ", err));
	if (rc > 0)
		serve(z, b);
	ws_zbroker_free(b);
	/* EOF on its fd 5: the template's driver ends, and the run */
	shutdown(z->tctl[0], SHUT_RDWR);
	return NULL;
}

/* The template's fds and options; its thread started. */
static int template_setup(struct ws_zyg *z, struct tracer_opts *to,
			  const int side[2], char *err, size_t n)
{
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, z->tctl) <
		    0 ||
	    pipe2(z->handoff, O_CLOEXEC) < 0 ||
	    (z->stop = eventfd(0, EFD_CLOEXEC)) < 0) {
		snprintf(err, n, "zygote template: %s", strerror(errno));
		return -errno;
	}
	z->side_r = side[0];
	to->code_fds[0] = z->tctl[1];
	to->code_fds[1] = side[1];
	to->n_code_fds = 2;
	to->side_in = to->side_out = -1; /* read here: template_main */
	to->side_output = NULL;
	/* its forks would inherit one CPU, and no ready line unpins it */
	to->pin_cpu = -1;
	to->zygote_handoff_fd = z->handoff[1];
	to->ask_fd = to->wall_fd = -1;
	/* its life is the server's: the server ends it */
	to->limits.wall_ms = 0;
	to->limits.cpu_s = 0;
	int rc = pthread_create(&z->th, NULL, template_main, z);
	if (rc) {
		snprintf(err, n, "zygote template: no thread: %s",
			 strerror(rc));
		return -rc;
	}
	z->th_started = true;
	return 0;
}

int ws_zyg_setup(struct ws_zyg *z, struct tracer_opts *to,
		 struct ward_record *rec, const char *pol_sha,
		 const int side[2], char *err, size_t n)
{
	if (!z)
		return 0;
	snprintf(z->pol_sha, sizeof(z->pol_sha), "%s", pol_sha);
	z->rec = rec;
	if (z->template)
		return template_setup(z, to, side, err, n);
	z->side_w = side[1];
	to->attach = child_attach;
	to->attach_arg = z;
	to->zygote_child = true;
	to->zygote_origin = z->origin;
	return 0;
}

void ws_zyg_end(struct ws_zyg *z, struct tracer_result *r)
{
	uint64_t one = 1;

	if (!z)
		return;
	if (z->th_started) {
		if (write(z->stop, &one, sizeof(one)) < 0)
			warn_errno("zygote template: its thread's stop");
		pthread_join(z->th, NULL);
	}
	if (r && z->err[0])
		snprintf(r->setup_error, sizeof(r->setup_error), "zygote: %s",
			 z->err);
	zyg_free(z);
}
