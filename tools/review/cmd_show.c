/*
 * cmd_show.c - `ward show RUN`: one run, its header and its timeline, as
 * text or as one JSON object.
 */
#include "tools/cmds.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit.h"
#include "common/errnames.h"
#include "common/json.h"
#include "common/log.h"
#include "tools/review/phases.h"
#include "tools/review/show-filter.h"
#include "tools/review/symbolize.h"
#include "tools/review/view.h"

static void usage(FILE *f)
{
	fputs("usage: ward show RUN [--db PATH] [--summary | --json] [--tree]\n"
	      "                     [--denied] [--syscall NAME[,NAME]]... [--path GLOB]...\n"
	      "                     [--pid N]... [--proc N]...\n"
	      "\n"
	      "Show one recorded run: RUN is its id, any unique prefix of the id, or\n"
	      "`last` (the most recently started run). `ward runs` lists the ids.\n"
	      "\n"
	      "options:\n"
	      "  --db PATH       audit database (default: $WARD_DB, else\n"
	      "                  $XDG_STATE_HOME/ward/audit.db, else\n"
	      "                  ~/.local/state/ward/audit.db); opened read-only\n"
	      "  --summary       a short audit summary instead (below)\n"
	      "  --json          print one JSON object instead (below)\n"
	      "  --denied        limit the timeline to syscalls denied or killed, and to\n"
	      "                  those audit mode would have denied\n"
	      "  --syscall NAME[,NAME]  limit the timeline to decisions on these syscalls\n"
	      "                  (e.g. openat, connect, execve); repeatable\n"
	      "  --path GLOB     limit it to decisions whose target (the resolved path or\n"
	      "                  address) or raw argument (as the code gave it) matches\n"
	      "                  GLOB (fnmatch: * and ? also match /, so '/etc/*' is all\n"
	      "                  of /etc; '*:443' any connect to port 443); repeatable\n"
	      "  --pid N         limit it to the process or thread whose kernel pid or\n"
	      "                  tid is N (a process's pid matches all its threads'\n"
	      "                  decisions); repeatable\n"
	      "  --proc N        limit it to the process of serial N ([N] in the\n"
	      "                  timeline; pids can be reused, serials not) and its\n"
	      "                  threads; repeatable\n"
	      "  --tree          the process tree instead of the header and timeline:\n"
	      "                  each process with its serial, argv, executable, pid,\n"
	      "                  exit status or signal and how many of its decisions\n"
	      "                  were recorded, denied and would have been denied (with\n"
	      "                  its threads'), its threads under it, then its child\n"
	      "                  processes; with --json, a JSON tree (below)\n"
	      "\n"
	      "Limits combine: a line is shown when it passes all of them, and one of\n"
	      "the values of each limit given several times. Output chunks pass no\n"
	      "limit; process starts, execs and exits pass only --pid and --proc. With\n"
	      "--json the same limits apply to \"events\", \"processes\" and\n"
	      "\"outputs\", and \"filter\" says which were given. With --tree they\n"
	      "limit what is counted (the tree itself stays whole).\n"
	      "  -h, --help      this text\n"
	      "\n"
	      "Text: a header (id, status, exit status or signal, cause, start and end\n"
	      "times, ward's argv, language and interpreter, workdir, uid, policy name\n"
	      "and sha256, limits, output sizes and whether they were truncated, counts,\n"
	      "host, the code's name, size and sha256, and the code itself), then the\n"
	      "timeline: every process start, exec and exit, every recorded syscall\n"
	      "decision and every chunk of output, in time order. Each line starts with\n"
	      "the seconds since the run started and [N], the serial of the process.\n"
	      "Pids are the kernel's (the host's). Where the run had its own pid\n"
	      "namespace, the first process's start (and its --tree line) adds `(ns\n"
	      "pid 2)`, what its getpid() returned; the record cannot say it for other\n"
	      "processes.\n"
	      "Denied and killed syscalls are marked `!!` with DENY or KILL, the errno the\n"
	      "code got, the rule and the reason, their arguments and, when recorded, a\n"
	      "backtrace; `?!` marks a call the policy would have denied (audit mode).\n"
	      "Backtrace frames read `#0  libc.so.6 __open64+0x51  (MODULE+OFFSET, ip\n"
	      "IP)`: the function is looked up when shown, in the ELF symbol table of\n"
	      "the module file as it is now (.symtab, else .dynsym: stripped files name\n"
	      "only their exported functions; `??` when none covers the frame). If the\n"
	      "file changed since the run (an upgrade), the names may be wrong; the\n"
	      "header says `backtrace (symbols from the files as they are now):`.\n"
	      "For a CPython interpreter (3.11, 3.13) the Python frames follow, under\n"
	      "`python (from untrusted memory):`, innermost first, as `#0  FUNCTION\n"
	      "FILE:LINE`: ward read them from the stopped interpreter's memory, which\n"
	      "the code controls, so they may be forged (docs/security.md).\n"
	      "Output lines are prefixed with their stream (stdout| or stderr|; cmd N\n"
	      "stdout| for the output of a session's command, cell N). Text\n"
	      "from the run is printed safely: control characters, invalid UTF-8 and\n"
	      "bidirectional overrides are escaped (\\n, \\xNN, \\u{202e}).\n"
	      "\n"
	      "The status line is the verdict: \"ok\" only for a run that ended ok with\n"
	      "no call denied, killed or (audit mode) that would have been denied;\n"
	      "\"ok with denials\" or \"ok with would-be denials\" when it ended ok\n"
	      "with some; else the status (error, killed, timeout, limit, aborted,\n"
	      "running); then how it ended and the counts, e.g. `ok with denials,\n"
	      "exit 0; 2 denied`.\n"
	      "\n"
	      "Summary (--summary): the run id, the verdict, cause, start time and\n"
	      "duration, the code and policy, and the database path; each denial\n"
	      "(time, [serial], syscall, target, errno, rule and reason); the processes\n"
	      "([serial], its parent, exit status or signal, argv shortened, the\n"
	      "executable, and how many threads it had); per syscall, how many calls\n"
	      "were allowed, denied, killed or would have been denied. Long lists are\n"
	      "cut, saying how many more there are.\n"
	      "\n"
	      "A run whose ward was killed or crashed shows as `running` until the next\n"
	      "`ward run` on this host finds its ward gone and marks it `aborted`.\n"
	      "\n"
	      "JSON: {\"run\": {...}, \"processes\": [...], \"events\": [...],\n"
	      "\"outputs\": [...]} with the columns of the database (docs/schema.md);\n"
	      "JSON columns (argv, args, limits, policy, backtrace, pyframes) are\n"
	      "embedded parsed; pyframes is {\"untrusted\": true, \"frames\": [{\"file\",\n"
	      "\"line\", \"function\"}, ...], \"truncated\"} or null.\n"
	      "Events carry errno (a number) and errno_name; backtrace frames gain\n"
	      "\"symbol\": \"name+0xNN\" when one is found (in the file as it is now, as\n"
	      "above). Bytes the code produced are given as UTF-8 text with invalid\n"
	      "sequences replaced by U+FFFD: outputs as \"text\" with \"bytes\" (the\n"
	      "exact length); when the text is not exactly the bytes, \"base64\" holds\n"
	      "them exactly. The code likewise: \"code\", \"code_bytes\" and, if\n"
	      "needed, \"code_base64\".\n"
	      "\n"
	      "Tree JSON (--tree --json): {\"run\": {...}, \"tree\": [NODE...]}, a NODE\n"
	      "being {serial, kind, pid, tgid, ppid, parent_serial, exe, argv, start_ns,\n"
	      "exit_code, signal, events, denied, would_deny, threads: [NODE...],\n"
	      "children: [NODE...]} (threads have no threads or children).\n"
	      "\n"
	      "exit status: 0, or 125 (bad arguments, missing or unusable database, no\n"
	      "such run, an ambiguous prefix).\n",
	      f);
}

struct show_opts {
	const char *db, *run;
	bool json, summary, tree;
	struct show_filter f; /* the limits (show-filter.h) */
};

/* "--NAME" of the long option whose value is c. */
static const char *opt_name(const struct option *opts, int c)
{
	static char buf[64];

	for (; opts->name; opts++)
		if (opts->val == c) {
			snprintf(buf, sizeof(buf), "--%s", opts->name);
			return buf;
		}
	return "?";
}

/* 0, 1 (--help printed) or -1 (error printed). o->f is allocated in every
 * case; the caller frees it. */
static int parse_args(int argc, char **argv, struct show_opts *o)
{
	enum {
		O_SUMMARY = 256,
		O_DENIED,
		O_SYSCALL,
		O_PATH,
		O_PID,
		O_PROC,
		O_TREE
	};
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "summary", no_argument, NULL, O_SUMMARY },
		{ "denied", no_argument, NULL, O_DENIED },
		{ "syscall", required_argument, NULL, O_SYSCALL },
		{ "path", required_argument, NULL, O_PATH },
		{ "pid", required_argument, NULL, O_PID },
		{ "proc", required_argument, NULL, O_PROC },
		{ "tree", no_argument, NULL, O_TREE },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	*o = (struct show_opts){ 0 };
	if (show_filter_init(&o->f, (size_t)argc)) {
		warn("show: out of memory");
		return -1;
	}
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': o->db = optarg; break;
		case 'j': o->json = true; break;
		case O_SUMMARY: o->summary = true; break;
		case O_DENIED: o->f.denied = true; break;
		case O_TREE: o->tree = true; break;
		case O_SYSCALL:
		case O_PATH:
		case O_PID:
		case O_PROC:
			if (show_filter_add(&o->f, opt_name(opts, c), optarg))
				return -1;
			break;
		case 'h': usage(stdout); return 1;
		case ':':
			warn("show: %s needs a value (see ward show --help)",
			     argv[optind - 1]);
			return -1;
		default:
			warn("show: unknown option '%s' (see ward show --help)",
			     argv[optind - 1]);
			return -1;
		}
	}
	if (o->json && o->summary) {
		warn("show: --json and --summary exclude each other");
		return -1;
	}
	if (o->summary && (o->tree || show_filter_active(&o->f))) {
		warn("show: --summary does not go with %s (it is a fixed "
		     "summary)",
		     o->tree ? "--tree"
			     : "--denied, --syscall, --path, --pid "
			       "or --proc");
		return -1;
	}
	if (optind >= argc) {
		warn("show: which run? Give an id, a unique prefix of one, or "
		     "`last` (see ward show --help)");
		return -1;
	}
	if (optind + 1 < argc) {
		warn("show: unexpected argument '%s' (see ward show --help)",
		     argv[optind + 1]);
		return -1;
	}
	o->run = argv[optind];
	return 0;
}

/* ------------------------------ header ------------------------------ */

static void field(const char *name)
{
	printf("%-10s", name);
}

/* How many calls of run id were denied, killed or would have been
 * denied (view_verdict), from the record's counts per syscall. */
static int count_decisions(const struct audit_syscall_count *c, void *arg)
{
	struct view_decisions *d = arg;

	d->denied += c->denied;
	d->killed += c->killed;
	d->would += c->would_deny;
	return 0;
}

static int read_decisions(struct audit *a, const char *id,
			  struct view_decisions *d)
{
	*d = (struct view_decisions){ 0 };
	return audit_syscall_counts_each(a, id, count_decisions, d);
}

/* The status line: the verdict (view_verdict: a run with denials is not
 * a plain ok), then the cause. */
static void print_status(const struct audit_run *r,
			 const struct view_decisions *d)
{
	char sig[32], ended[64], v[256];

	if (r->has_exit && r->signal > 0)
		snprintf(ended, sizeof(ended), "killed by %s",
			 view_signame(r->signal, sig, sizeof(sig)));
	else if (r->has_exit)
		snprintf(ended, sizeof(ended), "exit %d", r->exit_code);
	const char *st = view_run_status(r);

	view_verdict(v, sizeof(v), st, r->has_exit ? ended : NULL, d);
	field("status");
	view_str(stdout, v);
	if (st != r->status)
		printf(" (its ward, pid %lld, is gone: killed or crashed before "
		       "the run's end was recorded; the record holds what was "
		       "written until then, and the next `ward run` on this "
		       "database closes it as aborted)",
		       r->ward_pid);
	else if (r->status && !strcmp(r->status, "running"))
		fputs(" (no end recorded: still running, or ward died and no "
		      "`ward run` has closed it since)",
		      stdout);
	fputc('\n', stdout);
	if (r->cause) {
		field("cause");
		view_str(stdout, r->cause);
		fputc('\n', stdout);
	}
}

static void print_times(const struct audit_run *r)
{
	char t[64], d[32];

	view_time(t, sizeof(t), r->started_ns, true);
	field("started");
	printf("%s\n", t);
	if (r->ended_ns >= 0) {
		view_time(t, sizeof(t), r->ended_ns, true);
		view_duration(d, sizeof(d), r->duration_ms);
		field("ended");
		printf("%s (%s)\n", t, d);
	}
}

static void print_sized(const char *name, long long bytes, int truncated)
{
	if (bytes < 0)
		printf("%s -", name);
	else
		printf("%s %lld bytes%s", name, bytes,
		       truncated > 0 ? " (truncated: not all kept)" : "");
}

static void print_counts(const struct audit_run *r)
{
	field("output");
	print_sized("stdout", r->stdout_bytes, r->stdout_truncated);
	fputs(", ", stdout);
	print_sized("stderr", r->stderr_bytes, r->stderr_truncated);
	fputc('\n', stdout);
	if (r->events >= 0) {
		field("counts");
		printf("%lld processes, %lld events, %lld denied\n",
		       r->processes, r->events, r->denials);
	}
}

/* The code, each line prefixed with "  | ". */
static void print_code(const struct audit_run *r)
{
	const char *c = r->code, *end = c ? c + r->code_len : NULL;

	field("code");
	view_str(stdout, r->code_name);
	printf(", %zu bytes, sha256 ", r->code_total);
	view_str(stdout, r->code_sha256);
	fputc('\n', stdout);
	while (c && c < end) {
		const char *nl = memchr(c, '\n', (size_t)(end - c));
		size_t n = nl ? (size_t)(nl - c) : (size_t)(end - c);

		fputs("  | ", stdout);
		view_text(stdout, c, n, VIEW_CODE);
		fputc('\n', stdout);
		c += n + 1;
	}
}

static void line(const char *name, const char *a, const char *sep,
		 const char *b)
{
	field(name);
	view_str(stdout, a);
	if (b) {
		fputs(sep, stdout);
		view_str(stdout, b);
	}
	fputc('\n', stdout);
}

static void json_line(const char *name, const char *json)
{
	field(name);
	view_json(stdout, json);
	fputc('\n', stdout);
}

/* The run's containment layers (runs.layers), one line each:
 * "landlock on: ABI 7, ..." or "landlock OFF: why"; "-" when the run has
 * no record of them (before schema version 2). */
static void print_layers(const struct audit_run *r)
{
	json_t *arr = r->layers_json ? json_loads(r->layers_json, 0, NULL)
				     : NULL;
	size_t i;
	json_t *l;

	field("layers");
	if (!json_is_array(arr) || !json_array_size(arr)) {
		fputs(arr ? "(none)\n" : "-\n", stdout);
		json_decref(arr);
		return;
	}
	for (i = 0; i < json_array_size(arr); i++) {
		l = json_array_get(arr, i);
		if (i)
			field("");
		view_str(stdout, json_string_value(json_object_get(l, "name")));
		printf(" %s", json_is_true(json_object_get(l, "active"))
				      ? "on: "
				      : "OFF: ");
		view_str(stdout,
			 json_string_value(json_object_get(l, "detail")));
		fputc('\n', stdout);
	}
	json_decref(arr);
}

/*
 * The pid the run's first process (serial 1) has in the run's own pid
 * namespace (what its getpid() returns), or 0 when the record cannot say.
 * With the namespaces layer active, ward's init is pid 1 of a new pid
 * namespace and forks the code before anything else (tracer/ns.c), so the
 * code is pid 2, exactly. Later processes get the pids the kernel hands
 * out in an order the record does not keep: for them it cannot say.
 */
static int root_nspid(const struct audit_run *r)
{
	json_t *arr = r->layers_json ? json_loads(r->layers_json, 0, NULL)
				     : NULL;
	const char *name, *detail;
	int pid = 0;
	size_t i;
	json_t *l;

	json_array_foreach(arr, i, l)
	{
		name = json_string_value(json_object_get(l, "name"));
		detail = json_string_value(json_object_get(l, "detail"));
		if (name && !strcmp(name, "namespaces") &&
		    json_is_true(json_object_get(l, "active")) && detail &&
		    !strncmp(detail, "pid ", 4))
			pid = 2;
	}
	json_decref(arr);
	return pid;
}

struct show_cell {
	long long n, start, end;
	char *status, *code;
	size_t code_len;
	/* a pool's warm-up (ward serve --preload): when its session was
	 * handed out (0: never), else why it was not (NULL: not a warm-up) */
	bool warmup;
	long long handed_ns;
	char *unused;
	/* a phase of the run (ward run --setup): its name, its processes */
	const char *phase;
	int first, last;
};

struct show_ctx {
	long long t0;		   /* the run's start, for relative times */
	const struct show_opts *o; /* the timeline's limits */
	long long shown;	   /* timeline items printed */
	struct sym_cache *syms;	   /* backtrace symbols; NULL: none */
	/* a session's cells (ward serve), shown where they start and end */
	struct show_cell *cells;
	size_t n_cells, next_start, next_end;
	struct run_phases phases;  /* the run's phases (ward run --setup) */
	int root_nspid;		   /* root_nspid() */
	struct view_decisions dec; /* for the verdict */
};

static int print_header(const struct audit_run *r, void *arg)
{
	struct show_ctx *ctx = arg;
	char uid[32];

	ctx->t0 = r->started_ns;
	ctx->root_nspid = root_nspid(r);
	printf("%-10s%s\n", "run", r->id);
	print_status(r, &ctx->dec);
	print_times(r);
	json_line("argv", r->argv_json);
	line("language", r->language, ", ", r->interpreter);
	line("workdir", r->workdir, "", NULL);
	snprintf(uid, sizeof(uid), "%lld", r->uid);
	line("uid", r->uid >= 0 ? uid : NULL, "", NULL);
	line("policy", r->policy_name, ", sha256 ", r->policy_sha256);
	json_line("limits", r->limits_json);
	print_layers(r);
	print_counts(r);
	field("host");
	view_str(stdout, r->host);
	fputs(", kernel ", stdout);
	view_str(stdout, r->kernel);
	fputs(", ward ", stdout);
	view_str(stdout, r->ward_version);
	if (r->ward_pid > 0)
		printf(" (pid %lld)", r->ward_pid);
	fputc('\n', stdout);
	print_code(r);
	return 0;
}

/* ----------------------------- timeline ----------------------------- */

static void stamp(const struct show_ctx *ctx, long long ts, const char *mark,
		  int serial)
{
	printf("%+11.6f %2s ", (double)(ts - ctx->t0) / 1e9, mark);
	if (serial > 0)
		printf("[%d] ", serial);
	else
		fputs("[-] ", stdout);
}

#define INDENT "                   " /* under the text after the stamp */

static void print_proc(const struct show_ctx *ctx, const struct audit_item *it)
{
	const struct audit_proc_row *p = it->proc;
	char sig[32];

	stamp(ctx, it->ts_ns, "", p->p.serial);
	switch (it->kind) {
	case AUDIT_ITEM_START:
		printf("start  pid %d", (int)p->p.pid);
		if (p->p.serial == 1 && ctx->root_nspid)
			printf(" (ns pid %d)", ctx->root_nspid);
		printf(", %s", p->p.kind ? p->p.kind : "process");
		if (p->p.parent_serial > 0)
			printf(" of [%d]", p->p.parent_serial);
		printf(", ppid %d\n", (int)p->p.ppid);
		break;
	case AUDIT_ITEM_EXEC:
		fputs("exec   ", stdout);
		view_str(stdout, p->p.exe);
		fputc(' ', stdout);
		view_json(stdout, p->p.argv_json);
		fputc('\n', stdout);
		break;
	default:
		if (p->signal > 0)
			printf("exit   killed by %s\n",
			       view_signame(p->signal, sig, sizeof(sig)));
		else
			printf("exit   status %d\n", p->exit_code);
		break;
	}
}

static const char *frame_str(json_t *frame, const char *key)
{
	return json_string_value(json_object_get(frame, key));
}

/*
 * Frames as recorded by the tracer: objects with module, offset, ip and
 * perhaps a symbol, printed as "#0  libc.so.6 __open64+0x51  (path+off,
 * ip 0x...)" ("??" for no symbol); anything else is printed as JSON. A
 * frame with "stop" (the last) is followed by "(unwinding stopped: why)".
 * Symbols come from the module files as they are now (sym_backtrace_add).
 */
static void print_backtrace(const char *text, struct sym_cache *syms)
{
	json_t *bt = json_loads(text, 0, NULL);
	size_t i;
	json_t *f;

	if (!json_is_array(bt)) {
		printf(INDENT "backtrace:\n" INDENT "  ");
		view_str(stdout, text);
		fputc('\n', stdout);
		json_decref(bt);
		return;
	}
	if (sym_backtrace_add(syms, bt))
		printf(INDENT "backtrace (symbols from the files as they are "
			      "now):\n");
	else
		printf(INDENT "backtrace:\n");
	json_array_foreach(bt, i, f)
	{
		const char *mod = frame_str(f, "module");
		const char *off = frame_str(f, "offset");
		const char *ip = frame_str(f, "ip");
		const char *sym = frame_str(f, "symbol");
		const char *base = mod ? strrchr(mod, '/') : NULL;
		char *raw = mod ? NULL : json_dumps(f, JSON_ENCODE_ANY);

		printf(INDENT "  #%-2zu ", i);
		if (mod) {
			view_str(stdout, base && base[1] ? base + 1 : mod);
			fputc(' ', stdout);
			view_str(stdout, sym ? sym : "??");
			fputs("  (", stdout);
			view_str(stdout, mod);
			fputc('+', stdout);
			view_str(stdout, off ? off : "?");
			if (ip) {
				fputs(", ip ", stdout);
				view_str(stdout, ip);
			}
			fputc(')', stdout);
		} else {
			view_str(stdout, raw);
		}
		fputc('\n', stdout);
		free(raw);
		/* where the walk ended early, and why (tracer/bt.c) */
		const char *stop = frame_str(f, "stop");
		if (stop) {
			printf(INDENT "  (unwinding stopped: ");
			view_str(stdout, stop);
			printf(")\n");
		}
	}
	json_decref(bt);
}

/*
 * The Python frames the tracer read from the code's own memory
 * (tracer/pyframe.c), innermost first, as "#0  leak  /path/x.py:5". The
 * code could have forged every byte of them: the heading says so.
 */
static void print_pyframes(const char *text)
{
	json_t *p = json_loads(text, 0, NULL);
	json_t *frames = json_object_get(p, "frames"), *f, *line;
	const char *why = json_string_value(json_object_get(p, "incomplete"));
	size_t i = 0;

	printf(INDENT "python (from untrusted memory):\n");
	if (!json_is_array(frames)) {
		printf(INDENT "  ");
		view_str(stdout, text);
		fputc('\n', stdout);
		json_decref(p);
		return;
	}
	json_array_foreach(frames, i, f)
	{
		printf(INDENT "  #%-2zu ", i);
		view_str(stdout, frame_str(f, "function"));
		fputs("  ", stdout);
		view_str(stdout, frame_str(f, "file"));
		line = json_object_get(f, "line");
		if (json_is_integer(line))
			printf(":%" JSON_INTEGER_FORMAT,
			       json_integer_value(line));
		fputc('\n', stdout);
	}
	if (json_is_true(json_object_get(p, "truncated")))
		printf(INDENT "  ... deeper frames not read (%zu shown)\n", i);
	if (why) {
		printf(INDENT "  (stopped: ");
		view_str(stdout, why);
		printf(")\n");
	}
	json_decref(p);
}

static void print_event(const struct show_ctx *ctx, const struct audit_item *it)
{
	const struct audit_event *e = &it->event->e;
	bool allow = e->decision && !strcmp(e->decision, "allow");
	bool stop = !allow;

	stamp(ctx, it->ts_ns,
	      stop	      ? "!!"
	      : e->would_deny ? "?!"
			      : "",
	      e->proc_serial);
	printf("%-6s ", !e->decision		       ? "?"
			: allow			       ? "allow"
			: !strcmp(e->decision, "kill") ? "KILL"
						       : "DENY");
	view_str(stdout, e->syscall);
	fputc(' ', stdout);
	view_str(stdout, e->target ? e->target : e->raw);
	if (e->raw && e->target && strcmp(e->raw, e->target)) {
		fputs(" (given as ", stdout);
		view_str(stdout, e->raw);
		fputc(')', stdout);
	}
	if (e->err)
		printf(" -> %s", ward_errno_name(e->err));
	else if (allow && e->has_result) {
		char rt[32];
		printf(" = %s", ward_result_text(e->result, rt, sizeof(rt)));
	}
	if (e->pid != e->tid)
		printf(", tid %d", (int)e->tid);
	if (e->rule || stop || e->would_deny) {
		fputs(", rule ", stdout);
		view_str(stdout, e->rule);
	}
	if (e->would_deny)
		fputs(" (audit mode: would be denied)", stdout);
	/* an "ask" rule's decision: the question and who answered */
	bool asked = e->reason && strstr(e->reason, "; asked: ");
	if ((stop || e->would_deny || asked) && e->reason) {
		fputs(": ", stdout);
		view_str(stdout, e->reason);
	}
	fputc('\n', stdout);
	if (stop && e->args_json) {
		printf(INDENT "args ");
		view_json(stdout, e->args_json);
		fputc('\n', stdout);
	}
	if (e->backtrace)
		print_backtrace(e->backtrace, ctx->syms);
	if (e->pyframes)
		print_pyframes(e->pyframes);
}

/* One line per line of the chunk, "stdout| " before each ("cmd N stdout| "
 * for the output of a session's command, cells row N: outputs.cmd). */
static void print_output(const struct show_ctx *ctx,
			 const struct audit_item *it)
{
	const struct audit_output_row *o = it->output;
	const char *c = o->data, *end = c + o->len;
	char name[48];
	bool first = true;

	const char *s = o->stream == AUDIT_STDERR ? "stderr" : "stdout";
	if (o->cmd > 0)
		snprintf(name, sizeof(name), "cmd %lld %s| ", o->cmd, s);
	else
		snprintf(name, sizeof(name), "%s| ", s);

	while (c < end) {
		const char *nl = memchr(c, '\n', (size_t)(end - c));
		size_t n = nl ? (size_t)(nl - c) : (size_t)(end - c);

		if (first)
			printf("%+11.6f     %s",
			       (double)(it->ts_ns - ctx->t0) / 1e9, name);
		else
			printf("%16s%s", "", name);
		first = false;
		view_text(stdout, c, n, VIEW_CODE);
		fputc('\n', stdout);
		if (!nl)
			printf("%16s\\ no newline\n", "");
		c += n + 1;
	}
}

static bool limited(const struct show_opts *o)
{
	return show_filter_active(&o->f);
}

/* Whether the timeline's limits (show-filter.h) let it through. */
static bool wanted(const struct show_opts *o, const struct audit_item *it)
{
	return show_filter_item(&o->f, it);
}

/* A pool's warm-up cell: its result says "phase": "warmup" and
 * "pool": {handed_out_ns, closed_unused} (tools/agent/session-pool.c). */
static void warmup_of(const struct audit_cell *c, struct show_cell *sc)
{
	json_t *r = c->result_json ? json_loads(c->result_json, 0, NULL) : NULL;
	const char *phase = json_string_value(json_object_get(r, "phase"));
	json_t *pool = json_object_get(r, "pool");
	const char *why =
		json_string_value(json_object_get(pool, "closed_unused"));

	if (phase && !strcmp(phase, "warmup")) {
		sc->warmup = true;
		sc->handed_ns = json_integer_value(
			json_object_get(pool, "handed_out_ns"));
		sc->unused = why ? strdup(why) : NULL;
	}
	json_decref(r);
}

static int keep_cell(const struct audit_cell *c, void *arg)
{
	struct show_ctx *ctx = arg;
	struct show_cell *nc =
		realloc(ctx->cells, (ctx->n_cells + 1) * sizeof(*nc));

	if (!nc)
		return -ENOMEM;
	ctx->cells = nc;
	nc[ctx->n_cells] = (struct show_cell){
		.n = c->n,
		.start = c->started_ns,
		.end = c->ended_ns,
		.status = strdup(c->status ? c->status : "-"),
		.code = malloc(c->code_len + 1),
		.code_len = c->code_len,
	};
	if (nc[ctx->n_cells].code) {
		if (c->code_len)
			memcpy(nc[ctx->n_cells].code, c->code, c->code_len);
		nc[ctx->n_cells].code[c->code_len] = '\0';
	}
	warmup_of(c, &nc[ctx->n_cells]);
	ctx->n_cells++;
	return 0;
}

/* The run's phases, shown in the timeline where they start and end as a
 * session's cells are, before them (the setup comes first); a session's
 * main phase is its cells, so it is not shown twice. */
static int keep_phases(struct show_ctx *ctx)
{
	size_t n = 0, cells = ctx->n_cells;
	struct show_cell *nc =
		realloc(ctx->cells, (cells + ctx->phases.n + 1) * sizeof(*nc));

	if (!nc)
		return -ENOMEM;
	ctx->cells = nc;
	memmove(nc + ctx->phases.n, nc, cells * sizeof(*nc));
	for (size_t i = 0; i < ctx->phases.n; i++) {
		const struct run_phase *p = &ctx->phases.v[i];

		if (cells && !strcmp(p->name, "main"))
			continue;
		nc[n++] = (struct show_cell){
			.n = p->n,
			.start = p->start,
			.end = p->end,
			.status = strdup(p->status),
			.phase = p->name,
			.first = p->first,
			.last = p->last,
		};
	}
	memmove(nc + n, nc + ctx->phases.n, cells * sizeof(*nc));
	ctx->n_cells = n + cells;
	return 0;
}

/* The cells' starts and ends up to ts, in time order: "cell N" with the
 * first line of its code, then "cell N: status". */
static void print_cells_until(struct show_ctx *ctx, long long ts)
{
	for (;;) {
		struct show_cell *s = ctx->next_start < ctx->n_cells
					      ? &ctx->cells[ctx->next_start]
					      : NULL;
		struct show_cell *e = ctx->next_end < ctx->next_start
					      ? &ctx->cells[ctx->next_end]
					      : NULL;
		if (s && s->start <= ts && (!e || s->start <= e->end)) {
			size_t first = s->code ? strcspn(s->code, "\n") : 0;
			if (first > s->code_len)
				first = s->code_len;
			stamp(ctx, s->start, ">>", 0);
			if (s->phase)
				printf("phase %s (processes [%d] to [%d])%s",
				       s->phase, s->first, s->last,
				       s->code ? ": " : "");
			else
				printf("cell %lld: ", s->n);
			if (s->code)
				view_text(stdout, s->code, first, 0);
			if (first < s->code_len)
				fputs(" ...", stdout);
			fputc('\n', stdout);
			ctx->next_start++;
		} else if (e && e->end <= ts) {
			stamp(ctx, e->end, "<<", 0);
			if (e->phase)
				printf("phase %s: %s", e->phase,
				       e->status ? e->status : "-");
			else
				printf("cell %lld: %s", e->n,
				       e->status ? e->status : "-");
			if (e->warmup && e->handed_ns)
				printf(" (ward's warm-up, --preload; the "
				       "session was handed out at %+.6f: "
				       "what follows is the caller's)",
				       (double)(e->handed_ns - ctx->t0) / 1e9);
			else if (e->warmup)
				printf(" (ward's warm-up, --preload; the "
				       "session was never handed out: %s)",
				       e->unused ? e->unused : "?");
			fputc('\n', stdout);
			ctx->next_end++;
		} else {
			return;
		}
	}
}

static int print_item(const struct audit_item *it, void *arg)
{
	struct show_ctx *ctx = arg;

	print_cells_until(ctx, it->ts_ns);
	if (!wanted(ctx->o, it))
		return 0;
	ctx->shown++;
	if (it->kind == AUDIT_ITEM_EVENT)
		print_event(ctx, it);
	else if (it->kind == AUDIT_ITEM_OUTPUT)
		print_output(ctx, it);
	else
		print_proc(ctx, it);
	return 0;
}

/* "only ...": what the limits let through. */
static void print_limits(const struct show_opts *o)
{
	show_filter_describe(stdout, &o->f);
}

static int show_text(struct audit *a, const char *id, const struct show_opts *o)
{
	struct show_ctx ctx = { .o = o, .syms = sym_cache_new() };
	int r = read_decisions(a, id, &ctx.dec);

	if (!r)
		r = audit_run_read(a, id, print_header, &ctx);

	if (r) {
		sym_cache_free(ctx.syms);
		return r;
	}
	printf("\ntimeline (seconds from the start; [N] is the process "
	       "serial; !! denied or killed)\n");
	if (limited(o))
		print_limits(o);
	r = run_phases_load(a, id, &ctx.phases);
	if (!r)
		r = audit_cells_each(a, id, keep_cell, &ctx);
	if (!r)
		r = keep_phases(&ctx);
	if (!r)
		r = audit_timeline_each(a, id, print_item, &ctx);
	if (!r)
		print_cells_until(&ctx, LLONG_MAX);
	if (!r && !ctx.shown && limited(o))
		puts("(none in this run)");
	for (size_t i = 0; i < ctx.n_cells; i++) {
		free(ctx.cells[i].status);
		free(ctx.cells[i].unused);
		free(ctx.cells[i].code);
	}
	free(ctx.cells);
	run_phases_free(&ctx.phases);
	sym_cache_free(ctx.syms);
	return r;
}

/* ------------------------------- JSON ------------------------------- */

static json_t *nint(long long v)
{
	return v < 0 ? json_null() : json_integer(v);
}

static json_t *nbool(int v)
{
	return v < 0 ? json_null() : json_boolean(v);
}

/* key: text of the bytes; key_bytes: their count; key_base64 if lossy. */
static void set_bytes(json_t *o, const char *text_key, const char *bytes_key,
		      const char *b64_key, const void *data, size_t len)
{
	bool exact;

	json_object_set_new(o, text_key,
			    view_json_text(data ? data : "", len, &exact));
	json_object_set_new(o, bytes_key, json_integer((json_int_t)len));
	if (!exact)
		json_object_set_new(o, b64_key, view_json_base64(data, len));
}

static int run_json(const struct audit_run *r, void *arg)
{
	json_t *o = json_object();

#define S(k, v) json_object_set_new(o, k, view_json_str(v))
#define I(k, v) json_object_set_new(o, k, nint(v))
#define P(k, v) json_object_set_new(o, k, view_json_parsed(v))
	S("id", r->id);
	I("started_ns", r->started_ns);
	I("ended_ns", r->ended_ns);
	I("duration_ms", r->duration_ms);
	S("status", r->status);
	json_object_set_new(o, "ward_died",
			    json_boolean(view_run_status(r) != r->status));
	S("cause", r->cause);
	json_object_set_new(o, "exit_code",
			    r->has_exit ? json_integer(r->exit_code)
					: json_null());
	json_object_set_new(o, "signal",
			    r->has_exit ? json_integer(r->signal)
					: json_null());
	P("argv", r->argv_json);
	S("language", r->language);
	S("interpreter", r->interpreter);
	S("workdir", r->workdir);
	I("uid", r->uid);
	S("code_name", r->code_name);
	set_bytes(o, "code", "code_bytes", "code_base64", r->code, r->code_len);
	S("code_sha256", r->code_sha256);
	S("policy_name", r->policy_name);
	S("policy_sha256", r->policy_sha256);
	P("policy", r->policy_json);
	P("limits", r->limits_json);
	I("stdout_bytes", r->stdout_bytes);
	I("stderr_bytes", r->stderr_bytes);
	json_object_set_new(o, "stdout_truncated", nbool(r->stdout_truncated));
	json_object_set_new(o, "stderr_truncated", nbool(r->stderr_truncated));
	I("events", r->events);
	I("denials", r->denials);
	I("processes", r->processes);
	S("host", r->host);
	S("kernel", r->kernel);
	S("ward_version", r->ward_version);
	I("ward_pid", r->ward_pid);
	I("ward_start_ticks", r->ward_start_ticks);
	S("boot_id", r->boot_id);
	P("layers", r->layers_json);
	json_object_set_new(arg, "run", o);
	return 0;
}

static int proc_json(const struct audit_proc_row *p, void *arg)
{
	json_t *o = json_object();

	I("serial", p->p.serial);
	I("parent_serial", p->p.parent_serial > 0 ? p->p.parent_serial : -1);
	I("pid", p->p.pid);
	I("tgid", p->p.tgid);
	I("ppid", p->p.ppid);
	S("kind", p->p.kind);
	I("start_ns", p->p.start_ns);
	I("start_ticks", p->p.start_ticks);
	S("exe", p->p.exe);
	P("argv", p->p.argv_json);
	json_object_set_new(o, "exec_ns",
			    p->execed ? json_integer(p->exec_ns) : json_null());
	json_object_set_new(o, "exit_ns",
			    p->exited ? json_integer(p->exit_ns) : json_null());
	json_object_set_new(o, "exit_code",
			    p->exited ? json_integer(p->exit_code)
				      : json_null());
	json_object_set_new(o, "signal",
			    p->exited ? json_integer(p->signal) : json_null());
	return json_array_append_new(arg, o) ? -ENOMEM : 0;
}

struct events_json {
	json_t *events;
	struct sym_cache *syms;	  /* backtrace symbols; NULL: none */
	struct run_phases phases; /* each event's phase, by its process */
};

static int event_json(const struct audit_event_row *ev, void *arg)
{
	struct events_json *ej = arg;
	const struct audit_event *e = &ev->e;
	json_t *o = json_object();

	I("seq", ev->seq);
	I("ts_ns", e->ts_ns);
	I("pid", e->pid);
	I("tid", e->tid);
	json_object_set_new(o, "proc_serial",
			    e->proc_serial > 0 ? json_integer(e->proc_serial)
					       : json_null());
	if (ej->phases.n)
		S("phase",
		  run_phase_of(&ej->phases, e->proc_serial, e->ts_ns));
	json_object_set_new(o, "nr", json_integer(e->nr));
	S("syscall", e->syscall);
	P("args", e->args_json);
	S("raw", e->raw);
	S("target", e->target);
	S("decision", e->decision);
	S("rule", e->rule);
	S("reason", e->reason);
	json_object_set_new(o, "errno", json_integer(e->err));
	json_object_set_new(o, "errno_name",
			    e->err ? json_string(ward_errno_name(e->err))
				   : json_null());
	json_object_set_new(o, "would_deny", json_boolean(e->would_deny));
	json_object_set_new(o, "result",
			    e->has_result ? json_integer(e->result)
					  : json_null());
	P("backtrace", e->backtrace);
	sym_backtrace_add(ej->syms, json_object_get(o, "backtrace"));
	P("pyframes", e->pyframes); /* untrusted: read from the code */
	return json_array_append_new(ej->events, o) ? -ENOMEM : 0;
}

static int output_json(const struct audit_output_row *out, void *arg)
{
	json_t *o = json_object();

	I("seq", out->seq);
	I("ts_ns", out->ts_ns);
	json_object_set_new(
		o, "stream",
		json_string(out->stream == AUDIT_STDERR ? "stderr" : "stdout"));
	if (out->cmd > 0)
		I("cmd", out->cmd);
	set_bytes(o, "text", "bytes", "base64", out->data, out->len);
	return json_array_append_new(arg, o) ? -ENOMEM : 0;
}
#undef S
#undef I
#undef P

/* The rows the limits let through (show-filter.h), for show_json(). */
struct json_limits {
	const struct show_filter *f;
	void *arg; /* the array, or struct events_json */
};

static int proc_json_if(const struct audit_proc_row *p, void *arg)
{
	struct json_limits *l = arg;

	return show_filter_active(l->f) && !show_filter_proc(l->f, p)
		       ? 0
		       : proc_json(p, l->arg);
}

static int event_json_if(const struct audit_event_row *ev, void *arg)
{
	struct json_limits *l = arg;

	return show_filter_event(l->f, &ev->e) ? event_json(ev, l->arg) : 0;
}

static int output_json_if(const struct audit_output_row *out, void *arg)
{
	struct json_limits *l = arg;

	return show_filter_active(l->f) ? 0 : output_json(out, l->arg);
}

static int show_json(struct audit *a, const char *id,
		     const struct show_filter *f)
{
	json_t *root = json_object();
	json_t *procs = json_array(), *events = json_array(),
	       *outputs = json_array();
	struct events_json ej = { events, sym_cache_new(), { NULL, 0 } };
	struct json_limits lp = { f, procs }, le = { f, &ej },
			   lo = { f, outputs };
	int r = audit_run_read(a, id, run_json, root);

	if (!r)
		r = run_phases_load(a, id, &ej.phases);
	if (!r && ej.phases.n) /* ward run --setup */
		json_object_set_new(root, "phases",
				    run_phases_json(&ej.phases));

	json_object_set_new(root, "processes", procs);
	json_object_set_new(root, "events", events);
	json_object_set_new(root, "outputs", outputs);
	if (show_filter_active(f))
		json_object_set_new(root, "filter", show_filter_json(f));
	if (!r)
		r = audit_processes_each(a, id, proc_json_if, &lp);
	if (!r)
		r = audit_events_each(a, id, event_json_if, &le);
	if (!r)
		r = audit_outputs_each(a, id, output_json_if, &lo);
	if (!r && json_dumpf(root, stdout, 0) == 0)
		fputc('\n', stdout);
	json_decref(root);
	sym_cache_free(ej.syms);
	run_phases_free(&ej.phases);
	return r;
}

/* ------------------------------ summary ------------------------------ */

#define SUM_PROCS    10 /* process lines shown */
#define SUM_SYSCALLS 12 /* syscall lines shown */
#define SUM_DENIALS  10 /* denials shown */
#define SUM_ARGV     56 /* bytes of a process's argv shown */

struct sum_count {
	char *syscall; /* owned */
	long long allowed, denied, killed, would_deny;
};

struct summary {
	long long t0;
	int *threads; /* threads per parent serial; cap entries */
	size_t cap;
	int nproc, nthread, shown;
	int root_nspid;		  /* root_nspid() */
	struct sum_count *counts; /* ncounts entries, owned */
	size_t ncounts;
	long long ndenials;
	struct view_decisions dec; /* for the verdict: the counts' sums */
};

static int summary_header(const struct audit_run *r, void *arg)
{
	struct summary *s = arg;
	char t[64], d[32];

	s->t0 = r->started_ns;
	s->root_nspid = root_nspid(r);
	printf("%-10s%s\n", "run", r->id);
	print_status(r, &s->dec);
	view_time(t, sizeof(t), r->started_ns, false);
	view_duration(d, sizeof(d), r->duration_ms);
	field("started");
	printf("%s, %s%s\n", t, r->duration_ms >= 0 ? "duration " : "",
	       r->duration_ms >= 0 ? d : "no end recorded");
	field("code");
	view_str(stdout, r->code_name);
	fputs(" (", stdout);
	view_str(stdout, r->language);
	fputs("), policy ", stdout);
	view_str(stdout, r->policy_name);
	fputc('\n', stdout);
	print_layers(r);
	return 0;
}

static bool is_thread(const struct audit_proc_row *p)
{
	return p->p.kind && !strcmp(p->p.kind, "thread");
}

/* Pass one over the processes: counts, and threads per parent. */
static int count_procs(const struct audit_proc_row *p, void *arg)
{
	struct summary *s = arg;
	size_t parent = p->p.parent_serial > 0 ? (size_t)p->p.parent_serial : 0;

	if (!is_thread(p)) {
		s->nproc++;
		return 0;
	}
	s->nthread++;
	if (parent >= s->cap) {
		size_t cap = parent + 1 > 2 * s->cap ? parent + 1 : 2 * s->cap;
		int *t = realloc(s->threads, cap * sizeof(*t));

		if (!t)
			return -ENOMEM;
		memset(t + s->cap, 0, (cap - s->cap) * sizeof(*t));
		s->threads = t;
		s->cap = cap;
	}
	s->threads[parent]++;
	return 0;
}

static int print_sum_proc(const struct audit_proc_row *p, void *arg)
{
	struct summary *s = arg;
	struct ward_strbuf sb = WARD_STRBUF_INIT;
	char serial[24], parent[24] = "", ex[32] = "no exit";
	int serial_no = p->p.serial;
	int threads = serial_no > 0 && (size_t)serial_no < s->cap
			      ? s->threads[serial_no]
			      : 0;

	if (is_thread(p) || s->shown++ >= SUM_PROCS)
		return 0;
	snprintf(serial, sizeof(serial), "[%d]", serial_no);
	if (p->p.parent_serial > 0)
		snprintf(parent, sizeof(parent), "of [%d]", p->p.parent_serial);
	if (p->exited && p->signal > 0)
		view_signame(p->signal, ex, sizeof(ex));
	else if (p->exited)
		snprintf(ex, sizeof(ex), "exit %d", p->exit_code);
	printf("  %-5s %-9s %-8s ", serial, parent, ex);
	if (p->p.argv_json || p->p.exe) {
		view_argv_line(&sb, p->p.argv_json ? p->p.argv_json : "[]");
		view_text_cut(stdout, ward_strbuf_str(&sb), sb.len, SUM_ARGV);
		fputs("  (", stdout);
		view_str(stdout, p->p.exe);
	} else {
		fputs("(never exec'd", stdout);
	}
	if (threads)
		printf(", %d thread%s", threads, threads == 1 ? "" : "s");
	fputs(")\n", stdout);
	ward_strbuf_free(&sb);
	return 0;
}

static int print_processes(struct audit *a, const char *id, struct summary *s)
{
	int r = audit_processes_each(a, id, count_procs, s);

	if (r)
		return r;
	printf("\nprocesses: %d", s->nproc);
	if (s->nthread)
		printf(", and %d thread%s", s->nthread,
		       s->nthread == 1 ? "" : "s");
	fputc('\n', stdout);
	r = audit_processes_each(a, id, print_sum_proc, s);
	if (!r && s->nproc > SUM_PROCS)
		printf("  ... and %d more\n", s->nproc - SUM_PROCS);
	return r;
}

static int keep_count(const struct audit_syscall_count *c, void *arg)
{
	struct summary *s = arg;
	struct sum_count *n;

	n = realloc(s->counts, (s->ncounts + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	s->counts = n;
	n = &s->counts[s->ncounts];
	*n = (struct sum_count){ .allowed = c->allowed,
				 .denied = c->denied,
				 .killed = c->killed,
				 .would_deny = c->would_deny };
	n->syscall = strdup(c->syscall ? c->syscall : "?");
	if (!n->syscall)
		return -ENOMEM;
	s->ncounts++;
	return 0;
}

/* "1292 allowed (3 would be denied), 1 denied": the counts that are not
 * zero, the first right-aligned in width columns. */
static void print_count_parts(const struct sum_count *c, int width)
{
	const long long n[] = { c->allowed, c->denied, c->killed };
	static const char *const what[] = { "allowed", "denied", "killed" };
	bool first = true;

	for (int i = 0; i < 3; i++) {
		if (!n[i])
			continue;
		printf("%s%*lld %s", first ? "" : ", ", first ? width : 0, n[i],
		       what[i]);
		first = false;
		if (i == 0 && c->would_deny)
			printf(" (%lld would be denied)", c->would_deny);
	}
}

/* Needs s->counts (keep_count). */
static void print_syscalls(const struct summary *s)
{
	struct sum_count all = { 0 };
	int width = 7;

	for (size_t i = 0; i < s->ncounts; i++) {
		const struct sum_count *c = &s->counts[i];
		int len = (int)strlen(c->syscall);

		all.allowed += c->allowed;
		all.denied += c->denied;
		all.killed += c->killed;
		all.would_deny += c->would_deny;
		if (i < SUM_SYSCALLS && len > width)
			width = len > 20 ? 20 : len;
	}
	printf("\nsyscalls: %lld decided",
	       all.allowed + all.denied + all.killed);
	if (s->ncounts) {
		fputs(", ", stdout);
		print_count_parts(&all, 0);
	}
	fputc('\n', stdout);
	for (size_t i = 0; i < s->ncounts && i < SUM_SYSCALLS; i++) {
		const struct sum_count *c = &s->counts[i];
		int pad = width - (int)strlen(c->syscall);

		fputs("  ", stdout);
		view_str(stdout, c->syscall);
		printf("%*s ", pad > 0 ? pad : 0, "");
		print_count_parts(c, 6);
		fputc('\n', stdout);
	}
	if (s->ncounts > SUM_SYSCALLS)
		printf("  ... and %zu more syscalls\n",
		       s->ncounts - SUM_SYSCALLS);
}

static const char *denial_word(const struct audit_event *e)
{
	if (e->decision && !strcmp(e->decision, "kill"))
		return "KILL";
	if (e->decision && !strcmp(e->decision, "deny"))
		return "DENY";
	return "would deny"; /* allowed in audit mode */
}

static int print_sum_denial(const struct audit_event_row *ev, void *arg)
{
	struct summary *s = arg;
	const struct audit_event *e = &ev->e;

	if (s->ndenials++ >= SUM_DENIALS)
		return 0;
	printf("  %+.3fs ", (double)(e->ts_ns - s->t0) / 1e9);
	if (e->proc_serial > 0)
		printf("[%d] ", e->proc_serial);
	printf("%s ", denial_word(e));
	view_str(stdout, e->syscall);
	fputc(' ', stdout);
	view_str(stdout, e->target ? e->target : e->raw);
	if (e->err)
		printf(" -> %s", ward_errno_name(e->err));
	fputs(", rule ", stdout);
	view_str(stdout, e->rule);
	fputc('\n', stdout);
	if (e->reason) {
		fputs("      ", stdout);
		view_str(stdout, e->reason);
		fputc('\n', stdout);
	}
	return 0;
}

/* Needs s->dec (show_summary) for the title. */
static int print_denials(struct audit *a, const char *id, struct summary *s)
{
	long long n = s->dec.denied + s->dec.killed + s->dec.would;
	int r;

	if (n)
		printf("\ndenials: %lld\n", n);
	else
		printf("\ndenials: none\n");
	r = audit_denials_each(a, id, print_sum_denial, s);
	if (!r && s->ndenials > SUM_DENIALS)
		printf("  ... and %lld more\n", s->ndenials - SUM_DENIALS);
	return r;
}

/* The commands that show more; with --db if it was given. */
static void print_more(const char *id, const char *db_opt)
{
	static const char *const opt[] = { "         ", " --denied" };
	static const char *const how[] = {
		"the whole timeline",
		"denials with their arguments and backtraces",
	};

	for (int i = 0; i < 2; i++) {
		field(i ? "" : "see also");
		fputs("ward show ", stdout);
		if (db_opt) {
			fputs("--db ", stdout);
			view_str(stdout, db_opt);
			fputc(' ', stdout);
		}
		printf("%s%s   %s\n", id, opt[i], how[i]);
	}
}

static int show_summary(struct audit *a, const char *id, const char *path,
			const char *db_opt)
{
	struct summary s = { 0 };
	char *abs = realpath(path, NULL);
	/* the counts first: the verdict and the denials, which a reviewer
	 * needs first, come before the processes and the counts */
	int r = audit_syscall_counts_each(a, id, keep_count, &s);

	for (size_t i = 0; i < s.ncounts; i++) {
		s.dec.denied += s.counts[i].denied;
		s.dec.killed += s.counts[i].killed;
		s.dec.would += s.counts[i].would_deny;
	}
	if (!r)
		r = audit_run_read(a, id, summary_header, &s);
	if (!r) {
		field("database");
		view_str(stdout, abs ? abs : path);
		fputc('\n', stdout);
		r = print_denials(a, id, &s);
	}
	if (!r)
		r = print_processes(a, id, &s);
	if (!r)
		print_syscalls(&s);
	if (!r) {
		fputc('\n', stdout);
		print_more(id, db_opt);
	}
	for (size_t i = 0; i < s.ncounts; i++)
		free(s.counts[i].syscall);
	free(s.counts);
	free(s.threads);
	free(abs);
	return r;
}

/* ------------------------------- main ------------------------------- */

/* --tree: the run's first lines and its process tree, or JSON. */
static int show_tree(struct audit *a, const char *id, struct show_opts *o,
		     struct show_procs *procs)
{
	json_t *root, *tree = NULL;
	int r;

	if (!o->json) {
		struct summary s = { 0 };

		r = read_decisions(a, id, &s.dec);
		if (!r)
			r = audit_run_read(a, id, summary_header, &s);
		if (!r) {
			fputc('\n', stdout);
			r = show_tree_text(a, id, procs, &o->f, s.root_nspid);
		}
		return r;
	}
	root = json_object();
	r = audit_run_read(a, id, run_json, root);
	if (!r)
		r = show_tree_json(a, id, procs, &o->f, &tree);
	if (!r) {
		json_object_set_new(root, "tree", tree);
		if (show_filter_active(&o->f))
			json_object_set_new(root, "filter",
					    show_filter_json(&o->f));
		if (json_dumpf(root, stdout, 0) == 0)
			fputc('\n', stdout);
	}
	json_decref(root);
	return r;
}

int ward_cmd_show(int argc, char **argv)
{
	struct show_opts o;
	struct show_procs *procs = NULL;
	char path[4096], id[AUDIT_RUN_ID_LEN + 1];
	struct audit *a;
	int r = parse_args(argc, argv, &o);

	if (r) {
		show_filter_free(&o.f);
		return r > 0 ? 0 : WARD_EXIT_INTERNAL;
	}
	a = view_open_db(o.db, path, sizeof(path));
	if (!a) {
		show_filter_free(&o.f);
		return WARD_EXIT_INTERNAL;
	}
	r = view_find_run(a, path, o.run, id);
	if (!r && (o.tree || show_filter_needs_procs(&o.f))) {
		r = show_procs_load(a, id, &procs);
		o.f.owners = procs;
		if (r)
			warn("show: reading run %s from %s: %s", id, path,
			     audit_errmsg(a));
	}
	if (!r) {
		r = o.tree	? show_tree(a, id, &o, procs)
		    : o.json	? show_json(a, id, &o.f)
		    : o.summary ? show_summary(a, id, path, o.db)
				: show_text(a, id, &o);
		if (r)
			warn("show: reading run %s from %s: %s", id, path,
			     audit_errmsg(a));
	}
	audit_close(a);
	show_procs_free(procs);
	show_filter_free(&o.f);
	if (fflush(stdout) != 0)
		r = -EIO;
	return r ? WARD_EXIT_INTERNAL : 0;
}
