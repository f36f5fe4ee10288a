/* E07: exec an allowed program (uname) with LD_PRELOAD naming a workdir
 * object (this file: its constructor creates the workdir marker in the
 * new program). ward strips LD_PRELOAD from every exec. */
#include "escape.h"
#include <sys/wait.h>

__attribute__((constructor)) static void payload(void)
{
	payload_if_asked();
}

int attack(int argc, char **argv)
{
	char pre[4096];
	char *const av[] = { "uname", NULL };
	char *const env[] = { pre, "ESC_PAYLOAD=1", NULL };

	snprintf(pre, sizeof(pre), "LD_PRELOAD=%s/%s", ARG("wd"), ARG("so"));
	run_child("/usr/bin/uname", av, env, 0);
	say("RESULT ok");
	say("AFTER");
	return 0;
}
