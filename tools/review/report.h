/*
 * report.h - what `ward report` holds of one run (the model), filled by
 * report-gather.c from the record and rendered by cmd_report.c. Private to
 * the report. Every string in it is from the record: untrusted.
 */
#ifndef WARD_TOOLS_REPORT_H
#define WARD_TOOLS_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "audit/audit.h"
#include "tools/review/phases.h"
#include "tools/review/symbolize.h"
#include "tools/review/view.h"

/* Bounds: a huge run gives a page of bounded size. */
enum {
	TL_HEAD = 250,	      /* timeline items kept from the start */
	TL_TAIL = 250,	      /* and from the end */
	CHUNK_MAX = 2048,     /* bytes of one output chunk shown */
	CODE_MAX = 256 << 10, /* bytes of code shown */
	PROC_MAX = 500,	      /* processes and threads listed */
	RULE_MAX = 100,	      /* denial groups */
	RULE_EX = 5,	      /* denials shown per rule */
	BT_FRAMES = 40,	      /* backtrace frames shown */
	PY_FRAMES = 40,	      /* Python frames shown */
	FILE_MAX = 4000,      /* distinct paths tracked */
	FILE_ROWS = 500,      /* rows of each file table */
	NET_MAX = 300,	      /* network attempts listed */
	ART_MAX = 2000,	      /* artifacts listed */
	CELL_MAX = 1000,      /* cells of a session listed */
};

/* What the report holds of one timeline item. */
enum tl_class { TL_PROC, TL_ALLOW, TL_DENY, TL_WOULD, TL_OUT, TL_ERR, TL_N };

struct tl_item {
	long long ts;
	int serial;
	long long cell; /* the cell it happened in, 0: none */
	enum tl_class cls;
	const char *what; /* static: start, exec, allow, DENY, stdout, ... */
	char *text;	  /* bytes (untrusted) */
	size_t len, more; /* more: bytes of an output chunk left out */
	bool json;	  /* text ends in JSON (exec: argv) */
	char *rule;	  /* for decisions */
};

struct proc {
	int serial, parent;
	int pid;
	bool thread, execed, exited;
	char *exe, *argv_json;
	long long start, exec, exit;
	int code, sig;
	int depth;
};

struct denial {
	long long ts, seq, cell;
	int serial, err;
	bool would;
	char *syscall, *decision, *target, *raw, *reason, *args;
	json_t *bt;    /* parsed, symbols added; NULL: none */
	char *bt_text; /* when not an array */
	char *py;      /* pyframes column text */
};

struct rule {
	char *name;
	long long n;
	long long syscalls_denied, syscalls_killed, would;
	struct denial ex[RULE_EX];
	int nex;
};

enum {
	F_READ = 1,
	F_WRITE = 2,
	F_CREATE = 4,
	F_DELETE = 8,
	F_META = 16,
	F_EXEC = 32,
};

struct file {
	char *path;
	unsigned what;
	long long calls, denied;
	long long first;
};

struct net {
	long long ts;
	int serial, err;
	char *syscall, *target, *decision, *rule;
};

struct cell {
	long long n, start, end;
	char *status, *code;
	size_t code_len;
};

struct art {
	long long cell, size;
	char *path, *sha256;
};

struct report {
	/* the run row */
	char id[AUDIT_RUN_ID_LEN + 1];
	char *status, *cause, *argv_json, *language, *interpreter, *code_name;
	char *code, *code_sha256, *policy_name, *policy_sha256, *workdir;
	char *limits_json, *host, *kernel, *ward_version, *layers_json;
	size_t code_len, code_total;
	long long started, ended, duration_ms, uid;
	bool has_exit;
	int exit_code, sig;
	long long stdout_bytes, stderr_bytes, events, denials, processes;
	int stdout_trunc, stderr_trunc;

	struct proc *procs;
	size_t nprocs;
	long long procs_total;

	struct tl_item head[TL_HEAD], tail[TL_TAIL];
	size_t nhead, ntail, tail_pos;
	long long tl_total[TL_N], tl_shown[TL_N];

	struct rule *rules;
	size_t nrules;
	long long rules_other; /* denials under rules past RULE_MAX */
	long long ndenials;
	struct view_decisions dec; /* ndenials by kind */
	struct sym_cache *syms;
	bool symbolized; /* some symbol came from a module file */

	struct file *files; /* hashed by path: fcap slots */
	size_t nfiles, fcap;
	size_t *forder; /* slots in order of first appearance */
	long long files_other;

	struct net *nets;
	size_t nnets;
	long long nets_total;

	struct cell *cells;
	size_t ncells;
	long long cells_total;

	struct art *arts;
	size_t narts;
	long long arts_total;

	struct run_phases phases; /* ward run --setup; denials counted */
};

/*
 * Reads run id from a into r (zeroed by the caller): the run row, cells,
 * artifacts, processes, timeline, denials and events, each bounded. 0 or
 * the audit reader's -errno; r is to be freed with report_free either way.
 */
int report_gather(struct audit *a, const char *id, struct report *r);
/* Frees what r holds (not r itself). */
void report_free(struct report *r);

#endif
