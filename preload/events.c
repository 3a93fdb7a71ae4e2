/*
 * Host events: the step spans, NVTX marks and ranges, and the hooked calls the session hands
 * over, as trace events of the window they belong to. What CUPTI records of a call is written
 * from its records instead; gprof_events_writes() decides that for every call, once.
 */
#include <string.h>

#include <cuda_runtime_api.h>

#include "collector/collector.h"
#include "common/config.h"
#include "export/export.h"
#include "preload/preload.h"
#include "scheduler/scheduler.h"

/* Written once by gprof_events_init (the constructor); read by any thread. */
static unsigned activities;

void gprof_events_init(unsigned acts)
{
	activities = acts;
}

unsigned gprof_events_writes(enum gprof_hook h)
{
	unsigned acts = gprof_hook_family[gprof_hook_info[h].family].acts;

	return acts & activities & ~gprof_collector_covers();
}

/*
 * A step ends 1 ns before the marker that begins the next: written touching, the two overlap
 * once a viewer adds ts and dur in doubles, and TensorBoard's plugin then drops a step.
 */
void gprof_events_step(uint32_t window, const struct gprof_sched_event *ev)
{
	struct gprof_export_event e = {
	    .kind = GPROF_EXPORT_STEP,
	    .window = window,
	    .ts_ns = ev->begin_ns,
	    .dur_ns = ev->end_ns - ev->begin_ns - (ev->end_ns > ev->begin_ns),
	    .tid = (uint32_t)ev->tid,
	    .u.step = ev->first_step,
	};

	gprof_export_push(&e);
}

void gprof_events_nvtx(uint32_t window, uint32_t tid, const char *domain, const char *msg,
		       size_t len, uint64_t start_ns, uint64_t end_ns, bool is_mark)
{
	struct gprof_export_event e = {
	    .kind = is_mark ? GPROF_EXPORT_NVTX_MARK : GPROF_EXPORT_NVTX_RANGE,
	    .window = window,
	    .ts_ns = start_ns,
	    .dur_ns = end_ns - start_ns,
	    .tid = tid,
	};

	e.name = gprof_export_intern_n(msg, len);
	e.u.domain = domain ? gprof_export_intern(domain) : NULL;
	gprof_export_push(&e);
}

void gprof_events_nccl(uint32_t window, uint32_t tid, const struct gprof_nccl_call *c)
{
	struct gprof_export_event e = {
	    .kind = GPROF_EXPORT_CPU_OP,
	    .window = window,
	    .ts_ns = c->start_ns,
	    .dur_ns = c->end_ns - c->start_ns,
	    .tid = tid,
	    .name = gprof_export_intern(c->name),
	    .u.op = {.count = c->count, .external = c->external},
	};

	if (c->type)
		e.u.op.type = gprof_export_intern(c->type);
	gprof_export_push(&e);
}

/* The interned public and exact names of each hook, made on first use. */
static const struct gprof_export_str *hook_names[GPROF_HOOK_COUNT][2];

static const struct gprof_export_str *hook_name(enum gprof_hook h, int exact)
{
	const struct gprof_export_str *s = __atomic_load_n(&hook_names[h][exact], __ATOMIC_RELAXED);

	if (unlikely(!s)) {
		s = gprof_export_intern(exact ? gprof_hook_info[h].symbol
					      : gprof_hook_info[h].public_name);
		__atomic_store_n(&hook_names[h][exact], s, __ATOMIC_RELAXED);
	}
	return s;
}

/*
 * The trace's copy kind (CUPTI's vocabulary) for the runtime's cudaMemcpyKind. The direction of a
 * cudaMemcpyDefault copy is known to the runtime, from the pointers, not to the hooks: "Unknown".
 */
static uint8_t copy_kind(int runtime_kind)
{
	switch (runtime_kind) {
	case cudaMemcpyHostToHost:
		return GPROF_COPY_HTOH;
	case cudaMemcpyHostToDevice:
		return GPROF_COPY_HTOD;
	case cudaMemcpyDeviceToHost:
		return GPROF_COPY_DTOH;
	case cudaMemcpyDeviceToDevice:
		return GPROF_COPY_DTOD;
	default:
		return GPROF_COPY_UNKNOWN;
	}
}

void gprof_events_api(uint32_t window, uint32_t tid, const struct gprof_api_call *c)
{
	const struct gprof_hook_info *hi = &gprof_hook_info[c->hook];
	struct gprof_export_event e;

	if (c->writes & GPROF_ACT_MEMORY)
		gprof_memory_event(window, c);
	if (!(c->writes & GPROF_ACT_API))
		return;
	e = (struct gprof_export_event){
	    .kind = GPROF_EXPORT_RUNTIME,
	    .window = window,
	    .ts_ns = c->start_ns,
	    .dur_ns = c->end_ns - c->start_ns,
	    .tid = tid,
	    .flags = gprof_hook_family[hi->family].flags | GPROF_EXPORT_ARG_RESULT,
	    .name = hook_name(c->hook, 0),
	    .u.api =
		{
		    .api = hook_name(c->hook, 1),
		    .stream = (uintptr_t)c->stream,
		    .bytes = c->bytes,
		    .ptr = (uintptr_t)c->ptr,
		    .shared_bytes = (uint32_t)c->bytes,
		    .cbid = (uint32_t)hi->cbid,
		    .result = c->result,
		    .copy_kind = copy_kind(c->copy_kind),
		    .external = gprof_current_op(),
		},
	};
	if (hi->family == GPROF_FAMILY_LAUNCH) {
		e.u.api.kernel = gprof_kernel_name(c->func);
		memcpy(e.u.api.grid, c->grid, sizeof(c->grid));
		memcpy(e.u.api.block, c->block, sizeof(c->block));
	}
	gprof_export_push(&e);
}
