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

/* A cell of session-ctx.c (another language, a context, env, a command),
 * run by a python session's driver as the hub (drivers/python.py): sent
 * as a frame whose body is JSON instead of code. */
struct cell_ext {
	/* what answers: "python" (the hub itself, which also runs
	 * commands), "node" or "sh" */
	const char *lang;
	char *body; /* the frame's body, len bytes */
	size_t len;
	json_t *mark; /* merged into the result object, recorded too */
};
struct ws_ctxs;

struct sess {
	struct sess *next; /* [s] */
	int refs;	   /* [s] */
	bool busy;	   /* [s] a cell runs (or the idle pump reads it) */
	bool gone;	   /* [s] unlinked: closed or expired, no new cells */
	bool oneshot;	   /* a one-shot's session: not listed, not found */
	struct ws_waiter *wq; /* [s] runs waiting their turn, first first */
	struct ws_cancel *running; /* [s] the running cell's cancel */
	pthread_cond_t turn;	   /* [s] busy, wq, refs or gone changed */
	long long expires_ms;	   /* [s] monotonic: closed for its lifetime */
	/* [s] count and last_ms as of its last cell's end (a running cell
	 * changes those two unlocked) */
	long long shown_count, shown_last_ms;
	json_t *metadata;	/* the creator's, as given (or NULL) */
	json_t *setup;		/* how its setup phase went (or NULL) */
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
	pid_t fork_pid; /* a zygote's fork (pool-zygote.c): the process its
			 * worker attached to, whose tree the interpreter is
			 * in instead of the worker's ({"zygote_pid"}) */
	bool retired;	/* a one-shot's: its driver has EOF and its worker
			 * ends on its own (its record too); expire() reaps
			 * it. Not listed, not found, not counted. */
	/* session-ctx.c's: the cell running now when it is one of its, and
	 * the session's contexts (NULL: none yet; [s]) */
	struct cell_ext *ext;
	struct ws_ctxs *cx;
	/* session-pool.c's: a pooled session's warm-up cell (n 0), kept
	 * unrecorded (warm: its audit row, code and result owned here)
	 * until the session leaves the pool, when it is written with the
	 * hand-out time or why it was never used; warming: the cell running
	 * now is the warm-up (ws_run_cell keeps its row here) */
	bool warming;
	struct ws_warm *warm;
	/* session-cell.c's commands (ws_cmd_run), which run beside the
	 * cells without the session's turn: whoever reads res (a cell, a
	 * command's own thread, the idle pump) hands their frames to them.
	 * cmd_lock guards cmds, their state and cmd_next (never taken
	 * before the server's lock); cmd_cond: a command's frame came;
	 * send_lock: whole frames on cells (a cell's and commands'). */
	pthread_mutex_t cmd_lock, send_lock;
	pthread_cond_t cmd_cond;
	struct ws_cmd *cmds;
	unsigned cmd_next;
	struct ws_server *srv; /* its server (questions: session-ask.c) */
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
	struct audit *au;     /* thread-safe itself (audit.h) */
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
	struct ws_pool *pool; /* --pool (session-pool.c), or NULL */
	/* the pool's zygote once the pool is stopped, ended after the
	 * sessions forked from it (ws_server_free) */
	struct ws_pzyg *zyg_end;
	int bg_threads; /* [s] background commands' threads (session-ctx.c) */
	/* questions of "ask" rules waiting (session-ask.c), under ask_lock
	 * (never taken with lock held after it: it may be taken under
	 * lock) */
	pthread_mutex_t ask_lock;
	struct ws_ask *asks;
	unsigned ask_seq;
	ws_ask_fn ask_fn;
	void *ask_arg;
};

/* What session.create (or a one-shot run) asks for: a session started
 * with these (ws_sess_spawn). */
struct ws_start {
	const char *lang, *profile, *policy;
	double timeout, memory_mb, life_s;
	double worker_life_s; /* the worker's wall limit (0: max_life_s) */
	int nice; /* the worker's and its sandbox's nice value (0: as the
		   * server's) */
	json_t *env, *metadata;
	/* {"code", "language"}: run first under the policy's setup phase
	 * (session-worker.c), or NULL */
	json_t *setup;
	struct ws_cancel *oneshot; /* a one-shot's: it starts busy */
	/* the worker's "zygote" configuration (session-pool.c: a template,
	 * or a sandbox forked from it; zygote-worker.c), or NULL */
	json_t *zygote;
};
/* A session's worker started, its run recorded (*out: not listed, one
 * reference for the caller to own); -1 with err otherwise. */
int ws_sess_spawn(struct ws_server *s, const struct ws_start *st,
		  struct sess **out, struct ws_error *err);
/* A session nobody else holds, closed (its cells sealed) and freed. */
void ws_sess_finish(struct ws_server *s, struct sess *x);

/* The pool (session-pool.c): a pooled session for st when the pool has
 * one made with the same settings (*out, not listed, its hand-out
 * recorded; the pool refills behind it), else 0 with *out NULL; the pool
 * stopped and its sessions closed as never used (ws_server_free); a
 * warm-up's result kept (ws_run_cell, for a warming session). */
int ws_pool_take(struct ws_server *s, const struct ws_start *st,
		 struct sess **out);
/* ws_pool_take, waiting for a ready one while the pool runs and cancel
 * (or NULL) is not fired: -ECANCELED then. */
int ws_pool_take_wait(struct ws_server *s, const struct ws_start *st,
		      struct ws_cancel *cancel, struct sess **out);
void ws_pool_free(struct ws_server *s);
int ws_pool_keep_warmup(struct sess *x, const struct audit_cell *ac,
			json_t *result);

/* The pool's zygote (pool-zygote.c): NULL when not used (on false, or
 * the pool's settings cannot have one: said at debug level); the
 * "zygote" configuration of a pooled sandbox's worker, a fork of the
 * template (started first if need be; a new reference), or NULL when
 * there is no template now (the sandbox imports for itself); a fork that
 * could not be given (why: said once, the template replaced later); the
 * template ended and its directory removed. cancel_fd readable: a
 * template's start is given up (the server ends). Only the pool's thread (and
 * ws_server_pool before it) calls these. */
struct ws_pzyg;
/* A pool's refills' nice value, until their hand-out (as root: only root
 * may give a process its priority back); the zygote's template's too, so
 * that its forks start at it. */
enum { WS_REFILL_NICE = 10 };
/* The pool's settings for a session it makes (session-pool.c). */
struct ws_start ws_pool_settings(const struct ws_server *s);
struct ws_pzyg *ws_pzyg_new(struct ws_server *s, const char *warmup, bool on,
			    int cancel_fd);
json_t *ws_pzyg_child(struct ws_server *s, struct ws_pzyg *z);
void ws_pzyg_child_failed(struct ws_pzyg *z, const char *why);
void ws_pzyg_free(struct ws_server *s, struct ws_pzyg *z);

/* A cell's time limit: what was asked, and what the operator's cap
 * (ws_config.max_timeout_s) made of it. */
struct cell_limits {
	double timeout_s, asked_s;
	bool capped;
};

/* session-ask.c: a line from x's worker that is a question ({"ask"}):
 * kept and passed to the server's ask_fn; false for any other line. */
bool ws_ask_line(struct sess *x, const char *line);
/* x's questions waiting (its cell interrupted: cancel, timeout) answered
 * "deny", recorded as by "ward: why". */
void ws_ask_cancel(struct sess *x, const char *why);
/* The server's questions: "ask.list" and "ask.answer" (1: not theirs). */
int ws_ask_call(struct ws_server *s, const char *method, json_t *p,
		json_t **res, struct ws_error *err);
void ws_ask_free(struct ws_server *s);

/* Small helpers (session.c; their contracts are at their definitions). */
long long ws_mono_ms(void);
long long ws_realtime_ns(void);
void ws_close_fd(int *fd);
int ws_random_hex(char *out, size_t bytes);
int ws_write_all(int fd, const void *p, size_t n);
/* path (relative, beneath x's workdir, no symlink followed at its end)
 * written whole with data, owned by the sandbox's user when the server
 * drops to it. 0 or -errno. */
int ws_put_file(struct ws_server *s, struct sess *x, const char *path,
		const void *data, size_t len);
__attribute__((format(printf, 3, 4))) int
ws_fail(struct ws_error *err, int code, const char *fmt, ...);

/* The sessions (session.c): x's workdir as the server reaches it, the
 * worker's control lines read, the session's worker stopped. */
const char *ws_wd(const struct sess *x);
void ws_read_ctl(struct sess *x);
/* Waits up to ms for a whole line from x's worker: 1 (x->ctlbuf holds it,
 * its newline a NUL, until ws_ctl_pop drops it), 0 (time is up, or
 * cancel_fd, when >= 0, became readable), -1 (the worker closed its
 * socket, or wrote a line too long). */
int ws_ctl_line(struct sess *x, long long ms, int cancel_fd);
void ws_ctl_pop(struct sess *x);
void ws_sess_stop(struct sess *x);

/* Requests (session.c): params checked (only the keys named, up to a
 * NULL; a string, a positive number or nothing; an env object), and the
 * session a request names with a reference (NULL: err says why), given
 * back with ws_sess_put. */
int ws_only_keys(json_t *obj, struct ws_error *err, ...);
int ws_get_str(json_t *p, const char *key, const char **out,
	       struct ws_error *err);
int ws_get_num(json_t *p, const char *key, double *out, struct ws_error *err);
int ws_check_env(json_t *env, struct ws_error *err);
struct sess *ws_find_sess(struct ws_server *s, json_t *p, bool need,
			  struct ws_error *err);
void ws_sess_put(struct ws_server *s, struct sess *x);
/* A session's turn (FIFO, one cell or command at a time): 0 (x is busy
 * with cancel as its cell's), 1 (cancelled while waiting: answer
 * ws_cancelled_result), -1 (x was closed meanwhile; err says why); given
 * back with ws_end_turn (res: the answer, or NULL), which also closes a
 * session whose interpreter ended. */
int ws_take_turn(struct ws_server *s, struct sess *x, struct ws_cancel *cancel,
		 struct ws_error *err);
void ws_end_turn(struct ws_server *s, struct sess *x, json_t *res);
json_t *ws_cancelled_result(const struct sess *x);

/* files.* (session-files.c): 0 or -1 as ws_call; 1: not such a method. */
int ws_files_call(struct ws_server *s, const char *method, json_t *p,
		  json_t **res, struct ws_error *err);

/* Contexts, other languages, commands (session-ctx.c): a language's
 * canonical name (js -> node, bash -> sh; others as given); whether a
 * run in x needs the hub (under the server's lock); the run then, in x's
 * turn; the context.* and command.* methods (1: not one of them); the
 * result object of an ext cell or a command marked with its mark (before
 * it is recorded); x's
 * contexts freed. */
const char *ws_lang_canon(const char *lang);
bool ws_ctx_wanted(const struct sess *x, json_t *p, const char *lang);
int ws_ctx_run(struct ws_server *s, struct sess *x, json_t *p, ws_stream_fn fn,
	       void *fn_arg, struct ws_cancel *cancel, json_t **result,
	       struct ws_error *err);
int ws_ctx_call(struct ws_server *s, const char *method, json_t *p,
		ws_stream_fn fn, void *fn_arg, struct ws_cancel *cancel,
		json_t **result, struct ws_error *err);
void ws_ctx_mark(json_t *mark, json_t *o);
void ws_ctx_free(struct sess *x);

/* Cells (session-cell.c): the time limit a cell gets, idle sessions'
 * output read (ws_pump_idle takes the server's lock and skips busy
 * sessions; ws_pump_sess reads one the caller has made busy), and one
 * cell run in x, made busy by the caller (*result on success; cancel_fd
 * readable: interrupt it). */
struct cell_limits ws_cell_limits_of(const struct ws_server *s, double asked);
void ws_pump_idle(struct ws_server *s);
void ws_pump_sess(struct sess *x);
void ws_cmds_init(struct sess *x);
void ws_cmds_destroy(struct sess *x);
/* Whether a command runs in x (a session running one is not idle). */
bool ws_cmds_running(struct sess *x);
/* One command in x, beside its cells and other commands (x not made
 * busy: the caller holds a reference only): body is the hub's frame body
 * (session-ctx.c), code what is recorded; mark goes into the result
 * (borrowed). *result on success, as ws_run_cell's. */
int ws_cmd_run(struct ws_server *s, struct sess *x, const char *body,
	       size_t blen, const char *code, size_t len,
	       const struct cell_limits *cl, json_t *mark, ws_stream_fn fn,
	       void *fn_arg, struct ws_cancel *cancel, json_t **result,
	       struct ws_error *err);
int ws_run_cell(struct ws_server *s, struct sess *x, const char *code,
		size_t len, const struct cell_limits *cl, ws_stream_fn fn,
		void *fn_arg, int cancel_fd, bool one_shot, json_t **result,
		struct ws_error *err);

#endif
