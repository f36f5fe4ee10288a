/*
 * proxy.h - the egress proxy's parsers (proxyparse.c): what the code sends
 * the proxy, read defensively. They only read: no allocation, no I/O, every
 * length bounded by the caller's buffer. Fuzzed by tests/fuzz (make fuzz).
 */
#ifndef WARD_TRACER_PROXY_H
#define WARD_TRACER_PROXY_H

#include <stdbool.h>
#include <stddef.h>

#define PROXY_HEAD_MAX 16384 /* a request's line and headers, in bytes */
#define PROXY_HOST_MAX 256

/* One request head, as parsed. */
struct proxy_req {
	bool connect;		   /* CONNECT host:port */
	char method[16];	   /* "GET", "CONNECT", ... */
	char host[PROXY_HOST_MAX]; /* the target's host, as written */
	int port;		   /* the target's port (80 by default) */
	size_t path_off, path_len; /* plain HTTP: "/path?q" in the head */
	size_t hdr_off;		   /* the first header line */
	size_t head_len;	   /* through the blank line */
	long long content_length;  /* -1: none */
	bool has_host;		   /* a Host header was given */
};

/*
 * Parse buf[0..len) as an HTTP/1.x proxy request head: "CONNECT host:port
 * HTTP/1.1" or "METHOD http://host[:port]/path HTTP/1.x", then headers,
 * then a blank line. Strict: CR LF line ends only, no control bytes, no
 * folded headers, no userinfo, a Host header (at most one) naming the same
 * host and port as the target, one Content-Length at most, no
 * Transfer-Encoding. Returns 0 (r filled), -EAGAIN (the head is not
 * complete yet and may still be), -EINVAL (refused: why says why; also
 * when PROXY_HEAD_MAX bytes hold no complete head).
 */
int proxy_parse_head(const char *buf, size_t len, struct proxy_req *r,
		     char *why, size_t n);

/*
 * The server name of a TLS ClientHello at the start of buf[0..len) (the
 * first record). Returns 0 with name (NUL-terminated, as sent) in out,
 * -ENOENT (a ClientHello without a server name), -EAGAIN (the record is
 * not complete yet), -EINVAL (not a ClientHello, or malformed, or the
 * hello does not fit in its first record).
 */
int proxy_sni(const unsigned char *buf, size_t len, char *out, size_t n);

/* The request head rewritten for the origin server (plain HTTP):
 * "METHOD /path HTTP/1.1", the headers without hop-by-hop and Proxy-*
 * ones, a Host header if there was none, "Connection: close". Returns the
 * length written to out, or -ENOSPC. */
long proxy_rewrite(const char *buf, const struct proxy_req *r, char *out,
		   size_t n);

#endif
