/* V01: learn whether the secret exists without opening it: stat, lstat,
 * statx, access, faccessat2, readlink, and listing its directory. The
 * default view does not show the secret's tree: every probe must say
 * ENOENT (trapped or not), and the attempt that matters, stat, too. */
#include "escape.h"
#include <dirent.h>
#include <sys/stat.h>

static void probe(const char *what, long rc)
{
	say("PROBE %s %s", what, rc < 0 ? errname(errno) : "ok");
}

int attack(int argc, char **argv)
{
	const char *secret = ARG("secret"), *sdir = ARG("sdir");
	struct stat st;
	struct statx sx;
	char buf[256];

	probe("lstat", lstat(secret, &st));
	probe("statx", statx(AT_FDCWD, secret, 0, STATX_BASIC_STATS, &sx));
	probe("access", access(secret, F_OK));
	probe("faccessat2", syscall(SYS_faccessat2, AT_FDCWD, secret, F_OK,
				    AT_EACCESS));
	probe("readlink", readlink(secret, buf, sizeof(buf)));
	probe("stat-dir", stat(sdir, &st));
	probe("opendir", open(sdir, O_RDONLY | O_DIRECTORY));
	probe("open-path", open(secret, O_PATH));
	result(stat(secret, &st));
	say("AFTER");
	return 0;
}
