/* E06: exec a setuid-root program of the system (/usr/bin/passwd, else
 * /bin/su): not in exec.allow; and no_new_privs would keep it unprivileged
 * anyway. */
#include "escape.h"

int attack(int argc, char **argv)
{
	char *const av[] = { "passwd", "--status", "root", NULL };
	char *const env[] = { NULL };
	const char *p = access("/usr/bin/passwd", F_OK) == 0 ? "/usr/bin/passwd"
							     : "/bin/su";

	(void)argc;
	(void)argv;
	result(execve(p, av, env));
	say("AFTER");
	return 0;
}
