/*
 * The collector's window slots, from claim to release: a session thread claims the export
 * window's own slot when it opens (under gprof_coll.lock); the collector thread, or whoever
 * finds CUPTI gone, releases it once its last records are in, the slot before the export
 * window's hold, so that a window the export lets open finds its slot free here too. The slots
 * are gprof_coll.wins, passed in.
 */
#include <string.h>

#include "collector/internal.h"

void gprof_coll_win_memory_base(struct gprof_coll_win *w, const struct gprof_memory_base *base)
{
	memset(w->memory, 0, sizeof(w->memory));
	w->memory_known = w->memory_ns = 0;
	w->n_pools = 0;
	if (base && base->bytes >= 0 && base->device >= 0 &&
	    base->device < GPROF_COLL_MEMORY_DEVICES) {
		w->memory[base->device] = (uint64_t)base->bytes;
		w->memory_known = 1ull << base->device;
		w->memory_ns = base->ts_ns;
	}
}

struct gprof_coll_win *gprof_coll_win_claim(struct gprof_coll_win *wins, uint32_t id,
					    const struct gprof_memory_base *memory)
{
	struct gprof_coll_win *w = &wins[gprof_export_window_slot(id)];

	if (__atomic_load_n(&w->id, __ATOMIC_ACQUIRE))
		return NULL;
	gprof_coll_win_memory_base(w, memory);
	gprof_export_window_hold(id);
	__atomic_store_n(&w->id, id, __ATOMIC_RELEASE);
	return w;
}

struct gprof_coll_win *gprof_coll_win_of(struct gprof_coll_win *wins, uint32_t id)
{
	struct gprof_coll_win *w = &wins[gprof_export_window_slot(id)];

	return id && __atomic_load_n(&w->id, __ATOMIC_ACQUIRE) == id ? w : NULL;
}

void gprof_coll_win_release(struct gprof_coll_win *w)
{
	uint32_t id = w->id;

	w->ended_ms = w->pending = w->dropped = w->untimed = w->unknown = w->unlinked = 0;
	w->unheld = w->no_gpu = 0;
	w->lo = w->hi = 0;
	__atomic_store_n(&w->id, 0, __ATOMIC_RELEASE);
	gprof_export_window_release(id);
}

/* The slot holds its window, so export's slot of it is not claimed again meanwhile. */
bool gprof_coll_win_span(const struct gprof_coll_win *w, struct gprof_span *span)
{
	uint32_t id = __atomic_load_n(&w->id, __ATOMIC_ACQUIRE);

	if (id)
		*span = gprof_export_window_span(id);
	return id;
}

bool gprof_coll_win_ended(const struct gprof_coll_win *w)
{
	struct gprof_span span;

	return gprof_coll_win_span(w, &span) && span.end != UINT64_MAX;
}

bool gprof_coll_windows_in_use(const struct gprof_coll_win *wins)
{
	for (unsigned i = 0; i < GPROF_COLL_WINDOWS; i++)
		if (__atomic_load_n(&wins[i].id, __ATOMIC_ACQUIRE))
			return true;
	return false;
}

void gprof_coll_windows_release_all(struct gprof_coll_win *wins)
{
	for (unsigned i = 0; i < GPROF_COLL_WINDOWS; i++)
		if (__atomic_load_n(&wins[i].id, __ATOMIC_ACQUIRE))
			gprof_coll_win_release(&wins[i]);
}

void gprof_coll_windows_forget(struct gprof_coll_win *wins)
{
	memset(wins, 0, GPROF_COLL_WINDOWS * sizeof(*wins));
}
