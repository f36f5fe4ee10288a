/*
 * bt.c - native backtraces of a stopped tracee with libunwind-ptrace.
 *
 * Taken only when the policy asks (by default on deny and kill), while the
 * thread is still stopped. Frames are recorded as raw addresses with the
 * module that maps them and the offset into it, read from /proc/TID/maps;
 * symbol names are left to the reader (resolving them here would make the
 * code wait on ELF parsing).
 */
#include "tracer-int.h"
#include "args.h"

#include <errno.h>
#include <inttypes.h>
#include <libunwind-ptrace.h>
#include <stdio.h>
#include <string.h>

enum { MAX_FRAMES = 32 };

struct frame {
	uint64_t ip;
};

/* Module path and file offset for ip, from /proc/TID/maps. */
static int module_of(pid_t tid, uint64_t ip, char *mod, size_t n, uint64_t *off)
{
	char path[64], line[4608];
	FILE *f;
	int found = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		uint64_t lo, hi, pgoff;
		int pos = 0;
		if (sscanf(line,
			   "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64 " %*s %*s %n",
			   &lo, &hi, &pgoff, &pos) < 3)
			continue;
		if (ip < lo || ip >= hi)
			continue;
		char *name = line + pos;
		name[strcspn(name, "\n")] = '\0';
		snprintf(mod, n, "%s", name[0] ? name : "[anon]");
		*off = ip - lo + pgoff;
		found = 0;
		break;
	}
	fclose(f);
	return found;
}

int tracer_backtrace(pid_t tid, char *buf, size_t n)
{
	unw_addr_space_t as = unw_create_addr_space(&_UPT_accessors, 0);
	void *ui;
	unw_cursor_t c;
	struct frame fr[MAX_FRAMES];
	int nf = 0, rc = 0;

	if (!as)
		return -ENOMEM;
	ui = _UPT_create(tid);
	if (!ui) {
		unw_destroy_addr_space(as);
		return -ENOMEM;
	}
	if (unw_init_remote(&c, as, ui) < 0) {
		rc = -EIO;
		goto out;
	}
	do {
		unw_word_t ip;
		if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || ip == 0)
			break;
		fr[nf++].ip = ip;
	} while (nf < MAX_FRAMES && unw_step(&c) > 0);

	size_t used = (size_t)snprintf(buf, n, "[");
	for (int i = 0; i < nf && used < n; i++) {
		char mod[4096], js[8192];
		uint64_t off = 0;
		if (module_of(tid, fr[i].ip, mod, sizeof(mod), &off) < 0) {
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
	_UPT_destroy(ui);
	unw_destroy_addr_space(as);
	return rc;
}
