/*
 * cmd_show.c - `ward show RUN`: one run, its header and its timeline, as
 * text or as one JSON object.
 */
#include "cmds.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../audit/audit.h"
#include "../common/errnames.h"
#include "../common/log.h"
#include "view.h"

static void usage(FILE *f)
{
	fputs(
"usage: ward show RUN [--db PATH] [--json]\n"
"\n"
"Show one recorded run: RUN is its id, any unique prefix of the id, or\n"
"`last` (the most recently started run). `ward runs` lists the ids.\n"
"\n"
"options:\n"
"  --db PATH    audit database (default: $WARD_DB, else\n"
"               $XDG_STATE_HOME/ward/audit.db, else\n"
"               ~/.local/state/ward/audit.db); opened read-only\n"
"  --json       print one JSON object instead (below)\n"
"  -h, --help   this text\n"
"\n"
"Text: a header (id, status, exit status or signal, cause, start and end\n"
"times, ward's argv, language and interpreter, workdir, uid, policy name\n"
"and sha256, limits, output sizes and whether they were truncated, counts,\n"
"host, the code's name, size and sha256, and the code itself), then the\n"
"timeline: every process start, exec and exit, every recorded syscall\n"
"decision and every chunk of output, in time order. Each line starts with\n"
"the seconds since the run started and [N], the serial of the process.\n"
"Denied and killed syscalls are marked `!!` with DENY or KILL, the errno the\n"
"code got, the rule and the reason, their arguments and, when recorded, a\n"
"backtrace; `?!` marks a call the policy would have denied (audit mode).\n"
"Output lines are prefixed with their stream (stdout| or stderr|). Text\n"
"from the run is printed safely: control characters, invalid UTF-8 and\n"
"bidirectional overrides are escaped (\\n, \\xNN, \\u{202e}).\n"
"\n"
"JSON: {\"run\": {...}, \"processes\": [...], \"events\": [...],\n"
"\"outputs\": [...]} with the columns of the database (docs/schema.md);\n"
"JSON columns (argv, args, limits, policy, backtrace) are embedded parsed.\n"
"Events carry errno (a number) and errno_name. Bytes the code produced are\n"
"given as UTF-8 text with invalid sequences replaced by U+FFFD: outputs as\n"
"\"text\" with \"bytes\" (the exact length); when the text is not exactly\n"
"the bytes, \"base64\" holds them exactly. The code likewise: \"code\",\n"
"\"code_bytes\" and, if needed, \"code_base64\".\n"
"\n"
"exit status: 0, or 125 (bad arguments, missing or unusable database, no\n"
"such run, an ambiguous prefix).\n", f);
}

struct show_opts {
	const char *db, *run;
	bool json;
};

/* 0, 1 (--help printed) or -1 (error printed). */
static int parse_args(int argc, char **argv, struct show_opts *o)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	*o = (struct show_opts){ 0 };
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': o->db = optarg; break;
		case 'j': o->json = true; break;
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

static void print_status(const struct audit_run *r)
{
	char buf[32];

	field("status");
	view_str(stdout, r->status);
	if (r->has_exit && r->signal > 0)
		printf(", killed by %s",
		       view_signame(r->signal, buf, sizeof(buf)));
	else if (r->has_exit)
		printf(", exit %d", r->exit_code);
	if (r->status && !strcmp(r->status, "running"))
		fputs(" (no end recorded: still running, or ward died)",
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

struct show_ctx {
	long long t0; /* the run's start, for relative times */
};

static int print_header(const struct audit_run *r, void *arg)
{
	struct show_ctx *ctx = arg;
	char uid[32];

	ctx->t0 = r->started_ns;
	printf("%-10s%s\n", "run", r->id);
	print_status(r);
	print_times(r);
	json_line("argv", r->argv_json);
	line("language", r->language, ", ", r->interpreter);
	line("workdir", r->workdir, "", NULL);
	snprintf(uid, sizeof(uid), "%lld", r->uid);
	line("uid", r->uid >= 0 ? uid : NULL, "", NULL);
	line("policy", r->policy_name, ", sha256 ", r->policy_sha256);
	json_line("limits", r->limits_json);
	print_counts(r);
	field("host");
	view_str(stdout, r->host);
	fputs(", kernel ", stdout);
	view_str(stdout, r->kernel);
	fputs(", ward ", stdout);
	view_str(stdout, r->ward_version);
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
		printf("start  pid %d, %s", (int)p->p.pid,
		       p->p.kind ? p->p.kind : "process");
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

/* Frames as recorded by the tracer: objects with module, offset, ip and
 * perhaps a symbol; anything else is printed as JSON. */
static void print_backtrace(const char *text)
{
	json_t *bt = json_loads(text, 0, NULL);
	size_t i;
	json_t *f;

	printf(INDENT "backtrace:\n");
	if (!json_is_array(bt)) {
		printf(INDENT "  ");
		view_str(stdout, text);
		fputc('\n', stdout);
		json_decref(bt);
		return;
	}
	json_array_foreach(bt, i, f) {
		const char *mod = frame_str(f, "module");
		const char *off = frame_str(f, "offset");
		const char *ip = frame_str(f, "ip");
		const char *sym = frame_str(f, "symbol");
		char *raw = mod ? NULL : json_dumps(f, JSON_ENCODE_ANY);

		printf(INDENT "  #%-2zu ", i);
		if (mod) {
			view_str(stdout, mod);
			printf("+%s", off ? off : "?");
			if (ip)
				printf(" (%s)", ip);
			if (sym) {
				fputc(' ', stdout);
				view_str(stdout, sym);
			}
		} else {
			view_str(stdout, raw);
		}
		fputc('\n', stdout);
		free(raw);
	}
	json_decref(bt);
}

static void print_event(const struct show_ctx *ctx, const struct audit_item *it)
{
	const struct audit_event *e = &it->event->e;
	bool allow = e->decision && !strcmp(e->decision, "allow");
	bool stop = !allow;

	stamp(ctx, it->ts_ns, stop ? "!!" : e->would_deny ? "?!" : "",
	      e->proc_serial);
	printf("%-6s ", !e->decision ? "?" : allow ? "allow"
			: !strcmp(e->decision, "kill") ? "KILL" : "DENY");
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
	if (e->pid != e->tid)
		printf(", tid %d", (int)e->tid);
	if (e->rule || stop || e->would_deny) {
		fputs(", rule ", stdout);
		view_str(stdout, e->rule);
	}
	if (e->would_deny)
		fputs(" (audit mode: would be denied)", stdout);
	if ((stop || e->would_deny) && e->reason) {
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
		print_backtrace(e->backtrace);
}

/* One line per line of the chunk, "stdout| " before each. */
static void print_output(const struct show_ctx *ctx,
			 const struct audit_item *it)
{
	const struct audit_output_row *o = it->output;
	const char *c = o->data, *end = c + o->len;
	const char *name = o->stream == AUDIT_STDERR ? "stderr| " : "stdout| ";
	bool first = true;

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

static int print_item(const struct audit_item *it, void *arg)
{
	const struct show_ctx *ctx = arg;

	if (it->kind == AUDIT_ITEM_EVENT)
		print_event(ctx, it);
	else if (it->kind == AUDIT_ITEM_OUTPUT)
		print_output(ctx, it);
	else
		print_proc(ctx, it);
	return 0;
}

static int show_text(struct audit *a, const char *id)
{
	struct show_ctx ctx = { 0 };
	int r = audit_run_read(a, id, print_header, &ctx);

	if (r)
		return r;
	printf("\ntimeline (seconds from the start; [N] is the process "
	       "serial; !! denied or killed)\n");
	return audit_timeline_each(a, id, print_item, &ctx);
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

	json_object_set_new(o, text_key, view_json_text(data ? data : "", len,
							&exact));
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
	S("cause", r->cause);
	json_object_set_new(o, "exit_code", r->has_exit
				? json_integer(r->exit_code) : json_null());
	json_object_set_new(o, "signal", r->has_exit
				? json_integer(r->signal) : json_null());
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
	json_object_set_new(o, "exec_ns", p->execed ? json_integer(p->exec_ns)
						    : json_null());
	json_object_set_new(o, "exit_ns", p->exited ? json_integer(p->exit_ns)
						    : json_null());
	json_object_set_new(o, "exit_code", p->exited
				? json_integer(p->exit_code) : json_null());
	json_object_set_new(o, "signal", p->exited ? json_integer(p->signal)
						   : json_null());
	return json_array_append_new(arg, o) ? -ENOMEM : 0;
}

static int event_json(const struct audit_event_row *ev, void *arg)
{
	const struct audit_event *e = &ev->e;
	json_t *o = json_object();

	I("seq", ev->seq);
	I("ts_ns", e->ts_ns);
	I("pid", e->pid);
	I("tid", e->tid);
	json_object_set_new(o, "proc_serial", e->proc_serial > 0
				? json_integer(e->proc_serial) : json_null());
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
	P("backtrace", e->backtrace);
	return json_array_append_new(arg, o) ? -ENOMEM : 0;
}

static int output_json(const struct audit_output_row *out, void *arg)
{
	json_t *o = json_object();

	I("seq", out->seq);
	I("ts_ns", out->ts_ns);
	json_object_set_new(o, "stream", json_string(out->stream == AUDIT_STDERR
						     ? "stderr" : "stdout"));
	set_bytes(o, "text", "bytes", "base64", out->data, out->len);
	return json_array_append_new(arg, o) ? -ENOMEM : 0;
}
#undef S
#undef I
#undef P

static int show_json(struct audit *a, const char *id)
{
	json_t *root = json_object();
	json_t *procs = json_array(), *events = json_array(),
	       *outputs = json_array();
	int r = audit_run_read(a, id, run_json, root);

	json_object_set_new(root, "processes", procs);
	json_object_set_new(root, "events", events);
	json_object_set_new(root, "outputs", outputs);
	if (!r)
		r = audit_processes_each(a, id, proc_json, procs);
	if (!r)
		r = audit_events_each(a, id, event_json, events);
	if (!r)
		r = audit_outputs_each(a, id, output_json, outputs);
	if (!r && json_dumpf(root, stdout, 0) == 0)
		fputc('\n', stdout);
	json_decref(root);
	return r;
}

/* ------------------------------- main ------------------------------- */

/* The full id for the user's RUN argument, or a message and -1. */
static int resolve(struct audit *a, const char *path, const char *query,
		   char id[AUDIT_RUN_ID_LEN + 1])
{
	int r = audit_find_run(a, query, id);

	if (r == -ENOENT && !strcmp(query, "last"))
		warn("no runs recorded in %s", path);
	else if (r == -ENOENT)
		warn("no run matches '%s' in %s", query, path);
	else if (r == -EINVAL)
		warn("'%s' matches more than one run in %s; give more of "
		     "the id", query, path);
	else if (r)
		warn("reading %s: %s", path, audit_errmsg(a));
	return r ? -1 : 0;
}

int ward_cmd_show(int argc, char **argv)
{
	struct show_opts o;
	char path[4096], id[AUDIT_RUN_ID_LEN + 1];
	struct audit *a;
	int r = parse_args(argc, argv, &o);

	if (r)
		return r > 0 ? 0 : WARD_EXIT_INTERNAL;
	a = view_open_db(o.db, path, sizeof(path));
	if (!a)
		return WARD_EXIT_INTERNAL;
	r = resolve(a, path, o.run, id);
	if (!r) {
		r = o.json ? show_json(a, id) : show_text(a, id);
		if (r)
			warn("show: reading run %s from %s: %s", id, path,
			     audit_errmsg(a));
	}
	audit_close(a);
	if (fflush(stdout) != 0)
		r = -EIO;
	return r ? WARD_EXIT_INTERNAL : 0;
}
