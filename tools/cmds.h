/*
 * cmds.h - ward's subcommands. Each takes argv with argv[0] the subcommand
 * name and returns the process exit status (125 for ward's own errors).
 */
#ifndef WARD_TOOLS_CMDS_H
#define WARD_TOOLS_CMDS_H

int ward_cmd_run(int argc, char **argv);
int ward_cmd_runs(int argc, char **argv);
int ward_cmd_show(int argc, char **argv);
int ward_cmd_replay(int argc, char **argv);
int ward_cmd_serve(int argc, char **argv);
int ward_cmd_mcp(int argc, char **argv);
int ward_cmd_verify(int argc, char **argv);
int ward_cmd_recheck(int argc, char **argv);
int ward_cmd_learn(int argc, char **argv);

#endif
