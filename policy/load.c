/*
 * load.c - JSON text to a validated, compiled struct policy.
 *
 * Every object is checked for unknown keys first (in document order), then
 * its members are validated in a fixed order. The first error stops the
 * load and is reported with the JSON path and the line:col of the value
 * (or of the key, for unknown keys) from the position index.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "../common/errnames.h"
#include "../common/floor.h"
#include "policy-int.h"

#define VPATH_MAX    1024
#define ID_MAX	     64
#define NAME_MAX_LEN 128

struct vctx {
	const char *file;
	struct policy_error *err;
	/* where each value starts: built at the first error only (a valid
	 * policy needs none, and the walk was a third of every load) */
	struct jpos ix;
	const char *text;
	size_t len;
	bool ix_built;
	struct policy *p;
	bool phase; /* parsing a phase's sections onto a copy of the base */
	char path[VPATH_MAX];
	size_t plen;
};

/* A name of a closed set and the value it stands for. */
struct named {
	const char *name;
	int value;
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const struct named access_names[] = {
	{ "read", 0 },	 { "write", 1 }, { "create", 2 },
	{ "delete", 3 }, { "exec", 4 },	 { "stat", 5 },
};

static const struct named op_names[] = {
	{ "connect", WARD_NET_CONNECT },
	{ "bind", WARD_NET_BIND },
	{ "send", WARD_NET_SEND },
	{ "listen", WARD_NET_LISTEN },
};

static const struct named rule_family_names[] = {
	{ "inet", AF_INET },
	{ "inet6", AF_INET6 },
	{ "unix", AF_UNIX },
};

static const struct named bt_names[] = {
	{ "deny", 0 },
	{ "kill", 1 },
	{ "allow", 2 },
};

static const struct named sys_action_names[] = {
	{ "allow", POL_SYS_ALLOW },
	{ "deny", POL_SYS_DENY },
	{ "kill", POL_SYS_KILL },
	{ "log", POL_SYS_LOG },
};

/* Containment layers "require" may name: bit value of p->require. */
static const struct named layer_names[] = {
	{ "seccomp", 0 },     { "ptrace", 1 },		{ "landlock", 2 },
	{ "namespaces", 3 },  { "cgroup-memory", 4 },	{ "rlimits", 5 },
	{ "cgroup-pids", 6 }, { "argument-copies", 7 },
};

const char *policy_layer_name(unsigned i)
{
	return i < NELEM(layer_names) ? layer_names[i].name : NULL;
}

static const struct named mode_names[] = {
	{ "enforce", 0 },
	{ "audit", 1 },
};

static const struct named signals_names[] = {
	{ "run", 0 },
	{ "any", 1 },
};

static const struct named view_names[] = {
	{ "policy", 0 },
	{ "host", 1 },
};

static const struct named net_action_names[] = {
	{ "allow", 0 },
	{ "deny", 1 },
	{ "ask", 2 },
};

static const struct named lang_names[] = {
	{ "python", POL_LANG_PYTHON },
	{ "node", POL_LANG_NODE },
	{ "sh", POL_LANG_SH },
};

/* Ids ward itself puts in verdict.rule; a policy may not reuse them. */
static const char *const builtin_ids[] = {
	POL_RULE_DEFAULT,
	POL_RULE_INVALID,
	POL_RULE_EXEC_MISSING,
	POL_RULE_NET_UNIX_MISSING,
	POL_RULE_FD_ANONYMOUS,
	POL_RULE_NET_SOCKET,
	POL_RULE_NET_CONNECTED,
	POL_RULE_CLONE,
	POL_RULE_PROC,
	POL_RULE_SIGNALS,
	POL_RULE_PROC_MEM,
	POL_RULE_ARG_FLOOR,
	POLICY_PROXY_RULE,
	"net.proxy-name",
	"net.proxy-address",
	/* the supervisor's own decisions (tracer/loop.c): ward recheck keeps
	 * rows with these rules (and floor.*) as not the policy's */
	"copy",
	"decode",
	"limits.procs",
	"limits.events",
};

/* Exit paths must always work: no deny/kill rule may name them. */
static const char *const exit_syscalls[] = {
	"exit",
	"exit_group",
	"rt_sigreturn",
	"restart_syscall",
};

/* ---- paths and errors ---- */

static size_t push_key(struct vctx *c, const char *key)
{
	size_t old = c->plen;
	int n = snprintf(c->path + c->plen, sizeof(c->path) - c->plen, "%s%s",
			 c->plen ? "." : "", key);

	if (n > 0)
		c->plen += (size_t)n;
	if (c->plen >= sizeof(c->path))
		c->plen = sizeof(c->path) - 1;
	return old;
}

static size_t push_idx(struct vctx *c, size_t i)
{
	size_t old = c->plen;
	int n = snprintf(c->path + c->plen, sizeof(c->path) - c->plen, "[%zu]",
			 i);

	if (n > 0)
		c->plen += (size_t)n;
	if (c->plen >= sizeof(c->path))
		c->plen = sizeof(c->path) - 1;
	return old;
}

static void pop(struct vctx *c, size_t old)
{
	c->plen = old;
	c->path[old] = '\0';
}

/* The line and column of the value (or key) at the current path; 0 when
 * unknown (out of memory). */
static void where(struct vctx *c, bool key, int *line, int *col)
{
	if (!c->ix_built) {
		c->ix_built = true;
		if (jpos_build(&c->ix, c->text, c->len) < 0)
			jpos_free(&c->ix);
	}
	jpos_find(&c->ix, c->path, key, line, col);
}

/* Error about the value at the current path. Returns -EINVAL. */
static __attribute__((format(printf, 2, 3))) int fail(struct vctx *c,
						      const char *fmt, ...)
{
	char msg[sizeof(c->err->msg)];
	int line = 0, col = 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	where(c, false, &line, &col);
	pol_set_error(c->err, c->file, line, col, c->path, "%s", msg);
	return -EINVAL;
}

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "?";
}

/* "a, b, c" from a table of names, into buf. */
static const char *join_names(const struct named *t, size_t n, char *buf,
			      size_t bufsz)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && used < bufsz; i++) {
		int w = snprintf(buf + used, bufsz - used, "%s%s",
				 i ? ", " : "", t[i].name);

		if (w < 0)
			break;
		used += (size_t)w;
	}
	return buf;
}

static const char *join_strs(const char *const *t, char *buf, size_t bufsz)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; t[i] && used < bufsz; i++) {
		int w = snprintf(buf + used, bufsz - used, "%s%s",
				 i ? ", " : "", t[i]);

		if (w < 0)
			break;
		used += (size_t)w;
	}
	return buf;
}

/* ---- typed values ---- */

/*
 * v must be of type t ("what" names it in the message); JSON_TRUE stands
 * for either boolean. Returns 0 or -EINVAL with the error set.
 */
static int want(struct vctx *c, const json_t *v, json_type t, const char *what)
{
	if (json_typeof(v) == t ||
	    (t == JSON_TRUE && json_typeof(v) == JSON_FALSE))
		return 0;
	return fail(c, "must be %s, not %s", what, type_name(v));
}

static int get_string(struct vctx *c, const json_t *v, const char **out)
{
	int rc = want(c, v, JSON_STRING, "a string");

	if (rc)
		return rc;
	if (strlen(json_string_value(v)) != json_string_length(v))
		return fail(c, "must not contain NUL characters");
	*out = json_string_value(v);
	return 0;
}

static int get_int(struct vctx *c, const json_t *v, long long lo, long long hi,
		   long long *out)
{
	long long x;

	if (json_typeof(v) != JSON_INTEGER)
		return fail(c, "must be an integer from %lld to %lld, not %s",
			    lo, hi, type_name(v));
	x = json_integer_value(v);
	if (x < lo || x > hi)
		return fail(c, "%lld is out of range; valid: %lld to %lld", x,
			    lo, hi);
	*out = x;
	return 0;
}

/* A rule's optional "why" (free text for the reader, e.g. what ward learn
 * saw): a string of at most WHY_MAX bytes, not kept. */
#define WHY_MAX 4096
static int check_why(struct vctx *c, json_t *rule)
{
	json_t *v = json_object_get(rule, "why");
	const char *s;
	size_t old;
	int rc;

	if (!v)
		return 0;
	old = push_key(c, "why");
	rc = get_string(c, v, &s);
	if (!rc && strlen(s) > WHY_MAX)
		rc = fail(c, "longer than %d bytes", WHY_MAX);
	pop(c, old);
	return rc;
}

static int get_dup(struct vctx *c, const json_t *v, char **out)
{
	const char *s;
	int rc = get_string(c, v, &s);

	if (rc)
		return rc;
	*out = strdup(s);
	return *out ? 0 : -ENOMEM;
}

/* One name of the closed set t; "noun" names the set in the message. */
static int get_enum(struct vctx *c, const json_t *v, const struct named *t,
		    size_t n, const char *noun, int *out)
{
	char list[256];
	const char *s;
	int rc = get_string(c, v, &s);

	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(t[i].name, s) == 0) {
			*out = t[i].value;
			return 0;
		}
	}
	return fail(c, "unknown %s \"%s\"; valid: %s", noun, s,
		    join_names(t, n, list, sizeof(list)));
}

/*
 * A list of distinct names of the set t, as a mask of 1 << value.
 * An empty list is an error unless allow_empty.
 */
static int get_enum_list(struct vctx *c, const json_t *v, const struct named *t,
			 size_t n, const char *noun, bool allow_empty,
			 uint64_t *out)
{
	uint64_t mask = 0;
	size_t i;
	json_t *e;
	int rc = want(c, v, JSON_ARRAY, "an array");

	if (rc)
		return rc;
	if (!allow_empty && json_array_size(v) == 0)
		return fail(c, "must not be empty");
	json_array_foreach(v, i, e)
	{
		size_t old = push_idx(c, i);
		int x = 0;

		rc = get_enum(c, e, t, n, noun, &x);
		if (!rc && (mask & (1ull << x)))
			rc = fail(c, "duplicate %s \"%s\"", noun,
				  json_string_value(e));
		pop(c, old);
		if (rc)
			return rc;
		mask |= 1ull << x;
	}
	*out = mask;
	return 0;
}

static int get_errno(struct vctx *c, const json_t *v, int *out)
{
	const char *s;
	int rc = get_string(c, v, &s);

	if (rc)
		return rc;
	*out = ward_errno_from_name(s);
	if (!*out)
		return fail(
			c,
			"unknown errno \"%s\"; valid: an errno name such as "
			"EACCES, EPERM, ENOENT, ECONNREFUSED",
			s);
	return 0;
}

/* Every key of object v must be in keys (NULL-terminated). */
static int check_keys(struct vctx *c, json_t *v, const char *const *keys)
{
	const char *k;
	json_t *m;

	json_object_foreach(v, k, m)
	{
		char list[256];
		int line = 0, col = 0;
		size_t i, old;

		for (i = 0; keys[i]; i++)
			if (strcmp(keys[i], k) == 0)
				break;
		if (keys[i])
			continue;
		/* positioned at the key; "where" is the object */
		old = push_key(c, k);
		where(c, true, &line, &col);
		pop(c, old);
		pol_set_error(c->err, c->file, line, col, c->path,
			      "unknown key \"%s\"; valid: %s", k,
			      join_strs(keys, list, sizeof(list)));
		return -EINVAL;
	}
	return 0;
}

/* ---- paths and ids ---- */

/*
 * A rule path: absolute, or "$WORKDIR" optionally followed by "/...".
 * No empty, "." or ".." components; one trailing '/' is dropped.
 */
static int get_rule_path(struct vctx *c, const json_t *v, struct pol_path *out)
{
	const char *s, *rest;
	size_t n;
	int rc = get_string(c, v, &s);

	if (rc)
		return rc;
	out->workdir = strncmp(s, "$WORKDIR", 8) == 0;
	rest = out->workdir ? s + 8 : s;
	if (out->workdir ? (*rest && *rest != '/') : *rest != '/')
		return fail(c,
			    "\"%s\": must be an absolute path or start with "
			    "\"$WORKDIR/\"",
			    s);
	n = strlen(s);
	if (n >= WARD_PATH_MAX)
		return fail(c, "longer than %d bytes", WARD_PATH_MAX - 1);
	for (const char *q = rest; *q;) {
		const char *e;
		size_t len;

		q++; /* the '/' */
		e = strchrnul(q, '/');
		len = (size_t)(e - q);
		if (len == 0 && *e)
			return fail(c, "\"%s\": empty path component (\"//\")",
				    s);
		if ((len == 1 && q[0] == '.') ||
		    (len == 2 && q[0] == '.' && q[1] == '.'))
			return fail(c,
				    "\"%s\": \".\" and \"..\" components are "
				    "not allowed",
				    s);
		q = e;
	}
	if (n > 1 && s[n - 1] == '/')
		n--; /* "/usr/" is "/usr"; "$WORKDIR/" is "$WORKDIR" */
	out->text = strndup(s, n);
	if (!out->text)
		return -ENOMEM;
	if (!out->workdir) {
		out->bound = out->text;
		out->len = n;
	}
	return 0;
}

static bool id_taken(const struct policy *p, const char *id)
{
	for (size_t i = 0; i < p->nfs; i++)
		if (p->fs[i].id && strcmp(p->fs[i].id, id) == 0)
			return true;
	for (size_t i = 0; i < p->nnet; i++)
		if (p->net[i].id && strcmp(p->net[i].id, id) == 0)
			return true;
	for (size_t i = 0; i < p->nsys; i++)
		if (p->sys[i].id && strcmp(p->sys[i].id, id) == 0)
			return true;
	return false;
}

/* The "id" member of a rule (if any), else the positional id. */
static int get_rule_id(struct vctx *c, json_t *rule, const char *pos,
		       char **out)
{
	json_t *v = json_object_get(rule, "id");
	const char *s;
	size_t old;
	int rc = 0;

	if (!v) {
		*out = strdup(pos);
		return *out ? 0 : -ENOMEM;
	}
	old = push_key(c, "id");
	rc = get_string(c, v, &s);
	if (!rc && (!*s || strlen(s) > ID_MAX ||
		    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuv"
			      "wxyz0123456789_.:-") != strlen(s)))
		rc = fail(c,
			  "\"%s\": an id is 1 to %d characters of A-Z a-z 0-9 "
			  "_ . : -",
			  s, ID_MAX);
	for (size_t i = 0; !rc && i < NELEM(builtin_ids); i++)
		if (strcmp(s, builtin_ids[i]) == 0)
			rc = fail(c, "\"%s\" is a built-in rule id", s);
	if (!rc && !strncmp(s, "floor.", 6))
		rc = fail(c, "\"%s\": ids starting floor. are ward's", s);
	if (!rc && id_taken(c->p, s))
		rc = fail(c, "duplicate rule id \"%s\"", s);
	if (!rc) {
		*out = strdup(s);
		rc = *out ? 0 : -ENOMEM;
	}
	pop(c, old);
	return rc;
}

/* ---- sections ---- */

static int parse_fs_rule(struct vctx *c, json_t *v, size_t idx)
{
	static const char *const keys[] = { "id",    "path", "allow", "deny",
					    "ask",   "errno", "why",  NULL };
	struct pol_fs_rule *r = &c->p->fs[idx];
	json_t *allow, *deny, *ask, *m;
	uint64_t bits = 0;
	size_t old;
	int rc;

	if ((rc = want(c, v, JSON_OBJECT, "an object")) ||
	    (rc = check_keys(c, v, keys)) || (rc = check_why(c, v)))
		return rc;
	if ((rc = get_rule_id(c, v, c->path, &r->id)))
		return rc;
	m = json_object_get(v, "path");
	if (!m)
		return fail(c, "missing key \"path\"");
	old = push_key(c, "path");
	rc = get_rule_path(c, m, &r->path);
	pop(c, old);
	if (rc)
		return rc;
	allow = json_object_get(v, "allow");
	deny = json_object_get(v, "deny");
	ask = json_object_get(v, "ask");
	if (!!allow + !!deny + !!ask != 1)
		return fail(c, "needs exactly one of \"allow\", \"deny\" and "
			       "\"ask\"");
	m = allow ? allow : deny ? deny : ask;
	old = push_key(c, allow ? "allow" : deny ? "deny" : "ask");
	rc = get_enum_list(c, m, access_names, NELEM(access_names), "access",
			   false, &bits);
	pop(c, old);
	if (rc)
		return rc;
	if (deny)
		r->deny = (unsigned)bits;
	else
		r->allow = (unsigned)bits;
	if (ask)
		r->ask = (unsigned)bits;
	m = json_object_get(v, "errno");
	if (m) {
		old = push_key(c, "errno");
		rc = allow ? fail(c, "only a \"deny\" or \"ask\" rule takes "
				     "an errno")
			   : get_errno(c, m, &r->err);
		pop(c, old);
	}
	return rc;
}

/*
 * Runs one() on each element of the array v (its JSON path pushed), stored
 * after the *count rules already there (a phase's rules follow the base's).
 * *count grows before each call: the element belongs to the policy from
 * then on, so policy_free releases a partly parsed rule too.
 */
static int each_rule(struct vctx *c, json_t *v, size_t *count,
		     int (*one)(struct vctx *, json_t *, size_t))
{
	size_t i, off = *count;
	json_t *e;
	int rc;

	json_array_foreach(v, i, e)
	{
		size_t old = push_idx(c, i);

		*count = off + i + 1;
		rc = one(c, e, off + i);
		pop(c, old);
		if (rc)
			return rc;
	}
	return 0;
}

/* Room for more elements of elem bytes after the have in *arr (and one
 * zeroed past them), the new ones zeroed: a phase's rules are appended to
 * a copy of the base's. 0 or -ENOMEM (*arr unchanged). */
static int grow(void *arr, size_t have, size_t more, size_t elem)
{
	void **a = arr;
	char *n = realloc(*a, (have + more + 1) * elem);

	if (!n)
		return -ENOMEM;
	memset(n + have * elem, 0, (more + 1) * elem);
	*a = n;
	return 0;
}

static int parse_fs(struct vctx *c, json_t *v)
{
	size_t first = c->p->nfs;
	int rc = want(c, v, JSON_ARRAY, "an array of rules");

	if (rc || (rc = grow(&c->p->fs, c->p->nfs, json_array_size(v),
			     sizeof(*c->p->fs))))
		return rc;
	rc = each_rule(c, v, &c->p->nfs, parse_fs_rule);
	/* a phase's rules beat the base's on the same path (check.c) */
	for (size_t i = first; c->phase && i < c->p->nfs; i++)
		c->p->fs[i].phase = true;
	return rc;
}

/* The globs of v appended to p->exec_globs, their ids their JSON paths,
 * marked exec.ask ones when ask. */
static int parse_exec_globs(struct vctx *c, json_t *v, bool ask)
{
	struct policy *p = c->p;
	size_t i;
	json_t *e;
	int rc = want(c, v, JSON_ARRAY, "an array of path globs");

	if (rc ||
	    (rc = grow(&p->exec_globs, p->nexec, json_array_size(v),
		       sizeof(char *))) ||
	    (rc = grow(&p->exec_ids, p->nexec, json_array_size(v),
		       sizeof(char *))) ||
	    (rc = grow(&p->exec_ask, p->nexec, json_array_size(v),
		       sizeof(bool))))
		return rc;
	json_array_foreach(v, i, e)
	{
		size_t old = push_idx(c, i), k = p->nexec;

		/* counted first: policy_free releases a partly parsed one */
		p->nexec++;
		p->exec_ask[k] = ask;
		rc = get_dup(c, e, &p->exec_globs[k]);
		if (!rc && p->exec_globs[k][0] != '/')
			rc = fail(c, "\"%s\": must be an absolute path glob",
				  p->exec_globs[k]);
		if (!rc && strlen(p->exec_globs[k]) >= WARD_PATH_MAX)
			rc = fail(c, "longer than %d bytes", WARD_PATH_MAX - 1);
		/* the id is the JSON path: exec.allow[1],
		 * phases.setup.exec.allow[0] */
		if (!rc && !(p->exec_ids[k] = strdup(c->path)))
			rc = -ENOMEM;
		pop(c, old);
		if (rc)
			return rc;
	}
	return 0;
}

static int parse_exec(struct vctx *c, json_t *v)
{
	static const char *const keys[] = { "allow", "ask", "errno", "why",
					    NULL };
	json_t *m, *ask = json_object_get(v, "ask");
	size_t old;
	int rc;

	if ((rc = want(c, v, JSON_OBJECT, "an object")) ||
	    (rc = check_keys(c, v, keys)) || (rc = check_why(c, v)))
		return rc;
	m = json_object_get(v, "allow");
	if (m) {
		old = push_key(c, "allow");
		rc = parse_exec_globs(c, m, false);
		pop(c, old);
		if (rc)
			return rc;
	}
	if (ask) {
		old = push_key(c, "ask");
		rc = parse_exec_globs(c, ask, true);
		pop(c, old);
		if (rc)
			return rc;
	}
	if ((m = json_object_get(v, "errno"))) {
		old = push_key(c, "errno");
		rc = get_errno(c, m, &c->p->exec_err);
		pop(c, old);
	}
	return rc;
}

/* "a.b.c.d[/n]" or "x::y[/n]" for family into r (masked). */
static int parse_cidr(struct vctx *c, const char *s, int family,
		      struct pol_net_rule *r)
{
	char buf[INET6_ADDRSTRLEN + 8];
	int max = family == AF_INET ? 32 : 128;
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);

	if (alen >= sizeof(buf))
		goto bad;
	memcpy(buf, s, alen);
	buf[alen] = '\0';
	if (inet_pton(family, buf, r->addr) != 1)
		goto bad;
	r->prefix = max;
	if (slash) {
		const char *d = slash + 1;

		if (!*d || strlen(d) > 3 ||
		    strspn(d, "0123456789") != strlen(d))
			goto bad;
		r->prefix = atoi(d);
		if (r->prefix > max)
			goto bad;
	}
	for (int bit = r->prefix; bit < max; bit++)
		r->addr[bit / 8] &= (unsigned char)~(0x80u >> (bit % 8));
	r->has_addr = true;
	return 0;
bad:
	return fail(c, "\"%s\" is not an %s address or CIDR (like %s)", s,
		    family == AF_INET ? "IPv4" : "IPv6",
		    family == AF_INET ? "127.0.0.0/8" : "::1/128");
}

static int parse_port(struct vctx *c, json_t *v, struct pol_net_rule *r)
{
	long long lo, hi;
	int rc;

	if (json_is_integer(v)) {
		rc = get_int(c, v, 0, 65535, &lo);
		hi = lo;
	} else if (json_is_array(v) && json_array_size(v) == 2) {
		size_t old = push_idx(c, 0);

		rc = get_int(c, json_array_get(v, 0), 0, 65535, &lo);
		pop(c, old);
		if (rc)
			return rc;
		old = push_idx(c, 1);
		rc = get_int(c, json_array_get(v, 1), 0, 65535, &hi);
		if (!rc && hi < lo)
			rc = fail(c, "range [%lld, %lld] is empty: %lld < %lld",
				  lo, hi, hi, lo);
		pop(c, old);
	} else {
		return fail(c,
			    "must be a port (0 to 65535) or a range "
			    "[low, high], not %s",
			    json_is_array(v) ? "an array of that length"
					     : type_name(v));
	}
	if (rc)
		return rc;
	r->has_port = true;
	r->port_lo = (int)lo;
	r->port_hi = (int)hi;
	return 0;
}

/* Members of a net rule that constrain the address. */
static int parse_net_target(struct vctx *c, json_t *v, struct pol_net_rule *r)
{
	json_t *addr = json_object_get(v, "addr");
	json_t *port = json_object_get(v, "port");
	json_t *path = json_object_get(v, "path");
	json_t *abst = json_object_get(v, "abstract");
	size_t old;
	int rc = 0;

	if (r->family == AF_UNIX) {
		if (addr || port)
			return fail(c,
				    "a unix rule takes \"path\" or "
				    "\"abstract\", not \"addr\" or \"port\"");
		if (!path == !abst)
			return fail(c, "a unix rule needs exactly one of "
				       "\"path\" and \"abstract\"");
	} else if (path || abst) {
		return fail(c, "\"path\" and \"abstract\" are for family "
			       "\"unix\"");
	}
	if (addr) {
		const char *s;

		old = push_key(c, "addr");
		rc = get_string(c, addr, &s);
		if (!rc)
			rc = parse_cidr(c, s, r->family, r);
		pop(c, old);
	}
	if (!rc && port) {
		old = push_key(c, "port");
		rc = parse_port(c, port, r);
		pop(c, old);
	}
	if (!rc && path) {
		old = push_key(c, "path");
		rc = get_rule_path(c, path, &r->path);
		r->has_path = !rc;
		pop(c, old);
	}
	if (!rc && abst) {
		old = push_key(c, "abstract");
		rc = get_dup(c, abst, &r->abstract);
		if (!rc) {
			r->has_abstract = true;
			r->abstract_len = strlen(r->abstract);
		}
		pop(c, old);
	}
	return rc;
}

/* listen has no address: it may only be in a rule without one. */
static int check_listen(struct vctx *c, json_t *v, struct pol_net_rule *r)
{
	json_t *ops = json_object_get(v, "ops");
	size_t i, old;
	json_t *e;
	int rc = 0;

	if (!(r->ops & POL_OP(WARD_NET_LISTEN)) ||
	    !(r->has_addr || r->has_port || r->has_path || r->has_abstract))
		return 0;
	json_array_foreach(ops, i, e)
	{
		if (strcmp(json_string_value(e), "listen") != 0)
			continue;
		old = push_key(c, "ops");
		push_idx(c, i);
		rc = fail(c, "\"listen\" has no address: put it in a rule "
			     "without addr, port, path or abstract");
		pop(c, old);
		break;
	}
	return rc;
}

static int parse_net_rule(struct vctx *c, json_t *v, size_t idx)
{
	static const char *const keys[] = { "id",	"ops",	  "family",
					    "addr",	"port",	  "path",
					    "abstract", "action", "errno",
					    "why",	NULL };
	struct pol_net_rule *r = &c->p->net[idx];
	uint64_t ops;
	json_t *m;
	size_t old;
	int rc, x = 0;

	if ((rc = want(c, v, JSON_OBJECT, "an object")) ||
	    (rc = check_keys(c, v, keys)) || (rc = check_why(c, v)))
		return rc;
	if ((rc = get_rule_id(c, v, c->path, &r->id)))
		return rc;
	if (!(m = json_object_get(v, "family")))
		return fail(c, "missing key \"family\" (inet, inet6 or unix)");
	old = push_key(c, "family");
	rc = get_enum(c, m, rule_family_names, NELEM(rule_family_names),
		      "family", &r->family);
	pop(c, old);
	if (rc)
		return rc;
	r->ops = POL_OP(WARD_NET_CONNECT) | POL_OP(WARD_NET_SEND);
	if ((m = json_object_get(v, "ops"))) {
		old = push_key(c, "ops");
		rc = get_enum_list(c, m, op_names, NELEM(op_names), "op", false,
				   &ops);
		pop(c, old);
		if (rc)
			return rc;
		r->ops = (unsigned)ops;
	}
	if ((rc = parse_net_target(c, v, r)) || (rc = check_listen(c, v, r)))
		return rc;
	if ((m = json_object_get(v, "action"))) {
		old = push_key(c, "action");
		rc = get_enum(c, m, net_action_names, NELEM(net_action_names),
			      "action", &x);
		r->deny = x == 1;
		r->ask = x == 2;
		pop(c, old);
		if (rc)
			return rc;
	}
	if ((m = json_object_get(v, "errno"))) {
		old = push_key(c, "errno");
		rc = r->deny || r->ask
			     ? get_errno(c, m, &r->err)
			     : fail(c, "only a rule with \"action\": \"deny\" "
				       "or \"ask\" takes an errno");
		pop(c, old);
	}
	return rc;
}

/* Moves the net rules from first on to the front: a phase's rules are
 * checked before the base's (first match decides). */
static int net_phase_first(struct policy *p, size_t first)
{
	size_t nb = first, np = p->nnet - first;
	struct pol_net_rule *tmp;

	if (!nb || !np)
		return 0;
	tmp = malloc(nb * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	memcpy(tmp, p->net, nb * sizeof(*tmp));
	memmove(p->net, p->net + nb, np * sizeof(*tmp));
	memcpy(p->net + np, tmp, nb * sizeof(*tmp));
	free(tmp);
	return 0;
}

static int parse_net_rules(struct vctx *c, json_t *v)
{
	size_t first = c->p->nnet;
	int rc = want(c, v, JSON_ARRAY, "an array of rules");

	if (rc || (rc = grow(&c->p->net, c->p->nnet, json_array_size(v),
			     sizeof(*c->p->net))))
		return rc;
	rc = each_rule(c, v, &c->p->nnet, parse_net_rule);
	return rc ? rc : net_phase_first(c->p, first);
}

static const struct named sock_family_names[] = {
	{ "unix", AF_UNIX },
	{ "inet", AF_INET },
	{ "inet6", AF_INET6 },
	{ "netlink", AF_NETLINK },
	{ "packet", AF_PACKET },
	{ "alg", AF_ALG },
	{ "vsock", AF_VSOCK },
	{ "bluetooth", AF_BLUETOOTH },
	{ "can", AF_CAN },
	{ "tipc", AF_TIPC },
	{ "rds", AF_RDS },
	{ "xdp", AF_XDP },
	{ "key", AF_KEY },
	{ "x25", AF_X25 },
	{ "ax25", AF_AX25 },
	{ "ipx", AF_IPX },
	{ "appletalk", AF_APPLETALK },
	{ "llc", AF_LLC },
	{ "nfc", AF_NFC },
	{ "kcm", AF_KCM },
	{ "qipcrtr", AF_QIPCRTR },
	{ "smc", AF_SMC },
	{ "mctp", AF_MCTP },
};

int pol_family_from_name(const char *name)
{
	for (size_t i = 0; i < NELEM(sock_family_names); i++)
		if (strcmp(sock_family_names[i].name, name) == 0)
			return sock_family_names[i].value;
	return -1;
}

const char *pol_family_name(int family)
{
	for (size_t i = 0; i < NELEM(sock_family_names); i++)
		if (sock_family_names[i].value == family)
			return sock_family_names[i].name;
	return NULL;
}

/* *arr (of *n elements of size sz) made room for more and a zeroed end:
 * a phase's entries follow the base's (the base's are in a phase's copy). */
static int grow_by(void **arr, size_t n, size_t more, size_t sz)
{
	void *nv = realloc(*arr, (n + more + 1) * sz);

	if (!nv)
		return -ENOMEM;
	memset((char *)nv + n * sz, 0, (more + 1) * sz);
	*arr = nv;
	return 0;
}

/* net.allow_domains: ["pypi.org:443", "*.pythonhosted.org:443"]; each
 * entry's rule id is its JSON path (phases.setup.net.allow_domains[0] in a
 * phase) */
static int parse_domains(struct vctx *c, json_t *v)
{
	char why[sizeof(c->err->msg)];
	size_t i, old;
	json_t *e;
	int rc = want(c, v, JSON_ARRAY, "an array of \"NAME:PORT\" strings");

	if (rc)
		return rc;
	c->p->has_domains = true;
	if (grow_by((void **)&c->p->domains, c->p->ndomains,
		    json_array_size(v), sizeof(*c->p->domains)))
		return -ENOMEM;
	json_array_foreach(v, i, e)
	{
		struct pol_domain *d = &c->p->domains[c->p->ndomains];
		const char *str;

		old = push_idx(c, i);
		rc = get_string(c, e, &str);
		if (!rc && (rc = pol_domain_parse(str, d, why, sizeof(why))) ==
				   -EINVAL)
			rc = fail(c, "%s", why);
		if (!rc && !(d->id = strdup(c->path)))
			rc = -ENOMEM;
		pop(c, old);
		if (rc) {
			free(d->name);
			return rc;
		}
		c->p->ndomains++;
	}
	return 0;
}

/* net.hosts: {"mirror.test": "127.0.0.1"} */
static int parse_hosts(struct vctx *c, json_t *v)
{
	char why[sizeof(c->err->msg)];
	const char *name;
	json_t *e;
	size_t old;
	int rc = want(c, v, JSON_OBJECT, "an object of \"NAME\": \"IP\"");

	if (rc)
		return rc;
	if (grow_by((void **)&c->p->hosts, c->p->nhosts, json_object_size(v),
		    sizeof(*c->p->hosts)))
		return -ENOMEM;
	json_object_foreach(v, name, e)
	{
		const char *ip;

		old = push_key(c, name);
		rc = get_string(c, e, &ip);
		if (!rc &&
		    (rc = pol_host_parse(name, ip, &c->p->hosts[c->p->nhosts],
					 why, sizeof(why))) == -EINVAL)
			rc = fail(c, "%s", why);
		pop(c, old);
		if (rc)
			return rc;
		c->p->nhosts++;
	}
	return 0;
}

/* net.allow_private: ["127.0.0.1", "10.1.0.0/16"] */
static int parse_reach(struct vctx *c, json_t *v)
{
	size_t i, old;
	json_t *e;
	int rc = want(c, v, JSON_ARRAY, "an array of addresses or CIDRs");

	if (rc)
		return rc;
	if (grow_by((void **)&c->p->reach, c->p->nreach, json_array_size(v),
		    sizeof(*c->p->reach)))
		return -ENOMEM;
	json_array_foreach(v, i, e)
	{
		struct pol_net_rule r = { 0 };
		const char *str;

		old = push_idx(c, i);
		rc = get_string(c, e, &str);
		if (!rc)
			rc = parse_cidr(c, str,
					strchr(str, ':') ? AF_INET6 : AF_INET,
					&r);
		pop(c, old);
		if (rc)
			return rc;
		struct pol_cidr *x = &c->p->reach[c->p->nreach];
		x->family = strchr(str, ':') ? AF_INET6 : AF_INET;
		memcpy(x->addr, r.addr, 16);
		x->prefix = r.prefix;
		c->p->nreach++;
	}
	return 0;
}

/* With allow_domains, the code may reach ward's proxy: a first rule
 * allowing connect to 127.0.0.1:POLICY_PROXY_PORT, and inet sockets. */
static int add_proxy_rule(struct policy *p)
{
	for (size_t i = 0; i < p->nnet; i++)
		if (p->net[i].id && !strcmp(p->net[i].id, POLICY_PROXY_RULE))
			return 0; /* a phase's domains join the base's */
	struct pol_net_rule *nv = realloc(p->net, (p->nnet + 2) * sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	p->net = nv;
	memmove(nv + 1, nv, p->nnet * sizeof(*nv));
	memset(nv, 0, sizeof(*nv));
	memset(nv + p->nnet + 1, 0, sizeof(*nv));
	p->nnet++;
	nv->id = strdup(POLICY_PROXY_RULE);
	if (!nv->id)
		return -ENOMEM;
	nv->ops = POL_OP(WARD_NET_CONNECT);
	nv->family = AF_INET;
	nv->has_addr = true;
	inet_pton(AF_INET, "127.0.0.1", nv->addr);
	nv->prefix = 32;
	nv->has_port = true;
	nv->port_lo = nv->port_hi = POLICY_PROXY_PORT;
	p->sock_families |= 1ull << AF_INET;
	return 0;
}

static int parse_proxy_keys(struct vctx *c, json_t *v)
{
	static const struct {
		const char *key;
		int (*fn)(struct vctx *c, json_t *v);
	} keys[] = {
		{ "allow_domains", parse_domains },
		{ "hosts", parse_hosts },
		{ "allow_private", parse_reach },
	};
	json_t *m;
	size_t old;
	int rc = 0;

	for (size_t i = 0; !rc && i < NELEM(keys); i++) {
		if (!(m = json_object_get(v, keys[i].key)))
			continue;
		old = push_key(c, keys[i].key);
		rc = keys[i].fn(c, m);
		pop(c, old);
	}
	if (!rc && c->p->has_domains)
		rc = add_proxy_rule(c->p);
	return rc;
}

static int parse_net(struct vctx *c, json_t *v)
{
	static const char *const keys[] = { "socket", "rules",
					    "errno",  "allow_domains",
					    "hosts",  "allow_private",
					    NULL };
	uint64_t fams = 0;
	json_t *m;
	size_t old;
	int rc;

	if ((rc = want(c, v, JSON_OBJECT, "an object")) ||
	    (rc = check_keys(c, v, keys)))
		return rc;
	if ((m = json_object_get(v, "socket"))) {
		old = push_key(c, "socket");
		rc = get_enum_list(c, m, sock_family_names,
				   NELEM(sock_family_names), "family", true,
				   &fams);
		pop(c, old);
		if (rc)
			return rc;
		c->p->sock_families |= fams; /* a phase's add to the base's */
	}
	if ((m = json_object_get(v, "rules"))) {
		old = push_key(c, "rules");
		rc = parse_net_rules(c, m);
		pop(c, old);
		if (rc)
			return rc;
	}
	if ((m = json_object_get(v, "errno"))) {
		old = push_key(c, "errno");
		rc = get_errno(c, m, &c->p->net_err);
		pop(c, old);
		if (rc)
			return rc;
	}
	return parse_proxy_keys(c, v);
}

static int check_syscall_name(struct vctx *c, struct pol_sys_rule *r)
{
	const char *n = r->name;

	if (!*n ||
	    strspn(n, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(n))
		return fail(c, "\"%s\" is not a syscall name", n);
	if (ward_in_kill_floor(n))
		return fail(c,
			    "\"%s\" is in ward's kill floor and cannot be "
			    "changed by policy",
			    n);
	r->nr = seccomp_syscall_resolve_name(n);
	if (r->nr == __NR_SCMP_ERROR || r->nr < 0)
		return fail(c,
			    "unknown syscall \"%s\" (not a syscall of this "
			    "architecture)",
			    n);
	for (size_t i = 0; c->p->sys + i < r; i++)
		if (strcmp(c->p->sys[i].name, n) == 0)
			return fail(c,
				    "duplicate rule for \"%s\" (first in %s)",
				    n, c->p->sys[i].id);
	return 0;
}

static int parse_sys_rule(struct vctx *c, json_t *v, size_t idx)
{
	static const char *const keys[] = { "id",    "name", "action",
					    "errno", "why",  NULL };
	struct pol_sys_rule *r = &c->p->sys[idx];
	char list[128];
	json_t *m;
	size_t old;
	int rc, x = 0;

	if ((rc = want(c, v, JSON_OBJECT, "an object")) ||
	    (rc = check_keys(c, v, keys)) || (rc = check_why(c, v)))
		return rc;
	if ((rc = get_rule_id(c, v, c->path, &r->id)))
		return rc;
	if (!(m = json_object_get(v, "name")))
		return fail(c, "missing key \"name\"");
	old = push_key(c, "name");
	rc = get_dup(c, m, &r->name);
	if (!rc)
		rc = check_syscall_name(c, r);
	pop(c, old);
	if (rc)
		return rc;
	if (!(m = json_object_get(v, "action")))
		return fail(c, "missing key \"action\" (%s)",
			    join_names(sys_action_names,
				       NELEM(sys_action_names), list,
				       sizeof(list)));
	old = push_key(c, "action");
	rc = get_enum(c, m, sys_action_names, NELEM(sys_action_names), "action",
		      &x);
	r->action = (enum pol_sys_action)x;
	for (size_t i = 0; !rc && i < NELEM(exit_syscalls); i++)
		if ((x == POL_SYS_DENY || x == POL_SYS_KILL) &&
		    strcmp(r->name, exit_syscalls[i]) == 0)
			rc = fail(c,
				  "\"%s\" is an exit path and cannot be "
				  "denied or killed",
				  r->name);
	pop(c, old);
	if (rc)
		return rc;
	r->err = EPERM;
	if ((m = json_object_get(v, "errno"))) {
		old = push_key(c, "errno");
		rc = x == POL_SYS_DENY
			     ? get_errno(c, m, &r->err)
			     : fail(c, "only a rule with \"action\": \"deny\" "
				       "takes an errno");
		pop(c, old);
	}
	return rc;
}

static int parse_syscalls(struct vctx *c, json_t *v)
{
	int rc = want(c, v, JSON_ARRAY, "an array of rules");

	if (rc)
		return rc;
	c->p->sys = calloc(json_array_size(v) + 1, sizeof(*c->p->sys));
	if (!c->p->sys)
		return -ENOMEM;
	return each_rule(c, v, &c->p->nsys, parse_sys_rule);
}

static int parse_limits(struct vctx *c, json_t *v)
{
	static const char *const keys[] = {
		"wall_s", "cpu_s",	  "memory_mb", "procs",	  "fsize_mb",
		"nofile", "output_bytes", "events",    "disk_mb", NULL
	};
	/* key, largest value, scale to the ward_limits unit, field */
	struct ward_limits *l = &c->p->limits;
	const struct {
		long long max, scale;
		long long *out;
	} spec[] = {
		{ 2147483647LL, 1000, &l->wall_ms },
		{ 2147483647LL, 1, &l->cpu_s },
		{ 2147483647LL, 1LL << 20, &l->memory_bytes },
		{ 2147483647LL, 1, &l->procs },
		{ 2147483647LL, 1LL << 20, &l->fsize_bytes },
		{ 2147483647LL, 1, &l->nofile },
		{ 1LL << 53, 1, &l->output_bytes },
		{ 1LL << 53, 1, &l->events },
		{ 2147483647LL, 1LL << 20, &l->disk_bytes },
	};
	int rc;

	if ((rc = want(c, v, JSON_OBJECT, "an object")) ||
	    (rc = check_keys(c, v, keys)))
		return rc;
	for (size_t i = 0; i < NELEM(spec); i++) {
		json_t *m = json_object_get(v, keys[i]);
		long long x;
		size_t old;

		if (!m)
			continue;
		old = push_key(c, keys[i]);
		rc = get_int(c, m, 1, spec[i].max, &x);
		pop(c, old);
		if (rc)
			return rc;
		*spec[i].out = x * spec[i].scale;
	}
	return 0;
}

static int parse_interpreters(struct vctx *c, json_t *v)
{
	static const char *const keys[] = { "python", "node", "sh", NULL };
	int rc;

	if ((rc = want(c, v, JSON_OBJECT, "an object")) ||
	    (rc = check_keys(c, v, keys)))
		return rc;
	for (size_t i = 0; i < NELEM(lang_names); i++) {
		json_t *m = json_object_get(v, lang_names[i].name);
		char **out = &c->p->interp[lang_names[i].value];
		size_t old;

		if (!m)
			continue;
		old = push_key(c, lang_names[i].name);
		rc = get_dup(c, m, out);
		if (!rc && (*out)[0] != '/')
			rc = fail(c, "\"%s\": must be an absolute path", *out);
		pop(c, old);
		if (rc)
			return rc;
	}
	return 0;
}

static int parse_version(struct vctx *c, json_t *v)
{
	if (!json_is_integer(v) || json_integer_value(v) != 1) {
		char *t = json_dumps(v, JSON_ENCODE_ANY);
		int rc = fail(c, "unsupported version %s; valid: 1",
			      t ? t : "?");

		free(t);
		return rc;
	}
	return 0;
}

static int parse_name(struct vctx *c, json_t *v)
{
	int rc = get_dup(c, v, &c->p->name);

	if (rc)
		return rc;
	if (!c->p->name[0] || strlen(c->p->name) > NAME_MAX_LEN)
		return fail(c, "must be 1 to %d bytes", NAME_MAX_LEN);
	for (const char *s = c->p->name; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return fail(c, "must not contain control characters");
	return 0;
}

static int parse_scalars(struct vctx *c, json_t *root)
{
	struct policy *p = c->p;
	json_t *m;
	size_t old;
	int rc = 0, x = 0;

	if ((m = json_object_get(root, "name"))) {
		old = push_key(c, "name");
		rc = parse_name(c, m);
		pop(c, old);
	}
	if (!rc && (m = json_object_get(root, "description"))) {
		old = push_key(c, "description");
		rc = get_dup(c, m, &p->description);
		pop(c, old);
	}
	if (!rc && (m = json_object_get(root, "mode"))) {
		old = push_key(c, "mode");
		rc = get_enum(c, m, mode_names, NELEM(mode_names), "mode", &x);
		p->audit = x == 1;
		pop(c, old);
	}
	if (!rc && (m = json_object_get(root, "errno"))) {
		old = push_key(c, "errno");
		rc = get_errno(c, m, &p->err);
		pop(c, old);
	}
	if (!rc && (m = json_object_get(root, "trap_stat"))) {
		old = push_key(c, "trap_stat");
		rc = want(c, m, JSON_TRUE, "a boolean (true or false)");
		p->trap_stat = json_is_true(m);
		pop(c, old);
	}
	/* "view": what exists inside (docs/policy.md); by default what the
	 * policy grants, or the whole host in audit mode (nothing denied) */
	p->view_host = p->audit;
	if (!rc && (m = json_object_get(root, "view"))) {
		old = push_key(c, "view");
		x = 0;
		rc = get_enum(c, m, view_names, NELEM(view_names), "view", &x);
		p->view_host = x == 1;
		pop(c, old);
	}
	if (!rc && (m = json_object_get(root, "ask_timeout"))) {
		long long s = 0;
		old = push_key(c, "ask_timeout");
		rc = get_int(c, m, 1, 3600, &s); /* seconds */
		p->ask_timeout_ms = s * 1000;
		pop(c, old);
	}
	if (!rc && (m = json_object_get(root, "signals"))) {
		old = push_key(c, "signals");
		rc = get_enum(c, m, signals_names, NELEM(signals_names),
			      "signals value", &x);
		p->signals_any = x == 1;
		pop(c, old);
	}
	return rc;
}

static int parse_backtrace(struct vctx *c, json_t *v)
{
	uint64_t bits;
	int rc = get_enum_list(c, v, bt_names, NELEM(bt_names), "outcome", true,
			       &bits);

	if (rc)
		return rc;
	c->p->backtrace = (bits & 1 ? POL_BT_DENY : 0) |
			  (bits & 2 ? POL_BT_KILL : 0) |
			  (bits & 4 ? POL_BT_ALLOW : 0);
	return 0;
}

static int parse_require(struct vctx *c, json_t *v)
{
	uint64_t bits = 0;
	int rc = get_enum_list(c, v, layer_names, NELEM(layer_names), "layer",
			       true, &bits);

	c->p->require = bits;
	return rc;
}

/* A member of an object and what parses it. */
struct section {
	const char *key;
	int (*fn)(struct vctx *c, json_t *v);
};

/* Each of the n sections present in obj, in the table's order. */
static int parse_sections(struct vctx *c, json_t *obj,
			  const struct section *sec, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		json_t *m = json_object_get(obj, sec[i].key);
		size_t old;
		int rc;

		if (!m)
			continue;
		old = push_key(c, sec[i].key);
		rc = sec[i].fn(c, m);
		pop(c, old);
		if (rc)
			return rc;
	}
	return 0;
}

static int parse_root(struct vctx *c, json_t *root)
{
	static const char *const keys[] = {
		"version", "name",	"description",	"mode",
		"errno",   "trap_stat", "interpreters", "fs",
		"exec",	   "net",	"signals",	"syscalls",
		"limits",  "backtrace", "require",	"view",
		"phases",  "ask_timeout", NULL
	};
	static const struct section sections[] = {
		{ "interpreters", parse_interpreters },
		{ "fs", parse_fs },
		{ "exec", parse_exec },
		{ "net", parse_net },
		{ "syscalls", parse_syscalls },
		{ "limits", parse_limits },
		{ "backtrace", parse_backtrace },
		{ "require", parse_require },
	};
	json_t *m;
	size_t old;
	int rc;

	if ((rc = check_keys(c, root, keys)))
		return rc;
	if (!(m = json_object_get(root, "version")))
		return fail(c, "missing key \"version\" (must be 1)");
	old = push_key(c, "version");
	rc = parse_version(c, m);
	pop(c, old);
	if (rc || (rc = parse_scalars(c, root)))
		return rc;
	return parse_sections(c, root, sections, NELEM(sections));
}

/* Values a policy has when its text does not say. */
static void set_defaults(struct policy *p)
{
	p->err = EACCES;
	p->exec_err = EACCES;
	p->ask_timeout_ms = 30000;
	p->net_err = ECONNREFUSED;
	p->backtrace = POL_BT_DENY | POL_BT_KILL;
}

/* Phase names a policy may give (docs/policy.md, "phases"): "main" is the
 * base policy itself, so it is not one. */
static const char *const phase_names[] = { "setup", NULL };

/*
 * The sections of phase name (the object v, at the current path) on top of
 * a fresh parse of the base (root): its fs rules join the base's and win a
 * tie of path, its net rules come before the base's, its exec globs and
 * socket families are added, its errno keys replace the base's. The phase
 * is a whole policy (what the tracer runs the phase under), owned by the
 * base from the moment it exists.
 */
static int parse_phase(struct vctx *c, json_t *root, const char *name,
		       json_t *v)
{
	static const char *const keys[] = { "description", "fs", "exec", "net",
					    NULL };
	static const struct section sections[] = {
		{ "fs", parse_fs },
		{ "exec", parse_exec },
		{ "net", parse_net },
	};
	struct policy *base = c->p, *ph;
	json_t *m;
	size_t old;
	int rc;

	if ((rc = want(c, v, JSON_OBJECT, "an object")) ||
	    (rc = check_keys(c, v, keys)))
		return rc;
	if ((m = json_object_get(v, "description"))) {
		const char *s;

		old = push_key(c, "description");
		rc = get_string(c, m, &s);
		pop(c, old);
		if (rc)
			return rc;
	}
	if (!(ph = calloc(1, sizeof(*ph))))
		return -ENOMEM;
	base->phase[base->nphases] = ph;
	base->phase_name[base->nphases++] = name;
	set_defaults(ph);
	/* the base again, into ph: it parsed once already, so this cannot
	 * fail but for memory; its path is the document's */
	c->p = ph;
	char saved[VPATH_MAX];
	size_t splen = c->plen;
	memcpy(saved, c->path, splen + 1);
	pop(c, 0);
	rc = parse_root(c, root);
	memcpy(c->path, saved, splen + 1);
	c->plen = splen;
	c->phase = true;
	if (!rc)
		rc = parse_sections(c, v, sections, NELEM(sections));
	c->phase = false;
	c->p = base;
	/* a policy's "name" was parsed again; else the base's default */
	if (!rc && !ph->name && !(ph->name = strdup(base->name)))
		rc = -ENOMEM;
	if (!rc && !(ph->text = strdup(base->text)))
		rc = -ENOMEM;
	return rc ? rc : pol_fs_index(ph);
}

static int parse_phases(struct vctx *c, json_t *root, json_t *v)
{
	const char *k;
	json_t *m;
	int rc;

	if ((rc = want(c, v, JSON_OBJECT, "an object")))
		return rc;
	if ((m = json_object_get(v, "main"))) {
		size_t old = push_key(c, "main");

		rc = fail(c, "the main phase is the policy's own top-level "
			     "sections: name only the phases before it "
			     "(valid: setup)");
		pop(c, old);
		return rc;
	}
	if ((rc = check_keys(c, v, phase_names)))
		return rc;
	json_object_foreach(v, k, m)
	{
		size_t old = push_key(c, k);
		const char *name = NULL;

		/* the name is phase_names' own (static) string */
		for (size_t i = 0; phase_names[i]; i++)
			if (!strcmp(phase_names[i], k))
				name = phase_names[i];
		rc = parse_phase(c, root, name, m);
		pop(c, old);
		if (rc)
			return rc;
	}
	return 0;
}

static int validate(struct vctx *c, const char *text, size_t len,
		    const char *default_name)
{
	json_error_t jerr;
	json_t *root;
	int rc;

	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		pol_set_error(c->err, c->file, jerr.line > 0 ? jerr.line : 0,
			      jerr.column > 0 ? jerr.column : 0, "",
			      "syntax error: %s", jerr.text);
		return -EINVAL;
	}
	c->text = text;
	c->len = len;
	rc = 0;
	if (!json_is_object(root))
		rc = fail(c, "a policy must be a JSON object, not %s",
			  type_name(root));
	if (!rc) {
		set_defaults(c->p);
		rc = parse_root(c, root);
	}
	if (!rc && !c->p->name && !(c->p->name = strdup(default_name)))
		rc = -ENOMEM;
	if (!rc && !(c->p->text = strndup(text, len)))
		rc = -ENOMEM;
	if (!rc)
		rc = pol_fs_index(c->p);
	/* after the base is whole: each phase starts from a copy of it */
	json_t *ph = json_object_get(root, "phases");
	if (!rc && ph) {
		size_t old = push_key(c, "phases");

		rc = parse_phases(c, root, ph);
		pop(c, old);
	}
	json_decref(root);
	return rc;
}

int pol_parse(const char *text, size_t len, const char *file,
	      const char *default_name, struct policy **out,
	      struct policy_error *err)
{
	struct vctx *c = calloc(1, sizeof(*c));
	int rc;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	c->file = file;
	c->err = err;
	c->p = calloc(1, sizeof(*c->p));
	if (!c->p) {
		free(c);
		return -ENOMEM;
	}
	rc = validate(c, text, len, default_name);
	if (rc == -ENOMEM)
		pol_set_error(err, file, 0, 0, "", "out of memory");
	jpos_free(&c->ix);
	if (rc)
		policy_free(c->p);
	else
		*out = c->p;
	free(c);
	return rc;
}
