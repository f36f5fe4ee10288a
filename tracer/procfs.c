/*
 * procfs.c - small reads of a tracee's /proc entries.
 */
#include "tracer-int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

ssize_t proc_read(pid_t pid, const char *what, char *buf, size_t n)
{
	char path[96];
	ssize_t got;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	got = read(fd, buf, n - 1);
	if (got < 0)
		got = -errno;
	close(fd);
	buf[got > 0 ? got : 0] = '\0';
	return got;
}

const char *proc_stat_fields(pid_t pid, char *buf, size_t n)
{
	char *p;

	if (proc_read(pid, "stat", buf, n) <= 0)
		return NULL;
	p = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
	return p && p[1] == ' ' ? p + 2 : NULL;
}
