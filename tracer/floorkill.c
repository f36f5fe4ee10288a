/*
 * floorkill.c - naming the syscall behind a kill by ward's seccomp floor.
 *
 * The kernel kills a process for a syscall of the kill floor, a clone with
 * CLONE_NEW* or CLONE_UNTRACED, or prctl(PR_SET_SECCOMP) without a stop at
 * ward (filter.c), so the policy never sees those calls. The run still
 * records them: at the exit stop (PTRACE_O_TRACEEXIT) of a thread that dies
 * by SIGSYS, the kernel has rolled its registers back to the syscall it
 * refused (rax equals orig_rax, the syscall number, and the argument
 * registers are as passed). A thread that dies by SIGSYS for another
 * reason (kill(2), or it was in some other syscall when a sibling was
 * killed) does not match the floor and is not named.
 */
#include "tracer-int.h"
#include "../common/floor.h"

#include <linux/prctl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>

#ifndef X32_SYSCALL_BIT
#define X32_SYSCALL_BIT 0x40000000
#endif

/* The kill-floor entry (static storage) for nr, or NULL. */
static const char *kill_floor_name(long nr)
{
	char *n = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, (int)nr);
	const char *found = NULL;

	for (const char *const *f = ward_kill_floor; n && *f; f++)
		if (!strcmp(*f, n))
			found = *f;
	free(n);
	return found;
}

/* Whether the refused syscall came in through the i386 entry: a 32-bit
 * code segment (far jump to compatibility mode, then syscall/sysenter),
 * or int $0x80 (CD 80) just before the rolled-back instruction pointer.
 * The i386 numbers mean other calls than the native ones (5 is open
 * there, fstat here), so the native table must not name them. */
static bool compat_entry(pid_t tid, const struct user_regs_struct *r)
{
	unsigned char insn[2];

	if (r->cs == 0x23)
		return true;
	return r->rip >= 2 && umem_read(tid, r->rip - 2, insn, 2) == 0 &&
	       insn[0] == 0xcd && insn[1] == 0x80;
}

bool tracer_floor_killed(pid_t tid, unsigned long exit_status,
			 struct ward_event *ev, struct policy_verdict *v)
{
	struct user_regs_struct r;
	const char *name = NULL;
	unsigned lo;

	if (!WIFSIGNALED(exit_status) || WTERMSIG(exit_status) != SIGSYS ||
	    ptrace(PTRACE_GETREGS, tid, 0, &r) < 0 || r.rax != r.orig_rax)
		return false;
	lo = (unsigned)r.rdi; /* the kernel reads these as 32 bits */
	if (compat_entry(tid, &r))
		name = "i386"; /* the guard kills every foreign architecture */
	else if (r.orig_rax & X32_SYSCALL_BIT)
		name = "x32"; /* the guard kills every x32 number */
	else if (r.orig_rax == __NR_clone && (lo & WARD_CLONE_FLOOR))
		name = "clone";
	else if (r.orig_rax == __NR_prctl && lo == PR_SET_SECCOMP)
		name = "prctl";
	else
		name = kill_floor_name((long)r.orig_rax);
	if (!name)
		return false;

	ward_event_reset(ev);
	ev->tid = tid;
	ev->nr = (int)r.orig_rax;
	ev->name = name;
	ev->cls = WARD_CLASS_OTHER;
	ev->raw_args[0] = r.rdi;
	ev->raw_args[1] = r.rsi;
	ev->raw_args[2] = r.rdx;
	ev->raw_args[3] = r.r10;
	ev->raw_args[4] = r.r8;
	ev->raw_args[5] = r.r9;
	snprintf(ev->args_json, sizeof(ev->args_json),
		 "{\"args\":[\"%#llx\",\"%#llx\",\"%#llx\",\"%#llx\","
		 "\"%#llx\",\"%#llx\"]}",
		 r.rdi, r.rsi, r.rdx, r.r10, r.r8, r.r9);

	memset(v, 0, sizeof(*v));
	v->action = POLICY_KILL;
	if (ev->nr == __NR_clone) {
		ev->cls = WARD_CLASS_PROC;
		ev->clone_flags = lo;
		snprintf(ev->path, sizeof(ev->path), "flags %#x", lo);
		v->rule = "clone.flags";
		snprintf(v->reason, sizeof(v->reason),
			 "clone with flags %#x: namespaces and CLONE_UNTRACED "
			 "are in ward's floor (killed in the kernel)",
			 lo);
	} else if (!strcmp(name, "i386")) {
		v->rule = "floor.abi";
		snprintf(ev->path, sizeof(ev->path), "i386 syscall %llu",
			 r.orig_rax);
		snprintf(
			v->reason, sizeof(v->reason),
			"i386 syscall %llu (int $0x80 or 32-bit code): only the "
			"native x86_64 ABI runs (killed in the kernel)",
			r.orig_rax);
	} else if (!strcmp(name, "x32")) {
		v->rule = "floor.abi";
		snprintf(v->reason, sizeof(v->reason),
			 "x32 syscall %#llx: only the native x86_64 ABI runs "
			 "(killed in the kernel)",
			 r.orig_rax);
	} else if (ev->nr == __NR_prctl) {
		v->rule = "floor.kill";
		snprintf(v->reason, sizeof(v->reason),
			 "prctl(PR_SET_SECCOMP): a new filter could hide "
			 "syscalls from ward (killed in the kernel)");
	} else {
		v->rule = "floor.kill";
		snprintf(v->reason, sizeof(v->reason),
			 "%s is in ward's kill floor (killed in the kernel)",
			 name);
	}
	return true;
}
