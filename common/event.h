/*
 * event.h - one decoded sensitive syscall, the contract between the
 * tracer (which fills it), the policy (which judges it) and the audit
 * (which records it).
 *
 * The tracer's decoders only read: they fill a struct ward_event from the
 * registers and the tracee's memory and never decide. policy_check() only
 * reads the event. Strings are NUL-terminated and always valid (empty when
 * absent). The struct is large and meant to be reused, not put on a small
 * stack in a hot loop.
 */
#ifndef WARD_COMMON_EVENT_H
#define WARD_COMMON_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define WARD_PATH_MAX 4096
#define WARD_ARGS_MAX 2048 /* decoded arguments as JSON text */

/* What kind of thing the syscall touches. */
enum ward_class {
	WARD_CLASS_NONE = 0,
	WARD_CLASS_FS,	   /* names a file: access bits + path (+ path2) */
	WARD_CLASS_NET,	   /* socket, connect, bind, listen, sendto/msg */
	WARD_CLASS_EXEC,   /* execve, execveat: path is the program */
	WARD_CLASS_PROC,   /* clone, fork, vfork: clone_flags */
	WARD_CLASS_SIGNAL, /* kill, tkill, tgkill, rt_sigqueueinfo, ... */
	WARD_CLASS_OTHER,  /* trapped for a raw syscall rule or unknown */
};

/* File access bits, for WARD_CLASS_FS (and access2). */
enum {
	WARD_FS_READ = 1u << 0,	 /* open for reading, readdir */
	WARD_FS_WRITE = 1u << 1, /* open for writing, truncate, chmod, utime */
	WARD_FS_CREATE = 1u
			 << 2, /* a new name: O_CREAT, mkdir, link, symlink */
	WARD_FS_DELETE = 1u << 3, /* unlink, rmdir, rename source */
	WARD_FS_EXEC = 1u << 4,	  /* mapped or run as a program */
	WARD_FS_STAT = 1u << 5,	  /* metadata only: stat family, chdir */
};

enum ward_net_op {
	WARD_NET_NONE = 0,
	WARD_NET_SOCKET, /* sock_family/type/proto set; no address */
	WARD_NET_CONNECT,
	WARD_NET_BIND,
	WARD_NET_LISTEN, /* no address; fd only */
	WARD_NET_SEND,	 /* sendto/sendmsg with an explicit address */
};

/* A decoded socket address. */
struct ward_sockaddr {
	bool present;  /* an address was given and decoded */
	int family;    /* AF_INET, AF_INET6, AF_UNIX, or another AF_ */
	char addr[64]; /* numeric IP text ("127.0.0.1", "::1"); for a
			   * v4-mapped v6 address, the IPv4 text */
	bool v4mapped; /* AF_INET6 ::ffff:a.b.c.d */
	int port;      /* host order; -1 when not applicable */
	char unix_path[WARD_PATH_MAX]; /* AF_UNIX: the path as given (abstract:
					* name without the leading NUL, with
					* embedded NULs shown as \0) */
	bool abstract;		       /* AF_UNIX abstract name */
	/* The address's bytes exactly as the code passed them (len bytes,
	 * at most a sockaddr_storage): what events.raw shows, formatted
	 * only when the event is recorded (tracer_net_raw). */
	unsigned char given[128];
	unsigned given_len;
};

struct ward_event {
	/* who */
	pid_t pid; /* thread group id */
	pid_t tid; /* thread id */

	/* what */
	int nr;		  /* native syscall number */
	const char *name; /* syscall name (static storage) */
	enum ward_class cls;

	/* files (WARD_CLASS_FS, WARD_CLASS_EXEC) */
	unsigned access;	  /* WARD_FS_* requested on path */
	char raw[WARD_PATH_MAX];  /* path argument as the code passed it;
				   * for signals, the pid, tid or pidfd as
				   * passed ("pid -5", "tgid 2 tid 3",
				   * "pidfd 4"); addresses are formatted from
				   * sa.given when recorded */
	char path[WARD_PATH_MAX]; /* absolute, resolved as the kernel would */
	bool exists;		  /* path named an existing file when decoded */
	bool has_path2;		  /* rename/link/symlink: second name */
	bool exists2;		  /* path2 named an existing file */
	unsigned access2;
	char raw2[WARD_PATH_MAX];
	char path2[WARD_PATH_MAX];
	unsigned mknod_mode; /* mknod, mknodat: the mode as the kernel reads
			      * it (16 bits, file type included); else 0 */

	/* network (WARD_CLASS_NET) */
	enum ward_net_op net_op;
	int sock_family, sock_type, sock_proto; /* WARD_NET_SOCKET; for other
						 * ops the family of the fd
						 * when known, else 0 */
	struct ward_sockaddr sa;

	/* processes (WARD_CLASS_PROC) */
	unsigned long clone_flags;

	/* WARD_CLASS_OTHER: the six argument registers as the code passed
	 * them (for the argument floor, common/floor.h) */
	unsigned long long raw_args[6];

	/* signals (WARD_CLASS_SIGNAL) */
	pid_t sig_target; /* as passed: >0 pid/tid, 0 own group, <0 group */
	int sig;	  /* 0 is the existence probe */
	bool sig_in_run;  /* every process the signal can reach is in the run */

	/* all decoded arguments, as one JSON object (for the audit) */
	char args_json[WARD_ARGS_MAX];
};

/* Reset an event for reuse (clears strings and flags, keeps nothing). */
void ward_event_reset(struct ward_event *ev);

/* Names for printing and recording; static strings, never NULL. */
const char *ward_class_name(enum ward_class c);
const char *ward_net_op_name(enum ward_net_op op);
/* Writes "read,write,create" style text for WARD_FS_* bits into buf. */
void ward_access_str(unsigned access, char *buf, size_t n);

#endif
