/*
 * rows.h - a run's rows as they are stored, column by column, streamed
 * (ward export). Every column of the table is given, by its name in the
 * database, so columns added by later schema versions (events.hash,
 * runs.chain, ...) come out without a change here. Nothing of a run is
 * held in memory: each row is handed over as SQLite steps to it.
 */
#ifndef WARD_AUDIT_ROWS_H
#define WARD_AUDIT_ROWS_H

#include <stdbool.h>
#include <stddef.h>

#include "audit/audit.h"

enum audit_col_type {
	AUDIT_COL_NULL,
	AUDIT_COL_INT,
	AUDIT_COL_REAL,
	AUDIT_COL_TEXT, /* p, n: the bytes as stored (UTF-8 unless a writer
			 * broke it), NUL-terminated */
	AUDIT_COL_BLOB, /* p, n: the bytes (p may be NULL when n is 0) */
};

/* One column of a row; pointers are borrowed for the callback's call. */
struct audit_col {
	const char *name;
	enum audit_col_type type;
	long long i;
	double d;
	const void *p;
	size_t n;
};

/*
 * What to read. The tables of one run, each in a documented order
 * (docs/export.md):
 *   RUN        the runs row of the run (all columns)
 *   INPUTS     inputs by n (none before schema version 4)
 *   PROCESSES  processes by serial
 *   EVENTS     events by seq
 *   OUTPUTS    outputs by seq
 *   CELLS      cells by n (none before version 3)
 *   ARTIFACTS  artifacts by cell, then path (none before version 3)
 * and two joins for OCSF:
 *   EVENTS_PROC     every events column, then p_exe, p_argv, p_exec_ns,
 *                   p_start_ns, p_ppid, p_kind of the event's process
 *                   (NULL when proc_serial names none)
 *   PROCESSES_PARENT every processes column, then parent_exe,
 *                   parent_argv, parent_pid of its parent (NULL for
 *                   serial 1)
 */
enum audit_rows_what {
	AUDIT_ROWS_RUN,
	AUDIT_ROWS_INPUTS,
	AUDIT_ROWS_PROCESSES,
	AUDIT_ROWS_EVENTS,
	AUDIT_ROWS_OUTPUTS,
	AUDIT_ROWS_CELLS,
	AUDIT_ROWS_ARTIFACTS,
	AUDIT_ROWS_EVENTS_PROC,
	AUDIT_ROWS_PROCESSES_PARENT,
	AUDIT_ROWS_PHASES, /* phases (schema version 6), by n */
};

typedef int (*audit_rows_fn)(const struct audit_col *cols, int ncols,
			     void *arg);

/* Calls fn once per row of run_id (a full id). Iterator rules as for
 * audit_events_each() (audit.h): fn returns non-zero to stop, which is
 * then returned; fn must not call audit functions on a. A table the file
 * does not have yet (an older schema, opened read-only) gives no rows.
 * Returns 0, -EINVAL (what unknown), -EIO etc. with audit_errmsg(). */
int audit_rows_each(struct audit *a, enum audit_rows_what what,
		    const char *run_id, audit_rows_fn fn, void *arg);

/* The run started first at or after since_ns that comes after the run
 * (*after_ns, after_id) in the order (started_ns, id); after_id "" starts
 * from the beginning. Writes its id and start into run_id and *after_ns.
 * Returns 0, -ENOENT when there is no further run, -EIO etc. Lets a
 * caller walk every run without holding their ids, and call other audit
 * functions between two steps. */
int audit_next_run(struct audit *a, long long since_ns, long long *after_ns,
		   const char *after_id, char run_id[AUDIT_RUN_ID_LEN + 1]);

/* begin: starts a read transaction on a, so that the reads until
 * audit_rows_snapshot(a, false) all see the database as it was at the
 * first of them (a run being written is read as of one commit).
 * Returns 0 or -EIO with audit_errmsg(). */
int audit_rows_snapshot(struct audit *a, bool begin);

/* The column named name in cols, or NULL. */
const struct audit_col *audit_col_get(const struct audit_col *cols, int ncols,
				      const char *name);

#endif
