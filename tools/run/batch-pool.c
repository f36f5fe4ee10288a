/*
 * batch-pool.c - ward batch --pool N --preload MODULES: python samples
 * run in sandboxes from the warm pool of ward serve (tools/agent/
 * session-pool.c), each used once for one sample and thrown away, the
 * pool refilling behind them. A sample's run is the pooled session's run:
 * the warm-up its cell 0 (ward's, before its hand-out), the sample its
 * cell 1, run as `ward run` runs a script (tools/agent/session-script.c).
 * Each pooled sample runs on a thread of its own, which says when it
 * ends on a pipe the batch's loop polls.
 */
#include "tools/run/batch.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "policy/policy.h"
#include "tools/agent/session.h"

#define DEFAULT_WALL_MS 60000 /* ward run's, without --timeout or policy */

struct batch_pool {
	struct ws_server *srv;
	int note[2]; /* a slot number per pooled sample ended */
	double wall_s;
	const char *batch_id;
};

struct batch_pooled {
	struct batch_pool *bp;
	struct batch_sample *s;
	int slot;
	pthread_t th;
	struct ws_cancel *cancel;
	struct ws_script sc;
	struct ws_script_file *files;
	char *code, *name, *tag;
	struct ws_script_run run;
	struct ws_error err;
	int rc;
};

/* ward run's wall limit for these options: --timeout, else the policy's,
 * else its default. 0, or -EINVAL with err. */
static int wall_of(const struct batch_pool_cfg *c, double *wall_s, char *err,
		   size_t n)
{
	struct policy *pol = NULL;
	struct policy_error perr;
	struct ward_limits lim;
	char *end, msg[600];

	memset(&perr, 0, sizeof(perr));
	if ((c->policy
		     ? policy_load_file(c->policy, &pol, &perr)
		     : policy_load_profile(c->profile ? c->profile : "default",
					   &pol, &perr)) < 0) {
		policy_error_format(&perr, msg, sizeof(msg));
		snprintf(err, n, "--pool: bad policy: %s", msg);
		return -EINVAL;
	}
	/* a pooled sandbox's control socket carries its one-shot limit,
	 * and a policy that asks needs it for its questions */
	if (policy_asks(pol)) {
		policy_free(pol);
		snprintf(err, n, "--pool: the policy has ask rules, which a "
				 "pooled sandbox does not serve: every sample "
				 "runs in a fresh one (nobody answers a "
				 "batch's questions: each is denied)");
		return -ENOTSUP;
	}
	policy_limits(pol, &lim);
	policy_free(pol);
	if (c->timeout) {
		*wall_s = strtod(c->timeout, &end);
		if (end == c->timeout || *end || *wall_s <= 0) {
			snprintf(err, n, "--timeout %s: give seconds",
				 c->timeout);
			return -EINVAL;
		}
		return 0;
	}
	*wall_s = (double)(lim.wall_ms ? lim.wall_ms : DEFAULT_WALL_MS) / 1000;
	return 0;
}

int batch_pool_new(const struct batch_pool_cfg *c, struct batch_pool **out,
		   char *err, size_t n)
{
	struct batch_pool *bp = calloc(1, sizeof(*bp));
	struct ws_config cfg = { .db = c->db,
				 .profile = c->policy ? NULL : c->profile,
				 .policy = c->policy,
				 /* the samples are the only callers */
				 .pool_eager = true };
	char msg[600];
	int rc;

	*out = NULL;
	if (!bp)
		return -ENOMEM;
	bp->note[0] = bp->note[1] = -1;
	bp->batch_id = c->batch_id;
	rc = wall_of(c, &bp->wall_s, err, n);
	if (!rc && pipe2(bp->note, O_CLOEXEC) < 0)
		rc = -errno;
	cfg.cell_timeout_s = bp->wall_s;
	if (!rc)
		rc = ws_server_new(&cfg, &bp->srv);
	if (!rc) {
		rc = ws_server_pool(bp->srv, c->n, c->preload, !c->no_fork,
				    msg, sizeof(msg));
		if (rc == -EINVAL)
			snprintf(err, n, "--pool: the pool cannot start: %s",
				 msg);
	}
	if (rc) {
		if (rc != -EINVAL && rc != -ENOTSUP)
			snprintf(err, n, "--pool: %s", strerror(-rc));
		batch_pool_free(bp);
		return rc;
	}
	*out = bp;
	return 0;
}

void batch_pool_free(struct batch_pool *bp)
{
	if (!bp)
		return;
	ws_server_free(bp->srv); /* the sandboxes never used: recorded so */
	for (int i = 0; i < 2; i++)
		if (bp->note[i] >= 0)
			close(bp->note[i]);
	free(bp);
}

struct audit *batch_pool_audit(const struct batch_pool *bp)
{
	return ws_server_audit(bp->srv);
}

int batch_pool_fd(const struct batch_pool *bp)
{
	return bp->note[0];
}

void batch_pool_want(struct batch_pool *bp, int n)
{
	ws_pool_want(bp->srv, n);
}

bool batch_poolable(const struct batch_sample *s)
{
	const char *dot = s->path ? strrchr(s->path, '.') : NULL;

	if (s->lang)
		return !strcmp(s->lang, "python");
	return !s->path || (dot && !strcmp(dot, ".py"));
}

static void pooled_free(struct batch_pooled *p)
{
	if (!p)
		return;
	ws_cancel_free(p->cancel);
	free(p->files);
	free(p->code);
	free(p->name);
	free(p->tag);
	free(p);
}

static void *pooled_main(void *arg)
{
	struct batch_pooled *p = arg;
	ssize_t w;

	p->rc = ws_pool_script(p->bp->srv, &p->sc, &p->run, &p->err);
	w = write(p->bp->note[1], &p->slot, sizeof(p->slot));
	(void)w; /* a pipe of ints, far from full */
	return NULL;
}

/* A file's bytes (malloc'd, NUL after them): 0 or -errno. */
static int read_whole(const char *path, char **out, size_t *len)
{
	FILE *f = fopen(path, "re");
	size_t cap = 4096, n = 0, r;
	char *b = malloc(cap);
	int rc = 0;

	if (!f || !b) {
		rc = f ? -ENOMEM : -errno;
		goto out;
	}
	while ((r = fread(b + n, 1, cap - n - 1, f)) > 0) {
		n += r;
		if (n + 1 == cap) {
			char *nb = realloc(b, cap *= 2);
			if (!nb) {
				rc = -ENOMEM;
				goto out;
			}
			b = nb;
		}
	}
	if (ferror(f))
		rc = -EIO;
out:
	if (f)
		fclose(f);
	if (rc) {
		free(b);
		return rc;
	}
	b[n] = '\0';
	*out = b;
	*len = n;
	return 0;
}

/* The script: the sample's code, or its file's (read now, as ward run
 * reads it), under the name ward run gives it in the workdir. */
static int script_of(struct batch_pooled *p)
{
	const struct batch_sample *s = p->s;
	const char *base;

	if (!s->path) {
		p->code = malloc(s->code_len + 1);
		if (!p->code)
			return -ENOMEM;
		memcpy(p->code, s->code, s->code_len);
		p->sc.code_len = s->code_len;
		p->name = strdup("main.py");
		return p->name ? 0 : -ENOMEM;
	}
	int rc = read_whole(s->path, &p->code, &p->sc.code_len);
	if (rc)
		return rc;
	base = strrchr(s->path, '/');
	p->name = strdup(base ? base + 1 : s->path);
	return p->name ? 0 : -ENOMEM;
}

int batch_pool_start(struct batch_pool *bp, struct batch_sample *s, int slot,
		     struct batch_pooled **out)
{
	struct batch_pooled *p = calloc(1, sizeof(*p));
	int rc;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	p->bp = bp;
	p->s = s;
	p->slot = slot;
	rc = script_of(p);
	if (!rc && !(p->cancel = ws_cancel_new()))
		rc = -ENOMEM;
	if (!rc && asprintf(&p->tag, "%s%s:%s", BATCH_TAG_PREFIX, bp->batch_id,
			    s->id) < 0) {
		p->tag = NULL;
		rc = -ENOMEM;
	}
	if (!rc && s->n_files &&
	    !(p->files = calloc(s->n_files, sizeof(*p->files))))
		rc = -ENOMEM;
	for (size_t i = 0; !rc && i < s->n_files; i++)
		p->files[i] = (struct ws_script_file){ s->files[i].name,
						       s->files[i].data,
						       s->files[i].len };
	p->sc = (struct ws_script){
		.code = p->code,
		.code_len = p->sc.code_len,
		.name = p->name,
		.args = s->args,
		.n_args = s->n_args,
		.stdin_data = s->stdin_data,
		.stdin_len = s->stdin_len,
		.has_stdin = s->has_stdin,
		.files = p->files,
		.n_files = s->n_files,
		.wall_s = bp->wall_s,
		.tag = p->tag,
		.cancel = p->cancel,
	};
	if (!rc)
		rc = -pthread_create(&p->th, NULL, pooled_main, p);
	if (rc) {
		pooled_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

void batch_pool_cancel(struct batch_pooled *p)
{
	ws_cancel_fire(p->cancel);
}

int batch_pool_end(struct batch_pooled *p, struct batch_sample *s)
{
	int rc;

	pthread_join(p->th, NULL);
	rc = p->rc;
	if (!rc) {
		snprintf(s->run_id, sizeof(s->run_id), "%s", p->run.run_id);
		s->from_ns = p->run.handed_out_ns;
	} else if (asprintf(&s->error, "%s", p->err.message) < 0) {
		s->error = NULL;
	}
	pooled_free(p);
	return rc ? -1 : 0;
}
