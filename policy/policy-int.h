/*
 * policy-int.h - internals of the policy module: the compiled form of a
 * policy (what policy_check reads), the JSON position index and the
 * helpers shared by load.c, check.c and policy.c. Private to policy/.
 */
#ifndef WARD_POLICY_POLICY_INT_H
#define WARD_POLICY_POLICY_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"

/* Built-in rule ids (verdict.rule for decisions no policy rule made). */
#define POL_RULE_DEFAULT	  "default"
#define POL_RULE_INVALID	  "invalid-event"
#define POL_RULE_EXEC_MISSING	  "exec.missing"
#define POL_RULE_NET_UNIX_MISSING "net.unix-missing"
#define POL_RULE_FD_ANONYMOUS	  "fd.anonymous"
#define POL_RULE_NET_SOCKET	  "net.socket"
#define POL_RULE_NET_CONNECTED	  "net.connected"
#define POL_RULE_CLONE		  "clone.flags"
#define POL_RULE_ARG_FLOOR	  "floor.args"
#define POL_RULE_PROC_MEM	  "proc.mem"
#define POL_RULE_RECORD		  "floor.record"
#define POL_RULE_MKNOD		  "floor.mknod"
#define POL_RULE_PROC		  "proc"
#define POL_RULE_SIGNALS	  "signals"

#define POL_FS_ALL   0x3fu /* every WARD_FS_* bit */
#define POL_FS_NBITS 6

/* Operations of a net rule (bit per enum ward_net_op). */
#define POL_OP(op) (1u << (op))

/* "backtrace" key: which enforcing outcomes take a backtrace. */
enum {
	POL_BT_DENY = 1u << 0,
	POL_BT_KILL = 1u << 1,
	POL_BT_ALLOW = 1u << 2,
};

/*
 * A path prefix as compiled from a rule. "$WORKDIR" rules keep their
 * suffix and get a bound path from policy_set_workdir(); until then they
 * never match (bound == NULL).
 */
struct pol_path {
	char *text;   /* as written (normalized: no trailing '/') */
	bool workdir; /* text starts with "$WORKDIR" */
	char *bound;  /* absolute path matched against events, or NULL */
	size_t len;   /* strlen(bound); 1 for "/" */
};

struct pol_fs_rule {
	char *id; /* "fs[3]" or the rule's "id" */
	struct pol_path path;
	unsigned allow; /* WARD_FS_* bits; exactly one of allow/deny set */
	unsigned deny;
	unsigned ask; /* an "ask" rule: its bits, in allow too (so every
		       * upper bound counts them as allowed) */
	int err;    /* errno for deny; 0 = the policy's errno */
	bool phase; /* a phase's rule: beats a base rule of the same path */
};

struct pol_net_rule {
	char *id;     /* "net.rules[2]" or its "id" */
	unsigned ops; /* POL_OP(WARD_NET_*) bits */
	int family;   /* AF_INET, AF_INET6 or AF_UNIX */
	bool has_addr;
	unsigned char addr[16]; /* network address, masked */
	int prefix;		/* CIDR prefix length */
	bool has_port;
	int port_lo, port_hi;
	bool has_path; /* unix: path prefix at a component boundary */
	struct pol_path path;
	bool has_abstract; /* unix: abstract name prefix */
	char *abstract;
	size_t abstract_len;
	bool deny; /* action */
	bool ask;  /* action "ask" (deny false: bounds count it allowed) */
	int err;   /* errno for deny and ask; 0 = default for the op */
};

/* net.allow_domains[i]: "name:port" or "*.suffix:port" (domains.c) */
struct pol_domain {
	char *id;   /* "net.allow_domains[2]" */
	char *name; /* lower case, no trailing dot; for a wildcard the
		     * suffix after "*." */
	bool wildcard;
	int port;
};

/* net.hosts and --add-host: a name the proxy resolves to addr */
struct pol_host {
	char *name; /* lower case */
	int family; /* AF_INET or AF_INET6 */
	unsigned char addr[16];
};

/* net.allow_private[i]: a CIDR of a blocked range the proxy may reach */
struct pol_cidr {
	int family;
	unsigned char addr[16]; /* masked */
	int prefix;
};

enum pol_sys_action {
	POL_SYS_ALLOW,
	POL_SYS_DENY,
	POL_SYS_KILL,
	POL_SYS_LOG,
};

struct pol_sys_rule {
	char *id;   /* "syscalls[1]" or its "id" */
	char *name; /* syscall name */
	int nr;	    /* native number (libseccomp) */
	enum pol_sys_action action;
	int err; /* for deny; default EPERM */
};

#define POL_MAX_PHASES 1 /* "setup" (load.c's phase_names) */

enum pol_lang { POL_LANG_PYTHON, POL_LANG_NODE, POL_LANG_SH, POL_NLANGS };

struct policy {
	char *text; /* the JSON text as loaded */
	char *name;
	char *description; /* may be NULL */
	bool audit;
	bool trap_stat;
	bool view_host; /* "view": "host" (else what the policy grants) */
	int err;	/* default errno for fs denials */
	char *interp[POL_NLANGS];

	struct pol_fs_rule *fs;
	size_t nfs;
	/*
	 * fs rules by the byte after their leading '/' (bucket 0: the rule
	 * "/"), so a check scans only rules that can match: indexes into fs,
	 * bucket b is fs_order[fs_bucket[b] .. fs_bucket[b + 1]). Unbound
	 * $WORKDIR rules are left out. Rebuilt by pol_fs_index().
	 */
	unsigned *fs_order;
	unsigned fs_bucket[257];

	char **exec_globs;
	char **exec_ids; /* "exec.allow[i]", then "exec.ask[i]" */
	size_t nexec;
	bool *exec_ask; /* exec_globs[i] is an exec.ask glob (a phase's
			all follow the base's) */
	int exec_err;

	uint64_t sock_families; /* bit per AF_ value below 64 */
	struct pol_net_rule *net;
	size_t nnet;
	int net_err; /* connect/send denials */
	/* the egress proxy (domains.c); has_domains: "allow_domains" given
	 * (even empty): the run gets ward's proxy */
	bool has_domains;
	struct pol_domain *domains;
	size_t ndomains;
	struct pol_host *hosts;
	size_t nhosts;
	struct pol_cidr *reach;
	size_t nreach;

	bool signals_any;
	long long ask_timeout_ms; /* "ask_timeout" */

	struct pol_sys_rule *sys;
	size_t nsys;

	struct ward_limits limits;
	unsigned long long require; /* bit per policy_layer_name() */
	unsigned backtrace;	    /* POL_BT_* */
	char *workdir;		    /* bound $WORKDIR or NULL */
	char **protect;		    /* ward's own files (policy_protect) */
	size_t nprotect;

	/* "phases": each a whole policy (the base with the phase's
	 * sections), owned here; names are static strings */
	struct policy *phase[POL_MAX_PHASES];
	const char *phase_name[POL_MAX_PHASES];
	size_t nphases;
};

/* ---- JSON position index (jpos.c) ---- */

/*
 * Maps every value of a JSON text to its 1-based line and column
 * (columns count characters, as jansson's do), keyed by its JSON path:
 * "" for the document, "fs[3].allow[1]", "net.rules[0].addr". Object
 * members also record where their key starts.
 */
struct jpos_entry {
	char *path;
	int line, col;	 /* the value */
	int kline, kcol; /* the member's key, 0 for array elements/root */
};

struct jpos {
	struct jpos_entry *v;
	size_t n, cap;
};

/*
 * Index text (len bytes; must already have parsed as JSON). Returns 0 or
 * -ENOMEM; on error *ix is still safe to jpos_free(). Values nested
 * deeper than the path buffer allows are left out (lookups give 0:0).
 */
int jpos_build(struct jpos *ix, const char *text, size_t len);
void jpos_free(struct jpos *ix);
/* Position of path's value (key == false) or key; false if not indexed. */
bool jpos_find(const struct jpos *ix, const char *path, bool key, int *line,
	       int *col);

/* ---- loading (load.c) ---- */

/*
 * Parse and validate text (len bytes, NUL-terminated) into a new policy.
 * file is the label for errors; default_name names the policy when the
 * text has no "name". Returns 0, -EINVAL (err filled), -ENOMEM.
 */
int pol_parse(const char *text, size_t len, const char *file,
	      const char *default_name, struct policy **out,
	      struct policy_error *err);

/* (Re)build p->fs_order and p->fs_bucket. 0 or -ENOMEM (index unchanged). */
int pol_fs_index(struct policy *p);

/* Binds pp to the workdir wd (or unbinds when wd is NULL). 0 or -ENOMEM. */
int pol_path_bind(struct pol_path *pp, const char *wd);

/* ---- shared helpers ---- */

/* Fills err (any argument may be NULL/0). msg is printf-style. */
__attribute__((format(printf, 6, 7))) void
pol_set_error(struct policy_error *err, const char *file, int line, int col,
	      const char *where, const char *fmt, ...);

/* ---- the proxy's names (domains.c) ---- */

/* "name:port" or "*.suffix:port" into d (d->id not set). 0, or -EINVAL
 * with why filled, -ENOMEM. */
int pol_domain_parse(const char *s, struct pol_domain *d, char *why, size_t n);
/* A host name and an address literal into h. 0, -EINVAL (why), -ENOMEM. */
int pol_host_parse(const char *name, const char *ip, struct pol_host *h,
		   char *why, size_t n);
void pol_domains_free(struct policy *p);

/* Family name ("inet", "unix", ...) to AF_ value, -1 if unknown. */
int pol_family_from_name(const char *name);
/* AF_ value to family name, NULL if it has none. */
const char *pol_family_name(int family);

#endif
