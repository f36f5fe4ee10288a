/*
 * args.c - building an event's args_json, a flat JSON object, in the
 * event's own bounded buffer. Never allocates; output that does not fit
 * is cut at a key boundary and marked with "...": true.
 */
#include "tracer-int.h"
#include "args.h"
#include "../common/json.h"

#include <stdarg.h>
#include <sys/socket.h>
#include <stdio.h>
#include <string.h>

/* Escaped JSON string body of s into dst (n > 0); length or -1 if cut. */
static int escape(char *dst, size_t n, const char *s, size_t slen)
{
	size_t need = ward_json_escape(dst, n, s, slen);

	return need < n ? (int)need : -1;
}

#define CUT "\"...\":true"

/* Room kept free by the decoders' keys for args_request()'s (ward
 * recheck needs them whole, even after a cut). */
#define REQ_RESERVE 160

static void put_in(struct ward_event *ev, const char *key, const char *val,
		   bool quote, size_t vlen, bool request)
{
	char *b = ev->args_json;
	size_t n = sizeof(ev->args_json) - (request ? 0 : REQ_RESERVE);
	size_t len = strlen(b);
	size_t mark = len;
	int w;

	if (len == 0) {
		b[0] = '{';
		b[1] = '\0';
		len = mark = 1;
	} else if (b[len - 1] == '}') {
		b[--len] = '\0'; /* reopen */
		mark = len;
	}
	/* Once cut, no more decoded keys are added: the marker is the last
	 * of them (args_request()'s keys may follow it). */
	if (!request && len >= sizeof(CUT) - 1 &&
	    !memcmp(b + len - (sizeof(CUT) - 1), CUT, sizeof(CUT) - 1))
		goto close;
	w = snprintf(b + len, n - len, "%s\"%s\":%s", len > 1 ? "," : "", key,
		     quote ? "\"" : "");
	if (w < 0 || (size_t)w >= n - len)
		goto cut;
	len += (size_t)w;
	if (quote) {
		int e = escape(b + len, n - len, val, vlen);
		if (e < 0 || len + (size_t)e + 2 >= n)
			goto cut;
		len += (size_t)e;
		b[len++] = '"';
	} else {
		size_t vl = strlen(val);
		if (len + vl + 2 >= n)
			goto cut;
		memcpy(b + len, val, vl);
		len += vl;
	}
	b[len] = '\0';
	goto close;
cut:
	len = mark;
	snprintf(b + len, n - len, "%s\"...\":true", len > 1 ? "," : "");
	len = strlen(b);
close:
	if (len + 2 <= n) {
		b[len] = '}';
		b[len + 1] = '\0';
	}
}

static void put(struct ward_event *ev, const char *key, const char *val,
		bool quote, size_t vlen)
{
	put_in(ev, key, val, quote, vlen, false);
}

void args_request(struct ward_event *ev)
{
	char acc[64];

	switch (ev->cls) {
	case WARD_CLASS_FS:
		ward_access_str(ev->access, acc, sizeof(acc));
		put_in(ev, "access", acc, true, strlen(acc), true);
		if (ev->has_path2 && ev->access2) {
			ward_access_str(ev->access2, acc, sizeof(acc));
			put_in(ev, "access2", acc, true, strlen(acc), true);
		}
		break;
	case WARD_CLASS_EXEC:
		put_in(ev, "exists", ev->exists ? "true" : "false", false, 0,
		       true);
		break;
	case WARD_CLASS_NET:
		if (ev->sa.present && ev->sa.family == AF_UNIX &&
		    !ev->sa.abstract)
			put_in(ev, "exists", ev->exists ? "true" : "false",
			       false, 0, true);
		break;
	case WARD_CLASS_SIGNAL:
		put_in(ev, "in_run", ev->sig_in_run ? "true" : "false", false,
		       0, true);
		break;
	default: break;
	}
}

void args_str(struct ward_event *ev, const char *key, const char *val)
{
	put(ev, key, val, true, strlen(val));
}

void args_bytes(struct ward_event *ev, const char *key, const char *val,
		size_t len)
{
	put(ev, key, val, true, len);
}

void args_raw(struct ward_event *ev, const char *key, const char *json)
{
	put(ev, key, json, false, 0);
}

void args_int(struct ward_event *ev, const char *key, long long v)
{
	char num[32];

	snprintf(num, sizeof(num), "%lld", v);
	put(ev, key, num, false, 0);
}

void args_fmt(struct ward_event *ev, const char *key, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	put(ev, key, tmp, true, strlen(tmp));
}

int args_json_string(char *dst, size_t n, const char *s, size_t len)
{
	if (n < 3)
		return -1;
	dst[0] = '"';
	int e = escape(dst + 1, n - 2, s, len);
	if (e < 0 || (size_t)e + 2 >= n)
		return -1;
	dst[e + 1] = '"';
	dst[e + 2] = '\0';
	return e + 2;
}
