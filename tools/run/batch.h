/*
 * batch.h - `ward batch` (tools/run/cmd_batch.c and batch-*.c): many
 * samples, each one `ward run` in its own sandbox, recorded in one
 * database, with one result line per sample.
 *
 * A sample goes pending -> running -> done. Running it is one call,
 * batch_sample_start(), which starts a `ward run --json` child and hands
 * back its pid and pipes; once the child is gone, batch_outcome() reads
 * the run from the record and fills the sample's outcome. Another way of
 * running a sample (a warm pool of interpreters, later) only has to
 * produce a recorded run id for the same batch_outcome().
 */
#ifndef WARD_TOOLS_BATCH_H
#define WARD_TOOLS_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "audit/audit.h"
#include <jansson.h>

#include "common/json.h"

/* The tag a sample's run carries in its recorded command line (`ward run
 * --tag ward-batch:BATCH:ID`, in runs.argv; BATCH the batch's own id,
 * ID the sample's): how --resume finds a run whose result line was never
 * written, and only among this batch's runs. */
#define BATCH_TAG_PREFIX "ward-batch:"
#define BATCH_ID_LEN	 16 /* hex digits */

/* Behaviour categories, derived from the record (docs/batch.md). */
enum batch_cat {
	CAT_NETWORK,
	CAT_WRITE_OUTSIDE,
	CAT_EXEC_DENIED,
	CAT_SECRET_READ,
	CAT_SIGNAL_OTHERS,
	CAT_KERNEL_ATTACK,
	CAT_RESOURCE_LIMIT,
	CAT_TIMEOUT,
	CAT_CRASH,
	CAT_N
};
extern const char *const batch_cat_name[CAT_N];

struct batch_file {
	char *name;
	char *data;
	size_t len;
};

enum batch_state { SAMPLE_PENDING, SAMPLE_RUNNING, SAMPLE_DONE };

struct batch_sample {
	char *id;
	char *where; /* "FILE" or "FILE:LINE", for messages */
	char *path;  /* a file sample: its path; NULL for a JSONL sample */
	char *code;  /* a JSONL sample's code */
	size_t code_len;
	char *lang; /* NULL: from the file's extension */
	char *stdin_data;
	size_t stdin_len;
	bool has_stdin;
	char **args;
	size_t n_args;
	struct batch_file *files;
	size_t n_files;
	char *expect_stdout;
	size_t expect_stdout_len;
	bool has_expect_stdout, has_expect_exit;
	int expect_exit;

	/* the outcome */
	enum batch_state state;
	char run_id[AUDIT_RUN_ID_LEN + 1];
	char *status; /* the run's status, or "cancelled", "failed" */
	char *error;  /* why the sample has no run (ward run failed) */
	bool has_exit;
	int exit_code, signal;
	long long duration_ms;
	int pass;	 /* -1 no expectation, 0 fail, 1 pass */
	bool stdout_ok;	 /* the recorded stdout is expect_stdout */
	unsigned cats;	 /* bit per enum batch_cat */
	json_t *denials; /* {rule: count} */
	/* a pooled run's hand-out (CLOCK_REALTIME): what the record has
	 * from before is ward's warm-up, not the sample's (0: none) */
	long long from_ns;
};

struct batch_samples {
	struct batch_sample *v;
	size_t n, cap;
	struct batch_sample **sorted; /* by id (batch_index) */
	char batch_id[BATCH_ID_LEN + 1];
};

/* Loads every SAMPLES argument: a file (its own sample, id = the path as
 * given) or a .jsonl file (one sample a line). On bad input writes the
 * message (naming file:line) into err and returns -EINVAL. */
int batch_load(struct batch_samples *s, char **paths, int n, char *err,
	       size_t errn);
void batch_samples_free(struct batch_samples *s);
/* Keeps only shard i (1-based) of n, chosen by a hash of each id. */
void batch_shard(struct batch_samples *s, unsigned i, unsigned n);
/* Sorts the samples' index by id (after batch_load and batch_shard);
 * batch_find() then finds one, or NULL. 0 or -ENOMEM. */
int batch_index(struct batch_samples *s);
struct batch_sample *batch_find(const struct batch_samples *s, const char *id);

/*
 * The batch's id. A new batch makes one and, with --out FILE, writes it
 * to FILE.batch (synced, before any sample runs); --resume reads it from
 * there. 0, or -errno with err saying why.
 */
int batch_id_new(struct batch_samples *s, const char *out, char *err,
		 size_t errn);
int batch_id_read(struct batch_samples *s, const char *out, char *err,
		  size_t errn);

/*
 * --resume: marks done every sample that has a whole result line in
 * out_path (a torn last line is cut off the file); returns how many. 0 or
 * more, -errno on a read error (err says why).
 */
int batch_resume_lines(struct batch_samples *s, const char *out_path, char *err,
		       size_t errn);

/* Fills s's outcome from its recorded run (s->run_id set). 0 or -errno. */
int batch_outcome(struct audit *a, struct batch_sample *s);
/*
 * --resume: for each pending sample, the last run in the record tagged
 * with its id; when that run has ended (not running, not aborted), the
 * sample is done with that run's outcome (*found counts them) and needs a
 * result line. 0 or -errno.
 */
int batch_resume_record(struct audit *a, struct batch_samples *s,
			size_t *found);
/* The sample's result line (JSON, no newline); caller frees. */
char *batch_result_line(const struct batch_sample *s, const char *batch_id);

/* --pool (batch-pool.c): python samples run in sandboxes of a warm pool.
 * batch_pool_new starts it (err says why not); batch_poolable says
 * whether a sample can run there; batch_pool_start runs one on a thread
 * of its own, which writes slot (an int) to batch_pool_fd when the run
 * has ended; batch_pool_end then joins it and fills s->run_id and
 * from_ns (0), or s->error (-1: no run began). batch_pool_cancel ends a
 * running one as SIGTERM ends ward run's. */
struct batch_pool;
struct batch_pooled;
struct batch_pool_cfg {
	const char *db, *profile, *policy, *timeout, *preload, *batch_id;
	int n;
	bool no_fork; /* --pool-fork off */
};
int batch_pool_new(const struct batch_pool_cfg *c, struct batch_pool **out,
		   char *err, size_t n);
void batch_pool_free(struct batch_pool *bp);
int batch_pool_fd(const struct batch_pool *bp);
/* The pool's handle on the database (borrowed): the batch reads with it
 * instead of opening the database a second time in its process. */
struct audit *batch_pool_audit(const struct batch_pool *bp);
void batch_pool_want(struct batch_pool *bp, int n);
bool batch_poolable(const struct batch_sample *s);
int batch_pool_start(struct batch_pool *bp, struct batch_sample *s, int slot,
		     struct batch_pooled **out);
void batch_pool_cancel(struct batch_pooled *p);
int batch_pool_end(struct batch_pooled *p, struct batch_sample *s);

/* The HTML page of the batch (--report). 0 or -errno. */
int batch_html(const char *path, const char *runs_dir,
	       const struct batch_samples *s, const char *db);

#endif
