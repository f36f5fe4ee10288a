/*
 * phases.c - a run's phases for the readers (phases.h).
 */
#include "tools/review/phases.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int keep(const struct audit_phase *ph, void *arg)
{
	struct run_phases *p = arg;
	struct run_phase *nv = realloc(p->v, (p->n + 1) * sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	p->v = nv;
	nv[p->n] = (struct run_phase){
		.n = ph->n,
		.start = ph->started_ns,
		.end = ph->ended_ns,
		.first = ph->first_serial,
		.last = ph->last_serial,
		.exit_code = ph->exit_code,
		.name = strdup(ph->name ? ph->name : "?"),
		.status = strdup(ph->status ? ph->status : "?"),
		.cause = ph->cause ? strdup(ph->cause) : NULL,
	};
	p->n++;
	if (!nv[p->n - 1].name || !nv[p->n - 1].status ||
	    (ph->cause && !nv[p->n - 1].cause))
		return -ENOMEM;
	return 0;
}

int run_phases_load(struct audit *a, const char *run_id, struct run_phases *p)
{
	memset(p, 0, sizeof(*p));
	return audit_phases_each(a, run_id, keep, p);
}

void run_phases_free(struct run_phases *p)
{
	for (size_t i = 0; p && i < p->n; i++) {
		free(p->v[i].name);
		free(p->v[i].status);
		free(p->v[i].cause);
	}
	if (p)
		free(p->v);
}

struct run_phase *run_phase_find(const struct run_phases *p, long long serial)
{
	for (size_t i = 0; serial > 0 && i < p->n; i++)
		if (serial >= p->v[i].first && serial <= p->v[i].last)
			return &p->v[i];
	return NULL;
}

/* A row of no process (ward's egress proxy's connections): the phase
 * whose time it falls in. */
static struct run_phase *phase_at(const struct run_phases *p, long long ts)
{
	for (size_t i = 0; ts > 0 && i < p->n; i++)
		if (ts >= p->v[i].start && (!p->v[i].end || ts <= p->v[i].end))
			return &p->v[i];
	return NULL;
}

const char *run_phase_of(const struct run_phases *p, long long serial,
			 long long ts_ns)
{
	const struct run_phase *ph = serial > 0 ? run_phase_find(p, serial)
						: phase_at(p, ts_ns);

	return ph ? ph->name : NULL;
}

json_t *run_phases_json(const struct run_phases *p)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < p->n; i++) {
		const struct run_phase *ph = &p->v[i];
		json_t *o = json_pack(
			"{s:I, s:s, s:I, s:I, s:i, s:i, s:s, s:i, s:s?}", "n",
			(json_int_t)ph->n, "name", ph->name, "started_ns",
			(json_int_t)ph->start, "ended_ns", (json_int_t)ph->end,
			"first_serial", ph->first, "last_serial", ph->last,
			"status", ph->status, "exit_code", ph->exit_code,
			"cause", ph->cause);

		if (!o || json_array_append_new(arr, o)) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}
