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

/* The files ward keeps for itself: the database's, or the seal log. */
static const char *const db_files[] = { "",	"-wal",	  "-shm", "-journal",
					".key", ".key.*", NULL };
static const char *const one_file[] = { "", NULL };

/*
 * One of ward's own files (abs; named name to the user): refused inside
 * the workdir (what it is, and the option that moves it, say so), else
 * each of abs + suffix, by the path given and by its real path, in the
 * policy's floor.
 */
static int guard_file(struct policy *pol, const char *abs, const char *name,
		      const char *workdir, const char *what, const char *how,
		      const char *const *suffix, char *msg, size_t n)
{
	char *real = resolve_far(abs), path[PATH_MAX + 16];
	int r = 0;

	if (inside(abs, workdir) || (real && inside(real, workdir))) {
		snprintf(msg, n,
			 "%s %s is inside the workdir %s, where the code "
			 "could write it: choose a %s outside the workdir (%s)",
			 what, name, workdir,
			 strcmp(what, "audit database") ? what : "database",
			 how);
		free(real);
		return -EPERM;
	}
	for (const char *base = abs; !r && base;
	     base = base == abs && real && strcmp(real, abs) ? real : NULL)
		for (size_t i = 0; !r && suffix[i]; i++) {
			snprintf(path, sizeof(path), "%s%s", base, suffix[i]);
			r = policy_protect(pol, path);
		}
	free(real);
	if (r)
		snprintf(msg, n, "out of memory");
	return r;
}

int ward_guard_record(struct policy *pol, const char *db, const char *workdir,
		      char *msg, size_t n)
{
	char abs[PATH_MAX], cwd[PATH_MAX];
	const char *log;
	int r;

	if (db[0] == '/')
		snprintf(abs, sizeof(abs), "%s", db);
	else if (getcwd(cwd, sizeof(cwd)))
		snprintf(abs, sizeof(abs), "%s/%s", cwd, db);
	else {
		snprintf(msg, n, "%s: cannot resolve the database's path", db);
		return -EINVAL;
	}
	r = guard_file(pol, abs, db, workdir, "audit database",
		       "--db, $WARD_DB", db_files, msg, n);
	/* the seal log ($WARD_SEAL_LOG, absolute: ward_seal_log_arg): a
	 * line the code appended would be a forged anchor */
	log = getenv("WARD_SEAL_LOG");
	if (!r && log && log[0])
		r = guard_file(pol, log, log, workdir, "seal log",
			       "--seal-log, $WARD_SEAL_LOG", one_file, msg, n);
	return r;
}
