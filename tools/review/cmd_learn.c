/*
 * cmd_learn.c - `ward learn`: the least-privilege policy that would have
 * allowed what audit-mode runs did (policy/learn.c does the generalizing).
 *
 * Every recorded event of the runs is rebuilt (policy/event-json.c) and
 * learned; the policy written is then loaded and every event judged again
 * under it: a learned policy that would deny any of them is never written.
 * Then the self-check: each run whose code and inputs are in the record is
 * run again under the written policy (ward rerun, recorded as a new run),
 * and its denials are reported; they make the exit status 1.
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
#include <sys/wait.h>
#include <unistd.h>

#include "audit/audit.h"
#include "common/errnames.h"
#include "common/log.h"
#include "policy/event-json.h"
#include "policy/learn.h"
#include "policy/policy.h"
#include "tools/review/view.h"

#define DEFAULT_THRESHOLD 8

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ward learn RUN... [-o FILE] [--db PATH] [--threshold N]\n"
		"                  [--name NAME] [--no-rerun-check]\n"
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
		"                    ~/.local/state/ward/audit.db); read, and the\n"
		"                    self-check's re-runs are recorded in it\n"
		"  --threshold N     fold files into their directory once more than N\n"
		"                    of them directly under it were touched (default %d)\n"
		"  --name NAME       the policy's name (default: learned)\n"
		"  --no-rerun-check  skip the self-check's re-runs (below): only judge\n"
		"                    the recorded events again\n"
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
		"  - a run with a setup (ward run --setup under a policy with a setup\n"
		"    phase in audit mode): the files, programs and peers of the\n"
		"    setup's processes are learned apart, as \"phases\": {\"setup\"};\n"
		"    the code gets none of them unless it used them too\n"
		"ward's floors (clone flags, /proc/PID/mem, the argument floor, device\n"
		"nodes) hold under any policy and are not learned.\n"
		"\n"
		"The self-check. Before the policy is written, it is loaded and every\n"
		"recorded event judged again under it (a policy that would deny one is\n"
		"a bug in ward learn and is not written). After it is written, each run\n"
		"whose code and inputs are in the record is run again under it, as\n"
		"`ward rerun RUN --policy POLICY` does: the same code, arguments, input\n"
		"files, --env variables and limits, in a fresh workdir, recorded as a\n"
		"new run in the database (its argv says --rerun-of RUN). One line per\n"
		"run on stderr says how many of its calls the learned policy denied\n"
		"(denials of ward's floor, the same under any policy, are counted\n"
		"apart) and names the first few. A denial means the code did something\n"
		"this time that the recorded runs did not show (another random name,\n"
		"another branch, a file the learned policy's view hides): record more\n"
		"runs and learn from all of them, or add the rule. Runs that cannot be\n"
		"re-run (a session, an input whose bytes were not kept, an --env NAME\n"
		"not set here) are said to be checked by their recorded events only.\n"
		"\n"
		"Only syscalls the recording policy trapped are in the record: the stat\n"
		"family only with \"trap_stat\", so the learned policy does not trap it.\n"
		"A run recorded in enforce mode is refused: its denials changed what the\n"
		"code did next, so the record does not show what it needs.\n"
		"\n"
		"exit status: 0 the policy is written and no re-run had a denial; 1 it is\n"
		"written, and a re-run under it had denials (listed); 125 for ward's own\n"
		"errors (bad arguments, an unknown run, a run not recorded in audit mode,\n"
		"rows recorded without what the policy reads, a missing or foreign\n"
		"database, an output that cannot be written, a re-run that could not be\n"
		"made: the policy is written then too).\n",
		DEFAULT_THRESHOLD);
}

struct opts {
	const char *db, *out, *name;
	unsigned threshold;
	bool rerun_check;
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
		{ "no-rerun-check", no_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	*o = (struct opts){ .threshold = DEFAULT_THRESHOLD,
			    .name = "learned",
			    .rerun_check = true };
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
		char *end;
		long v;

		switch (c) {
		case 'd': o->db = optarg; break;
		case 'o': o->out = optarg; break;
		case 'n': o->name = optarg; break;
		case 'R': o->rerun_check = false; break;
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
	char *workdir, *language, *interpreter, *policy_name, *code_name;
	bool audit_mode, has_exit;
	int exit_code, signal;
	char *no_rerun; /* why the record cannot re-run it, or NULL */
	bool dup;	/* named again: checked once */
	int setup_first, setup_last; /* its setup's serials (0, 0: none) */
};

static int phase_cb(const struct audit_phase *p, void *arg)
{
	struct run_info *ri = arg;

	if (!strcmp(p->name, "setup")) {
		ri->setup_first = p->first_serial;
		ri->setup_last = p->last_serial;
	}
	return 0;
}

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
	ri->code_name = strdup(r->code_name ? r->code_name : "-");
	ri->has_exit = r->has_exit;
	ri->exit_code = r->exit_code;
	ri->signal = r->signal;
	return ri->language && ri->policy_name && ri->code_name ? 0 : -ENOMEM;
}

static void free_infos(struct run_info *v, int n)
{
	for (int i = 0; v && i < n; i++) {
		free(v[i].workdir);
		free(v[i].language);
		free(v[i].interpreter);
		free(v[i].policy_name);
		free(v[i].code_name);
		free(v[i].no_rerun);
	}
	free(v);
}

/* ---- can the record re-run it? (as ward rerun would: cmd_rerun.c) ---- */

static int count_cb(const struct audit_cell *c, void *arg)
{
	(void)c;
	(*(long long *)arg)++;
	return 0;
}

static int input_cb(const struct audit_input *in, void *arg)
{
	char **why = arg;

	if (in->data || *why)
		return 0;
	if (asprintf(why,
		     "its input '%s' (%lld bytes) was not kept in the record",
		     in->name ? in->name : "?", in->size) < 0) {
		*why = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* A variable the run took from ward's environment (recorded by name
 * only): ward rerun passes it from its own, so it must be set here. */
static int env_why(const char *envs, char **why)
{
	json_t *js = json_loads(envs ? envs : "[]", 0, NULL), *e;
	size_t i;
	int rc = 0;

	if (!json_is_array(js)) {
		json_decref(js);
		return asprintf(why, "its recorded environment is damaged") < 0
			       ? -ENOMEM
			       : 0;
	}
	json_array_foreach(js, i, e)
	{
		const char *name =
			json_string_value(json_object_get(e, "name"));

		if (json_object_get(e, "value") || !name || getenv(name))
			continue;
		if (asprintf(why,
			     "it was given $%s from ward's environment (the "
			     "value is not recorded) and $%s is not set here",
			     name, name) < 0)
			rc = -ENOMEM;
		break;
	}
	json_decref(js);
	return rc;
}

/* Sets ri->no_rerun when the run's code and inputs are not all in the
 * record. 0, or -errno from the database. */
static int rerun_able(struct audit *a, struct run_info *ri)
{
	long long cells = 0;
	char *envs = NULL;
	int rc = 0;

	if (!strcmp(ri->code_name, "session") ||
	    ((rc = audit_cells_each(a, ri->id, count_cb, &cells)) == 0 &&
	     cells > 0))
		return asprintf(&ri->no_rerun,
				"it is a session of ward serve or ward mcp") < 0
			       ? -ENOMEM
			       : 0;
	if (rc)
		return rc;
	rc = audit_inputs_each(a, ri->id, input_cb, &ri->no_rerun);
	if (rc || ri->no_rerun)
		return rc;
	rc = audit_run_env(a, ri->id, &envs);
	if (!rc)
		rc = env_why(envs, &ri->no_rerun);
	free(envs);
	return rc;
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
		if (!rc)
			rc = audit_phases_each(a, v[i].id, phase_cb, &v[i]);
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
		for (int k = 0; k < i; k++)
			v[i].dup |= !strcmp(v[k].id, v[i].id);
		if (o->rerun_check && !v[i].dup &&
		    (rc = rerun_able(a, &v[i])) != 0) {
			warn("learn: reading %s: %s", path,
			     rc == -ENOMEM ? "out of memory" : audit_errmsg(a));
			return -1;
		}
	}
	return 0;
}

/* State of one pass over the rows of one run. */
struct pass {
	struct learn *l;		  /* learning, or */
	const struct policy *check;	  /* checking the result */
	const struct policy *check_setup; /* check's setup phase, or NULL */
	const struct run_info *run;
	struct ward_event ev;
	long long bad;	 /* rows that could not be rebuilt / are denied */
	char first[512]; /* the first of them, in words */
};

/*
 * The symlinks a name the code read by passes through as its last
 * component, one after the other, as they are on this host now
 * (/usr/lib/x86_64-linux-gnu/libblas.so.3 -> /etc/alternatives/... ->
 * the library): each is learned for reading too, so that the run's file
 * tree shows it (tracer/view.c makes the links a shown path passes
 * through) and the same name reaches the same file when the code runs
 * under the learned policy. Rules match resolved paths: they grant nothing
 * more. Directories along the way are the view's (their links are made
 * for any shown path). At most 40 hops, as the kernel.
 */
static int learn_link_chain(struct pass *ps, struct learn *l,
			    const struct learn_src *src)
{
	const struct ward_event *ev = &ps->ev;
	char cur[PATH_MAX], full[PATH_MAX], dir[PATH_MAX], target[PATH_MAX];
	struct ward_event *link;
	int rc = 0;

	if (ev->cls != WARD_CLASS_FS || ev->raw[0] != '/' ||
	    !strcmp(ev->raw, ev->path) ||
	    !(ev->access & (WARD_FS_READ | WARD_FS_EXEC)) ||
	    !strncmp(ev->raw, "/proc/", 6) ||
	    (size_t)snprintf(cur, sizeof(cur), "%s", ev->raw) >= sizeof(cur))
		return 0;
	link = malloc(sizeof(*link));
	if (!link)
		return -ENOMEM;
	for (int hops = 0; !rc && hops < 40; hops++) {
		char *slash = strrchr(cur, '/'), *real;
		struct stat st;
		ssize_t n;

		if (!slash || !slash[1])
			break;
		*slash = '\0';
		real = realpath(cur[0] ? cur : "/", NULL);
		*slash = '/';
		if (!real)
			break;
		snprintf(dir, sizeof(dir), "%s", real);
		free(real);
		if ((size_t)snprintf(full, sizeof(full), "%s%s",
				     strcmp(dir, "/") ? dir : "",
				     slash) >= sizeof(full) ||
		    lstat(full, &st) < 0 || !S_ISLNK(st.st_mode))
			break;
		if (strcmp(full, ev->raw) && strcmp(full, ev->path)) {
			*link = *ev;
			snprintf(link->raw, sizeof(link->raw), "%s", full);
			snprintf(link->path, sizeof(link->path), "%s", full);
			link->access = WARD_FS_READ;
			link->has_path2 = false;
			rc = learn_event(l, link, ps->run->workdir, src);
		}
		n = readlink(full, target, sizeof(target) - 1);
		if (n <= 0)
			break;
		target[n] = '\0';
		if ((size_t)(target[0] == '/'
				     ? snprintf(cur, sizeof(cur), "%s", target)
				     : snprintf(cur, sizeof(cur), "%s/%s", dir,
						target)) >= sizeof(cur))
			break;
	}
	free(link);
	return rc;
}

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
		.has_result = row->e.has_result,
		.result = row->e.result,
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
	/* the setup's processes: its phase (what they may do more than the
	 * code; the policy-wide sections stay the main learner's) */
	bool setup = ps->run->setup_last &&
		     row->e.proc_serial >= ps->run->setup_first &&
		     row->e.proc_serial <= ps->run->setup_last;
	if (ps->l) {
		struct learn *l = ps->l;
		int rc = 0;

		if (setup && (ps->ev.cls == WARD_CLASS_FS ||
			      ps->ev.cls == WARD_CLASS_EXEC ||
			      ps->ev.cls == WARD_CLASS_NET))
			rc = learn_phase(ps->l, "setup", &l);
		if (!rc)
			rc = learn_event(l, &ps->ev, ps->run->workdir, &src);
		return rc ? rc : learn_link_chain(ps, l, &src);
	}
	policy_check(setup && ps->check_setup ? ps->check_setup : ps->check,
		     &ps->ev, &v);
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

/* ---- the self-check: the recorded code again, under the policy ---- */

/* A new private file holding text. 0, or -1 with the message printed. */
static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	size_t len = strlen(text), done = 0;

	if (fd < 0) {
		warn_errno("learn: self-check: cannot create %s", path);
		return -1;
	}
	while (done < len) {
		ssize_t w = write(fd, text + done, len - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	if (close(fd) < 0 || done < len) {
		warn("learn: self-check: cannot write %s", path);
		unlink(path);
		return -1;
	}
	return 0;
}

/*
 * Runs `ward rerun ID --policy FILE --db DB --json` (this binary: the code,
 * inputs, environment and limits of the record, in a fresh workdir,
 * recorded as a new run) and puts the new run's id in nid. Its messages
 * go to stderr. 0, or -1 with the message printed.
 */
static int rerun_child(const char *id, const char *policy, const char *db,
		       char nid[AUDIT_RUN_ID_LEN + 1])
{
	const char *argv[] = { "ward", "rerun", id,	  "--policy", policy,
			       "--db", db,	"--json", NULL };
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;
	char buf[65536], *out = NULL;
	size_t len = 0, n;
	int p[2], st, rc = -1;
	pid_t pid;
	FILE *f;

	if (pipe2(p, O_CLOEXEC) < 0) {
		warn_errno("learn: self-check: pipe");
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		warn_errno("learn: self-check: fork");
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (dup2(p[1], 1) < 0 || null < 0 || dup2(null, 0) < 0)
			_exit(WARD_EXIT_INTERNAL);
		execv("/proc/self/exe", (char *const *)argv);
		fprintf(stderr, "ward: cannot run ward rerun: %s\n",
			strerror(errno));
		_exit(WARD_EXIT_INTERNAL);
	}
	close(p[1]);
	/* ^C reaches the re-run, whose run ends and is recorded; this
	 * process stays to report and remove its files */
	sigaction(SIGINT, &ign, &old);
	f = fdopen(p[0], "r");
	while (f && (n = fread(buf, 1, sizeof(buf), f)) > 0) {
		char *no = realloc(out, len + n + 1);

		if (!no)
			break;
		out = no;
		memcpy(out + len, buf, n);
		len += n;
		out[len] = '\0';
	}
	if (f)
		fclose(f);
	else
		close(p[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	sigaction(SIGINT, &old, NULL);

	json_t *js = out ? json_loads(out, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
	const char *rid = json_string_value(json_object_get(js, "run"));

	if (rid && strlen(rid) == AUDIT_RUN_ID_LEN) {
		memcpy(nid, rid, AUDIT_RUN_ID_LEN + 1);
		rc = 0;
	} else {
		warn("learn: self-check: run %s could not be re-run (ward "
		     "rerun exited %d; its message is above); the learned "
		     "policy is written: run the code under it yourself, or "
		     "pass --no-rerun-check",
		     id, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
	json_decref(js);
	free(out);
	return rc;
}

/* The re-run's denials: those of the policy, and those of ward's floor
 * (the same under any policy; the recorded run met them too). */
struct rerun_denials {
	long long n, floor;
	char first[3][512];
};

static int denial_cb(const struct audit_event_row *row, void *arg)
{
	struct rerun_denials *d = arg;
	const struct audit_event *e = &row->e;

	if (e->decision && !strcmp(e->decision, "allow"))
		return 0; /* an audit-mode would-be denial: none here */
	if (policy_rule_is_floor(e->rule)) {
		d->floor++;
		return 0;
	}
	if (d->n < 3)
		snprintf(d->first[d->n], sizeof(d->first[0]),
			 "#%lld %s %s: rule %s%s%s", row->seq,
			 e->syscall ? e->syscall : "?",
			 e->target ? e->target : "-", e->rule ? e->rule : "?",
			 e->err ? " -> " : "",
			 e->err ? ward_errno_name(e->err) : "");
	d->n++;
	return 0;
}

static int rerun_read_cb(const struct audit_run *r, void *arg)
{
	struct run_info *ri = arg;

	ri->has_exit = r->has_exit;
	ri->exit_code = r->exit_code;
	ri->signal = r->signal;
	return 0;
}

/*
 * Re-runs each run the record can re-run under the policy text and
 * reports on stderr. 0 when no re-run had a denial of the policy, 1 when
 * one had, -1 when a re-run could not be made or read (printed).
 */
static int self_check(const char *db, const char *text,
		      const struct run_info *runs, int n)
{
	char dir[] = "/tmp/ward-learn-XXXXXX", file[sizeof(dir) + 16];
	char path[4096], nid[AUDIT_RUN_ID_LEN + 1], was[32], now[32];
	int status = 0;

	if (!mkdtemp(dir)) {
		warn_errno("learn: self-check: cannot create a directory in "
			   "/tmp");
		return -1;
	}
	snprintf(file, sizeof(file), "%s/learned.json", dir);
	if (write_file(file, text) < 0) {
		rmdir(dir);
		return -1;
	}
	for (int i = 0; i < n && status >= 0; i++) {
		struct rerun_denials d = { 0 };
		struct run_info got = { 0 };
		struct audit *a;
		int rc;

		if (runs[i].dup)
			continue;
		if (runs[i].no_rerun) {
			fprintf(stderr,
				"ward: self-check: run %s cannot be re-run "
				"from the record (%s): only its recorded "
				"events were judged again\n",
				runs[i].id, runs[i].no_rerun);
			continue;
		}
		if (rerun_child(runs[i].id, file, db, nid) < 0) {
			status = -1;
			break;
		}
		a = view_open_db(db, path, sizeof(path));
		if (!a) {
			status = -1;
			break;
		}
		rc = audit_run_read(a, nid, rerun_read_cb, &got);
		if (!rc)
			rc = audit_denials_each(a, nid, denial_cb, &d);
		if (rc) {
			warn("learn: self-check: reading run %s in %s: %s", nid,
			     path, audit_errmsg(a));
			audit_close(a);
			status = -1;
			break;
		}
		audit_close(a);
		view_exit(now, sizeof(now), got.has_exit, got.exit_code,
			  got.signal);
		view_exit(was, sizeof(was), runs[i].has_exit, runs[i].exit_code,
			  runs[i].signal);
		fprintf(stderr,
			"ward: self-check: re-ran run %s as %s under the "
			"learned policy: %lld denial%s",
			runs[i].id, nid, d.n, d.n == 1 ? "" : "s");
		if (d.floor)
			fprintf(stderr,
				" (and %lld by ward's floor, as under "
				"any policy)",
				d.floor);
		fprintf(stderr, ", exit %s%s%s\n", now,
			strcmp(now, was) ? ", recorded run: exit "
					 : " as recorded",
			strcmp(now, was) ? was : "");
		for (long long k = 0; k < d.n && k < 3; k++) {
			fputs("ward:   ", stderr);
			view_str(stderr, d.first[k]);
			fputc('\n', stderr);
		}
		if (d.n) {
			fprintf(stderr,
				"ward: the learned policy misses what the code "
				"did when run again (`ward show %s --denied` "
				"lists it): record more runs in audit mode and "
				"learn from all of them, or add the rules\n",
				nid);
			status = 1;
		}
	}
	unlink(file);
	rmdir(dir);
	return status;
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
	ps->check_setup = policy_phase(learned, "setup");
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
	if (o.rerun_check) {
		/* the re-runs write the database: this reader steps aside */
		audit_scan_close(scan);
		scan = NULL;
		audit_close(a);
		a = NULL;
		rc = self_check(path, text, runs, o.nruns);
		status = rc < 0 ? WARD_EXIT_INTERNAL : rc;
	}
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
