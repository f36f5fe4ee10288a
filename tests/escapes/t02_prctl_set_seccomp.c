/* T02: the other door to a filter: prctl(PR_SET_SECCOMP) with a filter
 * that returns ERRNO for everything (a self-inflicted denial of service,
 * and a way to change what ward sees). The guard kills. */
#include "escape.h"
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>

int attack(int argc, char **argv)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1),
	};
	struct sock_fprog prog = { 1, f };

	(void)argc;
	(void)argv;
	result(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0));
	say("AFTER");
	return 0;
}
