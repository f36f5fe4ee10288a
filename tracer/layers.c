/*
 * layers.c - the record of which containment layers a run had.
 */
#include "tracer.h"

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
