/* spawn.h - the child side of tracer_run (spawn.c). */
#ifndef WARD_TRACER_SPAWN_H
#define WARD_TRACER_SPAWN_H

#include "tracer-int.h"

struct spawn_fds {
	int out_w, err_w; /* the code's stdout and stderr */
	int sync_r;	  /* ward's go bytes (spawn.c) */
	int err_pipe_w;	  /* set-up failures, as text */
	int cg_self[2];	  /* v1 tasks files to enter (tracer_cgroup_self) */
	int cg_ack_w;	  /* and where to say how it went */
	const struct tracer_landlock *landlock; /* the plan; NULL: none */
	const struct tracer_view *view;		/* the plan (view.c) */
	int view_r; /* a byte 'v' here: the plan is ready (EOF: none) */
	int ns_flags; /* CLONE_NEW* the child was cloned with (ns.c) */
	uid_t ns_uid; /* ward's euid and egid, for the user namespace */
	gid_t ns_gid;
	bool proxy; /* the init makes the proxy's socket (ns.c, proxy.c) */
};

/*
 * What the child side works from, in the spawn area (start.c). The child
 * shares ward's memory (CLONE_VM): of ward's memory it writes this and
 * nothing else (besides its own stacks).
 */
struct spawn_ctx {
	const struct tracer_opts *o;
	const struct sock_fprog *filter;
	struct spawn_fds f;
	int sync_w;	  /* ward's end of the sync pipe: the child closes it */
	char go_first;	  /* ward's first byte once read: 'c' or 'r' */
	int view_fd;	  /* the child's fd of spawn_fds.view_r, or -1 */
	void *code_stack; /* top of the code process's stack (ns.c) */
	/* the init's fd of the proxy's listening socket, made in the run's
	 * network namespace (ns.c); ward takes it with pidfd_getfd at the
	 * init's clone of the code (proxy.c). -1: none */
	int proxy_fd;
};

/* The first child, from its clone (start.c); never returns. */
__attribute__((noreturn)) void spawn_child(struct spawn_ctx *c);
/* The code's process, from its namespaces on: its set-up and execve (in
 * the first child, or in the process the init makes); never returns. */
__attribute__((noreturn)) void spawn_code(struct spawn_ctx *c);

/* Report a set-up failure (what: strerror(errno)) to ward and exit 127.
 * For the child side only. */
__attribute__((noreturn)) void spawn_fail(const char *what);

/* Child side: wait (once) for ward's first byte, which says it has
 * seized this process and placed it in the run's cgroups; exits when ward
 * went away. Before anything of the code's can run, even a fork. */
void spawn_wait_seized(struct spawn_ctx *c);

/* ward's side (start.c): the first child cloned with CLONE_VM into new
 * namespaces (without them when the kernel refuses: said on stderr and
 * recorded), running spawn_child. Returns its pid or -errno. */
pid_t tracer_start_child(struct tracer *t, const struct sock_fprog *filter,
			 const struct spawn_fds *f, int sync_w);
/* The init's fd of the proxy's socket (spawn_ctx.proxy_fd), or -1. */
int tracer_spawn_proxy_fd(const struct tracer *t);
/* Once no child of ward's is left: the spawner joined, the area unmapped.
 * Safe to call when nothing was started. */
void tracer_start_end(struct tracer *t);

/* Namespaces, the child's side (ns.c): set them up, wait for ward's first
 * byte (spawn_wait_seized) and make the code's process, which runs
 * spawn_code; the init never returns. Returns at once without a pid
 * namespace. */
void tracer_ns_child(struct spawn_ctx *c);

#endif
