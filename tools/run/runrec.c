/* runrec.c - see runrec.h. */
#include "tools/run/runrec.h"

#include <errno.h>
#include <limits.h>
#include <sys/file.h>
#include <fcntl.h>
#include <dirent.h>
#include <ftw.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/thread.h"
#include "tools/review/view.h"

json_t *ward_json_text(const char *s, size_t len)
{
	bool exact;
	json_t *j = view_json_text(s ? s : "", s ? len : 0, &exact);

	return j ? j : json_string("");
}

int ward_json_set_bytes(json_t *o, const char *key, const char *s, size_t len)
{
	char b64_key[64];
	bool exact;
	json_t *t = view_json_text(s ? s : "", s ? len : 0, &exact);

	if (!t || json_object_set_new(o, key, t) < 0)
		return -ENOMEM;
	if (exact)
		return 0;
	snprintf(b64_key, sizeof(b64_key), "%s_base64", key);
	t = view_json_base64(s, len);
	if (!t || json_object_set_new(o, b64_key, t) < 0)
		return -ENOMEM;
	return 0;
}

void ward_run_end_of(const struct tracer_result *r, const char *layers_json,
		     long long end_ns, struct audit_run_end *re)
{
	*re = (struct audit_run_end){
		.end_ns = end_ns,
		.duration_ms = r->duration_ms,
		.exit_code = r->signal ? -1 : r->exit_code,
		.signal = r->signal,
		.status = r->status,
		.cause = r->cause[0] ? r->cause : NULL,
		.stdout_bytes = r->out_bytes[1],
		.stderr_bytes = r->out_bytes[2],
		.stdout_truncated = r->truncated[1],
		.stderr_truncated = r->truncated[2],
		.events = r->events,
		.denials = r->denials,
		.processes = r->processes,
		.layers_json = layers_json,
	};
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		return rmdir(path) < 0 ? -1 : 0;
	return unlink(path) < 0 ? -1 : 0;
}

/* The calling thread's own mount namespace (ward_workdir_quota). */
static int own_mount_ns(char *detail, size_t n)
{
	if (unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0) {
		int e = errno;
		snprintf(detail, n,
			 "no mount namespace of ward's own for its tmpfs: %s",
			 strerror(e));
		return -e;
	}
	return 0;
}

void ward_workdir_layer(struct tracer_result *r, const char *workdir,
			const char *home)
{
	char d[sizeof(r->layers[0].detail)];
	bool shown = strcmp(workdir, home) != 0;

	snprintf(d, sizeof(d),
		 shown ? "%s of the host, at %s in the run's file tree (no "
			 "host path of it reaches the code)"
		       : "%s of the host, at the same path (no mount "
			 "namespace)%s",
		 workdir, shown ? home : "");
	tracer_layer_add(r, "workdir", shown, d);
}

int ward_workdir_quota(const char *path, long long bytes, uid_t uid, gid_t gid,
		       char *detail, size_t n)
{
	char opts[128];

	if (!path || strncmp(path, "/tmp/ward-", 10) != 0 || bytes <= 0) {
		snprintf(detail, n, "no size given");
		return -EINVAL;
	}
	if (geteuid() != 0) {
		snprintf(detail, n,
			 "ward is not root: it mounts no tmpfs, and "
			 "the workdir's size is the file system's");
		return -EPERM;
	}
	int rc = own_mount_ns(detail, n);
	if (rc < 0)
		return rc;
	snprintf(opts, sizeof(opts), "size=%lld,mode=0700,uid=%u,gid=%u", bytes,
		 (unsigned)uid, (unsigned)gid);
	if (mount("ward-workdir", path, "tmpfs", MS_NOSUID | MS_NODEV, opts) <
	    0) {
		int e = errno;
		snprintf(detail, n, "mounting a tmpfs on the workdir: %s",
			 strerror(e));
		return -e;
	}
	snprintf(detail, n,
		 "a tmpfs of %lld MiB on the workdir (ENOSPC past it; its "
		 "pages count as the code's memory)",
		 bytes >> 20);
	return 0;
}

int ward_rm_workdir(const char *path)
{
	char lock[PATH_MAX];

	if (!path || strncmp(path, "/tmp/ward-", 10) != 0)
		return -EINVAL;
	/* its quota's tmpfs, if it has one (else EINVAL: not a mount) */
	umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW);
	int rc = nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS) < 0 ? -errno : 0;
	/* its lock last: until the directory is gone a sweep may find it */
	if (rc == 0 && (size_t)snprintf(lock, sizeof(lock), "%s.lock", path) <
			       sizeof(lock))
		unlink(lock);
	return rc;
}

int ward_workdir_lock(const char *path)
{
	char lock[PATH_MAX], self[64];
	int fd;

	if (!path || strncmp(path, "/tmp/ward-", 10) != 0 ||
	    (size_t)snprintf(lock, sizeof(lock), "%s.lock", path) >=
		    sizeof(lock))
		return -EINVAL;
	/* Made locked, then given its name: a sweep never finds it free
	 * while its owner lives. */
	fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 ||
	    linkat(AT_FDCWD, self, AT_FDCWD, lock, AT_SYMLINK_FOLLOW) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

void ward_workdir_keep(const char *path, int lock_fd)
{
	char lock[PATH_MAX];

	if (path && (size_t)snprintf(lock, sizeof(lock), "%s.lock", path) <
			    sizeof(lock))
		unlink(lock);
	if (lock_fd >= 0)
		close(lock_fd);
}

/* The directory of a lock /tmp/ward-XXXXXX.lock: a directory, not a
 * symlink (its owner may be the code's uid: ward hands it over). *orphan:
 * there is no such directory (its ward died between removing it and its
 * lock, or something else removed it). */
static bool swept_dir(const char *name, char *dir, size_t n, bool *orphan)
{
	size_t len = strlen(name);
	struct stat st;

	*orphan = false;
	if (len < 6 + 5 || strncmp(name, "ward-", 5) ||
	    strcmp(name + len - 5, ".lock") ||
	    (size_t)snprintf(dir, n, "/tmp/%.*s", (int)(len - 5), name) >= n)
		return false;
	if (lstat(dir, &st) < 0) {
		*orphan = errno == ENOENT;
		return *orphan;
	}
	return S_ISDIR(st.st_mode);
}

int ward_sweep_workdirs(void)
{
	DIR *d = opendir("/tmp");
	struct dirent *e;
	int swept = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		char dir[PATH_MAX], lock[PATH_MAX];
		bool orphan;
		int fd;

		if (!swept_dir(e->d_name, dir, sizeof(dir), &orphan))
			continue;
		snprintf(lock, sizeof(lock), "/tmp/%s", e->d_name);
		fd = open(lock, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		/* a lock this uid made (no other user can make one of ours),
		 * free: the ward that made it is gone (the kernel let go of
		 * its lock when it died) */
		struct stat st;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    st.st_uid == geteuid() &&
		    flock(fd, LOCK_EX | LOCK_NB) == 0 &&
		    (orphan ? unlink(lock) : ward_rm_workdir(dir)) == 0)
			swept++; /* (an orphan: a lock is made with its
				  * directory there, and linkat never
				  * replaces a name, so none is made anew
				  * at this one while it exists) */
		close(fd);
	}
	closedir(d);
	return swept;
}

void ward_limits_json(const struct ward_limits *l, char *buf, size_t n)
{
	snprintf(buf, n,
		 "{\"wall_ms\":%lld,\"cpu_s\":%lld,\"memory_bytes\":%lld,"
		 "\"procs\":%lld,\"fsize_bytes\":%lld,\"nofile\":%lld,"
		 "\"output_bytes\":%lld,\"events\":%lld,\"disk_bytes\":%lld}",
		 l->wall_ms, l->cpu_s, l->memory_bytes, l->procs,
		 l->fsize_bytes, l->nofile, l->output_bytes, l->events,
		 l->disk_bytes);
}

void ward_host_kernel(char *host, size_t hn, char *kernel, size_t kn)
{
	struct utsname un;

	host[0] = kernel[0] = '\0';
	if (uname(&un) == 0) {
		snprintf(kernel, kn, "%s %s %s", un.sysname, un.release,
			 un.version);
		snprintf(host, hn, "%s", un.nodename);
	}
}

static void *preopen_main(void *arg)
{
	struct ward_record *r = arg;
	void *(*job)(void *) = NULL;
	char msg[512];

	if (audit_open(r->db, false, &r->pre_au, msg, sizeof(msg)) < 0)
		r->pre_au = NULL; /* ward_record_begin tries again, says why */
	else
		debug("audit database opened ahead of the record");
	pthread_mutex_lock(&r->pre_lock);
	while (r->job_state == 0)
		pthread_cond_wait(&r->pre_cond, &r->pre_lock);
	if (r->job_state > 0)
		job = r->job;
	pthread_mutex_unlock(&r->pre_lock);
	if (job)
		job(r->job_arg);
	return NULL;
}

void ward_record_preopen(struct ward_record *r)
{
	struct stat st;

	if (r->pre_started || !r->db || stat(r->db, &st) < 0 ||
	    !S_ISREG(st.st_mode))
		return;
	r->pre_au = NULL;
	r->job_state = 0;
	pthread_mutex_init(&r->pre_lock, NULL);
	pthread_cond_init(&r->pre_cond, NULL);
	r->pre_started = ward_thread_beside(&r->pre_thread, preopen_main, r) ==
			 0;
	if (!r->pre_started) {
		pthread_cond_destroy(&r->pre_cond);
		pthread_mutex_destroy(&r->pre_lock);
	}
}

/* Sets what the early thread does after its open (state 1: job; -1:
 * nothing). False when that was set already. */
static bool pre_decide(struct ward_record *r, int state, void *(*fn)(void *),
		       void *arg)
{
	bool set;

	pthread_mutex_lock(&r->pre_lock);
	set = r->job_state == 0;
	if (set) {
		r->job = fn;
		r->job_arg = arg;
		r->job_state = state;
		pthread_cond_signal(&r->pre_cond);
	}
	pthread_mutex_unlock(&r->pre_lock);
	return set;
}

int ward_record_run_on(void *record, void *(*fn)(void *), void *arg)
{
	struct ward_record *r = record;

	if (!r->pre_started || !pre_decide(r, 1, fn, arg))
		return -ESRCH;
	return 0;
}

/* Ends the early thread (after its job, if it was given one; else at
 * once): the handle it opened and nothing took, or NULL. */
static struct audit *pre_end(struct ward_record *r)
{
	struct audit *au;

	pre_decide(r, -1, NULL, NULL);
	pthread_join(r->pre_thread, NULL);
	r->pre_started = false;
	pthread_cond_destroy(&r->pre_cond);
	pthread_mutex_destroy(&r->pre_lock);
	au = r->pre_au;
	r->pre_au = NULL;
	return au;
}

void ward_record_join(void *record)
{
	struct ward_record *r = record;

	if (r->pre_started)
		audit_close(pre_end(r));
}

int ward_record_begin(struct ward_record *r)
{
	struct audit *au = NULL;
	char msg[512];
	struct timespec ts;

	r->ran = true;
	r->au = NULL;
	if (r->pre_started && pthread_equal(pthread_self(), r->pre_thread)) {
		/* its job (ward_record_run_on): its open is done */
		debug("the record begun on the thread that opened the "
		      "database");
		au = r->pre_au;
		r->pre_au = NULL;
	} else if (r->pre_started) {
		au = pre_end(r);
	}
	if (!au && audit_open(r->db, false, &au, msg, sizeof(msg)) < 0) {
		snprintf(r->err, sizeof(r->err), "audit database: %s", msg);
		return -EIO;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	r->ri->start_ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	if (audit_run_begin(au, r->ri, r->run_id) < 0) {
		snprintf(r->err, sizeof(r->err),
			 "audit database %s: cannot record the run: %s", r->db,
			 audit_errmsg(au));
		audit_close(au);
		return -EIO;
	}
	r->au = au;
	return 0;
}

int ward_record_phase(struct audit *au, const char *run_id, int n,
		      const char *name, const struct tracer_result *r,
		      long long t0, long long t1, int first, const char *code,
		      size_t code_len, const char *layers_json)
{
	struct audit_phase ph = {
		.run_id = run_id,
		.n = n,
		.name = name,
		.started_ns = t0,
		.ended_ns = t1,
		.first_serial = r->processes ? first + 1 : 0,
		.last_serial = r->processes ? first + (int)r->processes : 0,
		.status = r->status,
		.exit_code = r->signal ? -1 : r->exit_code,
		.cause = r->cause,
		.code = code,
		.code_len = code_len,
		.layers_json = layers_json,
	};

	return audit_phase(au, &ph);
}

const char *ward_lang_of_file(const char *file)
{
	const char *dot = file ? strrchr(file, '.') : NULL;

	if (dot && (!strcmp(dot, ".js") || !strcmp(dot, ".mjs") ||
		    !strcmp(dot, ".cjs")))
		return "node";
	if (dot && !strcmp(dot, ".sh"))
		return "sh";
	return "python";
}

char *ward_read_all(int fd, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap + 1);

	while (buf) {
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(buf);
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n == cap) {
			char *nb = realloc(buf, cap * 2 + 1);
			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
	}
	if (buf) {
		buf[n] = '\0';
		*len = n;
	}
	return buf;
}

char *ward_read_path(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *data;
	int e;

	if (fd < 0)
		return NULL;
	data = ward_read_all(fd, len);
	e = errno;
	close(fd);
	errno = e;
	return data;
}
