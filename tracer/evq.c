/*
 * evq.c - allowed events go to the record off the stop path.
 *
 * The main thread copies each allowed event into a queue and continues the
 * tracee at once; the output thread writes the queue into SQLite (every
 * wake-up, at most 50 ms apart, or at once when the queue grows long).
 * Denials and kills are written by the main thread itself, after everything
 * queued before them, so the record keeps the order the events happened
 * in. A writer lock makes "drain, then write" one step for either thread.
 */
#include "tracer-int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { KICK_AT = 512, DRAIN_SELF_AT = 65536 };

struct evrec {
	struct evrec *next;
	struct audit_event e;
	char strings[];
};

static size_t slen(const char *s)
{
	return s ? strlen(s) + 1 : 0;
}

static const char *put(char **at, const char *s)
{
	char *d;
	size_t n = slen(s);

	if (!s)
		return NULL;
	d = *at;
	memcpy(d, s, n);
	*at += n;
	return d;
}

/* Write everything queued (caller holds wlock). Returns 0 or -EIO. */
static int write_queued(struct tracer *t)
{
	struct evrec *list;
	int rc = 0;

	pthread_mutex_lock(&t->q_lock);
	list = t->q_head;
	t->q_head = t->q_tail = NULL;
	t->q_len = 0;
	pthread_mutex_unlock(&t->q_lock);
	while (list) {
		struct evrec *next = list->next;
		if (rc == 0 && audit_event(t->o->audit, &list->e) < 0)
			rc = -EIO;
		free(list);
		list = next;
	}
	return rc;
}

static void failed(struct tracer *t)
{
	if (!t->audit_err)
		t->audit_err = -EIO;
	tracer_stop(t, STOP_AUDIT, "the audit database could not be written");
}

int evq_drain(struct tracer *t)
{
	int rc;

	pthread_mutex_lock(&t->w_lock);
	rc = write_queued(t);
	pthread_mutex_unlock(&t->w_lock);
	if (rc < 0)
		failed(t);
	return rc;
}

int evq_write_now(struct tracer *t, const struct audit_event *e)
{
	int rc;

	pthread_mutex_lock(&t->w_lock);
	rc = write_queued(t);
	if (rc == 0 && audit_event(t->o->audit, e) < 0)
		rc = -EIO;
	pthread_mutex_unlock(&t->w_lock);
	if (rc < 0)
		failed(t);
	return rc;
}

int evq_push(struct tracer *t, const struct audit_event *e)
{
	size_t n = slen(e->syscall) + slen(e->args_json) + slen(e->raw) +
		   slen(e->target) + slen(e->decision) + slen(e->rule) +
		   slen(e->reason) + slen(e->backtrace);
	struct evrec *r = malloc(sizeof(*r) + n);
	char *at;
	size_t len;

	if (!r)
		return evq_write_now(t, e); /* no memory: write it here */
	r->next = NULL;
	r->e = *e;
	at = r->strings;
	r->e.syscall = put(&at, e->syscall);
	r->e.args_json = put(&at, e->args_json);
	r->e.raw = put(&at, e->raw);
	r->e.target = put(&at, e->target);
	r->e.decision = put(&at, e->decision);
	r->e.rule = put(&at, e->rule);
	r->e.reason = put(&at, e->reason);
	r->e.backtrace = put(&at, e->backtrace);

	pthread_mutex_lock(&t->q_lock);
	if (t->q_tail)
		t->q_tail->next = r;
	else
		t->q_head = r;
	t->q_tail = r;
	len = ++t->q_len;
	pthread_mutex_unlock(&t->q_lock);

	if (len >= DRAIN_SELF_AT || !t->io_started)
		return evq_drain(t); /* the writer fell behind: catch up */
	if (len == KICK_AT) {
		uint64_t one = 1;
		ssize_t w = write(t->kick_fd, &one, sizeof(one));
		(void)w; /* an eventfd counter does not fill up */
	}
	return 0;
}
