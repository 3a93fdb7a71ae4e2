/*
 * What attrib.c holds while a launch and its GPU record wait for each other: GPU events, launch
 * records in short form, and the map from correlation ids to them. All three grow by doubling
 * within a limit (half of the collector's budget, which they share with the buffer pool, so
 * that CUPTI keeps buffers to fill) and shrink back when no window needs them. They are the
 * caller's struct gprof_coll_held (attrib.c's, on the collector thread).
 */
#include <errno.h>
#include <stdlib.h>

#include "collector/internal.h"

#define FIRST 1024 /* entries of each table at the start and after a reset; map slots 4x */

/* The budget for tables of gpu and api entries and a map of `slots`. */
static size_t bytes_for(uint32_t gpu, uint32_t api, size_t slots)
{
	return gpu * (sizeof(struct gprof_coll_held_gpu) + sizeof(uint32_t)) +
	       api * (sizeof(struct gprof_coll_held_api) + sizeof(uint32_t)) +
	       slots * 2 * sizeof(uint64_t);
}

/* Charges the budget for sizes to come; false (nothing changed) past the limit. */
static bool charge(struct gprof_coll_held *h, uint32_t gpu, uint32_t api, size_t slots)
{
	size_t want = bytes_for(gpu, api, slots), lim = gprof_coll_mem_cap() / 2;

	if (want <= h->charged)
		gprof_coll_mem_give(h->charged - want);
	else if (want > lim || !gprof_coll_mem_take(want - h->charged))
		return false;
	h->charged = want;
	return true;
}

static bool charge_now(struct gprof_coll_held *h)
{
	return charge(h, h->tables[GPROF_COLL_HELD_GPU].cap, h->tables[GPROF_COLL_HELD_API].cap,
		      gprof_map_slots(&h->links));
}

/*
 * n entries, the new ones free; shrinking is only for an empty table. 0, or -ENOMEM: the table
 * keeps its entries (a larger block, if only the free list could not grow, is harmless).
 */
static int resize(struct gprof_coll_held *h, struct gprof_coll_held_table *t, uint32_t n)
{
	void *items = realloc(t->items, (size_t)n * t->size);
	uint32_t *f = items ? realloc(t->free_list, (size_t)n * sizeof(*f)) : NULL;

	if (items)
		t->items = items;
	if (f)
		t->free_list = f;
	h->gpus = h->tables[GPROF_COLL_HELD_GPU].items;
	h->apis = h->tables[GPROF_COLL_HELD_API].items;
	if (!items || (!f && n > t->cap))
		return -ENOMEM;
	/* New entries go on the stack highest first, so low indices are handed out first. */
	for (uint32_t i = n; i > t->cap; i--)
		t->free_list[t->n_free++] = i - 1;
	t->cap = n;
	return 0;
}

int gprof_coll_held_init(struct gprof_coll_held *h)
{
	h->tables[GPROF_COLL_HELD_GPU].size = sizeof(struct gprof_coll_held_gpu);
	h->tables[GPROF_COLL_HELD_API].size = sizeof(struct gprof_coll_held_api);
	/* The first sizes are taken even when the budget is smaller (GPROF_BUFFER_MB=1). */
	if (!charge(h, FIRST, FIRST, 4 * FIRST))
		h->charged = 0;
	if (gprof_map_init(&h->links, 4 * FIRST) || resize(h, &h->tables[0], FIRST) ||
	    resize(h, &h->tables[1], FIRST))
		return -ENOMEM;
	return 0;
}

/* Twice the entries, within the limit. */
static void grow(struct gprof_coll_held *h, enum gprof_coll_held_kind k)
{
	struct gprof_coll_held_table *t = &h->tables[k];
	uint32_t cap[] = {
	    [GPROF_COLL_HELD_GPU] = h->tables[GPROF_COLL_HELD_GPU].cap,
	    [GPROF_COLL_HELD_API] = h->tables[GPROF_COLL_HELD_API].cap,
	};

	if (t->cap > UINT32_MAX / 4)
		return;
	cap[k] *= 2;
	if (charge(h, cap[GPROF_COLL_HELD_GPU], cap[GPROF_COLL_HELD_API],
		   gprof_map_slots(&h->links)) &&
	    resize(h, t, cap[k]))
		charge_now(h);
}

uint32_t gprof_coll_held_alloc(struct gprof_coll_held *h, enum gprof_coll_held_kind k)
{
	struct gprof_coll_held_table *t = &h->tables[k];

	if (!t->n_free)
		grow(h, k);
	if (!t->n_free) {
		h->refused = true;
		return 0;
	}
	if (t->cap - t->n_free + 1 > t->peak)
		t->peak = t->cap - t->n_free + 1;
	return t->free_list[--t->n_free] + 1;
}

void gprof_coll_held_free(struct gprof_coll_held *h, enum gprof_coll_held_kind k, uint32_t index1)
{
	h->tables[k].free_list[h->tables[k].n_free++] = index1 - 1;
}

uint32_t gprof_coll_held_count(const struct gprof_coll_held *h, enum gprof_coll_held_kind k)
{
	return h->tables[k].cap - h->tables[k].n_free;
}

bool gprof_coll_held_refused(struct gprof_coll_held *h, bool clear)
{
	bool was = h->refused;

	if (clear)
		h->refused = false;
	return was;
}

uint32_t gprof_coll_held_peak(struct gprof_coll_held *h, enum gprof_coll_held_kind k, bool reset)
{
	uint32_t p = h->tables[k].peak;

	if (reset)
		h->tables[k].peak = gprof_coll_held_count(h, k);
	return p;
}

int gprof_coll_links_put(struct gprof_coll_held *h, uint64_t corr, uint64_t link)
{
	int rc = gprof_map_put(&h->links, corr, link);

	if (rc != -ENOSPC)
		return rc;
	if (!charge(h, h->tables[GPROF_COLL_HELD_GPU].cap, h->tables[GPROF_COLL_HELD_API].cap,
		    2 * gprof_map_slots(&h->links)) ||
	    gprof_map_grow(&h->links)) {
		charge_now(h);
		h->refused = true;
		return -ENOSPC;
	}
	return gprof_map_put(&h->links, corr, link);
}

void gprof_coll_held_reset(struct gprof_coll_held *h)
{
	if (gprof_map_slots(&h->links) > 4 * FIRST) {
		gprof_map_free(&h->links);
		gprof_map_init(&h->links, 4 * FIRST);
	}
	gprof_map_clear(&h->links);
	for (size_t k = 0; k < ARRAY_SIZE(h->tables); k++) {
		struct gprof_coll_held_table *t = &h->tables[k];

		if (t->cap > FIRST)
			resize(h, t, FIRST);
		t->n_free = 0;
		for (uint32_t i = t->cap; i > 0; i--)
			t->free_list[t->n_free++] = i - 1;
	}
	charge_now(h);
}
