/* E08: as E07 with LD_AUDIT (the loader runs la_version() of the named
 * object, before the program). */
#include "escape.h"
#include <sys/wait.h>

unsigned int la_version(unsigned int v)
{
	int fd = open("marker", O_CREAT | O_WRONLY, 0644);

	if (fd >= 0)
		close(fd);
	return v;
}

int attack(int argc, char **argv)
{
	char aud[4096];
	char *const av[] = { "uname", NULL };
	char *const env[] = { aud, NULL };

	snprintf(aud, sizeof(aud), "LD_AUDIT=%s/%s", ARG("wd"), ARG("so"));
	run_child("/usr/bin/uname", av, env, 1);
	say("RESULT ok");
	say("AFTER");
	return 0;
}
