#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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
	static struct timespec t0;
	struct timespec now;
	char buf[1024];
	va_list ap;

	if (ward_verbose <= 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (!t0.tv_sec && !t0.tv_nsec)
		t0 = now;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "ward: [%8.3f ms] %s\n",
		(double)(now.tv_sec - t0.tv_sec) * 1e3 +
			(double)(now.tv_nsec - t0.tv_nsec) / 1e6,
		buf);
}
