/*
 * thread.h - a helper thread that runs beside its creator.
 */
#ifndef WARD_COMMON_THREAD_H
#define WARD_COMMON_THREAD_H

#include <pthread.h>

/*
 * pthread_create, with the new thread kept off the CPU the caller runs on
 * now (when it may run on another): work started early to run beside the
 * caller's set-up (opening the audit database, making a namespace) would
 * otherwise often take turns with it, since the scheduler may put a new
 * thread on its creator's CPU and leave it there for a few ms. Returns 0
 * or -errno.
 */
int ward_thread_beside(pthread_t *th, void *(*fn)(void *), void *arg);

#endif
