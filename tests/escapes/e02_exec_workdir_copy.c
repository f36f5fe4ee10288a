/* E02: copy a shell into the writable workdir and execve it by path. */
#include "escape.h"
#include <sys/stat.h>

int attack(int argc, char **argv)
{
	char *const av[] = { "sh", "-c", "echo won > marker", NULL };
	char *const env[] = { NULL };
	int out = open("mysh", O_CREAT | O_WRONLY | O_TRUNC, 0755);

	(void)argc;
	(void)argv;
	copy_into(out, "/bin/dash");
	close(out);
	result(execve("./mysh", av, env));
	say("AFTER");
	return 0;
}
