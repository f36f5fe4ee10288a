/*
 * tracer-int.h - internals shared inside tracer/ only.
 */
#ifndef WARD_TRACER_INT_H
#define WARD_TRACER_INT_H

#include <sys/ptrace.h>
#include <sys/socket.h>

/* glibc names the kernel struct with a leading __ */
#define ptrace_syscall_info __ptrace_syscall_info
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <seccomp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <linux/types.h>
#include <sys/user.h>

#include "tracer.h"

/* ---- the sensitive-syscall table (syscalls.c) ---- */

struct tracee;
struct tracer;

/*
 * A decoder reads one stopped syscall into ev (ev is reset and pid, tid,
 * nr, name are set before). It never judges. Returns 0, or -errno when the
 * arguments cannot be read (-EFAULT bad pointer, -ENAMETOOLONG, ...): the
 * syscall is then denied with that errno, rule "decode".
 */
typedef int (*decode_fn)(struct tracer *t, struct tracee *tc,
			 const struct ptrace_syscall_info *si,
			 struct ward_event *ev);

enum trap_kind {
	TRAP_NONE = 0, /* not in the table: allowed in the kernel */
	TRAP_ALWAYS,   /* always stops at ward */
	TRAP_STAT,     /* stops only when the policy traps the stat family */
};

struct syscall_desc {
	const char *name;
	decode_fn decode;
	enum trap_kind trap;
};

/* Look up by native number; NULL when ward has no decoder for it. */
const struct syscall_desc *tracer_syscall_desc(long nr);

/* The hot allowlist (no argument loads), for the filter. NULL-terminated. */
extern const char *const tracer_allow_list[];

/* ---- the filter (filter.c) ---- */

/* Build and compile the main seccomp filter for this policy. Returns 0
 * (compiled) or 1 (built in, see below) and *out (caller frees
 * out->filter), or -errno with msg filled. */
struct sock_fprog;
int tracer_filter_build(const struct policy *p, struct sock_fprog *out,
			char *msg, size_t n);
/* The same from what the program depends on: whether the stat family is
 * trapped, and the syscalls raw policy rules name (ruled[nr]; NULL: none). */
int tracer_filter_compile(bool stat, const bool ruled[1024],
			  struct sock_fprog *out, char *msg, size_t n);
/* The programs compiled when ward was built, for policies without raw
 * syscall rules: [0] stat allowed, [1] stat trapped (filter.c). */
struct sock_filter;
struct tracer_builtin_filters {
	unsigned short len[2];
	const struct sock_filter *prog[2];
};
/* Weak: a program linked without gen/filters.o (the generator) has none. */
extern const struct tracer_builtin_filters tracer_builtin_filters
	__attribute__((weak));
/* Waits for a tracer_prepare compile; moves its program into *out (caller
 * frees out->filter). 0 (compiled), 1 (built in) or the compile's -errno
 * with msg filled. */
int tracer_prepared_take(struct tracer_prepared *tp, struct sock_fprog *out,
			 char *msg, size_t n);

/* The guard filter, loaded before the main one (see filter.c). */
struct sock_fprog;
extern struct sock_fprog tracer_guard; /* built before main */
extern struct sock_fprog tracer_guard_zyg; /* the zygote template's */
/* The main filter of a zygote template (zygote.c): unshare and seccomp
 * stop at ward instead of killing. As tracer_filter_build, never built in. */
int tracer_filter_build_zyg(const struct policy *p, struct sock_fprog *out,
			    char *msg, size_t n);

/* At a thread's exit stop (exit_status from PTRACE_GETEVENTMSG): when the
 * kernel killed it for ward's seccomp floor, fills ev (nr, name, args; the
 * caller sets pid) and a kill verdict naming the syscall, and returns true
 * (floorkill.c). */
bool tracer_floor_killed(pid_t tid, unsigned long exit_status,
			 struct ward_event *ev, struct policy_verdict *v);

/* ---- tracee memory (umem.c) ---- */

/* Read exactly len bytes at addr. 0 or -EFAULT/-EPERM/-ESRCH. */
int umem_read(pid_t tid, uint64_t addr, void *buf, size_t len);
/* Read a NUL-terminated string of at most n-1 bytes. 0, -EFAULT,
 * -ENAMETOOLONG (no NUL within n-1 bytes). */
int umem_read_str(pid_t tid, uint64_t addr, char *buf, size_t n);

/* The page last read by umem_read_str_win: an array's strings (argv, the
 * environment) mostly lie a few to a page, read then with one call each
 * page instead of one each string. addr 0: none (page 0 is never mapped).
 * Valid for one stop. */
struct umem_page {
	uint64_t addr;
	char buf[4096];
};
/* umem_read_str, served from *pg when the string starts and ends in the
 * page it holds; else that page is read into *pg first. Same results. */
int umem_read_str_win(pid_t tid, struct umem_page *pg, uint64_t addr, char *buf,
		      size_t n);

/* ---- argument copies and the scratch area (copy.c) ---- */

/*
 * What the kernel reads after ward's decision must be what ward decided
 * on. A decoder that reads an argument from the tracee's memory (a path,
 * a sockaddr, a msghdr, an open_how, an environment) also puts the bytes
 * it judged into t->cp; when the syscall is allowed, they are written to
 * a slot of a scratch area the tracee can read but not write (PROT_READ,
 * sealed with mseal, writable only through ward's /proc/PID/mem) and the
 * argument registers are pointed at the copy. At the syscall's exit stop
 * the registers are restored and the slot is freed.
 */
#define COPY_SLOT   (32u * 1024) /* bytes per slot: one syscall's copies */
#define COPY_SLOTS  64		 /* slots per scratch area */
#define COPY_RELOCS 1024	 /* pointers inside one slot */

struct argcopy {
	size_t used;
	int nregs;
	struct {
		int arg;  /* 0..5 */
		bool mem; /* val is an offset in buf, else a value */
		uint64_t val;
		/* mem: the bytes are the len bytes the decoder read at the
		 * code's own register value (0: something else, e.g. a
		 * rewritten struct). Such an argument may be left in place
		 * when its memory is the thread's alone (scratch_apply). */
		uint32_t src_len;
	} regs[6];
	int nrelocs;
	uint32_t reloc[COPY_RELOCS]; /* offsets of u64 fields in buf that
				      * hold buf offsets (made addresses) */
	uint64_t args[6];	     /* the code's own argument registers */
	bool in_place;		     /* no copy needed (scratch_in_place) */
	long nr;		     /* >= 0: run this syscall instead */
	uint64_t mmsg;		     /* sendmmsg sent as sendmsg: the
				      * code's mmsghdr[0], for msg_len */
	/* An argument rebuilt from pieces of the code's memory with nothing
	 * left out (execve's environment: its array, then each string; the
	 * relocations are its own): it may stay in place when every piece
	 * is the thread's alone (scratch_in_place). */
	int pieces_arg; /* -1: none */
	int npieces;
	struct {
		uint64_t addr, len;
	} piece[COPY_RELOCS];
	unsigned char buf[COPY_SLOT] __attribute__((aligned(8)));
};

/* One address space (mm) of the run and its scratch area. */
struct space {
	int refs;
	uint64_t base; /* the area in the tracee; 0: not made yet */
	bool seal_tried, sealed;
	int map_err;   /* the last mmap of the area failed with this */
	uint64_t busy; /* slots in use */
	int mem_fd;    /* /proc/PID/mem of a task using this mm, or -1 */
	int maps_fd;   /* /proc/PID/maps (PROCMAP_QUERY), or -1 */
	int fd_dir;    /* /proc/TID/fd of its one task (O_PATH), or -1 */
	pid_t fd_dir_tid;
	bool async; /* it may have kernel writers of its own (AIO):
			* always copy */
};

void copy_reset(struct argcopy *c);
/* Append len bytes aligned to align; returns the offset or -E2BIG. */
long copy_put(struct argcopy *c, const void *data, size_t len, size_t align);
/* Point argument arg at data copied into the slot. 0 or -E2BIG. */
int copy_arg(struct argcopy *c, int arg, const void *data, size_t len);
/* The same, for data read at the code's register value of arg itself
 * (len bytes): such an argument may stay in place (scratch_apply). */
int copy_arg_src(struct argcopy *c, int arg, const void *data, size_t len);
/* Point argument arg at an offset already in the slot. */
void copy_arg_at(struct argcopy *c, int arg, uint64_t off);
/* One piece (len bytes at addr of the code's memory) of an argument
 * rebuilt unchanged; then the argument itself. 0 or -E2BIG. */
int copy_piece(struct argcopy *c, uint64_t addr, uint64_t len);
void copy_arg_at_pieces(struct argcopy *c, int arg, uint64_t off);
/* The same, when the len bytes at off were read at arg's own value. */
void copy_arg_at_src(struct argcopy *c, int arg, uint64_t off, size_t len);
/* Set argument arg to a value (restored at exit like the others). */
void copy_arg_val(struct argcopy *c, int arg, uint64_t val);
/* The u64 at offset at holds a slot offset to be made an address. */
int copy_reloc(struct argcopy *c, size_t at);

struct tracee;
/* Before decoding: the tracee's address space needs its scratch area.
 * Returns 0 when ready, 1 when a syscall was injected to make it (the
 * stopped syscall runs again afterwards; resume nothing), -errno when it
 * cannot be made (the syscall is then denied with that errno). */
int scratch_prepare(struct tracer *t, struct tracee *tc);
/* An allowed syscall: write t->cp to a slot and point the registers at
 * it. Returns 1 when copies were made (resume with PTRACE_SYSCALL, expect
 * the exit stop), 0 when there was nothing to copy, -errno on failure
 * (the run is stopped: nothing runs on unchecked memory). */
int scratch_apply(struct tracer *t, struct tracee *tc);
/* After decoding: the arguments may stay where they are, because only
 * the stopped thread could change them while the syscall runs (copy.c
 * says when). Stays true until the thread is resumed. */
bool scratch_in_place(struct tracer *t, struct tracee *tc, long nr);
/* A new tracee: its address space (its process's, its parent's when
 * they share memory, else a new one). 0 or -ENOMEM. */
int scratch_attach(struct tracer *t, struct tracee *tc);
/* An allowed syscall that gives this tracee's address space writers of
 * its own in the kernel (io_setup): its arguments are always copied. */
void scratch_mark_async(struct tracee *tc);
/* At a syscall-exit stop (the caller continues the thread): 1 when it
 * was the code's own call, with the value it returns to the code in *ret
 * (its copies given back), 0 for ward's injected call, -1 when the thread
 * is gone. */
int scratch_on_exit(struct tracer *t, struct tracee *tc, long long *ret);
/* The tracee runs a new image (exec) or is gone: drop its copies and its
 * hold on the address space. */
void scratch_detach(struct tracee *tc);
/* Whether the kernel offers mseal (probed once on a page of ward's). */
bool scratch_can_seal(void);
/* Whether it answers PROCMAP_QUERY (Linux 6.11): arguments in memory
 * private to their thread can then stay in place. */
bool scratch_can_query(void);

/* ---- path resolution (resolve.c) ---- */

#define RESOLVE_CWD (-100) /* AT_FDCWD */

/*
 * Resolve raw as thread tid of process tgid would: relative to its cwd or
 * to its dirfd, symlinks followed as the kernel would (the final one only
 * when follow), /proc/self and /proc/thread-self meaning the tracee.
 * out gets an absolute path; *exists whether it names an existing file.
 * A raw of "" means the dirfd itself (AT_EMPTY_PATH). Returns 0, or
 * -errno when the directory the path is relative to cannot be found
 * (-EBADF bad dirfd, -ENOTDIR, -ESRCH).
 */
int tracer_resolve(pid_t tid, pid_t tgid, int dirfd, const char *raw,
		   bool follow, char *out, size_t n, bool *exists);
/* The resolution cache for directories the policy keeps fixed (resolve.c):
 * init before the run (NULL: no cache), free after. */
void tracer_dircache_init(const struct policy *p);
void tracer_dircache_free(void);
int tracer_dircache_used(void); /* directories cached (for tests) */
/* The run's root directory (O_PATH, owned by resolve.c) while paths are
 * resolved in its mount namespace; -1: ward's own root. */
int tracer_resolve_root(void);
/* Lexical normalization of an absolute path in place (//, ., ..). */
void tracer_normalize(char *path);

/* The child side (spawn.c, ns.c, start.c, tracer_landlock_build) runs on
 * stacks of the spawn area that AddressSanitizer does not know of: under
 * it, not instrumented (its stack checks would be false, and its
 * __asan_handle_no_return before each noreturn call warns). */
#if defined(__SANITIZE_ADDRESS__)
#define SPAWN_SIDE __attribute__((no_sanitize_address))
#else
#define SPAWN_SIDE
#endif

/* ---- namespaces (ns.c; the clone and the child's side in spawn.h) ---- */

/* The CLONE_NEW* flags the run asks for. */
int tracer_ns_plan(const struct tracer *t);
/* The namespaces layer: flags in effect (0: none, the clone's errno). */
void tracer_ns_record(struct tracer *t, int flags, int err);
/* A stop of the run's init: handled (true), or pid is not the init. */
bool tracer_ns_init_stop(struct tracer *t, pid_t pid, int status);
/* The host pid of the tracee the code calls nspid (a pid or tid of its
 * own pid namespace), or 0 when no tracee has it. Without a pid namespace
 * the same number, if it is a tracee's. */
pid_t tracer_ns_host_pid(struct tracer *t, pid_t nspid);
/* The reverse: the code's number for tracee host, or 0. */
pid_t tracer_ns_pid(struct tracer *t, pid_t host);
/* The process group of host as the code sees it (0 if unknown). */
pid_t tracer_ns_pgrp(pid_t host);
/* A process of the run that has ended but is not yet reaped by its parent
 * (so no longer a tracee, yet still the run's: its pid and group cannot be
 * another's until then), named by the code's pid (group false) or process
 * group (group true): its host pid, or 0. Only the last 64 ends are known
 * (t->gone). */
pid_t tracer_ns_unreaped(struct tracer *t, pid_t id, bool group);
/* Resolve paths in the run's mount namespace from now on (resolve.c):
 * root_fd is an O_PATH fd of the run's root directory, owned by the
 * resolver until tracer_dircache_free. */
void tracer_resolve_ns(struct tracer *t, int root_fd);

/* ---- /proc (procfs.c) ---- */

/* Reads a small file (at most n-1 bytes, NUL-terminated). Returns the
 * length or -errno. */
ssize_t tracer_read_file(const char *path, char *buf, size_t n);
/* Reads /proc/PID/WHAT (at most n-1 bytes, NUL-terminated). Returns the
 * length or -errno. */
ssize_t proc_read(pid_t pid, const char *what, char *buf, size_t n);
/* /proc/PID/stat from field 3 (state) on, in buf; NULL on failure. */
const char *proc_stat_fields(pid_t pid, char *buf, size_t n);

/* ---- backtraces (bt.c) ---- */

/* Walk the stopped thread's native stack (through the unwinder helper,
 * unwinder.h): JSON array text of {"ip","module","offset"} into buf, the
 * last frame with "stop" when the walk ended early for a reason of its
 * own (tgid: its process). Returns 0, or -errno (-ENOSYS: no libunwind;
 * nothing to record). */
int tracer_backtrace(pid_t tid, pid_t tgid, char *buf, size_t n);
/* The run's end: the helper is killed. */
void tracer_backtrace_release(void);

/* ---- Landlock (landlock.c; functions below) ---- */

/* The plan: what the ruleset handles and grants; detail and active are
 * the layer record. */
struct tracer_landlock {
	int abi;
	bool active; /* a ruleset is applied */
	__u64 handled_fs, handled_net, scoped;
	struct policy_bound bound;
	char ld_so[256];   /* the interpreter's dynamic loader, or "" */
	char missing[160]; /* what this ABI lacks that the policy would use */
	char detail[200];  /* the layer record */
#ifdef WARD_TEST_HOOKS
	bool test_fs_off; /* TEST ONLY: tracer_landlock_test_fs_off */
#endif
};

/* ---- the run's file tree (view.c) ---- */

enum view_op_kind {
	VOP_DIR,  /* a directory of the view's own tmpfs */
	VOP_LINK, /* a symlink (arg: its target) */
	VOP_BIND, /* the host's arg, read-only, recursive, at dst */
};

struct view_op {
	enum view_op_kind kind;
	bool file; /* VOP_BIND of a non-directory */
	char *dst; /* relative to the view's root */
	char *arg;
};

/* The plan: operations in order, parents first. */
struct tracer_view {
	bool active;	   /* planned: build it */
	bool host;	   /* "view": "host" */
	bool root_is_host; /* the root is the host's, all of it */
	struct view_op *ops;
	size_t nops, cap, nbinds;
};

/* In ward, before the clone: the policy's view resolved on the host.
 * 0, or -errno with err filled. */
int tracer_view_plan(const struct policy *p, const char *interpreter,
		     const char *workdir, struct tracer_view *v, char *err,
		     size_t n);
void tracer_view_free(struct tracer_view *v);
/* In the run's init (new mount namespace, before the code's process):
 * builds the view, with the workdir (wd: an open_tree clone) at
 * TRACER_HOME, a fresh /proc when own_proc, and makes it the root. Fails
 * the set-up (spawn_fail) on any error. */
void tracer_view_build(const struct tracer_view *v,
		       const struct tracer_opts *o, int wd, bool own_proc);
/* The PT_INTERP of the ELF file at path into buf; "" if none. */
void tracer_elf_interp(const char *path, char *buf, size_t n);

/* ---- the run (loop.c, output.c) ---- */

struct tracee {
	pid_t tid;
	pid_t tgid;
	pid_t ppid;		   /* of the process (its leader's parent) */
	int serial;		   /* audit identity within the run */
	unsigned long clone_flags; /* of this thread's last allowed clone */
	bool clone_pending; /* that clone allowed, its new task not yet seen */
	char *exe, *argv;   /* leaders: the program and its argv (JSON),
			      * what a fork child starts with; owned */
	bool in_exec;	    /* an execve was allowed and not yet completed */
	char exec_path[WARD_PATH_MAX]; /* approved at execve entry */
	dev_t exec_dev;		       /* ... and the file it named */
	ino_t exec_ino;
	/* argument copies (copy.c) */
	struct space *sp; /* its address space; NULL until needed */
	int slot;	  /* slot held by the syscall in flight, or -1 */
	long inject;	  /* syscall injected, awaiting its exit; 0 none */
	bool execed;	  /* has run a program (before: ward's own code) */
	/* created by vfork (CLONE_VM|CLONE_VFORK, seen at the cloning
	 * thread's own stop) and not execed since: the thread that made it
	 * runs no code of its own until this one execs or exits */
	bool vfork_child;
	uint64_t mmsg; /* sendmmsg sent as sendmsg (see argcopy) */
	struct user_regs_struct saved; /* registers before the copy */
	pid_t nspid; /* its pid in the code's pid namespace; 0: not read yet */
	/* its allowed call is in the kernel and its row waits for the
	 * call's exit stop (evq_hold; else, when held, for retbpf.c) */
	bool exit_stop;
	/* an "ask" (ask.c): the question this thread waits on, stopped at
	 * its seccomp stop (0: none), and then its answer */
	unsigned ask_id;
	long long ask_deadline_ms, ask_t0_ns;
	int ask_answer; /* ASK_* (ask.c) once answered */
	char ask_by[96];
	char *ask_key; /* rule, access and target asked about; owned */
	/* the question, for its row if the thread ends while it waits */
	int ask_nr;
	const char *ask_sys, *ask_rule; /* static; the policy's */
	char *ask_target, *ask_question; /* owned */
	struct tracee *next; /* hash chain */
};

#define TRACEE_BUCKETS 1024

struct tracer {
	const struct tracer_opts *o;
	struct tracer_result *res;
	pid_t root;	/* the first process (session leader) */
	pid_t self_pid; /* ward's pid, to undo /proc/self in resolution */
	struct {
		int flags;  /* CLONE_NEW* the run has (0: none) */
		pid_t init; /* the run's init (pid 1 inside), or 0 */
		/* a pidfd of the init (-1: none): tracer_stop kills it, and
		 * with it everything in the namespace, even before the code's
		 * first process exists */
		int init_fd;
	} ns; /* namespaces (ns.c) */
	struct {
		int state;	  /* zygote.c; 0: not a zygote child */
		pid_t a, b;	  /* its set-up processes (host pids) */
		bool a_detached, b_detached;
		int ruleset;	  /* the Landlock ruleset made for C, or -1 */
		bool landlocked;  /* C restricted itself with it */
		long long filters; /* A's Seccomp_filters at its seize */
		uid_t uid;
		gid_t gid;
		unsigned long long ns_before[7]; /* A's namespaces then */
	} zyg;
	struct {
		void *area; /* the children's context and stacks; NULL */
		size_t len;
		pthread_t thread; /* the spawner, while started */
		bool started;
		int end_r, end_w; /* its pipe: closing end_w ends it */
	} spawn;		  /* start.c */

	/* tracee table: written by the main thread under lock; the output
	 * thread reads it under lock only to kill everyone */
	pthread_mutex_t lock;
	struct tracee *tab[TRACEE_BUCKETS];
	long long live; /* tracees alive */
	/* clones allowed whose task is not yet a tracee (clone_pending):
	 * with several threads in clone at once, the kernel's count (the
	 * pids cgroup) is ahead of live. Main thread only. */
	long long clones_pending;
	int ncpus; /* CPUs ward may run on (for spinning) */
	int next_serial;

	/* stop requests from the output thread (timeout, signal) or from
	 * the main thread (policy kill, limit, audit failure): first wins */
	_Atomic int stop_reason; /* enum stop_reason */
	char stop_cause[512];

	/* output thread */
	pthread_t io_thread;
	bool io_started;
	bool side_seen; /* a first frame came on side_in (copy_side) */
	int out_fd[3];	/* read ends of the code's stdout (1), stderr (2) */
	int err_fd;	/* read end of the child set-up error pipe */
	int wake_fd;	/* eventfd: main tells the thread to finish */
	int sig_fd;	/* signalfd: SIGINT, SIGTERM, SIGHUP */
	int timer_fd;	/* timerfd: wall time limit */
	long long wall_ms; /* the limit timer_fd stands for (opts.wall_fd) */
	size_t kept[3]; /* output bytes kept (capped by output_bytes) */
	size_t cap[3];	/* capacity of res->out[] */

	/* allowed events waiting for the output thread to record them */
	pthread_mutex_t q_lock; /* the queue */
	pthread_mutex_t w_lock; /* held while writing events: keeps order */
	struct evrec *q_head, *q_tail;
	size_t q_len;
	/* rows of allowed calls in the kernel now, by tid, waiting for their
	 * result (evq_hold); under q_lock */
	struct evrec *held[64];
	atomic_int n_held;
	/* the results from the kernel's sys_exit (retbpf.c); NULL: exit
	 * stops */
	struct retbpf *rb;
	int kick_fd; /* eventfd: the queue is long, write it now */
	/* questions of "ask" rules (ask.c): threads waiting, the next id,
	 * what was allowed for the run, answer bytes not yet a line */
	int n_asking;
	atomic_uint ask_seq; /* the proxy's threads take ids too */
	atomic_bool ask_closed; /* opts.ask_fd gave EOF or garbage: deny */
	/* the proxy's questions (net.ask_domains; ask.c): asked from its
	 * connection threads, answered by the loop's reader. pask_mu guards
	 * the list, the stop flag and what was allowed for the run; the loop
	 * polls opts.ask_fd while n_pasking > 0, and a question that finds it
	 * in waitpid (in_wait) interrupts it with ASK_KICK_SIG. */
	struct tracer_pask *pasks;
	pthread_mutex_t pask_mu;
	pthread_cond_t pask_cv;
	bool pask_ready, pask_stop;
	char **pask_always;
	size_t n_pask_always;
	atomic_int n_pasking;
	atomic_bool in_wait;
	pid_t loop_tid;
	char **ask_always;
	size_t n_always;
	char ask_buf[4096];
	size_t ask_len;

	/* the memory limit as a cgroup (cgroup.c); "" when not used */
	char cg_dir[WARD_PATH_MAX];
	bool cg_v2;
	int cg_fd;	       /* the slot directory, flock()ed for the run */
	long long cg_oom_base; /* the slot's OOM kill count before the run */
	/* the process limit as a pids cgroup (cgroup.c); "" when not used;
	 * on v2 the same directory as cg_dir */
	char cg_pids_dir[WARD_PATH_MAX];
	bool cg_pids_v2;
	int cg_pids_fd;		/* v1: its own slot directory, flock()ed */
	int cg_pids_events;	/* pids.events, read at clones and exits */
	long long cg_pids_base; /* forks refused there before the run */
	char cg_mem_why[200];	/* why a controller is not used ("" if it */
	char cg_pids_why[200];	/* is), for the run's layers */
	/* v1: the child enters its slots itself (tracer_cgroup_self) and
	 * says how it went on this pipe, a byte per controller */
	bool cg_self[2]; /* memory, pids: the child enters that one */
	int cg_ack_fd;	 /* the pipe's read end; -1: none */

	struct tracer_landlock landlock; /* the plan (landlock.c) */
	struct tracer_view view;	 /* the run's file tree (view.c) */
	int view_w; /* the child waits here for the view's plan ('v') */

	/* CPU pinning (pin.c) */
	atomic_bool pinned;   /* main and output threads (pin.c) */
	atomic_bool unpinned; /* was pinned: new tasks get every CPU back */
	int pin_cpu;	      /* the CPU shared while pinned */
	pid_t main_tid;	      /* the thread that pinned itself */
	cpu_set_t cpus;	      /* ward's CPU set before pinning */
	long long pin_seen_ns, pin_seen_wait; /* tracer_pin_watch */
	bool pin_busy;
	/* for the run's "cpu-pin" layer (tracer_pin_record): when pinning
	 * began and ended, and why it ended (a static string) */
	long long pin_begin_ns, pin_end_ns;
	const char *unpin_why;

	_Atomic int audit_err; /* first audit error (-errno) */
	/* the record could not be written (evq_failed): nothing more of the
	 * code's output is passed on, and the run is stopped */
	atomic_bool rec_failed;
	/* the run's record: o->audit, or what o->record returned (set on the
	 * record thread under w_lock; NULL until then, or if it failed) */
	struct audit *audit;
	/* the record thread (o->record), from before the clone; joined by
	 * the output thread before it writes anything (tracer_record_wait) */
	pthread_t rec_thread;
	bool rec_started;
	bool rec_on_caller; /* on o->record_run_on's thread, not rec_thread */
	/* the child's go bytes (loop.c start_child): go_fd is the write end
	 * of its sync pipe; under go_lock, go_sent: the first byte is out;
	 * rec_state: the record is pending (0), begun (1), failed (-1) */
	int go_fd;
	pthread_mutex_t go_lock;
	bool go_sent;
	int rec_state;
	char rec_err[512]; /* why the record failed (record thread) */
	bool copy_warned;  /* said once that copies are not sealed */
	/* tids whose end ward has seen, newest last: a fork event that
	 * comes after its child's end names no new process (loop.c) */
	pid_t gone[64];
	unsigned n_gone;
	/* new tasks whose first stop came before their parent's clone
	 * event: held stopped until the event names them (identified from
	 * it: no /proc reads, a vfork child known as one), or PARK_US pass
	 * (loop.c); under lock */
	struct {
		pid_t tid;
		long long since_us;
	} parked[16];
	int nparked;
	bool copy_private;    /* arguments in private memory may stay in place
			    * (copy.c) */
	bool files_shared;    /* a clone shared an fd table across processes */
	long long n_copied;   /* allowed syscalls given copies */
	long long n_in_place; /* ... whose arguments were the thread's alone */
	struct tracer_proxy *proxy; /* the egress proxy (proxy.c), or NULL */
	struct argcopy cp;    /* argument copies of the current stop */
	struct ward_event ev; /* scratch for the current stop */
	char bt[4096];	      /* scratch for backtraces */
	char pyf[16384];      /* scratch for Python frames (pyframe.h) */
};

enum stop_reason {
	STOP_NONE = 0,
	STOP_TIMEOUT,
	STOP_SIGNAL, /* SIGINT/TERM/HUP to ward: aborted */
	STOP_POLICY, /* a kill verdict */
	STOP_LIMIT,  /* a limit (processes, ...) */
	STOP_AUDIT,  /* the record could not be written */
	STOP_ENDED,  /* a session's interpreter exited (end_with_root):
		      * the rest go; the status is its exit's */
};

/* Ask for the whole run to end (idempotent; first reason and cause win);
 * kills every tracee. Safe from any thread. */
void tracer_stop(struct tracer *t, enum stop_reason why, const char *cause);

struct tracee *tracee_find(struct tracer *t, pid_t tid);

/* Shared by the spawned child's set-up (ns.c, view.c) and a zygote
 * fork's, made from outside (zygote.c); no allocation, -errno: */
int tracer_write_text(const char *path, const char *text); /* whole */
int tracer_loopback_up(void); /* in the caller's network namespace */
/* /tmp's and /dev/shm's tmpfs mount options for o's run */
void tracer_tmp_opts(const struct tracer_opts *o, char *buf, size_t n);

/* A signal that stops a process (a group-stop, not a tracer's stop). */
static inline bool tracer_is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN ||
	       sig == SIGTTOU;
}

/* ---- the zygote (zygote.c) ---- */

/* Template: hand off the process it forked (held: its first stop was
 * seen and held, loop.c's park). */
void tracer_zyg_handoff(struct tracer *t, pid_t pid, bool held);
/* Child: A seized (tracer_opts.zygote_child); 0 or -errno (run stopped). */
int tracer_zyg_attached(struct tracer *t, pid_t a);
/* A stop of a set-up process, handled (true), before anything else. */
bool tracer_zyg_stop(struct tracer *t, pid_t pid, int status);
/* The run's end: what the set-up holds, closed. */
void tracer_zyg_end(struct tracer *t);
/* The set-up is under way (its processes may stop). */
bool tracer_zyg_pending(const struct tracer *t);
/* A call that only a zygote run can trap (unshare, seccomp, a filter's
 * install by prctl) outside a fork's set-up: the floor kills it. */
bool tracer_zyg_floor(long nr, const uint64_t args[6]);
/* loop.c's, for zygote.c: a task held for its parent's event (true when
 * it was), released as a tracee; a tracee added; the results layer. */
bool tracer_unpark(struct tracer *t, pid_t tid);
struct tracee *tracer_release_parked(struct tracer *t, pid_t tid);
struct tracee *tracer_tracee_add(struct tracer *t, pid_t tid);
void tracer_results_layer(struct tracer *t);

/* Joins the record thread (o->record, begun before the clone; it also
 * sends the child's go for its execve): the output thread, before it
 * writes anything, else the main thread at the end (loop.c). */
void tracer_record_wait(struct tracer *t);

/* The event queue (evq.c). Each returns 0 or -EIO (then the run is
 * stopped: nothing runs unrecorded). */
struct audit_event;
struct evrec;
int evq_push(struct tracer *t, const struct audit_event *e);
/* An allowed event whose call the kernel is about to run in thread tid:
 * its row, held (not queued) until the call returns (a thread has one
 * call at a time: a row it still held is queued first, without result).
 * Out of memory: queued at once, without result. */
int evq_hold(struct tracer *t, pid_t tid, const struct audit_event *e,
	     bool by_bpf);
/* Does tid hold a row? */
bool evq_held(struct tracer *t, pid_t tid);
/* Frees the held rows left (a run whose start failed). */
void evq_drop_held(struct tracer *t);
/* Queues tid's held row with the call's result (has: false, the call
 * never returned: a successful exec, the thread's end), when it holds one
 * of syscall nr (nr < 0: any). Any thread. */
int evq_resolve(struct tracer *t, pid_t tid, int nr, bool has,
		long long result);
/* The same for a result retbpf.c read, written by the kernel at time at
 * (CLOCK_MONOTONIC): only for a row held for it (by_bpf), before at. */
int evq_resolve_at(struct tracer *t, pid_t tid, int nr, long long result,
		   long long at);

/* Results from the kernel's sys_exit tracepoint (retbpf.c). open: 0 with
 * t->rb set, or -errno and why. covers: nr's result comes that way (else
 * the call takes its exit stop). drain: hands every result written so far
 * to evq_resolve (any thread); the number read. */
struct retbpf;
int retbpf_open(struct tracer *t, char *why, size_t wn);
void retbpf_close(struct tracer *t);
bool retbpf_covers(const struct tracer *t, long nr);
long long retbpf_drain(struct tracer *t);
/* Can nr's result come from the sys_exit program: a syscall that always
 * stops at ward, and never allowed in the kernel by its arguments
 * (filter.c). */
bool tracer_result_by_bpf(long nr);
int evq_write_now(struct tracer *t, const struct audit_event *e);
int evq_process_start(struct tracer *t, const struct audit_process *p);
int evq_process_exec(struct tracer *t, int serial, long long ts_ns,
		     const char *exe, const char *argv_json);
int evq_process_exit(struct tracer *t, int serial, long long ts_ns,
		     int exit_code, int signal);
int evq_drain(struct tracer *t);
/* How many records wait in the queue. */
size_t evq_len(struct tracer *t);
/* The record cannot be written: stop the run (nothing runs unrecorded),
 * with the database's error as the cause. Any thread. */
void evq_failed(struct tracer *t);
/* evq_failed() was called. */
bool evq_record_failed(struct tracer *t);

/* Memory and pids cgroups (cgroup.c). setup: 0 when a slot for either is
 * held for this run (else -errno: the rlimit and ward's count are used);
 * records the layers and says once on stderr what is missing. enter: put
 * pid in them; 0 when the memory limit is now a cgroup's. oom_kills:
 * processes the kernel killed there for memory during this run; release:
 * give the slots back (after the last tracee is gone). */
int tracer_cgroup_setup(struct tracer *t);
/* Before the clone: for each v1 slot, the slot's tasks file opened for
 * the child to enter it itself (self[0] memory, self[1] pids; -1: ward
 * enters it) and *ack_w, where the child says how it went (-1: nothing
 * to say). The fds are the caller's to close after the clone. */
void tracer_cgroup_self(struct tracer *t, int self[2], int *ack_w);
int tracer_cgroup_enter(struct tracer *t, pid_t pid);
long long tracer_cgroup_oom_kills(struct tracer *t);
void tracer_cgroup_release(struct tracer *t);
/* The pids cgroup refused a fork during this run (the code saw EAGAIN);
 * check_pids: then end the run at its process limit (any thread; the
 * output thread polls cg_pids_events for POLLPRI, the kernel's notice). */
bool tracer_cgroup_pids_refused(struct tracer *t);
void tracer_cgroup_check_pids(struct tracer *t);
/* The cause of a run ended at its process limit, by ward's count or the
 * kernel's: the same text either way. Returns buf. */
const char *tracer_procs_cause(const struct tracer *t, char *buf, size_t n);
/* Give back one controller's slot (a failed enter, or the end). */
void tracer_cgroup_release_memory(struct tracer *t);
void tracer_cgroup_release_pids(struct tracer *t);

/* Landlock (landlock.c): the ABI the kernel offers (0: none); a plan for
 * this policy and ABI, made in ward before fork (0 or -ENOMEM); the
 * ruleset built from it in the child (returns its fd, or -errno with *what
 * naming the step; no allocation). */
int tracer_landlock_abi(void);
int tracer_landlock_plan(const struct policy *p, const char *interpreter,
			 int abi, struct tracer_landlock *ll);
void tracer_landlock_free(struct tracer_landlock *ll);
int tracer_landlock_build(const struct tracer_landlock *ll, const char **what);
/* Plan Landlock for the run and record the layer (warns once on stderr
 * when it is missing or partial). 0, or -errno with setup_error set. */
int tracer_landlock_setup(struct tracer *t);
/* A TEST ONLY switch from ward's environment (WARD_TEST_*: stalls, a lower
 * Landlock ABI, forced copies, a failing unwinder): read only by the
 * test-hooks build (build/ward-test-hooks, -DWARD_TEST_HOOKS); build/ward
 * reads none, so no environment can weaken or slow a real ward. */
static inline const char *tracer_test_env(const char *name)
{
#ifdef WARD_TEST_HOOKS
	return getenv(name);
#else
	(void)name;
	return NULL;
#endif
}

#ifdef WARD_TEST_HOOKS
/*
 * TEST ONLY, in the test-hooks build (-DWARD_TEST_HOOKS,
 * build/ward-test-hooks; build/ward has none of it). With
 * WARD_TEST_SUPERVISOR_FS_OFF=1 in ward's environment and
 * Landlock active, a file access no policy rule names (rule "default") is
 * allowed by the supervisor (rule "test.fs-off"), so that tests can show
 * what the Landlock floor stops on its own. Floors and deny rules still
 * apply; without Landlock the switch is ignored. Changes *v in place.
 */
void tracer_landlock_test_fs_off(const struct tracer *t,
				 const struct ward_event *ev,
				 struct policy_verdict *v);
#endif

/* Layers (layers.c): does the run require this layer? Are all required
 * layers recorded active? (0, or -ENOTSUP with res->setup_error set.) */
bool tracer_requires(const struct tracer_opts *o, const char *layer);
int tracer_layers_required(struct tracer_result *res,
			   unsigned long long require);

/* CPU pinning (pin.c): start before fork (the child inherits it), give
 * ward's other threads the other CPUs (tracer_thread_start: creates one,
 * fn(t), 0 or -errno), undo everywhere when the code may run
 * in parallel (a second thread, a fork). tracer_pin_start returns 0 or
 * -errno. */
int tracer_pin_start(struct tracer *t);
int tracer_thread_start(struct tracer *t, pthread_t *th, void *(*fn)(void *));
/* A new task of a run no longer pinned: it may have inherited the pin
 * from a parent that had it when it forked. */
void tracer_pin_follow(struct tracer *t, pid_t tid);
/* why: for -v and the record ("the run ended" when NULL) */
void tracer_unpin(struct tracer *t, const char *why);
/* Main thread, once every thread that may unpin has ended: a run that was
 * pinned gets a "cpu-pin" layer saying which CPU, for how long, and what
 * ended it. An unpinned run gets none. */
void tracer_pin_record(struct tracer *t);
/* Output thread, every few tens of ms: unpins when the code waited for
 * its CPU much of the time since the last look (other work on it). */
void tracer_pin_watch(struct tracer *t);

/* Output thread: start/finish. */
int tracer_io_start(struct tracer *t);
void tracer_io_finish(struct tracer *t);

long long tracer_now_ns(void);

/* ---- the egress proxy (proxy.c) ---- */

/* With net.allow_domains: takes the proxy's socket from the init (its fd
 * init_fd, made in the run's network namespace) and starts the proxy's
 * threads. 0 (also when the policy has no domains), -EPERM (the run has
 * the host's network namespace), -errno. */
int tracer_proxy_start(struct tracer *t, pid_t init, int init_fd);
/* Ends every connection and thread of the proxy; their rows are queued.
 * No-op without one. */
void tracer_proxy_stop(struct tracer *t);
/* envp with the proxy variables (HTTP_PROXY, ...; any given dropped): a
 * new array (free it, not its strings), or NULL. */
char **tracer_proxy_env(char *const *envp);

/* ---- ask.c: the questions of "ask" rules ---- */

/* v is POLICY_ASK for ev (target as recorded): returns 1 when tc now
 * waits for the answer (left stopped; tracer_ask_poll resumes it), or 0
 * with v turned into the answer (allow or deny, reason saying who
 * answered and when). */
int tracer_ask(struct tracer *t, struct tracee *tc,
	       const struct ward_event *ev, const char *target,
	       struct policy_verdict *v);
/* With questions waiting: reads answers (waiting up to us microseconds,
 * < 1 s) and ends overdue waits; each thread answered is handed to
 * again() at its stop (its syscall decided once more, the answer then
 * applies). */
void tracer_ask_poll(struct tracer *t, int us,
		     void (*again)(struct tracer *, struct tracee *));
/* tc is gone (or the run ends): its question no longer waits. */
void tracer_ask_gone(struct tracer *t, struct tracee *tc);
void tracer_ask_free(struct tracer *t);
/* The proxy's questions: set up by tracer_proxy_start (in the loop's
 * thread), ended by tracer_proxy_stop (every waiting one denied). */
int tracer_ask_proxy_init(struct tracer *t);
void tracer_ask_proxy_stop(struct tracer *t);
void tracer_ask_proxy_free(struct tracer *t);
/* From a proxy connection thread: v is POLICY_ASK for target
 * ("name:port"). Asks on opts.ask_fd and waits (never on the loop's
 * thread) until the answer, the policy's ask_timeout or the run's end;
 * v becomes the answer as tracer_ask makes it. */
void tracer_ask_proxy(struct tracer *t, const char *target,
		      struct policy_verdict *v);
/* The loop, before it blocks in waitpid: false when a proxy question
 * waits (poll opts.ask_fd instead). */
bool tracer_ask_may_block(struct tracer *t);

#endif
