/* The hash map of map.h. */
#include <errno.h>
#include <stdlib.h>

#include "common/heap.h"
#include "common/map.h"

#define MIN_SLOTS 16

static size_t home(const struct gprof_map_table *t, uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return (size_t)key & t->mask;
}

static bool full(const struct gprof_map_table *t, size_t n)
{
	return (n + 1) * 4 > (t->mask + 1) * 3;
}

static struct gprof_map_table *table_new(size_t slots)
{
	size_t s = MIN_SLOTS;
	struct gprof_map_table *t;

	while (s < slots)
		s <<= 1;
	t = gprof_calloc(1, sizeof(*t) + s * sizeof(t->slot[0]));
	if (t)
		t->mask = s - 1;
	return t;
}

int gprof_map_init(struct gprof_map *m, size_t slots)
{
	*m = (struct gprof_map){.t = table_new(slots)};
	return m->t ? 0 : -ENOMEM;
}

void gprof_map_free(struct gprof_map *m)
{
	for (struct gprof_map_table *t = m->t, *older; t; t = older) {
		older = t->older;
		gprof_free(t);
	}
	*m = (struct gprof_map){0};
}

size_t gprof_map_slots(const struct gprof_map *m)
{
	return m->t ? m->t->mask + 1 : 0;
}

/* The slot holding key, or the empty slot where it would go. */
static size_t find(const struct gprof_map_table *t, uint64_t key)
{
	size_t i = home(t, key);

	while (t->slot[i].key && t->slot[i].key != key)
		i = (i + 1) & t->mask;
	return i;
}

/* The slot holding key, or -1. */
static long lookup(const struct gprof_map *m, uint64_t key)
{
	size_t i;

	if (!m->t || !key)
		return -1;
	i = find(m->t, key);
	return m->t->slot[i].key ? (long)i : -1;
}

bool gprof_map_get(const struct gprof_map *m, uint64_t key, uint64_t *val)
{
	long i = lookup(m, key);

	if (i >= 0)
		*val = m->t->slot[i].val;
	return i >= 0;
}

int gprof_map_put(struct gprof_map *m, uint64_t key, uint64_t val)
{
	size_t i;

	if (!key)
		return -EINVAL;
	if (!m->t)
		return -ENOSPC;
	i = find(m->t, key);
	if (!m->t->slot[i].key) {
		if (full(m->t, m->n))
			return -ENOSPC;
		m->t->slot[i].key = key;
		m->n++;
	}
	m->t->slot[i].val = val;
	return 0;
}

/* Empties slot i and moves later entries of its cluster back so every probe still finds them. */
static void remove_at(struct gprof_map *m, size_t i)
{
	struct gprof_map_table *t = m->t;

	for (size_t j = (i + 1) & t->mask; t->slot[j].key; j = (j + 1) & t->mask) {
		size_t h = home(t, t->slot[j].key);

		/* j's entry may move to i only if i lies on its probe path from h to j. */
		if (((j - h) & t->mask) >= ((j - i) & t->mask)) {
			t->slot[i] = t->slot[j];
			i = j;
		}
	}
	t->slot[i].key = 0;
	m->n--;
}

bool gprof_map_del(struct gprof_map *m, uint64_t key)
{
	long i = lookup(m, key);

	if (i >= 0)
		remove_at(m, (size_t)i);
	return i >= 0;
}

/* A table of twice the slots holding every entry of t (NULL: t is empty), or NULL. */
static struct gprof_map_table *doubled(const struct gprof_map_table *t)
{
	struct gprof_map_table *d = table_new(t ? 2 * (t->mask + 1) : MIN_SLOTS);

	for (size_t i = 0; d && t && i <= t->mask; i++)
		if (t->slot[i].key)
			d->slot[find(d, t->slot[i].key)] = t->slot[i];
	return d;
}

int gprof_map_grow(struct gprof_map *m)
{
	struct gprof_map_table *d = doubled(m->t);

	if (!d)
		return -ENOMEM;
	gprof_free(m->t);
	m->t = d;
	return 0;
}

int gprof_map_set(struct gprof_map *m, uint64_t key, uint64_t val)
{
	int rc = gprof_map_put(m, key, val);

	if (rc == -ENOSPC) {
		rc = gprof_map_grow(m);
		if (!rc)
			rc = gprof_map_put(m, key, val);
	}
	return rc;
}

void gprof_map_filter(struct gprof_map *m, bool (*keep)(uint64_t, uint64_t, void *), void *arg)
{
	/* A removal may pull a later entry into slot i: look at i again before moving on. */
	for (size_t i = 0; m->t && i <= m->t->mask;) {
		uint64_t key = m->t->slot[i].key;

		if (key && !keep(key, m->t->slot[i].val, arg))
			remove_at(m, i);
		else
			i++;
	}
}

void gprof_map_clear(struct gprof_map *m)
{
	for (size_t i = 0; m->t && i <= m->t->mask; i++)
		m->t->slot[i].key = 0;
	m->n = 0;
}

uint64_t gprof_map_get_shared(const struct gprof_map *m, uint64_t key)
{
	const struct gprof_map_table *t = __atomic_load_n(&m->t, __ATOMIC_ACQUIRE);

	if (!t || !key)
		return 0;
	for (size_t i = home(t, key);; i = (i + 1) & t->mask) {
		uint64_t k = __atomic_load_n(&t->slot[i].key, __ATOMIC_ACQUIRE);

		if (k == key)
			return __atomic_load_n(&t->slot[i].val, __ATOMIC_ACQUIRE);
		if (!k)
			return 0;
	}
}

/*
 * Inserts are counted after their claim, so threads inserting at once may overshoot 3/4 by
 * one entry each: far from filling the table, which is all the probes need.
 */
int gprof_map_put_shared(struct gprof_map *m, uint64_t key, uint64_t val)
{
	struct gprof_map_table *t = __atomic_load_n(&m->t, __ATOMIC_ACQUIRE);

	if (!key)
		return -EINVAL;
	if (!t)
		return -ENOSPC;
	for (size_t i = home(t, key);; i = (i + 1) & t->mask) {
		uint64_t k = __atomic_load_n(&t->slot[i].key, __ATOMIC_ACQUIRE);

		if (!k) {
			if (full(t, __atomic_load_n(&m->n, __ATOMIC_RELAXED)))
				return -ENOSPC;
			if (__atomic_compare_exchange_n(&t->slot[i].key, &k, key, false,
							__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
				__atomic_fetch_add(&m->n, 1, __ATOMIC_RELAXED);
				k = key;
			}
		}
		if (k == key) {
			__atomic_store_n(&t->slot[i].val, val, __ATOMIC_RELEASE);
			return 0;
		}
	}
}

int gprof_map_reserve_shared(struct gprof_map *m)
{
	struct gprof_map_table *d;

	if (m->t && !full(m->t, m->n))
		return 0;
	d = doubled(m->t);
	if (!d)
		return -ENOMEM;
	d->older = m->t;
	__atomic_store_n(&m->t, d, __ATOMIC_RELEASE);
	return 0;
}
