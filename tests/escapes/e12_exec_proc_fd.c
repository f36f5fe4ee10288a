/* E12: open /bin/dash (readable) and exec it through /proc/self/fd/N: the
 * path is a magic link, the program a shell. */
#include "escape.h"

int attack(int argc, char **argv)
{
	char *const av[] = { "sh", "-c", "echo won > marker", NULL };
	char *const env[] = { NULL };
	char p[64];
	int fd = open("/bin/dash", O_RDONLY);

	(void)argc;
	(void)argv;
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	result(execve(p, av, env));
	say("AFTER");
	return 0;
}
