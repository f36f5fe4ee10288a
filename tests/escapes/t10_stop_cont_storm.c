/* T10: a child of the run sends its parent SIGSTOP/SIGCONT (a pair every
 * 100 us: each kill is a trapped call too, and a storm with no pause only
 * keeps the parent stopped) while the parent makes 2,000 trapped opens
 * (every 20th of the secret, the others of the workdir): group stops in
 * the middle of syscall stops. ward must neither hang nor detach, and every
 * open of the secret must fail. */
#include "escape.h"
#include <signal.h>
#include <sys/wait.h>

int attack(int argc, char **argv)
{
	pid_t parent = getpid(), child;
	long w = 0, i, denied = 0;

	child = fork();
	if (child == 0) {
		for (;;) {
			kill(parent, SIGSTOP);
			kill(parent, SIGCONT);
			usleep(100);
		}
	}
	for (i = 0; i < 2000; i++) {
		int fd = open(i % 20 == 0 ? ARG("secret") : ".", O_RDONLY);
		if (fd >= 0) {
			w += leaked(fd, ARG("token"));
			close(fd);
		} else if (i % 20 == 0) {
			denied++;
		}
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	say("DENIED %ld", denied);
	wins(w, i);
	say("RESULT ok");
	return 0;
}
