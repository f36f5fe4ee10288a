/*
 * jpos.c - where each value of a JSON text starts.
 *
 * jansson reports positions for syntax errors only, and json_t keeps none;
 * validation errors need the line:col of the offending value. This walks
 * the raw text once (after jansson accepted it, so it is valid JSON) and
 * records the position of every value under its JSON path, built exactly
 * as the validator builds its "where" strings.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy-int.h"

#define JPOS_PATH_MAX  1024
#define JPOS_DEPTH_MAX 4096 /* jansson stops at 2048 */

struct scan {
	const char *s;
	size_t len, i;
	int line, col;
	char path[JPOS_PATH_MAX];
	size_t plen;
	bool overflow; /* path did not fit: record nothing below it */
	struct jpos *ix;
};

/* Advance one byte, keeping line and (character) column. */
static void adv(struct scan *sc)
{
	unsigned char c = (unsigned char)sc->s[sc->i++];

	if (c == '\n') {
		sc->line++;
		sc->col = 1;
	} else if ((c & 0xc0) != 0x80) {
		sc->col++;
	}
}

static char peek(const struct scan *sc)
{
	return sc->i < sc->len ? sc->s[sc->i] : '\0';
}

static void skip_ws(struct scan *sc)
{
	while (sc->i < sc->len && strchr(" \t\r\n", sc->s[sc->i]))
		adv(sc);
}

static int record(struct scan *sc, int line, int col, int kline, int kcol)
{
	struct jpos *ix = sc->ix;
	char *p;

	if (sc->overflow)
		return 0;
	if (ix->n == ix->cap) {
		size_t cap = ix->cap ? ix->cap * 2 : 64;
		struct jpos_entry *v = realloc(ix->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ix->v = v;
		ix->cap = cap;
	}
	p = strdup(sc->path);
	if (!p)
		return -ENOMEM;
	ix->v[ix->n++] = (struct jpos_entry){ p, line, col, kline, kcol };
	return 0;
}

/* Append to the path; returns the old length for path_pop. */
static size_t path_push(struct scan *sc, const char *piece, size_t n, bool dot)
{
	size_t old = sc->plen;
	size_t need = n + (dot && sc->plen ? 1 : 0);

	if (sc->overflow || sc->plen + need >= sizeof(sc->path)) {
		sc->overflow = true;
		return old;
	}
	if (dot && sc->plen)
		sc->path[sc->plen++] = '.';
	memcpy(sc->path + sc->plen, piece, n);
	sc->plen += n;
	sc->path[sc->plen] = '\0';
	return old;
}

static void path_pop(struct scan *sc, size_t old, bool was_overflow)
{
	sc->plen = old;
	sc->path[old] = '\0';
	sc->overflow = was_overflow;
}

static unsigned hex4(const char *p)
{
	unsigned v = 0;

	for (int k = 0; k < 4; k++) {
		char c = p[k];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
	}
	return v;
}

static size_t put_utf8(char *out, unsigned cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Decode "\uXXXX" (and a following low surrogate) after the "\u". */
static size_t scan_u_escape(struct scan *sc, char *buf)
{
	unsigned cp = 0, lo;

	if (sc->i + 4 <= sc->len)
		cp = hex4(sc->s + sc->i);
	for (int k = 0; k < 4 && sc->i < sc->len; k++)
		adv(sc);
	if (cp < 0xd800 || cp >= 0xdc00 || sc->i + 6 > sc->len ||
	    sc->s[sc->i] != '\\' || sc->s[sc->i + 1] != 'u')
		return put_utf8(buf, cp);
	lo = hex4(sc->s + sc->i + 2);
	if (lo < 0xdc00 || lo >= 0xe000)
		return put_utf8(buf, cp);
	for (int k = 0; k < 6; k++)
		adv(sc);
	return put_utf8(buf, 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00));
}

/*
 * Scan one character or escape of a string at sc->i into buf (4 bytes);
 * returns its length in bytes, decoded as jansson decodes it.
 */
static size_t scan_char(struct scan *sc, char *buf)
{
	static const char from[] = "bfnrt", to[] = "\b\f\n\r\t";
	const char *m;
	char e;

	buf[0] = sc->s[sc->i];
	adv(sc);
	if (buf[0] != '\\' || sc->i >= sc->len)
		return 1;
	e = sc->s[sc->i];
	adv(sc);
	if (e == 'u')
		return scan_u_escape(sc, buf);
	m = e ? strchr(from, e) : NULL;
	buf[0] = m ? to[m - from] : e; /* else one of " \ / */
	return 1;
}

/*
 * Scan a string token at sc->i (the opening quote). When out is not NULL,
 * decode it into out, truncated to outsz - 1 bytes, and set *outlen;
 * *trunc tells whether it was cut.
 */
static void scan_string(struct scan *sc, char *out, size_t outsz,
			size_t *outlen, bool *trunc)
{
	size_t n = 0;

	adv(sc); /* opening quote */
	while (sc->i < sc->len && sc->s[sc->i] != '"') {
		char buf[4];
		size_t blen = scan_char(sc, buf);

		if (!out)
			continue;
		if (n + blen < outsz) {
			memcpy(out + n, buf, blen);
			n += blen;
		} else {
			*trunc = true;
		}
	}
	if (sc->i < sc->len)
		adv(sc); /* closing quote */
	if (out) {
		out[n] = '\0';
		*outlen = n;
	}
}

static int scan_value(struct scan *sc, int kline, int kcol, int depth);

static int scan_object(struct scan *sc, int depth)
{
	adv(sc); /* { */
	skip_ws(sc);
	if (peek(sc) == '}') {
		adv(sc);
		return 0;
	}
	while (sc->i < sc->len) {
		char key[JPOS_PATH_MAX];
		size_t klen = 0, old;
		bool trunc = false, was = sc->overflow;
		int kline, kcol, rc;

		skip_ws(sc);
		kline = sc->line;
		kcol = sc->col;
		scan_string(sc, key, sizeof(key), &klen, &trunc);
		old = path_push(sc, key, klen, true);
		if (trunc)
			sc->overflow = true;
		skip_ws(sc);
		if (peek(sc) == ':')
			adv(sc);
		rc = scan_value(sc, kline, kcol, depth + 1);
		path_pop(sc, old, was);
		if (rc)
			return rc;
		skip_ws(sc);
		if (peek(sc) == ',') {
			adv(sc);
			continue;
		}
		if (peek(sc) == '}')
			adv(sc);
		return 0;
	}
	return 0;
}

static int scan_array(struct scan *sc, int depth)
{
	size_t idx = 0;

	adv(sc); /* [ */
	skip_ws(sc);
	if (peek(sc) == ']') {
		adv(sc);
		return 0;
	}
	while (sc->i < sc->len) {
		char piece[32];
		int n = snprintf(piece, sizeof(piece), "[%zu]", idx++);
		bool was = sc->overflow;
		size_t old = path_push(sc, piece, (size_t)n, false);
		int rc = scan_value(sc, 0, 0, depth + 1);

		path_pop(sc, old, was);
		if (rc)
			return rc;
		skip_ws(sc);
		if (peek(sc) == ',') {
			adv(sc);
			continue;
		}
		if (peek(sc) == ']')
			adv(sc);
		return 0;
	}
	return 0;
}

static int scan_value(struct scan *sc, int kline, int kcol, int depth)
{
	int rc;

	if (depth > JPOS_DEPTH_MAX)
		return 0;
	skip_ws(sc);
	rc = record(sc, sc->line, sc->col, kline, kcol);
	if (rc)
		return rc;
	switch (peek(sc)) {
	case '{': return scan_object(sc, depth);
	case '[': return scan_array(sc, depth);
	case '"': scan_string(sc, NULL, 0, NULL, NULL); return 0;
	default: /* number, true, false, null */
		while (sc->i < sc->len && !strchr(",]} \t\r\n", sc->s[sc->i]))
			adv(sc);
		return 0;
	}
}

int jpos_build(struct jpos *ix, const char *text, size_t len)
{
	struct scan *sc = calloc(1, sizeof(*sc));
	int rc;

	ix->v = NULL;
	ix->n = ix->cap = 0;
	if (!sc)
		return -ENOMEM;
	sc->s = text;
	sc->len = len;
	sc->line = sc->col = 1;
	sc->ix = ix;
	rc = scan_value(sc, 0, 0, 0);
	free(sc);
	return rc;
}

void jpos_free(struct jpos *ix)
{
	for (size_t i = 0; i < ix->n; i++)
		free(ix->v[i].path);
	free(ix->v);
	ix->v = NULL;
	ix->n = ix->cap = 0;
}

bool jpos_find(const struct jpos *ix, const char *path, bool key, int *line,
	       int *col)
{
	for (size_t i = 0; i < ix->n; i++) {
		if (strcmp(ix->v[i].path, path) != 0)
			continue;
		*line = key ? ix->v[i].kline : ix->v[i].line;
		*col = key ? ix->v[i].kcol : ix->v[i].col;
		return *line > 0;
	}
	return false;
}
