/*
 * anchor.c - what ties each run's seal to the rest of the record and to
 * the world outside the database (docs/schema.md, "The chain of runs";
 * docs/security.md, "The record"):
 *
 *  - the chain of runs: each seal (version 2) commits to its number n in
 *    the database and to the run sealed before it (its id and seal), so a
 *    run deleted, inserted or put in another place is seen by `ward verify
 *    --all`. The order is seal order: the number is taken under SQLite's
 *    write lock, in the transaction that writes the seal, from the head
 *    kept in ward_meta ('run_chain_head'). A run that is never sealed by
 *    its ward (killed) is sealed by the reaper later, and takes its place
 *    then: honest histories have no holes.
 *  - the seal log ($WARD_SEAL_LOG, ward run/serve/mcp --seal-log): one
 *    line per seal, appended (O_APPEND) and synced after the seal commits;
 *    `ward verify --seal-log FILE` holds the database to it.
 *  - the WAL: copied into the database file after each run's end, and
 *    checked by `ward verify` before SQLite reads it (a WAL that lost
 *    committed transactions is reported, not silently ignored).
 */
#include "audit/audit-int.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define HEAD_KEY "run_chain_head"

/* ------------------------- the chain of runs ------------------------- */

static bool is_hex(const char *s, size_t nbytes)
{
	uint8_t b[WARD_SHA256_LEN];

	return s && nbytes <= sizeof(b) && strlen(s) == 2 * nbytes &&
	       !audit_unhex(s, nbytes, b);
}

/* {"n": N, "run": ID, "seal": HEX} (the head) into l as the place before
 * the next one. */
static int head_parse(const char *text, struct audit_run_link *l)
{
	json_t *o = json_loads(text, 0, NULL);
	json_t *n = json_object_get(o, "n");
	const char *run = json_string_value(json_object_get(o, "run"));
	const char *seal = json_string_value(json_object_get(o, "seal"));
	int r = -1;

	if (json_is_integer(n) && json_integer_value(n) >= 1 && run &&
	    strlen(run) == AUDIT_RUN_ID_LEN && is_hex(seal, WARD_SHA256_LEN)) {
		l->n = json_integer_value(n) + 1;
		l->has_prev = true;
		snprintf(l->prev_run, sizeof(l->prev_run), "%s", run);
		audit_unhex(seal, WARD_SHA256_LEN, l->prev_seal);
		r = 0;
	}
	json_decref(o);
	return r;
}

int audit_link_next(struct audit *a, struct audit_run_link *l)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(
		a->db, "SELECT value FROM ward_meta WHERE key = '" HEAD_KEY "'",
		-1, &st, NULL);
	int r = 0;

	memset(l, 0, sizeof(*l));
	l->n = 1;
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const char *v = (const char *)sqlite3_column_text(st, 0);

		if (!v || head_parse(v, l))
			r = audit_fail(
				a, -EPROTO,
				"%s: ward_meta's %s is not ward's (the "
				"database was edited), so no run can be "
				"sealed after it; `ward verify --all` says "
				"what else changed. To go on, delete that row "
				"(sqlite3 %s \"DELETE FROM ward_meta WHERE "
				"key = '%s'\"): the chain of runs starts "
				"again at #1, and verify reports the restart",
				a->path, HEAD_KEY, a->path, HEAD_KEY);
	} else if (rc != SQLITE_DONE) {
		r = audit_sqlfail(a, rc, "read the chain of runs' head");
	}
	sqlite3_finalize(st);
	return r;
}

/* Seals go outside the database: a seal log, the system log, or both. */
static bool anchored(const struct audit *a)
{
	return a->seal_log_fd >= 0 || a->syslog_fd >= 0;
}

static void now_text(char *buf, size_t n)
{
	struct timespec ts;
	struct tm tm;
	char s[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, n, "%s.%09ldZ", s, ts.tv_nsec);
}

/* The seal log's line for a seal (without its newline): l is NULL for the
 * line of a session's cells sealed by its server. */
static char *log_line(struct audit *a, const char *run_id,
		      const struct audit_run_link *l, const char *seal_hex,
		      const char *sealed_by, const char *cells_seal)
{
	char prev[2 * WARD_SHA256_LEN + 1], when[48], db[PATH_MAX];
	json_t *o = json_object();
	char *text;

	if (!realpath(a->path, db))
		snprintf(db, sizeof(db), "%s", a->path);
	now_text(when, sizeof(when));
	json_object_set_new(o, "ward_seal", json_integer(1));
	if (l)
		json_object_set_new(o, "n", json_integer(l->n));
	else
		json_object_set_new(o, "kind", json_string("cells"));
	json_object_set_new(o, "run", json_string(run_id));
	json_object_set_new(o, "seal", json_string(seal_hex));
	if (l) {
		audit_hex(l->prev_seal, WARD_SHA256_LEN, prev);
		json_object_set_new(o, "prev_run",
				    l->has_prev ? json_string(l->prev_run)
						: json_null());
		json_object_set_new(o, "prev",
				    l->has_prev ? json_string(prev)
						: json_null());
	}
	json_object_set_new(o, "cells_seal",
			    cells_seal ? json_string(cells_seal) : json_null());
	json_object_set_new(o, "sealed_by", json_string(sealed_by));
	json_object_set_new(o, "key_id",
			    a->key.loaded ? json_string(a->key.id)
					  : json_null());
	json_object_set_new(o, "time", json_string(when));
	json_object_set_new(o, "db", json_string(db));
	text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	return text;
}

static int note_add(struct audit *a, const char *run_id, const char *line)
{
	size_t n = strlen(line);
	struct audit_seal_note *x = malloc(sizeof(*x) + n + 2);

	if (!x)
		return -ENOMEM;
	snprintf(x->run, sizeof(x->run), "%s", run_id);
	memcpy(x->line, line, n);
	x->line[n] = '\n';
	x->line[n + 1] = '\0';
	x->next = NULL;
	if (!a->notes_tail)
		a->notes_tail = &a->notes;
	*a->notes_tail = x;
	a->notes_tail = &x->next;
	return 0;
}

int audit_link_store(struct audit *a, const char *run_id,
		     const struct audit_run_link *l,
		     const uint8_t seal[WARD_SHA256_LEN], const char *sealed_by,
		     const char *cells_seal)
{
	char hx[2 * WARD_SHA256_LEN + 1];
	sqlite3_stmt *st = NULL;
	json_t *o;
	char *text = NULL, *line = NULL;
	int rc, r = 0;

	audit_hex(seal, WARD_SHA256_LEN, hx);
	o = json_pack("{s:I, s:s, s:s}", "n", (json_int_t)l->n, "run", run_id,
		      "seal", hx);
	text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(o);
	if (!text)
		return audit_fail(a, -ENOMEM, "out of memory");
	rc = sqlite3_prepare_v2(a->db,
				"INSERT OR REPLACE INTO ward_meta(key, value)"
				" VALUES ('" HEAD_KEY "', ?1)",
				-1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
	}
	if (rc != SQLITE_DONE)
		r = audit_sqlfail(a, rc, "move the chain of runs' head");
	sqlite3_finalize(st);
	free(text);
	if (!r && anchored(a)) {
		line = log_line(a, run_id, l, hx, sealed_by, cells_seal);
		if (!line || note_add(a, run_id, line))
			r = audit_fail(a, -ENOMEM, "out of memory");
		free(line);
	}
	return r;
}

int audit_cells_note(struct audit *a, const char *run_id, const char *seal,
		     const char *cells_seal)
{
	char *line;
	int r = 0;

	if (!anchored(a))
		return 0;
	line = log_line(a, run_id, NULL, seal, "server", cells_seal);
	if (!line || note_add(a, run_id, line))
		r = audit_fail(a, -ENOMEM, "out of memory");
	free(line);
	return r;
}

int audit_link_parse(json_t *chain, struct audit_run_link *l)
{
	json_t *n = json_object_get(chain, "n");
	json_t *prev = json_object_get(chain, "prev");

	memset(l, 0, sizeof(*l));
	if (!json_is_integer(n) || json_integer_value(n) < 1)
		return -1;
	l->n = json_integer_value(n);
	if (json_is_null(prev))
		return l->n == 1 ? 0 : -1;
	const char *run = json_string_value(json_object_get(prev, "run"));
	const char *seal = json_string_value(json_object_get(prev, "seal"));

	if (!run || strlen(run) != AUDIT_RUN_ID_LEN ||
	    !is_hex(seal, WARD_SHA256_LEN) || l->n < 2)
		return -1;
	l->has_prev = true;
	snprintf(l->prev_run, sizeof(l->prev_run), "%s", run);
	audit_unhex(seal, WARD_SHA256_LEN, l->prev_seal);
	return 0;
}

/* ----------------------------- seal log ----------------------------- */

/* $WARD_SEAL_SYSLOG: the system log's socket (ward --seal-syslog sets
 * /dev/log), connected now so that a missing one is said before any code
 * runs. */
static int syslog_open(struct audit *a, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return audit_fail(a, -ENAMETOOLONG,
				  "system log %s: path too long", path);
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int err = errno;

		if (fd >= 0)
			close(fd);
		return audit_fail(a, -err,
				  "system log %s: %s (is a syslog daemon or "
				  "journald running?)",
				  path, strerror(err));
	}
	a->syslog_path = strdup(path);
	if (!a->syslog_path) {
		close(fd);
		return audit_fail(a, -ENOMEM, "out of memory");
	}
	a->syslog_fd = fd;
	return 0;
}

/* One datagram per line: "<85>ward-seal: LINE" (authpriv.notice), so that
 * `journalctl -t ward-seal -o cat` gives the seal log back. */
static int syslog_send(struct audit *a, const char *line)
{
	char msg[2048];
	size_t n = strcspn(line, "\n");
	int len =
		snprintf(msg, sizeof(msg), "<85>ward-seal: %.*s", (int)n, line);

	if (len < 0 || (size_t)len >= sizeof(msg))
		return -EMSGSIZE;
	while (send(a->syslog_fd, msg, (size_t)len, MSG_NOSIGNAL) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

int audit_seal_log_open(struct audit *a)
{
	const char *path = getenv("WARD_SEAL_LOG");
	const char *sys = getenv("WARD_SEAL_SYSLOG");
	struct stat st;
	int fd;

	a->seal_log_fd = -1;
	a->syslog_fd = -1;
	if (sys && *sys) {
		int r = syslog_open(a, sys);

		if (r)
			return r;
	}
	if (!path || !*path)
		return 0;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY,
		  0600);
	if (fd < 0)
		return audit_fail(a, -errno, "seal log %s: %s", path,
				  strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return audit_fail(a, -EINVAL, "seal log %s: not a regular file",
				  path);
	}
	/* a log made now (or still empty) is in its directory for good
	 * before a seal is written to it: after a power loss the seals
	 * that were synced are there, not a missing file */
	int r = st.st_size == 0 ? audit_sync_parent(path) : 0;
	if (r) {
		close(fd);
		return audit_fail(a, r, "seal log %s: cannot sync its "
				  "directory: %s", path, strerror(-r));
	}
	a->seal_log = strdup(path);
	if (!a->seal_log) {
		close(fd);
		return audit_fail(a, -ENOMEM, "out of memory");
	}
	a->seal_log_fd = fd;
	return 0;
}

void audit_seal_log_close(struct audit *a)
{
	audit_seals_done(a, false);
	if (a->seal_log_fd >= 0)
		close(a->seal_log_fd);
	if (a->syslog_fd >= 0)
		close(a->syslog_fd);
	a->seal_log_fd = a->syslog_fd = -1;
	free(a->seal_log);
	free(a->syslog_path);
	a->seal_log = a->syslog_path = NULL;
}

/* Every line in one write (O_APPEND: not mixed with another ward's), then
 * synced. */
static int log_write(struct audit *a, const char *buf, size_t n)
{
	struct stat before, after;
	size_t done = 0;
	bool sized = fstat(a->seal_log_fd, &before) == 0;

	while (done < n) {
		ssize_t w = write(a->seal_log_fd, buf + done, n - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int err = w < 0 ? errno : EIO;

			/* a torn line would run into the next ward's: take
			 * it back when no one appended since */
			if (done && sized && !fstat(a->seal_log_fd, &after) &&
			    after.st_size == before.st_size + (off_t)done &&
			    ftruncate(a->seal_log_fd, before.st_size))
				err = err ? err : EIO;
			return -err;
		}
		done += (size_t)w;
	}
	return fsync(a->seal_log_fd) ? -errno : 0;
}

void audit_seals_done(struct audit *a, bool committed)
{
	struct audit_seal_note *x = a->notes, *next;
	size_t len = 0;
	char *buf = NULL, runs[200] = "";
	int r = 0, rs = 0;

	for (struct audit_seal_note *y = x; committed && y; y = y->next)
		len += strlen(y->line);
	if (len && !(buf = malloc(len + 1)))
		r = -ENOMEM;
	len = 0;
	for (; x; x = next) {
		next = x->next;
		if (buf) {
			memcpy(buf + len, x->line, strlen(x->line));
			len += strlen(x->line);
		}
		if (committed && a->syslog_fd >= 0 && !rs)
			rs = syslog_send(a, x->line);
		if (committed && !strstr(runs, x->run) &&
		    strlen(runs) + strlen(x->run) + 3 < sizeof(runs))
			snprintf(runs + strlen(runs),
				 sizeof(runs) - strlen(runs), "%s%s",
				 runs[0] ? ", " : "", x->run);
		free(x);
	}
	a->notes = NULL;
	a->notes_tail = &a->notes;
	if (buf && a->seal_log_fd >= 0)
		r = log_write(a, buf, len);
	free(buf);
	if (r && !a->seal_log_err[0])
		snprintf(a->seal_log_err, sizeof(a->seal_log_err),
			 "seal log %s: %s: the run is recorded and sealed in "
			 "%s, but its seal is not in the log (run %s)",
			 a->seal_log, strerror(-r), a->path, runs);
	if (rs && !a->seal_log_err[0])
		snprintf(a->seal_log_err, sizeof(a->seal_log_err),
			 "system log %s: %s: the run is recorded and sealed "
			 "in %s, but its seal is not in the system log (run "
			 "%s)",
			 a->syslog_path, strerror(-rs), a->path, runs);
}

const char *audit_seal_log_error(const struct audit *a)
{
	return a && a->seal_log_err[0] ? a->seal_log_err : NULL;
}

/* ------------------------------- WAL ------------------------------- */

/* After a run's end: copy the WAL into the database file (PASSIVE: it
 * waits for no one; what a reader still needs stays in the WAL until the
 * next end), so the main file holds every ended run and losing the WAL
 * can only cost runs still going. Past WAL_KEEP_BYTES the WAL is also
 * truncated: the next open would read it all to rebuild its index. */
#define WAL_KEEP_BYTES (1 << 20)

void audit_checkpoint(struct audit *a)
{
	char wal[4200];
	struct stat st;
	int mode = SQLITE_CHECKPOINT_PASSIVE;

	snprintf(wal, sizeof(wal), "%s-wal", a->path);
	if (stat(wal, &st) == 0 && st.st_size > WAL_KEEP_BYTES)
		mode = SQLITE_CHECKPOINT_TRUNCATE;
	sqlite3_wal_checkpoint_v2(a->db, NULL, mode, NULL, NULL);
}

/* ------------------------------ verify ------------------------------ */

/* A run in the chain of runs, as runs.chain holds it. */
struct link_entry {
	long long n;
	char id[AUDIT_RUN_ID_LEN + 1];
	char seal[2 * WARD_SHA256_LEN + 1];
	bool has_prev;
	char prev_run[AUDIT_RUN_ID_LEN + 1];
	char prev_seal[2 * WARD_SHA256_LEN + 1];
	char key_id[17];
	int group; /* 0: this database's own chain; i + 1: merged chain i */
	bool logged;
	char cells_seal[2 * WARD_SHA256_LEN + 1];   /* in the database */
	char cells_logged[2 * WARD_SHA256_LEN + 1]; /* the last logged */
	long long cells_line;
	char cells_when[48];
};

/* A chain merged in (ward merge): its key id and its head as its database
 * had it, in ward_meta as IMPORTED_KEY || key id. */
struct merged_chain {
	char key_id[17];
	struct audit_run_link head;
	bool head_ok;
	bool keyed; /* its key is in the keyring */
};

struct lctx {
	struct merged_chain *merged;
	size_t n_merged;
	struct audit_links *out;
	int (*fn)(const struct audit_problem *, void *);
	void *arg;
	int stop;
	struct link_entry *e; /* by n */
	size_t n, cap;
	struct link_entry **by_id;
};

__attribute__((format(printf, 4, 5))) static void
lproblem(struct lctx *c, const char *table, long long row, const char *fmt, ...)
{
	struct audit_problem p = { .table = table, .row = row };
	char what[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	p.what = what;
	c->out->problems++;
	if (c->fn && !c->stop)
		c->stop = c->fn(&p, c->arg);
}

static int entry_add(struct lctx *c, const char *id, json_t *o)
{
	struct audit_run_link l;
	const char *seal = json_string_value(json_object_get(o, "seal"));
	const char *kid = json_string_value(json_object_get(o, "key_id"));
	const char *cells = json_string_value(json_object_get(o, "cells_seal"));
	struct link_entry *x;

	/* a malformed seal is the run's own problem (audit_verify_run) */
	if (audit_link_parse(o, &l) || !is_hex(seal, WARD_SHA256_LEN) ||
	    strlen(id) != AUDIT_RUN_ID_LEN)
		return 0;
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		void *p = realloc(c->e, cap * sizeof(*c->e));

		if (!p)
			return -ENOMEM;
		c->e = p;
		c->cap = cap;
	}
	x = &c->e[c->n++];
	memset(x, 0, sizeof(*x));
	x->n = l.n;
	snprintf(x->id, sizeof(x->id), "%s", id);
	snprintf(x->seal, sizeof(x->seal), "%s", seal);
	snprintf(x->key_id, sizeof(x->key_id), "%s", kid ? kid : "");
	snprintf(x->cells_seal, sizeof(x->cells_seal), "%s",
		 is_hex(cells, WARD_SHA256_LEN) ? cells : "");
	x->has_prev = l.has_prev;
	if (l.has_prev) {
		snprintf(x->prev_run, sizeof(x->prev_run), "%s", l.prev_run);
		audit_hex(l.prev_seal, WARD_SHA256_LEN, x->prev_seal);
	}
	return 0;
}

/* The chains merged in, and each run's group: the merged chain whose key
 * sealed it, else the database's own (0). */
static int read_merged(struct audit *a, struct lctx *c, int *rc)
{
	sqlite3_stmt *st = NULL;
	size_t pre = strlen(AUDIT_MERGED_KEY);

	*rc = sqlite3_prepare_v2(a->db,
				 "SELECT key, value FROM ward_meta WHERE"
				 " substr(key, 1, ?1) = ?2 ORDER BY key",
				 -1, &st, NULL);
	if (*rc == SQLITE_OK) {
		sqlite3_bind_int(st, 1, (int)pre);
		sqlite3_bind_text(st, 2, AUDIT_MERGED_KEY, -1, SQLITE_STATIC);
	}
	while (*rc == SQLITE_OK && (*rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *k = (const char *)sqlite3_column_text(st, 0);
		const char *v = (const char *)sqlite3_column_text(st, 1);
		json_t *o = v ? json_loads(v, 0, NULL) : NULL;
		const char *head =
			json_string_value(json_object_get(o, "head"));
		struct merged_chain *m = realloc(
			c->merged, (c->n_merged + 1) * sizeof(*c->merged));

		if (!m) {
			json_decref(o);
			sqlite3_finalize(st);
			return -ENOMEM;
		}
		c->merged = m;
		m = &c->merged[c->n_merged++];
		memset(m, 0, sizeof(*m));
		snprintf(m->key_id, sizeof(m->key_id), "%s", k + pre);
		m->head_ok = head && !head_parse(head, &m->head);
		m->keyed = audit_keyring_find(a, m->key_id) != NULL;
		json_decref(o);
		*rc = SQLITE_OK;
	}
	if (*rc == SQLITE_DONE)
		*rc = SQLITE_OK;
	sqlite3_finalize(st);
	for (size_t i = 0; i < c->n; i++)
		for (size_t j = 0; j < c->n_merged; j++)
			if (!strcmp(c->e[i].key_id, c->merged[j].key_id))
				c->e[i].group = (int)j + 1;
	return 0;
}

/* Every chained run and the head, in one read transaction (a ward sealing
 * meanwhile moves both at once). */
static int read_links(struct audit *a, struct lctx *c, bool chain,
		      struct audit_run_link *head, bool *has_head)
{
	sqlite3_stmt *st = NULL;
	int r = 0, rc = sqlite3_exec(a->db, "BEGIN", NULL, NULL, NULL);

	*has_head = false;
	if (rc == SQLITE_OK && chain)
		rc = sqlite3_prepare_v2(a->db,
					"SELECT id, chain FROM runs WHERE"
					" chain IS NOT NULL",
					-1, &st, NULL);
	while (st && rc == SQLITE_OK && !r &&
	       (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *id = (const char *)sqlite3_column_text(st, 0);
		json_t *o = json_loads((const char *)sqlite3_column_text(st, 1),
				       0, NULL);

		if (id &&
		    json_integer_value(json_object_get(o, "version")) >= 2)
			r = entry_add(c, id, o);
		else if (id && json_is_object(o))
			c->out->older++;
		json_decref(o);
		rc = SQLITE_OK;
	}
	if (rc == SQLITE_DONE)
		rc = SQLITE_OK;
	sqlite3_finalize(st);
	st = NULL;
	if (rc == SQLITE_OK && !r)
		rc = sqlite3_prepare_v2(a->db,
					"SELECT value FROM ward_meta WHERE"
					" key = '" HEAD_KEY "'",
					-1, &st, NULL);
	if (rc == SQLITE_OK && !r && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *v = (const char *)sqlite3_column_text(st, 0);

		*has_head = true;
		if (!v || head_parse(v, head))
			head->n = 0; /* there, but not ward's */
		rc = SQLITE_OK;
	} else if (rc == SQLITE_DONE) {
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	if (rc == SQLITE_OK && !r)
		r = read_merged(a, c, &rc);
	if (!sqlite3_get_autocommit(a->db))
		sqlite3_exec(a->db, "COMMIT", NULL, NULL, NULL);
	if (r)
		return audit_fail(a, r, "out of memory");
	return rc == SQLITE_OK ? 0 : audit_sqlfail(a, rc, a->path);
}

static int by_n(const void *x, const void *y)
{
	const struct link_entry *a = x, *b = y;

	if (a->group != b->group)
		return a->group < b->group ? -1 : 1;
	if (a->n != b->n)
		return a->n < b->n ? -1 : 1;
	return strcmp(a->id, b->id);
}

static int by_id(const void *x, const void *y)
{
	const struct link_entry *const *a = x, *const *b = y;

	return strcmp((*a)->id, (*b)->id);
}

static struct link_entry *find_id(struct lctx *c, const char *id)
{
	struct link_entry key, *kp = &key, **hit;

	if (!c->n) /* by_id is NULL then: no bsearch on it */
		return NULL;
	snprintf(key.id, sizeof(key.id), "%s", id);
	hit = bsearch(&kp, c->by_id, c->n, sizeof(*c->by_id), by_id);
	return hit ? *hit : NULL;
}

#define CHAIN "chain of runs"

/* Places expect..x->n - 1 are empty: the runs there were deleted. */
static void missing(struct lctx *c, long long expect,
		    const struct link_entry *x)
{
	if (x->n - 1 == expect)
		lproblem(c, CHAIN, expect,
			 "run %s (sealed #%lld, before run %s) is missing: "
			 "deleted",
			 x->prev_run, expect, x->id);
	else
		lproblem(c, CHAIN, expect,
			 "runs #%lld to #%lld are missing: deleted (the last "
			 "of them was run %s, sealed before run %s)",
			 expect, x->n - 1, x->prev_run, x->id);
}

/* One chain: the runs e[0..n-1] (by place) and its head, named hname in
 * messages. own: the database's own chain (out->head_n, head_run). */
static void check_group(struct lctx *c, const struct link_entry *e, size_t n,
			const struct audit_run_link *head, bool has_head,
			const char *hname, bool own)
{
	long long expect = 1, head_n;
	const struct link_entry *last = NULL;

	for (size_t i = 0; i < n; i++) {
		const struct link_entry *x = &e[i];

		if (last && x->n == last->n) {
			lproblem(c, CHAIN, x->n,
				 "runs %s and %s both have place #%lld: a run "
				 "was inserted (or the chain restarted: its "
				 "head in ward_meta removed)",
				 last->id, x->id, x->n);
			continue;
		}
		if (x->n > expect)
			missing(c, expect, x);
		else if (last && x->has_prev &&
			 (strcmp(x->prev_run, last->id) ||
			  strcmp(x->prev_seal, last->seal)))
			lproblem(c, CHAIN, x->n,
				 "run %s (#%lld) was sealed after run %s (seal "
				 "%.16s...), but #%lld is run %s (seal "
				 "%.16s...): runs were replaced, moved or "
				 "sealed again",
				 x->id, x->n, x->prev_run, x->prev_seal,
				 last->n, last->id, last->seal);
		expect = x->n + 1;
		last = x;
	}
	if (!has_head) {
		if (n)
			lproblem(c, CHAIN, 0,
				 "%s is gone, but %zu run(s) are chained: "
				 "removed",
				 hname, n);
		return;
	}
	if (head->n < 2) {
		lproblem(c, CHAIN, 0, "%s is not ward's: edited", hname);
		return;
	}
	head_n = head->n - 1;
	if (own) {
		c->out->head_n = head_n;
		snprintf(c->out->head_run, sizeof(c->out->head_run), "%s",
			 head->prev_run);
	}
	if (!last || head_n > last->n) {
		long long from = last ? last->n + 1 : 1;

		if (from == head_n)
			lproblem(c, CHAIN, from,
				 "run %s (sealed #%lld, the newest seal) is "
				 "missing: deleted",
				 head->prev_run, from);
		else
			lproblem(c, CHAIN, from,
				 "runs #%lld to #%lld, the newest seals, are "
				 "missing: deleted (the newest was run %s)",
				 from, head_n, head->prev_run);
	} else if (head_n < last->n) {
		lproblem(c, CHAIN, head_n,
			 "%s names #%lld (run %s) but run %s is #%lld: the "
			 "head was set back",
			 hname, head_n, head->prev_run, last->id, last->n);
	} else {
		char hx[2 * WARD_SHA256_LEN + 1];

		audit_hex(head->prev_seal, WARD_SHA256_LEN, hx);
		if (strcmp(head->prev_run, last->id) || strcmp(hx, last->seal))
			lproblem(c, CHAIN, last->n,
				 "%s names run %s (seal %.16s...) at #%lld, "
				 "but that is run %s (seal %.16s...): "
				 "replaced or sealed again",
				 hname, head->prev_run, hx, last->n, last->id,
				 last->seal);
	}
}

/* The database's own chain, then each chain merged in (ward merge), each
 * against its own head: runs of a merged chain keep the places their
 * database gave them. */
static void check_chain(struct lctx *c, const struct audit_run_link *head,
			bool has_head)
{
	size_t i = 0, j;
	char hname[96];

	c->out->linked = (long long)c->n;
	for (j = 0; j < c->n && c->e[j].group == 0; j++)
		;
	check_group(c, c->e, j, head, has_head, "ward_meta's " HEAD_KEY, true);
	for (size_t g = 0; g < c->n_merged; g++) {
		const struct merged_chain *m = &c->merged[g];

		for (i = j; j < c->n && c->e[j].group == (int)g + 1; j++)
			;
		snprintf(hname, sizeof(hname),
			 "the head of the merged chain %s (ward_meta's %s%s)",
			 m->key_id, AUDIT_MERGED_KEY, m->key_id);
		/* its runs' tags and seals are checked with its key only */
		if (!m->keyed)
			lproblem(c, CHAIN, 0,
				 "the key of the merged chain %s (%zu run(s)) "
				 "is not in the database's keyring (DB.keys): "
				 "their keyed tags and seals cannot be checked",
				 m->key_id, j - i);
		if (!m->head_ok)
			lproblem(c, CHAIN, 0, "%s is not ward's: edited",
				 hname);
		else
			check_group(c, c->e + i, j - i, &m->head, true, hname,
				    false);
	}
}

/* ---------------------------- seal log ---------------------------- */

#define LOG "seal log"

/* The last cells seal logged for a run is the one it must have. */
static void cells_logged(struct link_entry *x, long long lineno,
			 const char *cells, const char *when)
{
	snprintf(x->cells_logged, sizeof(x->cells_logged), "%s", cells);
	snprintf(x->cells_when, sizeof(x->cells_when), "%s", when ? when : "?");
	x->cells_line = lineno;
}

/* A line of a session's cells sealed by its server: the run's seal it is
 * bound to, and its cells seal. */
static void check_cells_line(struct lctx *c, long long lineno, const char *run,
			     const char *seal, const char *cells,
			     const char *when)
{
	struct link_entry *x = find_id(c, run);

	c->out->log_lines++;
	if (!x) {
		lproblem(c, LOG, lineno,
			 "the cells of run %s (sealed at %s) are in the seal "
			 "log but the run is not in the database: deleted",
			 run, when ? when : "?");
		return;
	}
	if (strcasecmp(x->seal, seal))
		lproblem(c, LOG, lineno,
			 "run %s: its seal is not the one its cells were bound "
			 "to at %s: the run was rewritten and sealed again",
			 run, when ? when : "?");
	if (cells)
		cells_logged(x, lineno, cells, when);
}

/* One line of the seal log against the database. */
static void check_line(struct lctx *c, long long lineno, const char *text,
		       const char *db_key, long long *first)
{
	json_t *o = json_loads(text, 0, NULL);
	json_t *n = json_object_get(o, "n");
	const char *run = json_string_value(json_object_get(o, "run"));
	const char *seal = json_string_value(json_object_get(o, "seal"));
	const char *kid = json_string_value(json_object_get(o, "key_id"));
	const char *when = json_string_value(json_object_get(o, "time"));
	const char *kind = json_string_value(json_object_get(o, "kind"));
	const char *cells = json_string_value(json_object_get(o, "cells_seal"));
	struct link_entry *x;
	long long ln;

	if (json_integer_value(json_object_get(o, "ward_seal")) != 1 || !run ||
	    strlen(run) != AUDIT_RUN_ID_LEN || !is_hex(seal, WARD_SHA256_LEN) ||
	    (cells && !is_hex(cells, WARD_SHA256_LEN))) {
		lproblem(c, LOG, lineno, "not a ward seal line: %.60s", text);
		goto out;
	}
	if (kind && !strcmp(kind, "cells")) {
		check_cells_line(c, lineno, run, seal, cells, when);
		goto out;
	}
	if (kind || !json_is_integer(n) || json_integer_value(n) < 1) {
		lproblem(c, LOG, lineno, "not a ward seal line: %.60s", text);
		goto out;
	}
	ln = json_integer_value(n);
	c->out->log_lines++;
	if (!*first || ln < *first)
		*first = ln;
	if (db_key[0] && (!kid || strcmp(kid, db_key)))
		lproblem(c, LOG, lineno,
			 "run %s (#%lld) was sealed with key %s, this "
			 "database's is %s: the key was replaced, or the line "
			 "is another database's (keep one seal log per "
			 "database)",
			 run, ln, kid ? kid : "(none)", db_key);
	x = find_id(c, run);
	if (!x) {
		lproblem(c, LOG, lineno,
			 "run %s (sealed #%lld at %s) is in the seal log but "
			 "not in the database: deleted",
			 run, ln, when ? when : "?");
		goto out;
	}
	if (cells)
		cells_logged(x, lineno, cells, when);
	if (x->logged)
		goto out; /* the same seal twice changes nothing */
	x->logged = true;
	if (x->n != ln)
		lproblem(c, LOG, lineno,
			 "run %s is #%lld in the database but was sealed as "
			 "#%lld: the chain of runs was rewritten",
			 run, x->n, ln);
	if (strcasecmp(x->seal, seal))
		lproblem(c, LOG, lineno,
			 "run %s: its seal is not the one logged at %s: the "
			 "run was rewritten and sealed again (with the key)",
			 run, when ? when : "?");
out:
	json_decref(o);
}

static int check_log(struct audit *a, struct lctx *c, const char *path)
{
	FILE *f = fopen(path, "re");
	char *line = NULL, db_key[17] = "";
	size_t cap = 0;
	ssize_t len;
	long long lineno = 0, first = 0;

	if (!f)
		return audit_fail(a, -errno, "seal log %s: %s", path,
				  strerror(errno));
	if (a->key.loaded)
		snprintf(db_key, sizeof(db_key), "%s", a->key.id);
	else if (c->n && !c->e[0].group)
		snprintf(db_key, sizeof(db_key), "%s", c->e[0].key_id);
	c->out->log_checked = true;
	while ((len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		while (len > 0 &&
		       (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (!len)
			continue;
		check_line(c, lineno, line, db_key, &first);
	}
	free(line);
	fclose(f);
	c->out->log_first = first;
	if (!first && c->n)
		lproblem(c, LOG, 0,
			 "%s holds no seal, and %zu run(s) are sealed: nothing "
			 "to check them against (the wrong file, or emptied)",
			 path, c->n);
	for (size_t i = 0; i < c->n; i++) {
		const struct link_entry *x = &c->e[i];

		if (x->group)
			continue; /* merged in: sealed in another database */
		if (!first || x->n < first) {
			c->out->log_before++;
			continue;
		}
		if (x->cells_logged[0] &&
		    strcasecmp(x->cells_logged, x->cells_seal))
			lproblem(
				c, LOG, x->cells_line,
				"run %s: its cells and artifacts are not the "
				"ones sealed at %s: rewritten and sealed again",
				x->id, x->cells_when);
		if (!x->logged)
			lproblem(c, CHAIN, x->n,
				 "run %s (#%lld) is sealed in the database but "
				 "has no line in the seal log: inserted, or "
				 "sealed by a ward without the seal log (or "
				 "killed between its seal and the log)",
				 x->id, x->n);
	}
	return 0;
}

/* ------------------------------- WAL ------------------------------- */

/* The running runs, as a JSON array of ids (at most 50). */
static json_t *running_ids(struct audit *a)
{
	sqlite3_stmt *st = NULL;
	json_t *ids = json_array();

	if (sqlite3_prepare_v2(a->db,
			       "SELECT id FROM runs WHERE status = 'running'"
			       " ORDER BY started_ns LIMIT 50",
			       -1, &st, NULL) == SQLITE_OK)
		while (sqlite3_step(st) == SQLITE_ROW)
			json_array_append_new(
				ids,
				json_string((const char *)sqlite3_column_text(
					st, 0)));
	sqlite3_finalize(st);
	return ids;
}

/* What a lost WAL took: {"what", "sealed_up_to", "newest_run",
 * "running"}, from the database file as it is now. */
static json_t *loss_json(struct audit *a, const char *what)
{
	struct audit_run_link head = { 0 };
	bool has = false;
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(
		    a->db,
		    "SELECT value FROM ward_meta WHERE key = '" HEAD_KEY "'",
		    -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		has = !head_parse((const char *)sqlite3_column_text(st, 0),
				  &head);
	sqlite3_finalize(st);
	return json_pack("{s:s, s:I, s:o, s:o}", "what", what, "sealed_up_to",
			 (json_int_t)(has ? head.n - 1 : 0), "newest_run",
			 has ? json_string(head.prev_run) : json_null(),
			 "running", running_ids(a));
}

int audit_wal_loss_record(struct audit *a)
{
	char when[48], key[64];
	json_t *o = loss_json(a, a->wal.what);
	char *text;
	sqlite3_stmt *st = NULL;
	int rc;

	now_text(when, sizeof(when));
	snprintf(key, sizeof(key), "wal_lost %s", when);
	json_object_set_new(o, "found_by_pid", json_integer(getpid()));
	text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!text)
		return audit_fail(a, -ENOMEM, "out of memory");
	rc = sqlite3_prepare_v2(a->db,
				"INSERT OR REPLACE INTO ward_meta(key, value)"
				" VALUES (?1, ?2)",
				-1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
	}
	sqlite3_finalize(st);
	free(text);
	if (rc != SQLITE_DONE)
		return audit_sqlfail(a, rc, "record that the WAL was lost");
	return 0;
}

/* One loss, in words. */
static void loss_problem(struct lctx *c, const char *when, json_t *o)
{
	const char *what = json_string_value(json_object_get(o, "what"));
	const char *newest =
		json_string_value(json_object_get(o, "newest_run"));
	long long upto = json_integer_value(json_object_get(o, "sealed_up_to"));
	json_t *run = json_object_get(o, "running");
	char cut[600] = "", *p = cut;
	size_t i;
	json_t *x;

	json_array_foreach(run, i, x)
	{
		if (p - cut > (long)sizeof(cut) - 40)
			break;
		p += snprintf(p, sizeof(cut) - (size_t)(p - cut), " %s",
			      json_string_value(x));
	}
	lproblem(c, "WAL", 0,
		 "%s%s%s%s; runs affected: those sealed after #%lld%s%s%s "
		 "(gone: `--seal-log FILE` names them)%s%s",
		 when ? "found by a ward at " : "", when ? when : "",
		 when ? ": " : "", what ? what : "?", upto,
		 newest ? " (run " : "", newest ? newest : "",
		 newest ? ", the newest seal the database file kept)" : "",
		 cut[0] ? "; cut short, their rows after the last copy gone:"
			: "",
		 cut);
}

static int check_wal(struct audit *a, struct lctx *c)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (a->wal.lost) {
		json_t *o = loss_json(a, a->wal.what);

		loss_problem(c, NULL, o);
		json_decref(o);
		c->out->wal_losses++;
	}
	rc = sqlite3_prepare_v2(a->db,
				"SELECT key, value FROM ward_meta WHERE"
				" substr(key, 1, 9) = 'wal_lost ' ORDER BY key",
				-1, &st, NULL);
	while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *k = (const char *)sqlite3_column_text(st, 0);
		json_t *o = json_loads((const char *)sqlite3_column_text(st, 1),
				       0, NULL);

		loss_problem(c, k + strlen("wal_lost "), o);
		json_decref(o);
		c->out->wal_losses++;
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE || rc == SQLITE_OK
		       ? 0
		       : audit_sqlfail(a, rc, a->path);
}

/* Every chained run (c->e by place, c->by_id by id) and the heads; the
 * caller holds a->lock and frees with links_free. */
static int links_load(struct audit *a, struct lctx *c, bool chain,
		      struct audit_run_link *head, bool *has_head)
{
	int r = audit_keyring_load(a);

	if (r > 0)
		r = 0;
	*has_head = false;
	if (!r)
		r = a->v4_cols ? read_links(a, c, chain, head, has_head) : 0;
	if (!r && c->n) {
		qsort(c->e, c->n, sizeof(*c->e), by_n);
		c->by_id = malloc(c->n * sizeof(*c->by_id));
		if (!c->by_id)
			r = audit_fail(a, -ENOMEM, "out of memory");
		for (size_t i = 0; !r && i < c->n; i++)
			c->by_id[i] = &c->e[i];
		if (!r)
			qsort(c->by_id, c->n, sizeof(*c->by_id), by_id);
	}
	return r;
}

static void links_free(struct lctx *c)
{
	free(c->by_id);
	free(c->e);
	free(c->merged);
}

int audit_verify_links(struct audit *a, bool chain, const char *seal_log,
		       struct audit_links *out,
		       int (*fn)(const struct audit_problem *, void *),
		       void *arg)
{
	struct lctx c = { .out = out, .fn = fn, .arg = arg };
	struct audit_run_link head = { 0 };
	bool has_head;
	int r;

	memset(out, 0, sizeof(*out));
	chain = chain || seal_log;
	pthread_mutex_lock(&a->lock);
	r = links_load(a, &c, chain, &head, &has_head);
	if (!r && a->v4_cols && chain)
		check_chain(&c, &head, has_head);
	if (!r && seal_log)
		r = check_log(a, &c, seal_log);
	if (!r)
		r = check_wal(a, &c);
	links_free(&c);
	pthread_mutex_unlock(&a->lock);
	return r ? r : c.stop;
}

/* x's two links: the run sealed before it is there at the place before,
 * with the seal x names; the run at the place after names x with x's
 * seal, or, when none is, the chain's head does. */
static void check_neighbours(struct lctx *c, const struct link_entry *x,
			     const struct audit_run_link *head, bool has_head)
{
	size_t i = (size_t)(x - c->e);
	const struct link_entry *p, *next = NULL;

	if (x->has_prev) {
		p = find_id(c, x->prev_run);
		if (!p || p->group != x->group)
			lproblem(c, CHAIN, x->n - 1,
				 "run %s (sealed #%lld, before run %s) is "
				 "missing: deleted",
				 x->prev_run, x->n - 1, x->id);
		else if (p->n != x->n - 1 || strcmp(p->seal, x->prev_seal))
			lproblem(c, CHAIN, x->n,
				 "run %s (#%lld) was sealed after run %s (seal "
				 "%.16s...), but that run is #%lld with seal "
				 "%.16s...: runs were replaced, moved or sealed "
				 "again",
				 x->id, x->n, x->prev_run, x->prev_seal, p->n,
				 p->seal);
	}
	for (size_t j = i; j-- > 0 && c->e[j].group == x->group &&
			   c->e[j].n == x->n;)
		lproblem(c, CHAIN, x->n,
			 "runs %s and %s both have place #%lld: a run was "
			 "inserted",
			 c->e[j].id, x->id, x->n);
	for (size_t j = i + 1; j < c->n && c->e[j].group == x->group; j++) {
		if (c->e[j].n == x->n) {
			lproblem(c, CHAIN, x->n,
				 "runs %s and %s both have place #%lld: a run "
				 "was inserted",
				 x->id, c->e[j].id, x->n);
			continue;
		}
		next = &c->e[j];
		break;
	}
	if (next) {
		if (next->n > x->n + 1)
			lproblem(c, CHAIN, x->n + 1,
				 "the run sealed after run %s (#%lld) is "
				 "missing: deleted (the next in the database "
				 "is run %s, #%lld)",
				 x->id, x->n + 1, next->id, next->n);
		else if (!next->has_prev || strcmp(next->prev_run, x->id) ||
			 strcmp(next->prev_seal, x->seal))
			lproblem(c, CHAIN, next->n,
				 "run %s (#%lld) names run %s (seal %.16s...) "
				 "as sealed before it, not run %s (seal "
				 "%.16s...): runs were replaced, moved or "
				 "sealed again",
				 next->id, next->n,
				 next->has_prev ? next->prev_run : "(none)",
				 next->prev_seal, x->id, x->seal);
		return;
	}
	if (!has_head || head->n < 2)
		return; /* the head's own problems: verify --all */
	char hx[2 * WARD_SHA256_LEN + 1];

	audit_hex(head->prev_seal, WARD_SHA256_LEN, hx);
	if (head->n - 1 > x->n)
		lproblem(c, CHAIN, x->n + 1,
			 "the runs sealed after run %s (#%lld to #%lld, the "
			 "newest run %s) are missing: deleted",
			 x->id, x->n + 1, head->n - 1, head->prev_run);
	else if (head->n - 1 < x->n)
		lproblem(c, CHAIN, x->n,
			 "the chain's head names #%lld (run %s) but run %s "
			 "is #%lld: the head was set back",
			 head->n - 1, head->prev_run, x->id, x->n);
	else if (strcmp(head->prev_run, x->id) || strcmp(hx, x->seal))
		lproblem(c, CHAIN, x->n,
			 "the chain's head names run %s (seal %.16s...) at "
			 "#%lld, not run %s (seal %.16s...): replaced or "
			 "sealed again",
			 head->prev_run, hx, x->n, x->id, x->seal);
}

int audit_verify_neighbours(struct audit *a, const char *run_id,
			    unsigned *problems,
			    int (*fn)(const struct audit_problem *, void *),
			    void *arg)
{
	struct audit_links out = { 0 };
	struct lctx c = { .out = &out, .fn = fn, .arg = arg };
	struct audit_run_link head = { 0 };
	bool has_head;
	int r;

	pthread_mutex_lock(&a->lock);
	r = links_load(a, &c, true, &head, &has_head);
	const struct link_entry *x = r ? NULL : find_id(&c, run_id);
	if (x) {
		const struct merged_chain *m =
			x->group ? &c.merged[x->group - 1] : NULL;

		if (!m)
			check_neighbours(&c, x, &head, has_head);
		else
			check_neighbours(&c, x, &m->head, m->head_ok);
	}
	links_free(&c);
	pthread_mutex_unlock(&a->lock);
	*problems = out.problems;
	return r ? r : c.stop;
}
