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
	int ns_flags; /* CLONE_NEW* the child was cloned with (ns.c) */
	uid_t ns_uid; /* ward's euid and egid, for the user namespace */
	gid_t ns_gid;
};

/* Runs in the forked child; never returns. */
__attribute__((noreturn)) void spawn_child(const struct tracer_opts *o,
					   const struct sock_fprog *filter,
					   const struct spawn_fds *f);

/* Report a set-up failure (what: strerror(errno)) to ward and exit 127.
 * For the child side only. */
__attribute__((noreturn)) void spawn_fail(const char *what);

/* Child side: wait (once) for ward's first byte, which says it has
 * seized this process and placed it in the run's cgroups; exits when ward
 * went away. Before anything of the code's can run, even a fork. */
void spawn_wait_seized(void);

/* Namespaces (ns.c). ward's side: clone the first child into new
 * namespaces (plain fork when the kernel refuses them: said on stderr and
 * recorded); returns like fork. The child's side: set the namespaces up,
 * wait for ward's first byte (spawn_wait_seized) and fork the code's
 * process; returns only in that process (the init never returns). */
pid_t tracer_ns_fork(struct tracer *t, struct spawn_fds *f);
void tracer_ns_child(const struct tracer_opts *o, const struct spawn_fds *f);

#endif
