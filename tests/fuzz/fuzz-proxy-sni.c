/*
 * fuzz-proxy-sni.c - libFuzzer target for the egress proxy's TLS
 * ClientHello server-name parser (tracer/proxyparse.c). `make fuzz`.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "../../tracer/proxy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[256];
	int rc = proxy_sni(data, size, name, sizeof(name));

	if (rc == 0 && (strlen(name) == 0 || strlen(name) >= sizeof(name)))
		__builtin_trap();
	if (rc != 0 && rc != -ENOENT && rc != -EAGAIN && rc != -EINVAL)
		__builtin_trap();
	return 0;
}
