/*
 * cmd_diff.c - `ward diff RUN1 RUN2`: do two recorded runs do the same
 * things? (rundiff.h says how they are compared.)
 */
#include "tools/cmds.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "tools/review/rundiff.h"
#include "tools/review/view.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ward diff RUN1 RUN2 [--db PATH] [--json]\n"
		"\n"
		"Compare two recorded runs, from the database alone: their decisions,\n"
		"exits and outputs. `ward rerun` uses the same comparison.\n"
		"\n"
		"  RUN1, RUN2        run ids, unique prefixes, or last\n"
		"  --db PATH         audit database (default as for `ward run`)\n"
		"  --json            one JSON object instead of text\n"
		"  -h, --help        this text\n"
		"\n"
		"Decisions are normalized before they are compared, so that two executions\n"
		"of the same code match: processes and threads by order of appearance (pids\n"
		"and tids never compared), each decision as its syscall, arguments, target,\n"
		"decision, rule and errno, with fd numbers, pids, addresses (0x and 6+ hex\n"
		"digits), the run's workdir ($WORKDIR), Python's temporary names in it\n"
		"and /proc/PID masked; times, sequence numbers, reasons and backtraces are\n"
		"left out. Then per process in order: the first decision that differs is\n"
		"the first divergence, shown for both runs. Exit status, code and signal,\n"
		"and stdout and stderr byte for byte, are compared too.\n"
		"\n"
		"When the runs differ, hints say when the difference may be nondeterminism\n"
		"rather than a change (heuristics, labelled as such): threads, recorded\n"
		"calls related to time or randomness (getrandom, clock_gettime, reads of\n"
		"/dev/urandom, ...), output that differs only in digits.\n"
		"\n"
		"exit status: 0 equivalent, 1 different, 125 for errors (unknown run,\n"
		"unreadable or foreign database, bad arguments).\n");
}

/* Opens db_opt read-only and loads both runs; 0, or -1 after a message. */
static int load_pair(const char *db_opt, const char *q1, const char *q2,
		     struct rd_run *r1, struct rd_run *r2)
{
	char path[PATH_MAX], id1[AUDIT_RUN_ID_LEN + 1],
		id2[AUDIT_RUN_ID_LEN + 1];
	struct audit *a = view_open_db(db_opt, path, sizeof(path));
	int rc = -1;

	memset(r1, 0, sizeof(*r1));
	memset(r2, 0, sizeof(*r2));
	if (!a)
		return -1;
	if (view_find_run(a, path, q1, id1) == 0 &&
	    view_find_run(a, path, q2, id2) == 0) {
		rc = rd_load(a, id1, r1);
		if (!rc)
			rc = rd_load(a, id2, r2);
		if (rc == -ENOMEM)
			warn("out of memory reading the runs");
		else if (rc)
			warn("reading %s: %s", path,
			     rc == -EIO && !*audit_errmsg(a)
				     ? "processes not in order of serial"
				     : audit_errmsg(a));
	}
	audit_close(a);
	return rc ? -1 : 0;
}

int ward_cmd_diff(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, 0, 'd' },
		{ "json", no_argument, 0, 'j' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	const char *db = NULL;
	bool json = false;
	struct rd_run r1, r2;
	int c, status;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': db = optarg; break;
		case 'j': json = true; break;
		case 'h': usage(stdout); return 0;
		case ':':
			warn("diff: %s needs a value (see `ward diff --help`)",
			     argv[optind - 1]);
			return WARD_EXIT_INTERNAL;
		default:
			warn("diff: unknown option %s (see `ward diff --help`)",
			     argv[optind - 1]);
			return WARD_EXIT_INTERNAL;
		}
	}
	if (argc - optind != 2) {
		warn("diff: give two runs: ward diff RUN1 RUN2 (see `ward diff "
		     "--help`)");
		return WARD_EXIT_INTERNAL;
	}
	if (load_pair(db, argv[optind], argv[optind + 1], &r1, &r2) < 0)
		status = WARD_EXIT_INTERNAL;
	else
		status = rd_report(stdout, &r1, &r2, json);
	if (status < 0) {
		warn("out of memory");
		status = WARD_EXIT_INTERNAL;
	}
	rd_run_free(&r1);
	rd_run_free(&r2);
	return status;
}
