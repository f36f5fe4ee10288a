/* K07: bpf(BPF_PROG_LOAD): kernel programs (and the verifier's attack
 * surface). The floor kills. */
#include "escape.h"
#include <linux/bpf.h>

int attack(int argc, char **argv)
{
	union bpf_attr a;

	(void)argc;
	(void)argv;
	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	result(syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof(a)));
	say("AFTER");
	return 0;
}
