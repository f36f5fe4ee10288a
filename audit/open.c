/*
 * open.c - finding, creating and opening the database; errors.
 */
#include "audit/audit.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit-int.h"

int audit_default_path(const char *explicit_path, char *buf, size_t n)
{
	const char *env;
	int len;

	if (explicit_path && *explicit_path)
		len = snprintf(buf, n, "%s", explicit_path);
	else if ((env = getenv("WARD_DB")) && *env)
		len = snprintf(buf, n, "%s", env);
	else if ((env = getenv("XDG_STATE_HOME")) && *env == '/')
		len = snprintf(buf, n, "%s/ward/audit.db", env);
	else if ((env = getenv("HOME")) && *env)
		len = snprintf(buf, n, "%s/.local/state/ward/audit.db", env);
	else
		return -ENOENT;
	if (len < 0 || (size_t)len >= n)
		return -ENAMETOOLONG;
	return 0;
}

int audit_fail(struct audit *a, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(a->errmsg, sizeof(a->errmsg), fmt, ap);
	va_end(ap);
	return err;
}

int audit_errno_of(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK: return 0;
	case SQLITE_BUSY:
	case SQLITE_LOCKED: return -EBUSY;
	case SQLITE_NOMEM: return -ENOMEM;
	case SQLITE_READONLY: return -EROFS;
	case SQLITE_PERM:
	case SQLITE_AUTH: return -EACCES;
	case SQLITE_FULL: return -ENOSPC;
	case SQLITE_CONSTRAINT:
	case SQLITE_MISMATCH:
	case SQLITE_RANGE: return -EINVAL;
	default: /* IOERR, CORRUPT, NOTADB, CANTOPEN, ... */ return -EIO;
	}
}

/* Which call an SQLITE_IOERR_* code is about. */
static const char *io_call(int io)
{
	switch (io) {
	case SQLITE_IOERR_READ:
	case SQLITE_IOERR_CORRUPTFS: return "read";
	case SQLITE_IOERR_WRITE: return "write";
	case SQLITE_IOERR_FSYNC:
	case SQLITE_IOERR_DIR_FSYNC: return "sync";
	case SQLITE_IOERR_TRUNCATE: return "truncate";
	default: return "file operation";
	}
}

const char *audit_sqlmsg(struct audit *a, int rc, char *buf, size_t n)
{
	int io = audit_vfs_io_error(), prim = rc & 0xff;

	if (io && (prim == SQLITE_CORRUPT || prim == SQLITE_IOERR ||
		   prim == SQLITE_NOTADB)) {
		snprintf(buf, n,
			 "disk I/O error: the disk failed a %s (%s); the file "
			 "is not known to be damaged",
			 io_call(io), strerror(EIO));
		return buf;
	}
	return a->db ? sqlite3_errmsg(a->db) : sqlite3_errstr(rc);
}

int audit_sqlfail(struct audit *a, int rc, const char *what)
{
	char buf[160];

	return audit_fail(a, audit_errno_of(rc), "%s: %s", what,
			  audit_sqlmsg(a, rc, buf, sizeof(buf)));
}

/* ---------------------------- creation ---------------------------- */

/* mkdir -p for the directory part of path: directories we create get
 * mode 0700 whatever the umask. Existing ones are left alone. */
static int make_parents(struct audit *a, const char *path)
{
	char dir[4096];
	size_t len = strlen(path);

	if (len >= sizeof(dir))
		return audit_fail(a, -ENAMETOOLONG, "%s: path too long", path);
	memcpy(dir, path, len + 1);
	for (char *p = dir + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		if (mkdir(dir, 0700) == 0) {
			chmod(dir, 0700);
		} else if (errno != EEXIST) {
			int err = errno;

			return audit_fail(a, -err,
					  "cannot create "
					  "directory %s for %s: %s",
					  dir, path, strerror(err));
		}
		*p = '/';
	}
	return 0;
}

int audit_sync_parent(const char *path)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	int fd;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s",
			 (int)(slash == path ? 1 : slash - path), path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = fsync(fd) ? -errno : 0;
	close(fd);
	return r;
}

/*
 * Creates path mode 0600 (exactly: umask does not apply) when it does not
 * exist, so SQLite, which would use 0644 & ~umask, finds it in place. An
 * existing file keeps its mode. SQLite gives its -wal and -shm files the
 * mode of the database.
 */
static int create_file(struct audit *a, const char *path)
{
	int fd, r = make_parents(a, path);

	if (r)
		return r;
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0600);
	if (fd < 0 && errno == EEXIST)
		return 0;
	if (fd < 0) {
		int err = errno;

		return audit_fail(a, -err, "cannot create %s: %s", path,
				  strerror(err));
	}
	r = fchmod(fd, 0600) ? -errno : 0;
	close(fd);
	if (r)
		return audit_fail(a, r, "cannot chmod %s: %s", path,
				  strerror(-r));
	(void)audit_sync_parent(path); /* as durable as the file system lets
					* it be; SQLite syncs the file */
	return 0;
}

/* A readonly open needs the file; say clearly when it is not there. */
static int check_exists(struct audit *a, const char *path)
{
	struct stat st;
	int err;

	if (stat(path, &st) == 0)
		return S_ISDIR(st.st_mode)
			       ? audit_fail(a, -EISDIR, "%s: is a directory",
					    path)
			       : 0;
	err = errno;
	return audit_fail(a, -err, "%s: %s", path, strerror(err));
}

/* ------------------------------ open ------------------------------ */

/*
 * SQLite's unix VFS opens the WAL with O_CREAT whether or not it exists,
 * and a file it may have created gets its directory synced at the first
 * sync: every run paid that fsync (~0.25 ms here) at its durable end,
 * though ward keeps the WAL from run to run (no checkpoint at close). The
 * VFS "ward" is the unix one but opens a WAL that exists without
 * SQLITE_OPEN_CREATE (no directory sync: its name is already durable,
 * synced by the run that created it); should it vanish in between, the
 * open is retried as SQLite asked.
 */
static sqlite3_vfs ward_vfs;
static sqlite3_vfs *unix_vfs;
static pthread_once_t vfs_once = PTHREAD_ONCE_INIT;

static int ward_vfs_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f,
			 int flags, int *out)
{
	(void)vfs;
	if ((flags & SQLITE_OPEN_WAL) && (flags & SQLITE_OPEN_CREATE) && name &&
	    access(name, F_OK) == 0 &&
	    unix_vfs->xOpen(unix_vfs, name, f, flags & ~SQLITE_OPEN_CREATE,
			    out) == SQLITE_OK)
		return SQLITE_OK;
	return unix_vfs->xOpen(unix_vfs, name, f, flags, out);
}

static void vfs_register(void)
{
	/* First, before SQLite initializes (sqlite3_vfs_find does): no
	 * initial bulk of 20 page-cache slots per connection, each slot's
	 * header written at once (about 80 KB, ~20 first touches of fresh
	 * memory, ~13 us each on a paravirtualized VM), when a run's record
	 * uses a few pages. Pages come from malloc as they are needed. Should
	 * SQLite already be initialized, this fails and nothing changes. */
	sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)0, 0, 0);
	unix_vfs = sqlite3_vfs_find("unix");
	if (!unix_vfs || unix_vfs->iVersion < 1)
		return;
	ward_vfs = *unix_vfs;
	ward_vfs.zName = "ward";
	ward_vfs.pNext = NULL;
	ward_vfs.xOpen = ward_vfs_open;
	audit_vfs_wrap(&ward_vfs); /* I/O errors noted, faults: vfs.c */
	if (sqlite3_vfs_register(&ward_vfs, 0) != SQLITE_OK)
		unix_vfs = NULL;
}

/* "ward", or NULL (SQLite's default) when it could not be made. */
static const char *vfs_name(void)
{
	pthread_once(&vfs_once, vfs_register);
	return unix_vfs ? "ward" : NULL;
}

/* "file:PATH?immutable=1": the database file alone, no WAL, no index. */
static char *immutable_uri(const char *path)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(path);
	char *u = malloc(3 * n + 32), *p = u;

	if (!u)
		return NULL;
	p += sprintf(p, "file:");
	for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
		if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		    (*c >= '0' && *c <= '9') || strchr("/-._~", *c)) {
			*p++ = (char)*c;
		} else {
			*p++ = '%';
			*p++ = hex[*c >> 4];
			*p++ = hex[*c & 15];
		}
	}
	strcpy(p, "?immutable=1");
	return u;
}

static int open_db(struct audit *a)
{
	int flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE;
	char *uri = NULL;
	int rc;

	flags |= a->readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
	/* A reader of a WAL that lost committed transactions reads the
	 * database file alone: opening it as usual would rebuild the WAL's
	 * index over what is left, and the evidence of the loss with it
	 * (walcheck.c); a writer records the loss (anchor.c) and goes on. */
	if (a->readonly && a->wal.lost) {
		uri = immutable_uri(a->path);
		if (!uri)
			return audit_fail(a, -ENOMEM, "out of memory");
		flags |= SQLITE_OPEN_URI;
	}
	rc = sqlite3_open_v2(uri ? uri : a->path, &a->db, flags, vfs_name());
	free(uri);
	if (rc != SQLITE_OK) {
		int err = sqlite3_system_errno(a->db);

		audit_fail(a, err ? -err : audit_errno_of(rc),
			   "cannot open %s: %s", a->path,
			   err ? strerror(err) : sqlite3_errstr(rc));
		return err ? -err : audit_errno_of(rc);
	}
	sqlite3_busy_timeout(a->db, AUDIT_BUSY_TIMEOUT_MS);
	/* Keep the WAL when ward exits: a checkpoint at every close (and the
	 * WAL header sync at the next open) would cost each run a few ms of
	 * fsync. SQLite checkpoints on its own once the WAL grows past 1000
	 * pages; readers see the WAL either way. */
	sqlite3_db_config(a->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
	return 0;
}

/* Connection settings; synchronous NORMAL: a commit reaches the WAL file
 * at once (it survives ward being killed) and is synced at checkpoints and
 * at audit_run_end(), which switches to FULL for its commit. */
static int configure(struct audit *a)
{
	const char *sql = a->readonly ? "PRAGMA query_only = ON"
				      : "PRAGMA synchronous = NORMAL;"
					"PRAGMA foreign_keys = ON";
	int rc = sqlite3_exec(a->db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : audit_sqlfail(a, rc, a->path);
}

/* ---------------------------- identity ---------------------------- */

/*
 * SQLite writes through the file descriptors it opened: a database file
 * deleted (or renamed over, or its directory moved) while ward has it
 * open takes every later commit into a file no one will ever read, and
 * they all succeed. So a writer records which files it opened (device
 * and inode of the database and of its -wal) and checks, before each
 * commit and at each flush (audit_commit_batch), that the path still
 * names them. Two stat() calls, ~1 us each. While ward holds the database
 * open no other SQLite connection deletes its -wal (only the last one to
 * close does).
 */
static int wal_path(const struct audit *a, char *buf, size_t n)
{
	return (size_t)snprintf(buf, n, "%s-wal", a->path) < n ? 0
							       : -ENAMETOOLONG;
}

int audit_identity_init(struct audit *a)
{
	char wal[4200];
	struct stat st;

	if (stat(a->path, &st) < 0) {
		int err = errno;

		return audit_fail(a, -err, "%s: %s", a->path, strerror(err));
	}
	a->db_dev = st.st_dev;
	a->db_ino = st.st_ino;
	a->wal_ino = 0; /* not there yet: the first check after it is made */
	if (wal_path(a, wal, sizeof(wal)) == 0 && stat(wal, &st) == 0) {
		a->wal_dev = st.st_dev;
		a->wal_ino = st.st_ino;
	}
	a->ident = true;
	return 0;
}

int audit_check_identity(struct audit *a)
{
	char wal[4200];
	struct stat st;

	if (!a->ident)
		return 0;
	if (stat(a->path, &st) < 0)
		return audit_fail(a, -ESTALE,
				  "%s: the database file is gone (%s): it was "
				  "deleted or moved while ward was writing it",
				  a->path, strerror(errno));
	if (st.st_dev != a->db_dev || st.st_ino != a->db_ino)
		return audit_fail(a, -ESTALE,
				  "%s: the database file was replaced by "
				  "another file while ward was writing it",
				  a->path);
	if (wal_path(a, wal, sizeof(wal)) < 0)
		return 0;
	if (stat(wal, &st) < 0) {
		if (!a->wal_ino)
			return 0;
		return audit_fail(a, -ESTALE,
				  "%s: the write-ahead log is gone (%s): it "
				  "was deleted or moved while ward was "
				  "writing it",
				  wal, strerror(errno));
	}
	if (!a->wal_ino) {
		a->wal_dev = st.st_dev;
		a->wal_ino = st.st_ino;
	} else if (st.st_dev != a->wal_dev || st.st_ino != a->wal_ino) {
		return audit_fail(a, -ESTALE,
				  "%s: the write-ahead log was replaced by "
				  "another file while ward was writing it",
				  wal);
	}
	return 0;
}

/* ----------------------------- reserve ----------------------------- */

/*
 * A full disk must not take the end of a run with it: the run is stopped
 * while the space to record its end is still there. After each commit of
 * a run (and before its first), the writer has the file system reserve
 * AUDIT_RESERVE_BYTES past the end of the WAL (fallocate, KEEP_SIZE: the
 * file does not grow; its next frames land in blocks already allocated).
 * When that fails for lack of space, the run's record fails at once
 * (ENOSPC), and what is queued and the run's end are written into the
 * reserve. File systems without fallocate go without it.
 */
int audit_reserve(struct audit *a)
{
	char wal[4200];
	struct stat st;
	int fd, r = 0;

	if (wal_path(a, wal, sizeof(wal)) < 0)
		return 0;
	fd = open(wal, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0)
		return 0; /* none yet: the first commit makes it */
	if (fstat(fd, &st) == 0 &&
	    fallocate(fd, FALLOC_FL_KEEP_SIZE, st.st_size,
		      AUDIT_RESERVE_BYTES) < 0 &&
	    (errno == ENOSPC || errno == EDQUOT))
		r = audit_fail(a, -ENOSPC,
			       "%s: the disk is full: less than %d MiB left "
			       "to record the rest of the run (%s)",
			       a->path, AUDIT_RESERVE_BYTES >> 20,
			       strerror(errno));
	close(fd);
	return r;
}

static int open_handle(struct audit *a, const char *path)
{
	int r;

	a->path = strdup(path);
	if (!a->path)
		return audit_fail(a, -ENOMEM, "out of memory");
	r = a->readonly ? check_exists(a, path) : create_file(a, path);
	if (!r)
		audit_wal_check(path, !a->readonly, &a->wal);
	if (!r)
		r = open_db(a);
	if (!r)
		r = audit_schema_setup(a);
	if (!r)
		r = configure(a);
	if (!r && !a->readonly)
		r = audit_writer_prepare(a);
	if (!r && !a->readonly)
		r = audit_seal_log_open(a);
	if (!r && !a->readonly && a->wal.lost)
		r = audit_wal_loss_record(a);
	if (!r && !a->readonly && a->v4_cols) {
		/* a head that is not ward's stops the runs here, before
		 * their code runs, not at their seal */
		struct audit_run_link l;

		r = audit_link_next(a, &l);
	}
	if (!r && !a->readonly)
		r = audit_identity_init(a);
	return r;
}

/* One attempt at audit_open(). */
static int open_once(const char *path, bool readonly, struct audit **out,
		     char *errbuf, size_t errlen)
{
	struct audit *a;
	int r;

	a = calloc(1, sizeof(*a));
	if (!a) {
		if (errlen)
			snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	a->readonly = readonly;
	a->tail = &a->head;
	a->seal_log_fd = -1;
	a->syslog_fd = -1;
	a->notes_tail = &a->notes;
	r = -pthread_mutex_init(&a->lock, NULL);
	if (r) {
		free(a);
		if (errlen)
			snprintf(errbuf, errlen, "pthread_mutex_init failed");
		return r;
	}
	r = open_handle(a, path);
	if (r) {
		if (errlen)
			snprintf(errbuf, errlen, "%s", a->errmsg);
		audit_close(a);
		return r;
	}
	*out = a;
	return 0;
}

static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/*
 * Wards that start at once on a new file can find it busy at once, not
 * after SQLite's busy timeout: while one of them turns the new file to WAL
 * mode (an exclusive lock) SQLite answers the others SQLITE_BUSY without
 * waiting where waiting could deadlock. Such an open starts over until
 * AUDIT_BUSY_MS have passed since the first attempt; a lock held for
 * longer is an error.
 */
int audit_open(const char *path, bool readonly, struct audit **out,
	       char *errbuf, size_t errlen)
{
	int r;

	*out = NULL;
	if (!path || !*path) {
		if (errlen)
			snprintf(errbuf, errlen, "no database path given");
		return -EINVAL;
	}
	long long end = now_ms() + AUDIT_BUSY_TIMEOUT_MS;
	while ((r = open_once(path, readonly, out, errbuf, errlen)) == -EBUSY &&
	       now_ms() < end)
		usleep(10 * 1000);
	return r;
}

void audit_close(struct audit *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	if (a->db && !a->readonly && a->run_id[0]) {
		if (!audit_end_unfinished(a))
			audit_checkpoint(a);
	} else if (a->db && !a->readonly) {
		audit_commit_batch(a);
	}
	audit_writer_finish(a);
	audit_seal_log_close(a);
	pthread_mutex_unlock(&a->lock);
	/* The WAL stays (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE): all of it is
	 * already committed, the end of the run synced and copied into the
	 * database file (audit_checkpoint()). */
	sqlite3_close_v2(a->db);
	pthread_mutex_destroy(&a->lock);
	if (a->keyring)
		explicit_bzero(a->keyring, a->n_keyring * sizeof(*a->keyring));
	free(a->keyring);
	free(a->path);
	free(a);
}

const char *audit_errmsg(const struct audit *a)
{
	return a ? a->errmsg : "no audit handle";
}

const struct audit_wal *audit_wal_state(const struct audit *a)
{
	return &a->wal;
}

const char *audit_path(const struct audit *a)
{
	return a->path;
}
