/*
 * bt.c - native backtraces of a stopped tracee with libunwind-ptrace.
 *
 * Taken only when the policy asks (by default on deny and kill), while the
 * thread is still stopped. Frames are recorded as raw addresses with the
 * module that maps them and the offset into it, read from /proc/TID/maps;
 * symbol names are left to the reader (resolving them here would make the
 * code wait on ELF parsing).
 *
 * libunwind is loaded with dlopen at the first backtrace, not linked: its
 * four libraries (libunwind-ptrace, -x86_64, libunwind, liblzma) cost every
 * start of ward ~0.4 ms of loading and relocation, and most runs take no
 * backtrace. The header still gives the types; the names are the macros'
 * expansions (unw_step is _Ux86_64_step for remote unwinding).
 */
#include "tracer-int.h"
#include "args.h"
#include "common/log.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <libunwind-ptrace.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_FRAMES = 32 };

struct frame {
	uint64_t ip;
};

/* /proc/TID/maps, read once per backtrace. */
struct maps {
	char *text;
	size_t len;
};

static int maps_read(pid_t tid, struct maps *m)
{
	char path[64];
	size_t cap = 64 * 1024;
	FILE *f;

	m->len = 0;
	m->text = NULL;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	for (;;) {
		char *t = realloc(m->text, cap + 1);
		if (!t) {
			fclose(f);
			return -ENOMEM;
		}
		m->text = t;
		m->len += fread(m->text + m->len, 1, cap - m->len, f);
		if (m->len < cap)
			break;
		cap *= 2;
	}
	fclose(f);
	m->text[m->len] = '\0';
	return 0;
}

/* Module path and file offset for ip, from the maps text. */
static int module_of(const struct maps *m, uint64_t ip, char *mod, size_t n,
		     uint64_t *off)
{
	const char *line = m->text;

	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t ll = end ? (size_t)(end - line) : strlen(line);
		uint64_t lo, hi, pgoff;
		int pos = 0;

		if (sscanf(line,
			   "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64 " %*s %*s %n",
			   &lo, &hi, &pgoff, &pos) >= 3 &&
		    ip >= lo && ip < hi) {
			size_t nl = pos < (int)ll ? ll - (size_t)pos : 0;
			if (nl == 0)
				snprintf(mod, n, "[anon]");
			else
				snprintf(mod, n, "%.*s", (int)nl, line + pos);
			*off = ip - lo + pgoff;
			return 0;
		}
		line = end ? end + 1 : NULL;
	}
	return -ENOENT;
}

#ifndef WARD_UNWIND_GENERIC_SO
#define WARD_UNWIND_GENERIC_SO "libunwind-x86_64.so.8"
#endif
#ifndef WARD_UNWIND_PTRACE_SO
#define WARD_UNWIND_PTRACE_SO "libunwind-ptrace.so.0"
#endif

#define NAME_OF(f)  NAME_OF_(f)
#define NAME_OF_(f) #f

/* libunwind's entry points, once loaded. */
static struct {
	__typeof__(unw_create_addr_space) *create_addr_space;
	__typeof__(unw_destroy_addr_space) *destroy_addr_space;
	__typeof__(unw_set_caching_policy) *set_caching_policy;
	__typeof__(unw_flush_cache) *flush_cache;
	__typeof__(unw_init_remote) *init_remote;
	__typeof__(unw_get_reg) *get_reg;
	__typeof__(unw_step) *step;
	__typeof__(_UPT_create) *upt_create;
	__typeof__(_UPT_destroy) *upt_destroy;
	unw_accessors_t *upt_accessors;
} uw;
static pthread_once_t uw_once = PTHREAD_ONCE_INIT;
static int uw_err; /* 0 when loaded */

static void *sym(void *h, const char *lib, const char *name)
{
	void *p = dlsym(h, name);

	if (!p && !uw_err) {
		warn("native backtraces are off: %s has no %s", lib, name);
		uw_err = -ENOSYS;
	}
	return p;
}

/* The libraries stay loaded for the life of the process (ward exits after
 * its run; a session's worker after its session). */
static void uw_load(void)
{
	void *g = dlopen(WARD_UNWIND_GENERIC_SO, RTLD_NOW | RTLD_GLOBAL);
	void *p = g ? dlopen(WARD_UNWIND_PTRACE_SO, RTLD_NOW) : NULL;

	if (!p) {
		/* the denial is recorded all the same, without its frames */
		warn("native backtraces are off: %s (install libunwind8 or "
		     "libunwind-dev)",
		     dlerror());
		uw_err = -ENOSYS;
		return;
	}
#define GEN(f) sym(g, WARD_UNWIND_GENERIC_SO, NAME_OF(f))
#define UPT(f) sym(p, WARD_UNWIND_PTRACE_SO, #f)
	uw.create_addr_space = GEN(unw_create_addr_space);
	uw.destroy_addr_space = GEN(unw_destroy_addr_space);
	uw.set_caching_policy = GEN(unw_set_caching_policy);
	uw.flush_cache = GEN(unw_flush_cache);
	uw.init_remote = GEN(unw_init_remote);
	uw.get_reg = GEN(unw_get_reg);
	uw.step = GEN(unw_step);
	uw.upt_create = UPT(_UPT_create);
	uw.upt_destroy = UPT(_UPT_destroy);
	uw.upt_accessors = UPT(_UPT_accessors);
#undef GEN
#undef UPT
}

/* 0 once libunwind is loaded, -ENOSYS when it cannot be. */
static int uw_ready(void)
{
	pthread_once(&uw_once, uw_load);
	return uw_err;
}

/*
 * One address space for every backtrace, with libunwind's global cache:
 * finding a procedure's unwind info (the module's ELF, its .eh_frame_hdr)
 * is most of the cost, and it is the same for the next denial of the same
 * process. The cache is flushed when another process is walked (its
 * modules are mapped elsewhere) and when a process execs (loop.c).
 */
static unw_addr_space_t cached_as;
static pid_t cached_tgid;

static unw_addr_space_t addr_space(pid_t tgid)
{
	if (!cached_as) {
		cached_as = uw.create_addr_space(uw.upt_accessors, 0);
		if (!cached_as)
			return NULL;
		uw.set_caching_policy(cached_as, UNW_CACHE_GLOBAL);
		cached_tgid = tgid;
	} else if (tgid != cached_tgid) {
		uw.flush_cache(cached_as, 0, 0);
		cached_tgid = tgid;
	}
	return cached_as;
}

void tracer_backtrace_flush(void)
{
	if (cached_as)
		uw.flush_cache(cached_as, 0, 0);
}

void tracer_backtrace_release(void)
{
	if (cached_as)
		uw.destroy_addr_space(cached_as);
	cached_as = NULL;
}

int tracer_backtrace(pid_t tid, pid_t tgid, char *buf, size_t n)
{
	unw_addr_space_t as;
	struct maps maps = { 0 };
	void *ui;
	unw_cursor_t c;
	struct frame fr[MAX_FRAMES];
	int nf = 0, rc = uw_ready();

	if (rc < 0)
		return rc;
	as = addr_space(tgid);
	if (!as)
		return -ENOMEM;
	ui = uw.upt_create(tid);
	if (!ui)
		return -ENOMEM;
	if (uw.init_remote(&c, as, ui) < 0) {
		rc = -EIO;
		goto out;
	}
	do {
		unw_word_t ip;
		if (uw.get_reg(&c, UNW_REG_IP, &ip) < 0 || ip == 0)
			break;
		fr[nf++].ip = ip;
	} while (nf < MAX_FRAMES && uw.step(&c) > 0);

	size_t used = (size_t)snprintf(buf, n, "[");
	if (maps_read(tid, &maps) < 0)
		maps.text = NULL;
	for (int i = 0; i < nf && used < n; i++) {
		char mod[4096], js[8192];
		uint64_t off = 0;
		if (!maps.text ||
		    module_of(&maps, fr[i].ip, mod, sizeof(mod), &off) < 0) {
			snprintf(mod, sizeof(mod), "?");
			off = fr[i].ip;
		}
		if (args_json_string(js, sizeof(js), mod, strlen(mod)) < 0)
			snprintf(js, sizeof(js), "\"?\"");
		int w = snprintf(buf + used, n - used,
				 "%s{\"ip\":\"%#" PRIx64 "\",\"module\":%s,"
				 "\"offset\":\"%#" PRIx64 "\"}",
				 i ? "," : "", fr[i].ip, js, off);
		if (w < 0 || (size_t)w >= n - used - 2) {
			buf[used] = '\0';
			break;
		}
		used += (size_t)w;
	}
	if (used + 2 <= n)
		snprintf(buf + used, n - used, "]");
out:
	free(maps.text);
	uw.upt_destroy(ui);
	return rc;
}
