/*
 * The tool's own figures, tallied as the events are read: the steps, and each device's GPU busy
 * time overall and per step (the kernels' totals are the library's summary's, summary.c). Busy
 * time is the length of the union of a device's intervals; it is counted (per step, so the
 * steps must be known first) once an interval is old, so that only the recent part of the
 * union is held.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/heap.h"
#include "export/summary.h"
#include "scripts/summary/tool.h"

/* The device's figures, added when new (with room per step once the steps are known). */
static struct tool_device *device(struct tool_trace *t, uint32_t id)
{
	struct tool_device *d;

	for (unsigned i = 0; i < t->n_dev; i++)
		if (t->dev[i].id == id)
			return &t->dev[i];
	if (t->n_dev == GPROF_EXPORT_MAX_DEVICES)
		return NULL; /* the summary says it is incomplete */
	d = &t->dev[t->n_dev];
	*d = (struct tool_device){.id = id, .spans.max = TOOL_SPANS_MAX};
	if (t->step_reach && !(d->step_busy_ns = gprof_calloc(t->n_steps + 1, sizeof(uint64_t))))
		return NULL;
	t->n_dev++;
	return d;
}

/* The first step that ends after b: step_reach is the running maximum of the steps' ends. */
static size_t first_step(const struct tool_trace *t, uint64_t b)
{
	size_t lo = 0, hi = t->n_steps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->step_reach[mid] <= b)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A device's busy time being counted, for gprof_spans_add_counting. */
struct counting {
	struct tool_trace *t;
	struct tool_device *d;
};

/* The oldest n spans of d's union are counted: within the steps' span, and in each step. */
static void count_spans(void *ctx, const struct gprof_spans *sp, size_t n)
{
	struct tool_trace *t = ((struct counting *)ctx)->t;
	struct tool_device *d = ((struct counting *)ctx)->d;
	uint64_t lo = t->n_steps ? t->step_begin : 0, hi = t->n_steps ? t->step_end : UINT64_MAX;

	d->busy_ns += gprof_spans_within(sp, 0, n, lo, hi);
	for (size_t k = 0; k < n; k++) {
		uint64_t b = sp->v[k].begin, e = sp->v[k].end;

		for (size_t i = first_step(t, b); i < t->n_steps && t->steps[i].ts_ns < e; i++)
			d->step_busy_ns[i] +=
			    gprof_spans_within(sp, k, k + 1, t->steps[i].ts_ns,
					       t->steps[i].ts_ns + t->steps[i].dur_ns);
	}
}

/* Holding more spans needs the steps: the busy times wait for a second reading. */
static void spans_over(struct tool_trace *t)
{
	t->spans_over = true;
	for (unsigned i = 0; i < t->n_dev; i++)
		gprof_spans_free(&t->dev[i].spans);
}

/* Work on a device: what busy time is made of, by its kind's summary class (export.h). */
static bool on_gpu(const struct gprof_export_event *e)
{
	return gprof_export_summary_class(e->kind) <= GPROF_SUM_EARLIER;
}

int tool_figures_add(struct tool_trace *t, const struct gprof_export_event *e)
{
	struct tool_device *d;
	int rc;

	if (e->kind == GPROF_EXPORT_STEP) {
		if (gprof_array_room((void **)&t->steps, &t->steps_cap, t->n_steps,
				     sizeof(*t->steps), 64, SIZE_MAX))
			return -1;
		t->steps[t->n_steps++] = (struct tool_step){e->u.step, e->ts_ns, e->dur_ns};
		return 0;
	}
	if (!on_gpu(e) || !(d = device(t, e->device)) || t->spans_over)
		return 0;
	rc = gprof_spans_add(&d->spans, e->ts_ns, e->ts_ns + e->dur_ns);
	if (rc == -ENOSPC)
		spans_over(t);
	return rc == -ENOMEM ? -1 : 0;
}

static int cmp_step(const void *a, const void *b)
{
	const struct tool_step *x = a, *y = b;

	return x->ts_ns < y->ts_ns ? -1 : x->ts_ns > y->ts_ns;
}

/* qsort, which must not be given NULL even for no elements */
static void sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n)
		gprof_sort(base, n, size, cmp);
}

int tool_figures_steps(struct tool_trace *t)
{
	sort(t->steps, t->n_steps, sizeof(*t->steps), cmp_step);
	t->step_reach = gprof_calloc(t->n_steps + 1, sizeof(*t->step_reach));
	if (!t->step_reach)
		return -1;
	for (size_t i = 0; i < t->n_steps; i++) {
		const struct tool_step *s = &t->steps[i];
		uint64_t end = s->ts_ns + s->dur_ns;

		if (!i || s->ts_ns < t->step_begin)
			t->step_begin = s->ts_ns;
		if (!i || end > t->step_end)
			t->step_end = end;
		t->step_ns += s->dur_ns;
		t->step_reach[i] = t->step_end;
	}
	for (unsigned i = 0; i < t->n_dev; i++) {
		t->dev[i].step_busy_ns = gprof_calloc(t->n_steps + 1, sizeof(uint64_t));
		if (!t->dev[i].step_busy_ns)
			return -1;
	}
	return 0;
}

int tool_figures_busy(struct tool_trace *t, const struct gprof_export_event *e)
{
	struct counting c = {t, NULL};

	if (!on_gpu(e))
		return 0;
	c.d = device(t, e->device);
	if (!c.d) /* past the 16th device (or a device new to this reading) */
		return 0;
	return gprof_spans_add_counting(&c.d->spans, e->ts_ns, e->ts_ns + e->dur_ns, count_spans,
					&c)
		   ? -1
		   : 0;
}

/* Largest total first; equal totals by name, so the order does not depend on the input's. */
static int cmp_total(const void *a, const void *b)
{
	const struct tool_kernel *x = a, *y = b;

	return x->ns != y->ns ? (x->ns > y->ns ? -1 : 1) : strcmp(x->name, y->name);
}

/* The kernels' totals and all GPU time: the library's summary's, which had the same events. */
static int take_kernels(struct tool_trace *t)
{
	size_t n = gprof_summary_kernels(t->summary);

	t->gpu_ns = gprof_summary_gpu_ns(t->summary);
	t->kernels = n ? gprof_calloc(n, sizeof(*t->kernels)) : NULL;
	if (n && !t->kernels)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const struct gprof_export_str *name;
		struct tool_kernel *k = &t->kernels[i];

		gprof_summary_kernel(t->summary, i, &name, &k->calls, &k->ns);
		k->name = name->raw;
	}
	t->n_kernels = n;
	sort(t->kernels, t->n_kernels, sizeof(*t->kernels), cmp_total);
	return 0;
}

int tool_figures_finish(struct tool_trace *t)
{
	for (unsigned i = 0; i < t->n_dev; i++) {
		struct counting c = {t, &t->dev[i]};

		count_spans(&c, &t->dev[i].spans, t->dev[i].spans.n);
	}
	return take_kernels(t);
}

void tool_figures_free(struct tool_trace *t)
{
	gprof_free(t->steps);
	gprof_free(t->step_reach);
	gprof_free(t->kernels);
	for (unsigned i = 0; i < t->n_dev; i++) {
		gprof_spans_free(&t->dev[i].spans);
		gprof_free(t->dev[i].step_busy_ns);
	}
}

bool tool_step_stats(const struct tool_trace *t, struct gprof_stats *st)
{
	uint64_t *d = t->n_steps ? gprof_malloc(t->n_steps * sizeof(*d)) : NULL;
	bool ok = d != NULL;

	for (size_t i = 0; ok && i < t->n_steps; i++)
		d[i] = t->steps[i].dur_ns;
	ok = ok && gprof_stats_of(d, t->n_steps, st);
	gprof_free(d);
	return ok;
}
