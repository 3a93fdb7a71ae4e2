/* The growing arrays of array.h. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/array.h"
#include "common/heap.h"

int gprof_array_room(void **v, size_t *cap, size_t n, size_t size, size_t first, size_t max)
{
	size_t c;
	void *p;

	if (n < *cap)
		return 0;
	if (n >= max)
		return -ENOSPC;
	c = !*cap ? first : *cap <= max / 2 ? 2 * *cap : max;
	c = c < max ? c : max;
	if (c > SIZE_MAX / size)
		return -ENOMEM;
	p = gprof_realloc(*v, c * size);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = c;
	return 0;
}
