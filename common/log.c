#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ward_verbose;

static void vmsg(const char *fmt, va_list ap, int errsv)
{
	char buf[2048];
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);

	if (n < 0)
		buf[0] = '\0';
	if (errsv)
		fprintf(stderr, "ward: %s: %s\n", buf, strerror(errsv));
	else
		fprintf(stderr, "ward: %s\n", buf);
	fflush(stderr);
}

void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap, 0);
	va_end(ap);
	exit(WARD_EXIT_INTERNAL);
}

void die_errno(const char *fmt, ...)
{
	int errsv = errno;
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap, errsv);
	va_end(ap);
	exit(WARD_EXIT_INTERNAL);
}

void warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap, 0);
	va_end(ap);
}

void warn_errno(const char *fmt, ...)
{
	int errsv = errno;
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap, errsv);
	va_end(ap);
}

void debug(const char *fmt, ...)
{
	va_list ap;

	if (ward_verbose <= 0)
		return;
	va_start(ap, fmt);
	vmsg(fmt, ap, 0);
	va_end(ap);
}
