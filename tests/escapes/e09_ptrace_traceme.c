/* E09: ptrace(PTRACE_TRACEME): take the tracer slot (or learn that it is
 * taken). ptrace is in the kill floor. */
#include "escape.h"
#include <sys/ptrace.h>

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	result(ptrace(PTRACE_TRACEME, 0, NULL, NULL));
	say("AFTER");
	return 0;
}
