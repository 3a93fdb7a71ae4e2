/*
 * A small uint64 -> uint64 hash map (linear probing, backward-shift deletion) for the
 * collector thread's bookkeeping: correlation ids, allocations, kernel names. Not thread-safe.
 */
#include <errno.h>
#include <stdlib.h>

#include "collector/internal.h"

static size_t home(const struct gprof_coll_map *m, uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return (size_t)key & (m->cap - 1);
}

int gprof_coll_map_init(struct gprof_coll_map *m, size_t cap)
{
	size_t c = 16;

	while (c < cap)
		c <<= 1;
	m->keys = calloc(c, sizeof(*m->keys));
	m->vals = calloc(c, sizeof(*m->vals));
	m->cap = c;
	m->n = 0;
	if (m->keys && m->vals)
		return 0;
	gprof_coll_map_free(m);
	return -ENOMEM;
}

void gprof_coll_map_free(struct gprof_coll_map *m)
{
	free(m->keys);
	free(m->vals);
	*m = (struct gprof_coll_map){0};
}

/* The slot holding key, or the empty slot where it would go. */
static size_t find(const struct gprof_coll_map *m, uint64_t key)
{
	size_t i = home(m, key);

	while (m->keys[i] && m->keys[i] != key)
		i = (i + 1) & (m->cap - 1);
	return i;
}

bool gprof_coll_map_get(const struct gprof_coll_map *m, uint64_t key, uint64_t *val)
{
	size_t i;

	if (!m->cap || !key)
		return false;
	i = find(m, key);
	if (!m->keys[i])
		return false;
	*val = m->vals[i];
	return true;
}

int gprof_coll_map_put(struct gprof_coll_map *m, uint64_t key, uint64_t val)
{
	size_t i;

	if (!key)
		return -EINVAL;
	if (!m->cap)
		return -ENOSPC;
	i = find(m, key);
	if (!m->keys[i]) {
		if ((m->n + 1) * 4 > m->cap * 3)
			return -ENOSPC;
		m->keys[i] = key;
		m->n++;
	}
	m->vals[i] = val;
	return 0;
}

/* Empties slot i and moves later entries of its cluster back so every probe still finds them. */
static void remove_at(struct gprof_coll_map *m, size_t i)
{
	size_t mask = m->cap - 1;

	for (size_t j = (i + 1) & mask; m->keys[j]; j = (j + 1) & mask) {
		size_t h = home(m, m->keys[j]);

		/* j's entry may move to i only if i lies on its probe path from h to j. */
		if (((j - h) & mask) >= ((j - i) & mask)) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			i = j;
		}
	}
	m->keys[i] = 0;
	m->n--;
}

bool gprof_coll_map_del(struct gprof_coll_map *m, uint64_t key)
{
	size_t i;

	if (!m->cap || !key)
		return false;
	i = find(m, key);
	if (!m->keys[i])
		return false;
	remove_at(m, i);
	return true;
}

int gprof_coll_map_grow(struct gprof_coll_map *m)
{
	struct gprof_coll_map bigger;

	if (gprof_coll_map_init(&bigger, m->cap ? m->cap * 2 : 16))
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++)
		if (m->keys[i])
			gprof_coll_map_put(&bigger, m->keys[i], m->vals[i]);
	gprof_coll_map_free(m);
	*m = bigger;
	return 0;
}

void gprof_coll_map_filter(struct gprof_coll_map *m, bool (*keep)(uint64_t, uint64_t, void *),
			   void *arg)
{
	/* A removal may pull a later entry into slot i: look at i again before moving on. */
	for (size_t i = 0; i < m->cap;) {
		if (m->keys[i] && !keep(m->keys[i], m->vals[i], arg))
			remove_at(m, i);
		else
			i++;
	}
}

void gprof_coll_map_clear(struct gprof_coll_map *m)
{
	for (size_t i = 0; i < m->cap; i++)
		m->keys[i] = 0;
	m->n = 0;
}
