/*
 * zygote.h - the fork broker between a warm pool's template worker and its
 * child workers (tools/agent/zygote.c; docs/performance.md, "The warm
 * pool and the zygote"). Private to tools/agent.
 *
 * The template worker supervises one interpreter that ran ward's warm-up,
 * says so (one byte 'R') and waits for fork requests on a SOCK_SEQPACKET
 * socket (its fd 5, tctl here): one byte 'F' with five fds, answered 'K' (forked: the tracer then
 * writes the fork's pid, a 4-byte pid_t, on the hand-off pipe; -1 when it
 * could not be handed off) or 'E' (the fork failed). The broker listens on
 * a unix stream socket at a path only root can reach and passes each child
 * worker's five fds on, one request at a time, and answers the child one
 * JSON line: {"pid", "template_run", "policy_sha256"} or {"error"}.
 */
#ifndef WARD_TOOLS_ZYGOTE_H
#define WARD_TOOLS_ZYGOTE_H

#include <stddef.h>
#include <sys/types.h>

/* The fds a fork request carries, in this order: the child's stdout and
 * stderr (write ends), ward's sync pipe (read end), its cell socket and
 * its result pipe (write end), dup'ed by the fork to its 1, 2, the sync
 * fd, 5 and 6. */
enum { WS_ZYG_NFDS = 5, WS_ZYG_TIMEOUT_MS = 10000 };

struct ws_zbroker;

/* A broker listening at path (made mode 0600; an old socket there is
 * replaced) for the template on tctl and handoff_r (both borrowed), whose
 * run is run_id under the policy whose sha256 is policy_sha (both copied).
 * 0, or -errno with err. */
int ws_zbroker_new(const char *path, int tctl, int handoff_r,
		   const char *run_id, const char *policy_sha,
		   struct ws_zbroker **out, char *err, size_t n);
/* The listening socket, to poll for a connection. */
int ws_zbroker_fd(const struct ws_zbroker *b);
/* One connection accepted and its request served. 0; -EPIPE once the
 * template can no longer be trusted to answer in order (it did not answer
 * in time, answered nonsense, or its socket closed): the broker then
 * refuses every request, and the caller ends the template. */
int ws_zbroker_serve(struct ws_zbroker *b);
/* Closed, its socket file removed. NULL: nothing. */
void ws_zbroker_free(struct ws_zbroker *b);

/* A child worker's side: the five fds sent to the broker at path, and the
 * fork's pid returned once the template's policy is known to be
 * policy_sha (its run id into run_id). -errno with err otherwise (-EPERM:
 * another policy). */
pid_t ws_zygote_fork(const char *path, const int fds[WS_ZYG_NFDS],
		     const char *policy_sha, char *run_id, size_t run_id_len,
		     char *err, size_t n);

/* One byte and n fds (borrowed, 1 to 8) in one message on sock. 0 or
 * -errno. */
int ws_zyg_send_fds(int sock, char byte, const int *fds, int n);

#endif
