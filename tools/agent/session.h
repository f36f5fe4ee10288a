/* tools/agent/session.h - sessions and one-shot runs behind ward serve and
 * ward mcp. */
#ifndef WARD_TOOLS_SESSION_H
#define WARD_TOOLS_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

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
	bool pool_eager;        /* the pool refills at once after a hand-out
				 * (ward batch: its samples are the only
				 * callers); else it waits a second while it
				 * still has one ready, so that the caller's
				 * first cells do not share the CPUs with a
				 * refill */
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
 *                     timeout_s?, memory_mb?, life_s?, metadata?: {..strings}}
 *                    -> {session_id, language, run_id, expires_ms}
 *                    (life_s: this session's lifetime, default and cap the server's
 *                    max_life_s; expires_ms: wall-clock ms since the epoch when it ends)
 *   "session.list"   {} -> {sessions: [{session_id, language, run_id, execution_count,
 *                                        created, last_used, started_ms, expires_ms,
 *                                        running, metadata}]}
 *   "session.update" {session_id, life_s} -> {session_id, expires_ms}: it now ends
 *                    life_s seconds from now (within its lifetime's cap)
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
 *                    (its parent directories are made)
 *   "files.read"     {session_id, path} -> {path, size, sha256, base64, text? (if UTF-8)}
 *   "files.list"     {session_id, path?, depth?} -> {files: [entry]}: what is under path
 *                    (default the workdir), depth levels down (default 1), directories
 *                    and dotfiles included; entry = {path, name, type: "file"|"dir"|
 *                    "symlink"|"other", size, mode (permission bits), mtime_ms,
 *                    sha256 (files only)}
 *   "files.stat"     {session_id, path} -> entry (WS_E_FILE when there is none)
 *   "files.mkdir"    {session_id, path} -> {path, created} (parents made)
 *   "files.remove"   {session_id, path} -> {path, removed: true} (a file or a tree)
 *   "files.rename"   {session_id, from, to} -> {from, to} (to's parents made)
 * Paths are relative to the session's workdir and stay inside it (no "..", no symlink
 * out). */
int ws_call(struct ws_server *s, const char *method, json_t *params, ws_stream_fn fn,
	    void *fn_arg, json_t **result, struct ws_error *err);
/* clang-format on */

/*
 * Thread-safety: ws_call/ws_call_c may be called from any number of
 * threads at once. Calls on different sessions run in parallel. Control
 * methods (session.create, session.list, session.close, session.update,
 * files.*, context.*) never wait for a running cell. A "run" on a session whose cell
 * is running waits its turn (FIFO), and can be cancelled while it waits.
 * session.close of a session with a running cell ends it; that call
 * returns promptly (the run returns status "cancelled", with
 * session_closed). The stream callback fn is called on the calling
 * thread only. ws_server_free comes after the last call has returned
 * (cancel the running ones and wait for them).
 */
struct ws_cancel;
/* NULL: out of memory. */
struct ws_cancel *ws_cancel_new(void);
/* Any thread, idempotent: interrupts the call's cell (SIGINT to its
 * interpreter, as Ctrl-C; a cell that does not stop within 2 s ends its
 * session) or drops the call if it still waits its turn; the call
 * returns status "cancelled". */
void ws_cancel_fire(struct ws_cancel *c);
void ws_cancel_free(struct ws_cancel *c);
/* ws_call with a cancel (NULL: none). */
int ws_call_c(struct ws_server *s, const char *method, json_t *params,
	      ws_stream_fn fn, void *fn_arg, struct ws_cancel *cancel,
	      json_t **result, struct ws_error *err);

/* Additions beyond the shared contract.
 *
 * Methods of a python session (session-ctx.c; its driver hosts the rest):
 *   "run" also takes {language?: "js" (node) | "bash" (sh), context_id?,
 *                     env?: {NAME: value} for this cell alone}; its result
 *                     then says "language" and "context_id"
 *   "context.create"  {session_id, language?: python|js|bash, cwd?}
 *                     -> {context_id, language, cwd}
 *   "context.list"    {session_id} -> {contexts: [{context_id, language, cwd}]}
 *   "context.remove"  {session_id, context_id} -> {context_id, removed: true}
 *   "context.restart" {session_id, context_id} -> {context_id, restarted: true}
 *   "command.run"     {session_id, cmd, env?, cwd?, timeout_s?, stream?, stdin?,
 *                      background?}
 *                     -> {session_id, execution_count, status, exit_code, stdout,
 *                         stderr, duration_ms, error (text|null), run_id,
 *                         truncated, policy}
 *                     (commands run beside the session's cells and each
 *                     other; background: {session_id, command_id} at once)
 *   "command.wait"    {session_id, command_id} -> command.run's answer
 *   "command.kill"    {session_id, command_id} -> {command_id, killed}
 *   "command.list"    {session_id} -> {commands: [{command_id, cmd, running}]}
 *
 * Close the sessions that were idle
 * or alive too long (ws_call does too; a server waiting for input calls
 * this now and then), and read what idle sessions wrote. Any thread. */
void ws_server_tick(struct ws_server *s);

/*
 * Questions of a session's "ask" rules (docs/agents.md): its code waits,
 * stopped in the syscall, until the question is answered or its
 * timeout_ms passes (then: deny). fn(arg, ask) is called for each new
 * question, on whatever thread read it (it must not call ws_call for the
 * same session and must not block long): ask is {id, session_id?,
 * run_id, question, rule, syscall, target, timeout_ms}, borrowed for the
 * call. Once, after ws_server_new, before calls; without it questions
 * still wait for "ask.answer" (e.g. an HTTP client listing them).
 * Methods:
 *   "ask.list"   {} -> {asks: [ask]}: the questions waiting now
 *   "ask.answer" {id, answer: "allow_once"|"allow_always"|"deny", by?}
 *                -> {id, answer}; WS_E_PARAMS for an id that no longer
 *                waits (answered, timed out, its run ended)
 * ws_ask_answer is "ask.answer" as a function; via: who answers
 * ("serve", "mcp", "http"), by: who they are (NULL: unknown).
 */
typedef void (*ws_ask_fn)(void *arg, json_t *ask);
void ws_server_on_ask(struct ws_server *s, ws_ask_fn fn, void *arg);
int ws_ask_answer(struct ws_server *s, const char *id, const char *answer,
		  const char *via, const char *by, struct ws_error *err);
/* A new JSON string for arbitrary bytes: invalid UTF-8 becomes U+FFFD. */
json_t *ws_json_text(const char *s, size_t len);
/* Base64 (RFC 4648, padded, strict) to a malloc'd *out of *len bytes:
 * 0, -EINVAL or -ENOMEM. */
int ws_base64_decode(const char *s, size_t n, unsigned char **out, size_t *len);
/* The id (a string or an integer) of a JSON-RPC request line too long to
 * parse whole, from its first n bytes, when they show it: a new
 * reference, or NULL. */
json_t *ws_json_line_id(const char *p, size_t n);
/* For the servers' threads: a detached thread running fn(arg) (0 or an
 * errno value, as pthread_create), and the time ms from now on clock clk
 * (for pthread_cond_timedwait). */
int ws_thread_detached(void *(*fn)(void *), void *arg);
void ws_time_in(struct timespec *ts, clockid_t clk, long ms);
/* For a server's main, before it starts any thread (ws_server_new
 * included): SIGTERM, SIGINT and SIGHUP are blocked in it and the threads
 * it starts later (the session workers unblock them) and taken by a thread
 * of their own. The first calls on_stop(arg) there (cancel the calls) and
 * makes *wake readable (stop reading, as at the end of input), so that the
 * sessions are closed in order; a second ends the process as it would
 * have without this. 0 or -errno. */
int ws_stop_signals(void (*on_stop)(void *), void *arg, int *wake);
/* Standard base64, strictly: only the alphabet, padding at the end;
 * *out (malloc'd, the caller frees it) and *len, or -EINVAL, -ENOMEM. */
int ws_base64_decode(const char *s, size_t n, unsigned char **out, size_t *len);
/* The warm pool (ward serve/mcp --pool N --preload MODULES): n python
 * sessions started ahead with the server's defaults (profile, policy),
 * each of which has imported the modules named (comma-separated, or
 * NULL) in a warm-up cell of its own run (cell 0, "phase": "warmup")
 * before it is handed out once, to a session.create or one-shot run whose
 * settings are the pool's; the pool refills on a thread of its own. The
 * first pooled session is made here: a module that does not import
 * under the policy fails it (-EINVAL; msg names the module). fork: with
 * preload, the pooled sandboxes are forks of one template interpreter
 * that imported the modules once (--pool-fork on; pool-zygote.c), where
 * the settings allow it. 0, -EINVAL
 * (msg says why), -ENOMEM. Once, after ws_server_new, before calls. */
int ws_server_pool(struct ws_server *s, int n, const char *preload, bool fork,
		   char *msg, size_t msg_len);
/* For the servers' mains: --pool N and --preload MODULES parsed and
 * started (who: "serve", "mcp"); a bad count, --preload without --pool,
 * or a pool that cannot start ends the process (125, the reason on
 * stderr; the server freed first). n 0: no pool. */
struct ws_pool_opts {
	int n;
	const char *preload;
	bool no_fork; /* --pool-fork off */
};
int ws_pool_count_arg(const char *arg);
/* --pool-fork on|off: true for on; anything else ends the process. */
bool ws_pool_fork_arg(const char *arg);
void ws_pool_start(struct ws_server *s, const struct ws_pool_opts *po,
		   const char *who);
#define WS_POOL_HELP                                                            \
	"  --pool N             keep N python sessions started ahead with\n"    \
	"                       the defaults (--profile/--policy); each is\n"   \
	"                       handed out once, to a session.create or\n"      \
	"                       one-shot run with those settings, and the\n"    \
	"                       pool refills behind it\n"                       \
	"  --preload MODULES    with --pool: each pooled interpreter imports\n" \
	"                       these first (e.g. pandas,numpy), as ward's\n"   \
	"                       warm-up cell 0 of its run; one that fails to\n" \
	"                       import stops the server at its start (125)\n"   \
	"  --pool-fork on|off   with --preload: make the pooled sandboxes as\n" \
	"                       forks of one template interpreter that\n"       \
	"                       imported the modules once, in a run of its\n"   \
	"                       own (on, the default, where the policy and\n"   \
	"                       the system allow it), or each importing them\n" \
	"                       itself (off)\n"
/* A one-shot script from the warm pool (ward batch --pool;
 * session-script.c): the code run in a pooled python sandbox as
 * `python3 NAME ARGS...` runs it in ward run (NAME written into the
 * workdir with the files, which are recorded as the run's inputs), its
 * stdin the bytes given (else /dev/null), its wall limit wall_s counted
 * from the hand-out; the interpreter's exit is the run's. The warm-up is
 * the run's cell 0 (everything recorded before handed_out_ns is ward's),
 * the code cell 1 (its result names tag). Waits for a pooled sandbox
 * when none is ready; cancel (or NULL) ends the run as a SIGTERM ends
 * ward run's ("aborted"). 0 once the run has ended and is recorded (*out
 * says which), -1 with err when no run could be given the code. */
struct ws_script_file {
	const char *name; /* no '/' */
	const char *data;
	size_t len;
};
struct ws_script {
	const char *code;
	size_t code_len;
	const char *name; /* the script's name: main.py, or the file's */
	char *const *args;
	size_t n_args;
	const char *stdin_data;
	size_t stdin_len;
	bool has_stdin;
	const struct ws_script_file *files;
	size_t n_files;
	double wall_s; /* 0: the pooled session's own limit */
	const char *tag;
	struct ws_cancel *cancel;
};
struct ws_script_run {
	char run_id[40];
	long long handed_out_ns, ended_ns; /* CLOCK_REALTIME */
};
int ws_pool_script(struct ws_server *s, const struct ws_script *sc,
		   struct ws_script_run *out, struct ws_error *err);
/* The pool keeps at most n ready from now on (a batch near its end). */
void ws_pool_want(struct ws_server *s, int n);

/* The audit database the server records to, and its handle (borrowed:
 * thread-safe, the server's until ws_server_free). A process must not
 * open the database a second time beside it: SQLite's POSIX locks are
 * the process's, and the second open's own checks (audit/walcheck.c)
 * close descriptors of the file, which drops the first one's locks. */
const char *ws_server_db(const struct ws_server *s);
struct audit;
struct audit *ws_server_audit(const struct ws_server *s);

#endif
