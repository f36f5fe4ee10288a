/* E05: a "#!/usr/bin/python3" script in the workdir: the interpreter is
 * allowed, but the program executed is a file the code just wrote in its
 * writable workdir (exec from the workdir is denied by default). */
#include "escape.h"

int attack(int argc, char **argv)
{
	static const char s[] = "#!/usr/bin/python3\nopen('marker', 'w')\n";
	char *const av[] = { "script", NULL };
	char *const env[] = { NULL };
	int fd = open("script.py", O_CREAT | O_WRONLY | O_TRUNC, 0755);

	(void)argc;
	(void)argv;
	if (fd < 0 || write(fd, s, sizeof(s) - 1) != (ssize_t)sizeof(s) - 1)
		say("write failed");
	close(fd);
	result(execve("./script.py", av, env));
	say("AFTER");
	return 0;
}
