/*
 * log.h - messages for binaries. Only main() and tools/ may call die();
 * library code returns -errno instead.
 *
 * Shape: "ward: <what failed>: <why>". die() exits with status 125 (ward's
 * own error), the status scripts and agents can tell from the code's own.
 */
#ifndef WARD_COMMON_LOG_H
#define WARD_COMMON_LOG_H

#define WARD_EXIT_INTERNAL 125

extern int ward_verbose; /* -v count; debug() prints when > 0, with the
			  * milliseconds since the first debug() call */

__attribute__((format(printf, 1, 2), noreturn)) void die(const char *fmt, ...);
/* Appends ": strerror(errno)" (errno saved before formatting). */
__attribute__((format(printf, 1, 2), noreturn)) void die_errno(const char *fmt,
							       ...);
__attribute__((format(printf, 1, 2))) void warn(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void warn_errno(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void debug(const char *fmt, ...);

#endif
