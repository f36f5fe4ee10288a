/*
 * chain.c - the tamper-evident record: a hash chain over each run's events
 * and outputs, a keyed tag on every link, and a seal over the run row, its
 * processes, inputs and phases and the chains' heads (docs/schema.md, "The hash
 * chain", gives the exact bytes; docs/security.md who can forge what).
 *
 * Values are serialized without ambiguity: one tag byte, then
 *   NULL     'N'
 *   INTEGER  'I' + 8 bytes big-endian (two's complement)
 *   TEXT     'T' + 8 bytes big-endian length + the bytes
 *   BLOB     'B' + 8 bytes big-endian length + the bytes
 * A row's record is its table's name (as TEXT) followed by every column of
 * the row but hash, in the table's column order; events.result (after
 * hash in the table) only when it is not NULL, so that rows written
 * before the column existed keep their links.
 *
 * Events and outputs have one chain each, in seq order (each table numbers
 * its rows by itself and the order between the two is not recorded):
 *   link(0) = 32 zero bytes
 *   link(n) = SHA-256(link(n-1) || record(n))
 * The hash column holds hex(link(n)), and with a key ":" and the first 16
 * bytes of HMAC-SHA256(key, "ward-link-v1" || link(n)) in hex.
 */
#include "audit/audit-int.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/sha256.h"

static const char hexd[] = "0123456789abcdef";

void audit_hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hexd[b[i] >> 4];
		out[2 * i + 1] = hexd[b[i] & 15];
	}
	out[2 * n] = '\0';
}

/* n bytes from 2n hex characters (either case); -1 on anything else. */
int audit_unhex(const char *s, size_t n, uint8_t *out)
{
	for (size_t i = 0; i < 2 * n; i++) {
		int c = s[i], v;

		if (c >= '0' && c <= '9')
			v = c - '0';
		else if (c >= 'a' && c <= 'f')
			v = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v = c - 'A' + 10;
		else
			return -1;
		if (i & 1)
			out[i / 2] |= (uint8_t)v;
		else
			out[i / 2] = (uint8_t)(v << 4);
	}
	return 0;
}

#define to_hex	 audit_hex
#define from_hex audit_unhex

/* ---------------------------- encoding ---------------------------- */

static void put_head(struct ward_sha256 *c, char tag, uint64_t v)
{
	uint8_t b[9];

	b[0] = (uint8_t)tag;
	for (int i = 0; i < 8; i++)
		b[1 + i] = (uint8_t)(v >> (56 - 8 * i));
	ward_sha256_update(c, b, sizeof(b));
}

static void put_null(struct ward_sha256 *c)
{
	ward_sha256_update(c, "N", 1);
}

static void put_int(struct ward_sha256 *c, long long v)
{
	put_head(c, 'I', (uint64_t)v);
}

static void put_bytes(struct ward_sha256 *c, char tag, const void *p, size_t n)
{
	put_head(c, tag, (uint64_t)n);
	ward_sha256_update(c, p, n);
}

static void put_text(struct ward_sha256 *c, const char *s)
{
	put_bytes(c, 'T', s, strlen(s));
}

static void put_val(struct ward_sha256 *c, const struct audit_val *v)
{
	switch (v->t) {
	case V_NULL: put_null(c); break;
	case V_INT: put_int(c, v->i); break;
	case V_TEXT: put_bytes(c, 'T', v->p, v->n); break;
	case V_BLOB: put_bytes(c, 'B', v->p, v->n); break;
	}
}

/* Column i of the current row, as SQLite holds it. */
static void put_col(struct ward_sha256 *c, sqlite3_stmt *st, int i)
{
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_NULL: put_null(c); break;
	case SQLITE_INTEGER: put_int(c, sqlite3_column_int64(st, i)); break;
	case SQLITE_TEXT:
		put_bytes(c, 'T', sqlite3_column_text(st, i),
			  (size_t)sqlite3_column_bytes(st, i));
		break;
	case SQLITE_BLOB:
		put_bytes(c, 'B', sqlite3_column_blob(st, i),
			  (size_t)sqlite3_column_bytes(st, i));
		break;
	default: { /* REAL: no ward column holds one (STRICT tables) */
		double d = sqlite3_column_double(st, i);
		put_bytes(c, 'R', &d, sizeof(d));
	}
	}
}

/* ------------------------------ HMAC ------------------------------ */

/* The key's inner and outer states, computed once per key. */
static void hmac_init(struct audit_chain_key *k)
{
	uint8_t pad[64];

	for (int i = 0; i < 64; i++)
		pad[i] = (uint8_t)((i < 32 ? k->key[i] : 0) ^ 0x36);
	ward_sha256_init(&k->inner);
	ward_sha256_update(&k->inner, pad, 64);
	for (int i = 0; i < 64; i++)
		pad[i] = (uint8_t)((i < 32 ? k->key[i] : 0) ^ 0x5c);
	ward_sha256_init(&k->outer);
	ward_sha256_update(&k->outer, pad, 64);
}

/* A MAC context: HMAC with the key, plain SHA-256 without one. */
struct tagger {
	const struct audit_chain_key *k; /* NULL: plain */
	struct ward_sha256 c;
};

static void tag_begin(struct tagger *t, const struct audit_chain_key *k)
{
	t->k = k;
	if (k)
		t->c = k->inner;
	else
		ward_sha256_init(&t->c);
}

static void tag_end(struct tagger *t, uint8_t out[WARD_SHA256_LEN])
{
	ward_sha256_final(&t->c, out);
	if (t->k) {
		struct ward_sha256 o = t->k->outer;

		ward_sha256_update(&o, out, WARD_SHA256_LEN);
		ward_sha256_final(&o, out);
	}
}

/* ------------------------------- key ------------------------------- */

static int key_path(const struct audit *a, char *buf, size_t n)
{
	int len = snprintf(buf, n, "%s.key", a->path);

	return len < 0 || (size_t)len >= n ? -ENAMETOOLONG : 0;
}

/* Creates path with a fresh random key, atomically: written to a
 * temporary file and linked to its name (another ward may win; then its
 * key is the key). */
static int key_create(struct audit *a, const char *path)
{
	uint8_t key[32];
	char tmp[4200], text[66];
	size_t got = 0;
	int fd, r = 0;

	while (got < sizeof(key)) {
		ssize_t n = getrandom(key + got, sizeof(key) - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return audit_fail(a, -errno, "getrandom: %s",
					  strerror(errno));
		got += (size_t)n;
	}
	to_hex(key, sizeof(key), text);
	text[64] = '\n';
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return audit_fail(a, -errno,
				  "cannot create the chain key %s: %s", path,
				  strerror(errno));
	if (fchmod(fd, 0600) || write(fd, text, 65) != 65 || fsync(fd))
		r = -errno ? -errno : -EIO;
	close(fd);
	if (!r && link(tmp, path) && errno != EEXIST)
		r = -errno;
	unlink(tmp);
	explicit_bzero(key, sizeof(key));
	explicit_bzero(text, sizeof(text));
	if (r)
		return audit_fail(a, r, "cannot create the chain key %s: %s",
				  path, strerror(-r));
	return 0;
}

/* k from 64 hex digits at text: the key, its HMAC states and its id.
 * 0, or -EINVAL when they are not hex. */
static int key_set(struct audit_chain_key *k, const char *text)
{
	struct ward_sha256 c;
	uint8_t d[WARD_SHA256_LEN];

	if (from_hex(text, 32, k->key))
		return -EINVAL;
	hmac_init(k);
	ward_sha256_init(&c);
	ward_sha256_update(&c, "ward-key-id-v1", 14);
	ward_sha256_update(&c, k->key, sizeof(k->key));
	ward_sha256_final(&c, d);
	to_hex(d, 8, k->id);
	return 0;
}

static int key_read(struct audit *a, const char *path, bool create)
{
	struct audit_chain_key *k = &a->key;
	char text[80];
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);

	if (fd < 0 && errno == ENOENT && create) {
		int r = key_create(a, path);

		if (r)
			return r;
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	}
	if (fd < 0)
		return audit_fail(a, -errno, "chain key %s: %s", path,
				  strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return audit_fail(a, -EINVAL,
				  "chain key %s: not a regular file", path);
	}
	if (st.st_mode & 077) {
		close(fd);
		return audit_fail(
			a, -EPERM,
			"chain key %s: mode %04o lets others read it; "
			"chmod 600 it (and check who had it)",
			path, (unsigned)(st.st_mode & 07777));
	}
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n < 64 || key_set(k, text) ||
	    (n > 64 && !(n == 65 && text[64] == '\n'))) {
		explicit_bzero(text, sizeof(text));
		return audit_fail(a, -EINVAL,
				  "chain key %s: not a ward chain key (64 hex "
				  "digits)",
				  path);
	}
	explicit_bzero(text, sizeof(text));
	k->since_ns = (long long)st.st_mtim.tv_sec * 1000000000LL +
		      st.st_mtim.tv_nsec;
	k->loaded = true;
	return 0;
}

int audit_chain_key_load(struct audit *a, bool create)
{
	char path[4200];
	int r;

	if (a->key.loaded)
		return 0;
	r = key_path(a, path, sizeof(path));
	if (r)
		return audit_fail(a, r, "%s: path too long for its key",
				  a->path);
	return key_read(a, path, create);
}

int audit_chain_key_file(struct audit *a, const char *path)
{
	a->key.loaded = false;
	return key_read(a, path, false);
}

/* ------------------------- the merged chains' keys ------------------------- */

#define KEYRING_MAX (1 << 20) /* bytes: 12,000 keys */

static int keyring_path(const struct audit *a, char *buf, size_t n)
{
	int len = snprintf(buf, n, "%s.keys", a->path);

	return len < 0 || (size_t)len >= n ? -ENAMETOOLONG : 0;
}

/* One line "ID HEX" into the keyring; the id must be the key's. */
static int keyring_line(struct audit *a, const char *path, size_t lineno,
			const char *line, size_t len)
{
	struct audit_chain_key k = { 0 }, *v;

	if (len != 16 + 1 + 64 || line[16] != ' ' || key_set(&k, line + 17) ||
	    memcmp(k.id, line, 16))
		return audit_fail(a, -EINVAL,
				  "%s:%zu: not a key of a merged chain (its "
				  "id, a space, 64 hex digits of the key; the "
				  "id the key's own)",
				  path, lineno);
	v = realloc(a->keyring, (a->n_keyring + 1) * sizeof(*v));
	if (!v) {
		explicit_bzero(&k, sizeof(k));
		return audit_fail(a, -ENOMEM, "out of memory");
	}
	a->keyring = v;
	k.loaded = true;
	k.since_ns = LLONG_MAX; /* only for runs sealed with it */
	a->keyring[a->n_keyring++] = k;
	explicit_bzero(&k, sizeof(k));
	return 0;
}

int audit_keyring_load(struct audit *a)
{
	char path[4200], *text;
	struct stat st;
	ssize_t n;
	size_t lineno = 0;
	int r = keyring_path(a, path, sizeof(path)), fd;

	if (r || a->n_keyring)
		return r ? r : (int)a->n_keyring;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0)
		return errno == ENOENT ? 0
				       : audit_fail(a, -errno, "%s: %s", path,
						    strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_mode & 077 ||
	    st.st_size > KEYRING_MAX) {
		close(fd);
		return audit_fail(a, -EPERM,
				  "%s: not a regular file of mode 0600 under "
				  "1 MiB (chmod 600 it, and check who had it)",
				  path);
	}
	text = malloc((size_t)st.st_size + 1);
	n = text ? read(fd, text, (size_t)st.st_size) : -1;
	close(fd);
	if (n != st.st_size) {
		free(text);
		return audit_fail(a, -EIO, "%s: cannot read it", path);
	}
	text[n] = 0;
	for (char *p = text, *nl; !r && *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl) {
			r = audit_fail(a, -EINVAL, "%s: its last line is cut",
				       path);
			break;
		}
		r = keyring_line(a, path, ++lineno, p, (size_t)(nl - p));
	}
	explicit_bzero(text, (size_t)n);
	free(text);
	return r ? r : (int)a->n_keyring;
}

int audit_keyring_add(struct audit *a, const struct audit_chain_key *k)
{
	char path[4200], line[16 + 1 + 64 + 2];
	int r = keyring_path(a, path, sizeof(path)), fd;

	if (r)
		return audit_fail(a, r, "%s: path too long", a->path);
	memcpy(line, k->id, 16);
	line[16] = ' ';
	to_hex(k->key, sizeof(k->key), line + 17);
	line[81] = '\n';
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
		  0600);
	if (fd < 0 || write(fd, line, 82) != 82 || fsync(fd))
		r = -errno ?: -EIO;
	if (fd >= 0)
		close(fd);
	explicit_bzero(line, sizeof(line));
	return r ? audit_fail(a, r, "%s: cannot write it: %s", path,
			      strerror(-r))
		 : 0;
}

const struct audit_chain_key *audit_keyring_find(const struct audit *a,
						 const char *id)
{
	for (size_t i = 0; id && i < a->n_keyring; i++)
		if (!strcmp(a->keyring[i].id, id))
			return &a->keyring[i];
	return NULL;
}

/* The key to check a run with: the one its seal names, when at hand (the
 * database's own, or a merged chain's); else the database's, if loaded
 * (a mismatch is then said), else none. */
static const struct audit_chain_key *run_key(struct audit *a,
					     const char *run_id)
{
	const struct audit_chain_key *k = a->key.loaded ? &a->key : NULL;
	sqlite3_stmt *st = NULL;

	if (!a->n_keyring ||
	    sqlite3_prepare_v2(a->db, "SELECT chain FROM runs WHERE id = ?1",
			       -1, &st, NULL) != SQLITE_OK)
		return k;
	sqlite3_bind_text(st, 1, run_id, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
		json_t *o = json_loads((const char *)sqlite3_column_text(st, 0),
				       0, NULL);
		const char *kid =
			json_string_value(json_object_get(o, "key_id"));

		if (kid && !(k && !strcmp(k->id, kid)) &&
		    audit_keyring_find(a, kid))
			k = audit_keyring_find(a, kid);
		json_decref(o);
	}
	sqlite3_finalize(st);
	return k;
}

/* ------------------------------ links ------------------------------ */

static const char *const table_name[] = {
	[AUDIT_CHAIN_EVENTS] = "events", [AUDIT_CHAIN_OUTPUTS] = "outputs"
};

void audit_chain_reset(struct audit *a)
{
	memset(a->chain, 0, sizeof(a->chain));
}

/* The hash column's text for a link: hex, and with a key its tag. */
static void link_text(const struct audit_chain_key *k,
		      const uint8_t link[WARD_SHA256_LEN],
		      char out[AUDIT_HASH_TEXT_LEN + 1])
{
	to_hex(link, WARD_SHA256_LEN, out);
	if (k) {
		struct tagger t;
		uint8_t mac[WARD_SHA256_LEN];

		tag_begin(&t, k);
		ward_sha256_update(&t.c, "ward-link-v1", 12);
		ward_sha256_update(&t.c, link, WARD_SHA256_LEN);
		tag_end(&t, mac);
		out[64] = ':';
		to_hex(mac, 16, out + 65);
	}
}

void audit_chain_row(struct audit *a, enum audit_chain_table t,
		     const struct audit_val *v, int ncols,
		     char out[AUDIT_HASH_TEXT_LEN + 1])
{
	struct audit_chain_state *s = &a->chain[t];
	struct ward_sha256 c;

	ward_sha256_init(&c);
	ward_sha256_update(&c, s->link, WARD_SHA256_LEN);
	put_text(&c, table_name[t]);
	for (int i = 0; i < ncols; i++)
		put_val(&c, &v[i]);
	ward_sha256_final(&c, s->link);
	s->count++;
	link_text(a->key.loaded ? &a->key : NULL, s->link, out);
}

/* ------------------------------- seal ------------------------------- */

/* Every column of runs but chain, in the table's order. */
static const char *const run_cols[] = {
	"id",
	"started_ns",
	"ended_ns",
	"duration_ms",
	"argv",
	"language",
	"interpreter",
	"code_name",
	"code",
	"code_sha256",
	"policy_name",
	"policy_json",
	"policy_sha256",
	"workdir",
	"limits",
	"uid",
	"exit_code",
	"signal",
	"status",
	"cause",
	"stdout_bytes",
	"stderr_bytes",
	"stdout_truncated",
	"stderr_truncated",
	"events",
	"denials",
	"processes",
	"host",
	"kernel",
	"ward_version",
	"ward_pid",
	"ward_start_ticks",
	"boot_id",
	"layers",
	"env",
};
#define N_RUN_COLS (sizeof(run_cols) / sizeof(run_cols[0]))

#define RUN_SQL                                                                \
	"SELECT id, started_ns, ended_ns, duration_ms, argv, language,"        \
	" interpreter, code_name, code, code_sha256, policy_name,"             \
	" policy_json, policy_sha256, workdir, limits, uid, exit_code,"        \
	" signal, status, cause, stdout_bytes, stderr_bytes,"                  \
	" stdout_truncated, stderr_truncated, events, denials, processes,"     \
	" host, kernel, ward_version, ward_pid, ward_start_ticks, boot_id,"    \
	" layers, env, chain FROM runs WHERE id = ?1"
#define PROC_SQL                                                               \
	"SELECT run_id, serial, parent_serial, pid, tgid, ppid, kind,"         \
	" start_ns, start_ticks, exe, argv, exec_ns, exit_ns, exit_code,"      \
	" signal FROM processes WHERE run_id = ?1 ORDER BY serial"
#define INPUT_SQL                                                              \
	"SELECT run_id, n, name, size, sha256, data FROM inputs"               \
	" WHERE run_id = ?1 ORDER BY n"
#define PHASE_SQL                                                              \
	"SELECT run_id, n, name, started_ns, ended_ns, first_serial,"          \
	" last_serial, status, exit_code, cause, code, layers FROM phases"     \
	" WHERE run_id = ?1 ORDER BY n"
#define CELL_SQL                                                               \
	"SELECT run_id, n, code, started_ns, ended_ns, status, result"         \
	" FROM cells WHERE run_id = ?1 ORDER BY n"
#define ART_SQL                                                                \
	"SELECT run_id, cell, path, size, sha256, ts_ns FROM artifacts"        \
	" WHERE run_id = ?1 ORDER BY cell, path, ts_ns, size, sha256"

/* The seal's statements, kept with the handle (a->seal_st). */
enum seal_st {
	SST_RUN,
	SST_PROC,
	SST_INPUT,
	SST_PHASE,
	SST_CELL,
	SST_ART,
	SST_SET
};
static const char *const seal_sql[AUDIT_SEAL_ST_COUNT] = {
	[SST_RUN] = RUN_SQL,
	[SST_PROC] = PROC_SQL,
	[SST_INPUT] = INPUT_SQL,
	[SST_PHASE] = PHASE_SQL,
	[SST_CELL] = CELL_SQL,
	[SST_ART] = ART_SQL,
	[SST_SET] = "UPDATE runs SET chain = ?2 WHERE id = ?1",
};

/* Statement i, prepared at its first use unless it was ahead; after its
 * use, seal_stmt_done. Returns an SQLite code (its message in the handle's
 * errmsg). */
static int seal_stmt(struct audit *a, enum seal_st i, sqlite3_stmt **out)
{
	int rc = SQLITE_OK;

	if (!a->seal_st[i])
		rc = sqlite3_prepare_v3(a->db, seal_sql[i], -1,
					SQLITE_PREPARE_PERSISTENT,
					&a->seal_st[i], NULL);
	*out = a->seal_st[i];
	return rc;
}

/* Reset for the next use: no transaction is left open by it. */
static void seal_stmt_done(sqlite3_stmt *st)
{
	if (st) {
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
	}
}

void audit_chain_prepare(struct audit *a)
{
	sqlite3_stmt *st;

	for (int i = 0; i < AUDIT_SEAL_ST_COUNT; i++)
		seal_stmt(a, (enum seal_st)i, &st);
}

void audit_chain_finish(struct audit *a)
{
	for (int i = 0; i < AUDIT_SEAL_ST_COUNT; i++) {
		sqlite3_finalize(a->seal_st[i]);
		a->seal_st[i] = NULL;
	}
}

#define TAG_LEN 16 /* bytes of a column's or a row's tag */
/* The seal ward writes: 3 covers the phases; 1 and 2 (older runs) are
 * still verified as they were sealed. */
#define SEAL_VERSION 3

/* The tags of one part of the run: a column each, or a row each. */
struct tags {
	size_t n, cap;
	uint8_t (*t)[TAG_LEN];
	long long *key; /* the row's serial or n (rows only) */
};

static int tags_add(struct tags *g, const uint8_t full[WARD_SHA256_LEN],
		    long long key)
{
	if (g->n == g->cap) {
		size_t cap = g->cap ? 2 * g->cap : 16;
		void *t = realloc(g->t, cap * TAG_LEN);
		void *k = t ? realloc(g->key, cap * sizeof(long long)) : NULL;

		if (t)
			g->t = t;
		if (!k)
			return -ENOMEM;
		g->key = k;
		g->cap = cap;
	}
	memcpy(g->t[g->n], full, TAG_LEN);
	g->key[g->n++] = key;
	return 0;
}

static void tags_free(struct tags *g)
{
	free(g->t);
	free(g->key);
	memset(g, 0, sizeof(*g));
}

/* What the seal covers, computed from the database. */
struct sealed {
	struct tags run, procs, inputs;
	struct tags phases;	 /* seal version 3 */
	struct tags cells, arts; /* sealed apart (cells_seal) */
	bool session;		 /* code_name is "session" */
	bool has_run;
	char *chain_json; /* runs.chain as stored, or NULL */
};

static void sealed_free(struct sealed *s)
{
	tags_free(&s->run);
	tags_free(&s->procs);
	tags_free(&s->inputs);
	tags_free(&s->phases);
	tags_free(&s->cells);
	tags_free(&s->arts);
	free(s->chain_json);
}

/* Tags each column of the run row (the seal's "run") and keeps chain. */
static int tag_run(struct audit *a, const struct audit_chain_key *k,
		   const char *run_id, struct sealed *s)
{
	sqlite3_stmt *st = NULL;
	int rc = seal_stmt(a, SST_RUN, &st), r = 0;

	if (rc != SQLITE_OK)
		return audit_sqlfail(a, rc, a->path);
	sqlite3_bind_text(st, 1, run_id, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		s->has_run = true;
		s->session = sqlite3_column_text(st, 7) &&
			     !strcmp((const char *)sqlite3_column_text(st, 7),
				     "session");
		for (size_t i = 0; !r && i < N_RUN_COLS; i++) {
			struct tagger t;
			uint8_t d[WARD_SHA256_LEN];

			tag_begin(&t, k);
			put_text(&t.c, "runs");
			put_text(&t.c, run_cols[i]);
			put_col(&t.c, st, (int)i);
			tag_end(&t, d);
			r = tags_add(&s->run, d, (long long)i);
		}
		if (!r &&
		    sqlite3_column_type(st, (int)N_RUN_COLS) != SQLITE_NULL) {
			s->chain_json = strdup(
				(const char *)sqlite3_column_text(st,
								  N_RUN_COLS));
			if (!s->chain_json)
				r = -ENOMEM;
		}
		rc = SQLITE_DONE;
	}
	if (rc != SQLITE_DONE)
		r = audit_sqlfail(a, rc, a->path);
	seal_stmt_done(st);
	return r == -ENOMEM ? audit_fail(a, r, "out of memory") : r;
}

/* One tag per row of a table (processes, inputs, phases); column 1 is its
 * key. A file older than version 4 has no inputs, one older than 6 no
 * phases: no rows. */
static int tag_rows(struct audit *a, const struct audit_chain_key *k,
		    enum seal_st which, const char *table, const char *run_id,
		    struct tags *g)
{
	sqlite3_stmt *st = NULL;
	int rc = seal_stmt(a, which, &st), r = 0;

	if (rc != SQLITE_OK) {
		bool old = strstr(sqlite3_errmsg(a->db), "no such table");

		return old ? 0 : audit_sqlfail(a, rc, a->path);
	}
	sqlite3_bind_text(st, 1, run_id, -1, SQLITE_STATIC);
	while (!r && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct tagger t;
		uint8_t d[WARD_SHA256_LEN];
		int n = sqlite3_column_count(st);

		tag_begin(&t, k);
		put_text(&t.c, table);
		for (int i = 0; i < n; i++)
			put_col(&t.c, st, i);
		tag_end(&t, d);
		r = tags_add(g, d, sqlite3_column_int64(st, 1));
	}
	if (r)
		r = audit_fail(a, r, "out of memory");
	else if (rc != SQLITE_DONE)
		r = audit_sqlfail(a, rc, a->path);
	seal_stmt_done(st);
	return r;
}

static int read_sealed(struct audit *a, const struct audit_chain_key *k,
		       const char *run_id, struct sealed *s)
{
	int r = tag_run(a, k, run_id, s);

	if (!r)
		r = tag_rows(a, k, SST_PROC, "processes", run_id, &s->procs);
	if (!r && a->v4_cols)
		r = tag_rows(a, k, SST_INPUT, "inputs", run_id, &s->inputs);
	if (!r && a->v6_tables)
		r = tag_rows(a, k, SST_PHASE, "phases", run_id, &s->phases);
	if (!r)
		r = tag_rows(a, k, SST_CELL, "cells", run_id, &s->cells);
	if (!r)
		r = tag_rows(a, k, SST_ART, "artifacts", run_id, &s->arts);
	return r;
}

struct heads {
	long long count[AUDIT_CHAIN__COUNT];
	uint8_t head[AUDIT_CHAIN__COUNT][WARD_SHA256_LEN];
};

static void put_tags(struct ward_sha256 *c, const struct tags *g)
{
	put_int(c, (long long)g->n);
	for (size_t i = 0; i < g->n; i++)
		put_bytes(c, 'B', g->t[i], TAG_LEN);
}

/* The seal of version v: a tag over the run's id, its place in the chain
 * of runs (version 2 on: its number and the run sealed before it, l), both
 * chains' counts and heads, and the tags of the run row, its processes,
 * its inputs and (version 3 on) its phases. */
static void seal_of(const struct audit_chain_key *k, const char *run_id,
		    const struct heads *h, const struct sealed *s, int v,
		    const struct audit_run_link *l,
		    uint8_t out[WARD_SHA256_LEN])
{
	static const char *const name[] = { "ward-seal-v1", "ward-seal-v2",
					    "ward-seal-v3" };
	struct tagger t;

	tag_begin(&t, k);
	put_text(&t.c, name[v - 1]);
	put_text(&t.c, run_id);
	if (v >= 2) {
		put_int(&t.c, l->n);
		if (l->has_prev) {
			put_text(&t.c, l->prev_run);
			put_bytes(&t.c, 'B', l->prev_seal, WARD_SHA256_LEN);
		} else {
			put_null(&t.c);
			put_null(&t.c);
		}
	}
	for (int i = 0; i < AUDIT_CHAIN__COUNT; i++) {
		put_int(&t.c, h->count[i]);
		put_bytes(&t.c, 'B', h->head[i], WARD_SHA256_LEN);
	}
	put_tags(&t.c, &s->run);
	put_tags(&t.c, &s->procs);
	put_tags(&t.c, &s->inputs);
	if (v >= 3)
		put_tags(&t.c, &s->phases);
	tag_end(&t, out);
}

/* The seal of a run's cells and artifacts: they are written by the server
 * of a session, after its worker sealed the run, so they have their own,
 * bound to the run's seal. */
static void cells_seal_of(const struct audit_chain_key *k, const char *run_id,
			  const uint8_t run_seal[WARD_SHA256_LEN],
			  const struct tags *cells, const struct tags *arts,
			  uint8_t out[WARD_SHA256_LEN])
{
	struct tagger t;

	tag_begin(&t, k);
	put_text(&t.c, "ward-cells-v1");
	put_text(&t.c, run_id);
	put_bytes(&t.c, 'B', run_seal, WARD_SHA256_LEN);
	put_tags(&t.c, cells);
	put_tags(&t.c, arts);
	tag_end(&t, out);
}

static json_t *tags_json(const struct tags *g)
{
	json_t *arr = json_array();
	char hx[2 * TAG_LEN + 1];

	for (size_t i = 0; arr && i < g->n; i++) {
		to_hex(g->t[i], TAG_LEN, hx);
		json_array_append_new(arr, json_string(hx));
	}
	return arr;
}

/* The cells part of runs.chain: their tags and seal. */
static void set_cells(json_t *o, const struct audit_chain_key *k,
		      const char *run_id, const uint8_t seal[WARD_SHA256_LEN],
		      const struct sealed *s, const char *sealed_by,
		      char hx[2 * WARD_SHA256_LEN + 1])
{
	uint8_t cs[WARD_SHA256_LEN];

	cells_seal_of(k, run_id, seal, &s->cells, &s->arts, cs);
	to_hex(cs, WARD_SHA256_LEN, hx);
	json_object_set_new(o, "cells", tags_json(&s->cells));
	json_object_set_new(o, "artifacts", tags_json(&s->arts));
	json_object_set_new(o, "cells_sealed_by", json_string(sealed_by));
	json_object_set_new(o, "cells_seal", json_string(hx));
}

static char *chain_json(const struct audit_chain_key *k, const struct heads *h,
			const struct sealed *s, const struct audit_run_link *l,
			const uint8_t seal[WARD_SHA256_LEN], const char *run_id,
			const char *sealed_by,
			char cells_hex[2 * WARD_SHA256_LEN + 1])
{
	char hx[2 * WARD_SHA256_LEN + 1];
	json_t *o = json_object();
	char *text;

	json_object_set_new(o, "version", json_integer(SEAL_VERSION));
	json_object_set_new(o, "alg",
			    json_string(k ? "hmac-sha256" : "sha256"));
	if (k)
		json_object_set_new(o, "key_id", json_string(k->id));
	json_object_set_new(o, "n", json_integer(l->n));
	if (l->has_prev) {
		to_hex(l->prev_seal, WARD_SHA256_LEN, hx);
		json_object_set_new(o, "prev",
				    json_pack("{s:s, s:s}", "run", l->prev_run,
					      "seal", hx));
	} else {
		json_object_set_new(o, "prev", json_null());
	}
	for (int i = 0; i < AUDIT_CHAIN__COUNT; i++) {
		to_hex(h->head[i], WARD_SHA256_LEN, hx);
		json_object_set_new(o, table_name[i],
				    json_pack("{s:I, s:s}", "count",
					      (json_int_t)h->count[i], "head",
					      hx));
	}
	json_object_set_new(o, "run", tags_json(&s->run));
	json_object_set_new(o, "processes", tags_json(&s->procs));
	json_object_set_new(o, "inputs", tags_json(&s->inputs));
	json_object_set_new(o, "phases", tags_json(&s->phases));
	json_object_set_new(o, "sealed_by", json_string(sealed_by));
	to_hex(seal, WARD_SHA256_LEN, hx);
	json_object_set_new(o, "seal", json_string(hx));
	/* a session's server seals its cells when it closes it: the run's
	 * end (before the last cells) leaves that to it */
	if (!s->session || s->cells.n || s->arts.n)
		set_cells(o, k, run_id, seal, s, sealed_by, cells_hex);
	text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	return text;
}

/* Seals run_id with the heads h: writes runs.chain (in the caller's
 * transaction). text_out (may be NULL) receives the JSON text. */
static int seal_run(struct audit *a, const char *run_id, const struct heads *h,
		    const char *sealed_by, char **text_out)
{
	const struct audit_chain_key *k = a->key.loaded ? &a->key : NULL;
	struct sealed s = { 0 };
	struct audit_run_link l = { 0 };
	char cells_hex[2 * WARD_SHA256_LEN + 1] = "";
	uint8_t seal[WARD_SHA256_LEN];
	sqlite3_stmt *st = NULL;
	char *text = NULL;
	int r, rc;

	r = read_sealed(a, k, run_id, &s);
	if (!r && !s.has_run)
		r = audit_fail(a, -ENOENT, "%s: run %s is not in the database",
			       a->path, run_id);
	if (!r)
		r = audit_link_next(a, &l);
	if (!r) {
		seal_of(k, run_id, h, &s, SEAL_VERSION, &l, seal);
		text = chain_json(k, h, &s, &l, seal, run_id, sealed_by,
				  cells_hex);
		if (!text)
			r = audit_fail(a, -ENOMEM, "out of memory");
	}
	if (!r) {
		rc = seal_stmt(a, SST_SET, &st);
		if (rc == SQLITE_OK) {
			sqlite3_bind_text(st, 1, run_id, -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
			rc = sqlite3_step(st);
		}
		if (rc != SQLITE_DONE)
			r = audit_sqlfail(a, rc, "seal the run's chain");
		seal_stmt_done(st);
	}
	if (!r)
		r = audit_link_store(a, run_id, &l, seal, sealed_by,
				     cells_hex[0] ? cells_hex : NULL);
	if (!r && text_out) {
		*text_out = text;
		text = NULL;
	}
	free(text);
	sealed_free(&s);
	return r;
}

int audit_chain_seal(struct audit *a)
{
	struct heads h;
	char *text = NULL;
	int r;

	for (int i = 0; i < AUDIT_CHAIN__COUNT; i++) {
		h.count[i] = a->chain[i].count;
		memcpy(h.head[i], a->chain[i].link, WARD_SHA256_LEN);
	}
	r = seal_run(a, a->run_id, &h, "ward", &text);
	if (!r) {
		free(a->last_chain);
		a->last_chain = text;
	}
	return r;
}

/* The stored head of one chain: its row count and last row's link (zero
 * when it has none or the link does not parse). */
static int stored_head(struct audit *a, enum audit_chain_table t,
		       const char *run_id, struct heads *h)
{
	static const char *const sql[] = {
		[AUDIT_CHAIN_EVENTS] =
			"SELECT count(*), (SELECT hash FROM events WHERE"
			" run_id = ?1 ORDER BY seq DESC LIMIT 1) FROM events"
			" WHERE run_id = ?1",
		[AUDIT_CHAIN_OUTPUTS] =
			"SELECT count(*), (SELECT hash FROM outputs WHERE"
			" run_id = ?1 ORDER BY seq DESC LIMIT 1) FROM outputs"
			" WHERE run_id = ?1",
	};
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(a->db, sql[t], -1, &st, NULL);

	memset(h->head[t], 0, WARD_SHA256_LEN);
	h->count[t] = 0;
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, run_id, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
	}
	if (rc == SQLITE_ROW) {
		const char *hs = (const char *)sqlite3_column_text(st, 1);

		h->count[t] = sqlite3_column_int64(st, 0);
		if (hs && strlen(hs) >= 64 && from_hex(hs, 32, h->head[t]))
			memset(h->head[t], 0, WARD_SHA256_LEN);
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_OK ? 0 : audit_sqlfail(a, rc, a->path);
}

int audit_chain_seal_reaped(struct audit *a, const char *run_id)
{
	struct heads h;
	int r = 0;

	for (int t = 0; !r && t < AUDIT_CHAIN__COUNT; t++)
		r = stored_head(a, (enum audit_chain_table)t, run_id, &h);
	return r ? r : seal_run(a, run_id, &h, "reaper", NULL);
}

int audit_seal_cells(struct audit *a, const char *run_id)
{
	struct sealed s = { 0 };
	char cells_hex[2 * WARD_SHA256_LEN + 1] = "";
	json_t *o = NULL;
	uint8_t seal[WARD_SHA256_LEN];
	sqlite3_stmt *st = NULL;
	char *text = NULL;
	const char *sh;
	int r, rc;

	if (a->readonly)
		return audit_fail(a, -EROFS, "%s: opened readonly", a->path);
	pthread_mutex_lock(&a->lock);
	r = audit_commit_batch(a);
	if (!r)
		r = audit_chain_key_load(a, true);
	if (!r && (rc = sqlite3_exec(a->db, "BEGIN IMMEDIATE", NULL, NULL,
				     NULL)) != SQLITE_OK)
		r = audit_sqlfail(a, rc, a->path);
	if (r) {
		pthread_mutex_unlock(&a->lock);
		return r;
	}
	r = read_sealed(a, &a->key, run_id, &s);
	if (!r && s.chain_json)
		o = json_loads(s.chain_json, 0, NULL);
	sh = json_string_value(json_object_get(o, "seal"));
	/* not sealed (yet): the worker died; the reaper's seal will cover
	 * its cells as they are then */
	if (!r && sh && strlen(sh) == 64 && !from_hex(sh, 32, seal)) {
		set_cells(o, &a->key, run_id, seal, &s, "server", cells_hex);
		r = audit_cells_note(a, run_id, sh, cells_hex);
		text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
		rc = r	    ? SQLITE_NOMEM
		     : text ? sqlite3_prepare_v2(a->db,
						 "UPDATE runs SET chain = ?2"
						 " WHERE id = ?1",
						 -1, &st, NULL)
			    : SQLITE_NOMEM;
		if (rc == SQLITE_OK) {
			sqlite3_bind_text(st, 1, run_id, -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
			rc = sqlite3_step(st);
		}
		if (rc != SQLITE_DONE)
			r = audit_sqlfail(a, rc, "seal the cells");
		sqlite3_finalize(st);
	}
	if (!r && (rc = sqlite3_exec(a->db, "COMMIT", NULL, NULL, NULL)))
		r = audit_sqlfail(a, rc, a->path);
	if (r && !sqlite3_get_autocommit(a->db))
		sqlite3_exec(a->db, "ROLLBACK", NULL, NULL, NULL);
	audit_seals_done(a, !r);
	free(text);
	json_decref(o);
	sealed_free(&s);
	pthread_mutex_unlock(&a->lock);
	return r;
}

const char *audit_run_chain(const struct audit *a)
{
	return a->last_chain;
}

/* ------------------------------ verify ------------------------------ */

/* The first chained run's start time is taken just before its key is
 * made; a run older than that by more than this predates the chain. */
#define KEY_SLACK_NS (10 * 1000000000LL)

struct vctx {
	struct audit *a;
	const char *run_id;
	struct audit_verify *out;
	int (*fn)(const struct audit_problem *, void *);
	void *arg;
	int stop; /* what fn returned, when not 0 */
};

__attribute__((format(printf, 5, 6))) static void
problem(struct vctx *v, const char *table, long long row, const char *column,
	const char *fmt, ...)
{
	struct audit_problem p = { .table = table,
				   .row = row,
				   .column = column };
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	p.what = what;
	v->out->problems++;
	if (v->fn && !v->stop)
		v->stop = v->fn(&p, v->arg);
}

static const char *const chain_sql[] = {
	[AUDIT_CHAIN_EVENTS] =
		"SELECT run_id, seq, ts_ns, pid, tid, proc_serial, nr, syscall,"
		" args, raw, target, decision, rule, reason, errno, would_deny,"
		" backtrace, pyframes, result, hash FROM events"
		" WHERE run_id = ?1 ORDER BY seq",
	/* a file older than version 5, opened readonly: no result column */
	[AUDIT_CHAIN__COUNT] =
		"SELECT run_id, seq, ts_ns, pid, tid, proc_serial, nr, syscall,"
		" args, raw, target, decision, rule, reason, errno, would_deny,"
		" backtrace, pyframes, NULL, hash FROM events WHERE run_id = ?1"
		" ORDER BY seq",
	[AUDIT_CHAIN_OUTPUTS] = "SELECT run_id, seq, ts_ns, stream, data, cmd,"
				" hash FROM outputs WHERE run_id = ?1"
				" ORDER BY seq",
	/* a file older than version 7, opened readonly: no cmd column */
	[AUDIT_CHAIN__COUNT + 1] =
		"SELECT run_id, seq, ts_ns, stream, data, NULL, hash"
		" FROM outputs WHERE run_id = ?1 ORDER BY seq",
};

/* A stored hash column: the link, and the tag if there is one. */
struct stored {
	uint8_t link[WARD_SHA256_LEN];
	bool has_mac;
	char mac[33];
};

static bool parse_hash(const char *s, struct stored *h)
{
	size_t n = s ? strlen(s) : 0;

	if ((n != 64 && n != AUDIT_HASH_TEXT_LEN) || from_hex(s, 32, h->link))
		return false;
	h->has_mac = n == AUDIT_HASH_TEXT_LEN;
	if (h->has_mac) {
		uint8_t m[16];

		if (s[64] != ':' || from_hex(s + 65, 16, m))
			return false;
		memcpy(h->mac, s + 65, 32);
		h->mac[32] = '\0';
	}
	return true;
}

/* The link of the statement's current row after prev. */
static void row_link(sqlite3_stmt *st, const char *table, int ncols,
		     const uint8_t prev[WARD_SHA256_LEN],
		     uint8_t out[WARD_SHA256_LEN])
{
	struct ward_sha256 c;

	ward_sha256_init(&c);
	ward_sha256_update(&c, prev, WARD_SHA256_LEN);
	put_text(&c, table);
	for (int i = 0; i < ncols; i++)
		put_col(&c, st, i);
	ward_sha256_final(&c, out);
}

#define MOVED_MAX 64 /* rows looked back at for a moved predecessor */

/* One chain: every row's link recomputed from the row before it as
 * stored, so an edited row is named by itself; gaps in seq are deletions.
 * A row that follows changed rows is also tried after each of their
 * stored links (up to MOVED_MAX): when rows were swapped, the row after
 * them still follows the one that was moved, and is not named. Fills the
 * count, the last seq and the last stored link. */
static int verify_chain(struct vctx *v, enum audit_chain_table t,
			const struct audit_chain_key *k, long long *count,
			long long *last_seq, uint8_t last[WARD_SHA256_LEN],
			long long *unhashed)
{
	uint8_t moved[MOVED_MAX][WARD_SHA256_LEN];
	int n_moved = 0;
	const char *tn = table_name[t];
	sqlite3_stmt *st = NULL;
	const char *sql = t == AUDIT_CHAIN_EVENTS && !v->a->v5_cols
				  ? chain_sql[AUDIT_CHAIN__COUNT]
			  : t == AUDIT_CHAIN_OUTPUTS && !v->a->v7_cols
				  ? chain_sql[AUDIT_CHAIN__COUNT + 1]
				  : chain_sql[t];
	int rc = sqlite3_prepare_v2(v->a->db, sql, -1, &st, NULL);
	uint8_t prev[WARD_SHA256_LEN] = { 0 };
	long long expect = 1;
	bool prev_known = true;

	*count = 0;
	*last_seq = 0;
	*unhashed = 0;
	memset(last, 0, WARD_SHA256_LEN);
	if (rc != SQLITE_OK)
		return audit_sqlfail(v->a, rc, v->a->path);
	sqlite3_bind_text(st, 1, v->run_id, -1, SQLITE_STATIC);
	while (!v->stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int nc = sqlite3_column_count(st) - 1;
		long long seq = sqlite3_column_int64(st, 1);
		const char *hs = (const char *)sqlite3_column_text(st, nc);
		/* events.result and outputs.cmd are part of the record
		 * only when not NULL */
		int hc = sqlite3_column_type(st, nc - 1) == SQLITE_NULL ? nc - 1
									: nc;
		struct stored h;
		uint8_t link[WARD_SHA256_LEN];

		(*count)++;
		if (seq != expect) {
			if (seq > expect && expect == seq - 1)
				problem(v, tn, expect, NULL,
					"missing: deleted (seq %lld follows "
					"%lld)",
					seq, expect - 1);
			else if (seq > expect)
				problem(v, tn, expect, NULL,
					"missing: seq %lld to %lld deleted "
					"(seq %lld follows %lld)",
					expect, seq - 1, seq, expect - 1);
			else
				problem(v, tn, seq, NULL,
					"seq %lld out of order: inserted", seq);
			prev_known = false;
		}
		expect = seq + 1;
		if (!hs) {
			(*unhashed)++;
			prev_known = false;
			continue;
		}
		if (!parse_hash(hs, &h)) {
			problem(v, tn, seq, "hash",
				"hash '%.80s' is not a ward chain link", hs);
			prev_known = false;
			continue;
		}
		row_link(st, tn, hc, prev, link);
		bool good = !memcmp(link, h.link, WARD_SHA256_LEN);
		for (int i = 0; !good && i < n_moved; i++) {
			row_link(st, tn, hc, moved[i], link);
			good = !memcmp(link, h.link, WARD_SHA256_LEN);
		}
		if (prev_known && !good)
			problem(v, tn, seq, NULL,
				"changed: the row does not match its hash "
				"(edited, or moved from another seq)");
		if (good || !prev_known)
			n_moved = 0;
		else if (n_moved < MOVED_MAX)
			memcpy(moved[n_moved++], h.link, WARD_SHA256_LEN);
		if (k && h.has_mac) {
			char want[AUDIT_HASH_TEXT_LEN + 1];

			link_text(k, h.link, want);
			if (strcmp(want + 65, h.mac))
				problem(v, tn, seq, "hash",
					"forged: the hash's keyed tag is wrong "
					"(the chain was recomputed by someone "
					"without the key)");
		} else if (k) {
			problem(v, tn, seq, "hash",
				"forged: the hash has no keyed tag (rewritten "
				"without the key)");
		}
		memcpy(prev, h.link, WARD_SHA256_LEN);
		memcpy(last, h.link, WARD_SHA256_LEN);
		*last_seq = seq;
		prev_known = true;
	}
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		int r = audit_sqlfail(v->a, rc, v->a->path);

		sqlite3_finalize(st);
		return r;
	}
	sqlite3_finalize(st);
	return 0;
}

/* The seal's parts as runs.chain holds them. */
struct chain_rec {
	json_t *o;
	const char *alg, *key_id, *seal;
	long long count[AUDIT_CHAIN__COUNT];
	const char *head[AUDIT_CHAIN__COUNT];
	json_t *run, *procs, *inputs;
	json_t *phases; /* version 3 */
	int version;
	struct audit_run_link link; /* version 2 on */
};

static bool hexlen(const char *s, size_t n)
{
	uint8_t b[64];

	return s && strlen(s) == 2 * n && n <= sizeof(b) && !from_hex(s, n, b);
}

static bool tag_list_ok(json_t *arr)
{
	size_t i;
	json_t *x;

	if (!json_is_array(arr))
		return false;
	json_array_foreach(arr, i, x)
	{
		if (!hexlen(json_string_value(x), TAG_LEN))
			return false;
	}
	return true;
}

static bool parse_chain(const char *text, struct chain_rec *c)
{
	memset(c, 0, sizeof(*c));
	c->o = json_loads(text, 0, NULL);
	if (!json_is_object(c->o))
		return false;
	c->alg = json_string_value(json_object_get(c->o, "alg"));
	c->key_id = json_string_value(json_object_get(c->o, "key_id"));
	c->seal = json_string_value(json_object_get(c->o, "seal"));
	for (int i = 0; i < AUDIT_CHAIN__COUNT; i++) {
		json_t *p = json_object_get(c->o, table_name[i]);

		if (!json_is_integer(json_object_get(p, "count")))
			return false;
		c->count[i] = json_integer_value(json_object_get(p, "count"));
		c->head[i] = json_string_value(json_object_get(p, "head"));
		if (!hexlen(c->head[i], WARD_SHA256_LEN))
			return false;
	}
	c->run = json_object_get(c->o, "run");
	c->procs = json_object_get(c->o, "processes");
	c->inputs = json_object_get(c->o, "inputs");
	c->phases = json_object_get(c->o, "phases");
	c->version = (int)json_integer_value(json_object_get(c->o, "version"));
	if (c->version >= 2 && audit_link_parse(c->o, &c->link))
		return false;
	if (c->version >= 3 && !tag_list_ok(c->phases))
		return false;
	return c->version >= 1 && c->version <= SEAL_VERSION && c->alg &&
	       (!strcmp(c->alg, "sha256") ||
		(!strcmp(c->alg, "hmac-sha256") && c->key_id)) &&
	       hexlen(c->seal, WARD_SHA256_LEN) && tag_list_ok(c->run) &&
	       tag_list_ok(c->procs) && tag_list_ok(c->inputs);
}

static const char *tag_at(json_t *arr, size_t i)
{
	return json_string_value(json_array_get(arr, i));
}

/* The tags of a list runs.chain holds (checked by tag_list_ok). */
static int tags_of_json(json_t *arr, struct tags *g)
{
	int r = 0;

	for (size_t i = 0; !r && i < json_array_size(arr); i++) {
		uint8_t d[WARD_SHA256_LEN] = { 0 };

		from_hex(tag_at(arr, i), TAG_LEN, d);
		r = tags_add(g, d, 0);
	}
	return r;
}

/* Names what differs between the tags recorded in the seal and those of
 * the database now: run columns, or rows by their serial / n. */
static void compare_tags(struct vctx *v, const char *table, json_t *rec,
			 const struct tags *now, bool columns)
{
	size_t nrec = json_array_size(rec);
	char hx[2 * TAG_LEN + 1];

	for (size_t i = 0; i < now->n; i++) {
		to_hex(now->t[i], TAG_LEN, hx);
		if (i >= nrec) {
			problem(v, table, columns ? 0 : now->key[i], NULL,
				"inserted: not in the sealed record");
			continue;
		}
		if (!strcmp(hx, tag_at(rec, i)))
			continue;
		if (columns)
			problem(v, table, 0, run_cols[i],
				"changed: runs.%s is not what was sealed",
				run_cols[i]);
		else
			problem(v, table, now->key[i], NULL,
				"changed (edited, or a row before it was "
				"deleted): not what was sealed");
	}
	if (nrec > now->n)
		problem(v, table, 0, NULL,
			"deleted: %zu row(s) sealed, %zu now", nrec, now->n);
}

/* A run in a file older than the chain (schema version 4, opened
 * readonly): nothing to check. */
static int old_run(struct audit *a, const char *run_id,
		   struct audit_verify *out)
{
	sqlite3_stmt *st = NULL;
	int rc =
		sqlite3_prepare_v2(a->db,
				   "SELECT status, (SELECT count(*) FROM events"
				   " WHERE run_id = ?1), (SELECT count(*) FROM"
				   " outputs WHERE run_id = ?1) FROM runs"
				   " WHERE id = ?1",
				   -1, &st, NULL);

	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, run_id, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
	}
	if (rc == SQLITE_ROW) {
		snprintf(out->status, sizeof(out->status), "%s",
			 sqlite3_column_text(st, 0)
				 ? (const char *)sqlite3_column_text(st, 0)
				 : "");
		out->rows[0] = sqlite3_column_int64(st, 1);
		out->rows[1] = sqlite3_column_int64(st, 2);
		out->unchained = true;
	}
	sqlite3_finalize(st);
	if (rc == SQLITE_DONE)
		return audit_fail(a, -ENOENT, "%s: no run %s", a->path, run_id);
	return rc == SQLITE_ROW ? 0 : audit_sqlfail(a, rc, a->path);
}

/* The cells part: their tags and their seal, bound to the run's seal. */
static void verify_cells(struct vctx *v, const struct chain_rec *c,
			 const struct sealed *s,
			 const struct audit_chain_key *k)
{
	json_t *cells = json_object_get(c->o, "cells");
	json_t *arts = json_object_get(c->o, "artifacts");
	const char *cs = json_string_value(json_object_get(c->o, "cells_seal"));
	struct tags tc = { 0 }, ta = { 0 };
	uint8_t seal[WARD_SHA256_LEN], got[WARD_SHA256_LEN];
	char hx[2 * WARD_SHA256_LEN + 1];

	if (!cs && !s->session) {
		problem(v, "runs", 0, "chain",
			"the seal of the run's cells and artifacts was removed");
		return;
	}
	if (!cs) {
		v->out->cells_unsealed = s->cells.n || s->arts.n;
		return;
	}
	if (!tag_list_ok(cells) || !tag_list_ok(arts) ||
	    !hexlen(cs, WARD_SHA256_LEN)) {
		problem(v, "runs", 0, "chain",
			"the cells' seal in runs.chain is not a ward seal");
		return;
	}
	compare_tags(v, "cells", cells, &s->cells, false);
	compare_tags(v, "artifacts", arts, &s->arts, false);
	from_hex(c->seal, WARD_SHA256_LEN, seal);
	if (tags_of_json(cells, &tc) || tags_of_json(arts, &ta)) {
		problem(v, "runs", 0, "chain", "out of memory");
	} else {
		cells_seal_of(k, v->run_id, seal, &tc, &ta, got);
		to_hex(got, WARD_SHA256_LEN, hx);
		if (strcmp(hx, cs))
			problem(v, "runs", 0, "chain",
				"the cells' seal does not match runs.chain "
				"(cells or artifacts rewritten)");
	}
	tags_free(&tc);
	tags_free(&ta);
}

int audit_verify_run(struct audit *a, const char *run_id,
		     struct audit_verify *out,
		     int (*fn)(const struct audit_problem *, void *), void *arg)
{
	struct vctx v = {
		.a = a, .run_id = run_id, .out = out, .fn = fn, .arg = arg
	};
	const struct audit_chain_key *k;
	struct sealed s = { 0 };
	struct chain_rec c = { 0 };
	struct heads h = { 0 };
	long long unhashed[AUDIT_CHAIN__COUNT], started_ns = 0;
	long long last_seq[AUDIT_CHAIN__COUNT];
	int r;

	memset(out, 0, sizeof(*out));
	snprintf(out->run_id, sizeof(out->run_id), "%s", run_id);
	pthread_mutex_lock(&a->lock);
	if (!a->v4_cols) { /* a file older than version 4, read as it is */
		r = old_run(a, run_id, out);
		pthread_mutex_unlock(&a->lock);
		return r;
	}
	k = run_key(a, run_id);
	r = read_sealed(a, k, run_id, &s);
	if (!r && !s.has_run)
		r = audit_fail(a, -ENOENT, "%s: no run %s", a->path, run_id);
	if (r)
		goto done;
	{
		/* status is column 18 of run_cols; read it back directly */
		sqlite3_stmt *st = NULL;

		if (sqlite3_prepare_v2(a->db,
				       "SELECT status, started_ns FROM runs"
				       " WHERE id = ?1",
				       -1, &st, NULL) == SQLITE_OK) {
			sqlite3_bind_text(st, 1, run_id, -1, SQLITE_STATIC);
			if (sqlite3_step(st) == SQLITE_ROW &&
			    sqlite3_column_text(st, 0))
				snprintf(out->status, sizeof(out->status), "%s",
					 sqlite3_column_text(st, 0));
			started_ns = sqlite3_column_int64(st, 1);
			sqlite3_finalize(st);
		}
	}
	out->sealed = s.chain_json != NULL;
	if (out->sealed && !parse_chain(s.chain_json, &c)) {
		problem(&v, "runs", 0, "chain",
			"runs.chain is not a ward seal (edited?)");
		out->sealed = false;
		out->broken_seal = true;
	}
	out->keyed = out->sealed && !strcmp(c.alg, "hmac-sha256");
	if (out->sealed) {
		snprintf(out->alg, sizeof(out->alg), "%s", c.alg);
		snprintf(out->key_id, sizeof(out->key_id), "%s",
			 c.key_id ? c.key_id : "");
		snprintf(out->seal, sizeof(out->seal), "%s", c.seal);
		out->link_n = c.version >= 2 ? c.link.n : 0;
		if (c.version >= 2 && c.link.has_prev)
			snprintf(out->prev_run, sizeof(out->prev_run), "%s",
				 c.link.prev_run);
	}
	/* A key that is not the sealing key checks nothing. */
	if (k && out->keyed && strcmp(k->id, c.key_id)) {
		out->key_mismatch = true;
		snprintf(out->key_note, sizeof(out->key_note),
			 "the key (id %s) is not the one that sealed the run "
			 "(id %s)",
			 k->id, c.key_id);
		k = NULL;
	}
	/* ward seals every run with the database's key: with the key at
	 * hand, an unkeyed seal is a rewrite. */
	if (k && out->sealed && !out->keyed)
		problem(&v, "runs", 0, "chain",
			"forged: sealed without a key (alg %s) although this "
			"database has one",
			c.alg);
	out->key_checked = k != NULL;
	for (int t = 0; !r && t < AUDIT_CHAIN__COUNT; t++) {
		r = verify_chain(&v, (enum audit_chain_table)t, k, &h.count[t],
				 &last_seq[t], h.head[t], &unhashed[t]);
		out->rows[t] = h.count[t];
		to_hex(h.head[t], WARD_SHA256_LEN, out->head[t]);
	}
	if (r)
		goto done;
	/* A run still running with no row yet (ward killed before its first
	 * batch) has nothing unchained: it is running, not stripped. */
	out->unchained = !out->sealed && !out->broken_seal &&
			 unhashed[0] == h.count[0] &&
			 unhashed[1] == h.count[1] &&
			 !(h.count[0] + h.count[1] == 0 &&
			   !strcmp(out->status, "running"));
	for (int t = 0; t < AUDIT_CHAIN__COUNT; t++)
		if (unhashed[t] && !out->unchained)
			problem(&v, table_name[t], 0, "hash",
				"%lld row(s) without a hash in a chained run "
				"(inserted, or their hash removed)",
				unhashed[t]);
	/* Every run begun after the key was made is chained by ward. */
	if (out->unchained && k && started_ns >= k->since_ns - KEY_SLACK_NS) {
		problem(&v, "runs", 0, "chain",
			"no chain, but the run began after this database's "
			"key was made: its hashes and seal were removed");
		out->unchained = false;
	}
	if (!out->sealed) {
		/* ward seals a run at its end, the reaper one whose ward
		 * died: only a running run has no seal */
		if (!out->unchained && !out->broken_seal &&
		    strcmp(out->status, "running"))
			problem(&v, "runs", 0, "chain",
				"the run ended (%s) but has no seal "
				"(runs.chain removed?)",
				out->status);
		goto done;
	}
	for (int t = 0; t < AUDIT_CHAIN__COUNT; t++) {
		char hx[2 * WARD_SHA256_LEN + 1];

		to_hex(h.head[t], WARD_SHA256_LEN, hx);
		if (last_seq[t] < c.count[t])
			problem(&v, table_name[t], last_seq[t] + 1, NULL,
				"deleted: seq %lld to %lld, the end of the "
				"chain, are gone (the seal has %lld rows, "
				"the table %lld)",
				last_seq[t] + 1, c.count[t], c.count[t],
				h.count[t]);
		else if (h.count[t] < c.count[t])
			problem(&v, table_name[t], 0, NULL,
				"deleted: the seal has %lld rows, the table "
				"%lld",
				c.count[t], h.count[t]);
		else if (h.count[t] > c.count[t])
			problem(&v, table_name[t], c.count[t] + 1, NULL,
				"inserted: the seal has %lld rows, the table "
				"%lld (seq %lld and after were added)",
				c.count[t], h.count[t], c.count[t] + 1);
		else if (strcmp(hx, c.head[t]))
			problem(&v, table_name[t], h.count[t], NULL,
				"the last row's hash is not the sealed head "
				"(rows rewritten)");
	}
	/* Column and row tags: keyed ones can only be checked with the key;
	 * plain ones always. */
	if (!out->keyed || (out->key_checked && k)) {
		compare_tags(&v, "runs", c.run, &s.run, true);
		compare_tags(&v, "processes", c.procs, &s.procs, false);
		compare_tags(&v, "inputs", c.inputs, &s.inputs, false);
		/* a seal older than version 3 does not cover the phases */
		if (c.version >= 3)
			compare_tags(&v, "phases", c.phases, &s.phases, false);
		verify_cells(&v, &c, &s, out->keyed ? k : NULL);
		for (int t = 0; t < AUDIT_CHAIN__COUNT; t++) {
			from_hex(c.head[t], WARD_SHA256_LEN, h.head[t]);
			h.count[t] = c.count[t];
		}
		{
			uint8_t seal[WARD_SHA256_LEN];
			char hx[2 * WARD_SHA256_LEN + 1];
			struct sealed rec = { 0 };
			bool ok = true;

			/* the seal over what runs.chain records */
			ok = !tags_of_json(c.run, &rec.run) &&
			     !tags_of_json(c.procs, &rec.procs) &&
			     !tags_of_json(c.inputs, &rec.inputs) &&
			     (c.version < 3 ||
			      !tags_of_json(c.phases, &rec.phases));
			if (!ok) {
				sealed_free(&rec);
				r = audit_fail(a, -ENOMEM, "out of memory");
				goto done;
			}
			seal_of(out->keyed ? k : NULL, run_id, &h, &rec,
				c.version, &c.link, seal);
			sealed_free(&rec);
			to_hex(seal, WARD_SHA256_LEN, hx);
			out->seal_checked = true;
			if (strcmp(hx, c.seal))
				problem(&v, "runs", 0, "chain",
					"the seal does not match runs.chain "
					"(the chain's record was rewritten%s)",
					out->key_checked
						? " by someone without the key"
						: "");
		}
	} else if (!out->key_note[0]) {
		snprintf(out->key_note, sizeof(out->key_note),
			 "no chain key: the keyed tags and the seal were not "
			 "checked (only the chains' links)");
	}
done:
	if (!r && v.stop)
		r = v.stop;
	json_decref(c.o);
	sealed_free(&s);
	pthread_mutex_unlock(&a->lock);
	return r;
}

int audit_verify_key(struct audit *a)
{
	int r;

	pthread_mutex_lock(&a->lock);
	r = audit_chain_key_load(a, false);
	pthread_mutex_unlock(&a->lock);
	return r;
}
