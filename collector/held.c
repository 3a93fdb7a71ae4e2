/*
 * What attrib.c holds while a launch and its GPU record wait for each other: GPU events, launch
 * records in short form, and the map from correlation ids to them. All three grow by doubling
 * within a limit (half of the collector's budget, which they share with the buffer pool, so
 * that CUPTI keeps buffers to fill) and shrink back when no window needs them. Collector
 * thread only.
 */
#include <errno.h>
#include <stdlib.h>

#include "collector/internal.h"

#define FIRST 1024 /* entries of each table at the start and after a reset; map slots 4x */

/* A table of fixed-size entries and the stack of its free ones, grown by doubling. */
struct table {
	void *items;
	size_t size; /* bytes per entry */
	uint32_t *free_list, n_free, cap;
};

struct gprof_coll_held_gpu *gprof_coll_held_gpus;
struct gprof_coll_held_api *gprof_coll_held_apis;
struct gprof_map gprof_coll_links;

static struct table tables[] = {
    [GPROF_COLL_HELD_GPU] = {.size = sizeof(struct gprof_coll_held_gpu)},
    [GPROF_COLL_HELD_API] = {.size = sizeof(struct gprof_coll_held_api)},
};
static uint32_t peak[ARRAY_SIZE(tables)]; /* most entries in use since the last reset */
static size_t charged;			  /* what the tables and the map take of the budget now */
static bool refused;			  /* an entry was refused for want of room */

/* The budget for tables of gpu and api entries and a map of `slots`. */
static size_t bytes_for(uint32_t gpu, uint32_t api, size_t slots)
{
	return gpu * (sizeof(struct gprof_coll_held_gpu) + sizeof(uint32_t)) +
	       api * (sizeof(struct gprof_coll_held_api) + sizeof(uint32_t)) +
	       slots * 2 * sizeof(uint64_t);
}

/* Charges the budget for sizes to come; false (nothing changed) past the limit. */
static bool charge(uint32_t gpu, uint32_t api, size_t slots)
{
	size_t want = bytes_for(gpu, api, slots), lim = gprof_coll_mem_cap() / 2;

	if (want <= charged)
		gprof_coll_mem_give(charged - want);
	else if (want > lim || !gprof_coll_mem_take(want - charged))
		return false;
	charged = want;
	return true;
}

static bool charge_now(void)
{
	return charge(tables[GPROF_COLL_HELD_GPU].cap, tables[GPROF_COLL_HELD_API].cap,
		      gprof_map_slots(&gprof_coll_links));
}

/*
 * n entries, the new ones free; shrinking is only for an empty table. 0, or -ENOMEM: the table
 * keeps its entries (a larger block, if only the free list could not grow, is harmless).
 */
static int resize(struct table *t, uint32_t n)
{
	void *items = realloc(t->items, (size_t)n * t->size);
	uint32_t *f = items ? realloc(t->free_list, (size_t)n * sizeof(*f)) : NULL;

	if (items)
		t->items = items;
	if (f)
		t->free_list = f;
	gprof_coll_held_gpus = tables[GPROF_COLL_HELD_GPU].items;
	gprof_coll_held_apis = tables[GPROF_COLL_HELD_API].items;
	if (!items || (!f && n > t->cap))
		return -ENOMEM;
	/* New entries go on the stack highest first, so low indices are handed out first. */
	for (uint32_t i = n; i > t->cap; i--)
		t->free_list[t->n_free++] = i - 1;
	t->cap = n;
	return 0;
}

int gprof_coll_held_init(void)
{
	/* The first sizes are taken even when the budget is smaller (GPROF_BUFFER_MB=1). */
	if (!charge(FIRST, FIRST, 4 * FIRST))
		charged = 0;
	if (gprof_map_init(&gprof_coll_links, 4 * FIRST) || resize(&tables[0], FIRST) ||
	    resize(&tables[1], FIRST))
		return -ENOMEM;
	return 0;
}

/* Twice the entries, within the limit. */
static void grow(enum gprof_coll_held_kind k)
{
	struct table *t = &tables[k];
	uint32_t cap[] = {
	    [GPROF_COLL_HELD_GPU] = tables[GPROF_COLL_HELD_GPU].cap,
	    [GPROF_COLL_HELD_API] = tables[GPROF_COLL_HELD_API].cap,
	};

	if (t->cap > UINT32_MAX / 4)
		return;
	cap[k] *= 2;
	if (charge(cap[GPROF_COLL_HELD_GPU], cap[GPROF_COLL_HELD_API],
		   gprof_map_slots(&gprof_coll_links)) &&
	    resize(t, cap[k]))
		charge_now();
}

uint32_t gprof_coll_held_alloc(enum gprof_coll_held_kind k)
{
	struct table *t = &tables[k];

	if (!t->n_free)
		grow(k);
	if (!t->n_free) {
		refused = true;
		return 0;
	}
	if (t->cap - t->n_free + 1 > peak[k])
		peak[k] = t->cap - t->n_free + 1;
	return t->free_list[--t->n_free] + 1;
}

void gprof_coll_held_free(enum gprof_coll_held_kind k, uint32_t index1)
{
	tables[k].free_list[tables[k].n_free++] = index1 - 1;
}

uint32_t gprof_coll_held_count(enum gprof_coll_held_kind k)
{
	return tables[k].cap - tables[k].n_free;
}

bool gprof_coll_held_refused(bool clear)
{
	bool was = refused;

	if (clear)
		refused = false;
	return was;
}

uint32_t gprof_coll_held_peak(enum gprof_coll_held_kind k, bool reset)
{
	uint32_t p = peak[k];

	if (reset)
		peak[k] = gprof_coll_held_count(k);
	return p;
}

int gprof_coll_links_put(uint64_t corr, uint64_t link)
{
	int rc = gprof_map_put(&gprof_coll_links, corr, link);

	if (rc != -ENOSPC)
		return rc;
	if (!charge(tables[GPROF_COLL_HELD_GPU].cap, tables[GPROF_COLL_HELD_API].cap,
		    2 * gprof_map_slots(&gprof_coll_links)) ||
	    gprof_map_grow(&gprof_coll_links)) {
		charge_now();
		refused = true;
		return -ENOSPC;
	}
	return gprof_map_put(&gprof_coll_links, corr, link);
}

void gprof_coll_held_reset(void)
{
	if (gprof_map_slots(&gprof_coll_links) > 4 * FIRST) {
		gprof_map_free(&gprof_coll_links);
		gprof_map_init(&gprof_coll_links, 4 * FIRST);
	}
	gprof_map_clear(&gprof_coll_links);
	for (size_t k = 0; k < ARRAY_SIZE(tables); k++) {
		struct table *t = &tables[k];

		if (t->cap > FIRST)
			resize(t, FIRST);
		t->n_free = 0;
		for (uint32_t i = t->cap; i > 0; i--)
			t->free_list[t->n_free++] = i - 1;
	}
	charge_now();
}
