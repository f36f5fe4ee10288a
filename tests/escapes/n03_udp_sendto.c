/* N03: UDP sendto with an address and no connect (no connect to judge). */
#include "escape.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

int attack(int argc, char **argv)
{
	struct sockaddr_in sa;
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((in_port_t)atoi(ARG("uport")));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	result(sendto(s, "x", 1, 0, (struct sockaddr *)&sa, sizeof(sa)));
	say("AFTER");
	return 0;
}
