/*
 * workfiles.h - the files a run leaves in its workdir (tools/ only): a
 * snapshot of the regular files by size, mtime and inode, which of them a
 * run created or changed, and their SHA-256. Shared by the session server
 * (artifacts after each cell) and `ward run` (artifacts of the run, cell
 * 0, before its temporary workdir is removed).
 *
 * The files were written by untrusted code: the walk never follows
 * symlinks (nftw FTW_PHYS), and a file is opened for hashing beneath the
 * workdir only (openat2 RESOLVE_BENEATH, O_NOFOLLOW, O_NONBLOCK so that a
 * FIFO cannot block), then hashed only if it is a regular file.
 */
#ifndef WARD_TOOLS_WORKFILES_H
#define WARD_TOOLS_WORKFILES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/sha256.h"

/* Writes all len bytes to fd (retrying short writes). 0, or -1 with
 * errno set. */
int wf_write_all(int fd, const void *data, size_t len);

#define WF_MAX_FILES 10000 /* files looked at in one snapshot */

struct wf_file {
	char *path; /* relative to the workdir; NULL if it could not be kept */
	long long size, mtime_ns, ino;
};

struct wf_snap {
	struct wf_file *f;
	size_t n, cap;
};

/*
 * The regular files under dir, except tmp/ (the code's TMPDIR) and
 * top-level dot entries (caches of matplotlib and friends under HOME), at
 * most WF_MAX_FILES. *s is overwritten; free it with wf_snap_free. Any
 * thread (nftw's callback finds its snapshot in a thread-local).
 */
void wf_snap_take(const char *dir, struct wf_snap *s);
void wf_snap_free(struct wf_snap *s);
/* The file at relative path p in s, or NULL. */
const struct wf_file *wf_snap_find(const struct wf_snap *s, const char *p);
/* Whether a (from a later snapshot) is new or changed since before (size,
 * mtime or inode differ). */
bool wf_changed(const struct wf_snap *before, const struct wf_file *a);

/* openat2(dir, path, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) with
 * O_CLOEXEC added. Returns the fd or -errno. */
int wf_open_beneath(const char *dir, const char *path, int flags, mode_t mode);
/* SHA-256 (hex) and size of what is left to read on fd. 0 or -errno. */
int wf_hash_fd(int fd, char hex[WARD_SHA256_HEX_LEN + 1], long long *size);
/* The same for the regular file at path beneath dir (not a symlink, FIFO
 * or device: -EINVAL). 0 or -errno. */
int wf_hash_file(const char *dir, const char *path,
		 char hex[WARD_SHA256_HEX_LEN + 1], long long *size);

/*
 * Takes a new snapshot of dir and calls fn once per regular file that is
 * new or changed since before, with its relative path, size and SHA-256
 * (hex); files that cannot be hashed (gone, replaced by a FIFO) are left
 * out. fn returns 0 to go on; anything else stops and is returned.
 */
int wf_each_changed(const char *dir, const struct wf_snap *before,
		    int (*fn)(const char *path, long long size,
			      const char *sha256, void *arg),
		    void *arg);

#endif
