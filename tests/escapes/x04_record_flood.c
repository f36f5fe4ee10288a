/* X04: flood ward's record (run with --max-events 20000): four threads
 * make trapped calls as fast as they can, each a row of the audit
 * database, which lives outside every limit of the code's. The run must
 * end at the event limit (a kill, recorded with rule limits.events), not
 * grow the database for as long as it lasts. */
#include "escape.h"

static atomic_long calls;

static void *flood(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = open("/usr/lib/nonexistent-ward-escape-x04", O_RDONLY);
		if (fd >= 0)
			close(fd);
		atomic_fetch_add(&calls, 1);
	}
	return NULL;
}

int attack(int argc, char **argv)
{
	pthread_t th[4];

	(void)argc;
	(void)argv;
	say("RESULT ok");
	for (int i = 0; i < 4; i++)
		if (pthread_create(&th[i], NULL, flood, NULL) != 0)
			return 1;
	/* a minute of flooding under ward's default limit would be ~2
	 * million rows here; the limit ends it long before */
	for (int s = 0; s < 120; s++)
		sleep(1);
	say("CALLS %ld", atomic_load(&calls));
	say("AFTER");
	return 0;
}
