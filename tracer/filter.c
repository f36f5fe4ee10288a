/*
 * filter.c - the seccomp-BPF program every process of the run carries.
 *
 * Two filters. The guard (raw BPF, loaded first) checks what libseccomp
 * 2.5 cannot express safely, on the low 32 bits of int arguments as the
 * kernel reads them: a foreign architecture or an x32 number kills the
 * process; prctl(PR_SET_SECCOMP) kills; prctl(PR_SET_DUMPABLE) fails with
 * EPERM (a non-dumpable tracee would hide its memory from ward);
 * ioctl(TIOCSTI/TIOCLINUX) fails with EPERM (no typing into a terminal).
 * The kernel runs every filter and the strictest action wins, so the
 * guard's KILL and ERRNO beat the main filter's ALLOW.
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

static int filter_ctx(const struct policy *p, scmp_filter_ctx *out, char *msg,
		      size_t n)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRACE(0));
	bool stat = policy_trap_stat(p);
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

	for (const char *const *f = ward_kill_floor; *f; f++)
		ADD0(SCMP_ACT_KILL_PROCESS, *f);

	/* A raw policy rule names a syscall: it must stop at ward. */
	bool ruled[1024] = { false };
	for (size_t i = 0; i < policy_syscall_rule_count(p); i++) {
		int nr = seccomp_syscall_resolve_name(
			policy_syscall_rule_name(p, i));
		if (nr >= 0 && nr < 1024)
			ruled[nr] = true;
	}

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
	/* prctl and ioctl: the guard filter refuses the dangerous values. */
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
	if (!ruled[__NR_personality]) {
		ADD(SCMP_ACT_ALLOW, "personality", SCMP_A0_32(SCMP_CMP_EQ, 0));
		ADD(SCMP_ACT_ALLOW, "personality",
		    SCMP_A0_32(SCMP_CMP_EQ, 0xffffffffu));
	}
	/* Everything else in syscalls.c and the rest: the default, TRACE. */
	*out = ctx;
	return 0;
fail:
	seccomp_release(ctx);
	return rc < 0 ? rc : -EINVAL;
}

/* clang-format off */
#define LO32(i) (offsetof(struct seccomp_data, args) + 8 * (i))
#define STMT(code, k) { (unsigned short)(code), 0, 0, (unsigned)(k) }
#define JEQ(k, jt, jf) { BPF_JMP | BPF_JEQ | BPF_K, jt, jf, (unsigned)(k) }

static struct sock_filter guard[] = {
	/* 0 */ STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	/* 1 */ JEQ(AUDIT_ARCH_X86_64, 1, 0),
	/* 2 */ STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	/* 3 */ STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	/* 4 */ { BPF_JMP | BPF_JGE | BPF_K, 0, 1, 0x40000000u }, /* x32 */
	/* 5 */ STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	/* 6 */ JEQ(__NR_prctl, 0, 4),          /* else -> 11 */
	/* 7 */ STMT(BPF_LD | BPF_W | BPF_ABS, LO32(0)),
	/* 8 */ JEQ(PR_SET_SECCOMP, 7, 0),      /* -> 16 kill */
	/* 9 */ JEQ(PR_SET_DUMPABLE, 7, 0),     /* -> 17 EPERM */
	/* 10 */ STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	/* 11 */ JEQ(__NR_ioctl, 0, 3),         /* else -> 15 */
	/* 12 */ STMT(BPF_LD | BPF_W | BPF_ABS, LO32(1)),
	/* 13 */ JEQ(TIOCSTI, 3, 0),            /* -> 17 EPERM */
	/* 14 */ JEQ(TIOCLINUX, 2, 0),          /* -> 17 EPERM */
	/* 15 */ STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	/* 16 */ STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	/* 17 */ STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
};
/* clang-format on */

const struct sock_fprog tracer_guard = {
	.len = sizeof(guard) / sizeof(guard[0]),
	.filter = guard,
};

/*
 * Compile the main filter to BPF in the parent, so that the child only has
 * to hand the kernel a ready program (no allocation after fork, and the
 * compile is off the path between fork and exec).
 */
int tracer_filter_build(const struct policy *p, struct sock_fprog *out,
			char *msg, size_t n)
{
	scmp_filter_ctx ctx;
	struct stat st;
	int fd, rc;

	rc = filter_ctx(p, &ctx, msg, n);
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

	tp->rc = tracer_filter_build(tp->policy, &tp->prog, tp->msg,
				     sizeof(tp->msg));
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
	pthread_join(tp->thread, NULL);
	tp->thread = 0;
	if (tp->rc < 0) {
		snprintf(msg, n, "%s", tp->msg);
		return tp->rc;
	}
	*out = tp->prog;
	tp->prog.filter = NULL;
	return 0;
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
