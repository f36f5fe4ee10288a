/*
 * view.c - the run's file tree: what the policy shows, nothing else
 * (DESIGN.md 12: "the view is the policy").
 *
 * The run's root is a small read-only tmpfs holding only what policy_view
 * names: each shown tree is a read-only bind mount of the host's, at the
 * same path (so every rule means inside what it means outside); trees a
 * deny-read rule or ward's own files (the audit database, its key) take
 * away are left out even below a shown tree: their shown parent is then
 * rebuilt entry by entry without them (a "skeleton"), so that they do not
 * exist inside (ENOENT), not merely refuse. On top, the run's own mounts:
 * a fresh /proc (its pid namespace), tmpfs on /tmp and /dev/shm, and a
 * tmpfs /home holding only /home/user, the workdir (a writable bind of the
 * host directory, wherever it is). The host's /proc, /sys/fs/cgroup and
 * /home never show; /dev has only the nodes the policy names plus the
 * fd, stdin, stdout and stderr links.
 *
 * Two halves, like landlock.c:
 *   tracer_view_plan()   in ward, before the clone: the policy's view
 *                        resolved on the host (symlinks along a shown path
 *                        become links inside, skeletons are listed) into
 *                        a list of operations;
 *   tracer_view_build()  in the run's init, in its new mount namespace:
 *                        the operations, then pivot_root; only system
 *                        calls, no allocation (start.c).
 */
#include "tracer-int.h"
#include "spawn.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/log.h"

#ifndef FSOPEN_CLOEXEC
#define FSOPEN_CLOEXEC 0x00000001
#endif
#ifndef FSMOUNT_CLOEXEC
#define FSMOUNT_CLOEXEC 0x00000001
#endif

/* More mounts than this: the policy asks for a view too fine to build
 * quickly (each costs a few microseconds and the kernel's mount lock). */
#define VIEW_MAX_OPS 2048
/* Symlinks followed resolving one path (the kernel's own limit). */
#define VIEW_MAX_LINKS 40

/* The run's own mounts: never the host's, whatever the policy shows. */
static const char *const own[] = { "/proc", "/tmp", "/dev/shm", "/home" };
/* Never shown from the host: other runs' cgroups and usage. */
static const char *const never[] = { "/sys/fs/cgroup" };

enum mark { M_NONE, M_SHOW, M_HIDE, M_OWN, M_LINK };

struct node {
	char *name;
	enum mark mark;
	bool missing; /* M_OWN: no such directory on the host */
	mode_t mode;  /* the host's file type, when known (0: not yet) */
	bool glob;    /* M_HIDE by a name pattern (fnmatch) */
	char *target; /* M_LINK */
	struct node *kids, *next;
};

struct plan {
	struct tracer_view *v;
	struct node root;
	/* real directories already met resolving (most rules share their
	 * first components: /etc, /dev, /usr): one lstat each */
	char *dirs[64];
	size_t ndirs;
	char err[160];
};

static bool known_dir(const struct plan *pl, const char *path)
{
	for (size_t i = 0; i < pl->ndirs; i++)
		if (!strcmp(pl->dirs[i], path))
			return true;
	return false;
}

static void remember_dir(struct plan *pl, const char *path)
{
	if (pl->ndirs < sizeof(pl->dirs) / sizeof(pl->dirs[0]) &&
	    (pl->dirs[pl->ndirs] = strdup(path)))
		pl->ndirs++;
}

/* ------------------------------------------------------------------ */
/* the trie of real host paths                                         */

static void node_free(struct node *n)
{
	while (n) {
		struct node *next = n->next;
		node_free(n->kids);
		free(n->name);
		free(n->target);
		free(n);
		n = next;
	}
}

static struct node *child(struct node *n, const char *name, size_t len,
			  bool make)
{
	struct node *k;

	for (k = n->kids; k; k = k->next)
		if (strlen(k->name) == len && !memcmp(k->name, name, len))
			return k;
	if (!make)
		return NULL;
	k = calloc(1, sizeof(*k));
	if (!k || !(k->name = strndup(name, len))) {
		free(k);
		return NULL;
	}
	k->next = n->kids;
	n->kids = k;
	return k;
}

/* The next name of a path from *p on ("usr" of "/usr/lib"), its length
 * in *len, and *p past it; NULL at the end. */
static const char *next_name(const char **p, size_t *len)
{
	while (**p == '/')
		(*p)++;
	*len = strcspn(*p, "/");
	if (!*len)
		return NULL;
	*p += *len;
	return *p - *len;
}

/* The node of an absolute normalized path, made with its parents. */
static struct node *node_at(struct plan *pl, const char *path)
{
	struct node *n = &pl->root;
	size_t len;

	for (const char *p = path, *name; (name = next_name(&p, &len));) {
		n = child(n, name, len, true);
		if (!n)
			return NULL;
	}
	return n;
}

static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return !strncmp(path, dir, n) && (path[n] == '/' || !path[n]);
}

static bool in_own(const char *path)
{
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (under(path, own[i]))
			return true;
	return false;
}

/*
 * Resolves path on the host (ward's own view) to the real path into out,
 * as the kernel will inside, where every shown path has its host path:
 * each symlink met on the way is remembered as a link to make inside
 * (links: when showing). -ENOENT: it does not exist (nothing to show).
 */
static int resolve(struct plan *pl, const char *path, char *out, bool links,
		   mode_t *mode)
{
	char rest[WARD_PATH_MAX * 2], cur[WARD_PATH_MAX], next[WARD_PATH_MAX];
	int hops = 0;

	*mode = S_IFDIR; /* "/" */
	if (strlen(path) >= WARD_PATH_MAX)
		return -ENAMETOOLONG;
	snprintf(rest, sizeof(rest), "%s", path);
	cur[0] = '\0';
	for (char *p = rest; *p;) {
		struct stat st;
		size_t len;

		while (*p == '/')
			p++;
		len = strcspn(p, "/");
		if (!len)
			break;
		if (len == 1 && p[0] == '.') {
			p += 1;
			continue;
		}
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			char *s = strrchr(cur, '/');
			if (s)
				*s = '\0';
			p += 2;
			continue;
		}
		if ((size_t)snprintf(next, sizeof(next), "%s/%.*s", cur,
				     (int)len, p) >= sizeof(next))
			return -ENAMETOOLONG;
		p += len;
		if (*p && known_dir(pl, next)) {
			memcpy(cur, next, sizeof(cur));
			continue;
		}
		if (lstat(next, &st) < 0)
			return -errno;
		*mode = st.st_mode;
		if (!S_ISLNK(st.st_mode)) {
			if (*p && S_ISDIR(st.st_mode))
				remember_dir(pl, next);
			memcpy(cur, next, sizeof(cur));
			continue;
		}
		char target[WARD_PATH_MAX], tail[WARD_PATH_MAX * 2];
		ssize_t tl = readlink(next, target, sizeof(target) - 1);
		if (tl <= 0 || ++hops > VIEW_MAX_LINKS)
			return tl <= 0 ? -EINVAL : -ELOOP;
		target[tl] = '\0';
		if (links && !in_own(next)) {
			struct node *n = node_at(pl, next);
			if (!n)
				return -ENOMEM;
			if (n->mark == M_NONE) {
				n->mark = M_LINK;
				n->target = strdup(target);
				if (!n->target)
					return -ENOMEM;
			}
		}
		/* go on from the link's directory, or from / */
		if ((size_t)snprintf(tail, sizeof(tail), "%s%s", target, p) >=
		    sizeof(rest))
			return -ENAMETOOLONG;
		memcpy(rest, tail, sizeof(rest));
		p = rest;
		if (target[0] == '/')
			cur[0] = '\0';
	}
	snprintf(out, WARD_PATH_MAX, "%s", cur[0] ? cur : "/");
	return 0;
}

static int mark_path(struct plan *pl, const char *path, enum mark m)
{
	char real[WARD_PATH_MAX];
	struct node *n;
	int rc;

	mode_t mode;

	if (path[0] != '/' || (m != M_OWN && in_own(path)))
		return 0; /* the run's own, never the host's */
	rc = resolve(pl, path, real, m == M_SHOW, &mode);
	if (rc == -ENOENT || rc == -ENOTDIR)
		return 0; /* nothing there to show or hide */
	if (rc < 0) {
		snprintf(pl->err, sizeof(pl->err), "%s: %s", path,
			 strerror(-rc));
		return rc;
	}
	if (in_own(real) && m != M_OWN)
		return 0; /* the run's own, never the host's */
	n = node_at(pl, real);
	if (!n)
		return -ENOMEM;
	/* hiding wins over showing the same path; links stay links */
	if (n->mark == M_NONE || n->mark == M_LINK || m == M_HIDE || m == M_OWN)
		n->mark = m;
	n->mode = mode;
	return 0;
}

/* One of ward's own files, hidden by its name in its real directory,
 * whether it exists now or not: the database's journal or a key's
 * temporary file may appear between this plan and the build (a skeleton
 * lists its directory then), or later, in a directory shown whole. The
 * last name may be a glob. */
static int mark_name(struct plan *pl, const char *path)
{
	char dir[WARD_PATH_MAX], real[WARD_PATH_MAX], full[WARD_PATH_MAX];
	const char *base = strrchr(path, '/');
	struct node *n;
	mode_t mode;
	int rc;

	if (path[0] != '/' || !base || !base[1] ||
	    (size_t)(base - path) >= sizeof(dir))
		return 0;
	memcpy(dir, path, (size_t)(base - path));
	dir[base - path] = '\0';
	rc = resolve(pl, dir[0] ? dir : "/", real, false, &mode);
	if (rc == -ENOENT || rc == -ENOTDIR)
		return 0; /* no directory: nothing there to hide it from */
	if (rc < 0) {
		snprintf(pl->err, sizeof(pl->err), "%s: %s", dir,
			 strerror(-rc));
		return rc;
	}
	if (!S_ISDIR(mode) || in_own(real))
		return 0;
	if ((size_t)snprintf(full, sizeof(full), "%s%s",
			     strcmp(real, "/") ? real : "",
			     base) >= sizeof(full))
		return -ENAMETOOLONG;
	n = node_at(pl, full);
	if (!n)
		return -ENOMEM;
	n->mark = M_HIDE;
	n->glob = strpbrk(base + 1, "*?[") != NULL;
	return 0;
}

/* Is name, in the directory of node n, hidden by a pattern? */
static bool hidden_by_glob(const struct node *n, const char *name)
{
	for (const struct node *k = n->kids; k; k = k->next)
		if (k->glob && k->mark == M_HIDE && !fnmatch(k->name, name, 0))
			return true;
	return false;
}

/* ------------------------------------------------------------------ */
/* the operations                                                      */

static int op_add(struct plan *pl, enum view_op_kind kind, const char *dst,
		  const char *arg, bool file)
{
	struct tracer_view *v = pl->v;
	struct view_op *o;

	if (v->nops >= VIEW_MAX_OPS) {
		snprintf(pl->err, sizeof(pl->err),
			 "the policy's view needs more than %d mounts: name "
			 "fewer paths, or wider trees",
			 VIEW_MAX_OPS);
		return -E2BIG;
	}
	if (v->nops == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 64;
		o = realloc(v->ops, cap * sizeof(*o));
		if (!o)
			return -ENOMEM;
		v->ops = o;
		v->cap = cap;
	}
	o = &v->ops[v->nops];
	memset(o, 0, sizeof(*o));
	o->kind = kind;
	o->file = file;
	/* relative to the new root: "usr/lib", "" for the root itself */
	o->dst = strdup(dst[0] == '/' ? dst + 1 : dst);
	o->arg = arg ? strdup(arg) : NULL;
	if (!o->dst || (arg && !o->arg)) {
		free(o->dst);
		free(o->arg);
		return -ENOMEM;
	}
	v->nops++;
	if (kind == VOP_BIND)
		v->nbinds++;
	return 0;
}

static bool has_below(const struct node *n, enum mark m)
{
	for (const struct node *k = n->kids; k; k = k->next)
		if (k->mark == m || has_below(k, m))
			return true;
	return false;
}

/* Is the real host path shown: the nearest mark on its way SHOW? */
static bool shown(const struct plan *pl, const char *real)
{
	const struct node *n = &pl->root;
	enum mark eff = n->mark;
	size_t len;

	for (const char *p = real, *name; n && (name = next_name(&p, &len));) {
		n = child((struct node *)n, name, len, false);
		if (n && n->mark != M_NONE && n->mark != M_LINK)
			eff = n->mark;
	}
	return eff == M_SHOW;
}

/* Where path leads on the host, all links followed, in three system calls
 * whatever the chain (O_PATH: nothing is opened for real). */
static int real_of(const char *path, char *out, size_t n)
{
	char fdpath[32];
	int fd = open(path, O_PATH | O_CLOEXEC);
	ssize_t len;

	if (fd < 0)
		return -errno;
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	len = readlink(fdpath, out, n - 1);
	close(fd);
	if (len <= 0 || (size_t)len >= n - 1)
		return -EINVAL;
	out[len] = '\0';
	return 0;
}

/* Directories the view rebuilds (not shown, something below shown), in
 * paths[]; depth first. */
static void rebuilt_dirs(const struct node *n, const char *path, enum mark eff,
			 char **paths, size_t *np, size_t max)
{
	enum mark m = n->mark == M_NONE ? eff : n->mark;
	char sub[WARD_PATH_MAX];

	if (m != M_NONE || !has_below(n, M_SHOW) || *np >= max)
		return;
	paths[(*np)++] = strdup(path[0] ? path : "/");
	for (const struct node *k = n->kids; k; k = k->next)
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", path, k->name) <
		    sizeof(sub))
			rebuilt_dirs(k, sub, m, paths, np, max);
}

/*
 * In a directory the view rebuilds, a symlink of the host's is made inside
 * when it leads to something shown, with every link on its way (merged
 * /usr's /lib and /bin; libz.so.1 beside the libz.so.1.2.13 a learned
 * policy names; Debian's /etc/alternatives): names only, and only those
 * that go somewhere the policy already shows.
 */
static int links_to_shown(struct plan *pl)
{
	char *dirs[256], full[WARD_PATH_MAX], real[WARD_PATH_MAX];
	size_t nd = 0;
	int rc = 0;

	rebuilt_dirs(&pl->root, "", M_NONE, dirs, &nd, 256);
	for (size_t i = 0; i < nd; i++) {
		DIR *d = dirs[i] ? opendir(dirs[i]) : NULL;
		struct dirent *e;

		while (!rc && d && (e = readdir(d))) {
			const struct node *k;
			struct stat st;
			if (e->d_type != DT_LNK && e->d_type != DT_UNKNOWN)
				continue;
			if ((size_t)snprintf(full, sizeof(full), "%s/%s",
					     strcmp(dirs[i], "/") ? dirs[i]
								  : "",
					     e->d_name) >= sizeof(full))
				continue;
			if (e->d_type == DT_UNKNOWN &&
			    (lstat(full, &st) < 0 || !S_ISLNK(st.st_mode)))
				continue;
			k = child(node_at(pl, dirs[i]), e->d_name,
				  strlen(e->d_name), false);
			if ((k && k->mark != M_NONE) || in_own(full))
				continue;
			mode_t mode;
			if (real_of(full, real, sizeof(real)) == 0 &&
			    shown(pl, real))
				rc = resolve(pl, full, real, true, &mode);
		}
		if (d)
			closedir(d);
	}
	for (size_t i = 0; i < nd; i++)
		free(dirs[i]);
	return rc == -ENOENT ? 0 : rc;
}

/* Must a shown directory be rebuilt entry by entry? When something below
 * is hidden, or is a mount point of the run's own the host lacks. */
static bool needs_skeleton(const struct node *n)
{
	for (const struct node *k = n->kids; k; k = k->next)
		if (k->mark == M_HIDE || (k->mark == M_OWN && k->missing) ||
		    needs_skeleton(k))
			return true;
	return false;
}

/* A host entry below a skeleton, not named by the policy: all of it. */
static int entry_whole(struct plan *pl, const char *path)
{
	struct stat st;
	char target[WARD_PATH_MAX];

	if (lstat(path, &st) < 0)
		return 0; /* gone since the listing */
	if (S_ISLNK(st.st_mode)) {
		ssize_t tl = readlink(path, target, sizeof(target) - 1);
		if (tl <= 0)
			return 0;
		target[tl] = '\0';
		return op_add(pl, VOP_LINK, path, target, false);
	}
	return op_add(pl, VOP_BIND, path, path, !S_ISDIR(st.st_mode));
}

static int gen(struct plan *pl, struct node *n, const char *path,
	       enum mark eff);

/* A shown directory with something hidden below: each entry of the
 * host's directory but the hidden ones. */
static int skeleton(struct plan *pl, struct node *n, const char *path)
{
	char sub[WARD_PATH_MAX];
	struct dirent *e;
	DIR *d = opendir(path[0] ? path : "/");
	int rc = 0;

	if (!d)
		return errno == ENOENT ? 0 : -errno;
	if (path[0])
		rc = op_add(pl, VOP_DIR, path, NULL, false);
	while (!rc && (e = readdir(d))) {
		struct node *k;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", path,
				     e->d_name) >= sizeof(sub))
			continue;
		k = child(n, e->d_name, strlen(e->d_name), false);
		if (!k && hidden_by_glob(n, e->d_name))
			continue;
		rc = k ? gen(pl, k, sub, M_SHOW) : entry_whole(pl, sub);
	}
	closedir(d);
	return rc;
}

static int gen(struct plan *pl, struct node *n, const char *path, enum mark eff)
{
	char sub[WARD_PATH_MAX];
	enum mark m = n->mark == M_NONE ? eff : n->mark;
	struct stat st;
	int rc = 0;

	switch (m) {
	case M_LINK: return op_add(pl, VOP_LINK, path, n->target, false);
	case M_OWN:
		/* a mount point of the run's own (mounted after the build) */
		return op_add(pl, VOP_DIR, path, NULL, false);
	case M_SHOW:
		if (!n->mode && lstat(path[0] ? path : "/", &st) == 0)
			n->mode = st.st_mode;
		if (!n->mode)
			return 0; /* gone */
		if (!S_ISDIR(n->mode) || !needs_skeleton(n))
			return op_add(pl, VOP_BIND, path[0] ? path : "/",
				      path[0] ? path : "/", !S_ISDIR(n->mode));
		return skeleton(pl, n, path);
	default: /* not shown: a directory of the tmpfs, if anything below
		  * is */
		if (!has_below(n, M_SHOW) && !has_below(n, M_LINK) &&
		    !has_below(n, M_OWN))
			return 0;
		if (path[0])
			rc = op_add(pl, VOP_DIR, path, NULL, false);
		for (struct node *k = n->kids; !rc && k; k = k->next) {
			if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", path,
					     k->name) >= sizeof(sub))
				continue;
			rc = gen(pl, k, sub, m);
		}
		return rc;
	}
}

void tracer_view_free(struct tracer_view *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->nops; i++) {
		free(v->ops[i].dst);
		free(v->ops[i].arg);
	}
	free(v->ops);
	memset(v, 0, sizeof(*v));
}

int tracer_view_plan(const struct policy *p, const char *interpreter,
		     const char *workdir, struct tracer_view *v, char *err,
		     size_t n)
{
	static const char *const dev_links[][2] = {
		{ "/dev/fd", "/proc/self/fd" },
		{ "/dev/stdin", "/proc/self/fd/0" },
		{ "/dev/stdout", "/proc/self/fd/1" },
		{ "/dev/stderr", "/proc/self/fd/2" },
	};
	struct policy_view pv;
	struct plan pl = { .v = v };
	char ld_so[256];
	int rc;

	memset(v, 0, sizeof(*v));
	rc = policy_view(p, &pv);
	if (rc < 0) {
		snprintf(err, n, "the policy's view: %s", strerror(-rc));
		return rc;
	}
	v->host = pv.host;
	for (size_t i = 0; !rc && i < pv.nshow; i++)
		rc = mark_path(&pl, pv.show[i], M_SHOW);
	/* what runs the code: the interpreter and its loader */
	if (!rc && interpreter)
		rc = mark_path(&pl, interpreter, M_SHOW);
	if (!rc && interpreter) {
		tracer_elf_interp(interpreter, ld_so, sizeof(ld_so));
		if (ld_so[0])
			rc = mark_path(&pl, ld_so, M_SHOW);
	}
	for (size_t i = 0; !rc && i < pv.nhide; i++)
		rc = mark_path(&pl, pv.hide[i], M_HIDE);
	for (size_t i = 0; !rc && i < pv.nrecord; i++)
		rc = mark_name(&pl, pv.record[i]);
	for (size_t i = 0; !rc && i < sizeof(never) / sizeof(never[0]); i++)
		rc = mark_path(&pl, never[i], M_HIDE);
	/* the workdir is at TRACER_HOME only, never at its host path */
	if (!rc && workdir)
		rc = mark_path(&pl, workdir, M_HIDE);
	for (size_t i = 0; !rc && i < sizeof(own) / sizeof(own[0]); i++) {
		struct node *k = node_at(&pl, own[i]);
		struct stat st;
		if (!k) {
			rc = -ENOMEM;
		} else {
			k->mark = M_OWN;
			k->missing = stat(own[i], &st) < 0 ||
				     !S_ISDIR(st.st_mode);
		}
	}
	for (size_t i = 0; !rc && i < 4; i++) {
		struct node *k = node_at(&pl, dev_links[i][0]);
		if (!k) {
			rc = -ENOMEM;
		} else if (k->mark == M_NONE) {
			k->mark = M_LINK;
			k->target = strdup(dev_links[i][1]);
			if (!k->target)
				rc = -ENOMEM;
		}
	}
	if (!rc)
		rc = links_to_shown(&pl);
	policy_view_free(&pv);
	/* the root: the host's own, when all of it is shown and nothing
	 * below is taken away or replaced but over-mounted */
	if (!rc && pl.root.mark == M_SHOW && !needs_skeleton(&pl.root))
		v->root_is_host = true;
	if (!rc && !v->root_is_host)
		rc = gen(&pl, &pl.root, "", M_NONE);
	node_free(pl.root.kids);
	for (size_t i = 0; i < pl.ndirs; i++)
		free(pl.dirs[i]);
	if (rc < 0) {
		snprintf(err, n, "%s", pl.err[0] ? pl.err : strerror(-rc));
		tracer_view_free(v);
		return rc;
	}
	v->active = true;
	return 0;
}

/* ------------------------------------------------------------------ */
/* in the run's init: no allocation (start.c)                          */

SPAWN_SIDE static void need(bool ok, const char *what)
{
	if (!ok)
		spawn_fail(what);
}

SPAWN_SIDE static void mount_point(int root, const struct view_op *o)
{
	if (!o->file) {
		need(mkdirat(root, o->dst, 0755) == 0 || errno == EEXIST,
		     "the view: a directory");
		return;
	}
	need(mknodat(root, o->dst, S_IFREG | 0644, 0) == 0 || errno == EEXIST,
	     "the view: a file's mount point");
}

SPAWN_SIDE static void attach(int tree, int root, const char *dst,
			      const char *what)
{
	need(tree >= 0, what);
	need(syscall(SYS_move_mount, tree, "", root, dst,
		     MOVE_MOUNT_F_EMPTY_PATH) == 0,
	     what);
	close(tree);
}

/* A fresh mount of type fs (tmpfs, proc) with opts, detached. */
SPAWN_SIDE static int fresh(const char *fs, const char *opts, unsigned attr)
{
	int fd = (int)syscall(SYS_fsopen, fs, FSOPEN_CLOEXEC), m;

	if (fd < 0)
		return -1;
	for (const char *o = opts; o && *o;) {
		char key[32], val[64];
		size_t len = strcspn(o, ","), kl = strcspn(o, "=");
		if (kl > len)
			kl = len;
		if (kl >= sizeof(key) || len - kl >= sizeof(val)) {
			close(fd);
			errno = EINVAL;
			return -1;
		}
		memcpy(key, o, kl);
		key[kl] = '\0';
		if (kl < len) {
			memcpy(val, o + kl + 1, len - kl - 1);
			val[len - kl - 1] = '\0';
		}
		if (syscall(SYS_fsconfig, fd, FSCONFIG_SET_STRING, key,
			    kl < len ? val : NULL, 0) < 0) {
			close(fd);
			return -1;
		}
		o += len + (o[len] == ',');
	}
	if (syscall(SYS_fsconfig, fd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		close(fd);
		return -1;
	}
	m = (int)syscall(SYS_fsmount, fd, FSMOUNT_CLOEXEC, attr);
	close(fd);
	return m;
}

/* /tmp's and /dev/shm's tmpfs options: private and bounded like the
 * code's memory (tmpfs pages are memory; the memory cgroup charges them
 * too). */
SPAWN_SIDE void tracer_tmp_opts(const struct tracer_opts *o, char *buf,
				size_t n)
{
	if (o->limits.memory_bytes > 0)
		snprintf(buf, n, "mode=1777,size=%lld", o->limits.memory_bytes);
	else
		snprintf(buf, n, "mode=1777");
}

SPAWN_SIDE void tracer_view_build(const struct tracer_view *v,
				  const struct tracer_opts *o, int wd,
				  bool own_proc)
{
	const unsigned ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID;
	struct mount_attr attr = { .attr_set = ro };
	char opts[64];
	int old, root;

	old = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	need(old >= 0, "the view: opening the host's root");
	if (v->root_is_host)
		root = (int)syscall(SYS_open_tree, old, "",
				    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
					    AT_RECURSIVE | AT_EMPTY_PATH);
	else
		root = fresh("tmpfs", "mode=0755",
			     MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	need(root >= 0, "the view: its root");
	/* Attached (a pivot_root needs a mount point of this namespace) on
	 * the host's /tmp, which the run never sees. */
	need(syscall(SYS_move_mount, root, "", AT_FDCWD, "/tmp",
		     MOVE_MOUNT_F_EMPTY_PATH) == 0,
	     "the view: attaching its root");
	for (size_t i = 0; i < v->nops; i++) {
		const struct view_op *op = &v->ops[i];
		switch (op->kind) {
		case VOP_DIR:
			need(mkdirat(root, op->dst, 0755) == 0 ||
				     errno == EEXIST,
			     "the view: a directory");
			break;
		case VOP_LINK:
			need(symlinkat(op->arg, root, op->dst) == 0 ||
				     errno == EEXIST,
			     "the view: a symlink");
			break;
		case VOP_BIND: {
			int tree = (int)syscall(
				SYS_open_tree, old, op->arg + 1,
				OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
					AT_RECURSIVE | AT_SYMLINK_NOFOLLOW);
			/* gone from the host since the plan (before the
			 * open_tree, or after it: the kernel mounts no
			 * unlinked file): then it does not exist inside
			 * either */
			if (tree < 0 && errno == ENOENT)
				break;
			need(tree >= 0, "the view: a bind mount");
			mount_point(root, op);
			if (syscall(SYS_move_mount, tree, "", root, op->dst,
				    MOVE_MOUNT_F_EMPTY_PATH) < 0) {
				need(errno == ENOENT, "the view: a bind mount");
				unlinkat(root, op->dst,
					 op->file ? 0 : AT_REMOVEDIR);
			}
			close(tree);
			break;
		}
		}
	}
	/* Everything of the host read-only, then the run's own mounts. */
	need(syscall(SYS_mount_setattr, root, "", AT_EMPTY_PATH | AT_RECURSIVE,
		     &attr, sizeof(attr)) == 0,
	     "the view: making it read-only");
	need(fchdir(root) == 0, "the view: entering it");
	/* hidepid: the init (ward's own code, root when ward is) is not
	 * there for the code: its cmdline is ward's, with the database's and
	 * the workdir's host paths */
	if (own_proc)
		need(mount("proc", "proc", "proc",
			   MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2") == 0,
		     "mounting /proc for the run's pid namespace");
	tracer_tmp_opts(o, opts, sizeof(opts));
	need(mount("tmpfs", "tmp", "tmpfs", MS_NOSUID | MS_NODEV, opts) == 0,
	     "mounting a tmpfs on /tmp");
	need(mount("tmpfs", "dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, opts) ==
		     0,
	     "mounting a tmpfs on /dev/shm");
	/* /home: only the workdir, on a read-only tmpfs of its own */
	int home = fresh("tmpfs", "mode=0755,size=64k",
			 MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	need(home >= 0, "mounting a tmpfs on /home");
	need(mkdirat(home, "user", 0755) == 0, "creating /home/user");
	need(syscall(SYS_mount_setattr, home, "", AT_EMPTY_PATH, &attr,
		     sizeof(attr)) == 0,
	     "making /home read-only");
	attach(home, root, "home", "mounting a tmpfs on /home");
	attach(wd, root, TRACER_HOME + 1, "attaching the workdir");
	/* The view becomes the root; the host's tree goes. */
	need(syscall(SYS_pivot_root, ".", ".") == 0, "pivot_root to the view");
	need(umount2(".", MNT_DETACH) == 0, "detaching the host's tree");
	need(chdir("/") == 0, "chdir to the view's root");
	close(root);
	close(old);
}
