/* N02: the plain form: connect to 127.0.0.1:<canary>. */
#include "escape.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

int attack(int argc, char **argv)
{
	struct sockaddr_in sa;
	int s = socket(AF_INET, SOCK_STREAM, 0);

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((in_port_t)atoi(ARG("port")));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	result(connect(s, (struct sockaddr *)&sa, sizeof(sa)));
	say("AFTER");
	return 0;
}
