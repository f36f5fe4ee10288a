/*
 * check.c - policy_check(): one decision per trapped syscall.
 *
 * This runs for every trapped syscall (thousands per second): it reads the
 * compiled policy and the event only, never allocates, and matches paths
 * with precomputed lengths and memcmp. Order of decision:
 *   1. malformed event -> deny "invalid-event" (-EINVAL)
 *   2. ward's floor: clone flags CLONE_NEW* and CLONE_UNTRACED -> kill;
 *      opening a process's memory file (/proc/PID/mem) -> deny EACCES:
 *      a tracee writing there could change the argument copies ward
 *      makes in its read-only scratch area (FOLL_FORCE ignores the
 *      protection), so no policy, not even audit, allows it;
 *      mknod/mknodat of a character or block device node (an overlayfs
 *      whiteout, char 0:0, included) -> deny EPERM, whatever the fs rules
 *      say of the name: a device node is not a file the code may make
 *      (FIFOs, sockets and regular files stay with the fs rules);
 *      prctl options, personality values and ioctl requests outside the
 *      argument floor (common/floor.h) -> deny EPERM
 *   3. a "syscalls" rule naming the syscall
 *   4. the rules of the event's class
 * then audit mode turns denials into allows with would_deny set.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "policy-int.h"

#include "../common/floor.h"

static const char *const access_bit_names[POL_FS_NBITS] = {
	"read", "write", "create", "delete", "exec", "stat",
};

static void set(struct policy_verdict *out, enum policy_action a, int err,
		const char *rule)
{
	out->action = a;
	out->err = a == POLICY_DENY || a == POLICY_ASK ? err : 0;
	out->rule = rule;
}

static __attribute__((format(printf, 2, 3))) void
reason(struct policy_verdict *out, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out->reason, sizeof(out->reason), fmt, ap);
	va_end(ap);
}

/*
 * out->reason = the NULL-terminated list of strings, truncated to fit:
 * the hot-path form of reason() (no format parsing).
 */
static void reason_cat(struct policy_verdict *out, ...)
{
	size_t used = 0, room = sizeof(out->reason) - 1;
	const char *piece;
	va_list ap;

	va_start(ap, out);
	while ((piece = va_arg(ap, const char *)) && used < room) {
		size_t n = strnlen(piece, room - used);

		memcpy(out->reason + used, piece, n);
		used += n;
	}
	va_end(ap);
	out->reason[used] = '\0';
}

/* "read,write" for the WARD_FS_* bits of access, into buf (>= 48 bytes). */
static const char *access_text(unsigned access, char *buf)
{
	size_t used = 0;

	for (int b = 0; b < POL_FS_NBITS; b++) {
		size_t n;

		if (!(access & (1u << b)))
			continue;
		if (used)
			buf[used++] = ',';
		n = strlen(access_bit_names[b]);
		memcpy(buf + used, access_bit_names[b], n);
		used += n;
	}
	buf[used] = '\0';
	return buf;
}

/* ---- files ---- */

/* The names one path goes by: itself and its /proc/self aliases. */
struct target {
	const char *s[3];
	size_t len[3];
	int n;
};

/* Parses a decimal pid at s; returns its length, 0 if none. */
static size_t pid_at(const char *s, long *pid)
{
	size_t i = 0;

	*pid = 0;
	while (s[i] >= '0' && s[i] <= '9' && i < 10)
		*pid = *pid * 10 + (s[i++] - '0');
	return s[i] == '/' || s[i] == '\0' ? i : 0;
}

/*
 * "/proc/PID/x" (PID the event's process) is also "/proc/self/x";
 * "/proc/PID/task/TID/x" and "/proc/TID/x" (TID the event's thread, not
 * its leader) are also "/proc/thread-self/x". Aliases go to buf (two
 * halves of WARD_PATH_MAX + 32 bytes).
 */
/* Add the alias head + tail (tail_len bytes) to t, built in buf. */
static void add_alias(struct target *t, char *buf, const char *head,
		      const char *tail, size_t tail_len)
{
	size_t h = strlen(head);

	memcpy(buf, head, h);
	memcpy(buf + h, tail, tail_len + 1);
	t->s[t->n] = buf;
	t->len[t->n++] = h + tail_len;
}

static void proc_aliases(const struct ward_event *ev, struct target *t,
			 char *buf)
{
	const char *p = t->s[0], *end = p + t->len[0];
	const char *rest, *task;
	size_t n;
	long pid, tid;

	if (t->len[0] < 7 || memcmp(p, "/proc/", 6) != 0)
		return;
	n = pid_at(p + 6, &pid);
	if (!n)
		return;
	rest = p + 6 + n;
	if (pid == ev->tid && ev->tid != ev->pid) {
		add_alias(t, buf, "/proc/thread-self", rest,
			  (size_t)(end - rest));
		return;
	}
	if (pid != ev->pid)
		return;
	add_alias(t, buf, "/proc/self", rest, (size_t)(end - rest));
	if (strncmp(rest, "/task/", 6) != 0)
		return;
	n = pid_at(rest + 6, &tid);
	if (!n || tid != ev->tid)
		return;
	task = rest + 6 + n;
	add_alias(t, buf + WARD_PATH_MAX + 32, "/proc/thread-self", task,
		  (size_t)(end - task));
}

static bool prefix_match(const struct pol_path *rp, const char *s, size_t n)
{
	size_t len = rp->len;

	if (len == 1)
		return true; /* "/" holds every absolute path */
	/* most rules differ from the path in their first or last byte */
	return n >= len && (n == len || s[len] == '/') &&
	       s[1] == rp->bound[1] && s[len - 1] == rp->bound[len - 1] &&
	       memcmp(s, rp->bound, len) == 0;
}

static bool target_match(const struct pol_path *rp, const struct target *t)
{
	if (!rp->bound)
		return false; /* $WORKDIR not bound yet */
	for (int k = 0; k < t->n; k++)
		if (prefix_match(rp, t->s[k], t->len[k]))
			return true;
	return false;
}

static unsigned bucket_of(const struct pol_path *pp)
{
	return pp->len > 1 ? (unsigned char)pp->bound[1] : 0;
}

int pol_fs_index(struct policy *p)
{
	unsigned *order = calloc(p->nfs + 1, sizeof(*order));
	unsigned count[257] = { 0 };

	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < p->nfs; i++)
		if (p->fs[i].path.bound)
			count[bucket_of(&p->fs[i].path) + 1]++;
	for (int b = 1; b < 257; b++)
		count[b] += count[b - 1];
	memcpy(p->fs_bucket, count, sizeof(count));
	for (size_t i = 0; i < p->nfs; i++)
		if (p->fs[i].path.bound)
			order[count[bucket_of(&p->fs[i].path)]++] = (unsigned)i;
	free(p->fs_order);
	p->fs_order = order;
	return 0;
}

/* Between rules of one path: deny wins, then ask, then allow. */
static int fs_rank(const struct pol_fs_rule *r)
{
	return r->deny ? 2 : r->ask ? 1 : 0;
}

/* Consider rule i for the bits of access it names. */
static void fs_consider(const struct policy *p, size_t i,
			const struct target *t, unsigned access,
			int best[POL_FS_NBITS], size_t best_len[POL_FS_NBITS])
{
	const struct pol_fs_rule *r = &p->fs[i];
	unsigned bits = (r->allow | r->deny) & access;

	if (!bits || !target_match(&r->path, t))
		return;
	for (int b = 0; b < POL_FS_NBITS; b++) {
		if (!(bits & (1u << b)))
			continue;
		const struct pol_fs_rule *o = best[b] < 0 ? NULL
							  : &p->fs[best[b]];

		/* longest path; then a phase's rule over the base's; then
		 * deny over ask over allow */
		if (!o || r->path.len > best_len[b] ||
		    (r->path.len == best_len[b] &&
		     (r->phase != o->phase ? r->phase
					   : fs_rank(r) > fs_rank(o)))) {
			best[b] = (int)i;
			best_len[b] = r->path.len;
		}
	}
}

/*
 * For each requested bit, the index of the deciding rule (-1: none): the
 * longest matching rule path that names the bit; deny wins a tie. The
 * result does not depend on rule order, so only the rules "/" and those
 * whose first component starts like the path's are scanned (the /proc
 * aliases start like the path, too).
 */
static void fs_pick(const struct policy *p, const struct target *t,
		    unsigned access, int best[POL_FS_NBITS])
{
	size_t best_len[POL_FS_NBITS];
	unsigned c = (unsigned char)t->s[0][1];

	for (int b = 0; b < POL_FS_NBITS; b++)
		best[b] = -1;
	if (!p->fs_order)
		return;
	for (unsigned k = p->fs_bucket[0]; k < p->fs_bucket[1]; k++)
		fs_consider(p, p->fs_order[k], t, access, best, best_len);
	if (c == 0)
		return;
	for (unsigned k = p->fs_bucket[c]; k < p->fs_bucket[c + 1]; k++)
		fs_consider(p, p->fs_order[k], t, access, best, best_len);
}

/*
 * Judge access on one path. Returns true if every bit is allowed or asked
 * (and sets *first to the rule of the first bit, *ask to that of the first
 * asked bit or leaves it); otherwise fills out with the denial of the
 * first denied bit.
 */
static bool fs_one(const struct policy *p, const struct ward_event *ev,
		   const char *path, unsigned access,
		   struct policy_verdict *out, int *first, int *ask)
{
	char alias[2 * (WARD_PATH_MAX + 32)];
	struct target t = { .s = { path }, .len = { strlen(path) }, .n = 1 };
	int best[POL_FS_NBITS];

	proc_aliases(ev, &t, alias);
	fs_pick(p, &t, access, best);
	*first = -1;
	for (int b = 0; b < POL_FS_NBITS; b++) {
		const struct pol_fs_rule *r;

		if (!(access & (1u << b)))
			continue;
		if (best[b] < 0) {
			set(out, POLICY_DENY, p->err, POL_RULE_DEFAULT);
			reason_cat(out, access_bit_names[b], " of ", path,
				   ": no fs rule allows ", access_bit_names[b],
				   NULL);
			return false;
		}
		r = &p->fs[best[b]];
		if (r->deny) {
			set(out, POLICY_DENY, r->err ? r->err : p->err, r->id);
			reason_cat(out, access_bit_names[b], " of ", path,
				   ": denied by ", r->id, NULL);
			return false;
		}
		if (*first < 0)
			*first = best[b];
		if (*ask < 0 && (r->ask & (1u << b)))
			*ask = best[b];
	}
	return true;
}

/*
 * An fd the code already holds that names no file: "pipe:[N]",
 * "socket:[N]", "anon_inode:[eventfd]" (what the kernel shows in
 * /proc/PID/fd). It reaches the policy through AT_EMPTY_PATH calls such as
 * glibc's fstat(); there is no name for a path rule to judge.
 */
static bool anonymous_fd(const char *path)
{
	size_t n = strspn(path, "abcdefghijklmnopqrstuvwxyz_");

	return n > 0 && path[n] == ':';
}

static void check_fs(const struct policy *p, const struct ward_event *ev,
		     struct policy_verdict *out)
{
	char bits[64];
	int first, first2, ask = -1;

	if (anonymous_fd(ev->path) && !ev->has_path2) {
		set(out, POLICY_ALLOW, 0, POL_RULE_FD_ANONYMOUS);
		reason_cat(out, access_text(ev->access, bits), " of ", ev->path,
			   ": an fd the code holds, with no name", NULL);
		return;
	}

	if (!fs_one(p, ev, ev->path, ev->access, out, &first, &ask)) {
		/* A metadata query of what does not exist in the run's view
		 * is answered as the kernel would: the rule that denies it
		 * must not tell the code that it names the path. */
		if (out->action == POLICY_DENY && ev->access == WARD_FS_STAT &&
		    !ev->exists && !ev->has_path2) {
			size_t used = strlen(out->reason);
			out->err = ENOENT;
			snprintf(out->reason + used, sizeof(out->reason) - used,
				 " (no such file in the run's view)");
		}
		return;
	}
	if (ev->has_path2 && ev->access2 &&
	    !fs_one(p, ev, ev->path2, ev->access2, out, &first2, &ask))
		return;
	if (ask >= 0) {
		const struct pol_fs_rule *r = &p->fs[ask];
		set(out, POLICY_ASK, r->err ? r->err : p->err, r->id);
		reason_cat(out, access_text(ev->access, bits), " of ", ev->path,
			   ev->has_path2 ? " -> " : "",
			   ev->has_path2 ? ev->path2 : "", ": ask by ", r->id,
			   NULL);
		return;
	}
	set(out, POLICY_ALLOW, 0, p->fs[first].id);
	reason_cat(out, access_text(ev->access, bits), " of ", ev->path,
		   ": allowed by ", out->rule, NULL);
}

/* ---- programs ---- */

static void check_exec(const struct policy *p, const struct ward_event *ev,
		       struct policy_verdict *out)
{
	if (!ev->exists) {
		set(out, POLICY_ALLOW, 0, POL_RULE_EXEC_MISSING);
		reason_cat(out, "exec of ", ev->path,
			   ": no such file (checked again at exec)", NULL);
		return;
	}
	/* allow globs first: a program both allow and ask name runs */
	for (size_t j = 0; j < 2 * p->nexec; j++) {
		size_t i = j % p->nexec;
		bool ask = j >= p->nexec;
		if (p->exec_ask[i] == ask &&
		    fnmatch(p->exec_globs[i], ev->path, FNM_PATHNAME) == 0) {
			set(out, ask ? POLICY_ASK : POLICY_ALLOW, p->exec_err,
			    p->exec_ids[i]);
			reason_cat(out, "exec of ", ev->path,
				   ask ? ": ask by " : ": allowed by ",
				   p->exec_ids[i], NULL);
			return;
		}
	}
	set(out, POLICY_DENY, p->exec_err, POL_RULE_DEFAULT);
	reason_cat(out, "exec of ", ev->path, ": not in exec.allow", NULL);
}

/* ---- network ---- */

/* The decoded peer of a connect/bind/send, ready to match. */
struct peer {
	int family; /* AF_INET (also v4-mapped), AF_INET6, AF_UNIX */
	unsigned char addr[16];
	int port;
	const char *path; /* unix */
	size_t path_len;
	bool abstract;
};

static bool addr_in(const struct pol_net_rule *r, const unsigned char *a)
{
	int full = r->prefix / 8, rem = r->prefix % 8;

	if (memcmp(a, r->addr, (size_t)full) != 0)
		return false;
	return !rem || ((a[full] ^ r->addr[full]) &
			(unsigned char)(0xff00u >> rem)) == 0;
}

static bool net_match(const struct pol_net_rule *r, enum ward_net_op op,
		      const struct peer *pe)
{
	if (!(r->ops & POL_OP(op)) || r->family != pe->family)
		return false;
	if (op == WARD_NET_LISTEN)
		return !r->has_addr && !r->has_port && !r->has_path &&
		       !r->has_abstract;
	if (r->has_addr && !addr_in(r, pe->addr))
		return false;
	if (r->has_port && (pe->port < r->port_lo || pe->port > r->port_hi))
		return false;
	if (r->has_path) {
		struct target t = { .s = { pe->path },
				    .len = { pe->path_len },
				    .n = 1 };

		return !pe->abstract && pe->path[0] == '/' &&
		       target_match(&r->path, &t);
	}
	if (r->has_abstract)
		return pe->abstract && pe->path_len >= r->abstract_len &&
		       memcmp(pe->path, r->abstract, r->abstract_len) == 0;
	return true;
}

/* "127.0.0.1:80", "[::1]:53", "unix:/run/x", "unix:@name" */
static void peer_text(const struct ward_event *ev, const struct peer *pe,
		      char *buf, size_t n)
{
	if (ev->net_op == WARD_NET_LISTEN)
		snprintf(buf, n, "a %s socket",
			 pol_family_name(pe->family)
				 ? pol_family_name(pe->family)
				 : "?");
	else if (pe->family == AF_UNIX)
		snprintf(buf, n, "unix:%s%s", pe->abstract ? "@" : "",
			 pe->path);
	else if (pe->family == AF_INET6)
		snprintf(buf, n, "[%s]:%d", ev->sa.addr, pe->port);
	else if (pe->family == AF_INET)
		snprintf(buf, n, "%s:%d", ev->sa.addr, pe->port);
	else
		snprintf(buf, n, "an address of family %d", pe->family);
}

/* Fill pe from the event; false if the address text does not parse. */
static bool get_peer(const struct ward_event *ev, struct peer *pe)
{
	const struct ward_sockaddr *sa = &ev->sa;

	memset(pe, 0, sizeof(*pe));
	pe->path = "";
	pe->port = sa->port;
	if (ev->net_op == WARD_NET_LISTEN) {
		pe->family = ev->sock_family;
		return true;
	}
	pe->family = sa->family == AF_INET6 && sa->v4mapped ? AF_INET
							    : sa->family;
	switch (pe->family) {
	case AF_INET:
	case AF_INET6: return inet_pton(pe->family, sa->addr, pe->addr) == 1;
	case AF_UNIX:
		pe->path = sa->unix_path;
		pe->path_len = strlen(sa->unix_path);
		pe->abstract = sa->abstract;
		return true;
	default: return true;
	}
}

static int check_net_addr(const struct policy *p, const struct ward_event *ev,
			  struct policy_verdict *out)
{
	const char *op = ward_net_op_name(ev->net_op);
	bool outbound = ev->net_op == WARD_NET_CONNECT ||
			ev->net_op == WARD_NET_SEND;
	int def_err = outbound ? p->net_err : EACCES;
	char peer[160];
	struct peer pe;

	if (ev->net_op == WARD_NET_SEND && !ev->sa.present) {
		set(out, POLICY_ALLOW, 0, POL_RULE_NET_CONNECTED);
		reason(out, "send on a connected socket");
		return 0;
	}
	if (ev->net_op != WARD_NET_LISTEN && !ev->sa.present) {
		set(out, POLICY_DENY, def_err, POL_RULE_DEFAULT);
		reason(out, "%s: no address could be decoded", op);
		return 0;
	}
	if (!get_peer(ev, &pe))
		return -EINVAL;
	peer_text(ev, &pe, peer, sizeof(peer));
	for (size_t i = 0; i < p->nnet; i++) {
		const struct pol_net_rule *r = &p->net[i];

		if (!net_match(r, ev->net_op, &pe))
			continue;
		set(out,
		    r->deny  ? POLICY_DENY
		    : r->ask ? POLICY_ASK
			     : POLICY_ALLOW,
		    r->err ? r->err : def_err, r->id);
		reason(out, "%s %s %s: %s by %s", op,
		       ev->net_op == WARD_NET_LISTEN ? "on" : "to", peer,
		       r->deny	? "denied"
		       : r->ask ? "ask"
				: "allowed",
		       r->id);
		return 0;
	}
	if (outbound && pe.family == AF_UNIX && !ev->sa.abstract &&
	    !ev->exists) {
		/* Nothing listens there: the caller gets ENOENT from ward
		 * without the call running, so nothing can appear between. */
		set(out, POLICY_ALLOW, 0, POL_RULE_NET_UNIX_MISSING);
		reason(out, "%s to %s: no such socket (answered ENOENT)", op,
		       peer);
		return 0;
	}
	set(out, POLICY_DENY, def_err, POL_RULE_DEFAULT);
	reason(out, "%s %s %s: no net rule allows it", op,
	       ev->net_op == WARD_NET_LISTEN ? "on" : "to", peer);
	return 0;
}

static int check_net(const struct policy *p, const struct ward_event *ev,
		     struct policy_verdict *out)
{
	const char *fam;
	int f = ev->sock_family;

	if (ev->net_op != WARD_NET_SOCKET)
		return check_net_addr(p, ev, out);
	fam = pol_family_name(f);
	if (f > 0 && f < 64 && (p->sock_families & (1ull << f))) {
		set(out, POLICY_ALLOW, 0, POL_RULE_NET_SOCKET);
		reason(out, "socket(%s): allowed by net.socket", fam);
	} else {
		set(out, POLICY_DENY, EAFNOSUPPORT, POL_RULE_DEFAULT);
		if (fam)
			reason(out, "socket(%s): family not in net.socket",
			       fam);
		else
			reason(out,
			       "socket(family %d): family not in "
			       "net.socket",
			       f);
	}
	return 0;
}

/* ---- processes, signals, the rest ---- */

static void check_signal(const struct policy *p, const struct ward_event *ev,
			 struct policy_verdict *out)
{
	if (p->signals_any || ev->sig_in_run) {
		set(out, POLICY_ALLOW, 0, POL_RULE_SIGNALS);
		reason(out, "signal %d to %d: %s", ev->sig, (int)ev->sig_target,
		       p->signals_any ? "signals \"any\"" : "within the run");
		return;
	}
	set(out, POLICY_DENY, EPERM, POL_RULE_SIGNALS);
	reason(out, "signal %d to %d: reaches processes outside the run",
	       ev->sig, (int)ev->sig_target);
}

static const struct pol_sys_rule *find_sys_rule(const struct policy *p,
						const char *name)
{
	for (size_t i = 0; i < p->nsys; i++)
		if (p->sys[i].name[0] == name[0] &&
		    strcmp(p->sys[i].name, name) == 0)
			return &p->sys[i];
	return NULL;
}

/* A "syscalls" rule's verdict; false when the class rules must decide. */
static bool apply_sys_rule(const struct pol_sys_rule *r,
			   const struct ward_event *ev,
			   struct policy_verdict *out)
{
	switch (r->action) {
	case POL_SYS_ALLOW:
		set(out, POLICY_ALLOW, 0, r->id);
		reason(out, "%s: allowed by %s", r->name, r->id);
		return true;
	case POL_SYS_DENY:
		set(out, POLICY_DENY, r->err, r->id);
		reason(out, "%s: denied by %s", r->name, r->id);
		return true;
	case POL_SYS_KILL:
		set(out, POLICY_KILL, 0, r->id);
		reason(out, "%s: kill by %s", r->name, r->id);
		return true;
	case POL_SYS_LOG:
		out->log = true;
		if (ev->cls != WARD_CLASS_OTHER)
			return false; /* observe; the class rules decide */
		set(out, POLICY_ALLOW, 0, r->id);
		reason(out, "%s: allowed and logged by %s", r->name, r->id);
		return true;
	}
	return false;
}

/* Why ev cannot be judged, or NULL if it is well formed. */
static const char *malformed(const struct ward_event *ev)
{
	switch (ev->cls) {
	case WARD_CLASS_FS:
		if (!ev->access || (ev->access & ~POL_FS_ALL))
			return "fs event without valid access bits";
		if ((ev->path[0] != '/' && !anonymous_fd(ev->path)) ||
		    strnlen(ev->path, WARD_PATH_MAX) == WARD_PATH_MAX)
			return "fs event without an absolute path";
		if (ev->has_path2 && ev->access2 &&
		    ((ev->access2 & ~POL_FS_ALL) || ev->path2[0] != '/' ||
		     strnlen(ev->path2, WARD_PATH_MAX) == WARD_PATH_MAX))
			return "fs event with a bad second path";
		return NULL;
	case WARD_CLASS_EXEC:
		if (ev->path[0] != '/' ||
		    strnlen(ev->path, WARD_PATH_MAX) == WARD_PATH_MAX)
			return "exec event without an absolute path";
		return NULL;
	case WARD_CLASS_NET:
		if (ev->net_op <= WARD_NET_NONE || ev->net_op > WARD_NET_SEND)
			return "net event without an operation";
		if (ev->sa.present &&
		    strnlen(ev->sa.unix_path, WARD_PATH_MAX) == WARD_PATH_MAX)
			return "net event with an unterminated unix path";
		return NULL;
	case WARD_CLASS_PROC:
	case WARD_CLASS_SIGNAL:
	case WARD_CLASS_OTHER: return NULL;
	case WARD_CLASS_NONE: break;
	}
	return "event without a class";
}

/* "/proc/PID/mem" or "/proc/PID/task/TID/mem" (self and thread-self are
 * resolved to numbers before the policy sees the path; they are matched
 * too for paths that were not). */
static bool proc_mem_file(const char *path)
{
	const char *s = path;
	long id;
	size_t n;

	if (strncmp(s, "/proc/", 6) != 0)
		return false;
	s += 6;
	if (strncmp(s, "self/", 5) == 0)
		s += 5;
	else if (strncmp(s, "thread-self/", 12) == 0)
		s += 12;
	else if ((n = pid_at(s, &id)) > 0 && s[n] == '/')
		s += n + 1;
	else
		return false;
	if (strncmp(s, "task/", 5) == 0) {
		s += 5;
		if ((n = pid_at(s, &id)) == 0 || s[n] != '/')
			return false;
		s += n + 1;
	}
	return strcmp(s, "mem") == 0;
}

/* Is path one of ward's own files (policy_protect), or a directory above
 * one that access would create or delete? */
static bool record_file(const struct policy *p, const char *path,
			unsigned access)
{
	size_t n = strlen(path);

	for (size_t i = 0; i < p->nprotect; i++) {
		const char *e = p->protect[i];
		size_t m = strlen(e);

		if (m && e[m - 1] == '*' ? !strncmp(path, e, m - 1)
					 : !strcmp(path, e))
			return true;
		if ((access & (WARD_FS_CREATE | WARD_FS_DELETE)) &&
		    (!strcmp(path, "/") ||
		     (n < m && !strncmp(path, e, n) && e[n] == '/')))
			return true;
	}
	return false;
}

static int invalid(struct policy_verdict *out, const char *why)
{
	set(out, POLICY_DENY, EPERM, POL_RULE_INVALID);
	reason(out, "invalid event: %s", why);
	return -EINVAL;
}

/* Steps 2-4 of the order at the top. Returns 0 or -EINVAL. */
static int decide(const struct policy *p, const struct ward_event *ev,
		  struct policy_verdict *out, bool *floor)
{
	const char *name = ev->name ? ev->name : "";
	const struct pol_sys_rule *r;
	const char *floor_why;
	unsigned floor_val = 0;

	if (ev->cls == WARD_CLASS_PROC &&
	    ((unsigned)ev->clone_flags & WARD_CLONE_FLOOR)) {
		set(out, POLICY_KILL, 0, POL_RULE_CLONE);
		reason(out,
		       "%s with flags %#lx: namespaces and CLONE_UNTRACED "
		       "are in ward's floor",
		       name[0] ? name : "clone", ev->clone_flags);
		*floor = true;
		return 0;
	}
	if ((ev->cls == WARD_CLASS_FS || ev->cls == WARD_CLASS_EXEC) &&
	    (proc_mem_file(ev->path) ||
	     (ev->has_path2 && proc_mem_file(ev->path2)))) {
		set(out, POLICY_DENY, EACCES, POL_RULE_PROC_MEM);
		reason(out, "%s of a process's memory file is in ward's floor",
		       name[0] ? name : "access");
		*floor = true;
		return 0;
	}
	if (ev->cls == WARD_CLASS_FS &&
	    (S_ISCHR(ev->mknod_mode) || S_ISBLK(ev->mknod_mode))) {
		set(out, POLICY_DENY, EPERM, POL_RULE_MKNOD);
		reason(out,
		       "%s of a %s device node (mode %#o) is in ward's floor",
		       name[0] ? name : "mknod",
		       S_ISCHR(ev->mknod_mode) ? "character" : "block",
		       ev->mknod_mode);
		*floor = true;
		return 0;
	}
	if ((ev->cls == WARD_CLASS_FS || ev->cls == WARD_CLASS_EXEC) &&
	    p->nprotect &&
	    (record_file(p, ev->path, ev->access) ||
	     (ev->has_path2 && record_file(p, ev->path2, ev->access2)))) {
		set(out, POLICY_DENY, EACCES, POL_RULE_RECORD);
		reason(out,
		       "%s of ward's record (its database or key) is in "
		       "ward's floor",
		       name[0] ? name : "access");
		*floor = true;
		return 0;
	}
	if (ev->cls == WARD_CLASS_OTHER &&
	    (floor_why = ward_arg_floor(name, ev->raw_args, &floor_val))) {
		set(out, POLICY_DENY, EPERM, POL_RULE_ARG_FLOOR);
		reason(out, "%s %#x: %s (ward's floor)", name, floor_val,
		       floor_why);
		*floor = true;
		return 0;
	}
	r = find_sys_rule(p, name);
	if (r && apply_sys_rule(r, ev, out))
		return 0;
	switch (ev->cls) {
	case WARD_CLASS_FS: check_fs(p, ev, out); return 0;
	case WARD_CLASS_EXEC: check_exec(p, ev, out); return 0;
	case WARD_CLASS_NET: return check_net(p, ev, out);
	case WARD_CLASS_PROC:
		set(out, POLICY_ALLOW, 0, POL_RULE_PROC);
		reason(out, "%s: new process or thread in the run",
		       name[0] ? name : "clone");
		return 0;
	case WARD_CLASS_SIGNAL: check_signal(p, ev, out); return 0;
	default:
		set(out, POLICY_DENY, ENOSYS, POL_RULE_DEFAULT);
		reason(out, "%s: not allowed by any rule",
		       name[0] ? name : "syscall");
		return 0;
	}
}

int policy_check(const struct policy *p, const struct ward_event *ev,
		 struct policy_verdict *out)
{
	const char *why;
	bool floor = false;
	unsigned bt;
	int rc;

	if (!out)
		return -EINVAL;
	out->reason[0] = '\0';
	out->would_deny = out->log = out->backtrace = false;
	set(out, POLICY_ALLOW, 0, POL_RULE_DEFAULT);
	if (!p || !ev)
		return invalid(out, "no policy or no event");
	why = malformed(ev);
	rc = why ? -EINVAL : decide(p, ev, out, &floor);
	if (rc) {
		invalid(out, why ? why : "address does not parse");
		floor = true; /* ward's own error: never turned into an allow */
	}
	/* an ask may end in a denial: its backtrace is taken at the stop */
	bt = out->action == POLICY_ALLOW  ? POL_BT_ALLOW
	     : out->action == POLICY_KILL ? POL_BT_KILL
					  : POL_BT_DENY;
	out->backtrace = (p->backtrace & bt) != 0;
	if (p->audit && !floor && out->action != POLICY_ALLOW) {
		out->would_deny = true;
		out->action = POLICY_ALLOW;
		out->err = 0;
	}
	return rc;
}

bool policy_names_fixed(const struct policy *p, const char *dir)
{
	size_t n = strlen(dir);

	if (p->audit || dir[0] != '/' || !strncmp(dir, "/proc", 5))
		return false; /* audit mode lets the code write anywhere */
	for (size_t i = 0; i < p->nfs; i++) {
		const struct pol_fs_rule *r = &p->fs[i];

		if (!(r->allow & (WARD_FS_CREATE | WARD_FS_DELETE)))
			continue;
		if (!r->path.bound)
			return false; /* $WORKDIR not bound: be safe */
		if (prefix_match(&r->path, dir, n))
			return false;
	}
	return true;
}
