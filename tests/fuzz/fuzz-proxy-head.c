/*
 * fuzz-proxy-head.c - libFuzzer target for the egress proxy's request
 * head parser and its rewrite (tracer/proxyparse.c): any bytes the code
 * sends the proxy. `make fuzz` builds and runs it.
 */
#include <stdint.h>
#include <string.h>

#include "../../tracer/proxy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char out[PROXY_HEAD_MAX + PROXY_HOST_MAX + 64];
	struct proxy_req r;
	char why[192];

	if (proxy_parse_head((const char *)data, size, &r, why, sizeof(why)) ==
	    0) {
		/* what a parsed head promises the rewrite */
		if (r.head_len > size || r.head_len > PROXY_HEAD_MAX ||
		    r.port < 1 || r.port > 65535 || !r.host[0] ||
		    memchr(r.host, '\r', strlen(r.host)))
			__builtin_trap();
		if (!r.connect &&
		    proxy_rewrite((const char *)data, &r, out, sizeof(out)) < 0)
			__builtin_trap();
	}
	return 0;
}
