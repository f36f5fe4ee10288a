/*
 * cmd_verify.c - `ward verify`: recompute the hash chains of recorded runs
 * and check them against each run's seal (audit/chain.c).
 */
#include "tools/cmds.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit.h"
#include "common/log.h"
#include "tools/review/view.h"

#define MAX_SHOWN 200 /* problems printed per run (all are counted) */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ward verify [RUN... | --all] [--db PATH] [--key FILE] [--json]\n"
		"                   [--strict] [--seal HEX] [--seal-log FILE]\n"
		"\n"
		"Check that the record of each run is the one ward wrote: recompute the\n"
		"hash chains of its events and outputs, and compare the run row, its\n"
		"processes and input files and both chains' heads with the run's seal\n"
		"(runs.chain). Every edited, deleted, inserted or reordered row is named\n"
		"with its place: table and seq (events, outputs), serial (processes), n\n"
		"(inputs), or the column of the run row. Nothing is written.\n"
		"\n"
		"  RUN          a run id, any unique prefix of one, or `last` (repeatable)\n"
		"  --all        every run in the database\n"
		"  --db PATH    audit database (default: $WARD_DB, else\n"
		"               $XDG_STATE_HOME/ward/audit.db, else\n"
		"               ~/.local/state/ward/audit.db); opened read-only\n"
		"  --key FILE   the chain key (default: the database's path + .key, made\n"
		"               by ward at the first run, mode 0600)\n"
		"  --json       one JSON object: the key, and per run its verdict, heads,\n"
		"               seal and problems\n"
		"  --strict     also fail (exit 1) when something could not be checked: a\n"
		"               run recorded before the chain (unchained), still running\n"
		"               or never sealed (ward died), or no key at hand\n"
		"  --seal HEX   the seal you kept elsewhere for this one RUN (from `ward run\n"
		"               --json`: chain.seal, or an earlier `ward verify --json`):\n"
		"               a record rewritten even by someone holding the key no\n"
		"               longer has it\n"
		"  --seal-log FILE  the seal log ward run/serve/mcp --seal-log (or\n"
		"               $WARD_SEAL_LOG) appended to: every line must have its\n"
		"               run in the database with that seal and place, every run\n"
		"               sealed since the log's first line its line (implies\n"
		"               --all when no RUN is given)\n"
		"  -h, --help   this text\n"
		"\n"
		"Each seal names its place in the chain of runs and the run sealed before\n"
		"it: a RUN's two links are checked too (the run sealed before it, the run\n"
		"sealed after it or the chain's head), and with --all the whole chain, so\n"
		"a run deleted, inserted or moved is named. Always: a WAL (DB-wal) that lost committed transactions is\n"
		"reported, with the runs it affects.\n"
		"\n"
		"Verdicts: intact; TAMPERED (with each problem); wrong-key (the key at\n"
		"hand is not the one that sealed the run: its tags and seal cannot be\n"
		"checked, exit 1); unchained (recorded\n"
		"before schema version 4: no hashes, nothing to check); running (not\n"
		"ended: its rows are checked, the seal comes at its end); unsealed (ward\n"
		"died before the end: rows checked, rows missing at the end cannot be\n"
		"seen). Without the key, only the chains' links, counts and heads are\n"
		"checked; the keyed tags and the seal are not (said on stderr and in\n"
		"the JSON): someone who can write the database could then have\n"
		"recomputed the chains. docs/security.md says who can forge what.\n"
		"\n"
		"exit status: 0 when every run is intact (or could not be checked,\n"
		"without --strict), 1 when anything is wrong (a wrong key included),\n"
		"125 for ward's own errors\n"
		"(bad arguments, an unknown or ambiguous run id, a database that is\n"
		"missing, not ward's, corrupt or newer than this ward, an unusable key).\n");
}

struct vopts {
	const char *db, *key, *seal, *seal_log;
	bool all, json, strict;
	char **runs;
	int n_runs;
};

static void parse(int argc, char **argv, struct vopts *o)
{
	enum { O_DB = 256, O_KEY, O_JSON, O_ALL, O_STRICT, O_SEAL, O_LOG };
	static const struct option opts[] = {
		{ "db", required_argument, 0, O_DB },
		{ "key", required_argument, 0, O_KEY },
		{ "json", no_argument, 0, O_JSON },
		{ "all", no_argument, 0, O_ALL },
		{ "strict", no_argument, 0, O_STRICT },
		{ "seal", required_argument, 0, O_SEAL },
		{ "seal-log", required_argument, 0, O_LOG },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case O_DB: o->db = optarg; break;
		case O_KEY: o->key = optarg; break;
		case O_JSON: o->json = true; break;
		case O_ALL: o->all = true; break;
		case O_STRICT: o->strict = true; break;
		case O_SEAL: o->seal = optarg; break;
		case O_LOG: o->seal_log = optarg; break;
		case 'h': usage(stdout); exit(0);
		default:
			die("verify: %s: unknown option or missing value (try "
			    "`ward verify --help`)",
			    argv[optind - 1]);
		}
	}
	o->runs = argv + optind;
	o->n_runs = argc - optind;
	if (o->all && o->n_runs)
		die("verify: give run ids or --all, not both");
	if (o->seal_log && !o->n_runs)
		o->all = true;
	if (!o->all && !o->n_runs)
		die("verify: which runs? give RUN... or --all (try `ward "
		    "verify --help`)");
	if (o->seal && (o->all || o->n_runs != 1))
		die("verify: --seal is for exactly one RUN");
	if (o->seal && strlen(o->seal) != 64)
		die("verify: --seal %s: give the 64 hex digits of the seal",
		    o->seal);
}

/* ------------------------------------------------------------------ */

static int collect(const struct audit_run *r, void *arg)
{
	return audit_idlist_add(arg, r->id);
}

/* Problems of one run: printed (text) or kept (JSON). */
struct run_out {
	const struct vopts *o;
	json_t *problems;
	unsigned shown;
	bool header; /* the run's line is printed */
	const char *run_id;
};

static void place(const struct audit_problem *p, char *buf, size_t n)
{
	if (!strcmp(p->table, "chain of runs") && p->row)
		snprintf(buf, n, "chain of runs #%lld", p->row);
	else if (!strcmp(p->table, "seal log") && p->row)
		snprintf(buf, n, "seal log line %lld", p->row);
	else if (p->column && p->row)
		snprintf(buf, n, "%s %s %lld, column %s", p->table,
			 !strcmp(p->table, "processes") ? "serial"
			 : !strcmp(p->table, "inputs")	? "n"
							: "seq",
			 p->row, p->column);
	else if (p->row)
		snprintf(buf, n, "%s %s %lld", p->table,
			 !strcmp(p->table, "processes") ? "serial"
			 : !strcmp(p->table, "inputs")	? "n"
							: "seq",
			 p->row);
	else if (p->column)
		snprintf(buf, n, "%s.%s", p->table, p->column);
	else
		snprintf(buf, n, "%s", p->table);
}

static int on_problem(const struct audit_problem *p, void *arg)
{
	struct run_out *ro = arg;
	char where[128];

	if (ro->o->json) {
		json_array_append_new(
			ro->problems,
			json_pack("{s:s, s:o, s:o, s:s}", "table", p->table,
				  "row",
				  p->row ? json_integer(p->row) : json_null(),
				  "column",
				  p->column ? json_string(p->column)
					    : json_null(),
				  "what", p->what));
		return 0;
	}
	if (!ro->header) {
		if (ro->run_id)
			printf("%s: TAMPERED\n", ro->run_id);
		else
			printf("database: NOT INTACT\n");
		ro->header = true;
	}
	if (ro->shown++ < MAX_SHOWN) {
		place(p, where, sizeof(where));
		printf("  %s: %s\n", where, p->what);
	}
	return 0;
}

static const char *verdict_of(const struct audit_verify *v)
{
	if (v->problems)
		return "tampered";
	if (v->key_mismatch)
		return "wrong-key";
	if (v->unchained)
		return "unchained";
	if (!v->sealed && !strcmp(v->status, "running"))
		return "running";
	if (!v->sealed)
		return "unsealed";
	return "intact";
}

/* Not tampered, but not fully checked either (what --strict fails). */
static bool partial(const struct audit_verify *v)
{
	return v->unchained || !v->sealed || !v->key_checked ||
	       !v->seal_checked || v->cells_unsealed;
}

static void print_text(const struct audit_verify *v, struct run_out *ro)
{
	const char *vd = verdict_of(v);

	if (ro->header) {
		if (ro->shown > MAX_SHOWN)
			printf("  ... and %u more\n", ro->shown - MAX_SHOWN);
		printf("  (%u problem%s; %lld events, %lld outputs; status "
		       "%s)\n",
		       v->problems, v->problems == 1 ? "" : "s", v->rows[0],
		       v->rows[1], v->status);
		return;
	}
	if (!strcmp(vd, "unchained")) {
		printf("%s: unchained (recorded before the hash chain, schema "
		       "version 4: nothing to check)\n",
		       v->run_id);
		return;
	}
	printf("%s: %s (%s; %lld events, %lld outputs", v->run_id, vd,
	       v->status, v->rows[0], v->rows[1]);
	if (v->sealed)
		printf("; %s%s%s, seal %s", v->alg, v->key_id[0] ? " key " : "",
		       v->key_id, v->seal);
	else if (!strcmp(vd, "running"))
		printf("; not sealed until it ends");
	else
		printf("; never sealed: ward stopped before the run ended");
	printf(")%s%s\n",
	       v->sealed && !v->key_checked && !v->key_mismatch
		       ? " - links only, no key"
		       : "",
	       v->cells_unsealed ? " - its cells are not sealed" : "");
	if (v->key_mismatch)
		printf("  %s: its keyed tags and seal cannot be checked; give "
		       "the key that sealed it (--key FILE)\n",
		       v->key_note);
}

static json_t *run_json(const struct audit_verify *v, json_t *problems)
{
	json_t *o = json_pack(
		"{s:s, s:s, s:s, s:I, s:I, s:{s:s, s:s}, s:o, s:o, s:o, s:b, "
		"s:b, s:b, s:o, s:o}",
		"run_id", v->run_id, "status", v->status, "verdict",
		verdict_of(v), "events", (json_int_t)v->rows[0], "outputs",
		(json_int_t)v->rows[1], "heads", "events", v->head[0],
		"outputs", v->head[1], "alg",
		v->sealed ? json_string(v->alg) : json_null(), "key_id",
		v->key_id[0] ? json_string(v->key_id) : json_null(), "seal",
		v->sealed ? json_string(v->seal) : json_null(), "key_checked",
		v->key_checked, "seal_checked", v->seal_checked, "cells_sealed",
		!v->cells_unsealed, "note",
		v->key_note[0] ? json_string(v->key_note) : json_null(),
		"problems", problems);

	json_object_set_new(o, "n",
			    v->link_n ? json_integer(v->link_n) : json_null());
	json_object_set_new(o, "prev_run",
			    v->prev_run[0] ? json_string(v->prev_run)
					   : json_null());
	return o;
}

/* ---------------------- the database as a whole ---------------------- */

/* The chain of runs, the seal log and the WAL; text printed, or the JSON
 * object. *bad is set when something is wrong. */
static json_t *check_database(const struct vopts *o, struct audit *au,
			      const char *db, bool *bad)
{
	const struct audit_wal *w = audit_wal_state(au);
	struct audit_links lk;
	struct run_out ro = { .o = o };
	json_t *out;
	int r;

	ro.problems = o->json ? json_array() : NULL;
	r = audit_verify_links(au, o->all, o->seal_log, &lk, on_problem, &ro);
	if (r)
		die("verify: %s: %s", db, audit_errmsg(au));
	*bad = lk.problems != 0;
	if (!o->json && ro.header) {
		printf("  (%u problem%s with the database as a whole)\n",
		       lk.problems, lk.problems == 1 ? "" : "s");
	} else if (!o->json && o->all) {
		printf("chain of runs: intact (%lld run%s linked in seal "
		       "order",
		       lk.linked, lk.linked == 1 ? "" : "s");
		if (lk.head_n)
			printf(", #1 to #%lld, the newest run %s", lk.head_n,
			       lk.head_run);
		if (lk.older)
			printf("; %lld sealed before the chain", lk.older);
		printf(")\n");
		if (o->seal_log)
			printf("seal log %s: intact (%lld line%s from #%lld; "
			       "%lld run%s sealed before its first line)\n",
			       o->seal_log, lk.log_lines,
			       lk.log_lines == 1 ? "" : "s", lk.log_first,
			       lk.log_before, lk.log_before == 1 ? "" : "s");
	}
	if (!o->json)
		return NULL;
	out = json_object();
	json_object_set_new(
		out, "chain_of_runs",
		o->all ? json_pack("{s:I, s:I, s:I, s:o}", "linked",
				   (json_int_t)lk.linked, "older",
				   (json_int_t)lk.older, "head",
				   (json_int_t)lk.head_n, "head_run",
				   lk.head_run[0] ? json_string(lk.head_run)
						  : json_null())
		       : json_null());
	json_object_set_new(
		out, "seal_log",
		o->seal_log
			? json_pack("{s:s, s:I, s:I, s:I}", "path", o->seal_log,
				    "lines", (json_int_t)lk.log_lines, "first",
				    (json_int_t)lk.log_first, "before",
				    (json_int_t)lk.log_before)
			: json_null());
	json_object_set_new(
		out, "wal",
		json_pack("{s:b, s:I, s:b, s:I, s:I, s:I}", "lost", w->lost,
			  "losses", (json_int_t)lk.wal_losses, "index",
			  w->index, "index_frames", (json_int_t)w->index_frames,
			  "backfilled", (json_int_t)w->backfilled, "wal_frames",
			  (json_int_t)w->wal_frames));
	json_object_set_new(out, "problems", ro.problems);
	return out;
}

int ward_cmd_verify(int argc, char **argv)
{
	struct vopts o = { 0 };
	char db[PATH_MAX], errbuf[512], key_note[600] = "";
	struct audit *au = NULL;
	struct audit_idlist ids = { 0 };
	unsigned tampered = 0, partial_n = 0, wrong_key = 0;
	json_t *runs = NULL;
	int r;

	parse(argc, argv, &o);
	if (audit_default_path(o.db, db, sizeof(db)) < 0)
		die("verify: no audit database path: set HOME, WARD_DB or "
		    "pass --db");
	if (audit_open(db, true, &au, errbuf, sizeof(errbuf)) < 0)
		die("verify: audit database: %s", errbuf);
	r = o.key ? audit_chain_key_file(au, o.key) : audit_verify_key(au);
	if (r == -ENOENT || r == -EACCES) {
		snprintf(key_note, sizeof(key_note), "%s", audit_errmsg(au));
		if (!o.json)
			warn("verify: %s: only the chains' links, counts and "
			     "heads are checked, not the keyed tags and seals",
			     key_note);
	} else if (r) {
		die("verify: %s", audit_errmsg(au));
	}
	/* the keys of the chains merged in (ward merge), if any */
	r = audit_keyring_load(au);
	if (r < 0)
		die("verify: %s", audit_errmsg(au));
	if (r > 0 && key_note[0] && !o.json)
		warn("verify: the runs merged in from other databases are "
		     "checked with their own keys (%d in %s.keys)",
		     r, db);

	if (o.all) {
		r = audit_runs_each(au, 0, collect, &ids);
		if (r == -ENOMEM)
			die("verify: out of memory");
		if (r)
			die("verify: %s: %s", db, audit_errmsg(au));
	}
	for (int i = 0; i < o.n_runs; i++) {
		char id[AUDIT_RUN_ID_LEN + 1];

		if (view_find_run(au, db, o.runs[i], id) < 0)
			exit(WARD_EXIT_INTERNAL); /* it said why */
		if (audit_idlist_add(&ids, id))
			die("verify: out of memory");
	}
	if (o.json)
		runs = json_array();
	for (size_t i = 0; i < ids.n; i++) {
		struct audit_verify v;
		struct run_out ro = { .o = &o, .run_id = ids.id[i] };

		ro.problems = o.json ? json_array() : NULL;
		r = audit_verify_run(au, ids.id[i], &v, on_problem, &ro);
		if (r)
			die("verify: run %s in %s: %s", ids.id[i], db,
			    audit_errmsg(au));
		if (!o.all) { /* --all checks the whole chain of runs */
			unsigned np = 0;

			r = audit_verify_neighbours(au, ids.id[i], &np,
						    on_problem, &ro);
			if (r < 0)
				die("verify: run %s in %s: %s", ids.id[i], db,
				    audit_errmsg(au));
			v.problems += np;
		}
		if (!v.key_note[0] && key_note[0] && v.sealed && !v.key_checked)
			snprintf(v.key_note, sizeof(v.key_note), "%s",
				 key_note);
		if (o.seal && v.sealed && strcasecmp(o.seal, v.seal)) {
			struct audit_problem p = {
				.table = "runs",
				.column = "chain",
				.what = "the seal is not the one given with "
					"--seal: the record was rewritten and "
					"sealed again",
			};
			v.problems++;
			on_problem(&p, &ro);
		} else if (o.seal && !v.sealed) {
			struct audit_problem p = {
				.table = "runs",
				.column = "chain",
				.what = "--seal given, but the run has no seal",
			};
			v.problems++;
			on_problem(&p, &ro);
		}
		if (v.problems)
			tampered++;
		else if (v.key_mismatch)
			wrong_key++;
		else if (partial(&v))
			partial_n++;
		if (o.json)
			json_array_append_new(runs, run_json(&v, ro.problems));
		else
			print_text(&v, &ro);
	}
	bool db_bad = false;
	json_t *dbj = check_database(&o, au, db, &db_bad);

	if (o.json) {
		json_t *out = json_pack(
			"{s:s, s:{s:b, s:o}, s:I, s:I, s:I, s:b, s:o}", "db",
			db, "key", "available", !key_note[0], "note",
			key_note[0] ? json_string(key_note) : json_null(),
			"runs_checked", (json_int_t)ids.n, "tampered",
			(json_int_t)tampered, "not_fully_checked",
			(json_int_t)partial_n, "ok",
			!tampered && !wrong_key && !db_bad &&
				!(o.strict && partial_n),
			"runs", runs);

		json_object_set_new(out, "database", dbj ? dbj : json_null());

		json_dumpf(out, stdout, JSON_COMPACT);
		fputc('\n', stdout);
		json_decref(out);
	} else if (ids.n > 1 || o.all) {
		printf("verify: %zu run%s: %zu intact or not checkable, %u "
		       "tampered%s%s%s\n",
		       ids.n, ids.n == 1 ? "" : "s",
		       ids.n - tampered - wrong_key, tampered,
		       wrong_key ? ", some with a key that is not theirs" : "",
		       partial_n ? " (some not fully checked: see above)" : "",
		       db_bad ? "; the database as a whole is not intact "
				"(see above)"
			      : "");
	}

	fflush(stdout);
	free(ids.id);
	audit_close(au);
	if (tampered || wrong_key || db_bad)
		return 1;
	return o.strict && partial_n ? 1 : 0;
}
