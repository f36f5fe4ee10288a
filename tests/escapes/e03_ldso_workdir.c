/* E03: run a workdir copy of a shell through the dynamic loader
 * (/lib64/ld-linux-x86-64.so.2 ./mysh): the exec is of ld.so, and the
 * loader maps the workdir file itself. */
#include "escape.h"
#include <sys/stat.h>

int attack(int argc, char **argv)
{
	char *const av[] = { "ld.so", "./mysh", "-c", "echo won > marker",
			     NULL };
	char *const env[] = { NULL };
	int out = open("mysh", O_CREAT | O_WRONLY | O_TRUNC, 0644);

	(void)argc;
	(void)argv;
	copy_into(out, "/bin/dash");
	close(out);
	result(execve("/lib64/ld-linux-x86-64.so.2", av, env));
	say("AFTER");
	return 0;
}
