/*
 * vfs.c - the files SQLite opens, wrapped: I/O errors noted, and faults
 * injected in the test build.
 *
 * Every file SQLite opens through the "ward" VFS (open.c: database, -wal,
 * -shm) goes through these methods; the unix VFS underneath does the real
 * I/O. Two jobs:
 *
 * - A failed call is noted for the thread (audit_vfs_io_error): SQLite
 *   reports a read the disk failed with EIO as SQLITE_CORRUPT, "database
 *   disk image is malformed" (the unix VFS returns SQLITE_IOERR_CORRUPTFS,
 *   the b-tree layer makes it CORRUPT and forgets the errno), which sends
 *   a user looking for a damaged file when the disk failed. ward's error
 *   messages say "I/O error" instead when a call underneath failed.
 *
 * - Only with -DWARD_FAULTS (build/ward-faults, the unit tests that link
 *   libaudit-faults.a; never build/ward), the calls named by $WARD_FAULT
 *   fail as the kernel would have failed them:
 *
 *   WARD_FAULT=KIND:N[+]:ERR[,KIND:N[+]:ERR...]
 *
 *   KIND is write (xWrite), sync (xSync), lock (xLock of the database
 *   file, and each lock taken on the WAL index, xShmLock) or read (xRead);
 *   the calls of each kind are counted 1, 2, ... per process, over all
 *   files. The Nth call fails; with "+", it and every later one (a disk
 *   that stays full). ERR is EIO, ENOSPC or BUSY (lock only: held by
 *   someone else). A failing call does nothing, sets errno and returns
 *   what the unix VFS returns for that errno: SQLITE_IOERR_* for the call
 *   (a read's EIO: SQLITE_IOERR_CORRUPTFS), SQLITE_FULL for ENOSPC,
 *   SQLITE_BUSY.
 *
 *   KIND wal, "wal:BYTES:ENOSPC": the WAL cannot grow past BYTES (a disk
 *   that is full, where the space the WAL already has is reused): a write
 *   to it that would end past BYTES fails with ENOSPC.
 *
 *   WARD_FAULT_LOG=PATH: at exit, the process appends one line to PATH:
 *   "pid P write W sync S lock L read R injected I" (the calls of each
 *   kind it made, and how many failed), so that a test can learn how many
 *   write points a run has and sweep N over all of them.
 *
 *   WARD_FAULT_BUSY_MS=MS: the busy timeout instead of AUDIT_BUSY_MS (a
 *   sweep over lock faults does not wait 10 s per run).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/audit-int.h"

enum fkind { FK_WRITE, FK_SYNC, FK_LOCK, FK_READ, FK_WAL, FK__COUNT };

/* The last failed call underneath, per thread: an SQLITE_IOERR_* code. */
static _Thread_local int io_error;

static int noted(int rc)
{
	if ((rc & 0xff) == SQLITE_IOERR && rc != SQLITE_IOERR_SHORT_READ)
		io_error = rc;
	return rc;
}

int audit_vfs_io_error(void)
{
	int rc = io_error;

	io_error = 0;
	return rc;
}

#ifdef WARD_FAULTS
static const char *const kind_name[FK__COUNT] = { "write", "sync", "lock",
						  "read", "wal" };

#define MAX_RULES 8

struct frule {
	enum fkind kind;
	long n;
	bool persist;
	int err; /* EIO, ENOSPC, EBUSY */
};

static struct frule rules[MAX_RULES];
static int nrules;
static atomic_long calls[FK__COUNT];
static atomic_long injected;
static char log_path[512];

/* The error the call numbered n of this kind gets, or 0. */
static int fault_for(enum fkind k)
{
	long n = atomic_fetch_add(&calls[k], 1) + 1;

	for (int i = 0; i < nrules; i++)
		if (rules[i].kind == k &&
		    (n == rules[i].n || (rules[i].persist && n > rules[i].n))) {
			atomic_fetch_add(&injected, 1);
			return rules[i].err;
		}
	return 0;
}

/* A write to the WAL ending at end: ENOSPC past a "wal" rule's size. */
static int wal_fault(sqlite3_int64 end)
{
	for (int i = 0; i < nrules; i++)
		if (rules[i].kind == FK_WAL && end > rules[i].n) {
			atomic_fetch_add(&injected, 1);
			return ENOSPC;
		}
	return 0;
}

/* SQLite's code for err on a call of kind k (errno is set to err). */
static int sqlite_code(enum fkind k, int err)
{
	errno = err == EBUSY ? 0 : err;
	if (err == ENOSPC)
		return SQLITE_FULL;
	if (err == EBUSY)
		return SQLITE_BUSY;
	switch (k) {
	case FK_WRITE: return SQLITE_IOERR_WRITE;
	case FK_SYNC: return SQLITE_IOERR_FSYNC;
	case FK_LOCK: return SQLITE_IOERR_LOCK;
	case FK_READ: return SQLITE_IOERR_CORRUPTFS;
	default: return SQLITE_IOERR;
	}
}

#else
static inline int fault_for(enum fkind k)
{
	(void)k;
	return 0;
}

static inline int wal_fault(sqlite3_int64 end)
{
	(void)end;
	return 0;
}

static inline int sqlite_code(enum fkind k, int err)
{
	(void)k;
	(void)err;
	return SQLITE_IOERR;
}
#endif /* WARD_FAULTS */

struct ffile {
	sqlite3_file base;
	sqlite3_file *real; /* right after this struct, in the same block */
	bool wal;	    /* the -wal file */
};

static int (*inner_open)(sqlite3_vfs *, const char *, sqlite3_file *, int,
			 int *);
static int inner_size;

static sqlite3_file *real_of(sqlite3_file *f)
{
	return ((struct ffile *)f)->real;
}

static int f_close(sqlite3_file *f)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods ? r->pMethods->xClose(r) : SQLITE_OK;
}

static int f_read(sqlite3_file *f, void *buf, int amt, sqlite3_int64 off)
{
	sqlite3_file *r = real_of(f);
	int err = fault_for(FK_READ);

	if (err)
		return noted(sqlite_code(FK_READ, err));
	return noted(r->pMethods->xRead(r, buf, amt, off));
}

static int f_write(sqlite3_file *f, const void *buf, int amt, sqlite3_int64 off)
{
	sqlite3_file *r = real_of(f);
	int err = fault_for(FK_WRITE);

	if (!err && ((struct ffile *)f)->wal)
		err = wal_fault(off + amt);
	if (err)
		return noted(sqlite_code(FK_WRITE, err));
	return noted(r->pMethods->xWrite(r, buf, amt, off));
}

static int f_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	sqlite3_file *r = real_of(f);

	return noted(r->pMethods->xTruncate(r, size));
}

static int f_sync(sqlite3_file *f, int flags)
{
	sqlite3_file *r = real_of(f);
	int err = fault_for(FK_SYNC);

	if (err)
		return noted(sqlite_code(FK_SYNC, err));
	return noted(r->pMethods->xSync(r, flags));
}

static int f_size(sqlite3_file *f, sqlite3_int64 *size)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods->xFileSize(r, size);
}

static int f_lock(sqlite3_file *f, int level)
{
	sqlite3_file *r = real_of(f);
	int err = fault_for(FK_LOCK);

	if (err)
		return sqlite_code(FK_LOCK, err);
	return r->pMethods->xLock(r, level);
}

static int f_unlock(sqlite3_file *f, int level)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods->xUnlock(r, level);
}

static int f_check_reserved(sqlite3_file *f, int *out)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods->xCheckReservedLock(r, out);
}

static int f_control(sqlite3_file *f, int op, void *arg)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods->xFileControl(r, op, arg);
}

static int f_sector(sqlite3_file *f)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods->xSectorSize(r);
}

static int f_devchar(sqlite3_file *f)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods->xDeviceCharacteristics(r);
}

static int f_shm_map(sqlite3_file *f, int pg, int pgsz, int extend,
		     void volatile **pp)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods->xShmMap(r, pg, pgsz, extend, pp);
}

/* Only taking a lock counts (releasing one never fails). */
static int f_shm_lock(sqlite3_file *f, int ofst, int n, int flags)
{
	sqlite3_file *r = real_of(f);

	if (flags & SQLITE_SHM_LOCK) {
		int err = fault_for(FK_LOCK);

		if (err)
			return sqlite_code(FK_LOCK, err);
	}
	return r->pMethods->xShmLock(r, ofst, n, flags);
}

static void f_shm_barrier(sqlite3_file *f)
{
	sqlite3_file *r = real_of(f);

	r->pMethods->xShmBarrier(r);
}

static int f_shm_unmap(sqlite3_file *f, int del)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods->xShmUnmap(r, del);
}

static int f_fetch(sqlite3_file *f, sqlite3_int64 off, int amt, void **pp)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods->xFetch(r, off, amt, pp);
}

static int f_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods->xUnfetch(r, off, p);
}

/* One table per iVersion of the file underneath (1: no shm, 2: no
 * fetch): SQLite looks at iVersion before it calls the later ones. */
static sqlite3_io_methods methods[4];

static void methods_init(void)
{
	for (int v = 1; v <= 3; v++) {
		methods[v] = (sqlite3_io_methods){
			.iVersion = v,
			.xClose = f_close,
			.xRead = f_read,
			.xWrite = f_write,
			.xTruncate = f_truncate,
			.xSync = f_sync,
			.xFileSize = f_size,
			.xLock = f_lock,
			.xUnlock = f_unlock,
			.xCheckReservedLock = f_check_reserved,
			.xFileControl = f_control,
			.xSectorSize = f_sector,
			.xDeviceCharacteristics = f_devchar,
		};
		if (v >= 2) {
			methods[v].xShmMap = f_shm_map;
			methods[v].xShmLock = f_shm_lock;
			methods[v].xShmBarrier = f_shm_barrier;
			methods[v].xShmUnmap = f_shm_unmap;
		}
		if (v >= 3) {
			methods[v].xFetch = f_fetch;
			methods[v].xUnfetch = f_unfetch;
		}
	}
}

static int f_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file,
		  int flags, int *out)
{
	struct ffile *f = (struct ffile *)file;
	int rc;

	f->real = (sqlite3_file *)(f + 1);
	f->wal = (flags & SQLITE_OPEN_WAL) != 0;
	memset(f->real, 0, (size_t)inner_size);
	rc = inner_open(vfs, name, f->real, flags, out);
	if (f->real->pMethods) {
		int v = f->real->pMethods->iVersion;

		f->base.pMethods = &methods[v < 1 ? 1 : v > 3 ? 3 : v];
	} else {
		f->base.pMethods = NULL;
	}
	return rc;
}

#ifdef WARD_FAULTS
static void log_counts(void)
{
	FILE *fp = fopen(log_path, "ae");

	if (!fp)
		return;
	fprintf(fp, "pid %d", (int)getpid());
	for (int k = 0; k < FK__COUNT; k++)
		fprintf(fp, " %s %ld", kind_name[k], atomic_load(&calls[k]));
	fprintf(fp, " injected %ld\n", atomic_load(&injected));
	fclose(fp);
}

static int parse_err(const char *s, enum fkind k)
{
	if (k == FK_WAL)
		return strcmp(s, "ENOSPC") ? 0 : ENOSPC;
	if (!strcmp(s, "EIO"))
		return EIO;
	if (!strcmp(s, "ENOSPC"))
		return ENOSPC;
	if (!strcmp(s, "BUSY") && k == FK_LOCK)
		return EBUSY;
	return 0;
}

/* One KIND:N[+]:ERR; false if it does not parse. */
static bool parse_rule(char *s, struct frule *r)
{
	char *kind = strtok(s, ":"), *n = strtok(NULL, ":"),
	     *err = strtok(NULL, ":"), *end;
	int k;

	if (!kind || !n || !err || strtok(NULL, ":"))
		return false;
	for (k = 0; k < FK__COUNT && strcmp(kind, kind_name[k]); k++)
		;
	if (k == FK__COUNT)
		return false;
	r->kind = (enum fkind)k;
	r->n = strtol(n, &end, 10);
	r->persist = *end == '+';
	if (r->n < 1 || (*end && strcmp(end, "+")))
		return false;
	r->err = parse_err(err, r->kind);
	return r->err != 0;
}

int audit_faults_busy_ms(int dflt)
{
	const char *s = getenv("WARD_FAULT_BUSY_MS");
	long ms = s && *s ? strtol(s, NULL, 10) : 0;

	return ms > 0 && ms < 600000 ? (int)ms : dflt;
}

void audit_faults_set(const char *spec)
{
	char buf[512], *save = NULL;

	nrules = 0;
	for (int k = 0; k < FK__COUNT; k++)
		atomic_store(&calls[k], 0);
	atomic_store(&injected, 0);
	if (!spec || !*spec || strlen(spec) >= sizeof(buf))
		return;
	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *one = strtok_r(buf, ",", &save); one && nrules < MAX_RULES;
	     one = strtok_r(NULL, ",", &save)) {
		char tmp[128];

		snprintf(tmp, sizeof(tmp), "%s", one);
		if (parse_rule(tmp, &rules[nrules]))
			nrules++;
		else
			fprintf(stderr,
				"ward-faults: WARD_FAULT: '%s' is not "
				"KIND:N[+]:ERR (write, sync, lock, read; EIO, "
				"ENOSPC, BUSY)\n",
				one);
	}
}

long audit_faults_calls(const char *kind)
{
	for (int k = 0; k < FK__COUNT; k++)
		if (!strcmp(kind, kind_name[k]))
			return atomic_load(&calls[k]);
	return -1;
}

long audit_faults_injected(void)
{
	return atomic_load(&injected);
}

#endif /* WARD_FAULTS */

void audit_vfs_wrap(sqlite3_vfs *vfs)
{
	methods_init();
	inner_open = vfs->xOpen;
	inner_size = vfs->szOsFile;
	vfs->szOsFile = (int)sizeof(struct ffile) + inner_size;
	vfs->xOpen = f_open;
#ifdef WARD_FAULTS
	const char *lp = getenv("WARD_FAULT_LOG");

	audit_faults_set(getenv("WARD_FAULT"));
	if (lp && *lp) {
		snprintf(log_path, sizeof(log_path), "%s", lp);
		atexit(log_counts);
	}
#endif
}
