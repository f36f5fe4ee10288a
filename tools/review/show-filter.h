/*
 * show-filter.h - what `ward show RUN` lets through its timeline and JSON
 * (--denied, --syscall, --path, --pid, --proc), and the run's process tree
 * (--tree). tools/ only.
 */
#ifndef WARD_TOOLS_SHOW_FILTER_H
#define WARD_TOOLS_SHOW_FILTER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "audit/audit.h"

struct show_procs;

/* Every limit given must hold (AND); the values of one limit are
 * alternatives (OR). Strings are borrowed from argv. */
struct show_filter {
	bool denied;
	const char **syscalls, **paths;
	size_t n_syscalls, n_paths, cap_syscalls;
	long long *pids, *procs;
	size_t n_pids, n_procs;
	const struct show_procs *owners; /* for --proc; set before use */
};

/* Room for max values of each limit (--syscall grows). 0 or -ENOMEM. */
int show_filter_init(struct show_filter *f, size_t max);
void show_filter_free(struct show_filter *f);
/* The value of --syscall (NAME[,NAME]), --path GLOB, --pid N or --proc N
 * (opt names it): 0, or -1 with a message. arg may be cut in place. */
int show_filter_add(struct show_filter *f, const char *opt, char *arg);
bool show_filter_active(const struct show_filter *f);
/* Whether --proc needs the run's processes (show_procs_load). */
bool show_filter_needs_procs(const struct show_filter *f);

bool show_filter_event(const struct show_filter *f,
		       const struct audit_event *e);
/* A process start, exec or exit: only --pid and --proc judge those; any
 * other limit leaves them out. */
bool show_filter_proc(const struct show_filter *f,
		      const struct audit_proc_row *p);
/* Timeline items; output chunks pass only when no limit is given. */
bool show_filter_item(const struct show_filter *f, const struct audit_item *it);
/* "only ...": the limits in words, one line. */
void show_filter_describe(FILE *out, const struct show_filter *f);
/* {"denied": true, "syscalls": [...], ...}: the limits given. */
json_t *show_filter_json(const struct show_filter *f);

/* The run's processes, by serial, for --proc and --tree. */
int show_procs_load(struct audit *a, const char *run_id,
		    struct show_procs **out);
void show_procs_free(struct show_procs *p);

/* The process tree: events and denials per process counted through f,
 * threads under their process. Text for a terminal, or a JSON array of
 * root nodes ({serial, pid, ..., events, denied, threads, children}).
 * root_nspid: serial 1's pid in the run's pid namespace, 0 if unknown.
 * Return 0 or -errno (audit_errmsg). */
int show_tree_text(struct audit *a, const char *run_id, struct show_procs *p,
		   const struct show_filter *f, int root_nspid);
int show_tree_json(struct audit *a, const char *run_id, struct show_procs *p,
		   const struct show_filter *f, json_t **out);

#endif
