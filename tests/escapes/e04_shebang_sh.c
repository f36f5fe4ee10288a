/* E04: a "#!/bin/sh" script in the workdir: the kernel runs /bin/sh,
 * which the exec policy does not allow. */
#include "escape.h"

int attack(int argc, char **argv)
{
	char *const av[] = { "script", NULL };
	char *const env[] = { NULL };
	int fd = open("script", O_CREAT | O_WRONLY | O_TRUNC, 0755);

	(void)argc;
	(void)argv;
	if (fd < 0 || write(fd, "#!/bin/sh\necho won > marker\n", 28) != 28)
		say("write failed");
	close(fd);
	result(execve("./script", av, env));
	say("AFTER");
	return 0;
}
