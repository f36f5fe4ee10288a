/* N14: open a server: bind a loopback port (to be reached from outside,
 * or to shadow a service). */
#include "escape.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

int attack(int argc, char **argv)
{
	struct sockaddr_in sa;
	int s = socket(AF_INET, SOCK_STREAM, 0);

	(void)argc;
	(void)argv;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	result(bind(s, (struct sockaddr *)&sa, sizeof(sa)));
	say("AFTER");
	return 0;
}
