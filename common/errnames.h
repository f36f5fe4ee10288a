/*
 * errnames.h - errno values by their symbolic names ("EACCES"), for policy
 * files, console messages and the audit record. Linux errno values only.
 */
#ifndef WARD_COMMON_ERRNAMES_H
#define WARD_COMMON_ERRNAMES_H

/*
 * The positive errno named by name ("EACCES", case-sensitive), or 0 if the
 * name is unknown or NULL. Aliases are accepted: ENOTSUP (= EOPNOTSUPP),
 * EWOULDBLOCK (= EAGAIN), EDEADLOCK (= EDEADLK).
 */
int ward_errno_from_name(const char *name);

/*
 * The symbolic name of errno e (static string, never NULL): "EACCES".
 * A negative e is taken as -errno. Aliased values print as their Linux
 * name (EOPNOTSUPP, EAGAIN, EDEADLK). Unknown values give "E?".
 */
const char *ward_errno_name(int e);

/*
 * A syscall's return value as recorded (events.result) into buf: "3",
 * "-ENOENT" for -errno, and the kernel's own restart codes by name
 * ("-ERESTARTSYS": interrupted by a signal, then restarted). Returns buf.
 */
const char *ward_result_text(long long r, char *buf, unsigned long n);

#endif
