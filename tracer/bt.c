/*
 * bt.c - native backtraces of a stopped tracee.
 *
 * Taken only when the policy asks (by default on deny and kill), while the
 * thread is still stopped. ward itself reads only what the kernel says:
 * the thread's registers, /proc/TID/maps, and a bounded copy of its stack
 * (from RSP to the end of its mapping, at most UW_STACK_MAX bytes). The
 * unwinding, which reads the ELF and DWARF of whatever files the code has
 * mapped, is done by the unwinder helper (unwinder.h: another process,
 * unprivileged, sandboxed, killed past a budget of UW_BUDGET_MS), so that
 * no file of the code's is ever opened or parsed by ward and no backtrace
 * can make ward wait for more than the budget.
 *
 * Frames are recorded as raw addresses with the module that maps them and
 * the offset into it, both from ward's own read of the maps; symbol names
 * are left to the reader. The addresses are untrusted: they come from the
 * code's stack and the code's files. When the walk ends for another
 * reason than the stack's end, the last frame says why ("stop"); when the
 * helper fails, the frame ward can prove alone, the stopped instruction
 * pointer, is recorded with the failure.
 */
#include "tracer-int.h"
#include "args.h"
#include "unwinder.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/user.h>

/* The registers in libunwind's x86-64 order (UW_NREGS). */
static void regs_of(const struct user_regs_struct *u, uint64_t *r)
{
	const unsigned long long v[UW_NREGS] = {
		u->rax, u->rdx, u->rcx, u->rbx, u->rsi, u->rdi,
		u->rbp, u->rsp, u->r8,	u->r9,	u->r10, u->r11,
		u->r12, u->r13, u->r14, u->r15, u->rip,
	};

	for (int i = 0; i < UW_NREGS; i++)
		r[i] = v[i];
}

/* The stack from sp up, to the end of its mapping, at most UW_STACK_MAX
 * bytes (fewer when some cannot be read). */
static uint32_t stack_copy(pid_t tid, const struct uw_maps *mm, uint64_t sp,
			   uint8_t *buf)
{
	long i = uw_maps_find(mm, sp);
	uint64_t len;

	if (i < 0)
		return 0;
	len = mm->m[i].end - sp;
	if (len > UW_STACK_MAX)
		len = UW_STACK_MAX;
	struct iovec loc = { buf, (size_t)len };
	struct iovec rem = { (void *)(uintptr_t)sp, (size_t)len };
	ssize_t got = process_vm_readv(tid, &loc, 1, &rem, 1, 0);
	return got > 0 ? (uint32_t)got : 0;
}

/* Appends frame ip (JSON) at buf + *used; stop: "" or why the walk ended
 * there. false when it does not fit (nothing appended). */
static bool put_frame(const struct uw_maps *mm, uint64_t ip, bool first,
		      const char *stop, char *buf, size_t n, size_t *used)
{
	char js[8192], why[512];
	uint64_t off = ip;
	long i = uw_maps_find(mm, ip);
	const char *mod = "?";
	char anon[] = "[anon]";
	int w;

	if (i >= 0) {
		mod = mm->path[i] ? mm->path[i] : anon;
		off = ip - mm->m[i].start + mm->m[i].off;
	}
	if (args_json_string(js, sizeof(js), mod, strlen(mod)) < 0)
		snprintf(js, sizeof(js), "\"?\"");
	why[0] = '\0';
	if (stop[0] &&
	    args_json_string(why, sizeof(why), stop, strlen(stop)) < 0)
		snprintf(why, sizeof(why), "\"?\"");
	w = snprintf(buf + *used, n - *used,
		     "%s{\"ip\":\"%#" PRIx64
		     "\",\"module\":%s,\"offset\":\"%#" PRIx64 "\"%s%s}",
		     first ? "" : ",", ip, js, off, why[0] ? ",\"stop\":" : "",
		     why);
	if (w < 0 || (size_t)w >= n - *used - 1) {
		buf[*used] = '\0';
		return false;
	}
	*used += (size_t)w;
	return true;
}

/*
 * The frames as JSON. The mark goes on the last frame written; room for it
 * is kept, so that frames cut for lack of room never take the mark along.
 */
static void format(const struct uw_maps *mm, const struct uw_result *res,
		   uint64_t rip, char *buf, size_t n)
{
	const uint64_t *ip = res->ip;
	int nf = res->n;
	size_t used = 1, keep = strlen(res->stop) * 6 + 96;

	if (nf == 0) { /* the frame ward can prove: where the thread is */
		ip = &rip;
		nf = 1;
	}
	snprintf(buf, n, "[");
	for (int i = 0; i < nf; i++) {
		bool last = i == nf - 1;
		size_t room = last ? n - 1 : (n > keep + 1 ? n - keep - 1 : 0);
		if (room <= used ||
		    !put_frame(mm, ip[i], i == 0, last ? res->stop : "", buf,
			       room, &used)) {
			/* no room for more: the mark on the one before */
			if (i > 0 && res->stop[0]) {
				char tail[512];
				if (args_json_string(tail, sizeof(tail),
						     res->stop,
						     strlen(res->stop)) == 0 &&
				    used + strlen(tail) + 12 < n) {
					used--; /* reopen the last object */
					used += (size_t)snprintf(
						buf + used, n - used,
						",\"stop\":%s}", tail);
				}
			}
			break;
		}
	}
	snprintf(buf + used, n - used, "]");
}

int tracer_backtrace(pid_t tid, pid_t tgid, char *buf, size_t n)
{
	static uint8_t stack[UW_STACK_MAX];
	struct user_regs_struct u;
	uint64_t regs[UW_NREGS];
	struct uw_maps mm;
	struct uw_result res;
	long long deadline = uw_deadline();
	uint32_t len;
	int r;

	if (n < 256)
		return -ENOSPC;
	if (ptrace(PTRACE_GETREGS, tid, 0, &u) < 0)
		return -errno;
	regs_of(&u, regs);
	r = uw_maps_read(tid, regs[UW_RSP], &mm);
	if (r < 0)
		return r;
	len = stack_copy(tid, &mm, regs[UW_RSP], stack);
	r = uw_unwind(tid, tgid, regs, &mm, stack, len, regs[UW_RSP], deadline,
		      &res);
	if (r == 0)
		format(&mm, &res, regs[UW_RIP], buf, n);
	uw_maps_free(&mm);
	return r;
}

void tracer_backtrace_release(void)
{
	uw_release();
}
