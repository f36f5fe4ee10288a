/*
 * sha256.h - SHA-256 (FIPS 180-4), one-shot and incremental.
 *
 * No allocation, no global state: a struct ward_sha256 lives wherever the
 * caller puts it. Hex output is 64 lowercase characters plus a NUL.
 */
#ifndef WARD_COMMON_SHA256_H
#define WARD_COMMON_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define WARD_SHA256_LEN	    32 /* digest bytes */
#define WARD_SHA256_HEX_LEN 64 /* hex characters; buffers need +1 */

struct ward_sha256 {
	uint32_t h[8];
	uint64_t total;	   /* bytes hashed so far */
	uint8_t block[64]; /* partial block */
	size_t used;	   /* bytes in block */
};

void ward_sha256_init(struct ward_sha256 *c);
/* Hashes len more bytes; data may be NULL when len is 0. */
void ward_sha256_update(struct ward_sha256 *c, const void *data, size_t len);
/* Writes the digest; c is finished afterwards (init it again to reuse). */
void ward_sha256_final(struct ward_sha256 *c, uint8_t out[WARD_SHA256_LEN]);
void ward_sha256_final_hex(struct ward_sha256 *c,
			   char out[WARD_SHA256_HEX_LEN + 1]);

/* One shot: the lowercase hex digest of len bytes at data. */
void ward_sha256_hex(const void *data, size_t len,
		     char out[WARD_SHA256_HEX_LEN + 1]);

#endif
