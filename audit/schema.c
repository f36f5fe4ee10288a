/*
 * schema.c - the database layout (docs/schema.md describes every column),
 * its creation in an empty file, and the check that a file is ward's.
 *
 * A ward database carries PRAGMA application_id = 0x77617264 ("ward"), a
 * ward_meta row application = 'ward', and PRAGMA user_version = the schema
 * version. Anything else with tables in it is refused with -EPROTO and
 * never modified.
 */
#include "audit/audit-int.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#ifndef WARD_VERSION
#define WARD_VERSION "unknown"
#endif

/* Version 3: the cells of sessions (ward serve, ward mcp) and the files
 * each cell created or changed. */
/* clang-format off */
#define SESSION_TABLES \
	"CREATE TABLE IF NOT EXISTS cells(\n" \
	"  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n" \
	"  n INTEGER NOT NULL,\n" \
	"  code TEXT NOT NULL,\n" \
	"  started_ns INTEGER NOT NULL,\n" \
	"  ended_ns INTEGER NOT NULL,\n" \
	"  status TEXT NOT NULL,\n" \
	"  result TEXT NOT NULL,\n" \
	"  PRIMARY KEY(run_id, n)\n" \
	") STRICT;\n" \
	"CREATE TABLE IF NOT EXISTS artifacts(\n" \
	"  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n" \
	"  cell INTEGER NOT NULL,\n" \
	"  path TEXT NOT NULL,\n" \
	"  size INTEGER NOT NULL,\n" \
	"  sha256 TEXT NOT NULL,\n" \
	"  ts_ns INTEGER NOT NULL\n" \
	") STRICT;\n" \
	"CREATE INDEX IF NOT EXISTS artifacts_run ON artifacts(run_id, cell);\n"
/* Version 4: the files a run was given (--input), for ward rerun. */
#define INPUT_TABLE \
	"CREATE TABLE IF NOT EXISTS inputs(\n" \
	"  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n" \
	"  n INTEGER NOT NULL,\n" \
	"  name TEXT NOT NULL,\n" \
	"  size INTEGER NOT NULL,\n" \
	"  sha256 TEXT NOT NULL,\n" \
	"  data BLOB,\n" \
	"  PRIMARY KEY(run_id, n)\n" \
	") STRICT;\n"
/* Version 6: the phases of a run (ward run --setup, sessions' setup). */
#define PHASE_TABLE \
	"CREATE TABLE IF NOT EXISTS phases(\n" \
	"  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n" \
	"  n INTEGER NOT NULL,\n" \
	"  name TEXT NOT NULL,\n" \
	"  started_ns INTEGER NOT NULL,\n" \
	"  ended_ns INTEGER NOT NULL,\n" \
	"  first_serial INTEGER NOT NULL,\n" \
	"  last_serial INTEGER NOT NULL,\n" \
	"  status TEXT NOT NULL,\n" \
	"  exit_code INTEGER,\n" \
	"  cause TEXT,\n" \
	"  code BLOB,\n" \
	"  layers TEXT,\n" \
	"  PRIMARY KEY(run_id, n)\n" \
	") STRICT;\n"
/* clang-format on */

/*
 * The current version (6), created whole in an empty file. A change means
 * a new version and a migration step here (migrate_v2, migrate_v3 below).
 */
static const char schema_sql[] =
	"CREATE TABLE ward_meta(\n"
	"  key TEXT PRIMARY KEY NOT NULL,\n"
	"  value TEXT NOT NULL\n"
	") STRICT;\n"
	"CREATE TABLE runs(\n"
	"  id TEXT PRIMARY KEY NOT NULL,\n"
	"  started_ns INTEGER NOT NULL,\n"
	"  ended_ns INTEGER,\n"
	"  duration_ms INTEGER,\n"
	"  argv TEXT,\n"
	"  language TEXT,\n"
	"  interpreter TEXT,\n"
	"  code_name TEXT,\n"
	"  code BLOB,\n"
	"  code_sha256 TEXT,\n"
	"  policy_name TEXT,\n"
	"  policy_json TEXT,\n"
	"  policy_sha256 TEXT,\n"
	"  workdir TEXT,\n"
	"  limits TEXT,\n"
	"  uid INTEGER,\n"
	"  exit_code INTEGER,\n"
	"  signal INTEGER,\n"
	"  status TEXT NOT NULL DEFAULT 'running' CHECK(status IN\n"
	"    ('running','ok','error','timeout','killed','aborted','limit')),\n"
	"  cause TEXT,\n"
	"  stdout_bytes INTEGER,\n"
	"  stderr_bytes INTEGER,\n"
	"  stdout_truncated INTEGER CHECK(stdout_truncated IN (0,1)),\n"
	"  stderr_truncated INTEGER CHECK(stderr_truncated IN (0,1)),\n"
	"  events INTEGER,\n"
	"  denials INTEGER,\n"
	"  processes INTEGER,\n"
	"  host TEXT,\n"
	"  kernel TEXT,\n"
	"  ward_version TEXT,\n"
	"  ward_pid INTEGER,\n"
	"  ward_start_ticks INTEGER,\n"
	"  boot_id TEXT,\n"
	"  layers TEXT,\n"
	"  env TEXT,\n"
	"  chain TEXT\n"
	") STRICT;\n"
	"CREATE INDEX runs_started ON runs(started_ns);\n"
	"CREATE INDEX runs_running ON runs(status) WHERE status = 'running';\n"
	"CREATE TABLE processes(\n"
	"  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
	"  serial INTEGER NOT NULL CHECK(serial > 0),\n"
	"  parent_serial INTEGER,\n"
	"  pid INTEGER NOT NULL,\n"
	"  tgid INTEGER NOT NULL,\n"
	"  ppid INTEGER NOT NULL,\n"
	"  kind TEXT NOT NULL CHECK(kind IN ('process','thread')),\n"
	"  start_ns INTEGER NOT NULL,\n"
	"  start_ticks INTEGER,\n"
	"  exe TEXT,\n"
	"  argv TEXT,\n"
	"  exec_ns INTEGER,\n"
	"  exit_ns INTEGER,\n"
	"  exit_code INTEGER,\n"
	"  signal INTEGER,\n"
	"  PRIMARY KEY(run_id, serial)\n"
	") STRICT;\n"
	"CREATE TABLE events(\n"
	"  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
	"  seq INTEGER NOT NULL,\n"
	"  ts_ns INTEGER NOT NULL,\n"
	"  pid INTEGER NOT NULL,\n"
	"  tid INTEGER NOT NULL,\n"
	"  proc_serial INTEGER,\n"
	"  nr INTEGER NOT NULL,\n"
	"  syscall TEXT NOT NULL,\n"
	"  args TEXT,\n"
	"  raw TEXT,\n"
	"  target TEXT,\n"
	"  decision TEXT NOT NULL CHECK(decision IN ('allow','deny','kill')),\n"
	"  rule TEXT,\n"
	"  reason TEXT,\n"
	"  errno INTEGER NOT NULL DEFAULT 0,\n"
	"  would_deny INTEGER NOT NULL DEFAULT 0 CHECK(would_deny IN (0,1)),\n"
	"  backtrace TEXT,\n"
	"  pyframes TEXT,\n"
	"  hash TEXT,\n"
	"  result INTEGER,\n"
	"  PRIMARY KEY(run_id, seq)\n"
	") STRICT;\n"
	"CREATE INDEX events_decision ON events(run_id, decision);\n"
	"CREATE TABLE outputs(\n"
	"  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
	"  seq INTEGER NOT NULL,\n"
	"  ts_ns INTEGER NOT NULL,\n"
	"  stream TEXT NOT NULL CHECK(stream IN ('stdout','stderr')),\n"
	"  data BLOB NOT NULL,\n"
	"  hash TEXT,\n"
	"  cmd INTEGER,\n"
	"  PRIMARY KEY(run_id, seq)\n"
	") STRICT;\n"
	"CREATE VIEW denials AS\n"
	"  SELECT run_id, seq, ts_ns, pid, tid, proc_serial, syscall, args,\n"
	"         raw, target, decision, rule, reason, errno, backtrace\n"
	"  FROM events WHERE decision <> 'allow';\n" SESSION_TABLES INPUT_TABLE
		PHASE_TABLE;

/* The n integers of the row the statement sql yields, or -EIO and a
 * message. */
static int query_ints(struct audit *a, const char *sql, long long *out, int n)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(a->db, sql, -1, &st, NULL);

	if (rc == SQLITE_OK) {
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			for (int i = 0; i < n; i++)
				out[i] = sqlite3_column_int64(st, i);
			rc = SQLITE_OK;
		}
	}
	sqlite3_finalize(st);
	if (rc == SQLITE_OK)
		return 0;
	if ((rc & 0xff) == SQLITE_NOTADB)
		return audit_fail(a, -EIO, "%s: not an SQLite database (%s)",
				  a->path, sqlite3_errstr(rc));
	return audit_sqlfail(a, rc, a->path);
}

/* The single integer the statement sql yields. */
static int query_int(struct audit *a, const char *sql, long long *out)
{
	return query_ints(a, sql, out, 1);
}

static int exec_sql(struct audit *a, const char *sql)
{
	int rc = sqlite3_exec(a->db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : audit_sqlfail(a, rc, a->path);
}

/* What the file holds, as far as ward is concerned. */
struct dbinfo {
	long long app_id, version, objects;
};

/* One statement, so one read of the file: as three, another ward's
 * creation of the schema could commit between them, and the header read
 * before it (application_id 0) with the objects counted after it made a
 * foreign database of a new ward one (seen with two wards starting at
 * once on a new file). */
static int read_info(struct audit *a, struct dbinfo *di)
{
	long long v[3] = { 0, 0, 0 };
	int r = query_ints(a,
			   "SELECT (SELECT application_id FROM "
			   "pragma_application_id),"
			   " (SELECT user_version FROM pragma_user_version),"
			   " (SELECT count(*) FROM sqlite_schema)",
			   v, 3);

	di->app_id = v[0];
	di->version = v[1];
	di->objects = v[2];
	return r;
}

static bool is_empty(const struct dbinfo *di)
{
	return di->app_id == 0 && di->version == 0 && di->objects == 0;
}

/* A file marked as ward's: is its version one this ward reads? */
static int check_ward(struct audit *a, const struct dbinfo *di)
{
	long long marked = 0;
	int r;

	if (di->version > AUDIT_SCHEMA_VERSION)
		return audit_fail(a, -EPROTO,
				  "%s: audit schema version %lld is newer than "
				  "this ward understands (%d); use a newer "
				  "ward or another database",
				  a->path, di->version, AUDIT_SCHEMA_VERSION);
	r = query_int(a,
		      "SELECT count(*) FROM sqlite_schema WHERE "
		      "type = 'table' AND name = 'ward_meta'",
		      &marked);
	if (!r && marked)
		r = query_int(a,
			      "SELECT count(*) FROM ward_meta WHERE "
			      "key = 'application' AND value = 'ward'",
			      &marked);
	if (r)
		return r;
	if (!marked || di->version < 1)
		return audit_fail(a, -EPROTO,
				  "%s: marked as ward's but has no ward schema "
				  "(user_version %lld); not using it",
				  a->path, di->version);
	return 0;
}

static int create_schema(struct audit *a)
{
	char sql[512];
	struct timespec ts;
	int r;

	clock_gettime(CLOCK_REALTIME, &ts);
	r = exec_sql(a, schema_sql);
	if (r)
		return r;
	snprintf(sql, sizeof(sql),
		 "INSERT INTO ward_meta(key, value) VALUES"
		 " ('application', 'ward'), ('schema_version', '%d'),"
		 " ('created_ns', '%lld'), ('created_by', 'ward %s');"
		 "PRAGMA application_id = %d; PRAGMA user_version = %d;",
		 AUDIT_SCHEMA_VERSION,
		 (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec, WARD_VERSION,
		 AUDIT_APPLICATION_ID, AUDIT_SCHEMA_VERSION);
	return exec_sql(a, sql);
}

/* Empty file: create the schema, unless another ward did it first (the
 * check is repeated under the write lock). */
static int init_empty(struct audit *a)
{
	struct dbinfo di;
	int r;

	r = exec_sql(a, "PRAGMA journal_mode = WAL");
	if (!r)
		r = exec_sql(a, "BEGIN IMMEDIATE");
	if (r)
		return r;
	r = read_info(a, &di);
	if (!r && is_empty(&di))
		r = create_schema(a);
	else if (!r && di.app_id == AUDIT_APPLICATION_ID)
		r = check_ward(a, &di);
	else if (!r)
		r = audit_fail(a, -EPROTO, "%s: not a ward audit database",
			       a->path);
	if (!r)
		return exec_sql(a, "COMMIT");
	sqlite3_exec(a->db, "ROLLBACK", NULL, NULL, NULL);
	return r;
}

/*
 * Files written before schema version 1 was released lack the runs columns
 * that identify a run's ward (ward_pid, ward_start_ticks, boot_id) and the
 * index runs_running. A writable open adds them: ALTER TABLE ADD COLUMN
 * leaves every row and every older ward's statements (which name their
 * columns) working. A readonly open reads those columns as NULL
 * (a->ward_cols false). Remove once version 1 is released.
 */
static const char prerelease_v1_upgrade[] =
	"ALTER TABLE runs ADD COLUMN ward_pid INTEGER;\n"
	"ALTER TABLE runs ADD COLUMN ward_start_ticks INTEGER;\n"
	"ALTER TABLE runs ADD COLUMN boot_id TEXT;\n"
	"CREATE INDEX IF NOT EXISTS runs_running ON runs(status)"
	" WHERE status = 'running';\n";

/* Ends an upgrade's transaction: COMMIT after success (r == 0), else
 * ROLLBACK. Returns r, or the COMMIT's error. */
static int end_upgrade(struct audit *a, int r)
{
	if (!r)
		r = exec_sql(a, "COMMIT");
	if (r && !sqlite3_get_autocommit(a->db))
		sqlite3_exec(a->db, "ROLLBACK", NULL, NULL, NULL);
	return r;
}

static int has_ward_cols(struct audit *a, bool *has)
{
	long long n = 0;
	int r = query_int(a,
			  "SELECT count(*) FROM pragma_table_info('runs')"
			  " WHERE name = 'boot_id'",
			  &n);

	*has = n > 0;
	return r;
}

static int upgrade_prerelease(struct audit *a)
{
	bool has = false;
	int r = has_ward_cols(a, &has);

	a->ward_cols = has;
	if (r || has || a->readonly)
		return r;
	r = exec_sql(a, "BEGIN IMMEDIATE");
	if (!r)
		r = has_ward_cols(a, &has); /* another ward may have done it */
	if (!r && !has)
		r = exec_sql(a, prerelease_v1_upgrade);
	r = end_upgrade(a, r);
	a->ward_cols = !r;
	return r;
}

/*
 * Version 1 -> 2: runs.layers, the containment layers of each run. ALTER
 * TABLE ADD COLUMN keeps every row; older rows read NULL (not recorded).
 * A readonly open of a version 1 file reads layers as NULL
 * (a->layers_col false). A ward that knows only version 1 refuses the
 * migrated file (its version is newer), never misreads it.
 */
static const char migrate_v2[] =
	"ALTER TABLE runs ADD COLUMN layers TEXT;\n"
	"UPDATE ward_meta SET value = '2' WHERE key = 'schema_version';\n"
	"PRAGMA user_version = 2;\n";

/*
 * Version 2 -> 3: the tables cells and artifacts (sessions). New tables
 * only; older wards refuse the file (its version is newer). A readonly
 * open of an older file has no such tables: nothing of sessions to read.
 */
static const char migrate_v3[] = SESSION_TABLES
	"UPDATE ward_meta SET value = '3' WHERE key = 'schema_version';\n"
	"PRAGMA user_version = 3;\n";

/*
 * Version 3 -> 4: runs.env (what --env passed), runs.chain (the head of
 * the run's hash chain), events.pyframes (the Python frames of a
 * decision), events.hash and outputs.hash (each row's link in the chain),
 * and the table inputs (the files a run was given). Older rows read NULL:
 * not recorded, and `ward verify` says their runs have no chain.
 */
static const char migrate_v4[] =
	"ALTER TABLE runs ADD COLUMN env TEXT;\n"
	"ALTER TABLE runs ADD COLUMN chain TEXT;\n"
	"ALTER TABLE events ADD COLUMN pyframes TEXT;\n"
	"ALTER TABLE events ADD COLUMN hash TEXT;\n"
	"ALTER TABLE outputs ADD COLUMN hash TEXT;\n" INPUT_TABLE
	"UPDATE ward_meta SET value = '4' WHERE key = 'schema_version';\n"
	"PRAGMA user_version = 4;\n";

/*
 * Version 4 -> 5: events.result, the kernel's return value for the call
 * (-errno when it failed; NULL where it never returned, and in rows
 * written before the column existed). It follows hash, as ALTER TABLE
 * puts it, in a new file too. The chain hashes it only when not NULL
 * (chain.c), so rows written before verify as they did.
 */
static const char migrate_v5[] =
	"ALTER TABLE events ADD COLUMN result INTEGER;\n"
	"UPDATE ward_meta SET value = '5' WHERE key = 'schema_version';\n"
	"PRAGMA user_version = 5;\n";

/*
 * Version 5 -> 6: the table phases (a run's setup and main phases: name,
 * times, the serials of their processes, outcome, code and layers). A new table only; a
 * readonly open of an older file has none: no phases to show.
 */
static const char migrate_v6[] = PHASE_TABLE
	"UPDATE ward_meta SET value = '6' WHERE key = 'schema_version';\n"
	"PRAGMA user_version = 6;\n";

/*
 * Version 6 -> 7: outputs.cmd, the cells row (n) of the session's command
 * (command.run, run beside the cells) whose output the row is; NULL for the run's own
 * stdout and stderr and in rows written before. The chain hashes it only
 * when not NULL (chain.c), so rows written before verify as they did.
 */
static const char migrate_v7[] =
	"ALTER TABLE outputs ADD COLUMN cmd INTEGER;\n"
	"UPDATE ward_meta SET value = '7' WHERE key = 'schema_version';\n"
	"PRAGMA user_version = 7;\n";

static int migrate(struct audit *a, long long version)
{
	int r;

	a->layers_col = version >= 2;
	a->v4_cols = version >= 4;
	a->v5_cols = version >= 5;
	a->v6_tables = version >= 6;
	a->v7_cols = version >= 7;
	if (version >= AUDIT_SCHEMA_VERSION || a->readonly)
		return 0;
	r = exec_sql(a, "BEGIN IMMEDIATE");
	if (!r) /* another ward may have done it meanwhile */
		r = query_int(a, "PRAGMA user_version", &version);
	if (!r && version < 2)
		r = exec_sql(a, migrate_v2);
	if (!r && version < 3)
		r = exec_sql(a, migrate_v3);
	if (!r && version < 4)
		r = exec_sql(a, migrate_v4);
	if (!r && version < 5)
		r = exec_sql(a, migrate_v5);
	if (!r && version < 6)
		r = exec_sql(a, migrate_v6);
	if (!r && version < 7)
		r = exec_sql(a, migrate_v7);
	r = end_upgrade(a, r);
	a->layers_col = !r;
	a->v4_cols = !r;
	a->v5_cols = !r;
	a->v6_tables = !r;
	a->v7_cols = !r;
	return r;
}

int audit_schema_setup(struct audit *a)
{
	struct dbinfo di;
	int r = read_info(a, &di);

	if (r)
		return r;
	if (is_empty(&di)) {
		if (a->readonly)
			return audit_fail(a, -EPROTO,
					  "%s: empty file, not a ward audit "
					  "database",
					  a->path);
		r = init_empty(a);
		if (!r)
			r = upgrade_prerelease(a);
		if (!r)
			r = read_info(a, &di);
		return r ? r : migrate(a, di.version);
	}
	if (di.app_id != AUDIT_APPLICATION_ID)
		return audit_fail(a, -EPROTO,
				  "%s: not a ward audit database "
				  "(application_id %lld, %lld schema objects); "
				  "refusing to touch it",
				  a->path, di.app_id, di.objects);
	r = check_ward(a, &di);
	if (!r && !a->readonly)
		r = exec_sql(a, "PRAGMA journal_mode = WAL");
	if (!r)
		r = upgrade_prerelease(a);
	return r ? r : migrate(a, di.version);
}
