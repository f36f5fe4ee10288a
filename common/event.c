#include "event.h"

#include <stdio.h>
#include <string.h>

void ward_event_reset(struct ward_event *ev)
{
	ev->pid = ev->tid = 0;
	ev->nr = -1;
	ev->name = "";
	ev->cls = WARD_CLASS_NONE;
	ev->access = ev->access2 = 0;
	ev->raw[0] = ev->path[0] = ev->raw2[0] = ev->path2[0] = '\0';
	ev->exists = ev->exists2 = false;
	ev->has_path2 = false;
	ev->mknod_mode = 0;
	ev->net_op = WARD_NET_NONE;
	ev->sock_family = ev->sock_type = ev->sock_proto = 0;
	ev->sa.present = false;
	ev->sa.family = 0;
	ev->sa.addr[0] = '\0';
	ev->sa.v4mapped = false;
	ev->sa.port = -1;
	ev->sa.unix_path[0] = '\0';
	ev->sa.abstract = false;
	ev->sa.given_len = 0;
	ev->clone_flags = 0;
	memset(ev->raw_args, 0, sizeof(ev->raw_args));
	ev->sig_target = 0;
	ev->sig = 0;
	ev->sig_in_run = false;
	ev->args_json[0] = '\0';
}

const char *ward_class_name(enum ward_class c)
{
	static const char *const names[] = {
		[WARD_CLASS_NONE] = "none",   [WARD_CLASS_FS] = "fs",
		[WARD_CLASS_NET] = "net",     [WARD_CLASS_EXEC] = "exec",
		[WARD_CLASS_PROC] = "proc",   [WARD_CLASS_SIGNAL] = "signal",
		[WARD_CLASS_OTHER] = "other",
	};

	if ((unsigned)c >= sizeof(names) / sizeof(names[0]) || !names[c])
		return "?";
	return names[c];
}

const char *ward_net_op_name(enum ward_net_op op)
{
	static const char *const names[] = {
		[WARD_NET_NONE] = "none",	[WARD_NET_SOCKET] = "socket",
		[WARD_NET_CONNECT] = "connect", [WARD_NET_BIND] = "bind",
		[WARD_NET_LISTEN] = "listen",	[WARD_NET_SEND] = "send",
	};

	if ((unsigned)op >= sizeof(names) / sizeof(names[0]) || !names[op])
		return "?";
	return names[op];
}

void ward_access_str(unsigned access, char *buf, size_t n)
{
	static const struct {
		unsigned bit;
		const char *name;
	} bits[] = {
		{ WARD_FS_READ, "read" },     { WARD_FS_WRITE, "write" },
		{ WARD_FS_CREATE, "create" }, { WARD_FS_DELETE, "delete" },
		{ WARD_FS_EXEC, "exec" },     { WARD_FS_STAT, "stat" },
	};
	size_t used = 0;

	if (n == 0)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++) {
		if (!(access & bits[i].bit))
			continue;
		int w = snprintf(buf + used, n - used, "%s%s", used ? "," : "",
				 bits[i].name);
		if (w < 0 || (size_t)w >= n - used)
			return;
		used += (size_t)w;
	}
}
