/*
 * session-files.c - the files.* methods of the session server (session.h):
 * a session's workdir read, written, listed and changed by the caller.
 *
 * The workdir's files were made by untrusted code. Every path a request
 * names is relative, has no ".." and no empty component (check_path), and
 * is resolved beneath the workdir (openat2 RESOLVE_BENEATH: a symlink that
 * leads out fails with EXDEV). What is done to a path's last component is
 * done by name in the directory that holds it (mkdirat, unlinkat, renameat,
 * fstatat without following), so a symlink there is acted on, never
 * followed; a walk opens each directory by one name with O_NOFOLLOW.
 * Files and directories ward makes belong to the sandbox's user when the
 * code runs as one.
 */
#include "tools/agent/session-server.h"
#include "tools/agent/session-int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/sha256.h"
#include "tools/review/view.h"
#include "tools/run/workfiles.h"

enum {
	LIST_MAX_DEPTH = 64, /* files.list depth */
	RM_MAX_DEPTH = 256,  /* files.remove: a deeper tree is refused */
};

static const char b64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* See session.h. */
int ws_base64_decode(const char *s, size_t n, unsigned char **out, size_t *len)
{
	unsigned char *p = malloc(n / 4 * 3 + 3);
	size_t o = 0;
	unsigned v = 0;
	int bits = 0, pad = 0;

	if (!p)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *c = s[i] ? strchr(b64, s[i]) : NULL;
		if (s[i] == '=') {
			pad++;
			continue;
		}
		if (!c || pad) {
			free(p);
			return -EINVAL;
		}
		v = v << 6 | (unsigned)(c - b64);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			p[o++] = (unsigned char)(v >> bits);
		}
	}
	if (pad > 2 || (n % 4 && pad)) {
		free(p);
		return -EINVAL;
	}
	*out = p;
	*len = o;
	return 0;
}

/* A path a request names (params.key): relative, inside the workdir, no
 * "..". */
static int check_path(json_t *p, const char *key, const char **out,
		      struct ws_error *err)
{
	json_t *v = json_object_get(p, key);
	const char *s = json_string_value(v);

	if (!s || !*s || json_string_length(v) != strlen(s))
		return ws_fail(err, WS_E_PARAMS,
			       "params.%s: give a relative path (a non-empty "
			       "string without NUL bytes)",
			       key);
	if (s[0] == '/')
		return ws_fail(err, WS_E_FILE,
			       "%s: absolute paths are refused; give a path "
			       "relative to the session's workdir",
			       s);
	if (strlen(s) >= PATH_MAX)
		return ws_fail(err, WS_E_FILE, "path too long");
	for (const char *c = s; *c;) {
		size_t l = strcspn(c, "/");
		if ((l == 2 && !strncmp(c, "..", 2)) || l == 0)
			return ws_fail(
				err, WS_E_FILE,
				"%s: '..' and empty components are refused; "
				"paths stay inside the session's workdir",
				s);
		c += l;
		if (*c == '/')
			c++;
	}
	*out = s;
	return 0;
}

static const char *why_of(int rc)
{
	return rc == -EXDEV || rc == -ELOOP
		       ? " (a symlink leads out of the workdir)"
	       : rc == -ENOENT ? " (no such file or directory)"
			       : "";
}

static int file_fail(struct ws_error *err, const char *what, const char *path,
		     int rc)
{
	return ws_fail(err, WS_E_FILE,
		       "%s: cannot %s in the session's workdir: "
		       "%s%s",
		       path, what, strerror(-rc), why_of(rc));
}

int ws_put_file(struct ws_server *s, struct sess *x, const char *path,
		const void *data, size_t len)
{
	int fd = wf_open_beneath(ws_wd(x), path,
				 O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW,
				 0644);
	int rc = fd < 0 ? fd : ws_write_all(fd, data, len);

	if (fd >= 0 && !rc && s->drop &&
	    fchown(fd, WS_SANDBOX_UID, WS_SANDBOX_GID) < 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	return rc;
}

/* The directory holding path's last component, opened beneath the
 * workdir (O_PATH), and that component (*name, in buf). mk: the missing
 * directories on the way are made. The fd, or -errno. */
static int open_parent(struct ws_server *s, struct sess *x, const char *path,
		       bool mk, char buf[PATH_MAX], const char **name)
{
	const char *wd = ws_wd(x);
	char *slash;
	int dfd = wf_open_beneath(wd, ".", O_PATH | O_DIRECTORY, 0);

	snprintf(buf, PATH_MAX, "%s", path);
	slash = strrchr(buf, '/');
	*name = slash ? slash + 1 : buf;
	for (char *c = buf; dfd >= 0 && slash && c <= slash;) {
		char *end = strchr(c, '/');
		*end = '\0';
		if (mk && mkdirat(dfd, c, 0755) == 0 && s->drop)
			(void)fchownat(dfd, c, WS_SANDBOX_UID, WS_SANDBOX_GID,
				       AT_SYMLINK_NOFOLLOW);
		int nd = wf_open_beneath(wd, buf, O_PATH | O_DIRECTORY, 0);
		*end = '/';
		close(dfd);
		dfd = nd;
		c = end + 1;
	}
	if (slash && dfd >= 0)
		*slash = '\0';
	return dfd;
}

/* {path, name, type, size, mode, mtime_ms, sha256 (files)} of name in
 * dfd, whose lstat is st; rel is its path from the workdir. */
static json_t *entry_of(int dfd, const char *name, const char *rel,
			const struct stat *st)
{
	const char *base = strrchr(rel, '/');
	const char *type = S_ISREG(st->st_mode)	  ? "file"
			   : S_ISDIR(st->st_mode) ? "dir"
			   : S_ISLNK(st->st_mode) ? "symlink"
						  : "other";
	json_t *o = json_pack("{s:o, s:o, s:s, s:I, s:i, s:I}", "path",
			      ws_json_text(rel, strlen(rel)), "name",
			      ws_json_text(base ? base + 1 : rel,
					   strlen(base ? base + 1 : rel)),
			      "type", type, "size", (json_int_t)st->st_size,
			      "mode", (int)(st->st_mode & 07777), "mtime_ms",
			      (json_int_t)st->st_mtim.tv_sec * 1000 +
				      st->st_mtim.tv_nsec / 1000000);
	if (!o || !S_ISREG(st->st_mode))
		return o;
	/* hashed only if it is still that regular file (not a FIFO now) */
	int fd = openat(dfd, name,
			O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat now;
	char hex[WARD_SHA256_HEX_LEN + 1];
	long long size;
	if (fd >= 0 && !fstat(fd, &now) && S_ISREG(now.st_mode) &&
	    now.st_ino == st->st_ino && !wf_hash_fd(fd, hex, &size)) {
		json_object_set_new(o, "sha256", json_string(hex));
		json_object_set_new(o, "size", json_integer(size));
	}
	if (fd >= 0)
		close(fd);
	return o;
}

/* ------------------------------------------------------------------ */
/* files.write, files.read                                             */

static int m_write(struct ws_server *s, struct sess *x, json_t *p, json_t **res,
		   struct ws_error *err)
{
	const char *path, *text = NULL, *b = NULL, *name;
	unsigned char *data = NULL;
	char buf[PATH_MAX];
	size_t len = 0;

	if (check_path(p, "path", &path, err) < 0 ||
	    ws_get_str(p, "text", &text, err) < 0 ||
	    ws_get_str(p, "base64", &b, err) < 0)
		return -1;
	if (!text == !b)
		return ws_fail(err, WS_E_PARAMS,
			       "params: give exactly one of text and base64");
	if (text) {
		len = json_string_length(json_object_get(p, "text"));
		data = malloc(len + 1);
		if (data)
			memcpy(data, text, len);
	} else if (ws_base64_decode(b, strlen(b), &data, &len) < 0) {
		return ws_fail(err, WS_E_PARAMS,
			       "params.base64: not valid base64 (RFC 4648, "
			       "with padding)");
	}
	if (!data)
		return ws_fail(err, WS_E_INTERNAL, "out of memory");
	if (len > MAX_READ) {
		free(data);
		return ws_fail(
			err, WS_E_TOO_LARGE,
			"%zu bytes: files of at most %d MiB can be written",
			len, MAX_READ >> 20);
	}
	int dfd = open_parent(s, x, path, true, buf, &name);
	int rc = dfd < 0 ? dfd : ws_put_file(s, x, path, data, len);
	free(data);
	if (rc < 0) {
		if (dfd >= 0)
			close(dfd);
		return file_fail(err, "write it", path, rc);
	}
	char hex[WARD_SHA256_HEX_LEN + 1];
	long long size;
	rc = wf_hash_file(ws_wd(x), path, hex, &size);
	close(dfd);
	if (rc < 0)
		return ws_fail(err, WS_E_FILE, "%s: written but unreadable",
			       path);
	*res = json_pack("{s:o, s:I, s:s}", "path",
			 ws_json_text(path, strlen(path)), "size",
			 (json_int_t)size, "sha256", hex);
	return 0;
}

static int m_read(struct ws_server *s, struct sess *x, json_t *p, json_t **res,
		  struct ws_error *err)
{
	const char *path;
	struct stat st;

	(void)s;
	if (check_path(p, "path", &path, err) < 0)
		return -1;
	int fd = wf_open_beneath(ws_wd(x), path, O_RDONLY | O_NONBLOCK, 0);
	if (fd < 0)
		return file_fail(err, "read it", path, fd);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return ws_fail(err, WS_E_FILE, "%s: not a regular file", path);
	}
	if (st.st_size > MAX_READ) {
		close(fd);
		return ws_fail(err, WS_E_TOO_LARGE,
			       "%s: %lld bytes; files of at most %d MiB can be "
			       "read",
			       path, (long long)st.st_size, MAX_READ >> 20);
	}
	size_t cap = (size_t)st.st_size + 1, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
		if (n == cap)
			break; /* grew meanwhile: keep what was there */
	}
	close(fd);
	if (!buf)
		return ws_fail(err, WS_E_INTERNAL, "out of memory");
	char hex[WARD_SHA256_HEX_LEN + 1];
	ward_sha256_hex(buf, n, hex);
	json_t *o = json_pack("{s:s, s:I, s:s, s:o}", "path", path, "size",
			      (json_int_t)n, "sha256", hex, "base64",
			      view_json_base64(buf, n));
	json_t *t = json_stringn(buf, n);
	if (t)
		json_object_set_new(o, "text", t);
	free(buf);
	*res = o;
	return 0;
}

/* ------------------------------------------------------------------ */
/* files.list, files.stat                                              */

struct walk {
	json_t **e;
	size_t n, cap;
	bool truncated;
};

static void walk_add(struct walk *w, json_t *e)
{
	if (!e)
		return;
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 64;
		json_t **ne = realloc(w->e, cap * sizeof(*ne));
		if (!ne) {
			json_decref(e);
			w->truncated = true;
			return;
		}
		w->e = ne;
		w->cap = cap;
	}
	w->e[w->n++] = e;
}

/* The entries of the directory fd (taken), rel its path ("" for the
 * workdir), levels more below it. */
static void walk_dir(int fd, const char *rel, int levels, struct walk *w)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;

	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d))) {
		char path[PATH_MAX];
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (w->n >= WF_MAX_FILES) {
			w->truncated = true;
			break;
		}
		if (snprintf(path, sizeof(path), "%s%s%s", rel, *rel ? "/" : "",
			     de->d_name) >= (int)sizeof(path) ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		walk_add(w, entry_of(dirfd(d), de->d_name, path, &st));
		if (!S_ISDIR(st.st_mode) || levels <= 1)
			continue;
		int sub =
			openat(dirfd(d), de->d_name,
			       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0)
			walk_dir(sub, path, levels - 1, w);
	}
	closedir(d);
}

static int by_path(const void *a, const void *b)
{
	return strcmp(
		json_string_value(json_object_get(*(json_t *const *)a, "path")),
		json_string_value(
			json_object_get(*(json_t *const *)b, "path")));
}

static int m_list(struct ws_server *s, struct sess *x, json_t *p, json_t **res,
		  struct ws_error *err)
{
	const char *path = ".";
	json_t *dv = json_object_get(p, "depth");
	int depth = 1;

	(void)s;
	if (json_object_get(p, "path") &&
	    !json_is_null(json_object_get(p, "path")) &&
	    check_path(p, "path", &path, err) < 0)
		return -1;
	if (dv && !json_is_null(dv)) {
		if (!json_is_integer(dv) || json_integer_value(dv) < 1 ||
		    json_integer_value(dv) > LIST_MAX_DEPTH)
			return ws_fail(err, WS_E_PARAMS,
				       "params.depth: give a whole number from "
				       "1 to %d",
				       LIST_MAX_DEPTH);
		depth = (int)json_integer_value(dv);
	}
	int fd = wf_open_beneath(ws_wd(x), path,
				 O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
	if (fd < 0)
		return fd == -ENOTDIR ? ws_fail(err, WS_E_FILE,
						"%s: not a directory "
						"(files.stat describes one "
						"file)",
						path)
				      : file_fail(err, "list it", path, fd);
	struct walk w = { 0 };
	walk_dir(fd, strcmp(path, ".") ? path : "", depth, &w);
	if (w.n)
		qsort(w.e, w.n, sizeof(*w.e), by_path);
	json_t *arr = json_array();
	for (size_t i = 0; i < w.n; i++)
		json_array_append_new(arr, w.e[i]);
	free(w.e);
	*res = json_pack("{s:o}", "files", arr);
	if (*res && w.truncated)
		json_object_set_new(*res, "truncated", json_true());
	return 0;
}

static int m_stat(struct ws_server *s, struct sess *x, json_t *p, json_t **res,
		  struct ws_error *err)
{
	const char *path, *name;
	char buf[PATH_MAX];
	struct stat st;

	if (check_path(p, "path", &path, err) < 0)
		return -1;
	int dfd = open_parent(s, x, path, false, buf, &name);
	int rc = dfd < 0					    ? dfd
		 : fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno
								    : 0;
	if (rc == -ENOENT || rc == -ENOTDIR)
		ws_fail(err, WS_E_FILE,
			"%s: no such file in the session's "
			"workdir",
			path);
	else if (rc < 0)
		file_fail(err, "look at it", path, rc);
	else
		*res = entry_of(dfd, name, path, &st);
	if (dfd >= 0)
		close(dfd);
	return rc < 0 ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* files.mkdir, files.remove, files.rename                             */

static int m_mkdir(struct ws_server *s, struct sess *x, json_t *p, json_t **res,
		   struct ws_error *err)
{
	const char *path, *name;
	char buf[PATH_MAX];
	struct stat st;
	bool created = false;

	if (check_path(p, "path", &path, err) < 0)
		return -1;
	int dfd = open_parent(s, x, path, true, buf, &name);
	int rc = dfd < 0 ? dfd : mkdirat(dfd, name, 0755) < 0 ? -errno : 0;
	if (!rc) {
		created = true;
		if (s->drop)
			(void)fchownat(dfd, name, WS_SANDBOX_UID,
				       WS_SANDBOX_GID, AT_SYMLINK_NOFOLLOW);
	} else if (rc == -EEXIST) {
		rc = fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno
		     : S_ISDIR(st.st_mode)			      ? 0
								      : -EEXIST;
	}
	if (dfd >= 0)
		close(dfd);
	if (rc < 0)
		return rc == -EEXIST ? ws_fail(err, WS_E_FILE,
					       "%s: exists and is not a "
					       "directory",
					       path)
				     : file_fail(err, "make it", path, rc);
	*res = json_pack("{s:o, s:b}", "path", ws_json_text(path, strlen(path)),
			 "created", created);
	return 0;
}

/* Removes name in dfd: a file, or a directory and all it holds (its
 * entries by name, never through a symlink). 0 or -errno. */
static int rm_at(int dfd, const char *name, int level)
{
	if (!unlinkat(dfd, name, 0))
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	if (level > RM_MAX_DEPTH)
		return -ELOOP;
	int fd = openat(dfd, name,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	struct dirent *de;
	int rc = 0;
	if (!d) {
		close(fd);
		return -errno;
	}
	while (!rc && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			rc = rm_at(dirfd(d), de->d_name, level + 1);
	closedir(d);
	if (!rc && unlinkat(dfd, name, AT_REMOVEDIR) < 0)
		rc = -errno;
	return rc;
}

static bool is_root(const char *name)
{
	return !strcmp(name, ".");
}

static int m_remove(struct ws_server *s, struct sess *x, json_t *p,
		    json_t **res, struct ws_error *err)
{
	const char *path, *name;
	char buf[PATH_MAX];

	if (check_path(p, "path", &path, err) < 0)
		return -1;
	int dfd = open_parent(s, x, path, false, buf, &name);
	int rc = dfd < 0 ? dfd : is_root(name) ? -EBUSY : rm_at(dfd, name, 0);
	if (dfd >= 0)
		close(dfd);
	if (rc == -EBUSY)
		return ws_fail(err, WS_E_FILE,
			       "%s: the workdir itself cannot be removed "
			       "(close the session)",
			       path);
	if (rc < 0)
		return file_fail(err, "remove it", path, rc);
	*res = json_pack("{s:o, s:b}", "path", ws_json_text(path, strlen(path)),
			 "removed", 1);
	return 0;
}

static int m_rename(struct ws_server *s, struct sess *x, json_t *p,
		    json_t **res, struct ws_error *err)
{
	const char *from, *to, *n1, *n2;
	char b1[PATH_MAX], b2[PATH_MAX];

	if (check_path(p, "from", &from, err) < 0 ||
	    check_path(p, "to", &to, err) < 0)
		return -1;
	int d1 = open_parent(s, x, from, false, b1, &n1);
	int d2 = d1 < 0 ? -1 : open_parent(s, x, to, true, b2, &n2);
	int rc = d1 < 0				? d1
		 : d2 < 0			? d2
		 : is_root(n1) || is_root(n2)	? -EBUSY
		 : renameat(d1, n1, d2, n2) < 0 ? -errno
						: 0;
	if (d1 >= 0)
		close(d1);
	if (d2 >= 0)
		close(d2);
	if (rc == -EBUSY)
		return ws_fail(err, WS_E_FILE,
			       "the workdir itself cannot be renamed");
	if (rc < 0)
		return ws_fail(err, WS_E_FILE,
			       "%s -> %s: cannot rename it in the session's "
			       "workdir: %s%s",
			       from, to, strerror(-rc), why_of(rc));
	*res = json_pack("{s:o, s:o}", "from", ws_json_text(from, strlen(from)),
			 "to", ws_json_text(to, strlen(to)));
	return 0;
}

/* ------------------------------------------------------------------ */

typedef int (*files_fn)(struct ws_server *s, struct sess *x, json_t *p,
			json_t **res, struct ws_error *err);

static const struct {
	const char *method;
	files_fn fn;
	const char *keys[4]; /* besides session_id */
} files_methods[] = {
	{ "files.write", m_write, { "path", "text", "base64", NULL } },
	{ "files.read", m_read, { "path", NULL } },
	{ "files.list", m_list, { "path", "depth", NULL } },
	{ "files.stat", m_stat, { "path", NULL } },
	{ "files.mkdir", m_mkdir, { "path", NULL } },
	{ "files.remove", m_remove, { "path", NULL } },
	{ "files.rename", m_rename, { "from", "to", NULL } },
};

int ws_files_call(struct ws_server *s, const char *method, json_t *p,
		  json_t **res, struct ws_error *err)
{
	for (size_t i = 0; i < sizeof(files_methods) / sizeof(*files_methods);
	     i++) {
		const char *const *k = files_methods[i].keys;
		struct sess *x;

		if (strcmp(method, files_methods[i].method))
			continue;
		if (ws_only_keys(p, err, "session_id", k[0], k[1], k[2], NULL) <
			    0 ||
		    !(x = ws_find_sess(s, p, true, err)))
			return -1;
		int rc = files_methods[i].fn(s, x, p, res, err);
		ws_sess_put(s, x);
		return rc;
	}
	return 1;
}
