/*
 * cmd_serve.c - `ward serve`: sessions (tools/agent/session.h) over JSON lines
 * on stdin and stdout. One request per line, one response per line:
 *   {"id": ID, "method": M, "params": {...}}
 *   -> {"id": ID, "result": {...}} | {"id": ID, "error": {code, message}}
 * A run with "stream": true sends {"id", "event": "stdout"|"stderr",
 * "data", "ts"} lines first ("data_base64" too when the chunk is not
 * UTF-8). Bad requests get an error and the server
 * goes on; EOF on stdin closes every session and exits 0.
 */
#include "tools/cmds.h"
#include "tools/agent/session.h"
#include "tools/agent/e2b.h"
#include "tools/agent/session-int.h"
#include "tools/run/runrec.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

#define MAX_LINE (16 << 20)

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ward serve [options]\n"
		"\n"
		"Serve sessions over JSON lines on stdin/stdout: each session is one live\n"
		"interpreter (python, node, sh) under its own supervisor, policy and\n"
		"workdir, recorded as one run with a row per cell.\n"
		"\n"
		"request:  {\"id\": 1, \"method\": \"run\", \"params\": {\"code\": \"1+1\"}}\n"
		"response: {\"id\": 1, \"result\": {...}}  or  {\"id\": 1, \"error\": {\"code\", \"message\"}}\n"
		"\n"
		"methods:\n"
		"  session.create {language?, profile?, policy?, env?, timeout_s?, memory_mb?}\n"
		"  session.list   {}\n"
		"  session.close  {session_id}\n"
		"  run            {code, session_id?, language?, timeout_s?, stream?}\n"
		"                 (no session_id: a one-shot run in a fresh interpreter)\n"
		"  files.write    {session_id, path, text | base64}\n"
		"  files.read     {session_id, path}\n"
		"  files.list     {session_id}\n"
		"\n"
		"A run's output: logs.stdout and logs.stderr are arrays of text (the\n"
		"whole, or head and tail; bytes that are not UTF-8 become U+FFFD);\n"
		"exactly when some part is not valid UTF-8, logs.stdout_base64\n"
		"(stderr_base64) holds every part's exact bytes, part for part. With\n"
		"\"stream\": true, {\"id\", \"event\": \"stdout\"|\"stderr\", \"data\", \"ts\"}\n"
		"lines come first, with \"data_base64\" exactly when data is not the bytes.\n"
		"\n"
		"With --listen HOST:PORT, ward serves E2B's HTTP API instead (the\n"
		"official E2B SDKs run against it: E2B_API_URL and E2B_SANDBOX_URL set\n"
		"to http://HOST:PORT, E2B_API_KEY to the key): each sandbox is one\n"
		"session. docs/agents.md says what is served.\n"
		"\n"
		"options:\n"
		"  --listen HOST:PORT   serve E2B's API over HTTP on HOST:PORT (say\n"
		"                       127.0.0.1:49982; port 0 picks one, printed\n"
		"                       on stdout)\n"
		"  --api-key KEY        the key E2B clients must send (X-API-Key;\n"
		"                       default: $WARD_API_KEY; required with --listen)\n"
		"  --db PATH            audit database (default: $WARD_DB, then\n"
		"                       $XDG_STATE_HOME/ward/audit.db)\n"
		"  --seal-log FILE      append each session's seal to FILE (as ward run\n"
		"                       --seal-log; default: $WARD_SEAL_LOG)\n"
		"  --seal-syslog        and to the system log (as ward run --seal-syslog)\n"
		"  --profile NAME       default profile of new sessions (default)\n"
		"  --policy FILE        default policy file of new sessions\n"
		"  --timeout SECONDS    default per-cell timeout (30)\n"
		"  --idle SECONDS       close a session idle this long (600)\n"
		"  --max-life SECONDS   close a session this old (3600)\n"
		"  --max-sessions N     sessions open at once (16)\n"
		"  --max-timeout SEC    cap on any cell's timeout_s (none): a larger\n"
		"                       one is capped, and the result says so\n"
		"                       (timeout_s, timeout_capped_from)\n"
		"\n"
		"Error codes: -32700 parse error, -32600 invalid request, -32601 unknown\n"
		"method, -32602 bad params, -32603 internal, -32001 no such session,\n"
		"-32002 limit, -32003 file refused, -32004 too large.\n");
}

static double num_arg(const char *opt, const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || v <= 0)
		die("%s %s: give a positive number", opt, s);
	return v;
}

/* --listen: the key, and limits in E2B's terms: a sandbox lives until its
 * timeout (ward's idle expiry is the lifetime cap), and a cell runs until
 * the client stops waiting (its runCode timeoutMs) or 300 s. */
static void e2b_defaults(struct ws_config *cfg, struct e2b_options *eo)
{
	if (!eo->api_key)
		eo->api_key = getenv("WARD_API_KEY");
	if (!eo->api_key || !*eo->api_key)
		die("serve: --listen needs an API key: --api-key KEY or "
		    "WARD_API_KEY (E2B clients send it as E2B_API_KEY)");
	if (!cfg->max_life_s)
		cfg->max_life_s = 3600;
	if (!cfg->idle_s)
		cfg->idle_s = cfg->max_life_s;
	if (!cfg->cell_timeout_s)
		cfg->cell_timeout_s =
			cfg->max_timeout_s > 0 && cfg->max_timeout_s < 300
				? cfg->max_timeout_s
				: 300;
	eo->max_life_s = cfg->max_life_s;
}

static void emit(json_t *o)
{
	json_dumpf(o, stdout, JSON_COMPACT);
	fputc('\n', stdout);
	fflush(stdout);
	json_decref(o);
}

static void emit_error(json_t *id, int code, const char *msg)
{
	emit(json_pack("{s:O, s:{s:i, s:s}}", "id", id ? id : json_null(),
		       "error", "code", code, "message", msg));
}

static void on_stream(void *arg, const char *stream, const char *data,
		      size_t len, long long ts_ns)
{
	json_t *id = arg,
	       *e = json_pack("{s:O, s:s, s:n, s:f}", "id", id, "event", stream,
			      "data", "ts", (double)ts_ns / 1e9);

	/* "data" is text (U+FFFD for bytes that are not UTF-8); exactly
	 * when it is not the bytes, "data_base64" has them (chunks are cut
	 * between characters: session.c) */
	if (!e || ward_json_set_bytes(e, "data", data, len) < 0)
		die("out of memory");
	emit(e);
}

static void handle(struct ws_server *s, const char *line, size_t len)
{
	json_error_t je;
	json_t *req = json_loadb(line, len, 0, &je), *id, *params;
	const char *method;
	struct ws_error err;
	json_t *result = NULL;

	if (!req) {
		char msg[300];
		snprintf(msg, sizeof(msg), "malformed JSON at column %d: %s",
			 je.column, je.text);
		emit_error(NULL, WS_E_PARSE, msg);
		return;
	}
	id = json_object_get(req, "id");
	method = json_string_value(json_object_get(req, "method"));
	params = json_object_get(req, "params");
	if (!json_is_object(req) || !method) {
		emit_error(id, WS_E_INVALID,
			   "a request is an object {\"id\", \"method\", "
			   "\"params\"} with method a string");
	} else if (params && !json_is_object(params)) {
		emit_error(id, WS_E_PARAMS, "params: must be an object");
	} else if (ws_call(s, method, params, on_stream, id ? id : json_null(),
			   &result, &err) < 0) {
		emit_error(id, err.code, err.message);
	} else {
		emit(json_pack("{s:O, s:o}", "id", id ? id : json_null(),
			       "result", result));
	}
	json_decref(req);
}

/* Reads stdin line by line; a line longer than MAX_LINE is answered with
 * an error and skipped. */
static void serve(struct ws_server *s)
{
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	bool skipping = false;

	if (!buf)
		die("out of memory");
	for (;;) {
		struct pollfd q = { 0, POLLIN, 0 };
		if (poll(&q, 1, 1000) == 0) {
			ws_server_tick(s);
			continue;
		}
		if (len == cap) {
			cap *= 2;
			char *nb = realloc(buf, cap);
			if (!nb)
				die("out of memory");
			buf = nb;
		}
		ssize_t n = read(0, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		char *nl, *start = buf;
		while ((nl = memchr(start, '\n',
				    len - (size_t)(start - buf)))) {
			if (!skipping && nl > start)
				handle(s, start, (size_t)(nl - start));
			skipping = false;
			start = nl + 1;
		}
		len -= (size_t)(start - buf);
		memmove(buf, start, len);
		if (len > MAX_LINE) {
			if (!skipping) {
				char msg[128];
				snprintf(msg, sizeof(msg),
					 "request line longer than %d MiB; "
					 "skipped",
					 MAX_LINE >> 20);
				emit_error(NULL, WS_E_TOO_LARGE, msg);
			}
			skipping = true;
			len = 0;
		}
	}
	if (len > 0 && !skipping)
		handle(s, buf, len);
	free(buf);
}

int ward_cmd_serve(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, 0, 'd' },
		{ "seal-log", required_argument, 0, 'S' },
		{ "seal-syslog", no_argument, 0, 'Y' },
		{ "profile", required_argument, 0, 'p' },
		{ "policy", required_argument, 0, 'P' },
		{ "timeout", required_argument, 0, 't' },
		{ "idle", required_argument, 0, 'i' },
		{ "max-life", required_argument, 0, 'l' },
		{ "max-sessions", required_argument, 0, 'm' },
		{ "max-timeout", required_argument, 0, 'T' },
		{ "listen", required_argument, 0, 'L' },
		{ "api-key", required_argument, 0, 'K' },
		{ "session-worker", no_argument, 0, 'W' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	struct ws_config cfg = { 0 };
	struct e2b_options eo = { 0 };
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': cfg.db = optarg; break;
		case 'S': ward_seal_log_arg("--seal-log", optarg); break;
		case 'Y': ward_seal_syslog_arg(); break;
		case 'p': cfg.profile = optarg; break;
		case 'P': cfg.policy = optarg; break;
		case 't':
			cfg.cell_timeout_s = num_arg("--timeout", optarg);
			break;
		case 'i': cfg.idle_s = num_arg("--idle", optarg); break;
		case 'l': cfg.max_life_s = num_arg("--max-life", optarg); break;
		case 'm':
			cfg.max_sessions =
				(int)num_arg("--max-sessions", optarg);
			break;
		case 'T':
			cfg.max_timeout_s = num_arg("--max-timeout", optarg);
			break;
		case 'L': eo.listen = optarg; break;
		case 'K': eo.api_key = optarg; break;
		case 'W': return ws_worker_main();
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return WARD_EXIT_INTERNAL;
		}
	}
	if (optind < argc)
		die("serve: unexpected argument '%s' (try `ward serve --help`)",
		    argv[optind]);
	if (cfg.policy && access(cfg.policy, R_OK) < 0)
		die_errno("--policy %s", cfg.policy);
	if (cfg.max_timeout_s > 0 && cfg.cell_timeout_s > cfg.max_timeout_s)
		die("serve: --timeout %g is above --max-timeout %g; give a "
		    "default within the cap",
		    cfg.cell_timeout_s, cfg.max_timeout_s);

	if (eo.listen)
		e2b_defaults(&cfg, &eo);
	struct ws_server *s;
	int rc = ws_server_new(&cfg, &s);
	if (rc < 0)
		die("cannot start: %s (the audit database: --db, WARD_DB, HOME)",
		    strerror(-rc));
	/* A client that goes away must not kill the server mid-write. */
	signal(SIGPIPE, SIG_IGN);
	if (eo.listen)
		rc = e2b_serve(s, &eo);
	else
		serve(s);
	ws_server_free(s);
	return rc < 0 ? WARD_EXIT_INTERNAL : 0;
}
