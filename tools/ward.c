/*
 * ward.c - the `ward` command: dispatch to subcommands.
 */
#include "tools/cmds.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "policy/policy.h"
#include "tracer/tracer.h"

void ward_seal_log_arg(const char *opt, const char *path)
{
	char abs[PATH_MAX], cwd[PATH_MAX];
	struct stat st;
	int fd;

	if (!*path)
		die("%s: give the seal log's path", opt);
	if (path[0] == '/')
		snprintf(abs, sizeof(abs), "%s", path);
	else if (!getcwd(cwd, sizeof(cwd)) ||
		 snprintf(abs, sizeof(abs), "%s/%s", cwd, path) >=
			 (int)sizeof(abs))
		die("%s %s: cannot make the path absolute", opt, path);
	/* said now, before any code runs; the record opens it again */
	fd = open(abs, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY,
		  0600);
	if (fd < 0)
		die("%s %s: %s (the seal log is appended to: give a file "
		    "ward may create or write)",
		    opt, path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		die("%s %s: not a regular file", opt, path);
	close(fd);
	if (setenv("WARD_SEAL_LOG", abs, 1))
		die("%s: %s", opt, strerror(errno));
}

void ward_seal_syslog_arg(void)
{
	if (setenv("WARD_SEAL_SYSLOG", "/dev/log", 1))
		die("--seal-syslog: %s", strerror(errno));
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ward COMMAND [options]\n"
		"\n"
		"ward runs model-written code (Python, Node, sh) under a seccomp + ptrace\n"
		"supervisor: every sensitive syscall is decided by a policy and recorded in\n"
		"SQLite with every process and every byte of output.\n"
		"\n"
		"commands:\n"
		"  run      run code under supervision        ward run [options] FILE|-c CODE|-\n"
		"  batch    many samples, one sandbox each    ward batch [options] SAMPLES...\n"
		"  runs     list recorded runs                ward runs [--limit N] [--json]\n"
		"  show     one run: timeline or summary      ward show RUN|last [--summary]\n"
		"  report   one run as an HTML page or text   ward report RUN [-o FILE.html]\n"
		"  replay   a run's output again, as it came  ward replay RUN [--decisions]\n"
		"  serve    sessions over JSON lines (stdio)  ward serve [--db PATH]\n"
		"  mcp      MCP server for agents (stdio)     ward mcp [--db PATH]\n"
		"  export   runs as JSON Lines or OCSF        ward export RUN...|--all --format F\n"
		"  rerun    run a recorded run again, diff    ward rerun RUN [--policy FILE]\n"
		"  diff     compare two recorded runs         ward diff RUN1 RUN2\n"
		"  recheck  judge runs again under a policy   ward recheck RUN|--all --policy F\n"
		"  learn    a policy from audit-mode runs     ward learn RUN... -o FILE\n"
		"  verify   check records for tampering       ward verify RUN...|--all [--json]\n"
		"  merge    runs of databases in one          ward merge DB... -o OUT.db\n"
		"  profiles list the policies shipped with ward\n"
		"  version  print ward's version\n"
		"\n"
		"`ward COMMAND --help` says everything about a command. Exit status 125\n"
		"means ward itself failed (bad arguments, policy, database); otherwise\n"
		"`ward run` exits with the code's own status.\n");
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	/* ward's own unwinder helper (tracer/uwhelper.c), before anything */
	if (cmd && !strcmp(cmd, TRACER_UNWINDER_ARG))
		tracer_unwinder_main(argc, argv);
	if (!cmd) {
		usage(stderr);
		return WARD_EXIT_INTERNAL;
	}
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") ||
	    !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
		printf("ward %s\n", WARD_VERSION);
		return 0;
	}
	if (!strcmp(cmd, "run"))
		return ward_cmd_run(argc - 1, argv + 1);
	if (!strcmp(cmd, "batch"))
		return ward_cmd_batch(argc - 1, argv + 1);
	if (!strcmp(cmd, "runs"))
		return ward_cmd_runs(argc - 1, argv + 1);
	if (!strcmp(cmd, "show"))
		return ward_cmd_show(argc - 1, argv + 1);
	if (!strcmp(cmd, "report"))
		return ward_cmd_report(argc - 1, argv + 1);
	if (!strcmp(cmd, "replay"))
		return ward_cmd_replay(argc - 1, argv + 1);
	if (!strcmp(cmd, "serve"))
		return ward_cmd_serve(argc - 1, argv + 1);
	if (!strcmp(cmd, "mcp"))
		return ward_cmd_mcp(argc - 1, argv + 1);
	if (!strcmp(cmd, "export"))
		return ward_cmd_export(argc - 1, argv + 1);
	if (!strcmp(cmd, "diff"))
		return ward_cmd_diff(argc - 1, argv + 1);
	if (!strcmp(cmd, "rerun"))
		return ward_cmd_rerun(argc - 1, argv + 1);
	if (!strcmp(cmd, "recheck"))
		return ward_cmd_recheck(argc - 1, argv + 1);
	if (!strcmp(cmd, "learn"))
		return ward_cmd_learn(argc - 1, argv + 1);
	if (!strcmp(cmd, "merge"))
		return ward_cmd_merge(argc - 1, argv + 1);
	if (!strcmp(cmd, "verify"))
		return ward_cmd_verify(argc - 1, argv + 1);
	if (!strcmp(cmd, "profiles")) {
		for (const char *const *n = policy_profile_names(); *n; n++)
			printf("%s\n", *n);
		return 0;
	}
	fprintf(stderr, "ward: unknown command '%s' (try `ward --help`)\n",
		cmd);
	return WARD_EXIT_INTERNAL;
}
