/*
 * micro_trap.c - cost of one trapped and one allowed syscall, timed inside
 * the process (CLOCK_MONOTONIC through the vDSO, so the clock itself is
 * never trapped).
 *
 * usage: micro_trap [IGNORED...] N PATH
 *   Times N x openat(AT_FDCWD, PATH, O_RDONLY) (trapped by ward and
 *   minitracer; PATH should not exist but be readable by the policy, so the
 *   call is allowed and fails in the kernel with ENOENT, no fd to close),
 *   then N x getppid() (allowed in the kernel by the filter).
 *   Only the last two arguments count, so ward can run it as an
 *   "--interpreter" that gets the copied script's name first.
 * Prints one JSON line: {"n":N,"trapped_ns":..,"allowed_ns":..,"errno":..}
 * Exit status 0, or 1 when openat did not fail with ENOENT.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int trapped(const char *path)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return errno;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: micro_trap [IGNORED...] N PATH\n");
		return 2;
	}
	long n = strtol(argv[argc - 2], NULL, 10);
	const char *path = argv[argc - 1];
	int err = 0;
	if (n <= 0) {
		fprintf(stderr, "micro_trap: N must be positive\n");
		return 2;
	}
	for (long i = 0; i < n / 20 + 1; i++) /* warm up both paths */
		err = trapped(path) | (int)(syscall(SYS_getppid) < 0);
	double t0 = now_ns();
	for (long i = 0; i < n; i++)
		err = trapped(path);
	double t1 = now_ns();
	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	double t2 = now_ns();
	printf("{\"n\":%ld,\"trapped_ns\":%.1f,\"allowed_ns\":%.1f,\"errno\":%d}\n",
	       n, (t1 - t0) / (double)n, (t2 - t1) / (double)n, err);
	return err == ENOENT ? 0 : 1;
}
