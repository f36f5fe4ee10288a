/*
 * recguard.c - the audit database stays outside anything the code can
 * write (docs/security.md, "The record").
 */
#include "tools/run/recguard.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/policy.h"

/* path is dir or below it. */
static int inside(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	return !strncmp(path, dir, n) &&
	       (path[n] == '/' || path[n] == '\0' || n == 1);
}

static int protect_all(struct policy *pol, const char *db)
{
	static const char *const suffix[] = { "",	  "-wal", "-shm",
					      "-journal", ".key", ".key.*" };
	char path[PATH_MAX + 16];
	int r = 0;

	for (size_t i = 0; !r && i < sizeof(suffix) / sizeof(suffix[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", db, suffix[i]);
		r = policy_protect(pol, path);
	}
	return r;
}

/* The real path of path, which may not exist yet: the longest existing
 * leading part resolved, the rest appended. NULL when nothing resolves. */
static char *resolve_far(const char *path)
{
	char head[PATH_MAX], *real, *out = NULL;
	size_t n = strlen(path);

	if (n >= sizeof(head))
		return NULL;
	memcpy(head, path, n + 1);
	for (;;) {
		char *slash;

		real = realpath(head, NULL);
		if (real) {
			if (asprintf(&out, "%s%s", real, path + strlen(head)) <
			    0)
				out = NULL;
			free(real);
			return out;
		}
		slash = strrchr(head, '/');
		if (!slash || slash == head)
			return NULL;
		*slash = '\0';
	}
}

/* The seal log ($WARD_SEAL_LOG, absolute: ward_seal_log_arg) is ward's
 * too: outside the workdir, and neither readable nor writable by the
 * code (a line appended by the code would be a forged anchor). */
static int guard_seal_log(struct policy *pol, const char *workdir, char *msg,
			  size_t n)
{
	const char *log = getenv("WARD_SEAL_LOG");
	char *real;
	int r;

	if (!log || !log[0])
		return 0;
	real = resolve_far(log);
	if (inside(log, workdir) || (real && inside(real, workdir))) {
		snprintf(msg, n,
			 "seal log %s is inside the workdir %s, where the "
			 "code could write it: choose a seal log outside the "
			 "workdir (--seal-log, $WARD_SEAL_LOG)",
			 log, workdir);
		free(real);
		return -EPERM;
	}
	r = policy_protect(pol, log);
	if (!r && real && strcmp(real, log))
		r = policy_protect(pol, real);
	free(real);
	if (r)
		snprintf(msg, n, "out of memory");
	return r;
}

int ward_guard_record(struct policy *pol, const char *db, const char *workdir,
		      char *msg, size_t n)
{
	char abs[PATH_MAX], cwd[PATH_MAX];
	char *real;
	int r = 0;

	if (db[0] == '/')
		snprintf(abs, sizeof(abs), "%s", db);
	else if (getcwd(cwd, sizeof(cwd)))
		snprintf(abs, sizeof(abs), "%s/%s", cwd, db);
	else {
		snprintf(msg, n, "%s: cannot resolve the database's path", db);
		return -EINVAL;
	}
	real = resolve_far(abs);
	if (inside(abs, workdir) || (real && inside(real, workdir))) {
		snprintf(msg, n,
			 "audit database %s is inside the workdir %s, where "
			 "the code could write it: choose a database outside "
			 "the workdir (--db, $WARD_DB)",
			 db, workdir);
		free(real);
		return -EPERM;
	}
	r = protect_all(pol, abs);
	if (!r && real && strcmp(real, abs))
		r = protect_all(pol, real);
	free(real);
	if (r) {
		snprintf(msg, n, "out of memory");
		return r;
	}
	return guard_seal_log(pol, workdir, msg, n);
}
