/* K11: add_key into the user keyring. */
#include "escape.h"
#include <linux/keyctl.h>

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	result(syscall(SYS_add_key, "user", "ward-escape", "x", 1,
		       KEY_SPEC_USER_KEYRING));
	say("AFTER");
	return 0;
}
