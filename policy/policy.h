/*
 * policy.h - ward's policy engine: pure logic, no ptrace, no SQLite.
 *
 * Lifecycle:
 *   policy_load_file() / policy_load_profile() / policy_load_string()
 *   policy_set_workdir()        bind $WORKDIR before the first check
 *   policy_check()              any number of times, from one thread
 *   policy_free()
 *
 * The format is documented in docs/policy.md. Nothing jansson crosses this
 * header. All strings returned are borrowed until policy_free().
 */
#ifndef WARD_POLICY_POLICY_H
#define WARD_POLICY_POLICY_H

#include <stdbool.h>
#include <stddef.h>

#include "../common/event.h"

struct policy;

/* Where a bad policy is wrong. line/col are 1-based; 0 when unknown. */
struct policy_error {
	char file[256]; /* file name, or "profile:NAME", or the caller's label */
	int line, col;
	char where[160]; /* JSON path: "fs[3].path", or "" for the document */
	char msg[320];	 /* what is wrong and what would be valid */
};

/* Formats "file:line:col: where: msg" (parts omitted when empty/0). */
void policy_error_format(const struct policy_error *e, char *buf, size_t n);

/*
 * Load and validate a policy. On success *out owns a new policy (caller
 * frees with policy_free) and 0 is returned. Returns -EINVAL with *err
 * filled for a bad policy (syntax, unknown key, wrong type, bad value),
 * -ENOENT (file or profile not found; *err says which), -ENOMEM.
 */
int policy_load_file(const char *path, struct policy **out,
		     struct policy_error *err);
int policy_load_string(const char *text, const char *label, struct policy **out,
		       struct policy_error *err);
/* Profiles ship inside ward: "default", "node", "sh", "audit". */
int policy_load_profile(const char *name, struct policy **out,
			struct policy_error *err);
/* NULL-terminated list of the shipped profile names (static). */
const char *const *policy_profile_names(void);

void policy_free(struct policy *p); /* NULL is a no-op */

/*
 * Bind $WORKDIR (an absolute, resolved directory) in path rules. Must be
 * called before policy_check. Returns 0, -EINVAL (not absolute), -ENOMEM.
 */
int policy_set_workdir(struct policy *p, const char *workdir);

/*
 * Put one of ward's own files (the audit database, its -wal, -shm and key)
 * in the floor: any access to path, or with a trailing '*' to any path
 * that starts with the rest, and creating or deleting a name of a
 * directory above it (a rename that would move it), is denied EACCES with
 * rule "floor.record", in every mode (audit included). path is absolute.
 * Returns 0, -EINVAL, -ENOMEM.
 */
int policy_protect(struct policy *p, const char *path);

/*
 * Phases ("phases" key, docs/policy.md): the phase named name ("setup") as
 * a whole policy, the base's rules with the phase's own; owned by p (freed,
 * bound to the workdir and protected with it), or NULL when p has no such
 * phase. The base itself is the main phase. A run switches from a phase to
 * main by starting main's processes afresh under p (ward run: setup_run
 * in tools/run/cmd_run.c; sessions: tools/agent/session-worker.c),
 * never by changing the policy of running code.
 */
struct policy *policy_phase(const struct policy *p, const char *name);
/* The names of p's phases in order; NULL past the last. */
const char *policy_phase_name(const struct policy *p, size_t i);

enum policy_action {
	POLICY_ALLOW = 0,
	POLICY_DENY, /* skip the syscall, return -err */
	POLICY_KILL, /* end the whole run */
	/* an "ask" rule: the caller asks who runs the code (the tracer's
	 * opts.ask_fd), then allows or denies with err; reason is the
	 * question, rule the rule that asks. Never returned in audit mode
	 * (allowed there, would_deny set). */
	POLICY_ASK,
};

struct policy_verdict {
	enum policy_action action;
	int err;	  /* errno for POLICY_DENY (and for POLICY_ASK: the
			   * errno if the answer is no), else 0 */
	const char *rule; /* rule id ("fs[3]", its "id", or "default");
			    * borrowed until policy_free, never NULL */
	char reason[192]; /* short, human: "read of /etc/shadow: no fs rule
			    * allows read" */
	bool would_deny;  /* audit mode: the enforcing verdict was a denial,
			    * action was turned into POLICY_ALLOW */
	bool log;	  /* a "log" syscall rule matched */
	bool backtrace;	  /* take a native backtrace for this event */
};

/*
 * Decide one event. Always fills *out (fail closed: anything the policy
 * cannot judge is denied). Returns 0, or -EINVAL if the event is malformed
 * (then *out is a denial with rule "invalid-event").
 */
int policy_check(const struct policy *p, const struct ward_event *ev,
		 struct policy_verdict *out);

/*
 * True when the code cannot change which file a path through directory dir
 * names: no rule lets it create or delete a name at dir or above it (so no
 * symlink or rename can appear on the way), the policy is not in audit
 * mode, and dir is absolute and outside /proc. The tracer may then cache
 * how dir resolves. Cheap enough for the first sight of each directory.
 */
bool policy_names_fixed(const struct policy *p, const char *dir);

/* ---- what the tracer and the command need from a loaded policy ---- */

const char *policy_name(const struct policy *p);
/* The policy's JSON text exactly as loaded (for the audit record). */
const char *policy_text(const struct policy *p);
bool policy_audit_mode(const struct policy *p);
/* How long an "ask" waits for its answer before it is denied
 * ("ask_timeout", default 30 s), in milliseconds. */
long long policy_ask_timeout_ms(const struct policy *p);
/* Has the policy any "ask" rule (and is it enforcing)? */
bool policy_asks(const struct policy *p);
/* Trap the stat family (stat, lstat, newfstatat, statx, access,
 * faccessat(2), readlink(at), statfs, getxattr family)? */
bool policy_trap_stat(const struct policy *p);
/* Can the code reach IPv4/IPv6 peers beyond loopback (a connect, send
 * or bind allow rule for other addresses, or audit mode)? Without that, ward
 * gives the run a network namespace of its own with only loopback. */
bool policy_net_beyond_loopback(const struct policy *p);
/*
 * The egress proxy (net.allow_domains; domains.c, tracer/proxy.c). With
 * it the code's only way out is ward's proxy, listening inside the run's
 * network namespace on 127.0.0.1:POLICY_PROXY_PORT (the policy allows that
 * connect, rule POLICY_PROXY_RULE).
 */
#define POLICY_PROXY_PORT 3128
#define POLICY_PROXY_RULE "net.proxy"
bool policy_net_proxy(const struct policy *p);
/* Decide a request for name:port (any case, a trailing dot ignored): allow
 * by the first matching net.allow_domains entry (rule its id), else deny
 * (rule "default", err ECONNREFUSED); a name that is not a valid host name
 * is denied, rule "net.proxy-name". Pure; always fills *out. */
void policy_domain_check(const struct policy *p, const char *name, int port,
			 struct policy_verdict *out);
/* The address net.hosts / --add-host give name: 0 with *family (AF_INET or
 * AF_INET6) and addr (4 or 16 bytes) filled, or -ENOENT. */
int policy_host_lookup(const struct policy *p, const char *name, int *family,
		       unsigned char addr[16]);
/* May the proxy connect to this address? Not when it is loopback,
 * link-local (the metadata address 169.254.169.254 among them), private,
 * shared, multicast, reserved or unspecified (IPv4-mapped, NAT64 and 6to4
 * forms judged as the IPv4 address inside), unless net.allow_private
 * names it. why (may be NULL) says which range refused it. */
bool policy_proxy_may_reach(const struct policy *p, int family,
			    const unsigned char *addr, char *why, size_t n);
/* Add "NAME:IP" (ward run --add-host) to the policy's hosts, ahead of the
 * policy's own. 0, or -EINVAL with err filled, -ENOMEM. */
int policy_add_host(struct policy *p, const char *spec, char *err, size_t n);

/* Syscall names that have a raw "syscalls" rule (so the filter traps them). */
size_t policy_syscall_rule_count(const struct policy *p);
const char *policy_syscall_rule_name(const struct policy *p, size_t i);
/* Interpreter path for "python", "node", "sh"; NULL if the policy has none. */
const char *policy_interpreter(const struct policy *p, const char *lang);

/*
 * The most any rule of the policy may grant (bound.c): an upper bound for
 * kernel floors that can only allow, such as Landlock. Paths are the
 * rules' paths ($WORKDIR bound), not checked against the file system.
 */
/*
 * What exists inside the run (view.c): the host trees the run's mount
 * namespace shows (read-only) and those it must not show even below a
 * shown one. Paths are the rules' paths, absolute, not checked against the
 * file system; $WORKDIR rules are not in them (the tracer mounts the
 * workdir). host: "view": "host", the whole host ("/" is in show).
 */
struct policy_view {
	bool host;
	char **show;
	size_t nshow;
	char **hide;
	size_t nhide;
	/* ward's own files (policy_protect; also in hide): hidden by their
	 * name as well, whether they exist yet or not, since the database's
	 * journal and a key's temporary file come and go while runs start.
	 * The last name may be a glob (fnmatch). */
	char **record;
	size_t nrecord;
};

/* Fills *v (free with policy_view_free). After policy_protect. 0 or
 * -ENOMEM. */
int policy_view(const struct policy *p, struct policy_view *v);
void policy_view_free(struct policy_view *v); /* NULL: no-op */
/* "view": "host"? (audit mode's default) */
bool policy_view_host(const struct policy *p);

/* A tree bit beyond WARD_FS_*: unix sockets may be bound at or below it. */
#define POLICY_TREE_SOCK (1u << 8)

struct policy_tree {
	char *path;	 /* absolute; owned */
	unsigned access; /* WARD_FS_READ/WRITE/CREATE/DELETE/EXEC and
			  * POLICY_TREE_SOCK at or below path */
};

struct policy_port_range {
	int lo, hi; /* inclusive */
};

struct policy_bound {
	/* non-empty: no bound exists (audit mode, a "syscalls" allow
	 * rule); says why */
	char unbounded[192];
	struct policy_tree *trees; /* one per distinct path */
	size_t ntrees;
	bool connect_any, bind_any; /* TCP connect (send) / bind: some rule
				     * allows any port */
	struct policy_port_range *connect, *bind; /* else: these ports */
	size_t nconnect, nbind;
	bool scope_signal;   /* signals only within the run */
	bool scope_abstract; /* no abstract unix peer is ever allowed */
};

/* Fills *b (free with policy_bound_free). Bind $WORKDIR first. decided(nr)
 * tells whether a "syscalls" allow rule for syscall nr overrides what the
 * fs/exec/net/signal rules decide (NULL: assume every one does). Returns 0
 * or -ENOMEM (then *b is empty). */
int policy_bound(const struct policy *p, bool (*decided)(int nr),
		 struct policy_bound *b);
void policy_bound_free(struct policy_bound *b); /* NULL: no-op */

/*
 * Containment layers a run may require ("require" key, ward run
 * --require): index i names bit i of policy_required_layers(). NULL past
 * the last.
 */
const char *policy_layer_name(unsigned i);
/* The policy's "require" list as bits (see policy_layer_name). */
unsigned long long policy_required_layers(const struct policy *p);

/* Limits; 0 means "not set" (the command applies its defaults). */
struct ward_limits {
	long long wall_ms;
	long long cpu_s;
	long long memory_bytes;
	long long procs;
	long long fsize_bytes;
	long long nofile;
	long long output_bytes;
	long long events;     /* decided syscalls recorded for the run */
	long long disk_bytes; /* the temporary workdir's size (a tmpfs) */
};
void policy_limits(const struct policy *p, struct ward_limits *out);

#endif
