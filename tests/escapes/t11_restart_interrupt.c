/* T11: a signal storm (an interval timer, handler with SA_RESTART) while
 * the thread makes trapped, denied calls: interrupted and restarted
 * syscalls must still be decided (each denied open of the secret fails
 * with EACCES, never EINTR, never success). */
#include "escape.h"
#include <signal.h>
#include <sys/time.h>

static volatile long ticks;

static void tick(int sig)
{
	(void)sig;
	ticks++;
}

int attack(int argc, char **argv)
{
	struct itimerval it = { { 0, 200 }, { 0, 200 } };
	struct sigaction sa;
	long w = 0, other = 0, i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = tick;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	for (i = 0; i < 200; i++) {
		int fd = open(ARG("secret"), O_RDONLY);
		if (fd >= 0) {
			w += leaked(fd, ARG("token"));
			close(fd);
		} else if (errno != EACCES) {
			other++;
		}
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	say("TICKS %ld OTHER-ERRORS %ld", ticks, other);
	errno = EACCES;
	result(other ? 0 : -1);
	wins(w, i);
	say("AFTER");
	return 0;
}
