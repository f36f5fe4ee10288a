/*
 * syscalls.c - which syscalls stop at ward, and how each is decoded.
 *
 * Three sets, and everything else:
 *   - tracer_allow_list: harmless on existing fds and memory; allowed in
 *     the kernel with no argument loads (free after the kernel's action
 *     cache).
 *   - the kill floor (common/floor.h): interfaces that bypass or attack
 *     the supervisor; the kernel kills the process.
 *   - this table: syscalls that name a path, an address, a program, a new
 *     process or a signal target; they stop at ward, are decoded, decided
 *     by the policy and recorded. TRAP_STAT rows stop only when the
 *     policy traps the stat family.
 *   - anything else also stops at ward (the filter's default action) and
 *     is decided by the policy's raw syscall rules (default: ENOSYS).
 * A few get argument rules in filter.c (clone3, prctl, ioctl, sendto,
 * prlimit64).
 */
#include "tracer-int.h"
#include "decode.h"

#include <sys/syscall.h>

#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452 /* Linux 6.6; older headers lack it */
#endif

/* clang-format off */
#define ROW(n, dec, kind) [__NR_##n] = { #n, dec, kind }

static const struct syscall_desc table[] = {
	/* files: open family */
	ROW(open, dec_open, TRAP_ALWAYS),
	ROW(openat, dec_openat, TRAP_ALWAYS),
	ROW(openat2, dec_openat2, TRAP_ALWAYS),
	ROW(creat, dec_creat, TRAP_ALWAYS),
	/* files: names created, removed, renamed, linked */
	ROW(unlink, dec_unlink, TRAP_ALWAYS),
	ROW(unlinkat, dec_unlinkat, TRAP_ALWAYS),
	ROW(rmdir, dec_unlink, TRAP_ALWAYS),
	ROW(mkdir, dec_mkdir, TRAP_ALWAYS),
	ROW(mkdirat, dec_mkdirat, TRAP_ALWAYS),
	ROW(mknod, dec_mknod, TRAP_ALWAYS),
	ROW(mknodat, dec_mknodat, TRAP_ALWAYS),
	ROW(rename, dec_rename, TRAP_ALWAYS),
	ROW(renameat, dec_renameat, TRAP_ALWAYS),
	ROW(renameat2, dec_renameat2, TRAP_ALWAYS),
	ROW(link, dec_link, TRAP_ALWAYS),
	ROW(linkat, dec_linkat, TRAP_ALWAYS),
	ROW(symlink, dec_symlink, TRAP_ALWAYS),
	ROW(symlinkat, dec_symlinkat, TRAP_ALWAYS),
	/* files: metadata and content changed through a name */
	ROW(chmod, dec_write_path, TRAP_ALWAYS),
	ROW(fchmodat, dec_fchmodat, TRAP_ALWAYS),
	ROW(fchmodat2, dec_fchmodat2, TRAP_ALWAYS),
	ROW(chown, dec_write_path, TRAP_ALWAYS),
	ROW(lchown, dec_write_lpath, TRAP_ALWAYS),
	ROW(fchownat, dec_fchownat, TRAP_ALWAYS),
	ROW(truncate, dec_write_path, TRAP_ALWAYS),
	ROW(utime, dec_write_path, TRAP_ALWAYS),
	ROW(utimes, dec_write_path, TRAP_ALWAYS),
	ROW(utimensat, dec_utimensat, TRAP_ALWAYS),
	ROW(futimesat, dec_futimesat, TRAP_ALWAYS),
	ROW(setxattr, dec_write_path, TRAP_ALWAYS),
	ROW(lsetxattr, dec_write_lpath, TRAP_ALWAYS),
	ROW(removexattr, dec_write_path, TRAP_ALWAYS),
	ROW(lremovexattr, dec_write_lpath, TRAP_ALWAYS),
	ROW(chdir, dec_chdir, TRAP_ALWAYS),
	ROW(inotify_add_watch, dec_inotify_add_watch, TRAP_ALWAYS),
	/* files: the stat family (policy "trap_stat") */
	ROW(stat, dec_stat, TRAP_STAT),
	ROW(lstat, dec_lstat, TRAP_STAT),
	ROW(newfstatat, dec_newfstatat, TRAP_STAT),
	ROW(statx, dec_statx, TRAP_STAT),
	ROW(access, dec_stat, TRAP_STAT),
	ROW(faccessat, dec_faccessat, TRAP_STAT),
	ROW(faccessat2, dec_faccessat2, TRAP_STAT),
	ROW(readlink, dec_lstat, TRAP_STAT),
	ROW(readlinkat, dec_readlinkat, TRAP_STAT),
	ROW(statfs, dec_stat, TRAP_STAT),
	ROW(getxattr, dec_stat, TRAP_STAT),
	ROW(lgetxattr, dec_lstat, TRAP_STAT),
	ROW(listxattr, dec_stat, TRAP_STAT),
	ROW(llistxattr, dec_lstat, TRAP_STAT),
	/* programs */
	ROW(execve, dec_execve, TRAP_ALWAYS),
	ROW(execveat, dec_execveat, TRAP_ALWAYS),
	/* network */
	ROW(socket, dec_socket, TRAP_ALWAYS),
	ROW(connect, dec_connect, TRAP_ALWAYS),
	ROW(bind, dec_bind, TRAP_ALWAYS),
	ROW(listen, dec_listen, TRAP_ALWAYS),
	ROW(sendto, dec_sendto, TRAP_ALWAYS), /* only with an address */
	ROW(sendmsg, dec_sendmsg, TRAP_ALWAYS),
	ROW(sendmmsg, dec_sendmmsg, TRAP_ALWAYS),
	/* new processes */
	ROW(clone, dec_clone, TRAP_ALWAYS),
	ROW(fork, dec_fork, TRAP_ALWAYS),
	ROW(vfork, dec_vfork, TRAP_ALWAYS),
	/* signals and other processes */
	ROW(kill, dec_kill, TRAP_ALWAYS),
	ROW(tkill, dec_tkill, TRAP_ALWAYS),
	ROW(tgkill, dec_tgkill, TRAP_ALWAYS),
	ROW(rt_sigqueueinfo, dec_rt_sigqueueinfo, TRAP_ALWAYS),
	ROW(rt_tgsigqueueinfo, dec_rt_tgsigqueueinfo, TRAP_ALWAYS),
	ROW(pidfd_send_signal, dec_pidfd_send_signal, TRAP_ALWAYS),
	ROW(pidfd_open, dec_pidfd_open, TRAP_ALWAYS),
	ROW(prlimit64, dec_prlimit64, TRAP_ALWAYS), /* only pid != 0 */
};
/* clang-format on */

#define TABLE_LEN ((long)(sizeof(table) / sizeof(table[0])))

const struct syscall_desc *tracer_syscall_desc(long nr)
{
	if (nr < 0 || nr >= TABLE_LEN || !table[nr].name)
		return NULL;
	return &table[nr];
}

/* Blocks ordered from the hottest. None names a path, an address, a
 * program or another process. */
/* clang-format off */
const char *const tracer_allow_list[] = {
	/* I/O on existing fds */
	"read", "write", "readv", "writev", "pread64", "pwrite64", "preadv",
	"pwritev", "preadv2", "pwritev2", "lseek", "close", "close_range",
	"fstat", "fstatfs", "getdents", "getdents64", "fcntl", "dup", "dup2",
	"dup3", "pipe", "pipe2", "flock", "fsync", "fdatasync", "syncfs",
	"ftruncate", "fallocate", "fadvise64", "readahead", "sendfile",
	"copy_file_range", "splice", "tee", "fchdir", "fchmod", "fchown",
	"fgetxattr", "flistxattr", "fsetxattr", "fremovexattr", "getcwd",
	"umask", "sync", "sync_file_range",
	/* memory */
	"mmap", "munmap", "mprotect", "mremap", "madvise", "brk", "msync",
	"mincore", "mlock", "mlock2", "munlock", "mlockall", "munlockall",
	"membarrier", "memfd_create", "mbind", "get_mempolicy",
	"set_mempolicy", "set_mempolicy_home_node", "pkey_alloc", "pkey_free",
	"pkey_mprotect",
	/* threads, futexes, signals to oneself */
	"futex", "futex_waitv", "set_robust_list", "get_robust_list",
	"set_tid_address", "rseq", "arch_prctl", "rt_sigaction",
	"rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigtimedwait",
	"rt_sigsuspend", "sigaltstack", "restart_syscall", "pause",
	/* waiting and polling */
	"select", "pselect6", "poll", "ppoll", "epoll_create", "epoll_create1",
	"epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2", "eventfd",
	"eventfd2", "signalfd", "signalfd4", "timerfd_create",
	"timerfd_settime", "timerfd_gettime", "inotify_init", "inotify_init1",
	"inotify_rm_watch", "wait4", "waitid",
	/* time */
	"clock_gettime", "clock_getres", "clock_nanosleep", "nanosleep",
	"gettimeofday", "time", "alarm", "getitimer", "setitimer",
	"timer_create", "timer_settime", "timer_gettime", "timer_getoverrun",
	"timer_delete",
	/* identity and limits of oneself */
	"getpid", "getppid", "gettid", "getuid", "geteuid", "getgid",
	"getegid", "getgroups", "getresuid", "getresgid", "getpgid",
	"getpgrp", "getsid", "setsid", "setpgid", "getrlimit", "setrlimit",
	"getrusage", "times", "sysinfo", "uname", "getrandom", "capget",
	"getcpu", "getpriority",
	"sched_yield", "sched_getaffinity",
	"sched_getparam", "sched_getscheduler", "sched_get_priority_max",
	"sched_get_priority_min", "sched_getattr", "sched_rr_get_interval",
	/* sockets already created (their creation and addresses are trapped) */
	"socketpair", "accept", "accept4", "getsockname", "getpeername",
	"getsockopt", "setsockopt", "shutdown", "recvfrom", "recvmsg",
	"recvmmsg",
	/* ends */
	"exit", "exit_group",
	NULL,
};
/* clang-format on */
