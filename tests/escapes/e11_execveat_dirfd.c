/* E11: execveat with a directory fd on /bin and the name "sh": the path
 * string alone ("sh") is not what runs. */
#include "escape.h"

int attack(int argc, char **argv)
{
	char *const av[] = { "sh", "-c", "echo won > marker", NULL };
	char *const env[] = { NULL };
	int dir = open("/bin", O_PATH | O_DIRECTORY);

	(void)argc;
	(void)argv;
	result(syscall(SYS_execveat, dir, "sh", av, env, 0));
	say("AFTER");
	return 0;
}
