/* N11: the same socket through a symlink in the workdir ($WORKDIR/s ->
 * the outside socket): the name the code gives is inside. */
#include "escape.h"
#include <sys/socket.h>
#include <sys/un.h>

int attack(int argc, char **argv)
{
	struct sockaddr_un sa;
	int s = socket(AF_UNIX, SOCK_STREAM, 0);

	if (symlink(ARG("usock"), "s") < 0)
		say("symlink: %s", errname(errno));
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s", ARG("wd"));
	result(connect(s, (struct sockaddr *)&sa, sizeof(sa)));
	say("AFTER");
	return 0;
}
