/*
 * mcp.h - what the two halves of `ward mcp` share: the server (cmd_mcp.c:
 * the protocol, its threads and its lifecycle) and the tools (mcp-tools.c:
 * the tool table, its schemas, and a result turned into content blocks).
 * Private to them.
 */
#ifndef WARD_TOOLS_MCP_H
#define WARD_TOOLS_MCP_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/json.h"
#include "tools/agent/session.h"

#define SUMMARY_STREAM_MAX 4096 /* bytes of stdout/stderr in the text */
#define SUMMARY_TB_MAX	   3000 /* bytes of traceback in the text */
#define SUMMARY_DENIALS	   5	/* denials listed in the text */
/* A response carries at most this many bytes of a run's rich results
 * (images, HTML, ...: each counted once, though it is both a block and in
 * structuredContent) and of a file read_file reads: the rest is left out
 * with a note, not sent as a response of many MiB. */
#define MCP_RICH_MAX  (1 << 20)
#define MCP_READ_MAX  (1 << 20)
#define MCP_LINKS_MAX 16 /* resource links to a run's files */

/* The revision that brought structuredContent, outputSchema and titles. */
#define VERSION_STRUCTURED "2025-06-18"

struct job; /* a tools/call in flight (cmd_mcp.c) */

/* The server's state (cmd_mcp.c); the tools read only version. */
struct mcp {
	struct ws_server *ws;
	int in_fd, out_fd; /* private copies of stdin/stdout, O_CLOEXEC */
	size_t max_request;
	const char *version; /* negotiated; NULL until initialize */
	json_t *tools;	     /* the tools/list array, built once */
	bool out_broken;
	pthread_mutex_t out_lock; /* one message at a time on out_fd */
	/* the calls in flight; lock guards them, eof and stopping */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a call ended, or eof */
	struct job *jobs;
	int n_jobs;
	unsigned long long seq; /* tools/call requests read */
	bool eof, stopping;	/* stopping: a stop signal came */
	/* "ask" rules (cmd_mcp.c): can the client be asked (it declared
	 * form elicitation), who it is, and the elicitation/create requests
	 * sent (request id -> the question's id), under ask_lock */
	bool elicit;
	char client[160];
	pthread_mutex_t ask_lock;
	json_t *elicits;
	unsigned long long elicit_seq;
};

/* The content blocks of a tool's result. It may trim result in place
 * (what a response cannot carry, with a note): the server sends what is
 * left as structuredContent. */
typedef json_t *(*content_fn)(struct mcp *m, json_t *result, bool *is_error);

struct tool {
	const char *name, *title, *method, *description;
	const char *const *args; /* the arguments passed on to ws_call */
	const char *input_schema, *output_schema; /* JSON text */
	bool read_only;
	content_fn content;
};

/* The tool named name, or NULL. */
const struct tool *mcp_find_tool(const char *name);
/* The tools/list array for the version m negotiated (new reference). */
json_t *mcp_tool_list(const struct mcp *m);
/* Did m negotiate a version with structuredContent and outputSchema? */
bool mcp_structured_ok(const struct mcp *m);
/* A text content block of text (bytes that are not UTF-8 become U+FFFD). */
json_t *mcp_text_block(const char *text);
/* Appends s, or its head and tail around a note of what was left out. */
void mcp_append_head_tail(struct ward_strbuf *sb, const char *s, size_t len,
			  size_t max);
/* o's member key if it is a string, else NULL (o may be anything). */
const char *mcp_str_at(json_t *o, const char *key);

#endif
