/*
 * session-ctx.c - code contexts, other languages and commands inside one
 * session (what E2B's sandboxes offer: tools/agent/session.h lists the
 * methods).
 *
 * A python session's driver is the hub (tools/agent/drivers/python.py):
 * a cell of another language, of a context, with env of its own, or a
 * command, goes to it as a frame with a JSON body instead of code. Python
 * contexts are globals dicts of the hub; a js or bash context is a driver
 * of its own that the hub starts as its child on the context's first
 * cell; a command is /bin/bash -c CMD, the hub's child too. All of it is
 * the session's run: one supervisor, one policy, one workdir, one record,
 * a cell row per execution (ws_run_cell) and per command (ws_cmd_run).
 *
 * The contexts' table is the server's, under its lock (context.* never
 * waits for a running cell); the hub learns of a removal or a restart
 * with the session's next hub frame ("drop"), and ends the context's
 * interpreter or clears its globals then. Cells take the session's turn
 * (ws_take_turn), one at a time; commands do not: each runs beside them
 * in threads of the hub and of its caller (a background one: of its own),
 * as in an E2B sandbox.
 */
#include "tools/agent/session-server.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/json.h"
#include "policy/profiles.h"
#include "tracer/tracer.h"

extern const struct ward_profile ward_drivers[];

enum { MAX_CTX = 64 }; /* contexts of one session */

struct ws_ctx {
	struct ws_ctx *next;
	char id[24];
	char lang[8]; /* python, node, sh */
	char *cwd;    /* NULL: the session's workdir */
};

/* A background command (command.run with background: true): a thread of
 * its own runs it as command.run would (holding a reference to the
 * session) and keeps its answer for command.wait. In its session's
 * ws_ctxs, under the server's lock. */
struct ws_bg {
	struct ws_bg *next;
	unsigned id;
	struct ws_server *s;
	struct sess *x;
	json_t *params;
	struct ws_cancel *cancel;
	json_t *result; /* its answer, once done (or err) */
	struct ws_error err;
	bool done, failed;
};

struct ws_ctxs {
	struct ws_ctx *list;
	int n;
	struct ws_bg *bg; /* newest first, until command.wait takes one */
	unsigned bg_next;
	bool drv_sent[2]; /* node's, sh's driver text is the hub's */
	json_t *drop;	  /* ids removed or restarted since the last frame */
};

/* ------------------------------------------------------------------ */
/* languages and contexts                                              */

const char *ws_lang_canon(const char *lang)
{
	if (!strcmp(lang, "js") || !strcmp(lang, "javascript"))
		return "node";
	if (!strcmp(lang, "bash"))
		return "sh";
	return lang;
}

/* The name a context's language has in E2B's terms (context.*). */
static const char *e2b_lang(const char *lang)
{
	return !strcmp(lang, "node") ? "js"
	       : !strcmp(lang, "sh") ? "bash"
				     : lang;
}

static bool hub_lang(const char *lang)
{
	return !strcmp(lang, "python") || !strcmp(lang, "node") ||
	       !strcmp(lang, "sh");
}

/* A hub language (hub_lang) as a string that outlives any request and
 * context: what a running cell's cell_ext names. */
static const char *lang_const(const char *lang)
{
	return !strcmp(lang, "node") ? "node"
	       : !strcmp(lang, "sh") ? "sh"
				     : "python";
}

static struct ws_ctxs *ctxs_of(struct sess *x)
{
	if (!x->cx) {
		x->cx = calloc(1, sizeof(*x->cx));
		if (x->cx)
			x->cx->drop = json_array();
	}
	return x->cx;
}

static struct ws_ctx *find_ctx(const struct sess *x, const char *id)
{
	for (struct ws_ctx *c = x->cx ? x->cx->list : NULL; c; c = c->next)
		if (!strcmp(c->id, id))
			return c;
	return NULL;
}

static void bg_free(struct ws_bg *b)
{
	json_decref(b->params);
	json_decref(b->result);
	ws_cancel_free(b->cancel);
	free(b);
}

void ws_ctx_free(struct sess *x)
{
	if (!x->cx)
		return;
	while (x->cx->list) {
		struct ws_ctx *c = x->cx->list;
		x->cx->list = c->next;
		free(c->cwd);
		free(c);
	}
	while (x->cx->bg) { /* their threads are over: they held x */
		struct ws_bg *b = x->cx->bg;
		x->cx->bg = b->next;
		bg_free(b);
	}
	json_decref(x->cx->drop);
	free(x->cx);
	x->cx = NULL;
}

/* Only a python session has the hub. */
static int need_hub(const struct sess *x, struct ws_error *err)
{
	if (!strcmp(x->lang, "python"))
		return 0;
	return ws_fail(err, WS_E_PARAMS,
		       "session %s runs %s: other languages, contexts, "
		       "per-cell env and commands need a python session "
		       "(its interpreter hosts them)",
		       x->id, x->lang);
}

/* params.context_id: the context, or NULL (none given: *c NULL). */
static int ctx_param(struct sess *x, json_t *p, struct ws_ctx **c,
		     struct ws_error *err)
{
	const char *id;

	*c = NULL;
	if (ws_get_str(p, "context_id", &id, err) < 0)
		return -1;
	if (!id)
		return 0;
	*c = find_ctx(x, id);
	if (!*c)
		return ws_fail(err, WS_E_PARAMS,
			       "params.context_id: no context '%s' in session "
			       "%s (context.create makes one; context.list "
			       "shows them)",
			       id, x->id);
	return 0;
}

/* params.cwd: absent, or an absolute path inside the sandbox. */
static int cwd_param(json_t *p, const char **cwd, struct ws_error *err)
{
	if (ws_get_str(p, "cwd", cwd, err) < 0)
		return -1;
	if (*cwd &&
	    (**cwd != '/' || strlen(*cwd) >= PATH_MAX ||
	     strlen(*cwd) != json_string_length(json_object_get(p, "cwd"))))
		return ws_fail(err, WS_E_PARAMS,
			       "params.cwd: give an absolute path inside the "
			       "sandbox (its workdir is %s)",
			       TRACER_HOME);
	return 0;
}

/* ------------------------------------------------------------------ */
/* cells for the hub                                                   */

/* The interpreter the hub starts for lang (node, sh) or runs commands
 * ("command") with: bash where there is one, as E2B's sandboxes have. */
static const char *argv0_of(const char *lang)
{
	if (!strcmp(lang, "node"))
		return "/usr/bin/node";
	return access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh";
}

static const char *driver_text(const char *lang)
{
	for (const struct ward_profile *d = ward_drivers; d->name; d++)
		if (!strcmp(d->name, lang))
			return d->text;
	return NULL;
}

/* The body's common part: the contexts to drop now (then forgotten) and,
 * for node and sh, the interpreter and, the first time, the driver. */
static int body_common(struct sess *x, json_t *body, const char *lang,
		       struct ws_error *err)
{
	struct ws_ctxs *cx = ctxs_of(x);

	if (!cx)
		return ws_fail(err, WS_E_INTERNAL, "out of memory");
	json_object_set_new(body, "drop", cx->drop);
	cx->drop = json_array();
	if (!strcmp(lang, "python"))
		return 0;
	json_object_set_new(body, "argv0", json_string(argv0_of(lang)));
	int i = !strcmp(lang, "sh");
	if (!cx->drv_sent[i]) {
		const char *t = driver_text(lang);
		if (!t)
			return ws_fail(err, WS_E_INTERNAL,
				       "no session driver for %s", lang);
		json_object_set_new(body, "driver", json_string(t));
		cx->drv_sent[i] = true;
	}
	return 0;
}

/* Runs one hub cell: body sent as the frame, code recorded as the
 * cell's; mark goes into its result (stolen). */
static int hub_cell(struct ws_server *s, struct sess *x, const char *lang,
		    json_t *body, json_t *mark, const char *code, size_t len,
		    double timeout, ws_stream_fn fn, void *fn_arg,
		    struct ws_cancel *cancel, json_t **result,
		    struct ws_error *err)
{
	struct cell_ext ext = { lang, json_dumps(body, JSON_COMPACT), 0, mark };
	int rc;

	json_decref(body);
	if (!ext.body) {
		json_decref(mark);
		return ws_fail(err, WS_E_INTERNAL, "out of memory");
	}
	ext.len = strlen(ext.body);
	struct cell_limits cl =
		ws_cell_limits_of(s, timeout > 0 ? timeout : x->timeout_s);
	x->ext = &ext;
	rc = ws_run_cell(s, x, code, len, &cl, fn, fn_arg, cancel->fd, false,
			 result, err);
	x->ext = NULL;
	free(ext.body);
	json_decref(mark);
	return rc;
}

bool ws_ctx_wanted(const struct sess *x, json_t *p, const char *lang)
{
	json_t *c = json_object_get(p, "context_id"),
	       *e = json_object_get(p, "env");

	return (lang && strcmp(lang, x->lang)) || (c && !json_is_null(c)) ||
	       (e && !json_is_null(e)) ||
	       (x->cx && json_array_size(x->cx->drop) > 0);
}

/* The frame's body and the result's mark of a run in x (the server's lock
 * held: the contexts' table). 0 or -1 (err). */
static int run_body(struct sess *x, json_t *p, json_t **body_out,
		    json_t **mark_out, struct ws_error *err)
{
	json_t *code = json_object_get(p, "code"),
	       *env = json_object_get(p, "env");
	const char *lang = NULL;
	struct ws_ctx *c;

	if (need_hub(x, err) < 0 || ctx_param(x, p, &c, err) < 0 ||
	    ws_get_str(p, "language", &lang, err) < 0 ||
	    ws_check_env(env, err) < 0)
		return -1;
	lang = lang ? ws_lang_canon(lang) : c ? c->lang : "python";
	if (!hub_lang(lang))
		return ws_fail(err, WS_E_PARAMS,
			       "params.language: '%s' is not one of python, "
			       "js, bash",
			       lang);
	if (c && strcmp(lang, c->lang))
		return ws_fail(err, WS_E_PARAMS,
			       "params.context_id: context %s is a %s context, "
			       "not %s",
			       c->id, e2b_lang(c->lang), e2b_lang(lang));
	json_t *body = json_pack("{s:s, s:s, s:O, s:o?, s:o?}", "op", "run",
				 "lang", lang, "code", code, "ctx",
				 c ? json_string(c->id) : NULL, "cwd",
				 c && c->cwd ? json_string(c->cwd) : NULL);
	json_t *mark = json_pack("{s:s}", "language", lang);
	if (!body || !mark) {
		json_decref(body);
		json_decref(mark);
		return ws_fail(err, WS_E_INTERNAL, "out of memory");
	}
	if (env && json_is_object(env))
		json_object_set(body, "env", env);
	if (c)
		json_object_set_new(mark, "context_id", json_string(c->id));
	if (body_common(x, body, lang, err) < 0) {
		json_decref(body);
		json_decref(mark);
		return -1;
	}
	*body_out = body;
	*mark_out = mark;
	return 0;
}

int ws_ctx_run(struct ws_server *s, struct sess *x, json_t *p, ws_stream_fn fn,
	       void *fn_arg, struct ws_cancel *cancel, json_t **result,
	       struct ws_error *err)
{
	json_t *code = json_object_get(p, "code"), *body = NULL, *mark = NULL;
	double timeout = 0;
	int rc;

	if (ws_get_num(p, "timeout_s", &timeout, err) < 0)
		return -1;
	pthread_mutex_lock(&s->lock);
	rc = run_body(x, p, &body, &mark, err);
	pthread_mutex_unlock(&s->lock);
	if (rc < 0)
		return -1;
	const char *lang =
		lang_const(json_string_value(json_object_get(body, "lang")));
	return hub_cell(s, x, lang, body, mark, json_string_value(code),
			json_string_length(code), timeout, fn, fn_arg, cancel,
			result, err);
}

/* The denials of a result object as "syscall target (rule R, ERRNO)",
 * after a "; ", programs refused first (bash's start-up probe of
 * /dev/tty is one of the others), up to three (nothing when there are
 * none). */
static void denials_text(json_t *o, struct ward_strbuf *sb)
{
	json_t *list = json_object_get(json_object_get(o, "policy"), "denials");
	json_t *d;
	size_t i, shown = 0;

	for (int exec = 1; exec >= 0; exec--)
		json_array_foreach(list, i, d)
		{
			const char *sc = json_string_value(
					   json_object_get(d, "syscall")),
				   *act = json_string_value(
					   json_object_get(d, "action")),
				   *en = json_string_value(
					   json_object_get(d, "errno"));
			if (!sc || !act || !strcmp(act, "audit") ||
			    (strncmp(sc, "exec", 4) == 0) != exec)
				continue;
			if (shown++ == 3) {
				ward_strbuf_puts(sb, ", ...");
				return;
			}
			ward_strbuf_appendf(
				sb, "%s%s %s (rule %s%s%s)",
				shown == 1 ? "; the policy denied " : ", ", sc,
				json_string_value(json_object_get(d, "target")),
				json_string_value(json_object_get(d, "rule")),
				en ? ", " : "", en ? en : "");
		}
}

void ws_ctx_mark(json_t *mark, json_t *o)
{
	json_t *e = json_object_get(o, "error");
	const char *name = json_string_value(json_object_get(e, "name"));

	json_object_update(o, mark);
	if (!name || strcmp(name, "InterpreterStartError"))
		return; /* command.run's answer names the rules itself */
	/* the interpreter could not start: say which rule refused it */
	struct ward_strbuf sb = WARD_STRBUF_INIT;
	ward_strbuf_puts(&sb, json_string_value(json_object_get(e, "value")));
	denials_text(o, &sb);
	json_object_set_new(e, "value", json_string(ward_strbuf_str(&sb)));
	ward_strbuf_free(&sb);
}

/* ------------------------------------------------------------------ */
/* commands                                                            */

/* A log stream of a cell result as one text: the whole, or head, a note
 * of what was left out, and tail. */
static json_t *stream_text(json_t *o, const char *name)
{
	json_t *parts = json_object_get(json_object_get(o, "logs"), name);
	json_t *tr = json_object_get(o, "truncated");
	struct ward_strbuf sb = WARD_STRBUF_INIT;
	char key[48];

	snprintf(key, sizeof(key), "%s_bytes_total", name);
	long long total = json_integer_value(json_object_get(tr, key));
	snprintf(key, sizeof(key), "%s_bytes_returned", name);
	long long ret = json_integer_value(json_object_get(tr, key));
	for (size_t i = 0; i < json_array_size(parts); i++) {
		json_t *t = json_array_get(parts, i);
		if (i == 1)
			ward_strbuf_appendf(
				&sb, "\n[... %lld bytes left out here ...]\n",
				total - ret);
		ward_strbuf_append(&sb, json_string_value(t),
				   json_string_length(t));
	}
	json_t *v = ws_json_text(ward_strbuf_str(&sb), sb.len);
	ward_strbuf_free(&sb);
	return v;
}

/* command.run's answer from the cell's result object. */
static json_t *command_result(json_t *o, double timeout)
{
	const char *st = json_string_value(json_object_get(o, "status"));
	json_t *e = json_object_get(o, "error");
	struct ward_strbuf sb = WARD_STRBUF_INIT;

	if (json_is_object(e))
		ward_strbuf_appendf(
			&sb, "%s: %s",
			json_string_value(json_object_get(e, "name")),
			json_string_value(json_object_get(e, "value")));
	else if (st && !strcmp(st, "timeout"))
		ward_strbuf_appendf(&sb,
				    "the command ran over its timeout (%g s): "
				    "its process group was killed",
				    timeout);
	if (st && strcmp(st, "ok"))
		denials_text(o, &sb);
	const char *msg = ward_strbuf_str(&sb);
	if (!strncmp(msg, "; ", 2))
		msg += 2; /* denials alone */
	json_t *r = json_pack(
		"{s:O, s:O, s:O, s:O, s:o, s:o, s:O, s:o, s:O, s:O, s:O}",
		"session_id", json_object_get(o, "session_id"),
		"execution_count", json_object_get(o, "execution_count"),
		"status", json_object_get(o, "status"), "exit_code",
		json_object_get(o, "exit_code"), "stdout",
		stream_text(o, "stdout"), "stderr", stream_text(o, "stderr"),
		"duration_ms", json_object_get(o, "duration_ms"), "error",
		*msg ? json_string(msg) : json_null(), "run_id",
		json_object_get(o, "run_id"), "truncated",
		json_object_get(o, "truncated"), "policy",
		json_object_get(o, "policy"));
	ward_strbuf_free(&sb);
	return r;
}

/* Checks command.run's params that need no session. */
static int command_params(json_t *p, const char **cwd, double *timeout,
			  struct ws_error *err)
{
	json_t *cmd = json_object_get(p, "cmd"),
	       *stream = json_object_get(p, "stream");
	const char *in;

	if (ws_only_keys(p, err, "session_id", "cmd", "env", "cwd", "timeout_s",
			 "stream", "stdin", "background", NULL) < 0 ||
	    ws_check_env(json_object_get(p, "env"), err) < 0 ||
	    cwd_param(p, cwd, err) < 0 ||
	    ws_get_str(p, "stdin", &in, err) < 0 ||
	    ws_get_num(p, "timeout_s", timeout, err) < 0)
		return -1;
	if (!json_is_string(cmd) || !json_string_length(cmd))
		return ws_fail(err, WS_E_PARAMS,
			       "params.cmd: required, a command line for "
			       "/bin/bash -c");
	if (stream && !json_is_boolean(stream))
		return ws_fail(err, WS_E_PARAMS,
			       "params.stream: must be a boolean");
	json_t *bg = json_object_get(p, "background");
	if (bg && !json_is_boolean(bg))
		return ws_fail(err, WS_E_PARAMS,
			       "params.background: must be a boolean");
	if (json_is_true(bg) && json_is_true(stream))
		return ws_fail(err, WS_E_PARAMS,
			       "params.stream: a background command is not "
			       "streamed (command.wait gives its output)");
	return 0;
}

/* command.run in x, beside its cells and other commands (no turn: the
 * hub runs each in threads of its own, session-cell.c ws_cmd_run). */
static int command_in(struct ws_server *s, struct sess *x, json_t *p,
		      const char *cwd, double timeout, ws_stream_fn fn,
		      void *fn_arg, struct ws_cancel *cancel, json_t **result,
		      struct ws_error *err)
{
	json_t *cmd = json_object_get(p, "cmd");
	json_t *body = json_pack("{s:s, s:O, s:O?, s:s?, s:O?, s:s}", "op",
				 "command", "cmd", cmd, "env",
				 json_object_get(p, "env"), "cwd", cwd, "stdin",
				 json_object_get(p, "stdin"), "argv0",
				 argv0_of("command"));
	json_t *mark = json_pack("{s:s}", "kind", "command");
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	int rc;

	json_decref(body);
	if (!text || !mark) {
		free(text);
		json_decref(mark);
		return ws_fail(err, WS_E_INTERNAL, "out of memory");
	}
	if (cwd)
		json_object_set_new(mark, "cwd", json_string(cwd));
	struct cell_limits cl =
		ws_cell_limits_of(s, timeout > 0 ? timeout : x->timeout_s);
	rc = ws_cmd_run(s, x, text, strlen(text), json_string_value(cmd),
			json_string_length(cmd), &cl, mark,
			json_is_true(json_object_get(p, "stream")) ? fn : NULL,
			fn_arg, cancel, result, err);
	free(text);
	json_decref(mark);
	return rc;
}

/* command.run's answer for a command that ran in x (o: the cell result,
 * NULL when rc says it failed), with whether x closed meanwhile. */
static json_t *command_answer(struct ws_server *s, struct sess *x, json_t *o,
			      double timeout)
{
	json_t *r = command_result(o, timeout);

	json_decref(o);
	pthread_mutex_lock(&s->lock);
	if (x->gone && r)
		json_object_set_new(r, "session_closed", json_true());
	pthread_mutex_unlock(&s->lock);
	return r;
}

/* A background command's thread: the command, its answer kept, its
 * reference to the session given back, then the server told (the last
 * thing it touches). */
static void *bg_main(void *arg)
{
	struct ws_bg *b = arg;
	struct ws_server *s = b->s;
	struct sess *x = b->x;
	struct ws_error err = { 0 };
	const char *cwd = NULL;
	double timeout = 0;
	json_t *o = NULL, *r = NULL;

	int rc = command_params(b->params, &cwd, &timeout, &err);
	if (!rc)
		rc = command_in(s, x, b->params, cwd, timeout, NULL, NULL,
				b->cancel, &o, &err);
	if (!rc)
		r = command_answer(s, x, o,
				   ws_cell_limits_of(s, timeout > 0
								? timeout
								: x->timeout_s)
					   .timeout_s);
	pthread_mutex_lock(&s->lock);
	b->result = r;
	b->err = err;
	b->failed = rc != 0 || !r;
	b->done = true;
	pthread_cond_broadcast(&x->turn);
	pthread_mutex_unlock(&s->lock);
	ws_sess_put(s, x); /* b may be freed with x now */
	pthread_mutex_lock(&s->lock);
	s->bg_threads--;
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* command.run with background: true: started in a thread of its own,
 * which takes over the caller's reference to x; answers its id at once. */
static int bg_start(struct ws_server *s, struct sess *x, json_t *p,
		    json_t **result, struct ws_error *err)
{
	struct ws_bg *b = calloc(1, sizeof(*b));
	struct ws_ctxs *cx;
	pthread_attr_t at;
	pthread_t t;

	if (b) {
		b->params = json_deep_copy(p);
		b->cancel = ws_cancel_new();
	}
	if (!b || !b->params || !b->cancel) {
		if (b)
			bg_free(b);
		ws_sess_put(s, x);
		return ws_fail(err, WS_E_INTERNAL, "out of memory");
	}
	b->s = s;
	b->x = x;
	pthread_mutex_lock(&s->lock);
	cx = ctxs_of(x);
	if (cx) {
		b->id = ++cx->bg_next;
		b->next = cx->bg;
		cx->bg = b;
		s->bg_threads++;
	}
	pthread_mutex_unlock(&s->lock);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	int rc = cx ? pthread_create(&t, &at, bg_main, b) : ENOMEM;
	pthread_attr_destroy(&at);
	if (rc) {
		pthread_mutex_lock(&s->lock);
		for (struct ws_bg **pp = cx ? &cx->bg : NULL; pp && *pp;
		     pp = &(*pp)->next)
			if (*pp == b) {
				*pp = b->next;
				s->bg_threads--;
				break;
			}
		pthread_mutex_unlock(&s->lock);
		bg_free(b);
		ws_sess_put(s, x);
		return ws_fail(err, WS_E_INTERNAL,
			       "cannot start a thread for the command: %s",
			       strerror(rc));
	}
	*result = json_pack("{s:s, s:I, s:b}", "session_id", x->id,
			    "command_id", (json_int_t)b->id, "background", 1);
	return 0;
}

/* params.command_id's background command in x (the server's lock held),
 * or NULL with err. */
static struct ws_bg *bg_find(struct sess *x, json_t *p, struct ws_bg ***at,
			     struct ws_error *err)
{
	json_t *id = json_object_get(p, "command_id");

	if (!json_is_integer(id)) {
		ws_fail(err, WS_E_PARAMS,
			"params.command_id: required, the id command.run "
			"gave with background: true");
		return NULL;
	}
	for (struct ws_bg **pp = x->cx ? &x->cx->bg : NULL; pp && *pp;
	     pp = &(*pp)->next)
		if ((*pp)->id == json_integer_value(id)) {
			if (at)
				*at = pp;
			return *pp;
		}
	ws_fail(err, WS_E_PARAMS,
		"params.command_id: no background command %lld in session %s "
		"(command.list shows them; command.wait forgets the one it "
		"answers)",
		(long long)json_integer_value(id), x->id);
	return NULL;
}

/* command.wait: the command's answer when it ends (then forgotten);
 * a cancelled wait leaves the command running. */
static int m_cmd_wait(struct ws_server *s, json_t *p, struct ws_cancel *cancel,
		      json_t **result, struct ws_error *err)
{
	struct ws_bg *b, **at = NULL;
	struct sess *x;
	int rc = 0;

	if (ws_only_keys(p, err, "session_id", "command_id", NULL) < 0 ||
	    !(x = ws_find_sess(s, p, true, err)))
		return -1;
	pthread_mutex_lock(&s->lock);
	b = bg_find(x, p, &at, err);
	while (b && !b->done && !(cancel && atomic_load(&cancel->fired))) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += 50 * 1000000L; /* sees a cancel */
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&x->turn, &s->lock, &ts);
		b = bg_find(x, p, &at, err); /* another wait may take it */
	}
	if (!b) {
		rc = -1;
	} else if (!b->done) {
		rc = ws_fail(err, WS_E_PARAMS,
			     "command.wait was cancelled; command %u still "
			     "runs (command.kill ends it)",
			     b->id);
	} else {
		*at = b->next;
		if (b->failed) {
			*err = b->err;
			rc = -1;
		} else {
			*result = b->result;
			b->result = NULL;
		}
		bg_free(b);
	}
	pthread_mutex_unlock(&s->lock);
	ws_sess_put(s, x);
	return rc;
}

/* command.kill: the command's process group killed (its answer, status
 * "cancelled", is command.wait's); command.list: the background commands
 * not waited for yet, running or not. */
static int m_cmd_kill(struct ws_server *s, json_t *p, json_t **result,
		      struct ws_error *err)
{
	struct ws_bg *b;
	struct sess *x;

	if (ws_only_keys(p, err, "session_id", "command_id", NULL) < 0 ||
	    !(x = ws_find_sess(s, p, true, err)))
		return -1;
	pthread_mutex_lock(&s->lock);
	b = bg_find(x, p, NULL, err);
	if (b) {
		if (!b->done)
			ws_cancel_fire(b->cancel);
		*result = json_pack("{s:I, s:b}", "command_id",
				    (json_int_t)b->id, "killed", !b->done);
	}
	pthread_mutex_unlock(&s->lock);
	ws_sess_put(s, x);
	return b ? 0 : -1;
}

static int m_cmd_list(struct ws_server *s, json_t *p, json_t **result,
		      struct ws_error *err)
{
	json_t *arr = json_array();
	struct sess *x;

	if (ws_only_keys(p, err, "session_id", NULL) < 0 ||
	    !(x = ws_find_sess(s, p, true, err))) {
		json_decref(arr);
		return -1;
	}
	pthread_mutex_lock(&s->lock);
	for (struct ws_bg *b = x->cx ? x->cx->bg : NULL; b; b = b->next)
		json_array_insert_new(
			arr, 0,
			json_pack("{s:I, s:O, s:b}", "command_id",
				  (json_int_t)b->id, "cmd",
				  json_object_get(b->params, "cmd"), "running",
				  !b->done));
	pthread_mutex_unlock(&s->lock);
	ws_sess_put(s, x);
	*result = json_pack("{s:o}", "commands", arr);
	return 0;
}

static int m_command(struct ws_server *s, json_t *p, ws_stream_fn fn,
		     void *fn_arg, struct ws_cancel *cancel, json_t **result,
		     struct ws_error *err)
{
	const char *cwd;
	double timeout = 0;
	json_t *o = NULL;
	struct sess *x;
	int rc;

	if (command_params(p, &cwd, &timeout, err) < 0 ||
	    !(x = ws_find_sess(s, p, true, err)))
		return -1;
	if (need_hub(x, err) < 0) {
		ws_sess_put(s, x);
		return -1;
	}
	if (json_is_true(json_object_get(p, "background")))
		return bg_start(s, x, p, result, err); /* x's reference: its */
	double t = ws_cell_limits_of(s, timeout > 0 ? timeout : x->timeout_s)
			   .timeout_s;
	rc = command_in(s, x, p, cwd, timeout, fn, fn_arg, cancel, &o, err);
	if (!rc)
		*result = command_answer(s, x, o, t);
	ws_sess_put(s, x);
	return rc;
}

/* ------------------------------------------------------------------ */
/* context.*                                                           */

static json_t *ctx_json(const struct ws_ctx *c)
{
	return json_pack("{s:s, s:s, s:s}", "context_id", c->id, "language",
			 e2b_lang(c->lang), "cwd",
			 c->cwd ? c->cwd : TRACER_HOME);
}

/* A new context in x (the server's lock held). */
static int ctx_add(struct sess *x, const char *lang, const char *cwd,
		   json_t **result, struct ws_error *err)
{
	struct ws_ctxs *cx = ctxs_of(x);

	if (!cx)
		return ws_fail(err, WS_E_INTERNAL, "out of memory");
	if (cx->n >= MAX_CTX)
		return ws_fail(err, WS_E_LIMIT,
			       "session %s has %d contexts, the most it may "
			       "have; remove one first (context.remove)",
			       x->id, MAX_CTX);
	struct ws_ctx *c = calloc(1, sizeof(*c));
	if (!c || (cwd && !(c->cwd = strdup(cwd))) ||
	    ws_random_hex(c->id + 4, 8) < 0) {
		if (c)
			free(c->cwd);
		free(c);
		return ws_fail(err, WS_E_INTERNAL,
			       "cannot make a context (memory, random bytes)");
	}
	memcpy(c->id, "ctx-", 4);
	snprintf(c->lang, sizeof(c->lang), "%s", lang);
	c->next = cx->list;
	cx->list = c;
	cx->n++;
	*result = ctx_json(c);
	return 0;
}

static int m_ctx_create(struct ws_server *s, json_t *p, json_t **result,
			struct ws_error *err)
{
	const char *lang = NULL, *cwd;
	struct sess *x;
	int rc;

	if (ws_only_keys(p, err, "session_id", "language", "cwd", NULL) < 0 ||
	    ws_get_str(p, "language", &lang, err) < 0 ||
	    cwd_param(p, &cwd, err) < 0)
		return -1;
	lang = lang ? ws_lang_canon(lang) : "python";
	if (!hub_lang(lang))
		return ws_fail(err, WS_E_PARAMS,
			       "params.language: '%s' is not one of python, "
			       "js, bash",
			       lang);
	if (!(x = ws_find_sess(s, p, true, err)))
		return -1;
	rc = need_hub(x, err);
	if (!rc) {
		pthread_mutex_lock(&s->lock);
		rc = ctx_add(x, lang, cwd, result, err);
		pthread_mutex_unlock(&s->lock);
	}
	ws_sess_put(s, x);
	return rc;
}

static int m_ctx_list(struct ws_server *s, json_t *p, json_t **result,
		      struct ws_error *err)
{
	json_t *arr = json_array();
	struct sess *x;

	if (ws_only_keys(p, err, "session_id", NULL) < 0 ||
	    !(x = ws_find_sess(s, p, true, err))) {
		json_decref(arr);
		return -1;
	}
	pthread_mutex_lock(&s->lock);
	for (struct ws_ctx *c = x->cx ? x->cx->list : NULL; c; c = c->next)
		json_array_insert_new(arr, 0, ctx_json(c)); /* oldest first */
	pthread_mutex_unlock(&s->lock);
	ws_sess_put(s, x);
	*result = json_pack("{s:o}", "contexts", arr);
	return 0;
}

/* context.remove and context.restart in x (the server's lock held). */
static int ctx_drop(struct sess *x, json_t *p, bool remove, json_t **result,
		    struct ws_error *err)
{
	struct ws_ctx *c;

	if (ctx_param(x, p, &c, err) < 0)
		return -1;
	if (!c)
		return ws_fail(err, WS_E_PARAMS,
			       "params.context_id: required (a context id from "
			       "context.create)");
	json_array_append_new(x->cx->drop, json_string(c->id));
	*result = json_pack("{s:s, s:b}", "context_id", c->id,
			    remove ? "removed" : "restarted", 1);
	if (!remove)
		return 0;
	for (struct ws_ctx **pp = &x->cx->list; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	x->cx->n--;
	free(c->cwd);
	free(c);
	return 0;
}

/* context.remove and context.restart: the hub drops the context's state
 * at the session's next frame; a removed one is forgotten here now. */
static int m_ctx_drop(struct ws_server *s, json_t *p, bool remove,
		      json_t **result, struct ws_error *err)
{
	struct sess *x;
	int rc;

	if (ws_only_keys(p, err, "session_id", "context_id", NULL) < 0 ||
	    !(x = ws_find_sess(s, p, true, err)))
		return -1;
	pthread_mutex_lock(&s->lock);
	rc = ctx_drop(x, p, remove, result, err);
	pthread_mutex_unlock(&s->lock);
	ws_sess_put(s, x);
	return rc;
}

int ws_ctx_call(struct ws_server *s, const char *method, json_t *p,
		ws_stream_fn fn, void *fn_arg, struct ws_cancel *cancel,
		json_t **result, struct ws_error *err)
{
	if (!strcmp(method, "command.run"))
		return m_command(s, p, fn, fn_arg, cancel, result, err);
	if (!strcmp(method, "command.wait"))
		return m_cmd_wait(s, p, cancel, result, err);
	if (!strcmp(method, "command.kill"))
		return m_cmd_kill(s, p, result, err);
	if (!strcmp(method, "command.list"))
		return m_cmd_list(s, p, result, err);
	if (!strcmp(method, "context.create"))
		return m_ctx_create(s, p, result, err);
	if (!strcmp(method, "context.list"))
		return m_ctx_list(s, p, result, err);
	if (!strcmp(method, "context.remove"))
		return m_ctx_drop(s, p, true, result, err);
	if (!strcmp(method, "context.restart"))
		return m_ctx_drop(s, p, false, result, err);
	return 1;
}
