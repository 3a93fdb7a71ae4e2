/*
 * Device memory from the hooks, while CUPTI does not record it: live allocations by pointer,
 * and the gpu_memory counter, bytes allocated in the current window minus those freed.
 */
#include <cuda_runtime_api.h>

#include "export/export.h"
#include "preload/preload.h"
#include "preload/ptrmap.h"

static struct gprof_ptrmap allocations; /* bytes by device pointer */
static uint64_t allocated_bytes;	/* change since the window opened */

void gprof_memory_reset(void)
{
	__atomic_store_n(&allocated_bytes, 0, __ATOMIC_RELAXED);
}

void gprof_memory_event(uint32_t window, const struct gprof_api_call *c)
{
	int64_t delta = 0;

	if (c->result != cudaSuccess || !c->ptr)
		return;
	if (gprof_hook_info[c->hook].family == GPROF_FAMILY_ALLOC) {
		if (gprof_ptrmap_set(&allocations, (uintptr_t)c->ptr, c->bytes))
			delta = (int64_t)c->bytes;
	} else {
		delta = -(int64_t)gprof_ptrmap_get(&allocations, (uintptr_t)c->ptr);
		gprof_ptrmap_set(&allocations, (uintptr_t)c->ptr, 0);
	}
	if (!delta)
		return;
	struct gprof_export_event e = {
	    .kind = GPROF_EXPORT_MEMORY,
	    .window = window,
	    .ts_ns = c->end_ns,
	    .device = (uint32_t)gprof_runtime_device(),
	    .u.allocated = __atomic_add_fetch(&allocated_bytes, (uint64_t)delta, __ATOMIC_RELAXED),
	};
	gprof_export_push(&e);
}
