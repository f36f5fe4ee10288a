/*
 * evq.c - allowed events and process records go to the record off the
 * stop path.
 *
 * The main thread copies each allowed event, and each process start, exec
 * and exit, into a queue and continues the tracee at once; the output
 * thread writes the queue into SQLite (every wake-up, at most 50 ms apart,
 * or at once when the queue grows long). The main thread never waits on
 * SQLite for them.
 * Denials and kills are written by the main thread itself, after everything
 * queued before them, so the record keeps the order the events happened
 * in. A writer lock makes "drain, then write" one step for either thread.
 *
 * The window: the code never runs more than EVQ_WINDOW records ahead of
 * the writer. When that many wait (the writer thread is slow, or stuck on
 * a lock another process holds), the main thread writes them itself
 * before it lets the stopped tracee go on, and so waits with it for the
 * commit, or its failure. Together with the writer's own batch (256 rows
 * or 1 MiB, audit.h), that bounds what the code can have done that is not
 * yet committed when the record fails; docs/security.md, "The record".
 *
 * When the record fails, the run is stopped at once (evq_failed: STOP_AUDIT
 * with the database's error as the cause), and what was queued is still
 * handed to the writer, which keeps it in memory for its last attempt at
 * the run's end.
 */
#include "tracer-int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { KICK_AT = 512, EVQ_WINDOW = 1024 };

enum evkind { EV_EVENT, EV_PSTART, EV_PEXEC, EV_PEXIT };

struct evrec {
	struct evrec *next;
	enum evkind kind;
	union {
		struct audit_event e;	/* EV_EVENT */
		struct audit_process p; /* EV_PSTART */
		struct {		/* EV_PEXEC, EV_PEXIT */
			int serial;
			long long ts_ns;
			const char *exe, *argv_json;
			int exit_code, signal;
		} x;
	} u;
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

static int write_one(struct audit *a, const struct evrec *r)
{
	switch (r->kind) {
	case EV_EVENT: return audit_event(a, &r->u.e);
	case EV_PSTART: return audit_process_start(a, &r->u.p);
	case EV_PEXEC:
		return audit_process_exec(a, r->u.x.serial, r->u.x.ts_ns,
					  r->u.x.exe, r->u.x.argv_json);
	case EV_PEXIT:
		return audit_process_exit(a, r->u.x.serial, r->u.x.ts_ns,
					  r->u.x.exit_code, r->u.x.signal);
	}
	return -EINVAL;
}

/* Write everything queued (caller holds wlock). Returns 0 or -EIO. Every
 * record is handed to the writer even after one failed: it keeps them
 * queued, in order, for its next attempt (audit.h). */
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
		if ((!t->audit || write_one(t->audit, list) < 0) && rc == 0)
			rc = -EIO;
		free(list);
		list = next;
	}
	return rc;
}

void evq_failed(struct tracer *t)
{
	char why[512], cause[sizeof(t->stop_cause)];
	int expect = 0;

	why[0] = '\0';
	if (t->audit)
		audit_run_failure(t->audit, why, sizeof(why));
	atomic_compare_exchange_strong(&t->audit_err, &expect, -EIO);
	atomic_store(&t->rec_failed, true);
	snprintf(cause, sizeof(cause),
		 "the audit database could not be written%s%s",
		 why[0] ? ": " : "", why);
	tracer_stop(t, STOP_AUDIT, cause);
}

bool evq_record_failed(struct tracer *t)
{
	return atomic_load(&t->rec_failed);
}

int evq_drain(struct tracer *t)
{
	int rc;

	pthread_mutex_lock(&t->w_lock);
	rc = write_queued(t);
	pthread_mutex_unlock(&t->w_lock);
	if (rc < 0)
		evq_failed(t);
	return rc;
}

size_t evq_len(struct tracer *t)
{
	size_t n;

	pthread_mutex_lock(&t->q_lock);
	n = t->q_len;
	pthread_mutex_unlock(&t->q_lock);
	return n;
}

int evq_write_now(struct tracer *t, const struct audit_event *e)
{
	int rc;

	pthread_mutex_lock(&t->w_lock);
	rc = write_queued(t);
	/* handed to the writer even after a failure: its last attempt, at
	 * the run's end, writes the denial with the rest */
	if ((!t->audit || audit_event(t->audit, e) < 0) && rc == 0)
		rc = -EIO;
	pthread_mutex_unlock(&t->w_lock);
	if (rc < 0)
		evq_failed(t);
	return rc;
}

/* Appends r (owned by the queue from now on) and wakes the writer when the
 * queue grows long. */
static int enqueue(struct tracer *t, struct evrec *r)
{
	size_t len;

	r->next = NULL;
	pthread_mutex_lock(&t->q_lock);
	if (t->q_tail)
		t->q_tail->next = r;
	else
		t->q_head = r;
	t->q_tail = r;
	len = ++t->q_len;
	pthread_mutex_unlock(&t->q_lock);

	if (len >= EVQ_WINDOW || !t->io_started)
		return evq_drain(t); /* the writer fell behind: catch up */
	if (len == KICK_AT) {
		uint64_t one = 1;
		ssize_t w = write(t->kick_fd, &one, sizeof(one));
		(void)w; /* an eventfd counter does not fill up */
	}
	return 0;
}

static struct evrec *rec_new(enum evkind kind, size_t strings)
{
	struct evrec *r = malloc(sizeof(*r) + strings);

	if (r)
		r->kind = kind;
	return r;
}

int evq_push(struct tracer *t, const struct audit_event *e)
{
	size_t n = slen(e->syscall) + slen(e->args_json) + slen(e->raw) +
		   slen(e->target) + slen(e->decision) + slen(e->rule) +
		   slen(e->reason) + slen(e->backtrace) + slen(e->pyframes);
	struct evrec *r = rec_new(EV_EVENT, n);
	char *at;

	if (!r)
		return evq_write_now(t, e); /* no memory: write it here */
	r->u.e = *e;
	at = r->strings;
	r->u.e.syscall = put(&at, e->syscall);
	r->u.e.args_json = put(&at, e->args_json);
	r->u.e.raw = put(&at, e->raw);
	r->u.e.target = put(&at, e->target);
	r->u.e.decision = put(&at, e->decision);
	r->u.e.rule = put(&at, e->rule);
	r->u.e.reason = put(&at, e->reason);
	r->u.e.backtrace = put(&at, e->backtrace);
	r->u.e.pyframes = put(&at, e->pyframes);
	return enqueue(t, r);
}

int evq_process_start(struct tracer *t, const struct audit_process *p)
{
	struct evrec *r = rec_new(EV_PSTART, slen(p->kind) + slen(p->exe) +
						     slen(p->argv_json));
	char *at;

	if (!r) {
		evq_failed(t);
		return -ENOMEM;
	}
	r->u.p = *p;
	at = r->strings;
	r->u.p.kind = put(&at, p->kind);
	r->u.p.exe = put(&at, p->exe);
	r->u.p.argv_json = put(&at, p->argv_json);
	return enqueue(t, r);
}

int evq_process_exec(struct tracer *t, int serial, long long ts_ns,
		     const char *exe, const char *argv_json)
{
	struct evrec *r = rec_new(EV_PEXEC, slen(exe) + slen(argv_json));
	char *at;

	if (!r) {
		evq_failed(t);
		return -ENOMEM;
	}
	r->u.x.serial = serial;
	r->u.x.ts_ns = ts_ns;
	at = r->strings;
	r->u.x.exe = put(&at, exe);
	r->u.x.argv_json = put(&at, argv_json);
	return enqueue(t, r);
}

int evq_process_exit(struct tracer *t, int serial, long long ts_ns,
		     int exit_code, int signal)
{
	struct evrec *r = rec_new(EV_PEXIT, 0);

	if (!r) {
		evq_failed(t);
		return -ENOMEM;
	}
	r->u.x.serial = serial;
	r->u.x.ts_ns = ts_ns;
	r->u.x.exit_code = exit_code;
	r->u.x.signal = signal;
	return enqueue(t, r);
}
