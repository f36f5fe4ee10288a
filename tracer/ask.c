/*
 * ask.c - the questions of "ask" rules (docs/policy.md).
 *
 * A syscall whose verdict is POLICY_ASK is not answered at its seccomp
 * stop: its thread stays stopped there (nothing of it runs) while the
 * question goes out on opts.ask_fd, and the loop serves every other
 * thread meanwhile. When the answer comes (or the policy's ask_timeout
 * passes), the thread's stop is handled again from the start: its
 * arguments are read and decided anew, and the answer applies to that
 * decision only if it asks the same question (same rule, access and
 * target); else it is denied, so a thread that changed its argument
 * while it waited gains nothing. allow_always keeps the question's key
 * for the rest of the run. Fail closed everywhere: nobody to ask, a
 * write that fails, a line that is not an answer, the socket's end, the
 * timeout: deny.
 */
#include "tracer-int.h"

#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "../common/log.h"

enum {
	ASK_NONE = 0,
	ASK_ONCE,
	ASK_ALWAYS,
	ASK_DENY,
};

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static char *ask_key(const struct ward_event *ev, const char *target,
		     const struct policy_verdict *v)
{
	char *k;

	return asprintf(&k, "%s\t%d\t%u\t%d\t%s", v->rule, (int)ev->cls,
			ev->access, (int)ev->net_op, target) < 0
		       ? NULL
		       : k;
}

static bool always_allowed(const struct tracer *t, const char *key)
{
	for (size_t i = 0; i < t->n_always; i++)
		if (!strcmp(t->ask_always[i], key))
			return true;
	return false;
}

static void remember_always(struct tracer *t, char *key)
{
	char **n = realloc(t->ask_always, (t->n_always + 1) * sizeof(*n));

	if (!n) {
		free(key); /* only the next question is asked again */
		return;
	}
	t->ask_always = n;
	t->ask_always[t->n_always++] = key;
}

static const char *answer_name(int a)
{
	return a == ASK_ONCE	 ? "allow_once"
	       : a == ASK_ALWAYS ? "allow_always"
				 : "deny";
}

/* v becomes the answer a, given by who: the reason says so, with when
 * and how long the code waited. */
static void answered(struct policy_verdict *v, int a, const char *who,
		     long long t0_ns)
{
	size_t used = strlen(v->reason);
	long long now = tracer_now_ns();
	time_t s = (time_t)(now / 1000000000LL);
	struct tm tm;
	char when[32];

	gmtime_r(&s, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(v->reason + used, sizeof(v->reason) - used,
		 "; asked: %s by %s at %s after %lld ms", answer_name(a), who,
		 when, t0_ns ? (now - t0_ns) / 1000000 : 0);
	if (a == ASK_ONCE || a == ASK_ALWAYS) {
		v->action = POLICY_ALLOW;
		v->err = 0;
	} else {
		v->action = POLICY_DENY;
		if (!v->err)
			v->err = EACCES;
	}
}

/* The question on opts.ask_fd; 0 or -errno (never blocks). */
static int send_question(struct tracer *t, unsigned id,
			 const struct ward_event *ev, const char *target,
			 const struct policy_verdict *v, long long timeout_ms)
{
	json_t *q = json_pack("{s:{s:I, s:s, s:s, s:s, s:s, s:I}}", "ask", "id",
			      (json_int_t)id, "question", v->reason, "rule",
			      v->rule, "syscall", ev->name, "target", target,
			      "timeout_ms", (json_int_t)timeout_ms);
	char *s = q ? json_dumps(q, JSON_COMPACT) : NULL;
	int rc = 0;

	json_decref(q);
	if (!s)
		return -ENOMEM;
	size_t n = strlen(s);
	s[n] = '\n'; /* over the NUL */
	ssize_t w = send(t->o->ask_fd, s, n + 1, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (w != (ssize_t)(n + 1))
		rc = w < 0 ? -errno : -EIO;
	free(s);
	return rc;
}

int tracer_ask(struct tracer *t, struct tracee *tc, const struct ward_event *ev,
	       const char *target, struct policy_verdict *v)
{
	char *key = ask_key(ev, target, v);
	long long timeout = policy_ask_timeout_ms(t->o->policy);
	int rc;

	if (!key) {
		answered(v, ASK_DENY, "ward (out of memory)", 0);
		return 0;
	}
	if (tc->ask_answer != ASK_NONE) {
		/* its stop again, after the answer */
		int a = tc->ask_answer;
		bool same = tc->ask_key && !strcmp(tc->ask_key, key);
		answered(v, same ? a : ASK_DENY,
			 same ? tc->ask_by
			      : "ward (the call changed while it was asked)",
			 tc->ask_t0_ns);
		tc->ask_answer = ASK_NONE;
		free(tc->ask_key);
		tc->ask_key = NULL;
		if (same && a == ASK_ALWAYS && !always_allowed(t, key))
			remember_always(t, key);
		else
			free(key);
		return 0;
	}
	if (always_allowed(t, key)) {
		size_t used = strlen(v->reason);
		snprintf(v->reason + used, sizeof(v->reason) - used,
			 "; allowed for the run by an earlier answer");
		v->action = POLICY_ALLOW;
		v->err = 0;
		free(key);
		return 0;
	}
	if (t->o->ask_fd <= 0 || t->ask_closed) {
		answered(v, ASK_DENY,
			 t->ask_closed ? "ward (the asker is gone)"
				       : "ward (nobody to ask)",
			 0);
		free(key);
		return 0;
	}
	unsigned id = ++t->ask_seq;
	rc = send_question(t, id, ev, target, v, timeout);
	if (rc < 0) {
		char why[96];
		snprintf(why, sizeof(why),
			 "ward (the question could not be "
			 "sent: %s)",
			 strerror(-rc));
		answered(v, ASK_DENY, why, 0);
		free(key);
		return 0;
	}
	tc->ask_id = id;
	tc->ask_key = key;
	tc->ask_nr = ev->nr;
	tc->ask_sys = ev->name;
	tc->ask_rule = v->rule;
	free(tc->ask_target);
	free(tc->ask_question);
	tc->ask_target = strdup(target);
	tc->ask_question = strdup(v->reason);
	tc->ask_t0_ns = tracer_now_ns();
	tc->ask_deadline_ms = mono_ms() + timeout;
	t->n_asking++;
	debug("[%d] asks #%u: %s", tc->serial, id, v->reason);
	return 1;
}

/* The tracee waiting on question id, or NULL. */
static struct tracee *asker_of(struct tracer *t, unsigned id)
{
	struct tracee *found = NULL;

	pthread_mutex_lock(&t->lock);
	for (int b = 0; b < TRACEE_BUCKETS && !found; b++)
		for (struct tracee *x = t->tab[b]; x; x = x->next)
			if (x->ask_id && x->ask_id == id) {
				found = x;
				break;
			}
	pthread_mutex_unlock(&t->lock);
	return found;
}

static void settle(struct tracer *t, struct tracee *tc, int a, const char *by,
		   void (*again)(struct tracer *, struct tracee *))
{
	tc->ask_id = 0;
	tc->ask_answer = a;
	snprintf(tc->ask_by, sizeof(tc->ask_by), "%s", by);
	t->n_asking--;
	again(t, tc);
}

/* Every waiting question denied (by why). */
static void settle_all(struct tracer *t, const char *why,
		       void (*again)(struct tracer *, struct tracee *))
{
	struct tracee *x;

	while (t->n_asking > 0) {
		x = NULL;
		pthread_mutex_lock(&t->lock);
		for (int b = 0; b < TRACEE_BUCKETS && !x; b++)
			for (x = t->tab[b]; x && !x->ask_id; x = x->next)
				;
		pthread_mutex_unlock(&t->lock);
		if (!x) {
			t->n_asking = 0;
			return;
		}
		settle(t, x, ASK_DENY, why, again);
	}
}

/* One answer line; false when it is not one. */
static bool on_line(struct tracer *t, const char *line,
		    void (*again)(struct tracer *, struct tracee *))
{
	json_t *j = json_loads(line, 0, NULL);
	json_t *a = json_object_get(j, "answer");
	json_int_t id = json_integer_value(json_object_get(a, "id"));
	const char *ans = json_string_value(json_object_get(a, "answer"));
	const char *by = json_string_value(json_object_get(a, "by"));
	int kind = !ans				  ? ASK_NONE
		   : !strcmp(ans, "allow_once")	  ? ASK_ONCE
		   : !strcmp(ans, "allow_always") ? ASK_ALWAYS
		   : !strcmp(ans, "deny")	  ? ASK_DENY
						  : ASK_NONE;
	bool ok = kind != ASK_NONE && id > 0 && id <= 0xffffffffLL;

	if (ok) {
		/* an answer to a question no longer waiting (timed out, its
		 * thread gone) changes nothing */
		struct tracee *tc = asker_of(t, (unsigned)id);
		if (tc)
			settle(t, tc, kind, by && by[0] ? by : "the caller",
			       again);
	}
	json_decref(j);
	return ok;
}

static void read_answers(struct tracer *t,
			 void (*again)(struct tracer *, struct tracee *))
{
	ssize_t n = recv(t->o->ask_fd, t->ask_buf + t->ask_len,
			 sizeof(t->ask_buf) - 1 - t->ask_len, MSG_DONTWAIT);
	char *nl;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		t->ask_closed = true;
		settle_all(t, "ward (the asker is gone)", again);
		return;
	}
	t->ask_len += (size_t)n;
	t->ask_buf[t->ask_len] = '\0';
	while ((nl = strchr(t->ask_buf, '\n'))) {
		*nl = '\0';
		if (!on_line(t, t->ask_buf, again)) {
			t->ask_closed = true;
			settle_all(t, "ward (a garbled answer)", again);
		}
		t->ask_len -= (size_t)(nl + 1 - t->ask_buf);
		memmove(t->ask_buf, nl + 1, t->ask_len + 1);
	}
	if (t->ask_len == sizeof(t->ask_buf) - 1) {
		t->ask_closed = true; /* a line too long: not an answer */
		settle_all(t, "ward (a garbled answer)", again);
	}
}

/* Questions whose time is up: denied. Returns ms to the next deadline. */
static long long expire(struct tracer *t,
			void (*again)(struct tracer *, struct tracee *))
{
	long long now = mono_ms(), next = 60000;
	struct tracee *due;

	do {
		due = NULL;
		next = 60000;
		pthread_mutex_lock(&t->lock);
		for (int b = 0; b < TRACEE_BUCKETS && !due; b++)
			for (struct tracee *x = t->tab[b]; x; x = x->next) {
				if (!x->ask_id)
					continue;
				if (x->ask_deadline_ms <= now) {
					due = x;
					break;
				}
				if (x->ask_deadline_ms - now < next)
					next = x->ask_deadline_ms - now;
			}
		pthread_mutex_unlock(&t->lock);
		if (due)
			settle(t, due, ASK_DENY,
			       "ward (no answer within ask_timeout)", again);
	} while (due && t->n_asking > 0);
	return next;
}

void tracer_ask_poll(struct tracer *t, int us,
		     void (*again)(struct tracer *, struct tracee *))
{
	long long next = expire(t, again);
	struct pollfd p = { t->o->ask_fd, POLLIN, 0 };

	if (t->n_asking <= 0)
		return;
	if (next * 1000 < us)
		us = (int)(next * 1000);
	struct timespec ts = { 0, (long)us * 1000 };
	if (ppoll(&p, 1, &ts, NULL) > 0 && p.revents)
		read_answers(t, again);
}

/* The row of a question its thread did not live to see answered (the
 * run ended, or was killed, while it waited): the call never returned. */
static void record_unanswered(struct tracer *t, struct tracee *tc)
{
	char reason[320];
	long long now = tracer_now_ns();

	snprintf(reason, sizeof(reason),
		 "%s; asked: unanswered (the thread ended while it waited, "
		 "after %lld ms)",
		 tc->ask_question ? tc->ask_question : "(question lost)",
		 (now - tc->ask_t0_ns) / 1000000);
	struct audit_event e = {
		.ts_ns = now,
		.pid = tc->tgid,
		.tid = tc->tid,
		.proc_serial = tc->serial,
		.nr = tc->ask_nr,
		.syscall = tc->ask_sys,
		.args_json = "{}",
		.raw = tc->ask_target,
		.target = tc->ask_target,
		.decision = "kill",
		.rule = tc->ask_rule,
		.reason = reason,
	};
	t->res->events++;
	evq_write_now(t, &e);
}

void tracer_ask_gone(struct tracer *t, struct tracee *tc)
{
	if (tc->ask_id) {
		tc->ask_id = 0;
		t->n_asking--;
		debug("[%d] gone while it was asked (unanswered)", tc->serial);
		record_unanswered(t, tc);
	}
	free(tc->ask_key);
	tc->ask_key = NULL;
	tc->ask_answer = ASK_NONE;
}

void tracer_ask_free(struct tracer *t)
{
	for (size_t i = 0; i < t->n_always; i++)
		free(t->ask_always[i]);
	free(t->ask_always);
	t->ask_always = NULL;
	t->n_always = 0;
}
