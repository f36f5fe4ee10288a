/* N10: connect to a unix socket outside the workdir (the test's listener,
 * mode 0777, in the secret's directory; think /run/docker.sock). */
#include "escape.h"
#include <sys/socket.h>
#include <sys/un.h>

int attack(int argc, char **argv)
{
	struct sockaddr_un sa;
	int s = socket(AF_UNIX, SOCK_STREAM, 0);

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", ARG("usock"));
	result(connect(s, (struct sockaddr *)&sa, sizeof(sa)));
	say("AFTER");
	return 0;
}
