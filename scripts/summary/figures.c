/*
 * The tool's own figures, tallied as the events are read: the steps, calls and GPU time per
 * kernel name, and each device's GPU busy time overall and per step. Busy time is the length of
 * the union of a device's intervals; it is counted (per step, so the steps must be known first)
 * once an interval is old, so that only the recent part of the union is held.
 */
#include <stdlib.h>
#include <string.h>

#include "export/internal.h"
#include "scripts/summary/tool.h"

/* Room for one more of n elements of size at *p, doubling; false when out of memory. */
static bool grow(void **p, size_t *cap, size_t n, size_t size)
{
	size_t c = *cap ? 2 * *cap : 64;
	void *q;

	if (n < *cap)
		return true;
	q = realloc(*p, c * size);
	if (!q)
		return false;
	*p = q;
	*cap = c;
	return true;
}

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
	*d = (struct tool_device){.id = id};
	if (t->step_reach && !(d->step_busy_ns = calloc(t->n_steps + 1, sizeof(uint64_t))))
		return NULL;
	t->n_dev++;
	return d;
}

/* The row of a kernel name: open addressing on its (interned) address. */
static struct tool_kernel *kernel_row(struct tool_kernel *tab, size_t mask, const char *name)
{
	size_t i = (size_t)(((uintptr_t)name >> 4) * 0x9e3779b97f4a7c15ull >> 20) & mask;

	while (tab[i].name && tab[i].name != name)
		i = (i + 1) & mask;
	return &tab[i];
}

/* The table at most half full, twice as large when it would be more. */
static bool kernels_room(struct tool_trace *t)
{
	size_t mask = t->kernels_mask ? 2 * t->kernels_mask + 1 : 63;
	struct tool_kernel *tab;

	if (t->kernels_mask && 2 * (t->n_kernels + 1) <= t->kernels_mask + 1)
		return true;
	tab = calloc(mask + 1, sizeof(*tab));
	if (!tab)
		return false;
	for (size_t i = 0; t->kernels_mask && i <= t->kernels_mask; i++)
		if (t->kernels[i].name)
			*kernel_row(tab, mask, t->kernels[i].name) = t->kernels[i];
	free(t->kernels);
	t->kernels = tab;
	t->kernels_mask = mask;
	return true;
}

static bool add_kernel(struct tool_trace *t, const char *name, uint64_t ns)
{
	struct tool_kernel *k = t->kernels ? kernel_row(t->kernels, t->kernels_mask, name) : NULL;

	if (!k || !k->name) {
		if (!kernels_room(t))
			return false;
		k = kernel_row(t->kernels, t->kernels_mask, name);
		k->name = name;
		t->n_kernels++;
	}
	k->calls++;
	k->ns += ns;
	return true;
}

/* Index of the first span that ends at or after b (that may touch or overlap [b, ...)). */
static size_t first_reaching(const struct tool_device *d, uint64_t b)
{
	size_t lo = 0, hi = d->n_spans;

	if (!hi || d->spans[hi - 1].end < b) /* intervals come nearly in order */
		return hi;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->spans[mid].end < b)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* [b, e) joins the union held (room for one more span is there). */
static void add_span(struct tool_device *d, uint64_t b, uint64_t e)
{
	size_t i, j;

	b = b < d->counted_end ? d->counted_end : b;
	if (e <= b)
		return;
	i = first_reaching(d, b);
	for (j = i; j < d->n_spans && d->spans[j].begin <= e; j++) {
		b = d->spans[j].begin < b ? d->spans[j].begin : b;
		e = d->spans[j].end > e ? d->spans[j].end : e;
	}
	/* spans[i, j) become one at i (a new one when i == j) */
	memmove(d->spans + i + 1, d->spans + j, (d->n_spans - j) * sizeof(*d->spans));
	d->n_spans = d->n_spans - (j - i) + 1;
	d->spans[i] = (struct tool_span){b, e};
}

static uint64_t overlap(uint64_t b, uint64_t e, uint64_t lo, uint64_t hi)
{
	b = b > lo ? b : lo;
	e = e < hi ? e : hi;
	return e > b ? e - b : 0;
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

/* The oldest n spans of the union are counted: within the steps' span, and in each step. */
static void count_spans(struct tool_trace *t, struct tool_device *d, size_t n)
{
	uint64_t lo = t->n_steps ? t->step_begin : 0, hi = t->n_steps ? t->step_end : UINT64_MAX;

	for (size_t k = 0; k < n; k++) {
		uint64_t b = d->spans[k].begin, e = d->spans[k].end;

		d->busy_ns += overlap(b, e, lo, hi);
		for (size_t i = first_step(t, b); i < t->n_steps && t->steps[i].ts_ns < e; i++)
			d->step_busy_ns[i] += overlap(b, e, t->steps[i].ts_ns,
						      t->steps[i].ts_ns + t->steps[i].dur_ns);
	}
	if (!n)
		return;
	d->counted_end = d->spans[n - 1].end;
	d->n_spans -= n;
	memmove(d->spans, d->spans + n, d->n_spans * sizeof(*d->spans));
}

/* Room for one more span: up to TOOL_SPANS_MAX; false when out of memory. */
static bool span_room(struct tool_device *d)
{
	return d->n_spans < TOOL_SPANS_MAX &&
	       grow((void **)&d->spans, &d->cap, d->n_spans, sizeof(*d->spans));
}

/* Holding more spans needs the steps: the busy times wait for a second reading. */
static void spans_over(struct tool_trace *t)
{
	t->spans_over = true;
	for (unsigned i = 0; i < t->n_dev; i++) {
		free(t->dev[i].spans);
		t->dev[i].spans = NULL;
		t->dev[i].n_spans = t->dev[i].cap = 0;
	}
}

int tool_figures_add(struct tool_trace *t, const struct gprof_export_event *e)
{
	struct tool_device *d;

	if (e->kind == GPROF_EXPORT_STEP) {
		if (!grow((void **)&t->steps, &t->steps_cap, t->n_steps, sizeof(*t->steps)))
			return -1;
		t->steps[t->n_steps++] = (struct tool_step){e->u.step, e->ts_ns, e->dur_ns};
		return 0;
	}
	if (e->kind == GPROF_EXPORT_MEMORY || !(d = device(t, e->device)))
		return 0;
	t->gpu_ns += e->dur_ns;
	if (e->kind == GPROF_EXPORT_KERNEL && !add_kernel(t, e->name->raw, e->dur_ns))
		return -1;
	if (t->spans_over)
		return 0;
	if (d->n_spans == TOOL_SPANS_MAX)
		spans_over(t);
	else if (span_room(d))
		add_span(d, e->ts_ns, e->ts_ns + e->dur_ns);
	else
		return -1;
	return 0;
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
		qsort(base, n, size, cmp);
}

int tool_figures_steps(struct tool_trace *t)
{
	sort(t->steps, t->n_steps, sizeof(*t->steps), cmp_step);
	t->step_reach = calloc(t->n_steps + 1, sizeof(*t->step_reach));
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
		t->dev[i].step_busy_ns = calloc(t->n_steps + 1, sizeof(uint64_t));
		if (!t->dev[i].step_busy_ns)
			return -1;
	}
	return 0;
}

int tool_figures_busy(struct tool_trace *t, const struct gprof_export_event *e)
{
	struct tool_device *d;

	if (e->kind == GPROF_EXPORT_STEP || e->kind == GPROF_EXPORT_MEMORY)
		return 0;
	d = device(t, e->device);
	if (!d) /* past the 16th device (or a device new to this reading) */
		return 0;
	if (d->n_spans == TOOL_SPANS_MAX)
		count_spans(t, d, TOOL_SPANS_MAX / 2);
	if (!span_room(d))
		return -1;
	add_span(d, e->ts_ns, e->ts_ns + e->dur_ns);
	return 0;
}

/* Largest total first; equal totals by name, so the order does not depend on the input's. */
static int cmp_total(const void *a, const void *b)
{
	const struct tool_kernel *x = a, *y = b;

	return x->ns != y->ns ? (x->ns > y->ns ? -1 : 1) : strcmp(x->name, y->name);
}

int tool_figures_finish(struct tool_trace *t)
{
	size_t n = 0;

	for (unsigned i = 0; i < t->n_dev; i++)
		count_spans(t, &t->dev[i], t->dev[i].n_spans);
	for (size_t i = 0; t->kernels && i <= t->kernels_mask; i++)
		if (t->kernels[i].name)
			t->kernels[n++] = t->kernels[i];
	sort(t->kernels, n, sizeof(*t->kernels), cmp_total);
	return 0;
}

void tool_figures_free(struct tool_trace *t)
{
	free(t->steps);
	free(t->step_reach);
	free(t->kernels);
	for (unsigned i = 0; i < t->n_dev; i++) {
		free(t->dev[i].spans);
		free(t->dev[i].step_busy_ns);
	}
}
