/*
 * session-server.h - the session server's own parts, shared by session.c
 * (sessions, methods, the API of session.h) and session-cell.c (running a
 * cell: framing, output capture, the result object). Private to them.
 */
#ifndef WARD_TOOLS_SESSION_SERVER_H
#define WARD_TOOLS_SESSION_SERVER_H

#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "audit/audit.h"
#include "tools/agent/session.h"

enum {
	OUT_HEAD = 32 << 10, /* bytes of each stream returned from the start */
	OUT_TAIL = 32 << 10, /* ... and from the end */
	GRACE_MS = 2000,     /* after the timeout, for the interrupt to work */
	CLOSE_MS = 3000,     /* for a closed session's worker to finish */
	START_MS = 30000,    /* for a worker to record its run */
	MAX_READ = 64 << 20, /* files.read, files.write */
	MAX_FRAME = 256 << 20, /* a result frame (PNGs are in it) */
};

/* A call's cancel (session.h): an eventfd, readable once fired, that the
 * cell's loop polls; fired is what a queued call checks. */
struct ws_cancel {
	int fd;
	atomic_bool fired;
};

/* A run waiting its turn on a session (FIFO): on the waiter's stack. */
struct ws_waiter {
	struct ws_waiter *next;
};

/*
 * Locking: the fields marked [s] are guarded by the server's lock. A call
 * holds a reference (refs) to each session it uses, so that a session is
 * never freed under it; the list holds one more while the session is
 * listed. While busy, the fds and the cell state (the rest) belong to the
 * thread that set busy: the running cell's, or the one pumping it; the
 * workdir (wd_fd, view) may be used by any call holding a reference.
 */
struct sess {
	struct sess *next; /* [s] */
	int refs;	   /* [s] */
	bool busy;	   /* [s] a cell runs (or the idle pump reads it) */
	bool gone;	   /* [s] unlinked: closed or expired, no new cells */
	bool oneshot;	   /* a one-shot's session: not listed, not found */
	struct ws_waiter *wq; /* [s] runs waiting their turn, first first */
	struct ws_cancel *running; /* [s] the running cell's cancel */
	pthread_cond_t turn; /* [s] busy, wq, refs or gone changed */
	long long expires_ms; /* [s] monotonic: closed for its lifetime */
	json_t *metadata; /* the creator's, as given (or NULL) */
	struct sess *reap_next; /* expire()'s list of sessions to close */
	char id[24];
	char lang[8];
	char run_id[AUDIT_RUN_ID_LEN + 1];
	char *workdir;
	/* The workdir as the session sees it, held open: the worker mounts
	 * its quota in a mount namespace of its own (session-worker.c), so
	 * the server reaches the files through /proc/WORKER/root, and this fd
	 * keeps them reachable after the worker is gone; view names it. */
	int wd_fd;
	int wd_lock; /* its claim (ward_workdir_lock): a sweep spares it */
	char view[48];
	pid_t worker;
	int ctl, cells, res, out[3];
	long long created_ns, created_ms, last_ms;
	long long count;
	double timeout_s;
	char last_nonce[40];
	char ctlbuf[4096];
	size_t ctl_len;
	char *resbuf;
	size_t res_len, res_cap;
	bool res_skip;		/* inside a frame that was too long */
	json_t *pending_errors; /* channel errors seen between cells */
	bool dead;
	char end_status[16];
	char end_cause[300];
	bool end_known; /* the worker said how the interpreter ended: */
	int end_exit;	/* its exit status, 128+N for signal N */
	int end_signal;
	pid_t code_pid; /* the interpreter as this server sees it (0: not
			 * found yet) */
	bool retired;	/* a one-shot's: its driver has EOF and its worker
			 * ends on its own (its record too); expire() reaps
			 * it. Not listed, not found, not counted. */
};

/* A session that is gone, remembered so that a request naming it learns
 * why (expired, closed) instead of "no such session". */
struct ws_grave {
	char id[24];
	char why[96];
};

enum { WS_GRAVES = 64 };

struct ws_server {
	struct ws_config cfg;
	char db[PATH_MAX];
	struct audit *au; /* thread-safe itself (audit.h) */
	pthread_mutex_t lock; /* the list, n, starting, graves, [s] fields */
	struct sess *list;
	int n;
	int starting; /* sessions being started: they count for the limit */
	struct ws_grave graves[WS_GRAVES];
	unsigned graves_n;
	bool drop;
	/* Workers are forked by one long-lived thread: PR_SET_PDEATHSIG
	 * fires when the thread that forked ends, and calls may come on
	 * short-lived threads. */
	pthread_t spawner;
	pthread_cond_t spawn_cond, spawn_done;
	struct ws_spawn *spawn_q;
	bool spawn_stop;
};

/* A cell's time limit: what was asked, and what the operator's cap
 * (ws_config.max_timeout_s) made of it. */
struct cell_limits {
	double timeout_s, asked_s;
	bool capped;
};

/* Small helpers (session.c; their contracts are at their definitions). */
long long ws_mono_ms(void);
long long ws_realtime_ns(void);
void ws_close_fd(int *fd);
int ws_random_hex(char *out, size_t bytes);
int ws_write_all(int fd, const void *p, size_t n);
__attribute__((format(printf, 3, 4))) int
ws_fail(struct ws_error *err, int code, const char *fmt, ...);

/* The sessions (session.c): x's workdir as the server reaches it, the
 * worker's control lines read, the session's worker stopped. */
const char *ws_wd(const struct sess *x);
void ws_read_ctl(struct sess *x);
void ws_sess_stop(struct sess *x);

/* Requests (session.c): params checked (only the keys named, up to a
 * NULL; a string or nothing), and the session a request names with a
 * reference (NULL: err says why), given back with ws_sess_put. */
int ws_only_keys(json_t *obj, struct ws_error *err, ...);
int ws_get_str(json_t *p, const char *key, const char **out,
	       struct ws_error *err);
struct sess *ws_find_sess(struct ws_server *s, json_t *p, bool need,
			  struct ws_error *err);
void ws_sess_put(struct ws_server *s, struct sess *x);

/* files.* (session-files.c): 0 or -1 as ws_call; 1: not such a method. */
int ws_files_call(struct ws_server *s, const char *method, json_t *p,
		  json_t **res, struct ws_error *err);

/* Cells (session-cell.c): the time limit a cell gets, idle sessions'
 * output read (ws_pump_idle takes the server's lock and skips busy
 * sessions; ws_pump_sess reads one the caller has made busy), and one
 * cell run in x, made busy by the caller (*result on success; cancel_fd
 * readable: interrupt it). */
struct cell_limits ws_cell_limits_of(const struct ws_server *s, double asked);
void ws_pump_idle(struct ws_server *s);
void ws_pump_sess(struct sess *x);
int ws_run_cell(struct ws_server *s, struct sess *x, const char *code,
		size_t len, const struct cell_limits *cl, ws_stream_fn fn,
		void *fn_arg, int cancel_fd, bool one_shot, json_t **result,
		struct ws_error *err);

#endif
