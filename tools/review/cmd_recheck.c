/*
 * cmd_recheck.c - `ward recheck`: judge recorded decisions again under
 * another policy, without running anything.
 *
 * Each events row is rebuilt into the event the policy judged
 * (policy/event-json.c) and passed to policy_check() of the other policy,
 * compiled once, with $WORKDIR bound to the run's recorded workdir. Rows
 * are streamed through one prepared statement (audit/scan.c); per run only
 * the groups of changes are kept.
 */
#include "tools/cmds.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit/audit.h"
#include "common/errnames.h"
#include "common/log.h"
#include "policy/event-json.h"
#include "policy/policy.h"
#include "tools/review/phases.h"
#include "tools/review/view.h"

#define EXAMPLES 3

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ward recheck (RUN... | --all | --since TIME)\n"
		"                    (--policy FILE | --profile NAME) [--db PATH]\n"
		"                    [--json] [--fail-on-change]\n"
		"\n"
		"Judge the decisions recorded for runs again under another policy, without\n"
		"running anything, and print what would change: allowed -> denied,\n"
		"denied -> allowed, another errno, a kill. Changes are grouped by run, then\n"
		"by the rule that decided and the rule that would decide, with counts and\n"
		"examples; a summary line ends the output.\n"
		"\n"
		"runs:\n"
		"  RUN...            run ids, unique prefixes, or `last`\n"
		"  --all             every run in the database\n"
		"  --since TIME      runs started at or after TIME: " VIEW_TIME_FORMS
		"\n"
		"policy:\n"
		"  --policy FILE     a policy file (docs/policy.md)\n"
		"  --profile NAME    a shipped profile (`ward profiles`)\n"
		"options:\n"
		"  --db PATH         audit database (default: $WARD_DB, else\n"
		"                    $XDG_STATE_HOME/ward/audit.db, else\n"
		"                    ~/.local/state/ward/audit.db); opened read-only\n"
		"  --json            one JSON object: {policy, runs: [{id, workdir,\n"
		"                    events, rechecked, kept, cannot, changed, changes:\n"
		"                    [{from, to, from_rule, to_rule, from_errno, to_errno,\n"
		"                    count, examples: [{seq, syscall, target}]}],\n"
		"                    cannot_recheck: [{seq, syscall, why}]}], summary}\n"
		"  --fail-on-change  exit 1 if any event would change or could not be\n"
		"                    re-checked (for CI when a team tightens its policy)\n"
		"  --workdir-as-recorded  bind $WORKDIR to each run's recorded workdir\n"
		"                    (the default; accepted for scripts that spell it out)\n"
		"  -h, --help        this text\n"
		"\n"
		"What can and cannot be re-checked:\n"
		"  - Only recorded syscalls: those the recording policy's filter trapped.\n"
		"    Calls the kernel filter let through were never recorded: the stat\n"
		"    family unless the recording policy had \"trap_stat\", reads and writes\n"
		"    on open fds, memory mappings. A stricter policy about those cannot be\n"
		"    judged from the record.\n"
		"  - Runs recorded in audit mode (profile `audit`) hold their would-be\n"
		"    denials as allows with would_deny: they were allowed, and are\n"
		"    compared as allowed.\n"
		"  - Decisions of ward's floor and of the supervisor itself (rules\n"
		"    clone.flags, proc.mem, floor.*, copy, decode, limits.procs,\n"
		"    limits.events, invalid-event) do not depend on the policy: they are\n"
		"    kept, counted as `kept`, never re-judged.\n"
		"  - A row that does not carry what the policy reads (recorded by a ward\n"
		"    before recheck existed, or with cut arguments) is reported as `cannot\n"
		"    re-check` with the reason, never counted as unchanged.\n"
		"  - What happened after a decision is not replayed: a call that would now\n"
		"    be denied may have led to calls that would then never happen.\n"
		"\n"
		"exit status: 0; 1 with --fail-on-change when something would change or\n"
		"could not be re-checked; 125 for ward's own errors (bad arguments, an\n"
		"unknown run, a policy with errors, a missing or foreign database).\n");
}

struct opts {
	const char *db, *policy_file, *profile, *since;
	bool all, json, fail_on_change;
	char **runs;
	int nruns;
};

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "policy", required_argument, NULL, 'p' },
		{ "profile", required_argument, NULL, 'P' },
		{ "since", required_argument, NULL, 's' },
		{ "all", no_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ "fail-on-change", no_argument, NULL, 'f' },
		{ "workdir-as-recorded", no_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, sel;

	*o = (struct opts){ 0 };
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': o->db = optarg; break;
		case 'p': o->policy_file = optarg; break;
		case 'P': o->profile = optarg; break;
		case 's': o->since = optarg; break;
		case 'a': o->all = true; break;
		case 'j': o->json = true; break;
		case 'f': o->fail_on_change = true; break;
		case 'w': break;
		case 'h': usage(stdout); return 1;
		case ':':
			warn("recheck: %s needs a value (see ward recheck "
			     "--help)",
			     argv[optind - 1]);
			return -1;
		default:
			warn("recheck: unknown option '%s' (see ward recheck "
			     "--help)",
			     argv[optind - 1]);
			return -1;
		}
	}
	o->runs = argv + optind;
	o->nruns = argc - optind;
	sel = (o->nruns > 0) + o->all + (o->since != NULL);
	if (sel != 1) {
		warn("recheck: name the runs: RUN..., --all or --since TIME, "
		     "exactly one of them (see ward recheck --help)");
		return -1;
	}
	if (!o->policy_file == !o->profile) {
		warn("recheck: give the policy to check against: --policy FILE "
		     "or --profile NAME, one of them");
		return -1;
	}
	return 0;
}

static struct policy *load_policy(const struct opts *o)
{
	struct policy_error err;
	struct policy *p = NULL;
	char msg[1024];
	int rc;

	memset(&err, 0, sizeof(err));
	rc = o->policy_file ? policy_load_file(o->policy_file, &p, &err)
			    : policy_load_profile(o->profile, &p, &err);
	if (rc == 0)
		return p;
	policy_error_format(&err, msg, sizeof(msg));
	if (rc == -ENOENT && o->profile) {
		fprintf(stderr,
			"ward: recheck: no profile named '%s'; shipped "
			"profiles:",
			o->profile);
		for (const char *const *n = policy_profile_names(); *n; n++)
			fprintf(stderr, " %s", *n);
		fprintf(stderr, "\n");
	} else {
		warn("recheck: %s", msg);
	}
	return NULL;
}

/* ---- the runs to check ---- */

struct run_ref {
	char id[AUDIT_RUN_ID_LEN + 1];
	char *workdir; /* NULL when not recorded */
	char *policy_name;
};

struct run_list {
	struct run_ref *v;
	size_t n, cap;
};

static int add_run(struct run_list *l, const char *id, const char *workdir,
		   const char *policy_name)
{
	struct run_ref *r;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct run_ref *nv = realloc(l->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		l->v = nv;
		l->cap = cap;
	}
	r = &l->v[l->n];
	snprintf(r->id, sizeof(r->id), "%s", id);
	r->workdir = workdir ? strdup(workdir) : NULL;
	r->policy_name = strdup(policy_name ? policy_name : "-");
	if ((workdir && !r->workdir) || !r->policy_name) {
		free(r->workdir);
		free(r->policy_name);
		return -ENOMEM;
	}
	l->n++;
	return 0;
}

static void free_runs(struct run_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].workdir);
		free(l->v[i].policy_name);
	}
	free(l->v);
}

static int brief_cb(const struct audit_run_brief *b, void *arg)
{
	return add_run(arg, b->id, b->workdir, b->policy_name);
}

static int full_cb(const struct audit_run *r, void *arg)
{
	return add_run(arg, r->id, r->workdir, r->policy_name);
}

/* 0, or -1 with the message printed. */
static int select_runs(struct audit *a, const struct opts *o, const char *path,
		       struct run_list *l)
{
	long long since = 0;
	int rc;

	if (o->nruns == 0) {
		if (o->since) {
			struct timespec now;

			clock_gettime(CLOCK_REALTIME, &now);
			if (view_parse_time(o->since,
					    now.tv_sec * 1000000000LL +
						    now.tv_nsec,
					    &since) < 0) {
				warn("recheck: --since: '%s' is not a time; "
				     "use " VIEW_TIME_FORMS,
				     o->since);
				return -1;
			}
		}
		rc = audit_runs_brief_each(a, since, brief_cb, l);
		if (rc) {
			warn("recheck: reading %s: %s", path,
			     rc == -ENOMEM ? "out of memory" : audit_errmsg(a));
			return -1;
		}
		return 0;
	}
	for (int i = 0; i < o->nruns; i++) {
		char id[AUDIT_RUN_ID_LEN + 1];

		if (view_find_run(a, path, o->runs[i], id) < 0)
			return -1;
		rc = audit_run_read(a, id, full_cb, l);
		if (rc) {
			warn("recheck: reading %s: %s", path,
			     rc == -ENOMEM ? "out of memory" : audit_errmsg(a));
			return -1;
		}
	}
	return 0;
}

/* ---- judging ---- */

enum outcome { OUT_ALLOW, OUT_DENY, OUT_KILL, OUT_NONE };

static const char *const outcome_word[] = { "allowed", "denied", "killed" };

struct example {
	long long seq;
	char *syscall, *target, *why;
	bool has_result; /* what the kernel returned, when recorded */
	long long result;
};

struct group {
	enum outcome from, to;
	int from_err, to_err;
	char *from_rule, *to_rule;
	long long count;
	struct example ex[EXAMPLES];
	int nex;
};

struct run_state {
	const struct run_ref *run;
	struct group *g;
	size_t ng, gcap;
	struct example cannot[EXAMPLES];
	int ncannot_ex;
	long long events, rechecked, kept, cannot_n, changed;
	int err; /* -ENOMEM */
};

struct recheck {
	struct policy *pol;
	/* the run's phases: its setup's events are judged by the policy's
	 * setup phase, when it has one */
	struct run_phases phases;
	const struct opts *o;
	struct ward_event ev; /* large: reused */
	struct run_state rs;
	long long runs, runs_changed, events, kept, cannot, changed;
	long long tightened, loosened, other;
	bool first_json;
};

static void free_example(struct example *e)
{
	free(e->syscall);
	free(e->target);
	free(e->why);
}

static void reset_run(struct run_state *rs)
{
	for (size_t i = 0; i < rs->ng; i++) {
		free(rs->g[i].from_rule);
		free(rs->g[i].to_rule);
		for (int k = 0; k < rs->g[i].nex; k++)
			free_example(&rs->g[i].ex[k]);
	}
	for (int k = 0; k < rs->ncannot_ex; k++)
		free_example(&rs->cannot[k]);
	free(rs->g);
	memset(rs, 0, sizeof(*rs));
}

static char *dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

static int set_example(struct example *x, const struct audit_event_row *row,
		       const char *why)
{
	x->seq = row->seq;
	x->has_result = row->e.has_result;
	x->result = row->e.result;
	x->syscall = dup_or_empty(row->e.syscall);
	x->target = dup_or_empty(row->e.target);
	x->why = why ? strdup(why) : NULL;
	if (!x->syscall || !x->target || (why && !x->why)) {
		free_example(x);
		return -ENOMEM;
	}
	return 0;
}

static enum outcome recorded_outcome(const char *decision)
{
	if (!decision)
		return OUT_NONE;
	if (!strcmp(decision, "allow"))
		return OUT_ALLOW;
	if (!strcmp(decision, "deny"))
		return OUT_DENY;
	if (!strcmp(decision, "kill"))
		return OUT_KILL;
	return OUT_NONE;
}

static struct group *find_group(struct run_state *rs, enum outcome from,
				enum outcome to, int from_err, int to_err,
				const char *from_rule, const char *to_rule)
{
	struct group *g;

	for (size_t i = 0; i < rs->ng; i++) {
		g = &rs->g[i];
		if (g->from == from && g->to == to && g->from_err == from_err &&
		    g->to_err == to_err && !strcmp(g->from_rule, from_rule) &&
		    !strcmp(g->to_rule, to_rule))
			return g;
	}
	if (rs->ng == rs->gcap) {
		size_t cap = rs->gcap ? rs->gcap * 2 : 8;
		struct group *nv = realloc(rs->g, cap * sizeof(*nv));

		if (!nv)
			return NULL;
		rs->g = nv;
		rs->gcap = cap;
	}
	g = &rs->g[rs->ng];
	memset(g, 0, sizeof(*g));
	g->from = from;
	g->to = to;
	g->from_err = from_err;
	g->to_err = to_err;
	g->from_rule = strdup(from_rule);
	g->to_rule = strdup(to_rule);
	if (!g->from_rule || !g->to_rule) {
		free(g->from_rule);
		free(g->to_rule);
		return NULL;
	}
	rs->ng++;
	return g;
}

static int note_cannot(struct run_state *rs, const struct audit_event_row *row,
		       const char *why)
{
	rs->cannot_n++;
	if (rs->ncannot_ex < EXAMPLES) {
		if (set_example(&rs->cannot[rs->ncannot_ex], row, why) < 0)
			return -ENOMEM;
		rs->ncannot_ex++;
	}
	return 0;
}

static int judge_row(const struct audit_event_row *row, void *arg)
{
	struct recheck *rc = arg;
	struct run_state *rs = &rc->rs;
	const struct audit_event *e = &row->e;
	struct policy_row pr = {
		.syscall = e->syscall,
		.nr = e->nr,
		.pid = e->pid,
		.tid = e->tid,
		.args_json = e->args_json,
		.raw = e->raw,
		.target = e->target,
	};
	struct policy_verdict v;
	enum outcome from = recorded_outcome(e->decision), to;
	int from_err, to_err;
	char why[160];
	struct group *g;

	rs->events++;
	if (policy_rule_is_floor(e->rule)) {
		rs->kept++;
		return 0;
	}
	if (from == OUT_NONE)
		return note_cannot(rs, row, "unknown recorded decision");
	if (!rs->run->workdir)
		return note_cannot(rs, row, "the run has no recorded workdir");
	/* judged by the policy of the phase the row was made in */
	const char *phase = run_phase_of(&rc->phases, e->proc_serial, e->ts_ns);
	const struct policy *pol = phase && !strcmp(phase, "setup") &&
						   policy_phase(rc->pol, phase)
					   ? policy_phase(rc->pol, phase)
					   : rc->pol;
	if (!strcmp(e->syscall, "proxy")) {
		/* ward's egress proxy: decided by name, then address */
		if (e->rule && (!strcmp(e->rule, "net.proxy-sni") ||
				!strcmp(e->rule, "net.proxy-request") ||
				!strcmp(e->rule, "net.proxy-origin")))
			return note_cannot(rs, row,
					   "decided on the connection's bytes, "
					   "not by the policy");
		if (policy_proxy_from_row(pol, &pr, &v, why, sizeof(why)) < 0)
			return note_cannot(rs, row, why);
	} else if (policy_event_from_row(&pr, &rc->ev, why, sizeof(why)) < 0) {
		return note_cannot(rs, row, why);
	} else {
		policy_check(pol, &rc->ev, &v);
	}
	rs->rechecked++;
	to = v.action == POLICY_ALLOW  ? OUT_ALLOW
	     : v.action == POLICY_DENY || v.action == POLICY_ASK
		     ? OUT_DENY /* an ask nobody answers */
		     : OUT_KILL;
	from_err = from == OUT_DENY ? e->err : 0;
	to_err = to == OUT_DENY ? v.err : 0;
	if (from == to && from_err == to_err)
		return 0;
	g = find_group(rs, from, to, from_err, to_err, e->rule ? e->rule : "-",
		       v.rule);
	if (!g)
		return -ENOMEM;
	g->count++;
	rs->changed++;
	if (to == OUT_ALLOW)
		rc->loosened++;
	else if (from == OUT_ALLOW)
		rc->tightened++;
	else
		rc->other++;
	if (g->nex < EXAMPLES) {
		if (set_example(&g->ex[g->nex], row, NULL) < 0)
			return -ENOMEM;
		g->nex++;
	}
	return 0;
}

/* ---- output ---- */

static void print_outcome(enum outcome o, int err)
{
	fputs(outcome_word[o], stdout);
	if (o == OUT_DENY && err)
		printf(" (%s)", ward_errno_name(err));
}

static void print_example(const struct example *x)
{
	printf("      #%lld %s ", x->seq, x->syscall);
	view_str(stdout, x->target[0] ? x->target : "-");
	if (x->has_result) {
		char rt[32];
		printf(" (returned %s)",
		       ward_result_text(x->result, rt, sizeof(rt)));
	}
	if (x->why) {
		fputs(": ", stdout);
		view_str(stdout, x->why);
	}
	fputc('\n', stdout);
}

static void print_run_text(const struct run_state *rs)
{
	const struct run_ref *r = rs->run;

	if (!rs->changed && !rs->cannot_n)
		return;
	printf("run %s (recorded under %s, workdir ", r->id, r->policy_name);
	view_str(stdout, r->workdir);
	printf("): %lld events, %lld would change", rs->events, rs->changed);
	if (rs->cannot_n)
		printf(", %lld cannot be re-checked", rs->cannot_n);
	printf("\n");
	for (size_t i = 0; i < rs->ng; i++) {
		const struct group *g = &rs->g[i];

		fputs("  ", stdout);
		print_outcome(g->from, g->from_err);
		fputs(" -> ", stdout);
		print_outcome(g->to, g->to_err);
		fputs(": rule ", stdout);
		view_str(stdout, g->from_rule);
		fputs(" -> ", stdout);
		view_str(stdout, g->to_rule);
		printf(": %lld event%s\n", g->count, g->count == 1 ? "" : "s");
		for (int k = 0; k < g->nex; k++)
			print_example(&g->ex[k]);
	}
	if (rs->cannot_n) {
		printf("  cannot re-check: %lld event%s\n", rs->cannot_n,
		       rs->cannot_n == 1 ? "" : "s");
		for (int k = 0; k < rs->ncannot_ex; k++)
			print_example(&rs->cannot[k]);
	}
}

static json_t *examples_json(const struct example *x, int n)
{
	json_t *arr = json_array();

	for (int k = 0; arr && k < n; k++) {
		json_t *o = json_pack("{s:I, s:s, s:s}", "seq",
				      (json_int_t)x[k].seq, "syscall",
				      x[k].syscall, "target", x[k].target);

		if (o && x[k].why)
			json_object_set_new(o, "why", json_string(x[k].why));
		if (o)
			json_object_set_new(o, "result",
					    x[k].has_result
						    ? json_integer(x[k].result)
						    : json_null());
		json_array_append_new(arr, o);
	}
	return arr;
}

static int print_run_json(struct recheck *rc)
{
	const struct run_state *rs = &rc->rs;
	json_t *o = json_object(), *changes = json_array();
	int r = 0;

	if (!o || !changes) {
		json_decref(o);
		json_decref(changes);
		return -ENOMEM;
	}
	json_object_set_new(o, "id", json_string(rs->run->id));
	json_object_set_new(o, "policy_name",
			    json_string(rs->run->policy_name));
	json_object_set_new(o, "workdir", view_json_str(rs->run->workdir));
	json_object_set_new(o, "events", json_integer(rs->events));
	json_object_set_new(o, "rechecked", json_integer(rs->rechecked));
	json_object_set_new(o, "kept", json_integer(rs->kept));
	json_object_set_new(o, "cannot", json_integer(rs->cannot_n));
	json_object_set_new(o, "changed", json_integer(rs->changed));
	for (size_t i = 0; i < rs->ng; i++) {
		const struct group *g = &rs->g[i];
		json_t *c = json_pack("{s:s, s:s, s:s, s:s, s:I}", "from",
				      outcome_word[g->from], "to",
				      outcome_word[g->to], "from_rule",
				      g->from_rule, "to_rule", g->to_rule,
				      "count", (json_int_t)g->count);

		if (!c) {
			r = -ENOMEM;
			break;
		}
		json_object_set_new(
			c, "from_errno",
			g->from_err ? json_string(ward_errno_name(g->from_err))
				    : json_null());
		json_object_set_new(
			c, "to_errno",
			g->to_err ? json_string(ward_errno_name(g->to_err))
				  : json_null());
		json_object_set_new(c, "examples",
				    examples_json(g->ex, g->nex));
		json_array_append_new(changes, c);
	}
	json_object_set_new(o, "changes", changes);
	json_object_set_new(o, "cannot_recheck",
			    examples_json(rs->cannot, rs->ncannot_ex));
	if (!r) {
		fputs(rc->first_json ? "\n" : ",\n", stdout);
		rc->first_json = false;
		if (json_dumpf(o, stdout, JSON_COMPACT) < 0)
			r = -EIO;
	}
	json_decref(o);
	return r;
}

static void print_summary(const struct recheck *rc)
{
	const char *what = rc->o->policy_file ? rc->o->policy_file
					      : rc->o->profile;

	if (rc->o->json) {
		json_t *s = json_pack(
			"{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "runs",
			(json_int_t)rc->runs, "runs_changed",
			(json_int_t)rc->runs_changed, "events",
			(json_int_t)rc->events, "changed",
			(json_int_t)rc->changed, "allowed_to_denied",
			(json_int_t)rc->tightened, "denied_to_allowed",
			(json_int_t)rc->loosened, "other",
			(json_int_t)rc->other, "kept", (json_int_t)rc->kept,
			"cannot", (json_int_t)rc->cannot);

		printf("%s],\"summary\":", rc->first_json ? "" : "\n");
		json_dumpf(s, stdout, JSON_COMPACT);
		printf("}\n");
		json_decref(s);
		return;
	}
	printf("recheck against %s %s: %lld run%s, %lld events: %lld would "
	       "change in %lld run%s (%lld allowed -> denied or killed, %lld "
	       "to allowed, %lld errno or kill), %lld kept (ward's floor), "
	       "%lld cannot be re-checked\n",
	       rc->o->policy_file ? "policy" : "profile", what, rc->runs,
	       rc->runs == 1 ? "" : "s", rc->events, rc->changed,
	       rc->runs_changed, rc->runs_changed == 1 ? "" : "s",
	       rc->tightened, rc->loosened, rc->other, rc->kept, rc->cannot);
}

static int recheck_runs(struct audit *a, struct recheck *rc, struct run_list *l,
			const char *path)
{
	struct audit_scan *scan;
	int r = audit_scan_open(a, &scan);

	if (r) {
		warn("recheck: reading %s: %s", path, audit_errmsg(a));
		return r;
	}
	if (rc->o->json) {
		json_t *name = json_string(policy_name(rc->pol));
		char *pn = name ? json_dumps(name, JSON_ENCODE_ANY) : NULL;

		printf("{\"policy\":%s,\"runs\":[", pn ? pn : "null");
		free(pn);
		json_decref(name);
		rc->first_json = true;
	}
	for (size_t i = 0; i < l->n && !r; i++) {
		const struct run_ref *run = &l->v[i];

		reset_run(&rc->rs);
		rc->rs.run = run;
		if (run->workdir &&
		    policy_set_workdir(rc->pol, run->workdir) < 0) {
			/* not absolute: judge nothing rather than guess */
			free(l->v[i].workdir);
			l->v[i].workdir = NULL;
		}
		run_phases_free(&rc->phases);
		r = run_phases_load(a, run->id, &rc->phases);
		if (!r)
			r = audit_scan_run(scan, run->id, judge_row, rc);
		if (r) {
			warn("recheck: reading run %s in %s: %s", run->id, path,
			     r == -ENOMEM ? "out of memory" : audit_errmsg(a));
			break;
		}
		rc->runs++;
		rc->events += rc->rs.events;
		rc->kept += rc->rs.kept;
		rc->cannot += rc->rs.cannot_n;
		rc->changed += rc->rs.changed;
		rc->runs_changed += rc->rs.changed > 0;
		if (rc->o->json)
			r = print_run_json(rc);
		else
			print_run_text(&rc->rs);
	}
	reset_run(&rc->rs);
	run_phases_free(&rc->phases);
	audit_scan_close(scan);
	if (!r)
		print_summary(rc);
	return r;
}

int ward_cmd_recheck(int argc, char **argv)
{
	struct run_list runs = { 0 };
	struct recheck *rc = NULL;
	struct audit *a = NULL;
	struct opts o;
	char path[4096];
	int r = parse_args(argc, argv, &o), status = WARD_EXIT_INTERNAL;

	if (r)
		return r > 0 ? 0 : WARD_EXIT_INTERNAL;
	rc = calloc(1, sizeof(*rc));
	if (!rc) {
		warn("recheck: out of memory");
		return WARD_EXIT_INTERNAL;
	}
	rc->o = &o;
	rc->pol = load_policy(&o);
	if (!rc->pol)
		goto out;
	a = view_open_db(o.db, path, sizeof(path));
	if (!a)
		goto out;
	if (select_runs(a, &o, path, &runs) < 0)
		goto out;
	if (recheck_runs(a, rc, &runs, path))
		goto out;
	if (fflush(stdout) != 0) {
		warn("recheck: writing the output failed");
		goto out;
	}
	status = o.fail_on_change && (rc->changed || rc->cannot) ? 1 : 0;
out:
	free_runs(&runs);
	audit_close(a);
	policy_free(rc->pol);
	free(rc);
	return status;
}
