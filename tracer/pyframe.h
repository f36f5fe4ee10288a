/*
 * pyframe.h - the Python stack of a stopped CPython thread, read from
 * outside (pyframe.c).
 *
 * Taken where a native backtrace is taken (denials, kills, calls the
 * policy asks a backtrace for). Every byte comes from memory the code
 * controls: it can forge frames, names and lines. The result is recorded
 * as an annotation marked untrusted and never feeds a decision.
 *
 * Supported: CPython 3.11 (layout fixed here, checked against Debian's
 * build and a pyenv build of 3.11.7) and 3.13 (offsets from the
 * _Py_DebugOffsets table at the start of _PyRuntime). 3.12, 3.14 and
 * anything unknown: nothing is recorded.
 */
#ifndef WARD_TRACER_PYFRAME_H
#define WARD_TRACER_PYFRAME_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Bounds of one walk. */
enum {
	PYF_MAX_FRAMES = 64, /* frames recorded; more: "truncated" */
	PYF_MAX_STR = 256,   /* characters of a file or function name */
	PYF_MAX_LINETABLE = 1u << 16, /* bytes of a code object's line table */
	PYF_MAX_THREADS = 4096,	      /* thread states looked at */
	PYF_MAX_INTERPS = 64,	      /* interpreters looked at */
};

/*
 * The source line of the instruction at byte offset addr of a code object
 * whose location table (co_linetable, the format of CPython 3.11 to 3.13)
 * is tab[0..len) and whose first line is firstlineno. An addr before the
 * code gives firstlineno (as CPython does).
 *
 * Returns the line (>= 0), -1 when the table says the instruction has no
 * line, -ENOENT when addr is past the table, -EINVAL when the table is
 * malformed (an entry cut short, a varint longer than 32 bits).
 */
int pyf_addr2line(const uint8_t *tab, size_t len, int firstlineno,
		  long long addr);

/*
 * If the process of thread tid (thread group tgid) is a supported CPython
 * interpreter and tid has a Python thread state, writes the thread's
 * Python frames, innermost first, as JSON text into buf:
 *   {"untrusted":true,"source":"cpython-3.11 memory","version":"3.11.2",
 *    "frames":[{"file":"...","line":N,"function":"..."},...],
 *    "truncated":false}
 * "line" is null when unknown; "truncated" is true when more frames than
 * PYF_MAX_FRAMES (or than fit in buf) were there; "incomplete" (a string)
 * says why the walk stopped early at something inconsistent (a bad
 * pointer, a wrong type, a cycle); a name longer than PYF_MAX_STR ends in
 * "..." and one that could not be read is "?".
 *
 * ns_tid is tid as the code sees it (in its pid namespace): the thread
 * state knows the thread by that number.
 *
 * Returns 0 when buf holds a record; -ENOENT (not CPython, or no thread
 * state for tid), -ENOTSUP (a version not supported), -ESRCH, -ENOMEM,
 * or another -errno: buf is then empty and nothing is to be recorded.
 */
int tracer_pyframes(pid_t tid, pid_t tgid, pid_t ns_tid, char *buf, size_t n);

#endif
