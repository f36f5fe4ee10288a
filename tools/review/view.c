/*
 * view.c - see view.h.
 */
#include "tools/review/view.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/json.h"
#include "common/sha256.h"
#include "common/log.h"
#include "common/utf8.h"

struct audit *view_open_db(const char *db_opt, char *path, size_t n)
{
	char err[512];
	struct audit *a = NULL;
	int r = audit_default_path(db_opt, path, n);

	if (r == -ENOENT) {
		warn("no audit database path: HOME is not set (pass --db "
		     "or set WARD_DB)");
		return NULL;
	}
	if (r) {
		warn("audit database path too long");
		return NULL;
	}
	r = audit_open(path, true, &a, err, sizeof(err));
	if (r == -ENOENT) {
		warn("no audit database at %s (run `ward run` first, or "
		     "pass --db)",
		     path);
		return NULL;
	}
	if (r) {
		warn("audit database: %s", err);
		return NULL;
	}
	return a;
}

int view_find_run(struct audit *a, const char *path, const char *query,
		  char id[AUDIT_RUN_ID_LEN + 1])
{
	int r = audit_find_run(a, query, id);

	if (r == -ENOENT && !strcmp(query, "last"))
		warn("no runs recorded in %s", path);
	else if (r == -ENOENT)
		warn("no run matches '%s' in %s (`ward runs --db %s` lists "
		     "them)",
		     query, path, path);
	else if (r == -EINVAL)
		warn("'%s' matches more than one run in %s; give more of "
		     "the id",
		     query, path);
	else if (r)
		warn("reading %s: %s", path, audit_errmsg(a));
	return r ? -1 : 0;
}

/* ------------------------------- text ------------------------------- */

/* Characters that reorder or hide text on a terminal. */
static bool is_bidi(uint32_t cp)
{
	return cp == 0x061c || cp == 0x200e || cp == 0x200f ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

static void put_byte_escaped(FILE *f, uint8_t b)
{
	switch (b) {
	case '\n': fputs("\\n", f); break;
	case '\t': fputs("\\t", f); break;
	case '\r': fputs("\\r", f); break;
	case '\\': fputs("\\\\", f); break;
	default: fprintf(f, "\\x%02x", b); break;
	}
}

/* Newline, tab or backslash that flags let through. */
static bool raw_ok(uint32_t cp, unsigned flags)
{
	return (cp == '\n' && (flags & VIEW_RAW_NL)) ||
	       (cp == '\t' && (flags & VIEW_RAW_TAB)) ||
	       (cp == '\\' && (flags & VIEW_RAW_BSLASH));
}

void view_text(FILE *f, const void *s, size_t len, unsigned flags)
{
	const uint8_t *p = s;

	while (len) {
		uint32_t cp;
		size_t n = ward_utf8_decode(p, len, &cp);

		if (n == 0) {
			put_byte_escaped(f, *p);
			n = 1;
		} else if (n == 1 && raw_ok(cp, flags)) {
			fputc((int)cp, f);
		} else if (n == 1 && (cp < 0x20 || cp == 0x7f || cp == '\\')) {
			put_byte_escaped(f, *p);
		} else if ((cp >= 0x80 && cp < 0xa0) || is_bidi(cp)) {
			fprintf(f, "\\u{%x}", cp);
		} else {
			fwrite(p, 1, n, f);
		}
		p += n;
		len -= n;
	}
}

void view_str(FILE *f, const char *s)
{
	if (s)
		view_text(f, s, strlen(s), 0);
	else
		fputc('-', f);
}

void view_json(FILE *f, const char *s)
{
	if (s)
		view_text(f, s, strlen(s), VIEW_RAW_BSLASH);
	else
		fputc('-', f);
}

void view_html(FILE *f, const void *s, size_t len, unsigned flags)
{
	const uint8_t *p = s;

	while (len) {
		uint32_t cp;
		size_t n = ward_utf8_decode(p, len, &cp);

		if (n == 0) {
			fprintf(f, "<span class=\"bad\">\\x%02x</span>", *p);
			n = 1;
		} else if (n == 1 && (raw_ok(cp, flags) || cp == '\\')) {
			fputc((int)cp, f);
		} else if (n == 1 && (cp < 0x20 || cp == 0x7f)) {
			fputs("<span class=\"esc\">", f);
			put_byte_escaped(f, *p);
			fputs("</span>", f);
		} else if ((cp >= 0x80 && cp < 0xa0) || is_bidi(cp)) {
			fprintf(f, "<span class=\"esc\">\\u{%x}</span>", cp);
		} else if (cp == '&') {
			fputs("&amp;", f);
		} else if (cp == '<') {
			fputs("&lt;", f);
		} else if (cp == '>') {
			fputs("&gt;", f);
		} else if (cp == '"') {
			fputs("&quot;", f);
		} else if (cp == '\'') {
			fputs("&#39;", f);
		} else {
			fwrite(p, 1, n, f);
		}
		p += n;
		len -= n;
	}
}

void view_html_str(FILE *f, const char *s)
{
	if (s)
		view_html(f, s, strlen(s), 0);
	else
		fputc('-', f);
}

/* ------------------------------ numbers ------------------------------ */

void view_time(char *buf, size_t n, long long ns, bool with_ms)
{
	time_t t = (time_t)(ns / 1000000000LL);
	struct tm tm;
	char zone[8];
	size_t len;

	if (ns < 0 || !localtime_r(&t, &tm)) {
		snprintf(buf, n, "-");
		return;
	}
	len = strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm);
	if (with_ms && len < n) {
		strftime(zone, sizeof(zone), "%z", &tm);
		snprintf(buf + len, n - len, ".%03lld %s",
			 ns / 1000000LL % 1000, zone);
	}
}

void view_duration(char *buf, size_t n, long long ms)
{
	if (ms < 0)
		snprintf(buf, n, "-");
	else if (ms < 10000)
		snprintf(buf, n, "%.2fs", (double)ms / 1000);
	else if (ms < 600000)
		snprintf(buf, n, "%.1fs", (double)ms / 1000);
	else
		snprintf(buf, n, "%lldm%02llds", ms / 60000, ms / 1000 % 60);
}

const char *view_signame(int sig, char *buf, size_t n)
{
	const char *abbrev = sig > 0 ? sigabbrev_np(sig) : NULL;

	if (abbrev)
		snprintf(buf, n, "SIG%s", abbrev);
	else
		snprintf(buf, n, "signal %d", sig);
	return buf;
}

enum view_tone view_verdict(char *buf, size_t n, const char *status,
			    const char *ended, const struct view_decisions *d)
{
	const long long count[] = { d->denied, d->killed, d->would };
	static const char *const what[] = { "denied", "killed",
					    "would be denied" };
	enum view_tone tone = VIEW_OK;
	const char *label = "ok";
	size_t used;

	if (!status || strcmp(status, "ok")) {
		tone = VIEW_BAD;
		label = status ? status : "no status";
	} else if (d->denied || d->killed) {
		tone = VIEW_WARN;
		label = "ok with denials";
	} else if (d->would) {
		tone = VIEW_WARN;
		label = "ok with would-be denials";
	}
	snprintf(buf, n, "%s%s%s", label, ended ? ", " : "",
		 ended ? ended : "");
	for (int i = 0, first = 1; i < 3; i++) {
		if (!count[i])
			continue;
		used = strlen(buf);
		snprintf(buf + used, n - used, "%s%lld %s", first ? "; " : ", ",
			 count[i], what[i]);
		first = 0;
	}
	return tone;
}

const char *view_run_status(const struct audit_run *r)
{
	return audit_run_ward_gone(r) == 1 ? VIEW_WARD_DIED : r->status;
}

void view_exit(char *buf, size_t n, bool has_exit, int code, int sig)
{
	if (!has_exit)
		snprintf(buf, n, "-");
	else if (sig > 0)
		view_signame(sig, buf, n);
	else
		snprintf(buf, n, "%d", code);
}

/* Whether an argument needs quotes to read back as one word. */
static bool needs_quotes(const char *a)
{
	return !*a || strpbrk(a, " \t\n'\"\\$`;&|<>()*?[]{}~#!") != NULL;
}

void view_argv_line(struct ward_strbuf *sb, const char *json)
{
	json_t *arr = json ? json_loads(json, 0, NULL) : NULL;
	json_t *v;
	size_t i;

	if (!json_is_array(arr)) {
		ward_strbuf_puts(sb, json ? json : "-");
		json_decref(arr);
		return;
	}
	json_array_foreach(arr, i, v)
	{
		const char *a = json_string_value(v);

		if (i)
			ward_strbuf_puts(sb, " ");
		if (!a) {
			ward_strbuf_puts(sb, "?");
		} else if (!needs_quotes(a)) {
			ward_strbuf_puts(sb, a);
		} else {
			ward_strbuf_puts(sb, "'");
			for (const char *c = a; *c; c++)
				ward_strbuf_append(sb, *c == '\'' ? "'\\''" : c,
						   *c == '\'' ? 4 : 1);
			ward_strbuf_puts(sb, "'");
		}
	}
	json_decref(arr);
}

void view_text_cut(FILE *f, const char *s, size_t len, size_t max)
{
	size_t n = len;

	if (len > max) {
		n = max;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	view_text(f, s, n, 0);
	if (n < len)
		fputs(" ...", f);
}

/* ------------------------------- times ------------------------------- */

/* n decimal digits at *p into *v; advances *p. */
static bool digits(const char **p, int n, int *v)
{
	*v = 0;
	for (int i = 0; i < n; i++, (*p)++) {
		if (**p < '0' || **p > '9')
			return false;
		*v = *v * 10 + (**p - '0');
	}
	return true;
}

/* "45s", "30m", "1h", "2d", "1w" back from now_ns. */
static int parse_ago(const char *s, long long now_ns, long long *ns)
{
	static const struct {
		char unit;
		long long secs;
	} units[] = { { 's', 1 },
		      { 'm', 60 },
		      { 'h', 3600 },
		      { 'd', 86400 },
		      { 'w', 7 * 86400 } };
	long long v = 0;
	const char *p = s;

	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (*p - '0');
		if (v > 100LL * 365 * 86400)
			return -EINVAL;
	}
	if (p == s || !p[0] || p[1])
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (units[i].unit == *p) {
			/* at most 100 years ago: no overflow in ns */
			if (v > 100LL * 365 * 86400 / units[i].secs)
				return -EINVAL;
			*ns = now_ns - v * units[i].secs * 1000000000LL;
			return 0;
		}
	return -EINVAL;
}

/* "Z", "+01:00", "-0530", "+01" after a time: *off_s east of UTC. */
static bool parse_zone(const char *p, bool *zoned, long *off_s)
{
	int h, m = 0;
	int sign;

	*zoned = *p != '\0';
	*off_s = 0;
	if (!*p)
		return true;
	if ((p[0] == 'Z' || p[0] == 'z') && !p[1])
		return true;
	if (*p != '+' && *p != '-')
		return false;
	sign = *p++ == '-' ? -1 : 1;
	if (!digits(&p, 2, &h) || h > 23)
		return false;
	if (*p == ':')
		p++;
	if (*p && (!digits(&p, 2, &m) || m > 59))
		return false;
	*off_s = sign * (h * 3600L + m * 60L);
	return !*p;
}

int view_parse_time(const char *s, long long now_ns, long long *ns)
{
	const char *p = s;
	int y, mo, d, h = 0, mi = 0, sec = 0, frac_digits = 0;
	long long frac = 0;
	long off_s;
	bool zoned;
	struct tm tm = { 0 };
	time_t t;

	if (!s || !*s)
		return -EINVAL;
	if (!strcmp(s, "now")) {
		*ns = now_ns;
		return 0;
	}
	if (!parse_ago(s, now_ns, ns))
		return 0;
	if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) ||
	    *p++ != '-' || !digits(&p, 2, &d))
		return -EINVAL;
	if (*p == 'T' || *p == 't' || *p == ' ') {
		p++;
		if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi))
			return -EINVAL;
		if (*p == ':') {
			p++;
			if (!digits(&p, 2, &sec))
				return -EINVAL;
			if (*p == '.' || *p == ',') {
				for (p++; *p >= '0' && *p <= '9'; p++)
					if (frac_digits++ < 9)
						frac = frac * 10 + (*p - '0');
				if (!frac_digits)
					return -EINVAL;
			}
		}
	}
	if (!parse_zone(p, &zoned, &off_s) || mo < 1 || mo > 12 || d < 1 ||
	    d > 31 || h > 23 || mi > 59 || sec > 60 || y < 1970)
		return -EINVAL;
	for (; frac_digits < 9; frac_digits++)
		frac *= 10;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	tm.tm_isdst = -1;
	t = zoned ? timegm(&tm) : mktime(&tm);
	/* mktime/timegm normalise 2026-02-30 to March: refuse it */
	if (t == (time_t)-1 || tm.tm_mday != d || tm.tm_mon != mo - 1)
		return -EINVAL;
	/* nanoseconds in 64 bits end in 2262 */
	if ((long long)t - off_s >= LLONG_MAX / 1000000000LL - 1)
		return -EINVAL;
	*ns = ((long long)t - off_s) * 1000000000LL + frac;
	return 0;
}

/* ------------------------------- JSON ------------------------------- */

json_t *view_json_text(const void *s, size_t len, bool *exact)
{
	struct ward_strbuf sb = WARD_STRBUF_INIT;
	const uint8_t *p = s;
	json_t *j;

	*exact = true;
	if (!s)
		return json_null();
	if (ward_utf8_valid(s, len))
		return json_stringn(s, len);
	*exact = false;
	while (len) {
		uint32_t cp;
		size_t n = ward_utf8_decode(p, len, &cp);

		if (n)
			ward_strbuf_append(&sb, p, n);
		else
			ward_strbuf_append(&sb, "\xef\xbf\xbd", 3);
		n = n ? n : 1;
		p += n;
		len -= n;
	}
	j = sb.truncated ? NULL : json_stringn(ward_strbuf_str(&sb), sb.len);
	ward_strbuf_free(&sb);
	return j;
}

json_t *view_json_str(const char *s)
{
	bool exact;

	return view_json_text(s, s ? strlen(s) : 0, &exact);
}

json_t *view_json_parsed(const char *s)
{
	json_t *j;

	if (!s)
		return json_null();
	j = json_loads(s, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	return j ? j : view_json_str(s);
}

json_t *view_json_base64(const void *s, size_t len)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				  "abcdefghijklmnopqrstuvwxyz0123456789+/";
	const uint8_t *p = s;
	size_t olen = (len + 2) / 3 * 4;
	char *out = malloc(olen + 1), *o = out;
	json_t *j;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;

		if (i + 1 < len)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < len)
			v |= p[i + 2];
		*o++ = tab[v >> 18 & 63];
		*o++ = tab[v >> 12 & 63];
		*o++ = i + 1 < len ? tab[v >> 6 & 63] : '=';
		*o++ = i + 2 < len ? tab[v & 63] : '=';
	}
	j = json_stringn(out, olen);
	free(out);
	return j;
}

/* The CSP source allowing exactly this stylesheet: 'sha256-BASE64'. */
static void css_hash(const char *css, char *buf, size_t n)
{
	uint8_t dig[WARD_SHA256_LEN];
	struct ward_sha256 c;
	json_t *b64;

	ward_sha256_init(&c);
	ward_sha256_update(&c, css, strlen(css));
	ward_sha256_final(&c, dig);
	b64 = view_json_base64(dig, sizeof(dig));
	snprintf(buf, n, "'sha256-%s'", b64 ? json_string_value(b64) : "");
	json_decref(b64);
}

void view_html_head(FILE *f, const char *css, const char *title)
{
	char h[96];

	css_hash(css, h, sizeof(h));
	fprintf(f,
		"<!DOCTYPE html>\n<html lang=\"en\"><head>"
		"<meta charset=\"utf-8\">\n"
		"<meta http-equiv=\"Content-Security-Policy\" "
		"content=\"default-src 'none'; style-src %s; "
		"base-uri 'none'; form-action 'none'\">\n"
		"<meta name=\"referrer\" content=\"no-referrer\">\n"
		"<meta name=\"viewport\" content=\"width=device-width, "
		"initial-scale=1\">\n"
		"<meta name=\"generator\" content=\"ward %s\">\n"
		"<title>",
		h, WARD_VERSION);
	view_html_str(f, title);
	fprintf(f, "</title>\n<style>%s</style>\n</head><body>\n", css);
}
