/* test-common.c - common/: sha256 (FIPS 180-4 vectors), utf8, json. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/sha256.h"
#include "common/utf8.h"
#include "tests/unit/tap.h"

static void test_sha256_vectors(void)
{
	char hex[WARD_SHA256_HEX_LEN + 1];
	const char *m56 =
		"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";

	ward_sha256_hex("", 0, hex);
	is_str(hex,
	       "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	       "sha256 of the empty string");
	ward_sha256_hex("abc", 3, hex);
	is_str(hex,
	       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	       "sha256(\"abc\")");
	ward_sha256_hex(m56, strlen(m56), hex);
	is_str(hex,
	       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
	       "sha256 of the 56-byte vector (two padding blocks)");
	ward_sha256_hex(NULL, 0, hex);
	is_str(hex,
	       "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	       "sha256(NULL, 0) is the empty hash");
}

static void test_sha256_million(void)
{
	static const char want[] =
		"cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
	struct ward_sha256 c;
	char hex[WARD_SHA256_HEX_LEN + 1], chunk[1000];
	char *big = malloc(1000000);

	memset(chunk, 'a', sizeof(chunk));
	ward_sha256_init(&c);
	for (int i = 0; i < 1000; i++)
		ward_sha256_update(&c, chunk, sizeof(chunk));
	ward_sha256_final_hex(&c, hex);
	is_str(hex, want,
	       "sha256 of 1,000,000 'a' (incremental, 1000-byte chunks)");

	/* odd chunk sizes cross block boundaries at every offset */
	ward_sha256_init(&c);
	for (size_t done = 0, step = 1; done < 1000000; step = step % 97 + 1) {
		size_t n = step < 1000000 - done ? step : 1000000 - done;

		ward_sha256_update(&c, chunk,
				   n > sizeof(chunk) ? sizeof(chunk) : n);
		done += n;
	}
	ward_sha256_final_hex(&c, hex);
	is_str(hex, want, "sha256 of 1,000,000 'a' (chunks of 1..97 bytes)");

	if (big) {
		memset(big, 'a', 1000000);
		ward_sha256_hex(big, 1000000, hex);
		is_str(hex, want, "sha256 of 1,000,000 'a' (one shot)");
	}
	free(big);
}

static void test_utf8(void)
{
	uint32_t cp;
	char out[4];

	is_int(ward_utf8_decode("\xc3\xa9", 2, &cp), 2, "utf8: é is 2 bytes");
	is_int(cp, 0xe9, "utf8: é is U+00E9");
	is_int(ward_utf8_decode("\xf0\x9f\x98\x80", 4, &cp), 4,
	       "utf8: emoji 4 bytes");
	is_int(cp, 0x1f600, "utf8: emoji code point");
	is_int(ward_utf8_decode("\xc0\xaf", 2, &cp), 0,
	       "utf8: overlong '/' refused");
	is_int(ward_utf8_decode("\xe0\x80\xaf", 3, &cp), 0,
	       "utf8: 3-byte overlong refused");
	is_int(ward_utf8_decode("\xed\xa0\x80", 3, &cp), 0,
	       "utf8: surrogate refused");
	is_int(ward_utf8_decode("\xf4\x90\x80\x80", 4, &cp), 0,
	       "utf8: > U+10FFFF refused");
	is_int(ward_utf8_decode("\xe2\x82", 2, &cp), 0,
	       "utf8: truncated sequence refused");
	is_int(ward_utf8_decode("\x80", 1, &cp), 0,
	       "utf8: lone continuation refused");
	is_int(ward_utf8_encode(0x20ac, out), 3, "utf8: encode € is 3 bytes");
	ok(memcmp(out, "\xe2\x82\xac", 3) == 0, "utf8: encode € bytes");
	is_int(ward_utf8_encode(0xd800, out), 0,
	       "utf8: encode surrogate refused");
	ok(ward_utf8_valid("a\0b\xc3\xa9", 5),
	   "utf8_valid: NUL and é are valid");
	ok(!ward_utf8_valid("a\xff", 2), "utf8_valid: 0xff is not");
}

static void test_json_escape(void)
{
	char buf[64];
	size_t n;

	n = ward_json_escape(buf, sizeof(buf), "a\"b\\c\n\t\x01\x7f", 9);
	is_str(buf, "a\\\"b\\\\c\\n\\t\\u0001\\u007f",
	       "escape: quotes, backslash, controls");
	is_int(n, strlen(buf), "escape: return is the length written");
	n = ward_json_escape(buf, sizeof(buf), "caf\xc3\xa9 \xe2\x80\xa8", 9);
	is_str(buf, "caf\xc3\xa9 \\u2028",
	       "escape: UTF-8 passes, U+2028 escaped");
	ward_json_escape(buf, sizeof(buf), "x\xffy\xc3", 4);
	is_str(buf, "x\\u00ffy\\u00c3", "escape: invalid bytes as \\u00XX");
	ward_json_escape_flags(buf, sizeof(buf), "x\xffy", 3,
			       WARD_JSON_REPLACE);
	is_str(buf, "x\xef\xbf\xbdy", "escape: WARD_JSON_REPLACE gives U+FFFD");
	ward_json_escape(buf, sizeof(buf), "a\0b", 3);
	is_str(buf, "a\\u0000b", "escape: NUL byte");

	/* bounded: never cut inside an escape or a character */
	n = ward_json_escape(buf, 5, "ab\ncd", 5);
	is_str(buf, "ab\\n", "escape: cut after a whole escape");
	is_int(n, 6, "escape: return is the full length when cut");
	n = ward_json_escape(buf, 4, "ab\ncd", 5);
	is_str(buf, "ab",
	       "escape: an escape that does not fit is left out whole");
	ward_json_escape(buf, 4, "a\xc3\xa9z", 4);
	is_str(buf, "a\xc3\xa9", "escape: whole UTF-8 character fits");
	ward_json_escape(buf, 3, "a\xc3\xa9z", 4);
	is_str(buf, "a", "escape: UTF-8 character not split");
	ward_json_escape(buf, 3, "a\x01z", 3);
	is_str(buf, "a", "escape: no later piece after one that did not fit");
	is_int(ward_json_escape(NULL, 0, "\"", 1), 2,
	       "escape: size query with NULL dst");
}

static void test_strbuf_growable(void)
{
	struct ward_strbuf sb = WARD_STRBUF_INIT;
	char *s;

	is_str(ward_strbuf_str(&sb), "", "strbuf: empty text is \"\"");
	is_int(ward_strbuf_puts(&sb, "{\"path\":"), 0, "strbuf: puts");
	is_int(ward_strbuf_json_str(&sb, "/tmp/a\"b", 8, 0), 0,
	       "strbuf: json_str");
	is_int(ward_strbuf_appendf(&sb, ",\"fd\":%d}", -100), 0,
	       "strbuf: appendf");
	is_str(ward_strbuf_str(&sb), "{\"path\":\"/tmp/a\\\"b\",\"fd\":-100}",
	       "strbuf: growable text");
	for (int i = 0; i < 1000; i++)
		ward_strbuf_appendf(&sb, "%04d", i);
	is_int(sb.len, 30 + 4000, "strbuf: grows past many reallocations");
	ok(!sb.truncated, "strbuf: growable not truncated");
	s = ward_strbuf_steal(&sb);
	ok(s && strncmp(s, "{\"path\"", 7) == 0 && sb.buf == NULL,
	   "strbuf: steal hands over the text and resets");
	free(s);
	ward_strbuf_free(&sb);
	ward_strbuf_free(&sb);
	ok(sb.buf == NULL && sb.len == 0, "strbuf: free twice is harmless");
}

static void test_strbuf_fixed(void)
{
	char buf[16];
	struct ward_strbuf sb;

	ward_strbuf_init_fixed(&sb, buf, sizeof(buf));
	is_int(ward_strbuf_puts(&sb, "{\"a\":"), 0, "fixed: puts fits");
	is_int(ward_strbuf_json_str(&sb, "0123456789abc", 13, 0), -ENOSPC,
	       "fixed: too long a string fails with -ENOSPC");
	is_str(buf,
	       "{\"a\":", "fixed: failed append leaves the text unchanged");
	ok(sb.truncated, "fixed: truncated flag set");
	is_int(ward_strbuf_appendf(&sb, "%s", "0123456789abcdef"), -ENOSPC,
	       "fixed: appendf that does not fit fails");
	is_str(buf,
	       "{\"a\":", "fixed: failed appendf leaves the text unchanged");
	is_int(ward_strbuf_puts(&sb, "null}"), 0,
	       "fixed: later small append still fits");
	is_str(buf, "{\"a\":null}",
	       "fixed: object closed after a failed member");
	ok(ward_strbuf_steal(&sb) == NULL, "fixed: steal refused");
	ward_strbuf_free(&sb);
	is_str(buf, "", "fixed: free empties");
	ok(!sb.truncated, "fixed: free clears the flag");

	/* the cut variant: keep a prefix, leave room for the closing brace */
	ward_strbuf_puts(&sb, "{\"p\":");
	is_int(ward_strbuf_json_str_cut(&sb, "/a/b/c/d/e/f/g", 14, 0, 1), 1,
	       "cut: long string is cut");
	is_int(ward_strbuf_puts(&sb, "}"), 0,
	       "cut: reserved byte is still free");
	is_str(buf, "{\"p\":\"/a/b...\"}", "cut: prefix, dots, closing quote");
	is_int(sb.len, strlen(buf), "cut: len matches the text");
	ward_strbuf_free(&sb);
	is_int(ward_strbuf_json_str_cut(&sb, "/a", 2, 0, 1), 0,
	       "cut: short string is whole");
	is_str(buf, "\"/a\"", "cut: whole string text");
	ward_strbuf_init_fixed(&sb, buf, 4);
	is_int(ward_strbuf_json_str_cut(&sb, "/abc", 4, 0, 0), -ENOSPC,
	       "cut: not even the dots fit");
}

int main(void)
{
	test_sha256_vectors();
	test_sha256_million();
	test_utf8();
	test_json_escape();
	test_strbuf_growable();
	test_strbuf_fixed();
	return done_testing();
}
