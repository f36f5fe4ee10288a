/*
 * cmd_mcp.c - `ward mcp`: a Model Context Protocol server over stdio.
 *
 * The transport is newline-delimited JSON-RPC 2.0 (one message per line, no
 * embedded newline); the tools are thin wrappers around ws_call()
 * (tools/agent/session.h), which owns sessions, runs and the record. This file
 * only speaks the protocol: the lifecycle (initialize, version negotiation,
 * ping), tools/list, tools/call, and turning a run's result object into
 * content blocks a model can read (the tools and their content are
 * mcp-tools.c; what both files share is mcp.h).
 *
 * Error split, as the specification (2025-11-25, SEP-1303) draws it:
 * malformed messages, unknown methods, unknown tools and a tools/call that
 * is not shaped like one are JSON-RPC errors; anything about a tool's
 * arguments or its execution (a bad argument, an unknown session, a file
 * that is not there, the code's exception or timeout) is a tool result with
 * isError, so the model sees the message and can correct itself.
 *
 * What the model may choose is deliberately narrow: the tools pass on only
 * the arguments their schemas name, never a policy file or a profile, so
 * the operator's --profile/--policy bound every session (and
 * --max-timeout its time).
 *
 * Threads. The main thread reads requests and answers at once what needs
 * no session (initialize, ping, tools/list, errors) and
 * notifications/cancelled; each tools/call request (or batch) runs on a
 * thread of its own through ws_call_c, so calls on different sessions run
 * in parallel (a run waits only for the cell running in its own session,
 * in the session server) and answers come as they are ready. A ticker
 * thread expires idle sessions while no request comes. A cancelled call
 * has its cell interrupted, or is dropped while it waits for its session
 * (ws_cancel_fire); it is not answered, as the specification asks.
 *
 * The end: at the end of input the calls read are answered, then every
 * session is closed (its run recorded as ended by the client); when
 * nobody reads stdout any more, or on SIGTERM, SIGINT or SIGHUP (an SDK
 * client sends SIGTERM when the server has not exited 2 s after it closed
 * stdin), the calls are cancelled first. Workers are forked by the
 * session server's own thread: PR_SET_PDEATHSIG fires when the thread
 * that forked ends, and a call thread that forked them used to end before
 * the sessions were closed, which aborted every session (SIGTERM).
 */
#include "tools/cmds.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/json.h"
#include "common/log.h"
#include "common/utf8.h"
#include "tools/agent/session.h"
#include "tools/agent/mcp.h"

#define DEFAULT_MAX_REQUEST (64u << 20) /* bytes in one request line */
#define PROGRESS_CHUNK_MAX  1000 /* bytes of output per progress message */
#define TICK_MS		    1000 /* session expiry checks while idle */
#define MAX_INFLIGHT	    256	 /* tools/call requests answered at once */

/* A tools/call request (or a batch) on its thread. */
struct job {
	struct job *next;
	struct mcp *m;
	json_t *msg;
	json_t *id; /* the request's id (in msg); NULL for a batch */
	struct ws_cancel *cancel; /* fired by notifications/cancelled */
	bool cancelled;		  /* m->lock */
	unsigned long long seq;	  /* requests read */
	char sid[32];		  /* a run_code's session_id, or "" */
	/* while a tools/call that asked for progress runs */
	json_t *progress_token;
	long long progress;
};

/* Newest first; the first is what a client with an unknown version gets. */
static const char *const protocol_versions[] = {
	"2025-11-25",
	"2025-06-18",
	"2025-03-26",
	"2024-11-05",
};

/* ---- output ---- */

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* One message, one line. jansson escapes every newline inside strings, so
 * the line cannot be split. Takes the reference to msg. */
static void send_msg(struct mcp *m, json_t *msg)
{
	char *text;
	size_t len;

	if (!msg)
		return;
	text = json_dumps(msg, JSON_COMPACT);
	json_decref(msg);
	if (!text) {
		warn("mcp: cannot serialise a response (out of memory)");
		return;
	}
	len = strlen(text);
	text[len] = '\n'; /* replaces the NUL; written by length */
	pthread_mutex_lock(&m->out_lock);
	if (!m->out_broken && write_all(m->out_fd, text, len + 1) < 0) {
		warn_errno("mcp: writing to stdout");
		m->out_broken = true;
	}
	pthread_mutex_unlock(&m->out_lock);
	free(text);
}

static bool out_is_broken(struct mcp *m)
{
	pthread_mutex_lock(&m->out_lock);
	bool b = m->out_broken;
	pthread_mutex_unlock(&m->out_lock);
	return b;
}

/* True when nobody reads stdout any more (a pipe's reader closed). */
static bool stdout_gone(struct mcp *m)
{
	struct pollfd q = { m->out_fd, 0, 0 };

	return poll(&q, 1, 0) > 0 && (q.revents & (POLLERR | POLLHUP));
}

/* ---- JSON-RPC responses ---- */

__attribute__((format(printf, 3, 4))) static json_t *
rpc_error(json_t *id, int code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return json_pack("{s:s, s:O, s:{s:i, s:o}}", "jsonrpc", "2.0", "id",
			 id ? id : json_null(), "error", "code", code,
			 "message", ws_json_text(msg, strlen(msg)));
}

/* Takes the reference to result; a request always gets an answer, so a
 * result that could not be built becomes an internal error. */
static json_t *rpc_result(json_t *id, json_t *result)
{
	json_t *r;

	if (!result)
		return rpc_error(
			id, WS_E_INTERNAL,
			"internal error: cannot build the result (out of memory)");
	r = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id",
		      id ? id : json_null(), "result", result);
	return r ? r : rpc_error(id, WS_E_INTERNAL, "out of memory");
}

/* ---- tools/call ---- */

static void on_stream(void *arg, const char *stream, const char *data,
		      size_t len, long long ts_ns)
{
	struct job *j = arg;
	struct ward_strbuf sb = WARD_STRBUF_INIT;
	json_t *params;

	(void)ts_ns;
	if (!j->progress_token)
		return;
	ward_strbuf_appendf(&sb, "%s: ", stream);
	mcp_append_head_tail(&sb, data, len, PROGRESS_CHUNK_MAX);
	params = json_pack("{s:O, s:I, s:s}", "progressToken",
			   j->progress_token, "progress",
			   (json_int_t)++j->progress, "message",
			   ward_strbuf_str(&sb));
	ward_strbuf_free(&sb);
	send_msg(j->m, json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method",
				 "notifications/progress", "params", params));
}

/* A tool result that reports a failure in text (and the ws error code). */
/* The session server's message in this interface's words: its methods
 * named as the tools that call them, params as arguments. */
static void in_mcp_terms(const char *msg, char *out, size_t n)
{
	static const char *const words[][2] = {
		{ "params.", "arguments." },
		{ "session.create", "create_session" },
		{ "session.list", "list_sessions" },
		{ "session.close", "close_session" },
		{ "files.write", "write_file" },
		{ "files.read", "read_file" },
		{ "files.list", "list_files" },
	};
	size_t o = 0;

	while (*msg && o + 1 < n) {
		size_t i, k = sizeof(words) / sizeof(*words);
		for (i = 0; i < k; i++)
			if (!strncmp(msg, words[i][0], strlen(words[i][0])))
				break;
		if (i == k) {
			out[o++] = *msg++;
			continue;
		}
		o += (size_t)snprintf(out + o, n - o, "%s", words[i][1]);
		if (o >= n)
			o = n - 1;
		msg += strlen(words[i][0]);
	}
	out[o] = '\0';
}

static json_t *tool_failure(const char *tool, const struct ws_error *e)
{
	char text[1024], msg[sizeof(e->message) + 64];

	in_mcp_terms(e->message[0] ? e->message : "no message", msg,
		     sizeof(msg));
	/* the message is cut to fit; mcp_text_block() repairs a cut
	 * character */
	snprintf(text, sizeof(text), "%s failed: %s (ward error %d)", tool, msg,
		 e->code);
	return json_pack("{s:[o], s:b}", "content", mcp_text_block(text),
			 "isError", true);
}

/* Copies the arguments the tool passes on; anything else is the model's
 * mistake and comes back as a tool error naming what is allowed. */
static int tool_params(const struct tool *t, json_t *args, json_t **out,
		       struct ws_error *e)
{
	const char *key;
	json_t *v;

	*out = json_object();
	json_object_foreach(args, key, v)
	{
		bool known = false;

		for (const char *const *a = t->args; *a; a++)
			known = known || !strcmp(*a, key);
		if (!known) {
			struct ward_strbuf sb = WARD_STRBUF_INIT;

			for (const char *const *a = t->args; *a; a++)
				ward_strbuf_appendf(&sb, "%s%s",
						    a == t->args ? "" : ", ",
						    *a);
			e->code = WS_E_PARAMS;
			snprintf(e->message, sizeof(e->message),
				 "unknown argument '%s' (%s takes: %s)", key,
				 t->name,
				 sb.len ? ward_strbuf_str(&sb) : "nothing");
			ward_strbuf_free(&sb);
			json_decref(*out);
			*out = NULL;
			return -1;
		}
		json_object_set(*out, key, v);
	}
	return 0;
}

static json_t *tools_call(struct mcp *m, struct job *j, json_t *id,
			  json_t *params)
{
	json_t *name = json_object_get(params, "name");
	json_t *args = json_object_get(params, "arguments");
	json_t *token = json_object_get(json_object_get(params, "_meta"),
					"progressToken");
	const struct tool *t;
	struct ws_error e = { 0 };
	json_t *wparams, *result = NULL, *content, *out;
	bool is_error;
	int rc;

	if (!json_is_string(name))
		return rpc_error(
			id, WS_E_PARAMS,
			"tools/call: params.name must be the tool's name (a string)");
	t = mcp_find_tool(json_string_value(name));
	if (!t)
		return rpc_error(id, WS_E_PARAMS,
				 "Unknown tool: %s (tools/list has them)",
				 json_string_value(name));
	if (args && !json_is_object(args) && !json_is_null(args))
		return rpc_error(
			id, WS_E_PARAMS,
			"tools/call: params.arguments must be an object");
	if (tool_params(t, json_is_object(args) ? args : NULL, &wparams, &e))
		return rpc_result(id, tool_failure(t->name, &e));
	if (!strcmp(t->method, "run") &&
	    (json_is_string(token) || json_is_integer(token))) {
		json_object_set_new(wparams, "stream", json_true());
		j->progress_token = token;
		j->progress = 0;
	}
	rc = ws_call_c(m->ws, t->method, wparams, on_stream, j, j->cancel,
		       &result, &e);
	j->progress_token = NULL;
	json_decref(wparams);
	if (rc < 0 || !result) {
		if (e.code == WS_E_INTERNAL || !e.code) {
			char msg[sizeof(e.message) + 64];
			in_mcp_terms(e.message[0] ? e.message
						  : "internal error",
				     msg, sizeof(msg));
			return rpc_error(id, WS_E_INTERNAL, "%s: %s", t->name,
					 msg);
		}
		return rpc_result(id, tool_failure(t->name, &e));
	}
	content = t->content(m, result, &is_error);
	out = json_pack("{s:o}", "content", content);
	if (mcp_structured_ok(m))
		json_object_set(out, "structuredContent", result);
	if (is_error)
		json_object_set_new(out, "isError", json_true());
	json_decref(result);
	return rpc_result(id, out);
}

/* ---- the lifecycle ---- */

static void note_client(struct mcp *m, json_t *params);

static json_t *initialize(struct mcp *m, json_t *id, json_t *params)
{
	const char *asked = mcp_str_at(params, "protocolVersion");

	if (m->version)
		return rpc_error(
			id, WS_E_INVALID,
			"initialize: already initialized (protocol %s); one per connection",
			m->version);
	if (!asked)
		return rpc_error(
			id, WS_E_PARAMS,
			"initialize: params.protocolVersion must be a string such as \"%s\"",
			protocol_versions[0]);
	/* The client's version when we speak it, else our newest: the client
   * then decides whether it can go on. */
	note_client(m, params);
	m->version = protocol_versions[0];
	for (size_t i = 0;
	     i < sizeof(protocol_versions) / sizeof(*protocol_versions); i++)
		if (!strcmp(asked, protocol_versions[i]))
			m->version = protocol_versions[i];
	json_decref(m->tools);
	m->tools = mcp_tool_list(m);
	return rpc_result(
		id,
		json_pack(
			"{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}",
			"protocolVersion", m->version, "capabilities", "tools",
			"listChanged", false, "serverInfo", "name", "ward",
			"title", "ward code interpreter", "version",
			WARD_VERSION, "instructions",
			"ward runs code (python, node, sh) under a supervisor "
			"that decides every sensitive syscall by a policy and "
			"records everything. Use run_code for one-off code, "
			"or create_session once and pass its session_id to "
			"run_code to keep state between cells, like a "
			"notebook. Denied syscalls fail with an honest errno "
			"(e.g. EACCES) and are listed in the result."));
}

/* What the client said of itself at initialize: can it be asked
 * (elicitation in form mode: an empty object means form), and who it is. */
static void note_client(struct mcp *m, json_t *params)
{
	json_t *caps = json_object_get(params, "capabilities");
	json_t *el = json_object_get(caps, "elicitation");
	json_t *info = json_object_get(params, "clientInfo");
	const char *name = mcp_str_at(info, "name");
	const char *ver = mcp_str_at(info, "version");

	m->elicit = json_is_object(el) &&
		    (json_object_size(el) == 0 || json_object_get(el, "form"));
	snprintf(m->client, sizeof(m->client), "%s%s%s",
		 name ? name : "a client that gave no name", ver ? " " : "",
		 ver ? ver : "");
}

/* A question of an "ask" rule (session-ask.c): an elicitation/create
 * request to a client that can be asked; any other is denied at once. */
static void on_ask(void *arg, json_t *ask)
{
	struct mcp *m = arg;
	const char *aid = mcp_str_at(ask, "id");
	const char *q = mcp_str_at(ask, "question");
	struct ws_error err;
	char rid[48], msg[512];

	if (!aid)
		return;
	if (!m->elicit) {
		ws_ask_answer(m->ws, aid, "deny", "mcp",
			      "ward (the client cannot be asked: no "
			      "elicitation capability)",
			      &err);
		return;
	}
	pthread_mutex_lock(&m->ask_lock);
	snprintf(rid, sizeof(rid), "ward-ask-%llu", ++m->elicit_seq);
	if (!m->elicits)
		m->elicits = json_object();
	json_object_set_new(m->elicits, rid, json_string(aid));
	pthread_mutex_unlock(&m->ask_lock);
	snprintf(msg, sizeof(msg),
		 "The code running under ward asks: %s. Allow it once, for "
		 "the rest of this session's run, or deny it?",
		 q ? q : "(no question)");
	send_msg(m, json_pack(
			    "{s:s, s:s, s:s, s:{s:s, s:{s:s, s:{s:{s:s, s:s, "
			    "s:[s,s,s], s:s}}, s:[s]}, s:{s:O}}}",
			    "jsonrpc", "2.0", "id", rid, "method",
			    "elicitation/create", "params", "message", msg,
			    "requestedSchema", "type", "object", "properties",
			    "answer", "type", "string", "title", "Answer",
			    "enum", "allow_once", "allow_always", "deny",
			    "description",
			    "allow_once: this call only; allow_always: the "
			    "same call for the rest of the run; deny",
			    "required", "answer", "_meta", "ward/ask", ask));
}

/* The client's response to an elicitation/create of on_ask: accept with
 * an answer gives it; decline, cancel, an error or anything else: deny.
 * False when id is none of ours. */
static bool on_elicit_response(struct mcp *m, json_t *id, json_t *msg)
{
	const char *rid = json_string_value(id);
	json_t *aid = NULL;
	struct ws_error err;

	if (!rid)
		return false;
	pthread_mutex_lock(&m->ask_lock);
	aid = json_incref(json_object_get(m->elicits, rid));
	json_object_del(m->elicits, rid);
	pthread_mutex_unlock(&m->ask_lock);
	if (!aid)
		return false;
	json_t *res = json_object_get(msg, "result");
	const char *action = mcp_str_at(res, "action");
	const char *a = mcp_str_at(json_object_get(res, "content"), "answer");
	if (!action || strcmp(action, "accept") || !a ||
	    (strcmp(a, "allow_once") && strcmp(a, "allow_always")))
		a = "deny";
	ws_ask_answer(m->ws, json_string_value(aid), a, "mcp", m->client,
		      &err);
	json_decref(aid);
	return true;
}

static bool valid_id(json_t *id)
{
	return json_is_string(id) || json_is_integer(id);
}

/* ---- the calls in flight ---- */

static void job_free(struct job *j)
{
	json_decref(j->msg);
	ws_cancel_free(j->cancel);
	free(j);
}

static json_t *handle(struct mcp *m, json_t *msg, struct job *j);
static json_t *handle_batch(struct mcp *m, json_t *batch, struct job *j);

/* A call's thread: the call, its answer (none when it was cancelled), and
 * its place in flight given up. */
/* Lock held: is a run_code on j's session that came before j still in
 * flight? Runs on one session go in the order they came: a thread that
 * started later may reach the session first. */
static bool run_before(const struct mcp *m, const struct job *j)
{
	for (const struct job *o = m->jobs; o; o = o->next)
		if (o->seq < j->seq && !strcmp(o->sid, j->sid))
			return true;
	return false;
}

static void *job_main(void *arg)
{
	struct job *j = arg;
	struct mcp *m = j->m;

	pthread_mutex_lock(&m->lock);
	while (j->sid[0] && !j->cancelled && run_before(m, j)) {
		struct timespec ts;
		ws_time_in(&ts, CLOCK_MONOTONIC, 100);
		pthread_cond_timedwait(&m->cond, &m->lock, &ts);
	}
	pthread_mutex_unlock(&m->lock);
	json_t *resp = json_is_array(j->msg) ? handle_batch(m, j->msg, j)
					     : handle(m, j->msg, j);

	pthread_mutex_lock(&m->lock);
	bool drop = j->cancelled;
	for (struct job **pp = &m->jobs; *pp; pp = &(*pp)->next)
		if (*pp == j) {
			*pp = j->next;
			break;
		}
	m->n_jobs--;
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
	if (drop)
		json_decref(resp);
	else
		send_msg(m, resp);
	job_free(j);
	return NULL;
}

/* Starts msg (a tools/call request or a batch) on a thread of its own;
 * returns an error response when too many are in flight, else NULL. */
static json_t *enqueue(struct mcp *m, json_t *msg, json_t *id)
{
	struct job *j = calloc(1, sizeof(*j));
	int rc;

	if (!j || !(j->cancel = ws_cancel_new())) {
		free(j);
		return rpc_error(id, WS_E_INTERNAL, "out of memory");
	}
	j->m = m;
	j->msg = json_incref(msg);
	j->id = id;
	json_t *params = json_object_get(msg, "params");
	const char *sid =
		mcp_str_at(json_object_get(params, "arguments"), "session_id");
	const char *tool = mcp_str_at(params, "name");
	if (tool && !strcmp(tool, "run_code") && sid &&
	    strlen(sid) < sizeof(j->sid))
		strcpy(j->sid, sid);
	pthread_mutex_lock(&m->lock);
	j->seq = ++m->seq;
	if (m->n_jobs >= MAX_INFLIGHT) {
		pthread_mutex_unlock(&m->lock);
		job_free(j);
		return rpc_error(id, WS_E_LIMIT,
				 "%d tool calls are running already; wait for "
				 "their results",
				 MAX_INFLIGHT);
	}
	j->next = m->jobs;
	m->jobs = j;
	m->n_jobs++;
	pthread_mutex_unlock(&m->lock);
	rc = ws_thread_detached(job_main, j);
	if (rc) {
		pthread_mutex_lock(&m->lock);
		m->jobs = j->next; /* still first: only this thread adds */
		m->n_jobs--;
		pthread_mutex_unlock(&m->lock);
		job_free(j);
		return rpc_error(id, WS_E_INTERNAL,
				 "cannot start a thread for the call");
	}
	return NULL;
}

/* notifications/cancelled {requestId, reason?}: the call's cell is
 * interrupted, or the call is dropped while it waits for its session;
 * it gets no response. An unknown or finished request is ignored, as the
 * specification says. */
static void cancel_request(struct mcp *m, json_t *params)
{
	json_t *rid = json_object_get(params, "requestId");

	if (!valid_id(rid))
		return;
	pthread_mutex_lock(&m->lock);
	for (struct job *j = m->jobs; j; j = j->next)
		if (j->id && json_equal(j->id, rid)) {
			j->cancelled = true;
			ws_cancel_fire(j->cancel);
		}
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
}

/* Every call in flight cancelled (the client is gone, or ward was told
 * to stop). */
static void cancel_all(struct mcp *m)
{
	pthread_mutex_lock(&m->lock);
	for (struct job *j = m->jobs; j; j = j->next) {
		j->cancelled = true;
		ws_cancel_fire(j->cancel);
	}
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
}

/* The ticker: expires idle sessions every TICK_MS until the end. */
static void *tick_main(void *arg)
{
	struct mcp *m = arg;

	struct timespec next;

	ws_time_in(&next, CLOCK_MONOTONIC, TICK_MS);
	pthread_mutex_lock(&m->lock);
	while (!m->eof) {
		/* woken often (calls end): the tick keeps its own time */
		if (pthread_cond_timedwait(&m->cond, &m->lock, &next) ==
		    ETIMEDOUT) {
			pthread_mutex_unlock(&m->lock);
			ws_server_tick(m->ws);
			ws_time_in(&next, CLOCK_MONOTONIC, TICK_MS);
			pthread_mutex_lock(&m->lock);
		}
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

/* The first stop signal (ws_stop_signals): every call is cancelled, and
 * the reader stops. */
static void on_stop(void *arg)
{
	struct mcp *m = arg;

	pthread_mutex_lock(&m->lock);
	m->stopping = true;
	pthread_mutex_unlock(&m->lock);
	cancel_all(m);
}

/* One JSON-RPC message; returns the response, or NULL for none
 * (notifications, responses to requests we never send, and tools/call
 * requests started on a thread of their own unless j: that thread's). */
static json_t *handle(struct mcp *m, json_t *msg, struct job *j)
{
	json_t *id = json_object_get(msg, "id");
	json_t *params = json_object_get(msg, "params");
	const char *method = mcp_str_at(msg, "method");
	const char *jsonrpc = mcp_str_at(msg, "jsonrpc");

	if (!json_is_object(msg))
		return rpc_error(NULL, WS_E_INVALID,
				 "Invalid Request: a message is a JSON object");
	if (!jsonrpc || strcmp(jsonrpc, "2.0"))
		return rpc_error(
			valid_id(id) ? id : NULL, WS_E_INVALID,
			"Invalid Request: \"jsonrpc\" must be \"2.0\"");
	if (!json_object_get(msg, "method") &&
	    (json_object_get(msg, "result") || json_object_get(msg, "error"))) {
		/* a response: to an elicitation/create (on_ask), else to
		 * nothing ward sent */
		on_elicit_response(m, id, msg);
		return NULL;
	}
	if (!method)
		return rpc_error(
			valid_id(id) ? id : NULL, WS_E_INVALID,
			"Invalid Request: \"method\" must be a string");
	if (!id) {
		if (!strcmp(method, "notifications/cancelled") &&
		    json_is_object(params))
			cancel_request(m, params);
		return NULL; /* notifications: initialized, cancelled, ... */
	}
	if (!valid_id(id))
		return rpc_error(
			NULL, WS_E_INVALID,
			"Invalid Request: \"id\" must be a string or an integer");
	if (params && !json_is_object(params))
		return rpc_error(id, WS_E_PARAMS,
				 "%s: params must be an object", method);
	if (!strcmp(method, "initialize"))
		return initialize(m, id, params);
	if (!strcmp(method, "ping"))
		return rpc_result(id, json_object());
	if (!m->version)
		return rpc_error(
			id, WS_E_INVALID,
			"%s: not initialized yet (send initialize first)",
			method);
	if (!strcmp(method, "tools/list")) {
		if (json_object_get(params, "cursor"))
			return rpc_error(
				id, WS_E_PARAMS,
				"tools/list: unknown cursor (every tool comes in one page)");
		return rpc_result(id, json_pack("{s:O}", "tools", m->tools));
	}
	if (!strcmp(method, "tools/call"))
		return j ? tools_call(m, j, id, params) : enqueue(m, msg, id);
	return rpc_error(
		id, WS_E_METHOD,
		"Method not found: %s (ward mcp serves initialize, ping, "
		"tools/list, tools/call)",
		method);
}

/* A batch (protocol 2025-03-26 allows them) gets an array of the
 * responses, or nothing when all were notifications. */
static json_t *handle_batch(struct mcp *m, json_t *batch, struct job *j)
{
	json_t *out, *msg;
	size_t i;

	if (!json_array_size(batch))
		return rpc_error(NULL, WS_E_INVALID,
				 "Invalid Request: an empty batch");
	out = json_array();
	json_array_foreach(batch, i, msg)
	{
		json_t *r;

		if (json_is_object(msg) && mcp_str_at(msg, "method") &&
		    !strcmp(mcp_str_at(msg, "method"), "initialize"))
			r = rpc_error(json_object_get(msg, "id"), WS_E_INVALID,
				      "initialize must not be part of a batch");
		else
			r = handle(m, msg, j);
		if (r)
			json_array_append_new(out, r);
	}
	if (!json_array_size(out)) {
		json_decref(out);
		return NULL;
	}
	return out;
}

static bool has_call(json_t *batch)
{
	json_t *msg;
	size_t i;

	json_array_foreach(batch, i, msg)
	{
		const char *method = mcp_str_at(msg, "method");

		if (method && !strcmp(method, "tools/call"))
			return true;
	}
	return false;
}

static void handle_line(struct mcp *m, const char *line, size_t len)
{
	json_error_t jerr;
	json_t *msg;

	while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' ||
		       line[len - 1] == '\t'))
		len--;
	if (!len)
		return;
	msg = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY,
			 &jerr);
	if (!msg) {
		send_msg(
			m,
			rpc_error(
				NULL, WS_E_PARSE,
				"Parse error: %s at column %d (one JSON-RPC message per line)",
				jerr.text, jerr.column));
		return;
	}
	/* a batch with a tools/call waits its turn whole: its answer is
	 * one array */
	if (json_is_array(msg) && has_call(msg))
		send_msg(m, enqueue(m, msg, NULL));
	else
		send_msg(m, json_is_array(msg) ? handle_batch(m, msg, NULL)
					       : handle(m, msg, NULL));
	json_decref(msg);
}

/* ---- input: lines of at most max_request bytes ---- */

struct reader {
	int fd;
	int wake; /* readable: stop as at the end of input */
	char *buf;
	size_t len, cap, scanned;
	size_t consumed; /* bytes of the line last returned, dropped next */
	bool skipping;	 /* inside a line that was too long */
	json_t *big_id;	 /* the id its start showed, or NULL */
};

/* 1: a line (without its newline) in *line and *n, valid until the next call;
 * 0: end of input; -E2BIG: a line longer than max was skipped whole;
 * -errno: a read error. */
static int next_line(struct reader *r, size_t max, char **line, size_t *n)
{
	if (r->consumed) {
		memmove(r->buf, r->buf + r->consumed, r->len - r->consumed);
		r->len -= r->consumed;
		r->scanned = 0;
		r->consumed = 0;
	}
	for (;;) {
		char *nl = r->len > r->scanned
				   ? memchr(r->buf + r->scanned, '\n',
					    r->len - r->scanned)
				   : NULL;
		ssize_t got;

		if (nl) {
			size_t l = (size_t)(nl - r->buf);

			r->consumed = l + 1;
			if (!r->skipping && l > max)
				r->big_id = ws_json_line_id(
					r->buf, l < 4096 ? l : 4096);
			if (r->skipping || l > max) {
				r->skipping = false;
				return -E2BIG;
			}
			*line = r->buf;
			*n = l;
			return 1;
		}
		r->scanned = r->len;
		if (r->len > max) {
			if (!r->skipping)
				r->big_id = ws_json_line_id(
					r->buf, r->len < 4096 ? r->len : 4096);
			r->skipping = true; /* keep nothing of it */
			r->len = r->scanned = 0;
		}
		if (r->len == r->cap) {
			size_t cap = r->cap ? r->cap * 2 : 65536;
			char *nb = realloc(r->buf, cap);

			if (!nb)
				return -ENOMEM;
			r->buf = nb;
			r->cap = cap;
		}
		struct pollfd q[2] = { { r->fd, POLLIN, 0 },
				       { r->wake, POLLIN, 0 } };
		if (poll(q, 2, -1) < 0 && errno == EINTR)
			continue;
		if (q[1].revents)
			return 0;
		got = read(r->fd, r->buf + r->len, r->cap - r->len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0) {
			if (r->skipping) {
				r->skipping = false;
				return -E2BIG;
			}
			if (!r->len)
				return 0;
			/* a last line without its newline */
			r->consumed = r->len;
			if (r->len > max) {
				r->big_id = ws_json_line_id(
					r->buf, r->len < 4096 ? r->len : 4096);
				return -E2BIG;
			}
			*line = r->buf;
			*n = r->len;
			return 1;
		}
		r->len += (size_t)got;
	}
}

/* ---- the command ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ward mcp [options]\n"
		"\n"
		"A Model Context Protocol server on stdin/stdout (JSON-RPC 2.0, one "
		"message\n"
		"per line; protocol revisions 2025-11-25, 2025-06-18, 2025-03-26, "
		"2024-11-05).\n"
		"An MCP client (an agent) starts it and calls its tools:\n"
		"  run_code        {code, language?, session_id?, timeout_s?}\n"
		"  create_session  {language?, env?, timeout_s?}   list_sessions {}\n"
		"  close_session   {session_id}\n"
		"  write_file      {session_id, path, text? | base64?}\n"
		"  read_file       {session_id, path}\n"
		"  list_files      {session_id, path?, depth?}\n"
		"Each run_code result is a text summary (output head and tail, the "
		"error,\n"
		"the denied syscalls), an image per chart, and the full result object "
		"as\n"
		"structuredContent; isError is set for exceptions, non-zero exits,\n"
		"timeouts, limits and policy kills. Everything is recorded as by ward "
		"run.\n"
		"Register it with an agent as {\"command\": \"ward\", \"args\": "
		"[\"mcp\"]}.\n"
		"\n"
		"Tool calls run concurrently (calls on different sessions in parallel;\n"
		"a run_code waits for the cell running in its own session) and are\n"
		"answered as they end; notifications/cancelled interrupts the named\n"
		"call's cell, or drops it while it waits. At the end of input the calls\n"
		"read are answered and every session is closed; SIGTERM, SIGINT and\n"
		"SIGHUP cancel the running calls first.\n"
		"\n"
		"options (they bound every session; the model cannot change them):\n"
		"  --db PATH            audit database (default as for ward run)\n"
		"  --seal-log FILE      append each session's seal to FILE (as ward run\n"
		"                       --seal-log; default: $WARD_SEAL_LOG)\n"
		"  --seal-syslog        and to the system log (as ward run --seal-syslog)\n"
		"  --profile NAME       policy profile of new sessions (default: by "
		"language)\n"
		"  --policy FILE        a policy file instead\n"
		"  --timeout SECONDS    default per-cell time limit (30)\n"
		"  --idle SECONDS       close a session unused this long (600)\n"
		"  --max-life SECONDS   close a session this old (3600)\n"
		"  --max-sessions N     sessions open at once (16)\n"
		"  --max-request BYTES  longest request line (%u)\n"
		"  --max-timeout SEC    cap on the timeout_s a model asks for (none): a\n"
		"                       larger one is capped, and the result says so\n" WS_POOL_HELP
		"  -v                   ward's own milestones on stderr\n"
		"  -h, --help           this text\n"
		"\n"
		"stdout carries protocol messages only; ward's messages go to stderr.\n"
		"exit status: 0 at the end of input, 125 when ward cannot start.\n",
		DEFAULT_MAX_REQUEST);
}

static double parse_seconds(const char *opt, const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0))
		die("mcp: %s: '%s' is not a positive number of seconds", opt,
		    s);
	return v;
}

static long parse_count(const char *opt, const char *s, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > max)
		die("mcp: %s: '%s' is not a count from 1 to %ld", opt, s, max);
	return v;
}

static void parse_args(int argc, char **argv, struct ws_config *cfg,
		       size_t *max_request, struct ws_pool_opts *po)
{
	enum {
		O_DB = 256,
		O_PROFILE,
		O_POLICY,
		O_TIMEOUT,
		O_IDLE,
		O_LIFE,
		O_MAX,
		O_REQ,
		O_MAXT,
		O_SEAL_LOG,
		O_SEAL_SYSLOG,
		O_POOL,
		O_PRELOAD,
		O_POOL_FORK
	};
	static const struct option opts[] = {
		{ "db", required_argument, 0, O_DB },
		{ "seal-log", required_argument, 0, O_SEAL_LOG },
		{ "seal-syslog", no_argument, 0, O_SEAL_SYSLOG },
		{ "profile", required_argument, 0, O_PROFILE },
		{ "policy", required_argument, 0, O_POLICY },
		{ "timeout", required_argument, 0, O_TIMEOUT },
		{ "idle", required_argument, 0, O_IDLE },
		{ "max-life", required_argument, 0, O_LIFE },
		{ "max-sessions", required_argument, 0, O_MAX },
		{ "max-request", required_argument, 0, O_REQ },
		{ "max-timeout", required_argument, 0, O_MAXT },
		{ "pool", required_argument, 0, O_POOL },
		{ "preload", required_argument, 0, O_PRELOAD },
		{ "pool-fork", required_argument, 0, O_POOL_FORK },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":vh", opts, NULL)) != -1) {
		switch (c) {
		case 'v': ward_verbose++; break;
		case 'h': usage(stdout); exit(0);
		case O_DB: cfg->db = optarg; break;
		case O_SEAL_LOG: ward_seal_log_arg("--seal-log", optarg); break;
		case O_SEAL_SYSLOG: ward_seal_syslog_arg(); break;
		case O_PROFILE: cfg->profile = optarg; break;
		case O_POLICY: cfg->policy = optarg; break;
		case O_TIMEOUT:
			cfg->cell_timeout_s =
				parse_seconds("--timeout", optarg);
			break;
		case O_IDLE:
			cfg->idle_s = parse_seconds("--idle", optarg);
			break;
		case O_LIFE:
			cfg->max_life_s = parse_seconds("--max-life", optarg);
			break;
		case O_MAX:
			cfg->max_sessions = (int)parse_count("--max-sessions",
							     optarg, 1024);
			break;
		case O_REQ:
			*max_request = (size_t)parse_count("--max-request",
							   optarg, 1L << 30);
			break;
		case O_MAXT:
			cfg->max_timeout_s =
				parse_seconds("--max-timeout", optarg);
			break;
		case O_POOL: po->n = ws_pool_count_arg(optarg); break;
		case O_PRELOAD: po->preload = optarg; break;
		case O_POOL_FORK:
			po->no_fork = !ws_pool_fork_arg(optarg);
			break;
		case ':':
			die("mcp: %s needs a value (see `ward mcp --help`)",
			    argv[optind - 1]);
		default:
			die("mcp: unknown option %s (see `ward mcp --help`)",
			    argv[optind - 1]);
		}
	}
	if (optind < argc)
		die("mcp: unexpected argument '%s' (see `ward mcp --help`)",
		    argv[optind]);
	if (cfg->policy && access(cfg->policy, R_OK) < 0)
		die_errno("mcp: --policy %s", cfg->policy);
	if (cfg->max_timeout_s > 0 && cfg->cell_timeout_s > cfg->max_timeout_s)
		die("mcp: --timeout %g is above --max-timeout %g; give a "
		    "default within the cap",
		    cfg->cell_timeout_s, cfg->max_timeout_s);
}

/* The protocol gets private descriptors; fd 0 becomes /dev/null and fd 1 a
 * copy of stderr, so nothing else in the process (a library, a child that
 * inherits them) can read requests or write into the protocol stream. */
static void take_stdio(struct mcp *m)
{
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

	m->in_fd = fcntl(0, F_DUPFD_CLOEXEC, 3);
	m->out_fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
	if (m->in_fd < 0 || m->out_fd < 0 || null < 0)
		die_errno("mcp: duplicating stdin/stdout");
	if (dup2(null, 0) < 0 || dup2(2, 1) < 0)
		die_errno("mcp: redirecting stdin/stdout");
	close(null);
}

int ward_cmd_mcp(int argc, char **argv)
{
	struct ws_config cfg = {
		.profile = NULL,
		.cell_timeout_s = 0, /* 30, or --max-timeout when lower */
		.idle_s = 600,
		.max_life_s = 3600,
		.max_sessions = 16,
	};
	struct mcp m = { .max_request = DEFAULT_MAX_REQUEST };
	struct reader r = { 0 };
	struct ws_pool_opts po = { 0 };
	int rc;

	parse_args(argc, argv, &cfg, &m.max_request, &po);
	/* A client that goes away must not kill ward before it has ended
   * the sessions (children reset their signals before exec). */
	signal(SIGPIPE, SIG_IGN);
	take_stdio(&m);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m.cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&m.lock, NULL);
	pthread_mutex_init(&m.out_lock, NULL);
	pthread_mutex_init(&m.ask_lock, NULL);
	rc = ws_stop_signals(on_stop, &m, &r.wake);
	if (rc < 0) {
		errno = -rc;
		die_errno("mcp: cannot take the stop signals");
	}
	rc = ws_server_new(&cfg, &m.ws);
	if (rc < 0) {
		errno = -rc;
		die_errno("mcp: cannot start");
	}
	ws_pool_start(m.ws, &po, "mcp");
	ws_server_on_ask(m.ws, on_ask, &m);
	pthread_t ticker;
	rc = pthread_create(&ticker, NULL, tick_main, &m);
	if (rc) {
		errno = rc;
		die_errno("mcp: cannot start a thread");
	}
	r.fd = m.in_fd;
	for (;;) {
		char *line = NULL;
		size_t n = 0;

		rc = next_line(&r, m.max_request, &line, &n);
		if (rc == 0)
			break;
		if (rc == -E2BIG) {
			json_t *id = r.big_id;
			r.big_id = NULL;
			send_msg(
				&m,
				rpc_error(
					id, WS_E_INVALID,
					"Invalid Request: a line longer than %zu bytes "
					"(ward mcp --max-request)",
					m.max_request));
			json_decref(id);
			continue;
		}
		if (rc < 0) {
			errno = -rc;
			warn_errno("mcp: reading stdin");
			break;
		}
		handle_line(&m, line, n);
		if (out_is_broken(&m))
			break;
	}
	/* The calls read before the end of input are answered; with stdout
	 * gone there is no one to answer: they are cancelled. */
	pthread_mutex_lock(&m.lock);
	m.eof = true;
	pthread_cond_broadcast(&m.cond);
	while (m.n_jobs > 0) {
		if (m.stopping || out_is_broken(&m) || stdout_gone(&m)) {
			pthread_mutex_unlock(&m.lock);
			cancel_all(&m);
			pthread_mutex_lock(&m.lock);
		}
		struct timespec ts;
		ws_time_in(&ts, CLOCK_MONOTONIC, 100);
		pthread_cond_timedwait(&m.cond, &m.lock, &ts);
	}
	pthread_mutex_unlock(&m.lock);
	pthread_join(ticker, NULL);
	ws_server_free(m.ws);
	json_decref(m.elicits);
	json_decref(m.tools);
	free(r.buf);
	json_decref(r.big_id);
	close(m.in_fd);
	close(m.out_fd);
	/* the stop signals' thread still waits: the process ends with it */
	return 0;
}
