/*
 * session-ask.c - the questions of sessions' "ask" rules, server side.
 *
 * A session's worker (session-worker.c) gives its tracer the control
 * socket as tracer_opts.ask_fd: a question arrives here as a line
 * {"ask": {"id": N, ...}} among the worker's others (ws_read_ctl), is
 * kept under a server-wide id ("ask-K") and passed to the server's
 * ask_fn (ward serve: an "ask" event; ward mcp: an elicitation); the
 * answer ("ask.answer", any thread) goes back to the worker as
 * {"answer": {"id": N, "answer", "by"}}. Each question keeps its own
 * duplicate of the control socket, so an answer never writes to a
 * descriptor the session has closed and reused; a question whose time
 * is up (the tracer has denied it) is dropped.
 */
#include "tools/agent/session-server.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"

struct ws_ask {
	struct ws_ask *next;
	char id[24];	    /* "ask-K" */
	json_int_t wid;	    /* the worker's id */
	int fd;		    /* the worker's control socket, a dup */
	long long until_ms; /* monotonic: the tracer denies it then */
	json_t *ev;	    /* what ask_fn and ask.list see */
};

static void ask_drop(struct ws_ask *a)
{
	if (a->fd >= 0)
		close(a->fd);
	json_decref(a->ev);
	free(a);
}

/* ask_lock held: questions past their time, dropped. */
static void prune(struct ws_server *s)
{
	long long now = ws_mono_ms();

	for (struct ws_ask **pp = &s->asks; *pp;) {
		struct ws_ask *a = *pp;
		if (a->until_ms > now) {
			pp = &a->next;
			continue;
		}
		*pp = a->next;
		ask_drop(a);
	}
}

void ws_server_on_ask(struct ws_server *s, ws_ask_fn fn, void *arg)
{
	s->ask_fn = fn;
	s->ask_arg = arg;
}

bool ws_ask_line(struct sess *x, const char *line)
{
	struct ws_server *s = x->srv;
	json_t *j, *q;
	struct ws_ask *a;

	if (strncmp(line, "{\"ask\":", 7) != 0 || !s)
		return false;
	j = json_loads(line, 0, NULL);
	q = json_object_get(j, "ask");
	json_int_t wid = json_integer_value(json_object_get(q, "id"));
	json_int_t tmo = json_integer_value(json_object_get(q, "timeout_ms"));
	a = calloc(1, sizeof(*a));
	if (!json_is_object(q) || wid <= 0 || !a) {
		/* not a question after all: unanswered, the tracer's
		 * timeout denies it */
		free(a);
		json_decref(j);
		return true;
	}
	a->wid = wid;
	a->fd = fcntl(x->ctl, F_DUPFD_CLOEXEC, 0);
	a->until_ms = ws_mono_ms() + (tmo > 0 ? tmo : 30000);
	a->ev = json_deep_copy(q);
	pthread_mutex_lock(&s->ask_lock);
	snprintf(a->id, sizeof(a->id), "ask-%u", ++s->ask_seq);
	pthread_mutex_unlock(&s->ask_lock);
	json_object_set_new(a->ev, "id", json_string(a->id));
	json_object_set_new(a->ev, "run_id", json_string(x->run_id));
	if (!x->oneshot)
		json_object_set_new(a->ev, "session_id", json_string(x->id));
	json_t *ev = json_incref(a->ev);
	pthread_mutex_lock(&s->ask_lock);
	prune(s);
	a->next = s->asks;
	s->asks = a;
	pthread_mutex_unlock(&s->ask_lock);
	debug("session %s asks (%s): %s", x->id, a->id,
	      json_string_value(json_object_get(ev, "question")));
	if (s->ask_fn)
		s->ask_fn(s->ask_arg, ev);
	json_decref(ev);
	json_decref(j);
	return true;
}

static int answer_kind(const char *a)
{
	return a && (!strcmp(a, "allow_once") || !strcmp(a, "allow_always") ||
		     !strcmp(a, "deny"));
}

int ws_ask_answer(struct ws_server *s, const char *id, const char *answer,
		  const char *via, const char *by, struct ws_error *err)
{
	struct ws_ask *a = NULL;
	char who[160];

	if (!id)
		return ws_fail(err, WS_E_PARAMS,
			       "params.id: required (the id of an ask event, "
			       "or from ask.list)");
	if (!answer_kind(answer))
		return ws_fail(err, WS_E_PARAMS,
			       "params.answer: must be \"allow_once\", "
			       "\"allow_always\" or \"deny\"");
	pthread_mutex_lock(&s->ask_lock);
	prune(s);
	for (struct ws_ask **pp = &s->asks; *pp; pp = &(*pp)->next)
		if (!strcmp((*pp)->id, id)) {
			a = *pp;
			*pp = a->next;
			break;
		}
	pthread_mutex_unlock(&s->ask_lock);
	if (!a)
		return ws_fail(err, WS_E_PARAMS,
			       "no question '%s' waits (answered, timed out, "
			       "or its run ended; ask.list shows those that "
			       "wait)",
			       id);
	snprintf(who, sizeof(who), "%s%s%s", via, by && by[0] ? ": " : "",
		 by && by[0] ? by : "");
	json_t *line = json_pack("{s:{s:I, s:s, s:s}}", "answer", "id", a->wid,
				 "answer", answer, "by", who);
	char *txt = line ? json_dumps(line, JSON_COMPACT) : NULL;
	json_decref(line);
	int rc = txt && a->fd >= 0 ? 0 : -ENOMEM;
	if (!rc) {
		size_t n = strlen(txt);
		txt[n] = '\n'; /* over the NUL: one line */
		rc = ws_write_all(a->fd, txt, n + 1);
	}
	free(txt);
	ask_drop(a);
	if (rc < 0)
		return ws_fail(err, WS_E_PARAMS,
			       "question '%s': its run is over (%s)", id,
			       strerror(-rc));
	return 0;
}

void ws_ask_cancel(struct sess *x, const char *why)
{
	struct ws_server *s = x->srv;
	char ids[16][24];
	int n = 0;
	struct ws_error err;

	if (!s)
		return;
	pthread_mutex_lock(&s->ask_lock);
	for (struct ws_ask *a = s->asks; a && n < 16; a = a->next) {
		const char *rid =
			json_string_value(json_object_get(a->ev, "run_id"));
		if (rid && !strcmp(rid, x->run_id))
			snprintf(ids[n++], sizeof(ids[0]), "%s", a->id);
	}
	pthread_mutex_unlock(&s->ask_lock);
	/* more than 16 at once: the rest end with the run or their
	 * timeout */
	for (int i = 0; i < n; i++)
		ws_ask_answer(s, ids[i], "deny", "ward", why, &err);
}

static int m_list(struct ws_server *s, json_t **res)
{
	json_t *arr = json_array();

	pthread_mutex_lock(&s->ask_lock);
	prune(s);
	for (struct ws_ask *a = s->asks; a; a = a->next)
		json_array_append(arr, a->ev);
	pthread_mutex_unlock(&s->ask_lock);
	*res = json_pack("{s:o}", "asks", arr);
	return 0;
}

int ws_ask_call(struct ws_server *s, const char *method, json_t *p,
		json_t **res, struct ws_error *err)
{
	const char *id = NULL, *answer = NULL, *by = NULL;

	if (!strcmp(method, "ask.list")) {
		if (ws_only_keys(p, err, NULL) < 0)
			return -1;
		return m_list(s, res);
	}
	if (strcmp(method, "ask.answer"))
		return 1;
	if (ws_only_keys(p, err, "id", "answer", "by", NULL) < 0 ||
	    ws_get_str(p, "id", &id, err) < 0 ||
	    ws_get_str(p, "answer", &answer, err) < 0 ||
	    ws_get_str(p, "by", &by, err) < 0)
		return -1;
	if (ws_ask_answer(s, id, answer, "serve", by, err) < 0)
		return -1;
	*res = json_pack("{s:s, s:s}", "id", id, "answer", answer);
	return 0;
}

void ws_ask_free(struct ws_server *s)
{
	while (s->asks) {
		struct ws_ask *a = s->asks;
		s->asks = a->next;
		ask_drop(a);
	}
}
