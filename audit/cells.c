/*
 * cells.c - the cells of a session and the files each one created or
 * changed (tables cells and artifacts, schema version 3).
 *
 * Unlike the rest of the writer these rows name their run explicitly: the
 * server that runs the cells (tools/agent/session.c) is not the process that
 * writes the run (each session's worker is). Each row is committed at
 * once: a cell is rare next to events, and a reviewer wants every cell
 * that ran, even if ward serve is killed right after.
 */
#include "audit/audit-int.h"

#include <errno.h>
#include <string.h>

static int bind_text(sqlite3_stmt *st, int i, const char *s, size_t len)
{
	return sqlite3_bind_text(st, i, s, (int)len, SQLITE_TRANSIENT);
}

/* Runs sql with the values bound by fill, under the handle's lock, after
 * committing whatever batch the handle has queued (audit-int.h). */
int audit_exec_one(struct audit *a, const char *sql, const char *what,
		   int (*fill)(sqlite3_stmt *, const void *), const void *arg)
{
	sqlite3_stmt *st = NULL;
	int r, rc;

	if (a->readonly)
		return audit_fail(a, -EROFS, "%s: opened readonly", a->path);
	pthread_mutex_lock(&a->lock);
	r = audit_commit_batch(a);
	if (!r) {
		rc = sqlite3_prepare_v2(a->db, sql, -1, &st, NULL);
		if (rc == SQLITE_OK)
			rc = fill(st, arg);
		if (rc == SQLITE_OK) {
			rc = sqlite3_step(st);
			if (rc == SQLITE_DONE)
				rc = SQLITE_OK;
		}
		if (rc != SQLITE_OK)
			r = audit_sqlfail(a, rc, what);
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&a->lock);
	return r;
}

static int fill_cell(sqlite3_stmt *st, const void *arg)
{
	const struct audit_cell *c = arg;
	int rc = bind_text(st, 1, c->run_id, strlen(c->run_id));

	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 2, c->n);
	if (rc == SQLITE_OK)
		rc = bind_text(st, 3, c->code, c->code_len);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 4, c->started_ns);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 5, c->ended_ns);
	if (rc == SQLITE_OK)
		rc = bind_text(st, 6, c->status, strlen(c->status));
	if (rc == SQLITE_OK)
		rc = bind_text(st, 7, c->result_json, strlen(c->result_json));
	return rc;
}

int audit_cell(struct audit *a, const struct audit_cell *c)
{
	if (!c->run_id || !c->code || !c->status || !c->result_json)
		return audit_fail(a, -EINVAL, "cell: missing field");
	return audit_exec_one(
		a,
		"INSERT INTO cells(run_id, n, code, started_ns, "
		"ended_ns, status, result) VALUES (?,?,?,?,?,?,?)",
		"recording a cell", fill_cell, c);
}

static int fill_artifact(sqlite3_stmt *st, const void *arg)
{
	const struct audit_artifact *f = arg;
	int rc = bind_text(st, 1, f->run_id, strlen(f->run_id));

	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 2, f->cell);
	if (rc == SQLITE_OK)
		rc = bind_text(st, 3, f->path, strlen(f->path));
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 4, f->size);
	if (rc == SQLITE_OK)
		rc = bind_text(st, 5, f->sha256, strlen(f->sha256));
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 6, f->ts_ns);
	return rc;
}

int audit_artifact(struct audit *a, const struct audit_artifact *f)
{
	if (!f->run_id || !f->path || !f->sha256)
		return audit_fail(a, -EINVAL, "artifact: missing field");
	return audit_exec_one(a,
			      "INSERT INTO artifacts(run_id, cell, path, size, "
			      "sha256, ts_ns) VALUES (?,?,?,?,?,?)",
			      "recording an artifact", fill_artifact, f);
}

/*
 * One run's rows of a session table: prepares sql (?1 is the run id) and
 * calls row(st) for each row until it returns non-zero. A readonly open of
 * a file older than version 3 has no such table: no rows.
 */
static int run_rows_each(struct audit *a, const char *run_id, const char *sql,
			 int (*row)(sqlite3_stmt *, void *), void *arg)
{
	sqlite3_stmt *st = NULL;
	int r = 0, rc;

	pthread_mutex_lock(&a->lock);
	rc = sqlite3_prepare_v2(a->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK) {
		bool old = strstr(sqlite3_errmsg(a->db), "no such table");
		pthread_mutex_unlock(&a->lock);
		return old ? 0 : audit_sqlfail(a, rc, a->path);
	}
	sqlite3_bind_text(st, 1, run_id, -1, SQLITE_STATIC);
	while (!r && (rc = sqlite3_step(st)) == SQLITE_ROW)
		r = row(st, arg);
	if (!r && rc != SQLITE_DONE)
		r = audit_sqlfail(a, rc, a->path);
	sqlite3_finalize(st);
	pthread_mutex_unlock(&a->lock);
	return r;
}

struct cells_it {
	const char *run_id;
	int (*fn)(const struct audit_cell *, void *);
	int (*afn)(const struct audit_artifact *, void *);
	void *arg;
};

static int cell_row(sqlite3_stmt *st, void *arg)
{
	struct cells_it *it = arg;
	struct audit_cell c = {
		.run_id = it->run_id,
		.n = sqlite3_column_int64(st, 0),
		.code = (const char *)sqlite3_column_blob(st, 1),
		.code_len = (size_t)sqlite3_column_bytes(st, 1),
		.started_ns = sqlite3_column_int64(st, 2),
		.ended_ns = sqlite3_column_int64(st, 3),
		.status = (const char *)sqlite3_column_text(st, 4),
		.result_json = (const char *)sqlite3_column_text(st, 5),
	};

	return it->fn(&c, it->arg);
}

int audit_cells_each(struct audit *a, const char *run_id,
		     int (*fn)(const struct audit_cell *, void *), void *arg)
{
	struct cells_it it = { .run_id = run_id, .fn = fn, .arg = arg };

	return run_rows_each(a, run_id,
			     "SELECT n, code, started_ns, ended_ns, status, "
			     "result FROM cells WHERE run_id = ?1 ORDER BY n",
			     cell_row, &it);
}

static int artifact_row(sqlite3_stmt *st, void *arg)
{
	struct cells_it *it = arg;
	struct audit_artifact f = {
		.run_id = it->run_id,
		.cell = sqlite3_column_int64(st, 0),
		.path = (const char *)sqlite3_column_text(st, 1),
		.size = sqlite3_column_int64(st, 2),
		.sha256 = (const char *)sqlite3_column_text(st, 3),
		.ts_ns = sqlite3_column_int64(st, 4),
	};

	return it->afn(&f, it->arg);
}

int audit_artifacts_each(struct audit *a, const char *run_id,
			 int (*fn)(const struct audit_artifact *, void *),
			 void *arg)
{
	struct cells_it it = { .run_id = run_id, .afn = fn, .arg = arg };

	return run_rows_each(a, run_id,
			     "SELECT cell, path, size, sha256, ts_ns FROM "
			     "artifacts WHERE run_id = ?1 ORDER BY cell, "
			     "path, ts_ns",
			     artifact_row, &it);
}

static int fill_phase(sqlite3_stmt *st, const void *arg)
{
	const struct audit_phase *p = arg;
	int rc = bind_text(st, 1, p->run_id, strlen(p->run_id));

	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 2, p->n);
	if (rc == SQLITE_OK)
		rc = bind_text(st, 3, p->name, strlen(p->name));
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 4, p->started_ns);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 5, p->ended_ns);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int(st, 6, p->first_serial);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int(st, 7, p->last_serial);
	if (rc == SQLITE_OK)
		rc = bind_text(st, 8, p->status, strlen(p->status));
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int(st, 9, p->exit_code);
	if (rc == SQLITE_OK)
		rc = p->cause && *p->cause
			     ? bind_text(st, 10, p->cause, strlen(p->cause))
			     : sqlite3_bind_null(st, 10);
	if (rc == SQLITE_OK)
		rc = p->code ? sqlite3_bind_blob(st, 11, p->code,
						 (int)p->code_len,
						 SQLITE_TRANSIENT)
			     : sqlite3_bind_null(st, 11);
	if (rc == SQLITE_OK)
		rc = p->layers_json ? bind_text(st, 12, p->layers_json,
						strlen(p->layers_json))
				    : sqlite3_bind_null(st, 12);
	return rc;
}

int audit_phase(struct audit *a, const struct audit_phase *p)
{
	if (!p->run_id || !p->name || !p->status)
		return audit_fail(a, -EINVAL, "phase: missing field");
	return audit_exec_one(
		a,
		"INSERT INTO phases(run_id, n, name, started_ns, ended_ns, "
		"first_serial, last_serial, status, exit_code, cause, code, "
		"layers) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
		"recording a phase", fill_phase, p);
}

struct phases_it {
	const char *run_id;
	int (*fn)(const struct audit_phase *, void *);
	void *arg;
};

static int phase_row(sqlite3_stmt *st, void *arg)
{
	struct phases_it *it = arg;
	struct audit_phase p = {
		.run_id = it->run_id,
		.n = sqlite3_column_int64(st, 0),
		.name = (const char *)sqlite3_column_text(st, 1),
		.started_ns = sqlite3_column_int64(st, 2),
		.ended_ns = sqlite3_column_int64(st, 3),
		.first_serial = sqlite3_column_int(st, 4),
		.last_serial = sqlite3_column_int(st, 5),
		.status = (const char *)sqlite3_column_text(st, 6),
		.exit_code = sqlite3_column_int(st, 7),
		.cause = (const char *)sqlite3_column_text(st, 8),
		.code = (const char *)sqlite3_column_blob(st, 9),
		.code_len = (size_t)sqlite3_column_bytes(st, 9),
		.layers_json = (const char *)sqlite3_column_text(st, 10),
	};

	return it->fn(&p, it->arg);
}

int audit_phases_each(struct audit *a, const char *run_id,
		      int (*fn)(const struct audit_phase *, void *), void *arg)
{
	struct phases_it it = { .run_id = run_id, .fn = fn, .arg = arg };

	return run_rows_each(
		a, run_id,
		"SELECT n, name, started_ns, ended_ns, "
		"first_serial, last_serial, status, exit_code, "
		"cause, code, layers FROM phases WHERE run_id = ?1 "
		"ORDER BY n",
		phase_row, &it);
}
