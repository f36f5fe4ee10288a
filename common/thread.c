/* thread.c - see thread.h. */
#include "thread.h"

#include <sched.h>

int ward_thread_beside(pthread_t *th, void *(*fn)(void *), void *arg)
{
	cpu_set_t all, rest;
	pthread_attr_t attr;
	int cpu = sched_getcpu(), rc = pthread_attr_init(&attr);

	if (rc != 0)
		return -rc;
	if (cpu >= 0 && sched_getaffinity(0, sizeof(all), &all) == 0 &&
	    CPU_COUNT(&all) > 1 && CPU_ISSET(cpu, &all)) {
		rest = all;
		CPU_CLR(cpu, &rest);
		pthread_attr_setaffinity_np(&attr, sizeof(rest), &rest);
	}
	rc = pthread_create(th, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return -rc;
}
