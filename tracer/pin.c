/*
 * pin.c - CPU pinning (tracer_opts.pin_cpu): ward run's default.
 *
 * A trap is two context switches; when the code and the supervisor sit on
 * different CPUs each one is also a cross-CPU wake-up, which on VMs costs
 * more than the switch itself (an IPI, and the host waking the idle vCPU:
 * ~25 us of PTRACE_CONT alone on the 2-vCPU VMs ward is measured on).
 * Pinned, the supervisor's main thread and the code share one CPU and the
 * output/audit thread gets the others, so the SQLite work never waits in
 * line with the code. TRACER_PIN_AUTO takes the CPU ward is running on
 * (the scheduler's pick, so concurrent runs spread), and only when ward
 * has another CPU for the rest.
 *
 * Pinning stays only while it cannot cost parallelism: when the code
 * starts a second thread, or a process that does not wait for its child
 * (a fork: multiprocessing, a shell's pipeline), every tracee and the main
 * thread get the original CPU set back, for the rest of the run. A vfork
 * child keeps it (subprocess, posix_spawn, system(): its parent is
 * suspended until it execs, and then usually waits for it). What the code
 * sees: while pinned, sched_getaffinity() reports one CPU (numpy's BLAS
 * then uses one thread; os.cpu_count() still counts them all).
 */
#include "tracer-int.h"

#include <errno.h>
#include <sched.h>

#include "../common/log.h"

int tracer_pin_start(struct tracer *t)
{
	cpu_set_t one;

	t->pinned = false;
	t->pin_cpu = t->o->pin_cpu;
	if (t->pin_cpu < 0 && t->pin_cpu != TRACER_PIN_AUTO)
		return 0;
	if (sched_getaffinity(0, sizeof(t->cpus), &t->cpus) < 0)
		return -errno;
	if (t->pin_cpu == TRACER_PIN_AUTO) {
		t->pin_cpu = sched_getcpu();
		/* one CPU: nothing to share; unknown: not worth failing */
		if (CPU_COUNT(&t->cpus) < 2 || t->pin_cpu < 0 ||
		    !CPU_ISSET(t->pin_cpu, &t->cpus))
			return 0;
	}
	if (!CPU_ISSET(t->pin_cpu, &t->cpus))
		return -EINVAL;
	CPU_ZERO(&one);
	CPU_SET(t->pin_cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one) < 0)
		/* asked for: an error; by default: no pinning, no harm */
		return t->o->pin_cpu == TRACER_PIN_AUTO ? 0 : -errno;
	t->pinned = true;
	debug("pinned to CPU %d with the code", t->pin_cpu);
	return 0;
}

void tracer_pin_io_thread(struct tracer *t)
{
	cpu_set_t rest = t->cpus;

	if (!t->pinned)
		return;
	CPU_CLR(t->pin_cpu, &rest);
	if (CPU_COUNT(&rest) == 0)
		rest = t->cpus;
	pthread_setaffinity_np(t->io_thread, sizeof(rest), &rest);
}

void tracer_unpin(struct tracer *t, const char *why)
{
	if (!t->pinned)
		return;
	t->pinned = false;
	t->unpinned = true;
	if (why)
		debug("unpinned: %s", why);
	sched_setaffinity(0, sizeof(t->cpus), &t->cpus);
	pthread_mutex_lock(&t->lock);
	for (int b = 0; b < TRACEE_BUCKETS; b++)
		for (struct tracee *x = t->tab[b]; x; x = x->next)
			sched_setaffinity(x->tid, sizeof(t->cpus), &t->cpus);
	pthread_mutex_unlock(&t->lock);
}

void tracer_pin_follow(struct tracer *t, pid_t tid)
{
	if (t->unpinned)
		sched_setaffinity(tid, sizeof(t->cpus), &t->cpus);
}
