/*
 * ttyask.h - ward run's answers to "ask" rules, on the terminal
 * (ttyask.c).
 */
#ifndef WARD_TOOLS_RUN_TTYASK_H
#define WARD_TOOLS_RUN_TTYASK_H

#include <pthread.h>
#include <stdbool.h>

struct ward_ttyask {
	int fd[2]; /* [0]: the tracer's (tracer_opts.ask_fd), [1]: ours */
	int tty;   /* /dev/tty */
	pthread_t thread;
	bool started;
	char who[96]; /* "ward run: terminal /dev/pts/N (uid U)" */
};

/* Opens /dev/tty and starts the thread: returns the fd for
 * tracer_opts.ask_fd, or -errno (-ENXIO: no terminal) with nothing left
 * open. */
int ward_ttyask_start(struct ward_ttyask *q);
/* Ends the thread (a prompt on the screen is abandoned) and closes. */
void ward_ttyask_stop(struct ward_ttyask *q);

#endif
