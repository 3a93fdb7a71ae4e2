/*
 * User annotations on the GPU's streams (Kineto's gpu_user_annotation): each NVTX range or
 * record_function scope whose GPU work ran on a stream gets a span there, from its first work's
 * start to its last one's end. GPU events name their innermost annotation (CUPTI's external
 * correlation of that kind); the annotation's host event gives the name. Gathered while a
 * window's file is written, written at its end. Writer thread only.
 */
#include <errno.h>
#include <stdlib.h>

#include "common/array.h"
#include "common/heap.h"
#include "common/spans.h"
#include "export/internal.h"

#define SLOTS_FIRST 256

static int map_ready(struct gprof_map *m)
{
	return gprof_map_slots(m) ? 0 : gprof_map_init(m, SLOTS_FIRST);
}

static void fail(struct gprof_annotations *a)
{
	a->failed = true;
}

void gprof_annotations_name(struct gprof_annotations *a, uint32_t id,
			    const struct gprof_export_str *name)
{
	if (map_ready(&a->names) || gprof_map_set(&a->names, id, (uint64_t)(uintptr_t)name))
		fail(a);
}

/* One span a (annotation, device, stream); streams past 2^24 share keys, checked on use. */
static uint64_t span_key(uint32_t id, uint32_t device, uint32_t stream)
{
	return (uint64_t)id << 32 | (uint64_t)(device & 0xff) << 24 | (stream & 0xffffff);
}

void gprof_annotations_work(struct gprof_annotations *a, uint32_t id,
			    const struct gprof_export_event *ev)
{
	uint64_t key = span_key(id, ev->device, ev->stream), at, end = ev->ts_ns + ev->dur_ns;
	struct gprof_annotation_span *s;

	if (map_ready(&a->spans)) {
		fail(a);
		return;
	}
	if (gprof_map_get(&a->spans, key, &at)) {
		s = &a->v[at];
		if (s->device != ev->device || s->stream != ev->stream)
			return;
		s->start = ev->ts_ns < s->start ? ev->ts_ns : s->start;
		s->end = end > s->end ? end : s->end;
		return;
	}
	if (gprof_array_room((void **)&a->v, &a->cap, a->n, sizeof(*a->v), 64, SIZE_MAX / 2) ||
	    gprof_map_set(&a->spans, key, a->n)) {
		fail(a);
		return;
	}
	a->v[a->n++] = (struct gprof_annotation_span){
	    .start = ev->ts_ns, .end = end, .id = id, .device = ev->device, .stream = ev->stream};
}

static int by_track_then_nesting(const void *x, const void *y)
{
	const struct gprof_annotation_span *a = x, *b = y;

	return gprof_span_order((uint64_t)a->device << 32 | a->stream, a->start, a->end,
				(uint64_t)b->device << 32 | b->stream, b->start, b->end);
}

size_t gprof_annotations_finish(struct gprof_annotations *a)
{
	uint64_t open[64]; /* ends of the spans that enclose the one at hand, on its track */
	size_t depth = 0, kept = 0;

	if (!a->n)
		return 0;
	gprof_sort(a->v, a->n, sizeof(*a->v), by_track_then_nesting);
	for (size_t i = 0; i < a->n; i++) {
		struct gprof_annotation_span *s = &a->v[i];
		uint64_t name;

		if (i && (s->device != s[-1].device || s->stream != s[-1].stream))
			depth = 0;
		while (depth && open[depth - 1] <= s->start)
			depth--;
		s->name = gprof_map_get(&a->names, s->id, &name)
			      ? (const struct gprof_export_str *)(uintptr_t)name
			      : NULL;
		/*
		 * Spans of one track must nest. Work of two threads' annotations interleaved on
		 * one stream can make them cross: the later one is left out.
		 */
		if (!s->name || (depth && s->end > open[depth - 1]) || depth == ARRAY_SIZE(open)) {
			s->name = NULL;
			continue;
		}
		open[depth++] = s->end;
		kept++;
	}
	return kept;
}

void gprof_annotations_free(struct gprof_annotations *a)
{
	gprof_map_free(&a->names);
	gprof_map_free(&a->spans);
	gprof_free(a->v);
	*a = (struct gprof_annotations){0};
}
