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

/* The worker's main: configuration from fd 3; returns the exit status. */
int ws_worker_main(void);

#endif
