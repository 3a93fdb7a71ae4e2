/*
 * The translation of one CUPTI activity record (CUDA 13 layouts) into one gprof event: a pure
 * switch on the record's kind, made from common/activity.h's GPROF_CUPTI_KIND_TABLE, with one
 * decoder a kind, tested without a GPU. Which window the event goes to is attrib.c's business.
 */
#include <string.h>

#include "collector/internal.h"

static void decode_api(const CUpti_Activity *rec, struct gprof_coll_rec *out)
{
	const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)rec;
	bool driver = rec->kind == CUPTI_ACTIVITY_KIND_DRIVER;
	const struct gprof_coll_api *n = gprof_coll_api_name(driver, a->cbid);
	struct gprof_export_event *ev = &out->ev;

	if (!a->start || !a->end)
		return;
	out->cls = GPROF_COLL_API;
	out->thread = a->threadId;
	out->launches = a->returnValue == 0 ? n->launches : 0;
	ev->kind = driver ? GPROF_EXPORT_DRIVER : GPROF_EXPORT_RUNTIME;
	ev->ts_ns = a->start;
	ev->dur_ns = a->end - a->start;
	ev->name = n->name;
	ev->tid = a->threadId;
	ev->correlation = a->correlationId;
	ev->flags = GPROF_EXPORT_ARG_RESULT | (n->quiet ? GPROF_EXPORT_QUIET : 0);
	ev->u.api.api = n->api;
	ev->u.api.cbid = a->cbid;
	ev->u.api.result = (int32_t)a->returnValue;
}

/* What decode_api() sets, kept and made again; the result is 0 (only successful launches wait). */
void gprof_coll_api_pack(const struct gprof_export_event *ev, struct gprof_coll_held_api *a)
{
	*a = (struct gprof_coll_held_api){
	    .ts_ns = ev->ts_ns,
	    .dur_ns = ev->dur_ns,
	    .tid = ev->tid,
	    .cbid = ev->u.api.cbid,
	    .driver = ev->kind == GPROF_EXPORT_DRIVER,
	};
}

void gprof_coll_api_unpack(const struct gprof_coll_held_api *a, uint32_t correlation,
			   struct gprof_export_event *ev)
{
	const struct gprof_coll_api *n = gprof_coll_api_name(a->driver, a->cbid);

	*ev = (struct gprof_export_event){
	    .kind = a->driver ? GPROF_EXPORT_DRIVER : GPROF_EXPORT_RUNTIME,
	    .ts_ns = a->ts_ns,
	    .dur_ns = a->dur_ns,
	    .name = n->name,
	    .tid = a->tid,
	    .correlation = correlation,
	    .flags = GPROF_EXPORT_ARG_RESULT,
	    .u.api = {.api = n->api, .cbid = a->cbid},
	};
}

/*
 * What kernel, memcpy and memset records share: GPU work of the call `correlation` from start to
 * end on (device, stream). False, the class left at UNTIMED, when CUPTI gave no time.
 */
static bool gpu_work(struct gprof_coll_rec *out, enum gprof_export_kind kind, uint64_t start,
		     uint64_t end, uint32_t device, uint32_t stream, uint32_t correlation)
{
	struct gprof_export_event *ev = &out->ev;

	if (!start || !end)
		return false;
	out->cls = GPROF_COLL_GPU;
	ev->kind = kind;
	ev->ts_ns = start;
	ev->dur_ns = end - start;
	ev->device = device;
	ev->stream = stream;
	ev->correlation = correlation;
	return true;
}

/* gpu_work() of a kernel, memcpy or memset record, whose layouts name these fields alike. */
#define GPU_WORK(out, kind, r) \
	gpu_work(out, kind, (r)->start, (r)->end, (r)->deviceId, (r)->streamId, (r)->correlationId)

static void decode_kernel(const CUpti_Activity *rec, struct gprof_coll_rec *out)
{
	const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
	struct gprof_export_event *ev = &out->ev;

	if (!GPU_WORK(out, GPROF_EXPORT_KERNEL, k))
		return;
	ev->name = gprof_coll_kernel_name(k->name);
	ev->u.kernel = (struct gprof_export_kernel){
	    .grid = {(uint32_t)k->gridX, (uint32_t)k->gridY, (uint32_t)k->gridZ},
	    .block = {(uint32_t)k->blockX, (uint32_t)k->blockY, (uint32_t)k->blockZ},
	    .registers = k->registersPerThread,
	    .shared_bytes = (uint32_t)(k->staticSharedMemory + k->dynamicSharedMemory),
	    .context = k->contextId,
	};
}

static void decode_memcpy(const CUpti_Activity *rec, struct gprof_coll_rec *out)
{
	const CUpti_ActivityMemcpy6 *c = (const CUpti_ActivityMemcpy6 *)rec;

	if (!GPU_WORK(out, GPROF_EXPORT_MEMCPY, c))
		return;
	out->ev.u.copy = (struct gprof_export_copy){
	    .bytes = c->bytes,
	    .context = c->contextId,
	    .copy_kind = c->copyKind,
	    .src_kind = c->srcKind,
	    .dst_kind = c->dstKind,
	};
}

static void decode_memset(const CUpti_Activity *rec, struct gprof_coll_rec *out)
{
	const CUpti_ActivityMemset4 *s = (const CUpti_ActivityMemset4 *)rec;

	if (!GPU_WORK(out, GPROF_EXPORT_MEMSET, s))
		return;
	out->ev.u.copy = (struct gprof_export_copy){
	    .bytes = s->bytes,
	    .context = s->contextId,
	    .dst_kind = (uint8_t)s->memoryKind,
	};
}

/* Device memory only: the gpu_memory counter is about the GPU's memory. */
static void decode_memory(const CUpti_Activity *rec, struct gprof_coll_rec *out)
{
	const CUpti_ActivityMemory4 *m = (const CUpti_ActivityMemory4 *)rec;
	bool alloc = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
	bool release = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;

	if (!m->timestamp)
		return;
	if (m->memoryKind != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE || (!alloc && !release)) {
		out->cls = GPROF_COLL_OTHER;
		return;
	}
	out->cls = GPROF_COLL_MEMORY;
	out->delta = alloc ? (int64_t)m->bytes : -(int64_t)m->bytes;
	out->address = m->address;
	if (m->isAsync &&
	    m->memoryPoolConfig.memoryPoolType == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL) {
		out->pool = m->memoryPoolConfig.address;
		out->pool_size = m->memoryPoolConfig.pool.size;
	}
	out->ev.kind = GPROF_EXPORT_MEMORY;
	out->ev.ts_ns = m->timestamp;
	out->ev.device = m->deviceId;
	out->ev.correlation = m->correlationId;
}

/* A program's pool made, trimmed or destroyed: what the pool holds after it, no allocation. */
static void decode_memory_pool(const CUpti_Activity *rec, struct gprof_coll_rec *out)
{
	const CUpti_ActivityMemoryPool3 *p = (const CUpti_ActivityMemoryPool3 *)rec;

	if (!p->timestamp)
		return;
	if (p->memoryPoolType != CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL || !p->address) {
		out->cls = GPROF_COLL_OTHER;
		return;
	}
	out->cls = GPROF_COLL_MEMORY;
	out->pool = p->address;
	out->pool_size = p->size;
	out->ev.kind = GPROF_EXPORT_MEMORY;
	out->ev.ts_ns = p->timestamp;
	out->ev.device = p->deviceId;
	out->ev.correlation = p->correlationId;
}

/* Only libgprof's own kind: another tool's ids are not our operators'. */
static void decode_external(const CUpti_Activity *rec, struct gprof_coll_rec *out)
{
	const CUpti_ActivityExternalCorrelation *x = (const CUpti_ActivityExternalCorrelation *)rec;

	if ((x->externalKind != GPROF_COLL_EXTERNAL_KIND &&
	     x->externalKind != GPROF_COLL_ANNOTATION_KIND) ||
	    !x->externalId || x->externalId > UINT32_MAX) {
		out->cls = GPROF_COLL_OTHER;
		return;
	}
	out->cls = GPROF_COLL_EXTERNAL;
	out->ev.correlation = x->correlationId;
	out->external = (uint32_t)x->externalId;
	out->annotation = x->externalKind == GPROF_COLL_ANNOTATION_KIND;
}

/* What CUPTI says of a field that does not apply to a synchronisation record. */
#define NOT_APPLICABLE CUPTI_SYNCHRONIZATION_INVALID_VALUE

static void decode_sync(const CUpti_Activity *rec, struct gprof_coll_rec *out)
{
	static const char *const names[] = {
	    [CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE] = "Event Sync",
	    [CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT] = "Stream Wait Event",
	    [CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE] = "Stream Sync",
	    [CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE] = "Context Sync",
	};
	const CUpti_ActivitySynchronization2 *y = (const CUpti_ActivitySynchronization2 *)rec;
	struct gprof_export_event *ev = &out->ev;

	if (!y->start || !y->end)
		return;
	out->cls = GPROF_COLL_SYNC;
	out->event_sync = y->cudaEventSyncId == NOT_APPLICABLE ? 0 : y->cudaEventSyncId;
	ev->kind = GPROF_EXPORT_SYNC;
	ev->ts_ns = y->start;
	ev->dur_ns = y->end - y->start;
	ev->name = gprof_export_intern(
	    y->type < ARRAY_SIZE(names) && names[y->type] ? names[y->type] : "Unknown Sync");
	ev->stream = y->streamId; /* the device: attrib.c's, from the context */
	ev->correlation = y->correlationId;
	ev->u.sync = (typeof(ev->u.sync)){
	    .on_event = y->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE ||
			y->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT,
	    .context = y->contextId,
	    .event = y->cudaEventId == NOT_APPLICABLE ? 0 : y->cudaEventId,
	    .wait_stream = -1,
	    .wait_corr = -1,
	};
}

static void decode_cuda_event(const CUpti_Activity *rec, struct gprof_coll_rec *out)
{
	const CUpti_ActivityCudaEvent2 *e = (const CUpti_ActivityCudaEvent2 *)rec;

	out->cls = GPROF_COLL_EVENT;
	out->event_sync = e->cudaEventSyncId;
	out->ev.device = e->deviceId;
	out->ev.stream = e->streamId;
	out->ev.correlation = e->correlationId;
	out->ev.u.sync.context = e->contextId;
}

/*
 * CUPTI's time on the host, named as Kineto names it. attrib.c places it as a synchronisation
 * without an event (the window its start is in, written as it is): a host event of no stream,
 * device or call. overheadData (COMMAND_BUFFER_FULL's details, which the header says the
 * client frees) is left alone, as Kineto leaves it: freeing what a CUPTI kept would crash the
 * program, where leaving it costs 12 bytes a record.
 */
static void decode_overhead(const CUpti_Activity *rec, struct gprof_coll_rec *out)
{
	static const struct {
		CUpti_ActivityOverheadKind kind;
		const char *name;
	} names[] = {
	    {CUPTI_ACTIVITY_OVERHEAD_UNKNOWN, "Unknown"},
	    {CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER, "Driver Compiler"},
	    {CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH, "Buffer Flush"},
	    {CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION, "Instrumentation"},
	    {CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE, "Resource"},
	    {CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING,
	     "Runtime Triggered Module Loading"},
	    {CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING, "Lazy Function Loading"},
	    {CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL, "Command Buffer Full"},
	    {CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST, "Activity Buffer Request"},
	};
	const CUpti_ActivityOverhead3 *o = (const CUpti_ActivityOverhead3 *)rec;
	struct gprof_export_event *ev = &out->ev;
	const char *name = "Unrecognized";

	if (!o->start || !o->end)
		return;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (names[i].kind == o->overheadKind)
			name = names[i].name;
	out->cls = GPROF_COLL_HOST;
	ev->kind = GPROF_EXPORT_OVERHEAD;
	ev->ts_ns = o->start;
	ev->dur_ns = o->end - o->start;
	ev->name = gprof_export_intern(name);
	/* 0: not a thread's (the emitter puts it on the process's main thread) */
	ev->tid = o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? o->objectId.pt.threadId : 0;
	ev->correlation = o->correlationId;
}

void gprof_coll_translate(const CUpti_Activity *rec, struct gprof_coll_rec *out)
{
	memset(out, 0, sizeof(*out));
	/* Each case below that finds a timestamp missing leaves the class at UNTIMED. */
	out->cls = GPROF_COLL_UNTIMED;
	switch (rec->kind) {
#define DECODE(name, gives, acts, decoder, ...) \
	case CUPTI_ACTIVITY_KIND_##name:        \
		decoder(rec, out);              \
		break;
		GPROF_CUPTI_KIND_TABLE(DECODE)
#undef DECODE
	default:
		out->cls = GPROF_COLL_UNKNOWN;
		break;
	}
}
