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
					   "setup", NULL };
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
			"Python results are Jupyter's: display() works, "
			"figures and images come back as images, HTML "
			"(DataFrames), Markdown, SVG, LaTeX and JSON as "
			"resources; !cmd and %pip lines run where the policy "
			"allows. Returns "
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
			" \"description\": \"default per-cell time limit\"},"
			"\"setup\": {\"type\": \"object\", \"properties\": {"
			" \"code\": {\"type\": \"string\"}, \"language\": " LANG_SCHEMA "},"
			" \"required\": [\"code\"], \"additionalProperties\": false,"
			" \"description\": \"code run first under the policy's setup"
			" phase (e.g. pip install), before the interpreter starts under"
			" the policy itself; nothing it starts lives on\"}},"
			"\"additionalProperties\": false}",
		.output_schema =
			"{\"type\": \"object\", \"properties\": {"
			"\"session_id\": {\"type\": \"string\"},"
			"\"language\": {\"type\": \"string\"},"
			"\"run_id\": {\"type\": \"string\"},"
			"\"setup\": {\"type\": \"object\"}},"
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

/* A result's formats beside its text (E2B's keys, drivers/python.py),
 * as content blocks: pictures as images, the others as embedded
 * resources of their MIME type. */
static const struct rich_kind {
	const char *key, *mime, *ext;
	bool image, blob;
} rich_kinds[] = {
	{ "png", "image/png", "png", true, false },
	{ "jpeg", "image/jpeg", "jpg", true, false },
	{ "svg", "image/svg+xml", "svg", false, false },
	{ "html", "text/html", "html", false, false },
	{ "markdown", "text/markdown", "md", false, false },
	{ "latex", "text/latex", "tex", false, false },
	{ "json", "application/json", "json", false, false },
	{ "javascript", "application/javascript", "js", false, false },
	{ "pdf", "application/pdf", "pdf", false, true },
};

/* What is left of a response's budget for rich values (MCP_RICH_MAX). */
struct rich_budget {
	size_t left;
	const char *run_id;
	long long cell;
};

/* The block of one format of result i: an image, or an embedded resource
 * whose URI names the result (ward://run/RUN/cell/N/result/I.EXT; not
 * readable on its own: the block carries it all). */
static json_t *rich_block(const struct rich_kind *k, const char *value,
			  const struct rich_budget *b, size_t i)
{
	char uri[200];

	if (k->image)
		return json_pack("{s:s, s:s, s:s}", "type", "image", "data",
				 value, "mimeType", k->mime);
	snprintf(uri, sizeof(uri), "ward://run/%s/cell/%lld/result/%zu.%s",
		 b->run_id, b->cell, i, k->ext);
	return json_pack("{s:s, s:{s:s, s:s, s:o}}", "type", "resource",
			 "resource", "uri", uri, "mimeType", k->mime,
			 k->blob ? "blob" : "text",
			 ws_json_text(value, strlen(value)));
}

/* Leaves key of r out (of the content and of structuredContent alike):
 * r.left_out says which and how big, the summary why (why, or NULL: over
 * the response's budget). */
static void left_out(struct ward_strbuf *sb, json_t *r, const char *key,
		     const char *mime, size_t size, const char *why)
{
	json_t *lo = json_object_get(r, "left_out");

	if (!json_is_object(lo)) {
		lo = json_object();
		json_object_set_new(r, "left_out", lo);
	}
	json_object_set_new(lo, key, json_integer((json_int_t)size));
	json_object_del(r, key);
	ward_strbuf_appendf(sb, "  %s: %zu bytes, left out (", mime, size);
	if (why)
		ward_strbuf_puts(sb, why);
	else
		ward_strbuf_appendf(sb,
				    "a response carries at most %d KiB of "
				    "results: show a smaller part, or write it "
				    "to a file",
				    MCP_RICH_MAX >> 10);
	ward_strbuf_puts(sb, ")\n");
}

/* Is a binary format's value base64 that a client decodes? (The frame is
 * the code's: junk there must not make the whole response invalid.) */
static bool good_base64(json_t *v)
{
	unsigned char *bytes;
	size_t len;

	if (!json_is_string(v) ||
	    ws_base64_decode(json_string_value(v), json_string_length(v),
			     &bytes, &len) < 0)
		return false;
	free(bytes);
	return true;
}

/* One result's formats: a block each while the budget lasts. */
static void rich_formats(struct ward_strbuf *sb, json_t *r, size_t i,
			 json_t *content, struct rich_budget *b)
{
	for (size_t k = 0; k < sizeof(rich_kinds) / sizeof(rich_kinds[0]);
	     k++) {
		const struct rich_kind *rk = &rich_kinds[k];
		json_t *v = json_object_get(r, rk->key);
		char *dumped = NULL;
		const char *value;
		size_t size;

		if (!v)
			continue;
		/* json is any JSON value: its text is the resource */
		if (json_is_string(v))
			value = json_string_value(v);
		else
			value = dumped =
				json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		size = value ? strlen(value) : 0;
		if ((rk->image || rk->blob) && !good_base64(v)) {
			left_out(sb, r, rk->key, rk->mime, size, "not base64");
		} else if (!value || size > b->left) {
			left_out(sb, r, rk->key, rk->mime, size, NULL);
		} else {
			b->left -= size;
			json_array_append_new(content,
					      rich_block(rk, value, b, i));
			ward_strbuf_appendf(sb, "  %s%s (%s block %zu)\n",
					    rk->image ? "image: " : "",
					    rk->mime,
					    rk->image ? "image" : "resource",
					    json_array_size(content) - 1);
		}
		free(dumped);
	}
}

/* Other MIME types (r.extra) are only in structuredContent, named here. */
static void rich_extra(struct ward_strbuf *sb, json_t *r, struct rich_budget *b)
{
	json_t *extra = json_object_get(r, "extra"), *v;
	const char *mime;
	void *tmp;

	json_object_foreach_safe(extra, tmp, mime, v)
	{
		char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		size_t size = t ? strlen(t) : 0;

		free(t);
		if (size > b->left) {
			ward_strbuf_appendf(sb,
					    "  %s: %zu bytes, left out (over "
					    "the response's %d KiB)\n",
					    mime, size, MCP_RICH_MAX >> 10);
			json_object_del(extra, mime);
			continue;
		}
		b->left -= size;
		ward_strbuf_appendf(sb, "  %s (in structuredContent)\n", mime);
	}
}

/* Each result: its text in the summary ("result:" for the last
 * expression's value, "display:" for the others, in the cell's order),
 * its other formats as blocks after the summary. */
static void summary_results(struct ward_strbuf *sb, json_t *result,
			    json_t *content)
{
	struct rich_budget b = {
		MCP_RICH_MAX,
		mcp_str_at(result, "run_id") ?: "-",
		(long long)json_integer_value(
			json_object_get(result, "execution_count")),
	};
	json_t *r;
	size_t i;

	json_array_foreach(json_object_get(result, "results"), i, r)
	{
		const char *text = mcp_str_at(r, "text");
		bool main_result =
			json_is_true(json_object_get(r, "is_main_result"));

		ward_strbuf_puts(sb, main_result ? "result: " : "display: ");
		if (text)
			mcp_append_head_tail(sb, text, strlen(text),
					     SUMMARY_STREAM_MAX);
		ward_strbuf_puts(sb, "\n");
		rich_formats(sb, r, i, content, &b);
		rich_extra(sb, r, &b);
	}
}

static json_t *file_uri(const char *path);

/* The files the cell created or changed: named in the summary (at most
 * 4 * MCP_LINKS_MAX); in a session, on revisions that have them
 * (2025-06-18 on), the first MCP_LINKS_MAX as resource links too, which
 * read_file reads (a one-shot run's workdir is gone with it). */
static void summary_artifacts(struct mcp *m, struct ward_strbuf *sb,
			      json_t *result, json_t *content)
{
	json_t *arts = json_object_get(result, "artifacts"), *a;
	const char *sid = mcp_str_at(result, "session_id");
	size_t i, n = json_array_size(arts);

	json_array_foreach(arts, i, a)
	{
		const char *path = mcp_str_at(a, "path") ?: "?";
		json_int_t size =
			json_integer_value(json_object_get(a, "size"));

		if (!i)
			ward_strbuf_puts(sb, "files created or changed:");
		if (i == 4 * MCP_LINKS_MAX) {
			ward_strbuf_appendf(
				sb, " ... and %zu more (list_files)", n - i);
			break;
		}
		ward_strbuf_puts(sb, " ");
		append_utf8(sb, path, strlen(path));
		ward_strbuf_appendf(sb, " (%lld bytes)", (long long)size);
		if (i >= MCP_LINKS_MAX || !sid || !mcp_structured_ok(m))
			continue;
		json_array_append_new(
			content,
			json_pack("{s:s, s:o, s:o, s:I, s:s}", "type",
				  "resource_link", "uri", file_uri(path),
				  "name", ws_json_text(path, strlen(path)),
				  "size", size, "description",
				  "a file of the session: read_file reads it"));
	}
	if (n)
		ward_strbuf_puts(sb, "\n");
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
	summary_artifacts(m, &sb, result, content);
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

/* A file over MCP_READ_MAX: its bytes leave structuredContent (left_out
 * says how many there were), so the response stays small. */
static void read_left_out(json_t *result, const char *key)
{
	json_t *v = json_object_get(result, key), *lo;

	if (!json_is_string(v))
		return;
	lo = json_object_get(result, "left_out");
	if (!json_is_object(lo)) {
		lo = json_object();
		json_object_set_new(result, "left_out", lo);
	}
	json_object_set_new(lo, key,
			    json_integer((json_int_t)json_string_length(v)));
	json_object_del(result, key);
}

/* read_file: text as text; a picture as an image block, so the model sees
 * it; other bytes as an embedded resource (base64 blob). A larger file
 * than a response carries (MCP_READ_MAX): text as its head and tail, with
 * a note; other bytes as only the note. */
static json_t *file_content(struct mcp *m, json_t *result, bool *is_error)
{
	const char *text = mcp_str_at(result, "text"),
		   *b64 = mcp_str_at(result, "base64");
	const char *path = mcp_str_at(result, "path") ?: "";
	const char *mime = NULL;
	long long size =
		(long long)json_integer_value(json_object_get(result, "size"));
	struct ward_strbuf sb = WARD_STRBUF_INIT;
	json_t *content;
	bool big = b64 && strlen(b64) > MCP_READ_MAX;

	(void)m;
	*is_error = false;
	if (text && strlen(text) > MCP_READ_MAX) {
		ward_strbuf_appendf(&sb,
				    "[%s: %lld bytes, more than a response "
				    "carries (%d KiB): its head and tail; "
				    "run_code can read the rest in parts]\n",
				    path, size, MCP_READ_MAX >> 10);
		mcp_append_head_tail(&sb, text, strlen(text), MCP_READ_MAX);
		read_left_out(result, "text");
		read_left_out(result, "base64");
		return json_pack("[o]", strbuf_block(&sb));
	}
	if (text)
		return json_pack("[o]", mcp_text_block(text));
	content = json_array();
	/* base64 of the PNG and JPEG signatures */
	if (b64 && !strncmp(b64, "iVBORw0KGgo", 11))
		mime = "image/png";
	else if (b64 && !strncmp(b64, "/9j/", 4))
		mime = "image/jpeg";
	ward_strbuf_appendf(
		&sb, "%s: %lld bytes, sha256 %s%s\n", path, size,
		mcp_str_at(result, "sha256") ?: "?",
		mime  ? ""
		: big ? "; not UTF-8 text"
		      : "; not UTF-8 text, so it comes as a base64 blob");
	if (big)
		ward_strbuf_appendf(
			&sb,
			"[more than a response carries (%d KiB): "
			"left out; run_code can read it in parts]\n",
			MCP_READ_MAX >> 10);
	json_array_append_new(content, strbuf_block(&sb));
	if (!b64 || big) {
		read_left_out(result, "base64");
		return content;
	}
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
