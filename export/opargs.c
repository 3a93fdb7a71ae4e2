/*
 * PyTorch operators' inputs for --torch (gprof_export_window_op_args): what torch.profiler's
 * record_shapes writes of an operator ("Input Dims", "Input type", "Input Strides",
 * "Concrete Inputs"; a collective's "Collective name", "dtype", ...), by the operator's
 * RecordFunction id. PyTorch's NVTX mode, which gives libgprof the operators as they run,
 * carries their sizes only; --torch's start-up hook reads the rest from PyTorch's execution
 * trace observer and hands it over at the window's end as one JSON array, [[id, {args}], ...].
 * It is parsed and checked here, and each object kept as the text of its members, written as
 * it is inside an operator's args.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>

#include "common/array.h"
#include "export/internal.h"

#define ARGS_MAX (64u << 10) /* an operator's args text, at most; a longer one is left out */

struct gprof_op_args {
	struct gprof_map index; /* id -> offset in text << 32 | length */
	char *text;
	size_t len, cap;
};

void gprof_op_args_free(struct gprof_op_args *a)
{
	if (!a)
		return;
	gprof_map_free(&a->index);
	free(a->text);
	free(a);
}

/* Keeps the members of object o ("{...}" without its braces) as id's. 0 or -ENOMEM. */
static int keep(struct gprof_op_args *a, uint64_t id, const json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT);
	size_t n = s ? strlen(s) : 0;
	int err = s ? 0 : -ENOMEM;

	if (n > 2 && n - 2 <= ARGS_MAX) {
		while (!err && a->len + n > a->cap)
			err = gprof_array_room((void **)&a->text, &a->cap, a->cap, 1, ARGS_MAX,
					       UINT32_MAX);
		if (!err) {
			memcpy(a->text + a->len, s + 1, n - 2);
			err = gprof_map_set(&a->index, id, (uint64_t)a->len << 32 | (n - 2));
			a->len += n - 2;
		}
	}
	free(s);
	return err;
}

struct gprof_op_args *gprof_op_args_parse(const char *json, size_t len, const char **why)
{
	static const char *const nomem = "out of memory";
	struct gprof_op_args *a = calloc(1, sizeof(*a));
	json_t *root = json_loadb(json, len, 0, NULL), *pair;
	size_t i;

	*why = nomem;
	if (!a || gprof_map_init(&a->index, 1024))
		goto fail;
	*why = "not a JSON array of [id, {args}] pairs";
	if (!json_is_array(root))
		goto fail;
	json_array_foreach(root, i, pair)
	{
		json_t *id = json_array_get(pair, 0), *args = json_array_get(pair, 1);

		if (json_array_size(pair) != 2 || !json_is_integer(id) ||
		    json_integer_value(id) <= 0 || !json_is_object(args))
			goto fail;
		if (keep(a, (uint64_t)json_integer_value(id), args)) {
			*why = nomem;
			goto fail;
		}
	}
	json_decref(root);
	return a;
fail:
	json_decref(root);
	gprof_op_args_free(a);
	return NULL;
}

size_t gprof_op_args_count(const struct gprof_op_args *a)
{
	return a ? a->index.n : 0;
}

const char *gprof_op_args_find(const struct gprof_op_args *a, uint64_t id, size_t *len)
{
	uint64_t v;

	if (!a || !id || !gprof_map_get(&a->index, id, &v))
		return NULL;
	*len = (uint32_t)v;
	return a->text + (v >> 32);
}
