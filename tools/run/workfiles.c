/*
 * workfiles.c - snapshots of a workdir and hashes of its files
 * (workfiles.h).
 */
#include "tools/run/workfiles.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int wf_open_beneath(const char *dir, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (unsigned long long)(flags | O_CLOEXEC),
		.mode = mode,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return -errno;
	int fd = (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));
	int e = errno;
	close(dfd);
	return fd < 0 ? -e : fd;
}

int wf_hash_fd(int fd, char hex[WARD_SHA256_HEX_LEN + 1], long long *size)
{
	struct ward_sha256 c;
	char buf[65536];
	ssize_t n;

	*size = 0;
	ward_sha256_init(&c);
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		ward_sha256_update(&c, buf, (size_t)n);
		*size += n;
	}
	ward_sha256_final_hex(&c, hex);
	return 0;
}

int wf_hash_file(const char *dir, const char *path,
		 char hex[WARD_SHA256_HEX_LEN + 1], long long *size)
{
	int fd = wf_open_beneath(dir, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK,
				 0);
	struct stat st;
	int r;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (!S_ISREG(st.st_mode))
		r = -EINVAL;
	else
		r = wf_hash_fd(fd, hex, size);
	close(fd);
	return r;
}

/* nftw's callback has no argument: the snapshot being taken, per thread
 * (the session server takes them on several threads at once) */
static _Thread_local struct wf_snap *snap_cur;
static _Thread_local size_t snap_root;

static int snap_one(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	const char *rel = path + snap_root;
	struct wf_snap *s = snap_cur;

	if (ftw->level == 1 &&
	    (rel[0] == '.' || (!strcmp(rel, "tmp") && flag == FTW_D)))
		return FTW_SKIP_SUBTREE;
	if (flag != FTW_F || !S_ISREG(st->st_mode))
		return FTW_CONTINUE;
	if (s->n >= WF_MAX_FILES)
		return FTW_STOP;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct wf_file *nf = realloc(s->f, cap * sizeof(*nf));
		if (!nf)
			return FTW_STOP;
		s->f = nf;
		s->cap = cap;
	}
	s->f[s->n++] = (struct wf_file){
		.path = strdup(rel),
		.size = st->st_size,
		.mtime_ns = (long long)st->st_mtim.tv_sec * 1000000000LL +
			    st->st_mtim.tv_nsec,
		.ino = (long long)st->st_ino,
	};
	return FTW_CONTINUE;
}

void wf_snap_free(struct wf_snap *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->f[i].path);
	free(s->f);
	memset(s, 0, sizeof(*s));
}

void wf_snap_take(const char *dir, struct wf_snap *s)
{
	memset(s, 0, sizeof(*s));
	snap_cur = s;
	snap_root = strlen(dir) + 1;
	nftw(dir, snap_one, 16, FTW_PHYS | FTW_ACTIONRETVAL);
	snap_cur = NULL;
}

const struct wf_file *wf_snap_find(const struct wf_snap *s, const char *p)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->f[i].path && !strcmp(s->f[i].path, p))
			return &s->f[i];
	return NULL;
}

bool wf_changed(const struct wf_snap *before, const struct wf_file *a)
{
	const struct wf_file *b = a->path ? wf_snap_find(before, a->path)
					  : NULL;

	return a->path && !(b && b->size == a->size &&
			    b->mtime_ns == a->mtime_ns && b->ino == a->ino);
}

int wf_each_changed(const char *dir, const struct wf_snap *before,
		    int (*fn)(const char *path, long long size,
			      const char *sha256, void *arg),
		    void *arg)
{
	struct wf_snap after;
	char hex[WARD_SHA256_HEX_LEN + 1];
	long long size;
	int r = 0;

	wf_snap_take(dir, &after);
	for (size_t i = 0; i < after.n && !r; i++) {
		const struct wf_file *a = &after.f[i];

		if (wf_changed(before, a) &&
		    !wf_hash_file(dir, a->path, hex, &size))
			r = fn(a->path, size, hex, arg);
	}
	wf_snap_free(&after);
	return r;
}

int wf_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}
