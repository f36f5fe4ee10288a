/*
 * batch-result.c - a sample's outcome read from its recorded run: status,
 * exit, expectations, denials by rule and behaviour categories
 * (docs/batch.md defines each one), and its result line.
 */
#include "tools/run/batch.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

const char *const batch_cat_name[CAT_N] = {
	[CAT_NETWORK] = "network",
	[CAT_WRITE_OUTSIDE] = "write_outside_workdir",
	[CAT_EXEC_DENIED] = "exec_denied",
	[CAT_SECRET_READ] = "secret_read",
	[CAT_SIGNAL_OTHERS] = "signal_others",
	[CAT_KERNEL_ATTACK] = "kernel_attack_surface",
	[CAT_RESOURCE_LIMIT] = "resource_limit",
	[CAT_TIMEOUT] = "timeout",
	[CAT_CRASH] = "crash",
};

static bool in(const char *s, const char *const *list)
{
	for (; s && *list; list++)
		if (!strcmp(s, *list))
			return true;
	return false;
}

/* args.access (and access2 of rename, link) names a change to the file
 * tree: write, create or delete (policy/check.c's operations). */
static bool changes_files(json_t *args)
{
	static const char *const keys[] = { "access", "access2" };

	for (size_t i = 0; i < 2; i++) {
		const char *acc =
			json_string_value(json_object_get(args, keys[i]));

		if (acc && (strstr(acc, "write") || strstr(acc, "create") ||
			    strstr(acc, "delete")))
			return true;
	}
	return false;
}

/* The categories one denied, killed or would-be-denied call shows. */
static unsigned event_cats(const struct audit_event *e)
{
	static const char *const net[] = { "socket", "connect", "bind",
					   "listen", "accept",	"accept4",
					   "sendto", "sendmsg", "sendmmsg",
					   NULL };
	static const char *const exec[] = { "execve", "execveat", NULL };
	static const char *const sig[] = { "kill",
					   "tkill",
					   "tgkill",
					   "pidfd_send_signal",
					   "rt_sigqueueinfo",
					   "rt_tgsigqueueinfo",
					   NULL };
	json_t *args = e->args_json ? json_loads(e->args_json, 0, NULL) : NULL;
	const char *rule = e->rule ? e->rule : "";
	bool write = changes_files(args);
	unsigned c = 0;

	json_decref(args);
	if (in(e->syscall, net))
		c |= 1u << CAT_NETWORK;
	if (write)
		c |= 1u << CAT_WRITE_OUTSIDE;
	else if (!strncmp(rule, "secret-", 7))
		c |= 1u << CAT_SECRET_READ;
	if (in(e->syscall, exec))
		c |= 1u << CAT_EXEC_DENIED;
	if (in(e->syscall, sig) || !strcmp(rule, "signals"))
		c |= 1u << CAT_SIGNAL_OTHERS;
	if (e->decision && !strcmp(e->decision, "kill") &&
	    !strncmp(rule, "floor.", 6))
		c |= 1u << CAT_KERNEL_ATTACK;
	return c;
}

static int denial_row(const struct audit_event_row *r, void *arg)
{
	struct batch_sample *s = arg;
	const char *rule = r->e.rule ? r->e.rule : "-";
	json_t *n = json_object_get(s->denials, rule);

	if (r->e.ts_ns < s->from_ns)
		return 0; /* the pool's warm-up: ward's, not the sample's */
	s->cats |= event_cats(&r->e);
	return json_object_set_new(s->denials, rule,
				   json_integer(json_integer_value(n) + 1))
		       ? -ENOMEM
		       : 0;
}

/* Signals the code's own faults end a process with. */
static bool crash_signal(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL ||
	       sig == SIGFPE || sig == SIGABRT || sig == SIGTRAP;
}

static int run_row(const struct audit_run *r, void *arg)
{
	struct batch_sample *s = arg;

	free(s->status);
	s->status = strdup(r->status ? r->status : "running");
	if (!s->status)
		return -ENOMEM;
	s->has_exit = r->has_exit;
	s->exit_code = r->exit_code;
	s->signal = r->signal;
	s->duration_ms = r->duration_ms;
	if (!strcmp(s->status, "limit"))
		s->cats |= 1u << CAT_RESOURCE_LIMIT;
	if (!strcmp(s->status, "timeout"))
		s->cats |= 1u << CAT_TIMEOUT;
	/* a signal ward or the kernel's floor sent is not a crash */
	if (r->has_exit && crash_signal(r->signal) &&
	    !in(s->status, (const char *const[]){ "killed", "limit", "timeout",
						  "aborted", NULL }))
		s->cats |= 1u << CAT_CRASH;
	return 0;
}

struct stdout_cmp {
	const struct batch_sample *s;
	size_t at;
	bool same;
};

static int stdout_chunk(const struct audit_output_row *o, void *arg)
{
	struct stdout_cmp *c = arg;

	if (o->stream != AUDIT_STDOUT || !c->same || o->ts_ns < c->s->from_ns)
		return 0;
	if (c->at + o->len > c->s->expect_stdout_len ||
	    memcmp(c->s->expect_stdout + c->at, o->data, o->len))
		c->same = false;
	c->at += o->len;
	return 0;
}

int batch_outcome(struct audit *a, struct batch_sample *s)
{
	struct stdout_cmp cmp = { .s = s, .same = true };
	int rc;

	s->cats = 0;
	json_decref(s->denials);
	s->denials = json_object();
	if (!s->denials)
		return -ENOMEM;
	rc = audit_run_read(a, s->run_id, run_row, s);
	if (!rc)
		rc = audit_denials_each(a, s->run_id, denial_row, s);
	if (!rc && s->has_expect_stdout)
		rc = audit_outputs_each(a, s->run_id, stdout_chunk, &cmp);
	if (rc)
		return rc;
	s->stdout_ok = cmp.same && cmp.at == s->expect_stdout_len;
	if (s->has_expect_stdout || s->has_expect_exit) {
		bool exit_ok = !s->has_expect_exit ||
			       (s->has_exit && s->exit_code == s->expect_exit);

		s->pass = (!s->has_expect_stdout || s->stdout_ok) && exit_ok;
	}
	return 0;
}

/* ---------------------------- --resume ---------------------------- */

/* A run that may be a sample's of this batch, newest first. */
struct cand {
	char id[AUDIT_RUN_ID_LEN + 1];
	bool ended;   /* not running, not aborted */
	bool pooled;  /* a pool's session run: its tag is in cell 1 */
	char *sample; /* the sample id it is tagged with, or NULL */
	long long from_ns;
};

struct tagged {
	const char *batch_id;
	struct cand *v;
	size_t n, cap;
};

/* The sample id a tag names in this batch, or NULL. */
static const char *tag_sample(const char *v, const char *batch_id)
{
	size_t pre = strlen(BATCH_TAG_PREFIX);

	if (v && !strncmp(v, BATCH_TAG_PREFIX, pre) &&
	    !strncmp(v + pre, batch_id, BATCH_ID_LEN) &&
	    v[pre + BATCH_ID_LEN] == ':')
		return v + pre + BATCH_ID_LEN + 1;
	return NULL;
}

/* The sample id a run's recorded command line tags it with in this
 * batch, or NULL. */
static const char *tag_of(json_t *argv, const char *batch_id)
{
	size_t n = json_array_size(argv);

	for (size_t i = 0; i + 1 < n; i++) {
		const char *a = json_string_value(json_array_get(argv, i));
		const char *v = json_string_value(json_array_get(argv, i + 1));

		if (a && !strcmp(a, "--"))
			break;
		if (a && !strcmp(a, "--tag") && tag_sample(v, batch_id))
			return tag_sample(v, batch_id);
	}
	return NULL;
}

/* The session runs of ward serve and of ward batch --pool (their
 * argv is the worker's: tools/agent/session-worker.c). */
#define SESSION_ARGV "[\"ward\",\"serve\"]"

static int tagged_run(const struct audit_run *r, void *arg)
{
	struct tagged *t = arg;
	json_t *argv = r->argv_json ? json_loads(r->argv_json, 0, NULL) : NULL;
	const char *tag = tag_of(argv, t->batch_id);
	bool pooled = !tag && r->argv_json &&
		      !strcmp(r->argv_json, SESSION_ARGV);
	int rc = 0;

	if ((tag || pooled) && t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct cand *nv = realloc(t->v, cap * sizeof(*nv));
		if (nv) {
			t->v = nv;
			t->cap = cap;
		}
	}
	if ((tag || pooled) && t->n < t->cap) {
		struct cand *c = &t->v[t->n++];
		memset(c, 0, sizeof(*c));
		memcpy(c->id, r->id, sizeof(c->id));
		c->ended = strcmp(r->status, "running") &&
			   strcmp(r->status, "aborted");
		c->pooled = pooled;
		if (tag && !(c->sample = strdup(tag)))
			rc = -ENOMEM;
	} else if (tag || pooled) {
		rc = -ENOMEM;
	}
	json_decref(argv);
	return rc;
}

/* A pooled run's tag (cell 1, "script") and hand-out (cell 0). */
static int pooled_cell(const struct audit_cell *ac, void *arg)
{
	struct cand *c = ((void **)arg)[0];
	const char *batch_id = ((void **)arg)[1];
	json_t *r = ac->result_json ? json_loads(ac->result_json, 0, NULL)
				    : NULL;
	const char *v;

	if (ac->n == 0)
		c->from_ns = json_integer_value(json_object_get(
			json_object_get(r, "pool"), "handed_out_ns"));
	if (ac->n == 1 &&
	    (v = tag_sample(json_string_value(json_object_get(
				    json_object_get(r, "script"), "tag")),
			    batch_id)))
		c->sample = strdup(v);
	json_decref(r);
	return 0;
}

int batch_resume_record(struct audit *a, struct batch_samples *s, size_t *found)
{
	struct tagged t = { .batch_id = s->batch_id };
	bool *seen = calloc(s->n + 1, sizeof(*seen));
	int rc;

	*found = 0;
	rc = seen ? audit_runs_each(a, 0, tagged_run, &t) : -ENOMEM;
	for (size_t i = 0; !rc && i < t.n; i++)
		if (t.v[i].pooled)
			rc = audit_cells_each(
				a, t.v[i].id, pooled_cell,
				(void *[]){ &t.v[i], (void *)s->batch_id });
	/* runs come newest first: a sample's first tagged run is its
	 * latest; an interrupted latest run means the sample runs again */
	for (size_t i = 0; !rc && i < t.n; i++) {
		struct batch_sample *b =
			t.v[i].sample ? batch_find(s, t.v[i].sample) : NULL;
		size_t j = b ? (size_t)(b - s->v) : 0;

		if (!b || b->state != SAMPLE_PENDING || seen[j])
			continue;
		seen[j] = true;
		if (!t.v[i].ended)
			continue;
		memcpy(b->run_id, t.v[i].id, sizeof(b->run_id));
		b->from_ns = t.v[i].from_ns;
		rc = batch_outcome(a, b);
		b->state = SAMPLE_DONE;
		(*found)++;
	}
	for (size_t i = 0; i < t.n; i++)
		free(t.v[i].sample);
	free(t.v);
	free(seen);
	return rc;
}

/* ---------------------------- result line ---------------------------- */

static json_t *cats_json(unsigned cats)
{
	json_t *v = json_array();

	for (int i = 0; v && i < CAT_N; i++)
		if (cats & 1u << i)
			json_array_append_new(v,
					      json_string(batch_cat_name[i]));
	return v;
}

static json_t *expect_failed(const struct batch_sample *s)
{
	json_t *v = json_array();

	if (v && s->has_expect_stdout && !s->stdout_ok)
		json_array_append_new(v, json_string("stdout"));
	if (v && s->has_expect_exit &&
	    (!s->has_exit || s->exit_code != s->expect_exit))
		json_array_append_new(v, json_string("exit"));
	return v;
}

char *batch_result_line(const struct batch_sample *s, const char *batch_id)
{
	json_t *o = json_object();
	char *line;

	if (!o)
		return NULL;
	json_object_set_new(o, "id", json_string(s->id));
	json_object_set_new(o, "batch", json_string(batch_id));
	json_object_set_new(o, "run_id",
			    s->run_id[0] ? json_string(s->run_id)
					 : json_null());
	json_object_set_new(o, "status", json_string(s->status ?: "failed"));
	json_object_set_new(o, "exit_code",
			    /* -1: killed by a signal, which "signal" says */
			    s->has_exit && s->exit_code >= 0
				    ? json_integer(s->exit_code)
				    : json_null());
	json_object_set_new(o, "signal",
			    s->has_exit && s->signal ? json_integer(s->signal)
						     : json_null());
	json_object_set_new(o, "duration_ms",
			    s->duration_ms >= 0 ? json_integer(s->duration_ms)
						: json_null());
	json_object_set_new(o, "pass",
			    s->pass < 0 ? json_null() : json_boolean(s->pass));
	if (s->pass == 0)
		json_object_set_new(o, "expect_failed", expect_failed(s));
	json_object_set_new(o, "denials",
			    s->denials ? json_incref(s->denials)
				       : json_object());
	json_object_set_new(o, "categories", cats_json(s->cats));
	if (s->error)
		json_object_set_new(o, "error", json_string(s->error));
	line = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(o);
	return line;
}
