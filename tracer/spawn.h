/* spawn.h - the child side of tracer_run (spawn.c). */
#ifndef WARD_TRACER_SPAWN_H
#define WARD_TRACER_SPAWN_H

#include "tracer-int.h"

struct spawn_fds {
	int out_w, err_w; /* the code's stdout and stderr */
	int sync_r;	  /* one byte arrives once ward has seized us */
	int err_pipe_w;	  /* set-up failures, as text */
	const struct tracer_landlock *landlock; /* the plan; NULL: none */
};

/* Runs in the forked child; never returns. */
__attribute__((noreturn)) void spawn_child(const struct tracer_opts *o,
					   const struct sock_fprog *filter,
					   const struct spawn_fds *f);

#endif
