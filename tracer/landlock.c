/*
 * landlock.c - the policy's upper bound (policy_bound) as a Landlock
 * ruleset: a kernel floor that holds even where the supervisor cannot see
 * (a path swapped between ward's check and the kernel's open, a signal
 * sent through F_SETOWN, an abstract socket).
 *
 * Three steps:
 *   tracer_landlock_abi()   in ward, once: what the kernel offers
 *   tracer_landlock_plan()  in ward, before the clone: which rights are
 *                           handled and which each tree gets, for that ABI
 *                           (pure);
 *                           the layer record and the warning come from it
 *   tracer_landlock_build() in the child, before it drops root: the
 *                           ruleset, with paths resolved in the child's own
 *                           view of the file system (its mounts, once it
 *                           has its own); no allocation. The child applies
 *                           it (landlock_restrict_self) after no_new_privs,
 *                           before the seccomp filters.
 *
 * Landlock is an allow-list: what it handles is denied unless a rule
 * allows it. The ruleset handles what the policy can express and grants
 * the union of every allow rule, so it never denies what the policy
 * allows; the supervisor still makes the finer decisions (deny rules inside
 * allowed trees). Rights the policy does not decide (ioctl on devices) are
 * not handled.
 */
#include "tracer-int.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/log.h"

/* Debian 12's headers stop at ABI 2; these are the kernel's ABI values. */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14) /* ABI 3 */
#endif
#define LL_ACCESS_NET_BIND_TCP	  (1ULL << 0) /* ABI 4 */
#define LL_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#define LL_RULE_NET_PORT	  2
#define LL_SCOPE_ABSTRACT_UNIX	  (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL		  (1ULL << 1)

/* struct landlock_ruleset_attr as of ABI 6; older kernels get a prefix. */
struct ll_ruleset_attr {
	__u64 handled_access_fs;
	__u64 handled_access_net;
	__u64 scoped;
};

struct ll_net_port_attr {
	__u64 allowed_access;
	__u64 port;
} __attribute__((packed));

#define LL_FS_READ (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define LL_FS_MAKE                                                             \
	(LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |          \
	 LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |          \
	 LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |        \
	 LANDLOCK_ACCESS_FS_MAKE_SYM)
#define LL_FS_REMOVE                                                           \
	(LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE)
/* Rights that apply to a file itself (the rest apply beneath a dir). */
#define LL_FS_FILE                                                             \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |          \
	 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE)
#define LL_FS_ABI1 ((LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1)

int tracer_landlock_abi(void)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0,
			   LANDLOCK_CREATE_RULESET_VERSION);
	const char *cap = tracer_test_env("WARD_TEST_LANDLOCK_ABI");

	if (abi < 0)
		abi = 0; /* ENOSYS: not built; EOPNOTSUPP: not enabled */
	/* TEST ONLY: act as if the kernel offered at most this ABI (0: no
	 * Landlock), so tests can take the older-kernel paths for real. It
	 * can only lower the floor; --require still refuses a missing one. */
	if (cap && *cap) {
		char *end;
		long v = strtol(cap, &end, 10);

		if (!*end && v >= 0 && v < abi)
			abi = v;
	}
	return (int)abi;
}

/* Landlock rights for the WARD_FS_* and POLICY_TREE_SOCK bits of a tree.
 * Running a file opens it for reading, so exec needs read too. */
SPAWN_SIDE static __u64 tree_rights(unsigned access)
{
	__u64 r = 0;

	if (access & WARD_FS_READ)
		r |= LL_FS_READ;
	if (access & WARD_FS_EXEC)
		r |= LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE;
	if (access & WARD_FS_WRITE)
		r |= LANDLOCK_ACCESS_FS_WRITE_FILE |
		     LANDLOCK_ACCESS_FS_TRUNCATE;
	if (access & WARD_FS_CREATE)
		r |= LL_FS_MAKE | LANDLOCK_ACCESS_FS_REFER;
	if (access & WARD_FS_DELETE)
		r |= LL_FS_REMOVE | LANDLOCK_ACCESS_FS_REFER;
	if (access & POLICY_TREE_SOCK)
		r |= LANDLOCK_ACCESS_FS_MAKE_SOCK;
	return r;
}

static size_t ports_in(const struct policy_port_range *v, size_t n)
{
	size_t total = 0;

	for (size_t i = 0; i < n; i++)
		total += (size_t)(v[i].hi - v[i].lo + 1);
	return total;
}

static void describe_tcp(char *buf, size_t n, bool handled,
			 const struct policy_port_range *v, size_t nv)
{
	size_t ports = ports_in(v, nv);

	if (!handled)
		snprintf(buf, n, "not restricted");
	else if (!ports)
		snprintf(buf, n, "no port");
	else
		snprintf(buf, n, "%zu port%s", ports, ports == 1 ? "" : "s");
}

/* The record of the plan: "ABI 7: 58 trees; TCP connect no port, bind
 * no port; scoped: signals, abstract unix sockets". */
static void describe(struct tracer_landlock *ll)
{
	char con[32], bind[32];

	describe_tcp(con, sizeof(con),
		     ll->handled_net & LL_ACCESS_NET_CONNECT_TCP,
		     ll->bound.connect, ll->bound.nconnect);
	describe_tcp(bind, sizeof(bind),
		     ll->handled_net & LL_ACCESS_NET_BIND_TCP, ll->bound.bind,
		     ll->bound.nbind);
	snprintf(ll->detail, sizeof(ll->detail),
		 "ABI %d: %zu file trees; TCP connect %s, bind %s; scoped: "
		 "%s%s%s%s%s%s",
		 ll->abi, ll->bound.ntrees + (ll->ld_so[0] != '\0'), con, bind,
		 ll->scoped & LL_SCOPE_SIGNAL ? "signals" : "",
		 (ll->scoped & LL_SCOPE_SIGNAL) &&
				 (ll->scoped & LL_SCOPE_ABSTRACT_UNIX)
			 ? ", "
			 : "",
		 ll->scoped & LL_SCOPE_ABSTRACT_UNIX ? "abstract unix sockets"
						     : "",
		 ll->scoped ? "" : "nothing", ll->missing[0] ? "; " : "",
		 ll->missing);
}

/* What the ABI lacks that the policy would use, into ll->missing. */
static void note_missing(struct tracer_landlock *ll)
{
	const struct policy_bound *b = &ll->bound;
	bool tcp = !b->connect_any || !b->bind_any;
	bool scope = b->scope_signal || b->scope_abstract;
	int n = 0;

	ll->missing[0] = '\0';
	if (ll->abi < 3)
		n += snprintf(ll->missing + n, sizeof(ll->missing) - (size_t)n,
			      "%struncate not restricted (ABI 3)", "");
	if (ll->abi < 4 && tcp && n < (int)sizeof(ll->missing))
		n += snprintf(ll->missing + n, sizeof(ll->missing) - (size_t)n,
			      "%sno TCP port rules (ABI 4)", n ? ", " : "");
	if (ll->abi < 6 && scope && n < (int)sizeof(ll->missing))
		snprintf(ll->missing + n, sizeof(ll->missing) - (size_t)n,
			 "%sno signal or abstract-socket scoping (ABI 6)",
			 n ? ", " : "");
}

/* The PT_INTERP of the ELF file at path (the dynamic loader the kernel
 * opens for exec, which no policy rule decides), into buf; "" if none. */
void tracer_elf_interp(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf64_Ehdr eh;
	Elf64_Phdr ph;

	buf[0] = '\0';
	if (fd < 0)
		return;
	if (pread(fd, &eh, sizeof(eh), 0) == sizeof(eh) &&
	    !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
	    eh.e_ident[EI_CLASS] == ELFCLASS64 &&
	    eh.e_phentsize == sizeof(ph)) {
		for (unsigned i = 0; i < eh.e_phnum; i++) {
			off_t at = (off_t)(eh.e_phoff + i * sizeof(ph));

			if (pread(fd, &ph, sizeof(ph), at) != sizeof(ph))
				break;
			if (ph.p_type != PT_INTERP || ph.p_filesz >= n ||
			    ph.p_filesz < 2)
				continue;
			if (pread(fd, buf, ph.p_filesz, (off_t)ph.p_offset) !=
				    (ssize_t)ph.p_filesz ||
			    buf[0] != '/')
				buf[0] = '\0';
			else
				buf[ph.p_filesz - 1] = '\0';
			break;
		}
	}
	close(fd);
}

/* A syscall ward decodes and judges by its class (a "syscalls" allow rule
 * for it bypasses the rules Landlock is built from). */
static bool decided_by_ward(int nr)
{
	return tracer_syscall_desc(nr) != NULL;
}

int tracer_landlock_plan(const struct policy *p, const char *interpreter,
			 int abi, struct tracer_landlock *ll)
{
	int rc;

	memset(ll, 0, sizeof(*ll));
	ll->abi = abi;
	if (abi < 1) {
		snprintf(ll->detail, sizeof(ll->detail),
			 "not available: the kernel has no Landlock (Linux "
			 "before 5.13, or not in the lsm= list)");
		return 0;
	}
	if (abi < 2) {
		snprintf(ll->detail, sizeof(ll->detail),
			 "ABI 1 only: it makes every rename and link across "
			 "directories fail; ABI 2 (Linux 5.19) is needed");
		return 0;
	}
	rc = policy_bound(p, decided_by_ward, &ll->bound);
	if (rc)
		return rc;
	if (ll->bound.unbounded[0]) {
		snprintf(ll->detail, sizeof(ll->detail), "off: %s",
			 ll->bound.unbounded);
		return 0;
	}
	ll->handled_fs = LL_FS_ABI1 | LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		ll->handled_fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 4)
		ll->handled_net =
			(ll->bound.connect_any ? 0
					       : LL_ACCESS_NET_CONNECT_TCP) |
			(ll->bound.bind_any ? 0 : LL_ACCESS_NET_BIND_TCP);
	if (abi >= 6)
		ll->scoped =
			(ll->bound.scope_signal ? LL_SCOPE_SIGNAL : 0) |
			(ll->bound.scope_abstract ? LL_SCOPE_ABSTRACT_UNIX : 0);
	if (interpreter)
		tracer_elf_interp(interpreter, ll->ld_so, sizeof(ll->ld_so));
	ll->active = true;
	note_missing(ll);
	describe(ll);
	return 0;
}

void tracer_landlock_free(struct tracer_landlock *ll)
{
	if (ll)
		policy_bound_free(&ll->bound);
}

/* ---------------------- in the child: no allocation ---------------------- */

SPAWN_SIDE static int add_path_rule(int rs, int fd, __u64 allowed)
{
	struct landlock_path_beneath_attr pb = { .allowed_access = allowed,
						 .parent_fd = fd };

	if (!allowed)
		return 0;
	if (syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb,
		    0) < 0)
		return -errno;
	return 0;
}

/* Cut path (in buf) to its parent; false at "/". */
SPAWN_SIDE static bool to_parent(char *buf)
{
	char *slash = strrchr(buf, '/');

	if (!slash || (slash == buf && !buf[1]))
		return false;
	if (slash == buf)
		slash[1] = '\0';
	else
		*slash = '\0';
	return true;
}

/*
 * One tree. A directory gets its rights beneath it. A file gets the rights
 * that apply to a file, and its directory the rights to create and remove
 * entries (creating, deleting or renaming the file needs them there). A
 * path that does not exist is skipped, unless the rule lets the code
 * create it: then the nearest existing directory above gets the rights.
 */
SPAWN_SIDE static int add_tree(const struct tracer_landlock *ll, int rs,
			       const char *path, __u64 rights)
{
	const __u64 entries = LL_FS_MAKE | LL_FS_REMOVE |
			      LANDLOCK_ACCESS_FS_REFER;
	char buf[WARD_PATH_MAX];
	__u64 up; /* what the directory above gets */
	struct stat st;
	int fd, rc;

	rights &= ll->handled_fs;
	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		rc = add_path_rule(rs, fd, rights);
		close(fd);
		return rc;
	}
	if (fd >= 0) {
		rc = add_path_rule(rs, fd, rights & LL_FS_FILE);
		close(fd);
		if (rc)
			return rc;
		up = rights & entries;
	} else {
		/* missing: only a rule that may create it matters */
		up = rights & LL_FS_MAKE ? rights : 0;
	}
	if (!up || strlen(path) >= sizeof(buf))
		return 0;
	snprintf(buf, sizeof(buf), "%s", path);
	while (to_parent(buf)) {
		fd = open(buf, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue;
		rc = add_path_rule(rs, fd, up);
		close(fd);
		return rc;
	}
	return 0;
}

SPAWN_SIDE static int add_ports(int rs, const struct policy_port_range *v,
				size_t n, __u64 access)
{
	for (size_t i = 0; i < n; i++) {
		for (int port = v[i].lo; port <= v[i].hi; port++) {
			struct ll_net_port_attr np = { .allowed_access = access,
						       .port = (__u64)port };

			if (syscall(SYS_landlock_add_rule, rs, LL_RULE_NET_PORT,
				    &np, 0) < 0)
				return -errno;
		}
	}
	return 0;
}

SPAWN_SIDE int tracer_landlock_build(const struct tracer_landlock *ll,
				     const char **what)
{
	struct ll_ruleset_attr ra = { .handled_access_fs = ll->handled_fs,
				      .handled_access_net = ll->handled_net,
				      .scoped = ll->scoped };
	size_t size = ll->abi >= 6   ? sizeof(ra)
		      : ll->abi >= 4 ? 2 * sizeof(__u64)
				     : sizeof(__u64);
	int rs, rc = 0;

	*what = "landlock_create_ruleset";
	rs = (int)syscall(SYS_landlock_create_ruleset, &ra, size, 0);
	if (rs < 0)
		return -errno;
	*what = "landlock_add_rule (a file tree)";
	for (size_t i = 0; !rc && i < ll->bound.ntrees; i++)
		rc = add_tree(ll, rs, ll->bound.trees[i].path,
			      tree_rights(ll->bound.trees[i].access));
	if (!rc && ll->ld_so[0])
		rc = add_tree(ll, rs, ll->ld_so,
			      tree_rights(WARD_FS_EXEC | WARD_FS_READ));
	*what = "landlock_add_rule (a TCP port)";
	if (!rc && (ll->handled_net & LL_ACCESS_NET_CONNECT_TCP))
		rc = add_ports(rs, ll->bound.connect, ll->bound.nconnect,
			       LL_ACCESS_NET_CONNECT_TCP);
	if (!rc && (ll->handled_net & LL_ACCESS_NET_BIND_TCP))
		rc = add_ports(rs, ll->bound.bind, ll->bound.nbind,
			       LL_ACCESS_NET_BIND_TCP);
	if (rc) {
		close(rs);
		return rc;
	}
	return rs;
}

/* ------------------------------ in ward ------------------------------ */

#ifdef WARD_TEST_HOOKS
/* TEST ONLY: see tracer_landlock_test_fs_off. Said on stderr and in the
 * ptrace layer's record, so that no run hides it. */
static void test_switch(struct tracer *t)
{
	const char *v = tracer_test_env("WARD_TEST_SUPERVISOR_FS_OFF");
	const struct tracer_layer *pt;
	char d[200];

	if (!v || strcmp(v, "1") || !t->landlock.active)
		return;
	t->landlock.test_fs_off = true;
	warn("TEST ONLY (WARD_TEST_SUPERVISOR_FS_OFF=1): file accesses no "
	     "rule names are left to Landlock");
	pt = tracer_layer_find(t->res, "ptrace");
	snprintf(d, sizeof(d),
		 "TEST ONLY: file accesses no rule names left "
		 "to Landlock; %s",
		 pt ? pt->detail : "");
	tracer_layer_add(t->res, "ptrace", true, d);
}

void tracer_landlock_test_fs_off(const struct tracer *t,
				 const struct ward_event *ev,
				 struct policy_verdict *v)
{
	if (!t->landlock.test_fs_off || ev->cls != WARD_CLASS_FS ||
	    v->action != POLICY_DENY || strcmp(v->rule, "default"))
		return;
	v->action = POLICY_ALLOW;
	v->err = 0;
	v->rule = "test.fs-off";
}
#endif /* WARD_TEST_HOOKS */

int tracer_landlock_setup(struct tracer *t)
{
	struct tracer_landlock *ll = &t->landlock;
	int rc = tracer_landlock_plan(t->o->policy, t->o->interpreter,
				      tracer_landlock_abi(), ll);
	bool required = tracer_requires(t->o, "landlock");

	if (rc < 0) {
		snprintf(t->res->setup_error, sizeof(t->res->setup_error),
			 "landlock: %s", strerror(-rc));
		return rc;
	}
	tracer_layer_add(t->res, "landlock", ll->active, ll->detail);
#ifdef WARD_TEST_HOOKS
	test_switch(t);
#endif
	/* One line, unless the run is about to be refused for it. */
	if (!ll->active && !ll->bound.unbounded[0] && !required)
		warn("landlock %s; the supervisor still decides every file "
		     "access",
		     ll->detail);
	else if (ll->active && ll->missing[0])
		warn("landlock ABI %d: %s; the supervisor still decides these",
		     ll->abi, ll->missing);
	return 0;
}
