/* P21: set a user xattr on the writable canary by name. */
#include "escape.h"
#include <sys/xattr.h>

int attack(int argc, char **argv)
{
	result(setxattr(ARG("rw"), "user.pwned", "1", 1, 0));
	say("AFTER");
	return 0;
}
