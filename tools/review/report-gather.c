/*
 * report-gather.c - the record of one run read into the report's model
 * (report.h): each part read once, kept within the bounds there.
 */
#include "tools/review/report.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errnames.h"
#include "common/json.h"
#include "common/log.h"

static char *dup_n(const void *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		if (n)
			memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

static char *dup_s(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* The cell that was running at ts (0: none). */
static long long cell_at(const struct report *r, long long ts)
{
	for (size_t i = 0; i < r->ncells; i++)
		if (ts >= r->cells[i].start && ts <= r->cells[i].end)
			return r->cells[i].n;
	return 0;
}

/* ------------------------------ gathering ------------------------------ */

#define SET(f, v)                                                              \
	do {                                                                   \
		if ((v) && !((r->f) = strdup(v)))                              \
			return -ENOMEM;                                        \
	} while (0)

static int got_run(const struct audit_run *run, void *arg)
{
	struct report *r = arg;

	memcpy(r->id, run->id, sizeof(r->id));
	SET(status, view_run_status(run));
	SET(cause, run->cause);
	SET(argv_json, run->argv_json);
	SET(language, run->language);
	SET(interpreter, run->interpreter);
	SET(code_name, run->code_name);
	SET(code_sha256, run->code_sha256);
	SET(policy_name, run->policy_name);
	SET(policy_sha256, run->policy_sha256);
	SET(workdir, run->workdir);
	SET(limits_json, run->limits_json);
	SET(host, run->host);
	SET(kernel, run->kernel);
	SET(ward_version, run->ward_version);
	SET(layers_json, run->layers_json);
	r->code_total = run->code_total;
	r->code_len = run->code_len > CODE_MAX ? CODE_MAX : run->code_len;
	r->code = dup_n(run->code ? run->code : "", r->code_len);
	if (!r->code)
		return -ENOMEM;
	r->started = run->started_ns;
	r->ended = run->ended_ns;
	r->duration_ms = run->duration_ms;
	r->uid = run->uid;
	r->has_exit = run->has_exit;
	r->exit_code = run->exit_code;
	r->sig = run->signal;
	r->stdout_bytes = run->stdout_bytes;
	r->stderr_bytes = run->stderr_bytes;
	r->stdout_trunc = run->stdout_truncated;
	r->stderr_trunc = run->stderr_truncated;
	r->events = run->events;
	r->denials = run->denials;
	r->processes = run->processes;
	return 0;
}
#undef SET

static int got_proc(const struct audit_proc_row *p, void *arg)
{
	struct report *r = arg;
	struct proc *n;

	if (r->procs_total++ >= PROC_MAX)
		return 0;
	n = realloc(r->procs, (r->nprocs + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	r->procs = n;
	n = &r->procs[r->nprocs++];
	*n = (struct proc){
		.serial = p->p.serial,
		.parent = p->p.parent_serial,
		.pid = (int)p->p.pid,
		.thread = p->p.kind && !strcmp(p->p.kind, "thread"),
		.execed = p->execed,
		.exited = p->exited,
		.exe = dup_s(p->p.exe),
		.argv_json = dup_s(p->p.argv_json),
		.start = p->p.start_ns,
		.exec = p->exec_ns,
		.exit = p->exit_ns,
		.code = p->exit_code,
		.sig = p->signal,
	};
	/* depth in the tree: parents come first (serials by appearance) */
	for (size_t i = 0; i + 1 < r->nprocs; i++)
		if (r->procs[i].serial == n->parent)
			n->depth = r->procs[i].depth + 1;
	return 0;
}

static int got_cell(const struct audit_cell *c, void *arg)
{
	struct report *r = arg;
	struct cell *n;

	if (r->cells_total++ >= CELL_MAX)
		return 0;
	n = realloc(r->cells, (r->ncells + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	r->cells = n;
	n = &r->cells[r->ncells++];
	*n = (struct cell){
		.n = c->n,
		.start = c->started_ns,
		.end = c->ended_ns,
		.status = dup_s(c->status),
		.code_len = c->code_len > CODE_MAX ? CODE_MAX : c->code_len,
	};
	n->code = dup_n(c->code ? c->code : "", n->code_len);
	return n->code ? 0 : -ENOMEM;
}

static int got_art(const struct audit_artifact *f, void *arg)
{
	struct report *r = arg;
	struct art *n;

	if (r->arts_total++ >= ART_MAX)
		return 0;
	n = realloc(r->arts, (r->narts + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	r->arts = n;
	r->arts[r->narts++] = (struct art){
		.cell = f->cell,
		.size = f->size,
		.path = dup_s(f->path),
		.sha256 = dup_s(f->sha256),
	};
	return 0;
}

/* "openat /etc/shadow (given as ...) -> EACCES" */
static void event_text(struct ward_strbuf *sb, const struct audit_event *e)
{
	ward_strbuf_puts(sb, e->syscall ? e->syscall : "?");
	ward_strbuf_puts(sb, " ");
	ward_strbuf_puts(sb, e->target ? e->target : e->raw ? e->raw : "");
	if (e->raw && e->target && strcmp(e->raw, e->target)) {
		ward_strbuf_puts(sb, " (given as ");
		ward_strbuf_puts(sb, e->raw);
		ward_strbuf_puts(sb, ")");
	}
	if (e->err) {
		ward_strbuf_appendf(sb, " -> %s", ward_errno_name(e->err));
	} else if (e->has_result) {
		char rt[32];
		ward_strbuf_appendf(sb, " = %s",
				    ward_result_text(e->result, rt,
						     sizeof(rt)));
	}
	if (e->pid != e->tid)
		ward_strbuf_appendf(sb, ", tid %d", (int)e->tid);
}

static void tl_free(struct tl_item *t)
{
	free(t->text);
	free(t->rule);
	memset(t, 0, sizeof(*t));
}

static int got_item(const struct audit_item *it, void *arg)
{
	struct report *r = arg;
	struct ward_strbuf sb = WARD_STRBUF_INIT;
	struct tl_item t = { .ts = it->ts_ns };
	char sig[32];

	if (it->kind == AUDIT_ITEM_EVENT) {
		const struct audit_event *e = &it->event->e;
		bool allow = e->decision && !strcmp(e->decision, "allow");

		t.serial = e->proc_serial;
		t.cls = !allow ? TL_DENY : e->would_deny ? TL_WOULD : TL_ALLOW;
		t.what = allow ? (e->would_deny ? "would deny" : "allow")
			 : e->decision && !strcmp(e->decision, "kill") ? "KILL"
								       : "DENY";
		event_text(&sb, e);
		t.rule = dup_s(e->rule);
	} else if (it->kind == AUDIT_ITEM_OUTPUT) {
		const struct audit_output_row *o = it->output;
		size_t n = o->len > CHUNK_MAX ? CHUNK_MAX : o->len;

		t.cls = o->stream == AUDIT_STDERR ? TL_ERR : TL_OUT;
		t.what = o->stream == AUDIT_STDERR ? "stderr" : "stdout";
		ward_strbuf_append(&sb, o->data, n);
		t.more = o->len - n;
	} else {
		const struct audit_proc_row *p = it->proc;

		t.serial = p->p.serial;
		t.cls = TL_PROC;
		if (it->kind == AUDIT_ITEM_START) {
			t.what = "start";
			ward_strbuf_appendf(&sb, "pid %d, %s", (int)p->p.pid,
					    p->p.kind ? p->p.kind : "process");
			if (p->p.parent_serial > 0)
				ward_strbuf_appendf(&sb, " of [%d]",
						    p->p.parent_serial);
		} else if (it->kind == AUDIT_ITEM_EXEC) {
			t.what = "exec";
			t.json = true;
			ward_strbuf_puts(&sb, p->p.exe ? p->p.exe : "-");
			ward_strbuf_puts(&sb, " ");
			ward_strbuf_puts(&sb,
					 p->p.argv_json ? p->p.argv_json : "");
		} else {
			t.what = "exit";
			if (p->signal > 0)
				ward_strbuf_appendf(&sb, "killed by %s",
						    view_signame(p->signal, sig,
								 sizeof(sig)));
			else
				ward_strbuf_appendf(&sb, "status %d",
						    p->exit_code);
		}
	}
	if (sb.truncated) {
		ward_strbuf_free(&sb);
		free(t.rule);
		return -ENOMEM;
	}
	t.len = sb.len;
	t.text = sb.len ? ward_strbuf_steal(&sb) : strdup("");
	if (!t.text) {
		free(t.rule);
		return -ENOMEM;
	}
	t.cell = cell_at(r, t.ts);
	r->tl_total[t.cls]++;
	if (r->nhead < TL_HEAD) {
		r->head[r->nhead++] = t;
		return 0;
	}
	/* a ring of the last TL_TAIL */
	if (r->ntail == TL_TAIL)
		tl_free(&r->tail[r->tail_pos]);
	else
		r->ntail++;
	r->tail[r->tail_pos] = t;
	r->tail_pos = (r->tail_pos + 1) % TL_TAIL;
	return 0;
}

static void denial_free(struct denial *d)
{
	free(d->syscall);
	free(d->decision);
	free(d->target);
	free(d->raw);
	free(d->reason);
	free(d->args);
	free(d->bt_text);
	free(d->py);
	json_decref(d->bt);
}

static int got_denial(const struct audit_event_row *ev, void *arg)
{
	struct report *r = arg;
	const struct audit_event *e = &ev->e;
	const char *name = e->rule ? e->rule : "(no rule)";
	struct rule *g = NULL;
	struct denial *d;

	r->ndenials++;
	struct run_phase *ph = run_phase_find(&r->phases, e->proc_serial);
	if (ph)
		ph->denials++;
	if (e->would_deny && e->decision && !strcmp(e->decision, "allow"))
		r->dec.would++;
	else if (e->decision && !strcmp(e->decision, "kill"))
		r->dec.killed++;
	else
		r->dec.denied++;
	for (size_t i = 0; i < r->nrules && !g; i++)
		if (!strcmp(r->rules[i].name, name))
			g = &r->rules[i];
	if (!g) {
		if (r->nrules >= RULE_MAX) {
			r->rules_other++;
			return 0;
		}
		g = realloc(r->rules, (r->nrules + 1) * sizeof(*g));
		if (!g)
			return -ENOMEM;
		r->rules = g;
		g = &r->rules[r->nrules++];
		*g = (struct rule){ .name = strdup(name) };
		if (!g->name)
			return -ENOMEM;
	}
	g->n++;
	if (e->would_deny && e->decision && !strcmp(e->decision, "allow"))
		g->would++;
	else if (e->decision && !strcmp(e->decision, "kill"))
		g->syscalls_killed++;
	else
		g->syscalls_denied++;
	if (g->nex >= RULE_EX)
		return 0;
	d = &g->ex[g->nex++];
	*d = (struct denial){
		.ts = e->ts_ns,
		.seq = ev->seq,
		.cell = cell_at(r, e->ts_ns),
		.serial = e->proc_serial,
		.err = e->err,
		.would = e->would_deny && e->decision &&
			 !strcmp(e->decision, "allow"),
		.syscall = dup_s(e->syscall),
		.decision = dup_s(e->decision),
		.target = dup_s(e->target),
		.raw = dup_s(e->raw),
		.reason = dup_s(e->reason),
		.args = dup_s(e->args_json),
		.py = dup_s(e->pyframes),
	};
	if (e->backtrace) {
		d->bt = json_loads(e->backtrace, 0, NULL);
		if (!json_is_array(d->bt)) {
			json_decref(d->bt);
			d->bt = NULL;
			d->bt_text = strdup(e->backtrace);
		} else if (sym_backtrace_add(r->syms, d->bt)) {
			r->symbolized = true;
		}
	}
	return 0;
}

/* The file entry for path, added if new; NULL past FILE_MAX. */
static struct file *file_slot(struct report *r, const char *path)
{
	size_t h = 5381, i;

	if (!r->fcap) {
		r->fcap = 2 * FILE_MAX;
		r->files = calloc(r->fcap, sizeof(*r->files));
		r->forder = calloc(FILE_MAX, sizeof(*r->forder));
		if (!r->files || !r->forder)
			return NULL;
	}
	for (const char *c = path; *c; c++)
		h = h * 33 + (unsigned char)*c;
	for (i = h % r->fcap; r->files[i].path; i = (i + 1) % r->fcap)
		if (!strcmp(r->files[i].path, path))
			return &r->files[i];
	if (r->nfiles >= FILE_MAX)
		return NULL;
	r->files[i].path = strdup(path);
	if (!r->files[i].path)
		return NULL;
	r->forder[r->nfiles++] = i;
	return &r->files[i];
}

static void add_file(struct report *r, const char *path, unsigned what,
		     const struct audit_event *e)
{
	struct file *f;

	if (!path || !*path)
		return;
	f = file_slot(r, path);
	if (!f) {
		r->files_other++;
		return;
	}
	if (!f->calls)
		f->first = e->ts_ns;
	f->calls++;
	f->what |= what;
	if (e->decision && strcmp(e->decision, "allow"))
		f->denied++;
}

/* What an open's flags ask: read, write, create. */
static unsigned open_what(const char *args_json)
{
	json_t *a = args_json ? json_loads(args_json, 0, NULL) : NULL;
	const char *fl = json_string_value(json_object_get(a, "flags"));
	unsigned w = 0;

	if (!fl) {
		w = F_READ;
	} else {
		if (strstr(fl, "O_WRONLY") || strstr(fl, "O_RDWR") ||
		    strstr(fl, "O_TRUNC") || strstr(fl, "O_APPEND"))
			w |= F_WRITE;
		if (!strstr(fl, "O_WRONLY"))
			w |= F_READ;
		if (strstr(fl, "O_CREAT") || strstr(fl, "O_TMPFILE"))
			w |= F_CREATE;
	}
	json_decref(a);
	return w;
}

static bool is_one_of(const char *s, const char *const *list)
{
	for (; s && *list; list++)
		if (!strcmp(s, *list))
			return true;
	return false;
}

static int got_event(const struct audit_event_row *ev, void *arg)
{
	static const char *const opens[] = { "open", "openat", "openat2",
					     NULL };
	static const char *const creates[] = { "creat",	    "mkdir",
					       "mkdirat",   "mknod",
					       "mknodat",   "symlink",
					       "symlinkat", NULL };
	static const char *const deletes[] = { "unlink", "unlinkat", "rmdir",
					       NULL };
	static const char *const moves[] = { "rename", "renameat", "renameat2",
					     "link",   "linkat",   NULL };
	static const char *const metas[] = {
		"chmod",     "fchmodat",    "fchmodat2",    "chown",
		"lchown",    "fchownat",    "truncate",	    "utime",
		"utimes",    "utimensat",   "futimesat",    "setxattr",
		"lsetxattr", "removexattr", "lremovexattr", NULL
	};
	static const char *const nets[] = { "connect", "bind",	  "listen",
					    "sendto",  "sendmsg", "sendmmsg",
					    NULL };
	struct report *r = arg;
	const struct audit_event *e = &ev->e;
	const char *sc = e->syscall;

	if (is_one_of(sc, opens)) {
		add_file(r, e->target, open_what(e->args_json), e);
	} else if (is_one_of(sc, creates)) {
		add_file(r, e->target, F_CREATE, e);
	} else if (is_one_of(sc, deletes)) {
		add_file(r, e->target, F_DELETE, e);
	} else if (is_one_of(sc, metas)) {
		add_file(r, e->target, F_META, e);
	} else if (is_one_of(sc, moves) && e->target) {
		/* target is "FROM -> TO" */
		const char *arrow = strstr(e->target, " -> ");
		char *from =
			arrow ? dup_n(e->target, (size_t)(arrow - e->target))
			      : NULL;
		bool link = strstr(sc, "link") != NULL;

		if (arrow && !from)
			return -ENOMEM;
		add_file(r, from ? from : e->target, link ? F_READ : F_DELETE,
			 e);
		if (arrow)
			add_file(r, arrow + 4, F_CREATE, e);
		free(from);
	} else if (is_one_of(sc, nets)) {
		struct net *n;

		if (r->nets_total++ >= NET_MAX)
			return 0;
		n = realloc(r->nets, (r->nnets + 1) * sizeof(*n));
		if (!n)
			return -ENOMEM;
		r->nets = n;
		r->nets[r->nnets++] = (struct net){
			.ts = e->ts_ns,
			.serial = e->proc_serial,
			.err = e->err,
			.syscall = dup_s(sc),
			.target = dup_s(e->target ? e->target : e->raw),
			.decision = dup_s(e->would_deny ? "would deny"
							: e->decision),
			.rule = dup_s(e->rule),
		};
	}
	return 0;
}

int report_gather(struct audit *a, const char *id, struct report *r)
{
	int rc = audit_run_read(a, id, got_run, r);

	if (!rc)
		rc = run_phases_load(a, id, &r->phases);
	if (!rc)
		rc = audit_cells_each(a, id, got_cell, r);
	if (!rc)
		rc = audit_artifacts_each(a, id, got_art, r);
	if (!rc)
		rc = audit_processes_each(a, id, got_proc, r);
	if (!rc)
		rc = audit_timeline_each(a, id, got_item, r);
	if (!rc)
		rc = audit_denials_each(a, id, got_denial, r);
	if (!rc)
		rc = audit_events_each(a, id, got_event, r);
	return rc;
}

void report_free(struct report *r)
{
	char **strs[] = { &r->status,	     &r->cause,	      &r->argv_json,
			  &r->language,	     &r->interpreter, &r->code_name,
			  &r->code,	     &r->code_sha256, &r->policy_name,
			  &r->policy_sha256, &r->workdir,     &r->limits_json,
			  &r->host,	     &r->kernel,      &r->ward_version,
			  &r->layers_json };

	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		free(*strs[i]);
	run_phases_free(&r->phases);
	for (size_t i = 0; i < r->nprocs; i++) {
		free(r->procs[i].exe);
		free(r->procs[i].argv_json);
	}
	free(r->procs);
	for (size_t i = 0; i < r->nhead; i++)
		tl_free(&r->head[i]);
	for (size_t i = 0; i < r->ntail; i++)
		tl_free(&r->tail[i]);
	for (size_t i = 0; i < r->nrules; i++) {
		for (int j = 0; j < r->rules[i].nex; j++)
			denial_free(&r->rules[i].ex[j]);
		free(r->rules[i].name);
	}
	free(r->rules);
	for (size_t i = 0; i < r->fcap; i++)
		free(r->files[i].path);
	free(r->files);
	free(r->forder);
	for (size_t i = 0; i < r->nnets; i++) {
		free(r->nets[i].syscall);
		free(r->nets[i].target);
		free(r->nets[i].decision);
		free(r->nets[i].rule);
	}
	free(r->nets);
	for (size_t i = 0; i < r->ncells; i++) {
		free(r->cells[i].status);
		free(r->cells[i].code);
	}
	free(r->cells);
	for (size_t i = 0; i < r->narts; i++) {
		free(r->arts[i].path);
		free(r->arts[i].sha256);
	}
	free(r->arts);
	sym_cache_free(r->syms);
}
