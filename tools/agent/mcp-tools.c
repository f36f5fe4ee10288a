/*
 * mcp-tools.c - the tools `ward mcp` offers (mcp.h): their table and JSON
 * schemas, tools/list as the negotiated version shows it, and each tool's
 * result turned into content blocks a model can read (a summary text, the
 * pictures, structuredContent where the version has it).
 */
#include "tools/agent/mcp.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/json.h"
#include "common/log.h"
#include "common/utf8.h"

/* ---- text helpers ---- */

/* Appends len bytes as valid UTF-8 (each invalid byte becomes U+FFFD), so
 * the text can become a JSON string whatever the code printed. */
static void append_utf8(struct ward_strbuf *sb, const char *s, size_t len)
{
	while (len) {
		uint32_t cp;
		size_t n = ward_utf8_decode(s, len, &cp);

		if (n) {
			ward_strbuf_append(sb, s, n);
		} else {
			ward_strbuf_puts(sb, "\xef\xbf\xbd");
			n = 1;
		}
		s += n;
		len -= n;
	}
}

/* The largest cut <= at that does not split a UTF-8 sequence. */
static size_t utf8_floor(const char *s, size_t len, size_t at)
{
	if (at >= len)
		return len;
	while (at > 0 && ((unsigned char)s[at] & 0xc0) == 0x80)
		at--;
	return at;
}

/* Appends s, or its head and tail around a note of what was left out. */
void mcp_append_head_tail(struct ward_strbuf *sb, const char *s, size_t len,
			  size_t max)
{
	size_t head, tail;

	if (len <= max) {
		append_utf8(sb, s, len);
		return;
	}
	head = utf8_floor(s, len, max / 2);
	tail = utf8_floor(s, len, len - max / 2);
	append_utf8(sb, s, head);
	ward_strbuf_appendf(sb, "\n[... %zu bytes left out here ...]\n",
			    tail - head);
	append_utf8(sb, s + tail, len - tail);
}

/* ws_json_text() makes any bytes a JSON string (invalid UTF-8, say a
 * message cut to fit, becomes U+FFFD) where json_string() would fail. */
json_t *mcp_text_block(const char *text)
{
	return json_pack("{s:s, s:o}", "type", "text", "text",
			 ws_json_text(text, strlen(text)));
}

static json_t *strbuf_block(struct ward_strbuf *sb)
{
	json_t *b = mcp_text_block(ward_strbuf_str(sb));

	ward_strbuf_free(sb);
	return b;
}

bool mcp_structured_ok(const struct mcp *m)
{
	return m->version && strcmp(m->version, VERSION_STRUCTURED) >= 0;
}

/* ---- the tools ---- */

static json_t *run_content(struct mcp *m, json_t *result, bool *is_error);
static json_t *file_content(struct mcp *m, json_t *result, bool *is_error);
static json_t *json_content(struct mcp *m, json_t *result, bool *is_error);

static const char *const run_args[] = { "code", "language", "session_id",
					"timeout_s", NULL };
static const char *const create_args[] = { "language", "env", "timeout_s",
					   NULL };
static const char *const session_args[] = { "session_id", NULL };
static const char *const write_args[] = { "session_id", "path", "text",
					  "base64", NULL };
static const char *const read_args[] = { "session_id", "path", NULL };
static const char *const no_args[] = { NULL };
static const char *const list_args[] = { "session_id", "path", "depth", NULL };

#define LANG_SCHEMA                                                            \
	"{\"type\": \"string\", \"enum\": [\"python\", \"node\", \"sh\"],"     \
	" \"description\": \"python (default), node or sh\"}"
#define SESSION_SCHEMA                                                         \
	"{\"type\": \"string\", \"description\": \"a session id from "         \
	"create_session\"}"
#define FILE_SCHEMA                                                            \
	"{\"type\": \"object\", \"properties\": {"                             \
	"\"path\": {\"type\": \"string\"}, \"size\": {\"type\": \"integer\"}," \
	" \"sha256\": {\"type\": \"string\"}}, \"required\": [\"path\"]}"

/* clang-format off */
static const struct tool tools[] = {
	{
		.name = "run_code",
		.title = "Run code",
		.method = "run",
		.description =
			"Run code under ward's supervisor (seccomp + ptrace, a "
			"policy, everything recorded). With session_id it runs "
			"as the next cell of that session: variables, imports "
			"and files persist, and the value of the last "
			"expression comes back as a result, like a notebook. "
			"Without it, a fresh interpreter runs the code once. "
			"matplotlib figures come back as PNG images. Returns "
			"stdout/stderr (head and tail when long), the error "
			"(name, value, traceback) and the syscalls the policy "
			"denied.",
		.args = run_args,
		.input_schema =
			"{\"type\": \"object\", \"properties\": {"
			"\"code\": {\"type\": \"string\", \"description\": \"the code to run\"},"
			"\"language\": " LANG_SCHEMA ","
			"\"session_id\": " SESSION_SCHEMA ","
			"\"timeout_s\": {\"type\": \"number\", \"exclusiveMinimum\": 0,"
			" \"description\": \"wall-clock limit for this code (default: the server's;"
			" the server may cap it)\"}},"
			"\"required\": [\"code\"], \"additionalProperties\": false}",
		.output_schema =
			"{\"type\": \"object\", \"properties\": {"
			"\"run_id\": {\"type\": \"string\"},"
			"\"session_id\": {\"type\": [\"string\", \"null\"]},"
			"\"execution_count\": {\"type\": [\"integer\", \"null\"]},"
			"\"status\": {\"type\": \"string\"},"
			"\"exit_code\": {\"type\": [\"integer\", \"null\"]},"
			"\"duration_ms\": {\"type\": \"number\"},"
			"\"interrupted\": {\"type\": \"boolean\"},"
			"\"logs\": {\"type\": \"object\", \"properties\": {"
			" \"stdout\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}},"
			" \"stderr\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}},"
			" \"stdout_base64\": {\"type\": \"array\", \"items\": {\"type\": \"string\"},"
			"  \"description\": \"only when stdout is not UTF-8: its parts' exact bytes\"},"
			" \"stderr_base64\": {\"type\": \"array\", \"items\": {\"type\": \"string\"},"
			"  \"description\": \"only when stderr is not UTF-8: its parts' exact bytes\"}}},"
			"\"results\": {\"type\": \"array\", \"items\": {\"type\": \"object\"}},"
			"\"error\": {\"type\": [\"object\", \"null\"], \"properties\": {"
			" \"name\": {\"type\": \"string\"}, \"value\": {\"type\": \"string\"},"
			" \"traceback\": {\"type\": \"string\"}}},"
			"\"truncated\": {\"type\": \"object\"},"
			"\"artifacts\": {\"type\": \"array\", \"items\": {\"type\": \"object\"}},"
			"\"policy\": {\"type\": \"object\", \"properties\": {"
			" \"denied\": {\"type\": [\"boolean\", \"integer\"]},"
			" \"denials\": {\"type\": \"array\", \"items\": {\"type\": \"object\"}}}}},"
			"\"required\": [\"run_id\", \"status\", \"logs\", \"results\", \"error\"]}",
		.content = run_content,
	},
	{
		.name = "create_session",
		.title = "Create a session",
		.method = "session.create",
		.description =
			"Start a session: one live interpreter (python, node or "
			"sh) with its own working directory, under the server's "
			"policy. Pass its session_id to run_code and the file "
			"tools. Sessions expire when idle; close them with "
			"close_session when done.",
		.args = create_args,
		.input_schema =
			"{\"type\": \"object\", \"properties\": {"
			"\"language\": " LANG_SCHEMA ","
			"\"env\": {\"type\": \"object\", \"additionalProperties\": {\"type\": \"string\"},"
			" \"description\": \"environment variables for the code\"},"
			"\"timeout_s\": {\"type\": \"number\", \"exclusiveMinimum\": 0,"
			" \"description\": \"default per-cell time limit\"}},"
			"\"additionalProperties\": false}",
		.output_schema =
			"{\"type\": \"object\", \"properties\": {"
			"\"session_id\": {\"type\": \"string\"},"
			"\"language\": {\"type\": \"string\"},"
			"\"run_id\": {\"type\": \"string\"}},"
			"\"required\": [\"session_id\"]}",
		.content = json_content,
	},
	{
		.name = "list_sessions",
		.title = "List sessions",
		.method = "session.list",
		.description = "The open sessions: id, language, cells run, when created and last used.",
		.args = no_args,
		.read_only = true,
		.input_schema = "{\"type\": \"object\", \"properties\": {}, \"additionalProperties\": false}",
		.output_schema =
			"{\"type\": \"object\", \"properties\": {"
			"\"sessions\": {\"type\": \"array\", \"items\": {\"type\": \"object\"}}},"
			"\"required\": [\"sessions\"]}",
		.content = json_content,
	},
	{
		.name = "close_session",
		.title = "Close a session",
		.method = "session.close",
		.description = "End a session: its interpreter stops and its working directory is removed (the record stays).",
		.args = session_args,
		.input_schema =
			"{\"type\": \"object\", \"properties\": {\"session_id\": " SESSION_SCHEMA "},"
			"\"required\": [\"session_id\"], \"additionalProperties\": false}",
		.content = json_content,
	},
	{
		.name = "write_file",
		.title = "Write a file",
		.method = "files.write",
		.description = "Write a file into a session's working directory (path relative to it), from text or base64.",
		.args = write_args,
		.input_schema =
			"{\"type\": \"object\", \"properties\": {"
			"\"session_id\": " SESSION_SCHEMA ","
			"\"path\": {\"type\": \"string\", \"description\": \"relative to the session's working directory\"},"
			"\"text\": {\"type\": \"string\", \"description\": \"the content as text (UTF-8)\"},"
			"\"base64\": {\"type\": \"string\", \"description\": \"or the content, base64-encoded\"}},"
			"\"required\": [\"session_id\", \"path\"], \"additionalProperties\": false}",
		.output_schema = FILE_SCHEMA,
		.content = json_content,
	},
	{
		.name = "read_file",
		.title = "Read a file",
		.method = "files.read",
		.description = "Read a file from a session's working directory: text comes back as text, PNG and JPEG as an image, other bytes as a resource blob.",
		.args = read_args,
		.read_only = true,
		.input_schema =
			"{\"type\": \"object\", \"properties\": {"
			"\"session_id\": " SESSION_SCHEMA ","
			"\"path\": {\"type\": \"string\", \"description\": \"relative to the session's working directory\"}},"
			"\"required\": [\"session_id\", \"path\"], \"additionalProperties\": false}",
		.content = file_content,
	},
	{
		.name = "list_files",
		.title = "List files",
		.method = "files.list",
		.description = "What is in a session's working directory (or a directory in it), "
			       "depth levels down (default 1): files with size and sha256, "
			       "directories, symlinks, dotfiles included.",
		.args = list_args,
		.read_only = true,
		.input_schema =
			"{\"type\": \"object\", \"properties\": {\"session_id\": " SESSION_SCHEMA ","
			"\"path\": {\"type\": \"string\", \"description\": \"a directory relative to the session's working directory (default: that directory)\"},"
			"\"depth\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 64, \"description\": \"levels listed (default 1)\"}},"
			"\"required\": [\"session_id\"], \"additionalProperties\": false}",
		.output_schema =
			"{\"type\": \"object\", \"properties\": {"
			"\"files\": {\"type\": \"array\", \"items\": " FILE_SCHEMA "}},"
			"\"required\": [\"files\"]}",
		.content = json_content,
	},
};
/* clang-format on */

#define N_TOOLS (sizeof(tools) / sizeof(tools[0]))

const struct tool *mcp_find_tool(const char *name)
{
	for (size_t i = 0; i < N_TOOLS; i++)
		if (!strcmp(tools[i].name, name))
			return &tools[i];
	return NULL;
}

/* The schemas are our own constants: one that does not parse is a bug. */
static json_t *schema(const char *text, const char *tool)
{
	json_error_t jerr;
	json_t *j = json_loads(text, 0, &jerr);

	if (!j)
		die("mcp: schema of %s: %s (column %d)", tool, jerr.text,
		    jerr.column);
	return j;
}

/* The tools/list array for the negotiated version: titles, annotations and
 * output schemas only where the revision knows them. */
json_t *mcp_tool_list(const struct mcp *m)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < N_TOOLS; i++) {
		const struct tool *t = &tools[i];
		json_t *o = json_pack("{s:s, s:s, s:o}", "name", t->name,
				      "description", t->description,
				      "inputSchema",
				      schema(t->input_schema, t->name));

		if (m->version && strcmp(m->version, "2025-03-26") >= 0)
			json_object_set_new(
				o, "annotations",
				json_pack("{s:s, s:b, s:b, s:b}", "title",
					  t->title, "readOnlyHint",
					  t->read_only, "destructiveHint",
					  !strcmp(t->name, "close_session"),
					  "openWorldHint", false));
		if (mcp_structured_ok(m)) {
			json_object_set_new(o, "title", json_string(t->title));
			if (t->output_schema)
				json_object_set_new(o, "outputSchema",
						    schema(t->output_schema,
							   t->name));
		}
		json_array_append_new(arr, o);
	}
	return arr;
}

/* ---- content from results ---- */

const char *mcp_str_at(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* The whole of a log stream (an array of chunks) as one buffer. */
static void join_stream(json_t *chunks, struct ward_strbuf *out)
{
	size_t i;
	json_t *c;

	json_array_foreach(chunks, i, c)
	{
		if (json_is_string(c))
			ward_strbuf_append(out, json_string_value(c),
					   json_string_length(c));
	}
}

static void summary_stream(struct ward_strbuf *sb, json_t *result,
			   const char *name)
{
	struct ward_strbuf all = WARD_STRBUF_INIT;
	json_t *trunc = json_object_get(result, "truncated");
	json_t *logs = json_object_get(result, "logs");
	char key[64];
	json_int_t total = -1, returned;
	bool exact;

	join_stream(json_object_get(logs, name), &all);
	returned = (json_int_t)all.len; /* the text's, when not UTF-8 */
	snprintf(key, sizeof(key), "%s_bytes_total", name);
	if (json_is_integer(json_object_get(trunc, key)))
		total = json_integer_value(json_object_get(trunc, key));
	snprintf(key, sizeof(key), "%s_bytes_returned", name);
	if (json_is_integer(json_object_get(trunc, key)))
		returned = json_integer_value(json_object_get(trunc, key));
	snprintf(key, sizeof(key), "%s_base64", name);
	exact = !json_object_get(logs, key);
	if (all.len || total > 0) {
		ward_strbuf_appendf(sb, "%s (%lld bytes", name,
				    (long long)returned);
		if (total > returned)
			ward_strbuf_appendf(
				sb,
				" of %lld: the middle was left out, the record has it all",
				(long long)total);
		if (!exact)
			ward_strbuf_appendf(
				sb,
				"; not UTF-8: shown with U+FFFD, the bytes are in "
				"structuredContent.logs.%s",
				key);
		ward_strbuf_puts(sb, "):\n");
		mcp_append_head_tail(sb, ward_strbuf_str(&all), all.len,
				     SUMMARY_STREAM_MAX);
		if (all.len && all.buf[all.len - 1] != '\n')
			ward_strbuf_puts(sb, "\n");
	}
	ward_strbuf_free(&all);
}

static void summary_denials(struct ward_strbuf *sb, json_t *policy)
{
	json_t *list = json_object_get(policy, "denials"), *d;
	json_int_t n = json_integer_value(json_object_get(policy, "denied"));
	size_t i;

	if (!n)
		n = (json_int_t)json_array_size(list);
	if (!n)
		return;
	ward_strbuf_appendf(sb, "policy: %lld syscall%s denied:\n",
			    (long long)n, n == 1 ? "" : "s");
	json_array_foreach(list, i, d)
	{
		const char *target = mcp_str_at(d, "target"),
			   *err = mcp_str_at(d, "errno");

		if (i == SUMMARY_DENIALS) {
			ward_strbuf_appendf(sb, "  ... and %lld more\n",
					    (long long)n - SUMMARY_DENIALS);
			break;
		}
		ward_strbuf_appendf(sb, "  %s %s",
				    mcp_str_at(d, "action") ?: "deny",
				    mcp_str_at(d, "syscall") ?: "?");
		if (target && *target) {
			ward_strbuf_puts(sb, " ");
			append_utf8(sb, target, strlen(target));
		}
		ward_strbuf_appendf(sb, " (rule %s%s%s)\n",
				    mcp_str_at(d, "rule") ?: "?",
				    err ? ", " : "", err ?: "");
	}
}

static void summary_error(struct ward_strbuf *sb, json_t *error)
{
	const char *name = mcp_str_at(error, "name"),
		   *value = mcp_str_at(error, "value");
	const char *tb = mcp_str_at(error, "traceback");

	if (!json_is_object(error))
		return;
	ward_strbuf_appendf(sb, "error: %s", name ?: "error");
	if (value && *value) {
		ward_strbuf_puts(sb, ": ");
		append_utf8(sb, value, strlen(value));
	}
	ward_strbuf_puts(sb, "\n");
	if (tb && *tb) {
		mcp_append_head_tail(sb, tb, strlen(tb), SUMMARY_TB_MAX);
		if (tb[strlen(tb) - 1] != '\n')
			ward_strbuf_puts(sb, "\n");
	}
}

/* Image blocks for the PNG (and JPEG) results; the text of the others. */
static void summary_results(struct ward_strbuf *sb, json_t *result,
			    json_t *content)
{
	json_t *r;
	size_t i;

	json_array_foreach(json_object_get(result, "results"), i, r)
	{
		const char *text = mcp_str_at(r, "text");
		bool main_result =
			json_is_true(json_object_get(r, "is_main_result"));
		static const char *const images[][2] = {
			{ "png", "image/png" },
			{ "jpeg", "image/jpeg" },
		};

		for (size_t k = 0; k < 2; k++) {
			const char *data = mcp_str_at(r, images[k][0]);

			if (!data)
				continue;
			json_array_append_new(
				content, json_pack("{s:s, s:s, s:s}", "type",
						   "image", "data", data,
						   "mimeType", images[k][1]));
			ward_strbuf_appendf(sb, "image: %s (image block %zu)\n",
					    images[k][1],
					    json_array_size(content) - 1);
		}
		if (text) {
			ward_strbuf_puts(sb, main_result ? "result: "
							 : "display: ");
			mcp_append_head_tail(sb, text, strlen(text),
					     SUMMARY_STREAM_MAX);
			ward_strbuf_puts(sb, "\n");
		}
	}
}

static void summary_artifacts(struct ward_strbuf *sb, json_t *result)
{
	json_t *a;
	size_t i;

	json_array_foreach(json_object_get(result, "artifacts"), i, a)
	{
		const char *path = mcp_str_at(a, "path");

		if (!i)
			ward_strbuf_puts(sb, "files created or changed:");
		ward_strbuf_puts(sb, " ");
		append_utf8(sb, path ?: "?", strlen(path ?: "?"));
		ward_strbuf_appendf(sb, " (%lld bytes)",
				    (long long)json_integer_value(
					    json_object_get(a, "size")));
		if (i + 1 ==
		    json_array_size(json_object_get(result, "artifacts")))
			ward_strbuf_puts(sb, "\n");
	}
}

/* A failed run is one the model should treat as failed: an exception, a
 * non-zero exit, a timeout, a limit, a kill by the policy. */
static bool run_failed(json_t *result)
{
	const char *status = mcp_str_at(result, "status");

	json_t *error = json_object_get(result, "error");

	if (error && !json_is_null(error))
		return true;
	return !status || strcmp(status, "ok");
}

/* run_code: a text summary first (status, output head and tail, results,
 * error, denials, files, where the record is), then one image block per
 * chart. */
static json_t *run_content(struct mcp *m, json_t *result, bool *is_error)
{
	struct ward_strbuf sb = WARD_STRBUF_INIT;
	json_t *content = json_array(), *v;
	const char *sid = mcp_str_at(result, "session_id");
	const char *ref =
		mcp_str_at(json_object_get(result, "policy"), "audit_ref");

	(void)m;
	*is_error = run_failed(result);
	json_array_append_new(content, json_null()); /* the summary, below */
	ward_strbuf_appendf(&sb, "status: %s",
			    mcp_str_at(result, "status") ?: "unknown");
	v = json_object_get(result, "exit_code");
	if (json_is_integer(v))
		ward_strbuf_appendf(&sb, ", exit code %lld",
				    (long long)json_integer_value(v));
	v = json_object_get(result, "duration_ms");
	if (json_is_number(v))
		ward_strbuf_appendf(&sb, ", %.0f ms", json_number_value(v));
	if (sid)
		ward_strbuf_appendf(
			&sb, " (session %s, cell %lld)", sid,
			(long long)json_integer_value(
				json_object_get(result, "execution_count")));
	ward_strbuf_puts(&sb, "\n");
	v = json_object_get(result, "timeout_capped_from");
	if (json_is_number(v))
		ward_strbuf_appendf(
			&sb,
			"time limit: %g s (the %g s asked for is above the "
			"server's cap)\n",
			json_number_value(json_object_get(result, "timeout_s")),
			json_number_value(v));
	v = json_object_get(result, "interrupted");
	if (json_is_true(v))
		ward_strbuf_puts(
			&sb,
			"the cell was interrupted at its time limit; the session keeps its state\n");
	else if (json_is_false(v))
		ward_strbuf_puts(
			&sb,
			"the cell did not stop when interrupted, so its session was ended\n");
	summary_stream(&sb, result, "stdout");
	summary_stream(&sb, result, "stderr");
	summary_results(&sb, result, content);
	summary_error(&sb, json_object_get(result, "error"));
	summary_denials(&sb, json_object_get(result, "policy"));
	summary_artifacts(&sb, result);
	if (!ref)
		ref = mcp_str_at(result, "run_id");
	if (ref)
		ward_strbuf_appendf(&sb, "record: ward show %s\n", ref);
	json_array_set_new(content, 0, strbuf_block(&sb));
	return content;
}

/* The other tools: the result as JSON text, which is also what clients
 * that predate structuredContent read. */
static json_t *json_content(struct mcp *m, json_t *result, bool *is_error)
{
	char *text = json_dumps(result, JSON_COMPACT);
	json_t *content;

	(void)m;
	*is_error = false;
	content = json_pack("[o]", mcp_text_block(text ? text : "{}"));
	free(text);
	return content;
}

/* A file: URI for a path in the session's workdir (RFC 8089; bytes other
 * than unreserved characters and '/' percent-encoded). */
static json_t *file_uri(const char *path)
{
	struct ward_strbuf sb = WARD_STRBUF_INIT;
	json_t *j;

	ward_strbuf_puts(&sb, "file:///");
	for (const unsigned char *p =
		     (const unsigned char *)path + (*path == '/');
	     *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~/", *p))
			ward_strbuf_append(&sb, p, 1);
		else
			ward_strbuf_appendf(&sb, "%%%02X", *p);
	}
	j = json_string(ward_strbuf_str(&sb));
	ward_strbuf_free(&sb);
	return j;
}

/* read_file: text as text; a picture as an image block, so the model sees
 * it; other bytes as an embedded resource (base64 blob). */
static json_t *file_content(struct mcp *m, json_t *result, bool *is_error)
{
	const char *text = mcp_str_at(result, "text"),
		   *b64 = mcp_str_at(result, "base64");
	const char *path = mcp_str_at(result, "path") ?: "";
	const char *mime = NULL;
	struct ward_strbuf sb = WARD_STRBUF_INIT;
	json_t *content;

	(void)m;
	*is_error = false;
	if (text)
		return json_pack("[o]", mcp_text_block(text));
	content = json_array();
	/* base64 of the PNG and JPEG signatures */
	if (b64 && !strncmp(b64, "iVBORw0KGgo", 11))
		mime = "image/png";
	else if (b64 && !strncmp(b64, "/9j/", 4))
		mime = "image/jpeg";
	ward_strbuf_appendf(
		&sb, "%s: %lld bytes, sha256 %s%s\n", path,
		(long long)json_integer_value(json_object_get(result, "size")),
		mcp_str_at(result, "sha256") ?: "?",
		mime ? "" : "; not UTF-8 text, so it comes as a base64 blob");
	json_array_append_new(content, strbuf_block(&sb));
	if (!b64)
		return content;
	if (mime) {
		json_array_append_new(
			content, json_pack("{s:s, s:s, s:s}", "type", "image",
					   "data", b64, "mimeType", mime));
	} else {
		json_array_append_new(
			content,
			json_pack("{s:s, s:{s:o, s:s, s:s}}", "type",
				  "resource", "resource", "uri", file_uri(path),
				  "mimeType", "application/octet-stream",
				  "blob", b64));
	}
	return content;
}
