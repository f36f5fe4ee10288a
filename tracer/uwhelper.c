/*
 * uwhelper.c - the unwinder helper: the one process that parses the code's
 * files (protocol and reasons in unwinder.h).
 *
 * `ward __unwinder` (tracer_unwinder_main) is started by ward with the
 * socket as fd 3 and an empty environment. That process forks the real
 * helper and exits at once, so that the helper is no child of ward's (ward
 * waits for its tracees with waitpid(-1) until none is left). The helper
 * then, before it reads anything:
 *   - loads libunwind (dlopen, as ward did: ward itself links none),
 *   - as root, becomes uid and gid 65534 with no supplementary groups,
 *   - sets no_new_privs, makes itself non-dumpable (the code, which runs
 *     as the same uid, cannot read its memory through /proc),
 *   - limits itself (address space outside sanitizer builds, CPU time,
 *     open files, no file writes, no core, no processes),
 *   - installs its own seccomp filter: reads and writes on the fds it
 *     has, memory without PROT_EXEC, and exit; no open, socket, fork,
 *     exec, kill or ptrace. A forbidden call kills it.
 * Then it sends ward a pidfd of itself (ward kills it through that, with
 * no race on its pid) and serves requests until ward closes the socket.
 *
 * Unwinding uses libunwind's remote API with accessors of our own: memory
 * comes from the stack copy ward sent or, inside a file mapping, from the
 * file (ward opens it when asked, by mapping index); the procedure info
 * from the mapping's PT_GNU_EH_FRAME table, searched by libunwind's
 * dwarf_search_unwind_table. libunwind never sees a path. Every read is
 * bounded by the file's size; the request by ward's budget.
 */
#include "tracer-int.h"
#include "unwinder.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libunwind.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef WARD_UNWIND_GENERIC_SO
#define WARD_UNWIND_GENERIC_SO "libunwind-x86_64.so.8"
#endif

enum {
	HELPER_FD = 3,
	SANDBOX_ID = 65534,
	FILE_CACHE = 32, /* files kept open, by device and inode */
	MAX_PHDRS = 64,
	CPU_SECONDS = 60,
};

/* ------------------------------------------------------------------ */
/* libunwind, loaded                                                   */

#define NAME_OF(f)  NAME_OF_(f)
#define NAME_OF_(f) #f

/* Not in libunwind's public headers, exported all the same (perf uses it
 * the same way): the binary search of an .eh_frame_hdr table. */
typedef int search_fn(unw_addr_space_t as, unw_word_t ip, unw_dyn_info_t *di,
		      unw_proc_info_t *pi, int need_unwind_info, void *arg);

static struct {
	__typeof__(unw_create_addr_space) *create_addr_space;
	__typeof__(unw_set_caching_policy) *set_caching_policy;
	__typeof__(unw_init_remote) *init_remote;
	__typeof__(unw_get_reg) *get_reg;
	__typeof__(unw_step) *step;
	search_fn *search;
} uw;

/* 0, or -ENOSYS with why filled (said by ward, once). */
static int uw_load(char *why, size_t n)
{
	void *g = dlopen(WARD_UNWIND_GENERIC_SO, RTLD_NOW | RTLD_LOCAL);

	if (!g) {
		snprintf(why, n, "%s", dlerror());
		return -ENOSYS;
	}
#define GEN(f) (uw.f = (__typeof__(uw.f))dlsym(g, NAME_OF(unw_##f)))
	if (!GEN(create_addr_space) || !GEN(set_caching_policy) ||
	    !GEN(init_remote) || !GEN(get_reg) || !GEN(step) ||
	    !(uw.search = (search_fn *)dlsym(
		      g, NAME_OF(UNW_OBJ(dwarf_search_unwind_table))))) {
		snprintf(why, n, "%s lacks a function ward needs",
			 WARD_UNWIND_GENERIC_SO);
		return -ENOSYS;
	}
#undef GEN
	return 0;
}

/* ------------------------------------------------------------------ */
/* messages                                                            */

/* Sends one record, with fd attached when fd >= 0. Blocking: ward reads
 * what it asked for, and kills the helper when it stops reading. */
static int send_msg(const void *buf, size_t len, int fd)
{
	for (;;) {
		ssize_t w = uw_send(HELPER_FD, buf, len, fd, 0);
		if (w == (ssize_t)len)
			return 0;
		if (w < 0 && errno == EINTR)
			continue;
		return w < 0 ? -errno : -EPROTO;
	}
}

/* Receives one record (its length, 0 at EOF, -errno) and at most one fd
 * into *fd (-1: none; extra ones are closed). */
static ssize_t recv_msg(void *buf, size_t cap, int *fd)
{
	char cbuf[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = { buf, cap };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	ssize_t n;

	*fd = -1;
	do
		n = recvmsg(HELPER_FD, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c;
	     c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int f;
			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(f));
			if (*fd < 0)
				*fd = f;
			else
				close(f);
		}
	}
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return -EPROTO;
	}
	return n;
}

/* ------------------------------------------------------------------ */
/* files: kept open by device and inode, with what their ELF said       */

struct elfinfo {
	bool done, ok;	/* parsed; an x86-64 ELF with PT_LOADs */
	bool has_table; /* a usable .eh_frame_hdr search table */
	int nload;
	struct {
		uint64_t off, filesz, vaddr, memsz;
	} load[MAX_PHDRS];
	uint64_t hdr_vaddr; /* the .eh_frame_hdr */
	uint64_t table_off; /* its table, from its start */
	uint64_t fde_count;
};

/* Pages of a file, read once: libunwind reads unwind data a word (or a
 * byte) at a time, some 2,000 reads a backtrace, from a few pages. */
enum { PAGE = 4096, FILE_PAGES = 64 };
struct hpage {
	uint64_t off; /* page-aligned */
	uint32_t len; /* bytes the file has there (PAGE but at its end) */
	bool used;
	uint8_t b[PAGE];
};

struct hfile {
	bool used;
	uint32_t major, minor;
	uint64_t ino;
	int fd;
	uint64_t size;
	unsigned long stamp;
	struct elfinfo e;
	struct hpage *pages; /* FILE_PAGES, or NULL: read directly */
};

static struct hfile files[FILE_CACHE];
static unsigned long file_clock;

/* The cached page of f holding offset off (page-aligned), read if need
 * be (one slot per page number, modulo: no search); NULL when it cannot
 * be read. */
static const struct hpage *page_of(const struct hfile *f, uint64_t off)
{
	struct hpage *p = &f->pages[(off / PAGE) % FILE_PAGES];
	ssize_t got;

	if (p->used && p->off == off)
		return p;
	p->used = false;
	got = pread(f->fd, p->b, PAGE, (off_t)off);
	if (got < 0)
		return NULL;
	p->off = off;
	p->len = (uint32_t)got;
	p->used = true;
	return p;
}

/* Reads exactly len bytes at off of f: 0, or -ENOEXEC when they are not
 * all in the file (as ward measured it, and as it is now: the code may
 * have cut it since). Small reads go through f's pages. */
static int file_read(const struct hfile *f, void *buf, size_t len, uint64_t off)
{
	uint8_t *out = buf;

	if (off > f->size || len > f->size - off)
		return -ENOEXEC;
	if (!f->pages || len > PAGE) {
		ssize_t got = pread(f->fd, buf, len, (off_t)off);
		if (got < 0)
			return -errno;
		return (size_t)got == len ? 0 : -ENOEXEC;
	}
	while (len) {
		uint64_t at = off & ~(uint64_t)(PAGE - 1);
		const struct hpage *p = page_of(f, at);
		size_t in = (size_t)(off - at), n = PAGE - in;
		if (n > len)
			n = len;
		if (!p || p->len < in + n)
			return -ENOEXEC;
		memcpy(out, p->b + in, n);
		out += n;
		off += n;
		len -= n;
	}
	return 0;
}

static struct hfile *file_find(uint32_t major, uint32_t minor, uint64_t ino)
{
	for (int i = 0; i < FILE_CACHE; i++)
		if (files[i].used && files[i].ino == ino &&
		    files[i].major == major && files[i].minor == minor) {
			files[i].stamp = ++file_clock;
			return &files[i];
		}
	return NULL;
}

/* Keeps fd (owned from now on) as the file major:minor ino. */
static struct hfile *file_keep(uint32_t major, uint32_t minor, uint64_t ino,
			       int fd, uint64_t size)
{
	struct hfile *f = &files[0];

	for (int i = 0; i < FILE_CACHE; i++) {
		if (!files[i].used) {
			f = &files[i];
			break;
		}
		if (files[i].stamp < f->stamp)
			f = &files[i];
	}
	if (f->used)
		close(f->fd);
	free(f->pages);
	memset(f, 0, sizeof(*f));
	f->used = true;
	f->major = major;
	f->minor = minor;
	f->ino = ino;
	f->fd = fd;
	f->size = size;
	f->stamp = ++file_clock;
	f->pages = calloc(FILE_PAGES, sizeof(*f->pages)); /* NULL: direct */
	return f;
}

/* The size in bytes of a DWARF pointer encoding's value; 0: unsupported
 * (or omitted: enc 0xff). Only the value format matters for skipping. */
static int enc_size(uint8_t enc)
{
	if (enc == 0xff)
		return 0;
	switch (enc & 0x0f) {
	case 0x00: return 8; /* absptr */
	case 0x02:	     /* udata2 */
	case 0x0a: return 2; /* sdata2 */
	case 0x03:	     /* udata4 */
	case 0x0b: return 4; /* sdata4 */
	case 0x04:	     /* udata8 */
	case 0x0c: return 8; /* sdata8 */
	default: return -1;
	}
}

/* The .eh_frame_hdr at file offset off, size len: its search table. */
static void parse_eh_hdr(const struct hfile *f, uint64_t off, uint64_t len,
			 struct elfinfo *e)
{
	uint8_t h[4 + 8 + 8];
	int ps, cs;
	uint64_t count = 0;

	if (len < 4 || file_read(f, h, 4, off) < 0)
		return;
	/* version 1; the table: datarel | sdata4, what every linker makes */
	ps = enc_size(h[1]);
	cs = enc_size(h[2]);
	if (h[0] != 1 || h[3] != 0x3b || ps < 0 || cs <= 0 ||
	    (h[2] & 0xf0) != 0)
		return;
	if (len < 4 + (uint64_t)ps + (uint64_t)cs ||
	    file_read(f, h + 4, (size_t)(ps + cs), off + 4) < 0)
		return;
	for (int i = cs - 1; i >= 0; i--)
		count = count << 8 | h[4 + ps + i];
	if (cs == 4 && (h[2] & 0x08) && (count & 0x80000000u))
		return; /* a negative count */
	e->table_off = 4 + (uint64_t)ps + (uint64_t)cs;
	if (count == 0 || count > (len - e->table_off) / 8)
		return; /* the table would run past its segment */
	e->fde_count = count;
	e->has_table = true;
}

/* Reads the headers of f's ELF once: its PT_LOADs and its .eh_frame_hdr. */
static const struct elfinfo *elf_get(struct hfile *f)
{
	struct elfinfo *e = &f->e;
	Elf64_Ehdr eh;
	Elf64_Phdr ph[MAX_PHDRS];

	if (e->done)
		return e;
	e->done = true;
	if (file_read(f, &eh, sizeof(eh), 0) < 0 ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
	    eh.e_phnum > MAX_PHDRS ||
	    file_read(f, ph, eh.e_phnum * sizeof(Elf64_Phdr), eh.e_phoff) < 0)
		return e;
	for (int i = 0; i < eh.e_phnum; i++) {
		const Elf64_Phdr *p = &ph[i];
		if (p->p_type == PT_LOAD && p->p_filesz <= p->p_memsz &&
		    p->p_offset <= f->size &&
		    p->p_filesz <= f->size - p->p_offset) {
			e->load[e->nload].off = p->p_offset;
			e->load[e->nload].filesz = p->p_filesz;
			e->load[e->nload].vaddr = p->p_vaddr;
			e->load[e->nload].memsz = p->p_memsz;
			e->nload++;
		}
	}
	for (int i = 0; i < eh.e_phnum && e->nload; i++)
		if (ph[i].p_type == PT_GNU_EH_FRAME) {
			e->hdr_vaddr = ph[i].p_vaddr;
			parse_eh_hdr(f, ph[i].p_offset, ph[i].p_filesz, e);
			break;
		}
	e->ok = e->nload > 0;
	return e;
}

/* ------------------------------------------------------------------ */
/* one unwinding request                                               */

struct req {
	uint32_t seq;
	const struct uw_map *maps;
	uint32_t nmaps;
	const uint8_t *stack;
	uint64_t stack_start;
	uint32_t stack_len;
	const uint64_t *regs;
	uint8_t *refused; /* per mapping: ward gave no file */
	int asks;
	/* why the last step failed (reset before each) */
	uint32_t why;
	uint64_t why_addr;
	int32_t why_index, why_err;
};

/* The first failure of a step is its reason: what libunwind tries next
 * (a frame-pointer guess) fails for want of what failed first. */
static void note(struct req *r, uint32_t why, uint64_t addr, long index,
		 int err)
{
	if (r->why)
		return;
	r->why = why;
	r->why_addr = addr;
	r->why_index = (int32_t)index;
	r->why_err = err;
}

static long map_find(const struct req *r, uint64_t addr)
{
	uint32_t lo = 0, hi = r->nmaps;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (addr < r->maps[mid].start)
			hi = mid;
		else if (addr >= r->maps[mid].end)
			lo = mid + 1;
		else
			return mid;
	}
	return -1;
}

/* The file of mapping mi: kept, or asked of ward. NULL: none. */
static struct hfile *file_of(struct req *r, long mi)
{
	const struct uw_map *m = &r->maps[mi];
	struct hfile *f = file_find(m->major, m->minor, m->ino);
	struct uw_need need = { UW_NEED, r->seq, (uint32_t)mi, 0 };
	struct uw_file ans;
	int fd;

	if (f)
		return f;
	if (!m->ino || r->refused[mi] || r->asks >= UW_MAX_ASKS)
		return NULL;
	r->asks++;
	if (send_msg(&need, sizeof(need), -1) < 0)
		_exit(0); /* ward is gone */
	ssize_t n = recv_msg(&ans, sizeof(ans), &fd);
	if (n <= 0)
		_exit(0);
	if ((size_t)n != sizeof(ans) || ans.type != UW_FILE ||
	    ans.seq != r->seq || ans.index != (uint32_t)mi ||
	    (ans.err == 0) != (fd >= 0))
		_exit(6); /* not what ward sends: ward's own bug */
	if (ans.err) {
		r->refused[mi] = 1;
		return NULL;
	}
	return file_keep(m->major, m->minor, m->ino, fd, ans.size);
}

/* Serves an aligned word of memory: from the stack copy, else from the
 * file mapped there. */
static int acc_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val,
		   int write, void *arg)
{
	struct req *r = arg;
	long mi;
	struct hfile *f;

	(void)as;
	if (write)
		return -UNW_EREADONLYREG;
	if (addr >= r->stack_start && addr - r->stack_start <= r->stack_len &&
	    r->stack_len - (addr - r->stack_start) >= sizeof(*val)) {
		memcpy(val, r->stack + (addr - r->stack_start), sizeof(*val));
		return 0;
	}
	mi = map_find(r, addr);
	if (mi < 0 || !r->maps[mi].ino ||
	    r->maps[mi].end - addr < sizeof(*val)) {
		note(r, UW_NO_STACK, addr, mi, 0);
		return -UNW_EINVAL;
	}
	f = file_of(r, mi);
	uint64_t rel = addr - r->maps[mi].start;
	if (!f || r->maps[mi].off > UINT64_MAX - rel ||
	    file_read(f, val, sizeof(*val), r->maps[mi].off + rel) < 0) {
		note(r, f ? UW_NO_STACK : UW_NO_FILE, addr, mi, 0);
		return -UNW_EINVAL;
	}
	return 0;
}

static int acc_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val,
		   int write, void *arg)
{
	const struct req *r = arg;

	(void)as;
	if (write || reg < 0 || reg >= UW_NREGS)
		return -UNW_EBADREG;
	*val = r->regs[reg];
	return 0;
}

static int acc_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val,
		     int write, void *arg)
{
	(void)as, (void)reg, (void)val, (void)write, (void)arg;
	return -UNW_EBADREG;
}

static int acc_resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
	(void)as, (void)c, (void)arg;
	return -UNW_EINVAL;
}

static int acc_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf,
			 size_t n, unw_word_t *off, void *arg)
{
	(void)as, (void)addr, (void)buf, (void)n, (void)off, (void)arg;
	return -UNW_ENOINFO;
}

static int acc_dyn_list(unw_addr_space_t as, unw_word_t *addr, void *arg)
{
	(void)as, (void)addr, (void)arg;
	return -UNW_ENOINFO;
}

/* libunwind frees the unwind info of a table it searched itself. */
static void acc_put_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	(void)as, (void)pi, (void)arg;
}

/* The procedure at ip: the search table of the ELF file mapped there. */
static int acc_find(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
		    int need_info, void *arg)
{
	struct req *r = arg;
	long mi = map_find(r, ip);
	const struct uw_map *m;
	struct hfile *f;
	const struct elfinfo *e;
	unw_dyn_info_t di;
	int ld = -1, rc;

	if (mi < 0 || !r->maps[mi].ino) {
		note(r, UW_NO_INFO, ip, mi, 0);
		return -UNW_ENOINFO;
	}
	m = &r->maps[mi];
	f = file_of(r, mi);
	if (!f) {
		note(r, UW_NO_FILE, ip, mi, 0);
		return -UNW_ENOINFO;
	}
	e = elf_get(f);
	if (!e->ok) {
		note(r, UW_BAD_ELF, ip, mi, 0);
		return -UNW_ENOINFO;
	}
	/* the segment whose file bytes are mapped at ip */
	uint64_t rel = ip - m->start, fo = m->off + rel;
	if (fo < m->off) {
		note(r, UW_BAD_ELF, ip, mi, 0);
		return -UNW_ENOINFO;
	}
	for (int i = 0; i < e->nload && ld < 0; i++)
		if (fo >= e->load[i].off &&
		    fo - e->load[i].off < e->load[i].filesz)
			ld = i;
	if (ld < 0 || !e->has_table) {
		note(r, UW_NO_INFO, ip, mi, 0);
		return -UNW_ENOINFO;
	}
	/* ip = bias + vaddr, wrapping as the loader's arithmetic does */
	uint64_t bias = ip - (fo - e->load[ld].off + e->load[ld].vaddr);
	memset(&di, 0, sizeof(di));
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.start_ip = bias + e->load[ld].vaddr;
	di.end_ip = di.start_ip + e->load[ld].memsz;
	/* libunwind asserts this (a crafted segment may wrap around) */
	if (!(ip >= di.start_ip && ip < di.end_ip)) {
		note(r, UW_BAD_ELF, ip, mi, 0);
		return -UNW_ENOINFO;
	}
	di.u.rti.segbase = bias + e->hdr_vaddr;
	di.u.rti.table_data = di.u.rti.segbase + e->table_off;
	/* in words; an entry is two int32 */
	di.u.rti.table_len = e->fde_count * 8 / sizeof(unw_word_t);
	rc = uw.search(as, ip, &di, pi, need_info, arg);
	if (rc < 0 && !r->why)
		note(r, rc == -UNW_ENOINFO ? UW_NO_INFO : UW_BAD_INFO, ip, mi,
		     rc);
	return rc;
}

static unw_accessors_t accessors = {
	.find_proc_info = acc_find,
	.put_unwind_info = acc_put_info,
	.get_dyn_info_list_addr = acc_dyn_list,
	.access_mem = acc_mem,
	.access_reg = acc_reg,
	.access_fpreg = acc_fpreg,
	.resume = acc_resume,
	.get_proc_name = acc_proc_name,
};

static unw_addr_space_t addr_space;

/* TEST ONLY (--test=KIND:N, from WARD_TEST_UNWINDER in ward's
 * environment, unwinder.c): misbehave on this helper's Nth unwinding
 * request, or on every one when N is 0. */
static struct {
	char kind[16];
	unsigned long at;
} test;
static unsigned long unwinds;
static volatile uintptr_t crash_at = 16; /* an address never mapped */

static bool test_now(const char *kind)
{
	return test.kind[0] && !strcmp(test.kind, kind) &&
	       (test.at == 0 || unwinds == test.at);
}

static void unwind(struct req *r, struct uw_frames *out)
{
	unw_cursor_t cur;
	int rc;

	out->stop = UW_END;
	out->stop_index = -1;
	if (!addr_space) {
		out->stop = UW_NO_UNWIND;
		return;
	}
	r->why = 0;
	rc = uw.init_remote(&cur, addr_space, r);
	if (rc < 0) {
		out->stop = UW_BAD_INFO;
		out->stop_err = rc;
		return;
	}
	for (;;) {
		unw_word_t ip;
		if (uw.get_reg(&cur, UNW_REG_IP, &ip) < 0 || ip == 0)
			break;
		out->ip[out->n++] = ip;
		if (out->n == UW_MAX_FRAMES)
			break;
		r->why = 0;
		rc = uw.step(&cur);
		if (rc > 0)
			continue;
		/* An end (0) is a true one only when nothing failed on the
		 * way there: libunwind also ends at a frame it cannot
		 * follow when no frame pointer helps either. */
		if (r->why) {
			out->stop = r->why;
			out->stop_addr = r->why_addr;
			out->stop_index = r->why_index;
			out->stop_err = r->why_err;
		} else if (rc < 0) {
			out->stop = UW_BAD_INFO;
			out->stop_addr = ip;
			out->stop_err = rc;
		}
		break;
	}
}

static uint8_t *req_buf;
static uint8_t refused[UW_MAX_MAPS];

static void serve_unwind(const struct uw_unwind_req *q, int fd)
{
	struct uw_frames out;
	struct req r;
	size_t tab = (size_t)q->nmaps * sizeof(struct uw_map);

	if (fd < 0 || q->nmaps > UW_MAX_MAPS || q->stack_len > UW_STACK_MAX)
		_exit(6);
	if (pread(fd, req_buf, tab + q->stack_len, 0) !=
	    (ssize_t)(tab + q->stack_len))
		_exit(6);
	close(fd);
	memset(&r, 0, sizeof(r));
	r.seq = q->seq;
	r.maps = (const struct uw_map *)req_buf;
	r.nmaps = q->nmaps;
	r.stack = req_buf + tab;
	r.stack_len = q->stack_len;
	r.stack_start = q->stack_start;
	r.regs = q->regs;
	r.refused = refused;
	memset(refused, 0, q->nmaps);
	memset(&out, 0, sizeof(out));
	unwind(&r, &out);
	out.type = UW_FRAMES;
	out.seq = q->seq;
	if (test_now("garbage"))
		out.n = 1000; /* TEST ONLY: a reply ward must refuse */
	if (send_msg(&out, sizeof(out), -1) < 0)
		_exit(0);
}

/* ------------------------------------------------------------------ */
/* _PyRuntime and Py_Version (for pyframe.c)                           */

enum { MAX_SYMS = 1 << 20, MAX_STRTAB = 16 << 20, MAX_SHDRS = 256 };

/* The values of _PyRuntime and Py_Version in one symbol table section. */
static int scan_syms(const struct hfile *f, const Elf64_Shdr *sh,
		     const Elf64_Shdr *strsh, struct uw_syms *m)
{
	Elf64_Sym chunk[256];
	uint64_t count = sh->sh_size / sizeof(Elf64_Sym);
	char *str;
	int r = 0;

	if (sh->sh_entsize != sizeof(Elf64_Sym) || count > MAX_SYMS ||
	    sh->sh_offset > f->size || sh->sh_size > f->size - sh->sh_offset ||
	    strsh->sh_offset > f->size ||
	    strsh->sh_size > f->size - strsh->sh_offset ||
	    strsh->sh_size == 0 || strsh->sh_size > MAX_STRTAB)
		return -ENOEXEC;
	str = malloc(strsh->sh_size + 1);
	if (!str)
		return -ENOMEM;
	r = file_read(f, str, strsh->sh_size, strsh->sh_offset);
	str[strsh->sh_size] = '\0';
	for (uint64_t i = 0; !r && i < count; i += 256) {
		size_t k = count - i < 256 ? (size_t)(count - i) : 256;
		r = file_read(f, chunk, k * sizeof(Elf64_Sym),
			      sh->sh_offset + i * sizeof(Elf64_Sym));
		for (size_t j = 0; !r && j < k; j++) {
			const Elf64_Sym *s = &chunk[j];
			if (s->st_name >= strsh->sh_size ||
			    s->st_shndx == SHN_UNDEF ||
			    ELF64_ST_TYPE(s->st_info) != STT_OBJECT)
				continue;
			const char *name = str + s->st_name;
			if (!strcmp(name, "_PyRuntime"))
				m->rt_vaddr = s->st_value;
			else if (!strcmp(name, "Py_Version"))
				m->ver_vaddr = s->st_value;
		}
	}
	free(str);
	return r;
}

static int read_syms(const struct hfile *f, struct uw_syms *m)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph[MAX_PHDRS];
	static Elf64_Shdr sh[MAX_SHDRS];
	uint64_t lo = UINT64_MAX;
	int r = file_read(f, &eh, sizeof(eh), 0);

	if (r < 0)
		return r;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64 ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
	    eh.e_phnum > MAX_PHDRS || eh.e_shentsize != sizeof(Elf64_Shdr) ||
	    eh.e_shnum == 0 || eh.e_shnum > MAX_SHDRS)
		return -ENOEXEC;
	r = file_read(f, ph, eh.e_phnum * sizeof(Elf64_Phdr), eh.e_phoff);
	if (!r)
		r = file_read(f, sh, eh.e_shnum * sizeof(Elf64_Shdr),
			      eh.e_shoff);
	if (r < 0)
		return r;
	for (int i = 0; i < eh.e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < lo)
			lo = ph[i].p_vaddr;
	if (lo == UINT64_MAX)
		return -ENOEXEC;
	m->min_vaddr = lo & ~(uint64_t)4095;
	/* .dynsym first (small, and where both are exported), .symtab
	 * after */
	for (int pass = 0; pass < 2 && !m->rt_vaddr; pass++) {
		uint32_t want = pass ? SHT_SYMTAB : SHT_DYNSYM;
		for (int i = 0; i < eh.e_shnum && !m->rt_vaddr; i++) {
			if (sh[i].sh_type != want ||
			    sh[i].sh_link >= eh.e_shnum)
				continue;
			r = scan_syms(f, &sh[i], &sh[sh[i].sh_link], m);
			if (r == -ENOMEM)
				return r;
		}
	}
	m->found = m->rt_vaddr != 0;
	return 0;
}

static void serve_syms(const struct uw_syms_req *q, int fd)
{
	struct uw_syms out;
	struct hfile f = { .used = true, .fd = fd, .size = q->size };

	if (fd < 0)
		_exit(6);
	memset(&out, 0, sizeof(out));
	out.type = UW_SYMS_DONE;
	out.seq = q->seq;
	out.err = read_syms(&f, &out);
	if (out.err) {
		out.found = 0;
		out.rt_vaddr = out.ver_vaddr = out.min_vaddr = 0;
	}
	close(fd);
	if (send_msg(&out, sizeof(out), -1) < 0)
		_exit(0);
}

/* ------------------------------------------------------------------ */
/* the sandbox                                                         */

static int drop_root(void)
{
	if (geteuid() != 0)
		return 0; /* nothing to drop: ward's own uid already */
	if (setgroups(0, NULL) < 0 ||
	    setresgid(SANDBOX_ID, SANDBOX_ID, SANDBOX_ID) < 0 ||
	    setresuid(SANDBOX_ID, SANDBOX_ID, SANDBOX_ID) < 0)
		return -errno;
	if (geteuid() != SANDBOX_ID || getuid() != SANDBOX_ID ||
	    getegid() != SANDBOX_ID)
		return -EPERM;
	return 0;
}

static int limit(int res, rlim_t soft, rlim_t hard)
{
	struct rlimit rl = { soft, hard };

	return setrlimit(res, &rl) < 0 ? -errno : 0;
}

static int set_limits(void)
{
	int r = 0;

#if !defined(__SANITIZE_ADDRESS__)
	/* (AddressSanitizer maps terabytes of shadow memory) */
	r |= limit(RLIMIT_AS, 512 << 20, 512 << 20);
#endif
	r |= limit(RLIMIT_CPU, CPU_SECONDS, CPU_SECONDS + 1);
	r |= limit(RLIMIT_NOFILE, FILE_CACHE + 16, FILE_CACHE + 16);
	r |= limit(RLIMIT_FSIZE, 0, 0);
	r |= limit(RLIMIT_CORE, 0, 0);
	r |= limit(RLIMIT_NPROC, 0, 0);
	r |= limit(RLIMIT_MEMLOCK, 0, 0);
	r |= limit(RLIMIT_MSGQUEUE, 0, 0);
	return r ? -EPERM : 0;
}

static int rule(scmp_filter_ctx f, const char *name, unsigned n,
		const struct scmp_arg_cmp *cmp)
{
	int nr = seccomp_syscall_resolve_name(name);

	if (nr == __NR_SCMP_ERROR)
		return -ENOSYS;
	return seccomp_rule_add_array(f, SCMP_ACT_ALLOW, nr, n, cmp);
}

/* What unwinding needs, and nothing that reaches anything new: no open of
 * any kind, no socket, no process, no signal to another process. */
static int sandbox(void)
{
	static const char *const plain[] = {
		"read",
		"write",
		"recvmsg",
		"sendmsg",
		"pread64",
		"lseek",
		"fstat",
		"close",
		"munmap",
		"mremap",
		"madvise",
		"brk",
		"futex",
		"rt_sigprocmask",
		"rt_sigreturn",
		"clock_gettime",
		"exit",
		"exit_group",
#if defined(WARD_SANITIZED)
		/* sanitizer builds only: the runtime's reports begin with
		 * the pid (the rest of a report, which opens /proc/self/maps,
		 * still dies of the filter: ward records that death) */
		"getpid",
		"gettid",
#endif
		NULL,
	};
	const struct scmp_arg_cmp no_exec =
		SCMP_A2_64(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0);
	/* glibc's fstat is newfstatat(fd, "", st, AT_EMPTY_PATH) */
	const struct scmp_arg_cmp empty_path =
		SCMP_A3_32(SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, AT_EMPTY_PATH);
	scmp_filter_ctx f = seccomp_init(SCMP_ACT_KILL_PROCESS);
	int r = f ? 0 : -ENOMEM;

	if (!r)
		r = seccomp_attr_set(f, SCMP_FLTATR_ACT_BADARCH,
				     SCMP_ACT_KILL_PROCESS);
	for (int i = 0; plain[i] && !r; i++)
		r = rule(f, plain[i], 0, NULL);
	if (!r)
		r = rule(f, "mmap", 1, &no_exec);
	if (!r)
		r = rule(f, "newfstatat", 1, &empty_path);
	if (!r)
		r = seccomp_load(f);
	seccomp_release(f);
	return r;
}

/* ------------------------------------------------------------------ */
/* the helper's life                                                   */

/* A fault of the helper's own (a bug, or a file that found one): ward is
 * told which before the helper exits, since ward cannot wait for a
 * process that is not its child. Only syscalls the filter allows. */
static void fatal(int sig)
{
	struct uw_dying d = { UW_DYING, sig };

	if (write(HELPER_FD, &d, sizeof(d)) < 0) {
		/* nothing more to do */
	}
	_exit(128 + sig);
}

static int on_faults(void)
{
	static char alt[64 * 1024];
	static const int sigs[] = { SIGSEGV, SIGBUS,  SIGILL,
				    SIGFPE,  SIGABRT, SIGXCPU };
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof(alt) };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fatal;
	sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
	sigfillset(&sa.sa_mask);
	if (sigaltstack(&ss, NULL) < 0)
		return -errno;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (sigaction(sigs[i], &sa, NULL) < 0)
			return -errno;
	return 0;
}

__attribute__((noreturn)) static void helper(void)
{
	struct uw_hello hello = { .type = UW_HELLO };
	union {
		uint32_t type;
		struct uw_unwind_req u;
		struct uw_syms_req s;
	} msg;
	int self;

	prctl(PR_SET_NAME, "ward-unwinder", 0, 0, 0);
	if (uw_load(hello.why, sizeof(hello.why)) == 0) {
		/* libunwind's one-time set-up (its pools, its tables) is
		 * done here, before the filter: an empty unwinding */
		uint64_t zero[UW_NREGS] = { 0 };
		struct req r = { .regs = zero, .refused = refused };
		unw_cursor_t c;
		addr_space = uw.create_addr_space(&accessors, 0);
		if (addr_space) {
			/* nothing libunwind found is believed from one
			 * request to the next: the code's memory and files
			 * may have changed (only file pages are kept, by
			 * device and inode) */
			uw.set_caching_policy(addr_space, UNW_CACHE_NONE);
			uw.init_remote(&c, addr_space, &r);
			hello.unwind_ok = 1;
		} else {
			snprintf(hello.why, sizeof(hello.why),
				 "libunwind: no address space");
		}
	}
	req_buf = malloc((size_t)UW_MAX_MAPS * sizeof(struct uw_map) +
			 UW_STACK_MAX);
	self = (int)syscall(SYS_pidfd_open, getpid(), 0);
	if (!req_buf || self < 0 || on_faults() < 0 || drop_root() < 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 || set_limits() < 0 ||
	    sandbox() < 0)
		_exit(5); /* never serve unsandboxed */
	if (send_msg(&hello, sizeof(hello), self) < 0)
		_exit(0);
	close(self);
	for (;;) {
		int fd;
		ssize_t n = recv_msg(&msg, sizeof(msg), &fd);
		if (n == 0)
			_exit(0); /* ward closed the socket: done */
		if (n < 4)
			_exit(n < 0 ? 0 : 6);
		if (msg.type == UW_UNWIND && (++unwinds, test_now("crash")))
			*(volatile int *)crash_at = 0; /* TEST ONLY: SIGSEGV */
		if (msg.type == UW_UNWIND && test_now("stall")) {
			/* TEST ONLY: never answer (ward's budget ends it) */
			for (;;)
				if (recv_msg(&msg, sizeof(msg), &fd) == 0)
					_exit(0);
		}
		if (msg.type == UW_UNWIND && n == sizeof(msg.u))
			serve_unwind(&msg.u, fd);
		else if (msg.type == UW_SYMS && n == sizeof(msg.s))
			serve_syms(&msg.s, fd);
		else
			_exit(6);
	}
}

void tracer_unwinder_main(int argc, char **argv)
{
	struct stat st;
	pid_t pid;

	for (int i = 2; i < argc; i++) {
		char kind[16];
		unsigned long at;
		if (sscanf(argv[i], "--test=%15[a-z]:%lu", kind, &at) == 2) {
			snprintf(test.kind, sizeof(test.kind), "%s", kind);
			test.at = at;
		}
	}
	if (fstat(HELPER_FD, &st) < 0 || !S_ISSOCK(st.st_mode))
		_exit(2);
	/* ward's fds are all close-on-exec; the helper keeps 0-3 only */
	if (syscall(SYS_close_range, HELPER_FD + 1, ~0u, 0) < 0)
		for (int fd = HELPER_FD + 1; fd < 1024; fd++)
			close(fd);
	/* Not ward's child: this process exits now and ward reaps it; the
	 * helper is its child, reparented. */
	pid = fork();
	if (pid < 0)
		_exit(3);
	if (pid > 0)
		_exit(0);
	helper();
}
