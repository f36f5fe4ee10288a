/*
 * floor.h - ward's seccomp kill floor: syscalls that bypass or attack the
 * supervisor. The filter kills on them unconditionally; no policy may name
 * them. One list, shared by the tracer's filter and the policy validator.
 */
#ifndef WARD_COMMON_FLOOR_H
#define WARD_COMMON_FLOOR_H

#include <sched.h>
#include <stdbool.h>

/* Syscall names (libseccomp spelling), NULL-terminated. */
extern const char *const ward_kill_floor[];

/* Is name (a syscall name, may be NULL) in ward_kill_floor? */
bool ward_in_kill_floor(const char *name);

/*
 * The argument floor: int arguments the kernel reads as 32 bits, checked
 * on their low 32 bits like the kernel does (junk in the high half changes
 * nothing). The guard filter (tracer/filter.c) lets the allowed values
 * through in the kernel and sends the others to ward, whose policy denies
 * them with EPERM and records them, in every profile (audit included).
 */

/* clone flags that kill: namespaces and CLONE_UNTRACED (all in the low 32
 * bits, which is all clone(2) reads of its flags). */
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif
#define WARD_CLONE_FLOOR                                                       \
	((unsigned)(CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS |             \
		    CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |              \
		    CLONE_NEWNET | CLONE_NEWTIME | CLONE_UNTRACED))

/* prctl options the code may use, 0-terminated (0 is no option). */
extern const unsigned ward_prctl_allow[];
/* personality values allowed: PER_LINUX and the 0xffffffff query. */
extern const unsigned ward_personality_allow[2];
/* ioctl requests refused: typing into or controlling a terminal. */
extern const unsigned ward_ioctl_refuse[2];

/*
 * Why the arguments of syscall name (raw registers in a) are outside the
 * floor, as a short phrase, with the 32-bit value judged in *value; or
 * NULL when the floor has no objection. The caller denies with EPERM.
 */
const char *ward_arg_floor(const char *name, const unsigned long long a[6],
			   unsigned *value);

#endif
