/* N08: socket(AF_VSOCK): the hypervisor's sockets (this VM's agent
 * listens on vsock ports). */
#include "escape.h"
#include <sys/socket.h>

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	result(socket(AF_VSOCK, SOCK_STREAM, 0));
	say("AFTER");
	return 0;
}
