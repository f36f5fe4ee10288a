/*
 * dbq.h - the first value of an SQL query over a database file, through
 * the sqlite3 command (tests that read what a run recorded).
 */
#ifndef WARD_TESTS_DBQ_H
#define WARD_TESTS_DBQ_H

#include <stdio.h>
#include <string.h>

/* The first value of sql over db into out (one line, no newline), or "" */
__attribute__((unused)) static const char *db_first(const char *db,
						    const char *sql, char *out,
						    size_t n)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "sqlite3 '%s' \"%s\"", db, sql);
	out[0] = '\0';
	FILE *f = popen(cmd, "r");
	if (f) {
		if (!fgets(out, (int)n, f))
			out[0] = '\0';
		out[strcspn(out, "\n")] = '\0';
		pclose(f);
	}
	return out;
}

#endif
