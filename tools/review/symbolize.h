/*
 * symbolize.h - function names for recorded backtrace frames (tools/ only),
 * resolved when a run is shown, never while it runs.
 *
 * A frame is a module path and a file offset within it (ip - mapping start
 * + the mapping's file offset, from /proc/PID/maps). The module's ELF64
 * file is read as it is now: the offset goes to a virtual address through
 * the PT_LOAD program headers, and the address to the STT_FUNC or
 * STT_GNU_IFUNC symbol that covers it (st_value <= vaddr < st_value +
 * st_size) in .symtab if the file has one, else in .dynsym. Stripped
 * files (Debian's python3.11 and libc) have only .dynsym: functions they
 * do not export (static ones) have no name then.
 *
 * The file may have changed since the run (an upgrade): names are then
 * wrong, and callers say they are from the file as it is now.
 *
 * Files are untrusted (the path comes from the record): only regular
 * files are opened (no FIFO or device side effects), every offset, size
 * and count is checked against the file's size and fixed limits, and a
 * truncated or garbage file is an error, never a crash.
 */
#ifndef WARD_TOOLS_SYMBOLIZE_H
#define WARD_TOOLS_SYMBOLIZE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Parsed modules, keyed by path; at most a few, least recently used
 * dropped first. Failures are cached too (a missing file is tried once). */
struct sym_cache;

/* A new, empty cache, or NULL (out of memory). */
struct sym_cache *sym_cache_new(void);
/* Frees the cache and every module in it; NULL is a no-op. */
void sym_cache_free(struct sym_cache *c);

enum {
	/*
	 * off is a return address (a caller's frame, not the innermost):
	 * the call before it is looked up (off - 1), so a call that ends
	 * its function is not named after the next one. The printed offset
	 * is still from off.
	 */
	SYM_RETURN_ADDRESS = 1u << 0,
};

/*
 * The function at file offset off of module (an absolute path), as
 * "name+0xNN" (NN from the symbol's start, hex) in *out, which the caller
 * frees. The name is printable ASCII (other bytes are '?') and at most
 * SYM_NAME_MAX bytes before the "+" (longer ones end in "...").
 *
 * Returns 0, or: -EINVAL (module not absolute, or NULL arguments);
 * -ENOENT, -EACCES, ... (the file cannot be opened); -ENOEXEC (not a
 * regular file, not ELF64 of this machine's byte order, or its headers
 * or symbol table are damaged or truncated); -EFBIG (a table beyond the
 * limits); -ENXIO (off is in no PT_LOAD segment); -ENODATA (no function
 * symbol covers it); -ENOMEM.
 */
#define SYM_NAME_MAX 256
int sym_lookup(struct sym_cache *c, const char *module, uint64_t off,
	       unsigned flags, char **out);

/*
 * Adds "symbol" ("name+0xNN", as sym_lookup) to each frame of bt (a
 * parsed backtrace column: an array of {"module", "offset": "0x...",
 * "ip"}) that has a module and an offset, a symbol covers, and no symbol
 * yet (a recorded one is kept). Frames after the first are return
 * addresses. Returns how many were added; c NULL or bt not an array adds
 * none. Used by `ward show` and `ward report`.
 */
size_t sym_backtrace_add(struct sym_cache *c, json_t *bt);

#endif
