/*
 * event-json.h - rebuilding the event policy_check() judged from its row in
 * the audit database (events: syscall, nr, pid, tid, args, raw, target), so
 * that `ward recheck` can judge it again under another policy.
 *
 * Fail closed: a row that does not carry everything the policy reads (a row
 * written by a ward before the request keys were recorded, a cut args
 * object that lost a needed key, a target that does not split) is refused
 * with a reason; it is never guessed.
 */
#ifndef WARD_POLICY_EVENT_JSON_H
#define WARD_POLICY_EVENT_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "policy.h"

#include "../common/event.h"

/* One events row (pointers borrowed; NULL for SQL NULL). */
struct policy_row {
	const char *syscall;
	int nr;
	pid_t pid, tid;
	const char *args_json; /* JSON object */
	const char *raw;
	const char *target;
};

/*
 * Fill *ev (reset first) from row. The name points at a static copy of the
 * syscall name (ward's table) or "other". Returns 0, or -EINVAL with why
 * (n bytes) saying what is missing.
 */
int policy_event_from_row(const struct policy_row *row, struct ward_event *ev,
			  char *why, size_t n);

/*
 * A "proxy" row (a connection through ward's egress proxy) judged again by
 * p: the name and port by net.allow_domains, then the address connected
 * to by the proxy's address floor (net.allow_private). Returns 0 with *v
 * filled, or -EINVAL with why: the row's decision was about the bytes
 * (the TLS server name, a request refused as malformed, an origin that
 * could not be reached), which no policy decides again.
 */
int policy_proxy_from_row(const struct policy *p, const struct policy_row *row,
			  struct policy_verdict *v, char *why, size_t n);

/*
 * Is rule one of ward's own decisions that no policy changes: the floors
 * (clone.flags, proc.mem, floor.*), the argument copies (copy), a syscall
 * whose arguments could not be read (decode), the process limit
 * (limits.procs), an event ward could not judge (invalid-event)?
 */
bool policy_rule_is_floor(const char *rule);

#endif
