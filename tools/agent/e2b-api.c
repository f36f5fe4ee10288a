/*
 * e2b-api.c - E2B's sandboxes on ward's sessions: the control API
 * (/v2/sandboxes ...), routing of sandbox requests by their
 * E2b-Sandbox-Id header and access token, and the engine calls under them.
 * The envd and code-interpreter calls are e2b-sandbox.c's.
 *
 * A sandbox is one ward session (its id is the session id): one recorded
 * run, a cell row per execution and per command. Its E2B timeout is kept
 * here (e2b_tick closes it when it passes); a killed or expired sandbox is
 * remembered for a while so that its calls say it is gone (502, as E2B's
 * proxy) rather than that it never existed.
 */
#include "tools/agent/e2b.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "tools/agent/session-server.h"

enum {
	DEAD_KEEP_MS = 3600 * 1000, /* how long a gone sandbox is remembered */
	DEAD_KEEP_N = 1024,	 /* and how many at most (the last created) */
	DEFAULT_TIMEOUT_S = 300, /* E2B's default sandbox timeout */
};

/* ---- the engine ---- */

int e2b_engine(struct e2b *e, const char *method, json_t *params,
	       ws_stream_fn fn, void *arg, struct ws_cancel *c, json_t **res,
	       struct ws_error *err)
{
	int rc;

	*res = NULL;
	if (!params) {
		snprintf(err->message, sizeof(err->message), "out of memory");
		err->code = WS_E_INTERNAL;
		return -1;
	}
	rc = ws_call_c(e->srv, method, params, fn, arg, c, res, err);
	json_decref(params);
	return rc;
}

/* ---- small helpers ---- */

bool e2b_secret_eq(const char *secret, const char *given)
{
	size_t a = strlen(secret), b = given ? strlen(given) : 0;
	unsigned char d = given ? 0 : 1;

	/* every byte of the secret is looked at, whatever was given */
	for (size_t i = 0; i < a; i++)
		d |= (unsigned char)secret[i] ^
		     (unsigned char)(i < b ? given[i] : 0);
	return !d && a == b;
}

long long e2b_now_ms(void)
{
	return ws_realtime_ns() / 1000000;
}

void e2b_iso_time(char *buf, size_t n, long long ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	size_t k = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + k, n - k, ".%03lldZ", ms % 1000);
}

/* ---- sandboxes ---- */

static void sbx_free(struct sbx *x)
{
	if (!x)
		return;
	json_decref(x->metadata);
	free(x);
}

/* x in e's list by id (alive or not); under e->lock. */
struct sbx *e2b_find(struct e2b *e, const char *id)
{
	for (struct sbx *x = e->list; x; x = x->next)
		if (!strcmp(x->id, id))
			return x;
	return NULL;
}

void e2b_mark_dead(struct e2b *e, const char *id, const char *why)
{
	pthread_mutex_lock(&e->lock);
	struct sbx *x = e2b_find(e, id);
	if (x && x->alive) {
		x->alive = false;
		x->dead_ms = e2b_now_ms();
		snprintf(x->why_dead, sizeof(x->why_dead), "%s", why);
	}
	pthread_mutex_unlock(&e->lock);
}

/* Closes the session behind a sandbox; its run is recorded as closed. */
static void close_session(struct e2b *e, const char *id, const char *why)
{
	struct ws_error err;
	json_t *res;

	e2b_mark_dead(e, id, why);
	if (e2b_engine(e, "session.close", json_pack("{s:s}", "session_id", id),
		       NULL, NULL, NULL, &res, &err) == 0)
		json_decref(res);
}

void e2b_tick(struct e2b *e)
{
	long long now = e2b_now_ms();
	char due[64][32];
	int n = 0, dead = 0;

	pthread_mutex_lock(&e->lock);
	for (struct sbx **pp = &e->list; *pp;) {
		struct sbx *x = *pp;
		if (x->alive && x->end_ms <= now && n < 64)
			snprintf(due[n++], sizeof(due[0]), "%s", x->id);
		dead += !x->alive;
		if (!x->alive &&
		    (now - x->dead_ms > DEAD_KEEP_MS || dead > DEAD_KEEP_N)) {
			*pp = x->next;
			sbx_free(x);
			continue;
		}
		pp = &x->next;
	}
	pthread_mutex_unlock(&e->lock);
	for (int i = 0; i < n; i++)
		close_session(e, due[i], "its timeout passed");
	ws_server_tick(e->srv);
}

int e2b_new(struct ws_server *s, const char *api_key, struct e2b **out)
{
	struct e2b *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	e->srv = s;
	e->api_key = api_key;
	e->next_pid = 1000;
	pthread_mutex_init(&e->lock, NULL);
	*out = e;
	return 0;
}

void e2b_free(struct e2b *e)
{
	if (!e)
		return;
	for (;;) {
		char id[32] = "";
		pthread_mutex_lock(&e->lock);
		for (struct sbx *x = e->list; x && !id[0]; x = x->next)
			if (x->alive)
				snprintf(id, sizeof(id), "%s", x->id);
		pthread_mutex_unlock(&e->lock);
		if (!id[0])
			break;
		close_session(e, id, "the server stopped");
	}
	while (e->list) {
		struct sbx *x = e->list;
		e->list = x->next;
		sbx_free(x);
	}
	pthread_mutex_destroy(&e->lock);
	free(e);
}

/* ---- the control API ---- */

static json_t *sandbox_json(const struct sbx *x, bool tokens)
{
	char start[40], end[40];

	e2b_iso_time(start, sizeof(start), x->start_ms);
	e2b_iso_time(end, sizeof(end), x->end_ms);
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:O, s:s}",
			      "sandboxID", x->id, "templateID", x->template_id,
			      "clientID", "ward", "envdVersion",
			      E2B_ENVD_VERSION, "startedAt", start, "endAt",
			      end, "metadata", x->metadata, "state", "running");
	if (o && tokens) {
		json_object_set_new(o, "envdAccessToken",
				    json_string(x->envd_token));
		json_object_set_new(o, "trafficAccessToken",
				    json_string(x->traffic_token));
	}
	return o;
}

/* A request's "timeout" (seconds): 0 and the default when absent, -1 with
 * rp filled when bad. */
static long long body_timeout(struct e2b *e, json_t *body, struct e2b_reply *rp,
			      long long dflt)
{
	json_t *t = json_object_get(body, "timeout");
	double cap = e->max_life_s;

	if (!t || json_is_null(t))
		return dflt;
	if (!json_is_integer(t) || json_integer_value(t) <= 0) {
		e2b_reply_error(rp, 400,
				"timeout: give a positive whole number of "
				"seconds");
		return -1;
	}
	if (cap > 0 && (double)json_integer_value(t) > cap) {
		e2b_reply_error(rp, 400,
				"timeout %lld s is above this server's limit "
				"of %.0f s (ward serve --max-life)",
				(long long)json_integer_value(t), cap);
		return -1;
	}
	return json_integer_value(t);
}

static int strings_object(json_t *o, const char *what, struct e2b_reply *rp)
{
	const char *k;
	json_t *v;

	if (!o || json_is_null(o))
		return 0;
	if (!json_is_object(o)) {
		e2b_reply_error(rp, 400, "%s: must be an object of strings",
				what);
		return -1;
	}
	json_object_foreach(o, k, v)
	{
		if (!json_is_string(v)) {
			e2b_reply_error(rp, 400, "%s.%s: must be a string",
					what, k);
			return -1;
		}
	}
	return 0;
}

static void api_create(struct e2b *e, json_t *body, struct e2b_reply *rp)
{
	const char *tpl =
		json_string_value(json_object_get(body, "templateID"));
	json_t *meta = json_object_get(body, "metadata"),
	       *envs = json_object_get(body, "envVars"), *p, *res;
	json_t *net = json_object_get(body, "allow_internet_access");
	struct ws_error err;
	long long timeout = body_timeout(e, body, rp, DEFAULT_TIMEOUT_S);

	if (timeout < 0 || strings_object(meta, "metadata", rp) < 0 ||
	    strings_object(envs, "envVars", rp) < 0)
		return;
	if (json_is_true(net)) {
		e2b_reply_error(
			rp, 400,
			"allow_internet_access: ward's sandboxes reach "
			"the network only as their policy allows; start "
			"ward serve with a --policy that grants it and "
			"leave this unset");
		return;
	}
	if (!tpl)
		tpl = "code-interpreter-v1";
	p = json_pack("{s:s}", "language", "python");
	if (p && envs && json_is_object(envs))
		json_object_set(p, "env", envs);
	/* the server's setup (--setup), E2B's template build: done before
	 * the sandbox exists for the client */
	if (p && e->setup)
		json_object_set(p, "setup", e->setup);
	/* the template is only a name here: the policy is the operator's
	 * (ward serve --profile/--policy), never the client's to choose */
	if (e2b_engine(e, "session.create", p, NULL, NULL, NULL, &res, &err) <
	    0) {
		/* a failed setup is the server's (its --setup), not the
		 * request's; the message names the run that recorded it */
		e2b_reply_error(rp,
				err.code == WS_E_LIMIT		    ? 429
				: !strncmp(err.message, "setup", 5) ? 500
								    : 400,
				"cannot create the sandbox: %s", err.message);
		return;
	}
	struct sbx *x = calloc(1, sizeof(*x));
	const char *sid = json_string_value(json_object_get(res, "session_id")),
		   *rid = json_string_value(json_object_get(res, "run_id"));
	if (!x || !sid || ws_random_hex(x->envd_token, E2B_TOKEN_HEX) < 0 ||
	    ws_random_hex(x->traffic_token, E2B_TOKEN_HEX) < 0) {
		free(x);
		if (sid)
			close_session(e, sid, "out of memory");
		json_decref(res);
		e2b_reply_error(rp, 500, "out of memory");
		return;
	}
	snprintf(x->id, sizeof(x->id), "%s", sid);
	snprintf(x->run_id, sizeof(x->run_id), "%s", rid ? rid : "");
	snprintf(x->template_id, sizeof(x->template_id), "%s", tpl);
	/* the run's id, for `ward show`: the SDK passes metadata on */
	x->metadata = json_is_object(meta) ? json_deep_copy(meta)
					   : json_object();
	json_object_set_new(x->metadata, "ward_run_id", json_string(x->run_id));
	x->alive = true;
	x->start_ms = e2b_now_ms();
	x->end_ms = x->start_ms + timeout * 1000;
	json_decref(res);
	pthread_mutex_lock(&e->lock);
	x->next = e->list;
	e->list = x;
	e2b_reply_json(rp, 201, sandbox_json(x, true));
	pthread_mutex_unlock(&e->lock);
}

static void url_decode(char *s)
{
	char *o = s;

	for (; *s; s++) {
		unsigned v;
		if (*s == '%' && sscanf(s + 1, "%2x", &v) == 1) {
			*o++ = (char)v;
			s += 2;
		} else {
			*o++ = *s == '+' ? ' ' : *s;
		}
	}
	*o = '\0';
}

/* Does x carry every key=value of the query's metadata filter? */
static bool metadata_matches(const struct sbx *x, const char *filter)
{
	char *copy = filter ? strdup(filter) : NULL, *save = NULL;
	bool ok = true;

	if (!copy)
		return true;
	for (char *kv = strtok_r(copy, "&", &save); kv && ok;
	     kv = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(kv, '=');
		const char *v = "";
		if (eq) {
			*eq = '\0';
			v = eq + 1;
		}
		url_decode(kv);
		url_decode((char *)v);
		const char *have =
			json_string_value(json_object_get(x->metadata, kv));
		ok = have && !strcmp(have, v);
	}
	free(copy);
	return ok;
}

static void api_list(struct e2b *e, struct e2b_req *r, struct e2b_reply *rp)
{
	const char *meta = e2b_query(r, "metadata"),
		   *state = e2b_query(r, "state");
	json_t *arr = json_array();

	/* every sandbox here runs: a filter for paused ones only is empty */
	bool want = !state || strstr(state, "running");
	pthread_mutex_lock(&e->lock);
	for (struct sbx *x = e->list; x && want; x = x->next)
		if (x->alive && metadata_matches(x, meta))
			json_array_append_new(arr, sandbox_json(x, false));
	pthread_mutex_unlock(&e->lock);
	e2b_reply_json(rp, 200, arr);
}

/* The sandbox named in a control path, alive, under e->lock; else a 404
 * in rp (and the lock released). */
static struct sbx *locked_sandbox(struct e2b *e, const char *id,
				  struct e2b_reply *rp)
{
	pthread_mutex_lock(&e->lock);
	struct sbx *x = e2b_find(e, id);
	if (x && x->alive)
		return x;
	pthread_mutex_unlock(&e->lock);
	if (x)
		e2b_reply_error(rp, 404, "sandbox %s is gone: %s", id,
				x->why_dead);
	else
		e2b_reply_error(rp, 404,
				"sandbox %s not found (GET /v2/sandboxes lists "
				"the running ones)",
				id);
	return NULL;
}

static void api_sandbox(struct e2b *e, const char *method, const char *id,
			const char *action, json_t *body, struct e2b_reply *rp)
{
	struct sbx *x;
	long long t;

	if (!strcmp(method, "DELETE") && !*action) {
		if (!(x = locked_sandbox(e, id, rp)))
			return;
		pthread_mutex_unlock(&e->lock);
		close_session(e, id, "it was killed");
		e2b_reply_bytes(rp, 204, NULL, NULL, 0);
	} else if (!strcmp(method, "GET") && !*action) {
		if (!(x = locked_sandbox(e, id, rp)))
			return;
		e2b_reply_json(rp, 200, sandbox_json(x, true));
		pthread_mutex_unlock(&e->lock);
	} else if (!strcmp(method, "POST") && !strcmp(action, "/timeout")) {
		if ((t = body_timeout(e, body, rp, -1)) < 0) {
			if (!rp->body)
				e2b_reply_error(rp, 400,
						"timeout: required (seconds)");
			return;
		}
		if (!(x = locked_sandbox(e, id, rp)))
			return;
		x->end_ms = e2b_now_ms() + t * 1000;
		pthread_mutex_unlock(&e->lock);
		e2b_reply_bytes(rp, 204, NULL, NULL, 0);
	} else if (!strcmp(method, "POST") && (!strcmp(action, "/connect") ||
					       !strcmp(action, "/resume"))) {
		if ((t = body_timeout(e, body, rp, 0)) < 0)
			return;
		if (!(x = locked_sandbox(e, id, rp)))
			return;
		long long end = e2b_now_ms() + t * 1000;
		if (end > x->end_ms)
			x->end_ms = end;
		e2b_reply_json(rp, 200, sandbox_json(x, true));
		pthread_mutex_unlock(&e->lock);
	} else {
		e2b_reply_error(rp, 404,
				"%s /sandboxes/%s%s: not served by ward (see "
				"docs/agents.md)",
				method, id, action);
	}
}

/* ward's own: the questions of "ask" rules (docs/agents.md). GET
 * /ward/asks lists those waiting (session_id is the sandbox's id); POST
 * /ward/asks/ID {"answer", "by"?} answers one. */
static void api_asks(struct e2b *e, const char *method, const char *id,
		     json_t *body, struct e2b_reply *rp)
{
	struct ws_error err;
	json_t *res = NULL;

	if (!strcmp(method, "GET") && !*id) {
		if (e2b_engine(e, "ask.list", json_object(), NULL, NULL, NULL,
			       &res, &err) < 0)
			e2b_reply_error(rp, 500, "%s", err.message);
		else
			e2b_reply_json(rp, 200, res);
		return;
	}
	if (strcmp(method, "POST") || !*id) {
		e2b_reply_error(rp, 404,
				"%s /ward/asks%s%s: ward serves GET /ward/asks "
				"and POST /ward/asks/ID {\"answer\"}",
				method, *id ? "/" : "", id);
		return;
	}
	const char *answer = json_string_value(json_object_get(body, "answer"));
	const char *by = json_string_value(json_object_get(body, "by"));
	if (ws_ask_answer(e->srv, id, answer, "http", by, &err) < 0) {
		e2b_reply_error(rp, err.code == WS_E_PARAMS ? 400 : 500, "%s",
				err.message);
		return;
	}
	e2b_reply_json(rp, 200,
		       json_pack("{s:s, s:s}", "id", id, "answer", answer));
}

static void control(struct e2b *e, struct e2b_req *r, struct e2b_reply *rp)
{
	const char *url = r->url, *m = r->method;
	json_t *body = NULL;
	json_error_t je;

	if (!e2b_secret_eq(e->api_key, e2b_header(r, "X-API-Key"))) {
		e2b_reply_error(rp, 401,
				"a valid API key is required in X-API-Key "
				"(E2B_API_KEY: the key ward serve was given "
				"with --api-key or WARD_API_KEY)");
		return;
	}
	if (r->len) {
		body = json_loadb(r->body, r->len, 0, &je);
		if (!json_is_object(body)) {
			json_decref(body);
			e2b_reply_error(rp, 400,
					"the body is not a JSON object: %s "
					"(line %d, column %d)",
					body ? "another JSON value" : je.text,
					je.line, je.column);
			return;
		}
	}
	if (!strncmp(url, "/v2/", 4))
		url += 3;
	if (!strncmp(url, "/ward/asks", 10) &&
	    (url[10] == '\0' || url[10] == '/')) {
		api_asks(e, m, url[10] ? url + 11 : "", body, rp);
	} else if (!strcmp(url, "/sandboxes") && !strcmp(m, "POST")) {
		api_create(e, body, rp);
	} else if (!strcmp(url, "/sandboxes") && !strcmp(m, "GET")) {
		api_list(e, r, rp);
	} else if (!strncmp(url, "/sandboxes/", 11) && url[11]) {
		char id[64];
		size_t n = strcspn(url + 11, "/");
		if (n >= sizeof(id)) {
			e2b_reply_error(rp, 404, "no such sandbox");
		} else {
			memcpy(id, url + 11, n);
			id[n] = '\0';
			api_sandbox(e, m, id, url + 11 + n, body, rp);
		}
	} else {
		e2b_reply_error(rp, 404,
				"%s %s: not served by ward (see docs/agents.md "
				"for what is)",
				m, r->url);
	}
	json_decref(body);
}

/* ---- routing ---- */

void e2b_handle(struct e2b *e, struct e2b_req *r, struct e2b_reply *rp)
{
	const char *sid = e2b_header(r, "E2b-Sandbox-Id");

	if (r->too_large) {
		e2b_reply_error(rp, 413,
				"the request body is over ward's limit: %d MiB "
				"for a file written through /files, %d MiB for "
				"anything else",
				E2B_MAX_UPLOAD >> 20, E2B_MAX_BODY >> 20);
		return;
	}
	if (!sid) {
		control(e, r, rp);
		return;
	}
	e2b_sandbox_request(e, sid, r, rp);
}
