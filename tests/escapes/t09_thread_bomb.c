/* T09: 1000 threads (more than the process limit allows), each making
 * trapped calls (one open of the secret, 20 of the workdir): the
 * supervisor must stay alive and decide every one; the run must end. */
#include "escape.h"

static const char *secret, *token;
static long got;

static void *worker(void *unused)
{
	(void)unused;
	int fd = open(secret, O_RDONLY);

	if (fd >= 0) {
		__atomic_add_fetch(&got, leaked(fd, token), __ATOMIC_RELAXED);
		close(fd);
	}
	for (int i = 0; i < 20; i++) {
		fd = open(".", O_RDONLY);
		if (fd >= 0)
			close(fd);
	}
	return NULL;
}

int attack(int argc, char **argv)
{
	pthread_t t[1000];
	int n = 0, failed = 0;

	secret = ARG("secret");
	token = ARG("token");
	for (int i = 0; i < 1000; i++) {
		if (pthread_create(&t[n], NULL, worker, NULL) == 0)
			n++;
		else
			failed++;
	}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	say("THREADS %d FAILED %d", n, failed);
	say("RESULT ok");
	wins(got, n);
	say("AFTER");
	return 0;
}
