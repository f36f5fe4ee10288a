/*
 * walcheck.c - does the WAL still hold what was committed to it?
 *
 * SQLite reads a WAL up to its first frame whose checksum fails and
 * ignores the rest; a WAL deleted or cut short loses its transactions
 * silently. ward copies the WAL into the database file after each run's
 * end (audit_checkpoint()), so what is at stake is only what was committed
 * after the last copy. Two witnesses tell whether that is still readable,
 * both read before SQLite opens the file (its first connection rebuilds
 * the index): the WAL index in DB-shm (the number of committed frames,
 * mxFrame, how many of them are in the database file, nBackfill, and the
 * WAL's salt), and the WAL's own frames (each checksum covers all before
 * it; a frame carries the WAL's salt). Formats: SQLite's "WAL-mode File
 * Format" (fileformat2.html, sections 4.1-4.4; wal.c, WalIndexHdr and
 * WalCkptInfo).
 */
#include "audit/audit-int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WAL_HDR	  32
#define FRAME_HDR 24
#define SHM_HDR	  48
#define SHM_READ  (2 * SHM_HDR + 40) /* two headers, then WalCkptInfo */

static uint32_t rd32(const uint8_t *p, bool be)
{
	if (be)
		return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
		       (uint32_t)p[2] << 8 | p[3];
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[1] << 8 | p[0];
}

/* SQLite's WAL checksum over n bytes (a multiple of 8), continuing s. */
static void cksum(bool be, const uint8_t *b, size_t n, uint32_t s[2])
{
	for (size_t i = 0; i + 8 <= n; i += 8) {
		s[0] += rd32(b + i, be) + s[1];
		s[1] += rd32(b + i + 4, be) + s[0];
	}
}

static ssize_t read_all(int fd, void *buf, size_t n, off_t off)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r =
			pread(fd, (char *)buf + got, n - got, off + (off_t)got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -1 : (ssize_t)got;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/* The WAL index header of DB-shm, when it is there and whole (both copies
 * equal, initialized, checksum right; x86 and most: native byte order). */
struct index {
	bool valid;
	uint8_t raw[SHM_HDR];
	uint32_t mx_frame, backfill;
	uint8_t salt[8];
};

static void read_index(const char *path, struct index *ix)
{
	uint8_t b[SHM_READ];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	bool le = true;
	uint32_t s[2] = { 0, 0 };

	memset(ix, 0, sizeof(*ix));
	if (fd < 0)
		return;
	if (read_all(fd, b, sizeof(b), 0) == (ssize_t)sizeof(b) &&
	    !memcmp(b, b + SHM_HDR, SHM_HDR)) {
		uint16_t one = 1;

		le = *(uint8_t *)&one == 1;
		cksum(!le, b, 40, s);
		ix->valid = rd32(b, !le) == 3007000 && b[12] == 1 &&
			    s[0] == rd32(b + 40, !le) &&
			    s[1] == rd32(b + 44, !le);
		memcpy(ix->raw, b, SHM_HDR);
		ix->mx_frame = rd32(b + 16, !le);
		memcpy(ix->salt, b + 32, 8);
		ix->backfill = rd32(b + 2 * SHM_HDR, !le);
	}
	close(fd);
}

/* What DB-wal holds: its salt, the committed frames readable from its
 * start, and whether frames of the same WAL follow a broken one. */
struct wal {
	bool present, header_ok;
	uint8_t salt[8];
	uint32_t frames;     /* committed frames readable */
	bool damaged;	     /* a commit frame of this WAL past a bad frame */
	long long bad_frame; /* the first bad frame (1-based), 0: none */
};

static void read_wal(const char *path, uint32_t upto, bool quick, struct wal *w)
{
	uint8_t h[WAL_HDR], fh[FRAME_HDR];
	uint32_t s[2] = { 0, 0 }, magic, psz, i;
	uint8_t *page = NULL;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	bool be;

	memset(w, 0, sizeof(*w));
	if (fd < 0)
		return;
	w->present = true;
	if (fstat(fd, &st) || read_all(fd, h, WAL_HDR, 0) != WAL_HDR)
		goto out;
	magic = rd32(h, true);
	psz = rd32(h + 8, true);
	be = magic & 1;
	cksum(be, h, 24, s);
	if ((magic & ~1u) != 0x377f0682 || rd32(h + 4, true) != 3007000 ||
	    psz < 512 || psz > 65536 || (psz & (psz - 1)) ||
	    s[0] != rd32(h + 24, true) || s[1] != rd32(h + 28, true))
		goto out;
	w->header_ok = true;
	memcpy(w->salt, h + 16, 8);
	/* quick: the index's last frame is there, of this WAL, a commit;
	 * the checksums of the frames before it are left to ward verify */
	if (quick && upto) {
		off_t off = WAL_HDR + (off_t)(upto - 1) * (FRAME_HDR + psz);

		if (off + FRAME_HDR + (off_t)psz <= st.st_size &&
		    read_all(fd, fh, FRAME_HDR, off) == FRAME_HDR &&
		    !memcmp(fh + 8, w->salt, 8) && rd32(fh + 4, true)) {
			w->frames = upto;
			goto out;
		}
	}
	page = malloc(psz);
	if (!page)
		goto out;
	for (i = 0;; i++) {
		off_t off = WAL_HDR + (off_t)i * (FRAME_HDR + psz);
		bool ok;

		if ((upto && i >= upto) ||
		    off + FRAME_HDR + (off_t)psz > st.st_size ||
		    read_all(fd, fh, FRAME_HDR, off) != FRAME_HDR ||
		    read_all(fd, page, psz, off + FRAME_HDR) != (ssize_t)psz)
			break;
		ok = !memcmp(fh + 8, w->salt, 8) && rd32(fh, true) != 0;
		if (ok && !w->bad_frame) {
			cksum(be, fh, 8, s);
			cksum(be, page, psz, s);
			ok = s[0] == rd32(fh + 16, true) &&
			     s[1] == rd32(fh + 20, true);
			if (ok && rd32(fh + 4, true))
				w->frames = i + 1;
			if (!ok)
				w->bad_frame = i + 1;
		} else if (w->bad_frame && ok && rd32(fh + 4, true)) {
			/* this WAL's commit after the break: a crash leaves
			 * a torn frame only at the end */
			w->damaged = true;
		} else if (!w->bad_frame && memcmp(fh + 8, w->salt, 8)) {
			break; /* an older WAL's frames: the end */
		}
	}
out:
	free(page);
	close(fd);
}

int audit_wal_check(const char *db_path, bool quick, struct audit_wal *out)
{
	char shm[4200], walp[4200];
	struct index a, b;
	struct wal w;

	memset(out, 0, sizeof(*out));
	if (snprintf(shm, sizeof(shm), "%s-shm", db_path) >= (int)sizeof(shm) ||
	    snprintf(walp, sizeof(walp), "%s-wal", db_path) >=
		    (int)sizeof(walp))
		return -ENAMETOOLONG;
	/* a ward writing meanwhile moves the index: read it again after the
	 * WAL, and start over when it moved */
	for (int tries = 0;; tries++) {
		read_index(shm, &a);
		/* everything committed is in the database file: the WAL
		 * holds nothing to lose */
		if (a.valid && a.mx_frame <= a.backfill)
			return 0;
		/* with an index, only its committed frames matter (a scan
		 * past a bad frame looks for later commits of the same WAL
		 * only without one) */
		read_wal(walp, a.valid ? a.mx_frame : 0, quick, &w);
		read_index(shm, &b);
		/* the copy count too: a copy that ended meanwhile lets a
		 * writer start the WAL over, a new salt in the file before
		 * its first commit moves the index */
		if ((a.valid == b.valid && !memcmp(a.raw, b.raw, SHM_HDR) &&
		     a.backfill == b.backfill) ||
		    tries == 20)
			break;
		usleep(5000);
	}
	out->index = a.valid;
	out->wal = w.present;
	out->index_frames = a.valid ? a.mx_frame : 0;
	out->backfilled = a.valid ? a.backfill : 0;
	out->wal_frames = w.frames;
	if (a.valid && a.mx_frame > a.backfill) {
		long long from = (long long)a.backfill + 1;

		if (!w.present)
			snprintf(out->what, sizeof(out->what),
				 "%s-wal is missing: the transactions in its "
				 "frames %lld to %u, committed and not yet "
				 "copied into the database file, are lost",
				 db_path, from, a.mx_frame);
		else if (!w.header_ok || memcmp(w.salt, a.salt, 8))
			snprintf(
				out->what, sizeof(out->what),
				"%s-wal is %s: the transactions in its frames "
				"%lld to %u, committed and not yet copied into "
				"the database file, are lost",
				db_path,
				w.header_ok ? "another WAL than the one "
					      "committed to (replaced)"
					    : "damaged (its header is not "
					      "SQLite's)",
				from, a.mx_frame);
		else if (w.frames < a.mx_frame)
			snprintf(out->what, sizeof(out->what),
				 "%s-wal is %s: committed frames %u to %u "
				 "cannot be read, and the transactions in "
				 "them are lost",
				 db_path, w.bad_frame ? "damaged" : "cut short",
				 w.frames + 1, a.mx_frame);
	} else if (w.damaged) {
		snprintf(out->what, sizeof(out->what),
			 "%s-wal is damaged at frame %lld: transactions "
			 "committed after it cannot be read and are lost",
			 db_path, w.bad_frame);
	}
	out->lost = out->what[0] != '\0';
	return 0;
}
