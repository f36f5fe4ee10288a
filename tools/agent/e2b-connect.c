/*
 * e2b-connect.c - the Connect protocol (connectrpc.com/docs/protocol) as
 * E2B's envd speaks it with JSON: unary calls are a JSON body and a JSON
 * reply (an error is a non-200 status with {"code", "message"}); a
 * server-streaming call sends and receives envelopes: a flags byte, a
 * 32-bit big-endian length and that many bytes of JSON; the last envelope
 * has flag 0x02 and holds {"error"?: {code, message}}.
 */
#include "tools/agent/e2b.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Connect's table of codes to HTTP statuses. */
static const struct {
	const char *code;
	unsigned status;
} codes[] = {
	{ "canceled", 499 },
	{ "unknown", 500 },
	{ "invalid_argument", 400 },
	{ "deadline_exceeded", 504 },
	{ "not_found", 404 },
	{ "already_exists", 409 },
	{ "permission_denied", 403 },
	{ "resource_exhausted", 429 },
	{ "failed_precondition", 400 },
	{ "aborted", 409 },
	{ "out_of_range", 400 },
	{ "unimplemented", 501 },
	{ "internal", 500 },
	{ "unavailable", 503 },
	{ "data_loss", 500 },
	{ "unauthenticated", 401 },
};

unsigned e2b_connect_status(const char *code)
{
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (!strcmp(codes[i].code, code))
			return codes[i].status;
	return 500;
}

int e2b_connect_unwrap(const char *body, size_t len, json_t **msg, char *why,
		       size_t why_len)
{
	const unsigned char *b = (const unsigned char *)body;
	json_error_t je;

	*msg = NULL;
	if (len < 5) {
		snprintf(why, why_len,
			 "a streaming call's body is an envelope: a flags byte "
			 "and a 4-byte length first (%zu bytes came)",
			 len);
		return -1;
	}
	uint32_t n = (uint32_t)b[1] << 24 | (uint32_t)b[2] << 16 |
		     (uint32_t)b[3] << 8 | b[4];
	if (b[0] != 0 || n != len - 5) {
		snprintf(why, why_len,
			 "envelope: flags %u (0: an uncompressed message) and "
			 "length %u for %zu bytes of body; send one message",
			 b[0], n, len - 5);
		return -1;
	}
	*msg = json_loadb(body + 5, n, 0, &je);
	if (!*msg || !json_is_object(*msg)) {
		snprintf(why, why_len, "the message is not a JSON object: %s",
			 *msg ? "another JSON value" : je.text);
		json_decref(*msg);
		*msg = NULL;
		return -1;
	}
	return 0;
}

/* One envelope of msg (stolen): malloc'd, *n bytes; NULL when out of
 * memory. */
static char *envelope(unsigned flags, json_t *msg, size_t *n)
{
	char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
	size_t len = text ? strlen(text) : 0;
	char *b = text ? malloc(5 + len) : NULL;

	json_decref(msg);
	if (b) {
		b[0] = (char)flags;
		b[1] = (char)(len >> 24);
		b[2] = (char)(len >> 16);
		b[3] = (char)(len >> 8);
		b[4] = (char)len;
		memcpy(b + 5, text, len);
		*n = 5 + len;
	}
	free(text);
	return b;
}

void e2b_connect_put(struct e2b_stream *st, unsigned flags, json_t *msg)
{
	size_t n;
	char *b = envelope(flags, msg, &n);

	if (b)
		e2b_stream_put(st, b, n);
	else
		e2b_stream_fail(st);
	free(b);
}

void e2b_connect_end(struct e2b_stream *st, const char *code,
		     const char *message)
{
	json_t *end = json_object();

	if (code)
		json_object_set_new(end, "error",
				    json_pack("{s:s, s:s}", "code", code,
					      "message", message));
	e2b_connect_put(st, 0x02, end);
}

void e2b_connect_end_reply(struct e2b_reply *rp, const char *code,
			   const char *message)
{
	size_t n;
	char *b = envelope(0x02,
			   json_pack("{s:{s:s, s:s}}", "error", "code", code,
				     "message", message),
			   &n);

	if (b)
		e2b_reply_bytes(rp, 200, "application/connect+json", b, n);
	else
		e2b_reply_error(rp, 500, "out of memory");
}
