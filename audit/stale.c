/*
 * stale.c - which ward wrote a run, and closing the runs whose ward died.
 *
 * audit_run_begin() records the writing ward's host, pid, start time (in
 * clock ticks since boot, so a reused pid is told apart) and the boot id.
 * A run still 'running' whose ward is gone was cut short (SIGKILL, crash):
 * audit_reap_stale() marks it 'aborted'. Only runs of this host are
 * judged: a pid means nothing elsewhere.
 */
#include "audit/audit.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "audit/audit-int.h"

#define REAP_CAUSE                                                             \
	"ward stopped before the run ended (killed or crashed); the record "   \
	"holds what was written until then"

/* Reads a small file into buf, NUL-terminated. Bytes read, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t got;

	if (fd < 0)
		return -1;
	do
		got = read(fd, buf, n - 1);
	while (got < 0 && errno == EINTR);
	close(fd);
	if (got < 0)
		return -1;
	buf[got] = '\0';
	return got;
}

/* Field 22 (starttime) of /proc/PID/stat, or 0 if it cannot be read; its
 * state (field 3) into *state when state is not NULL ('?' if unread). The
 * command name (field 2) may hold spaces and parentheses: fields are
 * counted after its last ')'. */
static long long start_ticks_of(const char *stat_path, char *state)
{
	char buf[1024];
	const char *p;
	long long ticks = 0;

	if (state)
		*state = '?';
	if (read_small(stat_path, buf, sizeof(buf)) <= 0 ||
	    !(p = strrchr(buf, ')')) || !p[1] || !p[2])
		return 0;
	if (state)
		*state = p[2];
	/* p + 2 is field 3 (state); starttime is the 20th field from it */
	if (sscanf(p + 2,
		   "%*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
		   "%*s %*s %*s %*s %*s %*s %*s %lld",
		   &ticks) != 1)
		return 0;
	return ticks;
}

void audit_self_get(struct audit_self *s)
{
	struct utsname un;
	char *nl;

	memset(s, 0, sizeof(*s));
	s->pid = getpid();
	s->start_ticks = start_ticks_of("/proc/self/stat", NULL);
	if (read_small("/proc/sys/kernel/random/boot_id", s->boot_id,
		       sizeof(s->boot_id)) > 0 &&
	    (nl = strchr(s->boot_id, '\n')))
		*nl = '\0';
	if (uname(&un) == 0)
		snprintf(s->host, sizeof(s->host), "%s", un.nodename);
}

/*
 * Whether the ward recorded as (pid, ticks) on this boot may still run.
 * Gone: no such process, a process with another start time (the pid was
 * reused), or that ward dead and not reaped yet (a zombie). A process ward may not signal (EPERM) or whose start time it
 * cannot read counts as alive: never close a live run.
 */
static bool ward_alive(long long pid, long long ticks)
{
	char path[64], state;
	long long now;

	if (pid <= 0 || pid > INT32_MAX)
		return true; /* not recorded: cannot tell */
	if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
		return false;
	snprintf(path, sizeof(path), "/proc/%lld/stat", pid);
	now = start_ticks_of(path, &state);
	if (ticks > 0 && now == ticks && (state == 'Z' || state == 'X'))
		return false; /* that ward, dead and not yet reaped */
	return !(ticks > 0 && now > 0 && now != ticks);
}

/* Whether the ward recorded (on this host) with boot id boot, pid and
 * start ticks is gone: an earlier boot, or ward_alive() says so. A pid not
 * recorded (< 0) cannot tell: not gone. */
static bool ward_gone(const struct audit_self *me, const char *boot,
		      long long pid, long long ticks)
{
	if (strcmp(boot, me->boot_id))
		return true; /* an earlier boot: its ward is gone */
	return pid >= 0 && !ward_alive(pid, ticks);
}

int audit_run_ward_gone(const struct audit_run *r)
{
	struct audit_self me;

	if (!r->status || strcmp(r->status, "running") || !r->host ||
	    !r->boot_id)
		return 0;
	audit_self_get(&me);
	if (strcmp(r->host, me.host))
		return 0; /* another host's pid means nothing here */
	return ward_gone(&me, r->boot_id, r->ward_pid, r->ward_start_ticks);
}

int audit_idlist_add(struct audit_idlist *l, const char *id)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 8;
		void *p = realloc(l->id, cap * sizeof(l->id[0]));

		if (!p)
			return -ENOMEM;
		l->id = p;
		l->cap = cap;
	}
	snprintf(l->id[l->n++], sizeof(l->id[0]), "%s", id);
	return 0;
}

/* The running runs of this host whose ward is gone, into l. */
static int find_stale(struct audit *a, const struct audit_self *me,
		      struct audit_idlist *l)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(a->db,
				    "SELECT id, boot_id, ward_pid,"
				    " ward_start_ticks FROM runs"
				    " WHERE status = 'running' AND host = ?1"
				    " AND boot_id NOT NULL",
				    -1, &st, NULL);
	int r = 0;

	if (rc != SQLITE_OK)
		return audit_sqlfail(a, rc, a->path);
	sqlite3_bind_text(st, 1, me->host, -1, SQLITE_STATIC);
	while (!r && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *id = (const char *)sqlite3_column_text(st, 0);
		const char *boot = (const char *)sqlite3_column_text(st, 1);
		long long pid = sqlite3_column_type(st, 2) == SQLITE_NULL
					? -1
					: sqlite3_column_int64(st, 2);

		if (!id || !boot || strlen(id) != AUDIT_RUN_ID_LEN)
			continue; /* not written by audit_run_begin() */
		if (ward_gone(me, boot, pid, sqlite3_column_int64(st, 3)) &&
		    audit_idlist_add(l, id))
			r = audit_fail(a, -ENOMEM, "out of memory");
	}
	if (!r && rc != SQLITE_ROW && rc != SQLITE_DONE)
		r = audit_sqlfail(a, rc, a->path);
	sqlite3_finalize(st);
	return r;
}

/* The run ends at its last recorded moment; counts are of the rows it
 * has. A run that ended meanwhile (status not 'running') is left alone. */
static const char reap_sql[] =
	"UPDATE runs SET status = 'aborted', cause = ?2, ended_ns = e.t,"
	" duration_ms = (e.t - runs.started_ns) / 1000000,"
	" events = (SELECT count(*) FROM events WHERE run_id = ?1),"
	" denials = (SELECT count(*) FROM events WHERE run_id = ?1"
	"            AND decision <> 'allow'),"
	" processes = (SELECT count(*) FROM processes WHERE run_id = ?1)"
	" FROM (SELECT max((SELECT started_ns FROM runs WHERE id = ?1),"
	"   coalesce((SELECT max(ts_ns) FROM events WHERE run_id = ?1), 0),"
	"   coalesce((SELECT max(ts_ns) FROM outputs WHERE run_id = ?1), 0),"
	"   coalesce((SELECT max(max(start_ns, coalesce(exec_ns, 0),"
	"                            coalesce(exit_ns, 0)))"
	"             FROM processes WHERE run_id = ?1), 0)) AS t) AS e"
	" WHERE runs.id = ?1 AND runs.status = 'running'";

static int mark_aborted(struct audit *a, const struct audit_idlist *l, int *n)
{
	sqlite3_stmt *st = NULL;
	int r = 0,
	    rc = sqlite3_exec(a->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);

	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(a->db, reap_sql, -1, &st, NULL);
	for (size_t i = 0; rc == SQLITE_OK && i < l->n; i++) {
		sqlite3_bind_text(st, 1, l->id[i], -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, REAP_CAUSE, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
		if (rc == SQLITE_DONE) {
			int changed = sqlite3_changes(a->db);

			*n += changed;
			rc = sqlite3_reset(st);
			/* its ward cannot seal it any more: seal what is
			 * there (chain.c) */
			if (rc == SQLITE_OK && changed && a->key.loaded &&
			    audit_chain_seal_reaped(a, l->id[i]))
				rc = SQLITE_ERROR;
		}
	}
	if (rc != SQLITE_OK)
		r = audit_sqlfail(a, rc, a->path);
	sqlite3_finalize(st);
	if (!r && (rc = sqlite3_exec(a->db, "COMMIT", NULL, NULL, NULL)))
		r = audit_sqlfail(a, rc, a->path);
	audit_seals_done(a, !r);
	if (r) {
		*n = 0;
		if (!sqlite3_get_autocommit(a->db))
			sqlite3_exec(a->db, "ROLLBACK", NULL, NULL, NULL);
	}
	return r;
}

int audit_reap_locked(struct audit *a, const struct audit_self *me, int *reaped)
{
	struct audit_idlist l = { 0 };
	int n = 0, r;

	if (reaped)
		*reaped = 0;
	if (a->readonly)
		return audit_fail(a, -EROFS, "%s: opened read-only", a->path);
	if (!me->boot_id[0] || !me->host[0])
		return 0; /* cannot tell which runs are this host's */
	r = find_stale(a, me, &l);
	if (!r && l.n)
		r = mark_aborted(a, &l, &n);
	free(l.id);
	if (reaped)
		*reaped = n;
	return r;
}

int audit_reap_stale(struct audit *a, int *reaped)
{
	struct audit_self me;
	int r;

	audit_self_get(&me);
	pthread_mutex_lock(&a->lock);
	r = audit_reap_locked(a, &me, reaped);
	pthread_mutex_unlock(&a->lock);
	return r;
}
