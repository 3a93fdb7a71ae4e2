/*
 * Device memory from the hooks, while CUPTI does not record it: live allocations by pointer,
 * and the gpu_memory counter: what was in use when the window opened, plus bytes allocated in
 * it, minus those freed.
 */
#include "common/map.h"
#include "export/export.h"
#include "preload/preload.h"

/* Bytes by device pointer (0: freed), shared by the program's threads; never grows. */
static struct gprof_map allocations;
static uint64_t allocated_bytes; /* in use: at the window's opening, and changes since */
static uint64_t counted_from_ns; /* calls that began before it are in the opening's figure */

int gprof_memory_init(void)
{
	return gprof_map_init(&allocations, GPROF_PRELOAD_MAP_SLOTS);
}

void gprof_memory_reset(uint64_t in_use, uint64_t since_ns)
{
	__atomic_store_n(&allocated_bytes, in_use, __ATOMIC_RELAXED);
	__atomic_store_n(&counted_from_ns, since_ns, __ATOMIC_RELAXED);
}

void gprof_memory_before_free(const void *ptr)
{
	uint64_t bytes;

	if (ptr && !gprof_map_get_shared(&allocations, (uintptr_t)ptr) &&
	    (bytes = gprof_runtime_allocation_size(ptr)))
		gprof_map_put_shared(&allocations, (uintptr_t)ptr, bytes);
}

void gprof_memory_event(uint32_t window, const struct gprof_hooked_call *c, const void *ptr,
			size_t bytes)
{
	int64_t delta = 0;

	if (gprof_hook_info[c->hook].family == GPROF_FAMILY_ALLOC) {
		if (gprof_map_put_shared(&allocations, (uintptr_t)ptr, bytes) == 0)
			delta = (int64_t)bytes;
	} else {
		delta = -(int64_t)gprof_map_get_shared(&allocations, (uintptr_t)ptr);
		gprof_map_put_shared(&allocations, (uintptr_t)ptr, 0);
	}
	/* a call that began before the opening's figure was taken: it is in that figure */
	if (!delta || c->start_ns < __atomic_load_n(&counted_from_ns, __ATOMIC_RELAXED))
		return;
	struct gprof_export_event e = {
	    .kind = GPROF_EXPORT_MEMORY,
	    .window = window,
	    .ts_ns = c->end_ns,
	    .device = (uint32_t)gprof_runtime_device(),
	    .tid = (uint32_t)gprof_tid(),
	    .u.memory.allocated =
		__atomic_add_fetch(&allocated_bytes, (uint64_t)delta, __ATOMIC_RELAXED),
	    .u.memory.address = (uintptr_t)ptr,
	    .u.memory.bytes = delta,
	};
	gprof_export_push(&e);
}
