/*
 * show-filter.c - see show-filter.h.
 */
#include "tools/review/show-filter.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "common/errnames.h"
#include "common/json.h"
#include "common/log.h"
#include "tools/review/view.h"

/* ------------------------------ limits ------------------------------ */

int show_filter_init(struct show_filter *f, size_t max)
{
	*f = (struct show_filter){ 0 };
	f->syscalls = calloc(max + 1, sizeof(*f->syscalls));
	f->cap_syscalls = max + 1;
	f->paths = calloc(max + 1, sizeof(*f->paths));
	f->pids = calloc(max + 1, sizeof(*f->pids));
	f->procs = calloc(max + 1, sizeof(*f->procs));
	if (!f->syscalls || !f->paths || !f->pids || !f->procs) {
		show_filter_free(f);
		return -ENOMEM;
	}
	return 0;
}

void show_filter_free(struct show_filter *f)
{
	free(f->syscalls);
	free(f->paths);
	free(f->pids);
	free(f->procs);
	*f = (struct show_filter){ 0 };
}

static bool syscall_word(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
		      *s == '_'))
			return false;
	return true;
}

static int add_number(const char *opt, const char *arg, long long *list,
		      size_t *n)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (errno || end == arg || *end || v < 1 || v > 1LL << 31) {
		warn("show: %s: '%s' is not a %s (see ward show --help)", opt,
		     arg, !strcmp(opt, "--pid") ? "pid" : "process serial");
		return -1;
	}
	list[(*n)++] = v;
	return 0;
}

int show_filter_add(struct show_filter *f, const char *opt, char *arg)
{
	char *save = NULL;
	size_t before = f->n_syscalls;

	if (!strcmp(opt, "--pid"))
		return add_number(opt, arg, f->pids, &f->n_pids);
	if (!strcmp(opt, "--proc"))
		return add_number(opt, arg, f->procs, &f->n_procs);
	if (!strcmp(opt, "--path")) {
		if (!*arg) {
			warn("show: --path needs a pattern (e.g. '/etc/*')");
			return -1;
		}
		f->paths[f->n_paths++] = arg;
		return 0;
	}
	for (char *s = strtok_r(arg, ",", &save); s;
	     s = strtok_r(NULL, ",", &save)) {
		if (!syscall_word(s)) {
			warn("show: --syscall: '%s' is not a syscall name "
			     "(e.g. openat, connect, execve)",
			     s);
			return -1;
		}
		if (f->n_syscalls + 1 >= f->cap_syscalls) {
			size_t cap = 2 * f->cap_syscalls + 8;
			const char **v = realloc(f->syscalls, cap * sizeof(*v));

			if (!v) {
				warn("show: out of memory");
				return -1;
			}
			f->syscalls = v;
			f->cap_syscalls = cap;
		}
		f->syscalls[f->n_syscalls++] = s;
	}
	if (f->n_syscalls == before) {
		warn("show: --syscall needs a syscall name");
		return -1;
	}
	return 0;
}

bool show_filter_active(const struct show_filter *f)
{
	return f->denied || f->n_syscalls || f->n_paths || f->n_pids ||
	       f->n_procs;
}

bool show_filter_needs_procs(const struct show_filter *f)
{
	return f->n_procs > 0;
}

/* ---------------------------- processes ---------------------------- */

struct tproc {
	struct audit_proc_row row; /* strings owned */
	int owner;		   /* index of its process (itself, unless a
				    * thread) */
	int parent;		   /* index of the parent process, or -1 */
	long long events, denied, would; /* its own, counted through f */
	int first_child, next_sibling;	 /* processes, by serial */
	int first_thread, next_thread;
};

struct show_procs {
	struct tproc *v;
	size_t n, cap;
	long long stray_events; /* events of no recorded process */
};

static int by_serial(const struct show_procs *p, int serial)
{
	size_t lo = 0, hi = p->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->v[mid].row.p.serial == serial)
			return (int)mid;
		if (p->v[mid].row.p.serial < serial)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* The serial of the process serial belongs to (a thread's process), or
 * serial itself when unknown. */
static int owner_serial(const struct show_procs *p, int serial)
{
	int i = p ? by_serial(p, serial) : -1;

	return i < 0 ? serial : p->v[p->v[i].owner].row.p.serial;
}

static bool is_thread(const struct audit_proc_row *r)
{
	return r->p.kind && !strcmp(r->p.kind, "thread");
}

static bool proc_matches(const struct show_filter *f, int serial)
{
	for (size_t i = 0; i < f->n_procs; i++)
		if (serial == f->procs[i] ||
		    owner_serial(f->owners, serial) == f->procs[i])
			return true;
	return false;
}

static bool one_of(const long long *list, size_t n, long long a, long long b)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == a || list[i] == b)
			return true;
	return false;
}

bool show_filter_event(const struct show_filter *f, const struct audit_event *e)
{
	bool match = !f->n_syscalls;

	if (f->denied && !e->would_deny && e->decision &&
	    !strcmp(e->decision, "allow"))
		return false;
	for (size_t i = 0; i < f->n_syscalls && !match; i++)
		match = e->syscall && !strcmp(e->syscall, f->syscalls[i]);
	if (!match)
		return false;
	match = !f->n_paths;
	for (size_t i = 0; i < f->n_paths && !match; i++)
		match = (e->target && !fnmatch(f->paths[i], e->target, 0)) ||
			(e->raw && !fnmatch(f->paths[i], e->raw, 0));
	if (!match)
		return false;
	if (f->n_pids && !one_of(f->pids, f->n_pids, e->pid, e->tid))
		return false;
	return !f->n_procs || proc_matches(f, e->proc_serial);
}

bool show_filter_proc(const struct show_filter *f,
		      const struct audit_proc_row *p)
{
	if (f->denied || f->n_syscalls || f->n_paths)
		return false;
	if (f->n_pids && !one_of(f->pids, f->n_pids, p->p.pid, p->p.tgid))
		return false;
	return !f->n_procs || proc_matches(f, p->p.serial);
}

bool show_filter_item(const struct show_filter *f, const struct audit_item *it)
{
	if (!show_filter_active(f))
		return true;
	if (it->kind == AUDIT_ITEM_EVENT)
		return show_filter_event(f, &it->event->e);
	if (it->kind == AUDIT_ITEM_OUTPUT)
		return false;
	return show_filter_proc(f, it->proc);
}

static void describe_list(FILE *out, const char *what, const char **s,
			  const long long *v, size_t n)
{
	if (!n)
		return;
	fprintf(out, " %s ", what);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputs(i < n - 1 ? ", " : n > 2 ? ", or " : " or ", out);
		if (s)
			view_str(out, s[i]);
		else
			fprintf(out, "%lld", v[i]);
	}
}

void show_filter_describe(FILE *out, const struct show_filter *f)
{
	fputs(f->denied ? "only denied, killed and would-be-denied calls"
			: "only calls",
	      out);
	describe_list(out, "to", f->syscalls, NULL, f->n_syscalls);
	describe_list(out, "on paths or addresses matching", f->paths, NULL,
		      f->n_paths);
	describe_list(out, "of pid or tid", NULL, f->pids, f->n_pids);
	describe_list(out, "of process", NULL, f->procs, f->n_procs);
	if (!f->denied && !f->n_syscalls && !f->n_paths)
		fputs(" (and process starts, execs and exits)", out);
	fputc('\n', out);
}

static json_t *str_list(const char **s, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, view_json_str(s[i]));
	return a;
}

static json_t *int_list(const long long *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_integer(v[i]));
	return a;
}

json_t *show_filter_json(const struct show_filter *f)
{
	json_t *o = json_object();

	if (f->denied)
		json_object_set_new(o, "denied", json_true());
	if (f->n_syscalls)
		json_object_set_new(o, "syscalls",
				    str_list(f->syscalls, f->n_syscalls));
	if (f->n_paths)
		json_object_set_new(o, "paths", str_list(f->paths, f->n_paths));
	if (f->n_pids)
		json_object_set_new(o, "pids", int_list(f->pids, f->n_pids));
	if (f->n_procs)
		json_object_set_new(o, "procs", int_list(f->procs, f->n_procs));
	return o;
}

/* ------------------------- loading processes ------------------------- */

static char *dup_or_null(const char *s, bool *oom)
{
	char *d = s ? strdup(s) : NULL;

	if (s && !d)
		*oom = true;
	return d;
}

static int keep_proc(const struct audit_proc_row *r, void *arg)
{
	struct show_procs *p = arg;
	struct tproc *t;
	bool oom = false;

	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 16;
		struct tproc *v = realloc(p->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->v = v;
		p->cap = cap;
	}
	t = &p->v[p->n];
	*t = (struct tproc){ .row = *r,
			     .first_child = -1,
			     .next_sibling = -1,
			     .first_thread = -1,
			     .next_thread = -1,
			     .parent = -1 };
	t->row.p.kind = dup_or_null(r->p.kind, &oom);
	t->row.p.exe = dup_or_null(r->p.exe, &oom);
	t->row.p.argv_json = dup_or_null(r->p.argv_json, &oom);
	p->n++;
	return oom ? -ENOMEM : 0;
}

/* Owners and parents, and the children and thread lists (by serial). */
static void link_procs(struct show_procs *p)
{
	int *last_child = calloc(p->n + 1, sizeof(int));
	int *last_thread = calloc(p->n + 1, sizeof(int));

	for (size_t i = 0; i < p->n; i++) {
		struct tproc *t = &p->v[i];
		int par = by_serial(p, t->row.p.parent_serial);

		t->owner = (int)i;
		if (is_thread(&t->row)) {
			/* its process: the latest before it with pid tgid */
			t->owner = par >= 0 ? p->v[par].owner : (int)i;
			for (size_t j = i; j-- > 0;)
				if (!is_thread(&p->v[j].row) &&
				    p->v[j].row.p.pid == t->row.p.tgid) {
					t->owner = (int)j;
					break;
				}
		} else if (par >= 0) {
			t->parent = p->v[par].owner;
		}
	}
	if (!last_child || !last_thread) {
		free(last_child);
		free(last_thread);
		return; /* no lists: every process shows as a root */
	}
	for (size_t i = 0; i < p->n; i++) {
		struct tproc *t = &p->v[i];
		int up = is_thread(&t->row) ? t->owner : t->parent;

		if (up < 0 || up == (int)i)
			continue;
		if (is_thread(&t->row)) {
			if (p->v[up].first_thread < 0)
				p->v[up].first_thread = (int)i;
			else
				p->v[last_thread[up]].next_thread = (int)i;
			last_thread[up] = (int)i;
		} else {
			if (p->v[up].first_child < 0)
				p->v[up].first_child = (int)i;
			else
				p->v[last_child[up]].next_sibling = (int)i;
			last_child[up] = (int)i;
		}
	}
	free(last_child);
	free(last_thread);
}

int show_procs_load(struct audit *a, const char *run_id,
		    struct show_procs **out)
{
	struct show_procs *p = calloc(1, sizeof(*p));
	int r = p ? audit_processes_each(a, run_id, keep_proc, p) : -ENOMEM;

	if (r) {
		show_procs_free(p);
		return r;
	}
	link_procs(p);
	*out = p;
	return 0;
}

void show_procs_free(struct show_procs *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++) {
		free((char *)p->v[i].row.p.kind);
		free((char *)p->v[i].row.p.exe);
		free((char *)p->v[i].row.p.argv_json);
	}
	free(p->v);
	free(p);
}

/* ------------------------------- tree ------------------------------- */

#define TREE_ARGV 60 /* bytes of a process's argv shown */

struct count_ctx {
	struct show_procs *p;
	const struct show_filter *f;
};

static int count_event(const struct audit_event_row *ev, void *arg)
{
	struct count_ctx *c = arg;
	const struct audit_event *e = &ev->e;
	int i;

	if (!show_filter_event(c->f, e))
		return 0;
	i = by_serial(c->p, e->proc_serial);
	if (i < 0) {
		c->p->stray_events++;
		return 0;
	}
	c->p->v[i].events++;
	if (e->decision && strcmp(e->decision, "allow"))
		c->p->v[i].denied++;
	else if (e->would_deny)
		c->p->v[i].would++;
	return 0;
}

static int count_all(struct audit *a, const char *run_id, struct show_procs *p,
		     const struct show_filter *f)
{
	struct count_ctx c = { p, f };

	p->stray_events = 0;
	for (size_t i = 0; i < p->n; i++)
		p->v[i].events = p->v[i].denied = p->v[i].would = 0;
	return audit_events_each(a, run_id, count_event, &c);
}

/* A process's counts with its threads'. */
static void totals(const struct show_procs *p, int i, long long n[3])
{
	n[0] = p->v[i].events;
	n[1] = p->v[i].denied;
	n[2] = p->v[i].would;
	for (int t = p->v[i].first_thread; t >= 0; t = p->v[t].next_thread) {
		n[0] += p->v[t].events;
		n[1] += p->v[t].denied;
		n[2] += p->v[t].would;
	}
}

static void print_end(const struct audit_proc_row *r)
{
	char sig[32];

	if (!r->exited)
		fputs(", no exit recorded", stdout);
	else if (r->signal > 0)
		printf(", killed by %s",
		       view_signame(r->signal, sig, sizeof(sig)));
	else
		printf(", exit %d", r->exit_code);
}

static void print_counts(const long long n[3])
{
	printf(", %lld event%s", n[0], n[0] == 1 ? "" : "s");
	if (n[1])
		printf(", %lld denied", n[1]);
	if (n[2])
		printf(", %lld would be denied", n[2]);
}

/* prefix: the tree's lines above this depth ("│   " or "    " each). */
static void print_node(const struct show_procs *p, int i,
		       struct ward_strbuf *prefix, bool root, bool last,
		       int root_nspid)
{
	const struct tproc *t = &p->v[i];
	struct ward_strbuf sb = WARD_STRBUF_INIT;
	size_t keep = prefix->len;
	long long n[3];

	fputs(ward_strbuf_str(prefix), stdout);
	if (!root)
		fputs(last ? "\xe2\x94\x94\xe2\x94\x80\xe2\x94\x80 "
			   : "\xe2\x94\x9c\xe2\x94\x80\xe2\x94\x80 ",
		      stdout);
	printf("[%d] ", t->row.p.serial);
	if (t->row.p.argv_json || t->row.p.exe) {
		view_argv_line(&sb,
			       t->row.p.argv_json ? t->row.p.argv_json : "[]");
		view_text_cut(stdout, ward_strbuf_str(&sb), sb.len, TREE_ARGV);
		fputs("  (", stdout);
		view_str(stdout, t->row.p.exe);
		fputs(")", stdout);
	} else {
		fputs("(never exec'd)", stdout);
	}
	ward_strbuf_free(&sb);
	printf("  pid %d", (int)t->row.p.pid);
	if (t->row.p.serial == 1 && root_nspid)
		printf(" (ns pid %d)", root_nspid);
	print_end(&t->row);
	totals(p, i, n);
	print_counts(n);
	fputc('\n', stdout);
	if (!root)
		ward_strbuf_puts(prefix, last ? "    " : "\xe2\x94\x82   ");
	for (int c = t->first_thread; c >= 0; c = p->v[c].next_thread) {
		long long tn[3] = { p->v[c].events, p->v[c].denied,
				    p->v[c].would };
		bool end = p->v[c].next_thread < 0 && t->first_child < 0;

		fputs(ward_strbuf_str(prefix), stdout);
		fputs(end ? "\xe2\x94\x94\xe2\x94\x80 "
			  : "\xe2\x94\x9c\xe2\x94\x80 ",
		      stdout);
		printf("thread [%d] tid %d", p->v[c].row.p.serial,
		       (int)p->v[c].row.p.pid);
		print_end(&p->v[c].row);
		print_counts(tn);
		fputc('\n', stdout);
	}
	for (int c = t->first_child; c >= 0; c = p->v[c].next_sibling)
		print_node(p, c, prefix, false, p->v[c].next_sibling < 0,
			   root_nspid);
	prefix->len = keep;
	if (prefix->buf)
		prefix->buf[keep] = '\0';
}

static bool is_root(const struct show_procs *p, size_t i)
{
	const struct tproc *t = &p->v[i];

	if (is_thread(&t->row))
		return t->owner == (int)i; /* a thread without its process */
	return t->parent < 0 || t->parent == (int)i;
}

int show_tree_text(struct audit *a, const char *run_id, struct show_procs *p,
		   const struct show_filter *f, int root_nspid)
{
	struct ward_strbuf prefix = WARD_STRBUF_INIT;
	int r = count_all(a, run_id, p, f);

	if (r)
		return r;
	printf("process tree ([N] process serial, as in the timeline; "
	       "threads under their process;\ncounts %sinclude the "
	       "process's threads)\n",
	       show_filter_active(f) ? "of the matching events " : "");
	if (show_filter_active(f))
		show_filter_describe(stdout, f);
	for (size_t i = 0; i < p->n; i++)
		if (is_root(p, i))
			print_node(p, (int)i, &prefix, true, true, root_nspid);
	if (!p->n)
		puts("(no processes recorded)");
	if (p->stray_events)
		printf("(%lld event%s of no recorded process)\n",
		       p->stray_events, p->stray_events == 1 ? "" : "s");
	ward_strbuf_free(&prefix);
	return 0;
}

static json_t *node_json(const struct show_procs *p, int i)
{
	const struct tproc *t = &p->v[i];
	const struct audit_proc_row *r = &t->row;
	json_t *o = json_object(), *threads = json_array(),
	       *children = json_array();
	long long n[3] = { t->events, t->denied, t->would };

	json_object_set_new(o, "serial", json_integer(r->p.serial));
	json_object_set_new(o, "kind", view_json_str(r->p.kind));
	json_object_set_new(o, "pid", json_integer(r->p.pid));
	json_object_set_new(o, "tgid", json_integer(r->p.tgid));
	json_object_set_new(o, "ppid", json_integer(r->p.ppid));
	json_object_set_new(o, "parent_serial",
			    r->p.parent_serial > 0
				    ? json_integer(r->p.parent_serial)
				    : json_null());
	json_object_set_new(o, "exe", view_json_str(r->p.exe));
	json_object_set_new(o, "argv", view_json_parsed(r->p.argv_json));
	json_object_set_new(o, "start_ns", json_integer(r->p.start_ns));
	json_object_set_new(o, "exit_code",
			    r->exited ? json_integer(r->exit_code)
				      : json_null());
	json_object_set_new(o, "signal",
			    r->exited ? json_integer(r->signal) : json_null());
	if (!is_thread(r))
		totals(p, i, n);
	json_object_set_new(o, "events", json_integer(n[0]));
	json_object_set_new(o, "denied", json_integer(n[1]));
	json_object_set_new(o, "would_deny", json_integer(n[2]));
	if (!is_thread(r)) {
		for (int c = t->first_thread; c >= 0; c = p->v[c].next_thread)
			json_array_append_new(threads, node_json(p, c));
		for (int c = t->first_child; c >= 0; c = p->v[c].next_sibling)
			json_array_append_new(children, node_json(p, c));
		json_object_set_new(o, "threads", threads);
		json_object_set_new(o, "children", children);
	} else {
		json_decref(threads);
		json_decref(children);
	}
	return o;
}

int show_tree_json(struct audit *a, const char *run_id, struct show_procs *p,
		   const struct show_filter *f, json_t **out)
{
	int r = count_all(a, run_id, p, f);
	json_t *arr;

	if (r)
		return r;
	arr = json_array();
	for (size_t i = 0; i < p->n; i++)
		if (is_root(p, i))
			json_array_append_new(arr, node_json(p, (int)i));
	*out = arr;
	return 0;
}
