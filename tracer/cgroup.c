/*
 * cgroup.c - the memory limit as a cgroup, where one can be made.
 *
 * An rlimit on the address space makes big allocations fail (Python raises
 * MemoryError) but says nothing about memory actually used and cannot end
 * the run with a cause. When ward may create a cgroup under its own (v2
 * with the memory controller delegated, or v1's memory hierarchy), the run
 * gets one: its limit is the memory limit, every process of the run is in
 * it from before its first instruction, and the kernel's OOM killer ending
 * a process there ends the run with status "limit". Otherwise the rlimit
 * stays, and the run record says which one was used.
 */
#include "tracer-int.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Writes text to dir/file. 0 or -errno. */
static int put(const char *dir, const char *file, const char *text)
{
	char path[WARD_PATH_MAX];
	ssize_t n, len = (ssize_t)strlen(text);
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, text, (size_t)len);
	if (n < 0)
		n = -errno;
	close(fd);
	return n == len ? 0 : n < 0 ? (int)n : -EIO;
}

/* Reads dir/file into buf. Length or -errno. */
static ssize_t get(const char *dir, const char *file, char *buf, size_t n)
{
	char path[WARD_PATH_MAX];
	ssize_t got;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
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

/*
 * Where our own cgroup is: the mount point of the hierarchy with the memory
 * controller (v1) or of the unified hierarchy (v2), joined with our path in
 * it from /proc/self/cgroup. Returns 0 and fills dir, or -ENOENT.
 */
static int own_cgroup(bool v2, char *dir, size_t n)
{
	char line[1024], mnt[WARD_PATH_MAX] = "", rel[WARD_PATH_MAX] = "";
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");
		char point[WARD_PATH_MAX], fstype[64];

		if (!sep ||
		    sscanf(line, "%*s %*s %*s %*s %4095s", point) != 1 ||
		    sscanf(sep + 3, "%63s", fstype) != 1)
			continue;
		if (v2 ? !strcmp(fstype, "cgroup2")
		       : !strcmp(fstype, "cgroup") &&
				    strstr(sep, ",memory") != NULL) {
			snprintf(mnt, sizeof(mnt), "%s", point);
			break;
		}
	}
	fclose(f);
	if (!mnt[0])
		return -ENOENT;
	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;

		if (!b)
			continue;
		*b = '\0';
		b[1 + strcspn(b + 1, "\n")] = '\0';
		if (v2 ? !strcmp(a + 1, "") : strstr(a + 1, "memory") != NULL) {
			snprintf(rel, sizeof(rel), "%s", b + 1);
			break;
		}
	}
	fclose(f);
	if (!rel[0])
		return -ENOENT;
	snprintf(dir, n, "%s%s", mnt, strcmp(rel, "/") ? rel : "");
	return 0;
}

/* Removes the (empty) cgroups left by a ward that was killed: siblings
 * named ward-PID-N whose PID is gone. Errors are ignored. */
static void reap_left_over(const char *own)
{
	DIR *d = opendir(own);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[WARD_PATH_MAX];
		int pid, n;

		if (sscanf(e->d_name, "ward-%d-%d", &pid, &n) != 2 ||
		    pid <= 0 || kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(path, sizeof(path), "%s/%s", own, e->d_name);
		rmdir(path);
	}
	closedir(d);
}

/* Makes dir/ward-PID-N with the memory limit. 0 or -errno. */
static int make_group(struct tracer *t, bool v2)
{
	char own[WARD_PATH_MAX], num[32], ctl[256];
	static int seq;

	if (own_cgroup(v2, own, sizeof(own)) < 0)
		return -ENOENT;
	reap_left_over(own);
	if (v2 && (get(own, "cgroup.subtree_control", ctl, sizeof(ctl)) < 0 ||
		   !strstr(ctl, "memory")))
		return -ENOTSUP; /* memory not delegated to our children */
	snprintf(t->cg_dir, sizeof(t->cg_dir), "%s/ward-%d-%d", own,
		 (int)getpid(), ++seq);
	if (mkdir(t->cg_dir, 0755) < 0) {
		t->cg_dir[0] = '\0';
		return -errno;
	}
	snprintf(num, sizeof(num), "%lld", t->o->limits.memory_bytes);
	if (put(t->cg_dir, v2 ? "memory.max" : "memory.limit_in_bytes", num) <
		    0 ||
	    (v2 && put(t->cg_dir, "memory.swap.max", "0") < 0 &&
	     errno != ENOENT)) {
		rmdir(t->cg_dir);
		t->cg_dir[0] = '\0';
		return -EIO;
	}
	t->cg_v2 = v2;
	return 0;
}

int tracer_cgroup_setup(struct tracer *t)
{
	t->cg_dir[0] = '\0';
	if (t->o->limits.memory_bytes <= 0)
		return -ENOENT;
	if (make_group(t, true) == 0 || make_group(t, false) == 0)
		return 0;
	return -ENOTSUP;
}

int tracer_cgroup_enter(struct tracer *t, pid_t pid)
{
	char num[32];

	if (!t->cg_dir[0])
		return 0;
	snprintf(num, sizeof(num), "%d", (int)pid);
	return put(t->cg_dir, "cgroup.procs", num);
}

long long tracer_cgroup_oom_kills(struct tracer *t)
{
	char buf[1024], *p;

	if (!t->cg_dir[0])
		return 0;
	if (get(t->cg_dir, t->cg_v2 ? "memory.events" : "memory.oom_control",
		buf, sizeof(buf)) <= 0)
		return 0;
	p = strstr(buf, "oom_kill ");
	return p ? atoll(p + 9) : 0;
}

void tracer_cgroup_remove(struct tracer *t)
{
	if (!t->cg_dir[0])
		return;
	/* Empty once the last tracee is reaped; retry briefly otherwise. */
	for (int i = 0; i < 50 && rmdir(t->cg_dir) < 0 && errno == EBUSY; i++)
		usleep(2000);
	t->cg_dir[0] = '\0';
}
