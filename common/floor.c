#include "floor.h"

#include <stddef.h>
#include <string.h>

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
