/*
 * pool-zygote.c - the warm pool's zygote (--pool N --preload MODULES,
 * --pool-fork on): one template interpreter per server imports the
 * modules once, under the pool's policy, in a run of its own (code_name
 * "zygote-template"); each pooled sandbox is then a fork of it, which its
 * own worker attaches to (zygote-worker.c, zygote.c; docs/performance.md).
 *
 * Only for the pool's own settings (python, the server's policy), and only
 * where a fork can get its own sandbox: ward as root, a view of its own
 * (tracer_view_possible), user namespaces (tracer_zygote_possible), and a
 * policy a fork can keep (no network beyond loopback, no egress proxy, no
 * raw syscall rules, no questions, no setup phase). A template that cannot start or that ends is
 * said once; the pool then makes its sandboxes as without the zygote, and
 * tries a new template later (backing off up to 30 s).
 *
 * The broker's socket is in a directory of the server's own, made as a
 * workdir is (/tmp/ward-XXXXXX, mode 0700, locked: a sweep removes it when
 * the server was killed), so that only root can reach it.
 */
#include "tools/agent/session-server.h"
#include "tools/agent/session-int.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "policy/policy.h"
#include "tools/run/runrec.h"

enum { ZYG_BACKOFF_MAX_MS = 30000, ZYG_WARMUP_MS = 120000 };

struct ws_pzyg {
	char *warmup;
	char dir[64], broker[96];
	int dir_lock;
	int cancel_fd;	      /* the pool's: the server ends (borrowed) */
	struct sess *tmpl;    /* up (its warm-up done), or NULL */
	struct sess *retired; /* earlier ones, until their runs end */
	long long next_ms, backoff_ms;
	bool said; /* the zygote's failure logged, since it last worked */
};

/* Why the pool's settings cannot have a zygote, or NULL. */
static const char *unfit(const struct ws_server *s)
{
	struct policy *pol = NULL;
	struct policy_error perr;
	const char *why = NULL;

	if (geteuid() != 0)
		return "ward is not root (a fork is seized from outside)";
	if (!tracer_view_possible() || !tracer_zygote_possible())
		return "this system cannot give a fork its own namespaces";
	memset(&perr, 0, sizeof(perr));
	if ((s->cfg.policy
		     ? policy_load_file(s->cfg.policy, &pol, &perr)
		     : policy_load_profile(s->cfg.profile, &pol, &perr)) < 0)
		return "its policy does not load";
	if (policy_net_beyond_loopback(pol) || policy_net_proxy(pol))
		why = "the policy reaches beyond loopback";
	else if (policy_syscall_rule_count(pol) > 0)
		why = "the policy has raw syscall rules";
	else if (policy_asks(pol))
		why = "the policy asks questions";
	else if (policy_phase(pol, "setup"))
		why = "the policy has a setup phase";
	policy_free(pol);
	return why;
}

struct ws_pzyg *ws_pzyg_new(struct ws_server *s, const char *warmup, bool on,
			    int cancel_fd)
{
	struct ws_pzyg *z;
	const char *why = !on ? "--pool-fork off" : unfit(s);

	if (why) {
		debug("pool: no zygote: %s", why);
		return NULL;
	}
	if (!(z = calloc(1, sizeof(*z))) || !(z->warmup = strdup(warmup))) {
		free(z);
		return NULL;
	}
	snprintf(z->dir, sizeof(z->dir), "/tmp/ward-XXXXXX");
	if (!mkdtemp(z->dir)) {
		warn_errno("pool: no zygote: %s", z->dir);
		free(z->warmup);
		free(z);
		return NULL;
	}
	z->dir_lock = ward_workdir_lock(z->dir);
	z->cancel_fd = cancel_fd;
	snprintf(z->broker, sizeof(z->broker), "%s/broker", z->dir);
	return z;
}

/* z's template out of use: told to end (EOF on its fork requests) and
 * kept until its run ends. Its forks live in its pid namespace, so its
 * run lasts as long as the last of them, and ending it by force (as
 * ws_sess_stop would after CLOSE_MS) would end sessions handed out. */
static void tmpl_retire(struct ws_pzyg *z)
{
	struct sess *x = z->tmpl;

	if (!x)
		return;
	ws_close_fd(&x->cells);
	x->next = z->retired;
	z->retired = x;
	z->tmpl = NULL;
}

/* The output a template writes, read off (it is in its run's record). */
static void tmpl_drain(struct sess *x)
{
	char buf[4096];

	for (int i = 1; i <= 2; i++) {
		struct pollfd q = { x->out[i], POLLIN, 0 };
		while (x->out[i] >= 0 && poll(&q, 1, 0) > 0 &&
		       read(x->out[i], buf, sizeof(buf)) > 0)
			;
	}
}

/* Whether the template is still up (its worker said nothing of its end). */
static bool tmpl_alive(struct sess *x)
{
	struct pollfd q = { x->ctl, POLLIN, 0 };

	tmpl_drain(x);
	while (x->ctl >= 0 && !x->dead && poll(&q, 1, 0) > 0)
		ws_read_ctl(x);
	return !x->dead;
}

/* The retired templates whose runs have ended, closed. */
static void reap_retired(struct ws_server *s, struct ws_pzyg *z)
{
	struct sess **pp = &z->retired, *x;

	while ((x = *pp)) {
		if (tmpl_alive(x)) {
			pp = &x->next;
			continue;
		}
		*pp = x->next;
		ws_sess_finish(s, x);
	}
}

/* After ws_sess_spawn: the template's warm-up done ({"zygote": "ready"}),
 * else -1 with err. */
static int tmpl_ready(struct sess *x, int cancel_fd, struct ws_error *err)
{
	int got = ws_ctl_line(x, ZYG_WARMUP_MS, cancel_fd);
	json_t *j = got > 0 ? json_loads(x->ctlbuf, 0, NULL) : NULL;
	const char *z = json_string_value(json_object_get(j, "zygote"));
	const char *e = json_string_value(json_object_get(j, "error"));
	json_t *end = json_object_get(j, "end");
	int rc = 0;

	if (!z || strcmp(z, "ready"))
		rc = ws_fail(
			err, WS_E_INTERNAL, "%s%s",
			e     ? e
			: end ? "it ended before its warm-up was done: "
			: got ? "its supervisor ended"
			      : "its warm-up did not end within 120 s",
			end ? json_string_value(json_object_get(end, "cause"))
			    : "");
	if (got > 0)
		ws_ctl_pop(x);
	json_decref(j);
	return rc;
}

/* A template started and warmed up (z->tmpl), or -1 with err. */
static int tmpl_start(struct ws_server *s, struct ws_pzyg *z,
		      struct ws_error *err)
{
	json_t *zc = json_pack("{s:s, s:s, s:s}", "role", "template", "broker",
			       z->broker, "warmup", z->warmup);
	struct ws_start st = ws_pool_settings(s);
	struct sess *x = NULL;
	st.zygote = zc;
	st.nice = s->drop ? WS_REFILL_NICE : 0; /* its forks' (hand_out) */
	int rc = zc ? ws_sess_spawn(s, &st, &x, err)
		    : ws_fail(err, WS_E_INTERNAL, "out of memory");

	json_decref(zc);
	if (rc < 0)
		return -1;
	x->refs = 1;
	if (tmpl_ready(x, z->cancel_fd, err) < 0) {
		ws_sess_finish(s, x);
		return -1;
	}
	z->tmpl = x;
	return 0;
}

/* The zygote out of use for a while (what happened: said once until it
 * works again), its template ended. */
static void zyg_down(struct ws_pzyg *z, const char *what, const char *why)
{
	if (!z->said)
		warn("pool: the zygote template %s: %s; pooled sandboxes "
		     "import the modules themselves until a new one is up",
		     what, why);
	z->said = true;
	tmpl_retire(z);
	z->backoff_ms = z->backoff_ms ? 2 * z->backoff_ms : 1000;
	if (z->backoff_ms > ZYG_BACKOFF_MAX_MS)
		z->backoff_ms = ZYG_BACKOFF_MAX_MS;
	z->next_ms = ws_mono_ms() + z->backoff_ms;
}

/* The template up, started if need be and time: 0, or -1. */
static int tmpl_up(struct ws_server *s, struct ws_pzyg *z)
{
	struct ws_error err;

	reap_retired(s, z);
	if (z->tmpl && tmpl_alive(z->tmpl))
		return 0;
	if (z->tmpl) {
		zyg_down(z, "ended",
			 z->tmpl->end_cause[0] ? z->tmpl->end_cause
					       : "its run ended");
		return -1;
	}
	if (ws_mono_ms() < z->next_ms)
		return -1;
	if (tmpl_start(s, z, &err) < 0) {
		zyg_down(z, "cannot start", err.message);
		return -1;
	}
	z->backoff_ms = 0;
	if (z->said)
		warn("pool: the zygote template is up again (run %s)",
		     z->tmpl->run_id);
	z->said = false;
	debug("pool: zygote template up: run %s", z->tmpl->run_id);
	return 0;
}

json_t *ws_pzyg_child(struct ws_server *s, struct ws_pzyg *z)
{
	if (!z || tmpl_up(s, z) < 0)
		return NULL;
	return json_pack("{s:s, s:s, s:s}", "role", "child", "broker",
			 z->broker, "origin", z->tmpl->run_id);
}

void ws_pzyg_child_failed(struct ws_pzyg *z, const char *why)
{
	if (z)
		zyg_down(z, "could not give a sandbox", why);
}

void ws_pzyg_free(struct ws_server *s, struct ws_pzyg *z)
{
	if (!z)
		return;
	tmpl_retire(z);
	/* EOF to each first, then each closed (the sessions forked from
	 * them are closed by now: ws_server_free) */
	for (struct sess *x = z->retired, *next; x; x = next) {
		next = x->next;
		ws_sess_finish(s, x);
	}
	ward_rm_workdir(z->dir); /* its lock too */
	if (z->dir_lock >= 0)
		close(z->dir_lock);
	free(z->warmup);
	free(z);
}
