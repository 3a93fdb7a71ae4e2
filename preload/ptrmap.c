/* The lock-free pointer map of ptrmap.h. */
#include "preload/ptrmap.h"

#define MASK   (GPROF_PTRMAP_SLOTS - 1)
#define PROBES 64

static unsigned slot_of(uintptr_t key)
{
	uint64_t h = (uint64_t)key * 0x9e3779b97f4a7c15ull;

	return (unsigned)(h >> 40) & MASK;
}

uint64_t gprof_ptrmap_get(const struct gprof_ptrmap *m, uintptr_t key)
{
	unsigned i = slot_of(key);

	for (unsigned n = 0; n < PROBES; n++, i = (i + 1) & MASK) {
		uintptr_t k = __atomic_load_n(&m->slots[i].key, __ATOMIC_ACQUIRE);

		if (k == key)
			return __atomic_load_n(&m->slots[i].value, __ATOMIC_ACQUIRE);
		if (!k)
			return 0;
	}
	return 0;
}

bool gprof_ptrmap_set(struct gprof_ptrmap *m, uintptr_t key, uint64_t value)
{
	unsigned i = slot_of(key);

	for (unsigned n = 0; n < PROBES; n++, i = (i + 1) & MASK) {
		uintptr_t k = __atomic_load_n(&m->slots[i].key, __ATOMIC_ACQUIRE);

		if (!k && __atomic_compare_exchange_n(&m->slots[i].key, &k, key, false,
						      __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			k = key;
		if (k == key) {
			__atomic_store_n(&m->slots[i].value, value, __ATOMIC_RELEASE);
			return true;
		}
	}
	return false;
}
