/*
 * cgroup.c - the memory and process limits as cgroups, where they can be
 * made.
 *
 * An rlimit on the address space makes big allocations fail (Python raises
 * MemoryError) but says nothing about memory actually used and cannot end
 * the run with a cause; ward's own count of processes misses zombies the
 * code never waits for. Where ward may create cgroups under its own (v2
 * with the controllers delegated, or v1's memory and pids hierarchies, as
 * root), every run gets them by default (tracer_opts.no_cgroup opts out):
 *   memory  limit = the memory limit; the kernel's OOM killer ending a
 *           process there ends the run with status "limit"
 *   pids    pids.max = the process limit + 1 (room for ward's own helper
 *           in the run, the pid namespace's init, when there is one; + 2
 *           for a zygote fork, whose init and waiter are ward's: zygote.c); a
 *           fork the kernel refuses there (EAGAIN in the code) ends the run
 *           with status "limit" and the same cause as ward's own count
 * Every process of the run is in them from before its first instruction.
 * Where a controller cannot be had, its rlimit or ward's count stays, ward
 * says so once on stderr, and the run's layers record it. The other
 * rlimits (cpu, file size, open files, core) are always set.
 *
 * Moving another process into a cgroup (its pid written to cgroup.procs)
 * takes the kernel's global threadgroup lock for writing, which waits for
 * an RCU grace period unless the hierarchy is mounted with favordynmods
 * (median 9.6 ms here, 0.07-29 ms). A thread moving itself ("0" written to
 * a v1 tasks file) takes no such lock. So on v1 the child enters its slots
 * itself, first thing after the clone, through tasks files ward opened
 * before it (tracer_cgroup_self; it is single-threaded then, so the
 * thread is the process), and says on a pipe how it went; ward waits for
 * that before it lets anything of the code's run. On v2 a thread may only
 * move within a threaded subtree, so ward writes the pid there.
 *
 * Making and removing cgroups costs several milliseconds each, so runs
 * reuse them: slots ward-slot-N under ward's own cgroup of each hierarchy,
 * each held by one run at a time with flock() on the slot directory
 * (released by the kernel if ward dies). A slot is empty between runs; its
 * limit is rewritten only when it differs; OOM kills and refused forks are
 * counted from the slot's counters at the start of the run. Slots stay for
 * the next run.
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

#include "../common/log.h"

/* Writes text to dir/file. 0 or -errno. */
/* ward's own processes in a run's pids cgroup: the init, or a zygote
 * fork's waiter and init (zygote.c) */
static long long ward_pids(const struct tracer *t)
{
	return t->o->zygote_child ? 2 : 1;
}

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

/* Is word one of the comma- or space-separated words of list? */
static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; (p = strstr(p, word)) != NULL; p += n) {
		bool start = p == list || p[-1] == ',' || p[-1] == ' ';
		bool end = !p[n] || p[n] == ',' || p[n] == ' ' || p[n] == '\n';
		if (start && end)
			return true;
	}
	return false;
}

/* What own_cgroup reads: /proc/self/mountinfo and /proc/self/cgroup, read
 * once per run's set-up (each is parsed for both controllers). */
struct cg_host {
	char *mountinfo, *cgroup; /* NUL-terminated, or NULL: unreadable */
	int err;		  /* why, when one is NULL */
};

/* The whole of path, NUL-terminated (malloc'd), or NULL with errno. */
static char *read_all(const char *path)
{
	size_t cap = 8192, len = 0;
	char *buf = malloc(cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (!buf || fd < 0) {
		int e = buf ? errno : ENOMEM;
		free(buf);
		if (fd >= 0)
			close(fd);
		errno = e;
		return NULL;
	}
	for (;;) {
		if (cap - len < 2) {
			char *nb = cap < (1u << 24) ? realloc(buf, cap * 2)
						    : NULL;
			if (!nb) {
				free(buf);
				close(fd);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			free(buf);
			close(fd);
			errno = e;
			return NULL;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return buf;
}

static void cg_host_read(struct cg_host *h)
{
	h->err = 0;
	h->mountinfo = read_all("/proc/self/mountinfo");
	if (!h->mountinfo)
		h->err = errno;
	h->cgroup = read_all("/proc/self/cgroup");
	if (!h->cgroup && !h->err)
		h->err = errno;
}

static void cg_host_free(struct cg_host *h)
{
	free(h->mountinfo);
	free(h->cgroup);
	h->mountinfo = h->cgroup = NULL;
}

/* The next line of *p into line (cut to its size), advancing *p; false at
 * the end. */
static bool next_line(const char **p, char *line, size_t n)
{
	const char *s = *p, *nl;
	size_t len;

	if (!*s)
		return false;
	nl = strchr(s, '\n');
	len = nl ? (size_t)(nl - s) : strlen(s);
	*p = nl ? nl + 1 : s + len;
	if (len >= n)
		len = n - 1;
	memcpy(line, s, len);
	line[len] = '\0';
	return true;
}

/*
 * Where our own cgroup is for controller ctl: the mount point of the v1
 * hierarchy with that controller, or of the unified hierarchy (v2), joined
 * with our path in it from /proc/self/cgroup. 0 and dir filled, or -ENOENT.
 */
static int own_cgroup(const struct cg_host *h, bool v2, const char *ctl,
		      char *dir, size_t n)
{
	char line[4096], mnt[WARD_PATH_MAX] = "", rel[WARD_PATH_MAX] = "";
	const char *p = h->mountinfo;

	if (!h->mountinfo || !h->cgroup)
		return -h->err;
	while (next_line(&p, line, sizeof(line))) {
		char *sep = strstr(line, " - ");
		char point[WARD_PATH_MAX], fstype[64], opts[512];

		if (!sep ||
		    sscanf(line, "%*s %*s %*s %*s %4095s", point) != 1 ||
		    sscanf(sep + 3, "%63s %*s %511s", fstype, opts) != 2)
			continue;
		if (v2 ? !strcmp(fstype, "cgroup2")
		       : !strcmp(fstype, "cgroup") && has_word(opts, ctl)) {
			snprintf(mnt, sizeof(mnt), "%s", point);
			break;
		}
	}
	if (!mnt[0])
		return -ENOENT;
	p = h->cgroup;
	while (next_line(&p, line, sizeof(line))) {
		char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;

		if (!b)
			continue;
		*b = '\0';
		if (v2 ? !strcmp(a + 1, "") : has_word(a + 1, ctl)) {
			snprintf(rel, sizeof(rel), "%s", b + 1);
			break;
		}
	}
	if (!rel[0])
		return -ENOENT;
	snprintf(dir, n, "%s%s", mnt, strcmp(rel, "/") ? rel : "");
	return 0;
}

enum { MAX_SLOTS = 64 };

/* The number after "key " in dir/file, or 0. */
static long long counter(const char *dir, const char *file, const char *key)
{
	char buf[1024], *p;
	size_t n = strlen(key);

	if (get(dir, file, buf, sizeof(buf)) <= 0)
		return 0;
	for (p = buf; (p = strstr(p, key)) != NULL; p += n)
		if ((p == buf || p[-1] == '\n') && p[n] == ' ')
			return atoll(p + n + 1);
	return 0;
}

static long long oom_kills(const char *dir, bool v2)
{
	return counter(dir, v2 ? "memory.events" : "memory.oom_control",
		       "oom_kill");
}

/* Sets file in dir to value unless it has it already. 0 or -errno. */
static int set_value(const char *dir, const char *file, long long value)
{
	char want[32], have[64];

	snprintf(want, sizeof(want), "%lld", value);
	if (get(dir, file, have, sizeof(have)) > 0 &&
	    strtoll(have, NULL, 10) == value)
		return 0;
	return put(dir, file, want);
}

/* Takes slot n under own (creating it): 0 with *dir and *fd set, -EBUSY
 * when another run holds it or processes linger in it, else -errno. */
static int take_slot(const char *own, int n, char *dir, size_t len, int *fd)
{
	char procs[64];
	int rc;

	snprintf(dir, len, "%s/ward-slot-%d", own, n);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	*fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*fd < 0)
		return -errno;
	/* A slot another user made may be there, not ours to fill. */
	if (faccessat(*fd, "cgroup.procs", W_OK, AT_EACCESS) < 0)
		rc = -errno;
	else if (flock(*fd, LOCK_EX | LOCK_NB) < 0)
		rc = -EBUSY;
	else
		rc = get(dir, "cgroup.procs", procs, sizeof(procs)) == 0
			     ? 0
			     : -EBUSY;
	if (rc < 0) {
		close(*fd);
		*fd = -1;
	}
	return rc;
}

/*
 * A slot for controller ctl: on v2 when ward's own cgroup hands ctl to its
 * children, else in the v1 hierarchy of ctl. 0 with dir, *fd, *v2 set, or
 * -errno with why filled.
 */
static int find_slot(const struct cg_host *h, const char *ctl, char *dir,
		     size_t len, int *fd, bool *v2, char *why, size_t wn)
{
	char own[WARD_PATH_MAX], sub[256];
	int rc;

	*v2 = own_cgroup(h, true, ctl, own, sizeof(own)) == 0 &&
	      get(own, "cgroup.subtree_control", sub, sizeof(sub)) >= 0 &&
	      has_word(sub, ctl);
	if (!*v2 && own_cgroup(h, false, ctl, own, sizeof(own)) < 0) {
		snprintf(why, wn,
			 "no cgroup hierarchy offers %s (cgroup v2 without %s "
			 "delegated to ward's cgroup, and no v1 hierarchy)",
			 ctl, ctl);
		return -ENOENT;
	}
	for (int n = 0; n < MAX_SLOTS; n++) {
		rc = take_slot(own, n, dir, len, fd);
		if (rc == 0)
			return 0;
		if (rc != -EBUSY) {
			snprintf(why, wn, "cannot make a cgroup under %s: %s%s",
				 own, strerror(-rc),
				 rc == -EACCES || rc == -EPERM || rc == -EROFS
					 ? " (ward needs root, or a delegated "
					   "cgroup v2 subtree)"
					 : "");
			return rc;
		}
	}
	snprintf(why, wn, "all %d slots under %s are in use", MAX_SLOTS, own);
	return -EBUSY;
}

static void memory_slot(struct tracer *t, const struct cg_host *h, char *why,
			size_t wn)
{
	long long bytes = t->o->limits.memory_bytes;
	bool v2;
	int rc;

	rc = find_slot(h, "memory", t->cg_dir, sizeof(t->cg_dir), &t->cg_fd,
		       &v2, why, wn);
	if (rc == 0) {
		rc = set_value(t->cg_dir,
			       v2 ? "memory.max" : "memory.limit_in_bytes",
			       bytes);
		if (rc == 0 && v2)
			put(t->cg_dir, "memory.swap.max", "0"); /* no swap */
		if (rc < 0)
			snprintf(why, wn, "setting the limit in %s: %s",
				 t->cg_dir, strerror(-rc));
	}
	if (rc < 0) {
		tracer_cgroup_release_memory(t);
		return;
	}
	t->cg_v2 = v2;
	t->cg_oom_base = oom_kills(t->cg_dir, v2);
}

/* The "max" count of an open pids.events: forks the limit refused. */
static long long refused_forks(int fd)
{
	char buf[256], *p;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strstr(buf, "max ");
	return p ? atoll(p + 4) : 0;
}

static void pids_slot(struct tracer *t, const struct cg_host *h, char *why,
		      size_t wn)
{
	char ev[WARD_PATH_MAX + 16];
	int rc;

	if (t->cg_dir[0] && t->cg_v2 &&
	    get(t->cg_dir, "pids.max", ev, sizeof(ev)) > 0) {
		/* v2 with pids delegated too: the memory slot is the slot */
		snprintf(t->cg_pids_dir, sizeof(t->cg_pids_dir), "%s",
			 t->cg_dir);
		t->cg_pids_v2 = true;
		rc = 0;
	} else {
		rc = find_slot(h, "pids", t->cg_pids_dir,
			       sizeof(t->cg_pids_dir), &t->cg_pids_fd,
			       &t->cg_pids_v2, why, wn);
	}
	if (rc == 0) {
		rc = set_value(t->cg_pids_dir, "pids.max",
			       t->o->limits.procs + ward_pids(t));
		if (rc < 0)
			snprintf(why, wn, "setting pids.max in %s: %s",
				 t->cg_pids_dir, strerror(-rc));
	}
	if (rc == 0) {
		snprintf(ev, sizeof(ev), "%s/pids.events", t->cg_pids_dir);
		t->cg_pids_events = open(ev, O_RDONLY | O_CLOEXEC);
		if (t->cg_pids_events >= 0)
			t->cg_pids_base = refused_forks(t->cg_pids_events);
	}
	if (rc < 0 || t->cg_pids_events < 0) {
		if (!why[0])
			snprintf(why, wn, "pids.events: %s", strerror(errno));
		tracer_cgroup_release_pids(t);
	}
}

/* Once per ward process: the limits the run gets without cgroups. */
static void warn_once(bool mem, bool pids, const char *why)
{
	static bool warned;

	if (warned)
		return;
	warned = true;
	warn("no cgroup for the run's %s: %s; %s",
	     mem && pids ? "memory and process limits"
	     : mem	 ? "memory limit"
			 : "process limit",
	     why,
	     mem ? "an address-space rlimit limits memory instead"
		 : "ward's own count limits processes");
}

int tracer_cgroup_setup(struct tracer *t)
{
	char *mwhy = t->cg_mem_why, *pwhy = t->cg_pids_why;
	size_t wn = sizeof(t->cg_mem_why);
	bool mem = t->o->limits.memory_bytes > 0, pids = t->o->limits.procs > 0;

	t->cg_dir[0] = t->cg_pids_dir[0] = '\0';
	t->cg_fd = t->cg_pids_fd = t->cg_pids_events = -1;
	snprintf(mwhy, wn, "%s",
		 t->o->no_cgroup ? "not used (--no-cgroup)"
		 : mem		 ? ""
				 : "no memory limit");
	snprintf(pwhy, wn, "%s",
		 t->o->no_cgroup ? "not used (--no-cgroup)"
		 : pids		 ? ""
				 : "no process limit");
	if (t->o->no_cgroup)
		return -ENOENT;
	struct cg_host h;
	cg_host_read(&h);
	if (mem)
		memory_slot(t, &h, mwhy, wn);
	if (pids)
		pids_slot(t, &h, pwhy, wn);
	cg_host_free(&h);
	if ((mem && mwhy[0]) || (pids && pwhy[0]))
		warn_once(mem && mwhy[0], pids && pwhy[0],
			  mem && mwhy[0] ? mwhy : pwhy);
	return t->cg_dir[0] || t->cg_pids_dir[0] ? 0 : -ENOTSUP;
}

/* Says in the run's layers whether the child is in dir (rc 0) or not. */
static void say(struct tracer *t, const char *layer, bool v2, const char *dir,
		int rc, bool self, const char *limit)
{
	char d[200];

	if (rc == 0)
		snprintf(d, sizeof(d), "cgroup %s %s%s: %s", v2 ? "v2" : "v1",
			 dir, self ? " (entered by the child itself)" : "",
			 limit);
	else
		snprintf(d, sizeof(d), "could not enter %s: %s", dir,
			 strerror(-rc));
	tracer_layer_add(t->res, layer, rc == 0, d);
}

static int enter(const char *dir, pid_t pid)
{
	char num[32];

	snprintf(num, sizeof(num), "%d", (int)pid);
	return put(dir, "cgroup.procs", num);
}

void tracer_cgroup_self(struct tracer *t, int self[2], int *ack_w)
{
	const char *dir[2] = { t->cg_dir[0] && !t->cg_v2 ? t->cg_dir : NULL,
			       t->cg_pids_dir[0] && !t->cg_pids_v2
				       ? t->cg_pids_dir
				       : NULL };
	char path[WARD_PATH_MAX + 8];
	int p[2];

	*ack_w = -1;
	t->cg_ack_fd = -1;
	for (int i = 0; i < 2; i++) {
		self[i] = -1;
		if (dir[i]) {
			snprintf(path, sizeof(path), "%s/tasks", dir[i]);
			self[i] = open(path, O_WRONLY | O_CLOEXEC);
		}
	}
	if ((self[0] >= 0 || self[1] >= 0) && pipe2(p, O_CLOEXEC) == 0) {
		t->cg_ack_fd = p[0];
		*ack_w = p[1];
	}
	for (int i = 0; i < 2; i++) {
		if (self[i] >= 0 && t->cg_ack_fd < 0) {
			close(self[i]); /* no pipe: ward enters it */
			self[i] = -1;
		}
		t->cg_self[i] = self[i] >= 0;
	}
}

/* The child's word on the slots it entered itself (0 or an errno each);
 * -ECHILD for both when it ended first. */
static void self_results(struct tracer *t, int rc[2])
{
	unsigned char r[2];
	ssize_t n;

	rc[0] = rc[1] = -ECHILD;
	if (t->cg_ack_fd < 0)
		return;
	do
		n = read(t->cg_ack_fd, r, sizeof(r));
	while (n < 0 && errno == EINTR);
	close(t->cg_ack_fd);
	t->cg_ack_fd = -1;
	if (n == (ssize_t)sizeof(r)) {
		rc[0] = -(int)r[0];
		rc[1] = -(int)r[1];
	}
}

/* The rlimits the child sets (spawn.c; it fails the run if it cannot): the
 * address space only when memory is not a cgroup's. */
static void say_rlimits(struct tracer *t, bool memory_cgroup)
{
	const struct ward_limits *l = &t->o->limits;
	char d[200], as[48] = "";

	if (!memory_cgroup && l->memory_bytes > 0)
		snprintf(as, sizeof(as), ", address space %lld MiB",
			 l->memory_bytes >> 20);
	snprintf(d, sizeof(d),
		 "cpu %lld s, file size %lld, open files %lld%s, no core "
		 "dumps (0: unlimited)",
		 l->cpu_s, l->fsize_bytes, l->nofile, as);
	tracer_layer_add(t->res, "rlimits", true, d);
}

int tracer_cgroup_enter(struct tracer *t, pid_t pid)
{
	char limit[96];
	int rc = -ENOENT, prc, self[2] = { 0, 0 };

	if (t->cg_self[0] || t->cg_self[1])
		self_results(t, self);
	if (t->cg_dir[0]) {
		snprintf(limit, sizeof(limit),
			 "%lld MiB; the kernel's OOM kill ends the run",
			 t->o->limits.memory_bytes >> 20);
		rc = t->cg_self[0] ? self[0] : enter(t->cg_dir, pid);
		say(t, "cgroup-memory", t->cg_v2, t->cg_dir, rc, t->cg_self[0],
		    limit);
		if (rc < 0)
			warn_once(true, false, strerror(-rc));
	} else {
		tracer_layer_add(t->res, "cgroup-memory", false, t->cg_mem_why);
	}
	if (t->cg_pids_dir[0]) {
		snprintf(limit, sizeof(limit),
			 "pids.max %lld; a refused fork ends the run",
			 t->o->limits.procs + ward_pids(t));
		/* v2: one directory for both controllers, entered above */
		prc = !strcmp(t->cg_pids_dir, t->cg_dir) ? rc
		      : t->cg_self[1]			 ? self[1]
				      : enter(t->cg_pids_dir, pid);
		say(t, "cgroup-pids", t->cg_pids_v2, t->cg_pids_dir, prc,
		    t->cg_self[1], limit);
		if (prc < 0) {
			warn_once(false, true, strerror(-prc));
			tracer_cgroup_release_pids(t);
		}
	} else {
		tracer_layer_add(t->res, "cgroup-pids", false, t->cg_pids_why);
	}
	if (rc < 0)
		tracer_cgroup_release_memory(t);
	say_rlimits(t, rc == 0);
	return rc;
}

long long tracer_cgroup_oom_kills(struct tracer *t)
{
	if (!t->cg_dir[0])
		return 0;
	return oom_kills(t->cg_dir, t->cg_v2) - t->cg_oom_base;
}

bool tracer_cgroup_pids_refused(struct tracer *t)
{
	return t->cg_pids_events >= 0 &&
	       refused_forks(t->cg_pids_events) > t->cg_pids_base;
}

const char *tracer_procs_cause(const struct tracer *t, char *buf, size_t n)
{
	snprintf(buf, n, "process limit of %lld processes and threads reached",
		 t->o->limits.procs);
	return buf;
}

void tracer_cgroup_check_pids(struct tracer *t)
{
	char cause[128];

	if (tracer_cgroup_pids_refused(t))
		tracer_stop(t, STOP_LIMIT,
			    tracer_procs_cause(t, cause, sizeof(cause)));
}

void tracer_cgroup_release_memory(struct tracer *t)
{
	if (t->cg_fd >= 0)
		close(t->cg_fd); /* the slot is free for the next run */
	t->cg_fd = -1;
	t->cg_dir[0] = '\0';
}

void tracer_cgroup_release_pids(struct tracer *t)
{
	if (t->cg_pids_fd >= 0)
		close(t->cg_pids_fd);
	if (t->cg_pids_events >= 0)
		close(t->cg_pids_events);
	t->cg_pids_fd = t->cg_pids_events = -1;
	t->cg_pids_dir[0] = '\0';
}

void tracer_cgroup_release(struct tracer *t)
{
	if (t->cg_ack_fd >= 0)
		close(t->cg_ack_fd);
	t->cg_ack_fd = -1;
	tracer_cgroup_release_pids(t);
	tracer_cgroup_release_memory(t);
}
