/* V02: find the host's path of the workdir, or anything of the host's
 * tree: the mount tables, the environment, the cwd, the maps of the
 * process (not its cmdline: the runner's arguments hold the secret's
 * token). mountinfo names each mount's source directory: it must be
 * refused (the attempt that matters); the rest is printed for the runner,
 * which checks that the host directory of the workdir is in none of it. */
#include "escape.h"

static void dump(const char *path)
{
	char buf[65536];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0) {
		say("FILE %s %s", path, errname(errno));
		return;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	for (char *p = buf; p < buf + (n > 0 ? n : 0); p++)
		if (*p == 0)
			*p = ' ';
	say("FILE %s\n%s", path, buf);
}

int attack(int argc, char **argv)
{
	char cwd[4096];

	(void)argc;
	(void)argv;
	dump("/proc/self/mounts");
	dump("/proc/self/mountstats");
	dump("/proc/self/environ");
	dump("/proc/self/maps");
	dump("/proc/1/mountinfo");
	say("CWD %s", getcwd(cwd, sizeof(cwd)) ? cwd : "?");
	result(open("/proc/self/mountinfo", O_RDONLY));
	say("AFTER");
	return 0;
}
