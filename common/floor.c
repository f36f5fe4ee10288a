#include "floor.h"

#include <linux/prctl.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#endif
#ifndef PR_GET_AUXV
#define PR_GET_AUXV 0x41555856
#endif

/* clang-format off */
const char *const ward_kill_floor[] = {
	/* reach into or control other processes, bypassing the tracer */
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
	/* syscalls that run without a seccomp/ptrace stop */
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	/* kernel attack surface and introspection */
	"bpf", "userfaultfd", "perf_event_open",
	/* the mount family and namespaces */
	"mount", "umount2", "pivot_root", "fsopen", "fsconfig", "fsmount",
	"fspick", "open_tree", "move_mount", "mount_setattr", "unshare",
	"setns",
	/* kernels and modules */
	"kexec_load", "kexec_file_load", "init_module", "finit_module",
	"delete_module",
	/* keyrings */
	"keyctl", "add_key", "request_key",
	/* file handles bypass path checks */
	"open_by_handle_at", "name_to_handle_at",
	/* a new filter could hide syscalls from the supervisor */
	"seccomp",
	/* hardware and segment tricks */
	"iopl", "ioperm", "modify_ldt",
	NULL,
};
/* clang-format on */

bool ward_in_kill_floor(const char *name)
{
	if (!name)
		return false;
	for (size_t i = 0; ward_kill_floor[i]; i++)
		if (strcmp(ward_kill_floor[i], name) == 0)
			return true;
	return false;
}

/*
 * What python3 (numpy/OpenBLAS, pandas, matplotlib), node and sh call was
 * measured with strace -f on the workloads in tests/integ/workloads and
 * bench/workloads: none of them calls prctl at all on this system. The
 * list is what common runtimes use (glibc, libuv, JVMs, Chromium's base)
 * and what only reads or changes the calling process itself. Left out on
 * purpose: PR_SET_DUMPABLE (a non-dumpable tracee hides its memory from
 * ward), PR_SET_PTRACER (lets another process trace the code),
 * PR_SET_SECCOMP (killed in the kernel), PR_SET_MM, PR_SET_CHILD_SUBREAPER
 * (reparents orphans away from the run's tree), PR_SET_SYSCALL_USER_DISPATCH,
 * PR_CAP_AMBIENT, PR_SET_SECUREBITS, PR_SET_KEEPCAPS, PR_SET_TSC, perf
 * events and everything newer than this list. PR_SET_NO_NEW_PRIVS is safe
 * to allow: the kernel accepts only 1 (already set) and cannot unset it.
 */
/* clang-format off */
const unsigned ward_prctl_allow[] = {
	PR_SET_PDEATHSIG, PR_GET_PDEATHSIG,
	PR_GET_DUMPABLE,
	PR_GET_KEEPCAPS,
	PR_SET_NAME, PR_GET_NAME,
	PR_GET_SECCOMP,
	PR_CAPBSET_READ,
	PR_GET_TSC,
	PR_GET_SECUREBITS,
	PR_SET_TIMERSLACK, PR_GET_TIMERSLACK,
	PR_MCE_KILL_GET,
	PR_GET_CHILD_SUBREAPER,
	PR_SET_NO_NEW_PRIVS, PR_GET_NO_NEW_PRIVS,
	PR_GET_TID_ADDRESS,
	PR_GET_THP_DISABLE,
	PR_GET_SPECULATION_CTRL,
	PR_SET_VMA,
	PR_GET_AUXV,
	0,
};
/* clang-format on */

const unsigned ward_personality_allow[2] = { 0 /* PER_LINUX */, 0xffffffffu };
const unsigned ward_ioctl_refuse[2] = { TIOCSTI, TIOCLINUX };

static bool in(const unsigned *set, size_t n, unsigned v)
{
	for (size_t i = 0; i < n; i++)
		if (set[i] == v)
			return true;
	return false;
}

const char *ward_arg_floor(const char *name, const unsigned long long a[6],
			   unsigned *value)
{
	size_t nprctl =
		sizeof(ward_prctl_allow) / sizeof(*ward_prctl_allow) - 1;

	if (!name || !a)
		return NULL;
	/* The kernel reads these as 32-bit ints: so does the floor. */
	if (!strcmp(name, "prctl") &&
	    !in(ward_prctl_allow, nprctl, *value = (unsigned)a[0]))
		return "option not on ward's prctl allowlist";
	if (!strcmp(name, "personality") &&
	    !in(ward_personality_allow, 2, *value = (unsigned)a[0]))
		return "only PER_LINUX is allowed";
	if (!strcmp(name, "ioctl") &&
	    in(ward_ioctl_refuse, 2, *value = (unsigned)a[1]))
		return "request that types into or controls a terminal";
	return NULL;
}
