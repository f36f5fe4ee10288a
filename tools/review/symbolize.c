/*
 * symbolize.c - function names from ELF64 symbol tables (symbolize.h).
 *
 * Only what a lookup needs is read, with pread(2): the ELF header, the
 * program headers (the PT_LOAD segments are kept), the section headers,
 * one symbol table (its function symbols are kept, sorted by address) and
 * its string table. Each read is checked against the file's size first.
 */
#include "tools/review/symbolize.h"

#include <elf.h>
#include <endian.h>
#include <errno.h>
#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if __BYTE_ORDER == __LITTLE_ENDIAN
#define SYM_ELFDATA ELFDATA2LSB
#else
#define SYM_ELFDATA ELFDATA2MSB
#endif

/* Limits on what one module may make us read and keep. Real files are far
 * below them (libc: 31 headers, 3000 dynamic symbols, 24 KiB of names). */
#define SYM_MAX_PHDRS	  4096
#define SYM_MAX_SHDRS	  65536
#define SYM_MAX_SYMTAB	  (64u << 20)  /* bytes of symbol table read */
#define SYM_MAX_STRTAB	  (32u << 20)  /* bytes of names kept */
#define SYM_CHUNK	  4096	       /* symbols per read */
#define SYM_CACHE_MODULES 16	       /* modules kept */
#define SYM_CACHE_BYTES	  (256u << 20) /* memory the modules may hold */
#define SYM_MAX_FILE	  (1ull << 30) /* larger files are not read */

struct sym_load {
	uint64_t off, filesz, vaddr; /* a PT_LOAD segment's file range */
};

struct sym_func {
	uint64_t start, size; /* [start, start + size), no overflow */
	uint32_t name;	      /* offset in strtab, < strtab_len */
	uint32_t idx;	      /* index in the symbol table */
	uint8_t pref;	      /* 0 global, 1 weak, 2 other binding */
};

struct sym_module {
	struct sym_module *next;
	char *path;
	int err; /* 0, or the -errno every lookup in this module returns */
	struct sym_load *loads;
	size_t nloads;
	struct sym_func *funcs; /* sorted: start, then pref, then idx */
	size_t nfuncs;
	uint64_t max_size; /* the largest func size */
	char *strtab;
	size_t strtab_len;
	size_t bytes; /* memory held, for the cache's budget */
};

struct sym_cache {
	struct sym_module *head; /* most recently used first */
	size_t n, bytes;
};

struct sym_cache *sym_cache_new(void)
{
	return calloc(1, sizeof(struct sym_cache));
}

static void module_free(struct sym_module *m)
{
	if (!m)
		return;
	free(m->path);
	free(m->loads);
	free(m->funcs);
	free(m->strtab);
	free(m);
}

void sym_cache_free(struct sym_cache *c)
{
	struct sym_module *m, *next;

	if (!c)
		return;
	for (m = c->head; m; m = next) {
		next = m->next;
		module_free(m);
	}
	free(c);
}

/* ----------------------------- reading ----------------------------- */

struct elf_file {
	int fd;
	uint64_t size;
};

/* Whether [off, off + len) lies within the file, without overflow. */
static bool in_file(const struct elf_file *f, uint64_t off, uint64_t len)
{
	return off <= f->size && len <= f->size - off;
}

/* Reads exactly len bytes at off: 0, or -ENOEXEC (outside the file, or
 * the file got shorter), or -errno. */
static int read_at(const struct elf_file *f, void *buf, size_t len,
		   uint64_t off)
{
	char *p = buf;

	if (!in_file(f, off, len))
		return -ENOEXEC;
	while (len) {
		ssize_t n = pread(f->fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENOEXEC;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads count entries of size bytes at off into a new array, which the
 * caller frees. NULL with *err set: 0 (count is 0), or -errno. */
static void *read_table(const struct elf_file *f, uint64_t off, size_t count,
			size_t size, int *err)
{
	void *t;

	*err = 0;
	if (!count)
		return NULL;
	if (count > SIZE_MAX / size || !in_file(f, off, count * size)) {
		*err = -ENOEXEC;
		return NULL;
	}
	t = malloc(count * size);
	if (!t) {
		*err = -ENOMEM;
		return NULL;
	}
	*err = read_at(f, t, count * size, off);
	if (*err) {
		free(t);
		return NULL;
	}
	return t;
}

static int check_ehdr(const Elf64_Ehdr *eh)
{
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_ident[EI_DATA] != SYM_ELFDATA ||
	    eh->e_ident[EI_VERSION] != EV_CURRENT)
		return -ENOEXEC;
	if (eh->e_phnum && eh->e_phentsize != sizeof(Elf64_Phdr))
		return -ENOEXEC;
	if (eh->e_shoff && eh->e_shentsize != sizeof(Elf64_Shdr))
		return -ENOEXEC;
	return 0;
}

/* Section 0, which holds the real section and program header counts
 * when they do not fit the ELF header (zeroed when there is none). */
static int read_shdr0(const struct elf_file *f, const Elf64_Ehdr *eh,
		      Elf64_Shdr *s0)
{
	memset(s0, 0, sizeof(*s0));
	if (!eh->e_shoff)
		return 0;
	return read_at(f, s0, sizeof(*s0), eh->e_shoff);
}

/* The PT_LOAD segments with a file range inside the file. */
static int read_loads(const struct elf_file *f, const Elf64_Ehdr *eh,
		      const Elf64_Shdr *s0, struct sym_module *m)
{
	size_t n = eh->e_phnum == PN_XNUM ? s0->sh_info : eh->e_phnum;
	Elf64_Phdr *ph;
	int r;

	if (n > SYM_MAX_PHDRS)
		return -EFBIG;
	ph = read_table(f, eh->e_phoff, n, sizeof(*ph), &r);
	if (r)
		return r;
	m->loads = calloc(n ? n : 1, sizeof(*m->loads));
	if (!m->loads) {
		free(ph);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const Elf64_Phdr *p = &ph[i];

		if (p->p_type != PT_LOAD || !p->p_filesz ||
		    !in_file(f, p->p_offset, p->p_filesz) ||
		    p->p_vaddr > UINT64_MAX - p->p_filesz)
			continue;
		m->loads[m->nloads++] = (struct sym_load){
			.off = p->p_offset,
			.filesz = p->p_filesz,
			.vaddr = p->p_vaddr,
		};
	}
	m->bytes += n * sizeof(*m->loads);
	free(ph);
	return m->nloads ? 0 : -ENOEXEC;
}

static uint8_t bind_pref(unsigned char info)
{
	switch (ELF64_ST_BIND(info)) {
	case STB_GLOBAL: return 0;
	case STB_WEAK:
	case STB_GNU_UNIQUE: return 1;
	default: return 2;
	}
}

static int func_cmp(const void *a, const void *b)
{
	const struct sym_func *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->pref != y->pref)
		return x->pref < y->pref ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Keeps the function symbols of one chunk; *cap grows m->funcs. */
static int keep_funcs(struct sym_module *m, const Elf64_Sym *syms, size_t n,
		      size_t first, size_t *cap)
{
	for (size_t i = 0; i < n; i++) {
		const Elf64_Sym *s = &syms[i];
		unsigned type = ELF64_ST_TYPE(s->st_info);

		if ((type != STT_FUNC && type != STT_GNU_IFUNC) ||
		    s->st_shndx == SHN_UNDEF || !s->st_size ||
		    s->st_value > UINT64_MAX - s->st_size || !s->st_name ||
		    s->st_name >= m->strtab_len || !m->strtab[s->st_name])
			continue;
		if (m->nfuncs == *cap) {
			size_t ncap = *cap ? 2 * *cap : 256;
			struct sym_func *nf;

			nf = realloc(m->funcs, ncap * sizeof(*nf));
			if (!nf)
				return -ENOMEM;
			m->funcs = nf;
			*cap = ncap;
		}
		m->funcs[m->nfuncs++] = (struct sym_func){
			.start = s->st_value,
			.size = s->st_size,
			.name = s->st_name,
			.idx = (uint32_t)(first + i),
			.pref = bind_pref(s->st_info),
		};
		if (s->st_size > m->max_size)
			m->max_size = s->st_size;
	}
	return 0;
}

/* The function symbols of symbol table section sym (shdrs has shnum
 * entries) and its string table. */
static int read_symtab(const struct elf_file *f, const Elf64_Shdr *shdrs,
		       size_t shnum, const Elf64_Shdr *sym,
		       struct sym_module *m)
{
	const Elf64_Shdr *str;
	Elf64_Sym *chunk;
	size_t nsyms, cap = 0;
	int r = 0;

	if (sym->sh_entsize != sizeof(Elf64_Sym) || sym->sh_link >= shnum)
		return -ENOEXEC;
	str = &shdrs[sym->sh_link];
	if (str->sh_type != SHT_STRTAB)
		return -ENOEXEC;
	if (sym->sh_size > SYM_MAX_SYMTAB || str->sh_size > SYM_MAX_STRTAB)
		return -EFBIG;
	if (!in_file(f, sym->sh_offset, sym->sh_size) ||
	    !in_file(f, str->sh_offset, str->sh_size) || !str->sh_size)
		return -ENOEXEC;
	m->strtab = read_table(f, str->sh_offset, str->sh_size, 1, &r);
	if (r)
		return r;
	m->strtab_len = str->sh_size;
	m->bytes += m->strtab_len;
	nsyms = sym->sh_size / sizeof(Elf64_Sym);
	chunk = malloc(SYM_CHUNK * sizeof(*chunk));
	if (!chunk)
		return -ENOMEM;
	for (size_t i = 0; i < nsyms && !r; i += SYM_CHUNK) {
		size_t n = nsyms - i < SYM_CHUNK ? nsyms - i : SYM_CHUNK;

		r = read_at(f, chunk, n * sizeof(*chunk),
			    sym->sh_offset + i * sizeof(*chunk));
		if (!r)
			r = keep_funcs(m, chunk, n, i, &cap);
	}
	free(chunk);
	if (r)
		return r;
	m->bytes += cap * sizeof(*m->funcs);
	if (m->nfuncs)
		qsort(m->funcs, m->nfuncs, sizeof(*m->funcs), func_cmp);
	return 0;
}

/* Drops what a failed read_symtab kept, to try the other table. */
static void drop_symtab(struct sym_module *m)
{
	free(m->funcs);
	free(m->strtab);
	m->bytes -= m->strtab_len;
	m->funcs = NULL;
	m->strtab = NULL;
	m->nfuncs = m->strtab_len = 0;
	m->max_size = 0;
}

/* .symtab (SHT_SYMTAB) if it is usable and has functions, else .dynsym. */
static int read_symbols(const struct elf_file *f, const Elf64_Ehdr *eh,
			const Elf64_Shdr *s0, struct sym_module *m)
{
	static const uint32_t types[] = { SHT_SYMTAB, SHT_DYNSYM };
	size_t shnum = eh->e_shoff && !eh->e_shnum ? s0->sh_size : eh->e_shnum;
	Elf64_Shdr *sh;
	int r, best = -ENODATA;

	if (!eh->e_shoff)
		return -ENODATA;
	if (shnum > SYM_MAX_SHDRS)
		return -EFBIG;
	sh = read_table(f, eh->e_shoff, shnum, sizeof(*sh), &r);
	if (r)
		return r;
	for (size_t t = 0; t < 2; t++) {
		size_t i;

		for (i = 0; i < shnum && sh[i].sh_type != types[t]; i++)
			;
		if (i == shnum)
			continue;
		r = read_symtab(f, sh, shnum, &sh[i], m);
		if (!r && m->nfuncs) {
			best = 0;
			break;
		}
		if (r == -ENOMEM) {
			best = r;
			break;
		}
		drop_symtab(m);
		if (best == -ENODATA && r)
			best = r;
	}
	free(sh);
	return best;
}

/*
 * Opens path only if it is a regular file of at most SYM_MAX_FILE bytes.
 * The name is resolved once, with O_PATH, which opens nothing (no
 * device's open runs, no FIFO is waited on); the file so found is checked
 * with fstat and then reopened through /proc/self/fd, so another file
 * swapped in under the name meanwhile is never the one opened. O_NONBLOCK
 * makes a lease on the file fail the open instead of waiting for it.
 */
static int open_regular(const char *path, struct elf_file *f)
{
	struct stat a, b;
	char self[64];
	int o, fd, e;

	o = open(path, O_PATH | O_CLOEXEC);
	if (o < 0)
		return -errno;
	if (fstat(o, &a) || !S_ISREG(a.st_mode) ||
	    (uint64_t)a.st_size > SYM_MAX_FILE) {
		close(o);
		return -ENOEXEC;
	}
	/* Only the system's own files (or, for a reviewer who is not root,
	 * their own), which no run's code could have written: a module the
	 * code made is shown by address, never parsed by the reviewer's
	 * (maybe privileged) process. */
	if ((a.st_uid != 0 && a.st_uid != geteuid()) ||
	    (a.st_mode & (S_IWGRP | S_IWOTH))) {
		close(o);
		return -EPERM;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", o);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	e = errno;
	close(o);
	if (fd < 0)
		return -e;
	if (fstat(fd, &b) || !S_ISREG(b.st_mode) || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino) {
		close(fd);
		return -ENOEXEC;
	}
	f->fd = fd;
	f->size = (uint64_t)b.st_size;
	return 0;
}

/* Fills m from its file; m->err says how that went. */
static void module_load(struct sym_module *m)
{
	struct elf_file f = { .fd = -1 };
	Elf64_Ehdr eh;
	Elf64_Shdr s0;
	int r = open_regular(m->path, &f);

	if (r) {
		m->err = r;
		return;
	}
	r = read_at(&f, &eh, sizeof(eh), 0);
	if (!r)
		r = check_ehdr(&eh);
	if (!r)
		r = read_shdr0(&f, &eh, &s0);
	if (!r)
		r = read_loads(&f, &eh, &s0, m);
	if (!r)
		r = read_symbols(&f, &eh, &s0, m);
	close(f.fd);
	m->err = r;
	if (r) {
		/* keep only the error */
		free(m->loads);
		drop_symtab(m);
		m->loads = NULL;
		m->nloads = 0;
		m->bytes = 0;
	}
}

/* ------------------------------ lookup ------------------------------ */

/* Drops least recently used modules over the limits, keeping the head. */
static void cache_trim(struct sym_cache *c)
{
	while (c->n > 1 &&
	       (c->n > SYM_CACHE_MODULES || c->bytes > SYM_CACHE_BYTES)) {
		struct sym_module **p = &c->head;

		while ((*p)->next)
			p = &(*p)->next;
		c->n--;
		c->bytes -= (*p)->bytes;
		module_free(*p);
		*p = NULL;
	}
}

/* The module for path, loaded if it is not cached, moved to the front;
 * NULL when out of memory. */
static struct sym_module *cache_get(struct sym_cache *c, const char *path)
{
	struct sym_module **p, *m;

	for (p = &c->head; *p; p = &(*p)->next) {
		if (strcmp((*p)->path, path))
			continue;
		m = *p;
		*p = m->next;
		m->next = c->head;
		c->head = m;
		return m;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->path = strdup(path);
	if (!m->path) {
		free(m);
		return NULL;
	}
	module_load(m);
	if (m->err == -ENOMEM) {
		/* not cached: memory may be there next time */
		module_free(m);
		return NULL;
	}
	m->next = c->head;
	c->head = m;
	c->n++;
	c->bytes += m->bytes;
	cache_trim(c);
	return m;
}

/* The innermost function covering vaddr, the best-named of aliases. */
static const struct sym_func *find_func(const struct sym_module *m,
					uint64_t vaddr)
{
	const struct sym_func *best = NULL;
	size_t lo = 0, hi = m->nfuncs;

	/* hi: the number of funcs starting at or below vaddr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->funcs[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (hi-- > 0) {
		const struct sym_func *fn = &m->funcs[hi];

		if (vaddr - fn->start >= m->max_size ||
		    (best && fn->start < best->start))
			break;
		if (vaddr - fn->start < fn->size)
			best = fn; /* same start: earlier ones are better */
	}
	return best;
}

/* "name+0xNN", the name made printable and cut at SYM_NAME_MAX. */
static char *format_name(const struct sym_module *m, const struct sym_func *fn,
			 uint64_t delta)
{
	const char *name = m->strtab + fn->name;
	size_t len = strnlen(name, m->strtab_len - fn->name);
	size_t n = len > SYM_NAME_MAX ? SYM_NAME_MAX : len;
	char *out = malloc(n + sizeof("...+0x") + 16);

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++)
		out[i] = name[i] >= 0x20 && name[i] < 0x7f ? name[i] : '?';
	sprintf(out + n, "%s+0x%" PRIx64, n < len ? "..." : "", delta);
	return out;
}

int sym_lookup(struct sym_cache *c, const char *module, uint64_t off,
	       unsigned flags, char **out)
{
	const struct sym_module *m;
	const struct sym_func *fn;
	uint64_t look = off, vaddr = 0;
	bool found = false;

	if (!c || !module || !out || module[0] != '/')
		return -EINVAL;
	*out = NULL;
	m = cache_get(c, module);
	if (!m)
		return -ENOMEM;
	if (m->err)
		return m->err;
	if ((flags & SYM_RETURN_ADDRESS) && look > 0)
		look--;
	for (size_t i = 0; i < m->nloads && !found; i++) {
		const struct sym_load *l = &m->loads[i];

		if (look >= l->off && look - l->off < l->filesz) {
			vaddr = look - l->off + l->vaddr;
			found = true;
		}
	}
	if (!found)
		return -ENXIO;
	fn = find_func(m, vaddr);
	if (!fn)
		return -ENODATA;
	*out = format_name(m, fn, vaddr - fn->start + (off - look));
	return *out ? 0 : -ENOMEM;
}

/* A recorded "0x..." offset; false if it is not one. */
static bool parse_hex(const char *s, uint64_t *v)
{
	char *end;

	if (!s || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') ||
	    !isxdigit((unsigned char)s[2]))
		return false;
	errno = 0;
	*v = strtoull(s + 2, &end, 16);
	return !errno && !*end;
}

size_t sym_backtrace_add(struct sym_cache *c, json_t *bt)
{
	size_t i, added = 0;
	json_t *f;

	if (!c || !json_is_array(bt))
		return 0;
	json_array_foreach(bt, i, f)
	{
		const char *mod =
			json_string_value(json_object_get(f, "module"));
		const char *off_s =
			json_string_value(json_object_get(f, "offset"));
		uint64_t off;
		char *name;

		if (!json_is_object(f) || json_object_get(f, "symbol") ||
		    !mod || !parse_hex(off_s, &off))
			continue;
		if (sym_lookup(c, mod, off, i ? SYM_RETURN_ADDRESS : 0, &name))
			continue;
		if (!json_object_set_new(f, "symbol", json_string(name)))
			added++;
		free(name);
	}
	return added;
}
