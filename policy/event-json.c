/*
 * event-json.c - an events row back into the struct ward_event that was
 * judged (see event-json.h). The tracer's decoders record the arguments
 * (tracer/decode-*.c) and, for recheck, what the policy reads beyond them
 * (tracer/args.c args_request: "access", "access2", "exists", "in_run").
 */
#include "event-json.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>

static const char *const fs_calls[] = {
	"open",
	"openat",
	"openat2",
	"creat",
	"unlink",
	"unlinkat",
	"rmdir",
	"mkdir",
	"mkdirat",
	"mknod",
	"mknodat",
	"rename",
	"renameat",
	"renameat2",
	"link",
	"linkat",
	"symlink",
	"symlinkat",
	"chmod",
	"fchmodat",
	"fchmodat2",
	"chown",
	"lchown",
	"fchownat",
	"truncate",
	"utime",
	"utimes",
	"utimensat",
	"futimesat",
	"setxattr",
	"lsetxattr",
	"removexattr",
	"lremovexattr",
	"chdir",
	"inotify_add_watch",
	"stat",
	"lstat",
	"newfstatat",
	"statx",
	"access",
	"faccessat",
	"faccessat2",
	"readlink",
	"readlinkat",
	"statfs",
	"getxattr",
	"lgetxattr",
	"listxattr",
	"llistxattr",
	NULL,
};

static const char *const signal_calls[] = {
	"kill",
	"tkill",
	"tgkill",
	"rt_sigqueueinfo",
	"rt_tgsigqueueinfo",
	"pidfd_send_signal",
	"pidfd_open",
	"prlimit64",
	NULL,
};

static bool in_list(const char *const *list, const char *name)
{
	for (; *list; list++)
		if (!strcmp(*list, name))
			return true;
	return false;
}

static __attribute__((format(printf, 3, 4))) int refuse(char *why, size_t n,
							const char *fmt, ...)
{
	va_list ap;

	if (why && n) {
		va_start(ap, fmt);
		vsnprintf(why, n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static bool copy_str(char *dst, size_t n, const char *s)
{
	size_t len = strlen(s);

	if (len >= n)
		return false;
	memcpy(dst, s, len + 1);
	return true;
}

/* "read,write" -> WARD_FS_* bits; 0 if a name is unknown or none. */
static unsigned access_bits(const char *s)
{
	static const char *const names[] = { "read",   "write", "create",
					     "delete", "exec",	"stat" };
	unsigned bits = 0;

	while (*s) {
		size_t len = strcspn(s, ",");
		bool found = false;

		for (unsigned i = 0; i < 6; i++)
			if (strlen(names[i]) == len &&
			    !strncmp(s, names[i], len)) {
				bits |= 1u << i;
				found = true;
			}
		if (!found)
			return 0;
		s += len;
		if (*s == ',')
			s++;
	}
	return bits;
}

/* "AF_INET" or a number -> AF_ value; -1 if neither. */
static int family_of(json_t *v)
{
	static const struct {
		const char *name;
		int af;
	} fams[] = {
		{ "AF_UNIX", AF_UNIX },	    { "AF_INET", AF_INET },
		{ "AF_INET6", AF_INET6 },   { "AF_NETLINK", AF_NETLINK },
		{ "AF_PACKET", AF_PACKET }, { "AF_ALG", AF_ALG },
		{ "AF_VSOCK", AF_VSOCK },   { "AF_UNSPEC", AF_UNSPEC },
	};

	if (json_is_integer(v))
		return (int)json_integer_value(v);
	if (!json_is_string(v))
		return -1;
	for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++)
		if (!strcmp(json_string_value(v), fams[i].name))
			return fams[i].af;
	return -1;
}

/* An integer written as a number or as "0x..." / "0777" text. */
static bool int_of(json_t *v, unsigned long long *out)
{
	const char *s;
	char *end;

	if (json_is_integer(v)) {
		*out = (unsigned long long)json_integer_value(v);
		return true;
	}
	if (!json_is_string(v))
		return false;
	s = json_string_value(v);
	errno = 0;
	*out = strtoull(s, &end, 0);
	return s[0] && !*end && !errno;
}

static int from_fs(json_t *args, const struct policy_row *row,
		   struct ward_event *ev, char *why, size_t n)
{
	json_t *acc = json_object_get(args, "access");
	json_t *acc2 = json_object_get(args, "access2");
	const char *target = row->target ? row->target : "";

	ev->cls = WARD_CLASS_FS;
	if (!json_is_string(acc) ||
	    !(ev->access = access_bits(json_string_value(acc))))
		return refuse(why, n,
			      "no access recorded (a row from a ward "
			      "before recheck)");
	ev->has_path2 = json_object_get(args, "path2") != NULL;
	if (!ev->has_path2) {
		if (json_object_get(args, "...") && strstr(target, " -> "))
			return refuse(why, n, "arguments were cut");
		if (!copy_str(ev->path, sizeof(ev->path), target))
			return refuse(why, n, "target too long");
	} else {
		const char *sep = strstr(target, " -> ");

		if (!sep || strstr(sep + 4, " -> ") ||
		    (size_t)(sep - target) >= sizeof(ev->path))
			return refuse(why, n,
				      "target does not split into two paths");
		memcpy(ev->path, target, (size_t)(sep - target));
		ev->path[sep - target] = '\0';
		if (!copy_str(ev->path2, sizeof(ev->path2), sep + 4))
			return refuse(why, n, "second path too long");
		if (acc2 &&
		    (!json_is_string(acc2) ||
		     !(ev->access2 = access_bits(json_string_value(acc2)))))
			return refuse(why, n, "bad access2");
	}
	if (!ev->path[0])
		return refuse(why, n, "no target recorded");
	if (!strcmp(row->syscall, "mknod") ||
	    !strcmp(row->syscall, "mknodat")) {
		unsigned long long mode;

		/* ward's floor judges the file type (policy/check.c) */
		if (!int_of(json_object_get(args, "mode"), &mode))
			return refuse(why, n,
				      json_object_get(args, "...")
					      ? "arguments were cut"
					      : "no mode recorded");
		ev->mknod_mode = (unsigned)(mode & 0xffff);
	}
	return 0;
}

static int from_exec(json_t *args, const struct policy_row *row,
		     struct ward_event *ev, char *why, size_t n)
{
	json_t *ex = json_object_get(args, "exists");

	ev->cls = WARD_CLASS_EXEC;
	ev->access = WARD_FS_EXEC;
	if (!json_is_boolean(ex))
		return refuse(why, n,
			      "no \"exists\" recorded (a row from a ward "
			      "before recheck)");
	ev->exists = json_is_true(ex);
	if (!row->target || !copy_str(ev->path, sizeof(ev->path), row->target))
		return refuse(why, n, "no program path recorded");
	return 0;
}

static int from_net(json_t *args, const char *name, struct ward_event *ev,
		    char *why, size_t n)
{
	json_t *fam = json_object_get(args, "family");
	json_t *v;
	unsigned long long u;

	ev->cls = WARD_CLASS_NET;
	if (!strcmp(name, "socket")) {
		ev->net_op = WARD_NET_SOCKET;
		if ((ev->sock_family = family_of(fam)) < 0)
			return refuse(why, n, "no socket family recorded");
		if ((v = json_object_get(args, "type")) && int_of(v, &u))
			ev->sock_type = (int)u;
		if ((v = json_object_get(args, "protocol")) && int_of(v, &u))
			ev->sock_proto = (int)u;
		return 0;
	}
	if (!strcmp(name, "listen")) {
		ev->net_op = WARD_NET_LISTEN;
		ev->sock_family = fam ? family_of(fam) : 0;
		if (ev->sock_family < 0)
			return refuse(why, n, "bad family");
		return 0;
	}
	if (!strcmp(name, "connect"))
		ev->net_op = WARD_NET_CONNECT;
	else if (!strcmp(name, "bind"))
		ev->net_op = WARD_NET_BIND;
	else
		ev->net_op = WARD_NET_SEND;
	if (!fam) {
		if (json_object_get(args, "..."))
			return refuse(why, n, "arguments were cut");
		return 0; /* no address (a connected socket's send) */
	}
	ev->sa.present = true;
	if ((ev->sa.family = family_of(fam)) < 0)
		return refuse(why, n, "bad family");
	if ((v = json_object_get(args, "port"))) {
		if (!int_of(v, &u))
			return refuse(why, n, "bad port");
		ev->sa.port = (int)u;
	}
	ev->sa.v4mapped = json_is_true(json_object_get(args, "v4mapped"));
	if ((v = json_object_get(args, "addr")) &&
	    (!json_is_string(v) ||
	     !copy_str(ev->sa.addr, sizeof(ev->sa.addr), json_string_value(v))))
		return refuse(why, n, "bad address");
	if (ev->sa.family == AF_UNIX) {
		json_t *p = json_object_get(args, "path");
		json_t *ab = json_object_get(args, "abstract");
		json_t *ex = json_object_get(args, "exists");

		ev->sa.abstract = ab != NULL;
		if (ab)
			p = ab;
		if (p && (!json_is_string(p) ||
			  !copy_str(ev->sa.unix_path, sizeof(ev->sa.unix_path),
				    json_string_value(p))))
			return refuse(why, n, "bad unix path");
		if (p && !ab) {
			if (!json_is_boolean(ex))
				return refuse(why, n,
					      "no \"exists\" recorded (a row "
					      "from a ward before recheck)");
			ev->exists = json_is_true(ex);
		}
	}
	return 0;
}

static int from_signal(json_t *args, struct ward_event *ev, char *why, size_t n)
{
	json_t *in = json_object_get(args, "in_run");
	unsigned long long u;
	json_t *v;

	ev->cls = WARD_CLASS_SIGNAL;
	if (!json_is_boolean(in))
		return refuse(why, n,
			      "no \"in_run\" recorded (a row from a ward "
			      "before recheck)");
	ev->sig_in_run = json_is_true(in);
	if ((v = json_object_get(args, "pid")) && int_of(v, &u))
		ev->sig_target = (pid_t)(long long)u;
	if ((v = json_object_get(args, "sig")) && int_of(v, &u))
		ev->sig = (int)u;
	return 0;
}

static int from_other(json_t *args, struct ward_event *ev, char *why, size_t n)
{
	json_t *a = json_object_get(args, "args");
	unsigned long long u;

	ev->cls = WARD_CLASS_OTHER;
	if (!json_is_array(a) || json_array_size(a) != 6)
		return refuse(why, n, "no raw arguments recorded");
	for (size_t i = 0; i < 6; i++) {
		if (!int_of(json_array_get(a, i), &u))
			return refuse(why, n, "bad raw argument %zu", i);
		ev->raw_args[i] = u;
	}
	return 0;
}

int policy_event_from_row(const struct policy_row *row, struct ward_event *ev,
			  char *why, size_t n)
{
	const char *name = row->syscall;
	json_t *args;
	json_error_t jerr;
	int rc;

	ward_event_reset(ev);
	if (!name || !name[0])
		return refuse(why, n, "no syscall name");
	ev->name = name;
	ev->nr = row->nr;
	ev->pid = row->pid;
	ev->tid = row->tid;
	if (row->raw && !copy_str(ev->raw, sizeof(ev->raw), row->raw))
		return refuse(why, n, "raw path too long");
	args = json_loads(row->args_json ? row->args_json : "", 0, &jerr);
	if (!json_is_object(args)) {
		json_decref(args);
		return refuse(why, n, "args is not a JSON object");
	}
	if (in_list(fs_calls, name))
		rc = from_fs(args, row, ev, why, n);
	else if (!strcmp(name, "execve") || !strcmp(name, "execveat"))
		rc = from_exec(args, row, ev, why, n);
	else if (!strcmp(name, "socket") || !strcmp(name, "connect") ||
		 !strcmp(name, "bind") || !strcmp(name, "listen") ||
		 !strcmp(name, "sendto") || !strcmp(name, "sendmsg") ||
		 !strcmp(name, "sendmmsg"))
		rc = from_net(args, name, ev, why, n);
	else if (!strcmp(name, "clone") || !strcmp(name, "fork") ||
		 !strcmp(name, "vfork")) {
		unsigned long long u = 0;

		ev->cls = WARD_CLASS_PROC;
		rc = int_of(json_object_get(args, "flags"), &u)
			     ? 0
			     : refuse(why, n, "no clone flags recorded");
		ev->clone_flags = (unsigned long)u;
	} else if (in_list(signal_calls, name))
		rc = from_signal(args, ev, why, n);
	else
		rc = from_other(args, ev, why, n);
	json_decref(args);
	return rc;
}

bool policy_rule_is_floor(const char *rule)
{
	static const char *const kept[] = {
		"clone.flags",	 "proc.mem",	 "copy",
		"decode",	 "limits.procs", "limits.events",
		"invalid-event", "test.fs-off",	 NULL,
	};

	if (!rule)
		return false;
	return !strncmp(rule, "floor.", 6) || in_list(kept, rule);
}

int policy_proxy_from_row(const struct policy *p, const struct policy_row *row,
			  struct policy_verdict *v, char *why, size_t n)
{
	json_t *args = row->args_json ? json_loads(row->args_json, 0, NULL)
				      : NULL;
	const char *name = json_string_value(json_object_get(args, "name"));
	const char *addr = json_string_value(json_object_get(args, "addr"));
	json_t *port = json_object_get(args, "port");
	unsigned char a[16];
	int fam, rc = 0;

	if (!name || !json_is_integer(port)) {
		rc = refuse(why, n, "no name and port recorded");
		goto out;
	}
	policy_domain_check(p, name, (int)json_integer_value(port), v);
	if (v->action != POLICY_ALLOW || !addr)
		goto out;
	fam = strchr(addr, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(fam, addr, a) != 1) {
		rc = refuse(why, n, "bad address recorded");
		goto out;
	}
	if (!policy_proxy_may_reach(p, fam, a, v->reason, sizeof(v->reason))) {
		v->action = POLICY_DENY;
		v->err = ECONNREFUSED;
		v->rule = "net.proxy-address";
	}
out:
	json_decref(args);
	return rc;
}
