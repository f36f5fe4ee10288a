/* N06: socket(AF_NETLINK, NETLINK_ROUTE): the host's routes, links and
 * addresses. */
#include "escape.h"
#include <linux/netlink.h>
#include <sys/socket.h>

int attack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	result(socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE));
	say("AFTER");
	return 0;
}
