/*
 * pyframe.c - the Python stack of a stopped CPython thread (pyframe.h).
 *
 * The chain, for the thread stopped at tid:
 *   _PyRuntime (an ELF symbol of the python3.X executable or of
 *   libpython3.X.so, plus the load bias from /proc/PID/maps)
 *   -> interpreters.head -> threads.head -> ... the PyThreadState whose
 *   native_thread_id is tid -> its current _PyInterpreterFrame (3.11:
 *   through cframe) -> previous -> ... Each frame names its code object:
 *   co_filename, co_qualname, co_firstlineno, and co_linetable, which maps
 *   the frame's instruction pointer (offset from co_code_adaptive) to a
 *   line.
 *
 * All of it is untrusted: the traced code owns that memory. Every read is
 * bounded (process_vm_readv through umem_read), every object's type is
 * checked by its type's name ("code", "str", "bytes") before its fields
 * are believed, strings are cut at PYF_MAX_STR characters, frames at
 * PYF_MAX_FRAMES, and a frame seen twice (a forged cycle) ends the walk.
 * Nothing here ever loops without a bound or trusts a length.
 *
 * Finding _PyRuntime means reading the symbol table of a file the code
 * mapped, which it may have written, replaced or named after a device:
 * that is the unwinder helper's job (unwinder.h), never ward's. ward opens
 * the mapping's own file safely, hands it over and gets three numbers
 * back, within the helper's budget. What the helper found is cached per
 * file (device and inode, as /proc/PID/maps names them), so a second
 * denial of the same interpreter costs only the maps read and the walk,
 * which stays here: it reads memory only, each read bounded.
 */
#include "tracer-int.h"
#include "args.h"
#include "pyframe.h"
#include "unwinder.h"
#include "../common/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* the location table (co_linetable), CPython 3.11-3.13                */

/*
 * Each entry starts with a byte whose top bit is set: bits 6-3 are the
 * entry's code, bits 2-0 its length in code units minus one. Codes 0-9
 * (short form) take one more byte, 10-12 (one line, the line moves by
 * code - 10) two more, 13 (no columns) a signed varint line delta, 14
 * (long form) a signed varint line delta and three varints (end line,
 * columns), 15 means no line. Varints are 6 bits a byte, low bits first,
 * 0x40 set when another byte follows; signed ones keep the sign in bit 0.
 */
static int lt_varint(const uint8_t **p, const uint8_t *end, uint32_t *out)
{
	uint64_t v = 0;

	for (unsigned shift = 0;; shift += 6) {
		if (*p >= end || shift > 30)
			return -EINVAL;
		uint8_t b = *(*p)++;
		if (b & 0x80)
			return -EINVAL; /* the next entry began */
		v |= (uint64_t)(b & 63) << shift;
		if (!(b & 64))
			break;
	}
	if (v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int lt_svarint(const uint8_t **p, const uint8_t *end, long long *out)
{
	uint32_t u;
	int r = lt_varint(p, end, &u);

	if (r < 0)
		return r;
	*out = (u & 1) ? -(long long)(u >> 1) : (long long)(u >> 1);
	return 0;
}

/* Skips n bytes of column data, which never have the top bit set. */
static int lt_skip(const uint8_t **p, const uint8_t *end, size_t n)
{
	if ((size_t)(end - *p) < n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if ((*p)[i] & 0x80)
			return -EINVAL;
	*p += n;
	return 0;
}

int pyf_addr2line(const uint8_t *tab, size_t len, int firstlineno,
		  long long addr)
{
	const uint8_t *p = tab, *end = tab + len;
	long long line = firstlineno, start = 0;

	if (addr < 0)
		return firstlineno;
	while (p < end) {
		uint8_t first = *p++;
		int code = (first >> 3) & 15, r = 0;
		long long delta = 0;
		uint32_t skip;

		if (!(first & 0x80))
			return -EINVAL;
		if (code == 15) {
			/* no location */
		} else if (code == 14) {
			r = lt_svarint(&p, end, &delta);
			for (int i = 0; i < 3 && !r; i++)
				r = lt_varint(&p, end, &skip);
		} else if (code == 13) {
			r = lt_svarint(&p, end, &delta);
		} else if (code >= 10) {
			delta = code - 10;
			r = lt_skip(&p, end, 2);
		} else {
			r = lt_skip(&p, end, 1);
		}
		if (r < 0)
			return r;
		line += delta;
		if (line < -1 || line > INT32_MAX)
			return -EINVAL;
		start += 2 * ((first & 7) + 1);
		if (addr < start)
			return code == 15 ? -1 : (int)line;
	}
	return -ENOENT;
}

/* ------------------------------------------------------------------ */
/* layouts                                                             */

/* Offsets of the fields read, for one interpreter version. */
struct pylayout {
	char source[32];	/* "cpython-3.11 memory" */
	uint64_t rt_interps;	/* _PyRuntime.interpreters.head */
	uint64_t is_next;	/* PyInterpreterState.next */
	uint64_t is_threads;	/* PyInterpreterState.threads.head */
	uint64_t ts_next;	/* PyThreadState.next */
	uint64_t ts_native_tid; /* PyThreadState.native_thread_id */
	uint64_t ts_frame;	/* 3.13: current_frame; 3.11: cframe */
	bool via_cframe;	/* 3.11: ts_frame is a _PyCFrame pointer */
	uint64_t cf_frame;	/* 3.11: _PyCFrame.current_frame */
	uint64_t fr_previous, fr_code, fr_instr, fr_owner;
	int owner_shim;	  /* owner value of C-stack shims (skipped), or
				 * -1 */
	uint64_t co_size; /* ob_size (code units), or 0: not checked */
	uint64_t co_filename, co_qualname, co_firstlineno, co_linetable;
	uint64_t co_code; /* co_code_adaptive */
	uint64_t ob_type, tp_name;
	uint64_t u_length, u_state, u_ascii_size, u_compact_size;
	uint64_t b_size, b_data;
};

/*
 * CPython 3.11 on x86-64, from its internal headers (pycore_runtime.h,
 * pycore_interp.h, cpython/pystate.h, pycore_frame.h, cpython/code.h,
 * cpython/unicodeobject.h, cpython/bytesobject.h); the same for Debian's
 * 3.11.2 and pyenv's 3.11.7 (checked with offsetof against both).
 */
static const struct pylayout layout_311 = {
	.source = "cpython-3.11 memory",
	.rt_interps = 40,
	.is_next = 0,
	.is_threads = 16,
	.ts_next = 8,
	.ts_native_tid = 160,
	.ts_frame = 56,
	.via_cframe = true,
	.cf_frame = 8,
	.fr_previous = 48,
	.fr_code = 32,
	.fr_instr = 56, /* prev_instr: the instruction being run */
	.fr_owner = 69,
	.owner_shim = -1,
	.co_size = 16,
	.co_filename = 112,
	.co_qualname = 128,
	.co_firstlineno = 72,
	.co_linetable = 136,
	.co_code = 184,
	.ob_type = 8,
	.tp_name = 24,
	.u_length = 16,
	.u_state = 32,
	.u_ascii_size = 48,
	.u_compact_size = 72, /* + utf8_length, utf8, wstr_length */
	.b_size = 16,
	.b_data = 32,
};

/* The head of _Py_DebugOffsets as CPython 3.13 lays it out (every field
 * a uint64_t; Include/internal/pycore_runtime.h of 3.13). */
struct dbg313 {
	char cookie[8];
	uint64_t version, free_threaded;
	uint64_t rt_size, rt_finalizing, rt_interps;
	uint64_t is_size, is_id, is_next, is_threads, is_gc, is_modules,
		is_sysdict, is_builtins, is_ceval_gil, is_gil, is_gil_enabled,
		is_gil_locked, is_gil_holder;
	uint64_t ts_size, ts_prev, ts_next, ts_interp, ts_frame, ts_tid,
		ts_native_tid, ts_chunk, ts_status;
	uint64_t fr_size, fr_previous, fr_executable, fr_instr, fr_locals,
		fr_owner;
	uint64_t co_size, co_filename, co_name, co_qualname, co_linetable,
		co_firstlineno, co_argcount, co_names, co_kinds, co_code;
	uint64_t ob_size, ob_type;
	uint64_t tp_size, tp_name, tp_repr, tp_flags;
	uint64_t tu_size, tu_item, tu_len;
	uint64_t li_size, li_item, li_len;
	uint64_t di_size, di_keys, di_values;
	uint64_t fl_size, fl_val;
	uint64_t lo_size, lo_tag, lo_digit;
	uint64_t by_size, by_len, by_data;
	uint64_t u_size, u_state, u_length, u_ascii_size;
};

/* An offset from the table is believed only when it is within reason
 * (PyInterpreterState is some 190 KiB in 3.13; the fields read in the
 * other structures are checked against their read size later). */
#define OFF_OK(x) ((x) < (1u << 20))

static int layout_from_313(const struct dbg313 *d, struct pylayout *L)
{
	const uint64_t offs[] = {
		d->rt_interps,	   d->is_next,	     d->is_threads,
		d->ts_next,	   d->ts_native_tid, d->ts_frame,
		d->fr_previous,	   d->fr_executable, d->fr_instr,
		d->fr_owner,	   d->co_filename,   d->co_qualname,
		d->co_firstlineno, d->co_linetable,  d->co_code,
		d->ob_type,	   d->tp_name,	     d->u_state,
		d->u_length,	   d->u_ascii_size,  d->by_len,
		d->by_data,
	};

	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
		if (!OFF_OK(offs[i]))
			return -EINVAL;
	memset(L, 0, sizeof(*L));
	snprintf(L->source, sizeof(L->source), "cpython-3.13 memory");
	L->rt_interps = d->rt_interps;
	L->is_next = d->is_next;
	L->is_threads = d->is_threads;
	L->ts_next = d->ts_next;
	L->ts_native_tid = d->ts_native_tid;
	L->ts_frame = d->ts_frame;
	L->fr_previous = d->fr_previous;
	L->fr_code = d->fr_executable;
	L->fr_instr = d->fr_instr;
	L->fr_owner = d->fr_owner;
	L->owner_shim = 3; /* FRAME_OWNED_BY_CSTACK */
	L->co_filename = d->co_filename;
	L->co_qualname = d->co_qualname;
	L->co_firstlineno = d->co_firstlineno;
	L->co_linetable = d->co_linetable;
	L->co_code = d->co_code;
	L->ob_type = d->ob_type;
	L->tp_name = d->tp_name;
	L->u_length = d->u_length;
	L->u_state = d->u_state;
	L->u_ascii_size = d->u_ascii_size;
	/* PyCompactUnicodeObject: + utf8_length and utf8 (3.12 on) */
	L->u_compact_size = d->u_ascii_size + 16;
	L->b_size = d->by_len;
	L->b_data = d->by_data;
	return 0;
}

/* ------------------------------------------------------------------ */
/* finding _PyRuntime                                                  */

/* What one file's symbol table said (the unwinder helper read it);
 * cached per (device, inode). */
struct pymod {
	bool used, found;
	unsigned maj, min;
	uint64_t ino;
	uint64_t min_vaddr;  /* lowest PT_LOAD address, page-aligned */
	uint64_t rt_vaddr;   /* _PyRuntime */
	uint64_t ver_vaddr;  /* Py_Version, or 0 */
	unsigned long stamp; /* for replacing the oldest */
};

/* Files not yet in the cache that one walk asks the helper about: the code
 * may map a thousand files named python* below its interpreter. */
enum { MOD_CACHE = 8, MAX_ASKED = 4 };

static struct pymod mods[MOD_CACHE];
static unsigned long mod_clock;

/*
 * The cache entry of the file mapping m maps (as path) in pid; read the
 * first time by the unwinder helper, from the mapping's own file as ward
 * opened it (unwinder.c: never through the code's names, never anything
 * but the regular file the maps line names), by deadline. NULL: the
 * helper failed (nothing cached: asked again next time, within the run's
 * failures), or *asked passed MAX_ASKED (counted here).
 */
static struct pymod *module_get(pid_t pid, const struct uw_map *map,
				const char *path, long long deadline,
				int *asked)
{
	struct pymod *m = NULL, *old = &mods[0];
	struct uw_syms s;
	int r;

	for (int i = 0; i < MOD_CACHE; i++) {
		if (mods[i].used && mods[i].maj == map->major &&
		    mods[i].min == map->minor && mods[i].ino == map->ino) {
			mods[i].stamp = ++mod_clock;
			return &mods[i];
		}
		if (!mods[i].used || mods[i].stamp < old->stamp)
			old = &mods[i];
	}
	if (++*asked > MAX_ASKED)
		return NULL;
	r = uw_syms(pid, map, path, deadline, &s);
	if (r < 0 && r != -EPERM)
		return NULL;
	m = old;
	memset(m, 0, sizeof(*m));
	m->maj = map->major;
	m->min = map->minor;
	m->ino = map->ino;
	if (r == 0 && s.found) { /* -EPERM: a file not to read, for good */
		m->found = true;
		m->min_vaddr = s.min_vaddr;
		m->rt_vaddr = s.rt_vaddr;
		m->ver_vaddr = s.ver_vaddr;
	}
	m->used = true;
	m->stamp = ++mod_clock;
	return m;
}

static bool python_name(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "python", 6) || !strncmp(base, "libpython3", 10);
}

/* Where _PyRuntime and Py_Version are in pid's memory: from the first
 * mapping of a python* file (a venv's copy may be plain "python") or a
 * libpython3* one whose symbols name it. All the helper's work for one
 * walk shares one budget (UW_BUDGET_MS) and MAX_ASKED files. */
static int find_runtime(pid_t pid, uint64_t *rt, uint64_t *ver)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	int r = -ENOENT, asked = 0;
	long long deadline = uw_deadline();
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (r == -ENOENT && getline(&line, &cap, f) > 0) {
		uint64_t lo, hi, off, ino;
		unsigned maj, min;
		int pos = 0;

		if (!strstr(line, "python")) /* most lines: no sscanf */
			continue;
		if (sscanf(line,
			   "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64
			   " %x:%x %" SCNu64 " %n",
			   &lo, &hi, &off, &maj, &min, &ino, &pos) < 6 ||
		    pos == 0 || off != 0 || line[pos] != '/')
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (!python_name(line + pos))
			continue;
		struct uw_map map = { .start = lo,
				      .end = hi,
				      .off = off,
				      .ino = ino,
				      .major = maj,
				      .minor = min };
		struct pymod *m =
			module_get(pid, &map, line + pos, deadline, &asked);
		if (!m) /* the helper failed, or too many files: not now */
			r = asked > MAX_ASKED ? -ENOENT : -EAGAIN;
		else if (m->found && lo >= m->min_vaddr) {
			*rt = m->rt_vaddr + (lo - m->min_vaddr);
			*ver = m->ver_vaddr ? m->ver_vaddr + (lo - m->min_vaddr)
					    : 0;
			r = 0;
		}
	}
	free(line);
	fclose(f);
	return r;
}

/* ------------------------------------------------------------------ */
/* reading objects                                                     */

struct peek;

struct walk {
	pid_t tid;
	pid_t ns_tid; /* tid in the code's pid namespace */
	const struct pylayout *L;
	uint64_t t_code, t_str, t_bytes; /* type objects already checked */
	const char *why;		 /* first inconsistency, or NULL */
	struct peek *pk;		 /* 3 peeks (read_code) */
};

static int rd_ptr(struct walk *w, uint64_t addr, uint64_t *out)
{
	return umem_read(w->tid, addr, out, sizeof(*out));
}

static uint64_t field64(const uint8_t *hdr, uint64_t off)
{
	uint64_t v;

	memcpy(&v, hdr + off, sizeof(v));
	return v;
}

/* Is the object at addr, whose header (with ob_type) is hdr, of the type
 * named want? Remembers the answer for the type object in *known. */
static bool type_is(struct walk *w, const uint8_t *hdr, const char *want,
		    uint64_t *known)
{
	uint64_t type = field64(hdr, w->L->ob_type), name;
	char buf[16];

	if (type && type == *known)
		return true;
	if (!type || rd_ptr(w, type + w->L->tp_name, &name) < 0 ||
	    umem_read_str(w->tid, name, buf, sizeof(buf)) < 0 ||
	    strcmp(buf, want) != 0)
		return false;
	*known = type;
	return true;
}

enum { OBJ_HDR = 128 }; /* bytes of a str or bytes object's header */

/*
 * The first bytes of a few objects, read with one process_vm_readv: a
 * code object's file name, name and line table are read together, and
 * most of them fit. got is PEEK, or 0 when the batch failed (an object at
 * the end of a mapping, a bad pointer): each is then read on its own.
 */
enum { PEEK = 256 };
struct peek {
	uint64_t addr;
	size_t got;
	uint8_t b[PEEK];
};

static void peek_objects(struct walk *w, struct peek *p, int n)
{
	struct iovec loc[4], rem[4];
	size_t total = 0;

	for (int i = 0; i < n && i < 4; i++) {
		p[i].got = 0;
		loc[i] = (struct iovec){ p[i].b, PEEK };
		rem[i] = (struct iovec){ (void *)(uintptr_t)p[i].addr, PEEK };
		total += PEEK;
	}
	if (n > 0 && n <= 4 &&
	    process_vm_readv(w->tid, loc, (unsigned long)n, rem,
			     (unsigned long)n, 0) == (ssize_t)total)
		for (int i = 0; i < n; i++)
			p[i].got = PEEK;
}

/* Bytes [off, off + len) of the object p->addr: from the peek when it
 * has them, else read now. */
static int obj_bytes(struct walk *w, const struct peek *p, uint64_t off,
		     void *dst, size_t len)
{
	if (off <= p->got && len <= p->got - off) {
		memcpy(dst, p->b + off, len);
		return 0;
	}
	return umem_read(w->tid, p->addr + off, dst, len);
}

/* The len first bytes of the object into hdr (OBJ_HDR bytes), if its type
 * is named type (layout_sane() made sure len fits and holds the fields
 * read from it). */
static int read_obj(struct walk *w, const struct peek *p, uint8_t *hdr,
		    size_t len, const char *type, uint64_t *known)
{
	int r;

	if (len > OBJ_HDR)
		return -EINVAL;
	r = obj_bytes(w, p, 0, hdr, len);
	if (r < 0)
		return r;
	return type_is(w, hdr, type, known) ? 0 : -EINVAL;
}

/* One character as UTF-8 into out (room for 4); '?' for what is not a
 * scalar value (a lone surrogate, past U+10FFFF). */
static size_t put_utf8(uint32_t c, char *out)
{
	size_t n = ward_utf8_encode(c, out);

	if (n == 0)
		out[n++] = '?';
	return n;
}

enum { STR_OUT = PYF_MAX_STR * 4 + 4 };

/*
 * A str object as UTF-8 into out (STR_OUT bytes): compact strings only
 * (every name and file name of a code object is one), at most
 * PYF_MAX_STR characters, then "...". 0, or -EINVAL (not a str, a layout
 * that does not fit), -EFAULT.
 */
static int read_str(struct walk *w, const struct peek *p, char *out)
{
	const struct pylayout *L = w->L;
	uint8_t hdr[OBJ_HDR];
	uint8_t data[PYF_MAX_STR * 4];
	size_t used = 0;
	int r = read_obj(w, p, hdr, L->u_ascii_size, "str", &w->t_str);

	if (r < 0)
		return r;
	int64_t length = (int64_t)field64(hdr, L->u_length);
	uint32_t state;
	memcpy(&state, hdr + L->u_state, sizeof(state));
	unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1,
		 ascii = (state >> 6) & 1;
	if (length < 0 || !compact || (kind != 1 && kind != 2 && kind != 4) ||
	    (ascii && kind != 1))
		return -EINVAL;
	size_t nch = length > PYF_MAX_STR ? PYF_MAX_STR : (size_t)length;
	uint64_t at = ascii ? L->u_ascii_size : L->u_compact_size;
	r = obj_bytes(w, p, at, data, nch * kind);
	if (r < 0)
		return r;
	for (size_t i = 0; i < nch; i++) {
		uint32_t c;
		if (kind == 1) {
			c = data[i];
		} else if (kind == 2) {
			uint16_t c2;
			memcpy(&c2, data + 2 * i, 2);
			c = c2;
		} else {
			memcpy(&c, data + 4 * i, 4);
		}
		if (ascii && c >= 0x80)
			return -EINVAL;
		used += put_utf8(c, out + used);
	}
	if ((size_t)length > nch) {
		memcpy(out + used, "...", 3);
		used += 3;
	}
	out[used] = '\0';
	return 0;
}

/* A bytes object's first bytes (at most cap) into a new buffer. */
static int read_bytes(struct walk *w, const struct peek *p, uint8_t **out,
		      size_t *len, size_t cap)
{
	const struct pylayout *L = w->L;
	uint8_t hdr[OBJ_HDR];
	int r = read_obj(w, p, hdr, L->b_data, "bytes", &w->t_bytes);

	if (r < 0)
		return r;
	int64_t size = (int64_t)field64(hdr, L->b_size);
	if (size < 0)
		return -EINVAL;
	*len = (uint64_t)size > cap ? cap : (size_t)size;
	*out = malloc(*len ? *len : 1);
	if (!*out)
		return -ENOMEM;
	r = obj_bytes(w, p, L->b_data, *out, *len);
	if (r < 0) {
		free(*out);
		*out = NULL;
	}
	return r;
}

/* What a frame's code object says, kept for the next frame (recursion
 * runs the same code frame after frame). */
struct code {
	uint64_t addr; /* 0: none read yet */
	bool ok;       /* a code object (else the walk stops) */
	char file[STR_OUT], func[STR_OUT];
	int firstlineno;
	long long units; /* code units, or -1: unknown */
	uint8_t *lt;	 /* line table (owned) */
	size_t ltlen;
};

static uint64_t layout_max(const struct pylayout *L, const uint64_t *f,
			   size_t n)
{
	uint64_t m = L->ob_type;

	for (size_t i = 0; i < n; i++)
		if (f[i] > m)
			m = f[i];
	return m + 8;
}

static int read_code(struct walk *w, uint64_t addr, struct code *c)
{
	const struct pylayout *L = w->L;
	const uint64_t f[] = { L->co_size, L->co_filename, L->co_qualname,
			       L->co_firstlineno, L->co_linetable };
	uint64_t need = layout_max(L, f, sizeof(f) / sizeof(f[0]));
	uint8_t hdr[512];
	int32_t first;

	free(c->lt);
	memset(c, 0, sizeof(*c));
	c->addr = addr;
	if (need > sizeof(hdr))
		return -EINVAL;
	if (umem_read(w->tid, addr, hdr, need) < 0) {
		w->why = "a frame's code object could not be read";
		return -EFAULT;
	}
	if (!type_is(w, hdr, "code", &w->t_code)) {
		w->why = "a frame's code is not a code object";
		return -EINVAL;
	}
	c->ok = true;
	memcpy(&first, hdr + L->co_firstlineno, sizeof(first));
	c->firstlineno = first;
	c->units = L->co_size ? (long long)field64(hdr, L->co_size) : -1;
	w->pk[0].addr = field64(hdr, L->co_filename);
	w->pk[1].addr = field64(hdr, L->co_qualname);
	w->pk[2].addr = field64(hdr, L->co_linetable);
	peek_objects(w, w->pk, 3);
	if (read_str(w, &w->pk[0], c->file) < 0)
		snprintf(c->file, sizeof(c->file), "?");
	if (read_str(w, &w->pk[1], c->func) < 0)
		snprintf(c->func, sizeof(c->func), "?");
	if (read_bytes(w, &w->pk[2], &c->lt, &c->ltlen, PYF_MAX_LINETABLE) <
	    0) {
		c->lt = NULL;
		c->ltlen = 0;
	}
	return 0;
}

/* The line a frame is at, or -1 (unknown). */
static int frame_line(struct walk *w, const struct code *c, uint64_t instr)
{
	uint64_t base = c->addr + w->L->co_code;
	long long units;

	if (!c->lt || !instr)
		return -1;
	if (instr < base) /* 3.11: a frame that has not started yet */
		return instr == base - 2 ? c->firstlineno : -1;
	if ((instr - base) % 2 || (instr - base) / 2 > INT32_MAX)
		return -1;
	units = (long long)((instr - base) / 2);
	if (c->units >= 0 && units >= c->units)
		return -1;
	int line = pyf_addr2line(c->lt, c->ltlen, c->firstlineno, units * 2);
	return line >= 0 ? line : -1;
}

/* ------------------------------------------------------------------ */
/* the thread state and the walk                                       */

/* The thread state of the thread the code calls w->ns_tid. */
static int find_tstate(struct walk *w, uint64_t runtime, uint64_t *ts_out)
{
	const struct pylayout *L = w->L;
	const uint64_t f[] = { L->ts_next, L->ts_native_tid, L->ts_frame };
	uint64_t need = layout_max(L, f, 3), interp;
	uint8_t hdr[512];
	long budget = PYF_MAX_THREADS;

	if (need > sizeof(hdr))
		return -EINVAL;
	if (rd_ptr(w, runtime + L->rt_interps, &interp) < 0)
		return -EFAULT;
	for (int i = 0; interp && i < PYF_MAX_INTERPS; i++) {
		uint64_t ts;
		if (rd_ptr(w, interp + L->is_threads, &ts) < 0)
			return -EFAULT;
		while (ts && budget-- > 0) {
			if (umem_read(w->tid, ts, hdr, need) < 0)
				break;
			if (field64(hdr, L->ts_native_tid) ==
			    (uint64_t)w->ns_tid) {
				*ts_out = ts;
				return 0;
			}
			ts = field64(hdr, L->ts_next);
		}
		if (rd_ptr(w, interp + L->is_next, &interp) < 0)
			break;
	}
	return -ENOENT;
}

/* Appends to the JSON text in buf (used bytes of n, keeping room for the
 * end); false when it does not fit (nothing appended). */
static bool append(char *buf, size_t n, size_t *used, const char *s)
{
	size_t l = strlen(s);

	if (*used + l + 1 > n)
		return false;
	memcpy(buf + *used, s, l + 1);
	*used += l;
	return true;
}

enum { TAIL_ROOM = 160 }; /* the closing fields */

static int walk_frames(struct walk *w, uint64_t frame, char *buf, size_t n,
		       size_t *used, bool *truncated)
{
	const struct pylayout *L = w->L;
	const uint64_t f[] = { L->fr_previous, L->fr_code, L->fr_instr,
			       L->fr_owner };
	uint64_t need = layout_max(L, f, 4), seen[PYF_MAX_FRAMES * 2];
	uint8_t hdr[512];
	int nseen = 0, nf = 0;
	struct code *c = calloc(1, sizeof(*c));
	int r = 0;

	if (!c) {
		r = -ENOMEM;
		goto out;
	}
	if (need > sizeof(hdr) || n < TAIL_ROOM) {
		r = -EINVAL;
		goto out;
	}
	while (frame) {
		if (nf == PYF_MAX_FRAMES || nseen == PYF_MAX_FRAMES * 2) {
			*truncated = true;
			break;
		}
		for (int i = 0; i < nseen; i++)
			if (seen[i] == frame) {
				w->why = "a frame links back to an earlier one";
				goto out;
			}
		seen[nseen++] = frame;
		if (umem_read(w->tid, frame, hdr, need) < 0) {
			w->why = "a frame could not be read";
			break;
		}
		uint64_t prev = field64(hdr, L->fr_previous);
		if (L->owner_shim >= 0 && hdr[L->fr_owner] == L->owner_shim) {
			frame = prev;
			continue;
		}
		uint64_t code = field64(hdr, L->fr_code);
		if (code != c->addr || !c->ok) {
			r = read_code(w, code, c);
			if (r == -ENOMEM)
				goto out;
			r = 0;
			if (!c->ok)
				break;
		}
		int line = frame_line(w, c, field64(hdr, L->fr_instr));
		char file[STR_OUT * 6 + 3], func[STR_OUT * 6 + 3], ln[16];
		if (args_json_string(file, sizeof(file), c->file,
				     strlen(c->file)) < 0 ||
		    args_json_string(func, sizeof(func), c->func,
				     strlen(c->func)) < 0) {
			w->why = "a name could not be written";
			break;
		}
		if (line >= 0)
			snprintf(ln, sizeof(ln), "%d", line);
		else
			snprintf(ln, sizeof(ln), "null");
		size_t need1 = strlen(file) + strlen(func) + 48;
		char *fr = malloc(need1);
		if (!fr) {
			r = -ENOMEM;
			goto out;
		}
		snprintf(fr, need1,
			 "%s{\"file\":%s,\"line\":%s,\"function\":%s}",
			 nf ? "," : "", file, ln, func);
		bool fits = *used + strlen(fr) + TAIL_ROOM < n &&
			    append(buf, n, used, fr);
		free(fr);
		if (!fits) {
			*truncated = true;
			break;
		}
		nf++;
		frame = prev;
	}
out:
	if (c)
		free(c->lt);
	free(c);
	return r;
}

/* The fields read from a str or bytes header lie within it (a table read
 * from memory may say anything). */
static bool layout_sane(const struct pylayout *L)
{
	return L->u_ascii_size <= OBJ_HDR && L->u_compact_size <= OBJ_HDR &&
	       L->ob_type + 8 <= L->u_ascii_size &&
	       L->u_length + 8 <= L->u_ascii_size &&
	       L->u_state + 4 <= L->u_ascii_size && L->b_data <= OBJ_HDR &&
	       L->ob_type + 8 <= L->b_data && L->b_size + 8 <= L->b_data;
}

/* The layout of the interpreter whose runtime is at rt; its version text
 * into ver. */
static int choose_layout(pid_t tid, uint64_t rt, uint64_t ver_addr,
			 struct pylayout *L, char *ver, size_t vn)
{
	struct dbg313 d;
	uint64_t hex = 0;

	if (umem_read(tid, rt, d.cookie, sizeof(d.cookie)) < 0)
		return -EFAULT;
	if (!memcmp(d.cookie, "xdebugpy", 8)) {
		if (umem_read(tid, rt, &d, sizeof(d)) < 0)
			return -EFAULT;
		hex = d.version;
		/* the table's layout is 3.13's only */
		if ((hex >> 24) != 3 || ((hex >> 16) & 0xff) != 13)
			return -ENOTSUP;
		if (layout_from_313(&d, L) < 0)
			return -EINVAL;
	} else {
		if (!ver_addr ||
		    umem_read(tid, ver_addr, &hex, sizeof(hex)) < 0)
			return -ENOTSUP;
		if ((hex >> 24) != 3 || ((hex >> 16) & 0xff) != 11)
			return -ENOTSUP; /* 3.12 and the unknown: nothing */
		*L = layout_311;
	}
	if (!layout_sane(L))
		return -EINVAL;
	snprintf(ver, vn, "%u.%u.%u", (unsigned)(hex >> 24) & 0xff,
		 (unsigned)(hex >> 16) & 0xff, (unsigned)(hex >> 8) & 0xff);
	return 0;
}

/*
 * The type objects (code, str, bytes) found in a process whose runtime is
 * at rt: the next walk of it believes the same pointers without reading
 * their names again. Another image (an exec, a reused pid) has its
 * runtime elsewhere, or the same binary at the same addresses.
 */
struct pyproc {
	pid_t tgid;
	uint64_t rt, t_code, t_str, t_bytes;
};

enum { PROC_CACHE = 16 };
static struct pyproc procs[PROC_CACHE];
static unsigned proc_next;

static void types_load(struct walk *w, pid_t tgid, uint64_t rt)
{
	for (int i = 0; i < PROC_CACHE; i++)
		if (procs[i].tgid == tgid && procs[i].rt == rt) {
			w->t_code = procs[i].t_code;
			w->t_str = procs[i].t_str;
			w->t_bytes = procs[i].t_bytes;
			return;
		}
}

static void types_save(const struct walk *w, pid_t tgid, uint64_t rt)
{
	struct pyproc *p = NULL;

	for (int i = 0; i < PROC_CACHE && !p; i++)
		if (procs[i].tgid == tgid)
			p = &procs[i];
	if (!p)
		p = &procs[proc_next++ % PROC_CACHE];
	*p = (struct pyproc){ tgid, rt, w->t_code, w->t_str, w->t_bytes };
}

int tracer_pyframes(pid_t tid, pid_t tgid, pid_t ns_tid, char *buf, size_t n)
{
	struct pylayout L;
	struct peek pk[3];
	struct walk w = { .tid = tid, .ns_tid = ns_tid, .L = &L, .pk = pk };
	uint64_t rt = 0, ver_addr = 0, ts = 0, frame = 0;
	char ver[32], head[256], tail[TAIL_ROOM];
	bool truncated = false;
	size_t used = 0;
	int r;

	if (n > 0)
		buf[0] = '\0';
	if (n < 2 * TAIL_ROOM)
		return -EINVAL;
	r = find_runtime(tgid, &rt, &ver_addr);
	if (r < 0)
		return r;
	r = choose_layout(tid, rt, ver_addr, &L, ver, sizeof(ver));
	if (r < 0)
		return r;
	r = find_tstate(&w, rt, &ts);
	if (r < 0)
		return r;
	if (rd_ptr(&w, ts + L.ts_frame, &frame) < 0)
		return -EFAULT;
	if (L.via_cframe && frame && rd_ptr(&w, frame + L.cf_frame, &frame) < 0)
		return -EFAULT;
	snprintf(head, sizeof(head),
		 "{\"untrusted\":true,\"source\":\"%s\",\"version\":\"%s\","
		 "\"frames\":[",
		 L.source, ver);
	append(buf, n, &used, head);
	types_load(&w, tgid, rt);
	r = walk_frames(&w, frame, buf, n, &used, &truncated);
	types_save(&w, tgid, rt);
	if (r < 0) {
		buf[0] = '\0';
		return r;
	}
	snprintf(tail, sizeof(tail), "],\"truncated\":%s%s%s%s}",
		 truncated ? "true" : "false",
		 w.why ? ",\"incomplete\":\"" : "", w.why ? w.why : "",
		 w.why ? "\"" : "");
	if (!append(buf, n, &used, tail)) {
		buf[0] = '\0';
		return -ENOSPC;
	}
	return 0;
}
