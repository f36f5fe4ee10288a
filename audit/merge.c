/*
 * merge.c - the runs of another database copied into this one (ward
 * merge), verbatim: every row, hash and seal as its ward wrote it. The
 * source's chain keeps its identity: its key goes into this database's
 * keyring (DB.keys, mode 0600, beside DB.key), its head into ward_meta
 * (AUDIT_MERGED_KEY || key id), so that verifying checks each of its runs
 * with the key that sealed it and its chain of runs against its own head.
 * A source that was itself merged brings its merged chains along.
 */
#include "audit/audit-int.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The tables merged, in an order their foreign keys accept. */
static const char *const merged_tables[] = {
	"runs",	  "processes", "events",    "outputs",
	"inputs", "cells",     "artifacts", "phases",
};

static int sql_fail(struct audit *a, int rc, const char *what)
{
	return audit_fail(a, audit_errno_of(rc), "%s: %s", what,
			  sqlite3_errmsg(a->db));
}

/* "c1, c2, ..." and "?1, ?2, ..." for table t as this database has it. */
static int columns_of(struct audit *a, const char *t, char *cols, size_t cn,
		      char *qs, size_t qn, int *n)
{
	char sql[128];
	sqlite3_stmt *st = NULL;
	size_t cl = 0, ql = 0;
	int rc;

	*n = 0;
	snprintf(sql, sizeof(sql), "SELECT name FROM pragma_table_info('%s')",
		 t);
	rc = sqlite3_prepare_v2(a->db, sql, -1, &st, NULL);
	while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *c = (const char *)sqlite3_column_text(st, 0);
		int w1 = snprintf(cols + cl, cn - cl, "%s\"%s\"",
				  *n ? ", " : "", c);
		int w2 = snprintf(qs + ql, qn - ql, "%s?%d", *n ? ", " : "",
				  *n + 1);

		if (w1 < 0 || w2 < 0 || (size_t)w1 >= cn - cl ||
		    (size_t)w2 >= qn - ql) {
			sqlite3_finalize(st);
			return audit_fail(a, -E2BIG, "%s: too many columns", t);
		}
		cl += (size_t)w1;
		ql += (size_t)w2;
		(*n)++;
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE && rc != SQLITE_OK)
		return sql_fail(a, rc, t);
	return 0;
}

/* Every row of table t from src into a, column by column as stored. */
static int copy_table(struct audit *a, struct audit *src, const char *t,
		      long long *rows)
{
	char cols[2048], qs[1024], sql[4096];
	sqlite3_stmt *from = NULL, *to = NULL;
	int n, rc, r = columns_of(a, t, cols, sizeof(cols), qs, sizeof(qs), &n);

	if (r)
		return r;
	snprintf(sql, sizeof(sql), "SELECT %s FROM \"%s\"", cols, t);
	rc = sqlite3_prepare_v2(src->db, sql, -1, &from, NULL);
	if (rc != SQLITE_OK) {
		r = audit_fail(a, -EPROTO,
			       "%s: its table %s is not this ward's (%s)",
			       src->path, t, sqlite3_errmsg(src->db));
		goto out;
	}
	snprintf(sql, sizeof(sql), "INSERT INTO \"%s\"(%s) VALUES(%s)", t, cols,
		 qs);
	rc = sqlite3_prepare_v2(a->db, sql, -1, &to, NULL);
	if (rc != SQLITE_OK) {
		r = sql_fail(a, rc, t);
		goto out;
	}
	while ((rc = sqlite3_step(from)) == SQLITE_ROW) {
		for (int i = 0; i < n; i++)
			sqlite3_bind_value(to, i + 1,
					   sqlite3_column_value(from, i));
		rc = sqlite3_step(to);
		sqlite3_reset(to);
		if (rc != SQLITE_DONE) {
			r = sql_fail(a, rc, t);
			goto out;
		}
		(*rows)++;
	}
	if (rc != SQLITE_DONE)
		r = audit_fail(a, -EIO, "%s: reading %s: %s", src->path, t,
			       sqlite3_errmsg(src->db));
out:
	sqlite3_finalize(from);
	sqlite3_finalize(to);
	return r;
}

/* The text of ward_meta's key in db, or NULL (caller frees). */
static char *meta_get(sqlite3 *db, const char *key)
{
	sqlite3_stmt *st = NULL;
	char *v = NULL;

	if (sqlite3_prepare_v2(db, "SELECT value FROM ward_meta WHERE key = ?1",
			       -1, &st, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		v = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return v;
}

static int meta_put(struct audit *a, const char *key, const char *value)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(
		a->db, "INSERT INTO ward_meta(key, value) VALUES(?1, ?2)", -1,
		&st, NULL);

	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
	}
	sqlite3_finalize(st);
	if (rc == SQLITE_CONSTRAINT)
		return audit_fail(a, -EEXIST,
				  "%s: the chain %s is merged in already",
				  a->path, key + strlen(AUDIT_MERGED_KEY));
	return rc == SQLITE_DONE ? 0 : sql_fail(a, rc, "ward_meta");
}

/* A chain the source brings: its own (key k, head text), or one merged
 * into it before (its ward_meta value as is). */
static int add_chain(struct audit *a, const char *key_id, const char *value)
{
	char key[64];

	if (a->key.loaded && !strcmp(a->key.id, key_id))
		return audit_fail(a, -EEXIST,
				  "%s: the chain with key %s is this "
				  "database's own",
				  a->path, key_id);
	snprintf(key, sizeof(key), "%s%s", AUDIT_MERGED_KEY, key_id);
	return meta_put(a, key, value);
}

/* The source's own chain and the chains merged into it before. */
static int chains_of(struct audit *a, struct audit *src, const char *src_abs,
		     long long runs)
{
	char *head = meta_get(src->db, "run_chain_head");
	json_t *o = json_pack("{s:s?, s:s, s:I, s:I}", "head", head, "source",
			      src_abs, "runs", (json_int_t)runs, "merged_ns",
			      (json_int_t)time(NULL) * 1000000000LL);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	size_t pre = strlen(AUDIT_MERGED_KEY);
	sqlite3_stmt *st = NULL;
	int r = text ? add_chain(a, src->key.id, text)
		     : audit_fail(a, -ENOMEM, "out of memory");

	free(head);
	free(text);
	json_decref(o);
	if (!r && sqlite3_prepare_v2(src->db,
				     "SELECT key, value FROM ward_meta WHERE"
				     " substr(key, 1, ?1) = ?2",
				     -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int(st, 1, (int)pre);
		sqlite3_bind_text(st, 2, AUDIT_MERGED_KEY, -1, SQLITE_STATIC);
		while (!r && sqlite3_step(st) == SQLITE_ROW)
			r = add_chain(a,
				      (const char *)sqlite3_column_text(st, 0) +
					      pre,
				      (const char *)sqlite3_column_text(st, 1));
	}
	sqlite3_finalize(st);
	return r;
}

static int first_row(sqlite3 *db, const char *sql, char *out, size_t n)
{
	sqlite3_stmt *st = NULL;
	int found = 0;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
		snprintf(out, n, "%s", sqlite3_column_text(st, 0));
		found = 1;
	}
	sqlite3_finalize(st);
	return found;
}

/* A run of src that a already holds, or 0: a duplicate is refused. */
static int duplicate(struct audit *a, struct audit *src, char *id, size_t n)
{
	sqlite3_stmt *from = NULL, *in = NULL;
	int found = 0, rc;

	rc = sqlite3_prepare_v2(src->db, "SELECT id FROM runs", -1, &from,
				NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(a->db,
					"SELECT 1 FROM runs WHERE id = ?1", -1,
					&in, NULL);
	while (rc == SQLITE_OK && !found &&
	       (rc = sqlite3_step(from)) == SQLITE_ROW) {
		sqlite3_bind_value(in, 1, sqlite3_column_value(from, 0));
		if (sqlite3_step(in) == SQLITE_ROW) {
			snprintf(id, n, "%s", sqlite3_column_text(from, 0));
			found = 1;
		}
		sqlite3_reset(in);
		rc = SQLITE_OK;
	}
	sqlite3_finalize(from);
	sqlite3_finalize(in);
	return rc == SQLITE_OK || rc == SQLITE_DONE ? found : -EIO;
}

/* What a source must be: this ward's schema, its key at hand (its runs
 * are verifiable after the merge), no run still being written. */
static int source_ok(struct audit *a, struct audit *src)
{
	char id[64];
	int r;

	if (!a->v4_cols || !src->v4_cols || a->v5_cols != src->v5_cols ||
	    a->v6_tables != src->v6_tables || a->v7_cols != src->v7_cols)
		return audit_fail(
			a, -EPROTO,
			"%s is not at this ward's schema version "
			"(%d): open it once with this ward (e.g. `ward "
			"run --db %s -c pass`) to migrate it",
			src->path, AUDIT_SCHEMA_VERSION, src->path);
	r = audit_chain_key_load(src, false);
	if (!r)
		r = audit_keyring_load(src);
	if (r < 0)
		return audit_fail(
			a, r,
			"%s: %s (without it, its runs could not be verified "
			"after the merge)",
			src->path, audit_errmsg(src));
	if (first_row(src->db,
		      "SELECT id FROM runs WHERE status = 'running' LIMIT 1",
		      id, sizeof(id)) > 0)
		return audit_fail(a, -EBUSY,
				  "%s: run %s is still running (or its ward "
				  "died and no ward has closed it yet): merge "
				  "once it has ended",
				  src->path, id);
	return 0;
}

int audit_merge(struct audit *a, struct audit *src, const char *src_abs,
		long long *runs)
{
	long long rows[sizeof(merged_tables) / sizeof(*merged_tables)] = { 0 };
	int r, rc;

	*runs = 0;
	pthread_mutex_lock(&a->lock);
	r = audit_chain_key_load(a, false);
	if (r == -ENOENT)
		r = 0; /* no run of its own yet */
	if (!r)
		r = source_ok(a, src);
	if (r)
		goto out;
	rc = sqlite3_exec(a->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		r = sql_fail(a, rc, a->path);
		goto out;
	}
	/* under the write lock: no ward adds the same run meanwhile */
	{
		char id[64];
		int d = duplicate(a, src, id, sizeof(id));

		if (d > 0)
			r = audit_fail(a, -EEXIST,
				       "run %s of %s is in %s already: a run "
				       "is merged once (duplicates refused)",
				       id, src->path, a->path);
		else if (d < 0)
			r = audit_fail(a, -EIO, "%s: cannot read its runs",
				       src->path);
	}
	for (size_t i = 0; !r && i < sizeof(rows) / sizeof(*rows); i++)
		r = copy_table(a, src, merged_tables[i], &rows[i]);
	if (!r)
		r = chains_of(a, src, src_abs, rows[0]);
	/* the keys first: a database whose runs lack their key would not
	 * verify; an extra key in the keyring harms nothing */
	if (!r)
		r = audit_keyring_add(a, &src->key);
	for (size_t i = 0; !r && i < src->n_keyring; i++)
		r = audit_keyring_add(a, &src->keyring[i]);
	if (!r &&
	    (rc = sqlite3_exec(a->db, "COMMIT", NULL, NULL, NULL)) != SQLITE_OK)
		r = sql_fail(a, rc, a->path);
	if (r && !sqlite3_get_autocommit(a->db))
		sqlite3_exec(a->db, "ROLLBACK", NULL, NULL, NULL);
	if (!r)
		*runs = rows[0];
out:
	pthread_mutex_unlock(&a->lock);
	return r;
}
