/*
 * procfs.c - small reads of a tracee's /proc entries (and other small
 * kernel files).
 */
#include "tracer-int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

ssize_t tracer_read_file(const char *path, char *buf, size_t n)
{
	ssize_t got;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	got = read(fd, buf, n - 1);
	if (got < 0)
		got = -errno;
	close(fd);
	buf[got > 0 ? got : 0] = '\0';
	return got;
}

ssize_t proc_read(pid_t pid, const char *what, char *buf, size_t n)
{
	char path[96];

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	return tracer_read_file(path, buf, n);
}

const char *proc_stat_fields(pid_t pid, char *buf, size_t n)
{
	char *p;

	if (proc_read(pid, "stat", buf, n) <= 0)
		return NULL;
	p = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
	return p && p[1] == ' ' ? p + 2 : NULL;
}
