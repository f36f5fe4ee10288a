/*
 * learn.c - a least-privilege policy from recorded events (learn.h).
 */
#include "learn.h"

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "policy-int.h"

#define WHY_RUNS 4
#define WD	 "$WORKDIR"
/* The code's TMPDIR: ward runs every code with TMPDIR=$WORKDIR/tmp
 * (tools/run/cmd_run.c), so tempfile's names land there. */
#define WD_TMP WD "/tmp"

/* Which runs and events needed a rule. */
struct why {
	char *runs[WHY_RUNS];
	int nruns;
	bool more_runs;
	long long count;
	char *example;
	long long flagged; /* events the recording policy would have denied */
	char *flag_rule;   /* by this rule (the first seen) */
	long long failed;  /* events the kernel answered ENOENT (a probe) */
};

struct fs_ent {
	char *path; /* absolute, or "$WORKDIR[/...]" */
	unsigned access;
	bool dead;
	struct why why;
};

struct net_ent {
	int family; /* AF_INET, AF_INET6, AF_UNIX */
	unsigned ops;
	char *addr; /* inet */
	int port;   /* inet; -1 none */
	char *path; /* unix path or abstract name */
	bool abstract;
	struct why why;
};

struct named {
	char *name;
	struct why why;
};

struct vec {
	void *v;
	size_t n, cap, size;
};

struct learn {
	unsigned threshold;
	struct vec fs, net, exec, sys, fam;
	bool sig_any;
	struct why sig;
	char *lang, *interp, *ifamily;
	long long count;
	struct learn *setup; /* the setup phase's (learn_phase), or NULL */
};

static void *vec_push(struct vec *v)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 32;
		void *nv = realloc(v->v, cap * v->size);

		if (!nv)
			return NULL;
		v->v = nv;
		v->cap = cap;
	}
	memset((char *)v->v + v->n * v->size, 0, v->size);
	return (char *)v->v + v->n++ * v->size;
}

static void vec_sort(struct vec *v, int (*cmp)(const void *, const void *))
{
	if (v->n > 1) /* never qsort(NULL, 0, ...) */
		qsort(v->v, v->n, v->size, cmp);
}

int learn_new(unsigned threshold, struct learn **out)
{
	struct learn *l = calloc(1, sizeof(*l));

	*out = NULL;
	if (!l)
		return -ENOMEM;
	l->threshold = threshold ? threshold : 1;
	l->fs.size = sizeof(struct fs_ent);
	l->net.size = sizeof(struct net_ent);
	l->exec.size = l->sys.size = l->fam.size = sizeof(struct named);
	*out = l;
	return 0;
}

static void why_free(struct why *w)
{
	for (int i = 0; i < w->nruns; i++)
		free(w->runs[i]);
	free(w->example);
	free(w->flag_rule);
	memset(w, 0, sizeof(*w));
}

static void named_free(struct vec *v)
{
	struct named *n = v->v;

	for (size_t i = 0; i < v->n; i++) {
		free(n[i].name);
		why_free(&n[i].why);
	}
	free(v->v);
}

int learn_phase(struct learn *l, const char *name, struct learn **out)
{
	*out = NULL;
	if (strcmp(name, "setup"))
		return -EINVAL;
	if (!l->setup && learn_new(l->threshold, &l->setup) < 0)
		return -ENOMEM;
	*out = l->setup;
	return 0;
}

void learn_free(struct learn *l)
{
	struct fs_ent *f;
	struct net_ent *e;

	if (!l)
		return;
	learn_free(l->setup);
	f = l->fs.v;
	for (size_t i = 0; i < l->fs.n; i++) {
		free(f[i].path);
		why_free(&f[i].why);
	}
	free(l->fs.v);
	e = l->net.v;
	for (size_t i = 0; i < l->net.n; i++) {
		free(e[i].addr);
		free(e[i].path);
		why_free(&e[i].why);
	}
	free(l->net.v);
	named_free(&l->exec);
	named_free(&l->sys);
	named_free(&l->fam);
	why_free(&l->sig);
	free(l->lang);
	free(l->interp);
	free(l->ifamily);
	free(l);
}

static int why_run(struct why *w, const char *run)
{
	for (int i = 0; i < w->nruns; i++)
		if (!strcmp(w->runs[i], run))
			return 0;
	if (w->nruns == WHY_RUNS) {
		w->more_runs = true;
		return 0;
	}
	if (!(w->runs[w->nruns] = strdup(run)))
		return -ENOMEM;
	w->nruns++;
	return 0;
}

/* Did the kernel answer the event ENOENT: a probe for something that
 * was not there? Unknown (no result recorded) is not a probe. */
static bool failed_probe(const struct learn_src *s)
{
	return s->has_result && s->result == -ENOENT;
}

static int why_add(struct why *w, const struct learn_src *s)
{
	w->count++;
	w->failed += failed_probe(s);
	if (s->would_deny) {
		w->flagged++;
		if (!w->flag_rule && !(w->flag_rule = strdup(s->would_deny)))
			return -ENOMEM;
	}
	if (!w->example) {
		const char *t = s->target ? s->target : "";
		size_t n =
			strlen(s->run_id) + strlen(s->syscall) + strlen(t) + 48;

		if (!(w->example = malloc(n)))
			return -ENOMEM;
		snprintf(w->example, n, "run %s #%lld %s %s", s->run_id, s->seq,
			 s->syscall, t);
	}
	return why_run(w, s->run_id);
}

/* Adds src's runs, count and (if dst has none) example into dst. */
static int why_merge(struct why *dst, const struct why *src)
{
	dst->count += src->count;
	dst->failed += src->failed;
	dst->more_runs |= src->more_runs;
	dst->flagged += src->flagged;
	if (!dst->flag_rule && src->flag_rule &&
	    !(dst->flag_rule = strdup(src->flag_rule)))
		return -ENOMEM;
	if (!dst->example && src->example &&
	    !(dst->example = strdup(src->example)))
		return -ENOMEM;
	for (int i = 0; i < src->nruns; i++)
		if (why_run(dst, src->runs[i]) < 0)
			return -ENOMEM;
	return 0;
}

/* "runs a, b: 12 events, e.g. run a #47 openat /x" */
static char *why_text(const struct why *w)
{
	size_t n = 300 + (w->example ? strlen(w->example) : 0) +
		   (w->flag_rule ? strlen(w->flag_rule) : 0);
	char *s, *p;

	for (int i = 0; i < w->nruns; i++)
		n += strlen(w->runs[i]) + 2;
	if (!(s = malloc(n)))
		return NULL;
	p = s +
	    sprintf(s, "%s ", w->nruns == 1 && !w->more_runs ? "run" : "runs");
	for (int i = 0; i < w->nruns; i++)
		p += sprintf(p, "%s%s", i ? ", " : "", w->runs[i]);
	if (w->more_runs)
		p += sprintf(p, " and more");
	p += sprintf(p, ": %lld event%s", w->count, w->count == 1 ? "" : "s");
	if (w->example)
		p += sprintf(p, ", e.g. %s", w->example);
	if (w->failed && w->failed == w->count)
		p += sprintf(p,
			     "; %s ENOENT when recorded (a probe for what "
			     "was not there): allowed exactly, never "
			     "generalized",
			     w->count == 1 ? "it failed with"
					   : "all failed with");
	else if (w->failed)
		p += sprintf(p, "; %lld of them failed with ENOENT", w->failed);
	if (w->flagged)
		sprintf(p,
			"; REVIEW: the recording policy would have denied %lld "
			"of them (rule %s)",
			w->flagged, w->flag_rule);
	if (strlen(s) > 4000) /* the policy's limit for "why" */
		s[4000] = '\0';
	return s;
}

static struct named *find_named(struct vec *v, const char *name, bool add)
{
	struct named *n = v->v;

	for (size_t i = 0; i < v->n; i++)
		if (!strcmp(n[i].name, name))
			return &n[i];
	if (!add)
		return NULL;
	n = vec_push(v);
	if (!n)
		return NULL;
	if (!(n->name = strdup(name))) {
		v->n--;
		return NULL;
	}
	return n;
}

static int add_named(struct vec *v, const char *name, const struct learn_src *s)
{
	struct named *n = find_named(v, name, true);

	return n ? why_add(&n->why, s) : -ENOMEM;
}

int learn_interpreter(struct learn *l, const char *lang, const char *path)
{
	const char *base = strrchr(path, '/');
	size_t n;

	if (l->lang || !lang || !path)
		return 0; /* the first run's */
	base = base ? base + 1 : path;
	n = strlen(base);
	while (n > 1 && ((base[n - 1] >= '0' && base[n - 1] <= '9') ||
			 base[n - 1] == '.'))
		n--;
	l->lang = strdup(lang);
	l->interp = strdup(path);
	l->ifamily = strndup(base, n);
	return l->lang && l->interp && l->ifamily ? 0 : -ENOMEM;
}

/* ---- files ---- */

static bool under(const char *path, const char *dir, size_t dlen)
{
	return !strncmp(path, dir, dlen) &&
	       (path[dlen] == '/' || path[dlen] == '\0');
}

/* Parses a decimal pid at s followed by '/' or the end; its length or 0. */
static size_t pid_len(const char *s, long *pid)
{
	size_t i = 0;

	*pid = 0;
	while (s[i] >= '0' && s[i] <= '9' && i < 10)
		*pid = *pid * 10 + (s[i++] - '0');
	return i && (s[i] == '/' || s[i] == '\0') ? i : 0;
}

/* The path as a rule should name it, malloc'd. */
static char *rule_path(const struct ward_event *ev, const char *path,
		       const char *workdir)
{
	size_t wl = workdir ? strlen(workdir) : 0;
	const char *rest;
	char *out;
	long pid, tid;
	size_t n;

	if (wl > 1 && under(path, workdir, wl)) {
		out = malloc(strlen(path) - wl + sizeof(WD));
		if (out)
			sprintf(out, WD "%s", path + wl);
		return out;
	}
	if (!strncmp(path, "/proc/", 6) && (n = pid_len(path + 6, &pid))) {
		rest = path + 6 + n;
		if (pid == ev->tid && ev->tid != ev->pid) {
			if (asprintf(&out, "/proc/thread-self%s", rest) < 0)
				return NULL;
			return out;
		}
		if (pid == ev->pid) {
			if (!strncmp(rest, "/task/", 6) &&
			    (n = pid_len(rest + 6, &tid)) && tid == ev->tid) {
				if (asprintf(&out, "/proc/thread-self%s",
					     rest + 6 + n) < 0)
					return NULL;
				return out;
			}
			if (asprintf(&out, "/proc/self%s", rest) < 0)
				return NULL;
			return out;
		}
	}
	return strdup(path);
}

/* Every event that named the path failed with ENOENT: the rule is kept
 * exact, never folded (a failed probe is no reason to widen the policy). */
static bool fs_probe(const struct fs_ent *f)
{
	return f->why.count && f->why.failed == f->why.count;
}

static struct fs_ent *find_fs(struct learn *l, const char *path)
{
	struct fs_ent *f = l->fs.v;

	for (size_t i = 0; i < l->fs.n; i++)
		if (!f[i].dead && !strcmp(f[i].path, path))
			return &f[i];
	return NULL;
}

/* Takes path (malloc'd; NULL is out of memory). */
static int add_fs_owned(struct learn *l, char *path, unsigned access,
			const struct why *why, const struct learn_src *s)
{
	struct fs_ent *f;

	if (!path)
		return -ENOMEM;
	f = find_fs(l, path);

	if (!f) {
		f = vec_push(&l->fs);
		if (!f) {
			free(path);
			return -ENOMEM;
		}
		f->path = path;
	} else {
		free(path);
	}
	f->access |= access;
	return why ? why_merge(&f->why, why) : why_add(&f->why, s);
}

/* Was ev's path reached through symlinks from an absolute name of the
 * system's (not the workdir's, not /proc's, no "." or ".."), for reading
 * or running it? */
static bool via_links(const struct ward_event *ev, const char *workdir)
{
	const char *r = ev->raw;
	size_t wl = workdir ? strlen(workdir) : 0;

	if (r[0] != '/' || !strcmp(r, ev->path) ||
	    !(ev->access & (WARD_FS_READ | WARD_FS_EXEC)) ||
	    !strncmp(r, "/proc/", 6) || strstr(r, "/./") || strstr(r, "/../") ||
	    strstr(r, "//"))
		return false;
	size_t n = strlen(r);
	if ((n >= 2 && !strcmp(r + n - 2, "/.")) ||
	    (n >= 3 && !strcmp(r + n - 3, "/..")))
		return false;
	return !(wl && !strncmp(r, workdir, wl) && (r[wl] == '/' || !r[wl]));
}

static int add_fs(struct learn *l, const struct ward_event *ev,
		  const char *path, unsigned access, const char *workdir,
		  const struct learn_src *s)
{
	char *p;

	if (path[0] != '/' || !access)
		return 0; /* an fd without a name: fd.anonymous */
	p = rule_path(ev, path, workdir);
	if (!p)
		return -ENOMEM;
	return add_fs_owned(l, p, access, NULL, s);
}

/* ---- network ---- */

static int add_net(struct learn *l, const struct ward_event *ev,
		   const char *workdir, const struct learn_src *s)
{
	struct net_ent *e = l->net.v, *found = NULL;
	int family;
	char *addr = NULL, *path = NULL;
	int port = -1;
	bool abstract = false;

	if (ev->net_op == WARD_NET_LISTEN) {
		family = ev->sock_family;
	} else {
		if (!ev->sa.present)
			return 0; /* send on a connected socket */
		family = ev->sa.family == AF_INET6 && ev->sa.v4mapped
				 ? AF_INET
				 : ev->sa.family;
		if (family == AF_UNIX) {
			if (!ev->sa.abstract && !ev->exists &&
			    ev->net_op != WARD_NET_BIND)
				return 0; /* nothing there: net.unix-missing */
			abstract = ev->sa.abstract;
			path = abstract ? strdup(ev->sa.unix_path)
					: rule_path(ev, ev->sa.unix_path,
						    workdir);
			if (!path)
				return -ENOMEM;
		} else {
			if (!(addr = strdup(ev->sa.addr)))
				return -ENOMEM;
			port = ev->sa.port;
		}
	}
	for (size_t i = 0; i < l->net.n && !found; i++) {
		if (e[i].family == family && e[i].port == port &&
		    e[i].abstract == abstract && !e[i].addr == !addr &&
		    (!addr || !strcmp(e[i].addr, addr)) &&
		    !e[i].path == !path && (!path || !strcmp(e[i].path, path)))
			found = &e[i];
	}
	if (found) {
		free(addr);
		free(path);
	} else {
		found = vec_push(&l->net);
		if (!found) {
			free(addr);
			free(path);
			return -ENOMEM;
		}
		found->family = family;
		found->addr = addr;
		found->port = port;
		found->path = path;
		found->abstract = abstract;
	}
	found->ops |= POL_OP(ev->net_op);
	return why_add(&found->why, s);
}

int learn_event(struct learn *l, const struct ward_event *ev,
		const char *workdir, const struct learn_src *s)
{
	int rc = 0;
	const char *fam;

	switch (ev->cls) {
	case WARD_CLASS_FS:
		rc = add_fs(l, ev, ev->path, ev->access, workdir, s);
		/* The name the code read it by, when symlinks led elsewhere:
		 * the run's view makes the links a shown path passes through
		 * (tracer/view.c), so that the same name finds the same file
		 * again. Rules match resolved paths: this one grants nothing
		 * more. */
		if (!rc && via_links(ev, workdir))
			rc = add_fs(l, ev, ev->raw,
				    ev->access & (WARD_FS_READ | WARD_FS_EXEC),
				    workdir, s);
		if (!rc && ev->has_path2 && ev->access2)
			rc = add_fs(l, ev, ev->path2, ev->access2, workdir, s);
		break;
	case WARD_CLASS_EXEC:
		if (!ev->exists)
			return 0; /* exec.missing */
		rc = add_named(&l->exec, ev->path, s);
		break;
	case WARD_CLASS_NET:
		if (ev->net_op == WARD_NET_SOCKET) {
			fam = pol_family_name(ev->sock_family);
			rc = fam ? add_named(&l->fam, fam, s) : -EINVAL;
		} else {
			rc = add_net(l, ev, workdir, s);
		}
		break;
	case WARD_CLASS_SIGNAL:
		if (ev->sig_in_run)
			return 0;
		l->sig_any = true;
		rc = why_add(&l->sig, s);
		break;
	case WARD_CLASS_OTHER: rc = add_named(&l->sys, ev->name, s); break;
	default: return 0;
	}
	if (!rc)
		l->count++;
	return rc;
}

long long learn_count(const struct learn *l)
{
	return l->count + (l->setup ? learn_count(l->setup) : 0);
}

size_t learn_flagged(const struct learn *l)
{
	const struct fs_ent *f = l->fs.v;
	const struct net_ent *e = l->net.v;
	size_t n =
		(l->sig.flagged > 0) + (l->setup ? learn_flagged(l->setup) : 0);

	for (size_t i = 0; i < l->fs.n; i++)
		n += !f[i].dead && f[i].why.flagged;
	for (size_t i = 0; i < l->net.n; i++)
		n += e[i].why.flagged > 0;
	for (size_t i = 0; i < l->exec.n; i++)
		n += ((const struct named *)l->exec.v)[i].why.flagged > 0;
	for (size_t i = 0; i < l->sys.n; i++)
		n += ((const struct named *)l->sys.v)[i].why.flagged > 0;
	for (size_t i = 0; i < l->fam.n; i++)
		n += ((const struct named *)l->fam.v)[i].why.flagged > 0;
	return n;
}

/* ---- generalizing ---- */

/* The interpreter tree holding path ("/usr/lib/python3.11"), malloc'd, or
 * NULL. */
static char *interp_tree(const struct learn *l, const char *path)
{
	static const char *const roots[] = { "/usr/lib",     "/usr/local/lib",
					     "/usr/lib64",   "/usr/share",
					     "/usr/include", "/etc" };
	size_t fl = l->ifamily ? strlen(l->ifamily) : 0;

	if (fl < 4)
		return NULL; /* "sh" would make /usr/share/shells... a tree */
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		size_t rl = strlen(roots[i]);
		const char *name = path + rl + 1;

		if (strncmp(path, roots[i], rl) || path[rl] != '/' ||
		    strncmp(name, l->ifamily, fl))
			continue;
		return strndup(path,
			       (size_t)(name - path) + strcspn(name, "/"));
	}
	return NULL;
}

#define TREE_BITS (WARD_FS_READ | WARD_FS_STAT | WARD_FS_EXEC)

static int fold_interp_trees(struct learn *l)
{
	size_t n = l->fs.n;

	for (size_t i = 0; i < n; i++) {
		struct fs_ent *f = &((struct fs_ent *)l->fs.v)[i];
		unsigned bits = f->access & TREE_BITS;
		char *tree;
		int rc;

		if (f->dead || !bits || fs_probe(f) ||
		    !(tree = interp_tree(l, f->path)))
			continue;
		if (!strcmp(tree, f->path)) {
			free(tree);
			continue;
		}
		struct why w = { 0 }; /* f may move: add_fs_owned grows fs */

		f->access &= ~bits;
		f->dead = !f->access;
		rc = why_merge(&w, &f->why);
		if (rc) {
			free(tree);
			why_free(&w);
			return rc;
		}
		rc = add_fs_owned(l, tree, bits, &w, NULL);
		why_free(&w);
		if (rc)
			return rc;
	}
	return 0;
}

/* Components of an absolute path ("/a/b" = 2); -1 for $WORKDIR paths. */
static int depth(const char *p)
{
	int d = 0;

	if (!strncmp(p, WD, sizeof(WD) - 1))
		return -1;
	for (; *p; p++)
		d += *p == '/';
	return d;
}

/* The parent a group of paths may fold into, malloc'd, or NULL. */
static char *fold_parent(const char *p)
{
	const char *slash = strrchr(p, '/');
	char *par;

	if (!slash || !strcmp(p, WD))
		return NULL;
	par = strndup(p, (size_t)(slash - p));
	if (par && depth(par) >= 0 && depth(par) < 2) {
		free(par); /* never "/" or a top-level directory */
		return NULL;
	}
	return par;
}

/* ---- random names ---- */

/* tempfile's alphabet (Python's tempfile._RandomNameSequence). */
static bool rnd_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* 8 characters that switch between letters and digits at least three
 * times ("sjg8pc37", "1h6flbf7"), as most random names do and a word with
 * a number ("rt_2024", "v2_final") does not. */
static bool scattered(const char *r)
{
	int changes = 0, last = 0;

	for (int k = 0; k < 8; k++) {
		int cls = r[k] >= '0' && r[k] <= '9' ? 2 : r[k] != '_';

		if (!cls)
			continue;
		changes += last && cls != last;
		last = cls;
	}
	return changes >= 3;
}

/*
 * Does the name (one component, len bytes) look made at random, as
 * tempfile makes them: prefix, 8 of [a-z0-9_], suffix? "tmp" and 8 such
 * characters (tempfile's default prefix) always do; another name does
 * when the last 8 characters of a run of them look scattered (a custom
 * prefix, the bare 8 of gettempdir()'s probe, a hash or uuid).
 */
static bool random_name(const char *c, size_t len)
{
	size_t i, j;

	if (len >= 11 && !strncmp(c, "tmp", 3)) {
		for (i = 3; i < 11 && rnd_char(c[i]); i++)
			;
		if (i == 11 && (len == 11 || !rnd_char(c[11])))
			return true;
	}
	for (i = 0; i < len; i = j + 1) {
		for (j = i; j < len && rnd_char(c[j]); j++)
			;
		if (j - i >= 8 && scattered(c + j - 8))
			return true;
	}
	return false;
}

/* The directory a random name in it folds into, malloc'd, or NULL: never
 * "/" nor a top-level directory other than the run's own /tmp. */
static char *random_parent(const char *p)
{
	const char *slash = strrchr(p, '/');
	char *par;

	if (!slash || slash == p)
		return NULL;
	par = strndup(p, (size_t)(slash - p));
	if (par && depth(par) == 1 && strcmp(par, "/tmp")) {
		free(par);
		return NULL;
	}
	return par;
}

/* Moves f's access and why into the rule on dir (taken, malloc'd). */
static int move_fs(struct learn *l, size_t i, char *dir)
{
	struct fs_ent *f = &((struct fs_ent *)l->fs.v)[i];
	unsigned access = f->access;
	struct why w = { 0 }; /* f may move: add_fs_owned grows fs */
	int rc;

	if (!dir)
		return -ENOMEM;
	f->dead = true;
	rc = why_merge(&w, &f->why);
	if (!rc)
		rc = add_fs_owned(l, dir, access, &w, NULL);
	else
		free(dir);
	why_free(&w);
	return rc;
}

/*
 * Names made at random differ in every run: a policy naming them allows
 * nothing the next run does. Everything under the code's TMPDIR folds
 * into $WORKDIR/tmp; elsewhere, a random name the code created, and all
 * below it, folds into the directory it was created in (the union of
 * their access). Failed probes stay exact.
 */
static int fold_random(struct learn *l)
{
	size_t n = l->fs.n, m = 0, tl = strlen(WD_TMP);
	char **rnd = calloc(n + 1, sizeof(*rnd));
	int rc = 0;

	if (!rnd)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct fs_ent *f = &((struct fs_ent *)l->fs.v)[i];
		const char *c = strrchr(f->path, '/');

		if (f->dead || fs_probe(f) || !(f->access & WARD_FS_CREATE) ||
		    !c || !random_name(c + 1, strlen(c + 1)))
			continue;
		if (!(rnd[m++] = strdup(f->path))) {
			rc = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < n && !rc; i++) {
		struct fs_ent *f = &((struct fs_ent *)l->fs.v)[i];
		const char *best = NULL;

		if (f->dead || fs_probe(f))
			continue;
		if (!strncmp(f->path, WD_TMP "/", tl + 1)) {
			rc = move_fs(l, i, strdup(WD_TMP));
			continue;
		}
		for (size_t k = 0; k < m; k++)
			if (under(f->path, rnd[k], strlen(rnd[k])) &&
			    (!best || strlen(rnd[k]) < strlen(best)))
				best = rnd[k];
		char *dir = best ? random_parent(best) : NULL;
		if (dir)
			rc = move_fs(l, i, dir);
	}
out:
	for (size_t k = 0; k < m; k++)
		free(rnd[k]);
	free(rnd);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One pass: folds the children of every directory with more than
 * threshold of them. *folded says whether anything changed. */
static int fold_once(struct learn *l, bool *folded)
{
	size_t n = l->fs.n, m = 0;
	char **par = calloc(n + 1, sizeof(*par));
	int rc = 0;

	*folded = false;
	if (!par)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct fs_ent *f = &((struct fs_ent *)l->fs.v)[i];
		char *p = f->dead || fs_probe(f) ? NULL : fold_parent(f->path);

		if (p)
			par[m++] = p;
	}
	qsort(par, m, sizeof(*par), cmp_str);
	for (size_t i = 0; i < m && !rc;) {
		size_t j = i;
		unsigned access = 0;
		struct why w = { 0 };

		while (j < m && !strcmp(par[j], par[i]))
			j++;
		if (j - i > l->threshold) {
			for (size_t k = 0; k < l->fs.n && !rc; k++) {
				struct fs_ent *f =
					&((struct fs_ent *)l->fs.v)[k];
				char *p;

				if (f->dead || fs_probe(f) ||
				    !(p = fold_parent(f->path)))
					continue;
				if (!strcmp(p, par[i])) {
					access |= f->access;
					rc = why_merge(&w, &f->why);
					f->dead = true;
				}
				free(p);
			}
			if (!rc)
				rc = add_fs_owned(l, strdup(par[i]), access, &w,
						  NULL);
			*folded = true;
		}
		why_free(&w);
		i = j;
	}
	for (size_t i = 0; i < m; i++)
		free(par[i]);
	free(par);
	return rc;
}

/* Drops rules whose access an ancestor rule grants. */
static int drop_covered(struct learn *l)
{
	struct fs_ent *f = l->fs.v;

	for (size_t i = 0; i < l->fs.n; i++) {
		if (f[i].dead)
			continue;
		for (size_t k = 0; k < l->fs.n; k++) {
			size_t al = strlen(f[k].path);

			if (k == i || f[k].dead || strlen(f[i].path) <= al ||
			    !under(f[i].path, f[k].path, al) ||
			    (f[i].access & ~f[k].access))
				continue;
			if (why_merge(&f[k].why, &f[i].why) < 0)
				return -ENOMEM;
			f[i].dead = true;
			break;
		}
	}
	return 0;
}

static int generalize(struct learn *l)
{
	bool folded = true;
	int rc = fold_random(l);

	if (!rc)
		rc = fold_interp_trees(l);
	while (!rc && folded)
		rc = fold_once(l, &folded);
	return rc ? rc : drop_covered(l);
}

/* ---- writing ---- */

static json_t *access_json(unsigned access)
{
	static const char *const names[] = { "read",   "write", "create",
					     "delete", "exec",	"stat" };
	json_t *a = json_array();

	for (int b = 0; a && b < 6; b++)
		if (access & (1u << b))
			json_array_append_new(a, json_string(names[b]));
	return a;
}

static int set_why(json_t *o, const struct why *w)
{
	char *t = why_text(w);

	if (!t)
		return -ENOMEM;
	json_object_set_new(o, "why", json_string(t));
	free(t);
	return 0;
}

static int cmp_fs(const void *a, const void *b)
{
	return strcmp(((const struct fs_ent *)a)->path,
		      ((const struct fs_ent *)b)->path);
}

static int cmp_named(const void *a, const void *b)
{
	return strcmp(((const struct named *)a)->name,
		      ((const struct named *)b)->name);
}

/* Appends "  <key>: [\n    elem,\n    ...\n  ]" with each element on one
 * line, to buf (a FILE from open_memstream). */
static void put_array(FILE *f, const char *key, json_t *arr, bool last)
{
	size_t i;
	json_t *e;

	fprintf(f, "  \"%s\": [", key);
	json_array_foreach(arr, i, e)
	{
		char *s = json_dumps(e, JSON_PRESERVE_ORDER | JSON_COMPACT);

		fprintf(f, "%s\n    %s", i ? "," : "", s ? s : "null");
		free(s);
	}
	fprintf(f, "%s]%s\n", json_array_size(arr) ? "\n  " : "",
		last ? "" : ",");
}

static void put_value(FILE *f, const char *key, json_t *v, bool last)
{
	char *s = json_dumps(v, JSON_PRESERVE_ORDER | JSON_COMPACT |
					JSON_ENCODE_ANY);

	fprintf(f, "  \"%s\": %s%s\n", key, s ? s : "null", last ? "" : ",");
	free(s);
}

static void put_str(FILE *f, const char *key, const char *s)
{
	json_t *v = json_string(s);

	put_value(f, key, v, false);
	json_decref(v);
}

static json_t *net_rules_json(struct learn *l)
{
	static const char *const ops[] = { [WARD_NET_CONNECT] = "connect",
					   [WARD_NET_BIND] = "bind",
					   [WARD_NET_LISTEN] = "listen",
					   [WARD_NET_SEND] = "send" };
	struct net_ent *e = l->net.v;
	json_t *rules = json_array();

	for (size_t i = 0; rules && i < l->net.n; i++) {
		json_t *r = json_object(), *o = json_array();

		for (int op = WARD_NET_CONNECT; op <= WARD_NET_SEND; op++)
			if (e[i].ops & POL_OP(op))
				json_array_append_new(o, json_string(ops[op]));
		json_object_set_new(r, "ops", o);
		json_object_set_new(r, "family",
				    json_string(pol_family_name(e[i].family)));
		if (e[i].addr)
			json_object_set_new(r, "addr", json_string(e[i].addr));
		if (e[i].port >= 0)
			json_object_set_new(r, "port", json_integer(e[i].port));
		if (e[i].path)
			json_object_set_new(r,
					    e[i].abstract ? "abstract" : "path",
					    json_string(e[i].path));
		if (set_why(r, &e[i].why) < 0) {
			json_decref(r);
			json_decref(rules);
			return NULL;
		}
		json_array_append_new(rules, r);
	}
	return rules;
}

/* "a: why; b: why" for the exec object's single "why". */
static char *exec_why(struct learn *l)
{
	struct named *n = l->exec.v;
	size_t cap = 1;
	char *s;

	for (size_t i = 0; i < l->exec.n; i++) {
		char *t = why_text(&n[i].why);

		if (!t)
			return NULL;
		cap += strlen(n[i].name) + strlen(t) + 4;
		free(t);
	}
	if (!(s = calloc(1, cap)))
		return NULL;
	for (size_t i = 0; i < l->exec.n; i++) {
		char *t = why_text(&n[i].why);

		if (!t) {
			free(s);
			return NULL;
		}
		sprintf(s + strlen(s), "%s%s: %s", i ? "; " : "", n[i].name, t);
		free(t);
	}
	if (strlen(s) > 4000)
		s[4000] = '\0';
	return s;
}

/* The sections a phase may have too (fs, exec, net), generalized and
 * sorted: new references, or -ENOMEM / generalize's error. */
struct sections {
	json_t *fs, *execo, *net;
};

static void sections_free(struct sections *x)
{
	json_decref(x->fs);
	json_decref(x->execo);
	json_decref(x->net);
	memset(x, 0, sizeof(*x));
}

static int sections_of(struct learn *l, struct sections *x)
{
	json_t *ex = json_array(), *socks = json_array(), *rules = NULL;
	char *w = NULL;
	int rc = generalize(l);

	x->fs = json_array();
	x->execo = json_object();
	x->net = json_object();
	if (rc || !x->fs || !x->execo || !x->net || !ex || !socks)
		goto out;
	rc = -ENOMEM;
	vec_sort(&l->fs, cmp_fs);
	vec_sort(&l->exec, cmp_named);
	vec_sort(&l->fam, cmp_named);
	for (size_t i = 0; i < l->fs.n; i++) {
		struct fs_ent *e = &((struct fs_ent *)l->fs.v)[i];
		json_t *r;

		if (e->dead)
			continue;
		r = json_pack("{s:s, s:o}", "path", e->path, "allow",
			      access_json(e->access));
		if (!r || set_why(r, &e->why) < 0) {
			json_decref(r);
			goto out;
		}
		json_array_append_new(x->fs, r);
	}
	for (size_t i = 0; i < l->exec.n; i++)
		json_array_append_new(
			ex, json_string(((struct named *)l->exec.v)[i].name));
	json_object_set_new(x->execo, "allow", json_incref(ex));
	if (l->exec.n) {
		if (!(w = exec_why(l)))
			goto out;
		json_object_set_new(x->execo, "why", json_string(w));
	}
	for (size_t i = 0; i < l->fam.n; i++)
		json_array_append_new(
			socks, json_string(((struct named *)l->fam.v)[i].name));
	if (!(rules = net_rules_json(l)))
		goto out;
	json_object_set_new(x->net, "socket", json_incref(socks));
	json_object_set_new(x->net, "rules", json_incref(rules));
	rc = 0;
out:
	free(w);
	json_decref(ex);
	json_decref(socks);
	json_decref(rules);
	if (rc)
		sections_free(x);
	return rc;
}

/* "phases": {"setup": {...}}: what the setup phase did beyond the code's
 * rules, one fs rule per line as at the top level. */
static int put_setup(FILE *f, struct learn *ph)
{
	struct sections x;
	size_t i;
	json_t *e;
	char *s;
	int rc = sections_of(ph, &x);

	if (rc)
		return rc;
	fprintf(f, "  \"phases\": {\"setup\": {\n    \"description\": "
		   "\"what the runs' setup did (ward run --setup)\",\n"
		   "    \"fs\": [");
	json_array_foreach(x.fs, i, e)
	{
		s = json_dumps(e, JSON_PRESERVE_ORDER | JSON_COMPACT);
		fprintf(f, "%s\n      %s", i ? "," : "", s ? s : "null");
		free(s);
	}
	fprintf(f, "%s],\n", json_array_size(x.fs) ? "\n    " : "");
	s = json_dumps(x.execo, JSON_PRESERVE_ORDER | JSON_COMPACT);
	fprintf(f, "    \"exec\": %s,\n", s ? s : "null");
	free(s);
	s = json_dumps(x.net, JSON_PRESERVE_ORDER | JSON_COMPACT);
	fprintf(f, "    \"net\": %s\n  }},\n", s ? s : "null");
	free(s);
	sections_free(&x);
	return 0;
}

int learn_policy_text(struct learn *l, const char *name,
		      const char *description, char **out)
{
	json_t *sys = json_array(), *interp = json_object();
	struct sections x = { 0 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = NULL;
	int rc = sections_of(l, &x);

	*out = NULL;
	if (rc || !sys || !interp)
		goto out;
	rc = -ENOMEM;
	for (size_t i = 0; i < l->sys.n; i++) {
		struct named *n = &((struct named *)l->sys.v)[i];
		json_t *r = json_pack("{s:s, s:s}", "name", n->name, "action",
				      "allow");

		if (!r || set_why(r, &n->why) < 0) {
			json_decref(r);
			goto out;
		}
		json_array_append_new(sys, r);
	}
	if (l->lang)
		json_object_set_new(interp, l->lang, json_string(l->interp));

	if (!(f = open_memstream(&buf, &len)))
		goto out;
	fprintf(f, "{\n  \"version\": 1,\n");
	put_str(f, "name", name);
	put_str(f, "description", description);
	fprintf(f, "  \"mode\": \"enforce\",\n");
	put_value(f, "interpreters", interp, false);
	put_array(f, "fs", x.fs, false);
	put_value(f, "exec", x.execo, false);
	put_value(f, "net", x.net, false);
	fprintf(f, "  \"signals\": \"%s\",\n", l->sig_any ? "any" : "run");
	rc = l->setup ? put_setup(f, l->setup) : 0;
	put_array(f, "syscalls", sys, true);
	fprintf(f, "}\n");
	if (fclose(f) != 0 || rc) {
		free(buf);
		rc = rc ? rc : -ENOMEM;
		goto out;
	}
	*out = buf;
	rc = 0;
out:
	sections_free(&x);
	json_decref(sys);
	json_decref(interp);
	return rc;
}
