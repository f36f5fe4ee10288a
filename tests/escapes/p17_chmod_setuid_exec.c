/* P17: copy a shell into the workdir, make it setuid (we own it), exec it:
 * exec from the workdir is not allowed, and no_new_privs/nosuid would make
 * the bit inert anyway. The shell would create the workdir marker. */
#include "escape.h"
#include <sys/stat.h>

int attack(int argc, char **argv)
{
	char *const av[] = { "sh", "-c", "echo won > marker", NULL };
	char *const env[] = { NULL };
	int out = open("suid-sh", O_CREAT | O_WRONLY | O_TRUNC, 0755);

	(void)argc;
	(void)argv;
	copy_into(out, "/bin/dash");
	close(out);
	say("CHMOD %s", chmod("suid-sh", 04755) == 0 ? "ok" : errname(errno));
	result(execve("./suid-sh", av, env));
	say("AFTER");
	return 0;
}
