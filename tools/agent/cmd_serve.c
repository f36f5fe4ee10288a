/*
 * cmd_serve.c - `ward serve`: sessions (tools/agent/session.h) over JSON lines
 * on stdin and stdout. One request per line, one response per line:
 *   {"id": ID, "method": M, "params": {...}}
 *   -> {"id": ID, "result": {...}} | {"id": ID, "error": {code, message}}
 * A run with "stream": true sends {"id", "event": "stdout"|"stderr",
 * "data", "ts"} lines first ("data_base64" too when the chunk is not
 * UTF-8). Bad requests get an error and the server
 * goes on; EOF on stdin closes every session and exits 0.
 */
#include "tools/cmds.h"
#include "tools/agent/session.h"
#include "tools/agent/e2b.h"
#include "tools/agent/session-int.h"
#include "tools/run/runrec.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "policy/policy.h"

#define MAX_LINE     (16 << 20)
#define MAX_INFLIGHT 256 /* requests answered at once */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ward serve [options]\n"
		"\n"
		"Serve sessions over JSON lines on stdin/stdout: each session is one live\n"
		"interpreter (python, node, sh) under its own supervisor, policy and\n"
		"workdir, recorded as one run with a row per cell.\n"
		"\n"
		"request:  {\"id\": 1, \"method\": \"run\", \"params\": {\"code\": \"1+1\"}}\n"
		"response: {\"id\": 1, \"result\": {...}}  or  {\"id\": 1, \"error\": {\"code\", \"message\"}}\n"
		"\n"
		"Requests run at once, each on its own (a run waits only for the cell\n"
		"running in its own session): answers come as they are ready, in any\n"
		"order; match them by id. Output lines never interleave.\n"
		"\n"
		"methods:\n"
		"  session.create {language?, profile?, policy?, env?, timeout_s?, memory_mb?,\n"
		"                  life_s?, metadata?}  -> {session_id, language, run_id,\n"
		"                  expires_ms}\n"
		"  session.list   {}  (each: session_id, language, run_id, execution_count,\n"
		"                  created, last_used, started_ms, expires_ms, running,\n"
		"                  metadata)\n"
		"  session.update {session_id, life_s}  (it now ends life_s from now)\n"
		"  session.close  {session_id}  (a running cell is interrupted)\n"
		"  run            {code, session_id?, language?, timeout_s?, stream?,\n"
		"                  context_id?, env?}\n"
		"                 (no session_id: a one-shot run in a fresh interpreter)\n"
		"  ping           {}  -> {}\n"
		"  cancel         {id}  (the request with that id: its cell is interrupted\n"
		"                 and it answers status \"cancelled\")\n"
		"  files.write    {session_id, path, text | base64}  (parents made)\n"
		"  files.read     {session_id, path}\n"
		"  files.list     {session_id, path?, depth?}  (entries: path, name, type,\n"
		"                  size, mode, mtime_ms, sha256 for files)\n"
		"  files.stat     {session_id, path}\n"
		"  files.mkdir    {session_id, path}\n"
		"  files.remove   {session_id, path}  (a file or a whole directory)\n"
		"  files.rename   {session_id, from, to}\n"
		"  context.create {session_id, language?: python|js|bash, cwd?}\n"
		"  context.list   {session_id}\n"
		"  context.remove, context.restart  {session_id, context_id}\n"
		"  command.run    {session_id, cmd, env?, cwd?, stdin?, timeout_s?, stream?,\n"
		"                  background?}  (background: {command_id} at once)\n"
		"  command.wait, command.kill  {session_id, command_id}\n"
		"  command.list   {session_id}\n"
		"  ask.answer     {id, answer: allow_once|allow_always|deny, by?}  (a\n"
		"                 question of an \"ask\" rule, sent as {\"event\": \"ask\",\n"
		"                 \"ask\": {id, session_id, question, rule, target, ...}})\n"
		"  ask.list       {}  (the questions waiting)\n"
		"\n"
		"In a python session, run takes language js (node) and bash (sh) too, a\n"
		"context_id (contexts share no state) and env for that cell alone;\n"
		"command.run runs /bin/bash -c CMD. All of it is the session's run, one\n"
		"cell at a time, commands beside the cells: its interpreter starts the\n"
		"others (docs/agents.md).\n"
		"Paths are relative to the session's workdir and stay inside it.\n"
		"\n"
		"End of input: the requests read are answered, then every session is\n"
		"closed; a client that is gone (nobody reads stdout), SIGTERM, SIGINT\n"
		"and SIGHUP cancel the running cells first.\n"
		"\n"
		"A run's output: logs.stdout and logs.stderr are arrays of text (the\n"
		"whole, or head and tail; bytes that are not UTF-8 become U+FFFD);\n"
		"exactly when some part is not valid UTF-8, logs.stdout_base64\n"
		"(stderr_base64) holds every part's exact bytes, part for part. With\n"
		"\"stream\": true, {\"id\", \"event\": \"stdout\"|\"stderr\", \"data\", \"ts\"}\n"
		"lines come first, with \"data_base64\" exactly when data is not the bytes.\n"
		"\n"
		"With --listen HOST:PORT, ward serves E2B's HTTP API instead (the\n"
		"official E2B SDKs run against it: E2B_API_URL and E2B_SANDBOX_URL set\n"
		"to http://HOST:PORT, E2B_API_KEY to the key): each sandbox is one\n"
		"session. docs/agents.md says what is served.\n"
		"\n"
		"options:\n"
		"  --listen HOST:PORT   serve E2B's API over HTTP on HOST:PORT (say\n"
		"                       127.0.0.1:49982; port 0 picks one, printed\n"
		"                       on stdout)\n"
		"  --api-key KEY        the key E2B clients must send (X-API-Key;\n"
		"                       default: $WARD_API_KEY; required with --listen)\n"
		"  --setup FILE         with --listen: every sandbox first runs FILE\n"
		"                       (language by its name, as ward run --setup)\n"
		"                       under the policy's setup phase (\"phases\":\n"
		"                       {\"setup\": ...}, docs/policy.md), like an E2B\n"
		"                       template; its interpreter is handed out after.\n"
		"                       A failed setup fails the sandbox's creation\n"
		"  --setup-code CODE    the same with Python code given here\n"
		"  --db PATH            audit database (default: $WARD_DB, then\n"
		"                       $XDG_STATE_HOME/ward/audit.db)\n"
		"  --seal-log FILE      append each session's seal to FILE (as ward run\n"
		"                       --seal-log; default: $WARD_SEAL_LOG)\n"
		"  --seal-syslog        and to the system log (as ward run --seal-syslog)\n"
		"  --profile NAME       default profile of new sessions (default)\n"
		"  --policy FILE        default policy file of new sessions\n"
		"  --timeout SECONDS    default per-cell timeout (30)\n"
		"  --idle SECONDS       close a session idle this long (600)\n"
		"  --max-life SECONDS   close a session this old (3600): the default\n"
		"                       and the cap of session.create's life_s\n"
		"  --max-sessions N     sessions open at once (16)\n"
		"  --max-timeout SEC    cap on any cell's timeout_s (none): a larger\n"
		"                       one is capped, and the result says so\n"
		"                       (timeout_s, timeout_capped_from)\n" WS_POOL_HELP
		"  -v                   ward's own milestones on stderr\n"
		"  -h, --help           this text\n"
		"\n"
		"Without --listen, ward serve serves one client over stdin/stdout and\n"
		"says so on stderr.\n"
		"\n"
		"Error codes: -32700 parse error, -32600 invalid request, -32601 unknown\n"
		"method, -32602 bad params, -32603 internal, -32001 no such session,\n"
		"-32002 limit, -32003 file refused, -32004 too large.\n");
}

static double num_arg(const char *opt, const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || v <= 0)
		die("%s %s: give a positive number", opt, s);
	return v;
}

/* --setup FILE / --setup-code CODE (--listen only): {"code", "language"}
 * for every sandbox's session.create, after checking that the servers'
 * policy has a setup phase; dies (125) otherwise. */
static json_t *serve_setup(const char *file, const char *code,
			   const struct ws_config *cfg,
			   const struct e2b_options *eo, int pool)
{
	const char *opt = file ? "--setup" : "--setup-code";
	const char *lang = file ? ward_lang_of_file(file) : "python";
	struct policy_error perr = { 0 };
	struct policy *pol = NULL;
	char *text = NULL, msg[1024];
	size_t len = 0;

	if (file && code)
		die("serve: give one of --setup FILE and --setup-code CODE");
	if (!eo->listen)
		die("serve: %s is for --listen (every E2B sandbox runs it); over "
		    "JSON lines, give session.create a \"setup\"",
		    opt);
	if (pool)
		die("serve: %s with --pool: a pooled session has had no setup; "
		    "leave out one of them",
		    opt);
	if (file) {
		text = ward_read_path(file, &len);
		if (!text)
			die_errno("--setup %s", file);
		if (strlen(text) != len)
			die("--setup %s: a NUL byte in the code", file);
	}
	int rc = cfg->policy ? policy_load_file(cfg->policy, &pol, &perr)
			     : policy_load_profile(cfg->profile ? cfg->profile
								: "default",
						   &pol, &perr);
	if (rc < 0) {
		policy_error_format(&perr, msg, sizeof(msg));
		die("serve: bad policy: %s", msg);
	}
	if (!policy_phase(pol, "setup"))
		die("%s: policy %s has no setup phase: add \"phases\": "
		    "{\"setup\": {...}} with what the setup may do more than "
		    "the code, and give it with --policy (docs/policy.md, "
		    "\"Phases\")",
		    opt, policy_name(pol));
	policy_free(pol);
	json_t *j = json_pack("{s:s, s:s}", "code", file ? text : code,
			      "language", lang);
	free(text);
	if (!j)
		die("out of memory");
	return j;
}

/* --listen: the key, and limits in E2B's terms: a sandbox lives until its
 * timeout (ward's idle expiry is the lifetime cap), and a cell runs until
 * the client stops waiting (its runCode timeoutMs) or 300 s. */
static void e2b_defaults(struct ws_config *cfg, struct e2b_options *eo)
{
	if (!eo->api_key)
		eo->api_key = getenv("WARD_API_KEY");
	if (!eo->api_key || !*eo->api_key)
		die("serve: --listen needs an API key: --api-key KEY or "
		    "WARD_API_KEY (E2B clients send it as E2B_API_KEY)");
	if (!cfg->max_life_s)
		cfg->max_life_s = 3600;
	if (!cfg->idle_s)
		cfg->idle_s = cfg->max_life_s;
	if (!cfg->cell_timeout_s)
		cfg->cell_timeout_s = cfg->max_timeout_s > 0 &&
						      cfg->max_timeout_s < 300
					      ? cfg->max_timeout_s
					      : 300;
	eo->max_life_s = cfg->max_life_s;
}

/* The server's state: the requests in flight (each on its own thread)
 * and stdout, one whole line at a time. */
struct srv {
	struct ws_server *ws;
	pthread_mutex_t lock; /* reqs, n, broken */
	pthread_cond_t done;  /* a request finished */
	struct req *reqs;
	int n;
	unsigned long long seq; /* requests read */
	bool broken;		/* stdout's reader is gone */
	bool stopping;		/* a stop signal came */
	int wake;		/* readable then: stop reading */
	pthread_mutex_t out;
};

struct req {
	struct req *next;
	struct srv *v;
	json_t *msg, *id; /* id: in msg, or json_null() */
	const char *method;
	json_t *params;
	struct ws_cancel *cancel;
	unsigned long long seq;
	char sid[32]; /* a run's session_id, or "" */
	bool cancelled;
};

/* Lock held: is a run on r's session that came before r still in
 * flight? Runs on one session go in the order they came: a thread that
 * started later may reach the session first. */
static bool run_before(const struct srv *v, const struct req *r)
{
	for (const struct req *o = v->reqs; o; o = o->next)
		if (o->seq < r->seq && !strcmp(o->sid, r->sid))
			return true;
	return false;
}

/* Waits until the runs on r's session that came before it are over (or
 * r is cancelled: the session server then answers "cancelled"). */
static void await_order(struct srv *v, struct req *r)
{
	if (!r->sid[0])
		return;
	pthread_mutex_lock(&v->lock);
	while (!r->cancelled && run_before(v, r)) {
		struct timespec ts;
		ws_time_in(&ts, CLOCK_REALTIME, 100);
		pthread_cond_timedwait(&v->done, &v->lock, &ts);
	}
	pthread_mutex_unlock(&v->lock);
}

static void cancel_all(struct srv *v)
{
	pthread_mutex_lock(&v->lock);
	for (struct req *r = v->reqs; r; r = r->next) {
		r->cancelled = true;
		ws_cancel_fire(r->cancel);
	}
	pthread_cond_broadcast(&v->done);
	pthread_mutex_unlock(&v->lock);
}

/* One line on stdout (jansson escapes newlines in strings: it cannot be
 * split); lines of several threads never interleave. A reader that went
 * away cancels every request (the client disconnected). */
static void emit(struct srv *v, json_t *o)
{
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	bool gone = false;

	json_decref(o);
	if (!text) {
		warn("serve: cannot serialise a response (out of memory)");
		return;
	}
	pthread_mutex_lock(&v->out);
	if (fputs(text, stdout) < 0 || fputc('\n', stdout) < 0 ||
	    fflush(stdout) < 0)
		gone = true;
	pthread_mutex_unlock(&v->out);
	free(text);
	if (gone) {
		pthread_mutex_lock(&v->lock);
		bool first = !v->broken;
		v->broken = true;
		pthread_mutex_unlock(&v->lock);
		if (first)
			debug("serve: stdout is gone: cancelling every request");
		cancel_all(v);
	}
}

/* A question of a session's "ask" rule (session-ask.c): an event line
 * the client answers with ask.answer. */
static void on_ask(void *arg, json_t *ask)
{
	emit(arg, json_pack("{s:s, s:O}", "event", "ask", "ask", ask));
}

static void emit_error(struct srv *v, json_t *id, int code, const char *msg)
{
	emit(v, json_pack("{s:O, s:{s:i, s:s}}", "id", id ? id : json_null(),
			  "error", "code", code, "message", msg));
}

struct stream_arg {
	struct srv *v;
	json_t *id;
};

static void on_stream(void *arg, const char *stream, const char *data,
		      size_t len, long long ts_ns)
{
	struct stream_arg *a = arg;
	json_t *e = json_pack("{s:O, s:s, s:n, s:f}", "id", a->id, "event",
			      stream, "data", "ts", (double)ts_ns / 1e9);

	/* "data" is text (U+FFFD for bytes that are not UTF-8); exactly
	 * when it is not the bytes, "data_base64" has them (chunks are cut
	 * between characters: session.c) */
	if (!e || ward_json_set_bytes(e, "data", data, len) < 0) {
		json_decref(e);
		warn("serve: out of memory for a stream event");
		return;
	}
	emit(a->v, e);
}

static void req_free(struct req *r)
{
	json_decref(r->msg);
	ws_cancel_free(r->cancel);
	free(r);
}

/* A request's thread: the call, its answer, and its place in flight
 * given up. */
static void *req_main(void *arg)
{
	struct req *r = arg;
	struct srv *v = r->v;
	struct stream_arg sa = { v, r->id };
	struct ws_error err;
	json_t *result = NULL;

	await_order(v, r);
	if (ws_call_c(v->ws, r->method, r->params, on_stream, &sa, r->cancel,
		      &result, &err) < 0) {
		if (err.code == WS_E_METHOD) {
			size_t l = strlen(err.message);
			snprintf(err.message + l, sizeof(err.message) - l,
				 ", cancel, ping");
		}
		emit_error(v, r->id, err.code, err.message);
	} else
		emit(v, json_pack("{s:O, s:o}", "id", r->id, "result", result));
	pthread_mutex_lock(&v->lock);
	for (struct req **pp = &v->reqs; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	v->n--;
	pthread_cond_broadcast(&v->done);
	pthread_mutex_unlock(&v->lock);
	req_free(r);
	return NULL;
}

/* {"method": "cancel", "params": {"id": ID}}: the requests in flight with
 * that id are cancelled (a run returns status "cancelled"; one waiting
 * for its session's turn is dropped with that status). */
static void cancel_method(struct srv *v, json_t *id, json_t *params)
{
	json_t *target = json_object_get(params, "id");
	int n = 0;

	if (!target || json_object_size(params) != 1) {
		emit_error(v, id, WS_E_PARAMS,
			   "cancel: params must be {\"id\": the id of the "
			   "request to cancel}");
		return;
	}
	pthread_mutex_lock(&v->lock);
	for (struct req *r = v->reqs; r; r = r->next)
		if (json_equal(r->id, target)) {
			r->cancelled = true;
			ws_cancel_fire(r->cancel);
			n++;
		}
	pthread_cond_broadcast(&v->done);
	pthread_mutex_unlock(&v->lock);
	emit(v, json_pack("{s:O, s:{s:O, s:b}}", "id", id, "result", "id",
			  target, "cancelled", n > 0));
}

/* Starts a request on a thread of its own; the answer comes when it is
 * done, in any order (clients match answers by id). */
static void start(struct srv *v, json_t *req, json_t *id, const char *method,
		  json_t *params)
{
	struct req *r = calloc(1, sizeof(*r));
	int rc;

	if (!r || !(r->cancel = ws_cancel_new())) {
		free(r);
		emit_error(v, id, WS_E_INTERNAL, "out of memory");
		return;
	}
	r->v = v;
	r->msg = json_incref(req);
	r->id = id;
	r->method = method;
	r->params = params;
	const char *sid =
		json_string_value(json_object_get(params, "session_id"));
	if (!strcmp(method, "run") && sid && strlen(sid) < sizeof(r->sid))
		strcpy(r->sid, sid);
	pthread_mutex_lock(&v->lock);
	r->seq = ++v->seq;
	if (v->n >= MAX_INFLIGHT) {
		pthread_mutex_unlock(&v->lock);
		req_free(r);
		emit_error(v, id, WS_E_LIMIT,
			   "too many requests in flight; wait for answers "
			   "before sending more");
		return;
	}
	r->next = v->reqs;
	v->reqs = r;
	v->n++;
	pthread_mutex_unlock(&v->lock);
	rc = ws_thread_detached(req_main, r);
	if (rc) {
		pthread_mutex_lock(&v->lock);
		v->reqs = r->next; /* still first: only this thread adds */
		v->n--;
		pthread_mutex_unlock(&v->lock);
		req_free(r);
		emit_error(v, id, WS_E_INTERNAL, "cannot start a thread");
	}
}

static void handle(struct srv *v, const char *line, size_t len)
{
	json_error_t je;
	json_t *req = json_loadb(line, len, 0, &je), *id, *params;
	const char *method;

	if (!req) {
		char msg[300];
		snprintf(msg, sizeof(msg), "malformed JSON at column %d: %s",
			 je.column, je.text);
		emit_error(v, NULL, WS_E_PARSE, msg);
		return;
	}
	id = json_object_get(req, "id");
	if (!id)
		id = json_null();
	method = json_string_value(json_object_get(req, "method"));
	params = json_object_get(req, "params");
	if (!json_is_object(req) || !method)
		emit_error(v, id, WS_E_INVALID,
			   "a request is an object {\"id\", \"method\", "
			   "\"params\"} with method a string");
	else if (params && !json_is_object(params))
		emit_error(v, id, WS_E_PARAMS, "params: must be an object");
	else if (!strcmp(method, "cancel"))
		cancel_method(v, id, params);
	else if (!strcmp(method, "ping"))
		emit(v, json_pack("{s:O, s:{}}", "id", id, "result"));
	else
		start(v, req, id, method, params);
	json_decref(req);
}

/* True when nobody reads stdout any more (a pipe's reader closed). */
static bool stdout_gone(void)
{
	struct pollfd q = { 1, 0, 0 };

	return poll(&q, 1, 0) > 0 && (q.revents & (POLLERR | POLLHUP));
}

/* Reads stdin line by line; a line longer than MAX_LINE is answered with
 * an error (with its id when its start shows one) and skipped. */
/* The first stop signal (ws_stop_signals): every request is cancelled,
 * and the reader stops. */
static void on_stop(void *arg)
{
	struct srv *v = arg;

	pthread_mutex_lock(&v->lock);
	v->stopping = true;
	pthread_mutex_unlock(&v->lock);
	cancel_all(v);
}

static void serve(struct srv *v)
{
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	bool skipping = false;

	if (!buf)
		die("out of memory");
	for (;;) {
		struct pollfd q[2] = { { 0, POLLIN, 0 },
				       { v->wake, POLLIN, 0 } };
		int np = poll(q, 2, 1000);
		if (np > 0 && q[1].revents)
			break;
		if (np == 0) {
			ws_server_tick(v->ws);
			if (stdout_gone())
				cancel_all(v);
			continue;
		}
		if (len == cap) {
			cap *= 2;
			char *nb = realloc(buf, cap);
			if (!nb)
				die("out of memory");
			buf = nb;
		}
		ssize_t n = read(0, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		char *nl, *start = buf;
		while ((nl = memchr(start, '\n',
				    len - (size_t)(start - buf)))) {
			if (!skipping && nl > start)
				handle(v, start, (size_t)(nl - start));
			skipping = false;
			start = nl + 1;
		}
		len -= (size_t)(start - buf);
		memmove(buf, start, len);
		if (len > MAX_LINE) {
			if (!skipping) {
				char msg[128];
				json_t *id = ws_json_line_id(buf, 4096);
				snprintf(msg, sizeof(msg),
					 "request line longer than %d MiB; "
					 "skipped",
					 MAX_LINE >> 20);
				emit_error(v, id, WS_E_TOO_LARGE, msg);
				json_decref(id);
			}
			skipping = true;
			len = 0;
		}
	}
	if (len > 0 && !skipping)
		handle(v, buf, len);
	free(buf);
}

/* End of input: the requests read are answered, unless the client is gone
 * altogether (nobody reads stdout): then they are cancelled. */
static void drain(struct srv *v)
{
	pthread_mutex_lock(&v->lock);
	while (v->n > 0) {
		struct timespec ts;
		ws_time_in(&ts, CLOCK_REALTIME, 100);
		pthread_cond_timedwait(&v->done, &v->lock, &ts);
		if (v->n > 0 && !v->broken && (v->stopping || stdout_gone())) {
			v->broken = true;
			debug("serve: cancelling %d request(s): the client "
			      "is gone, or ward was told to stop",
			      v->n);
			for (struct req *r = v->reqs; r; r = r->next) {
				r->cancelled = true;
				ws_cancel_fire(r->cancel);
			}
		}
	}
	pthread_mutex_unlock(&v->lock);
}

int ward_cmd_serve(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, 0, 'd' },
		{ "seal-log", required_argument, 0, 'S' },
		{ "seal-syslog", no_argument, 0, 'Y' },
		{ "profile", required_argument, 0, 'p' },
		{ "policy", required_argument, 0, 'P' },
		{ "timeout", required_argument, 0, 't' },
		{ "idle", required_argument, 0, 'i' },
		{ "max-life", required_argument, 0, 'l' },
		{ "max-sessions", required_argument, 0, 'm' },
		{ "max-timeout", required_argument, 0, 'T' },
		{ "pool", required_argument, 0, 'O' },
		{ "preload", required_argument, 0, 'R' },
		{ "pool-fork", required_argument, 0, 'F' },
		{ "listen", required_argument, 0, 'L' },
		{ "api-key", required_argument, 0, 'K' },
		{ "setup", required_argument, 0, 'U' },
		{ "setup-code", required_argument, 0, 'C' },
		{ "session-worker", no_argument, 0, 'W' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	struct ws_config cfg = { 0 };
	struct e2b_options eo = { 0 };
	struct ws_pool_opts po = { 0 };
	const char *setup_file = NULL, *setup_code = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "hv", opts, NULL)) != -1) {
		switch (c) {
		case 'v': ward_verbose++; break;
		case 'd': cfg.db = optarg; break;
		case 'S': ward_seal_log_arg("--seal-log", optarg); break;
		case 'Y': ward_seal_syslog_arg(); break;
		case 'p': cfg.profile = optarg; break;
		case 'P': cfg.policy = optarg; break;
		case 't':
			cfg.cell_timeout_s = num_arg("--timeout", optarg);
			break;
		case 'i': cfg.idle_s = num_arg("--idle", optarg); break;
		case 'l': cfg.max_life_s = num_arg("--max-life", optarg); break;
		case 'm':
			cfg.max_sessions =
				(int)num_arg("--max-sessions", optarg);
			break;
		case 'T':
			cfg.max_timeout_s = num_arg("--max-timeout", optarg);
			break;
		case 'O': po.n = ws_pool_count_arg(optarg); break;
		case 'R': po.preload = optarg; break;
		case 'F': po.no_fork = !ws_pool_fork_arg(optarg); break;
		case 'L': eo.listen = optarg; break;
		case 'K': eo.api_key = optarg; break;
		case 'U': setup_file = optarg; break;
		case 'C': setup_code = optarg; break;
		case 'W': return ws_worker_main();
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return WARD_EXIT_INTERNAL;
		}
	}
	if (optind < argc)
		die("serve: unexpected argument '%s' (try `ward serve --help`)",
		    argv[optind]);
	if (cfg.policy && access(cfg.policy, R_OK) < 0)
		die_errno("--policy %s", cfg.policy);
	if (cfg.max_timeout_s > 0 && cfg.cell_timeout_s > cfg.max_timeout_s)
		die("serve: --timeout %g is above --max-timeout %g; give a "
		    "default within the cap",
		    cfg.cell_timeout_s, cfg.max_timeout_s);
	if (setup_file || setup_code)
		eo.setup = serve_setup(setup_file, setup_code, &cfg, &eo, po.n);

	/* A client that goes away must not kill the server mid-write. */
	signal(SIGPIPE, SIG_IGN);
	struct srv v = { 0 };
	int rc;
	if (eo.listen) {
		/* e2b_serve takes SIGINT and SIGTERM itself */
		e2b_defaults(&cfg, &eo);
	} else {
		pthread_mutex_init(&v.lock, NULL);
		pthread_mutex_init(&v.out, NULL);
		pthread_cond_init(&v.done, NULL);
		rc = ws_stop_signals(on_stop, &v, &v.wake);
		if (rc < 0)
			die("serve: cannot take the stop signals: %s",
			    strerror(-rc));
		warn("serve: no --listen: one client over stdin/stdout (JSON "
		     "lines); for several clients at once, listen on a port "
		     "(see `ward serve --help`)");
	}
	struct ws_server *s;
	rc = ws_server_new(&cfg, &s);
	if (rc < 0)
		die("cannot start: %s (the audit database: --db, WARD_DB, HOME)",
		    strerror(-rc));
	ws_pool_start(s, &po, "serve");
	if (eo.listen) {
		rc = e2b_serve(s, &eo);
		ws_server_free(s);
		json_decref(eo.setup);
		return rc < 0 ? WARD_EXIT_INTERNAL : 0;
	}
	v.ws = s;
	ws_server_on_ask(s, on_ask, &v);
	serve(&v);
	if (stdout_gone())
		cancel_all(&v);
	drain(&v);
	ws_server_free(s);
	pthread_cond_destroy(&v.done);
	pthread_mutex_destroy(&v.lock);
	pthread_mutex_destroy(&v.out);
	return 0;
}
