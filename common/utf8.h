/*
 * utf8.h - strict UTF-8 decoding (RFC 3629): no overlong forms, no
 * surrogates, nothing above U+10FFFF. For deciding what may pass through
 * to JSON or a terminal unchanged.
 */
#ifndef WARD_COMMON_UTF8_H
#define WARD_COMMON_UTF8_H

#include <stddef.h>
#include <stdint.h>

/*
 * Decodes the character at s (len > 0 bytes available). Returns its length
 * in bytes (1-4) and stores the code point in *cp, or returns 0 when s does
 * not start a valid, complete sequence (then *cp is s[0]).
 */
size_t ward_utf8_decode(const void *s, size_t len, uint32_t *cp);

/* Encodes cp (<= U+10FFFF, not a surrogate) into out; returns 1-4, or 0. */
size_t ward_utf8_encode(uint32_t cp, char out[4]);

#endif
