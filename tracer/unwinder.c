/*
 * unwinder.c - ward's side of the unwinder helper (unwinder.h).
 *
 * The rule: nothing the code can write, name or replace is opened or
 * parsed by ward, and nothing ward does here waits on anything the code
 * controls. So:
 *   - the helper (uwhelper.c) parses; ward only reads the kernel's text
 *     (/proc/TID/maps), registers and bounded copies of memory;
 *   - every wait on the helper (its start, every send and receive) is a
 *     poll bounded by one budget per request, UW_BUDGET_MS: a helper that
 *     is late, dies or says anything malformed is killed through its pidfd
 *     and the request ends with a note of why; after UW_MAX_FAILURES in a
 *     run the helper is not asked again in that run;
 *   - the files the helper asks for are opened by ward without following
 *     the code's names where it can (/proc/TGID/map_files/START-END, root
 *     only; else the maps path inside the run's root, no symlinks, no
 *     magic links) and always with O_PATH first, which runs no device's
 *     open and waits on no FIFO; only a regular file that is the one the
 *     maps line names (device, inode) and under UW_FILE_MAX is reopened,
 *     O_NONBLOCK (a lease the code holds then fails the open at once
 *     instead of making it wait).
 * The helper is started at the first request (most runs take none) and
 * killed at the run's end. Everything here runs on the tracer's main
 * thread.
 */
#include "tracer-int.h"
#include "unwinder.h"
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* PIDFD_GET_INFO (Linux 6.13; the exit status from 6.15): how a helper
 * that is no child of ward's ended. Declared here for older headers. */
struct uw_pidfd_info {
	uint64_t mask, cgroupid;
	uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid,
		fsgid;
	int32_t exit_code;
	uint32_t coredump_mask, spare;
};
#define UW_PIDFD_GET_INFO  _IOWR(0xFF, 11, struct uw_pidfd_info)
#define UW_PIDFD_INFO_EXIT (1ull << 3)

static struct {
	int sock;  /* ward's end, non-blocking; -1: no helper */
	int pidfd; /* the helper's */
	uint32_t seq;
	unsigned long served; /* requests this helper took */
	int failures;	      /* this run's */
	bool off;	      /* failed UW_MAX_FAILURES times this run */
	bool no_unwind;	      /* it has no libunwind (for good) */
	bool warned_unwind, warned_start;
	bool no_map_files;	   /* /proc/PID/map_files refused us */
	int dying;		   /* the signal the helper said it dies of */
	unsigned long run_unwinds; /* unwinding requests this run */
	int host_root;		   /* "/" when the run has no root of its own */
} H = { .sock = -1, .pidfd = -1, .host_root = -1 };

static long long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

long long uw_deadline(void)
{
	return mono_ns() + UW_BUDGET_MS * 1000000LL;
}

/* ------------------------------------------------------------------ */
/* /proc/TID/maps                                                      */

static bool hex_at(char **p, uint64_t *v)
{
	char *s = *p;
	uint64_t x = 0;
	int n = 0;

	for (;; s++, n++) {
		int d;
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else
			break;
		if (n == 16)
			return false;
		x = x << 4 | (uint64_t)d;
	}
	*p = s;
	*v = x;
	return n > 0;
}

static bool dec_at(char **p, uint64_t *v)
{
	char *s = *p;
	uint64_t x = 0;

	if (*s < '0' || *s > '9')
		return false;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (x > (UINT64_MAX - 9) / 10)
			return false;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	*p = s;
	*v = x;
	return true;
}

static bool lit(char **p, char c)
{
	if (**p != c)
		return false;
	(*p)++;
	return true;
}

/* One line "start-end perms offset major:minor inode   path", NUL
 * terminated (the path runs to its end). */
static bool parse_line(char *s, struct uw_map *m, const char **path)
{
	uint64_t maj, min;

	memset(m, 0, sizeof(*m));
	if (!hex_at(&s, &m->start) || !lit(&s, '-') || !hex_at(&s, &m->end) ||
	    !lit(&s, ' ') || strlen(s) < 5 || m->end <= m->start)
		return false;
	m->prot = (s[0] == 'r' ? UW_R : 0) | (s[1] == 'w' ? UW_W : 0) |
		  (s[2] == 'x' ? UW_X : 0) | (s[3] == 's' ? UW_SHARED : 0);
	s += 4;
	if (!lit(&s, ' ') || !hex_at(&s, &m->off) || !lit(&s, ' ') ||
	    !hex_at(&s, &maj) || !lit(&s, ':') || !hex_at(&s, &min) ||
	    !lit(&s, ' ') || !dec_at(&s, &m->ino) || maj > UINT32_MAX ||
	    min > UINT32_MAX)
		return false;
	m->major = (uint32_t)maj;
	m->minor = (uint32_t)min;
	while (*s == ' ')
		s++;
	*path = *s ? s : NULL;
	return true;
}

void uw_maps_free(struct uw_maps *mm)
{
	free(mm->m);
	free(mm->path);
	free(mm->text);
	memset(mm, 0, sizeof(*mm));
}

/* A set of files (device, inode) by open addressing: cap a power of 2. */
struct fileset {
	size_t cap;
	struct {
		uint64_t ino;
		uint32_t major, minor;
		bool used;
	} * e;
};

static size_t fs_slot(const struct fileset *s, const struct uw_map *m)
{
	uint64_t h = (m->ino * 0x9e3779b97f4a7c15ull) ^
		     ((uint64_t)m->major << 32 | m->minor);
	size_t i = (size_t)(h ^ h >> 29) & (s->cap - 1);

	while (s->e[i].used &&
	       (s->e[i].ino != m->ino || s->e[i].major != m->major ||
		s->e[i].minor != m->minor))
		i = (i + 1) & (s->cap - 1);
	return i;
}

/*
 * More than UW_MAX_MAPS mappings (the code can make 65,530): the helper
 * needs the executable mappings, the other mappings of their files (their
 * .eh_frame_hdr may lie there) and the stack (the one holding keep); they
 * are kept first, in that order, the rest as room is left, each class by
 * address. Anything left out is said (mm->cut).
 */
static void keep_some(struct uw_maps *mm, uint64_t keep)
{
	struct fileset set = { .cap = 2 };
	uint8_t *cls;
	size_t room = UW_MAX_MAPS, k = 0;

	if (mm->n <= UW_MAX_MAPS)
		return;
	mm->cut = true;
	while (set.cap < 2 * mm->n)
		set.cap *= 2;
	set.e = calloc(set.cap, sizeof(*set.e));
	cls = calloc(mm->n, 1);
	if (!set.e || !cls) { /* the first ones, then */
		mm->n = UW_MAX_MAPS;
		goto out;
	}
	for (size_t i = 0; i < mm->n; i++) {
		const struct uw_map *m = &mm->m[i];
		if ((m->prot & UW_X) || (keep >= m->start && keep < m->end)) {
			cls[i] = 0;
			if (m->ino) {
				size_t j = fs_slot(&set, m);
				set.e[j].used = true;
				set.e[j].ino = m->ino;
				set.e[j].major = m->major;
				set.e[j].minor = m->minor;
			}
		} else {
			cls[i] = 2;
		}
	}
	for (size_t i = 0; i < mm->n; i++)
		if (cls[i] == 2 && mm->m[i].ino &&
		    set.e[fs_slot(&set, &mm->m[i])].used)
			cls[i] = 1;
	/* how many of each class fit, in class order: mark the kept 255 */
	for (uint8_t c = 0; c < 3; c++)
		for (size_t i = 0; i < mm->n && room; i++)
			if (cls[i] == c) {
				cls[i] = 255;
				room--;
			}
	for (size_t i = 0; i < mm->n; i++)
		if (cls[i] == 255) {
			mm->m[k] = mm->m[i];
			mm->path[k] = mm->path[i];
			k++;
		}
	mm->n = k;
out:
	free(set.e);
	free(cls);
}

int uw_maps_read(pid_t tid, uint64_t keep, struct uw_maps *mm)
{
	char where[64];
	size_t len = 0, cap = 64 * 1024, lines = 0;
	int fd, r = 0;

	memset(mm, 0, sizeof(*mm));
	snprintf(where, sizeof(where), "/proc/%d/maps", (int)tid);
	fd = open(where, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	for (;;) {
		/* text holds cap + 1 bytes (the NUL) */
		if (!mm->text || len == cap) {
			if (mm->text && cap >= UW_MAPS_TEXT) {
				mm->cut = true;
				break;
			}
			if (mm->text)
				cap *= 2;
			char *t = realloc(mm->text, cap + 1);
			if (!t) {
				r = -ENOMEM;
				break;
			}
			mm->text = t;
		}
		ssize_t got = read(fd, mm->text + len, cap - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			r = -errno;
			break;
		}
		if (got == 0)
			break;
		len += (size_t)got;
	}
	close(fd);
	if (r < 0) {
		uw_maps_free(mm);
		return r;
	}
	mm->text[len] = '\0';
	for (size_t i = 0; i < len; i++)
		lines += mm->text[i] == '\n';
	lines++;
	mm->m = calloc(lines, sizeof(*mm->m));
	mm->path = calloc(lines, sizeof(*mm->path));
	if (!mm->m || !mm->path) {
		uw_maps_free(mm);
		return -ENOMEM;
	}
	for (char *line = mm->text; line && *line && mm->n < lines;) {
		char *nl = strchr(line, '\n');
		if (!nl && mm->cut)
			break; /* a line cut by the byte limit */
		if (nl)
			*nl = '\0';
		/* the kernel's lines come sorted and never overlap */
		if (parse_line(line, &mm->m[mm->n], &mm->path[mm->n]) &&
		    (mm->n == 0 || mm->m[mm->n].start >= mm->m[mm->n - 1].end))
			mm->n++;
		line = nl ? nl + 1 : NULL;
	}
	keep_some(mm, keep);
	return 0;
}

long uw_maps_find(const struct uw_maps *mm, uint64_t addr)
{
	size_t lo = 0, hi = mm->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (addr < mm->m[mid].start)
			hi = mid;
		else if (addr >= mm->m[mid].end)
			lo = mid + 1;
		else
			return (long)mid;
	}
	return -1;
}

/* ------------------------------------------------------------------ */
/* opening a mapped file without trusting its name                     */

static const char *kind_of(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFIFO: return "a FIFO";
	case S_IFCHR: return "a character device";
	case S_IFBLK: return "a block device";
	case S_IFDIR: return "a directory";
	case S_IFSOCK: return "a socket";
	case S_IFLNK: return "a symbolic link";
	default: return "not a file";
	}
}

/*
 * Regular files whose open is not the file system's own quick business:
 * the kernel's pseudo file systems (an open or a read may act on the
 * system) and those whose open waits on a process or a network (FUSE,
 * NFS, SMB, Ceph, AFS, Coda, 9p). A mapping of such a file gets no
 * unwind data. The name, or NULL: an ordinary file system.
 */
static const char *fs_refused(int fd)
{
	static const struct {
		unsigned long magic;
		const char *name;
	} no[] = {
		{ 0x9fa0, "proc" },
		{ 0x62656572, "sysfs" },
		{ 0x64626720, "debugfs" },
		{ 0x74726163, "tracefs" },
		{ 0x73636673, "securityfs" },
		{ 0x62656570, "configfs" },
		{ 0xde5e81e4, "efivarfs" },
		{ 0xcafe4a11, "bpf" },
		{ 0x27e0eb, "cgroup" },
		{ 0x63677270, "cgroup2" },
		{ 0x6165676c, "pstore" },
		{ 0x42494e4d, "binfmt_misc" },
		{ 0x65735546, "fuse" },
		{ 0x6969, "nfs" },
		{ 0x517b, "smb" },
		{ 0xff534d42, "cifs" },
		{ 0xfe534d42, "smb2" },
		{ 0x00c36400, "ceph" },
		{ 0x5346414f, "afs" },
		{ 0x6b414653, "afs" },
		{ 0x73757245, "coda" },
		{ 0x01021997, "9p" },
	};
	struct statfs sf;

	if (fstatfs(fd, &sf) < 0)
		return "unknown";
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if ((unsigned long)sf.f_type == no[i].magic)
			return no[i].name;
	return NULL;
}

/* The O_PATH fd of the file of mapping m as the maps line names it (path,
 * NULL: none), or -errno. */
static int path_of_mapping(pid_t tgid, const struct uw_map *m, const char *path,
			   char *why, size_t n)
{
	char where[96];
	int fd;

	if (geteuid() == 0 && !H.no_map_files) {
		/* the mapping's own file, whatever its name says now */
		snprintf(where, sizeof(where),
			 "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)tgid,
			 m->start, m->end);
		fd = open(where, O_PATH | O_CLOEXEC);
		if (fd >= 0)
			return fd;
		if (errno != EPERM && errno != EACCES) {
			snprintf(why, n, "is no longer mapped (%s)",
				 strerrorname_np(errno) ? strerrorname_np(errno)
							: "?");
			return -errno;
		}
		H.no_map_files = true; /* e.g. root in a user namespace */
	}
	/* The name, inside the run's root. A maps path holds no symlink
	 * (the kernel writes the file's own path): one there now means a
	 * name the code replaced, not the file. */
	if (!path || path[0] != '/') {
		snprintf(why, n, "has no path");
		return -ENOENT;
	}
	int root = tracer_resolve_root();
	if (root < 0) {
		if (H.host_root < 0)
			H.host_root =
				open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		root = H.host_root;
	}
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS |
			   RESOLVE_NO_SYMLINKS,
	};
	fd = (int)syscall(SYS_openat2, root, path, &how, sizeof(how));
	if (fd < 0) {
		snprintf(why, n, "could not be found by its name (%s)",
			 strerrorname_np(errno) ? strerrorname_np(errno) : "?");
		return -errno;
	}
	return fd;
}

/*
 * Opens the file mapping m of process tgid maps, for reading: fd >= 0 and
 * its size, or -errno with why saying what it is instead ("is not a
 * regular file (a FIFO)"). Nothing here can block on or run the open of
 * anything but a regular file, which must be the mapped one.
 */
static int open_mapped(pid_t tgid, const struct uw_map *m, const char *path,
		       uint64_t *size, char *why, size_t n)
{
	struct stat a, b;
	char self[64];
	int o, fd;

	if (!m->ino) {
		snprintf(why, n, "is anonymous memory");
		return -ENOENT;
	}
	o = path_of_mapping(tgid, m, path, why, n);
	if (o < 0)
		return o;
	if (fstat(o, &a) < 0) {
		snprintf(why, n, "could not be looked at");
		close(o);
		return -EIO;
	}
	if (!S_ISREG(a.st_mode)) {
		snprintf(why, n, "is not a regular file (%s)",
			 kind_of(a.st_mode));
		close(o);
		return -EPERM;
	}
	if (major(a.st_dev) != m->major || minor(a.st_dev) != m->minor ||
	    (uint64_t)a.st_ino != m->ino) {
		snprintf(why, n, "was replaced after the maps were read");
		close(o);
		return -EPERM;
	}
	if ((uint64_t)a.st_size > UW_FILE_MAX) {
		snprintf(why, n, "is larger than 1 GiB");
		close(o);
		return -EFBIG;
	}
	const char *fs = fs_refused(o);
	if (fs) {
		snprintf(why, n, "is on a file system ward does not open (%s)",
			 fs);
		close(o);
		return -EPERM;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", o);
	fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	int e = errno;
	close(o);
	if (fd < 0) {
		snprintf(why, n, "could not be opened (%s%s)",
			 strerrorname_np(e) ? strerrorname_np(e) : "?",
			 e == EWOULDBLOCK ? ": a lease" : "");
		return -e;
	}
	if (fstat(fd, &b) < 0 || b.st_ino != a.st_ino || b.st_dev != a.st_dev ||
	    (uint64_t)b.st_size > UW_FILE_MAX) {
		snprintf(why, n, "changed while it was opened");
		close(fd);
		return -EPERM;
	}
	*size = (uint64_t)b.st_size;
	return fd;
}

/* ------------------------------------------------------------------ */
/* the helper's life                                                   */

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void helper_kill(void)
{
	if (H.pidfd >= 0)
		syscall(SYS_pidfd_send_signal, H.pidfd, SIGKILL, NULL, 0);
	close_fd(&H.pidfd);
	close_fd(&H.sock);
	H.served = 0;
	H.dying = 0;
}

/* How the helper ended, once it is gone (its socket closed): the kernel
 * keeps the status for its pidfd (Linux 6.15) once the helper's parent,
 * now init, has reaped it, which may take a moment. */
static void death(char *why, size_t n, long long deadline)
{
	struct uw_pidfd_info in;
	long long until = mono_ns() + 20 * 1000000LL;

	if (until > deadline)
		until = deadline;
	snprintf(why, n, "the unwinder died");
	if (H.dying) {
		const char *s = sigabbrev_np(H.dying);
		snprintf(why, n, "the unwinder died (SIG%s)", s ? s : "?");
		return;
	}
	for (;;) {
		memset(&in, 0, sizeof(in));
		in.mask = UW_PIDFD_INFO_EXIT;
		if (ioctl(H.pidfd, UW_PIDFD_GET_INFO, &in) < 0)
			return; /* no such ioctl here */
		if (in.mask & UW_PIDFD_INFO_EXIT)
			break;
		if (mono_ns() >= until)
			return;
		struct pollfd p = { H.pidfd, POLLIN, 0 };
		struct timespec nap = { 0, 500000 };
		if (poll(&p, 1, 0) == 1)
			nanosleep(&nap, NULL); /* exited, not yet reaped */
		else
			poll(&p, 1, 1);
	}
	if (WIFSIGNALED(in.exit_code)) {
		const char *s = sigabbrev_np(WTERMSIG(in.exit_code));
		snprintf(why, n, "the unwinder died (SIG%s)", s ? s : "?");
	} else if (WIFEXITED(in.exit_code)) {
		snprintf(why, n, "the unwinder exited (status %d)",
			 WEXITSTATUS(in.exit_code));
	}
}

/* A request failed: the helper is killed; after UW_MAX_FAILURES no more
 * helpers this run. */
static void failed(void)
{
	helper_kill();
	if (++H.failures >= UW_MAX_FAILURES)
		H.off = true;
}

/* Waits until fd is ready for ev, or deadline. 0, -ETIMEDOUT, -EPIPE. */
static int wait_fd(int fd, short ev, long long deadline)
{
	for (;;) {
		long long left = deadline - mono_ns();
		struct pollfd p = { fd, ev, 0 };
		struct timespec ts;
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		ts.tv_sec = left / 1000000000LL;
		ts.tv_nsec = left % 1000000000LL;
		r = ppoll(&p, 1, &ts, NULL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		if (p.revents & ev)
			return 0;
		return -EPIPE;
	}
}

ssize_t uw_send(int sock, const void *buf, size_t len, int fd, int flags)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { (void *)buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd >= 0) {
		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	return sendmsg(sock, &mh, flags | MSG_NOSIGNAL);
}

/* Sends one record to the helper, with fd when >= 0. */
static int xsend(const void *buf, size_t len, int fd, long long deadline)
{
	for (;;) {
		ssize_t w = uw_send(H.sock, buf, len, fd, MSG_DONTWAIT);
		if (w == (ssize_t)len)
			return 0;
		if (w >= 0)
			return -EPROTO;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -EPIPE;
		int r = wait_fd(H.sock, POLLOUT, deadline);
		if (r < 0)
			return r;
	}
}

/* Receives one record: its length (at most cap), or -ETIMEDOUT, -EPIPE
 * (gone), -EPROTO (longer than cap). Descriptors the helper may attach
 * are never taken (no control buffer: the kernel drops them). */
static ssize_t xrecv(void *buf, size_t cap, long long deadline)
{
	bool hup = false;

	for (;;) {
		ssize_t n = recv(H.sock, buf, cap, MSG_DONTWAIT | MSG_TRUNC);
		if (n > (ssize_t)cap)
			return -EPROTO;
		if (n == sizeof(struct uw_dying) &&
		    ((struct uw_dying *)buf)->type == UW_DYING) {
			int sig = ((struct uw_dying *)buf)->sig;
			H.dying = sig > 0 && sig < 65 ? sig : 0;
			return -EPIPE;
		}
		if (n > 0)
			return n;
		if (n == 0)
			return -EPIPE;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN || hup)
			return -EPIPE;
		int r = wait_fd(H.sock, POLLIN, deadline);
		if (r == -EPIPE)
			hup = true; /* its last words may still be queued */
		else if (r < 0)
			return r;
	}
}

/* The hello: the helper's pidfd and whether it has libunwind. */
static int recv_hello(struct uw_hello *h, int *pidfd, long long deadline)
{
	char cbuf[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = { h, sizeof(*h) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	int r = wait_fd(H.sock, POLLIN, deadline);
	ssize_t n;

	*pidfd = -1;
	if (r == -EPIPE)
		r = 0; /* read the end */
	if (r < 0)
		return r;
	n = recvmsg(H.sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n <= 0)
		return n == 0 ? -EPIPE : -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c;
	     c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int f;
			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(f));
			if (*pidfd < 0)
				*pidfd = f;
			else
				close(f);
		}
	}
	if ((size_t)n != sizeof(*h) || h->type != UW_HELLO || *pidfd < 0 ||
	    (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
	    syscall(SYS_pidfd_send_signal, *pidfd, 0, NULL, 0) < 0) {
		close_fd(pidfd);
		return -EPROTO;
	}
	h->why[sizeof(h->why) - 1] = '\0';
	for (char *c = h->why; *c; c++)
		if (*c < 0x20 || *c > 0x7e)
			*c = '?';
	return 0;
}

/* The intermediate process (ward's only child outside the run): reaped by
 * its pid, never by waitpid(-1) (the run's loop would take it for a
 * tracee), by the deadline or killed. Its status, or -ETIMEDOUT. A helper
 * it forked whose hello then never comes finds its socket closed and
 * exits. */
static int reap(pid_t pid, long long deadline)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0), st = 0, r = 0;

	if (pfd >= 0) {
		r = wait_fd(pfd, POLLIN, deadline);
		if (r < 0) /* late: killed, so that the wait below is short */
			syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
		close(pfd);
	} else {
		/* no pidfds: look every half millisecond */
		while (waitpid(pid, &st, WNOHANG) == 0) {
			struct timespec nap = { 0, 500000 };
			if (mono_ns() >= deadline) {
				kill(pid, SIGKILL);
				r = -ETIMEDOUT;
				break;
			}
			nanosleep(&nap, NULL);
		}
		if (r == 0)
			return st;
	}
	/* exited, or killed just now: not long */
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return r < 0 ? r : st;
}

/*
 * TEST ONLY. WARD_TEST_UNWINDER=KIND:N in ward's environment makes the
 * helper misbehave at the run's Nth unwinding request (KIND:always: at
 * every one): crash (SIGSEGV), stall (never answer), garbage (a
 * malformed answer); =nostart makes it fail to start (helper_start). For
 * the tests of ward's failure handling (tests/integ/test_unwinder.py).
 */
static const char *test_arg(char *buf, size_t n)
{
	const char *s = tracer_test_env("WARD_TEST_UNWINDER");
	char kind[16];
	unsigned long at;

	if (!s)
		return NULL;
	if (sscanf(s, "%15[a-z]:always", kind) == 1 && strstr(s, ":always")) {
		snprintf(buf, n, "--test=%s:0", kind);
		return buf;
	}
	/* counted from this helper's first request */
	if (sscanf(s, "%15[a-z]:%lu", kind, &at) != 2 || at <= H.run_unwinds)
		return NULL;
	snprintf(buf, n, "--test=%s:%lu", kind, at - H.run_unwinds);
	return buf;
}

/* Starts a helper: 0, or -errno with why. */
static int helper_start(long long deadline, char *why, size_t n)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	char ward_pid[32], tbuf[48];
	char *argv[] = { (char *)"ward-unwinder", (char *)TRACER_UNWINDER_ARG,
			 ward_pid, NULL, NULL };
	char *envp[] = { NULL };
	struct uw_hello hello;
	int sv[2], r, pidfd;
	pid_t pid;

	const char *t = tracer_test_env("WARD_TEST_UNWINDER");
	/* TEST ONLY (WARD_TEST_UNWINDER=nostart): a helper that cannot be
	 * started, as when /proc is not mounted */
	const char *exe = t && !strcmp(t, "nostart") ? "/nonexistent/ward"
						     : "/proc/self/exe";

	snprintf(ward_pid, sizeof(ward_pid), "--ward=%d", (int)getpid());
	argv[3] = (char *)test_arg(tbuf, sizeof(tbuf));
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		r = -errno;
		snprintf(why, n, "socketpair: %s", strerror(errno));
		return r;
	}
	if (sv[1] <= 3) { /* dup2 onto 3 must not be a no-op */
		int d = fcntl(sv[1], F_DUPFD_CLOEXEC, 10);
		close(sv[1]);
		sv[1] = d;
	}
	if (sv[1] < 0 || fcntl(sv[0], F_SETFL, O_NONBLOCK) < 0) {
		r = -errno;
		snprintf(why, n, "socket: %s", strerror(errno));
		close(sv[0]);
		if (sv[1] >= 0)
			close(sv[1]);
		return r;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDWR, 0);
	posix_spawn_file_actions_adddup2(&fa, 0, 1);
#if !defined(WARD_SANITIZED)
	/* (a sanitizer build keeps ward's stderr for the runtime's reports) */
	posix_spawn_file_actions_adddup2(&fa, 0, 2);
#endif
	posix_spawnattr_init(&at);
	sigemptyset(&none);
	sigfillset(&all);
	sigdelset(&all, SIGKILL);
	sigdelset(&all, SIGSTOP);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK |
					      POSIX_SPAWN_SETSIGDEF |
					      POSIX_SPAWN_SETSID);
	r = posix_spawn(&pid, exe, &fa, &at, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(sv[1]);
	if (r) {
		snprintf(why, n, "%s: %s", exe, strerror(r));
		close(sv[0]);
		return -r;
	}
	H.sock = sv[0];
	r = reap(pid, deadline);
	if (r < 0 || !WIFEXITED(r) || WEXITSTATUS(r) != 0) {
		if (r == -ETIMEDOUT)
			snprintf(why, n, "it did not start within %d ms",
				 UW_BUDGET_MS);
		else
			snprintf(why, n, "it ended with status %#x", r);
		close_fd(&H.sock);
		return r < 0 ? r : -ECHILD;
	}
	r = recv_hello(&hello, &pidfd, deadline);
	if (r < 0) {
		snprintf(why, n, "%s",
			 r == -ETIMEDOUT ? "it did not start in time"
					 : "it did not say hello");
		close_fd(&H.sock);
		return r;
	}
	H.pidfd = pidfd;
	H.served = 0;
	if (!hello.unwind_ok && !H.no_unwind) {
		H.no_unwind = true;
		if (!H.warned_unwind)
			warn("native backtraces are off: %s (install "
			     "libunwind8 or libunwind-dev)",
			     hello.why);
		H.warned_unwind = true;
	}
	return 0;
}

/* A helper ready for a request by deadline: 0, or -errno with why (the
 * failure counted). */
static int helper_ready(long long deadline, char *why, size_t n)
{
	char start[160];
	int r;

	if (H.off) {
		snprintf(why, n,
			 "the unwinder is off for the rest of this run after "
			 "%d failures",
			 UW_MAX_FAILURES);
		return -ECANCELED;
	}
	if (H.sock >= 0 && H.served >= UW_RECYCLE)
		helper_kill(); /* a fresh one (CPU limit); no failure */
	if (H.sock >= 0)
		return 0;
	r = helper_start(deadline, start, sizeof(start));
	if (r < 0) {
		if (!H.warned_start)
			warn("native backtraces: the unwinder could not be "
			     "started: %s",
			     start);
		H.warned_start = true;
		snprintf(why, n, "the unwinder could not be started: %s",
			 start);
		failed();
	}
	return r;
}

/* After a failed exchange (r): why, and the helper killed. */
static void exchange_failed(int r, char *why, size_t n, long long deadline)
{
	if (r == -ETIMEDOUT)
		snprintf(why, n, "the unwinder timed out after %d ms",
			 UW_BUDGET_MS);
	else if (r == -EPIPE)
		death(why, n, deadline);
	else
		snprintf(why, n, "the unwinder sent a malformed reply");
	failed();
}

/* ------------------------------------------------------------------ */
/* requests                                                            */

/* What ward answered to the helper's asks in one request, to explain a
 * frame the helper then could not follow. */
struct asked {
	int n;
	struct {
		uint32_t index;
		char why[96];
	} no[UW_MAX_ASKS];
};

static const char *refusal(const struct asked *a, uint32_t index)
{
	for (int i = 0; i < a->n; i++)
		if (a->no[i].index == index)
			return a->no[i].why;
	return NULL;
}

/* Answers one UW_NEED. 0, or -EPROTO (an ask ward will not serve). */
static int answer(pid_t tgid, const struct uw_maps *mm, const struct uw_need *q,
		  struct asked *a, int *asks, long long deadline)
{
	struct uw_file f = { UW_FILE, q->seq, q->index, 0, 0 };
	char why[96];
	int fd, r;

	if (q->index >= mm->n || ++*asks > UW_MAX_ASKS)
		return -EPROTO;
	fd = open_mapped(tgid, &mm->m[q->index], mm->path[q->index], &f.size,
			 why, sizeof(why));
	if (fd < 0) {
		f.err = fd;
		if (a->n < UW_MAX_ASKS) {
			a->no[a->n].index = q->index;
			snprintf(a->no[a->n].why, sizeof(a->no[0].why), "%s",
				 why);
			a->n++;
		}
	}
	r = xsend(&f, sizeof(f), fd, deadline);
	if (fd >= 0)
		close(fd);
	return r;
}

/* A sealed memfd holding the table and the stack: the bulk of a request,
 * which no socket buffer size limits. */
static int bulk(const struct uw_maps *mm, const void *stack, uint32_t len)
{
	int fd = (int)syscall(SYS_memfd_create, "ward-unwind",
			      MFD_CLOEXEC | MFD_ALLOW_SEALING);
	struct iovec iov[2] = {
		{ mm->m, mm->n * sizeof(struct uw_map) },
		{ (void *)stack, len },
	};
	size_t total = iov[0].iov_len + len;

	if (fd < 0)
		return -errno;
	if (writev(fd, iov, 2) != (ssize_t)total ||
	    fcntl(fd, F_ADD_SEALS,
		  F_SEAL_SEAL | F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW) <
		    0) {
		int e = errno ? errno : EIO;
		close(fd);
		return -e;
	}
	return fd;
}

static void stop_text(const struct uw_frames *f, const struct uw_maps *mm,
		      const struct asked *a, char *out, size_t n)
{
	long i = f->stop_index;
	uint64_t at = i >= 0 ? mm->m[i].start : 0;
	const char *no = i >= 0 ? refusal(a, (uint32_t)i) : NULL;

	out[0] = '\0';
	switch (f->stop) {
	case UW_NO_INFO:
		if (i < 0)
			snprintf(out, n, "no unwind data for %#" PRIx64 ": %s",
				 f->stop_addr,
				 mm->cut ? "not among the mappings ward kept"
					 : "nothing is mapped there");
		else if (!mm->m[i].ino)
			snprintf(out, n,
				 "no unwind data for %#" PRIx64
				 " (anonymous memory)",
				 f->stop_addr);
		else
			snprintf(out, n,
				 "no unwind data for %#" PRIx64
				 " in the file mapped at %#" PRIx64,
				 f->stop_addr, at);
		break;
	case UW_NO_FILE:
		if (no)
			snprintf(out, n,
				 "no unwind data: the file mapped at %#" PRIx64
				 " %s",
				 at, no);
		else
			snprintf(out, n,
				 "no unwind data: no file for %#" PRIx64,
				 f->stop_addr);
		break;
	case UW_BAD_ELF:
		snprintf(out, n,
			 "no unwind data: the file mapped at %#" PRIx64
			 " is no usable ELF file",
			 at);
		break;
	case UW_BAD_INFO:
		snprintf(out, n,
			 "the unwind data for %#" PRIx64
			 " could not be followed (libunwind: %d)",
			 f->stop_addr, (int)f->stop_err);
		break;
	case UW_NO_STACK:
		snprintf(out, n,
			 "memory at %#" PRIx64
			 " is neither in the stack copy nor in a file",
			 f->stop_addr);
		break;
	default: /* UW_END: nothing to say */ break;
	}
}

/* The answer is sound: ward's own numbers, in range. */
static bool frames_ok(const struct uw_frames *f, uint32_t seq,
		      const struct uw_maps *mm, const uint64_t *regs)
{
	bool needs_index = f->stop == UW_NO_FILE || f->stop == UW_BAD_ELF;

	return f->seq == seq && f->n <= UW_MAX_FRAMES &&
	       f->stop < UW_STOP_MAX && f->stop != UW_NO_UNWIND &&
	       f->stop_index >= (needs_index ? 0 : -1) &&
	       (int64_t)f->stop_index < (int64_t)mm->n &&
	       (f->n == 0 || f->ip[0] == regs[UW_RIP]);
}

int uw_unwind(pid_t tid, pid_t tgid, const uint64_t regs[UW_NREGS],
	      const struct uw_maps *mm, const void *stack, uint32_t stack_len,
	      uint64_t stack_start, long long deadline, struct uw_result *res)
{
	struct uw_unwind_req q;
	struct asked a = { 0 };
	int fd, r, asks = 0;

	(void)tid;
	res->n = 0;
	res->stop[0] = '\0';
	if (H.no_unwind)
		return -ENOSYS;
	if (helper_ready(deadline, res->stop, sizeof(res->stop)) < 0)
		return 0;
	if (H.no_unwind)
		return -ENOSYS;
	fd = bulk(mm, stack, stack_len);
	if (fd < 0) {
		snprintf(res->stop, sizeof(res->stop),
			 "the stack could not be handed to the unwinder (%s)",
			 strerror(-fd));
		return 0;
	}
	memset(&q, 0, sizeof(q));
	q.type = UW_UNWIND;
	q.seq = ++H.seq;
	q.nmaps = (uint32_t)mm->n;
	q.stack_len = stack_len;
	q.stack_start = stack_start;
	memcpy(q.regs, regs, sizeof(q.regs));
	H.served++;
	H.run_unwinds++;
	r = xsend(&q, sizeof(q), fd, deadline);
	close(fd);
	while (r == 0) {
		union {
			uint32_t type;
			struct uw_need need;
			struct uw_frames frames;
		} m = { 0 };
		ssize_t got = xrecv(&m, sizeof(m), deadline);
		if (got < 0) {
			r = (int)got;
		} else if (m.type == UW_NEED && got == sizeof(m.need) &&
			   m.need.seq == q.seq) {
			r = answer(tgid, mm, &m.need, &a, &asks, deadline);
		} else if (m.type == UW_FRAMES && got == sizeof(m.frames) &&
			   frames_ok(&m.frames, q.seq, mm, regs)) {
			res->n = (int)m.frames.n;
			memcpy(res->ip, m.frames.ip,
			       sizeof(uint64_t) * m.frames.n);
			stop_text(&m.frames, mm, &a, res->stop,
				  sizeof(res->stop));
			return 0;
		} else {
			r = -EPROTO;
		}
	}
	exchange_failed(r, res->stop, sizeof(res->stop), deadline);
	return 0;
}

int uw_syms(pid_t pid, const struct uw_map *m, const char *path,
	    long long deadline, struct uw_syms *out)
{
	struct uw_syms_req q = { UW_SYMS, 0, 0 };
	char why[200];
	int fd, r;

	memset(out, 0, sizeof(*out));
	if (helper_ready(deadline, why, sizeof(why)) < 0)
		return -EAGAIN;
	fd = open_mapped(pid, m, path, &q.size, why, sizeof(why));
	if (fd < 0)
		return -EPERM;
	q.seq = ++H.seq;
	H.served++;
	r = xsend(&q, sizeof(q), fd, deadline);
	close(fd);
	if (r == 0) {
		ssize_t got = xrecv(out, sizeof(*out), deadline);
		r = got < 0 ? (int)got : 0;
		if (got >= 0 &&
		    ((size_t)got != sizeof(*out) || out->type != UW_SYMS_DONE ||
		     out->seq != q.seq || out->found > 1))
			r = -EPROTO;
	}
	if (r < 0) {
		exchange_failed(r, why, sizeof(why), deadline);
		memset(out, 0, sizeof(*out));
		return -EAGAIN;
	}
	if (out->err)
		out->found = 0;
	return 0;
}

void uw_release(void)
{
	helper_kill();
	H.failures = 0;
	H.off = false;
	H.run_unwinds = 0;
	close_fd(&H.host_root);
}
