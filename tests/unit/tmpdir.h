/*
 * tmpdir.h - a unit test's temporary directory.
 *   tmpdir_make("name")   makes /tmp/ward-test-name-XXXXXX (0 or -1)
 *   tpath("file")         a path in it (one of 4 static buffers)
 *   tmpdir_remove()       removes it and everything in it
 */
#ifndef WARD_TESTS_TMPDIR_H
#define WARD_TESTS_TMPDIR_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

static char tmpdir[128];

__attribute__((unused)) static int tmpdir_make(const char *name)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/ward-test-%s-XXXXXX", name);
	return mkdtemp(tmpdir) ? 0 : -1;
}

__attribute__((unused)) static const char *tpath(const char *name)
{
	static char buf[4][512];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", tmpdir, name);
	return buf[i];
}

static int tmpdir_rm_one(const char *p, const struct stat *st, int flag,
			 struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p);
}

__attribute__((unused)) static void tmpdir_remove(void)
{
	nftw(tmpdir, tmpdir_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
