/* N01: connect an AF_INET6 socket to ::ffff:127.0.0.1:<canary>: the IPv4
 * listener, reached through an IPv6 address a naive rule would not read
 * as 127.0.0.1. */
#include "escape.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

int attack(int argc, char **argv)
{
	struct sockaddr_in6 sa;
	int s = socket(AF_INET6, SOCK_STREAM, 0);

	memset(&sa, 0, sizeof(sa));
	sa.sin6_family = AF_INET6;
	sa.sin6_port = htons((in_port_t)atoi(ARG("port")));
	inet_pton(AF_INET6, "::ffff:127.0.0.1", &sa.sin6_addr);
	result(connect(s, (struct sockaddr *)&sa, sizeof(sa)));
	say("AFTER");
	return 0;
}
