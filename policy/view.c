/*
 * view.c - policy_view(): which trees of the host exist inside the run
 * (the tracer builds the run's mount namespace from it: tracer/view.c).
 * Pure: it reads the compiled policy and never touches the file system.
 *
 * A tree is shown when some rule may let the code at its content:
 *   fs allow rules      read, write, create, delete or exec on their path
 *                       (stat alone shows nothing: it reveals metadata of
 *                       what is shown, and "stat anywhere" must not bring
 *                       the whole host back)
 *   exec.allow          the glob's fixed leading directories, or the path
 *                       itself when it has no wildcard
 *   net unix rules      the socket's path (allowed connect, send, bind)
 * A tree is hidden (does not exist inside, even below a shown one) when a
 * deny rule takes read from it, and for every path policy_protect() named
 * (ward's own files: the audit database, its journal, its key).
 * $WORKDIR rules are left out: the workdir is mounted by the tracer. In
 * "view": "host" the whole host is shown; the hidden trees still hide.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "policy-int.h"

/* Bits that let the code at a file's content (stat does not). */
#define VIEW_FS_BITS                                                           \
	(WARD_FS_READ | WARD_FS_WRITE | WARD_FS_CREATE | WARD_FS_DELETE |      \
	 WARD_FS_EXEC)

static int add(char ***list, size_t *n, const char *path, size_t len)
{
	char **nl, *copy;

	if (!len || path[0] != '/')
		return 0;
	for (size_t i = 0; i < *n; i++)
		if (strlen((*list)[i]) == len && !memcmp((*list)[i], path, len))
			return 0;
	nl = realloc(*list, (*n + 1) * sizeof(*nl));
	if (!nl)
		return -ENOMEM;
	*list = nl;
	copy = strndup(path, len);
	if (!copy)
		return -ENOMEM;
	nl[(*n)++] = copy;
	return 0;
}

static int add_path(char ***list, size_t *n, const char *path)
{
	return path ? add(list, n, path, strlen(path)) : 0;
}

/* An exec glob's fixed leading directories (or the path: no wildcard). */
static int add_exec(struct policy_view *v, const char *glob)
{
	size_t wild = strcspn(glob, "*?[\\");
	size_t len = wild;

	if (glob[wild])
		while (len > 0 && glob[len - 1] != '/')
			len--;
	if (len > 1 && glob[len - 1] == '/')
		len--;
	return add(&v->show, &v->nshow, glob, len ? len : 1);
}

/* A phase's rule allows read of exactly r's path: in that phase it beats
 * r (check.c), so the file exists there. */
static bool phase_reads(const struct policy *p, const struct pol_fs_rule *r)
{
	for (size_t i = 0; i < p->nfs; i++)
		if (p->fs[i].phase && (p->fs[i].allow & WARD_FS_READ) &&
		    p->fs[i].path.bound &&
		    !strcmp(p->fs[i].path.bound, r->path.bound))
			return true;
	return false;
}

static int build(const struct policy *p, struct policy_view *v)
{
	int rc = 0;

	v->host = p->view_host;
	if (v->host)
		rc = add(&v->show, &v->nshow, "/", 1);
	for (size_t i = 0; !rc && i < p->nfs; i++) {
		const struct pol_fs_rule *r = &p->fs[i];

		if (r->path.workdir || !r->path.bound)
			continue;
		if (r->allow & VIEW_FS_BITS)
			rc = add_path(&v->show, &v->nshow, r->path.bound);
		else if ((r->deny & WARD_FS_READ) &&
			 (r->phase || !phase_reads(p, r)))
			rc = add_path(&v->hide, &v->nhide, r->path.bound);
	}
	for (size_t i = 0; !rc && i < p->nexec; i++)
		rc = add_exec(v, p->exec_globs[i]);
	for (size_t i = 0; !rc && i < p->nnet; i++) {
		const struct pol_net_rule *r = &p->net[i];

		if (!r->deny && r->family == AF_UNIX && r->has_path &&
		    !r->path.workdir && r->path.bound)
			rc = add_path(&v->show, &v->nshow, r->path.bound);
	}
	for (size_t i = 0; !rc && i < p->nprotect; i++) {
		rc = add_path(&v->hide, &v->nhide, p->protect[i]);
		if (!rc)
			rc = add_path(&v->record, &v->nrecord, p->protect[i]);
	}
	return rc;
}

int policy_view(const struct policy *p, struct policy_view *v)
{
	int rc;

	memset(v, 0, sizeof(*v));
	if (!p)
		return -EINVAL;
	rc = build(p, v);
	if (rc)
		policy_view_free(v);
	return rc;
}

void policy_view_free(struct policy_view *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->nshow; i++)
		free(v->show[i]);
	for (size_t i = 0; i < v->nhide; i++)
		free(v->hide[i]);
	for (size_t i = 0; i < v->nrecord; i++)
		free(v->record[i]);
	free(v->show);
	free(v->hide);
	free(v->record);
	memset(v, 0, sizeof(*v));
}

bool policy_view_host(const struct policy *p)
{
	return p && p->view_host;
}
