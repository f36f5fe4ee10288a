/* N04: sendmmsg: the second message of the vector carries the canary's
 * address (the first a bogus one): every msg_name must be judged. */
#include "escape.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

int attack(int argc, char **argv)
{
	struct sockaddr_in a[2];
	struct iovec iov = { "x", 1 };
	struct mmsghdr m[2];
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	memset(a, 0, sizeof(a));
	memset(m, 0, sizeof(m));
	for (int i = 0; i < 2; i++) {
		a[i].sin_family = AF_INET;
		a[i].sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		m[i].msg_hdr.msg_name = &a[i];
		m[i].msg_hdr.msg_namelen = sizeof(a[i]);
		m[i].msg_hdr.msg_iov = &iov;
		m[i].msg_hdr.msg_iovlen = 1;
	}
	a[0].sin_port = htons(9); /* discard: nobody listens */
	a[1].sin_port = htons((in_port_t)atoi(ARG("uport")));
	result(sendmmsg(s, m, 2, 0));
	say("AFTER");
	return 0;
}
