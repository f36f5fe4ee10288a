/*
 * pin.c - optional CPU pinning (tracer_opts.pin_cpu >= 0).
 *
 * A trap is two context switches; when the code and the supervisor sit on
 * different CPUs each one is also a cross-CPU wake-up, which on VMs costs
 * more than the switch itself. Pinned, the supervisor's main thread and the
 * code share one CPU and the output/audit thread gets the others, so the
 * SQLite work never waits in line with the code.
 *
 * Pinning stays only while it cannot cost parallelism: when the code
 * starts a second thread, every tracee and the main thread get the
 * original CPU set back. Processes (fork, exec) keep it: a parent waiting
 * for its child is the common case. What the code sees: while pinned,
 * sched_getaffinity() reports one CPU (numpy's BLAS then uses one thread).
 */
#include "tracer-int.h"

#include <errno.h>
#include <sched.h>

int tracer_pin_start(struct tracer *t)
{
	cpu_set_t one;

	t->pinned = false;
	if (t->o->pin_cpu < 0)
		return 0;
	if (sched_getaffinity(0, sizeof(t->cpus), &t->cpus) < 0)
		return -errno;
	if (!CPU_ISSET(t->o->pin_cpu, &t->cpus))
		return -EINVAL;
	CPU_ZERO(&one);
	CPU_SET(t->o->pin_cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one) < 0)
		return -errno;
	t->pinned = true;
	return 0;
}

void tracer_pin_io_thread(struct tracer *t)
{
	cpu_set_t rest = t->cpus;

	if (!t->pinned)
		return;
	CPU_CLR(t->o->pin_cpu, &rest);
	if (CPU_COUNT(&rest) == 0)
		rest = t->cpus;
	pthread_setaffinity_np(t->io_thread, sizeof(rest), &rest);
}

void tracer_unpin(struct tracer *t)
{
	if (!t->pinned)
		return;
	t->pinned = false;
	sched_setaffinity(0, sizeof(t->cpus), &t->cpus);
	pthread_mutex_lock(&t->lock);
	for (int b = 0; b < TRACEE_BUCKETS; b++)
		for (struct tracee *x = t->tab[b]; x; x = x->next)
			sched_setaffinity(x->tid, sizeof(t->cpus), &t->cpus);
	pthread_mutex_unlock(&t->lock);
}
