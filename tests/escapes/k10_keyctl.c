/* K10: keyctl on the session keyring (kernel keyrings are not per run). */
#include "escape.h"
#include <linux/keyctl.h>

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	result(syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID,
		       KEY_SPEC_SESSION_KEYRING, 0));
	say("AFTER");
	return 0;
}
