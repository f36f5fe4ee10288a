/*
 * inputs.c - what a run was given, for `ward rerun`: the files of
 * `ward run --input` (table inputs) and what `--env` passed (runs.env),
 * both schema version 4.
 *
 * An input row names its run explicitly and is committed at once, like a
 * cell (cells.c): it is written once per file before the code starts.
 */
#include "audit/audit-int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int fill_input(sqlite3_stmt *st, const void *arg)
{
	const struct audit_input *in = arg;
	int rc = sqlite3_bind_text(st, 1, in->run_id, -1, SQLITE_TRANSIENT);

	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 2, in->n);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_text(st, 3, in->name, -1, SQLITE_TRANSIENT);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 4, in->size);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_text(st, 5, in->sha256, -1, SQLITE_TRANSIENT);
	if (rc == SQLITE_OK)
		rc = in->data ? sqlite3_bind_blob64(st, 6,
						    in->size ? in->data : "",
						    (sqlite3_uint64)in->size,
						    SQLITE_STATIC)
			      : sqlite3_bind_null(st, 6);
	return rc;
}

int audit_input(struct audit *a, const struct audit_input *in)
{
	if (!in->run_id || !in->name || !in->sha256 || in->size < 0)
		return audit_fail(a, -EINVAL, "input: missing field");
	if (!a->v4_cols)
		return audit_fail(a, -EPROTO,
				  "%s: no table inputs (schema older than 4)",
				  a->path);
	return audit_exec_one(a,
			      "INSERT INTO inputs(run_id, n, name, size, "
			      "sha256, data) VALUES (?,?,?,?,?,?)",
			      "recording an input", fill_input, in);
}

/* Prepares sql under a->lock; a readonly file older than version 4 has
 * no such table or column: *old is set and 0 returned. */
static int prep_v4(struct audit *a, const char *sql, sqlite3_stmt **st,
		   bool *old)
{
	int rc = sqlite3_prepare_v2(a->db, sql, -1, st, NULL);

	*old = false;
	if (rc == SQLITE_OK)
		return 0;
	if (!a->v4_cols && (strstr(sqlite3_errmsg(a->db), "no such table") ||
			    strstr(sqlite3_errmsg(a->db), "no such column"))) {
		*old = true;
		return 0;
	}
	return audit_sqlfail(a, rc, a->path);
}

int audit_inputs_each(struct audit *a, const char *run_id,
		      int (*fn)(const struct audit_input *, void *), void *arg)
{
	sqlite3_stmt *st = NULL;
	bool old;
	int r, rc = SQLITE_DONE;

	pthread_mutex_lock(&a->lock);
	r = prep_v4(a,
		    "SELECT n, name, size, sha256, data FROM inputs "
		    "WHERE run_id = ?1 ORDER BY n",
		    &st, &old);
	if (r || old) {
		pthread_mutex_unlock(&a->lock);
		return r;
	}
	sqlite3_bind_text(st, 1, run_id, -1, SQLITE_STATIC);
	while (!r && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		bool kept = sqlite3_column_type(st, 4) != SQLITE_NULL;
		struct audit_input in = {
			.run_id = run_id,
			.n = sqlite3_column_int64(st, 0),
			.name = (const char *)sqlite3_column_text(st, 1),
			.size = sqlite3_column_int64(st, 2),
			.sha256 = (const char *)sqlite3_column_text(st, 3),
			.data = kept ? sqlite3_column_blob(st, 4) : NULL,
		};
		/* an empty kept file: SQLite gives NULL for a 0-byte blob */
		if (kept && !in.data)
			in.data = "";
		in.data_len = kept ? (size_t)sqlite3_column_bytes(st, 4) : 0;
		if (!in.name || !in.sha256)
			r = audit_fail(a, -EIO,
				       "%s: input %lld of run %s has "
				       "no name or hash",
				       a->path, in.n, run_id);
		else
			r = fn(&in, arg);
	}
	if (!r && rc != SQLITE_DONE && rc != SQLITE_ROW)
		r = audit_sqlfail(a, rc, a->path);
	sqlite3_finalize(st);
	pthread_mutex_unlock(&a->lock);
	return r;
}

int audit_run_env(struct audit *a, const char *run_id, char **out)
{
	sqlite3_stmt *st = NULL;
	bool old;
	int r, rc;

	*out = NULL;
	pthread_mutex_lock(&a->lock);
	r = prep_v4(a, "SELECT env FROM runs WHERE id = ?1", &st, &old);
	if (!r && !old) {
		sqlite3_bind_text(st, 1, run_id, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			const char *s =
				(const char *)sqlite3_column_text(st, 0);
			if (s && !(*out = strdup(s)))
				r = audit_fail(a, -ENOMEM, "out of memory");
		} else if (rc == SQLITE_DONE) {
			r = audit_fail(a, -ENOENT, "no run %s", run_id);
		} else {
			r = audit_sqlfail(a, rc, a->path);
		}
	}
	sqlite3_finalize(st);
	pthread_mutex_unlock(&a->lock);
	return r;
}
