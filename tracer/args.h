/* args.h - add "key": value pairs to ev->args_json (see args.c). */
#ifndef WARD_TRACER_ARGS_H
#define WARD_TRACER_ARGS_H

#include "../common/event.h"

void args_str(struct ward_event *ev, const char *key, const char *val);
void args_bytes(struct ward_event *ev, const char *key, const char *val,
		size_t len);
void args_raw(struct ward_event *ev, const char *key, const char *json);
void args_int(struct ward_event *ev, const char *key, long long v);
__attribute__((format(printf, 3, 4))) void
args_fmt(struct ward_event *ev, const char *key, const char *fmt, ...);
/* Adds what policy_check() reads beyond the decoded arguments ("access",
 * "access2", "exists", "in_run"), so `ward recheck` can rebuild the event
 * from its row (policy/event-json.c). Always fits, even after a cut. */
void args_request(struct ward_event *ev);
/* A quoted, escaped JSON string of s[0..len) into dst; length or -1. */
int args_json_string(char *dst, size_t n, const char *s, size_t len);

#endif
