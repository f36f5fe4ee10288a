/* V03: look for other runs and the host's processes: the cgroup tree
 * (every run's slot and usage), /proc of a process outside the run (the
 * bystander), the run's own cgroup names. The attempt that matters:
 * listing /sys/fs/cgroup, which must not exist inside. */
#include "escape.h"
#include <sys/stat.h>

int attack(int argc, char **argv)
{
	char path[64], buf[4096];
	struct stat st;
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%s", ARG("bystander"));
	say("PROBE bystander %s", stat(path, &st) < 0 ? errname(errno) : "ok");
	fd = open("/proc/self/cgroup", O_RDONLY);
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	buf[n > 0 ? n : 0] = 0;
	say("CGROUP %s", strstr(buf, "ward-slot") ? "slot named" : "no slot");
	result(open("/sys/fs/cgroup", O_RDONLY | O_DIRECTORY));
	say("AFTER");
	return 0;
}
