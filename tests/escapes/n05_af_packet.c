/* N05: socket(AF_PACKET): raw frames below IP. */
#include "escape.h"
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <sys/socket.h>

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	result(socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL)));
	say("AFTER");
	return 0;
}
