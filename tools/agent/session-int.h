/*
 * session-int.h - what the session server (session.c) and its worker
 * processes (session-worker.c) agree on. Private to tools/.
 *
 * The worker is ward itself, exec'd as `ward serve --session-worker` with:
 *   fd 0  /dev/null
 *   fd 1  the code's stdout, fd 2 its stderr (the tracer passes them on)
 *   fd 3  control socket: one JSON line of configuration in; one line
 *         {"run_id"} or {"error"} back once the run is recorded, and one
 *         line {"end": {...}} when the run is over
 *   fd 4  the code's end of the cell socket (the code gets it as fd 5)
 *   fd 5  the write end of the result pipe (the tracer copies the
 *         driver's fd 6 there, after the output written before it)
 */
#ifndef WARD_TOOLS_SESSION_INT_H
#define WARD_TOOLS_SESSION_INT_H

#define WS_FD_CTL    3
#define WS_FD_CELLS  4
#define WS_FD_RESULT 5

#define WS_SANDBOX_UID 65534 /* nobody, as ward run */
#define WS_SANDBOX_GID 65534

#include <jansson.h>

#include "tracer/tracer.h"

/* The worker's main: configuration from fd 3; returns the exit status. */
int ws_worker_main(void);
/* One JSON line (msg: consumed) to the server on fd 3, whole, from any of
 * the worker's threads. */
void ws_worker_reply(json_t *msg);

/* The worker's zygote role (zygote-worker.c), from the configuration's
 * "zygote" object: *out NULL when it has none; -EINVAL with err when it is
 * bad. The warm-up code of a template (else NULL); the code's environment
 * object with the template's additions (a new reference, NULL: no
 * memory); the run's options made the role's (the template's thread
 * started; rec: the run's record, pol_sha its policy's sha256, side the
 * result pipe): 0 or -errno with err; and, after tracer_run, the role
 * ended (the template's thread stopped, a child's attach error into
 * r->setup_error) and z freed. All take NULL: no zygote. */
struct ws_zyg;
struct ward_record;
int ws_zyg_new(json_t *cfg, struct ws_zyg **out, char *err, size_t n);
const char *ws_zyg_warmup(const struct ws_zyg *z);
json_t *ws_zyg_env(const struct ws_zyg *z, json_t *env);
int ws_zyg_setup(struct ws_zyg *z, struct tracer_opts *to,
		 struct ward_record *rec, const char *pol_sha,
		 const int side[2], char *err, size_t n);
void ws_zyg_end(struct ws_zyg *z, struct tracer_result *r);

#endif
