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
/*
 * The opening's figure is known (the driver was asked). When it is not (a window the timer's
 * thread opened, which makes no CUDA calls), the counter holds only the window's own
 * allocations: freeing one made before the window counts nothing, for there is nothing it
 * could be subtracted from.
 */
static bool base_known;

int gprof_memory_init(void)
{
	return gprof_map_init(&allocations, GPROF_PRELOAD_MAP_SLOTS);
}

void gprof_memory_reset(int64_t in_use, uint64_t since_ns)
{
	__atomic_store_n(&allocated_bytes, in_use > 0 ? (uint64_t)in_use : 0, __ATOMIC_RELAXED);
	__atomic_store_n(&counted_from_ns, in_use < 0 ? 0 : since_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&base_known, in_use >= 0, __ATOMIC_RELEASE);
}

void gprof_memory_before_free(const void *ptr)
{
	uint64_t bytes;

	if (ptr && __atomic_load_n(&base_known, __ATOMIC_ACQUIRE) &&
	    !gprof_map_get_shared(&allocations, (uintptr_t)ptr) &&
	    (bytes = gprof_runtime_allocation_size(ptr)))
		gprof_map_put_shared(&allocations, (uintptr_t)ptr, bytes);
}

/* The counter moved by delta, never below 0 (as the collector's): its new value. */
static uint64_t counter_add(int64_t delta)
{
	uint64_t now = __atomic_load_n(&allocated_bytes, __ATOMIC_RELAXED), next;

	do
		next = delta < 0 && (uint64_t)-delta > now ? 0 : now + (uint64_t)delta;
	while (!__atomic_compare_exchange_n(&allocated_bytes, &now, next, true, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED));
	return next;
}

/*
 * Out of line: inlined into gprof_session_call, its frame made every call in a window save six
 * registers (CUPTI-recording launch: about 2 ns).
 */
__attribute__((noinline)) void gprof_memory_event(uint32_t window,
						  const struct gprof_hooked_call *c,
						  const void *ptr, size_t bytes)
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
	    .u.memory.allocated = counter_add(delta),
	    .u.memory.address = (uintptr_t)ptr,
	    .u.memory.bytes = delta,
	};
	gprof_export_push(&e);
}
