/*
 * decode-file.c - decoders for syscalls that name files. Each fills the
 * event's access bits, raw and resolved paths and args; none judges.
 */
#include "tracer-int.h"
#include "args.h"
#include "decode.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#define XLAT(f)                                                                \
	{                                                                      \
		(unsigned long)(f), #f                                         \
	}
struct xlat {
	unsigned long val;
	const char *name;
};

static const struct xlat open_flags[] = {
	XLAT(O_CREAT),	   XLAT(O_EXCL),     XLAT(O_NOCTTY),
	XLAT(O_TRUNC),	   XLAT(O_APPEND),   XLAT(O_NONBLOCK),
	XLAT(O_DSYNC),	   XLAT(O_DIRECT),   XLAT(O_LARGEFILE),
	XLAT(O_DIRECTORY), XLAT(O_NOFOLLOW), XLAT(O_NOATIME),
	XLAT(O_CLOEXEC),   XLAT(O_SYNC),     XLAT(O_PATH),
	XLAT(__O_TMPFILE), XLAT(FASYNC),
};

static void flags_str(unsigned long flags, char *buf, size_t n)
{
	static const char *const acc[] = { "O_RDONLY", "O_WRONLY", "O_RDWR",
					   "O_ACCMODE" };
	size_t used = (size_t)snprintf(buf, n, "%s", acc[flags & O_ACCMODE]);

	flags &= ~(unsigned long)O_ACCMODE;
	for (size_t i = 0; i < sizeof(open_flags) / sizeof(open_flags[0]);
	     i++) {
		if ((flags & open_flags[i].val) != open_flags[i].val)
			continue;
		flags &= ~open_flags[i].val;
		if (used < n)
			used += (size_t)snprintf(buf + used, n - used, "|%s",
						 open_flags[i].name);
	}
	if (flags && used < n)
		snprintf(buf + used, n - used, "|%#lx", flags);
}

/* Reads path argument argi, resolves it against dirfd into ev->raw/path
 * and keeps the bytes read as the copy the kernel will get. */
int decode_path(struct tracer *t, struct tracee *tc, int dirfd,
		const struct ptrace_syscall_info *si, int argi, bool follow,
		bool second, struct ward_event *ev)
{
	char *raw = second ? ev->raw2 : ev->raw;
	char *path = second ? ev->path2 : ev->path;
	bool exists = false;
	int rc;

	if (argi == PATH_NONE) {
		raw[0] = '\0'; /* a NULL path: the fd itself */
	} else if (argi & PATH_EMPTY) {
		/* AT_EMPTY_PATH with "": the fd itself. The "" is copied
		 * too: a name written there later must not be used. */
		raw[0] = '\0';
		rc = copy_arg(&t->cp, argi & ~PATH_EMPTY, "", 1);
		if (rc < 0)
			return rc;
	} else {
		rc = umem_read_str(tc->tid, si->seccomp.args[argi], raw,
				   WARD_PATH_MAX);
		if (rc < 0)
			return rc;
		if (!raw[0])
			return -ENOENT; /* the kernel's answer for "" */
		rc = copy_arg_src(&t->cp, argi, raw, strlen(raw) + 1);
		if (rc < 0)
			return rc;
	}
	rc = tracer_resolve(tc->tid, tc->tgid, dirfd, raw, follow, path,
			    WARD_PATH_MAX, &exists);
	if (rc < 0)
		return rc;
	if (second) {
		ev->has_path2 = true;
		ev->exists2 = exists;
	} else {
		ev->exists = exists;
	}
	if (dirfd != RESOLVE_CWD && raw[0] != '/')
		args_int(ev, second ? "dirfd2" : "dirfd", dirfd);
	args_str(ev, second ? "path2" : "path", raw);
	return 0;
}

static int as_dirfd(uint64_t v)
{
	int fd = (int)(uint32_t)v; /* the kernel reads an int */

	return fd == AT_FDCWD ? RESOLVE_CWD : fd;
}

static unsigned open_access(unsigned long flags, bool exists)
{
	unsigned a = 0;

	if ((flags & O_PATH) == O_PATH)
		return WARD_FS_STAT;
	if ((flags & __O_TMPFILE) == __O_TMPFILE)
		return WARD_FS_CREATE | WARD_FS_WRITE;
	switch (flags & O_ACCMODE) {
	case O_RDONLY: a = WARD_FS_READ; break;
	case O_WRONLY: a = WARD_FS_WRITE; break;
	default: a = WARD_FS_READ | WARD_FS_WRITE; break;
	}
	if (flags & O_TRUNC)
		a |= WARD_FS_WRITE;
	if ((flags & O_CREAT) && !exists)
		a |= WARD_FS_CREATE;
	return a;
}

static int open_common(struct tracer *t, struct tracee *tc,
		       struct ward_event *ev, int dirfd,
		       const struct ptrace_syscall_info *si, int pathi,
		       unsigned long flags, unsigned long mode)
{
	char fs[256];
	/* O_CREAT|O_EXCL never follows a final symlink. */
	bool follow = !(flags & O_NOFOLLOW) &&
		      !((flags & O_CREAT) && (flags & O_EXCL));
	int rc;

	ev->cls = WARD_CLASS_FS;
	rc = decode_path(t, tc, dirfd, si, pathi, follow, false, ev);
	if (rc < 0)
		return rc;
	ev->access = open_access(flags, ev->exists);
	flags_str(flags, fs, sizeof(fs));
	args_str(ev, "flags", fs);
	if (flags & (O_CREAT | __O_TMPFILE))
		args_fmt(ev, "mode", "%#lo", mode & 07777);
	return 0;
}

int dec_open(struct tracer *t, struct tracee *tc,
	     const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return open_common(t, tc, ev, RESOLVE_CWD, si, 0, si->seccomp.args[1],
			   si->seccomp.args[2]);
}

int dec_creat(struct tracer *t, struct tracee *tc,
	      const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return open_common(t, tc, ev, RESOLVE_CWD, si, 0,
			   O_CREAT | O_WRONLY | O_TRUNC, si->seccomp.args[1]);
}

int dec_openat(struct tracer *t, struct tracee *tc,
	       const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return open_common(t, tc, ev, as_dirfd(si->seccomp.args[0]), si, 1,
			   si->seccomp.args[2], si->seccomp.args[3]);
}

int dec_openat2(struct tracer *t, struct tracee *tc,
		const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	struct open_how how;
	size_t size = si->seccomp.args[3];
	int rc;

	if (size < 24 /* OPEN_HOW_SIZE_VER0 */)
		return -EINVAL;
	if (size > 4096)
		return -E2BIG; /* the kernel's limit (a page) */
	memset(&how, 0, sizeof(how));
	rc = umem_read(tc->tid, si->seccomp.args[2], &how,
		       size < sizeof(how) ? size : sizeof(how));
	if (rc < 0)
		return rc;
	if (size > sizeof(how)) {
		/* A larger struct from newer headers: the kernel accepts it
		 * when the part it does not know is zero. ward passes on only
		 * the part it checked. */
		unsigned char rest[4096];
		size_t n = size - sizeof(how);
		rc = umem_read(tc->tid, si->seccomp.args[2] + sizeof(how), rest,
			       n);
		if (rc < 0)
			return rc;
		for (size_t i = 0; i < n; i++)
			if (rest[i])
				return -E2BIG;
	}
	rc = copy_arg(&t->cp, 2, &how, sizeof(how));
	if (rc < 0)
		return rc;
	copy_arg_val(&t->cp, 3, sizeof(how));
	rc = open_common(t, tc, ev, as_dirfd(si->seccomp.args[0]), si, 1,
			 how.flags, how.mode);
	if (rc == 0 && how.resolve)
		args_fmt(ev, "resolve", "%#llx",
			 (unsigned long long)how.resolve);
	return rc;
}

/* One path, fixed access: the shape of most file syscalls. */
static int one_path(struct tracer *t, struct tracee *tc, struct ward_event *ev,
		    int dirfd, const struct ptrace_syscall_info *si, int pathi,
		    bool follow, unsigned access)
{
	int rc;

	ev->cls = WARD_CLASS_FS;
	rc = decode_path(t, tc, dirfd, si, pathi, follow, false, ev);
	if (rc == 0)
		ev->access = access;
	return rc;
}

#define A(i) (si->seccomp.args[i])

int dec_stat(struct tracer *t, struct tracee *tc,
	     const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return one_path(t, tc, ev, RESOLVE_CWD, si, 0, true, WARD_FS_STAT);
}

int dec_lstat(struct tracer *t, struct tracee *tc,
	      const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return one_path(t, tc, ev, RESOLVE_CWD, si, 0, false, WARD_FS_STAT);
}

/* newfstatat(dirfd, path, buf, flags), statx(dirfd, path, flags, ...) */
static int at_stat(struct tracer *t, struct tracee *tc, struct ward_event *ev,
		   const struct ptrace_syscall_info *si, int pathi,
		   uint64_t flags)
{
	int fd = as_dirfd(A(0));
	bool follow = !(flags & AT_SYMLINK_NOFOLLOW);

	if ((flags & AT_EMPTY_PATH) && A(pathi)) {
		char c = 0;
		if (umem_read(tc->tid, A(pathi), &c, 1) == 0 && c == '\0') {
			ev->cls = WARD_CLASS_FS;
			ev->access = WARD_FS_STAT;
			return decode_path(t, tc, fd, si, pathi | PATH_EMPTY,
					   true, false, ev);
		}
	}
	return one_path(t, tc, ev, fd, si, pathi, follow, WARD_FS_STAT);
}

int dec_newfstatat(struct tracer *t, struct tracee *tc,
		   const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return at_stat(t, tc, ev, si, 1, A(3));
}

int dec_statx(struct tracer *t, struct tracee *tc,
	      const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return at_stat(t, tc, ev, si, 1, A(2));
}

int dec_faccessat(struct tracer *t, struct tracee *tc,
		  const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return one_path(t, tc, ev, as_dirfd(A(0)), si, 1, true, WARD_FS_STAT);
}

int dec_faccessat2(struct tracer *t, struct tracee *tc,
		   const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return at_stat(t, tc, ev, si, 1, A(3));
}

int dec_readlinkat(struct tracer *t, struct tracee *tc,
		   const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return one_path(t, tc, ev, as_dirfd(A(0)), si, 1, false, WARD_FS_STAT);
}

int dec_chdir(struct tracer *t, struct tracee *tc,
	      const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return one_path(t, tc, ev, RESOLVE_CWD, si, 0, true, WARD_FS_STAT);
}

int dec_unlink(struct tracer *t, struct tracee *tc,
	       const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return one_path(t, tc, ev, RESOLVE_CWD, si, 0, false, WARD_FS_DELETE);
}

int dec_unlinkat(struct tracer *t, struct tracee *tc,
		 const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	int rc = one_path(t, tc, ev, as_dirfd(A(0)), si, 1, false,
			  WARD_FS_DELETE);

	if (rc == 0 && (A(2) & AT_REMOVEDIR))
		args_str(ev, "flags", "AT_REMOVEDIR");
	return rc;
}

int dec_mkdir(struct tracer *t, struct tracee *tc,
	      const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	int rc = one_path(t, tc, ev, RESOLVE_CWD, si, 0, false, WARD_FS_CREATE);

	if (rc == 0)
		args_fmt(ev, "mode", "%#llo",
			 (unsigned long long)(A(1) & 07777));
	return rc;
}

int dec_mkdirat(struct tracer *t, struct tracee *tc,
		const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	int rc = one_path(t, tc, ev, as_dirfd(A(0)), si, 1, false,
			  WARD_FS_CREATE);

	if (rc == 0)
		args_fmt(ev, "mode", "%#llo",
			 (unsigned long long)(A(2) & 07777));
	return rc;
}

/* The mode of mknod and mknodat as the kernel reads it (umode_t: 16 bits),
 * decoded: "mode" (octal, file type included), "type" (S_IFCHR, ...) and,
 * for a device node, "dev" (major:minor, as the kernel reads the 32-bit
 * dev; char 0:0 is an overlayfs whiteout). The policy judges the type
 * (ward's floor: no device nodes). */
static void mknod_args(struct ward_event *ev, unsigned long long mode,
		       unsigned long long dev)
{
	static const struct xlat types[] = {
		XLAT(S_IFREG),	XLAT(S_IFCHR), XLAT(S_IFBLK), XLAT(S_IFIFO),
		XLAT(S_IFSOCK), XLAT(S_IFDIR), XLAT(S_IFLNK),
	};
	unsigned m = (unsigned)(mode & 0xffff);
	unsigned d = (unsigned)dev;

	args_fmt(ev, "mode", "%#o", m);
	if (!(m & S_IFMT))
		args_str(ev, "type", "S_IFREG"); /* the kernel's default */
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if ((m & S_IFMT) == types[i].val)
			args_str(ev, "type", types[i].name);
	if (S_ISCHR(m) || S_ISBLK(m))
		args_fmt(ev, "dev", "%u:%u", major((dev_t)d), minor((dev_t)d));
}

int dec_mknod(struct tracer *t, struct tracee *tc,
	      const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	int rc = one_path(t, tc, ev, RESOLVE_CWD, si, 0, false, WARD_FS_CREATE);

	ev->mknod_mode = (unsigned)(A(1) & 0xffff);
	if (rc == 0)
		mknod_args(ev, A(1), A(2));
	return rc;
}

int dec_mknodat(struct tracer *t, struct tracee *tc,
		const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	int rc = one_path(t, tc, ev, as_dirfd(A(0)), si, 1, false,
			  WARD_FS_CREATE);

	ev->mknod_mode = (unsigned)(A(2) & 0xffff);
	if (rc == 0)
		mknod_args(ev, A(2), A(3));
	return rc;
}

/* Writes to metadata or content through a name: chmod, chown, truncate,
 * utime families, xattr setters. */
int dec_write_path(struct tracer *t, struct tracee *tc,
		   const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return one_path(t, tc, ev, RESOLVE_CWD, si, 0, true, WARD_FS_WRITE);
}

int dec_write_lpath(struct tracer *t, struct tracee *tc,
		    const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return one_path(t, tc, ev, RESOLVE_CWD, si, 0, false, WARD_FS_WRITE);
}

/* fchmodat(dirfd, path, mode[, flags]), fchownat(dirfd, path, u, g, flags),
 * utimensat(dirfd, path, times, flags), futimesat(dirfd, path, times) */
static int write_at(struct tracer *t, struct tracee *tc, struct ward_event *ev,
		    const struct ptrace_syscall_info *si, uint64_t flags)
{
	int fd = as_dirfd(A(0));

	if (A(1) == 0 || (flags & AT_EMPTY_PATH)) {
		char c = 1;
		if (A(1) == 0) {
			/* utimensat(fd, NULL, ...): the fd itself; a NULL
			 * in a register cannot change */
			ev->cls = WARD_CLASS_FS;
			ev->access = WARD_FS_WRITE;
			return decode_path(t, tc, fd, si, PATH_NONE, true,
					   false, ev);
		}
		if (umem_read(tc->tid, A(1), &c, 1) == 0 && c == '\0') {
			ev->cls = WARD_CLASS_FS;
			ev->access = WARD_FS_WRITE;
			return decode_path(t, tc, fd, si, 1 | PATH_EMPTY, true,
					   false, ev);
		}
	}
	return one_path(t, tc, ev, fd, si, 1, !(flags & AT_SYMLINK_NOFOLLOW),
			WARD_FS_WRITE);
}

int dec_fchmodat(struct tracer *t, struct tracee *tc,
		 const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	int rc = write_at(t, tc, ev, si, 0);

	if (rc == 0)
		args_fmt(ev, "mode", "%#llo",
			 (unsigned long long)(A(2) & 07777));
	return rc;
}

int dec_fchmodat2(struct tracer *t, struct tracee *tc,
		  const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	int rc = write_at(t, tc, ev, si, A(3));

	if (rc == 0)
		args_fmt(ev, "mode", "%#llo",
			 (unsigned long long)(A(2) & 07777));
	return rc;
}

int dec_fchownat(struct tracer *t, struct tracee *tc,
		 const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return write_at(t, tc, ev, si, A(4));
}

int dec_utimensat(struct tracer *t, struct tracee *tc,
		  const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return write_at(t, tc, ev, si, A(3));
}

int dec_futimesat(struct tracer *t, struct tracee *tc,
		  const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return write_at(t, tc, ev, si, 0);
}

/* A watch reports the names and the timing of accesses in the directory:
 * it needs read, like listing it. */
int dec_inotify_add_watch(struct tracer *t, struct tracee *tc,
			  const struct ptrace_syscall_info *si,
			  struct ward_event *ev)
{
	return one_path(t, tc, ev, RESOLVE_CWD, si, 1, true, WARD_FS_READ);
}

/* Two names: old loses a name (or gains one for link), new gains one. */
static int two_paths(struct tracer *t, struct tracee *tc, struct ward_event *ev,
		     const struct ptrace_syscall_info *si, int od, int op,
		     bool ofollow, unsigned oacc, int nd, int np, unsigned nacc)
{
	int rc;

	ev->cls = WARD_CLASS_FS;
	rc = decode_path(t, tc, od, si, op, ofollow, false, ev);
	if (rc < 0)
		return rc;
	ev->access = oacc;
	rc = decode_path(t, tc, nd, si, np, false, true, ev);
	if (rc < 0)
		return rc;
	ev->access2 = nacc;
	return 0;
}

/* Renaming over an existing file also deletes it. */
static int rename_common(struct tracer *t, struct tracee *tc,
			 struct ward_event *ev,
			 const struct ptrace_syscall_info *si, int od, int op,
			 int nd, int np, unsigned long flags)
{
	int rc = two_paths(t, tc, ev, si, od, op, false, WARD_FS_DELETE, nd, np,
			   WARD_FS_CREATE);
	if (rc < 0)
		return rc;
	if (ev->exists2) /* the new name replaces a file */
		ev->access2 |= WARD_FS_DELETE;
	if (flags & 2 /* RENAME_EXCHANGE */)
		ev->access |= WARD_FS_CREATE;
	if (flags)
		args_fmt(ev, "flags", "%#lx", flags);
	return 0;
}

int dec_rename(struct tracer *t, struct tracee *tc,
	       const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return rename_common(t, tc, ev, si, RESOLVE_CWD, 0, RESOLVE_CWD, 1, 0);
}

int dec_renameat(struct tracer *t, struct tracee *tc,
		 const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return rename_common(t, tc, ev, si, as_dirfd(A(0)), 1, as_dirfd(A(2)),
			     3, 0);
}

int dec_renameat2(struct tracer *t, struct tracee *tc,
		  const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return rename_common(t, tc, ev, si, as_dirfd(A(0)), 1, as_dirfd(A(2)),
			     3, A(4));
}

/* A hard link gives the file a name where the policy may allow more than
 * it allows on the file: linking needs read and write on the file. */
int dec_link(struct tracer *t, struct tracee *tc,
	     const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return two_paths(t, tc, ev, si, RESOLVE_CWD, 0, false,
			 WARD_FS_READ | WARD_FS_WRITE, RESOLVE_CWD, 1,
			 WARD_FS_CREATE);
}

int dec_linkat(struct tracer *t, struct tracee *tc,
	       const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	int rc;

	if (A(4) & AT_EMPTY_PATH) {
		/* linkat(fd, "", ...): gives a name to an open file, e.g. an
		 * O_TMPFILE one; the file needs read and write like any */
		char c = 1;
		if (umem_read(tc->tid, A(1), &c, 1) == 0 && c == '\0') {
			rc = two_paths(t, tc, ev, si, as_dirfd(A(0)),
				       1 | PATH_EMPTY, true,
				       WARD_FS_READ | WARD_FS_WRITE,
				       as_dirfd(A(2)), 3, WARD_FS_CREATE);
			goto flags;
		}
	}
	rc = two_paths(t, tc, ev, si, as_dirfd(A(0)), 1,
		       (A(4) & AT_SYMLINK_FOLLOW) != 0,
		       WARD_FS_READ | WARD_FS_WRITE, as_dirfd(A(2)), 3,
		       WARD_FS_CREATE);
flags:

	if (rc == 0 && A(4))
		args_fmt(ev, "flags", "%#llx", (unsigned long long)A(4));
	return rc;
}

/* symlink(target, linkpath): the target text is not accessed now, but
 * the link made is the one recorded. */
static int symlink_common(struct tracer *t, struct tracee *tc,
			  struct ward_event *ev,
			  const struct ptrace_syscall_info *si, int targeti,
			  int nd, int linki)
{
	int rc = umem_read_str(tc->tid, A(targeti), ev->raw2, WARD_PATH_MAX);

	if (rc < 0)
		return rc;
	rc = copy_arg_src(&t->cp, targeti, ev->raw2, strlen(ev->raw2) + 1);
	if (rc < 0)
		return rc;
	args_str(ev, "target", ev->raw2);
	return one_path(t, tc, ev, nd, si, linki, false, WARD_FS_CREATE);
}

int dec_symlink(struct tracer *t, struct tracee *tc,
		const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return symlink_common(t, tc, ev, si, 0, RESOLVE_CWD, 1);
}

int dec_symlinkat(struct tracer *t, struct tracee *tc,
		  const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return symlink_common(t, tc, ev, si, 0, as_dirfd(A(1)), 2);
}
