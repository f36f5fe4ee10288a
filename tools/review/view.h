/*
 * view.h - helpers shared by `ward runs` and `ward show` (tools/ only):
 * opening the record read-only, printing untrusted text to a terminal,
 * times, and JSON values of recorded text.
 */
#ifndef WARD_TOOLS_VIEW_H
#define WARD_TOOLS_VIEW_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "audit/audit.h"
#include "common/json.h"

/*
 * Opens the audit database read-only: db_opt (--db) if given, else the
 * default path. Writes the path used into path. On failure prints a
 * "ward: ..." message and returns NULL (the caller exits 125).
 */
struct audit *view_open_db(const char *db_opt, char *path, size_t n);

/*
 * The full id for the user's RUN argument (an id, a unique prefix, or
 * "last") in the database at path. On failure prints a "ward: ..."
 * message naming RUN and path (no such run, ambiguous prefix, no runs at
 * all, read error) and returns -1 (the caller exits 125).
 */
int view_find_run(struct audit *a, const char *path, const char *query,
		  char id[AUDIT_RUN_ID_LEN + 1]);

/*
 * Prints len bytes of recorded (untrusted) text so that it cannot change
 * the terminal: valid printable UTF-8 as is; backslash, controls, DEL, C1
 * controls and bidirectional overrides escaped (\\, \n, \t, \r, \xNN,
 * \u{202e}); a byte that is not valid UTF-8 as \xNN. Flags let newlines,
 * tabs or backslashes through unchanged: VIEW_CODE (all three) for code
 * and output printed line by line, VIEW_RAW_BSLASH for JSON text, whose
 * backslashes are its own escapes.
 */
enum {
	VIEW_RAW_NL = 1u << 0,
	VIEW_RAW_TAB = 1u << 1,
	VIEW_RAW_BSLASH = 1u << 2,
	VIEW_CODE = VIEW_RAW_NL | VIEW_RAW_TAB | VIEW_RAW_BSLASH,
};
void view_text(FILE *f, const void *s, size_t len, unsigned flags);
void view_str(FILE *f, const char *s);	/* NULL prints "-" */
void view_json(FILE *f, const char *s); /* JSON text; NULL prints "-" */
/* The first max bytes of s (len bytes), cut at a UTF-8 boundary and
 * followed by " ..." if cut; escaped as by view_text(f, ..., 0). */
void view_text_cut(FILE *f, const char *s, size_t len, size_t max);
/*
 * The same text for an HTML page, where it may stand in element content
 * or a quoted attribute: & < > " ' as entities; controls, DEL, C1
 * controls and bidirectional overrides as <span class="esc">\n</span>
 * (\xNN, \u{202e}) and each byte that is not valid UTF-8 as <span
 * class="bad">\xNN</span>. VIEW_RAW_NL and VIEW_RAW_TAB let newlines and
 * tabs through (in <pre>); backslashes are always themselves.
 */
void view_html(FILE *f, const void *s, size_t len, unsigned flags);
void view_html_str(FILE *f, const char *s); /* NULL prints "-" */

/* "2025-12-02 11:32:05" (local time); with_ms adds ".123 +0100". */
void view_time(char *buf, size_t n, long long ns, bool with_ms);
/* "0.21s", "12.3s", "4m05s"; "-" for a negative value. */
void view_duration(char *buf, size_t n, long long ms);
/* "exit 1", "SIGKILL", or "-" when not recorded. */
void view_exit(char *buf, size_t n, bool has_exit, int code, int sig);
/* How many of a run's decided calls were denied, killed, or would have
 * been denied (audit mode). */
struct view_decisions {
	long long denied, killed, would;
};
enum view_tone { VIEW_OK, VIEW_WARN, VIEW_BAD };
/*
 * The verdict on a run, the first thing a reviewer reads. "ok" only for a
 * run that ended ok with no call denied, killed or (audit mode) that
 * would have been denied; one that ended ok with denials or kills is "ok
 * with denials", with would-be denials only "ok with would-be denials";
 * any other status is itself (error, killed, timeout, limit, aborted,
 * running). Written into buf as "VERDICT[, ENDED][; N denied, N killed,
 * N would be denied]", counts of 0 left out; ended is how the run ended
 * ("exit 0", "killed by SIGKILL"), or NULL. The status is recorded text:
 * escape buf where it is written. Returns the tone to show it in: VIEW_OK
 * (green) for a plain ok only, VIEW_WARN for ok with (would-be) denials,
 * VIEW_BAD for every other status.
 */
enum view_tone view_verdict(char *buf, size_t n, const char *status,
			    const char *ended, const struct view_decisions *d);
/* r's status as a reader must see it at once: a run still "running" whose
 * ward is gone (audit_run_ward_gone: killed or crashed, no end recorded)
 * is VIEW_WARD_DIED; any other, its recorded status. */
#define VIEW_WARD_DIED "running, ward died"
const char *view_run_status(const struct audit_run *r);
/* "SIGKILL" style name, or "signal N". */
const char *view_signame(int sig, char *buf, size_t n);
/* argv (JSON array text) as a shell-like line (words quoted where needed
 * to read back as one), appended to sb; not escaped for a terminal. */
void view_argv_line(struct ward_strbuf *sb, const char *json);

/*
 * A point in time the user gave (--since, --until), as nanoseconds since
 * the epoch: an ISO 8601 date and time "2026-12-02T10:00[:05[.123]]" (a
 * space may replace the T; local time unless followed by Z or +HH[:MM] /
 * -HH[:MM]), a date "2026-12-02" (local midnight), "now", or a time back
 * from now_ns: a count and a unit, "45s", "30m", "1h", "2d", "1w".
 * Returns 0, or -EINVAL when s is none of these (e.g. "2026-13-01").
 */
int view_parse_time(const char *s, long long now_ns, long long *ns);
/* The forms view_parse_time() takes, for error messages. */
#define VIEW_TIME_FORMS                                                         \
	"2026-12-02T10:00, 2026-12-02 10:00:05, 2026-12-02, 2026-12-02T10:00Z," \
	" now, or a time ago: 45s, 30m, 1h, 2d, 1w"

/* JSON string of recorded bytes: invalid UTF-8 replaced by U+FFFD. Sets
 * *exact to whether the string holds exactly these bytes. New reference,
 * NULL on allocation failure. A NULL s gives JSON null. */
json_t *view_json_text(const void *s, size_t len, bool *exact);
json_t *view_json_str(const char *s);
/* A column holding JSON text, parsed; text that does not parse is kept as
 * a string, NULL is null. */
json_t *view_json_parsed(const char *s);
/* Standard base64 of len bytes, as a JSON string. */
json_t *view_json_base64(const void *s, size_t len);
/* An HTML page's start, up to and with <body>: UTF-8, the title (escaped),
 * css inline, and a Content-Security-Policy that allows that stylesheet
 * (by its hash) and nothing else: no script, no request. */
void view_html_head(FILE *f, const char *css, const char *title);

#endif
