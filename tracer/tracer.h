/*
 * tracer.h - spawn the interpreter and supervise it: child set-up, the
 * seccomp filter, the ptrace event loop, decoders, applying decisions,
 * output capture and limits. The only module that calls ptrace.
 *
 * Lifecycle:
 *   tracer_probe()          once: the kernel has what ward needs
 *   tracer_run(opts, res)   spawn, supervise until the last tracee is gone
 *   tracer_result_free(res)
 *
 * Blocking: tracer_run blocks SIGINT, SIGTERM, SIGHUP and SIGPIPE in the
 * calling thread for the duration of the run (SIGINT/TERM/HUP then abort
 * the run, recorded as "aborted") and restores the mask before returning.
 */
#ifndef WARD_TRACER_TRACER_H
#define WARD_TRACER_TRACER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "../audit/audit.h"
#include "../policy/policy.h"

/* tracer_opts.pin_cpu: pin to the CPU ward starts on (pin.c). */
#define TRACER_PIN_AUTO (-2)

/* Where the run shows the code its workdir (its cwd and HOME): the run's
 * file tree is the policy's view (tracer/view.c), which needs a mount
 * namespace. */
#define TRACER_HOME "/home/user"

/*
 * Can this process give runs a mount namespace, so that the workdir is at
 * TRACER_HOME inside? Tried once (a clone into new namespaces, as the run
 * makes), then remembered. When not (a kernel or container that refuses
 * namespaces), the code sees the workdir at its own path and the whole
 * host as ward does; the run says so.
 */
bool tracer_view_possible(void);

/* The run's ends an attached process holds (tracer_opts.attach). */
struct tracer_attach_fds {
	int out_w, err_w; /* its stdout and stderr */
	int sync_r;	  /* ward's two bytes (tracer_opts.attach) */
};

struct tracer_opts {
	const char *interpreter; /* absolute path, executed as is */
	char *const *argv;	 /* argv of the interpreter (argv[0] first) */
	char *const *envp;	 /* the code's whole environment */
	const char *workdir;	 /* absolute; the host's directory */
	/* The workdir's path as the code sees it, which the caller bound
	 * $WORKDIR and HOME to: TRACER_HOME when tracer_view_possible(),
	 * else workdir. The run fails before the code when the namespaces
	 * it gets do not match (never a workdir at a path the policy does
	 * not mean). */
	const char *home;
	bool drop_user; /* run the code as uid/gid below */
	uid_t uid;
	gid_t gid;
	struct ward_limits limits;   /* 0 = unlimited for each field */
	const struct policy *policy; /* borrowed */
	struct audit *audit;	     /* borrowed; run already begun (or
				      * NULL with record below) */
	/* When set: begins the run's record (opens the database, writes the
	 * run row) and returns its audit handle in *au. tracer_run calls it
	 * on its output thread while the child sets itself up, and the
	 * child's execve of the interpreter waits for it. On failure it
	 * returns -errno with err filled in: the child is killed, nothing
	 * of the code runs, and res.setup_error says err. When tracer_run
	 * fails before it could call it, it is not called (the caller can
	 * tell: it never ran). */
	int (*record)(void *arg, struct audit **au, char *err, size_t n);
	void *record_arg;
	/* Optional, with record: runs fn(fn_arg) (which calls record) on a
	 * thread the caller already has (ward's early open of the database,
	 * runrec.h) instead of a new one: returns 0 when it will, < 0 to
	 * have tracer_run make its thread. record_join(record_arg) returns
	 * once fn has. */
	int (*record_run_on)(void *arg, void *(*fn)(void *), void *fn_arg);
	void (*record_join)(void *arg);
	bool passthrough; /* copy output live to ward's stdout/err */
	/* With passthrough: output past limits.output_bytes is still passed
	 * on live, only no longer recorded (ward run: the user sees every
	 * byte the code wrote; sessions: the caller gets each cell's head
	 * and tail with exact counts for the session's whole life;
	 * tools/agent/session.c). Without it, what is not kept is not passed
	 * on either. */
	bool pass_past_limit;
	bool print_denials; /* one line per denial on ward's stderr */
	/* keep in memory what the record keeps (for --json): res.out is
	 * the recorded prefix of each stream, never more */
	bool capture;
	struct tracer_prepared *prepared; /* from tracer_prepare, or NULL;
					   * consumed by tracer_run */
	int spin_us;	/* poll for the next stop this long before sleeping,
		      * while a CPU is free (0: never); see loop.c */
	bool no_cgroup; /* no memory and pids cgroups, even where they
			     * can be had (cgroup.c): rlimits only */
	int pin_cpu;	/* >= 0: share this CPU with the code while
				   * it has one thread (see tracer/pin.c);
				   * TRACER_PIN_AUTO: the CPU ward runs on,
				   * given a second one for the rest;
				   * -1: no pinning */
	/* bit i: the layer policy_layer_name(i) must be active, else the
	 * run fails with a set-up error before the code runs */
	unsigned long long require_layers;
	/* Sessions (tools/agent/session.c). code_fds[0..n_code_fds-1] are
	 * handed to the code as fds 5, 6, ... (inheritable: the interpreter's
	 * driver finds them after execve). When side_in > 0, what arrives
	 * on side_in is copied to side_out after all the stdout and stderr
	 * the code wrote before it (a result never overtakes its output).
	 * The first frame on side_in ends pinning (pin_cpu) for the rest of
	 * the run; a first line {"ward":"ready"} (the session drivers': the
	 * interpreter is up) does only that and is not copied. */
	int code_fds[2];
	int n_code_fds;
	int side_in, side_out;
	/* With side_in: side_in is passed on by lines, and each line (a
	 * frame, its newline included) is shown first to side_output,
	 * which says whether it carries a session command's output: 1
	 * (stdout) or 2 (stderr), *cmd the command's number (> 0), *data
	 * (malloc'd, freed by the caller) and *len its bytes; else 0. Those bytes are
	 * recorded as the command's (outputs.cmd), under the same output
	 * limit as the code's own, before the line is passed on. The code
	 * can write such lines too: they are recorded as a command's
	 * output, never as the code's own stdout or stderr. */
	int (*side_output)(void *arg, const char *line, size_t n,
			   long long *cmd, unsigned char **data, size_t *len);
	void *side_arg;
	/* a line longer is passed on as it comes, not shown to side_output
	 * (the reader must reject it: no output is recorded of it) */
	size_t side_line_max;
	/* Sessions: when the first process (the interpreter) exits, the
	 * processes it left are ended at once, as a hangup would end them,
	 * instead of the run waiting for them; the run's status is still
	 * the interpreter's exit (res.cause says what was ended). */
	bool end_with_root;
	/* With end_with_root: the cause recorded when the first process
	 * left others that were ended (NULL: a session's words). */
	const char *end_cause;
	/* Phases (docs/policy.md; setup_run in tools/run/cmd_run.c): a
	 * run's later phase, started afresh in the same record, numbers its
	 * processes on from the phase before: the first process is
	 * first_serial + 1. */
	int first_serial;
	/* The code's stdin: stdin_fd (borrowed, open for reading) when
	 * has_stdin, else /dev/null. */
	bool has_stdin;
	int stdin_fd;
	/* A run handed out from a warm pool (tools/agent/session-script.c):
	 * when > 0, each 8-byte count of ms read from wall_fd (borrowed;
	 * written by ward's own server, never by the code) re-arms the wall
	 * time limit to end that long from now, so that a one-shot's limit
	 * counts from its hand-out, not from the sandbox's start. */
	int wall_fd;
	/* Who answers the questions of "ask" rules (docs/policy.md): a
	 * socket (borrowed, > 0) on which the tracer writes one JSON line
	 * per question, {"ask": {"id", "question", "rule", "syscall",
	 * "target", "timeout_ms"}}, and reads answer lines {"answer": {"id",
	 * "answer": "allow_once"|"allow_always"|"deny", "by"}}. A line that
	 * is not that, or the socket's end, denies every question waiting
	 * and every one after. 0 (or < 0): nobody to ask, every question is
	 * denied at once. No answer within the policy's ask_timeout: deny. */
	int ask_fd;
	/* Attach instead of spawn (a warm pool's forked sandbox: see
	 * docs/performance.md). When set, tracer_run makes no child: it
	 * calls attach(attach_arg, fds) on its own thread with the run's
	 * ends the process must hold, and attach returns the pid of a
	 * process (or -errno) that:
	 *  - has one thread and already runs an interpreter whose image its
	 *    maker approved (it is recorded as execed: no exec comes);
	 *  - is under its own seccomp filter (ward's guard and a policy's
	 *    filter, whose TRACE actions fail with ENOSYS while nobody traces
	 *    it), no_new_privs, Landlock and namespaces: its maker's (the
	 *    namespaces layer records which differ from ward's own);
	 *  - has fds->out_w and fds->err_w as its stdout and stderr, and
	 *    runs nothing of its caller's before it has read two bytes from
	 *    fds->sync_r: the first once ward has seized it (with the usual
	 *    options: EXITKILL, TRACESECCOMP, TRACEFORK, ...) and placed it
	 *    in the run's cgroups, the second ('g') once the run is
	 *    recorded; EOF: it must exit.
	 * ward sets its rlimits from outside (prlimit) and closes its own
	 * copies of the fds after the call. code_fds, stdin and the workdir
	 * are the maker's to give; interpreter, argv and envp are only
	 * recorded. Any process may be named: only ward's own code may set
	 * this (root may seize any process). */
	pid_t (*attach)(void *arg, const struct tracer_attach_fds *fds);
	void *attach_arg;
	/*
	 * The zygote (docs/performance.md, docs/security.md "Forked
	 * sandboxes"; tracer/zygote.c).
	 *
	 * zygote_handoff_fd > 0: this run's first process is a template
	 * interpreter that runs only ward's warm-up and then forks sandboxes.
	 * Its filter lets unshare and a seccomp filter's install stop at ward
	 * instead of dying in the kernel (its own are killed here: only its
	 * forks' set-up, under their own supervisor, may make them). Each
	 * process its first process forks with fork() (a vfork, as
	 * subprocess makes, stays in its run) is handed off: detached at
	 * its first stop, before
	 * it runs, and its pid written (a 4-byte pid_t) to zygote_handoff_fd
	 * (-1 when it could not be handed off: it was killed).
	 *
	 * zygote_child (with attach): the attached process is such a fork.
	 * ward drives its set-up, which runs only ward's own driver code
	 * (tools/agent/drivers/python.py _zyg_child), in this order, and
	 * kills the run at the first call outside it (zygote.c):
	 *   A, the fork: unshare(TRACER_ZYGOTE_UNSHARE) (its own user,
	 *   mount, pid, net, ipc, uts and cgroup namespaces); ward maps its
	 *   uid and gid, mounts its workdir (o->workdir at o->home), /tmp and
	 *   /dev/shm and brings up loopback, from outside; capset (dropped);
	 *   a plain fork:
	 *   B, pid 1 of its pid namespace: a plain fork:
	 *   C, the code's process and the run's first process from its
	 *   birth: ward mounts its /proc and makes its Landlock ruleset in
	 *   its mount namespace and sends it on the sync socket; C restricts
	 *   itself with exactly that ruleset, then installs exactly
	 *   tracer_zygote_filter (kills unshare and new filters in the
	 *   kernel), and ward checks it (no capability, one filter more than
	 *   A had, new namespaces) at its next call.
	 * A and B are detached, never recorded as processes (as ward's init
	 * is not); they wait for their child and end with it.
	 * zygote_origin: what the run records it was forked from (the
	 * template's run id).
	 */
	int zygote_handoff_fd;
	bool zygote_child;
	const char *zygote_origin;
};

/* The namespaces a zygote child unshares (tracer_opts.zygote_child). */
#define TRACER_ZYGOTE_UNSHARE                                                  \
	(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |           \
	 CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP)

/* The filter a zygote child installs on itself (tracer_opts.zygote_child):
 * the same instructions as the driver builds, which ward compares. */
struct sock_fprog;
const struct sock_fprog *tracer_zygote_filter(void);

/* Can this system run zygote children (user namespaces for an
 * unprivileged process, checked once)? */
bool tracer_zygote_possible(void);

/* A denial as reported to callers (--json). */
struct tracer_denial {
	char syscall[32];
	char target[512];
	char action[16]; /* "deny", "kill", or "audit" (would deny) */
	char rule[96];
	int err;
};

/*
 * One containment layer of the run (seccomp, ptrace, landlock,
 * namespaces, cgroup-memory, rlimits, ...) and whether it is in force.
 * The list is the run's record of what contained it (runs.layers).
 */
struct tracer_layer {
	char name[24];	  /* short and stable: "landlock", "seccomp" */
	bool active;	  /* in force for the run */
	char detail[200]; /* what it covers, or why it is missing */
};

#define TRACER_LAYERS_MAX 16

struct tracer_result {
	int exit_code;	    /* the code's exit status; -1 if signalled */
	int signal;	    /* signal that ended the first process, or 0 */
	int ward_signal;    /* SIGINT/TERM/HUP that aborted the run */
	const char *status; /* ok|error|timeout|killed|aborted|limit */
	char cause[512];    /* why, when not ok/error; else "" */
	long long duration_ms;
	long long out_bytes[3]; /* [1] stdout, [2] stderr: totals written */
	bool truncated[3];	/* more was written than recorded */
	char *out[3]; /* captured (opts.capture): the recorded bytes, and a
		       * NUL after them (the bytes may hold NULs: out_len) */
	size_t out_len[3];
	long long events, denials, processes;
	struct tracer_denial *denial_list; /* first ones, for --json */
	size_t n_denials;
	const char *memory_by; /* how the memory limit was applied:
				* "cgroup v2", "cgroup v1", "rlimit" or
				* "none" (static strings) */
	char setup_error[512]; /* non-empty: the sandbox could not be set up
				  * (ward's error, not the code's) */
	struct tracer_layer layers[TRACER_LAYERS_MAX]; /* tracer_layer_add */
	size_t n_layers;
};

/*
 * Record a layer in res (tracer_run empties the list when it starts; add
 * from there on). A second call with the same name replaces the entry, so a
 * layer can be declared missing first and made active once it is in place.
 * detail may be NULL; longer text is cut. Not thread-safe: call from the
 * thread that runs tracer_run. Returns 0, -EINVAL (empty or too long name)
 * or -ENOSPC (TRACER_LAYERS_MAX layers already).
 */
int tracer_layer_add(struct tracer_result *res, const char *name, bool active,
		     const char *detail);
/* The layer named name in res, or NULL. */
const struct tracer_layer *tracer_layer_find(const struct tracer_result *res,
					     const char *name);

/*
 * Compiling the seccomp filter takes about a millisecond; a caller may
 * start it early, in a thread of its own, while it does other set-up, and
 * hand the result to tracer_run (tracer_opts.prepared). tracer_prepare
 * returns 0 or -errno (no thread: tracer_run compiles by itself). The
 * policy is borrowed until tracer_run (or tracer_prepared_free) joins.
 */
struct tracer_prepared;
int tracer_prepare(const struct policy *p, struct tracer_prepared **out);
void tracer_prepared_free(struct tracer_prepared *tp); /* NULL: no-op */

/*
 * Check that the kernel offers what ward relies on (seccomp filters with
 * RET_TRACE, PTRACE_O_EXITKILL, PTRACE_GET_SYSCALL_INFO). Returns 0, or
 * -ENOSYS with a message naming the missing feature in msg.
 */
int tracer_probe(char *msg, size_t n);

/*
 * Run the interpreter under supervision until its last process is gone.
 * Fills *res (caller frees with tracer_result_free). Returns 0 when the run
 * happened (whatever the code did), or -errno when ward itself failed
 * (res->setup_error says what). Audit errors during the run kill the run
 * and return -EIO.
 */
int tracer_run(const struct tracer_opts *o, struct tracer_result *res);
void tracer_result_free(struct tracer_result *res);

/*
 * The unwinder helper (tracer/uwhelper.c): ward starts its own binary as
 * `ward-unwinder __unwinder ...` with a socket as fd 3 to parse the code's
 * ELF and DWARF outside ward, unprivileged and sandboxed. A main() that
 * links the tracer hands argv[1] == TRACER_UNWINDER_ARG to
 * tracer_unwinder_main before anything else; it never returns.
 */
#define TRACER_UNWINDER_ARG "__unwinder"
__attribute__((noreturn)) void tracer_unwinder_main(int argc, char **argv);

#endif
