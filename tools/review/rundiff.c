/*
 * rundiff.c - loading two recorded runs, normalizing what they did and
 * comparing it (rundiff.h says what is masked and why).
 */
#include "tools/review/rundiff.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errnames.h"

/* ------------------------------ masks ------------------------------ */

struct buf {
	char *p;
	size_t n, cap;
	bool oom;
};

static void put(struct buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		char *np;

		while (b->n + n + 1 > cap)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np) {
			b->oom = true;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

static void puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static char *done(struct buf *b)
{
	if (!b->oom && !b->p)
		put(b, "", 0);
	if (b->oom) {
		free(b->p);
		return NULL;
	}
	return b->p;
}

static bool ends_with(const struct buf *b, const char *s)
{
	size_t n = strlen(s);

	return b->n >= n && !memcmp(b->p + b->n - n, s, n);
}

static size_t span(const char *s, int (*cls)(int))
{
	size_t n = 0;

	while (s[n] && cls((unsigned char)s[n]))
		n++;
	return n;
}

/* Python's tempfile names: "tmp" and 8 of [a-z0-9_]. */
static size_t tempname_len(const char *p)
{
	size_t n = 3;

	if (strncmp(p, "tmp", 3))
		return 0;
	while (n < 11 && (islower((unsigned char)p[n]) ||
			  isdigit((unsigned char)p[n]) || p[n] == '_'))
		n++;
	if (n != 11 || isalnum((unsigned char)p[n]) || p[n] == '_')
		return 0;
	return n;
}

char *rd_mask(const char *s, const char *workdir)
{
	struct buf b = { 0 };
	size_t wl = workdir ? strlen(workdir) : 0;
	const char *p = s;

	while (*p) {
		size_t n;

		if (wl > 1 && !strncmp(p, workdir, wl) &&
		    (p[wl] == '/' || p[wl] == '\0' || p[wl] == '"')) {
			puts_(&b, "$WORKDIR");
			p += wl;
		} else if (!strncmp(p, "/tmp/ward-", 10) &&
			   span(p + 10, isalnum) == 6) {
			puts_(&b, "$WORKDIR");
			p += 16;
		} else if (ends_with(&b, "$WORKDIR/tmp/") &&
			   (n = tempname_len(p))) {
			puts_(&b, "$TMPNAME");
			p += n;
		} else if (!strncmp(p, "/proc/", 6) &&
			   (n = span(p + 6, isdigit))) {
			puts_(&b, "/proc/$PID");
			p += 6 + n;
		} else if (!strncmp(p, "/task/", 6) &&
			   ends_with(&b, "/proc/$PID") &&
			   (n = span(p + 6, isdigit))) {
			puts_(&b, "/task/$TID");
			p += 6 + n;
		} else if (p[0] == '0' && p[1] == 'x' &&
			   (p == s || !isalnum((unsigned char)p[-1])) &&
			   (n = span(p + 2, isxdigit)) >= 6) {
			puts_(&b, "$ADDR");
			p += 2 + n;
		} else {
			put(&b, p, 1);
			p++;
		}
	}
	return done(&b);
}

/* Keys of decoded arguments that hold fds or pids (tracer/decode-*.c). */
static bool fd_key(const char *k)
{
	return !strcmp(k, "fd") || !strcmp(k, "dirfd") ||
	       !strcmp(k, "dirfd2") || !strcmp(k, "pidfd") ||
	       !strcmp(k, "oldfd") || !strcmp(k, "newfd");
}

static bool pid_key(const char *k)
{
	return !strcmp(k, "pid") || !strcmp(k, "tgid") || !strcmp(k, "tid") ||
	       !strcmp(k, "ppid") || !strcmp(k, "host_pid");
}

/* v normalized in place (strings masked, fds and pids replaced). */
static int norm_json(json_t *v, const char *key, const char *workdir)
{
	if (json_is_object(v)) {
		const char *k;
		json_t *x;
		void *tmp;

		json_object_foreach_safe(v, tmp, k, x)
		{
			if (json_is_integer(x) && fd_key(k)) {
				if (json_object_set_new(v, k,
							json_string("$FD")) < 0)
					return -ENOMEM;
			} else if (json_is_integer(x) && pid_key(k) &&
				   json_integer_value(x) > 1) {
				/* 0, 1 and negative pids mean groups or
				 * init: kept */
				if (json_object_set_new(
					    v, k, json_string("$PID")) < 0)
					return -ENOMEM;
			} else if (norm_json(x, k, workdir) < 0) {
				return -ENOMEM;
			}
		}
	} else if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v); i++)
			if (norm_json(json_array_get(v, i), key, workdir) < 0)
				return -ENOMEM;
	} else if (json_is_string(v)) {
		char *m = rd_mask(json_string_value(v), workdir);

		if (!m || json_string_set(v, m) < 0) {
			free(m);
			return -ENOMEM;
		}
		free(m);
	}
	return 0;
}

char *rd_event_line(const struct audit_event *e, const char *workdir)
{
	struct buf b = { 0 };
	char *args = NULL, *target = NULL;
	json_t *js = e->args_json ? json_loads(e->args_json, 0, NULL) : NULL;

	if (js && norm_json(js, NULL, workdir) == 0)
		args = json_dumps(js, JSON_COMPACT | JSON_SORT_KEYS);
	else if (e->args_json)
		args = rd_mask(e->args_json, workdir);
	json_decref(js);
	if (e->target)
		target = rd_mask(e->target, workdir);
	puts_(&b, e->syscall ? e->syscall : "?");
	if (args) {
		puts_(&b, " ");
		puts_(&b, args);
	}
	if (target) {
		puts_(&b, " -> ");
		puts_(&b, target);
	}
	puts_(&b, ": ");
	puts_(&b, e->decision ? e->decision : "?");
	puts_(&b, " (");
	puts_(&b, e->rule ? e->rule : "?");
	puts_(&b, ")");
	if (e->err) {
		puts_(&b, " ");
		puts_(&b, ward_errno_name(e->err));
	}
	if (e->would_deny)
		puts_(&b, " [would deny]");
	free(args);
	free(target);
	return done(&b);
}

/* Calls whose results depend on time or randomness, when a policy has
 * them recorded, and reads of the kernel's random devices. */
static bool timerand_event(const struct audit_event *e)
{
	static const char *const calls[] = {
		"getrandom",	"clock_gettime", "gettimeofday",    "time",
		"clock_getres", "nanosleep",	 "clock_nanosleep", "times",
		"getrusage",	"sysinfo",	 "timerfd_create"
	};

	for (size_t i = 0; e->syscall && i < sizeof(calls) / sizeof(*calls);
	     i++)
		if (!strcmp(e->syscall, calls[i]))
			return true;
	return e->target && (!strcmp(e->target, "/dev/urandom") ||
			     !strcmp(e->target, "/dev/random"));
}

/* ------------------------------ loading ------------------------------ */

struct loader {
	struct audit *a;
	struct rd_run *r;
	int err;
};

static char *dup_or_null(const char *s, int *err)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		*err = -ENOMEM;
	return d;
}

static int load_run_cb(const struct audit_run *ar, void *arg)
{
	struct loader *l = arg;
	struct rd_run *r = l->r;

	snprintf(r->id, sizeof(r->id), "%s", ar->id);
	r->status = dup_or_null(ar->status ? ar->status : "?", &l->err);
	r->workdir = dup_or_null(ar->workdir, &l->err);
	r->host_workdir = rd_host_workdir(ar->layers_json);
	r->cause = dup_or_null(ar->cause, &l->err);
	r->has_exit = ar->has_exit;
	r->exit_code = ar->exit_code;
	r->signal = ar->signal;
	r->truncated[1] = ar->stdout_truncated > 0;
	r->truncated[2] = ar->stderr_truncated > 0;
	return l->err;
}

/* The index of a serial (procs are sorted by serial); 0 when unknown. */
static size_t index_of(const struct rd_run *r, int serial)
{
	size_t lo = 1, hi = r->n_procs + 1;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->procs[mid].serial == serial)
			return mid;
		if (r->procs[mid].serial < serial)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

static int load_proc_cb(const struct audit_proc_row *pr, void *arg)
{
	struct loader *l = arg;
	struct rd_run *r = l->r;
	struct rd_proc *np, *p;

	np = realloc(r->procs, (r->n_procs + 2) * sizeof(*np));
	if (!np)
		return -ENOMEM;
	r->procs = np;
	if (r->n_procs == 0)
		memset(&np[0], 0, sizeof(np[0]));
	p = &np[++r->n_procs];
	memset(p, 0, sizeof(*p));
	p->serial = pr->p.serial;
	p->parent = (int)index_of(r, pr->p.parent_serial);
	p->kind = dup_or_null(pr->p.kind ? pr->p.kind : "?", &l->err);
	if (pr->p.exe && !(p->exe = rd_mask(pr->p.exe, r->workdir)))
		l->err = -ENOMEM;
	if (pr->p.argv_json &&
	    !(p->argv = rd_mask(pr->p.argv_json, r->workdir)))
		l->err = -ENOMEM;
	p->exited = pr->exited;
	p->exit_code = pr->exit_code;
	p->signal = pr->signal;
	if (pr->p.kind && !strcmp(pr->p.kind, "thread"))
		r->threads++;
	return l->err;
}

static int load_event_cb(const struct audit_event_row *er, void *arg)
{
	struct loader *l = arg;
	struct rd_run *r = l->r;
	struct rd_proc *p = &r->procs[index_of(r, er->e.proc_serial)];
	struct rd_event *ev;

	if (p->n_ev == p->cap_ev) {
		size_t cap = p->cap_ev ? p->cap_ev * 2 : 64;
		struct rd_event *ne = realloc(p->ev, cap * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		p->ev = ne;
		p->cap_ev = cap;
	}
	ev = &p->ev[p->n_ev];
	ev->seq = er->seq;
	ev->line = rd_event_line(&er->e, r->workdir);
	if (!ev->line)
		return -ENOMEM;
	ev->base = strlen(ev->line);
	ev->result = er->e.has_result;
	if (ev->result) {
		/* success or the errno: an fd or a pid differs run to run */
		char rt[32], *nl;
		if (er->e.result < 0)
			ward_result_text(er->e.result, rt, sizeof(rt));
		else
			snprintf(rt, sizeof(rt), "ok");
		if (asprintf(&nl, "%s = %s", ev->line, rt) < 0)
			return -ENOMEM;
		free(ev->line);
		ev->line = nl;
	}
	ev->timerand = timerand_event(&er->e);
	p->n_ev++;
	if (ev->timerand && !r->timerand++ &&
	    !(r->timerand_what = strdup(ev->line)))
		return -ENOMEM;
	return 0;
}

static int load_output_cb(const struct audit_output_row *o, void *arg)
{
	struct loader *l = arg;
	struct rd_run *r = l->r;
	int s = o->stream == AUDIT_STDERR ? 2 : 1;
	char *np = realloc(r->out[s], r->out_len[s] + o->len + 1);

	if (!np)
		return -ENOMEM;
	memcpy(np + r->out_len[s], o->data, o->len);
	r->out_len[s] += o->len;
	np[r->out_len[s]] = '\0';
	r->out[s] = np;
	return 0;
}

int rd_load(struct audit *a, const char *run_id, struct rd_run *r)
{
	struct loader l = { .a = a, .r = r };
	int rc;

	memset(r, 0, sizeof(*r));
	rc = audit_run_read(a, run_id, load_run_cb, &l);
	if (!rc) {
		/* index 0: events of no known process */
		r->procs = calloc(1, sizeof(*r->procs));
		rc = r->procs ? 0 : -ENOMEM;
	}
	if (!rc)
		rc = audit_processes_each(a, run_id, load_proc_cb, &l);
	for (size_t i = 2; !rc && i <= r->n_procs; i++)
		if (r->procs[i].serial <= r->procs[i - 1].serial)
			rc = -EIO; /* not by serial: a broken record */
	if (!rc)
		rc = audit_events_each(a, run_id, load_event_cb, &l);
	if (!rc)
		rc = audit_outputs_each(a, run_id, load_output_cb, &l);
	return rc ? rc : l.err;
}

char *rd_host_workdir(const char *layers_json)
{
	json_t *a = layers_json ? json_loads(layers_json, 0, NULL) : NULL;
	char *out = NULL;
	size_t i;
	json_t *l;

	json_array_foreach(a, i, l)
	{
		const char *name =
			json_string_value(json_object_get(l, "name"));
		const char *d = json_string_value(json_object_get(l, "detail"));
		const char *end = d ? strstr(d, " of the host,") : NULL;
		if (name && !strcmp(name, "workdir") && end && d[0] == '/') {
			out = strndup(d, (size_t)(end - d));
			break;
		}
	}
	json_decref(a);
	return out;
}

void rd_run_free(struct rd_run *r)
{
	free(r->host_workdir);
	for (size_t i = 0; r->procs && i <= r->n_procs; i++) {
		struct rd_proc *p = &r->procs[i];

		for (size_t j = 0; j < p->n_ev; j++)
			free(p->ev[j].line);
		free(p->ev);
		free(p->kind);
		free(p->exe);
		free(p->argv);
	}
	free(r->procs);
	free(r->status);
	free(r->workdir);
	free(r->cause);
	free(r->timerand_what);
	free(r->out[1]);
	free(r->out[2]);
	memset(r, 0, sizeof(*r));
}

/* ----------------------------- comparing ----------------------------- */

static bool str_eq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

bool rd_only_digits_differ(const char *a, size_t an, const char *b, size_t bn)
{
	size_t i = 0, j = 0;

	while (i < an && j < bn) {
		bool da = isdigit((unsigned char)a[i]),
		     db = isdigit((unsigned char)b[j]);

		if (da && db) {
			while (i < an && isdigit((unsigned char)a[i]))
				i++;
			while (j < bn && isdigit((unsigned char)b[j]))
				j++;
		} else if (a[i] == b[j]) {
			i++;
			j++;
		} else {
			return false;
		}
	}
	return i == an && j == bn;
}

/* What differs in the process itself, or NULL. */
static const char *proc_diff(const struct rd_proc *a, const struct rd_proc *b)
{
	if (!a)
		return "the process is only in the second run";
	if (!b)
		return "the process is only in the first run";
	if (!str_eq(a->kind, b->kind))
		return "one is a process, the other a thread";
	if (a->parent != b->parent)
		return "its parent differs";
	if (!str_eq(a->exe, b->exe))
		return "its executable differs";
	if (!str_eq(a->argv, b->argv))
		return "its argv differs";
	if (a->exited != b->exited || a->exit_code != b->exit_code ||
	    a->signal != b->signal)
		return "its exit differs";
	return NULL;
}

static void maybe(struct rd_diff *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void maybe(struct rd_diff *d, const char *fmt, ...)
{
	va_list ap;
	size_t n = d->n_maybe;

	if (n >= 3)
		return;
	va_start(ap, fmt);
	vsnprintf(d->maybe_buf[n], sizeof(d->maybe_buf[n]), fmt, ap);
	va_end(ap);
	d->maybe[n] = d->maybe_buf[n];
	d->n_maybe++;
}

/* The same decision, and the same result where both runs recorded one
 * (a run recorded before results were: its decisions alone). */
static bool same_event(const struct rd_event *a, const struct rd_event *b)
{
	if (a->result && b->result)
		return !strcmp(a->line, b->line);
	return a->base == b->base && !memcmp(a->line, b->line, a->base);
}

void rd_compare(const struct rd_run *a, const struct rd_run *b,
		struct rd_diff *d)
{
	size_t n = a->n_procs > b->n_procs ? a->n_procs : b->n_procs;
	bool found = false;

	memset(d, 0, sizeof(*d));
	/* processes 1..n in order, then the events of no known process */
	for (size_t k = 1; k <= n + 1; k++) {
		size_t idx = k <= n ? k : 0;
		const struct rd_proc *pa = idx <= a->n_procs ? &a->procs[idx]
							     : NULL;
		const struct rd_proc *pb = idx <= b->n_procs ? &b->procs[idx]
							     : NULL;
		const char *what = idx ? proc_diff(pa, pb) : NULL;
		size_t na = pa ? pa->n_ev : 0, nb = pb ? pb->n_ev : 0, i;

		for (i = 0; i < na && i < nb; i++)
			if (!same_event(&pa->ev[i], &pb->ev[i]))
				break;
		if (!what && i == na && i == nb)
			continue;
		d->procs_differing++;
		if (found)
			continue;
		found = true;
		d->proc = idx;
		d->proc_what = what;
		if (i < na || i < nb) {
			d->ev_differs = true;
			d->index = i + 1;
			d->a_line = i < na ? pa->ev[i].line : NULL;
			d->b_line = i < nb ? pb->ev[i].line : NULL;
			d->a_seq = i < na ? pa->ev[i].seq : 0;
			d->b_seq = i < nb ? pb->ev[i].seq : 0;
		}
	}
	d->exit_differs =
		!str_eq(a->status, b->status) || a->has_exit != b->has_exit ||
		a->exit_code != b->exit_code || a->signal != b->signal;
	for (int s = 1; s <= 2; s++) {
		size_t m = a->out_len[s] < b->out_len[s] ? a->out_len[s]
							 : b->out_len[s];
		size_t at = 0;

		while (at < m && a->out[s][at] == b->out[s][at])
			at++;
		d->out_differs[s] = at < m || a->out_len[s] != b->out_len[s];
		d->out_at[s] = at;
	}
	d->equivalent = !found && !d->exit_differs && !d->out_differs[1] &&
			!d->out_differs[2];
	if (d->equivalent)
		return;
	/* Heuristics: why the difference may not come from the change. */
	for (int s = 1; s <= 2; s++)
		if (d->out_differs[s] &&
		    rd_only_digits_differ(
			    a->out[s] ? a->out[s] : "", a->out_len[s],
			    b->out[s] ? b->out[s] : "", b->out_len[s]))
			maybe(d,
			      "%s differs only in digits (numbers such as "
			      "times, random values or ids)",
			      s == 1 ? "stdout" : "stderr");
	if (a->threads || b->threads)
		maybe(d,
		      "the runs started threads (%d and %d): their order "
		      "may differ from run to run",
		      a->threads, b->threads);
	if (a->timerand || b->timerand)
		maybe(d,
		      "the runs made calls related to time or randomness "
		      "(%lld and %lld; first: %.80s)",
		      a->timerand, b->timerand,
		      a->timerand_what ? a->timerand_what : b->timerand_what);
}

/* ------------------------------ report ------------------------------ */

static void exit_words(const struct rd_run *r, char *buf, size_t n)
{
	if (!r->has_exit)
		snprintf(buf, n, "%s", r->status);
	else if (r->signal)
		snprintf(buf, n, "%s, signal %d", r->status, r->signal);
	else
		snprintf(buf, n, "%s, exit %d", r->status, r->exit_code);
}

static size_t count_events(const struct rd_run *r)
{
	size_t n = 0;

	for (size_t i = 0; i <= r->n_procs; i++)
		n += r->procs[i].n_ev;
	return n;
}

/* The line of s around byte at, printable, at most 100 characters. */
static void line_at(const char *s, size_t len, size_t at, char *out, size_t n)
{
	size_t b = at, o = 0;

	while (b > 0 && s[b - 1] != '\n' && at - b < 60)
		b--;
	for (size_t i = b; i < len && s[i] != '\n' && o + 5 < n && i < b + 100;
	     i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c < 0x7f)
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, n - o, "\\x%02x", c);
	}
	out[o] = '\0';
}

/* Recorded text on a terminal: controls and non-ASCII bytes as \\xNN, so
 * that what the code wrote cannot drive the terminal. */
static void put_safe(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 0x20 && c < 0x7f)
			fputc(c, f);
		else
			fprintf(f, "\\x%02x", c);
	}
}

static const char *proc_label(const struct rd_run *a, const struct rd_run *b,
			      size_t idx, char *buf, size_t n)
{
	const struct rd_proc *p = idx && idx <= a->n_procs   ? &a->procs[idx]
				  : idx && idx <= b->n_procs ? &b->procs[idx]
							     : NULL;

	if (!p)
		snprintf(buf, n, "events of no known process");
	else
		snprintf(buf, n, "%s %zu (%s)", p->kind, idx,
			 p->exe ? p->exe : "not exec'd");
	return buf;
}

static void truncation_note(FILE *f, const struct rd_run *a,
			    const struct rd_run *b)
{
	for (int s = 1; s <= 2; s++)
		if (a->truncated[s] || b->truncated[s])
			fprintf(f,
				"note: not all of %s was kept (ward run "
				"--max-output); only the kept bytes are "
				"compared\n",
				s == 1 ? "stdout" : "stderr");
}

void rd_print(FILE *f, const struct rd_run *a, const struct rd_run *b,
	      const struct rd_diff *d)
{
	char ea[128], eb[128], pl[300];

	exit_words(a, ea, sizeof(ea));
	exit_words(b, eb, sizeof(eb));
	fprintf(f, "runs %s (%s) and %s (%s): %s\n", a->id, ea, b->id, eb,
		d->equivalent ? "equivalent" : "different");
	if (d->equivalent) {
		fprintf(f,
			"  same %zu processes, %zu decisions (normalized), "
			"exit and output (%zu + %zu bytes)\n",
			a->n_procs, count_events(a), a->out_len[1],
			a->out_len[2]);
		truncation_note(f, a, b);
		return;
	}
	if (d->proc || d->ev_differs) {
		fprintf(f, "first divergence: ");
		put_safe(f, proc_label(a, b, d->proc, pl, sizeof(pl)));
		if (d->ev_differs)
			fprintf(f, ", decision %zu", d->index);
		fprintf(f, "\n");
		if (d->proc_what)
			fprintf(f, "  %s\n", d->proc_what);
		if (d->ev_differs) {
			if (d->a_line) {
				fprintf(f, "  %s #%lld: ", a->id, d->a_seq);
				put_safe(f, d->a_line);
				fputc('\n', f);
			} else
				fprintf(f, "  %s: (no more decisions)\n",
					a->id);
			if (d->b_line) {
				fprintf(f, "  %s #%lld: ", b->id, d->b_seq);
				put_safe(f, d->b_line);
				fputc('\n', f);
			} else
				fprintf(f, "  %s: (no more decisions)\n",
					b->id);
		}
		fprintf(f, "  processes that differ: %zu of %zu and %zu\n",
			d->procs_differing, a->n_procs, b->n_procs);
	} else {
		fprintf(f,
			"decisions: the same (%zu processes, %zu "
			"decisions)\n",
			a->n_procs, count_events(a));
	}
	if (d->exit_differs)
		fprintf(f, "exit: %s: %s; %s: %s\n", a->id, ea, b->id, eb);
	for (int s = 1; s <= 2; s++) {
		const char *name = s == 1 ? "stdout" : "stderr";
		char la[512], lb[512];

		if (!d->out_differs[s])
			continue;
		line_at(a->out[s] ? a->out[s] : "", a->out_len[s], d->out_at[s],
			la, sizeof(la));
		line_at(b->out[s] ? b->out[s] : "", b->out_len[s], d->out_at[s],
			lb, sizeof(lb));
		fprintf(f, "%s: differs from byte %zu (%zu and %zu bytes)\n",
			name, d->out_at[s], a->out_len[s], b->out_len[s]);
		fprintf(f, "  %s: %s\n  %s: %s\n", a->id, la, b->id, lb);
	}
	truncation_note(f, a, b);
	for (size_t i = 0; i < d->n_maybe; i++) {
		fprintf(f, "possibly nondeterministic (heuristic): ");
		put_safe(f, d->maybe[i]);
		fputc('\n', f);
	}
}

static json_t *side(const struct rd_run *r)
{
	return json_pack("{s:s, s:s, s:o, s:o, s:i, s:I, s:I}", "run", r->id,
			 "status", r->status, "exit_code",
			 r->has_exit ? json_integer(r->exit_code) : json_null(),
			 "signal",
			 r->has_exit ? json_integer(r->signal) : json_null(),
			 "processes", (int)r->n_procs, "decisions",
			 (json_int_t)count_events(r), "threads",
			 (json_int_t)r->threads);
}

static json_t *event_side(const char *line, long long seq)
{
	return line ? json_pack("{s:I, s:s}", "seq", (json_int_t)seq, "line",
				line)
		    : json_null();
}

json_t *rd_json(const struct rd_run *a, const struct rd_run *b,
		const struct rd_diff *d)
{
	json_t *o = json_pack("{s:b, s:o, s:o, s:I, s:b}", "equivalent",
			      d->equivalent, "a", side(a), "b", side(b),
			      "processes_differing",
			      (json_int_t)d->procs_differing, "exit_differs",
			      d->exit_differs);
	json_t *hints = json_array();

	if (!o || !hints) {
		json_decref(o);
		json_decref(hints);
		return NULL;
	}
	if (d->proc || d->ev_differs)
		json_object_set_new(
			o, "first_divergence",
			json_pack("{s:I, s:o, s:o, s:o, s:o}", "process",
				  (json_int_t)d->proc, "difference",
				  d->proc_what ? json_string(d->proc_what)
					       : json_null(),
				  "index",
				  d->ev_differs
					  ? json_integer((json_int_t)d->index)
					  : json_null(),
				  "a", event_side(d->a_line, d->a_seq), "b",
				  event_side(d->b_line, d->b_seq)));
	else
		json_object_set_new(o, "first_divergence", json_null());
	for (int s = 1; s <= 2; s++)
		json_object_set_new(
			o, s == 1 ? "stdout" : "stderr",
			json_pack(
				"{s:b, s:o, s:I, s:I, s:b}", "differs",
				d->out_differs[s], "at",
				d->out_differs[s]
					? json_integer((json_int_t)d->out_at[s])
					: json_null(),
				"a_bytes", (json_int_t)a->out_len[s], "b_bytes",
				(json_int_t)b->out_len[s], "truncated",
				a->truncated[s] || b->truncated[s]));
	for (size_t i = 0; i < d->n_maybe; i++)
		json_array_append_new(hints, json_string(d->maybe[i]));
	json_object_set_new(o, "nondeterminism_hints", hints);
	return o;
}

int rd_report(FILE *f, const struct rd_run *a, const struct rd_run *b,
	      bool json)
{
	struct rd_diff d;

	rd_compare(a, b, &d);
	if (json) {
		json_t *o = rd_json(a, b, &d);

		if (!o)
			return -ENOMEM;
		json_dumpf(o, f, JSON_COMPACT);
		fputc('\n', f);
		json_decref(o);
	} else {
		rd_print(f, a, b, &d);
	}
	fflush(f);
	return d.equivalent ? 0 : 1;
}
