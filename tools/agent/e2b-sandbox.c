/*
 * e2b-sandbox.c - the calls the SDK sends to a sandbox (E2b-Sandbox-Id):
 * envd's /health and /files, its filesystem and process services
 * (Connect, JSON), and the code interpreter's /execute and /contexts.
 *
 * Paths: E2B's are absolute (/home/user/x) or relative to /home/user; the
 * engine's are relative to the session's workdir, which the code sees as
 * /home/user. Anything outside /home/user is refused here, before the
 * engine (which refuses ".." and symlinks leading out as well).
 */
#include "tools/agent/e2b.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/json.h"
#include "tools/review/view.h"

#define HOME "/home/user"

/* ---- paths ---- */

/* E2B's path as the engine's (relative to the workdir; "." for the
 * workdir itself): 0, or -1 with why. */
static int map_path(const char *in, char *out, size_t n, char *why, size_t wn)
{
	char tmp[4096];
	size_t len = 0;
	const char *rest = in;

	if (!in || !*in) {
		snprintf(why, wn, "path: required");
		return -1;
	}
	if (in[0] == '/') {
		size_t h = strlen(HOME);
		if (strncmp(in, HOME, h) || (in[h] && in[h] != '/')) {
			snprintf(why, wn,
				 "%s is outside the sandbox's home %s: ward "
				 "keeps a sandbox's files in its workdir, seen "
				 "as %s; give a path under it",
				 in, HOME, HOME);
			return -1;
		}
		rest = in + h;
	}
	if (strlen(rest) >= sizeof(tmp)) { /* never a path cut short */
		snprintf(why, wn, "path: too long");
		return -1;
	}
	snprintf(tmp, sizeof(tmp), "%s", rest);
	char *save = NULL;
	for (char *c = strtok_r(tmp, "/", &save); c;
	     c = strtok_r(NULL, "/", &save)) {
		if (!strcmp(c, "."))
			continue;
		if (!strcmp(c, "..")) {
			char *slash = len ? memrchr(out, '/', len) : NULL;
			if (!len) {
				snprintf(why, wn,
					 "%s leads outside the sandbox's home "
					 "%s; give a path under it",
					 in, HOME);
				return -1;
			}
			len = slash ? (size_t)(slash - out) : 0;
			continue;
		}
		size_t cl = strlen(c);
		if (len + cl + 2 > n) {
			snprintf(why, wn, "path: too long");
			return -1;
		}
		if (len)
			out[len++] = '/';
		memcpy(out + len, c, cl);
		len += cl;
	}
	if (!len)
		out[len++] = '.';
	out[len] = '\0';
	return 0;
}

/* The engine's path as E2B's (absolute). */
static json_t *e2b_path(const char *rel)
{
	char buf[4200];

	if (!rel || !*rel || !strcmp(rel, "."))
		return json_string(HOME);
	snprintf(buf, sizeof(buf), "%s/%s", HOME, rel);
	return json_string(buf);
}

/* ---- engine errors ---- */

/* The engine's error as a Connect code ("not_found" ...). */
static const char *err_code(const struct ws_error *err)
{
	if (err->code == WS_E_NO_SESSION)
		return "unavailable";
	if (err->code == WS_E_TOO_LARGE)
		return "resource_exhausted";
	if (err->code == WS_E_PARAMS)
		return "invalid_argument";
	if (err->code == WS_E_METHOD)
		return "unimplemented";
	if (err->code == WS_E_FILE) {
		/* the engine says which in words only (session-files.c) */
		if (strcasestr(err->message, "no such file"))
			return "not_found";
		if (strstr(err->message, "File exists") ||
		    strstr(err->message, "exists and is not a directory"))
			return "already_exists";
		return "invalid_argument";
	}
	return "internal";
}

static unsigned err_status(const struct ws_error *err)
{
	if (err->code == WS_E_NO_SESSION)
		return 502;
	if (err->code == WS_E_TOO_LARGE)
		return 413;
	return e2b_connect_status(err_code(err));
}

/* ---- the sandbox's identity ---- */

struct call {
	struct e2b *e;
	char sid[32];
	struct e2b_req *r;
	struct e2b_reply *rp;
	bool connect; /* a Connect route: errors in Connect's shape */
	bool stream;  /* a server-streaming one: errors end the stream */
};

static void fail(struct call *c, unsigned status, const char *code,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void fail(struct call *c, unsigned status, const char *code,
		 const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->stream)
		e2b_connect_end_reply(c->rp, code, msg);
	else if (c->connect)
		e2b_reply_json(c->rp, status,
			       json_pack("{s:s, s:s}", "code", code, "message",
					 msg));
	else
		e2b_reply_error(c->rp, status, "%s", msg);
}

static void fail_engine(struct call *c, const struct ws_error *err)
{
	if (err->code == WS_E_NO_SESSION)
		e2b_mark_dead(c->e, c->sid, "its session ended");
	fail(c, err_status(err), err_code(err), "%s", err->message);
}

/* Runs an engine call for c's sandbox; on failure replies and returns -1. */
static int call(struct call *c, const char *method, json_t *params,
		json_t **res)
{
	struct ws_error err;

	if (params)
		json_object_set_new(params, "session_id", json_string(c->sid));
	if (e2b_engine(c->e, method, params, NULL, NULL, NULL, res, &err) < 0) {
		fail_engine(c, &err);
		return -1;
	}
	return 0;
}

/* Is the sandbox there, and did the request bring its token? The code
 * interpreter's calls bring the traffic token (contexts) or the envd
 * one (/execute); envd's (/health too) bring the envd one. A sandbox that
 * is gone is 502 first, as E2B's proxy answers: isRunning() is false. */
static int admit(struct call *c, bool jupyter)
{
	struct e2b *e = c->e;
	const char *tok = e2b_header(c->r, "X-Access-Token"),
		   *traffic = e2b_header(c->r, "E2B-Traffic-Access-Token");
	bool ok;

	pthread_mutex_lock(&e->lock);
	struct sbx *x = e2b_find(e, c->sid);
	if (!x || !x->alive) {
		char why[80];
		snprintf(why, sizeof(why), "%s", x ? x->why_dead : "");
		pthread_mutex_unlock(&e->lock);
		/* 502, as E2B's proxy answers for a sandbox that is gone */
		fail(c, 502, "unavailable", "sandbox %s is not running%s%s",
		     c->sid, why[0] ? ": " : " (never created here)", why);
		return -1;
	}
	ok = e2b_secret_eq(x->envd_token, tok) ||
	     (jupyter && e2b_secret_eq(x->traffic_token, traffic));
	pthread_mutex_unlock(&e->lock);
	if (!ok) {
		fail(c, 401, "unauthenticated",
		     "sandbox %s: this request needs the sandbox's access "
		     "token (X-Access-Token, as Sandbox.create or connect "
		     "returned it)",
		     c->sid);
		return -1;
	}
	return 0;
}

/* The request body as a JSON object (Connect unary, /execute, /contexts). */
static json_t *body_json(struct call *c, bool empty_ok)
{
	json_error_t je;
	json_t *j;

	if (!c->r->len && empty_ok)
		return json_object();
	j = json_loadb(c->r->body ? c->r->body : "", c->r->len, 0, &je);
	if (!json_is_object(j)) {
		json_decref(j);
		fail(c, 400, "invalid_argument",
		     "the body is not a JSON object: %s (column %d)",
		     j ? "another JSON value" : je.text, je.column);
		return NULL;
	}
	return j;
}

/* A path member of msg mapped to the engine's; -1 after replying. */
static int path_arg(struct call *c, json_t *msg, const char *key, char *out,
		    size_t n)
{
	char why[600];

	if (map_path(json_string_value(json_object_get(msg, key)), out, n, why,
		     sizeof(why)) < 0) {
		fail(c, 400, "invalid_argument", "%s: %s", key, why);
		return -1;
	}
	return 0;
}

/* A "cwd" of from (if any) into p as the engine's, the path as the code
 * sees it (commands, contexts): 0, or -1 with the request failed. */
static int put_cwd(struct call *c, json_t *from, json_t *p)
{
	char cwd[4096];

	if (!json_string_value(json_object_get(from, "cwd")))
		return 0;
	if (path_arg(c, from, "cwd", cwd, sizeof(cwd)) < 0)
		return -1;
	json_object_set_new(p, "cwd", e2b_path(cwd));
	return 0;
}

/* ---- envd: /files ---- */

static void files_get(struct call *c)
{
	char path[4096];
	json_t *res,
		*msg = json_pack("{s:s?}", "path", e2b_query(c->r, "path"));
	unsigned char *data;
	size_t len;

	if (path_arg(c, msg, "path", path, sizeof(path)) < 0) {
		json_decref(msg);
		return;
	}
	json_decref(msg);
	if (call(c, "files.read", json_pack("{s:s}", "path", path), &res) < 0)
		return;
	const char *b = json_string_value(json_object_get(res, "base64"));
	if (!b || ws_base64_decode(b, strlen(b), &data, &len) < 0) {
		json_decref(res);
		fail(c, 500, "internal", "%s: could not be read", path);
		return;
	}
	json_decref(res);
	e2b_reply_bytes(c->rp, 200, "application/octet-stream", (char *)data,
			len);
}

static json_t *write_one(struct call *c, const char *e2bpath, const char *data,
			 size_t len)
{
	char path[4096], why[600];
	json_t *res, *b64 = view_json_base64(data, len);

	if (map_path(e2bpath, path, sizeof(path), why, sizeof(why)) < 0) {
		json_decref(b64);
		fail(c, 400, "invalid_argument", "%s", why);
		return NULL;
	}
	if (call(c, "files.write",
		 json_pack("{s:s, s:o}", "path", path, "base64", b64),
		 &res) < 0)
		return NULL;
	json_decref(res);
	const char *slash = strrchr(path, '/');
	return json_pack("{s:s, s:s, s:o}", "name", slash ? slash + 1 : path,
			 "type", "file", "path", e2b_path(path));
}

static void files_post(struct call *c)
{
	struct e2b_req *r = c->r;
	const char *qpath = e2b_query(r, "path"),
		   *enc = e2b_header(r, "Content-Encoding");
	json_t *out, *one;

	if (enc && strcasecmp(enc, "identity")) {
		/* stored as sent, the file would hold the compressed bytes */
		fail(c, 415, "invalid_argument",
		     "Content-Encoding %.40s: ward takes uploads uncompressed "
		     "(files.write without gzip)",
		     enc);
		return;
	}
	out = json_array();

	if (!r->files && r->len > E2B_MAX_UPLOAD) {
		fail(c, 413, "resource_exhausted",
		     "the upload is over ward's limit of %d MiB a file",
		     E2B_MAX_UPLOAD >> 20);
		json_decref(out);
		return;
	}
	if (!r->files) {
		/* application/octet-stream: the body is the file */
		one = write_one(c, qpath, r->body ? r->body : "", r->len);
		if (!one) {
			json_decref(out);
			return;
		}
		json_array_append_new(out, one);
	}
	for (size_t i = 0; i < r->n_files; i++) {
		const char *p = qpath && r->n_files == 1 ? qpath
							 : r->files[i].name;
		one = write_one(c, p, r->files[i].data ? r->files[i].data : "",
				r->files[i].len);
		if (!one) {
			json_decref(out);
			return;
		}
		json_array_append_new(out, one);
	}
	e2b_reply_json(c->rp, 200, out);
}

/* ---- envd: filesystem.Filesystem ---- */

static const char *file_type(const char *t)
{
	if (t && !strcmp(t, "dir"))
		return "FILE_TYPE_DIRECTORY";
	if (t && !strcmp(t, "symlink"))
		return "FILE_TYPE_SYMLINK";
	if (t && !strcmp(t, "file"))
		return "FILE_TYPE_FILE";
	/* a fifo, a socket: E2B has no word for them (the SDK skips it) */
	return "FILE_TYPE_UNSPECIFIED";
}

static void perm_string(char *p, unsigned mode, const char *type)
{
	static const char rwx[] = "rwxrwxrwx";

	p[0] = type && !strcmp(type, "dir")	  ? 'd'
	       : type && !strcmp(type, "symlink") ? 'l'
						  : '-';
	for (int i = 0; i < 9; i++)
		p[1 + i] = mode & (1u << (8 - i)) ? rwx[i] : '-';
	p[10] = '\0';
}

/* The engine's entry {path, name, type, size, mode, mtime_ms} as envd's
 * EntryInfo. */
static json_t *entry_info(json_t *f)
{
	const char *type = json_string_value(json_object_get(f, "type"));
	const char *path = json_string_value(json_object_get(f, "path"));
	const char *name = json_string_value(json_object_get(f, "name"));
	unsigned mode =
		(unsigned)json_integer_value(json_object_get(f, "mode"));
	char perms[11], when[40];

	perm_string(perms, mode, type);
	e2b_iso_time(when, sizeof(when),
		     json_integer_value(json_object_get(f, "mtime_ms")));
	if (!name && path) {
		const char *slash = strrchr(path, '/');
		name = slash ? slash + 1 : path;
	}
	return json_pack("{s:s, s:s, s:o, s:I, s:i, s:s, s:s, s:s, s:s}",
			 "name", name ? name : "", "type", file_type(type),
			 "path", e2b_path(path), "size",
			 json_integer_value(json_object_get(f, "size")), "mode",
			 (int)(mode & 07777), "permissions", perms, "owner",
			 "user", "group", "user", "modifiedTime", when);
}

static void fs_stat_reply(struct call *c, const char *path, const char *key)
{
	json_t *res;

	if (call(c, "files.stat", json_pack("{s:s}", "path", path), &res) < 0)
		return;
	json_t *f = json_object_get(res, "file") ? json_object_get(res, "file")
						 : res;
	e2b_reply_json(c->rp, 200, json_pack("{s:o}", key, entry_info(f)));
	json_decref(res);
}

static void fs_call(struct call *c, const char *method, json_t *msg)
{
	char path[4096], to[4096];
	json_t *res;

	if (!strcmp(method, "Stat")) {
		if (path_arg(c, msg, "path", path, sizeof(path)) == 0)
			fs_stat_reply(c, path, "entry");
	} else if (!strcmp(method, "ListDir")) {
		json_int_t depth =
			json_integer_value(json_object_get(msg, "depth"));
		if (path_arg(c, msg, "path", path, sizeof(path)) < 0 ||
		    call(c, "files.list",
			 json_pack("{s:s, s:I}", "path", path, "depth",
				   depth > 0 ? depth : 1),
			 &res) < 0)
			return;
		json_t *entries = json_array(), *f;
		size_t i;
		json_array_foreach(json_object_get(res, "files"), i, f)
			json_array_append_new(entries, entry_info(f));
		json_decref(res);
		e2b_reply_json(c->rp, 200,
			       json_pack("{s:o}", "entries", entries));
	} else if (!strcmp(method, "MakeDir")) {
		if (path_arg(c, msg, "path", path, sizeof(path)) < 0 ||
		    call(c, "files.mkdir", json_pack("{s:s}", "path", path),
			 &res) < 0)
			return;
		bool created = json_is_true(json_object_get(res, "created"));
		json_decref(res);
		if (!created)
			fail(c, 409, "already_exists", "%s: already exists",
			     json_string_value(json_object_get(msg, "path")));
		else
			fs_stat_reply(c, path, "entry");
	} else if (!strcmp(method, "Move")) {
		if (path_arg(c, msg, "source", path, sizeof(path)) < 0 ||
		    path_arg(c, msg, "destination", to, sizeof(to)) < 0 ||
		    call(c, "files.rename",
			 json_pack("{s:s, s:s}", "from", path, "to", to),
			 &res) < 0)
			return;
		json_decref(res);
		fs_stat_reply(c, to, "entry");
	} else if (!strcmp(method, "Remove")) {
		if (path_arg(c, msg, "path", path, sizeof(path)) < 0 ||
		    call(c, "files.remove", json_pack("{s:s}", "path", path),
			 &res) < 0)
			return;
		json_decref(res);
		e2b_reply_json(c->rp, 200, json_object());
	} else {
		fail(c, 501, "unimplemented",
		     "filesystem.Filesystem/%s is not served by ward (Stat, "
		     "ListDir, MakeDir, Move and Remove are)",
		     method);
	}
}

/* ---- denials, said so that the caller (often an LLM) can adapt ---- */

static bool is_net(const char *sc)
{
	static const char *const net[] = { "connect",  "sendto", "sendmsg",
					   "sendmmsg", "bind",	 "socket",
					   "listen",   NULL };
	for (int i = 0; sc && net[i]; i++)
		if (!strcmp(sc, net[i]))
			return true;
	return false;
}

/* One line per denial of a result's policy, or "" when none. */
static void e2b_denials_text(struct ward_strbuf *sb, json_t *result)
{
	json_t *list = json_object_get(json_object_get(result, "policy"),
				       "denials"),
	       *d;
	size_t i;

	json_array_foreach(list, i, d)
	{
		const char *sc = json_string_value(
				   json_object_get(d, "syscall")),
			   *tg = json_string_value(
				   json_object_get(d, "target")),
			   *rule = json_string_value(
				   json_object_get(d, "rule")),
			   *en = json_string_value(json_object_get(d, "errno"));
		if (i == 8) {
			ward_strbuf_appendf(sb, "ward denied %zu more\n",
					    json_array_size(list) - i);
			break;
		}
		ward_strbuf_appendf(
			sb, "ward denied %s %s (rule %s, %s): %s\n",
			sc ? sc : "?", tg ? tg : "", rule ? rule : "?",
			en ? en : "killed",
			is_net(sc) ? "no network in this sandbox"
			: sc && strstr(sc, "exec")
				? "this program may not be run in this sandbox"
				: "not allowed by this sandbox's policy");
	}
}

/* ---- envd: process.Process ---- */

struct proc_job {
	struct e2b *e;
	char sid[32];
	json_t *params; /* command.run's */
	json_t *config;
	unsigned pid;
	struct e2b_stream *st;
};

static void proc_job_free(void *p)
{
	struct proc_job *j = p;

	json_decref(j->params);
	json_decref(j->config);
	free(j);
}

static void proc_chunk(void *arg, const char *stream, const char *data,
		       size_t len, long long ts_ns)
{
	struct proc_job *j = arg;

	(void)ts_ns;
	e2b_connect_put(j->st, 0,
			json_pack("{s:{s:{s:o}}}", "event", "data", stream,
				  view_json_base64(data, len)));
}

static void proc_register(struct proc_job *j, bool add)
{
	pthread_mutex_lock(&j->e->lock);
	struct sbx *x = e2b_find(j->e, j->sid);
	for (struct proc **pp = x ? &x->procs : NULL; pp && *pp;
	     pp = &(*pp)->next) {
		if (!add && (*pp)->pid == j->pid) {
			struct proc *p = *pp;
			*pp = p->next;
			json_decref(p->config);
			free(p);
			break;
		}
	}
	struct proc *p = add && x ? calloc(1, sizeof(*p)) : NULL;
	if (p) {
		p->pid = j->pid;
		p->cancel = e2b_stream_cancel(j->st);
		p->config = json_incref(j->config);
		p->next = x->procs;
		x->procs = p;
	}
	pthread_mutex_unlock(&j->e->lock);
}

static void proc_run(struct e2b_stream *st, void *arg)
{
	struct proc_job *j = arg;
	struct ws_error err;
	json_t *res;

	j->st = st;
	proc_register(j, true);
	e2b_connect_put(st, 0,
			json_pack("{s:{s:{s:i}}}", "event", "start", "pid",
				  (int)j->pid));
	int rc = e2b_engine(j->e, "command.run", json_incref(j->params),
			    proc_chunk, j, e2b_stream_cancel(st), &res, &err);
	proc_register(j, false);
	if (rc < 0) {
		if (err.code == WS_E_NO_SESSION)
			e2b_mark_dead(j->e, j->sid, "its session ended");
		e2b_connect_end(st, err_code(&err), err.message);
		return;
	}
	struct ward_strbuf sb = WARD_STRBUF_INIT;
	e2b_denials_text(&sb, res);
	if (sb.len)
		proc_chunk(j, "stderr", sb.buf, sb.len, 0);
	ward_strbuf_free(&sb);
	json_int_t code = json_integer_value(json_object_get(res, "exit_code"));
	const char *status = json_string_value(json_object_get(res, "status"));
	json_t *error = json_object_get(res, "error");
	const char *emsg = json_string_value(error);
	if (!emsg && json_is_object(error))
		emsg = json_string_value(json_object_get(error, "value"));
	char st_text[64];
	snprintf(st_text, sizeof(st_text), "exit status %lld", (long long)code);
	json_t *end = json_pack(
		"{s:I, s:b, s:s}", "exitCode", code, "exited", 1, "status",
		/* E2B's words, unless it did not simply exit */
		status && strcmp(status, "ok") && strcmp(status, "error")
			? status
			: st_text);
	if (emsg)
		json_object_set_new(end, "error", json_string(emsg));
	e2b_connect_put(st, 0, json_pack("{s:{s:o}}", "event", "end", end));
	e2b_connect_end(st, NULL, NULL);
	json_decref(res);
}

/* POSIX shell quoting of one word. */
static void sh_quote(struct ward_strbuf *sb, const char *w)
{
	ward_strbuf_puts(sb, "'");
	for (; *w; w++)
		ward_strbuf_puts(sb, *w == '\'' ? "'\\''" : (char[]){ *w, 0 });
	ward_strbuf_puts(sb, "'");
}

/* The command line of a ProcessConfig: the SDK's commands.run sends
 * /bin/bash -l -c CMD, which is CMD; anything else is quoted word by word. */
static char *command_line(json_t *proc)
{
	const char *cmd = json_string_value(json_object_get(proc, "cmd"));
	json_t *args = json_object_get(proc, "args"), *a;
	struct ward_strbuf sb = WARD_STRBUF_INIT;
	size_t i, n = json_array_size(args);

	if (cmd && !strcmp(cmd, "/bin/bash") && n == 3 &&
	    !strcmp(json_string_value(json_array_get(args, 0)) ?: "", "-l") &&
	    !strcmp(json_string_value(json_array_get(args, 1)) ?: "", "-c") &&
	    json_is_string(json_array_get(args, 2)))
		return strdup(json_string_value(json_array_get(args, 2)));
	if (!cmd)
		return NULL;
	sh_quote(&sb, cmd);
	json_array_foreach(args, i, a)
	{
		ward_strbuf_puts(&sb, " ");
		sh_quote(&sb, json_string_value(a) ?: "");
	}
	return ward_strbuf_steal(&sb);
}

static void proc_start(struct call *c)
{
	char why[600];
	json_t *msg, *proc;

	if (e2b_connect_unwrap(c->r->body, c->r->len, &msg, why, sizeof(why)) <
	    0) {
		fail(c, 400, "invalid_argument", "%s", why);
		return;
	}
	proc = json_object_get(msg, "process");
	char *line = command_line(proc);
	if (!line) {
		json_decref(msg);
		fail(c, 400, "invalid_argument", "process.cmd: required");
		return;
	}
	if (json_is_true(json_object_get(msg, "stdin")) ||
	    json_object_get(msg, "pty")) {
		free(line);
		json_decref(msg);
		fail(c, 400, "invalid_argument",
		     "stdin and pty are not served by ward's commands: pass "
		     "the input in the command (a file, a here-document)");
		return;
	}
	json_t *p = json_pack("{s:s, s:s, s:b}", "session_id", c->sid, "cmd",
			      line, "stream", 1);
	free(line);
	json_t *envs = json_object_get(proc, "envs");
	if (json_is_object(envs) && json_object_size(envs))
		json_object_set(p, "env", envs);
	if (put_cwd(c, proc, p) < 0) {
		json_decref(p);
		json_decref(msg);
		return;
	}
	const char *tmo = e2b_header(c->r, "Connect-Timeout-Ms");
	if (tmo && atof(tmo) > 0)
		json_object_set_new(p, "timeout_s",
				    json_real(atof(tmo) / 1000));
	struct proc_job *j = calloc(1, sizeof(*j));
	if (!j) {
		json_decref(p);
		json_decref(msg);
		fail(c, 500, "internal", "out of memory");
		return;
	}
	j->e = c->e;
	snprintf(j->sid, sizeof(j->sid), "%s", c->sid);
	j->params = p;
	j->config = json_incref(proc);
	pthread_mutex_lock(&c->e->lock);
	j->pid = c->e->next_pid++;
	pthread_mutex_unlock(&c->e->lock);
	json_decref(msg);
	c->rp->status = 200;
	c->rp->ctype = "application/connect+json";
	c->rp->job = proc_run;
	c->rp->arg = j;
	c->rp->free_arg = proc_job_free;
}

static void proc_unary(struct call *c, const char *method, json_t *msg)
{
	struct e2b *e = c->e;

	if (!strcmp(method, "List")) {
		json_t *arr = json_array();
		pthread_mutex_lock(&e->lock);
		struct sbx *x = e2b_find(e, c->sid);
		for (struct proc *p = x ? x->procs : NULL; p; p = p->next)
			json_array_append_new(
				arr, json_pack("{s:i, s:O}", "pid", (int)p->pid,
					       "config", p->config));
		pthread_mutex_unlock(&e->lock);
		e2b_reply_json(c->rp, 200,
			       json_pack("{s:o}", "processes", arr));
	} else if (!strcmp(method, "SendSignal")) {
		json_int_t pid = json_integer_value(json_object_get(
			json_object_get(msg, "process"), "pid"));
		bool found = false;
		pthread_mutex_lock(&e->lock);
		struct sbx *x = e2b_find(e, c->sid);
		for (struct proc *p = x ? x->procs : NULL; p; p = p->next)
			if (p->pid == pid) {
				ws_cancel_fire(p->cancel);
				found = true;
			}
		pthread_mutex_unlock(&e->lock);
		if (found)
			e2b_reply_json(c->rp, 200, json_object());
		else
			fail(c, 404, "not_found", "no process %lld runs here",
			     (long long)pid);
	} else {
		fail(c, 501, "unimplemented",
		     "process.Process/%s is not served by ward (Start, List "
		     "and SendSignal are)",
		     method);
	}
}

/* ---- the code interpreter ---- */

/* E2B's language names as the engine's; NULL when not served. */
static const char *engine_lang(const char *l)
{
	static const char *const map[][2] = {
		{ "python", "python" }, { "py", "python" }, { "js", "js" },
		{ "javascript", "js" }, { "node", "js" },   { "bash", "bash" },
		{ "sh", "bash" },	{ NULL, NULL },
	};
	for (int i = 0; map[i][0]; i++)
		if (!strcasecmp(l, map[i][0]))
			return map[i][1];
	return NULL;
}

struct exec_job {
	struct e2b *e;
	char sid[32];
	json_t *params;
	struct e2b_stream *st;
};

static void exec_job_free(void *p)
{
	struct exec_job *j = p;

	json_decref(j->params);
	free(j);
}

static void put_line(struct e2b_stream *st, json_t *o)
{
	char *t = json_dumps(o, JSON_COMPACT);

	if (t) {
		e2b_stream_put(st, t, strlen(t));
		e2b_stream_put(st, "\n", 1);
	}
	free(t);
	json_decref(o);
}

static void exec_chunk(void *arg, const char *stream, const char *data,
		       size_t len, long long ts_ns)
{
	struct exec_job *j = arg;

	(void)ts_ns;
	put_line(j->st, json_pack("{s:s, s:o}", "type", stream, "text",
				  ws_json_text(data, len)));
}

static json_t *traceback_text(json_t *tb)
{
	if (json_is_string(tb))
		return json_incref(tb);
	struct ward_strbuf sb = WARD_STRBUF_INIT;
	json_t *l;
	size_t i;
	json_array_foreach(tb, i, l)
	{
		ward_strbuf_puts(&sb, json_string_value(l) ?: "");
		if (sb.len && sb.buf[sb.len - 1] != '\n')
			ward_strbuf_puts(&sb, "\n");
	}
	json_t *t = json_string(ward_strbuf_str(&sb));
	ward_strbuf_free(&sb);
	return t;
}

/* The run's result after the streamed output: results, the error (with
 * what ward denied, if anything), the count, the end. */
static void exec_result(struct exec_job *j, json_t *res)
{
	json_t *r, *error = json_object_get(res, "error");
	size_t i;
	struct ward_strbuf den = WARD_STRBUF_INIT;

	json_array_foreach(json_object_get(res, "results"), i, r)
	{
		json_t *o = json_deep_copy(r);
		json_object_set_new(o, "type", json_string("result"));
		if (!json_object_get(o, "is_main_result"))
			json_object_set_new(o, "is_main_result", json_false());
		put_line(j->st, o);
	}
	e2b_denials_text(&den, res);
	if (json_is_true(json_object_get(res, "session_closed")))
		ward_strbuf_puts(&den, "the sandbox was closed while this cell "
				       "ran (killed, or its timeout passed)\n");
	const char *status = json_string_value(json_object_get(res, "status"));
	if (json_is_object(error)) {
		const char *v =
			json_string_value(json_object_get(error, "value"));
		json_t *val = json_string(v ? v : "");
		if (den.len) {
			json_decref(val);
			char *t = NULL;
			if (asprintf(&t, "%s\n%s", v ? v : "", den.buf) < 0)
				t = NULL;
			val = json_string(t ? t : den.buf);
			free(t);
		}
		put_line(j->st,
			 json_pack("{s:s, s:O?, s:o, s:o}", "type", "error",
				   "name", json_object_get(error, "name"),
				   "value", val, "traceback",
				   traceback_text(json_object_get(
					   error, "traceback"))));
	} else {
		if (den.len)
			exec_chunk(j, "stderr", den.buf, den.len, 0);
		if (status && strcmp(status, "ok"))
			put_line(j->st,
				 json_pack("{s:s, s:s, s:s, s:s}", "type",
					   "error", "name", "WardError",
					   "value", status, "traceback", ""));
	}
	ward_strbuf_free(&den);
	put_line(j->st, json_pack("{s:s, s:O}", "type", "number_of_executions",
				  "execution_count",
				  json_object_get(res, "execution_count")));
}

static void exec_run(struct e2b_stream *st, void *arg)
{
	struct exec_job *j = arg;
	struct ws_error err;
	json_t *res;

	j->st = st;
	if (e2b_engine(j->e, "run", json_incref(j->params), exec_chunk, j,
		       e2b_stream_cancel(st), &res, &err) < 0) {
		if (err.code == WS_E_NO_SESSION)
			e2b_mark_dead(j->e, j->sid, "its session ended");
		put_line(st, json_pack("{s:s, s:s, s:s, s:s}", "type", "error",
				       "name", "WardError", "value",
				       err.message, "traceback", ""));
	} else {
		exec_result(j, res);
		json_decref(res);
	}
	put_line(st, json_pack("{s:s}", "type", "end_of_execution"));
}

static void execute(struct call *c)
{
	json_t *body = body_json(c, false), *p;
	const char *lang;

	if (!body)
		return;
	json_t *code = json_object_get(body, "code"),
	       *ctx = json_object_get(body, "context_id"),
	       *envs = json_object_get(body, "env_vars");
	lang = json_string_value(json_object_get(body, "language"));
	if (!json_is_string(code)) {
		json_decref(body);
		fail(c, 400, "invalid_argument", "code: required, a string");
		return;
	}
	if (lang && !engine_lang(lang)) {
		/* an execution error: the SDK shows /execute's error bodies
		 * only as "400 Bad Request" */
		char msg[160];
		snprintf(msg, sizeof(msg),
			 "language '%.40s' is not served by ward (python, js, "
			 "bash)",
			 lang);
		json_t *line = json_pack("{s:s, s:s, s:s, s:s}", "type",
					 "error", "name", "WardError", "value",
					 msg, "traceback", "");
		char *t = line ? json_dumps(line, JSON_COMPACT) : NULL,
		     *all = NULL;
		json_decref(line);
		if (t && asprintf(&all, "%s\n{\"type\":\"end_of_execution\"}\n",
				  t) < 0)
			all = NULL;
		free(t);
		e2b_reply_bytes(c->rp, 200, "application/x-ndjson", all,
				all ? strlen(all) : 0);
		json_decref(body);
		return;
	}
	p = json_pack("{s:s, s:O, s:b}", "session_id", c->sid, "code", code,
		      "stream", 1);
	if (lang)
		json_object_set_new(p, "language",
				    json_string(engine_lang(lang)));
	if (json_is_string(ctx))
		json_object_set(p, "context_id", ctx);
	if (json_is_object(envs) && json_object_size(envs))
		json_object_set(p, "env", envs);
	json_decref(body);
	struct exec_job *j = calloc(1, sizeof(*j));
	if (!j) {
		json_decref(p);
		fail(c, 500, "internal", "out of memory");
		return;
	}
	j->e = c->e;
	snprintf(j->sid, sizeof(j->sid), "%s", c->sid);
	j->params = p;
	c->rp->status = 200;
	c->rp->ctype = "application/x-ndjson";
	c->rp->job = exec_run;
	c->rp->arg = j;
	c->rp->free_arg = exec_job_free;
}

static json_t *context_json(json_t *ctx, const char *lang)
{
	const char *cwd = json_string_value(json_object_get(ctx, "cwd"));
	json_t *id = json_object_get(ctx, "context_id");
	const char *l =
		lang ? lang
		     : json_string_value(json_object_get(ctx, "language"));

	if (!id)
		id = json_object_get(ctx, "id");
	return json_pack("{s:O, s:s, s:o}", "id", id, "language",
			 l ? l : "python", "cwd",
			 cwd && cwd[0] != '/' ? e2b_path(cwd)
					      : json_string(cwd ? cwd : HOME));
}

static void contexts(struct call *c, const char *rest)
{
	const char *m = c->r->method;
	json_t *res, *body;

	if (!*rest && !strcmp(m, "POST")) {
		if (!(body = body_json(c, true)))
			return;
		const char *lang =
			json_string_value(json_object_get(body, "language"));
		if (lang && !engine_lang(lang)) {
			fail(c, 400, "invalid_argument",
			     "language '%s' is not served by ward (python, js, "
			     "bash)",
			     lang);
			json_decref(body);
			return;
		}
		json_t *p = json_pack("{s:s}", "language",
				      lang ? engine_lang(lang) : "python");
		if (put_cwd(c, body, p) < 0) {
			json_decref(p);
			json_decref(body);
			return;
		}
		if (call(c, "context.create", p, &res) == 0) {
			e2b_reply_json(c->rp, 200,
				       context_json(res,
						    lang ? lang : "python"));
			json_decref(res);
		}
		json_decref(body);
	} else if (!*rest && !strcmp(m, "GET")) {
		if (call(c, "context.list", json_object(), &res) < 0)
			return;
		json_t *arr = json_array(), *x;
		size_t i;
		json_array_foreach(json_object_get(res, "contexts"), i, x)
			json_array_append_new(arr, context_json(x, NULL));
		json_decref(res);
		e2b_reply_json(c->rp, 200, arr);
	} else if (*rest == '/') {
		char id[128];
		size_t n = strcspn(rest + 1, "/");
		const char *tail = rest + 1 + n;
		snprintf(id, sizeof(id), "%.*s", (int)(n < 127 ? n : 127),
			 rest + 1);
		const char *method =
			!strcmp(m, "DELETE") && !*tail ? "context.remove"
			: !strcmp(m, "POST") && !strcmp(tail, "/restart")
				? "context.restart"
				: NULL;
		if (!method) {
			fail(c, 404, "not_found", "%s /contexts%s: not served",
			     m, rest);
			return;
		}
		if (call(c, method, json_pack("{s:s}", "context_id", id),
			 &res) == 0) {
			json_decref(res);
			e2b_reply_bytes(c->rp, 204, NULL, NULL, 0);
		}
	} else {
		fail(c, 404, "not_found", "%s /contexts%s: not served", m,
		     rest);
	}
}

/* ---- routing ---- */

void e2b_sandbox_request(struct e2b *e, const char *sid, struct e2b_req *r,
			 struct e2b_reply *rp)
{
	struct call c = { .e = e, .r = r, .rp = rp };
	const char *url = r->url, *m = r->method;

	snprintf(c.sid, sizeof(c.sid), "%s", sid);
	c.connect = !strncmp(url, "/filesystem.Filesystem/", 23) ||
		    !strncmp(url, "/process.Process/", 17);
	/* the Connect client reads a streaming call's error from its end
	 * (a status other than 200 loses the message) */
	c.stream = !strcmp(url, "/process.Process/Start");
	bool jupyter = !strcmp(url, "/execute") ||
		       !strncmp(url, "/contexts", 9);
	if (strlen(sid) >= sizeof(c.sid)) {
		fail(&c, 502, "unavailable", "sandbox %.40s... is not running",
		     sid);
		return;
	}
	if (admit(&c, jupyter) < 0)
		return;
	if (!strcmp(url, "/health")) {
		e2b_reply_bytes(rp, 204, NULL, NULL, 0);
	} else if (!strcmp(url, "/files") && !strcmp(m, "GET")) {
		files_get(&c);
	} else if (!strcmp(url, "/files") && !strcmp(m, "POST")) {
		files_post(&c);
	} else if (!strcmp(url, "/execute") && !strcmp(m, "POST")) {
		execute(&c);
	} else if (!strncmp(url, "/contexts", 9)) {
		contexts(&c, url + 9);
	} else if (!strcmp(url, "/process.Process/Start") &&
		   !strcmp(m, "POST")) {
		proc_start(&c);
	} else if (!strcmp(url, "/filesystem.Filesystem/WatchDir") ||
		   !strcmp(url, "/process.Process/Connect") ||
		   !strcmp(url, "/process.Process/StreamInput")) {
		fail(&c, 501, "unimplemented",
		     "%s is not served by ward (docs/agents.md lists what is)",
		     url + 1);
	} else if (c.connect && !strcmp(m, "POST")) {
		json_t *msg = body_json(&c, true);
		if (!msg)
			return;
		if (url[1] == 'f')
			fs_call(&c, url + 23, msg);
		else
			proc_unary(&c, url + 17, msg);
		json_decref(msg);
	} else {
		fail(&c, 404, "not_found",
		     "%s %s: not served by ward's sandboxes (docs/agents.md "
		     "lists what is)",
		     m, url);
	}
}
