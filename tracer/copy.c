/*
 * copy.c - checked arguments copied where the code cannot change them.
 *
 * A supervisor that reads a path from the tracee's memory, decides, and
 * lets the kernel read the same memory again loses to a sibling thread
 * (or another process sharing the page) that rewrites the string between
 * the two reads. So the kernel never reads the code's memory for an
 * argument ward decided on: the decoders keep the bytes they judged
 * (struct argcopy), and an allowed syscall gets them from a scratch area
 * in its own address space that the code cannot write:
 *
 *   - the area is an anonymous private mapping made PROT_READ and sealed
 *     with mseal(2) (no mprotect, munmap, mremap or MAP_FIXED over it);
 *   - ward writes it through /proc/PID/mem, which writes read-only
 *     private pages for a tracer; the code cannot do the same, because
 *     opening a /proc/PID/mem file is in ward's floor (policy/check.c)
 *     and process_vm_writev and ptrace kill;
 *   - each syscall in flight holds a slot; its argument registers point
 *     into the slot until its exit stop, where they are restored (the
 *     code's compiled wrappers expect them unchanged) and the slot freed.
 *
 * The area is made in each new address space, the first time one of its
 * syscalls needs copies: ward turns that stopped syscall into mmap, then
 * (at the next stop) into mseal, and after each rewinds the instruction
 * pointer so that the code's own syscall runs again and stops again,
 * now with an area. Threads share their process's area; a child made with
 * CLONE_VM (vfork, posix_spawn) shares its parent's, found with kcmp(2).
 *
 * sendmmsg could not work on a read-only copy: the kernel writes each
 * message's msg_len back into the array. ward sends the first message as
 * a sendmsg from the copy and writes msg_len into the code's array itself
 * (sendmmsg may always send fewer messages than asked).
 */
#include "tracer-int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../common/log.h"

#ifndef __NR_openat2
#define __NR_openat2 437
#endif
#ifndef __NR_mseal
#define __NR_mseal 462 /* Linux 6.10 */
#endif

#define AREA ((uint64_t)COPY_SLOT * COPY_SLOTS)

void copy_reset(struct argcopy *c)
{
	c->used = 0;
	c->nregs = 0;
	c->nrelocs = 0;
	c->nr = -1;
	c->mmsg = 0;
	c->in_place = false;
	c->pieces_arg = -1;
	c->npieces = 0;
}

long copy_put(struct argcopy *c, const void *data, size_t len, size_t align)
{
	size_t at = (c->used + align - 1) & ~(align - 1);

	if (at > COPY_SLOT || len > COPY_SLOT - at)
		return -E2BIG;
	memcpy(c->buf + at, data, len);
	c->used = at + len;
	return (long)at;
}

static void set_reg(struct argcopy *c, int arg, bool mem, uint64_t val,
		    size_t src_len)
{
	int i;

	for (i = 0; i < c->nregs; i++)
		if (c->regs[i].arg == arg)
			break;
	if (i == c->nregs) {
		if (c->nregs == 6)
			return; /* six registers: cannot happen twice each */
		c->nregs++;
	}
	c->regs[i].arg = arg;
	c->regs[i].mem = mem;
	c->regs[i].val = val;
	c->regs[i].src_len = (uint32_t)src_len;
}

static int put_arg(struct argcopy *c, int arg, const void *data, size_t len,
		   size_t src_len)
{
	long at = copy_put(c, data, len, 8);

	if (at < 0)
		return (int)at;
	set_reg(c, arg, true, (uint64_t)at, src_len);
	return 0;
}

int copy_arg(struct argcopy *c, int arg, const void *data, size_t len)
{
	return put_arg(c, arg, data, len, 0);
}

int copy_arg_src(struct argcopy *c, int arg, const void *data, size_t len)
{
	return put_arg(c, arg, data, len, len);
}

void copy_arg_at(struct argcopy *c, int arg, uint64_t off)
{
	set_reg(c, arg, true, off, 0);
}

int copy_piece(struct argcopy *c, uint64_t addr, uint64_t len)
{
	if (c->npieces == COPY_RELOCS)
		return -E2BIG;
	c->piece[c->npieces].addr = addr;
	c->piece[c->npieces].len = len;
	c->npieces++;
	return 0;
}

void copy_arg_at_pieces(struct argcopy *c, int arg, uint64_t off)
{
	set_reg(c, arg, true, off, 0);
	c->pieces_arg = arg;
}

void copy_arg_at_src(struct argcopy *c, int arg, uint64_t off, size_t len)
{
	set_reg(c, arg, true, off, len);
}

void copy_arg_val(struct argcopy *c, int arg, uint64_t val)
{
	set_reg(c, arg, false, val, 0);
}

int copy_reloc(struct argcopy *c, size_t at)
{
	if (c->nrelocs == COPY_RELOCS || at + 8 > c->used)
		return -E2BIG;
	c->reloc[c->nrelocs++] = (uint32_t)at;
	return 0;
}

/* ---- address spaces ---- */

static struct space *space_new(void)
{
	struct space *sp = calloc(1, sizeof(*sp));

	if (sp) {
		sp->refs = 1;
		sp->mem_fd = -1;
		sp->maps_fd = -1;
		sp->fd_dir = -1;
	}
	return sp;
}

static struct space *space_get(struct space *sp)
{
	sp->refs++;
	return sp;
}

static void space_put(struct space *sp)
{
	if (!sp || --sp->refs > 0)
		return;
	if (sp->mem_fd >= 0)
		close(sp->mem_fd);
	if (sp->maps_fd >= 0)
		close(sp->maps_fd);
	if (sp->fd_dir >= 0)
		close(sp->fd_dir);
	free(sp);
}

static bool same_vm(pid_t a, pid_t b)
{
	return syscall(SYS_kcmp, a, b, KCMP_VM, 0, 0) == 0;
}

/* The tracee's address space: its process's (threads share the leader's),
 * its parent's when they share memory (vfork), else a new one. */
static struct space *space_of(struct tracer *t, struct tracee *tc)
{
	struct tracee *leader = NULL;

	if (tc->sp)
		return tc->sp;
	if (tc->tgid != tc->tid)
		leader = tracee_find(t, tc->tgid);
	if (leader && leader->sp) {
		tc->sp = space_get(leader->sp);
		return tc->sp;
	}
	if (tc->tgid == tc->tid && tc->ppid > 0) {
		struct tracee *par = tracee_find(t, tc->ppid);
		if (par && par->sp && same_vm(tc->tid, par->tid)) {
			tc->sp = space_get(par->sp);
			return tc->sp;
		}
	}
	tc->sp = space_new();
	if (tc->sp && leader)
		leader->sp = space_get(tc->sp);
	return tc->sp;
}

int scratch_attach(struct tracer *t, struct tracee *tc)
{
	return space_of(t, tc) ? 0 : -ENOMEM;
}

void scratch_mark_async(struct tracee *tc)
{
	if (tc->sp)
		tc->sp->async = true;
}

void scratch_detach(struct tracee *tc)
{
	if (tc->sp && tc->slot >= 0)
		tc->sp->busy &= ~(1ull << tc->slot);
	tc->slot = -1;
	tc->inject = 0;
	tc->mmsg = 0;
	space_put(tc->sp);
	tc->sp = NULL;
}

/* ---- making the area ---- */

/* Run syscall nr with these arguments in place of the stopped one; its
 * exit stop comes to scratch_on_exit. */
static int inject(struct tracee *tc, long nr, uint64_t a0, uint64_t a1,
		  uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5)
{
	struct user_regs_struct r;

	if (ptrace(PTRACE_GETREGS, tc->tid, 0, &tc->saved) < 0)
		return -errno;
	r = tc->saved;
	r.orig_rax = (uint64_t)nr;
	r.rdi = a0;
	r.rsi = a1;
	r.rdx = a2;
	r.r10 = a3;
	r.r8 = a4;
	r.r9 = a5;
	if (ptrace(PTRACE_SETREGS, tc->tid, 0, &r) < 0 ||
	    ptrace(PTRACE_SYSCALL, tc->tid, 0, 0) < 0)
		return -errno;
	tc->inject = nr;
	return 1;
}

int scratch_prepare(struct tracer *t, struct tracee *tc)
{
	struct space *sp = space_of(t, tc);

	if (!sp)
		return -ENOMEM;
	if (sp->map_err) {
		/* The area could not be made (ENOMEM under the address-space
		 * limit): this syscall fails with that; the next one tries
		 * again. Never allowed without its copy. */
		int e = sp->map_err;
		sp->map_err = 0;
		return -e;
	}
	if (sp->base == 0)
		return inject(tc, __NR_mmap, 0, AREA, PROT_READ,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			      (uint64_t)-1, 0);
	if (!sp->seal_tried)
		return inject(tc, __NR_mseal, sp->base, AREA, 0, 0, 0, 0);
	return 0;
}

/* Whether this kernel seals memory: one page of ward's own, sealed. */
bool scratch_can_seal(void)
{
	static int known = -1;

	if (known < 0) {
		void *pg = mmap(NULL, 4096, PROT_READ,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		known = pg != MAP_FAILED &&
			syscall(__NR_mseal, pg, 4096, 0) == 0;
	}
	return known;
}

/* ---- arguments left in place ---- */

/*
 * Copies stop a sibling from rewriting an argument between ward's read
 * and the kernel's. When no sibling can exist, the copy is not needed and
 * neither is the exit stop that restores the registers (the dearest part
 * of a checked syscall). Nothing but the stopped thread can change a byte
 * of its memory while the syscall runs when:
 *
 *   - its address space has no other task (sp->refs == 1: every tracee
 *     holds its space from its first stop, threads and CLONE_VM children
 *     share their parent's; a new task stays stopped until ward has seen
 *     it, so the count is never low), or its only other task is the
 *     thread that vforked it (sp->refs == 2 and tracee.vfork_child: the
 *     flags seen at that thread's own clone stop, never guessed from
 *     /proc). That thread shares the memory but waits in the kernel,
 *     killable only, until this child execs or exits (its vfork_done is
 *     completed at nothing else), so it runs no code meanwhile: a vfork
 *     child's execve (Python's subprocess, posix_spawn) needs no copy;
 *   - the bytes lie in one private anonymous writable mapping (heap,
 *     stack, anonymous mmap), or in a private mapping of a file no process
 *     of the run can write (owned by root, writable by nobody else: ld.so's
 *     and a program's literal strings); not MAP_SHARED (another process
 *     may hold it), not of a file the code may write (a MAP_PRIVATE page
 *     not yet copied shows what others write to the file: escape R13),
 *     asked of the kernel with PROCMAP_QUERY (Linux 6.11) at each
 *     syscall, so no cached view of the mapping goes stale;
 *   - the kernel itself writes nothing there on the process's behalf:
 *     io_uring and userfaultfd kill, process_vm_writev and ptrace kill,
 *     /proc/PID/mem is refused (the floor), and an allowed io_setup (AIO
 *     completes later) marks the space for copies for good;
 *   - the signal handler case is already safe: a handler runs only when
 *     the thread returns to user space, and a restarted syscall stops at
 *     seccomp again and is decided again on what its memory then holds.
 *
 * An open in place has no exit stop where EMFILE could end the run: it is
 * left in place only while the highest descriptor the open-files limit
 * allows is free (descriptors are given lowest first, so the open cannot
 * fail for lack of one) and no fd table is shared across processes.
 */

#ifndef PROCMAP_QUERY
struct procmap_query {
	uint64_t size;
	uint64_t query_flags;
	uint64_t query_addr;
	uint64_t vma_start;
	uint64_t vma_end;
	uint64_t vma_flags;
	uint64_t vma_page_size;
	uint64_t vma_offset;
	uint64_t inode;
	uint32_t dev_major;
	uint32_t dev_minor;
	uint32_t vma_name_size;
	uint32_t build_id_size;
	uint64_t vma_name_addr;
	uint64_t build_id_addr;
};
#define PROCMAP_QUERY		   _IOWR('f', 17, struct procmap_query)
#define PROCMAP_QUERY_VMA_READABLE 0x01
#define PROCMAP_QUERY_VMA_WRITABLE 0x02
#define PROCMAP_QUERY_VMA_SHARED   0x08
#endif

static int maps_query(int fd, uint64_t addr, struct procmap_query *q)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->query_addr = addr;
	return ioctl(fd, PROCMAP_QUERY, q);
}

bool scratch_can_query(void)
{
	static int known = -1;

	if (known < 0) {
		struct procmap_query q;
		int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
		known = fd >= 0 &&
			maps_query(fd, (uint64_t)(uintptr_t)&q, &q) == 0;
		if (fd >= 0)
			close(fd);
	}
	return known;
}

static int proc_fd(int *fd, pid_t tid, const char *what, int flags)
{
	if (*fd < 0) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/%s", (int)tid, what);
		*fd = open(path, flags | O_CLOEXEC);
	}
	return *fd;
}

/*
 * The file behind q (a mapping of thread tid) is one no process of the run
 * can write: a regular file owned by root and writable by nobody else (the
 * code runs as another uid, without capabilities, and cannot chmod it).
 * Looked up through /proc/TID/map_files (root only: else never) and
 * checked to be the same file, at each use: a cached answer could outlive
 * the file, and its inode number be reused by one the code wrote.
 */
static bool file_fixed(pid_t tid, const struct procmap_query *q)
{
	char link[96];
	struct stat st;

	snprintf(link, sizeof(link), "/proc/%d/map_files/%llx-%llx", (int)tid,
		 (unsigned long long)q->vma_start,
		 (unsigned long long)q->vma_end);
	return stat(link, &st) == 0 &&
	       st.st_dev == makedev(q->dev_major, q->dev_minor) &&
	       st.st_ino == (ino_t)q->inode && S_ISREG(st.st_mode) &&
	       st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH));
}

/* len bytes at addr lie in one private mapping nothing but this thread
 * can change: anonymous and writable (heap, stack), or of a file the code
 * cannot write (file_fixed: ld.so's own strings, a program's literals).
 * vma (may be NULL): the mapping's bounds. */
static bool only_thread_can_change(struct space *sp, pid_t tid, uint64_t addr,
				   uint64_t len, uint64_t vma[2])
{
	const uint64_t rw = PROCMAP_QUERY_VMA_READABLE |
			    PROCMAP_QUERY_VMA_WRITABLE;
	struct procmap_query q;

	if (len == 0 || addr + len < addr ||
	    proc_fd(&sp->maps_fd, tid, "maps", O_RDONLY) < 0 ||
	    maps_query(sp->maps_fd, addr, &q) < 0)
		return false;
	if (!(q.vma_start <= addr && addr + len <= q.vma_end) ||
	    (q.vma_flags & PROCMAP_QUERY_VMA_SHARED) ||
	    !(q.vma_flags & PROCMAP_QUERY_VMA_READABLE))
		return false;
	if (vma) {
		vma[0] = q.vma_start;
		vma[1] = q.vma_end;
	}
	if (q.inode == 0 && q.dev_major == 0 && q.dev_minor == 0)
		return (q.vma_flags & rw) == rw;
	return q.inode != 0 && file_fixed(tid, &q);
}

/* Every piece of a rebuilt argument lies in such a mapping (one query per
 * mapping: the thread is stopped, the answer holds for this stop). */
static bool pieces_alone(const struct argcopy *c, struct space *sp, pid_t tid)
{
	uint64_t ok[2] = { 0, 0 }, vma[2];

	for (int i = 0; i < c->npieces; i++) {
		uint64_t a = c->piece[i].addr, n = c->piece[i].len;
		if (n && a >= ok[0] && a + n >= a && a + n <= ok[1])
			continue;
		if (!only_thread_can_change(sp, tid, a, n, vma))
			return false;
		ok[0] = vma[0];
		ok[1] = vma[1];
	}
	return true;
}

static bool is_open(long nr)
{
	return nr == __NR_open || nr == __NR_openat || nr == __NR_openat2 ||
	       nr == __NR_creat;
}

/* /proc/TID/fd of the space's one task, kept while it is that task. */
static int fd_dir(struct space *sp, pid_t tid)
{
	if (sp->fd_dir >= 0 && sp->fd_dir_tid != tid) {
		close(sp->fd_dir);
		sp->fd_dir = -1;
	}
	sp->fd_dir_tid = tid;
	return proc_fd(&sp->fd_dir, tid, "fd", O_PATH | O_DIRECTORY);
}

/* The descriptor the open-files limit allows last is in use by thread
 * tid (or cannot be checked): an open may fail with EMFILE. sp: the
 * thread's space when it is its one task (its /proc/TID/fd is kept
 * there), or NULL. */
static bool fds_may_be_full(struct tracer *t, struct space *sp, pid_t tid)
{
	char name[64];
	struct stat st;
	int dir;

	if (t->o->limits.nofile <= 0)
		return false;
	/* kcmp(KCMP_FILE) against a descriptor of ward's own that is open
	 * (wake_fd): EBADF means the code's is free. No path walk in /proc,
	 * which makes and frees a dentry each time: a third of ward's time
	 * per trap in file churn, pinned. ENOSYS (no kcmp), EPERM: /proc. */
	if (t->wake_fd >= 0) {
		long r = syscall(SYS_kcmp, tid, t->self_pid, KCMP_FILE,
				 (unsigned long)(t->o->limits.nofile - 1),
				 (unsigned long)t->wake_fd);
		if (r >= 0)
			return true;
		if (errno == EBADF)
			return false;
	}
	dir = sp ? fd_dir(sp, tid) : -1;
	if (dir >= 0)
		snprintf(name, sizeof(name), "%lld", t->o->limits.nofile - 1);
	else
		snprintf(name, sizeof(name), "/proc/%d/fd/%lld", (int)tid,
			 t->o->limits.nofile - 1);
	return fstatat(dir >= 0 ? dir : AT_FDCWD, name, &st,
		       AT_SYMLINK_NOFOLLOW) == 0 ||
	       errno != ENOENT;
}

bool scratch_in_place(struct tracer *t, struct tracee *tc, long nr)
{
	const struct argcopy *c = &t->cp;
	struct space *sp = tc->sp;

	if (!t->copy_private || !sp || (c->nrelocs && c->pieces_arg < 0) ||
	    c->nr >= 0 || c->mmsg ||
	    !(sp->refs == 1 || (sp->refs == 2 && tc->vfork_child)) || sp->async)
		return false;
	for (int i = 0; i < c->nregs; i++) {
		uint64_t code = c->args[c->regs[i].arg];
		if (!c->regs[i].mem) {
			if (c->regs[i].val != code)
				return false;
		} else if (c->regs[i].arg == c->pieces_arg) {
			if (!pieces_alone(c, sp, tc->tid))
				return false;
		} else if (!c->regs[i].src_len ||
			   !only_thread_can_change(sp, tc->tid, code,
						   c->regs[i].src_len, NULL)) {
			return false;
		}
	}
	if (is_open(nr) && (t->files_shared || fds_may_be_full(t, sp, tc->tid)))
		return false;
	return true;
}

/* ---- using it ---- */

static uint64_t *arg_reg(struct user_regs_struct *r, int arg)
{
	switch (arg) {
	case 0: return (uint64_t *)&r->rdi;
	case 1: return (uint64_t *)&r->rsi;
	case 2: return (uint64_t *)&r->rdx;
	case 3: return (uint64_t *)&r->r10;
	case 4: return (uint64_t *)&r->r8;
	default: return (uint64_t *)&r->r9;
	}
}

static int mem_write(struct space *sp, pid_t tid, const void *buf, size_t len,
		     uint64_t addr)
{
	ssize_t w;

	if (sp->mem_fd < 0) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/mem", (int)tid);
		sp->mem_fd = open(path, O_RDWR | O_CLOEXEC);
		if (sp->mem_fd < 0)
			return -errno;
	}
	w = pwrite(sp->mem_fd, buf, len, (off_t)addr);
	if (w < 0)
		return -errno;
	return (size_t)w == len ? 0 : -EFAULT;
}

int scratch_apply(struct tracer *t, struct tracee *tc)
{
	struct argcopy *c = &t->cp;
	struct space *sp = tc->sp;
	struct user_regs_struct r;
	uint64_t addr;
	int slot, rc;

	if (c->nregs == 0 && c->nr < 0)
		return 0;
	if (c->in_place) {
		t->n_in_place++;
		return 0;
	}
	if (!sp || !sp->base)
		return -EFAULT; /* scratch_prepare ran first: a bug */
	if (!sp->sealed && !t->copy_warned) {
		t->copy_warned = true;
		warn("this kernel cannot seal memory (mseal, Linux 6.10): the "
		     "argument copies are read-only but not sealed");
	}
	if (~sp->busy == 0)
		return -EAGAIN;
	slot = __builtin_ctzll(~sp->busy);
	addr = sp->base + (uint64_t)slot * COPY_SLOT;
	for (int i = 0; i < c->nrelocs; i++) {
		uint64_t v;
		memcpy(&v, c->buf + c->reloc[i], 8);
		v += addr;
		memcpy(c->buf + c->reloc[i], &v, 8);
	}
	if (c->used > 0) {
		rc = mem_write(sp, tc->tid, c->buf, c->used, addr);
		if (rc < 0)
			return rc;
	}
	if (ptrace(PTRACE_GETREGS, tc->tid, 0, &tc->saved) < 0)
		return -errno;
	r = tc->saved;
	for (int i = 0; i < c->nregs; i++)
		*arg_reg(&r, c->regs[i].arg) =
			c->regs[i].mem ? addr + c->regs[i].val : c->regs[i].val;
	if (c->nr >= 0)
		r.orig_rax = (uint64_t)c->nr;
	if (ptrace(PTRACE_SETREGS, tc->tid, 0, &r) < 0)
		return -errno;
	sp->busy |= 1ull << slot;
	t->n_copied++;
	tc->slot = slot;
	tc->mmsg = c->mmsg;
	return 1;
}

/* The injected mmap or mseal returned: note it, then rewind so that the
 * code's own syscall runs again. */
static void injected(struct tracee *tc, struct user_regs_struct *r)
{
	struct space *sp = tc->sp;
	long rv = (long)r->rax;

	if (sp && tc->inject == __NR_mmap) {
		if (rv < 0 && rv > -4096) {
			debug("[%d] scratch area: mmap failed: %s", tc->serial,
			      strerror((int)-rv));
			sp->map_err = (int)-rv;
		} else if (!sp->base)
			sp->base = (uint64_t)rv;
	} else if (sp) {
		sp->seal_tried = true;
		sp->sealed = rv == 0;
	}
	*r = tc->saved;
	r->rip -= 2; /* the syscall instruction */
	r->rax = tc->saved.orig_rax;
	tc->inject = 0;
}

int scratch_on_exit(struct tracer *t, struct tracee *tc, long long *ret)
{
	struct user_regs_struct r;

	if (ptrace(PTRACE_GETREGS, tc->tid, 0, &r) < 0)
		return -1; /* gone */
	if (tc->inject) {
		injected(tc, &r);
		ptrace(PTRACE_SETREGS, tc->tid, 0, &r);
		return 0;
	}
	if (tc->slot >= 0) {
		long nr = (long)tc->saved.orig_rax;
		if ((long)r.rax == -EMFILE && is_open(nr) &&
		    fds_may_be_full(t, NULL, tc->tid)) {
			/* The open-files limit ends the run like the other
			 * limits, with its cause (not a lower limit the code
			 * set itself: its own business). */
			char cause[128];
			snprintf(
				cause, sizeof(cause),
				"open files limit of %lld reached (%s returned "
				"EMFILE)",
				t->o->limits.nofile,
				nr == __NR_openat ? "openat" : "open");
			tracer_stop(t, STOP_LIMIT, cause);
		}
		for (int i = 0; i < 6; i++)
			*arg_reg(&r, i) = *arg_reg(&tc->saved, i);
		r.orig_rax = tc->saved.orig_rax; /* a restart runs the
						  * code's syscall */
		if (tc->mmsg && (long)r.rax >= 0) {
			uint32_t len = (uint32_t)r.rax;
			/* msg_len follows the 56-byte msghdr */
			r.rax = mem_write(tc->sp, tc->tid, &len, sizeof(len),
					  tc->mmsg + 56) == 0
					? 1
					: (uint64_t)-EFAULT;
		}
		if (tc->sp)
			tc->sp->busy &= ~(1ull << tc->slot);
		tc->slot = -1;
		tc->mmsg = 0;
		ptrace(PTRACE_SETREGS, tc->tid, 0, &r);
	}
	*ret = (long long)r.rax;
	return 1;
}
