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
 * An allowed call's row carries the kernel's result (events.result): it
 * is held (evq_hold) while the call runs and queued with its result
 * (evq_resolve): at its exit stop, before the thread goes on, or when
 * ward reads the result the kernel wrote at the call's exit (retbpf.c).
 * So rows are in the order the calls were completed: decided, for a denial or kill (whose result is
 * ward's answer), returned, for an allowed call; within a thread that is
 * the order of its calls. ts_ns stays the time of the call's entry.
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
#include <time.h>
#include <unistd.h>

enum { KICK_AT = 512, EVQ_WINDOW = 1024 };

enum evkind { EV_EVENT, EV_PSTART, EV_PEXEC, EV_PEXIT };

struct evrec {
	struct evrec *next;
	pid_t tid;	 /* held rows: the thread */
	long long since; /* ... and by_bpf: CLOCK_MONOTONIC at the hold */
	bool by_bpf;
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

	retbpf_drain(t); /* the calls that returned before it, first */
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

/* A copy of e in one allocation, or NULL. */
static struct evrec *event_rec(const struct audit_event *e)
{
	size_t n = slen(e->syscall) + slen(e->args_json) + slen(e->raw) +
		   slen(e->target) + slen(e->decision) + slen(e->rule) +
		   slen(e->reason) + slen(e->backtrace) + slen(e->pyframes);
	struct evrec *r = rec_new(EV_EVENT, n);
	char *at;

	if (!r)
		return NULL;
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
	return r;
}

int evq_push(struct tracer *t, const struct audit_event *e)
{
	struct evrec *r = event_rec(e);

	if (!r)
		return evq_write_now(t, e); /* no memory: write it here */
	return enqueue(t, r);
}

/* Held rows: a chain per bucket of tid, under q_lock. */
#define HELD_BUCKETS (sizeof(((struct tracer *)0)->held) / sizeof(void *))

static struct evrec **held_at(struct tracer *t, pid_t tid)
{
	struct evrec **pp = &t->held[(unsigned)tid % HELD_BUCKETS];

	while (*pp && (*pp)->tid != tid)
		pp = &(*pp)->next;
	return pp;
}

/* Takes tid's held row out (of syscall nr when nr >= 0; when at >= 0, a
 * row waiting for retbpf.c's result, held before at), or NULL. */
static struct evrec *unhold(struct tracer *t, pid_t tid, int nr, long long at)
{
	struct evrec **pp, *r = NULL;

	pthread_mutex_lock(&t->q_lock);
	pp = held_at(t, tid);
	if (*pp && (nr < 0 || (*pp)->u.e.nr == nr) &&
	    (at < 0 || ((*pp)->by_bpf && (*pp)->since <= at))) {
		r = *pp;
		*pp = r->next;
		atomic_fetch_sub(&t->n_held, 1);
	}
	pthread_mutex_unlock(&t->q_lock);
	return r;
}

static int resolve(struct tracer *t, pid_t tid, int nr, bool has,
		   long long result, long long at)
{
	struct evrec *r = atomic_load(&t->n_held) ? unhold(t, tid, nr, at)
						  : NULL;

	if (!r)
		return 0;
	/* the kernel's restart codes (ERESTARTSYS ... ERESTART_RESTARTBLOCK):
	 * a signal interrupted the call, which never returned to the code
	 * as such (it is made again, a row of its own, or the code sees
	 * EINTR, or the thread dies of the signal) */
	if (has && result <= -512 && result >= -516)
		has = false;
	r->u.e.has_result = has;
	r->u.e.result = has ? result : 0;
	return enqueue(t, r);
}

int evq_resolve(struct tracer *t, pid_t tid, int nr, bool has, long long result)
{
	return resolve(t, tid, nr, has, result, -1);
}

int evq_resolve_at(struct tracer *t, pid_t tid, int nr, long long result,
		   long long at)
{
	/* a result of a call whose row was resolved at its exit stop, or
	 * of one before the held row's, is not this row's */
	return resolve(t, tid, nr, true, result, at);
}

bool evq_held(struct tracer *t, pid_t tid)
{
	bool held;

	if (!atomic_load(&t->n_held))
		return false;
	pthread_mutex_lock(&t->q_lock);
	held = *held_at(t, tid) != NULL;
	pthread_mutex_unlock(&t->q_lock);
	return held;
}

void evq_drop_held(struct tracer *t)
{
	for (size_t b = 0; b < HELD_BUCKETS; b++) {
		while (t->held[b]) {
			struct evrec *r = t->held[b];
			t->held[b] = r->next;
			free(r);
		}
	}
	atomic_store(&t->n_held, 0);
}

int evq_hold(struct tracer *t, pid_t tid, const struct audit_event *e,
	     bool by_bpf)
{
	struct evrec *r = event_rec(e), **pp;

	evq_resolve(t, tid, -1, false, 0); /* (its exit was missed) */
	if (!r)
		return evq_push(t, e);
	r->tid = tid;
	r->by_bpf = by_bpf;
	if (by_bpf) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		r->since = ts.tv_sec * 1000000000LL + ts.tv_nsec;
	}
	pthread_mutex_lock(&t->q_lock);
	pp = held_at(t, tid);
	r->next = NULL;
	*pp = r;
	atomic_fetch_add(&t->n_held, 1);
	pthread_mutex_unlock(&t->q_lock);
	return 0;
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
