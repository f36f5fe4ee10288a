/*
 * learn.h - the least-privilege policy that allows what recorded events
 * did (ward learn). Pure: events in (rebuilt with policy_event_from_row),
 * policy JSON text out (docs/policy.md), no file system, no SQLite.
 *
 * Generalization, in this order:
 *   - paths in a run's workdir become "$WORKDIR/..." (runs merge);
 *     /proc/PID/... of the event's own process becomes /proc/self/...
 *   - names made at random, which the next run makes anew: everything
 *     under $WORKDIR/tmp (the code's TMPDIR) becomes one rule on
 *     $WORKDIR/tmp; a name the code created elsewhere that looks like
 *     Python tempfile's ("tmp" and 8 of [a-z0-9_], or 8 such characters
 *     that mix letters and digits), and what is below it, one rule on the
 *     directory it was created in (never "/" nor a top-level directory
 *     but /tmp); each with the union of the access seen
 *   - read, stat and exec inside the interpreter's own trees (directories
 *     whose name starts like the interpreter's, "python" for python3.11,
 *     "node"; none for names shorter than 4 such as "sh",
 *     directly under /usr/lib, /usr/local/lib, /usr/lib64, /usr/share,
 *     /usr/include, /etc) become one rule per tree
 *   - more than threshold paths directly under one directory become one
 *     rule on the directory with the union of their access (repeated
 *     upwards; never onto "/", a top-level directory or above $WORKDIR)
 *   - a rule whose access an ancestor rule already grants is dropped
 * A path every event of which failed with ENOENT (src->has_result: a probe
 * for something that was not there, such as Python's search of sys.path)
 * gets a rule for exactly that path and access, which none of the steps
 * above folds or counts: the code gets its ENOENT again under the learned
 * policy, and the failure widens nothing. Its "why" says so.
 * Programs run become exact exec.allow entries; peers exact address and
 * port (unix: exact path or abstract name); signals outside the run make
 * "signals": "any". Every rule gets a "why": the runs, the number of
 * events and an example.
 */
#ifndef WARD_POLICY_LEARN_H
#define WARD_POLICY_LEARN_H

#include <stdbool.h>
#include <stddef.h>

#include "../common/event.h"

struct learn;

/* Where an event came from (for "why"). Borrowed for the call. */
struct learn_src {
	const char *run_id;
	long long seq;
	const char *syscall;
	const char *target;
	const char *would_deny; /* the rule that would have denied it (audit
				 * mode's would_deny), or NULL */
	bool has_result;	/* the record holds the kernel's result: */
	long long result;	/* the return value, -errno when it failed */
};

/* threshold: see above (> 0). 0 or -ENOMEM. */
int learn_new(unsigned threshold, struct learn **out);
void learn_free(struct learn *l); /* NULL: no-op */

/* The run's language ("python", ...) and interpreter path as recorded. */
int learn_interpreter(struct learn *l, const char *lang, const char *path);

/*
 * One event of a run whose workdir is workdir (absolute). Events any
 * policy allows (a missing program, an fd without a name, a send on a
 * connected socket, a new process) add nothing. 0 or -ENOMEM.
 */
int learn_event(struct learn *l, const struct ward_event *ev,
		const char *workdir, const struct learn_src *src);

/* The learner of phase name ("setup", the only one), made at the first
 * call and owned by l: events of the setup's processes go to it, and
 * learn_policy_text writes what it learned as the policy's
 * "phases": {"setup": {fs, exec, net}} (docs/policy.md "Phases"). The
 * policy-wide sections (signals, syscalls) are the main learner's: give it
 * those events of the setup. 0, -EINVAL (another name) or -ENOMEM. */
int learn_phase(struct learn *l, const char *name, struct learn **out);

/* Number of events that needed a rule so far. */
long long learn_count(const struct learn *l);
/* After learn_policy_text: rules (an exec.allow entry counts as one) that
 * allow what the recording policy would have denied; their "why" says so. */
size_t learn_flagged(const struct learn *l);

/*
 * The policy as JSON text (*out malloc'd, NUL-terminated), named name,
 * with description. 0 or -ENOMEM.
 */
int learn_policy_text(struct learn *l, const char *name,
		      const char *description, char **out);

#endif
