/*
 * layers.c - the record of which containment layers a run had.
 */
#include "tracer-int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int tracer_layer_add(struct tracer_result *res, const char *name, bool active,
		     const char *detail)
{
	struct tracer_layer *l = NULL;

	if (!name || !name[0] || strlen(name) >= sizeof(l->name))
		return -EINVAL;
	for (size_t i = 0; i < res->n_layers; i++)
		if (!strcmp(res->layers[i].name, name))
			l = &res->layers[i];
	if (!l) {
		if (res->n_layers >= TRACER_LAYERS_MAX)
			return -ENOSPC;
		l = &res->layers[res->n_layers++];
		snprintf(l->name, sizeof(l->name), "%s", name);
	}
	l->active = active;
	snprintf(l->detail, sizeof(l->detail), "%s", detail ? detail : "");
	return 0;
}

const struct tracer_layer *tracer_layer_find(const struct tracer_result *res,
					     const char *name)
{
	for (size_t i = 0; i < res->n_layers; i++)
		if (!strcmp(res->layers[i].name, name))
			return &res->layers[i];
	return NULL;
}

int tracer_layers_required(struct tracer_result *res,
			   unsigned long long require)
{
	const char *name;

	for (unsigned i = 0; (name = policy_layer_name(i)); i++) {
		const struct tracer_layer *l;

		if (!(require & (1ULL << i)))
			continue;
		l = tracer_layer_find(res, name);
		if (l && l->active)
			continue;
		snprintf(res->setup_error, sizeof(res->setup_error),
			 "required layer %s is not active: %s (drop it from "
			 "--require or the policy's \"require\" to run "
			 "without it)",
			 name,
			 !l		? "this ward does not set it up here"
			 : l->detail[0] ? l->detail
					: "not set up");
		return -ENOTSUP;
	}
	return 0;
}

bool tracer_requires(const struct tracer_opts *o, const char *layer)
{
	const char *name;

	for (unsigned i = 0; (name = policy_layer_name(i)); i++)
		if (!strcmp(name, layer))
			return o->require_layers & (1ULL << i);
	return false;
}
