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
 *
 * It is asked for (tracer_opts.memory_cgroup), not the default: putting the
 * child into a cgroup waits for an RCU grace period in the kernel (cgroup
 * v1 here: 5-20 ms per run), more than the rest of ward's start-up.
 *
 * Making and removing a memory cgroup costs several milliseconds each, so
 * runs reuse them: slots ward-slot-N under ward's own cgroup, each held by
 * one run at a time with flock() on the slot directory (released by the
 * kernel if ward dies). A slot is empty between runs; its limit is
 * rewritten only when it differs; OOM kills are counted from the slot's
 * counter at the start of the run. Slots stay for the next run.
 */
#include "tracer-int.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
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

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return tracer_read_file(path, buf, n);
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

enum { MAX_SLOTS = 64 };

static long long oom_kills(const char *dir, bool v2)
{
	char buf[1024], *p;

	if (get(dir, v2 ? "memory.events" : "memory.oom_control", buf,
		sizeof(buf)) <= 0)
		return 0;
	p = strstr(buf, "oom_kill ");
	return p ? atoll(p + 9) : 0;
}

/* Sets the slot's limit unless it already has it. 0 or -errno. */
static int set_limit(const char *dir, bool v2, long long bytes)
{
	char want[32], have[64];
	const char *file = v2 ? "memory.max" : "memory.limit_in_bytes";

	snprintf(want, sizeof(want), "%lld", bytes);
	if (get(dir, file, have, sizeof(have)) > 0 &&
	    strtoll(have, NULL, 10) == bytes)
		return 0;
	if (put(dir, file, want) < 0)
		return -EIO;
	if (v2)
		put(dir, "memory.swap.max", "0"); /* absent without swap */
	return 0;
}

/* Takes slot n under own (creating it): 0 with t->cg_* set, -EBUSY when
 * another run holds it, else -errno. */
static int take_slot(struct tracer *t, const char *own, bool v2, int n)
{
	char dir[WARD_PATH_MAX], procs[64];
	int fd;

	snprintf(dir, sizeof(dir), "%s/ward-slot-%d", own, n);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return -EBUSY;
	}
	/* A slot whose last run's processes linger is not usable. */
	if (get(dir, "cgroup.procs", procs, sizeof(procs)) != 0 ||
	    set_limit(dir, v2, t->o->limits.memory_bytes) < 0) {
		close(fd);
		return -EBUSY;
	}
	snprintf(t->cg_dir, sizeof(t->cg_dir), "%s", dir);
	t->cg_fd = fd;
	t->cg_v2 = v2;
	t->cg_oom_base = oom_kills(dir, v2);
	return 0;
}

static int find_slot(struct tracer *t, bool v2)
{
	char own[WARD_PATH_MAX], ctl[256];

	if (own_cgroup(v2, own, sizeof(own)) < 0)
		return -ENOENT;
	if (v2 && (get(own, "cgroup.subtree_control", ctl, sizeof(ctl)) < 0 ||
		   !strstr(ctl, "memory")))
		return -ENOTSUP; /* memory not delegated to our children */
	for (int n = 0; n < MAX_SLOTS; n++) {
		int rc = take_slot(t, own, v2, n);
		if (rc != -EBUSY)
			return rc;
	}
	return -EBUSY;
}

int tracer_cgroup_setup(struct tracer *t)
{
	t->cg_dir[0] = '\0';
	t->cg_fd = -1;
	if (t->o->limits.memory_bytes <= 0 || !t->o->memory_cgroup)
		return -ENOENT;
	if (find_slot(t, true) == 0 || find_slot(t, false) == 0)
		return 0;
	t->cg_dir[0] = '\0';
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
	if (!t->cg_dir[0])
		return 0;
	return oom_kills(t->cg_dir, t->cg_v2) - t->cg_oom_base;
}

void tracer_cgroup_release(struct tracer *t)
{
	if (t->cg_fd >= 0)
		close(t->cg_fd); /* the slot is free for the next run */
	t->cg_fd = -1;
	t->cg_dir[0] = '\0';
}
