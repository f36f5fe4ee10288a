/*
 * floor.h - ward's seccomp kill floor: syscalls that bypass or attack the
 * supervisor. The filter kills on them unconditionally; no policy may name
 * them. One list, shared by the tracer's filter and the policy validator.
 */
#ifndef WARD_COMMON_FLOOR_H
#define WARD_COMMON_FLOOR_H

#include <stdbool.h>

/* Syscall names (libseccomp spelling), NULL-terminated. */
extern const char *const ward_kill_floor[];

/* Is name (a syscall name, may be NULL) in ward_kill_floor? */
bool ward_in_kill_floor(const char *name);

#endif
