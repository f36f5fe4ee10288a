/*
 * cmd_report.c - `ward report RUN`: one recorded run as a self-contained
 * HTML page (inline CSS under a strict Content-Security-Policy, no script,
 * nothing fetched) or as plain text for a terminal.
 *
 * The run is read once per part (run row, processes, timeline, denials,
 * events, cells, artifacts) into bounded summaries (report-gather.c, the
 * model in report.h), then rendered here. Every
 * string from the record is untrusted (the sandboxed code chose it):
 * view_html() / view_text() escape each one where it is written.
 */
#include "tools/cmds.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit.h"
#include "common/errnames.h"
#include "common/json.h"
#include "common/log.h"
#include "common/sha256.h"
#include "tools/review/symbolize.h"
#include "tools/review/view.h"
#include "tools/review/report.h"

static void usage(FILE *f)
{
	fputs("usage: ward report RUN [-o FILE] [--format html|text] [--db PATH]\n"
	      "\n"
	      "A report of one recorded run, for a reviewer: RUN is its id, a unique\n"
	      "prefix of it, or `last`. Read from the audit database alone (nothing is\n"
	      "run).\n"
	      "\n"
	      "options:\n"
	      "  -o, --output FILE  write the report to FILE (mode 0600; replaced\n"
	      "                     whole, never left half-written) instead of stdout\n"
	      "  --format FORMAT    html (the default) or text; without --format and\n"
	      "                     without -o, a terminal gets text\n"
	      "  --db PATH          audit database (default: $WARD_DB, else\n"
	      "                     $XDG_STATE_HOME/ward/audit.db, else\n"
	      "                     ~/.local/state/ward/audit.db); opened read-only\n"
	      "  -h, --help         this text\n"
	      "\n"
	      "Sections: the verdict (status, exit or signal, how many calls were\n"
	      "denied, killed or would have been denied, cause, policy, containment\n"
	      "layers): \"ok\" (green) only for a run that ended ok with none of them,\n"
	      "\"ok with denials\" or \"ok with would-be denials\" (amber) when it ended ok\n"
	      "with some, else the status (error, killed, timeout, limit, aborted,\n"
	      "running; red); denials grouped by rule, each with its errno, target,\n"
	      "reason, arguments, backtrace (symbolized from the module files as they\n"
	      "are now, as ward show does) and, when recorded, the Python frames that\n"
	      "made the call (read from the code's memory: untrusted); the code (a\n"
	      "session: each cell's code, status and times); the process tree; the\n"
	      "timeline of process starts, execs and exits, syscall decisions and\n"
	      "output, in time order (a session's grouped by cell; the first 250 and\n"
	      "last 250 items, saying how many of each kind are left out between them;\n"
	      "2 KiB of each output chunk); files written, created or removed and files\n"
	      "read, from the decisions (open flags, mkdir, unlink, rename, ...), with\n"
	      "the SHA-256 of the files the run left in its workdir (artifacts: `ward\n"
	      "run` hashes them at the end of the run, a session after each cell);\n"
	      "network attempts (connect, bind, listen, sendto, sendmsg) with their\n"
	      "decisions; limits and timings.\n"
	      "\n"
	      "HTML: one file that needs nothing else: inline CSS allowed by its hash\n"
	      "in a Content-Security-Policy (default-src 'none'), no script, no fonts,\n"
	      "images or links outside the page; it can be opened offline and mailed.\n"
	      "Text from the run is escaped (HTML entities; control characters,\n"
	      "bidirectional overrides and bytes that are not UTF-8 shown as \\xNN or\n"
	      "\\u{NNNN}). Text: the same sections for a terminal, escaped as ward show\n"
	      "does; colour only when writing to a terminal (and NO_COLOR is not\n"
	      "set).\n"
	      "\n"
	      "exit status: 0, or 125 (bad arguments, missing, corrupt or foreign\n"
	      "database, no such run, an ambiguous prefix, FILE not writable).\n",
	      f);
}

static const char *const tl_class_name[TL_N] = {
	"process starts, execs and exits",
	"allowed calls",
	"denied or killed calls",
	"calls audit mode would deny",
	"stdout chunks",
	"stderr chunks",
};

/* ------------------------------ rendering ------------------------------ */

/*
 * One writer for both forms: headings, key/value lines, tables and
 * preformatted blocks. Untrusted text goes through txt() only.
 */
struct out {
	FILE *f;
	bool html;
	bool color; /* text on a terminal */
	int col;    /* cells written in the current table row */
};

static const char css[] =
	":root{color-scheme:light;--fg:#1b1f24;--mute:#57606a;--line:#d0d7de;"
	"--bg:#fff;--soft:#f6f8fa;--deny:#b42318;--denybg:#fdecea;"
	"--ok:#1a7f37;--warn:#9a6700;--warnbg:#fff8c5}"
	"*{box-sizing:border-box}"
	"body{margin:0;font:14px/1.45 system-ui,sans-serif;color:var(--fg);"
	"background:var(--bg)}"
	"header{padding:18px 28px;border-bottom:1px solid var(--line);"
	"background:var(--soft)}"
	"h1{font-size:20px;margin:0 0 6px}h2{font-size:17px;margin:28px 0 8px;"
	"padding-bottom:4px;border-bottom:1px solid var(--line)}"
	"h3{font-size:15px;margin:18px 0 6px}"
	"main{padding:0 28px 40px;max-width:1400px}"
	"nav{margin-top:8px}nav a{margin-right:14px;color:#0969da;"
	"text-decoration:none}"
	".verdict{display:inline-block;padding:3px 10px;border-radius:12px;"
	"font-weight:600;background:var(--soft);border:1px solid var(--line)}"
	".v-ok{color:var(--ok);border-color:var(--ok)}"
	".v-bad{color:var(--deny);border-color:var(--deny);"
	"background:var(--denybg)}"
	".v-warn{color:var(--warn);border-color:var(--warn);"
	"background:var(--warnbg)}"
	"table{border-collapse:collapse;margin:6px 0 12px;width:100%}"
	"th,td{border:1px solid var(--line);padding:3px 7px;text-align:left;"
	"vertical-align:top}"
	"th{background:var(--soft);font-weight:600}"
	"table.kv th{width:13em}"
	"td{overflow-wrap:anywhere}td.n{white-space:nowrap}"
	"code,pre,td.m{font:12.5px/1.4 ui-monospace,monospace}"
	"pre{background:var(--soft);border:1px solid var(--line);padding:8px;"
	"white-space:pre-wrap;overflow-wrap:anywhere;margin:6px 0}"
	"tr.deny td{background:var(--denybg)}tr.deny td.k{color:var(--deny);"
	"font-weight:700}tr.would td{background:var(--warnbg)}"
	"tr.err td.t{color:#8250df}tr.proc td{color:var(--mute)}"
	"tr.cell td{background:#ddf4ff;font-weight:600}"
	"tr.out td.t,tr.err td.t{white-space:pre-wrap}"
	"tr.gap td{text-align:center;font-style:italic;color:var(--mute)}"
	".esc,.bad{color:#fff;background:#6e7781;border-radius:3px;"
	"padding:0 2px;font-size:11px}.bad{background:var(--deny)}"
	".note{color:var(--mute)}.untrusted{color:var(--warn);"
	"font-weight:600}"
	".rule{border:1px solid var(--line);border-left:4px solid var(--deny);"
	"padding:4px 12px 8px;margin:10px 0}"
	"ol.bt{margin:4px 0;padding-left:28px;"
	"font:12px/1.4 ui-monospace,monospace}"
	".on{color:var(--ok);font-weight:600}.off{color:var(--deny);"
	"font-weight:600}";

/* Untrusted bytes. pre: newlines and tabs kept. */
static void txt(struct out *o, const void *s, size_t n, bool pre)
{
	if (o->html)
		view_html(o->f, s, n, pre ? VIEW_RAW_NL | VIEW_RAW_TAB : 0);
	else
		view_text(o->f, s, n, pre ? VIEW_CODE : 0);
}

static void str(struct out *o, const char *s)
{
	if (s)
		txt(o, s, strlen(s), false);
	else
		fputc('-', o->f);
}

/* A JSON column's text: its backslashes are its own escapes. */
static void jsn(struct out *o, const char *s)
{
	if (s && !o->html)
		view_text(o->f, s, strlen(s), VIEW_RAW_BSLASH);
	else
		str(o, s);
}

/* Trusted text (ward's own words and numbers). */
__attribute__((format(printf, 2, 3))) static void say(struct out *o,
						      const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(o->f, fmt, ap);
	va_end(ap);
}

/* Markup only in HTML. */
static void tag(struct out *o, const char *html)
{
	if (o->html)
		fputs(html, o->f);
}

static void color(struct out *o, const char *sgr)
{
	if (o->color)
		fprintf(o->f, "\033[%sm", sgr);
}

static void section(struct out *o, const char *id, const char *title)
{
	if (o->html) {
		say(o, "<section id=\"%s\"><h2>%s</h2>\n", id, title);
		return;
	}
	fputc('\n', o->f);
	color(o, "1");
	say(o, "== %s ==", title);
	color(o, "0");
	fputc('\n', o->f);
}

static void section_end(struct out *o)
{
	tag(o, "</section>\n");
}

static void sub(struct out *o, const char *title)
{
	if (o->html)
		say(o, "<h3>%s</h3>\n", title);
	else
		say(o, "\n-- %s --\n", title);
}

/* A note in ward's words: "<p class=note>" or an indented line. */
static void note_begin(struct out *o)
{
	if (o->html)
		fputs("<p class=\"note\">", o->f);
	else
		fputs("  ", o->f);
}

static void note_end(struct out *o)
{
	if (o->html)
		fputs("</p>\n", o->f);
	else
		fputc('\n', o->f);
}

static void kv_begin(struct out *o)
{
	tag(o, "<table class=\"kv\">\n");
}

static void kv_end(struct out *o)
{
	tag(o, "</table>\n");
}

/* A key's row; the value follows, then kv_row_end. */
static void kv_key(struct out *o, const char *key)
{
	if (o->html)
		say(o, "<tr><th>%s</th><td>", key);
	else
		say(o, "  %-13s ", key);
}

static void kv_row_end(struct out *o)
{
	if (o->html)
		fputs("</td></tr>\n", o->f);
	else
		fputc('\n', o->f);
}

static void kv_str(struct out *o, const char *key, const char *v)
{
	kv_key(o, key);
	str(o, v);
	kv_row_end(o);
}

/* A table with the given column heads ("" ends the list). */
static void table(struct out *o, const char *cls, const char *const *heads)
{
	if (o->html) {
		say(o, "<table class=\"%s\"><tr>", cls);
		for (; **heads; heads++)
			say(o, "<th>%s</th>", *heads);
		fputs("</tr>\n", o->f);
		return;
	}
	fputs("  ", o->f);
	for (const char *const *h = heads; **h; h++)
		say(o, "%s%s", h == heads ? "" : " | ", *h);
	fputc('\n', o->f);
}

static void table_end(struct out *o)
{
	tag(o, "</table>\n");
}

static void row(struct out *o, const char *cls)
{
	o->col = 0;
	if (o->html)
		say(o, "<tr class=\"%s\">", cls);
	else
		fputs("  ", o->f);
}

static void row_end(struct out *o)
{
	if (o->html)
		fputs("</tr>\n", o->f);
	else
		fputc('\n', o->f);
}

/* The next cell of a row (cls: a class for HTML, may be ""). */
static void td(struct out *o, const char *cls)
{
	if (o->html)
		say(o, "<td class=\"%s\">", cls);
	else if (o->col)
		fputs(" | ", o->f);
	o->col++;
}

static void td_end(struct out *o)
{
	tag(o, "</td>");
}

static void td_str(struct out *o, const char *cls, const char *s)
{
	td(o, cls);
	str(o, s);
	td_end(o);
}

/* A row spanning the table: gaps, cell headings. */
static void row_wide(struct out *o, const char *cls, int cols)
{
	if (o->html)
		say(o, "<tr class=\"%s\"><td colspan=\"%d\">", cls, cols);
	else
		fputs("  ", o->f);
}

static void row_wide_end(struct out *o)
{
	if (o->html)
		fputs("</td></tr>\n", o->f);
	else
		fputc('\n', o->f);
}

static void pre(struct out *o, const void *s, size_t n)
{
	if (o->html) {
		fputs("<pre>", o->f);
		txt(o, s, n, true);
		fputs("</pre>\n", o->f);
		return;
	}
	const char *c = s, *end = c + n;

	while (c < end) {
		const char *nl = memchr(c, '\n', (size_t)(end - c));
		size_t len = nl ? (size_t)(nl - c) : (size_t)(end - c);

		fputs("  | ", o->f);
		view_text(o->f, c, len, VIEW_CODE);
		fputc('\n', o->f);
		c += len + 1;
	}
}

static double rel(const struct report *r, long long ts)
{
	return (double)(ts - r->started) / 1e9;
}

/* "exit 1", "killed by SIGKILL", or "no exit recorded" */
static void exit_words(char *buf, size_t n, bool has, int code, int sig)
{
	char s[32];

	if (!has)
		snprintf(buf, n, "no exit recorded");
	else if (sig > 0)
		snprintf(buf, n, "killed by %s",
			 view_signame(sig, s, sizeof(s)));
	else
		snprintf(buf, n, "exit %d", code);
}

/* ------------------------------ sections ------------------------------ */

static void layers(struct out *o, const struct report *r)
{
	json_t *arr = r->layers_json ? json_loads(r->layers_json, 0, NULL)
				     : NULL;
	size_t i;
	json_t *l;

	kv_key(o, "layers");
	if (!json_is_array(arr) || !json_array_size(arr)) {
		say(o, "%s", arr ? "(none)" : "not recorded");
		kv_row_end(o);
		json_decref(arr);
		return;
	}
	tag(o, "<ul>");
	json_array_foreach(arr, i, l)
	{
		bool on = json_is_true(json_object_get(l, "active"));

		if (o->html)
			fputs("<li>", o->f);
		else if (i)
			say(o, "\n  %-13s ", "");
		str(o, json_string_value(json_object_get(l, "name")));
		if (o->html)
			say(o, " <span class=\"%s\">%s</span>: ",
			    on ? "on" : "off", on ? "on" : "OFF");
		else
			say(o, " %s: ", on ? "on" : "OFF");
		str(o, json_string_value(json_object_get(l, "detail")));
		tag(o, "</li>");
	}
	tag(o, "</ul>");
	kv_row_end(o);
	json_decref(arr);
}

/* A row per phase (ward run --setup): what each did, which processes were
 * its (every event of theirs is the phase's), its denials. */
static void phases(struct out *o, const struct report *r)
{
	char d[32], key[48];

	for (size_t i = 0; i < r->phases.n; i++) {
		const struct run_phase *p = &r->phases.v[i];

		view_duration(d, sizeof(d), (p->end - p->start) / 1000000);
		snprintf(key, sizeof(key), "phase %s", p->name);
		kv_key(o, key);
		str(o, p->status);
		say(o, ", exit %d, %s, +%.3fs", p->exit_code, d,
		    rel(r, p->start));
		if (p->first)
			say(o, ", processes [%d] to [%d]", p->first, p->last);
		say(o, ", %lld denials", p->denials);
		if (p->cause) {
			say(o, ": ");
			str(o, p->cause);
		}
		kv_row_end(o);
	}
}

/* The verdict first: never the green ok when a call was denied or killed
 * (view_verdict). */
static void verdict(struct out *o, const struct report *r)
{
	static const char *const cls[] = {
		[VIEW_OK] = "v-ok", [VIEW_WARN] = "v-warn", [VIEW_BAD] = "v-bad"
	};
	static const char *const sgr[] = {
		[VIEW_OK] = "1;32", [VIEW_WARN] = "1;33", [VIEW_BAD] = "1;31"
	};
	char ex[64], v[256], t[64], d[32];
	enum view_tone tone;

	section(o, "verdict", "Verdict");
	exit_words(ex, sizeof(ex), r->has_exit, r->exit_code, r->sig);
	tone = view_verdict(v, sizeof(v), r->status, ex, &r->dec);
	if (o->html) {
		say(o, "<p><span class=\"verdict %s\">", cls[tone]);
		str(o, v);
		say(o, "</span></p>\n");
	}
	kv_begin(o);
	kv_key(o, "status");
	color(o, sgr[tone]);
	str(o, v);
	color(o, "0");
	kv_row_end(o);
	if (r->cause)
		kv_str(o, "cause", r->cause);
	kv_key(o, "denials");
	say(o, "%lld (denied, killed, or would be denied in audit mode)",
	    r->ndenials);
	kv_row_end(o);
	kv_key(o, "policy");
	str(o, r->policy_name);
	say(o, ", sha256 ");
	str(o, r->policy_sha256);
	kv_row_end(o);
	phases(o, r);
	layers(o, r);
	kv_key(o, "run");
	say(o, "%s", r->id);
	kv_row_end(o);
	view_time(t, sizeof(t), r->started, true);
	kv_key(o, "started");
	say(o, "%s", t);
	kv_row_end(o);
	if (r->ended >= 0) {
		view_time(t, sizeof(t), r->ended, true);
		view_duration(d, sizeof(d), r->duration_ms);
		kv_key(o, "ended");
		say(o, "%s (%s)", t, d);
		kv_row_end(o);
	}
	kv_key(o, "language");
	str(o, r->language);
	say(o, ", ");
	str(o, r->interpreter);
	kv_row_end(o);
	kv_str(o, "workdir", r->workdir);
	kv_key(o, "ward argv");
	jsn(o, r->argv_json);
	kv_row_end(o);
	kv_key(o, "host");
	str(o, r->host);
	say(o, ", kernel ");
	str(o, r->kernel);
	say(o, ", ward ");
	str(o, r->ward_version);
	kv_row_end(o);
	kv_end(o);
	section_end(o);
}

static void code_section(struct out *o, const struct report *r)
{
	char t[32];

	section(o, "code", r->ncells ? "Code (cells of the session)" : "Code");
	if (!r->ncells || r->code_total) {
		note_begin(o);
		str(o, r->code_name);
		say(o, ", %zu bytes, sha256 ", r->code_total);
		str(o, r->code_sha256);
		if (r->code_len < r->code_total)
			say(o, " (the first %zu bytes shown)", r->code_len);
		note_end(o);
		pre(o, r->code, r->code_len);
	}
	for (size_t i = 0; i < r->ncells; i++) {
		const struct cell *c = &r->cells[i];

		view_duration(t, sizeof(t), (c->end - c->start) / 1000000);
		if (o->html)
			say(o, "<h3 id=\"cell-%lld\">", c->n);
		else
			fputs("\n-- ", o->f);
		say(o, "cell %lld: ", c->n);
		str(o, c->status);
		say(o, ", +%.3fs, %s", rel(r, c->start), t);
		if (o->html)
			fputs("</h3>\n", o->f);
		else
			fputs(" --\n", o->f);
		pre(o, c->code, c->code_len);
	}
	if (r->cells_total > (long long)r->ncells) {
		note_begin(o);
		say(o, "... and %lld more cells not shown",
		    r->cells_total - (long long)r->ncells);
		note_end(o);
	}
	section_end(o);
}

static void procs_section(struct out *o, const struct report *r)
{
	static const char *const heads[] = { "process", "pid",
					     "kind",	"program and argv",
					     "started", "ended",
					     "" };
	char ex[64];

	section(o, "processes", "Process tree");
	note_begin(o);
	say(o,
	    "%lld processes and threads; [N] is the serial ward gave each in "
	    "order of appearance, indented under its parent",
	    r->procs_total);
	note_end(o);
	table(o, "procs", heads);
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct proc *p = &r->procs[i];

		row(o, p->thread ? "thread" : "proc-row");
		td(o, "m n");
		for (int d = 0; d < p->depth && d < 30; d++)
			say(o, "%s", o->html ? "&nbsp;&nbsp;&nbsp;" : "  ");
		say(o, "[%d]", p->serial);
		td_end(o);
		td(o, "m n");
		say(o, "%d", p->pid);
		td_end(o);
		td_str(o, "n", p->thread ? "thread" : "process");
		td(o, "m");
		if (p->exe || p->argv_json) {
			str(o, p->exe);
			say(o, " ");
			jsn(o, p->argv_json);
		} else {
			say(o, "(never exec'd)");
		}
		td_end(o);
		td(o, "m n");
		say(o, "+%.6f", rel(r, p->start));
		td_end(o);
		td(o, "m n");
		exit_words(ex, sizeof(ex), p->exited, p->code, p->sig);
		if (p->exited)
			say(o, "+%.6f, %s", rel(r, p->exit), ex);
		else
			say(o, "no exit seen");
		td_end(o);
		row_end(o);
	}
	table_end(o);
	if (r->procs_total > (long long)r->nprocs) {
		note_begin(o);
		say(o, "... and %lld more not listed",
		    r->procs_total - (long long)r->nprocs);
		note_end(o);
	}
	section_end(o);
}

static const char *tl_row_class(const struct tl_item *t)
{
	switch (t->cls) {
	case TL_DENY: return "deny";
	case TL_WOULD: return "would";
	case TL_ERR: return "err";
	case TL_OUT: return "out";
	case TL_PROC: return "proc";
	default: return "allow";
	}
}

static void tl_row(struct out *o, const struct report *r,
		   const struct tl_item *t, long long *cell)
{
	if (r->ncells && t->cell != *cell) {
		row_wide(o, "cell", 5);
		if (t->cell)
			say(o, "cell %lld", t->cell);
		else
			say(o, "between cells");
		row_wide_end(o);
		*cell = t->cell;
	}
	row(o, tl_row_class(t));
	td(o, "m n");
	say(o, "%+.6f", rel(r, t->ts));
	td_end(o);
	td(o, "m n");
	if (t->serial > 0)
		say(o, "[%d]", t->serial);
	else
		say(o, "-");
	td_end(o);
	td(o, "k n");
	if (t->cls == TL_DENY)
		color(o, "1;31");
	say(o, "%s", t->what);
	if (t->cls == TL_DENY)
		color(o, "0");
	td_end(o);
	td(o, "m t");
	if (t->json && !o->html)
		view_text(o->f, t->text, t->len, VIEW_RAW_BSLASH);
	else
		txt(o, t->text, t->len,
		    o->html && (t->cls == TL_OUT || t->cls == TL_ERR));
	if (t->more)
		say(o, " ... (%zu more bytes of this chunk)", t->more);
	td_end(o);
	td(o, "m");
	if (t->rule)
		str(o, t->rule);
	td_end(o);
	row_end(o);
}

static void timeline(struct out *o, const struct report *r)
{
	static const char *const heads[] = { "time (s)", "proc", "what",
					     "detail",	 "rule", "" };
	long long total = 0, shown = 0, cell = 0;
	long long omitted[TL_N];

	section(o, "timeline", "Timeline");
	for (int i = 0; i < TL_N; i++)
		total += r->tl_total[i];
	shown = (long long)(r->nhead + r->ntail);
	note_begin(o);
	say(o,
	    "process starts, execs and exits, syscall decisions and "
	    "output, in time order; seconds from the start of the run; "
	    "%lld items",
	    total);
	if (shown < total)
		say(o, ", the first %zu and the last %zu shown", r->nhead,
		    r->ntail);
	note_end(o);
	table(o, "timeline", heads);
	for (size_t i = 0; i < r->nhead; i++)
		tl_row(o, r, &r->head[i], &cell);
	if (shown < total) {
		/* what lies between head and tail, by class */
		for (int i = 0; i < TL_N; i++)
			omitted[i] = r->tl_total[i];
		for (size_t i = 0; i < r->nhead; i++)
			omitted[r->head[i].cls]--;
		for (size_t i = 0; i < r->ntail; i++)
			omitted[r->tail[i].cls]--;
		row_wide(o, "gap", 5);
		say(o, "... %lld items left out here:", total - shown);
		for (int i = 0; i < TL_N; i++)
			if (omitted[i])
				say(o, " %lld %s;", omitted[i],
				    tl_class_name[i]);
		say(o, " see `ward show %s` for all of them", r->id);
		row_wide_end(o);
	}
	for (size_t i = 0; i < r->ntail; i++)
		tl_row(o, r,
		       &r->tail[(r->tail_pos + TL_TAIL - r->ntail + i) %
				TL_TAIL],
		       &cell);
	table_end(o);
	if (!total) {
		note_begin(o);
		say(o, "(nothing recorded)");
		note_end(o);
	}
	section_end(o);
}

static void backtrace(struct out *o, const struct report *r,
		      const struct denial *d)
{
	size_t i;
	json_t *f;

	if (d->bt_text) {
		note_begin(o);
		say(o, "backtrace (not frames): ");
		str(o, d->bt_text);
		note_end(o);
		return;
	}
	if (!d->bt)
		return;
	note_begin(o);
	say(o, "backtrace, innermost first%s:",
	    r->symbolized ? " (function names from the module files as they "
			    "are now)"
			  : "");
	note_end(o);
	tag(o, "<ol class=\"bt\" start=\"0\">");
	json_array_foreach(d->bt, i, f)
	{
		const char *mod =
			json_string_value(json_object_get(f, "module"));
		const char *off =
			json_string_value(json_object_get(f, "offset"));
		const char *sym =
			json_string_value(json_object_get(f, "symbol"));
		const char *base = mod ? strrchr(mod, '/') : NULL;

		if (i >= BT_FRAMES) {
			if (o->html)
				say(o, "<li>... %zu more frames</li>",
				    json_array_size(d->bt) - i);
			else
				say(o, "      ... %zu more frames\n",
				    json_array_size(d->bt) - i);
			break;
		}
		if (o->html)
			fputs("<li>", o->f);
		else
			say(o, "      #%-2zu ", i);
		str(o, base && base[1] ? base + 1 : mod);
		say(o, " ");
		str(o, sym ? sym : "??");
		say(o, "  (");
		str(o, mod);
		say(o, "+");
		str(o, off);
		say(o, ")");
		/* where the walk ended early, and why (tracer/bt.c) */
		const char *stop =
			json_string_value(json_object_get(f, "stop"));
		if (stop) {
			say(o, "%s", o->html ? " <em>" : "\n           ");
			say(o, "(unwinding stopped: ");
			str(o, stop);
			say(o, ")");
			if (o->html)
				fputs("</em>", o->f);
		}
		if (o->html)
			fputs("</li>", o->f);
		else
			fputc('\n', o->f);
	}
	tag(o, "</ol>\n");
}

/* One Python frame {file, line, function}. */
static void pyframe(struct out *o, json_t *f, size_t i)
{
	json_t *line = json_object_get(f, "line");

	if (o->html)
		fputs("<li>", o->f);
	else
		say(o, "      #%-2zu ", i);
	str(o, json_string_value(json_object_get(f, "file")));
	if (json_is_integer(line))
		say(o, ":%lld", (long long)json_integer_value(line));
	say(o, " in ");
	str(o, json_string_value(json_object_get(f, "function")));
	if (o->html)
		fputs("</li>", o->f);
	else
		fputc('\n', o->f);
}

/* The pyframes column: an array of frames, or an object holding one
 * under "frames"; anything else is shown as text. */
static void pyframes(struct out *o, const char *text)
{
	json_t *j = text ? json_loads(text, 0, NULL) : NULL;
	json_t *frames = json_is_array(j) ? j : json_object_get(j, "frames");
	size_t i;
	json_t *f;

	if (!text)
		return;
	note_begin(o);
	if (o->html)
		fputs("<span class=\"untrusted\">", o->f);
	say(o, "Python frames, innermost first (read from the code's own "
	       "memory: untrusted, the code could have written them)");
	if (o->html)
		fputs("</span>", o->f);
	if (json_is_string(json_object_get(j, "source"))) {
		say(o, "; from ");
		str(o, json_string_value(json_object_get(j, "source")));
	}
	if (json_is_string(json_object_get(j, "version"))) {
		say(o, ", Python ");
		str(o, json_string_value(json_object_get(j, "version")));
	}
	if (json_is_true(json_object_get(j, "truncated")))
		say(o, "; cut: more frames than were read");
	note_end(o);
	if (!json_is_array(frames)) {
		pre(o, text, strlen(text));
		json_decref(j);
		return;
	}
	tag(o, "<ol class=\"bt\" start=\"0\">");
	json_array_foreach(frames, i, f)
	{
		if (i >= PY_FRAMES) {
			note_begin(o);
			say(o, "... %zu more frames",
			    json_array_size(frames) - i);
			note_end(o);
			break;
		}
		pyframe(o, f, i);
	}
	tag(o, "</ol>\n");
	json_decref(j);
}

static void denial_one(struct out *o, const struct report *r,
		       const struct denial *d)
{
	kv_begin(o);
	kv_key(o, "call");
	say(o, "+%.6f ", rel(r, d->ts));
	if (d->serial > 0)
		say(o, "[%d] ", d->serial);
	if (d->cell)
		say(o, "cell %lld ", d->cell);
	if (d->would)
		say(o, "would deny (audit mode) ");
	else if (d->decision && !strcmp(d->decision, "kill"))
		say(o, "KILL ");
	else
		say(o, "DENY ");
	str(o, d->syscall);
	say(o, " (event %lld)", d->seq);
	kv_row_end(o);
	kv_str(o, "target", d->target ? d->target : d->raw);
	if (d->raw && d->target && strcmp(d->raw, d->target))
		kv_str(o, "given as", d->raw);
	kv_key(o, "errno");
	say(o, "%s", d->err ? ward_errno_name(d->err) : "-");
	if (d->err)
		say(o, " (%d)", d->err);
	kv_row_end(o);
	kv_str(o, "reason", d->reason);
	kv_key(o, "arguments");
	jsn(o, d->args);
	kv_row_end(o);
	kv_end(o);
	backtrace(o, r, d);
	pyframes(o, d->py);
}

static void denials_section(struct out *o, const struct report *r)
{
	section(o, "denials", "Denials by rule");
	if (!r->ndenials) {
		note_begin(o);
		say(o, "none: no call was denied or killed");
		note_end(o);
	}
	for (size_t i = 0; i < r->nrules; i++) {
		const struct rule *g = &r->rules[i];

		tag(o, "<div class=\"rule\">");
		if (o->html) {
			fputs("<h3>rule ", o->f);
			str(o, g->name);
			fputs("</h3>\n", o->f);
		} else {
			fputs("\n-- rule ", o->f);
			color(o, "1;31");
			str(o, g->name);
			color(o, "0");
			fputs(" --\n", o->f);
		}
		note_begin(o);
		say(o,
		    "%lld call%s: %lld denied, %lld killed, %lld would be "
		    "denied (audit mode)",
		    g->n, g->n == 1 ? "" : "s", g->syscalls_denied,
		    g->syscalls_killed, g->would);
		if (g->n > g->nex)
			say(o, "; the first %d shown", g->nex);
		note_end(o);
		for (int j = 0; j < g->nex; j++)
			denial_one(o, r, &g->ex[j]);
		tag(o, "</div>\n");
	}
	if (r->rules_other) {
		note_begin(o);
		say(o, "... and %lld denials under more rules, not shown",
		    r->rules_other);
		note_end(o);
	}
	section_end(o);
}

/* The artifact recorded for absolute path p (under the workdir), or NULL. */
static const struct art *art_of(const struct report *r, const char *p)
{
	size_t wl = r->workdir ? strlen(r->workdir) : 0;
	const struct art *found = NULL;

	if (!wl || strncmp(p, r->workdir, wl) || p[wl] != '/')
		return NULL;
	for (size_t i = 0; i < r->narts; i++)
		if (!strcmp(r->arts[i].path, p + wl + 1))
			found = &r->arts[i]; /* the latest cell's */
	return found;
}

static void what_words(struct out *o, unsigned w)
{
	static const struct {
		unsigned bit;
		const char *word;
	} words[] = { { F_CREATE, "created" },
		      { F_WRITE, "written" },
		      { F_DELETE, "removed" },
		      { F_META, "metadata" },
		      { F_READ, "read" } };
	bool first = true;

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (w & words[i].bit) {
			say(o, "%s%s", first ? "" : ", ", words[i].word);
			first = false;
		}
}

static void file_rows(struct out *o, const struct report *r, bool written)
{
	static const char *const heads[] = { "path",   "what", "calls",
					     "denied", "size", "sha256",
					     "" };
	static const char *const rheads[] = { "path", "calls", "denied", "" };
	size_t rows = 0, more = 0, n = 0;

	for (size_t i = 0; i < r->nfiles; i++) {
		unsigned w = r->files[r->forder[i]].what;

		n += ((w & (F_WRITE | F_CREATE | F_DELETE | F_META)) != 0) ==
		     written;
	}
	if (!n) {
		note_begin(o);
		say(o, "(none)");
		note_end(o);
		return;
	}
	table(o, "files", written ? heads : rheads);
	for (size_t i = 0; i < r->nfiles; i++) {
		const struct file *f = &r->files[r->forder[i]];
		bool w = f->what & (F_WRITE | F_CREATE | F_DELETE | F_META);
		const struct art *a;

		if (w != written)
			continue;
		if (rows++ >= FILE_ROWS) {
			more++;
			continue;
		}
		row(o, f->denied ? "deny" : "");
		td_str(o, "m", f->path);
		if (written) {
			td(o, "");
			what_words(o, f->what);
			td_end(o);
		}
		td(o, "");
		say(o, "%lld", f->calls);
		td_end(o);
		td(o, "");
		say(o, "%lld", f->denied);
		td_end(o);
		if (written) {
			a = art_of(r, f->path);
			td(o, "");
			if (a)
				say(o, "%lld", a->size);
			td_end(o);
			td(o, "m");
			if (a)
				str(o, a->sha256);
			td_end(o);
		}
		row_end(o);
	}
	table_end(o);
	if (more) {
		note_begin(o);
		say(o, "... and %zu more paths not listed", more);
		note_end(o);
	}
}

static void files_section(struct out *o, const struct report *r)
{
	static const char *const heads[] = { "cell", "path", "size", "sha256",
					     "" };

	section(o, "files", "Files");
	note_begin(o);
	say(o, "from the decisions on paths (opens by their flags, mkdir, "
	       "unlink, rename, link, chmod, truncate, ...); a path counts "
	       "as written when a call asked to write it, whether or not it "
	       "was allowed");
	if (r->files_other)
		say(o,
		    "; %lld calls on paths past the first %d are not "
		    "counted",
		    r->files_other, FILE_MAX);
	note_end(o);
	sub(o, "Written, created or removed");
	file_rows(o, r, true);
	sub(o, r->ncells ? "Files the cells left in the workdir (hashed after "
			   "each cell)"
			 : "Files the run left in its workdir (hashed at its "
			   "end)");
	if (r->narts)
		table(o, "arts", heads);
	for (size_t i = 0; i < r->narts; i++) {
		const struct art *a = &r->arts[i];

		row(o, "");
		td(o, "");
		say(o, "%lld", a->cell);
		td_end(o);
		td_str(o, "m", a->path);
		td(o, "");
		say(o, "%lld", a->size);
		td_end(o);
		td_str(o, "m", a->sha256);
		row_end(o);
	}
	if (r->narts)
		table_end(o);
	note_begin(o);
	if (!r->narts)
		say(o, "(none recorded: the run left no new or changed files, "
		       "or was recorded by a ward that did not hash them)");
	else if (r->arts_total > (long long)r->narts)
		say(o, "... and %lld more not listed",
		    r->arts_total - (long long)r->narts);
	else
		say(o, "paths relative to the workdir; cell 0 is the run "
		       "itself (ward run)");
	note_end(o);
	sub(o, "Read");
	file_rows(o, r, false);
	section_end(o);
}

static void net_section(struct out *o, const struct report *r)
{
	static const char *const heads[] = { "time (s)", "proc",     "call",
					     "address",	 "decision", "errno",
					     "rule",	 "" };

	section(o, "network", "Network attempts");
	if (!r->nets_total) {
		note_begin(o);
		say(o, "none: no connect, bind, listen, sendto or sendmsg");
		note_end(o);
		section_end(o);
		return;
	}
	table(o, "net", heads);
	for (size_t i = 0; i < r->nnets; i++) {
		const struct net *n = &r->nets[i];
		bool allow = n->decision && !strcmp(n->decision, "allow");

		row(o, allow ? "" : "deny");
		td(o, "m n");
		say(o, "%+.6f", rel(r, n->ts));
		td_end(o);
		td(o, "m n");
		say(o, "[%d]", n->serial);
		td_end(o);
		td_str(o, "", n->syscall);
		td_str(o, "m", n->target);
		td_str(o, "k", n->decision);
		td(o, "");
		say(o, "%s", n->err ? ward_errno_name(n->err) : "-");
		td_end(o);
		td_str(o, "m", n->rule);
		row_end(o);
	}
	table_end(o);
	if (r->nets_total > (long long)r->nnets) {
		note_begin(o);
		say(o, "... and %lld more not listed",
		    r->nets_total - (long long)r->nnets);
		note_end(o);
	}
	section_end(o);
}

static void limits_section(struct out *o, const struct report *r)
{
	json_t *l = r->limits_json ? json_loads(r->limits_json, 0, NULL) : NULL;
	const char *k;
	json_t *v;
	char d[32];

	section(o, "limits", "Limits and timings");
	kv_begin(o);
	if (json_is_object(l)) {
		json_object_foreach(l, k, v)
		{
			char *s = json_dumps(v, JSON_ENCODE_ANY);

			kv_key(o, "limit");
			str(o, k);
			say(o, " = ");
			jsn(o, s);
			kv_row_end(o);
			free(s);
		}
	} else {
		kv_str(o, "limits", r->limits_json);
	}
	view_duration(d, sizeof(d), r->duration_ms);
	kv_key(o, "duration");
	say(o, "%s", d);
	kv_row_end(o);
	kv_key(o, "output");
	say(o, "stdout %lld bytes%s, stderr %lld bytes%s", r->stdout_bytes,
	    r->stdout_trunc > 0 ? " (truncated: not all kept)" : "",
	    r->stderr_bytes,
	    r->stderr_trunc > 0 ? " (truncated: not all kept)" : "");
	kv_row_end(o);
	kv_key(o, "counts");
	say(o, "%lld processes, %lld events, %lld denied", r->processes,
	    r->events, r->denials);
	kv_row_end(o);
	kv_key(o, "uid");
	say(o, "%lld", r->uid);
	kv_row_end(o);
	kv_end(o);
	json_decref(l);
	section_end(o);
}

static void render(struct out *o, const struct report *r)
{
	if (o->html) {
		char title[64];

		snprintf(title, sizeof(title), "ward report %s", r->id);
		view_html_head(o->f, css, title);
		say(o,
		    "<header><h1>ward report: run %s</h1>\n"
		    "<nav><a href=\"#verdict\">verdict</a>"
		    "<a href=\"#denials\">denials</a>"
		    "<a href=\"#code\">code</a>"
		    "<a href=\"#processes\">processes</a>"
		    "<a href=\"#timeline\">timeline</a>"
		    "<a href=\"#files\">files</a>"
		    "<a href=\"#network\">network</a>"
		    "<a href=\"#limits\">limits</a></nav>"
		    "<p class=\"note\">Everything below comes from the audit "
		    "record; text the run produced is shown escaped.</p>"
		    "</header>\n<main>\n",
		    r->id);
	} else {
		color(o, "1");
		say(o, "ward report: run %s", r->id);
		color(o, "0");
		fputc('\n', o->f);
	}
	/* what a reviewer needs first: the verdict, then the denials */
	verdict(o, r);
	denials_section(o, r);
	code_section(o, r);
	procs_section(o, r);
	timeline(o, r);
	files_section(o, r);
	net_section(o, r);
	limits_section(o, r);
	tag(o, "</main>\n</body></html>\n");
}

/* -------------------------------- main -------------------------------- */

struct report_opts {
	const char *db, *run, *output;
	int html; /* 1 html, 0 text, -1 not given */
};

/* 0, 1 (--help printed) or -1 (error printed). */
static int parse_args(int argc, char **argv, struct report_opts *o)
{
	enum { O_FORMAT = 256 };
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, O_FORMAT },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	*o = (struct report_opts){ .html = -1 };
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
		switch (c) {
		case 'd': o->db = optarg; break;
		case 'o':
			if (!*optarg) {
				warn("report: -o needs a file name");
				return -1;
			}
			o->output = optarg;
			break;
		case O_FORMAT:
			if (!strcmp(optarg, "html")) {
				o->html = 1;
			} else if (!strcmp(optarg, "text")) {
				o->html = 0;
			} else {
				warn("report: --format %s: give html or text",
				     optarg);
				return -1;
			}
			break;
		case 'h': usage(stdout); return 1;
		case ':':
			warn("report: %s needs a value (see ward report --help)",
			     argv[optind - 1]);
			return -1;
		default:
			warn("report: unknown option '%s' (see ward report "
			     "--help)",
			     argv[optind - 1]);
			return -1;
		}
	}
	if (optind >= argc) {
		warn("report: which run? Give an id, a unique prefix of one, "
		     "or `last` (see ward report --help)");
		return -1;
	}
	if (optind + 1 < argc) {
		warn("report: unexpected argument '%s' (see ward report "
		     "--help)",
		     argv[optind + 1]);
		return -1;
	}
	o->run = argv[optind];
	return 0;
}

/* A temporary file beside path (replaced into place when complete). */
static FILE *open_output(const char *path, char **tmp)
{
	int fd;
	FILE *f;

	if (asprintf(tmp, "%s.XXXXXX", path) < 0) {
		*tmp = NULL;
		errno = ENOMEM;
		return NULL;
	}
	fd = mkostemp(*tmp, O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		free(*tmp);
		*tmp = NULL;
		errno = e;
		return NULL;
	}
	f = fdopen(fd, "w");
	if (!f) {
		int e = errno;

		close(fd);
		unlink(*tmp);
		free(*tmp);
		*tmp = NULL;
		errno = e;
	}
	return f;
}

int ward_cmd_report(int argc, char **argv)
{
	struct report_opts o;
	struct report *r = NULL;
	char path[4096], id[AUDIT_RUN_ID_LEN + 1];
	struct audit *a;
	char *tmp = NULL;
	int rc = parse_args(argc, argv, &o);
	struct out out = { 0 };

	if (rc)
		return rc > 0 ? 0 : WARD_EXIT_INTERNAL;
	a = view_open_db(o.db, path, sizeof(path));
	if (!a)
		return WARD_EXIT_INTERNAL;
	if (view_find_run(a, path, o.run, id)) {
		audit_close(a);
		return WARD_EXIT_INTERNAL;
	}
	r = calloc(1, sizeof(*r));
	if (r)
		r->syms = sym_cache_new();
	rc = !r ? -ENOMEM : report_gather(a, id, r);
	if (rc) {
		warn("report: reading run %s from %s: %s", id, path,
		     rc == -ENOMEM ? "out of memory" : audit_errmsg(a));
		goto out;
	}
	out.f = stdout;
	out.html = o.html > 0 || (o.html < 0 && (o.output || !isatty(1)));
	out.color = !out.html && !o.output && isatty(1) && !getenv("NO_COLOR");
	if (o.output) {
		out.f = open_output(o.output, &tmp);
		if (!out.f) {
			warn("report: cannot write %s: %s (choose a file in a "
			     "directory you can write)",
			     o.output, strerror(errno));
			rc = -EIO;
			goto out;
		}
	}
	render(&out, r);
	if (o.output) {
		if (fflush(out.f) || ferror(out.f) || fsync(fileno(out.f))) {
			rc = -errno;
		}
		if (fclose(out.f) && !rc)
			rc = -errno;
		if (!rc && rename(tmp, o.output) < 0)
			rc = -errno;
		if (rc) {
			warn("report: cannot write %s: %s", o.output,
			     strerror(-rc));
			unlink(tmp);
		}
	} else if (fflush(stdout)) {
		rc = -EIO;
		warn("report: cannot write the report to stdout: %s",
		     strerror(errno));
	}
out:
	free(tmp);
	if (r)
		report_free(r);
	free(r);
	audit_close(a);
	return rc ? WARD_EXIT_INTERNAL : 0;
}
