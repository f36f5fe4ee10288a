/* tools/agent/session.h - sessions and one-shot runs behind ward serve and
 * ward mcp. */
#ifndef WARD_TOOLS_SESSION_H
#define WARD_TOOLS_SESSION_H

#include <stddef.h>

#include <jansson.h>

/* The contract shared by ward serve and ward mcp, kept verbatim as agreed. */
/* clang-format off */
struct ws_config {
	const char *db;         /* audit database (NULL: ward's default) */
	const char *profile;    /* default profile for new sessions ("default") */
	const char *policy;     /* or a policy file (overrides profile) */
	double cell_timeout_s;  /* default per-cell timeout (30) */
	double idle_s, max_life_s; /* session idle expiry (600), lifetime (3600) */
	int max_sessions;       /* (16) */
	double max_timeout_s;   /* operator's cap on any cell's timeout (0: none);
				 * a larger timeout_s is capped, and the result
				 * says so (timeout_s, timeout_capped_from) */
};
struct ws_server;
int ws_server_new(const struct ws_config *cfg, struct ws_server **out); /* 0 or -errno */
void ws_server_free(struct ws_server *s); /* closes every session */
struct ws_error { int code; char message[512]; };
/* Stable error codes (also used in JSON responses): */
enum { WS_E_PARSE = -32700, WS_E_INVALID = -32600, WS_E_METHOD = -32601,
       WS_E_PARAMS = -32602, WS_E_INTERNAL = -32603,
       WS_E_NO_SESSION = -32001, WS_E_LIMIT = -32002, WS_E_FILE = -32003,
       WS_E_TOO_LARGE = -32004 };
/* Streaming: called for each stdout/stderr chunk of a running cell when the
 * request asked for it (params "stream": true). A chunk never ends inside
 * a UTF-8 character (the rest comes with the next one). */
typedef void (*ws_stream_fn)(void *arg, const char *stream /* "stdout"|"stderr" */,
			     const char *data, size_t len, long long ts_ns);
/* One request. method and params as in the issue; *result is a new jansson
 * reference on success (return 0); on failure returns -1 and fills err.
 * Methods:
 *   "session.create" {language?: "python"|"node"|"sh", profile?, policy?, env?: {..},
 *                     timeout_s?, memory_mb?} -> {session_id, language, run_id}
 *   "session.list"   {} -> {sessions: [{session_id, language, run_id, execution_count,
 *                                        created, last_used}]}
 *   "session.close"  {session_id} -> {session_id, closed: true}
 *   "run"            {code, language?, session_id?, timeout_s?, stream?} -> the result
 *                    object of the issue (section 2): {run_id, session_id, execution_count,
 *                    status, exit_code, duration_ms, logs:{stdout:[...],stderr:[...],
 *                    stdout_base64?:[...], stderr_base64?:[...] (the parts' exact bytes,
 *                    present exactly when some part is not valid UTF-8)},
 *                    results:[{text?, png? (base64), ..., is_main_result}],
 *                    error:{name,value,traceback}|null, truncated:{...}, artifacts:[...],
 *                    policy:{denied, denials:[{syscall,target,action,rule,errno}], audit_ref}}
 *                    without session_id: a one-shot run (a fresh interpreter, like ward run).
 *   "files.write"    {session_id, path, text? | base64?} -> {path, size, sha256}
 *   "files.read"     {session_id, path} -> {path, size, sha256, base64, text? (if UTF-8)}
 *   "files.list"     {session_id} -> {files: [{path, size, sha256}]}
 * Thread-safety: one caller thread; sessions run concurrently underneath. */
int ws_call(struct ws_server *s, const char *method, json_t *params, ws_stream_fn fn,
	    void *fn_arg, json_t **result, struct ws_error *err);
/* clang-format on */

/* Additions beyond the shared contract. Close the sessions that were idle
 * or alive too long (ws_call does too; a server waiting for input calls
 * this now and then), and read what idle sessions wrote. */
void ws_server_tick(struct ws_server *s);
/* A new JSON string for arbitrary bytes: invalid UTF-8 becomes U+FFFD. */
json_t *ws_json_text(const char *s, size_t len);
/* Base64 (RFC 4648, padded, strict) to a malloc'd *out of *len bytes:
 * 0, -EINVAL or -ENOMEM. */
int ws_base64_decode(const char *s, size_t n, unsigned char **out,
		     size_t *len);
/* The audit database the server records to. */
const char *ws_server_db(const struct ws_server *s);
/* Cancelling (any thread, async-signal-safe): interrupts the cell that
 * ws_call is running now (SIGINT to its interpreter, as Ctrl-C; one that
 * does not stop within 2 s ends its session) and it returns with status
 * "cancelled". A cancel that comes between cells stays pending until
 * ws_server_cancel_clear, which the caller makes when the call it meant
 * is over (under the same lock as it decides to cancel). */
void ws_server_cancel(struct ws_server *s);
void ws_server_cancel_clear(struct ws_server *s);

#endif
