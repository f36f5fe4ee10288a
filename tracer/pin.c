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
 * (a fork: multiprocessing, a shell's pipeline), or keeps waiting for its
 * CPU while other work runs there (tracer_pin_watch: several runs pinned
 * to one CPU, a busy neighbour), every tracee and the main thread get the
 * original CPU set back, for the rest of the run (a session keeps the pin
 * through its interpreter's start, threads or not, until the driver's
 * ready line: output.c). A vfork
 * child keeps it (subprocess, posix_spawn, system(): its parent is
 * suspended until it execs, and then usually waits for it). What the code
 * sees: while pinned, sched_getaffinity() reports one CPU (numpy's BLAS
 * then uses one thread; os.cpu_count() still counts them all); the run's
 * "cpu-pin" layer records it (tracer_pin_record).
 */
#include "tracer-int.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include "../common/log.h"

int tracer_pin_start(struct tracer *t)
{
	cpu_set_t one;

	atomic_store(&t->pinned, false);
	t->main_tid = gettid();
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
	atomic_store(&t->pinned, true);
	t->pin_begin_ns = tracer_now_ns();
	debug("pinned to CPU %d with the code", t->pin_cpu);
	return 0;
}

/* The CPUs are set on the attr, not on the thread once created: a thread
 * that is already gone has no tid to name. */
int tracer_thread_start(struct tracer *t, pthread_t *th, void *(*fn)(void *))
{
	cpu_set_t rest = t->cpus;
	pthread_attr_t attr;
	int rc = pthread_attr_init(&attr);

	if (rc != 0)
		return -rc;
	if (atomic_load(&t->pinned)) {
		CPU_CLR(t->pin_cpu, &rest);
		if (CPU_COUNT(&rest) == 0)
			rest = t->cpus;
		pthread_attr_setaffinity_np(&attr, sizeof(rest), &rest);
	}
	rc = pthread_create(th, &attr, fn, t);
	pthread_attr_destroy(&attr);
	return -rc;
}

/* Main or output thread, once. */
void tracer_unpin(struct tracer *t, const char *why)
{
	if (!atomic_exchange(&t->pinned, false))
		return;
	atomic_store(&t->unpinned, true);
	t->pin_end_ns = tracer_now_ns();
	t->unpin_why = why ? why : "the run ended";
	debug("unpinned: %s", t->unpin_why);
	sched_setaffinity(t->main_tid, sizeof(t->cpus), &t->cpus);
	pthread_mutex_lock(&t->lock);
	for (int b = 0; b < TRACEE_BUCKETS; b++)
		for (struct tracee *x = t->tab[b]; x; x = x->next)
			sched_setaffinity(x->tid, sizeof(t->cpus), &t->cpus);
	pthread_mutex_unlock(&t->lock);
}

void tracer_pin_record(struct tracer *t)
{
	char d[200];

	if (!t->unpin_why)
		return;
	snprintf(d, sizeof(d),
		 "CPU %d shared with the supervisor for %lld ms, "
		 "until %s",
		 t->pin_cpu, (t->pin_end_ns - t->pin_begin_ns) / 1000000,
		 t->unpin_why);
	tracer_layer_add(t->res, "cpu-pin", true, d);
}

void tracer_pin_follow(struct tracer *t, pid_t tid)
{
	if (atomic_load(&t->unpinned))
		sched_setaffinity(tid, sizeof(t->cpus), &t->cpus);
}

/*
 * Pinned, the code cannot move to an idle CPU when other work (another
 * run pinned to the same CPU, anything else) takes its turn. The run
 * queue delay of the code's first process (/proc/PID/schedstat, field 2)
 * says how long it waited for its CPU: more than a quarter of the time,
 * twice in a row (~0.1 s: not a passing burst of kernel work), and the
 * pin costs more than its cheaper traps save. (Taking turns with ward's
 * own thread costs the code a few us a trap: 0-6% in file churn here.)
 */
enum { PIN_WAIT_PERCENT = 25, PIN_WATCH_MS = 40 };

void tracer_pin_watch(struct tracer *t)
{
	char buf[128];
	unsigned long long wait = 0;
	long long now = tracer_now_ns();
	pid_t root = t->root;

	if (!atomic_load(&t->pinned) || root <= 0 ||
	    now - t->pin_seen_ns < PIN_WATCH_MS * 1000000LL)
		return;
	if (proc_read(root, "schedstat", buf, sizeof(buf)) <= 0 ||
	    sscanf(buf, "%*u %llu", &wait) != 1)
		return;
	bool busy = t->pin_seen_ns > 0 &&
		    ((long long)wait - t->pin_seen_wait) * 100 >
			    (now - t->pin_seen_ns) * PIN_WAIT_PERCENT;
	if (busy && t->pin_busy)
		tracer_unpin(t, "the code waited for its CPU (other work on "
				"it)");
	t->pin_busy = busy;
	t->pin_seen_ns = now;
	t->pin_seen_wait = (long long)wait;
}
