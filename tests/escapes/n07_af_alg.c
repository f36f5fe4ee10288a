/* N07: socket(AF_ALG): the kernel crypto API (a long list of CVEs). */
#include "escape.h"
#include <sys/socket.h>

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	result(socket(AF_ALG, SOCK_SEQPACKET, 0));
	say("AFTER");
	return 0;
}
