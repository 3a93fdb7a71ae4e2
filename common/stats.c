#include <stdlib.h>

#include "common/heap.h"
#include "common/stats.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The value of rank ceil(p/100 * n) (1-based) of the sorted v. */
static uint64_t nearest_rank(const uint64_t *v, size_t n, unsigned p)
{
	size_t rank = (n * p + 99) / 100;

	return v[rank ? rank - 1 : 0];
}

bool gprof_stats_of(uint64_t *v, size_t n, struct gprof_stats *st)
{
	uint64_t sum = 0;

	if (!n)
		return false;
	gprof_sort(v, n, sizeof(*v), cmp_u64);
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	*st = (struct gprof_stats){
	    .n = n,
	    .min = v[0],
	    .p25 = nearest_rank(v, n, 25),
	    .median = n % 2 ? v[n / 2] : v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2,
	    .p75 = nearest_rank(v, n, 75),
	    .p90 = nearest_rank(v, n, 90),
	    .max = v[n - 1],
	    .mean = sum / n,
	};
	return true;
}
