/*
 * cmd_export.c - `ward export`: runs as JSON Lines (every row of every
 * table, the canonical stream) or as OCSF events for a SIEM. Streams:
 * each row becomes one object written at once; nothing of a run is held
 * in memory, whatever its size. The formats are in docs/export.md.
 */
#include "tools/cmds.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit/rows.h"
#include "common/errnames.h"
#include "common/json.h"
#include "common/log.h"
#include "tools/review/phases.h"
#include "tools/review/view.h"

#define OCSF_VERSION "1.1.0"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ward export (RUN... | --all | --since TIME) [--format jsonl|ocsf]\n"
		"                   [-o FILE] [--db PATH]\n"
		"\n"
		"Write recorded runs out of the audit database, one JSON object per line,\n"
		"streamed (memory stays small whatever the size of a run).\n"
		"\n"
		"  RUN             a run id, any unique prefix of one, or `last`\n"
		"  --all           every run, in the order they started\n"
		"  --since TIME    the runs started at or after TIME (alone, or with --all):\n"
		"                  " VIEW_TIME_FORMS "\n"
		"  --format F      jsonl (default): the canonical stream, every row of\n"
		"                  every table of the run: {\"type\": \"run\"}, then its\n"
		"                  \"phase\", \"input\", \"process\", \"event\", \"output\",\n"
		"                  \"cell\" and\n"
		"                  \"artifact\" rows, then {\"type\": \"end\"} with the counts.\n"
		"                  Each object has \"type\" and \"run_id\" and every column by\n"
		"                  its name (hash-chain columns included); bytes that are\n"
		"                  not UTF-8 are base64 with \"<column>_encoding\": \"base64\".\n"
		"                  ocsf: OCSF " OCSF_VERSION
		" events for a SIEM: Process Activity\n"
		"                  (1007: launches and exits, exec, signals), File System\n"
		"                  Activity (1001), Network Activity (4001), Kernel Activity\n"
		"                  (1003: other syscalls), each with action, disposition\n"
		"                  and severity from ward's decision\n"
		"  -o, --output FILE  write to FILE instead of stdout (created mode 0600;\n"
		"                  removed again if the export fails)\n"
		"  --db PATH       audit database (default: $WARD_DB, else\n"
		"                  $XDG_STATE_HOME/ward/audit.db, else\n"
		"                  ~/.local/state/ward/audit.db); opened read-only\n"
		"  -h, --help      this text\n"
		"\n"
		"docs/export.md describes both formats field by field.\n"
		"\n"
		"exit status: 0, or 125 (bad arguments, unknown run, missing, corrupt or\n"
		"foreign database, output not writable).\n");
}

enum export_format { FMT_JSONL, FMT_OCSF };

struct export_opts {
	const char *db, *out;
	enum export_format fmt;
	bool all, has_since;
	long long since_ns;
	char **runs;
	int nruns;
};

/* 0, 1 (--help printed) or -1 (error printed). */
static int parse_args(int argc, char **argv, struct export_opts *o)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "all", no_argument, NULL, 'a' },
		{ "since", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct timespec now;
	int c;

	*o = (struct export_opts){ .fmt = FMT_JSONL };
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': o->db = optarg; break;
		case 'o': o->out = optarg; break;
		case 'a': o->all = true; break;
		case 'h': usage(stdout); return 1;
		case 'f':
			if (!strcmp(optarg, "jsonl")) {
				o->fmt = FMT_JSONL;
			} else if (!strcmp(optarg, "ocsf")) {
				o->fmt = FMT_OCSF;
			} else {
				warn("export: --format: '%s' is not a format "
				     "(jsonl or ocsf)",
				     optarg);
				return -1;
			}
			break;
		case 's':
			clock_gettime(CLOCK_REALTIME, &now);
			if (view_parse_time(optarg,
					    now.tv_sec * 1000000000LL +
						    now.tv_nsec,
					    &o->since_ns)) {
				warn("export: --since: '%s' is not a time (%s)",
				     optarg, VIEW_TIME_FORMS);
				return -1;
			}
			o->has_since = true;
			break;
		case ':':
			warn("export: %s needs a value (see ward export --help)",
			     argv[optind - 1]);
			return -1;
		default:
			warn("export: unknown option '%s' (see ward export "
			     "--help)",
			     argv[optind - 1]);
			return -1;
		}
	}
	o->runs = argv + optind;
	o->nruns = argc - optind;
	if (o->nruns && (o->all || o->has_since)) {
		warn("export: give run ids or --all/--since, not both");
		return -1;
	}
	if (!o->nruns && !o->all && !o->has_since) {
		warn("export: which runs? give run ids, --all or --since (see "
		     "ward export --help)");
		return -1;
	}
	if (o->out && !strcmp(o->out, "-"))
		o->out = NULL;
	return 0;
}

/* ------------------------------ output ------------------------------ */

struct export_ctx {
	struct audit *a;
	FILE *f;
	enum export_format fmt;
	int werr; /* errno of a failed write, or 0 */
	/* jsonl: rows of the current table */
	const char *type;
	long long count;
	/* ocsf: the run, and the last process seen */
	char run_id[AUDIT_RUN_ID_LEN + 1];
	json_t *device, *user, *product, *policy;
	long long proc_serial;
	json_t *proc; /* actor.process of proc_serial */
	long long skipped_forks;
	struct run_phases phases; /* ocsf: each event's phase */
	char *buf;		  /* emit()'s line */
	size_t cap;
	char *tail; /* ocsf: ,"device":...,"policy":...} ending every object */
};

/* Writes o as one line and drops it. The text is built in x->buf (one
 * write per object: jansson's own stream output writes every token). */
static int emit(struct export_ctx *x, json_t *o)
{
	size_t n;
	int r = 0;

	if (!o)
		return -ENOMEM;
	n = json_dumpb(o, x->buf, x->cap, JSON_COMPACT);
	if (n + 1 > x->cap) {
		size_t cap = (n + 1) * 2;
		char *b = realloc(x->buf, cap);

		if (!b) {
			json_decref(o);
			return -ENOMEM;
		}
		x->buf = b;
		x->cap = cap;
		n = json_dumpb(o, x->buf, x->cap, JSON_COMPACT);
	}
	json_decref(o);
	if (n == 0)
		return -ENOMEM;
	errno = 0;
	if (x->tail && n > 2) /* "...}" + ",\"device\":...}" */
		r = fwrite(x->buf, 1, n - 1, x->f) != n - 1 ||
		    fputs(x->tail, x->f) == EOF || fputc('\n', x->f) == EOF;
	else
		r = (x->buf[n++] = '\n', fwrite(x->buf, 1, n, x->f) != n);
	if (r)
		r = -(x->werr = errno ? errno : EIO);
	return r;
}

/* ------------------------------ jsonl ------------------------------- */

/* Sets key to the bytes: a string when they are UTF-8, else base64 with
 * "<key>_encoding": "base64". blob adds "<key>_encoding" always. */
static int set_bytes(json_t *o, const char *key, const void *p, size_t n,
		     bool blob)
{
	char enc[96];
	bool utf8 = ward_utf8_valid(p ? p : "", n);
	json_t *v = utf8 ? json_stringn(p ? p : "", n)
			 : view_json_base64(p ? p : "", n);

	if (!v || json_object_set_new(o, key, v))
		return -ENOMEM;
	if (!utf8 || blob) {
		snprintf(enc, sizeof(enc), "%s_encoding", key);
		if (json_object_set_new(o, enc,
					json_string(utf8 ? "utf-8" : "base64")))
			return -ENOMEM;
	}
	return 0;
}

static int set_col(json_t *o, const struct audit_col *c)
{
	switch (c->type) {
	case AUDIT_COL_INT:
		return json_object_set_new(o, c->name, json_integer(c->i))
			       ? -ENOMEM
			       : 0;
	case AUDIT_COL_REAL:
		return json_object_set_new(o, c->name, json_real(c->d))
			       ? -ENOMEM
			       : 0;
	case AUDIT_COL_TEXT: return set_bytes(o, c->name, c->p, c->n, false);
	case AUDIT_COL_BLOB: return set_bytes(o, c->name, c->p, c->n, true);
	default:
		return json_object_set_new(o, c->name, json_null()) ? -ENOMEM
								    : 0;
	}
}

static int jsonl_row(const struct audit_col *cols, int n, void *arg)
{
	struct export_ctx *x = arg;
	json_t *o = json_object();
	int r = 0;

	if (!o)
		return -ENOMEM;
	json_object_set_new(o, "type", json_string(x->type));
	json_object_set_new(o, "run_id", json_string(x->run_id));
	for (int i = 0; i < n && !r; i++) {
		if (!strcmp(cols[i].name, "run_id") ||
		    (!strcmp(x->type, "run") && !strcmp(cols[i].name, "id")))
			continue;
		r = set_col(o, &cols[i]);
	}
	if (r) {
		json_decref(o);
		return r;
	}
	x->count++;
	return emit(x, o);
}

static int jsonl_run(struct export_ctx *x)
{
	static const struct {
		enum audit_rows_what what;
		const char *type, *count_key;
	} tables[] = {
		{ AUDIT_ROWS_RUN, "run", NULL },
		{ AUDIT_ROWS_PHASES, "phase", "phases" },
		{ AUDIT_ROWS_INPUTS, "input", "inputs" },
		{ AUDIT_ROWS_PROCESSES, "process", "processes" },
		{ AUDIT_ROWS_EVENTS, "event", "events" },
		{ AUDIT_ROWS_OUTPUTS, "output", "outputs" },
		{ AUDIT_ROWS_CELLS, "cell", "cells" },
		{ AUDIT_ROWS_ARTIFACTS, "artifact", "artifacts" },
	};
	json_t *end = json_object();
	int r = 0;

	if (!end)
		return -ENOMEM;
	json_object_set_new(end, "type", json_string("end"));
	json_object_set_new(end, "run_id", json_string(x->run_id));
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]) && !r; i++) {
		x->type = tables[i].type;
		x->count = 0;
		r = audit_rows_each(x->a, tables[i].what, x->run_id, jsonl_row,
				    x);
		if (!r && tables[i].count_key)
			json_object_set_new(end, tables[i].count_key,
					    json_integer(x->count));
	}
	if (r) {
		json_decref(end);
		return r;
	}
	return emit(x, end);
}

/* ------------------------------- ocsf ------------------------------- */

static const char *col_text(const struct audit_col *cols, int n,
			    const char *name)
{
	const struct audit_col *c = audit_col_get(cols, n, name);

	return c && c->type == AUDIT_COL_TEXT ? c->p : NULL;
}

/* The integer column, or dflt when it is NULL or missing. */
static long long col_int(const struct audit_col *cols, int n, const char *name,
			 long long dflt)
{
	const struct audit_col *c = audit_col_get(cols, n, name);

	return c && c->type == AUDIT_COL_INT ? c->i : dflt;
}

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s && s[1] ? s + 1 : path;
}

static void set_str(json_t *o, const char *key, const char *s)
{
	if (s)
		json_object_set_new(o, key, json_string(s));
}

/* argv (a JSON array of strings) joined by spaces; NULL if none. */
static json_t *cmd_line(const char *argv_json)
{
	json_t *a = argv_json ? json_loads(argv_json, 0, NULL) : NULL;
	struct ward_strbuf sb = WARD_STRBUF_INIT;
	json_t *v, *s = NULL;
	size_t i;

	if (!json_is_array(a)) {
		json_decref(a);
		return NULL;
	}
	json_array_foreach(a, i, v)
	{
		if (i)
			ward_strbuf_puts(&sb, " ");
		if (json_is_string(v))
			ward_strbuf_append(&sb, json_string_value(v),
					   json_string_length(v));
	}
	if (!sb.truncated)
		s = json_stringn(sb.buf ? sb.buf : "", sb.len);
	ward_strbuf_free(&sb);
	json_decref(a);
	return s;
}

/* An OCSF file object for path (type_id 0 Unknown unless folder). */
static json_t *file_obj(const char *path, bool folder)
{
	json_t *f = json_object();

	set_str(f, "path", path);
	set_str(f, "name", base_name(path) ? base_name(path) : "");
	json_object_set_new(f, "type_id", json_integer(folder ? 2 : 0));
	json_object_set_new(f, "type",
			    json_string(folder ? "Folder" : "Unknown"));
	return f;
}

/* An OCSF process object. serial <= 0: not in the process table. */
static json_t *process_obj(struct export_ctx *x, long long serial,
			   long long pid, long long tid, const char *exe,
			   const char *argv_json, long long start_ns,
			   long long ppid)
{
	json_t *p = json_object();
	char uid[64];
	json_t *cl;

	if (pid > 0)
		json_object_set_new(p, "pid", json_integer(pid));
	if (tid > 0)
		json_object_set_new(p, "tid", json_integer(tid));
	if (serial > 0) {
		snprintf(uid, sizeof(uid), "%s:%lld", x->run_id, serial);
		json_object_set_new(p, "uid", json_string(uid));
	}
	if (exe) {
		set_str(p, "name", base_name(exe));
		json_object_set_new(p, "file", file_obj(exe, false));
		json_object_set_new(json_object_get(p, "file"), "type_id",
				    json_integer(1));
		json_object_set_new(json_object_get(p, "file"), "type",
				    json_string("Regular File"));
	}
	if ((cl = cmd_line(argv_json)) != NULL)
		json_object_set_new(p, "cmd_line", cl);
	if (start_ns > 0)
		json_object_set_new(p, "created_time",
				    json_integer(start_ns / 1000000));
	if (ppid > 0) {
		json_t *pp = json_object();

		json_object_set_new(pp, "pid", json_integer(ppid));
		json_object_set_new(p, "parent_process", pp);
	}
	if (x->user)
		json_object_set(p, "user", x->user);
	return p;
}

struct ocsf_class {
	int uid, category_uid;
	const char *name, *category;
};
static const struct ocsf_class C_FILE = { 1001, 1, "File System Activity",
					  "System Activity" };
static const struct ocsf_class C_KERNEL = { 1003, 1, "Kernel Activity",
					    "System Activity" };
static const struct ocsf_class C_PROCESS = { 1007, 1, "Process Activity",
					     "System Activity" };
static const struct ocsf_class C_NET = { 4001, 4, "Network Activity",
					 "Network Activity" };

static const char *const severity_names[] = {
	"Unknown", "Informational", "Low",   "Medium",
	"High",	   "Critical",	    "Fatal",
};

/* The attributes every class has (base event, system/network category,
 * security_control profile). uid names the object: run id and a suffix. */
static json_t *ocsf_base(struct export_ctx *x, const struct ocsf_class *c,
			 int activity_id, const char *activity, long long ts_ns,
			 const char *uid_suffix)
{
	json_t *o = json_object(), *md = json_object();
	char tn[128], uid[96];

	json_object_set_new(o, "class_uid", json_integer(c->uid));
	json_object_set_new(o, "class_name", json_string(c->name));
	json_object_set_new(o, "category_uid", json_integer(c->category_uid));
	json_object_set_new(o, "category_name", json_string(c->category));
	json_object_set_new(o, "activity_id", json_integer(activity_id));
	json_object_set_new(o, "activity_name", json_string(activity));
	json_object_set_new(
		o, "type_uid",
		json_integer((json_int_t)c->uid * 100 + activity_id));
	snprintf(tn, sizeof(tn), "%s: %s", c->name, activity);
	json_object_set_new(o, "type_name", json_string(tn));
	json_object_set_new(o, "time", json_integer(ts_ns / 1000000));
	json_object_set_new(md, "version", json_string(OCSF_VERSION));
	json_object_set(md, "product", x->product);
	snprintf(uid, sizeof(uid), "%s-%s", x->run_id, uid_suffix);
	json_object_set_new(md, "uid", json_string(uid));
	json_object_set_new(md, "correlation_uid", json_string(x->run_id));
	json_object_set_new(md, "profiles",
			    json_pack("[ss]", "host", "security_control"));
	json_object_set_new(o, "metadata", md);
	/* device and policy: the same for every object of the run, written
	 * by emit() from x->tail */
	return o;
}

static void set_severity(json_t *o, int id)
{
	json_object_set_new(o, "severity_id", json_integer(id));
	json_object_set_new(o, "severity", json_string(severity_names[id]));
}

/* action, disposition, severity and status from ward's decision. */
static void set_decision(json_t *o, const char *decision, bool would_deny,
			 long long err, const char *reason)
{
	bool kill = decision && !strcmp(decision, "kill");
	bool deny = kill || (decision && !strcmp(decision, "deny"));
	const char *en;

	json_object_set_new(o, "action_id", json_integer(deny ? 2 : 1));
	json_object_set_new(o, "action",
			    json_string(deny ? "Denied" : "Allowed"));
	if (deny) {
		json_object_set_new(o, "disposition_id", json_integer(2));
		json_object_set_new(o, "disposition", json_string("Blocked"));
	} else if (would_deny) {
		json_object_set_new(o, "disposition_id", json_integer(15));
		json_object_set_new(o, "disposition", json_string("Detected"));
	} else {
		json_object_set_new(o, "disposition_id", json_integer(1));
		json_object_set_new(o, "disposition", json_string("Allowed"));
	}
	set_severity(o, kill ? 4 : deny ? 3 : would_deny ? 2 : 1);
	if (deny) {
		json_object_set_new(o, "status_id", json_integer(2));
		json_object_set_new(o, "status", json_string("Failure"));
		en = err > 0 ? ward_errno_name((int)err) : NULL;
		if (kill)
			set_str(o, "status_code", "SIGKILL");
		else if (en)
			set_str(o, "status_code", en);
		json_object_set_new(
			o, "status_detail",
			json_string(kill ? "the policy killed the run"
					 : "the policy denied the call"));
	}
	set_str(o, "message", reason);
}

/* actor.process of the event's process (cached for runs of events of one
 * process); the executable only once the process has exec'd it. */
static json_t *event_actor(struct export_ctx *x, const struct audit_col *c,
			   int n)
{
	long long serial = col_int(c, n, "proc_serial", -1);
	long long ts = col_int(c, n, "ts_ns", 0);
	long long exec_ns = col_int(c, n, "p_exec_ns", -1);
	bool execed = exec_ns < 0 || ts >= exec_ns;
	json_t *actor = json_object();

	if (!x->proc || serial != x->proc_serial ||
	    json_integer_value(json_object_get(x->proc, "tid")) !=
		    col_int(c, n, "tid", 0) ||
	    (json_object_get(x->proc, "file") != NULL) != execed) {
		json_decref(x->proc);
		x->proc = process_obj(x, serial, col_int(c, n, "pid", 0),
				      col_int(c, n, "tid", 0),
				      execed ? col_text(c, n, "p_exe") : NULL,
				      execed ? col_text(c, n, "p_argv") : NULL,
				      col_int(c, n, "p_start_ns", 0),
				      col_int(c, n, "p_ppid", 0));
		x->proc_serial = serial;
	}
	json_object_set(actor, "process", x->proc);
	if (x->user)
		json_object_set(actor, "user", x->user);
	return actor;
}

static bool name_in(const char *s, const char *const *names)
{
	for (; *names; names++)
		if (!strcmp(s, *names))
			return true;
	return false;
}

/* File System Activity: activity from the syscall and its access. */
static int file_activity(const char *sc, const char *access, const char **name)
{
	static const char *const del[] = { "unlink", "unlinkat", "rmdir",
					   NULL };
	static const char *const ren[] = { "rename", "renameat", "renameat2",
					   NULL };
	static const char *const mk[] = { "mkdir",   "mkdirat",	  "mknod",
					  "mknodat", "link",	  "linkat",
					  "symlink", "symlinkat", NULL };
	static const char *const sec[] = { "chmod", "fchmodat", "fchmodat2",
					   "chown", "lchown",	"fchownat",
					   NULL };
	static const char *const attr[] = { "utime",	   "utimes",
					    "utimensat",   "futimesat",
					    "setxattr",	   "lsetxattr",
					    "removexattr", "lremovexattr",
					    NULL };
	static const char *const get[] = {
		"stat",	     "lstat",	   "newfstatat", "statx",      "access",
		"faccessat", "faccessat2", "readlink",	 "readlinkat", "statfs",
		"getxattr",  "lgetxattr",  "listxattr",	 "llistxattr", NULL
	};
	static const char *const opens[] = { "open", "openat", "openat2",
					     "creat", NULL };

	if (name_in(sc, del))
		return *name = "Delete", 4;
	if (name_in(sc, ren))
		return *name = "Rename", 5;
	if (name_in(sc, mk))
		return *name = "Create", 1;
	if (name_in(sc, sec))
		return *name = "Set Security", 7;
	if (name_in(sc, attr))
		return *name = "Set Attributes", 6;
	if (name_in(sc, get))
		return *name = "Get Attributes", 8;
	if (!strcmp(sc, "truncate"))
		return *name = "Update", 3;
	if (name_in(sc, opens)) {
		access = access ? access : "";
		if (strstr(access, "create"))
			return *name = "Create", 1;
		if (strstr(access, "write"))
			return *name = "Update", 3;
		if (strstr(access, "read"))
			return *name = "Read", 2;
		return *name = "Open", 14;
	}
	return -1; /* chdir, inotify_add_watch: Other */
}

static bool is_file_call(const char *sc, const char *access)
{
	const char *nm;
	return file_activity(sc, access, &nm) > 0 || !strcmp(sc, "chdir") ||
	       !strcmp(sc, "inotify_add_watch");
}

/* A network endpoint from decoded arguments (addr/port or path). */
static json_t *endpoint(json_t *args)
{
	json_t *e = json_object();
	const char *addr = json_string_value(json_object_get(args, "addr"));
	const char *path = json_string_value(json_object_get(args, "path"));
	const char *abs = json_string_value(json_object_get(args, "abstract"));
	json_t *port = json_object_get(args, "port");

	set_str(e, "ip", addr);
	if (json_is_integer(port) && json_integer_value(port) >= 0)
		json_object_set(e, "port", port);
	if (!addr && (path || abs))
		set_str(e, "name", path ? path : abs);
	return e;
}

/* A connection through ward's egress proxy (docs/schema.md, proxy rows):
 * Network Activity "Open" to the name and the address it resolved to,
 * with the bytes each way. */
static json_t *proxy_activity(struct export_ctx *x, json_t *args,
			      long long ts, const char *suffix)
{
	json_t *o = ocsf_base(x, &C_NET, 1, "Open", ts, suffix);
	json_t *dst = endpoint(args), *tr = json_object(), *ci = json_object();

	set_str(dst, "hostname",
		json_string_value(json_object_get(args, "name")));
	json_object_set_new(o, "dst_endpoint", dst);
	json_object_set_new(o, "src_endpoint", json_object());
	json_object_set(tr, "bytes_out", json_object_get(args, "bytes_up"));
	json_object_set(tr, "bytes_in", json_object_get(args, "bytes_down"));
	json_object_set_new(o, "traffic", tr);
	json_object_set(o, "duration", json_object_get(args, "duration_ms"));
	json_object_set_new(ci, "direction_id", json_integer(2));
	json_object_set_new(ci, "direction", json_string("Outbound"));
	json_object_set_new(o, "connection_info", ci);
	return o;
}

static json_t *connection_info(json_t *args, int direction)
{
	static const char *const dirs[] = { "Unknown", "Inbound", "Outbound" };
	const char *fam = json_string_value(json_object_get(args, "family"));
	json_t *ci = json_object();

	json_object_set_new(ci, "direction_id", json_integer(direction));
	json_object_set_new(ci, "direction", json_string(dirs[direction]));
	if (fam && !strcmp(fam, "AF_INET"))
		json_object_set_new(ci, "protocol_ver_id", json_integer(4));
	else if (fam && !strcmp(fam, "AF_INET6"))
		json_object_set_new(ci, "protocol_ver_id", json_integer(6));
	if (fam && !strcmp(fam, "AF_INET6") &&
	    json_is_true(json_object_get(args, "v4mapped")))
		json_object_set_new(ci, "protocol_ver_id", json_integer(4));
	return ci;
}

static int ocsf_event(const struct audit_col *c, int n, void *arg)
{
	static const char *const forks[] = { "clone", "clone3", "fork", "vfork",
					     NULL };
	static const char *const execs[] = { "execve", "execveat", NULL };
	static const char *const sigs[] = { "kill",
					    "tkill",
					    "tgkill",
					    "rt_sigqueueinfo",
					    "rt_tgsigqueueinfo",
					    "pidfd_send_signal",
					    NULL };
	static const char *const nets[] = { "socket",	"connect", "bind",
					    "listen",	"sendto",  "sendmsg",
					    "sendmmsg", NULL };
	struct export_ctx *x = arg;
	const char *sc = col_text(c, n, "syscall");
	const char *decision = col_text(c, n, "decision");
	const char *args_text = col_text(c, n, "args");
	const char *target = col_text(c, n, "target");
	const char *raw = col_text(c, n, "raw");
	const char *access, *an = "Other";
	long long seq = col_int(c, n, "seq", 0);
	long long ts = col_int(c, n, "ts_ns", 0);
	bool would = col_int(c, n, "would_deny", 0) != 0;
	json_t *args = args_text ? json_loads(args_text, 0, NULL) : NULL;
	json_t *o, *w;
	char suffix[32];
	int act;

	sc = sc ? sc : "?";
	if (!json_is_object(args)) {
		json_decref(args);
		args = json_object();
	}
	access = json_string_value(json_object_get(args, "access"));
	if (name_in(sc, forks) && decision && !strcmp(decision, "allow")) {
		/* the child's Launch (from the process table) stands for it */
		x->skipped_forks++;
		json_decref(args);
		return 0;
	}
	snprintf(suffix, sizeof(suffix), "e%lld", seq);
	if (is_file_call(sc, access)) {
		const char *p2 =
			json_string_value(json_object_get(args, "path2"));
		bool folder = !strcmp(sc, "mkdir") || !strcmp(sc, "mkdirat") ||
			      !strcmp(sc, "rmdir");

		act = file_activity(sc, access, &an);
		if (act < 0)
			act = 99, an = !strcmp(sc, "chdir") ? "Change Directory"
							    : "Watch";
		o = ocsf_base(x, &C_FILE, act, an, ts, suffix);
		json_object_set_new(o, "file",
				    file_obj(target ? target : raw, folder));
		if (act == 5 && p2)
			json_object_set_new(o, "file_result",
					    file_obj(p2, false));
	} else if (name_in(sc, execs)) {
		/* the same process with a new program */
		json_t *p = process_obj(x, col_int(c, n, "proc_serial", 0),
					col_int(c, n, "pid", 0), 0,
					target ? target : raw, NULL, 0,
					col_int(c, n, "p_ppid", 0));
		json_t *av = json_object_get(args, "argv");
		char *avs = json_is_array(av) ? json_dumps(av, JSON_COMPACT)
					      : NULL;
		json_t *cl = cmd_line(avs);

		free(avs);
		if (cl)
			json_object_set_new(p, "cmd_line", cl);
		o = ocsf_base(x, &C_PROCESS, 1, "Launch", ts, suffix);
		json_object_set_new(o, "process", p);
	} else if (name_in(sc, forks)) {
		json_t *p = json_object();
		json_t *pp = json_object();

		json_object_set_new(pp, "pid",
				    json_integer(col_int(c, n, "pid", 0)));
		json_object_set_new(p, "parent_process", pp);
		o = ocsf_base(x, &C_PROCESS, 1, "Launch", ts, suffix);
		json_object_set_new(o, "process", p);
	} else if (name_in(sc, sigs) || !strcmp(sc, "pidfd_open") ||
		   !strcmp(sc, "prlimit64")) {
		json_t *p = json_object(), *pid = json_object_get(args, "pid");
		json_int_t sig =
			json_integer_value(json_object_get(args, "sig"));

		if (json_is_integer(pid))
			json_object_set(p, "pid", pid);
		if (!strcmp(sc, "pidfd_open"))
			act = 3, an = "Open";
		else if (!strcmp(sc, "prlimit64"))
			act = 99, an = "Set Limits";
		else if (sig == SIGKILL || sig == SIGTERM)
			act = 2, an = "Terminate";
		else
			act = 99, an = "Signal";
		o = ocsf_base(x, &C_PROCESS, act, an, ts, suffix);
		json_object_set_new(o, "process", p);
	} else if (name_in(sc, nets)) {
		bool local = !strcmp(sc, "bind") || !strcmp(sc, "listen");
		bool sock = !strcmp(sc, "socket");

		if (!strcmp(sc, "connect"))
			act = 1, an = "Open";
		else if (!strncmp(sc, "send", 4))
			act = 6, an = "Traffic";
		else
			act = 99, an = !strcmp(sc, "bind")     ? "Bind"
				       : !strcmp(sc, "listen") ? "Listen"
							       : "Socket";
		o = ocsf_base(x, &C_NET, act, an, ts, suffix);
		json_object_set_new(o, "src_endpoint",
				    local && !sock ? endpoint(args)
						   : json_object());
		json_object_set_new(o, "dst_endpoint",
				    local || sock ? json_object()
						  : endpoint(args));
		json_object_set_new(o, "connection_info",
				    connection_info(args, sock	  ? 0
							  : local ? 1
								  : 2));
	} else if (!strcmp(sc, "proxy")) {
		o = proxy_activity(x, args, ts, suffix);
	} else {
		json_t *k = json_object();

		set_str(k, "name", sc);
		json_object_set_new(k, "type_id", json_integer(2));
		json_object_set_new(k, "type", json_string("System Call"));
		o = ocsf_base(x, &C_KERNEL, 4, "Invoke", ts, suffix);
		json_object_set_new(o, "kernel", k);
	}
	json_object_set_new(o, "actor", event_actor(x, c, n));
	set_decision(o, decision, would, col_int(c, n, "errno", 0),
		     col_text(c, n, "reason"));
	w = json_object();
	set_str(w, "run_id", x->run_id);
	json_object_set_new(w, "seq", json_integer(seq));
	set_str(w, "syscall", sc);
	json_object_set_new(w, "nr", json_integer(col_int(c, n, "nr", -1)));
	set_str(w, "decision", decision);
	set_str(w, "rule", col_text(c, n, "rule"));
	if (x->phases.n) /* ward run --setup: setup or main */
		set_str(w, "phase",
			run_phase_of(&x->phases,
				     col_int(c, n, "proc_serial", 0),
				     col_int(c, n, "ts_ns", 0)));
	json_object_set_new(w, "would_deny", json_boolean(would));
	{
		/* the kernel's result: NULL when the call never returned */
		const struct audit_col *rc = audit_col_get(c, n, "result");
		json_object_set_new(w, "result",
				    rc && rc->type == AUDIT_COL_INT
					    ? json_integer(rc->i)
					    : json_null());
	}
	set_str(w, "raw", raw);
	set_str(w, "target", target);
	json_object_set_new(w, "args", args); /* takes the reference */
	json_object_set_new(o, "unmapped", json_pack("{so}", "ward", w));
	return emit(x, o);
}

static int ocsf_process(const struct audit_col *c, int n, void *arg)
{
	struct export_ctx *x = arg;
	const char *kind = col_text(c, n, "kind");
	long long serial = col_int(c, n, "serial", 0);
	long long start = col_int(c, n, "start_ns", 0);
	long long exit_ns = col_int(c, n, "exit_ns", -1);
	json_t *o, *p, *actor;
	char suffix[32];
	int r;

	if (kind && strcmp(kind, "process"))
		return 0; /* threads: their calls carry actor.process.tid */
	p = process_obj(x, serial, col_int(c, n, "pid", 0), 0,
			col_text(c, n, "exe"), col_text(c, n, "argv"), start,
			col_int(c, n, "ppid", 0));
	/* Launch: the parent started it (the first process: ward did) */
	snprintf(suffix, sizeof(suffix), "p%lld", serial);
	o = ocsf_base(x, &C_PROCESS, 1, "Launch", start, suffix);
	json_object_set(o, "process", p);
	actor = json_object();
	if (col_int(c, n, "parent_serial", -1) > 0)
		json_object_set_new(
			actor, "process",
			process_obj(x, col_int(c, n, "parent_serial", 0),
				    col_int(c, n, "parent_pid", 0), 0,
				    col_text(c, n, "parent_exe"),
				    col_text(c, n, "parent_argv"), 0, 0));
	else
		json_object_set_new(actor, "app_name", json_string("ward"));
	if (x->user)
		json_object_set(actor, "user", x->user);
	json_object_set_new(o, "actor", actor);
	set_decision(o, "allow", false, 0, NULL);
	if ((r = emit(x, o)) != 0 || exit_ns < 0) {
		json_decref(p);
		return r;
	}
	/* Terminate: reflexive (actor and process are the process) */
	snprintf(suffix, sizeof(suffix), "x%lld", serial);
	o = ocsf_base(x, &C_PROCESS, 2, "Terminate", exit_ns, suffix);
	json_object_set(o, "process", p);
	json_object_set_new(o, "actor", json_pack("{sO}", "process", p));
	json_object_set_new(o, "exit_code",
			    json_integer(col_int(c, n, "exit_code", 0)));
	set_decision(o, "allow", false, 0, NULL);
	if (col_int(c, n, "signal", 0) > 0) {
		char m[64];

		snprintf(m, sizeof(m), "killed by signal %lld",
			 col_int(c, n, "signal", 0));
		set_str(o, "message", m);
	}
	json_decref(p);
	return emit(x, o);
}

/* x->tail: the attributes every object of the run shares, as JSON text
 * to end each object with (dumped once per run, not per object). */
static int ocsf_tail(struct export_ctx *x)
{
	json_t *t =
		json_pack("{sOsO}", "device", x->device, "policy", x->policy);
	char *s = t ? json_dumps(t, JSON_COMPACT) : NULL;

	json_decref(t);
	if (!s)
		return -ENOMEM;
	s[0] = ','; /* {"device":...} -> ,"device":...} */
	x->tail = s;
	return 0;
}

/* The run's context for every object: device, user, product, policy. */
static int ocsf_run_ctx(const struct audit_col *c, int n, void *arg)
{
	struct export_ctx *x = arg;
	const char *wv = col_text(c, n, "ward_version");
	const char *kernel = col_text(c, n, "kernel");
	long long uid = col_int(c, n, "uid", -1);
	json_t *os = json_object();
	char u[32];

	x->device = json_object();
	set_str(x->device, "hostname", col_text(c, n, "host"));
	json_object_set_new(x->device, "type_id", json_integer(0));
	json_object_set_new(x->device, "type", json_string("Unknown"));
	json_object_set_new(os, "name", json_string("Linux"));
	json_object_set_new(os, "type_id", json_integer(200));
	json_object_set_new(os, "type", json_string("Linux"));
	set_str(os, "version", kernel);
	json_object_set_new(x->device, "os", os);
	x->product = json_pack("{ssss}", "name", "ward", "vendor_name", "ward");
	set_str(x->product, "version", wv ? wv : WARD_VERSION);
	if (uid >= 0) {
		snprintf(u, sizeof(u), "%lld", uid);
		x->user = json_pack("{ss}", "uid", u);
	}
	x->policy = json_object();
	set_str(x->policy, "name", col_text(c, n, "policy_name"));
	set_str(x->policy, "uid", col_text(c, n, "policy_sha256"));
	return ocsf_tail(x);
}

static void ocsf_run_free(struct export_ctx *x)
{
	json_decref(x->device);
	json_decref(x->user);
	json_decref(x->product);
	json_decref(x->policy);
	json_decref(x->proc);
	x->device = x->user = x->product = x->policy = x->proc = NULL;
	free(x->tail);
	x->tail = NULL;
}

static int ocsf_run(struct export_ctx *x)
{
	int r = audit_rows_each(x->a, AUDIT_ROWS_RUN, x->run_id, ocsf_run_ctx,
				x);

	if (!r && !x->device)
		r = -ENOENT;
	if (!r)
		r = audit_rows_each(x->a, AUDIT_ROWS_PROCESSES_PARENT,
				    x->run_id, ocsf_process, x);
	if (!r)
		r = run_phases_load(x->a, x->run_id, &x->phases);
	if (!r)
		r = audit_rows_each(x->a, AUDIT_ROWS_EVENTS_PROC, x->run_id,
				    ocsf_event, x);
	run_phases_free(&x->phases);
	memset(&x->phases, 0, sizeof(x->phases));
	ocsf_run_free(x);
	return r;
}

/* ------------------------------ driver ------------------------------ */

/* One run, read in one transaction: its tables as of one commit, even
 * while a ward is still writing it. */
static int export_run(struct export_ctx *x, const char *id)
{
	int r = audit_rows_snapshot(x->a, true), e;

	if (r)
		return r;
	snprintf(x->run_id, sizeof(x->run_id), "%s", id);
	r = x->fmt == FMT_OCSF ? ocsf_run(x) : jsonl_run(x);
	e = audit_rows_snapshot(x->a, false);
	return r ? r : e;
}

/* Resolves every RUN argument before anything is written. */
static int resolve_runs(struct audit *a, const char *path,
			const struct export_opts *o,
			char (*ids)[AUDIT_RUN_ID_LEN + 1])
{
	for (int i = 0; i < o->nruns; i++)
		if (view_find_run(a, path, o->runs[i], ids[i]) < 0)
			return -ENOENT;
	return 0;
}

static int export_all(struct export_ctx *x, const struct export_opts *o)
{
	long long after = 0;
	char id[AUDIT_RUN_ID_LEN + 1] = "", next[AUDIT_RUN_ID_LEN + 1];
	long long since = o->has_since ? o->since_ns : LLONG_MIN;
	int r;

	for (;;) {
		r = audit_next_run(x->a, since, &after, id, next);
		if (r == -ENOENT)
			return 0;
		if (r)
			return r;
		memcpy(id, next, sizeof(id));
		if ((r = export_run(x, id)) != 0)
			return r;
	}
}

/* Opens -o FILE; *created says whether it did not exist before. */
static FILE *open_output(const char *path, bool *created)
{
	struct stat st;
	int fd;
	FILE *f;

	*created = stat(path, &st) != 0;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		warn("export: cannot write %s: %s (choose another -o)", path,
		     strerror(errno));
		return NULL;
	}
	f = fdopen(fd, "w");
	if (!f) {
		warn("export: %s: %s", path, strerror(errno));
		close(fd);
		if (*created)
			unlink(path);
	}
	return f;
}

int ward_cmd_export(int argc, char **argv)
{
	struct export_opts o;
	struct export_ctx x = { 0 };
	char path[4096];
	char(*ids)[AUDIT_RUN_ID_LEN + 1] = NULL;
	bool created = false;
	int r = parse_args(argc, argv, &o);

	if (r)
		return r > 0 ? 0 : WARD_EXIT_INTERNAL;
	x.a = view_open_db(o.db, path, sizeof(path));
	if (!x.a)
		return WARD_EXIT_INTERNAL;
	x.fmt = o.fmt;
	if (o.nruns) {
		ids = calloc((size_t)o.nruns, sizeof(*ids));
		r = ids ? resolve_runs(x.a, path, &o, ids) : -ENOMEM;
		if (r)
			goto out;
	}
	x.f = o.out ? open_output(o.out, &created) : stdout;
	if (!x.f) {
		r = -EIO;
		goto out;
	}
	setvbuf(x.f, NULL, _IOFBF, 1 << 16);
	if (o.nruns)
		for (int i = 0; i < o.nruns && !r; i++)
			r = export_run(&x, ids[i]);
	else
		r = export_all(&x, &o);
	if (fflush(x.f) != 0 && !x.werr)
		x.werr = errno ? errno : EIO;
	if (x.werr)
		warn("export: writing %s: %s", o.out ? o.out : "stdout",
		     strerror(x.werr));
	else if (r)
		warn("export: reading %s: %s", path,
		     r == -ENOMEM ? "out of memory" : audit_errmsg(x.a));
	if (!r && x.werr)
		r = -x.werr;
	if (o.out && fclose(x.f) != 0 && !r) {
		warn("export: writing %s: %s", o.out, strerror(errno));
		r = -EIO;
	}
	if (r && o.out && created)
		unlink(o.out);
	if (!r && x.skipped_forks)
		fprintf(stderr,
			"ward: export: %lld allowed clone/fork/vfork events "
			"left out of OCSF (the Launch of each new process "
			"stands for them; see docs/export.md)\n",
			x.skipped_forks);
out:
	free(x.buf);
	free(ids);
	audit_close(x.a);
	return r ? WARD_EXIT_INTERNAL : 0;
}
