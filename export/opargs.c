/*
 * PyTorch's operators for --torch (gprof_export_window_op_args). libgprof sees each operator
 * begin and end on its thread (preload/kineto.c: the External id PyTorch's profiler pushes),
 * and the start-up hook hands over, after the window, what PyTorch's profiler kept of each
 * one, as torch.profiler writes it: one JSON array of
 *
 *   [kid, user, "name", {args}, ts_ns, dur_ns, tid, fwd_kid]
 *
 * kid: Kineto's External id; user: 1 for a record_function scope; args: Kineto's own
 * ("Input Dims", "Input type", "Sequence number", a collective's "Collective name", ...)
 * without its External id; its start, duration and thread by PyTorch's clock; fwd_kid: the
 * forward operator a backward one links to ("fwdbwd"), 0: none. It is parsed and checked
 * here, each name interned and each args object kept as text written as it is.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>

#include "common/array.h"
#include "common/heap.h"
#include "export/internal.h"

#define ARGS_MAX (64u << 10) /* an operator's args text, at most; a longer one is left out */

struct gprof_op_args {
	struct gprof_map index; /* kid -> entry + 1 */
	struct gprof_op_entry *entries;
	size_t n, cap_entries;
	char *text;
	size_t len, cap;
	uint64_t since_ns; /* the window's start: an operator libgprof did not see, from here */
};

void gprof_op_args_free(struct gprof_op_args *a)
{
	if (!a)
		return;
	gprof_map_free(&a->index);
	gprof_free(a->entries);
	gprof_free(a->text);
	gprof_free(a);
}

static int add(struct gprof_op_args *a, const struct gprof_op_entry *e)
{
	if (gprof_array_room((void **)&a->entries, &a->cap_entries, a->n, sizeof(*e), 1024,
			     SIZE_MAX / sizeof(*e)))
		return -ENOMEM;
	a->entries[a->n++] = *e;
	return gprof_map_set(&a->index, e->kid, a->n);
}

/* Appends n bytes to the text: their offset, or -ENOMEM. */
static int64_t put_text(struct gprof_op_args *a, const char *s, size_t n)
{
	int64_t at = (int64_t)a->len;

	while (a->len + n > a->cap)
		if (gprof_array_room((void **)&a->text, &a->cap, a->cap, 1, ARGS_MAX, UINT32_MAX))
			return -ENOMEM;
	memcpy(a->text + a->len, s, n);
	a->len += n;
	return at;
}

static bool get_u64(const json_t *v, uint64_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return false;
	*out = (uint64_t)json_integer_value(v);
	return true;
}

/* One [kid, user, name, {args}, ts, dur, tid, fwd]: 0, -EINVAL (not one) or -ENOMEM. */
static int keep(struct gprof_op_args *a, const json_t *op)
{
	struct gprof_op_entry e = {0};
	const json_t *name = json_array_get(op, 2), *args = json_array_get(op, 3);
	uint64_t user, tid;
	char *s;
	size_t n;
	int64_t args_at = 0;

	if (json_array_size(op) != 8 || !get_u64(json_array_get(op, 0), &e.kid) || !e.kid ||
	    !get_u64(json_array_get(op, 1), &user) || user > 1 || !json_is_string(name) ||
	    !json_is_object(args) || !get_u64(json_array_get(op, 4), &e.ts_ns) ||
	    !get_u64(json_array_get(op, 5), &e.dur_ns) || !get_u64(json_array_get(op, 6), &tid) ||
	    tid > UINT32_MAX || !get_u64(json_array_get(op, 7), &e.fwd))
		return -EINVAL;
	e.user = user;
	e.tid = (uint32_t)tid;
	e.name = gprof_export_intern_n(json_string_value(name), json_string_length(name));
	s = json_object_size(args) ? json_dumps(args, JSON_COMPACT) : NULL;
	n = s ? strlen(s) : 0;
	if (n > 2 && n - 2 <= ARGS_MAX) {
		args_at = put_text(a, s + 1, n - 2);
		e.args_len = n - 2;
	}
	free(s);
	if (!e.name || args_at < 0)
		return -ENOMEM;
	e.args_at = (size_t)args_at;
	return add(a, &e);
}

struct gprof_op_args *gprof_op_args_parse(const char *json, size_t len, uint64_t since_ns,
					  const char **why)
{
	static const char *const nomem = "out of memory";
	struct gprof_op_args *a = gprof_calloc(1, sizeof(*a));
	json_t *root = json_loadb(json, len, 0, NULL), *op;
	size_t i;
	int err = 0;

	*why = nomem;
	if (!a || gprof_map_init(&a->index, 1024))
		goto fail;
	a->since_ns = since_ns;
	*why = "not a JSON array of [id, user, name, {args}, ts, dur, tid, fwd] operators";
	if (!json_is_array(root))
		goto fail;
	json_array_foreach(root, i, op)
	{
		err = keep(a, op);
		if (err)
			break;
	}
	if (err) {
		*why = err == -ENOMEM ? nomem : *why;
		goto fail;
	}
	json_decref(root);
	return a;
fail:
	json_decref(root);
	gprof_op_args_free(a);
	return NULL;
}

int gprof_op_args_merge(struct gprof_op_args *into, const struct gprof_op_args *from)
{
	size_t base = into->len;
	int64_t at = from->len ? put_text(into, from->text, from->len) : 0;
	int err = at < 0 ? (int)at : 0;

	for (size_t i = 0; !err && i < from->n; i++) {
		struct gprof_op_entry e = from->entries[i];

		e.args_at += base;
		err = add(into, &e);
	}
	return err;
}

const char *gprof_op_args_text(const struct gprof_op_args *a, const struct gprof_op_entry *e)
{
	return a->text + e->args_at;
}

size_t gprof_op_args_count(const struct gprof_op_args *a)
{
	return a ? a->n : 0;
}

struct gprof_op_entry *gprof_op_args_find(struct gprof_op_args *a, uint64_t kid)
{
	uint64_t v;

	if (!a || !kid || !gprof_map_get(&a->index, kid, &v))
		return NULL;
	return &a->entries[v - 1];
}

struct gprof_op_entry *gprof_op_args_unwritten(struct gprof_op_args *a, size_t *i,
					       uint64_t until_ns)
{
	while (a && *i < a->n) {
		struct gprof_op_entry *e = &a->entries[(*i)++];

		if (!e->written && e->ts_ns >= a->since_ns && e->ts_ns + e->dur_ns <= until_ns)
			return e;
	}
	return NULL;
}
