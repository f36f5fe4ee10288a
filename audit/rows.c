/*
 * rows.c - see rows.h. Statements are prepared per call (one per table of
 * a run: not a hot path); rows are handed over as SQLite steps to them.
 */
#include "audit/rows.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "audit/audit-int.h"

#define MAX_COLS 64

struct rows_query {
	const char *table; /* must exist, else no rows */
	const char *sql;
};

static const struct rows_query queries[] = {
	[AUDIT_ROWS_RUN] = { "runs", "SELECT * FROM runs WHERE id = ?1" },
	[AUDIT_ROWS_INPUTS] = { "inputs", "SELECT * FROM inputs"
					  " WHERE run_id = ?1 ORDER BY n" },
	[AUDIT_ROWS_PROCESSES] = { "processes",
				   "SELECT * FROM processes"
				   " WHERE run_id = ?1 ORDER BY serial" },
	[AUDIT_ROWS_EVENTS] = { "events", "SELECT * FROM events"
					  " WHERE run_id = ?1 ORDER BY seq" },
	[AUDIT_ROWS_OUTPUTS] = { "outputs", "SELECT * FROM outputs"
					    " WHERE run_id = ?1 ORDER BY seq" },
	[AUDIT_ROWS_CELLS] = { "cells", "SELECT * FROM cells"
					" WHERE run_id = ?1 ORDER BY n" },
	[AUDIT_ROWS_ARTIFACTS] = { "artifacts",
				   "SELECT * FROM artifacts WHERE run_id = ?1"
				   " ORDER BY cell, path" },
	[AUDIT_ROWS_EVENTS_PROC] = { "events",
				     "SELECT e.*, p.exe AS p_exe, p.argv AS p_argv,"
				     " p.exec_ns AS p_exec_ns, p.start_ns AS p_start_ns,"
				     " p.ppid AS p_ppid, p.kind AS p_kind"
				     " FROM events e LEFT JOIN processes p"
				     " ON p.run_id = e.run_id AND p.serial = e.proc_serial"
				     " WHERE e.run_id = ?1 ORDER BY e.seq" },
	[AUDIT_ROWS_PHASES] = { "phases", "SELECT * FROM phases"
					  " WHERE run_id = ?1 ORDER BY n" },
	[AUDIT_ROWS_PROCESSES_PARENT] = { "processes",
					  "SELECT p.*, q.exe AS parent_exe, q.argv AS parent_argv,"
					  " q.pid AS parent_pid FROM processes p LEFT JOIN processes q"
					  " ON q.run_id = p.run_id AND q.serial = p.parent_serial"
					  " WHERE p.run_id = ?1 ORDER BY p.serial" },
};

/* 1 if the table exists, 0 if not, or -errno. */
static int has_table(struct audit *a, const char *name)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(a->db,
				    "SELECT 1 FROM sqlite_master"
				    " WHERE type = 'table' AND name = ?1",
				    -1, &st, NULL);
	int r;

	if (rc != SQLITE_OK)
		return audit_sqlfail(a, rc, a->path);
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	r = rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
	if (r < 0)
		r = audit_sqlfail(a, rc, a->path);
	sqlite3_finalize(st);
	return r;
}

static void fill_col(sqlite3_stmt *st, int i, struct audit_col *c)
{
	c->name = sqlite3_column_name(st, i);
	c->p = NULL;
	c->n = 0;
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_INTEGER:
		c->type = AUDIT_COL_INT;
		c->i = sqlite3_column_int64(st, i);
		break;
	case SQLITE_FLOAT:
		c->type = AUDIT_COL_REAL;
		c->d = sqlite3_column_double(st, i);
		break;
	case SQLITE_TEXT:
		c->type = AUDIT_COL_TEXT;
		c->p = sqlite3_column_text(st, i);
		c->n = (size_t)sqlite3_column_bytes(st, i);
		break;
	case SQLITE_BLOB:
		c->type = AUDIT_COL_BLOB;
		c->p = sqlite3_column_blob(st, i);
		c->n = (size_t)sqlite3_column_bytes(st, i);
		break;
	default: c->type = AUDIT_COL_NULL; break;
	}
}

int audit_rows_each(struct audit *a, enum audit_rows_what what,
		    const char *run_id, audit_rows_fn fn, void *arg)
{
	struct audit_col cols[MAX_COLS];
	sqlite3_stmt *st = NULL;
	int rc, r, n;

	if ((unsigned)what >= sizeof(queries) / sizeof(queries[0]) || !run_id)
		return audit_fail(a, -EINVAL, "rows: bad request");
	pthread_mutex_lock(&a->lock);
	r = has_table(a, queries[what].table);
	if (r <= 0)
		goto out;
	rc = sqlite3_prepare_v2(a->db, queries[what].sql, -1, &st, NULL);
	if (rc != SQLITE_OK) {
		r = audit_sqlfail(a, rc, a->path);
		goto out;
	}
	r = 0;
	n = sqlite3_column_count(st);
	if (n > MAX_COLS) {
		r = audit_fail(a, -EPROTO, "%s: table %s has %d columns",
			       a->path, queries[what].table, n);
		goto out;
	}
	sqlite3_bind_text(st, 1, run_id, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		for (int i = 0; i < n; i++)
			fill_col(st, i, &cols[i]);
		if ((r = fn(cols, n, arg)) != 0)
			goto out;
	}
	if (rc != SQLITE_DONE)
		r = audit_sqlfail(a, rc, a->path);
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&a->lock);
	return r;
}

int audit_next_run(struct audit *a, long long since_ns, long long *after_ns,
		   const char *after_id, char run_id[AUDIT_RUN_ID_LEN + 1])
{
	static const char sql[] = "SELECT id, started_ns FROM runs"
				  " WHERE started_ns >= ?1 AND (started_ns > ?2"
				  " OR (started_ns = ?2 AND id > ?3))"
				  " ORDER BY started_ns, id LIMIT 1";
	sqlite3_stmt *st = NULL;
	int rc, r;

	pthread_mutex_lock(&a->lock);
	rc = sqlite3_prepare_v2(a->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK) {
		r = audit_sqlfail(a, rc, a->path);
		goto out;
	}
	sqlite3_bind_int64(st, 1, since_ns);
	/* from the start: (started_ns = since AND id > '') holds for every
	 * run started at since (ids are never empty) */
	sqlite3_bind_int64(st, 2, after_id[0] ? *after_ns : since_ns);
	sqlite3_bind_text(st, 3, after_id, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const char *id = (const char *)sqlite3_column_text(st, 0);

		snprintf(run_id, AUDIT_RUN_ID_LEN + 1, "%s", id ? id : "");
		*after_ns = sqlite3_column_int64(st, 1);
		r = 0;
	} else if (rc == SQLITE_DONE) {
		r = -ENOENT;
	} else {
		r = audit_sqlfail(a, rc, a->path);
	}
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&a->lock);
	return r;
}

int audit_rows_snapshot(struct audit *a, bool begin)
{
	int rc;

	pthread_mutex_lock(&a->lock);
	rc = sqlite3_exec(a->db, begin ? "BEGIN DEFERRED" : "COMMIT", NULL,
			  NULL, NULL);
	pthread_mutex_unlock(&a->lock);
	return rc == SQLITE_OK ? 0 : audit_sqlfail(a, rc, a->path);
}

const struct audit_col *audit_col_get(const struct audit_col *cols, int ncols,
				      const char *name)
{
	for (int i = 0; i < ncols; i++)
		if (cols[i].name && !strcmp(cols[i].name, name))
			return &cols[i];
	return NULL;
}
