/*
 * A fixed-size map from pointers to 64-bit values that application threads read and write
 * without locks (open addressing, keys claimed with compare-and-swap, never removed: a removed
 * entry keeps its key with value 0). Used for kernel names and live allocations.
 */
#ifndef GPROF_PTRMAP_H
#define GPROF_PTRMAP_H

#include <stdbool.h>
#include <stdint.h>

#define GPROF_PTRMAP_SLOTS 16384 /* a power of two */

struct gprof_ptrmap_slot {
	uintptr_t key;
	uint64_t value;
};

struct gprof_ptrmap {
	struct gprof_ptrmap_slot slots[GPROF_PTRMAP_SLOTS];
};

/* The value stored for key, or 0. */
uint64_t gprof_ptrmap_get(const struct gprof_ptrmap *m, uintptr_t key);
/* Stores value for key (0 removes); false when the map is full. */
bool gprof_ptrmap_set(struct gprof_ptrmap *m, uintptr_t key, uint64_t value);

#endif
