/* Growing arrays: room for one more element, by doubling, as the tree's tables grow. */
#ifndef GPROF_ARRAY_H
#define GPROF_ARRAY_H

#include <stddef.h>

/*
 * *v holds n elements of size bytes in room for *cap. When it is full, reallocates it to first
 * elements (when *cap is 0) or twice *cap, but no more than max. 0, -ENOSPC when max are held,
 * or -ENOMEM (*v and *cap unchanged).
 */
int gprof_array_room(void **v, size_t *cap, size_t n, size_t size, size_t first, size_t max);

#endif
