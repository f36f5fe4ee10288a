/*
 * cmd_runs.c - `ward runs`: the recorded runs, most recent first.
 */
#include "tools/cmds.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit/audit.h"
#include "common/log.h"
#include "tools/review/view.h"

#define DEFAULT_LIMIT 20
#define CODE_COLUMN   60 /* bytes of code shown */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ward runs [--db PATH] [--limit N] [--json] [--status S[,S]]\n"
		"                 [--denied] [--since TIME] [--until TIME] [--lang L[,L]]\n"
		"\n"
		"List the runs recorded in the audit database, most recently started first.\n"
		"\n"
		"options:\n"
		"  --db PATH       audit database (default: $WARD_DB, else\n"
		"                  $XDG_STATE_HOME/ward/audit.db, else\n"
		"                  ~/.local/state/ward/audit.db); opened read-only\n"
		"  -n, --limit N   at most N runs (default %d; 0 means all)\n"
		"  --json          print a JSON array with one object per run instead\n"
		"  --status S[,S]  only runs with one of these statuses (below); repeatable\n"
		"  --denied        only runs with at least one syscall denied or killed\n"
		"  --since TIME    only runs started at or after TIME\n"
		"  --until TIME    only runs started at or before TIME\n"
		"  --lang L[,L]    only runs in one of these languages (python, node, sh)\n"
		"\n"
		"Filters combine (all must hold) and go with --limit (the N most recent\n"
		"runs that match) and --json; they are done by the database, fast on a\n"
		"large one. TIME is an ISO 8601 date and time in local time\n"
		"(2026-12-02T10:00, 2026-12-02 10:00:05, or with a zone: 2026-12-02T10:00Z,\n"
		"2026-12-02T10:00+01:00), a date (2026-12-02: its midnight, local time),\n"
		"`now`, or a time ago: a count and s, m, h, d or w (45s, 30m, 1h, 2d, 1w).\n"
		"Example: ward runs --since 1d --status error,killed --denied\n"
		"  -h, --help      this text\n"
		"\n"
		"columns:\n"
		"  ID       the run id; `ward show` takes it, any unique prefix, or `last`\n"
		"  STARTED  when the run started, local time\n"
		"  STATUS   running, died (the record says running but its ward is\n"
		"           gone: killed or crashed), ok (exit 0), error (exit\n"
		"           status not 0), timeout, killed (by a signal or the policy),\n"
		"           limit (a resource limit), aborted (ward gave up, or died: the\n"
		"           next `ward run` on this host marks a dead ward's run aborted)\n"
		"  EXIT     the code's exit status, or the signal that ended it (SIGKILL)\n"
		"  TIME     wall-clock duration\n"
		"  LANG     python, node or sh\n"
		"  DENIED   syscalls denied or killed by the policy\n"
		"  CODE     the script's file name, or the first line of code given with\n"
		"           -c or on stdin (non-printable characters escaped)\n"
		"\n"
		"JSON fields: id, started_ns, ended_ns, duration_ms (null while running),\n"
		"status, cause, exit_code, signal, language, interpreter, code_name,\n"
		"code_sha256, code_bytes, code_first_line, policy_name, events, denials,\n"
		"processes. Times are nanoseconds since the epoch.\n"
		"\n"
		"exit status: 0 (also when no run matches), or 125 (bad arguments, an\n"
		"unknown status or language, a TIME that cannot be read, missing or\n"
		"unusable database).\n",
		DEFAULT_LIMIT);
}

#define MAX_NAMES 16 /* --status, --lang values */

struct runs_opts {
	const char *db;
	int limit;
	bool json;
	struct audit_run_filter f;
	const char *status[MAX_NAMES], *lang[MAX_NAMES]; /* in argv */
};

static const char *const statuses[] = { "running", "ok",     "error",
					"timeout", "killed", "limit",
					"aborted", NULL };
static const char *const languages[] = { "python", "node", "sh", NULL };

static bool known(const char *const *names, const char *s)
{
	for (; *names; names++)
		if (!strcmp(*names, s))
			return true;
	return false;
}

/* The comma-separated names in arg (cut in place) added to list: 0, or -1
 * with a message. */
static int add_names(const char *opt, char *arg, const char *const *valid,
		     const char **list, size_t *n, const char *what)
{
	char *save = NULL;

	for (char *s = strtok_r(arg, ",", &save); s;
	     s = strtok_r(NULL, ",", &save)) {
		if (!known(valid, s)) {
			char all[128] = "";

			for (size_t i = 0; valid[i]; i++)
				snprintf(all + strlen(all),
					 sizeof(all) - strlen(all), "%s%s",
					 i ? ", " : "", valid[i]);
			warn("runs: %s: '%s' is not a %s; give one of: %s", opt,
			     s, what, all);
			return -1;
		}
		if (*n >= MAX_NAMES) {
			warn("runs: %s: too many values", opt);
			return -1;
		}
		list[(*n)++] = s;
	}
	if (!*n) {
		warn("runs: %s needs a %s", opt, what);
		return -1;
	}
	return 0;
}

static int parse_when(const char *opt, const char *arg, long long *ns)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	if (!view_parse_time(arg, now.tv_sec * 1000000000LL + now.tv_nsec, ns))
		return 0;
	warn("runs: %s: cannot read '%s' as a time; give %s", opt, arg,
	     VIEW_TIME_FORMS);
	return -1;
}

/* 0, 1 (--help printed) or -1 (error printed). */
static int parse_args(int argc, char **argv, struct runs_opts *o)
{
	enum { O_STATUS = 256, O_DENIED, O_SINCE, O_UNTIL, O_LANG };
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "limit", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "status", required_argument, NULL, O_STATUS },
		{ "denied", no_argument, NULL, O_DENIED },
		{ "since", required_argument, NULL, O_SINCE },
		{ "until", required_argument, NULL, O_UNTIL },
		{ "lang", required_argument, NULL, O_LANG },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	*o = (struct runs_opts){ .limit = DEFAULT_LIMIT };
	o->f.statuses = o->status;
	o->f.languages = o->lang;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":n:h", opts, NULL)) != -1) {
		char *end;
		long v;

		switch (c) {
		case 'd': o->db = optarg; break;
		case 'j': o->json = true; break;
		case 'h': usage(stdout); return 1;
		case O_DENIED: o->f.denied = true; break;
		case O_STATUS:
			if (add_names("--status", optarg, statuses, o->status,
				      &o->f.n_statuses, "status"))
				return -1;
			break;
		case O_LANG:
			if (add_names("--lang", optarg, languages, o->lang,
				      &o->f.n_languages, "language"))
				return -1;
			break;
		case O_SINCE:
			if (parse_when("--since", optarg, &o->f.since_ns))
				return -1;
			o->f.has_since = true;
			break;
		case O_UNTIL:
			if (parse_when("--until", optarg, &o->f.until_ns))
				return -1;
			o->f.has_until = true;
			break;
		case 'n':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 0 ||
			    v > INT_MAX) {
				warn("runs: --limit: '%s' is not a count",
				     optarg);
				return -1;
			}
			o->limit = (int)v;
			break;
		case ':':
			warn("runs: %s needs a value (see ward runs --help)",
			     argv[optind - 1]);
			return -1;
		default:
			warn("runs: unknown option '%s' (see ward runs --help)",
			     argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		warn("runs: unexpected argument '%s' (see ward runs --help)",
		     argv[optind]);
		return -1;
	}
	if (o->f.has_since && o->f.has_until && o->f.since_ns > o->f.until_ns) {
		warn("runs: --since is after --until: no run can match");
		return -1;
	}
	return 0;
}

/* Code given inline (-c, stdin) is shown by its first line. */
static bool inline_code(const struct audit_run *r)
{
	return !r->code_name || !strcmp(r->code_name, "-c") ||
	       !strcmp(r->code_name, "-");
}

/* Length of the first line of the code, at most max bytes, never cutting
 * a UTF-8 sequence; *more says whether anything was left out. */
static size_t first_line(const struct audit_run *r, size_t max, bool *more)
{
	const char *c = r->code;
	const char *nl = c ? memchr(c, '\n', r->code_len) : NULL;
	size_t n = nl ? (size_t)(nl - c) : r->code_len;

	*more = n < r->code_total && !(n + 1 == r->code_total && nl);
	if (n > max) {
		n = max;
		while (n > 0 && ((unsigned char)c[n] & 0xc0) == 0x80)
			n--;
		*more = true;
	}
	return n;
}

static int print_row(const struct audit_run *r, void *arg)
{
	char start[32], dur[32], ex[32], den[24];
	bool more;
	size_t n;

	(void)arg;
	view_time(start, sizeof(start), r->started_ns, false);
	view_duration(dur, sizeof(dur), r->duration_ms);
	view_exit(ex, sizeof(ex), r->has_exit, r->exit_code, r->signal);
	snprintf(den, sizeof(den), r->denials < 0 ? "-" : "%lld", r->denials);
	printf("%-16s  %-19s  %-8s %7s %7s  %-7s %6s  ", r->id, start,
	       view_run_status(r) != r->status ? "died"
	       : r->status		       ? r->status
					       : "?",
	       ex, dur, r->language ? r->language : "-", den);
	if (!inline_code(r)) {
		view_str(stdout, r->code_name);
	} else {
		n = first_line(r, CODE_COLUMN, &more);
		view_text(stdout, r->code, n, VIEW_RAW_BSLASH);
		if (more)
			fputs(" ...", stdout);
	}
	fputc('\n', stdout);
	return 0;
}

static json_t *nullable_int(long long v)
{
	return v < 0 ? json_null() : json_integer(v);
}

static int append_json(const struct audit_run *r, void *arg)
{
	json_t *o = json_object();
	bool more, exact;
	size_t n = first_line(r, AUDIT_LIST_CODE_MAX, &more);

	json_object_set_new(o, "id", json_string(r->id));
	json_object_set_new(o, "started_ns", json_integer(r->started_ns));
	json_object_set_new(o, "ended_ns", nullable_int(r->ended_ns));
	json_object_set_new(o, "duration_ms", nullable_int(r->duration_ms));
	json_object_set_new(o, "status", view_json_str(r->status));
	json_object_set_new(o, "ward_died",
			    json_boolean(view_run_status(r) != r->status));
	json_object_set_new(o, "cause", view_json_str(r->cause));
	json_object_set_new(o, "exit_code",
			    r->has_exit ? json_integer(r->exit_code)
					: json_null());
	json_object_set_new(o, "signal",
			    r->has_exit ? json_integer(r->signal)
					: json_null());
	json_object_set_new(o, "language", view_json_str(r->language));
	json_object_set_new(o, "interpreter", view_json_str(r->interpreter));
	json_object_set_new(o, "code_name", view_json_str(r->code_name));
	json_object_set_new(o, "code_sha256", view_json_str(r->code_sha256));
	json_object_set_new(o, "code_bytes",
			    json_integer((json_int_t)r->code_total));
	json_object_set_new(o, "code_first_line",
			    view_json_text(r->code ? r->code : "", n, &exact));
	json_object_set_new(o, "policy_name", view_json_str(r->policy_name));
	json_object_set_new(o, "events", nullable_int(r->events));
	json_object_set_new(o, "denials", nullable_int(r->denials));
	json_object_set_new(o, "processes", nullable_int(r->processes));
	return json_array_append_new(arg, o) ? -ENOMEM : 0;
}

static int print_json(struct audit *a, const struct runs_opts *o)
{
	json_t *arr = json_array();
	int r = arr ? audit_runs_filter_each(a, &o->f, o->limit, append_json,
					     arr)
		    : -ENOMEM;

	if (!r && json_dumpf(arr, stdout, 0) == 0)
		fputc('\n', stdout);
	json_decref(arr);
	return r;
}

int ward_cmd_runs(int argc, char **argv)
{
	struct runs_opts o;
	char path[4096];
	struct audit *a;
	int r = parse_args(argc, argv, &o);

	if (r)
		return r > 0 ? 0 : WARD_EXIT_INTERNAL;
	a = view_open_db(o.db, path, sizeof(path));
	if (!a)
		return WARD_EXIT_INTERNAL;
	if (o.json) {
		r = print_json(a, &o);
	} else {
		printf("%-16s  %-19s  %-8s %7s %7s  %-7s %6s  %s\n", "ID",
		       "STARTED", "STATUS", "EXIT", "TIME", "LANG", "DENIED",
		       "CODE");
		r = audit_runs_filter_each(a, &o.f, o.limit, print_row, NULL);
	}
	if (r)
		warn("runs: reading %s: %s", path, audit_errmsg(a));
	audit_close(a);
	if (fflush(stdout) != 0)
		r = -EIO;
	return r ? WARD_EXIT_INTERNAL : 0;
}
