/* profiles.h - the policies shipped inside ward (generated from
 * profiles/NAME.json by tools/gen/embed.c at build time). Private to
 * policy/. */
#ifndef WARD_POLICY_PROFILES_H
#define WARD_POLICY_PROFILES_H

struct ward_profile {
	const char *name; /* file name without .json */
	const char *text; /* the JSON text */
};
extern const struct ward_profile ward_profiles[]; /* ends with { NULL, NULL } */

#endif
