/* The interval union of spans.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/heap.h"
#include "common/spans.h"

#define FIRST_CAP 64

/* Index of the first span that ends at or after t (that may touch or overlap [t, ...)). */
static size_t first_reaching(const struct gprof_spans *s, uint64_t t)
{
	size_t lo = 0, hi = s->n;

	/* Intervals come nearly in time order: most land at the end. */
	if (!hi || s->v[hi - 1].end < t)
		return hi;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->v[mid].end < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int gprof_spans_add(struct gprof_spans *s, uint64_t b, uint64_t e)
{
	int rc = gprof_array_room((void **)&s->v, &s->cap, s->n, sizeof(*s->v), FIRST_CAP, s->max);
	size_t i, j;

	if (rc)
		return rc;
	b = b < s->floor ? s->floor : b;
	if (e <= b)
		return 0;
	i = first_reaching(s, b);
	for (j = i; j < s->n && s->v[j].begin <= e; j++) {
		b = s->v[j].begin < b ? s->v[j].begin : b;
		e = s->v[j].end > e ? s->v[j].end : e;
	}
	/* v[i, j) merge into one at i (a new one when i == j). */
	memmove(s->v + i + 1, s->v + j, (s->n - j) * sizeof(*s->v));
	s->n = s->n - (j - i) + 1;
	s->v[i] = (struct gprof_span){b, e};
	return 0;
}

void gprof_spans_retire(struct gprof_spans *s, size_t n)
{
	s->floor = s->v[n - 1].end;
	s->n -= n;
	memmove(s->v, s->v + n, s->n * sizeof(*s->v));
}

uint64_t gprof_spans_within(const struct gprof_spans *s, size_t from, size_t to, uint64_t lo,
			    uint64_t hi)
{
	uint64_t ns = 0;

	for (size_t i = from; i < to; i++) {
		uint64_t b = s->v[i].begin < lo ? lo : s->v[i].begin;
		uint64_t e = s->v[i].end > hi ? hi : s->v[i].end;

		ns += e > b ? e - b : 0;
	}
	return ns;
}

int gprof_spans_add_counting(struct gprof_spans *s, uint64_t b, uint64_t e,
			     void (*count)(void *ctx, const struct gprof_spans *s, size_t n),
			     void *ctx)
{
	int rc = gprof_spans_add(s, b, e);

	if (rc && s->n) {
		size_t half = s->n / 2 ? s->n / 2 : 1;

		count(ctx, s, half);
		gprof_spans_retire(s, half);
		rc = gprof_spans_add(s, b, e);
	}
	return rc;
}

void gprof_spans_free(struct gprof_spans *s)
{
	gprof_free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}
