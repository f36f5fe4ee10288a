/* decode.h - the decoders named in the sensitive-syscall table. */
#ifndef WARD_TRACER_DECODE_H
#define WARD_TRACER_DECODE_H

#include "tracer-int.h"

/*
 * A path argument: the index of its register (0-5), PATH_NONE for a NULL
 * path meaning the dirfd itself, or index | PATH_EMPTY for a pointer to ""
 * meaning the dirfd itself (AT_EMPTY_PATH). The bytes read are kept in
 * t->cp: the kernel gets them, not the code's memory.
 */
#define PATH_NONE  (-1)
#define PATH_EMPTY 0x100

int decode_path(struct tracer *t, struct tracee *tc, int dirfd,
		const struct ptrace_syscall_info *si, int argi, bool follow,
		bool second, struct ward_event *ev);

#define DECODER(name)                                                          \
	int name(struct tracer *t, struct tracee *tc,                          \
		 const struct ptrace_syscall_info *si, struct ward_event *ev)

/* files */
DECODER(dec_open);
DECODER(dec_creat);
DECODER(dec_openat);
DECODER(dec_openat2);
DECODER(dec_stat);
DECODER(dec_lstat);
DECODER(dec_newfstatat);
DECODER(dec_statx);
DECODER(dec_faccessat);
DECODER(dec_faccessat2);
DECODER(dec_readlinkat);
DECODER(dec_chdir);
DECODER(dec_unlink);
DECODER(dec_unlinkat);
DECODER(dec_mkdir);
DECODER(dec_mkdirat);
DECODER(dec_mknod);
DECODER(dec_mknodat);
DECODER(dec_write_path);
DECODER(dec_write_lpath);
DECODER(dec_fchmodat);
DECODER(dec_fchmodat2);
DECODER(dec_fchownat);
DECODER(dec_utimensat);
DECODER(dec_futimesat);
DECODER(dec_inotify_add_watch);
DECODER(dec_rename);
DECODER(dec_renameat);
DECODER(dec_renameat2);
DECODER(dec_link);
DECODER(dec_linkat);
DECODER(dec_symlink);
DECODER(dec_symlinkat);
/* programs */
DECODER(dec_execve);
DECODER(dec_execveat);
/* network */
DECODER(dec_socket);
DECODER(dec_connect);
DECODER(dec_bind);
DECODER(dec_listen);
DECODER(dec_sendto);
DECODER(dec_sendmsg);
DECODER(dec_sendmmsg);
/* processes and signals */
DECODER(dec_clone);
DECODER(dec_fork);
DECODER(dec_vfork);
DECODER(dec_kill);
DECODER(dec_tkill);
DECODER(dec_tgkill);
DECODER(dec_rt_sigqueueinfo);
DECODER(dec_rt_tgsigqueueinfo);
DECODER(dec_pidfd_send_signal);
DECODER(dec_pidfd_open);
DECODER(dec_prlimit64);
DECODER(dec_other);

/* events.raw of a network event, formatted into buf (n bytes, at least
 * TRACER_NET_RAW_MAX for the whole text), or NULL when the call named no
 * address. */
#define TRACER_NET_RAW_MAX 512
const char *tracer_net_raw(const struct ward_event *ev, char *buf, size_t n);

#endif
