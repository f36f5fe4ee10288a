#include "utf8.h"

/* Lengths by lead byte; 0 marks bytes that never start a sequence
 * (continuations 80-BF, overlong leads C0/C1, F5-FF). */
static size_t lead_len(uint8_t b)
{
	if (b < 0x80)
		return 1;
	if (b < 0xc2)
		return 0;
	if (b < 0xe0)
		return 2;
	if (b < 0xf0)
		return 3;
	if (b < 0xf5)
		return 4;
	return 0;
}

size_t ward_utf8_decode(const void *s, size_t len, uint32_t *cp)
{
	const uint8_t *p = s;
	size_t n = lead_len(p[0]);
	uint32_t c;

	*cp = p[0];
	if (n <= 1 || n > len)
		return n == 1 ? 1 : 0;
	c = p[0] & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	/* Overlong 3- and 4-byte forms, surrogates, beyond U+10FFFF. */
	if ((n == 3 && c < 0x800) || (n == 4 && c < 0x10000) ||
	    (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
		return 0;
	*cp = c;
	return n;
}

size_t ward_utf8_encode(uint32_t cp, char out[4])
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp >= 0xd800 && cp <= 0xdfff)
		return 0;
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	if (cp > 0x10ffff)
		return 0;
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}
