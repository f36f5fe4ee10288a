/*
 * cmd_learn.c - `ward learn`: the least-privilege policy that would have
 * allowed what audit-mode runs did (policy/learn.c does the generalizing).
 *
 * Every recorded event of the runs is rebuilt (policy/event-json.c) and
 * learned; the policy written is then loaded and every event judged again
 * under it: a learned policy that would deny any of them is never written.
 */
#include "cmds.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../audit/audit.h"
#include "../common/log.h"
#include "../policy/event-json.h"
#include "../policy/learn.h"
#include "../policy/policy.h"
#include "view.h"

#define DEFAULT_THRESHOLD 8

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ward learn RUN... [-o FILE] [--db PATH] [--threshold N]\n"
		"                  [--name NAME]\n"
		"\n"
		"Write the least-privilege policy (docs/policy.md) that would have allowed\n"
		"exactly what the runs did. The runs must have been recorded in audit mode\n"
		"(`ward run --profile audit`, or any policy with \"mode\": \"audit\"): nothing\n"
		"was denied, so the record shows everything the code needed.\n"
		"\n"
		"  RUN...            run ids, unique prefixes, or `last`\n"
		"  -o, --output FILE write the policy there (default: standard output)\n"
		"  --db PATH         audit database (default: $WARD_DB, else\n"
		"                    $XDG_STATE_HOME/ward/audit.db, else\n"
		"                    ~/.local/state/ward/audit.db); opened read-only\n"
		"  --threshold N     fold files into their directory once more than N\n"
		"                    of them directly under it were touched (default %d)\n"
		"  --name NAME       the policy's name (default: learned)\n"
		"  -h, --help        this text\n"
		"\n"
		"How it generalizes:\n"
		"  - paths in a run's workdir become $WORKDIR/...; /proc/PID of the\n"
		"    process itself becomes /proc/self\n"
		"  - names made at random, which every run makes anew: all under\n"
		"    $WORKDIR/tmp (the code's TMPDIR) become one rule on $WORKDIR/tmp;\n"
		"    a name the code created elsewhere that looks like Python's\n"
		"    tempfile's (tmp and 8 of [a-z0-9_], or 8 such that mix letters and\n"
		"    digits), with what is below it, one rule on the directory it was\n"
		"    created in; each with the access seen\n"
		"  - read, stat and exec inside the interpreter's own trees (for\n"
		"    python3.11: /usr/lib/python3.11, /usr/lib/python3,\n"
		"    /usr/local/lib/python3.11, ...) become one rule per tree\n"
		"  - more than N files directly under one directory become one rule on\n"
		"    the directory with the union of their access, repeated upwards, never\n"
		"    onto / or a top-level directory, nor above $WORKDIR\n"
		"  - programs run: exact paths in exec.allow; peers: exact address and\n"
		"    port (unix sockets: exact path or abstract name); socket families\n"
		"    seen; signals to processes outside the run make \"signals\": \"any\"\n"
		"  - every rule has a \"why\": the runs, the number of events and an\n"
		"    example\n"
		"  - a path whose every event failed with ENOENT (a probe for what was\n"
		"    not there, e.g. Python searching sys.path) is allowed exactly, so\n"
		"    that the code gets its ENOENT again, and never folded or counted;\n"
		"    this needs the kernel's result in the record (events.result), and\n"
		"    is used when the database has it\n"
		"ward's floors (clone flags, /proc/PID/mem, the argument floor, device\n"
		"nodes) hold under any policy and are not learned. The policy is\n"
		"checked before it is written: loaded, and every recorded event judged\n"
		"again under it.\n"
		"\n"
		"Only syscalls the recording policy trapped are in the record: the stat\n"
		"family only with \"trap_stat\", so the learned policy does not trap it.\n"
		"A run recorded in enforce mode is refused: its denials changed what the\n"
		"code did next, so the record does not show what it needs.\n"
		"\n"
		"exit status: 0; 125 for ward's own errors (bad arguments, an unknown run,\n"
		"a run not recorded in audit mode, rows recorded without what the policy\n"
		"reads, a missing or foreign database, an output that cannot be written).\n",
		DEFAULT_THRESHOLD);
}

struct opts {
	const char *db, *out, *name;
	unsigned threshold;
	char **runs;
	int nruns;
};

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "threshold", required_argument, NULL, 't' },
		{ "name", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	*o = (struct opts){ .threshold = DEFAULT_THRESHOLD, .name = "learned" };
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
		char *end;
		long v;

		switch (c) {
		case 'd': o->db = optarg; break;
		case 'o': o->out = optarg; break;
		case 'n': o->name = optarg; break;
		case 'h': usage(stdout); return 1;
		case 't':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 1 ||
			    v > 1000000) {
				warn("learn: --threshold: '%s' is not a count "
				     "from 1 to 1000000",
				     optarg);
				return -1;
			}
			o->threshold = (unsigned)v;
			break;
		case ':':
			warn("learn: %s needs a value (see ward learn --help)",
			     argv[optind - 1]);
			return -1;
		default:
			warn("learn: unknown option '%s' (see ward learn --help)",
			     argv[optind - 1]);
			return -1;
		}
	}
	o->runs = argv + optind;
	o->nruns = argc - optind;
	if (o->nruns < 1) {
		warn("learn: name the runs to learn from (see ward learn "
		     "--help)");
		return -1;
	}
	return 0;
}

struct run_info {
	char id[AUDIT_RUN_ID_LEN + 1];
	char *workdir, *language, *interpreter, *policy_name;
	bool audit_mode;
};

static int info_cb(const struct audit_run *r, void *arg)
{
	struct run_info *ri = arg;
	json_t *pol = r->policy_json ? json_loads(r->policy_json, 0, NULL)
				     : NULL;
	json_t *mode = json_object_get(pol, "mode");

	ri->audit_mode = json_is_string(mode) &&
			 !strcmp(json_string_value(mode), "audit");
	json_decref(pol);
	ri->workdir = r->workdir ? strdup(r->workdir) : NULL;
	ri->language = strdup(r->language ? r->language : "python");
	ri->interpreter = r->interpreter ? strdup(r->interpreter) : NULL;
	ri->policy_name = strdup(r->policy_name ? r->policy_name : "-");
	return ri->language && ri->policy_name ? 0 : -ENOMEM;
}

static void free_infos(struct run_info *v, int n)
{
	for (int i = 0; v && i < n; i++) {
		free(v[i].workdir);
		free(v[i].language);
		free(v[i].interpreter);
		free(v[i].policy_name);
	}
	free(v);
}

/* 0, or -1 with the message printed. */
static int read_runs(struct audit *a, const struct opts *o, const char *path,
		     struct run_info *v)
{
	for (int i = 0; i < o->nruns; i++) {
		int rc;

		if (view_find_run(a, path, o->runs[i], v[i].id) < 0)
			return -1;
		rc = audit_run_read(a, v[i].id, info_cb, &v[i]);
		if (rc) {
			warn("learn: reading %s: %s", path,
			     rc == -ENOMEM ? "out of memory" : audit_errmsg(a));
			return -1;
		}
		if (!v[i].audit_mode) {
			warn("learn: run %s was recorded under policy '%s' in "
			     "enforce mode: its denials changed what the code "
			     "did next, so the record does not show what it "
			     "needs. Record it again in audit mode: ward run "
			     "--profile audit ...",
			     v[i].id, v[i].policy_name);
			return -1;
		}
		if (!v[i].workdir || v[i].workdir[0] != '/') {
			warn("learn: run %s has no recorded workdir", v[i].id);
			return -1;
		}
	}
	return 0;
}

/* State of one pass over the rows of one run. */
struct pass {
	struct learn *l;	    /* learning, or */
	const struct policy *check; /* checking the result */
	const struct run_info *run;
	struct ward_event ev;
	long long bad;	 /* rows that could not be rebuilt / are denied */
	char first[512]; /* the first of them, in words */
};

static int row_cb(const struct audit_event_row *row, void *arg)
{
	struct pass *ps = arg;
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
	struct learn_src src = {
		.run_id = ps->run->id,
		.seq = row->seq,
		.syscall = e->syscall ? e->syscall : "?",
		.target = e->target,
		.would_deny = e->would_deny && e->rule ? e->rule : NULL,
		.has_result = row->has_result,
		.result = row->result,
	};
	struct policy_verdict v;
	char why[160];

	if (policy_rule_is_floor(e->rule))
		return 0; /* ward's floor: the same under any policy */
	if (policy_event_from_row(&pr, &ps->ev, why, sizeof(why)) < 0) {
		if (!ps->bad++)
			snprintf(ps->first, sizeof(ps->first),
				 "run %s #%lld %s %s: %s", ps->run->id,
				 row->seq, src.syscall,
				 e->target ? e->target : "-", why);
		return 0;
	}
	if (ps->l)
		return learn_event(ps->l, &ps->ev, ps->run->workdir, &src);
	policy_check(ps->check, &ps->ev, &v);
	if (v.action != POLICY_ALLOW && !ps->bad++)
		snprintf(ps->first, sizeof(ps->first),
			 "run %s #%lld %s %s: %s (rule %s)", ps->run->id,
			 row->seq, src.syscall, e->target ? e->target : "-",
			 v.reason, v.rule);
	return 0;
}

static int each_run(struct audit *a, struct audit_scan *scan,
		    struct run_info *runs, int n, struct pass *ps,
		    struct policy *check)
{
	for (int i = 0; i < n; i++) {
		int rc;

		ps->run = &runs[i];
		if (check && policy_set_workdir(check, runs[i].workdir) < 0)
			return -ENOMEM;
		rc = audit_scan_run(scan, runs[i].id, row_cb, ps);
		if (rc) {
			warn("learn: reading run %s: %s", runs[i].id,
			     rc == -ENOMEM ? "out of memory" : audit_errmsg(a));
			return rc;
		}
	}
	return 0;
}

static char *describe(const struct opts *o, const struct run_info *runs,
		      long long events)
{
	size_t n = 200;
	char *s, *p;

	for (int i = 0; i < o->nruns; i++)
		n += strlen(runs[i].id) + 2;
	if (!(s = malloc(n)))
		return NULL;
	p = s + sprintf(s, "Learned by ward learn from %d audit-mode run%s (",
			o->nruns, o->nruns == 1 ? "" : "s");
	for (int i = 0; i < o->nruns; i++)
		p += sprintf(p, "%s%s", i ? ", " : "", runs[i].id);
	sprintf(p, "), %lld events; files folded into their directory past %u.",
		events, o->threshold);
	return s;
}

static int write_out(const char *out, const char *text)
{
	char tmp[PATH_MAX];
	FILE *f;

	if (!out) {
		fputs(text, stdout);
		return fflush(stdout) ? -1 : 0;
	}
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", out, (int)getpid()) >=
	    (int)sizeof(tmp)) {
		warn("learn: -o %s: path too long", out);
		return -1;
	}
	f = fopen(tmp, "we");
	if (!f) {
		warn_errno("learn: -o %s: cannot create %s", out, tmp);
		return -1;
	}
	fputs(text, f);
	if (fclose(f) != 0 || rename(tmp, out) != 0) {
		warn_errno("learn: -o %s: cannot write it", out);
		unlink(tmp);
		return -1;
	}
	return 0;
}

int ward_cmd_learn(int argc, char **argv)
{
	struct run_info *runs = NULL;
	struct audit_scan *scan = NULL;
	struct policy *learned = NULL;
	struct policy_error perr;
	struct pass *ps = NULL;
	struct audit *a = NULL;
	char *text = NULL, *desc = NULL;
	char path[4096], msg[1024];
	struct opts o;
	size_t flagged = 0;
	int rc = parse_args(argc, argv, &o), status = WARD_EXIT_INTERNAL;

	if (rc)
		return rc > 0 ? 0 : WARD_EXIT_INTERNAL;
	runs = calloc((size_t)o.nruns, sizeof(*runs));
	ps = calloc(1, sizeof(*ps));
	if (!runs || !ps || learn_new(o.threshold, &ps->l) < 0) {
		warn("learn: out of memory");
		goto out;
	}
	a = view_open_db(o.db, path, sizeof(path));
	if (!a || read_runs(a, &o, path, runs) < 0)
		goto out;
	if (audit_scan_open(a, &scan)) {
		warn("learn: reading %s: %s", path, audit_errmsg(a));
		goto out;
	}
	for (int i = 0; i < o.nruns; i++)
		if (runs[i].interpreter &&
		    learn_interpreter(ps->l, runs[i].language,
				      runs[i].interpreter) < 0)
			goto oom;
	if (each_run(a, scan, runs, o.nruns, ps, NULL))
		goto out;
	if (ps->bad) {
		warn("learn: %lld recorded event%s cannot be learned from, "
		     "e.g. %s; record the code again with this ward (ward run "
		     "--profile audit)",
		     ps->bad, ps->bad == 1 ? "" : "s", ps->first);
		goto out;
	}
	desc = describe(&o, runs, learn_count(ps->l));
	if (!desc || learn_policy_text(ps->l, o.name, desc, &text) < 0)
		goto oom;
	/* The check: the policy loads, and allows every recorded event. */
	rc = policy_load_string(text, "learned policy", &learned, &perr);
	if (rc < 0) {
		policy_error_format(&perr, msg, sizeof(msg));
		warn("learn: the learned policy does not load (a bug in ward "
		     "learn): %s",
		     msg);
		goto out;
	}
	flagged = learn_flagged(ps->l);
	learn_free(ps->l);
	ps->l = NULL;
	ps->check = learned;
	if (each_run(a, scan, runs, o.nruns, ps, learned))
		goto out;
	if (ps->bad) {
		warn("learn: the learned policy would deny %lld recorded "
		     "event%s (a bug in ward learn), e.g. %s",
		     ps->bad, ps->bad == 1 ? "" : "s", ps->first);
		goto out;
	}
	if (write_out(o.out, text) < 0)
		goto out;
	if (o.out)
		fprintf(stderr, "ward: learned policy written to %s\n", o.out);
	if (flagged)
		fprintf(stderr,
			"ward: review %zu rule%s: %s what the recording policy "
			"would have denied (their \"why\" starts REVIEW after "
			"the example)\n",
			flagged, flagged == 1 ? "" : "s",
			flagged == 1 ? "it allows" : "they allow");
	status = 0;
	goto out;
oom:
	warn("learn: out of memory");
out:
	audit_scan_close(scan);
	audit_close(a);
	policy_free(learned);
	if (ps)
		learn_free(ps->l);
	free(ps);
	free(text);
	free(desc);
	free_infos(runs, o.nruns);
	return status;
}
