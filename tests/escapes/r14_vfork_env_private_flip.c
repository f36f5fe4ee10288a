/* R14: as R08, but the flipped environment entry lives in the parent's
 * private anonymous memory (the heap), not a MAP_SHARED page. A vfork()ed
 * child's environment may stay in place only while no task but the
 * child can write it (its vforking thread waits in the kernel); here a
 * second thread of the parent can, so ward must still copy and strip:
 * RACE_N whole execs of the static exec_probe, which creates the workdir
 * marker when LD_PRELOAD reaches its environment. */
#include "escape.h"

int attack(int argc, char **argv)
{
	return env_race_thread(malloc(4096), argv, argc);
}
