/*
 * resolve.c - decide on what the kernel will open, not on strings.
 *
 * The kernel itself resolves the path for us: ward opens it with O_PATH
 * (no access, no side effects) relative to the tracee's cwd or dirfd
 * (reached through /proc/TID/cwd and /proc/TID/fd/N) and reads the result
 * back from /proc/self/fd. A path that does not exist yet is resolved
 * through its parent; a dangling final symlink is followed to where the
 * kernel would create the file. Only when even the parent is missing is
 * the path normalized lexically (the kernel will then fail the call too).
 *
 * /proc/self and /proc/thread-self at the start of a path are rewritten to
 * the tracee's pid before ward opens anything. Reached any other way (a
 * symlink to /proc/self) they resolve to ward's own /proc entry, which no
 * rule about the tracee matches: such a path is denied, never confused
 * with the tracee's own.
 *
 * With a mount namespace the code's files are not ward's: its /tmp,
 * /dev/shm and /proc are its own. Every open is then made within the
 * run's root (openat2 RESOLVE_IN_ROOT on /proc/INIT/root: absolute
 * symlinks and ".." stay inside, as for the code), relative paths joined
 * to the path of their directory as the code sees it. /proc is the
 * exception: ward is not in the run's pid namespace, so that /proc has no
 * "self" for ward, and RESOLVE_IN_ROOT refuses magic links. Paths in /proc
 * are therefore opened in ward's own /proc with the code's pids (and
 * self, thread-self) translated to ward's; a pid that is no process of
 * the run stays untranslated and unresolved (the policy has no rule for
 * it). Inside, paths are kept as the code sees them; the result names
 * /proc/PID with ward's pid, as the policy and the record expect.
 */
#include "tracer-int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MAX_LINKS 40

/* The run's mount namespace (tracer_resolve_ns); ns.t NULL: ward's own. */
static struct {
	struct tracer *t;
	int root;	 /* O_PATH of the run's root directory */
	dev_t host_proc; /* st_dev of ward's /proc */
	pid_t tid, tgid; /* whom the current resolution is for (host) */
} ns = { NULL, -1, 0, 0, 0 };

void tracer_resolve_ns(struct tracer *t, int root_fd)
{
	struct stat st;

	if (ns.root >= 0)
		close(ns.root);
	ns.root = root_fd;
	ns.t = t;
	ns.host_proc = stat("/proc", &st) == 0 ? st.st_dev : 0;
}

int tracer_resolve_root(void)
{
	return ns.t ? ns.root : -1;
}

/* Parses a decimal pid at s ending at '/' or NUL: its length, 0 if none. */
static size_t num_at(const char *s, long *v)
{
	size_t i = 0;

	*v = 0;
	while (s[i] >= '0' && s[i] <= '9' && i < 10)
		*v = *v * 10 + (s[i++] - '0');
	return i && (s[i] == '/' || !s[i]) ? i : 0;
}

static bool comp_is(const char *s, const char *name)
{
	size_t l = strlen(name);

	return !strncmp(s, name, l) && (s[l] == '/' || !s[l]);
}

static pid_t map_pid(long v, bool to_host)
{
	return to_host ? tracer_ns_host_pid(ns.t, (pid_t)v)
		       : tracer_ns_pid(ns.t, (pid_t)v);
}

/*
 * "/proc/N..." and "/proc/N/task/M..." translated from the code's pid
 * namespace to ward's (to_host; also /proc/self, thread-self, and net and
 * mounts, which are links to self) or back. Returns 1 with out filled, 0
 * when in is no such path, -ENOENT when a number is no process of the run.
 */
static int proc_map(const char *in, char *out, size_t n, bool to_host)
{
	const char *p = in + 6, *rest;
	char head[64];
	long a, b;
	size_t k;

	if (strncmp(in, "/proc/", 6) != 0)
		return 0;
	if (to_host && comp_is(p, "thread-self")) {
		snprintf(head, sizeof(head), "/proc/%d/task/%d", (int)ns.tgid,
			 (int)ns.tid);
		rest = p + 11;
	} else if (to_host && comp_is(p, "self")) {
		snprintf(head, sizeof(head), "/proc/%d", (int)ns.tgid);
		rest = p + 4;
	} else if (to_host && (comp_is(p, "net") || comp_is(p, "mounts"))) {
		snprintf(head, sizeof(head), "/proc/%d/", (int)ns.tgid);
		rest = p;
	} else if ((k = num_at(p, &a))) {
		pid_t m = map_pid(a, to_host), mb;
		if (!m)
			return -ENOENT;
		rest = p + k;
		if (!strncmp(rest, "/task/", 6) && (k = num_at(rest + 6, &b))) {
			if (!(mb = map_pid(b, to_host)))
				return -ENOENT;
			snprintf(head, sizeof(head), "/proc/%d/task/%d", (int)m,
				 (int)mb);
			rest += 6 + k;
		} else {
			snprintf(head, sizeof(head), "/proc/%d", (int)m);
		}
	} else {
		return 0;
	}
	if ((size_t)snprintf(out, n, "%s%s", head, rest) >= n)
		return -ENAMETOOLONG;
	return 1;
}

void tracer_normalize(char *path)
{
	char *out = path, *in = path;

	if (*in != '/')
		return;
	while (*in) {
		while (*in == '/')
			in++;
		char *seg = in;
		while (*in && *in != '/')
			in++;
		size_t len = (size_t)(in - seg);
		if (len == 0 || (len == 1 && seg[0] == '.'))
			continue;
		if (len == 2 && seg[0] == '.' && seg[1] == '.') {
			while (out > path && *--out != '/')
				;
			continue;
		}
		*out++ = '/';
		memmove(out, seg, len);
		out += len;
	}
	if (out == path)
		*out++ = '/';
	*out = '\0';
}

/* Path of an fd of ours, via /proc/self/fd. */
static int fd_path(int fd, char *out, size_t n)
{
	char link[64];
	ssize_t len;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	len = readlink(link, out, n - 1);
	if (len < 0)
		return -errno;
	if ((size_t)len >= n - 1)
		return -ENAMETOOLONG;
	out[len] = '\0';
	if (ns.t && !strncmp(out, "/proc/", 6)) {
		/* In ward's /proc: back to the code's pids (an entry of no
		 * process of the run has no name the code could use). */
		char buf[WARD_PATH_MAX];
		struct stat st;
		if (fstat(fd, &st) < 0)
			return -errno;
		if (st.st_dev == ns.host_proc) {
			int r = proc_map(out, buf, sizeof(buf), false);
			if (r < 0)
				return r;
			if (r > 0)
				snprintf(out, n, "%s", buf);
		}
	}
	return 0;
}

/* Open an absolute path as the code's kernel would (see the top). */
static int open_abs(const char *path, int flags)
{
	char host[WARD_PATH_MAX + 64];
	struct open_how how = { .flags = (uint64_t)flags,
				.resolve = RESOLVE_IN_ROOT };
	int r;

	if (!ns.t)
		return openat(AT_FDCWD, path, flags);
	r = proc_map(path, host, sizeof(host), true);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	if (r > 0)
		return openat(AT_FDCWD, host, flags);
	if (comp_is(path, "/proc"))
		return openat(AT_FDCWD, path, flags); /* the same for all */
	return (int)syscall(SYS_openat2, ns.root, path, &how, sizeof(how));
}

/* openat(base, path, flags) as the code's kernel would. */
static int open_in(int base, const char *path, int flags)
{
	char full[WARD_PATH_MAX * 2];
	size_t l;
	int rc;

	if (!ns.t || path[0] == '/')
		return ns.t ? open_abs(path, flags) : openat(base, path, flags);
	if (base != AT_FDCWD) {
		/* No link on the way: the walk from base is the code's own
		 * (".." stops at the run's root, which has no parent). */
		struct open_how how = {
			.flags = (uint64_t)flags,
			.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
		};
		int fd = (int)syscall(SYS_openat2, base, path, &how,
				      sizeof(how));
		if (fd >= 0 || (errno != ELOOP && errno != EXDEV))
			return fd;
	}
	rc = base == AT_FDCWD ? -EINVAL : fd_path(base, full, sizeof(full));
	if (rc == 0 && full[0] != '/')
		rc = -ENOTDIR; /* a pipe, a socket, ... */
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	l = strlen(full);
	if ((size_t)snprintf(full + l, sizeof(full) - l, "%s%s",
			     l > 1 ? "/" : "", path) >= sizeof(full) - l) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return open_abs(full, flags);
}

/* lstat of an absolute path as the code sees it. */
static int lstat_in(const char *path, struct stat *st)
{
	int fd, rc;

	if (!ns.t)
		return lstat(path, st);
	fd = open_abs(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	rc = fstat(fd, st);
	close(fd);
	return rc;
}

/* Textual /proc/self -> /proc/TGID before ward opens anything. */
static const char *subst_proc_self(const char *raw, pid_t tid, pid_t tgid,
				   char *buf, size_t n)
{
	static const char ts[] = "/proc/thread-self", s[] = "/proc/self";

	if (strncmp(raw, ts, sizeof(ts) - 1) == 0 &&
	    (!raw[sizeof(ts) - 1] || raw[sizeof(ts) - 1] == '/')) {
		snprintf(buf, n, "/proc/%d/task/%d%s", (int)tgid, (int)tid,
			 raw + sizeof(ts) - 1);
		return buf;
	}
	if (strncmp(raw, s, sizeof(s) - 1) == 0 &&
	    (!raw[sizeof(s) - 1] || raw[sizeof(s) - 1] == '/')) {
		snprintf(buf, n, "/proc/%d%s", (int)tgid, raw + sizeof(s) - 1);
		return buf;
	}
	return raw;
}

/*
 * The common case, cheaply: an absolute path with no symlink anywhere in
 * it resolves to its own lexical normal form. openat2(RESOLVE_NO_SYMLINKS)
 * proves there is none (and that the file exists) without ward reading the
 * result back from /proc. ENOENT or ENOTDIR prove as much up to the
 * component that is missing (the walk stops at the first symlink with
 * ELOOP, before any missing component behind it): the kernel's own call
 * then fails there too, or creates exactly the lexical path.
 * Returns 0 (out and *exists filled), or -errno: the caller then resolves
 * the slow way (ELOOP: a symlink is on the way).
 */
static int resolve_plain(const char *raw, char *out, size_t n, bool *exists)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	size_t len = strlen(raw);
	int fd, dir = AT_FDCWD;

	if (raw[0] != '/' || len >= n)
		return -EINVAL;
	if (ns.t) {
		if (comp_is(raw, "/proc"))
			return -EAGAIN; /* translated the slow way */
		dir = ns.root;
		how.resolve |= RESOLVE_IN_ROOT;
	}
	fd = (int)syscall(SYS_openat2, dir, raw, &how, sizeof(how));
	if (fd < 0 && errno != ENOENT && errno != ENOTDIR)
		return -errno;
	*exists = fd >= 0;
	if (fd >= 0)
		close(fd);
	memcpy(out, raw, len + 1);
	tracer_normalize(out);
	return 0;
}

/* ---- directories whose resolution cannot change during the run ---- */

/*
 * Python opens a thousand files in a few dozen directories. For a
 * directory the policy does not let the code change names in or above
 * (policy_names_fixed), and that only root can change (root_only), ward
 * keeps an O_PATH fd and its canonical path:
 * a path in it is then resolved by looking up one name in that fd
 * (fstatat, no walk of the whole path). Only ward's main thread uses it.
 */
enum { DIRCACHE_SLOTS = 512, DIRCACHE_MAX = 256 };

struct dircache_entry {
	char *dir;   /* as the code wrote it (absolute, clean), owned */
	char *canon; /* what it resolves to, owned */
	int fd;	     /* O_PATH|O_DIRECTORY of canon */
};

static struct {
	const struct policy *policy; /* NULL: no caching */
	struct dircache_entry slot[DIRCACHE_SLOTS];
	int used;
	/* canonical directories root_only() found root's, each checked once
	 * (only root could change that, as for the entries themselves) */
	char *rooted[DIRCACHE_MAX];
	int nrooted;
} dc;

void tracer_dircache_init(const struct policy *p)
{
	memset(&dc, 0, sizeof(dc));
	dc.policy = p;
}

int tracer_dircache_used(void)
{
	return dc.used;
}

void tracer_dircache_free(void)
{
	for (int i = 0; i < DIRCACHE_SLOTS; i++) {
		if (!dc.slot[i].dir)
			continue;
		free(dc.slot[i].dir);
		free(dc.slot[i].canon);
		close(dc.slot[i].fd);
	}
	for (int i = 0; i < dc.nrooted; i++)
		free(dc.rooted[i]);
	memset(&dc, 0, sizeof(dc));
	if (ns.root >= 0)
		close(ns.root);
	ns.root = -1;
	ns.t = NULL;
}

static unsigned hash(const char *s, size_t n)
{
	unsigned h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

/* An absolute path with no ".", "..", empty or trailing component. */
static bool clean_path(const char *p)
{
	if (p[0] != '/')
		return false;
	for (const char *c = p; *c; c++) {
		if (c[0] != '/')
			continue;
		if (c[1] == '/' || c[1] == '\0' ||
		    (c[1] == '.' && (c[2] == '/' || c[2] == '\0' ||
				     (c[2] == '.' && (c[3] == '/' || !c[3])))))
			return false;
	}
	return true;
}

/*
 * Nobody but root can change names in dir or above it: every directory on
 * the way is owned by root and writable by no group or other. (The policy
 * already keeps the code out; this keeps other local users out too, e.g.
 * of /tmp, so nothing changes under a cached directory.)
 */
static bool rooted_known(const char *dir)
{
	for (int i = 0; i < dc.nrooted; i++)
		if (!strcmp(dc.rooted[i], dir))
			return true;
	return false;
}

/* dir_fd: dir itself, open (O_PATH), or -1. */
static bool root_only(const char *dir, int dir_fd)
{
	char up[WARD_PATH_MAX];
	struct stat st;
	size_t n = strlen(dir);

	if (n >= sizeof(up))
		return false;
	memcpy(up, dir, n + 1);
	for (bool first = true;; first = false) {
		const char *d = up[0] ? up : "/";
		if (rooted_known(d))
			break; /* and so is everything above it */
		int rc = first && dir_fd >= 0 ? fstat(dir_fd, &st)
					      : lstat_in(d, &st);
		if (rc < 0 || st.st_uid != 0 ||
		    (st.st_mode & (S_IWGRP | S_IWOTH)))
			return false;
		char *slash = strrchr(up, '/');
		if (!slash || !up[0])
			break;
		*slash = '\0';
	}
	/* dir and the ancestors just checked: remembered, so that the next
	 * directory under them checks only what is new */
	memcpy(up, dir, n + 1);
	while (dc.nrooted < DIRCACHE_MAX) {
		const char *d = up[0] ? up : "/";
		char *copy;
		if (rooted_known(d) || !(copy = strdup(d)))
			break;
		dc.rooted[dc.nrooted++] = copy;
		char *slash = strrchr(up, '/');
		if (!slash || !up[0])
			break;
		*slash = '\0';
	}
	return true;
}

static struct dircache_entry *dircache_get(const char *dir, size_t n)
{
	unsigned h = hash(dir, n) % DIRCACHE_SLOTS;

	for (int probe = 0; probe < DIRCACHE_SLOTS; probe++) {
		struct dircache_entry *e =
			&dc.slot[(h + probe) % DIRCACHE_SLOTS];
		if (!e->dir)
			break;
		if (!strncmp(e->dir, dir, n) && e->dir[n] == '\0')
			return e;
	}
	if (dc.used >= DIRCACHE_MAX)
		return NULL;

	/* First sight: resolve it; keep it only if nothing can change it. */
	char buf[WARD_PATH_MAX], canon[WARD_PATH_MAX];
	memcpy(buf, dir, n);
	buf[n] = '\0';
	if (!dc.policy || !policy_names_fixed(dc.policy, buf))
		return NULL;
	int fd = open_abs(buf, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fd_path(fd, canon, sizeof(canon)) < 0 ||
	    !policy_names_fixed(dc.policy, canon) || !root_only(canon, fd)) {
		close(fd);
		return NULL;
	}
	for (int probe = 0; probe < DIRCACHE_SLOTS; probe++) {
		struct dircache_entry *e =
			&dc.slot[(h + probe) % DIRCACHE_SLOTS];
		if (e->dir)
			continue;
		e->dir = strdup(buf);
		e->canon = strdup(canon);
		if (!e->dir || !e->canon) {
			free(e->dir);
			free(e->canon);
			e->dir = e->canon = NULL;
			break;
		}
		e->fd = fd;
		dc.used++;
		return e;
	}
	close(fd);
	return NULL;
}

/*
 * raw absolute and clean, its directory cached: one name looked up.
 * Returns 0 (out, *exists filled) or -EAGAIN: resolve the long way (a
 * final symlink to follow, an odd error).
 */
static int resolve_cached(const char *raw, bool follow, char *out, size_t n,
			  bool *exists)
{
	const char *slash = strrchr(raw, '/');
	struct dircache_entry *e;
	struct stat st;

	if (!dc.policy || slash == raw || !clean_path(raw))
		return -EAGAIN;
	e = dircache_get(raw, (size_t)(slash - raw));
	if (!e)
		return -EAGAIN;
	if (fstatat(e->fd, slash + 1, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISLNK(st.st_mode) && follow)
			return -EAGAIN;
		*exists = true;
	} else if (errno == ENOENT) {
		*exists = false;
	} else {
		return -EAGAIN;
	}
	if ((size_t)snprintf(out, n, "%s%s",
			     strcmp(e->canon, "/") ? e->canon : "", slash) >= n)
		return -EAGAIN;
	return 0;
}

/* base: an O_PATH fd or AT_FDCWD (only for absolute raw). */
static int resolve_at(int base, const char *raw, bool follow, char *out,
		      size_t n, bool *exists, int depth)
{
	int fd, flags = O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW);
	int rc;

	if (depth > MAX_LINKS)
		return -ELOOP;
	if (base == AT_FDCWD &&
	    (resolve_cached(raw, follow, out, n, exists) == 0 ||
	     resolve_plain(raw, out, n, exists) == 0))
		return 0;
	fd = open_in(base, raw, flags);
	if (fd >= 0) {
		rc = fd_path(fd, out, n);
		close(fd);
		*exists = true;
		return rc;
	}
	*exists = false;

	/* Split into parent and last component. */
	char parent[WARD_PATH_MAX];
	size_t len = strnlen(raw, sizeof(parent) - 1);
	memcpy(parent, raw, len);
	parent[len] = '\0';
	while (len > 1 && parent[len - 1] == '/')
		parent[--len] = '\0';
	char *slash = strrchr(parent, '/');
	const char *last;
	if (!slash) {
		last = raw;
		snprintf(parent, sizeof(parent), ".");
	} else {
		last = raw + (slash - parent) + 1;
		if (slash == parent)
			parent[1] = '\0';
		else
			*slash = '\0';
	}
	char lastbuf[NAME_MAX + 2];
	snprintf(lastbuf, sizeof(lastbuf), "%s", last);
	char *trail = strchr(lastbuf, '/');
	if (trail)
		*trail = '\0';
	if (!lastbuf[0] || !strcmp(lastbuf, ".") || !strcmp(lastbuf, ".."))
		return -ENOENT;

	int pfd = open_in(base, parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0 && ns.t) {
		/* A link on the way into /proc (openat2 stops there, see the
		 * top): resolve the parent piece by piece. */
		char canon[WARD_PATH_MAX];
		bool ex = false;
		if (resolve_at(base, parent, true, canon, sizeof(canon), &ex,
			       depth + 1) == 0 &&
		    ex)
			pfd = open_abs(canon, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	if (pfd < 0)
		return -ENOENT;
	if (follow) {
		char target[WARD_PATH_MAX];
		ssize_t tl =
			readlinkat(pfd, lastbuf, target, sizeof(target) - 1);
		if (tl >= 0) {
			target[tl] = '\0';
			rc = resolve_at(target[0] == '/' ? AT_FDCWD : pfd,
					target, true, out, n, exists,
					depth + 1);
			if (rc == -ENOENT) {
				/* The link's target has no parent either: the
				 * kernel fails; decide on the target, lexically. */
				char dir[WARD_PATH_MAX];
				if (target[0] == '/' ||
				    fd_path(pfd, dir, sizeof(dir)) < 0)
					dir[0] = '\0';
				snprintf(out, n, "%s/%s", dir, target);
				tracer_normalize(out);
				*exists = false;
				rc = 0;
			}
			close(pfd);
			return rc;
		}
	}
	if (ns.t) {
		/* reached through the parent: does the file exist? */
		fd = openat(pfd, lastbuf, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		*exists = fd >= 0;
		if (fd >= 0)
			close(fd);
	}
	rc = fd_path(pfd, out, n);
	close(pfd);
	if (rc < 0)
		return rc;
	size_t ol = strlen(out);
	if (ol + 1 + strlen(lastbuf) + 1 > n)
		return -ENAMETOOLONG;
	snprintf(out + ol, n - ol, "%s%s", ol > 1 ? "/" : "", lastbuf);
	return 0;
}

static int open_base(pid_t tid, int dirfd, const char *raw, int *base)
{
	char link[64];

	if (raw[0] == '/') {
		*base = AT_FDCWD;
		return 0;
	}
	if (dirfd == RESOLVE_CWD)
		snprintf(link, sizeof(link), "/proc/%d/cwd", (int)tid);
	else if (dirfd < 0)
		return -EBADF;
	else
		snprintf(link, sizeof(link), "/proc/%d/fd/%d", (int)tid, dirfd);
	*base = open(link, O_PATH | O_CLOEXEC);
	if (*base < 0)
		return errno == ENOENT ? -EBADF : -errno;
	return 0;
}

int tracer_resolve(pid_t tid, pid_t tgid, int dirfd, const char *raw,
		   bool follow, char *out, size_t n, bool *exists)
{
	char subst[WARD_PATH_MAX + 64];
	int base, rc;

	ns.tid = tid;
	ns.tgid = tgid;
	if (!ns.t) /* else open_abs translates /proc/self itself */
		raw = subst_proc_self(raw, tid, tgid, subst, sizeof(subst));
	rc = open_base(tid, dirfd, raw, &base);
	if (rc < 0)
		return rc;
	if (!raw[0]) {
		/* AT_EMPTY_PATH: the dirfd itself. */
		rc = fd_path(base, out, n);
		*exists = rc == 0;
	} else {
		rc = resolve_at(base, raw, follow, out, n, exists, 0);
		if (rc == -ENOENT || rc == -ELOOP) {
			/* Even the parent is missing: the kernel fails the
			 * call; decide on the lexical form. */
			char dir[WARD_PATH_MAX];
			if (raw[0] == '/')
				dir[0] = '\0';
			else if (fd_path(base, dir, sizeof(dir)) < 0)
				dir[0] = '\0';
			snprintf(out, n, "%s/%s", dir, raw);
			tracer_normalize(out);
			*exists = false;
			rc = 0;
		}
	}
	if (base >= 0)
		close(base);
	if (rc == 0 && ns.t && proc_map(out, subst, sizeof(subst), true) > 0)
		snprintf(out, n, "%s", subst); /* ward's pids, for the policy */
	return rc;
}
