#include "json.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

/*
 * The escaped form of the character at s into piece (at most 6 bytes).
 * Returns the bytes consumed from s (>= 1); *plen gets the piece length.
 */
static size_t escape_one(const uint8_t *s, size_t len, unsigned flags,
			 char piece[6], size_t *plen)
{
	static const char hex[] = "0123456789abcdef";
	uint32_t cp;
	size_t n = ward_utf8_decode(s, len, &cp);
	const char *shortform = NULL;

	if (n == 0 && (flags & WARD_JSON_REPLACE)) {
		*plen = ward_utf8_encode(0xfffd, piece);
		return 1;
	}
	if (n > 1 && cp != 0x2028 && cp != 0x2029) {
		memcpy(piece, s, n);
		*plen = n;
		return n;
	}
	switch (cp) {
	case '"': shortform = "\\\""; break;
	case '\\': shortform = "\\\\"; break;
	case '\b': shortform = "\\b"; break;
	case '\f': shortform = "\\f"; break;
	case '\n': shortform = "\\n"; break;
	case '\r': shortform = "\\r"; break;
	case '\t': shortform = "\\t"; break;
	}
	if (shortform) {
		memcpy(piece, shortform, 2);
		*plen = 2;
	} else if (n == 1 && cp >= 0x20 && cp != 0x7f) {
		piece[0] = (char)cp;
		*plen = 1;
	} else {
		/* controls, DEL, U+2028/9, and invalid bytes (cp = the byte) */
		memcpy(piece, "\\u", 2);
		piece[2] = hex[cp >> 12 & 15];
		piece[3] = hex[cp >> 8 & 15];
		piece[4] = hex[cp >> 4 & 15];
		piece[5] = hex[cp & 15];
		*plen = 6;
	}
	return n ? n : 1;
}

size_t ward_json_escape_flags(char *dst, size_t n, const void *src, size_t len,
			      unsigned flags)
{
	const uint8_t *s = src;
	size_t total = 0, out = 0;
	bool full = n == 0;

	while (len) {
		char piece[6];
		size_t plen, used = escape_one(s, len, flags, piece, &plen);

		/* Once one piece did not fit, no later (shorter) one may. */
		if (!full && out + plen < n) {
			memcpy(dst + out, piece, plen);
			out += plen;
		} else {
			full = true;
		}
		total += plen;
		s += used;
		len -= used;
	}
	if (n)
		dst[out] = '\0';
	return total;
}

size_t ward_json_escape(char *dst, size_t n, const void *src, size_t len)
{
	return ward_json_escape_flags(dst, n, src, len, 0);
}

bool ward_utf8_valid(const void *s, size_t len)
{
	const uint8_t *p = s;
	uint32_t cp;

	while (len) {
		size_t n = ward_utf8_decode(p, len, &cp);

		if (!n)
			return false;
		p += n;
		len -= n;
	}
	return true;
}

/* ------------------------------ strbuf ------------------------------ */

void ward_strbuf_init_fixed(struct ward_strbuf *sb, char *buf, size_t size)
{
	*sb = (struct ward_strbuf){ .buf = size ? buf : NULL,
				    .cap = size,
				    .fixed = true };
	if (size)
		buf[0] = '\0';
}

void ward_strbuf_free(struct ward_strbuf *sb)
{
	if (sb->fixed) {
		sb->len = 0;
		sb->truncated = false;
		if (sb->buf)
			sb->buf[0] = '\0';
		return;
	}
	free(sb->buf);
	*sb = (struct ward_strbuf)WARD_STRBUF_INIT;
}

const char *ward_strbuf_str(const struct ward_strbuf *sb)
{
	return sb->buf ? sb->buf : "";
}

char *ward_strbuf_steal(struct ward_strbuf *sb)
{
	char *s;

	if (sb->fixed)
		return NULL;
	s = sb->buf ? sb->buf : strdup("");
	*sb = (struct ward_strbuf)WARD_STRBUF_INIT;
	return s;
}

/* Bytes of text that still fit without growing. */
static size_t room(const struct ward_strbuf *sb)
{
	return sb->cap ? sb->cap - sb->len - 1 : 0;
}

/* Makes room for extra more bytes of text. 0, -ENOSPC or -ENOMEM; on
 * failure marks sb truncated and leaves the text unchanged. */
static int reserve(struct ward_strbuf *sb, size_t extra)
{
	size_t need, cap;
	char *p;

	if (extra <= room(sb))
		return 0;
	if (sb->fixed)
		goto fail_nospc;
	if (extra > SIZE_MAX / 2 - sb->len)
		goto fail_nomem;
	need = sb->len + extra + 1;
	cap = sb->cap < 64 ? 64 : sb->cap;
	while (cap < need)
		cap *= 2;
	p = realloc(sb->buf, cap);
	if (!p)
		goto fail_nomem;
	if (!sb->buf)
		p[0] = '\0';
	sb->buf = p;
	sb->cap = cap;
	return 0;
fail_nospc:
	sb->truncated = true;
	return -ENOSPC;
fail_nomem:
	sb->truncated = true;
	return -ENOMEM;
}

int ward_strbuf_append(struct ward_strbuf *sb, const void *data, size_t len)
{
	int r = reserve(sb, len);

	if (r)
		return r;
	if (len)
		memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
	return 0;
}

int ward_strbuf_puts(struct ward_strbuf *sb, const char *s)
{
	return ward_strbuf_append(sb, s, strlen(s));
}

int ward_strbuf_vappendf(struct ward_strbuf *sb, const char *fmt, va_list ap)
{
	va_list aq;
	int n, r;

	va_copy(aq, ap);
	if (sb->buf)
		n = vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, aq);
	else
		n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n <= room(sb)) {
		sb->len += (size_t)n;
		return 0;
	}
	if (sb->buf)
		sb->buf[sb->len] = '\0'; /* undo the partial write */
	r = reserve(sb, (size_t)n);
	if (r)
		return r;
	vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, ap);
	sb->len += (size_t)n;
	return 0;
}

int ward_strbuf_appendf(struct ward_strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = ward_strbuf_vappendf(sb, fmt, ap);
	va_end(ap);
	return r;
}

int ward_strbuf_json_str(struct ward_strbuf *sb, const void *data, size_t len,
			 unsigned flags)
{
	size_t n = ward_json_escape_flags(NULL, 0, data, len, flags);
	int r = reserve(sb, n + 2);

	if (r)
		return r;
	sb->buf[sb->len++] = '"';
	ward_json_escape_flags(sb->buf + sb->len, n + 1, data, len, flags);
	sb->len += n;
	sb->buf[sb->len++] = '"';
	sb->buf[sb->len] = '\0';
	return 0;
}

int ward_strbuf_json_str_cut(struct ward_strbuf *sb, const void *data,
			     size_t len, unsigned flags, size_t reserve_bytes)
{
	static const char tail[] = "...\"";
	size_t n = ward_json_escape_flags(NULL, 0, data, len, flags);
	size_t avail = room(sb), fit;
	char *p;

	if (!sb->fixed || n + 2 + reserve_bytes <= avail)
		return ward_strbuf_json_str(sb, data, len, flags);
	sb->truncated = true;
	if (avail < reserve_bytes + 1 + strlen(tail))
		return -ENOSPC;
	fit = avail - reserve_bytes - 1 - strlen(tail); /* escaped text room */
	p = sb->buf + sb->len;
	*p++ = '"';
	ward_json_escape_flags(p, fit + 1, data, len, flags);
	p += strlen(p);
	memcpy(p, tail, sizeof(tail)); /* with the NUL */
	sb->len = (size_t)(p - sb->buf) + strlen(tail);
	return 1;
}
