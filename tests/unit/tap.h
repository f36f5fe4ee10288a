/*
 * tap.h - a tiny TAP harness for unit tests (tests/run.py reads it).
 *   ok(cond, fmt, ...)      one result
 *   is_int(a, b, what)      equality with both values printed on failure
 *   is_str(a, b, what)
 *   skip(fmt, ...)          a skipped result
 *   return done_testing();  exit status 0 iff nothing failed
 */
#ifndef WARD_TESTS_TAP_H
#define WARD_TESTS_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

__attribute__((format(printf, 2, 3), unused)) static int
ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", cond ? "ok" : "not ok", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond)
		tap_failed++;
	fflush(stdout);
	return cond;
}

__attribute__((format(printf, 1, 2), unused)) static void skip(const char *fmt,
							       ...)
{
	va_list ap;

	printf("ok %d - # SKIP ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

#define is_int(a, b, what)                                                     \
	do {                                                                   \
		long long _a = (a), _b = (b);                                  \
		if (!ok(_a == _b, "%s", what))                                 \
			printf("# got %lld, want %lld (%s:%d)\n", _a, _b,      \
			       __FILE__, __LINE__);                            \
	} while (0)

#define is_str(a, b, what)                                                     \
	do {                                                                   \
		const char *_a = (a), *_b = (b);                               \
		int _eq = _a && _b ? strcmp(_a, _b) == 0 : _a == _b;           \
		if (!ok(_eq, "%s", what))                                      \
			printf("# got \"%s\", want \"%s\" (%s:%d)\n",          \
			       _a ? _a : "(null)", _b ? _b : "(null)",         \
			       __FILE__, __LINE__);                            \
	} while (0)

__attribute__((unused)) static int done_testing(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
