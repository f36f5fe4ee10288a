/* K08: perf_event_open on this process: counters and side channels. */
#include "escape.h"
#include <linux/perf_event.h>

int attack(int argc, char **argv)
{
	struct perf_event_attr a;

	(void)argc;
	(void)argv;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	result(syscall(SYS_perf_event_open, &a, 0, -1, -1, 0));
	say("AFTER");
	return 0;
}
