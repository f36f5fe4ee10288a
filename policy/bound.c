/*
 * bound.c - policy_bound(): the most any rule of a policy may grant, for
 * kernel floors that can only allow (Landlock). Pure: it reads the
 * compiled policy and never touches the file system; the caller decides
 * what a path that does not exist means.
 *
 * An upper bound, never less: deny rules are left out (an allow-list cannot
 * say "not this part of that tree"), the most specific rule wins only in
 * policy_check, and every way policy_check can allow an access must be
 * inside the bound:
 *   fs rules            their allow bits on their path (stat dropped: no
 *                       floor restricts metadata reads)
 *   /proc/self/...,     name whichever process asks, so they stand for
 *   /proc/thread-self   all of /proc
 *   exec.allow globs    exec (and read, which running a file needs) on
 *                       the glob's fixed leading directories
 *   net rules (allow)   TCP ports for connect/send and bind; unix socket
 *                       paths for bind (a socket file is created there);
 *                       any abstract peer switches abstract scoping off
 *   signals "any"       switches signal scoping off
 * A policy in audit mode, or with a "syscalls" rule that allows a syscall
 * the rules above would decide, whatever its arguments, has no bound (why
 * says so).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "policy-int.h"

/* Bits a floor can enforce: stat is not among them. */
#define BOUND_FS_BITS                                                          \
	(WARD_FS_READ | WARD_FS_WRITE | WARD_FS_CREATE | WARD_FS_DELETE |      \
	 WARD_FS_EXEC)

/* More ports than this for one operation: not worth a rule each. */
#define BOUND_PORTS_MAX 1024

static int add_tree(struct policy_bound *b, const char *path, size_t len,
		    unsigned access)
{
	struct policy_tree *t;

	if (!access)
		return 0;
	for (size_t i = 0; i < b->ntrees; i++) {
		if (strlen(b->trees[i].path) == len &&
		    !memcmp(b->trees[i].path, path, len)) {
			b->trees[i].access |= access;
			return 0;
		}
	}
	t = realloc(b->trees, (b->ntrees + 1) * sizeof(*t));
	if (!t)
		return -ENOMEM;
	b->trees = t;
	t = &b->trees[b->ntrees];
	t->path = strndup(path, len);
	if (!t->path)
		return -ENOMEM;
	t->access = access;
	b->ntrees++;
	return 0;
}

/* /proc/self and /proc/thread-self name the asking process: all of /proc. */
static int add_rule_path(struct policy_bound *b, const char *path,
			 unsigned access)
{
	static const char *const self[] = { "/proc/self", "/proc/thread-self" };

	for (size_t i = 0; i < 2; i++) {
		size_t n = strlen(self[i]);

		if (!strncmp(path, self[i], n) &&
		    (path[n] == '\0' || path[n] == '/'))
			return add_tree(b, "/proc", 5, access);
	}
	return add_tree(b, path, strlen(path), access);
}

/* The directories an exec glob can match below: its text up to the last
 * '/' before the first wildcard; the whole path when it has none. */
static int add_exec_glob(struct policy_bound *b, const char *glob)
{
	size_t wild = strcspn(glob, "*?[\\");
	size_t len = wild;

	if (glob[wild])
		while (len > 0 && glob[len - 1] != '/')
			len--;
	if (len > 1 && glob[len - 1] == '/')
		len--; /* "/usr/bin/" -> "/usr/bin"; "/" stays */
	return add_tree(b, glob, len ? len : 1, WARD_FS_EXEC | WARD_FS_READ);
}

static int add_ports(struct policy_port_range **v, size_t *n, bool *any,
		     const struct pol_net_rule *r)
{
	struct policy_port_range *nv;
	size_t total = 0;

	if (*any)
		return 0;
	if (!r->has_port) {
		*any = true;
		return 0;
	}
	for (size_t i = 0; i < *n; i++)
		total += (size_t)((*v)[i].hi - (*v)[i].lo + 1);
	if (total + (size_t)(r->port_hi - r->port_lo + 1) > BOUND_PORTS_MAX) {
		*any = true; /* too many to list: leave the op unrestricted */
		return 0;
	}
	nv = realloc(*v, (*n + 1) * sizeof(**v));
	if (!nv)
		return -ENOMEM;
	*v = nv;
	nv[*n].lo = r->port_lo;
	nv[*n].hi = r->port_hi;
	(*n)++;
	return 0;
}

static int add_net_rule(struct policy_bound *b, const struct pol_net_rule *r)
{
	int rc = 0;

	if (r->deny)
		return 0;
	if (r->family == AF_INET || r->family == AF_INET6) {
		if (r->ops & (POL_OP(WARD_NET_CONNECT) | POL_OP(WARD_NET_SEND)))
			rc = add_ports(&b->connect, &b->nconnect,
				       &b->connect_any, r);
		if (!rc && (r->ops & POL_OP(WARD_NET_BIND)))
			rc = add_ports(&b->bind, &b->nbind, &b->bind_any, r);
		return rc;
	}
	if (r->family != AF_UNIX)
		return 0;
	if ((r->ops & (POL_OP(WARD_NET_CONNECT) | POL_OP(WARD_NET_SEND))) &&
	    !r->has_path)
		b->scope_abstract = false; /* an abstract peer may be allowed */
	if (!(r->ops & POL_OP(WARD_NET_BIND)) || r->has_abstract)
		return 0;
	if (!r->has_path)
		return add_tree(b, "/", 1, POLICY_TREE_SOCK);
	return r->path.bound ? add_rule_path(b, r->path.bound, POLICY_TREE_SOCK)
			     : 0;
}

static int build(const struct policy *p, struct policy_bound *b)
{
	int rc = 0;

	for (size_t i = 0; !rc && i < p->nfs; i++) {
		const struct pol_fs_rule *r = &p->fs[i];

		if (r->path.bound && (r->allow & BOUND_FS_BITS))
			rc = add_rule_path(b, r->path.bound,
					   r->allow & BOUND_FS_BITS);
	}
	for (size_t i = 0; !rc && i < p->nexec; i++)
		rc = add_exec_glob(b, p->exec_globs[i]);
	for (size_t i = 0; !rc && i < p->nnet; i++)
		rc = add_net_rule(b, &p->net[i]);
	return rc;
}

int policy_bound(const struct policy *p, bool (*decided)(int nr),
		 struct policy_bound *b)
{
	int rc;

	memset(b, 0, sizeof(*b));
	if (p->audit) {
		snprintf(b->unbounded, sizeof(b->unbounded),
			 "audit mode records would-be denials and makes none; "
			 "a kernel floor would make them");
		return 0;
	}
	for (size_t i = 0; i < p->nsys; i++) {
		if (p->sys[i].action == POL_SYS_ALLOW &&
		    (!decided || decided(p->sys[i].nr))) {
			snprintf(b->unbounded, sizeof(b->unbounded),
				 "%s allows %s whatever its arguments",
				 p->sys[i].id, p->sys[i].name);
			return 0;
		}
	}
	b->scope_signal = !p->signals_any;
	b->scope_abstract = true;
	rc = build(p, b);
	if (rc)
		policy_bound_free(b);
	return rc;
}

void policy_bound_free(struct policy_bound *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->ntrees; i++)
		free(b->trees[i].path);
	free(b->trees);
	free(b->connect);
	free(b->bind);
	memset(b, 0, sizeof(*b));
}
