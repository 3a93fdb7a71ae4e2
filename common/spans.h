/*
 * A union of time intervals in bounded memory: the GPU busy time of the library's summary and
 * of gprof-summary. Spans are held sorted and disjoint; when the caller has counted the oldest
 * of them it retires them, and a later interval is cut where they end (it adds only time not
 * counted yet).
 */
#ifndef GPROF_SPANS_H
#define GPROF_SPANS_H

#include <stddef.h>
#include <stdint.h>

struct gprof_span {
	uint64_t begin, end; /* ns, end exclusive */
};

struct gprof_spans {
	struct gprof_span *v; /* sorted, disjoint, not touching */
	size_t n, cap;
	size_t max;	/* spans held at most */
	uint64_t floor; /* time before it was retired: a new interval is cut here */
};

/*
 * A comparator's answer for two intervals on tracks (a thread, a GPU's stream): by track,
 * then start, the outer of two that start together first (as nesting is read).
 */
static inline int gprof_span_order(uint64_t track_a, uint64_t start_a, uint64_t end_a,
				   uint64_t track_b, uint64_t start_b, uint64_t end_b)
{
	if (track_a != track_b)
		return track_a < track_b ? -1 : 1;
	if (start_a != start_b)
		return start_a < start_b ? -1 : 1;
	return (end_a < end_b) - (end_a > end_b);
}

/* Adds [begin, end): 0, -ENOSPC (max spans are held: retire some first) or -ENOMEM. */
int gprof_spans_add(struct gprof_spans *s, uint64_t begin, uint64_t end);
/* Forgets the oldest n (> 0) spans: time before their end is counted. */
void gprof_spans_retire(struct gprof_spans *s, size_t n);
/* The time of spans [from, to) within [lo, hi). */
uint64_t gprof_spans_within(const struct gprof_spans *s, size_t from, size_t to, uint64_t lo,
			    uint64_t hi);
/*
 * Adds [begin, end) as gprof_spans_add; when that fails (max spans are held, or no memory for
 * more), first hands the oldest half to count(ctx, s, n) and retires them: the library's
 * summary and gprof-summary bound their memory so. 0, or what gprof_spans_add returned when no
 * span was held.
 */
int gprof_spans_add_counting(struct gprof_spans *s, uint64_t begin, uint64_t end,
			     void (*count)(void *ctx, const struct gprof_spans *s, size_t n),
			     void *ctx);
void gprof_spans_free(struct gprof_spans *s);

#endif
