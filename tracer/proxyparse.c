/*
 * proxyparse.c - the egress proxy's parsers: a request head and a TLS
 * ClientHello's server name, from bytes the sandboxed code wrote. Every
 * read is bounded by the length given; nothing is allocated. Strict on
 * purpose: what a lenient parser and the origin server could read two ways
 * (bare LF, folded or repeated headers, a Host that names another host,
 * Transfer-Encoding) is refused, not guessed at.
 */
#include "proxy.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define REFUSE(...)                                                            \
	do {                                                                   \
		snprintf(why, n, __VA_ARGS__);                                 \
		return -EINVAL;                                                \
	} while (0)

/* Where the head ends (just past CR LF CR LF), 0 if not within len;
 * -EINVAL for a byte no head may hold. */
static long head_end(const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)buf[i];

		if (ch == '\n' && (i == 0 || buf[i - 1] != '\r'))
			return -EINVAL; /* bare LF */
		if (ch == '\r' && i + 1 < len && buf[i + 1] != '\n')
			return -EINVAL; /* bare CR */
		if ((ch < 0x20 && ch != '\r' && ch != '\n' && ch != '\t') ||
		    ch == 0x7f)
			return -EINVAL;
		if (ch == '\n' && i >= 3 && buf[i - 2] == '\n')
			return (long)i + 1;
	}
	return 0;
}

static bool token_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9') ||
	       (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/* "host[:port]" in s[0..len) into host/port; port defaults to def (0: a
 * port is required). 0 or -EINVAL. */
static int authority(const char *s, size_t len, int def, char *host, size_t hn,
		     int *port)
{
	size_t hl = len;
	const char *colon = NULL;

	for (size_t i = 0; i < len; i++) {
		char ch = s[i];

		if (ch == ':') {
			if (colon)
				return -EINVAL; /* IPv6 literals: not here */
			colon = s + i;
			hl = i;
			continue;
		}
		if (colon) {
			if (ch < '0' || ch > '9')
				return -EINVAL;
			continue;
		}
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' ||
		      ch == '_'))
			return -EINVAL;
	}
	if (hl == 0 || hl >= hn)
		return -EINVAL;
	memcpy(host, s, hl);
	host[hl] = '\0';
	if (!colon) {
		*port = def;
		return def ? 0 : -EINVAL;
	}
	size_t pl = len - hl - 1;
	long p = 0;

	if (pl == 0 || pl > 5)
		return -EINVAL;
	for (size_t i = 0; i < pl; i++)
		p = p * 10 + (colon[1 + i] - '0');
	if (p < 1 || p > 65535)
		return -EINVAL;
	*port = (int)p;
	return 0;
}

/* The request line buf[0..len) (no CR LF). */
static int request_line(const char *buf, size_t len, struct proxy_req *r,
			char *why, size_t n)
{
	const char *sp1 = memchr(buf, ' ', len), *sp2, *t;
	size_t ml, tl, vl;

	if (!sp1)
		REFUSE("the request line is not METHOD TARGET HTTP/1.1");
	ml = (size_t)(sp1 - buf);
	sp2 = memchr(sp1 + 1, ' ', len - ml - 1);
	if (!sp2)
		REFUSE("the request line is not METHOD TARGET HTTP/1.1");
	t = sp1 + 1;
	tl = (size_t)(sp2 - t);
	vl = len - (size_t)(sp2 + 1 - buf);
	if (!ml || ml >= sizeof(r->method))
		REFUSE("bad method");
	for (size_t i = 0; i < ml; i++)
		if (buf[i] < 'A' || buf[i] > 'Z')
			REFUSE("bad method");
	memcpy(r->method, buf, ml);
	r->method[ml] = '\0';
	if (vl != 8 || (memcmp(sp2 + 1, "HTTP/1.1", 8) != 0 &&
			memcmp(sp2 + 1, "HTTP/1.0", 8) != 0))
		REFUSE("only HTTP/1.0 and HTTP/1.1 are spoken");
	for (size_t i = 0; i < tl; i++)
		if ((unsigned char)t[i] <= 0x20 || (unsigned char)t[i] >= 0x7f)
			REFUSE("bad byte in the request target");
	r->connect = strcmp(r->method, "CONNECT") == 0;
	if (r->connect) {
		if (authority(t, tl, 0, r->host, sizeof(r->host), &r->port))
			REFUSE("CONNECT needs HOST:PORT (a host name and a "
			       "port)");
		return 0;
	}
	if (tl >= 8 && strncasecmp(t, "https://", 8) == 0)
		REFUSE("https through the proxy uses CONNECT");
	if (tl < 7 || strncasecmp(t, "http://", 7) != 0)
		REFUSE("a plain HTTP request to the proxy needs an absolute "
		       "URI (http://host/path)");
	const char *a = t + 7, *end = t + tl, *p = a;

	while (p < end && *p != '/' && *p != '?')
		p++;
	if (memchr(t, '#', tl) || memchr(a, '@', (size_t)(p - a)))
		REFUSE("the request target has a fragment or user info");
	if (authority(a, (size_t)(p - a), 80, r->host, sizeof(r->host),
		      &r->port))
		REFUSE("the request target's host is not a host name");
	r->path_off = (size_t)(p - buf);
	r->path_len = (size_t)(end - p);
	return 0;
}

static bool name_is(const char *s, size_t len, const char *name)
{
	return strlen(name) == len && strncasecmp(s, name, len) == 0;
}

/* One header line s[0..len) (no CR LF). */
static int header(const char *s, size_t len, struct proxy_req *r, int *nhost,
		  char *why, size_t n)
{
	const char *colon = memchr(s, ':', len), *v, *ve;
	size_t nl;

	if (len && (s[0] == ' ' || s[0] == '\t'))
		REFUSE("folded header lines are refused");
	if (!colon || colon == s)
		REFUSE("a header line without a name");
	nl = (size_t)(colon - s);
	for (size_t i = 0; i < nl; i++)
		if (!token_char(s[i]))
			REFUSE("bad header name");
	v = colon + 1;
	ve = s + len;
	while (v < ve && (*v == ' ' || *v == '\t'))
		v++;
	while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
		ve--;
	if (name_is(s, nl, "transfer-encoding"))
		REFUSE("Transfer-Encoding is refused (send Content-Length)");
	if (name_is(s, nl, "content-length")) {
		long long cl = 0;

		if (r->content_length >= 0 || v == ve || ve - v > 15)
			REFUSE("bad or repeated Content-Length");
		for (const char *q = v; q < ve; q++) {
			if (*q < '0' || *q > '9')
				REFUSE("bad Content-Length");
			cl = cl * 10 + (*q - '0');
		}
		r->content_length = cl;
	}
	if (name_is(s, nl, "host")) {
		char h[PROXY_HOST_MAX];
		int port;

		if (++*nhost > 1)
			REFUSE("more than one Host header");
		if (authority(v, (size_t)(ve - v), r->connect ? r->port : 80, h,
			      sizeof(h), &port) ||
		    strcasecmp(h, r->host) != 0 || port != r->port)
			REFUSE("the Host header names another host than the "
			       "request target");
		r->has_host = true;
	}
	return 0;
}

int proxy_parse_head(const char *buf, size_t len, struct proxy_req *r,
		     char *why, size_t n)
{
	size_t lim = len < PROXY_HEAD_MAX ? len : PROXY_HEAD_MAX;
	long end = head_end(buf, lim);
	const char *eol;
	size_t at;
	int nhost = 0, rc;

	memset(r, 0, sizeof(*r));
	r->content_length = -1;
	if (end < 0)
		REFUSE("a control byte, or a line not ended by CR LF");
	if (end == 0) {
		if (lim == PROXY_HEAD_MAX)
			REFUSE("the request head is over %d bytes",
			       PROXY_HEAD_MAX);
		return -EAGAIN;
	}
	r->head_len = (size_t)end;
	eol = memmem(buf, r->head_len, "\r\n", 2);
	rc = request_line(buf, (size_t)(eol - buf), r, why, n);
	if (rc)
		return rc;
	at = r->hdr_off = (size_t)(eol - buf) + 2;
	while (at < r->head_len - 2) {
		eol = memmem(buf + at, r->head_len - at, "\r\n", 2);
		rc = header(buf + at, (size_t)(eol - (buf + at)), r, &nhost,
			    why, n);
		if (rc)
			return rc;
		at = (size_t)(eol - buf) + 2;
	}
	if (r->connect && r->content_length > 0)
		REFUSE("CONNECT with a body");
	return 0;
}

/* ---- the rewrite for the origin server ---- */

static bool hop_header(const char *s, size_t nl)
{
	static const char *const hop[] = {
		"connection",
		"keep-alive",
		"proxy-connection",
		"proxy-authorization",
		"proxy-authenticate",
		"te",
		"trailer",
		"upgrade",
	};

	for (size_t i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
		if (name_is(s, nl, hop[i]))
			return true;
	return false;
}

static bool put(char *out, size_t n, size_t *at, const char *s, size_t len)
{
	if (*at + len > n)
		return false;
	memcpy(out + *at, s, len);
	*at += len;
	return true;
}

long proxy_rewrite(const char *buf, const struct proxy_req *r, char *out,
		   size_t n)
{
	size_t at = 0, p = r->hdr_off;
	char line[PROXY_HOST_MAX + 32];
	bool ok;

	ok = put(out, n, &at, r->method, strlen(r->method)) &&
	     put(out, n, &at, " ", 1);
	if (!r->path_len || buf[r->path_off] != '/')
		ok = ok && put(out, n, &at, "/", 1);
	ok = ok && put(out, n, &at, buf + r->path_off, r->path_len) &&
	     put(out, n, &at, " HTTP/1.1\r\n", 11);
	while (ok && p < r->head_len - 2) {
		const char *l = buf + p;
		const char *eol = memmem(l, r->head_len - p, "\r\n", 2);
		const char *colon = memchr(l, ':', (size_t)(eol - l));

		if (!hop_header(l, (size_t)(colon - l)))
			ok = put(out, n, &at, l, (size_t)(eol - l) + 2);
		p = (size_t)(eol - buf) + 2;
	}
	if (ok && !r->has_host) {
		int w = r->port == 80
				? snprintf(line, sizeof(line), "Host: %s\r\n",
					   r->host)
				: snprintf(line, sizeof(line),
					   "Host: %s:%d\r\n", r->host, r->port);
		ok = w > 0 && put(out, n, &at, line, (size_t)w);
	}
	ok = ok && put(out, n, &at, "Connection: close\r\n\r\n", 21);
	return ok ? (long)at : -ENOSPC;
}

/* ---- TLS ClientHello: the server_name extension ---- */

struct rd {
	const unsigned char *p;
	size_t left;
};

static bool take(struct rd *r, size_t k, const unsigned char **at)
{
	if (r->left < k)
		return false;
	if (at)
		*at = r->p;
	r->p += k;
	r->left -= k;
	return true;
}

static bool u8(struct rd *r, size_t *v)
{
	const unsigned char *a;

	if (!take(r, 1, &a))
		return false;
	*v = a[0];
	return true;
}

static bool u16(struct rd *r, size_t *v)
{
	const unsigned char *a;

	if (!take(r, 2, &a))
		return false;
	*v = (size_t)a[0] << 8 | a[1];
	return true;
}

/* A sub-reader of the next len bytes. */
static bool sub(struct rd *r, size_t len, struct rd *s)
{
	s->left = len;
	return take(r, len, &s->p);
}

static int server_name(struct rd ext, char *out, size_t n)
{
	struct rd list, nm;
	size_t ll, type, len;

	if (!u16(&ext, &ll) || !sub(&ext, ll, &list) || ext.left)
		return -EINVAL;
	while (list.left) {
		if (!u8(&list, &type) || !u16(&list, &len) ||
		    !sub(&list, len, &nm))
			return -EINVAL;
		if (type != 0)
			continue;
		if (!len || len >= n || memchr(nm.p, 0, len))
			return -EINVAL;
		memcpy(out, nm.p, len);
		out[len] = '\0';
		return 0;
	}
	return -ENOENT;
}

int proxy_sni(const unsigned char *buf, size_t len, char *out, size_t n)
{
	struct rd rec = { buf, len }, hs = { 0 }, body, exts, ext;
	size_t rlen, hlen, l, type;
	const unsigned char *h;

	if (len >= 1 && buf[0] != 0x16)
		return -EINVAL; /* not a handshake record */
	if (len < 5)
		return -EAGAIN;
	if (buf[1] != 3)
		return -EINVAL;
	rlen = (size_t)buf[3] << 8 | buf[4];
	if (rlen < 4 || rlen > 16384 + 2048)
		return -EINVAL;
	if (len < 5 + rlen)
		return -EAGAIN;
	take(&rec, 5, NULL);
	sub(&rec, rlen, &hs);
	if (!take(&hs, 4, &h) || h[0] != 1) /* client_hello */
		return -EINVAL;
	hlen = (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
	if (!sub(&hs, hlen, &body))
		return -EINVAL; /* the hello goes on past this record */
	if (!take(&body, 2 + 32, NULL) || !u8(&body, &l) ||
	    !take(&body, l, NULL) || !u16(&body, &l) || !take(&body, l, NULL) ||
	    !u8(&body, &l) || !take(&body, l, NULL))
		return -EINVAL;
	if (!body.left)
		return -ENOENT; /* no extensions */
	if (!u16(&body, &l) || !sub(&body, l, &exts))
		return -EINVAL;
	while (exts.left) {
		if (!u16(&exts, &type) || !u16(&exts, &l) ||
		    !sub(&exts, l, &ext))
			return -EINVAL;
		if (type == 0)
			return server_name(ext, out, n);
	}
	return -ENOENT;
}
