/*
 * cmd_merge.c - `ward merge A.db B.db... -o ALL.db`: the runs of several
 * databases in one, each still verifiable with the key and in the chain
 * of runs its own database gave it (audit/merge.c).
 */
#include "tools/cmds.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/audit.h"
#include "common/log.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ward merge DB... -o OUT.db\n"
		"\n"
		"Copy every run of each DB into OUT.db (made if missing): rows, hashes\n"
		"and seals exactly as recorded. Each DB's chain keeps its identity: its\n"
		"key goes into OUT.db.keys (mode 0600, beside OUT.db.key) and its head\n"
		"into OUT.db's ward_meta, so `ward verify --all --db OUT.db` checks every\n"
		"run with the key that sealed it and each chain of runs against its own\n"
		"head. The DBs are only read.\n"
		"\n"
		"  DB          a ward database, its key beside it (DB.key); a database\n"
		"              merged before brings the chains merged into it\n"
		"  -o, --output OUT.db  the database to merge into\n"
		"  -h, --help  this text\n"
		"\n"
		"Refused, nothing of that DB merged: a run id OUT.db or another DB holds\n"
		"already (duplicates), a chain merged before, a run still running, a\n"
		"DB of another schema version, a DB whose key is not at hand. Each DB\n"
		"is merged in one transaction, in the order given; the ids of all are\n"
		"checked for duplicates before the first is merged.\n"
		"\n"
		"exit status: 0 when every DB was merged, 125 otherwise (the message\n"
		"says which DB and why).\n");
}

struct src_ids {
	const char *path;
	struct audit_idlist ids;
};

static int collect(const struct audit_run *r, void *arg)
{
	return audit_idlist_add(arg, r->id);
}

static void read_ids(const char *path, struct audit_idlist *ids)
{
	char err[512];
	struct audit *a;

	if (audit_open(path, true, &a, err, sizeof(err)))
		die("merge: %s", err);
	if (audit_runs_each(a, 0, collect, ids))
		die("merge: %s: %s", path, audit_errmsg(a));
	audit_close(a);
}

struct tagged_id {
	const char *id, *path;
};

static int by_id(const void *x, const void *y)
{
	return strcmp(((const struct tagged_id *)x)->id,
		      ((const struct tagged_id *)y)->id);
}

/* Every run id once among the sources and the output: said before
 * anything is merged. */
static void no_duplicates(struct src_ids *s, int n)
{
	size_t total = 0, k = 0;
	struct tagged_id *all;

	for (int i = 0; i < n; i++)
		total += s[i].ids.n;
	all = calloc(total + 1, sizeof(*all));
	if (!all)
		die("out of memory");
	for (int i = 0; i < n; i++)
		for (size_t j = 0; j < s[i].ids.n; j++)
			all[k++] =
				(struct tagged_id){ s[i].ids.id[j], s[i].path };
	qsort(all, total, sizeof(*all), by_id);
	for (size_t i = 1; i < total; i++)
		if (!strcmp(all[i].id, all[i - 1].id))
			die("merge: run %s is in both %s and %s: a run is "
			    "merged once (duplicates refused; nothing was "
			    "merged)",
			    all[i].id, all[i - 1].path, all[i].path);
	free(all);
}

int ward_cmd_merge(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, 0, 'o' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	const char *out = NULL;
	struct src_ids *s;
	struct audit *dst;
	char err[512];
	int c, n;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'h': usage(stdout); return 0;
		default:
			die("merge: %s: unknown option or missing value (see "
			    "`ward merge --help`)",
			    argv[optind - 1]);
		}
	}
	n = argc - optind;
	if (!out || n < 1)
		die("merge: give the databases and -o OUT.db (see `ward merge "
		    "--help`)");
	s = calloc((size_t)n + 1, sizeof(*s));
	if (!s)
		die("out of memory");
	for (int i = 0; i < n; i++) {
		s[i].path = argv[optind + i];
		read_ids(s[i].path, &s[i].ids);
	}
	s[n].path = out;
	if (!access(out, F_OK))
		read_ids(out, &s[n].ids);
	no_duplicates(s, n + 1);
	if (audit_open(out, false, &dst, err, sizeof(err)))
		die("merge: %s", err);
	for (int i = 0; i < n; i++) {
		char abs[PATH_MAX];
		struct audit *src;
		long long runs;

		if (!realpath(s[i].path, abs))
			die("merge: %s: %s", s[i].path, strerror(errno));
		if (audit_open(s[i].path, true, &src, err, sizeof(err)))
			die("merge: %s", err);
		if (audit_merge(dst, src, abs, &runs))
			die("merge: %s%s", audit_errmsg(dst),
			    i ? " (the databases before it are merged)" : "");
		audit_close(src);
		printf("merged %lld run%s from %s\n", runs,
		       runs == 1 ? "" : "s", s[i].path);
	}
	audit_close(dst);
	for (int i = 0; i <= n; i++)
		free(s[i].ids.id);
	free(s);
	return 0;
}
