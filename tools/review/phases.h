/*
 * phases.h - a run's phases as the readers show them (ward show, report,
 * export): each phase's name, times, outcome and the serials of its
 * processes, so that every event is told its phase by its proc_serial.
 * tools/ only.
 */
#ifndef WARD_TOOLS_PHASES_H
#define WARD_TOOLS_PHASES_H

#include <jansson.h>
#include <stddef.h>

#include "audit/audit.h"

struct run_phase {
	long long n, start, end;
	int first, last; /* process serials; 0, 0: none */
	int exit_code;
	char *name, *status, *cause; /* owned; cause may be NULL */
	long long denials;	     /* for the caller to count (ward report) */
};

struct run_phases {
	struct run_phase *v;
	size_t n;
};

/* The phases of run_id (none for a run without, or an older file).
 * 0 or -errno; free with run_phases_free either way. */
int run_phases_load(struct audit *a, const char *run_id, struct run_phases *p);
void run_phases_free(struct run_phases *p);
/* The phase whose processes include serial, or NULL. */
struct run_phase *run_phase_find(const struct run_phases *p, long long serial);
/* Its name, or NULL; a row of no process (serial 0: the egress proxy's)
 * by its time. */
const char *run_phase_of(const struct run_phases *p, long long serial,
			 long long ts_ns);
/* [{"n", "name", "started_ns", "ended_ns", "first_serial",
 * "last_serial", "status", "exit_code", "cause"}, ...] (new reference),
 * NULL when out of memory. */
json_t *run_phases_json(const struct run_phases *p);

#endif
