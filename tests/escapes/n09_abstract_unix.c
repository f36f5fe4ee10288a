/* N09: connect to an abstract unix socket of the host (the test's
 * listener @ward-escape-...): abstract names live in the network
 * namespace, not the file system. */
#include "escape.h"
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>

int attack(int argc, char **argv)
{
	struct sockaddr_un sa;
	const char *name = ARG("abstract");
	int s = socket(AF_UNIX, SOCK_STREAM, 0);

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path + 1, name, strlen(name));
	result(connect(s, (struct sockaddr *)&sa,
		       (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				   strlen(name))));
	say("AFTER");
	return 0;
}
