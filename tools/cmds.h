/*
 * cmds.h - ward's subcommands. Each takes argv with argv[0] the subcommand
 * name and returns the process exit status (125 for ward's own errors).
 */
#ifndef WARD_TOOLS_CMDS_H
#define WARD_TOOLS_CMDS_H

#include <stddef.h>

int ward_cmd_run(int argc, char **argv);
int ward_cmd_runs(int argc, char **argv);
int ward_cmd_show(int argc, char **argv);
int ward_cmd_report(int argc, char **argv);
int ward_cmd_replay(int argc, char **argv);
int ward_cmd_serve(int argc, char **argv);
int ward_cmd_mcp(int argc, char **argv);
int ward_cmd_export(int argc, char **argv);
int ward_cmd_diff(int argc, char **argv);
int ward_cmd_rerun(int argc, char **argv);
/* In ward run's command line argv (argv[0] "run", as recorded in
 * runs.argv after "ward"): the index of the code's first own argument
 * (argc when none), and how many --input and --env it has. Dies (125) on
 * a command line ward run refuses. */
int ward_run_args_start(int argc, char **argv, size_t *n_inputs,
			size_t *n_envs);
int ward_cmd_verify(int argc, char **argv);
/* --seal-log PATH of run, serve and mcp: checks that it can be appended
 * to (else dies, exit 125) and sets $WARD_SEAL_LOG to its absolute path,
 * which every writer of the record (audit/anchor.c) and session workers
 * use. */
void ward_seal_log_arg(const char *opt, const char *path);
/* --seal-syslog: each seal to the system log too ($WARD_SEAL_SYSLOG =
 * /dev/log; the record fails to open when it cannot be reached). */
void ward_seal_syslog_arg(void);
int ward_cmd_recheck(int argc, char **argv);
int ward_cmd_learn(int argc, char **argv);
int ward_cmd_batch(int argc, char **argv);
int ward_cmd_merge(int argc, char **argv);

#endif
