/*
 * e2b.h - `ward serve --listen`: E2B's HTTP protocols over ward's sessions.
 * Private to tools/agent/e2b-*.c:
 *   e2b-http.c     the HTTP server (libmicrohttpd): bodies, auth, routing,
 *                  streamed responses, shutdown
 *   e2b-api.c      the sandboxes and E2B's calls mapped onto session.h
 *   e2b-connect.c  the Connect protocol's framing and error codes
 * The wire shapes are those the official SDKs (npm `e2b`,
 * `@e2b/code-interpreter`) send and parse; docs/agents.md lists what is
 * served.
 */
#ifndef WARD_TOOLS_E2B_H
#define WARD_TOOLS_E2B_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "tools/agent/session.h"

enum {
	E2B_MAX_BODY = 16 << 20,   /* a JSON or Connect request */
	E2B_MAX_UPLOAD = 64 << 20, /* a file written through /files */
	E2B_TOKEN_HEX = 32,	   /* bytes of randomness in a sandbox token */
};

struct e2b_options {
	const char *listen;  /* HOST:PORT (127.0.0.1:49982 when NULL) */
	const char *api_key; /* required by the control API */
	double max_life_s;   /* the longest timeout a sandbox may get */
	json_t *setup; /* {"code", "language"} every sandbox runs first (--setup;
			* NULL: none); borrowed */
};

/* Serves until SIGINT or SIGTERM, then closes every sandbox. Returns 0 or
 * -errno (a message has been printed). Owns nothing of s; frees nothing. */
int e2b_serve(struct ws_server *s, const struct e2b_options *o);

/* ---- one request, as the handlers see it (e2b-http.c fills it) ---- */

struct e2b_file {   /* one part of a multipart upload */
	char *name; /* its filename (the SDK puts the path there) */
	char *data;
	size_t len, cap;
};

struct e2b_req {
	void *conn; /* struct MHD_Connection */
	const char *method, *url;
	char *body; /* the whole body (not multipart), NUL-terminated */
	size_t len;
	struct e2b_file *files; /* multipart/form-data parts */
	size_t n_files;
	bool too_large; /* the body (or a part) was over its cap */
};

/* A header or query argument of r (NULL when absent). */
const char *e2b_header(const struct e2b_req *r, const char *name);
const char *e2b_query(const struct e2b_req *r, const char *name);

/* A streamed response: job runs on its own thread and writes with
 * e2b_stream_put; the stream ends when job returns. A client that goes
 * away (or the server stopping) fires the stream's cancel, which job
 * passes to the engine. */
struct e2b_stream;
typedef void (*e2b_job_fn)(struct e2b_stream *st, void *arg);

/* The reply to one request: a whole body, or a stream. */
struct e2b_reply {
	unsigned status;
	const char *ctype;
	char *body; /* malloc'd, owned by the reply */
	size_t len;
	e2b_job_fn job; /* non-NULL: stream job(arg), freeing arg with
			 * free_arg after it returned */
	void *arg;
	void (*free_arg)(void *arg);
};

void e2b_stream_put(struct e2b_stream *st, const void *data, size_t len);
/* The stream cannot go on (out of memory): it ends with an error. */
void e2b_stream_fail(struct e2b_stream *st);
struct ws_cancel *e2b_stream_cancel(struct e2b_stream *st);

/* Replies (e2b-http.c): JSON (stolen; NULL gives 500), bytes, or E2B's
 * error object {"code": status, "message": ...}. */
void e2b_reply_json(struct e2b_reply *rp, unsigned status, json_t *j);
void e2b_reply_bytes(struct e2b_reply *rp, unsigned status, const char *ctype,
		     char *data, size_t len);
__attribute__((format(printf, 3, 4))) void
e2b_reply_error(struct e2b_reply *rp, unsigned status, const char *fmt, ...);

/* ---- the API (e2b-api.c, e2b-sandbox.c) ---- */

#define E2B_ENVD_VERSION "0.5.7" /* the envd whose API is served */

struct proc { /* a command running in a sandbox (process.Process) */
	struct proc *next;
	unsigned pid;
	struct ws_cancel *cancel; /* its stream's */
	json_t *config;		  /* the ProcessConfig it was started with */
};

struct sbx {
	struct sbx *next;
	char id[32]; /* the ward session's id */
	char run_id[40];
	char template_id[64];
	char envd_token[2 * E2B_TOKEN_HEX + 1];	   /* X-Access-Token */
	char traffic_token[2 * E2B_TOKEN_HEX + 1]; /* E2B-Traffic-Access-Token */
	json_t *metadata;
	long long start_ms, end_ms; /* wall clock; end_ms: its timeout */
	bool alive;
	long long dead_ms;
	char why_dead[64];
	struct proc *procs;
};

struct e2b {
	struct ws_server *srv;
	const char *api_key;
	double max_life_s;    /* the longest timeout a sandbox may get */
	json_t *setup;	      /* e2b_options.setup (borrowed) */
	pthread_mutex_t lock; /* the list, the sandboxes, next_pid */
	struct sbx *list;
	unsigned next_pid;
};

int e2b_new(struct ws_server *s, const char *api_key, struct e2b **out);
/* Closes every sandbox (their runs are recorded as closed). */
void e2b_free(struct e2b *e);
/* Handles one request; fills rp. */
void e2b_handle(struct e2b *e, struct e2b_req *r, struct e2b_reply *rp);
/* Closes the sandboxes whose timeout passed; called about once a second. */
void e2b_tick(struct e2b *e);

/* Cancelling one engine call (any thread). */
struct ws_cancel *ws_cancel_new(void);
void ws_cancel_fire(struct ws_cancel *c);
void ws_cancel_free(struct ws_cancel *c);
bool ws_cancel_fired(const struct ws_cancel *c);

/* One engine call (session.h's ws_call; params stolen), cancelled by c. */
int e2b_engine(struct e2b *e, const char *method, json_t *params,
	       ws_stream_fn fn, void *arg, struct ws_cancel *c, json_t **res,
	       struct ws_error *err);
/* A sandbox by id, alive or gone (under e->lock). */
struct sbx *e2b_find(struct e2b *e, const char *id);
void e2b_mark_dead(struct e2b *e, const char *id, const char *why);
long long e2b_now_ms(void);
void e2b_iso_time(char *buf, size_t n, long long ms);
/* A request with an E2b-Sandbox-Id header: envd and code interpreter
 * (e2b-sandbox.c). */
void e2b_sandbox_request(struct e2b *e, const char *sid, struct e2b_req *r,
			 struct e2b_reply *rp);

/* Constant-time comparison of a secret with what a request gave. */
bool e2b_secret_eq(const char *secret, const char *given);

/* ---- the Connect protocol (e2b-connect.c) ---- */

/* A Connect error code's HTTP status ("not_found" -> 404). */
unsigned e2b_connect_status(const char *code);
/* The JSON message of an enveloped (streaming) request body: 0, or -1
 * with a message in why. */
int e2b_connect_unwrap(const char *body, size_t len, json_t **msg, char *why,
		       size_t why_len);
/* Writes one envelope (flags 0: a message; 2: end of stream) to st. */
void e2b_connect_put(struct e2b_stream *st, unsigned flags, json_t *msg);
/* The end of a stream, with an error when code is not NULL. */
void e2b_connect_end(struct e2b_stream *st, const char *code,
		     const char *message);
/* A streaming call's whole reply when it fails before it starts: 200 and
 * the end of the stream with the error. */
void e2b_connect_end_reply(struct e2b_reply *rp, const char *code,
			   const char *message);

#endif
