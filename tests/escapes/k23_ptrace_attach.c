/* K23: ptrace(PTRACE_ATTACH) the process outside the run (same uid). */
#include "escape.h"
#include <sys/ptrace.h>

int attack(int argc, char **argv)
{
	result(ptrace(PTRACE_ATTACH, atoi(ARG("bystander")), NULL, NULL));
	say("AFTER");
	return 0;
}
