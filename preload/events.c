/*
 * Host events: the step spans, NVTX marks and ranges, and the hooked calls the session hands
 * over, as trace events of the window they belong to. What CUPTI records of a call is written
 * from its records instead; gprof_events_writes() decides that for every call, once.
 */
#include "collector/collector.h"
#include "common/config.h"
#include "export/export.h"
#include "preload/preload.h"
#include "scheduler/scheduler.h"

/* Written once by gprof_events_init (the constructor); read by any thread. */
unsigned gprof_events_acts[GPROF_HOOK_COUNT];
_Static_assert(GPROF_HOOK_COUNT <= GPROF_EXPORT_CALL_TYPES, "a call type per hook");

void gprof_events_init(unsigned acts)
{
	for (int h = 0; h < GPROF_HOOK_COUNT; h++) {
		const struct gprof_hook_info *hi = &gprof_hook_info[h];

		gprof_events_acts[h] = gprof_hook_family[hi->family].acts & acts;
		gprof_export_call_types[h] = (struct gprof_export_call_type){
		    .name = gprof_export_intern(hi->public_name),
		    .api = gprof_export_intern(hi->symbol),
		    .flags = gprof_hook_family[hi->family].flags | GPROF_EXPORT_ARG_RESULT,
		    .cbid = (uint16_t)hi->cbid,
		};
	}
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
		       size_t len, uint64_t start_ns, uint64_t end_ns, bool is_mark,
		       uint32_t external)
{
	struct gprof_export_event e = {
	    .kind = is_mark ? GPROF_EXPORT_NVTX_MARK : GPROF_EXPORT_NVTX_RANGE,
	    .window = window,
	    .ts_ns = start_ns,
	    .dur_ns = end_ns - start_ns,
	    .tid = tid,
	};

	e.name = gprof_export_intern_n(msg, len);
	e.u.nvtx.domain = domain ? gprof_export_intern(domain) : NULL;
	e.u.nvtx.external = external;
	gprof_export_push(&e);
}

/* The last External id given; the next writer takes the one after it. */
static uint32_t last_external;

uint32_t gprof_events_next_external(void)
{
	uint32_t id = __atomic_add_fetch(&last_external, 1, __ATOMIC_RELAXED);

	return id ? id : __atomic_add_fetch(&last_external, 1, __ATOMIC_RELAXED);
}

void gprof_events_torch_op(uint32_t window, uint32_t tid, const struct gprof_torch_frame *f,
			   const char *msg, uint64_t start_ns, uint64_t end_ns)
{
	struct gprof_export_event e = {
	    .kind = GPROF_EXPORT_CPU_OP,
	    .window = window,
	    .ts_ns = start_ns,
	    .dur_ns = end_ns - start_ns,
	    .tid = tid,
	    .name = gprof_export_intern_n(msg, f->op.name_len),
	    .u.op = {.rf_id = f->op.rf_id,
		     .seq = (uint64_t)f->op.seq,
		     .fwd_ns = f->flow ? f->fwd_ns : 0,
		     .fwd_tid = f->fwd_tid,
		     .external = f->external},
	};

	if (f->py_id) {
		e.kind = GPROF_EXPORT_PYTHON;
		e.u.py.id = f->py_id;
		e.u.py.parent = f->py_parent;
		e.u.py.module = f->op.rf_id;
		gprof_export_push(&e);
		return;
	}
	if (f->op.dims)
		e.u.op.dims = gprof_export_intern_n(f->op.dims, f->op.dims_len);
	if (f->op.seq >= 0)
		e.flags |= GPROF_EXPORT_OP_SEQ;
	if (gprof_torch_op_user_scope(msg, f->op.name_len))
		e.flags |= GPROF_EXPORT_OP_USER;
	gprof_export_push(&e);
}

void gprof_events_kineto_op(uint32_t window, uint32_t tid, uint64_t kid, uint32_t ext, bool user,
			    uint64_t start_ns, uint64_t end_ns)
{
	struct gprof_export_event e = {
	    .kind = GPROF_EXPORT_CPU_OP,
	    .flags = GPROF_EXPORT_OP_KINETO | (user ? GPROF_EXPORT_OP_USER : 0),
	    .window = window,
	    .ts_ns = start_ns,
	    .dur_ns = end_ns - start_ns,
	    .tid = tid,
	    .u.op = {.rf_id = kid, .external = ext},
	};

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
