/*
 * session-pool.c - the warm pool of ward serve and ward mcp (--pool N,
 * --preload MODULES; the API is ws_server_pool in session.h).
 *
 * A pooled session is an ordinary session (its own worker, namespaces,
 * cgroup, Landlock domain, limits and run), started ahead with the
 * server's defaults: python, the server's profile or policy, no env, no
 * memory_mb. With --preload its interpreter first runs ward's warm-up
 * cell, which imports the modules under the session's own policy, as
 * cell 0 of its run ("phase": "warmup"). A session is handed out once,
 * to the first session.create or one-shot run whose settings are the
 * pool's, and then belongs to it like any other; nothing goes back to
 * the pool. Sessions for other settings start fresh, as without a pool.
 *
 * The warm-up's cell row is written when the session leaves the pool:
 * with the time it was handed out ("pool": {"handed_out_ns"}), or why it
 * was never used ("closed_unused": the server ended, it waited longer
 * than its lifetime allows, its interpreter ended). So a reviewer reads
 * in one row what was ward's (cell 0, and every event before its
 * handed_out_ns) and what was the caller's (cells 1, 2, ...).
 *
 * A pooled worker's wall limit is twice --max-life, and a session that
 * waited --max-life in the pool is replaced: handed out, it still has
 * its whole lifetime (session.create's life_s) ahead of it.
 *
 * One thread of the pool's keeps it full, one session at a time; a start
 * that fails is logged and retried later (backing off up to 30 s).
 */
#include "tools/agent/session.h"
#include "tools/agent/session-server.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "common/log.h"
#include "common/json.h"

enum {
	BACKOFF_MAX_MS = 30000,
	WARMUP_MIN_S = 120, /* a warm-up's time limit, at least (a refill
			     * runs behind the sessions in use) */
	/* a refill waits this long after a hand-out while the pool still
	 * has one ready: the caller's first cells come first (a fork of the
	 * zygote's template costs a tenth of an import: it does not wait) */
	REFILL_DELAY_MS = 1000,
};

/* A warm-up cell's row, kept until its session leaves the pool. */
struct ws_warm {
	char *code;
	size_t code_len;
	long long started_ns, ended_ns;
	char status[16];
	json_t *result;
};

struct ws_pool {
	int want;
	int prio;   /* the server's nice value */
	char *code; /* the warm-up cell (NULL: no --preload) */
	/* [s] the sessions ready, oldest first (linked by next) */
	struct sess *ready, **tail;
	int n_ready;
	int waiting;	    /* [s] ws_pool_take_wait callers waiting for one */
	long long taken_ms; /* [s] the last hand-out (monotonic) */
	bool stop;	    /* [s] */
	struct ws_cancel *cancel; /* fired at stop: a running warm-up ends */
	pthread_cond_t cond;	  /* [s] taken from, or stop */
	pthread_t th;
	bool th_started;
	struct ws_pzyg *zyg; /* sandboxes forked from a template, or NULL */
};

static void warm_free(struct ws_warm *w)
{
	if (!w)
		return;
	free(w->code);
	json_decref(w->result);
	free(w);
}

int ws_pool_keep_warmup(struct sess *x, const struct audit_cell *ac,
			json_t *result)
{
	struct ws_warm *w = calloc(1, sizeof(*w));

	if (!w || !(w->code = malloc(ac->code_len + 1)) ||
	    !(w->result = json_deep_copy(result))) {
		warm_free(w);
		return -ENOMEM;
	}
	memcpy(w->code, ac->code, ac->code_len);
	w->code[ac->code_len] = '\0';
	w->code_len = ac->code_len;
	w->started_ns = ac->started_ns;
	w->ended_ns = ac->ended_ns;
	snprintf(w->status, sizeof(w->status), "%s", ac->status);
	warm_free(x->warm);
	x->warm = w;
	return 0;
}

/* x's warm-up row written (cell 0), with when it was handed out
 * (handed_ns) or why it never was (why): 0, or -EIO. */
static int record_warmup(struct ws_server *s, struct sess *x,
			 long long handed_ns, const char *why)
{
	struct ws_warm *w = x->warm;

	if (!w)
		return 0;
	x->warm = NULL;
	json_object_set_new(w->result, "pool",
			    json_pack("{s:o, s:o}", "handed_out_ns",
				      handed_ns ? json_integer(handed_ns)
						: json_null(),
				      "closed_unused",
				      why ? json_string(why) : json_null()));
	char *rj = json_dumps(w->result, JSON_COMPACT);
	struct audit_cell ac = {
		.run_id = x->run_id,
		.n = 0,
		.code = w->code,
		.code_len = w->code_len,
		.started_ns = w->started_ns,
		.ended_ns = w->ended_ns,
		.status = w->status,
		.result_json = rj ? rj : "{}",
	};
	int rc = rj ? audit_cell(s->au, &ac) : -ENOMEM;
	if (rc < 0)
		warn("pool: session %s (run %s): its warm-up cell could not be "
		     "recorded: %s",
		     x->id, x->run_id, audit_errmsg(s->au));
	free(rj);
	warm_free(w);
	return rc < 0 ? -EIO : 0;
}

/* A pooled session closed unused (why: recorded with its warm-up). */
static void discard(struct ws_server *s, struct sess *x, const char *why)
{
	debug("pool: session %s (run %s) closed unused: %s", x->id, x->run_id,
	      why);
	record_warmup(s, x, 0, why);
	ws_sess_finish(s, x);
}

/* The warm-up cell: each module imported in turn, binding no name in the
 * caller's namespace; the first that fails names itself. */
static char *warmup_code(const char *modules, bool first_cell, char *msg,
			 size_t n)
{
	struct ward_strbuf sb = WARD_STRBUF_INIT;
	const char *p = modules;
	int count = 0;

	ward_strbuf_puts(&sb, "for __ward_m in (");
	while (*p) {
		size_t len = strcspn(p, ",");
		bool ok = len > 0 && p[0] != '.' && p[len - 1] != '.' &&
			  !(p[0] >= '0' && p[0] <= '9');
		for (size_t i = 0; ok && i < len; i++)
			ok = p[i] == '_' || p[i] == '.' ||
			     (p[i] >= 'a' && p[i] <= 'z') ||
			     (p[i] >= 'A' && p[i] <= 'Z') ||
			     (p[i] >= '0' && p[i] <= '9');
		if (!ok) {
			snprintf(msg, n,
				 "--preload: '%.*s' is not a module name; give "
				 "names separated by commas, e.g. "
				 "pandas,numpy",
				 (int)len, p);
			ward_strbuf_free(&sb);
			return NULL;
		}
		ward_strbuf_appendf(&sb, "'%.*s', ", (int)len, p);
		count++;
		p += len + (p[len] == ',');
	}
	if (!count) {
		snprintf(msg, n,
			 "--preload: no module named; give names "
			 "separated by commas, e.g. pandas,numpy");
		ward_strbuf_free(&sb);
		return NULL;
	}
	ward_strbuf_puts(
		&sb, "):\n"
		     "    try:\n"
		     "        __import__(__ward_m)\n"
		     "    except BaseException as __ward_e:\n"
		     "        raise ImportError('cannot import %s: "
		     "%s: %s' % (__ward_m, type(__ward_e).__name__, __ward_e)) "
		     "from None\n"
		     "del __ward_m\n");
	/* With first_cell, a first cell's common paths too, run once in the
	 * zygote's template (their lazy state is then shared) and again in
	 * each sandbox before its hand-out (the pages they write are then its
	 * own: a session's first cell pays no copy-on-write faults for
	 * them). Not for ward batch (an eager pool): there it would only
	 * move that cost ahead of each sample, and add the pages a sample
	 * never touches. */
	if (first_cell)
		ward_strbuf_puts(
			&sb,
		     "import sys as __ward_s\n"
		     "if 'pandas' in __ward_s.modules:\n"
		     "    __ward_d = __ward_s.modules['pandas'].DataFrame("
		     "{'x': list(range(8)), 'y': [0.5] * 8})\n"
		     "    __ward_d.describe(); __ward_d.median(); "
		     "__ward_d.groupby('x').sum(); repr(__ward_d)\n"
		     "    del __ward_d\n"
		     "if 'numpy' in __ward_s.modules:\n"
		     "    __ward_s.modules['numpy'].arange(8.0).mean()\n"
		     "del __ward_s\n");
	if (sb.truncated) {
		ward_strbuf_free(&sb);
		snprintf(msg, n, "out of memory");
		return NULL;
	}
	return ward_strbuf_steal(&sb);
}

/* Why a failed warm-up failed, into err. */
static int warmup_failed(json_t *res, struct ws_error *err)
{
	const char *st = json_string_value(json_object_get(res, "status"));
	json_t *e = json_object_get(res, "error");
	const char *v = json_string_value(json_object_get(e, "value"));

	if (st && !strcmp(st, "timeout"))
		return ws_fail(err, WS_E_INTERNAL,
			       "--preload: the warm-up did not finish within "
			       "the cell timeout (--timeout)");
	json_t *d = json_array_get(
		json_object_get(json_object_get(res, "policy"), "denials"), 0);
	const char *sc = json_string_value(json_object_get(d, "syscall")),
		   *tg = json_string_value(json_object_get(d, "target")),
		   *rule = json_string_value(json_object_get(d, "rule"));

	return ws_fail(err, WS_E_INTERNAL, "--preload: %s%s%s%s%s%s%s%s",
		       v    ? v
		       : st ? st
			    : "the warm-up failed",
		       sc ? " (the policy denied " : "", sc ? sc : "",
		       sc ? " " : "", tg && sc ? tg : "", sc ? ", rule " : "",
		       sc ? (rule ? rule : "?") : "", sc ? ")" : "");
}

/* A pooled session started (a fork of the zygote's template when zc is
 * its configuration) and warmed up (one reference, the pool's), or NULL
 * with err. */
struct ws_start ws_pool_settings(const struct ws_server *s)
{
	struct ws_start st = {
		.lang = "python",
		.profile = s->cfg.profile,
		.policy = s->cfg.policy,
		.timeout = s->cfg.cell_timeout_s,
		.life_s = s->cfg.max_life_s,
	};

	return st;
}

static struct sess *pool_make_one(struct ws_server *s, int nice, json_t *zc,
				  struct ws_error *err)
{
	struct ws_pool *p = s->pool;
	struct ws_start st = ws_pool_settings(s);

	st.worker_life_s = 2 * s->cfg.max_life_s;
	st.nice = nice;
	st.zygote = zc;
	struct sess *x = NULL;
	json_t *res = NULL;

	if (ws_sess_spawn(s, &st, &x, err) < 0)
		return NULL;
	x->refs = 1;
	if (!p->code)
		return x;
	struct cell_limits cl = {
		.timeout_s = s->cfg.cell_timeout_s > WARMUP_MIN_S
				     ? s->cfg.cell_timeout_s
				     : WARMUP_MIN_S,
	};
	cl.asked_s = cl.timeout_s;
	x->busy = x->warming = true;
	x->count = -1; /* the warm-up is cell 0; the caller's first is 1 */
	int rc = ws_run_cell(s, x, p->code, strlen(p->code), &cl, NULL, NULL,
			     p->cancel->fd, false, &res, err);
	x->busy = x->warming = false;
	const char *status = json_string_value(json_object_get(res, "status"));
	if (!rc && (!status || strcmp(status, "ok") || x->dead))
		rc = warmup_failed(res, err);
	if (rc < 0 && zc && x->dead) /* the fork's own failure */
		ws_fail(err, WS_E_INTERNAL, "its sandbox ended: %s",
			x->end_cause);
	json_decref(res);
	if (rc < 0) {
		discard(s, x,
			atomic_load(&p->cancel->fired)
				? "the server ended during its warm-up"
				: "its warm-up failed");
		return NULL;
	}
	return x;
}

/* A pooled session: a fork of the zygote's template when there is one,
 * else (or when the fork could not be had) one that imports for itself. */
static struct sess *pool_make(struct ws_server *s, int nice,
			      struct ws_error *err)
{
	struct ws_pool *p = s->pool;
	json_t *zc = ws_pzyg_child(s, p->zyg);
	struct sess *x = pool_make_one(s, nice, zc, err);

	if (!x && zc && !atomic_load(&p->cancel->fired)) {
		ws_pzyg_child_failed(p->zyg, err->message);
		x = pool_make_one(s, nice, NULL, err);
	}
	json_decref(zc);
	return x;
}

/* Whether a session for st may be a pooled one: the pool's settings. */
static bool fits(const struct ws_server *s, const struct ws_start *st)
{
	const char *a = st->profile, *b = s->cfg.profile;
	const char *c = st->policy, *d = s->cfg.policy;

	return !strcmp(st->lang, "python") && st->memory_mb <= 0 &&
	       json_object_size(st->env) == 0 &&
	       (a == b || (a && b && !strcmp(a, b))) &&
	       (c == d || (c && d && !strcmp(c, d)));
}

/* Lock held: the oldest ready session, taken off the pool (or NULL). */
static struct sess *pop(struct ws_pool *p)
{
	struct sess *x = p->ready;

	if (!x)
		return NULL;
	p->ready = x->next;
	if (!p->ready)
		p->tail = &p->ready;
	x->next = NULL;
	p->n_ready--;
	pthread_cond_broadcast(&p->cond);
	return x;
}

/* Lock held. */
static void push(struct ws_pool *p, struct sess *x)
{
	x->next = NULL;
	*p->tail = x;
	p->tail = &x->next;
	p->n_ready++;
	pthread_cond_broadcast(&p->cond); /* ws_pool_take_wait */
}

static bool aged(const struct ws_server *s, const struct sess *x, long long now)
{
	return now - x->created_ms >= (long long)(s->cfg.max_life_s * 1000);
}

/* Why a ready session cannot be handed out, or NULL. */
static const char *unusable(struct ws_server *s, struct sess *x)
{
	struct pollfd q = { x->ctl, POLLIN, 0 };

	if (x->ctl >= 0 && poll(&q, 1, 0) > 0)
		ws_read_ctl(x);
	if (x->dead)
		return "its interpreter ended while it waited in the pool";
	if (aged(s, x, ws_mono_ms()))
		return "it waited in the pool as long as --max-life";
	return NULL;
}

/* Every thread of pid and of the processes under it at the server's own
 * priority again (a refill ran at WS_REFILL_NICE: only root may lower a nice
 * value, and only root's refills are niced). */
static void renice_tree(pid_t pid, int prio)
{
	char path[64];
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(d = opendir(path)))
		return;
	while ((e = readdir(d))) {
		int tid = atoi(e->d_name);
		if (tid <= 0)
			continue;
		if (setpriority(PRIO_PROCESS, (id_t)tid, prio) < 0)
			warn_errno("pool: thread %d: setpriority", tid);
		snprintf(path, sizeof(path), "/proc/%d/task/%d/children",
			 (int)pid, tid);
		FILE *f = fopen(path, "re");
		int kid;
		while (f && fscanf(f, "%d", &kid) == 1)
			renice_tree(kid, prio);
		if (f)
			fclose(f);
	}
	closedir(d);
}

/* x, taken from the pool, made st's session: its times start now. */
static void hand_out(struct ws_server *s, struct sess *x,
		     const struct ws_start *st)
{
	double life = st->life_s < s->cfg.max_life_s ? st->life_s
						     : s->cfg.max_life_s;

	if (x->worker > 0 && s->drop)
		renice_tree(x->worker, s->pool->prio);
	if (x->fork_pid > 0 && s->drop) /* the template's nice, inherited */
		renice_tree(x->fork_pid, s->pool->prio);
	x->created_ns = ws_realtime_ns();
	x->created_ms = x->last_ms = x->shown_last_ms = ws_mono_ms();
	x->expires_ms = x->created_ms + (long long)(life * 1000);
	x->timeout_s = st->timeout;
	if (st->metadata && json_is_object(st->metadata))
		x->metadata = json_deep_copy(st->metadata);
	if (st->oneshot) {
		x->oneshot = x->busy = true;
		x->running = st->oneshot;
	}
}

int ws_pool_take(struct ws_server *s, const struct ws_start *st,
		 struct sess **out)
{
	struct ws_pool *p = s->pool;

	*out = NULL;
	if (!p || !fits(s, st))
		return 0;
	for (;;) {
		pthread_mutex_lock(&s->lock);
		struct sess *x = pop(p);
		p->taken_ms = ws_mono_ms();
		pthread_mutex_unlock(&s->lock);
		if (!x) {
			debug("pool: empty, a fresh session starts");
			return 0;
		}
		const char *why = unusable(s, x);
		if (why) {
			discard(s, x, why);
			continue;
		}
		/* fail closed: a warm-up not recorded is not handed out */
		if (record_warmup(s, x, ws_realtime_ns(), NULL) < 0) {
			ws_sess_finish(s, x);
			continue;
		}
		hand_out(s, x, st);
		debug("pool: session %s (run %s) handed out", x->id, x->run_id);
		*out = x;
		return 0;
	}
}

int ws_pool_take_wait(struct ws_server *s, const struct ws_start *st,
		      struct ws_cancel *cancel, struct sess **out)
{
	struct ws_pool *p = s->pool;

	for (;;) {
		int rc = ws_pool_take(s, st, out);
		if (rc < 0 || *out || !p || !fits(s, st))
			return rc;
		pthread_mutex_lock(&s->lock);
		p->waiting++;
		pthread_cond_broadcast(&p->cond); /* pool_main: one is wanted */
		while (!p->n_ready && !p->stop &&
		       !(cancel && atomic_load(&cancel->fired))) {
			struct timespec ts;
			ws_time_in(&ts, CLOCK_MONOTONIC, 100);
			pthread_cond_timedwait(&p->cond, &s->lock, &ts);
		}
		bool over = p->stop || (cancel && atomic_load(&cancel->fired));
		p->waiting--;
		pthread_mutex_unlock(&s->lock);
		if (over)
			return -ECANCELED;
	}
}

void ws_pool_want(struct ws_server *s, int n)
{
	if (!s->pool)
		return;
	pthread_mutex_lock(&s->lock);
	s->pool->want = n;
	pthread_mutex_unlock(&s->lock);
}

/* Lock held: a ready session that waited too long (or NULL). */
static struct sess *pop_aged(struct ws_server *s)
{
	struct ws_pool *p = s->pool;

	if (p->ready && aged(s, p->ready, ws_mono_ms()))
		return pop(p);
	return NULL;
}

static void *pool_main(void *arg)
{
	struct ws_server *s = arg;
	struct ws_pool *p = s->pool;
	long long backoff = 0, next_try = 0;
	struct ws_error err;

	pthread_mutex_lock(&s->lock);
	while (!p->stop) {
		struct sess *x = pop_aged(s);
		if (x) {
			pthread_mutex_unlock(&s->lock);
			discard(s, x,
				"it waited in the pool as long as --max-life "
				"(replaced)");
			pthread_mutex_lock(&s->lock);
			continue;
		}
		long long now = ws_mono_ms();
		long long calm = p->n_ready && !s->cfg.pool_eager
					 ? p->taken_ms + REFILL_DELAY_MS
					 : 0;
		if (next_try < calm)
			next_try = calm;
		/* as many as wanted, or as callers wait for */
		int want = p->want > p->waiting ? p->want : p->waiting;
		if (p->n_ready < want && now >= next_try) {
			pthread_mutex_unlock(&s->lock);
			x = pool_make(s, s->drop ? WS_REFILL_NICE : 0, &err);
			if (!x && !atomic_load(&p->cancel->fired))
				warn("pool: cannot start a pooled session: %s",
				     err.message);
			pthread_mutex_lock(&s->lock);
			if (x && !p->stop) {
				push(p, x);
				backoff = 0;
			} else if (x) {
				pthread_mutex_unlock(&s->lock);
				discard(s, x, "the server ended");
				pthread_mutex_lock(&s->lock);
			} else {
				backoff = backoff ? 2 * backoff : 1000;
				if (backoff > BACKOFF_MAX_MS)
					backoff = BACKOFF_MAX_MS;
				next_try = ws_mono_ms() + backoff;
			}
			continue;
		}
		long long wait = p->n_ready < want ? next_try - now : 1000;
		struct timespec ts;
		ws_time_in(&ts, CLOCK_MONOTONIC, wait > 1000 ? 1000 : wait);
		pthread_cond_timedwait(&p->cond, &s->lock, &ts);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static void pool_destroy(struct ws_server *s, struct ws_pool *p)
{
	ws_pzyg_free(s, p->zyg);
	p->zyg = NULL;
	pthread_cond_destroy(&p->cond);
	ws_cancel_free(p->cancel);
	free(p->code);
	free(p);
}

int ws_server_pool(struct ws_server *s, int n, const char *preload, bool fork,
		   char *msg, size_t msg_len)
{
	struct ws_pool *p = calloc(1, sizeof(*p));
	pthread_condattr_t ca;
	struct ws_error err;

	if (!p)
		return -ENOMEM;
	if (n <= 0) {
		snprintf(msg, msg_len, "--pool: give a positive number");
		free(p);
		return -EINVAL;
	}
	if (preload && !(p->code = warmup_code(preload, !s->cfg.pool_eager, msg,
					       msg_len))) {
		free(p);
		return -EINVAL;
	}
	if (!(p->cancel = ws_cancel_new())) {
		free(p->code);
		free(p);
		return -ENOMEM;
	}
	p->want = n;
	errno = 0;
	p->prio = getpriority(PRIO_PROCESS, 0);
	if (errno)
		p->prio = 0;
	p->tail = &p->ready;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cond, &ca);
	pthread_condattr_destroy(&ca);
	s->pool = p;
	if (p->code)
		p->zyg = ws_pzyg_new(s, p->code, fork, p->cancel->fd);
	/* the first one here: a preload that fails stops the server */
	struct sess *x = pool_make(s, 0, &err);
	if (!x) {
		snprintf(msg, msg_len, "%s", err.message);
		s->pool = NULL;
		pool_destroy(s, p);
		return -EINVAL;
	}
	push(p, x);
	int rc = pthread_create(&p->th, NULL, pool_main, s);
	if (rc) {
		snprintf(msg, msg_len, "--pool: no thread: %s", strerror(rc));
		ws_pool_free(s);
		return -rc;
	}
	p->th_started = true;
	return 0;
}

void ws_pool_free(struct ws_server *s)
{
	struct ws_pool *p = s->pool;
	struct sess *all, *x, *next;

	if (!p)
		return;
	pthread_mutex_lock(&s->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&s->lock);
	ws_cancel_fire(p->cancel);
	if (p->th_started)
		pthread_join(p->th, NULL);
	all = p->ready;
	p->ready = NULL;
	/* recorded, then EOF to every driver at once, then reaped */
	for (x = all; x; x = x->next) {
		debug("pool: session %s (run %s) closed unused: the server "
		      "ended",
		      x->id, x->run_id);
		record_warmup(s, x, 0, "the server ended");
		ws_close_fd(&x->cells);
	}
	for (x = all; x; x = next) {
		next = x->next;
		ws_sess_finish(s, x);
	}
	/* its template outlives the sessions forked from it (ws_server_free
	 * ends it after them) */
	s->zyg_end = p->zyg;
	p->zyg = NULL;
	s->pool = NULL;
	pool_destroy(s, p);
}

int ws_pool_count_arg(const char *arg)
{
	char *end;
	long v = strtol(arg, &end, 10);

	if (end == arg || *end || v < 1 || v > 64)
		die("--pool %s: give a number of sessions from 1 to 64", arg);
	return (int)v;
}

bool ws_pool_fork_arg(const char *arg)
{
	if (strcmp(arg, "on") && strcmp(arg, "off"))
		die("--pool-fork %s: give on or off", arg);
	return !strcmp(arg, "on");
}

void ws_pool_start(struct ws_server *s, const struct ws_pool_opts *po,
		   const char *who)
{
	char msg[600];

	if (po->preload && !po->n) {
		ws_server_free(s);
		die("%s: --preload needs --pool N (the pooled sessions are "
		    "the ones that import the modules ahead)",
		    who);
	}
	if (!po->n)
		return;
	int rc = ws_server_pool(s, po->n, po->preload, !po->no_fork, msg,
				sizeof(msg));
	if (rc < 0) {
		ws_server_free(s);
		die("%s: the pool cannot start: %s", who,
		    rc == -EINVAL ? msg : strerror(-rc));
	}
	debug("%s: pool of %d ready to fill%s%s", who, po->n,
	      po->preload ? ", preloading " : "",
	      po->preload ? po->preload : "");
}
