/*
 * The tree's one hash map: uint64 keys (never 0) to uint64 values, open addressing with linear
 * probing in a power-of-two table kept at most 3/4 full.
 *
 * Owned by one thread: get, put, del (backward-shift deletion, so no tombstones), filter,
 * clear, grow. Shared between threads: get_shared takes no lock; put_shared may run on any
 * number of threads at once (a key is claimed with compare-and-swap, then its value stored;
 * an entry is never removed, its value may be replaced); grow_shared runs under the caller's
 * lock, with no put_shared at the same time, and keeps the old table for readers still in it
 * until gprof_map_free(). A shared map's values are never 0: 0 reads as "absent".
 */
#ifndef GPROF_MAP_H
#define GPROF_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct gprof_map_table {
	size_t mask;		       /* slots - 1 */
	struct gprof_map_table *older; /* tables grow_shared() replaced */
	struct {
		uint64_t key, val; /* key 0: the slot is empty */
	} slot[];
};

struct gprof_map {
	struct gprof_map_table *t; /* NULL until init */
	size_t n;		   /* entries */
};

/* At least `slots` slots (16 or more, a power of two): 0 or -ENOMEM. */
int gprof_map_init(struct gprof_map *m, size_t slots);
void gprof_map_free(struct gprof_map *m);
size_t gprof_map_slots(const struct gprof_map *m);

bool gprof_map_get(const struct gprof_map *m, uint64_t key, uint64_t *val);
/* Inserts or replaces: 0, -EINVAL for key 0, -ENOSPC when 3/4 full (it never grows itself). */
int gprof_map_put(struct gprof_map *m, uint64_t key, uint64_t val);
bool gprof_map_del(struct gprof_map *m, uint64_t key);
/* Doubles the slots: 0 or -ENOMEM (the map is unchanged). */
int gprof_map_grow(struct gprof_map *m);
/* put(), growing first when it is full: 0, -EINVAL or -ENOMEM. */
int gprof_map_set(struct gprof_map *m, uint64_t key, uint64_t val);
/* Keeps only the entries for which keep() says true. */
void gprof_map_filter(struct gprof_map *m, bool (*keep)(uint64_t key, uint64_t val, void *arg),
		      void *arg);
void gprof_map_clear(struct gprof_map *m);

/* The shared map's calls: see above. get_shared returns the value, 0 when absent. */
uint64_t gprof_map_get_shared(const struct gprof_map *m, uint64_t key);
int gprof_map_put_shared(struct gprof_map *m, uint64_t key, uint64_t val);
/* Room for one more entry, by a doubled table if need be: 0 or -ENOMEM. */
int gprof_map_reserve_shared(struct gprof_map *m);

/*
 * A key for n bytes (never 0), for maps of strings: a fast hash, eight bytes at a time; seed
 * tells apart what the bytes alone do not. Equal keys may hide different bytes: compare them.
 * Inline: the hot path hashes every NVTX message it interns.
 */
static inline uint64_t gprof_map_key_bytes(const void *p, size_t n, uint64_t seed)
{
	const char *s = p;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ seed, w;

	for (; n >= 8; s += 8, n -= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	w = 0;
	memcpy(&w, s, n);
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 29;
	return h ? h : 1;
}

#endif
