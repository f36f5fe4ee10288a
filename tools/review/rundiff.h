/*
 * rundiff.h - comparing two recorded runs (`ward diff`, `ward rerun`).
 *
 * A run is loaded from the record and normalized so that two executions of
 * the same code compare equal when they did the same things:
 *   - processes and threads by order of first appearance (serials mapped
 *     to 1, 2, ...; pids and tids never compared);
 *   - each decision as one line: syscall, arguments, target, decision,
 *     rule, errno; with fd numbers, pids, addresses (hex of 6+ digits), the
 *     run's workdir (and any /tmp/ward-XXXXXX) and /proc/PID masked;
 *     timing, seq, reasons and backtraces left out;
 *   - the exit (status, code, signal) and each output stream's bytes.
 * Library code: returns 0 or -errno, never exits.
 */
#ifndef WARD_TOOLS_RUNDIFF_H
#define WARD_TOOLS_RUNDIFF_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "audit/audit.h"

struct rd_event {
	long long seq; /* in its run, for reference */
	char *line;    /* normalized; with the kernel's result (" = ok",
			* " = -ENOENT") when the run recorded it */
	size_t base;   /* the line's length without the result */
	bool result;   /* the line has one */
	bool timerand; /* a time- or randomness-related call */
};

struct rd_proc {
	int serial;	  /* as recorded */
	int parent;	  /* parent's index (1-based), 0: none */
	char *kind;	  /* process | thread */
	char *exe, *argv; /* normalized; NULL if not recorded */
	bool exited;
	int exit_code, signal;
	struct rd_event *ev;
	size_t n_ev, cap_ev;
};

struct rd_run {
	char id[AUDIT_RUN_ID_LEN + 1];
	char *status, *workdir, *cause;
	char *host_workdir; /* the host's directory (its "workdir" layer), or
			     * NULL when the run did not record one */
	bool has_exit;
	int exit_code, signal;
	/* index 0: events without a known process; 1..n_procs: processes */
	struct rd_proc *procs;
	size_t n_procs;
	char *out[3]; /* [1] stdout, [2] stderr: the kept bytes */
	size_t out_len[3];
	bool truncated[3];
	int threads;	     /* processes of kind thread */
	long long timerand;  /* events related to time or randomness */
	char *timerand_what; /* the first such, normalized */
};

/* The host's directory of a run's workdir, from its layers (the
 * "workdir" layer, ward_workdir_layer): a new string, or NULL. */
char *rd_host_workdir(const char *layers_json);

/* Loads run_id (a full id) from a. 0, or -errno with audit_errmsg(a)
 * (-ENOENT: no such run). rd_run_free() after either. */
int rd_load(struct audit *a, const char *run_id, struct rd_run *r);
void rd_run_free(struct rd_run *r);

/* s with workdir and the masks above applied: a new string (NULL: out of
 * memory). workdir may be NULL. */
char *rd_mask(const char *s, const char *workdir);
/* One decision as a normalized line (NULL: out of memory). */
char *rd_event_line(const struct audit_event *e, const char *workdir);

/* The comparison of two runs. */
struct rd_diff {
	bool equivalent;
	/* the first divergence in the decisions: process index and event
	 * index (1-based) in that process; NULL lines where a side has no
	 * such event (it ended earlier) */
	bool ev_differs;
	size_t proc, index;
	const char *a_line, *b_line;
	long long a_seq, b_seq;
	const char *proc_what; /* a difference of the process itself
				* (kind, parent, exe, argv, exit), or NULL */
	size_t procs_differing;
	bool exit_differs;
	bool out_differs[3];
	size_t out_at[3]; /* first differing byte of each stream */
	/* heuristics: reasons the difference may be nondeterminism (static
	 * strings and one buffer), n_maybe of them */
	const char *maybe[4];
	size_t n_maybe;
	char maybe_buf[3][200];
};

/* Compares a and b (pointers in d borrow from them). */
void rd_compare(const struct rd_run *a, const struct rd_run *b,
		struct rd_diff *d);
/* True when the two byte strings differ only in ASCII digits (with the same
 * length, or in runs of digits of other lengths). */
bool rd_only_digits_differ(const char *a, size_t an, const char *b, size_t bn);

/* The report, in words or as a JSON object (a new reference). */
void rd_print(FILE *f, const struct rd_run *a, const struct rd_run *b,
	      const struct rd_diff *d);
json_t *rd_json(const struct rd_run *a, const struct rd_run *b,
		const struct rd_diff *d);
/* Compares a and b and prints the report (json: one JSON line) on f.
 * 0 equivalent, 1 different, -ENOMEM. */
int rd_report(FILE *f, const struct rd_run *a, const struct rd_run *b,
	      bool json);

#endif
