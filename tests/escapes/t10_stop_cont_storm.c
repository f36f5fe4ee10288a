/* T10: a child of the run sends its parent SIGSTOP/SIGCONT (a pair every
 * 100 us: each kill is a trapped call too, and a storm with no pause only
 * keeps the parent stopped) while the parent makes 2,000 trapped opens
 * (every 20th of the secret, the others of the workdir): group stops in
 * the middle of syscall stops. ward must neither hang nor detach, and every
 * open of the secret must fail. The storm ends on a flag the parent sets,
 * with a last SIGCONT: a parent that killed the child between its SIGSTOP
 * and its SIGCONT would stay stopped for good (natively too, in a shorter
 * window). */
#include "escape.h"
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

int attack(int argc, char **argv)
{
	pid_t parent = getpid(), child;
	long w = 0, i, denied = 0;
	atomic_int *stop = mmap(NULL, sizeof(*stop), PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (stop == MAP_FAILED)
		return result(-1), 1;
	child = fork();
	if (child == 0) {
		while (!atomic_load(stop)) {
			kill(parent, SIGSTOP);
			kill(parent, SIGCONT);
			usleep(100);
		}
		kill(parent, SIGCONT);
		_exit(0);
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
	atomic_store(stop, 1);
	waitpid(child, NULL, 0);
	say("DENIED %ld", denied);
	wins(w, i);
	say("RESULT ok");
	return 0;
}
