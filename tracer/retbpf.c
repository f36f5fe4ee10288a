/*
 * retbpf.c - the kernel's result of an allowed call without a second stop.
 *
 * An allowed trapped call's row waits for what the call returned
 * (events.result, evq.c). A syscall-exit stop tells it, but costs a second
 * round trip through ward per call (on a VM, waking ward's CPU again: as
 * much as the first stop). Where the kernel offers it, ward reads the
 * result from the kernel instead: a small BPF program on the sys_exit raw
 * tracepoint, loaded for this run, that keeps only exits of threads in the
 * run's own pid namespace (its device and inode are constants of the
 * program) and of the syscalls that can stop at ward, and appends (tid,
 * nr, return value) to a ring buffer that ward maps read-only. The thread goes on at once; the
 * record is read at ward's next look (the thread's next stop, the output
 * thread's next tick, before a denial or a cell's result is written), and
 * the held row is queued with it.
 *
 * It needs CAP_BPF and CAP_PERFMON (root), a pid namespace of the run's
 * own and Linux 5.8 (ring buffers); without any of them, or when loading
 * fails, every allowed call takes its exit stop (loop.c) and nothing else
 * changes. The program reads nothing of the code's: the task's pid
 * namespace, the syscall number from the kernel's saved registers, the
 * tid and the return value. It runs for every syscall exit on the machine
 * while the run lasts (a namespace compare and out for every other task),
 * and is detached when its fd is closed at the run's end.
 */
#include "tracer-int.h"

#include <errno.h>
#include <linux/bpf.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/log.h"

#define RB_SIZE (256 * 1024) /* ~10,000 records between two looks */

/* One exit, as the program writes it. */
struct rb_rec {
	uint32_t tid;
	uint32_t nr;
	int64_t ret;
	uint64_t ts; /* CLOCK_MONOTONIC, ns */
};

struct retbpf {
	int bits_fd, ring_fd, prog_fd, link_fd;
	uint8_t bits[64]; /* syscalls 0..511 whose exits are recorded */
	void *cons;	  /* consumer position page (read-write) */
	void *prod;	  /* producer position page, then the data twice */
	size_t page;
	pthread_mutex_t lock; /* one reader at a time */
	long long seen;	      /* records read */
};

static long sys_bpf(int cmd, union bpf_attr *a)
{
	return syscall(SYS_bpf, cmd, a, sizeof(*a));
}

static struct bpf_insn ins(uint8_t code, uint8_t dst, uint8_t src, int16_t off,
			   int32_t imm)
{
	return (struct bpf_insn){ .code = code,
				  .dst_reg = dst,
				  .src_reg = src,
				  .off = off,
				  .imm = imm };
}

#define MOVX(d, s)	 ins(BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)
#define MOVK(d, k)	 ins(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, k)
#define ADDK(d, k)	 ins(BPF_ALU64 | BPF_ADD | BPF_K, d, 0, 0, k)
#define ADDX(d, s)	 ins(BPF_ALU64 | BPF_ADD | BPF_X, d, s, 0, 0)
#define RSHK(d, k)	 ins(BPF_ALU64 | BPF_RSH | BPF_K, d, 0, 0, k)
#define RSHX(d, s)	 ins(BPF_ALU64 | BPF_RSH | BPF_X, d, s, 0, 0)
#define ANDK(d, k)	 ins(BPF_ALU64 | BPF_AND | BPF_K, d, 0, 0, k)
#define LDX(sz, d, s, o) ins(BPF_LDX | BPF_MEM | (sz), d, s, o, 0)
#define STX(sz, d, s, o) ins(BPF_STX | BPF_MEM | (sz), d, s, o, 0)
#define STK(sz, d, o, k) ins(BPF_ST | BPF_MEM | (sz), d, 0, o, k)
#define CALL(f)		 ins(BPF_JMP | BPF_CALL, 0, 0, 0, f)
#define EXIT()		 ins(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)
#define JX(op, d, s, o)	 ins(BPF_JMP | (op) | BPF_X, d, s, o, 0)
#define JK(op, d, k, o)	 ins(BPF_JMP | (op) | BPF_K, d, 0, o, k)

/* struct pt_regs: orig_ax, the syscall number (x86-64) */
#define PT_REGS_ORIG_AX 120

/* The program; "out" is its last two instructions. */
static int program(struct bpf_insn *p, uint64_t dev, uint64_t ino, int bits_fd,
		   int ring_fd)
{
	int n = 0, out;
#define J(x) (p[n++] = (x))
	J(MOVX(6, 1)); /* r6 = ctx */
	J(ins(BPF_LD | BPF_DW | BPF_IMM, 1, 0, 0, (int32_t)(uint32_t)dev));
	J(ins(0, 0, 0, 0, (int32_t)(uint32_t)(dev >> 32)));
	J(ins(BPF_LD | BPF_DW | BPF_IMM, 2, 0, 0, (int32_t)(uint32_t)ino));
	J(ins(0, 0, 0, 0, (int32_t)(uint32_t)(ino >> 32)));
	J(MOVX(3, 10));
	J(ADDK(3, -48)); /* struct bpf_pidns_info */
	J(MOVK(4, 8));
	J(CALL(BPF_FUNC_get_ns_current_pid_tgid));
	J(JK(BPF_JNE, 0, 0, 0)); /* not in the run's namespace: out */
	int j_cg = n - 1;
	J(LDX(BPF_DW, 3, 6, 0)); /* r3 = args[0]: struct pt_regs * */
	J(ADDK(3, PT_REGS_ORIG_AX));
	J(MOVX(1, 10));
	J(ADDK(1, -8));
	J(MOVK(2, 8));
	J(CALL(BPF_FUNC_probe_read_kernel)); /* fp[-8] = orig_ax */
	J(JK(BPF_JNE, 0, 0, 0));
	int j_rd = n - 1;
	J(LDX(BPF_DW, 7, 10, -8)); /* r7 = nr */
	J(JK(BPF_JGT, 7, 511, 0));
	int j_nr = n - 1;
	J(STK(BPF_W, 10, -12, 0)); /* key 0 */
	J(ins(BPF_LD | BPF_DW | BPF_IMM, 1, BPF_PSEUDO_MAP_FD, 0, bits_fd));
	J(ins(0, 0, 0, 0, 0));
	J(MOVX(2, 10));
	J(ADDK(2, -12));
	J(CALL(BPF_FUNC_map_lookup_elem));
	J(JK(BPF_JEQ, 0, 0, 0));
	int j_map = n - 1;
	J(MOVX(1, 7));
	J(RSHK(1, 3));
	J(ADDX(0, 1));
	J(LDX(BPF_B, 1, 0, 0)); /* r1 = bits[nr / 8] */
	J(MOVX(2, 7));
	J(ANDK(2, 7));
	J(RSHX(1, 2));
	J(ANDK(1, 1));
	J(JK(BPF_JEQ, 1, 0, 0)); /* not a syscall that stops at ward */
	int j_bit = n - 1;
	J(CALL(BPF_FUNC_get_current_pid_tgid));
	J(STX(BPF_W, 10, 0, -40)); /* tid: the low half */
	J(STX(BPF_W, 10, 7, -36)); /* nr */
	J(LDX(BPF_DW, 1, 6, 8));   /* args[1]: the return value */
	J(STX(BPF_DW, 10, 1, -32));
	J(CALL(BPF_FUNC_ktime_get_ns)); /* when: CLOCK_MONOTONIC */
	J(STX(BPF_DW, 10, 0, -24));
	J(ins(BPF_LD | BPF_DW | BPF_IMM, 1, BPF_PSEUDO_MAP_FD, 0, ring_fd));
	J(ins(0, 0, 0, 0, 0));
	J(MOVX(2, 10));
	J(ADDK(2, -40));
	J(MOVK(3, (int32_t)sizeof(struct rb_rec)));
	J(MOVK(4, BPF_RB_NO_WAKEUP)); /* ward looks when it looks */
	J(CALL(BPF_FUNC_ringbuf_output));
	out = n;
	J(MOVK(0, 0));
	J(EXIT());
#undef J
	p[j_cg].off = (int16_t)(out - j_cg - 1);
	p[j_rd].off = (int16_t)(out - j_rd - 1);
	p[j_nr].off = (int16_t)(out - j_nr - 1);
	p[j_map].off = (int16_t)(out - j_map - 1);
	p[j_bit].off = (int16_t)(out - j_bit - 1);
	return n;
}

static void close_all(struct retbpf *rb)
{
	if (rb->cons)
		munmap(rb->cons, rb->page);
	if (rb->prod)
		munmap(rb->prod, rb->page + 2 * (size_t)RB_SIZE);
	if (rb->link_fd >= 0)
		close(rb->link_fd);
	if (rb->prog_fd >= 0)
		close(rb->prog_fd);
	if (rb->ring_fd >= 0)
		close(rb->ring_fd);
	if (rb->bits_fd >= 0)
		close(rb->bits_fd);
}

static int maps(struct retbpf *rb)
{
	union bpf_attr a;
	uint32_t key = 0;

	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_ARRAY;
	a.key_size = sizeof(uint32_t);
	a.value_size = sizeof(rb->bits);
	a.max_entries = 1;
	a.map_flags = BPF_F_RDONLY_PROG;
	rb->bits_fd = (int)sys_bpf(BPF_MAP_CREATE, &a);
	if (rb->bits_fd < 0)
		return -errno;
	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t)rb->bits_fd;
	a.key = (uint64_t)(uintptr_t)&key;
	a.value = (uint64_t)(uintptr_t)rb->bits;
	if (sys_bpf(BPF_MAP_UPDATE_ELEM, &a) < 0)
		return -errno;
	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_RINGBUF;
	a.max_entries = RB_SIZE;
	rb->ring_fd = (int)sys_bpf(BPF_MAP_CREATE, &a);
	if (rb->ring_fd < 0)
		return -errno;
	rb->page = (size_t)sysconf(_SC_PAGESIZE);
	rb->cons = mmap(NULL, rb->page, PROT_READ | PROT_WRITE, MAP_SHARED,
			rb->ring_fd, 0);
	if (rb->cons == MAP_FAILED) {
		rb->cons = NULL;
		return -errno;
	}
	rb->prod = mmap(NULL, rb->page + 2 * (size_t)RB_SIZE, PROT_READ,
			MAP_SHARED, rb->ring_fd, (off_t)rb->page);
	if (rb->prod == MAP_FAILED) {
		rb->prod = NULL;
		return -errno;
	}
	return 0;
}

static int load(struct retbpf *rb, uint64_t dev, uint64_t ino, char *why,
		size_t wn)
{
	struct bpf_insn prog[64];
	static char log[8192]; /* only when loading failed: main thread */
	union bpf_attr a;
	int n = program(prog, dev, ino, rb->bits_fd, rb->ring_fd);

	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT;
	a.insns = (uint64_t)(uintptr_t)prog;
	a.insn_cnt = (uint32_t)n;
	a.license = (uint64_t)(uintptr_t) "GPL"; /* probe_read_kernel */
	rb->prog_fd = (int)sys_bpf(BPF_PROG_LOAD, &a);
	if (rb->prog_fd < 0) {
		int err = errno;
		/* again, for the verifier's words */
		log[0] = '\0';
		a.log_buf = (uint64_t)(uintptr_t)log;
		a.log_size = sizeof(log);
		a.log_level = 1;
		int again = (int)sys_bpf(BPF_PROG_LOAD, &a);
		if (again >= 0) {
			close(again); /* (cannot happen) */
			log[0] = '\0';
		}
		/* the verifier's last line says why */
		char *last = log, *nl;
		while ((nl = strchr(last, '\n')) && nl[1])
			last = nl + 1;
		snprintf(why, wn, "loading the program: %s%s%.120s",
			 strerror(err), log[0] ? ": " : "", last);
		return -err;
	}
	memset(&a, 0, sizeof(a));
	a.raw_tracepoint.name = (uint64_t)(uintptr_t) "sys_exit";
	a.raw_tracepoint.prog_fd = (uint32_t)rb->prog_fd;
	rb->link_fd = (int)sys_bpf(BPF_RAW_TRACEPOINT_OPEN, &a);
	if (rb->link_fd < 0) {
		int err = errno;
		snprintf(why, wn, "attaching it to sys_exit: %s",
			 strerror(err));
		return -err;
	}
	return 0;
}

int retbpf_open(struct tracer *t, char *why, size_t wn)
{
	struct retbpf *rb;
	struct stat st;
	int rc;

	char ns[64];

	t->rb = NULL;
	if (!t->ns.init) {
		snprintf(why, wn, "the run has no pid namespace of its own");
		return -ENOTSUP;
	}
	snprintf(ns, sizeof(ns), "/proc/%d/ns/pid", (int)t->ns.init);
	if (stat(ns, &st) < 0) {
		int err = errno;
		snprintf(why, wn, "%s: %s", ns, strerror(err));
		return -err;
	}
	rb = calloc(1, sizeof(*rb));
	if (!rb) {
		snprintf(why, wn, "out of memory");
		return -ENOMEM;
	}
	rb->bits_fd = rb->ring_fd = rb->prog_fd = rb->link_fd = -1;
	pthread_mutex_init(&rb->lock, NULL);
	for (int nr = 0; nr < 512; nr++)
		if (tracer_result_by_bpf(nr))
			rb->bits[nr / 8] |= (uint8_t)(1u << (nr % 8));
	rc = maps(rb);
	if (rc < 0)
		snprintf(why, wn, "its maps: %s", strerror(-rc));
	else
		/* the kernel's own dev_t: major << 20 | minor */
		rc = load(rb,
			  (uint64_t)major(st.st_dev) << 20 | minor(st.st_dev),
			  (uint64_t)st.st_ino, why, wn);
	if (rc < 0) {
		close_all(rb);
		pthread_mutex_destroy(&rb->lock);
		free(rb);
		return rc;
	}
	t->rb = rb;
	return 0;
}

void retbpf_close(struct tracer *t)
{
	struct retbpf *rb = t->rb;

	if (!rb)
		return;
	t->rb = NULL;
	close_all(rb);
	pthread_mutex_destroy(&rb->lock);
	free(rb);
}

bool retbpf_covers(const struct tracer *t, long nr)
{
	const struct retbpf *rb = t->rb;

	return rb && nr >= 0 && nr < 512 && (rb->bits[nr / 8] >> (nr % 8)) & 1;
}

long long retbpf_drain(struct tracer *t)
{
	struct retbpf *rb = t->rb;
	long long n = 0;

	if (!rb)
		return 0;
	pthread_mutex_lock(&rb->lock);
	{
		_Atomic uint64_t *cp = rb->cons;
		_Atomic uint64_t *pp = rb->prod;
		const uint8_t *data = (const uint8_t *)rb->prod + rb->page;
		uint64_t cons = atomic_load_explicit(cp, memory_order_relaxed);
		uint64_t prod = atomic_load_explicit(pp, memory_order_acquire);

		while (cons < prod) {
			const _Atomic uint32_t *hdr =
				(const void *)(data + (cons & (RB_SIZE - 1)));
			uint32_t len =
				atomic_load_explicit(hdr, memory_order_acquire);
			if (len & BPF_RINGBUF_BUSY_BIT)
				break; /* still being written */
			if (!(len & BPF_RINGBUF_DISCARD_BIT) &&
			    (len & ~(BPF_RINGBUF_BUSY_BIT |
				     BPF_RINGBUF_DISCARD_BIT)) ==
				    sizeof(struct rb_rec)) {
				struct rb_rec r;
				memcpy(&r,
				       (const uint8_t *)hdr +
					       BPF_RINGBUF_HDR_SZ,
				       sizeof(r));
				evq_resolve_at(t, (pid_t)r.tid, (int)r.nr,
					       r.ret, (long long)r.ts);
				n++;
			}
			len &= ~(BPF_RINGBUF_BUSY_BIT |
				 BPF_RINGBUF_DISCARD_BIT);
			cons += (len + BPF_RINGBUF_HDR_SZ + 7) & ~7ull;
			atomic_store_explicit(cp, cons, memory_order_release);
		}
	}
	rb->seen += n;
	pthread_mutex_unlock(&rb->lock);
	return n;
}
