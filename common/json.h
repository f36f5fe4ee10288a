/*
 * json.h - writing JSON text safely: string escaping into a bounded buffer,
 * and a string builder that either grows (malloc) or fills a fixed buffer
 * without allocating.
 *
 * Escaping (RFC 8259 string contents, without the quotes):
 *   - valid UTF-8 passes through unchanged, except U+2028 and U+2029
 *     (written \u2028, \u2029 so the text is also safe as JavaScript);
 *   - '"' and '\\' are escaped; \b \f \n \r \t use their short forms; other
 *     bytes below 0x20 and 0x7f are written \u00XX;
 *   - a byte that is not part of a valid UTF-8 sequence is written \u00XX
 *     with XX its value (so 0xff becomes \u00ff). Note that a JSON reader
 *     decodes that as the character U+00FF, not the byte: the text stays
 *     valid JSON and shows every byte, but bytes and Latin-1 characters
 *     cannot be told apart. WARD_JSON_REPLACE writes U+FFFD instead (lossy
 *     but unambiguous); callers that need the exact bytes store them
 *     elsewhere (e.g. base64).
 * Output is never cut inside an escape or a UTF-8 sequence.
 */
#ifndef WARD_COMMON_JSON_H
#define WARD_COMMON_JSON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

enum {
	WARD_JSON_REPLACE = 1u << 0, /* invalid UTF-8 byte -> U+FFFD */
};

/*
 * Escapes len bytes at src (see above) into dst, which has room for n
 * bytes; when n > 0 the result is NUL-terminated, cut at a whole character
 * or escape. dst may be NULL when n is 0. Returns the length of the full
 * escaped text (without the NUL), like snprintf: the output is complete
 * iff the result is < n. Never allocates.
 */
size_t ward_json_escape(char *dst, size_t n, const void *src, size_t len);
size_t ward_json_escape_flags(char *dst, size_t n, const void *src, size_t len,
			      unsigned flags);

/* True iff len bytes at s are entirely valid UTF-8 (NULs included). */
bool ward_utf8_valid(const void *s, size_t len);

/*
 * A string builder. Two kinds:
 *   growable: struct ward_strbuf sb = WARD_STRBUF_INIT; ... ward_strbuf_free();
 *             the text is malloc'd and owned by sb.
 *   fixed:    ward_strbuf_init_fixed(&sb, buf, size); never allocates; buf
 *             stays the caller's.
 * Appends are all-or-nothing: one that does not fit (fixed) or cannot get
 * memory (growable) leaves the text as it was, sets sb->truncated and
 * returns -ENOSPC (fixed) or -ENOMEM (growable). Later appends that fit
 * still happen, so a caller can close an object after a failed member. The
 * text is always NUL-terminated (ward_strbuf_str() gives "" before the
 * first append).
 */
struct ward_strbuf {
	char *buf;
	size_t len;	/* bytes of text, without the NUL */
	size_t cap;	/* bytes at buf, including room for the NUL */
	bool fixed;	/* buf belongs to the caller */
	bool truncated; /* some append failed */
};

#define WARD_STRBUF_INIT                                                       \
	{                                                                      \
		0                                                              \
	}

void ward_strbuf_init_fixed(struct ward_strbuf *sb, char *buf, size_t size);
/* Frees a growable buffer (back to WARD_STRBUF_INIT); empties a fixed one. */
void ward_strbuf_free(struct ward_strbuf *sb);
/* The text; borrowed, valid until the next call on sb. */
const char *ward_strbuf_str(const struct ward_strbuf *sb);
/* Growable only: hands the malloc'd text to the caller (who frees it) and
 * resets sb. Returns NULL on a fixed buffer or when out of memory. */
char *ward_strbuf_steal(struct ward_strbuf *sb);

/* Returns 0, -ENOSPC (fixed, no room) or -ENOMEM. */
int ward_strbuf_append(struct ward_strbuf *sb, const void *data, size_t len);
int ward_strbuf_puts(struct ward_strbuf *sb, const char *s);
__attribute__((format(printf, 2, 3))) int
ward_strbuf_appendf(struct ward_strbuf *sb, const char *fmt, ...);
__attribute__((format(printf, 2, 0))) int
ward_strbuf_vappendf(struct ward_strbuf *sb, const char *fmt, va_list ap);

/* Appends len bytes at data as a quoted, escaped JSON string. flags as for
 * ward_json_escape_flags(). */
int ward_strbuf_json_str(struct ward_strbuf *sb, const void *data, size_t len,
			 unsigned flags);

/*
 * Fixed buffers: like ward_strbuf_json_str(), but when the whole string
 * does not fit, appends the longest prefix (whole characters) that leaves
 * reserve bytes free, closed with "..." inside the quotes, and returns 1.
 * For long paths in a bounded args object: reserve the bytes needed to
 * close it. Returns 0 (whole string), 1 (cut), -ENOSPC (not even an empty
 * cut string fits) or -ENOMEM (growable buffers only, which never cut).
 */
int ward_strbuf_json_str_cut(struct ward_strbuf *sb, const void *data,
			     size_t len, unsigned flags, size_t reserve);

#endif
