/*
 * filter.c - the seccomp-BPF program every process of the run carries.
 *
 * Default action: TRACE (stop at ward), so a syscall nobody thought about
 * is decided and recorded, never silently allowed. On top:
 *   ALLOW        tracer_allow_list (no argument loads)
 *   KILL_PROCESS the kill floor (common/floor.h), other architectures
 *                (i386 int 0x80, x32 numbers), prctl(PR_SET_SECCOMP)
 *   ERRNO        clone3 -> ENOSYS (libc falls back to clone, whose flags
 *                ward can read), prctl(PR_SET_DUMPABLE) -> EPERM (a
 *                non-dumpable tracee would hide its memory from ward),
 *                ioctl(TIOCSTI/TIOCLINUX) -> EPERM
 *   TRACE        the table in syscalls.c (stat family only if the policy
 *                asks), raw syscall rules of the policy
 * Argument rules compare the low 32 bits of int arguments, as the kernel
 * reads them.
 */
#include "tracer-int.h"
#include "../common/floor.h"

#include <errno.h>
#include <linux/prctl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

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
		snprintf(msg, n, "seccomp rule for %s: %s", name, strerror(-rc));
		return rc;
	}
	return 0;
}

#define ADD(act, name, ...)                                                  \
	do {                                                                 \
		const struct scmp_arg_cmp _c[] = { __VA_ARGS__ };            \
		rc = add(ctx, act, name, sizeof(_c) / sizeof(_c[0]), _c, msg, n); \
		if (rc < 0)                                                  \
			goto fail;                                           \
	} while (0)
#define ADD0(act, name)                                                      \
	do {                                                                 \
		rc = add(ctx, act, name, 0, NULL, msg, n);                   \
		if (rc < 0)                                                  \
			goto fail;                                           \
	} while (0)

int tracer_filter_build(const struct policy *p, scmp_filter_ctx *out,
			char *msg, size_t n)
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
	ADD(SCMP_ACT_KILL_PROCESS, "prctl",
	    SCMP_A0_32(SCMP_CMP_EQ, PR_SET_SECCOMP));
	ADD(SCMP_ACT_ERRNO(EPERM), "prctl",
	    SCMP_A0_32(SCMP_CMP_EQ, PR_SET_DUMPABLE));
	if (!ruled[__NR_prctl]) {
		ADD(SCMP_ACT_ALLOW, "prctl",
		    SCMP_A0_32(SCMP_CMP_NE, PR_SET_SECCOMP),
		    SCMP_A0_32(SCMP_CMP_NE, PR_SET_DUMPABLE));
	}
	ADD(SCMP_ACT_ERRNO(EPERM), "ioctl", SCMP_A1_32(SCMP_CMP_EQ, TIOCSTI));
	ADD(SCMP_ACT_ERRNO(EPERM), "ioctl", SCMP_A1_32(SCMP_CMP_EQ, TIOCLINUX));
	if (!ruled[__NR_ioctl]) {
		ADD(SCMP_ACT_ALLOW, "ioctl", SCMP_A1_32(SCMP_CMP_NE, TIOCSTI),
		    SCMP_A1_32(SCMP_CMP_NE, TIOCLINUX));
	}
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
