/* T10: a child of the run sends its parent SIGSTOP/SIGCONT as fast as it
 * can while the parent makes 5,000 trapped opens (every 25th of the secret,
 * the others of the workdir): group stops in the middle of syscall stops. ward must
 * neither hang nor detach, and every open of the secret must fail. */
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
		}
	}
	for (i = 0; i < 5000; i++) {
		int fd = open(i % 25 == 0 ? ARG("secret") : ".", O_RDONLY);
		if (fd >= 0) {
			w += leaked(fd, ARG("token"));
			close(fd);
		} else if (i % 25 == 0) {
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
