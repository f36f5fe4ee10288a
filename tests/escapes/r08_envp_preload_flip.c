/* R08: the environment of an allowed execve holds one entry that a thread
 * of the parent flips between a harmless name and LD_PRELOAD=<workdir
 * object> while a vfork()ed child execs the static exec_probe, which
 * creates the workdir marker when LD_PRELOAD reaches it (as a preloaded
 * object's constructor would in a dynamic program). ward must strip
 * LD_PRELOAD from what the new program gets, whatever the timing: RACE_N
 * whole execs. The entry is in a MAP_SHARED page. */
#include "escape.h"
#include <sys/mman.h>

int attack(int argc, char **argv)
{
	char *entry = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			   MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return env_race_thread(entry == MAP_FAILED ? NULL : entry, argv, argc);
}
