/*
 * filter.c - the seccomp-BPF program every process of the run carries.
 *
 * Two filters. The guard (raw BPF, loaded first) checks what libseccomp
 * 2.5 cannot express safely, on the low 32 bits of int arguments as the
 * kernel reads them (tables in common/floor.h): a foreign architecture or
 * an x32 number kills the process; prctl(PR_SET_SECCOMP) kills; clone with
 * CLONE_NEW* or CLONE_UNTRACED kills before it ever reaches a stop; a prctl
 * option off the allowlist, a personality other than PER_LINUX and
 * ioctl(TIOCSTI/TIOCLINUX) stop at ward (TRACE), whose policy denies them
 * with EPERM and records them (rule "floor.args", every profile). With no
 * tracer attached, TRACE fails the call: fail-closed. The kernel runs
 * every filter and the strictest action wins, so the guard's KILL and
 * TRACE beat the main filter's ALLOW.
 *
 * The main filter (libseccomp). Default action: TRACE (stop at ward), so a syscall nobody thought about
 * is decided and recorded, never silently allowed. On top:
 *   ALLOW        tracer_allow_list (no argument loads)
 *   KILL_PROCESS the kill floor (common/floor.h), other architectures
 *   ERRNO        clone3 -> ENOSYS (libc falls back to clone, whose flags
 *                ward can read)
 *   TRACE        the table in syscalls.c (stat family only if the policy
 *                asks), raw syscall rules of the policy
 * Its few argument rules only ever ALLOW on an exact 64-bit match, so junk
 * in the high bits of an int argument sends the call to ward (which reads
 * the low 32 bits) instead of past it.
 */
#include "tracer-int.h"
#include "../common/floor.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <linux/prctl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int add(scmp_filter_ctx ctx, uint32_t action, const char *name,
	       unsigned cnt, const struct scmp_arg_cmp *cmp, char *msg,
	       size_t n)
{
	int nr = seccomp_syscall_resolve_name(name);
	int rc;

	if (nr == __NR_SCMP_ERROR)
		return 0; /* not on this architecture */
	rc = seccomp_rule_add_array(ctx, action, nr, cnt, cmp);
	if (rc < 0 && rc != -EEXIST) {
		snprintf(msg, n, "seccomp rule for %s: %s", name,
			 strerror(-rc));
		return rc;
	}
	return 0;
}

#define ADD(act, name, ...)                                                    \
	do {                                                                   \
		const struct scmp_arg_cmp _c[] = { __VA_ARGS__ };              \
		rc = add(ctx, act, name, sizeof(_c) / sizeof(_c[0]), _c, msg,  \
			 n);                                                   \
		if (rc < 0)                                                    \
			goto fail;                                             \
	} while (0)
#define ADD0(act, name)                                                        \
	do {                                                                   \
		rc = add(ctx, act, name, 0, NULL, msg, n);                     \
		if (rc < 0)                                                    \
			goto fail;                                             \
	} while (0)

/* The program depends on the policy only through these: whether the stat
 * family stops at ward, and the syscalls its raw rules name. */
static int filter_ctx(bool stat, const bool ruled[1024], bool zyg,
		      scmp_filter_ctx *out, char *msg, size_t n)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRACE(0));
	int rc;

	if (!ctx) {
		snprintf(msg, n, "seccomp_init failed");
		return -ENOMEM;
	}
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH,
			      SCMP_ACT_KILL_PROCESS);
	if (rc < 0) {
		snprintf(msg, n, "seccomp bad-arch action: %s", strerror(-rc));
		goto fail;
	}
	/* A binary tree of syscall numbers instead of a chain of compares:
	 * loading the filter, the kernel runs it for every syscall number
	 * to find those it always allows (its action cache), which took
	 * ~0.5 ms of the code's start with the chain (~0.25 with the tree);
	 * a trapped call also reaches its action in fewer steps. */
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (rc < 0) {
		snprintf(msg, n, "seccomp binary-tree filter: %s",
			 strerror(-rc));
		goto fail;
	}

	/* The zygote template's variant (zygote.c): unshare and seccomp get
	 * the default, stopping at ward, which allows a fork's own set-up
	 * and kills the rest. */
	for (const char *const *f = ward_kill_floor; *f; f++)
		if (!zyg || (strcmp(*f, "unshare") && strcmp(*f, "seccomp")))
			ADD0(SCMP_ACT_KILL_PROCESS, *f);

	for (const char *const *a = tracer_allow_list; *a; a++) {
		int nr = seccomp_syscall_resolve_name(*a);
		if (nr >= 0 && nr < 1024 && ruled[nr])
			continue;
		ADD0(SCMP_ACT_ALLOW, *a);
	}
	if (!stat) {
		for (long nr = 0; nr < 1024; nr++) {
			const struct syscall_desc *d = tracer_syscall_desc(nr);
			if (d && d->trap == TRAP_STAT && !ruled[nr])
				ADD0(SCMP_ACT_ALLOW, d->name);
		}
	}

	ADD0(SCMP_ACT_ERRNO(ENOSYS), "clone3");
	/* prctl and ioctl: the guard sends the dangerous values to ward. */
	if (!ruled[__NR_prctl])
		ADD0(SCMP_ACT_ALLOW, "prctl");
	if (!ruled[__NR_ioctl])
		ADD0(SCMP_ACT_ALLOW, "ioctl");
	if (!ruled[__NR_sendto])
		ADD(SCMP_ACT_ALLOW, "sendto", SCMP_A4_64(SCMP_CMP_EQ, 0));
	if (!ruled[__NR_prlimit64])
		ADD(SCMP_ACT_ALLOW, "prlimit64", SCMP_A0_32(SCMP_CMP_EQ, 0));
	if (!ruled[__NR_sched_setaffinity])
		ADD(SCMP_ACT_ALLOW, "sched_setaffinity",
		    SCMP_A0_32(SCMP_CMP_EQ, 0));
	/* The guard sends personality other than PER_LINUX to ward. */
	if (!ruled[__NR_personality])
		ADD0(SCMP_ACT_ALLOW, "personality");
	/* Everything else in syscalls.c and the rest: the default, TRACE. */
	*out = ctx;
	return 0;
fail:
	seccomp_release(ctx);
	return rc < 0 ? rc : -EINVAL;
}

/*
 * The guard is built once, before main (a constructor: the child only
 * reads it after fork), from the tables of common/floor.h, so the kernel
 * and the policy check the same values. Jumps name labels; emit_done()
 * turns them into the offsets BPF wants. If the program did not fit, its
 * length stays 0 and loading it fails: the child never runs unguarded.
 */
enum {
	L_NEXT,
	L_ALLOW,
	L_TRACE,
	L_KILL,
	L_PRCTL,
	L_PERS,
	L_IOCTL,
	L_CLONE,
	L_COUNT
};
#define GUARD_MAX 96

static struct sock_filter guard[GUARD_MAX], guard_zyg[GUARD_MAX];
struct sock_fprog tracer_guard = { .len = 0, .filter = guard };
/* The zygote template's (tracer_opts.zygote_handoff_fd; zygote.c): the
 * same, except that prctl(PR_SET_SECCOMP) stops at ward (TRACE), whose
 * supervisor of a fork allows it once, for the fork's own filter. */
struct sock_fprog tracer_guard_zyg = { .len = 0, .filter = guard_zyg };

struct emitter {
	struct sock_filter *out;
	unsigned n;
	bool overflow;
	unsigned char jt[GUARD_MAX], jf[GUARD_MAX]; /* label ids, L_NEXT: 0 */
	int at[L_COUNT];			    /* label positions */
};

static void emit(struct emitter *e, unsigned short code, unsigned k,
		 unsigned char jt, unsigned char jf)
{
	if (e->n >= GUARD_MAX) {
		e->overflow = true;
		return;
	}
	e->out[e->n] = (struct sock_filter){ code, 0, 0, k };
	e->jt[e->n] = jt;
	e->jf[e->n] = jf;
	e->n++;
}

static void label(struct emitter *e, int l)
{
	e->at[l] = (int)e->n;
}

#define LOAD(e, off) emit(e, BPF_LD | BPF_W | BPF_ABS, (unsigned)(off), 0, 0)
#define RET(e, act)  emit(e, BPF_RET | BPF_K, (act), 0, 0)
/* if A == k goto l (else next) */
#define IFEQ(e, k, l) emit(e, BPF_JMP | BPF_JEQ | BPF_K, (unsigned)(k), l, 0)
/* the low 32 bits of argument i (little-endian x86-64) */
#define LO32(i) (offsetof(struct seccomp_data, args) + 8 * (i))

static int emit_done(struct emitter *e)
{
	for (unsigned i = 0; i < e->n && !e->overflow; i++) {
		int t = e->jt[i] ? e->at[e->jt[i]] - (int)i - 1 : 0;
		int f = e->jf[i] ? e->at[e->jf[i]] - (int)i - 1 : 0;
		if (t < 0 || t > 255 || f < 0 || f > 255)
			return -EINVAL;
		e->out[i].jt = (unsigned char)t;
		e->out[i].jf = (unsigned char)f;
	}
	return e->overflow ? -EINVAL : 0;
}

static void guard_emit(struct sock_fprog *prog, bool zyg)
{
	struct emitter e = { .out = prog->filter, .n = 0 };

	LOAD(&e, offsetof(struct seccomp_data, arch));
	emit(&e, BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, L_KILL);
	LOAD(&e, offsetof(struct seccomp_data, nr));
	emit(&e, BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, L_KILL, 0); /* x32 */
	IFEQ(&e, __NR_prctl, L_PRCTL);
	IFEQ(&e, __NR_personality, L_PERS);
	IFEQ(&e, __NR_ioctl, L_IOCTL);
	IFEQ(&e, __NR_clone, L_CLONE);
	RET(&e, SECCOMP_RET_ALLOW);

	/* A new filter from the code could hide its syscalls from ward. */
	label(&e, L_PRCTL);
	LOAD(&e, LO32(0));
	IFEQ(&e, PR_SET_SECCOMP, zyg ? L_TRACE : L_KILL);
	for (const unsigned *o = ward_prctl_allow; *o; o++)
		IFEQ(&e, *o, L_ALLOW);
	RET(&e, SECCOMP_RET_TRACE);

	label(&e, L_PERS);
	LOAD(&e, LO32(0));
	for (int i = 0; i < 2; i++)
		IFEQ(&e, ward_personality_allow[i], L_ALLOW);
	RET(&e, SECCOMP_RET_TRACE);

	label(&e, L_IOCTL);
	LOAD(&e, LO32(1));
	for (int i = 0; i < 2; i++)
		IFEQ(&e, ward_ioctl_refuse[i], L_TRACE);
	RET(&e, SECCOMP_RET_ALLOW);

	/* clone(2) reads only the low 32 bits of its flags. */
	label(&e, L_CLONE);
	LOAD(&e, LO32(0));
	emit(&e, BPF_JMP | BPF_JSET | BPF_K, WARD_CLONE_FLOOR, L_KILL, 0);
	RET(&e, SECCOMP_RET_ALLOW);

	label(&e, L_ALLOW);
	RET(&e, SECCOMP_RET_ALLOW);
	label(&e, L_TRACE);
	RET(&e, SECCOMP_RET_TRACE);
	label(&e, L_KILL);
	RET(&e, SECCOMP_RET_KILL_PROCESS);
	prog->len = emit_done(&e) == 0 ? (unsigned short)e.n : 0;
}

__attribute__((constructor)) static void guard_build(void)
{
	guard_emit(&tracer_guard, false);
	guard_emit(&tracer_guard_zyg, true);
}

/*
 * Compile the main filter to BPF in the parent, so that the child only has
 * to hand the kernel a ready program (no allocation after fork, and the
 * compile is off the path between fork and exec).
 */
static int compile_ctx(bool stat, const bool ruled[1024], bool zyg,
		       struct sock_fprog *out, char *msg, size_t n)
{
	static const bool none[1024];
	scmp_filter_ctx ctx;
	struct stat st;
	int fd, rc;

	rc = filter_ctx(stat, ruled ? ruled : none, zyg, &ctx, msg, n);
	if (rc < 0)
		return rc;
	fd = memfd_create("ward-filter", MFD_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		snprintf(msg, n, "memfd_create: %s", strerror(errno));
		goto out;
	}
	rc = seccomp_export_bpf(ctx, fd);
	if (rc < 0) {
		snprintf(msg, n, "compiling the seccomp filter: %s",
			 strerror(-rc));
		goto out;
	}
	if (fstat(fd, &st) < 0 || st.st_size <= 0 ||
	    st.st_size % (off_t)sizeof(struct sock_filter) != 0 ||
	    st.st_size / (off_t)sizeof(struct sock_filter) > BPF_MAXINSNS) {
		rc = -EINVAL;
		snprintf(msg, n, "the compiled seccomp filter has a bad size");
		goto out;
	}
	out->len = (unsigned short)(st.st_size /
				    (off_t)sizeof(struct sock_filter));
	out->filter = malloc((size_t)st.st_size);
	if (!out->filter ||
	    pread(fd, out->filter, (size_t)st.st_size, 0) != st.st_size) {
		free(out->filter);
		out->filter = NULL;
		rc = -EIO;
		snprintf(msg, n, "reading back the compiled seccomp filter");
		goto out;
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	seccomp_release(ctx);
	return rc;
}

int tracer_filter_compile(bool stat, const bool ruled[1024],
			  struct sock_fprog *out, char *msg, size_t n)
{
	return compile_ctx(stat, ruled, false, out, msg, n);
}

/* A raw policy rule names a syscall: it must stop at ward. */
static void ruled_of(const struct policy *p, bool ruled[1024])
{
	memset(ruled, 0, 1024 * sizeof(ruled[0]));
	for (size_t i = 0; i < policy_syscall_rule_count(p); i++) {
		int nr = seccomp_syscall_resolve_name(
			policy_syscall_rule_name(p, i));
		if (nr >= 0 && nr < 1024)
			ruled[nr] = true;
	}
}

/*
 * The programs built into ward (gen/filters.c, written at build time by
 * tools/gen/gen-filters.c with tracer_filter_compile and the same libseccomp):
 * for a policy without raw syscall rules the program depends only on
 * whether stat is trapped, so a run need not compile it (~0.7 ms of CPU
 * before the code can start). A program linked without them (the
 * generator itself; the symbol is weak) always compiles. Returns 1 and a
 * copy of the built-in program in *out, 0 when there is none for this
 * policy, -ENOMEM.
 */
static int builtin_for(const struct policy *p, struct sock_fprog *out)
{
	const struct tracer_builtin_filters *b = &tracer_builtin_filters;
	int i = policy_trap_stat(p) ? 1 : 0;

	if (!b || policy_syscall_rule_count(p) > 0 || !b->len[i])
		return 0;
	out->filter = malloc(b->len[i] * sizeof(struct sock_filter));
	if (!out->filter)
		return -ENOMEM;
	memcpy(out->filter, b->prog[i], b->len[i] * sizeof(struct sock_filter));
	out->len = b->len[i];
	return 1;
}

/* The program compiled for this policy (no built-in one looked for). */
static int compile_for(const struct policy *p, struct sock_fprog *out,
		       char *msg, size_t n)
{
	bool ruled[1024];

	ruled_of(p, ruled);
	return tracer_filter_compile(policy_trap_stat(p), ruled, out, msg, n);
}

int tracer_filter_build(const struct policy *p, struct sock_fprog *out,
			char *msg, size_t n)
{
	int rc = builtin_for(p, out);

	if (rc < 0)
		snprintf(msg, n, "out of memory");
	return rc != 0 ? rc : compile_for(p, out, msg, n);
}

int tracer_filter_build_zyg(const struct policy *p, struct sock_fprog *out,
			    char *msg, size_t n)
{
	bool ruled[1024];

	ruled_of(p, ruled);
	return compile_ctx(policy_trap_stat(p), ruled, true, out, msg, n);
}

struct tracer_prepared {
	pthread_t thread;
	const struct policy *policy;
	struct sock_fprog prog;
	char msg[256];
	int rc;
};

static void *compile_thread(void *arg)
{
	struct tracer_prepared *tp = arg;

	tp->rc = compile_for(tp->policy, &tp->prog, tp->msg, sizeof(tp->msg));
	return NULL;
}

int tracer_prepare(const struct policy *p, struct tracer_prepared **out)
{
	struct tracer_prepared *tp = calloc(1, sizeof(*tp));
	int rc;

	*out = NULL;
	if (!tp)
		return -ENOMEM;
	tp->policy = p;
	rc = builtin_for(p, &tp->prog);
	if (rc != 0) { /* built in: no thread */
		tp->rc = rc;
		if (rc < 0)
			snprintf(tp->msg, sizeof(tp->msg), "out of memory");
		*out = tp;
		return 0;
	}
	rc = pthread_create(&tp->thread, NULL, compile_thread, tp);
	if (rc) {
		free(tp);
		return -rc;
	}
	*out = tp;
	return 0;
}

int tracer_prepared_take(struct tracer_prepared *tp, struct sock_fprog *out,
			 char *msg, size_t n)
{
	if (tp->thread)
		pthread_join(tp->thread, NULL);
	tp->thread = 0;
	if (tp->rc < 0) {
		snprintf(msg, n, "%s", tp->msg);
		return tp->rc;
	}
	*out = tp->prog;
	tp->prog.filter = NULL;
	return tp->rc;
}

void tracer_prepared_free(struct tracer_prepared *tp)
{
	if (!tp)
		return;
	if (tp->thread)
		pthread_join(tp->thread, NULL);
	free(tp->prog.filter);
	free(tp);
}

bool tracer_result_by_bpf(long nr)
{
	const struct syscall_desc *d = tracer_syscall_desc(nr);

	/* the stat family stops only when the policy says so; these go to
	 * ward only for some arguments (filter_ctx): the sys_exit program
	 * would record every one */
	if (!d || d->trap != TRAP_ALWAYS)
		return false;
	switch (nr) {
	case __NR_prctl:
	case __NR_ioctl:
	case __NR_sendto:
	case __NR_prlimit64:
	case __NR_sched_setaffinity:
	case __NR_personality: return false;
	}
	for (const char *const *a = tracer_allow_list; *a; a++)
		if (!strcmp(*a, d->name))
			return false;
	return true;
}
