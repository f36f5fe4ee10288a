/*
 * recguard.h - keeping the record out of the code's reach: the audit
 * database, its -wal, -shm and -journal files, its chain key and the seal
 * log.
 */
#ifndef WARD_TOOLS_RECGUARD_H
#define WARD_TOOLS_RECGUARD_H

#include <stddef.h>

struct policy;

/*
 * Refuses a database inside the workdir (the code can write there, and
 * rename the directories above it): returns -EPERM with msg saying so.
 * Otherwise puts the database's files and its key (by the path given and
 * by its real path) in the policy's floor (policy_protect) and returns 0;
 * -ENOMEM. The same for the seal log ($WARD_SEAL_LOG) when one is set.
 * workdir is absolute and resolved.
 */
int ward_guard_record(struct policy *pol, const char *db, const char *workdir,
		      char *msg, size_t n);

#endif
