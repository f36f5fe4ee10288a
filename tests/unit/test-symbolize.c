/*
 * test-symbolize.c - tools/review/symbolize: names for file offsets in
 * this test binary and in libc (found through /proc/self/maps), in ELF
 * files built here with known symbols, and errors for garbage,
 * truncated, missing and special files (never a crash: run under ASan by
 * `make asan`).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tools/review/symbolize.h"
#include "tests/unit/tap.h"

static char tmpdir[] = "/tmp/ward-symtest-XXXXXX";

/* A function of this binary (in .symtab; global) and one only .symtab
 * names (static). Both big enough for an offset inside them. */
__attribute__((noinline, used)) int ward_symtest_global(int x);
__attribute__((noinline, used)) int ward_symtest_global(int x)
{
	volatile int v = x;

	for (int i = 0; i < 3; i++)
		v = v * 31 + i;
	return v;
}

__attribute__((noinline, used)) static int symtest_static(int x)
{
	volatile int v = x;

	for (int i = 0; i < 5; i++)
		v = v * 17 + i;
	return v;
}

/* The module path and file offset of addr, from /proc/self/maps. */
static int file_offset(const void *addr, char *path, size_t n, uint64_t *off)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[4096];
	int r = -ENOENT;

	if (!f)
		return -errno;
	while (r && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, moff;
		int pos = 0;

		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &lo, &hi, &moff,
			   &pos) < 3 ||
		    !pos)
			continue;
		if ((uintptr_t)addr < lo || (uintptr_t)addr >= hi ||
		    line[pos] != '/')
			continue;
		line[strcspn(line, "\n")] = 0;
		snprintf(path, n, "%s", line + pos);
		*off = (uintptr_t)addr - lo + moff;
		r = 0;
	}
	fclose(f);
	return r;
}

static void test_self(void)
{
	struct sym_cache *c = sym_cache_new();
	char path[4096], *name = NULL;
	uint64_t off;

	if (file_offset((const void *)ward_symtest_global, path, sizeof(path),
			&off)) {
		skip("this binary not found in /proc/self/maps");
		sym_cache_free(c);
		return;
	}
	is_int(sym_lookup(c, path, off, 0, &name), 0,
	       "self: a global function of the test binary");
	is_str(name, "ward_symtest_global+0x0", "self: its name, offset 0");
	free(name);
	is_int(sym_lookup(c, path, off + 3, 0, &name), 0,
	       "self: 3 bytes into it");
	is_str(name, "ward_symtest_global+0x3", "self: name+0x3");
	free(name);
	is_int(sym_lookup(c, path, off + 3, SYM_RETURN_ADDRESS, &name), 0,
	       "self: as a return address");
	is_str(name, "ward_symtest_global+0x3",
	       "self: a return address prints its own offset");
	free(name);
	if (!file_offset((const void *)symtest_static, path, sizeof(path),
			 &off)) {
		is_int(sym_lookup(c, path, off + 1, 0, &name), 0,
		       "self: a static function (.symtab)");
		is_str(name, "symtest_static+0x1", "self: its name");
		free(name);
	}
	(void)ward_symtest_global(1);
	(void)symtest_static(1);
	sym_cache_free(c);
}

/* sym_backtrace_add on a recorded backtrace column: frames gain "symbol",
 * a recorded one is kept, frames it cannot read are left alone. */
static void test_backtrace_json(void)
{
	struct sym_cache *c = sym_cache_new();
	char path[4096], off_hex[32], *text;
	uint64_t off;
	json_t *bt;

	if (file_offset((const void *)ward_symtest_global, path, sizeof(path),
			&off)) {
		skip("this binary not found in /proc/self/maps");
		sym_cache_free(c);
		return;
	}
	snprintf(off_hex, sizeof(off_hex), "0x%" PRIx64, off + 2);
	bt = json_pack("[{s:s, s:s}, {s:s, s:s}, {s:s, s:s, s:s}, {s:s, s:s},"
		       " {s:s}, s]",
		       "module", path, "offset", off_hex, /* innermost */
		       "module", path, "offset", off_hex, /* a return address */
		       "module", path, "offset", off_hex, "symbol", "kept+0x1",
		       "module", path, "offset", "12", /* not 0x... */
		       "offset", off_hex,	       /* no module */
		       "not a frame");
	is_int((int)sym_backtrace_add(c, bt), 2, "backtrace: two frames named");
	is_str(json_string_value(
		       json_object_get(json_array_get(bt, 0), "symbol")),
	       "ward_symtest_global+0x2", "backtrace: the innermost frame");
	is_str(json_string_value(
		       json_object_get(json_array_get(bt, 1), "symbol")),
	       "ward_symtest_global+0x2",
	       "backtrace: a caller's frame (looked up as a return address)");
	is_str(json_string_value(
		       json_object_get(json_array_get(bt, 2), "symbol")),
	       "kept+0x1", "backtrace: a recorded symbol is kept");
	ok(!json_object_get(json_array_get(bt, 3), "symbol") &&
		   !json_object_get(json_array_get(bt, 4), "symbol"),
	   "backtrace: frames without a hex offset or a module stay as they are");
	text = json_dumps(bt, JSON_COMPACT);
	ok(text && strstr(text, "\"not a frame\""),
	   "backtrace: what is not a frame is left in place");
	free(text);
	is_int((int)sym_backtrace_add(NULL, bt), 0,
	       "backtrace: no cache, no names");
	is_int((int)sym_backtrace_add(c, NULL), 0,
	       "backtrace: no array, no names");
	json_decref(bt);
	sym_cache_free(c);
}

static void test_libc(void)
{
	struct sym_cache *c = sym_cache_new();
	char path[4096], *name = NULL;
	uint64_t off;
	int r;

	if (file_offset((const void *)getpid, path, sizeof(path), &off)) {
		skip("libc's getpid not found in /proc/self/maps");
		sym_cache_free(c);
		return;
	}
	ok(strstr(path, "libc") != NULL, "libc: getpid is in %s", path);
	r = sym_lookup(c, path, off, 0, &name);
	is_int(r, 0, "libc: getpid's offset has a name (.dynsym)");
	ok(name && (!strcmp(name, "getpid+0x0") ||
		    !strcmp(name, "__getpid+0x0")),
	   "libc: getpid+0x0 or its alias __getpid+0x0 (got %s)",
	   name ? name : "(null)");
	free(name);
	r = sym_lookup(c, path, off + 2, 0, &name);
	ok(!r && name && strstr(name, "getpid+0x2"),
	   "libc: 2 bytes in is getpid+0x2 (got %s)", name ? name : "(null)");
	free(name);
	sym_cache_free(c);
}

/* ------------------------- ELF files built here ------------------------ */

#define CODE_OFF    0x1000ul /* first PT_LOAD: file 0x1000 -> 0x401000 */
#define CODE_VADDR  0x401000ul
#define LOAD2_OFF   0x1800ul /* second: file 0x1800 -> 0x402800 */
#define LOAD2_VADDR 0x402800ul
#define LOAD_SIZE   0x800ul

struct sym_spec {
	const char *name;
	uint64_t value, size;
	unsigned char bind, type;
	uint16_t shndx;
};

/* .symtab then .dynsym */
static const struct sym_spec symtab_syms[] = {
	{ "alpha_weak", 0x401000, 0x100, STB_WEAK, STT_FUNC, 1 },
	{ "alpha", 0x401000, 0x100, STB_GLOBAL, STT_FUNC, 1 },
	{ "inner", 0x401020, 0x10, STB_LOCAL, STT_FUNC, 1 },
	{ "beta", 0x401100, 0x80, STB_GLOBAL, STT_FUNC, 1 },
	{ "data", 0x401200, 0x100, STB_GLOBAL, STT_OBJECT, 1 },
	{ "zero", 0x401300, 0, STB_GLOBAL, STT_FUNC, 1 },
	{ "\x1b[31mevil\n", 0x401400, 0x10, STB_GLOBAL, STT_FUNC, 1 },
	{ NULL /* long */, 0x401500, 0x10, STB_GLOBAL, STT_FUNC, 1 },
	{ "ifunc", 0x401600, 0x10, STB_GLOBAL, STT_GNU_IFUNC, 1 },
	{ "undef", 0x401700, 0x10, STB_GLOBAL, STT_FUNC, SHN_UNDEF },
	{ "gamma", 0x402900, 0x20, STB_GLOBAL, STT_FUNC, 1 },
};
static const struct sym_spec dynsym_syms[] = {
	{ "dyn_beta", 0x401100, 0x80, STB_GLOBAL, STT_FUNC, 1 },
};

enum { NO_SYMTAB = 1, NO_DYNSYM = 2 };

struct image {
	unsigned char *b;
	size_t len, cap;
};

static size_t put(struct image *im, const void *p, size_t n)
{
	size_t at = im->len;

	if (im->len + n > im->cap) {
		im->cap = (im->len + n) * 2;
		im->b = realloc(im->b, im->cap);
		if (!im->b)
			abort();
	}
	memcpy(im->b + at, p, n);
	im->len += n;
	return at;
}

static void pad_to(struct image *im, size_t at)
{
	static const unsigned char z[64];

	while (im->len < at)
		put(im, z, at - im->len > sizeof(z) ? sizeof(z) : at - im->len);
}

/* A symbol table and its string table; returns the table's offset. */
static size_t put_syms(struct image *im, const struct sym_spec *s, size_t n,
		       size_t *symsz, size_t *stroff, size_t *strsz)
{
	Elf64_Sym sym = { 0 };
	char longname[301];
	size_t at, names = 1, s0;

	memset(longname, 'a', 300);
	longname[300] = 0;
	pad_to(im, (im->len + 7) & ~7ul);
	at = put(im, &sym, sizeof(sym)); /* index 0: the null symbol */
	for (size_t i = 0; i < n; i++) {
		sym = (Elf64_Sym){
			.st_name = (uint32_t)names,
			.st_info = ELF64_ST_INFO(s[i].bind, s[i].type),
			.st_shndx = s[i].shndx,
			.st_value = s[i].value,
			.st_size = s[i].size,
		};
		names += strlen(s[i].name ? s[i].name : longname) + 1;
		put(im, &sym, sizeof(sym));
	}
	*symsz = im->len - at;
	s0 = put(im, "", 1);
	for (size_t i = 0; i < n; i++) {
		const char *nm = s[i].name ? s[i].name : longname;

		put(im, nm, strlen(nm) + 1);
	}
	*stroff = s0;
	*strsz = im->len - s0;
	return at;
}

/* An ELF64 executable image: two PT_LOAD segments, .symtab/.strtab and
 * .dynsym/.dynstr (unless left out). The caller frees im->b. */
static void build_elf(struct image *im, unsigned what)
{
	Elf64_Ehdr eh = { 0 };
	Elf64_Phdr ph[3] = { 0 };
	Elf64_Shdr sh[5] = { 0 };
	size_t symoff, symsz, stroff, strsz, dynoff, dynsz, dstroff, dstrsz;
	size_t shoff;

	*im = (struct image){ 0 };
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_EXEC;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = 3;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_ehsize = sizeof(eh);
	ph[0] = (Elf64_Phdr){ .p_type = PT_NOTE,
			      .p_offset = 0x100,
			      .p_filesz = 0x10 };
	ph[1] = (Elf64_Phdr){ .p_type = PT_LOAD,
			      .p_offset = CODE_OFF,
			      .p_vaddr = CODE_VADDR,
			      .p_filesz = LOAD_SIZE,
			      .p_memsz = LOAD_SIZE,
			      .p_flags = PF_R | PF_X };
	ph[2] = (Elf64_Phdr){ .p_type = PT_LOAD,
			      .p_offset = LOAD2_OFF,
			      .p_vaddr = LOAD2_VADDR,
			      .p_filesz = LOAD_SIZE,
			      .p_memsz = LOAD_SIZE,
			      .p_flags = PF_R | PF_X };
	put(im, &eh, sizeof(eh));
	put(im, ph, sizeof(ph));
	pad_to(im, LOAD2_OFF + LOAD_SIZE); /* the "code": zeros */
	symoff = put_syms(im, symtab_syms,
			  sizeof(symtab_syms) / sizeof(symtab_syms[0]), &symsz,
			  &stroff, &strsz);
	dynoff = put_syms(im, dynsym_syms,
			  sizeof(dynsym_syms) / sizeof(dynsym_syms[0]), &dynsz,
			  &dstroff, &dstrsz);
	sh[1] = (Elf64_Shdr){ .sh_type = what & NO_SYMTAB ? SHT_PROGBITS
							  : SHT_SYMTAB,
			      .sh_offset = symoff,
			      .sh_size = symsz,
			      .sh_link = 2,
			      .sh_entsize = sizeof(Elf64_Sym) };
	sh[2] = (Elf64_Shdr){ .sh_type = SHT_STRTAB,
			      .sh_offset = stroff,
			      .sh_size = strsz };
	sh[3] = (Elf64_Shdr){ .sh_type = what & NO_DYNSYM ? SHT_PROGBITS
							  : SHT_DYNSYM,
			      .sh_offset = dynoff,
			      .sh_size = dynsz,
			      .sh_link = 4,
			      .sh_entsize = sizeof(Elf64_Sym) };
	sh[4] = (Elf64_Shdr){ .sh_type = SHT_STRTAB,
			      .sh_offset = dstroff,
			      .sh_size = dstrsz };
	pad_to(im, (im->len + 7) & ~7ul);
	shoff = put(im, sh, sizeof(sh));
	((Elf64_Ehdr *)im->b)->e_shoff = shoff;
	((Elf64_Ehdr *)im->b)->e_shnum = 5;
}

static void write_file(const char *path, const void *b, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || write(fd, b, len) != (ssize_t)len) {
		perror(path);
		abort();
	}
	close(fd);
}

/* The name at file offset off of path in a fresh cache, or the error as
 * "-ERRNO" text ("-2"), for comparing. */
static char got[512];
static const char *name_at(const char *path, uint64_t off, unsigned flags)
{
	struct sym_cache *c = sym_cache_new();
	char *name = NULL;
	int r = sym_lookup(c, path, off, flags, &name);

	if (r)
		snprintf(got, sizeof(got), "%d", r);
	else
		snprintf(got, sizeof(got), "%s", name);
	free(name);
	sym_cache_free(c);
	return got;
}

static char *err(int e)
{
	static char buf[8][16];
	static int i;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%d", -e);
	return buf[i];
}

#define F(vaddr) ((vaddr)-CODE_VADDR + CODE_OFF) /* first segment */

static void test_built(void)
{
	struct image im;
	char path[64], longname[300 + 8];

	build_elf(&im, 0);
	snprintf(path, sizeof(path), "%s/full.elf", tmpdir);
	write_file(path, im.b, im.len);
	is_str(name_at(path, F(0x401000), 0), "alpha+0x0",
	       "built: a global is preferred to its weak alias");
	is_str(name_at(path, F(0x4010ff), 0), "alpha+0xff",
	       "built: the last byte of a function");
	is_str(name_at(path, F(0x401025), 0), "inner+0x5",
	       "built: the innermost of nested functions (.symtab locals)");
	is_str(name_at(path, F(0x401100), 0), "beta+0x0",
	       "built: the next function starts at alpha's end");
	is_str(name_at(path, F(0x401100), SYM_RETURN_ADDRESS), "alpha+0x100",
	       "built: a return address at a function's end is its caller");
	is_str(name_at(path, F(0x401180), 0), err(ENODATA),
	       "built: past beta's end: no function");
	is_str(name_at(path, F(0x401210), 0), err(ENODATA),
	       "built: an object symbol is not a function");
	is_str(name_at(path, F(0x401300), 0), err(ENODATA),
	       "built: a zero-size function covers nothing");
	is_str(name_at(path, F(0x401404), 0), "?[31mevil?+0x4",
	       "built: control bytes in a name are '?'");
	memset(longname, 'a', SYM_NAME_MAX);
	strcpy(longname + SYM_NAME_MAX, "...+0x1");
	is_str(name_at(path, F(0x401501), 0), longname,
	       "built: a long name is cut at SYM_NAME_MAX");
	is_str(name_at(path, F(0x401608), 0), "ifunc+0x8",
	       "built: STT_GNU_IFUNC counts");
	is_str(name_at(path, F(0x401700), 0), err(ENODATA),
	       "built: an undefined symbol covers nothing");
	is_str(name_at(path, LOAD2_OFF + 0x104, 0), "gamma+0x4",
	       "built: the second PT_LOAD maps its own way");
	is_str(name_at(path, 0x100, 0), err(ENXIO),
	       "built: an offset in no PT_LOAD (the headers)");
	is_str(name_at(path, 0x10000000, 0), err(ENXIO),
	       "built: an offset beyond the file");
	is_str(name_at(path, UINT64_MAX, SYM_RETURN_ADDRESS), err(ENXIO),
	       "built: offset UINT64_MAX");
	free(im.b);

	/* a module the code could have written: shown by address only */
	if (chmod(path, 0666) == 0) {
		is_str(name_at(path, F(0x401000), 0), err(EPERM),
		       "built: a file others may write is not parsed");
		chmod(path, 0600);
	}
	if (geteuid() == 0 && chown(path, 65534, 65534) == 0) {
		is_str(name_at(path, F(0x401000), 0), err(EPERM),
		       "built: root parses no file another uid owns");
		if (chown(path, 0, 0) != 0)
			abort();
	}

	build_elf(&im, NO_SYMTAB);
	snprintf(path, sizeof(path), "%s/stripped.elf", tmpdir);
	write_file(path, im.b, im.len);
	is_str(name_at(path, F(0x401105), 0), "dyn_beta+0x5",
	       "built: without .symtab, .dynsym");
	is_str(name_at(path, F(0x401000), 0), err(ENODATA),
	       "built: .dynsym does not have alpha");
	free(im.b);

	build_elf(&im, NO_SYMTAB | NO_DYNSYM);
	snprintf(path, sizeof(path), "%s/nosyms.elf", tmpdir);
	write_file(path, im.b, im.len);
	is_str(name_at(path, F(0x401000), 0), err(ENODATA),
	       "built: no symbol table at all");
	free(im.b);

	/* .symtab claiming a terabyte: .dynsym is used instead */
	build_elf(&im, 0);
	((Elf64_Shdr *)(im.b + ((Elf64_Ehdr *)im.b)->e_shoff))[1].sh_size =
		1ull << 40;
	snprintf(path, sizeof(path), "%s/hugesym.elf", tmpdir);
	write_file(path, im.b, im.len);
	is_str(name_at(path, F(0x401105), 0), "dyn_beta+0x5",
	       "built: an oversized .symtab falls back to .dynsym");
	/* and with e_phnum PN_XNUM and an absurd real count */
	((Elf64_Ehdr *)im.b)->e_phnum = PN_XNUM;
	((Elf64_Shdr *)(im.b + ((Elf64_Ehdr *)im.b)->e_shoff))[0].sh_info =
		0xfffffff;
	write_file(path, im.b, im.len);
	is_str(name_at(path, F(0x401105), 0), err(EFBIG),
	       "built: too many program headers");
	free(im.b);
}

/* Each documented error, or success. */
static int allowed(int r)
{
	return r == 0 || r == -ENOEXEC || r == -EFBIG || r == -ENXIO ||
	       r == -ENODATA;
}

static void test_truncated_and_damaged(void)
{
	struct image im;
	char path[64];
	static const uint64_t offs[] = { F(0x401000), F(0x401105),
					 LOAD2_OFF + 0x104, 0 };
	size_t bad = 0, named = 0, full;
	unsigned seed = 12345;

	build_elf(&im, 0);
	full = im.len;
	snprintf(path, sizeof(path), "%s/cut.elf", tmpdir);
	for (size_t len = 0; len < full; len++) {
		write_file(path, im.b, len);
		for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
			struct sym_cache *c = sym_cache_new();
			char *name = NULL;
			int r = sym_lookup(c, path, offs[i], 0, &name);

			bad += !allowed(r) || !r != !!name;
			named += !r;
			free(name);
			sym_cache_free(c);
		}
	}
	is_int(bad, 0, "truncated at every length: only documented errors");
	is_int(named, 0, "truncated: no names (the section headers are last)");
	is_str(name_at(path, F(0x401000), 0), err(ENOEXEC),
	       "truncated by one byte: the section headers are cut");

	/* random byte damage (fixed seed): no crash, documented errors */
	bad = 0;
	for (int round = 0; round < 3000; round++) {
		unsigned char *b = malloc(full);
		struct sym_cache *c = sym_cache_new();

		memcpy(b, im.b, full);
		for (int k = 0; k < 1 + round % 8; k++) {
			size_t at = (size_t)rand_r(&seed) % full;

			/* mostly the headers and tables, not the zeros */
			if (round % 2)
				at = at % 0x200;
			else if (at < 0x200)
				at = full - 1 - at;
			b[at] = (unsigned char)rand_r(&seed);
		}
		write_file(path, b, full);
		for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
			char *name = NULL;
			int r = sym_lookup(c, path, offs[i], 0, &name);

			bad += !allowed(r) || !r != !!name;
			free(name);
		}
		sym_cache_free(c);
		free(b);
	}
	is_int(bad, 0, "3000 damaged files: only documented errors");
	free(im.b);
}

static void test_not_elf(void)
{
	char path[64], garbage[4096];
	unsigned seed = 7;

	for (size_t i = 0; i < sizeof(garbage); i++)
		garbage[i] = (char)rand_r(&seed);
	snprintf(path, sizeof(path), "%s/garbage", tmpdir);
	write_file(path, garbage, sizeof(garbage));
	is_str(name_at(path, 0x10, 0), err(ENOEXEC), "garbage: not ELF");
	snprintf(path, sizeof(path), "%s/empty", tmpdir);
	write_file(path, "", 0);
	is_str(name_at(path, 0, 0), err(ENOEXEC), "an empty file");
	memcpy(garbage, ELFMAG, SELFMAG);
	garbage[EI_CLASS] = ELFCLASS32;
	snprintf(path, sizeof(path), "%s/elf32", tmpdir);
	write_file(path, garbage, sizeof(garbage));
	is_str(name_at(path, 0x10, 0), err(ENOEXEC), "ELF32 is refused");
	snprintf(path, sizeof(path), "%s/missing", tmpdir);
	is_str(name_at(path, 0x10, 0), err(ENOENT), "a nonexistent file");
	is_str(name_at(tmpdir, 0x10, 0), err(ENOEXEC), "a directory");
	is_str(name_at("/dev/zero", 0x10, 0), err(ENOEXEC),
	       "a device is never read");
	snprintf(path, sizeof(path), "%s/fifo", tmpdir);
	if (!mkfifo(path, 0600))
		is_str(name_at(path, 0x10, 0), err(ENOEXEC),
		       "a FIFO is not opened (no hang)");
	is_str(name_at("libc.so.6", 0x10, 0), err(EINVAL),
	       "a relative path is refused");
}

/* The swapper of test_swap_race: the name keeps changing between a
 * symlink to an ELF file and one to a FIFO. */
struct swapper {
	atomic_int stop;
	char path[96], elf[96], fifo[96], tmp[96];
};

static void *swap_loop(void *a)
{
	struct swapper *s = a;

	/* one syscall a swap: the two names trade places */
	while (!atomic_load(&s->stop))
		renameat2(AT_FDCWD, s->tmp, AT_FDCWD, s->path, RENAME_EXCHANGE);
	return NULL;
}

/*
 * A name swapped for a FIFO while the module is being opened (ward show
 * and ward report look up files the recorded run may have named, as they
 * are now): the FIFO is never opened, however the swaps fall. An open of
 * it would show as IN_OPEN on the FIFO (an O_PATH open shows nothing).
 * The old stat-then-open did open it within a few thousand lookups.
 */
static void test_swap_race(void)
{
	static struct swapper s;
	struct image im;
	pthread_t th;
	char ev[4096];
	int in, opens = 0, lookups = 0;
	struct timespec t0, t;

	snprintf(s.path, sizeof(s.path), "%s/swapped", tmpdir);
	snprintf(s.elf, sizeof(s.elf), "%s/real.elf", tmpdir);
	snprintf(s.fifo, sizeof(s.fifo), "%s/swap.fifo", tmpdir);
	snprintf(s.tmp, sizeof(s.tmp), "%s/swapped.tmp", tmpdir);
	build_elf(&im, 0);
	write_file(s.elf, im.b, im.len);
	free(im.b);
	in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (mkfifo(s.fifo, 0600) || in < 0 ||
	    inotify_add_watch(in, s.fifo, IN_OPEN) < 0) {
		ok(0, "a FIFO and a watch on it");
		return;
	}
	if (symlink(s.elf, s.path) || symlink(s.fifo, s.tmp)) {
		ok(0, "the two names");
		return;
	}
	atomic_store(&s.stop, 0);
	pthread_create(&th, NULL, swap_loop, &s);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		name_at(s.path, F(0x401000), 0);
		lookups++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (lookups < 200000 &&
		 (t.tv_sec - t0.tv_sec) * 1000 +
				 (t.tv_nsec - t0.tv_nsec) / 1000000 <
			 3000);
	atomic_store(&s.stop, 1);
	pthread_join(th, NULL);
	for (ssize_t n; (n = read(in, ev, sizeof(ev))) > 0;)
		for (char *p = ev; p < ev + n;
		     p += sizeof(struct inotify_event) +
			  ((struct inotify_event *)p)->len)
			opens++;
	close(in);
	ok(opens == 0,
	   "a name swapped for a FIFO during lookups: the FIFO is never "
	   "opened (%d opens in %d lookups)",
	   opens, lookups);
	unlink(s.path);
	unlink(s.tmp);
	unlink(s.elf);
	unlink(s.fifo);
}

/* More modules than the cache keeps, twice over, and repeats. */
static void test_cache(void)
{
	struct sym_cache *c = sym_cache_new();
	struct image im;
	char path[64];
	int bad = 0;

	build_elf(&im, 0);
	for (int i = 0; i < 40; i++) {
		snprintf(path, sizeof(path), "%s/m%d.elf", tmpdir, i);
		write_file(path, im.b, im.len);
	}
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 40; i++) {
			char *name = NULL;

			snprintf(path, sizeof(path), "%s/m%d.elf", tmpdir,
				 i % (round ? 40 : 4));
			bad += sym_lookup(c, path, F(0x401001), 0, &name) ||
			       strcmp(name, "alpha+0x1");
			free(name);
		}
	}
	snprintf(path, sizeof(path), "%s/m0.elf", tmpdir);
	unlink(path);
	is_int(bad, 0, "cache: 120 lookups in 40 modules");
	/* a failure is cached as well: still ENOENT, no crash */
	for (int i = 0; i < 2; i++) {
		char *name = NULL;

		snprintf(path, sizeof(path), "%s/none.elf", tmpdir);
		bad += sym_lookup(c, path, 0, 0, &name) != -ENOENT || name;
	}
	is_int(bad, 0, "cache: a missing file stays an error");
	is_int(sym_lookup(NULL, path, 0, 0, NULL), -EINVAL, "NULL arguments");
	sym_cache_free(c);
	sym_cache_free(NULL);
	for (int i = 0; i < 40; i++) {
		snprintf(path, sizeof(path), "%s/m%d.elf", tmpdir, i);
		unlink(path);
	}
	free(im.b);
}

static void cleanup(void)
{
	static const char *const names[] = {
		"full.elf",    "stripped.elf", "nosyms.elf",
		"hugesym.elf", "cut.elf",      "garbage",
		"empty",       "elf32",	       "fifo",
	};
	char path[64];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", tmpdir, names[i]);
		unlink(path);
	}
	rmdir(tmpdir);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_self();
	test_backtrace_json();
	test_libc();
	test_built();
	test_truncated_and_damaged();
	test_not_elf();
	test_swap_race();
	test_cache();
	cleanup();
	return done_testing();
}
