/*
 * start.c - ward's side of starting the child: the spawn area, the spawner
 * thread, and a clone that shares ward's memory.
 *
 * fork() copies ward's page tables, and until the child execs every page
 * either side writes first is copied again, one fault at a time. On the
 * VMs ward is measured on a fault costs ~13 us and a fork of ward ~1 ms
 * (the run's init, and the code's process forked from it: two), so the
 * run's start paid for ward's memory twice over. The child is now made
 * with CLONE_VM, as posix_spawn does: no copy at all. It runs on a stack
 * of its own in the spawn area (below), and the code's process, which the
 * init makes with CLONE_VM | CLONE_VFORK (ns.c), on another; each stack
 * has a guard page beneath, so an overflow kills the child instead of
 * writing into ward.
 *
 * What sharing ward's memory asks of the child side (spawn.c, ns.c,
 * landlock.c's tracer_landlock_build): it writes nothing of ward's but the
 * spawn_ctx in the area and its own stacks (the rule it already kept for
 * fork: no allocation, no stdio, no glibc call that acts on all threads,
 * no locks), and it does not run on the TLS of a thread of ward's that
 * reads errno. A clone child keeps the thread pointer of the thread that
 * cloned it, and glibc's wrappers write errno there: the clone is made by
 * the spawner, a thread of ward's that does nothing else and never reads
 * errno once the child exists. It lives until the run's end
 * (tracer_start_end), and the init has PR_SET_PDEATHSIG SIGKILL on it: the
 * init still dies with ward, however ward ends.
 *
 * The area is unmapped once no task can run on its stacks: the init and
 * the code's process are ward's children or tracees, and the run's end
 * comes when waitpid has none left.
 */
#include "tracer-int.h"
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#include "../common/log.h"

/* The children's stacks: deep enough for the set-up's path buffers and
 * formatting, under a sanitizer too; only the pages touched are made. */
enum { SPAWN_STACK = 256 * 1024, SPAWN_GUARD = 4096 };

struct spawner {
	struct spawn_ctx *ctx;
	void *init_stack; /* top of the first child's stack */
	int flags;	  /* CLONE_NEW* asked for (the clone leaves NEWNET) */
	pid_t pid;	  /* the child, or -1 */
	int err;	  /* the clone's errno when pid < 0 */
	int ns_err;	  /* the namespaces' refusal (0: none) */
	sem_t done;	  /* pid, err and ns_err are set */
	int end_r;	  /* EOF here: the run is over, the thread ends */
};

/* The area's first pages: what the child side reads (the child writes
 * only ctx), and the spawner's state, which must outlive the call that
 * starts it. */
struct area_head {
	struct spawn_ctx ctx;
	struct spawner s;
};

/* The first child: the run's init (namespaces), or the code's process. */
SPAWN_SIDE static int child_main(void *arg)
{
	struct spawn_ctx *c = arg;

	/* Die with the spawner (it lives to the end of the run); the
	 * code's processes have EXITKILL. */
	if (c->f.ns_flags)
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	close(c->sync_w);
	spawn_child(c);
}

static pid_t clone_child(struct spawner *s, int flags)
{
	s->ctx->f.ns_flags = flags;
	return clone(child_main, s->init_stack,
		     CLONE_VM | (flags & ~CLONE_NEWNET) | SIGCHLD, s->ctx);
}

static void *spawner_main(void *arg)
{
	struct spawner *s = arg;
	pid_t pid = -1;
	char c;

	if (s->flags) {
		pid = clone_child(s, s->flags);
		if (pid < 0)
			s->ns_err = errno; /* no child: errno is ours */
	}
	if (pid < 0) {
		pid = clone_child(s, 0);
		s->err = pid < 0 ? errno : 0;
	}
	s->pid = pid;
	sem_post(&s->done);
	/* From here this thread's errno is also the child's to write: read
	 * nothing of it. EOF ends it (an error, with signals blocked, can
	 * only be passing). */
	while (read(s->end_r, &c, 1) < 0)
		;
	return NULL;
}

/* The area: its head, then each stack above a guard page. */
static struct area_head *area_map(struct tracer *t)
{
	size_t head = (sizeof(struct area_head) + 4095) & ~(size_t)4095;
	size_t len = head + 2 * (SPAWN_GUARD + SPAWN_STACK);
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (m == MAP_FAILED)
		return NULL;
	t->spawn.area = m;
	t->spawn.len = len;
	char *g1 = m + head, *g2 = g1 + SPAWN_GUARD + SPAWN_STACK;
	if (mprotect(g1, SPAWN_GUARD, PROT_NONE) < 0 ||
	    mprotect(g2, SPAWN_GUARD, PROT_NONE) < 0)
		return NULL; /* unmapped by tracer_start_end */
	struct area_head *h = (struct area_head *)m;
	h->s.ctx = &h->ctx;
	h->s.init_stack = g2; /* the first stack's top */
	h->ctx.code_stack = m + len;
	return h;
}

int tracer_spawn_proxy_fd(const struct tracer *t)
{
	const struct area_head *h = t->spawn.area;

	return h ? h->ctx.proxy_fd : -1;
}

pid_t tracer_start_child(struct tracer *t, const struct sock_fprog *filter,
			 const struct spawn_fds *f, int sync_w)
{
	struct area_head *h = area_map(t);
	int end[2], rc, want = tracer_ns_plan(t);

	if (!h)
		return -errno;
	struct spawner *s = &h->s;
	h->ctx.o = t->o;
	h->ctx.filter = filter;
	h->ctx.f = *f;
	h->ctx.f.ns_uid = geteuid(); /* mapped to themselves (ns.c) */
	h->ctx.f.ns_gid = getegid();
	h->ctx.f.proxy = policy_net_proxy(t->o->policy);
	h->ctx.proxy_fd = -1;
	h->ctx.sync_w = sync_w;
	if (pipe2(end, O_CLOEXEC) < 0)
		return -errno;
	t->spawn.end_r = end[0];
	t->spawn.end_w = end[1];
	s->flags = want;
	s->end_r = end[0];
	s->pid = -1;
	if (sem_init(&s->done, 0, 0) < 0)
		return -errno;
	/* Default attributes but the stack's size: the child inherits the
	 * spawner's CPU set (ward's: pinned, it shares ward's CPU) and its
	 * signal mask (the child sets its own). */
	pthread_attr_t attr;
	rc = -pthread_attr_init(&attr);
	if (rc == 0) {
		pthread_attr_setstacksize(&attr, 256 * 1024);
		rc = -pthread_create(&t->spawn.thread, &attr, spawner_main, s);
		pthread_attr_destroy(&attr);
	}
	if (rc < 0)
		return rc;
	t->spawn.started = true;
	while (sem_wait(&s->done) < 0 && errno == EINTR)
		;
	if (s->pid < 0) {
		tracer_ns_record(t, 0, s->ns_err);
		return -s->err;
	}
	if (s->ns_err) {
		if (!tracer_requires(t->o, "namespaces")) /* else refused */
			warn("namespaces are not available (clone: %s): the "
			     "run goes on without them",
			     strerror(s->ns_err));
		tracer_ns_record(t, 0, s->ns_err);
		return s->pid;
	}
	t->ns.flags = want;
	t->ns.init = s->pid;
	/* our unreaped child: the pid cannot name another process; under
	 * the lock tracer_stop reads it with (record thread) */
	int fd = (int)syscall(SYS_pidfd_open, s->pid, 0);
	pthread_mutex_lock(&t->lock);
	t->ns.init_fd = fd;
	pthread_mutex_unlock(&t->lock);
	tracer_ns_record(t, want, 0);
	return s->pid;
}

static void close_end(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void tracer_start_end(struct tracer *t)
{
	if (t->spawn.started) {
		/* No child of ward's is left (the run's loop saw ECHILD, or a
		 * refused start reaped them all): nothing runs on the
		 * stacks, and the init's death signal has no one to kill. */
		close_end(&t->spawn.end_w);
		pthread_join(t->spawn.thread, NULL);
		t->spawn.started = false;
	}
	close_end(&t->spawn.end_w);
	close_end(&t->spawn.end_r);
	if (t->spawn.area) {
#if defined(__SANITIZE_ADDRESS__)
		/* what a child's instrumented callee left poisoned there */
		__asan_unpoison_memory_region(t->spawn.area, t->spawn.len);
#endif
		munmap(t->spawn.area, t->spawn.len);
		t->spawn.area = NULL;
	}
}
