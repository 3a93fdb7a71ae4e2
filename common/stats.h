/*
 * Order statistics of step times, the figures a mean hides (one slow first step, a stall):
 * the library's summary, gprof-summary's page and --compare all count them here.
 */
#ifndef GPROF_STATS_H
#define GPROF_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gprof_stats {
	size_t n;
	uint64_t min, p25, median, p75, p90, max, mean;
};

/*
 * Sorts v[0..n) and fills st: the median of an even count is the mean of the middle two,
 * p25/p75/p90 are nearest-rank (the smallest value with at least that share at or below it).
 * False when n is 0.
 */
bool gprof_stats_of(uint64_t *v, size_t n, struct gprof_stats *st);

/* The step-to-step spread: p75 - p25. */
static inline uint64_t gprof_stats_spread(const struct gprof_stats *st)
{
	return st->p75 - st->p25;
}

#endif
