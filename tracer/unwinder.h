/*
 * unwinder.h - ward and its unwinder helper (tracer/ only).
 *
 * Everything that parses a file the code can name, write or replace (an
 * ELF image, its .eh_frame_hdr and .eh_frame, a symbol table) runs in a
 * helper process, never in ward: ward's own binary re-executed
 * (tracer_unwinder_main), not ward's child, without privileges, under a
 * seccomp filter of its own that allows no open, and killed when it takes
 * longer than a budget. ward opens the files it needs itself, in a way
 * that cannot block or run a device's open (unwinder.c), and passes the
 * descriptors over the socket.
 *
 * The protocol: one SOCK_SEQPACKET socket; each message is one record of
 * a fixed-size struct below, its first field the type. ward asks (UW_UNWIND
 * or UW_SYMS), the helper may ask for files (UW_NEED, answered by UW_FILE)
 * and ends each request with one answer (UW_FRAMES or UW_SYMS_DONE). The
 * helper speaks first, once: UW_HELLO with a pidfd of itself, sent before
 * it has read anything of the code's.
 */
#ifndef WARD_TRACER_UNWINDER_H
#define WARD_TRACER_UNWINDER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum {
	UW_MAX_FRAMES = 32,	   /* native frames recorded */
	UW_MAX_MAPS = 8192,	   /* mappings sent (more: cut, said) */
	UW_MAPS_TEXT = 8 << 20,	   /* bytes of /proc/TID/maps read at most */
	UW_STACK_MAX = 128 * 1024, /* stack bytes copied from RSP up */
	UW_BUDGET_MS = 250,	   /* one request, spawning included */
	UW_MAX_FAILURES = 3,	   /* per run; then no more requests */
	UW_MAX_ASKS = 64,	   /* files one request may ask for */
	UW_RECYCLE = 10000,	   /* requests one helper serves */
	UW_NREGS = 17,		   /* libunwind's x86-64 numbering, RAX..RIP */
	UW_RSP = 7,
	UW_RIP = 16,
};

#define UW_FILE_MAX (1ull << 30) /* larger files are refused */

enum uw_type {
	UW_HELLO = 0x77750001,
	UW_UNWIND,
	UW_SYMS,
	UW_NEED,
	UW_FILE,
	UW_FRAMES,
	UW_SYMS_DONE,
	UW_DYING,
};

/* uw_map.prot */
enum { UW_R = 1, UW_W = 2, UW_X = 4, UW_SHARED = 8 };

/* One line of /proc/TID/maps; ino 0: no file (anonymous, [stack], ...). */
struct uw_map {
	uint64_t start, end, off, ino;
	uint32_t major, minor, prot, pad;
};

/* helper -> ward, once, with the helper's pidfd (SCM_RIGHTS). */
struct uw_hello {
	uint32_t type;
	uint32_t unwind_ok; /* libunwind loaded; else why says why */
	char why[240];
};

/* ward -> helper, with a sealed memfd (SCM_RIGHTS) holding nmaps struct
 * uw_map (sorted by start) and then stack_len bytes of the stack, which
 * begins at address stack_start (the thread's RSP). */
struct uw_unwind_req {
	uint32_t type, seq;
	uint32_t nmaps, stack_len;
	uint64_t stack_start;
	uint64_t regs[UW_NREGS];
};

/* helper -> ward: the file of mapping index, please. */
struct uw_need {
	uint32_t type, seq;
	uint32_t index, pad;
};

/* ward -> helper: err 0 and the file (SCM_RIGHTS, read-only, size
 * bytes), or -errno and no file. */
struct uw_file {
	uint32_t type, seq;
	uint32_t index;
	int32_t err;
	uint64_t size;
};

/* Why an unwinding ended (uw_frames.stop). */
enum uw_stop {
	UW_END = 0,   /* the stack's end, or UW_MAX_FRAMES frames */
	UW_NO_INFO,   /* no unwind data for stop_addr */
	UW_NO_FILE,   /* ward gave no file for mapping stop_index */
	UW_BAD_ELF,   /* mapping stop_index's file is no usable ELF */
	UW_BAD_INFO,  /* the unwind data for stop_addr failed (stop_err) */
	UW_NO_STACK,  /* a read at stop_addr: not in the copy nor a file */
	UW_NO_UNWIND, /* libunwind is not loaded */
	UW_STOP_MAX,
};

/* helper -> ward: the request's end. */
struct uw_frames {
	uint32_t type, seq;
	uint32_t n, stop;
	uint64_t stop_addr;
	int32_t stop_index, stop_err; /* -1 / 0: none */
	uint64_t ip[UW_MAX_FRAMES];
};

/* ward -> helper, with one file (SCM_RIGHTS, size bytes): where are
 * _PyRuntime and Py_Version in it? */
struct uw_syms_req {
	uint32_t type, seq;
	uint64_t size;
};

/* helper -> ward. err: 0 (the rest is the answer) or -errno. */
struct uw_syms {
	uint32_t type, seq;
	int32_t err;
	uint32_t found;		      /* _PyRuntime is in the symbol tables */
	uint64_t min_vaddr;	      /* lowest PT_LOAD address, page-aligned */
	uint64_t rt_vaddr, ver_vaddr; /* _PyRuntime, Py_Version (or 0) */
};

/* helper -> ward, its last words: the fault it dies of (a signal). */
struct uw_dying {
	uint32_t type;
	int32_t sig;
};

/* ---- ward's side (unwinder.c): main thread only ---- */

/* The end of a request's budget starting now (CLOCK_MONOTONIC ns). */
long long uw_deadline(void);

/* /proc/TID/maps as read once: the table the helper gets and, for each
 * entry, the path the line names (NULL: none; into text). */
struct uw_maps {
	struct uw_map *m;
	const char **path;
	size_t n;
	bool cut; /* some left out (UW_MAX_MAPS, UW_MAPS_TEXT) */
	char *text;
};

/* Reads and parses /proc/TID/maps, at most UW_MAPS_TEXT bytes; past
 * UW_MAX_MAPS mappings, keeps those of files and the one holding keep (the
 * stack pointer). 0 or -errno; uw_maps_free after. */
int uw_maps_read(pid_t tid, uint64_t keep, struct uw_maps *mm);
void uw_maps_free(struct uw_maps *mm);
/* The index of the mapping holding addr, or -1. */
long uw_maps_find(const struct uw_maps *mm, uint64_t addr);

/* What the helper found, for the record. stop: "" when the frames end
 * where the stack does, else why they end there (text for the record). */
struct uw_result {
	int n;
	uint64_t ip[UW_MAX_FRAMES];
	char stop[200];
};

/*
 * Unwinds the thread tid of process tgid, stopped with registers regs
 * (libunwind's order), from the mapping table mm and stack_len bytes of
 * its stack copied from stack_start, by deadline (uw_deadline()).
 * Returns 0 with res filled (res->n may be 0, with res->stop saying why:
 * the helper failed, timed out, is off for this run), or -ENOSYS when
 * libunwind cannot be loaded (no frames at all; said once on stderr).
 */
int uw_unwind(pid_t tid, pid_t tgid, const uint64_t regs[UW_NREGS],
	      const struct uw_maps *mm, const void *stack, uint32_t stack_len,
	      uint64_t stack_start, long long deadline, struct uw_result *res);

/*
 * _PyRuntime and Py_Version in the file mapped by m (path: as the maps
 * line names it) in process pid, read by the helper. 0 with out filled,
 * -EPERM when the file is not one ward may hand over (not a regular file,
 * not the mapped one, too large: answer for good), or another -errno when
 * the helper failed (try again later).
 */
int uw_syms(pid_t pid, const struct uw_map *m, const char *path,
	    long long deadline, struct uw_syms *out);

/* End of a run: the helper is killed, the run's failures forgotten. */
void uw_release(void);

/* One record on sock with fd attached when fd >= 0 (SCM_RIGHTS): what
 * sendmsg(2) returns. Both sides' senders (unwinder.c, uwhelper.c). */
ssize_t uw_send(int sock, const void *buf, size_t len, int fd, int flags);

#endif
