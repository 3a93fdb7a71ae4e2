/*
 * Records of completed GPU operations: CUpti_ActivityKernel10, Memcpy6 and Memset4 in their
 * CUDA 13.0 layouts, and the matching ground-truth log lines; CudaEvent2 of event records and
 * Synchronization2 of the calls that wait (with their log line).
 */
#include <stdio.h>
#include <unistd.h>

#include "test/fakecuda/fakegpu.h"
#include "test/fakecuda/sim.h"

/* Names for the log, indexed by CUpti_ActivityMemcpyKind and CUpti_ActivityMemoryKind. */
static const char *const copy_kind_names[] = {
    "unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP",
};
static const char *const memory_kind_names[] = {
    "unknown", "pageable", "pinned",	    "device",
    "array",   "managed",  "device_static", "managed_static",
};

/* Every kernel launch gets a new grid id, as on a real device. */
static int64_t next_grid_id = 1;

/*
 * What every record of a completed operation says of where and when it ran, and of the call
 * that queued it, in its record and on its log line (whose times close the line).
 */
#define OP_PLACE(op, device, stream_id)                                               \
	.start = (op)->start_ns, .end = (op)->end_ns, .deviceId = (uint32_t)(device), \
	.contextId = fakecuda_context_id(device), .streamId = (stream_id),            \
	.correlationId = (op)->correlation
#define OP_TIMES_FMT "\"queued\":%llu,\"start\":%llu,\"end\":%llu"
#define OP_TIMES(op)                                                             \
	(unsigned long long)(op)->queued_ns, (unsigned long long)(op)->start_ns, \
	    (unsigned long long)(op)->end_ns

static void emit(const void *rec, size_t size)
{
	fakegpu_activity_emit(rec, size);
}

/* CONCURRENT_KERNEL normally; KERNEL if only that kind is enabled (then CUPTI reports it). */
static CUpti_ActivityKind kernel_kind(void)
{
	if (!fakegpu_activity_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) &&
	    fakegpu_activity_enabled(CUPTI_ACTIVITY_KIND_KERNEL))
		return CUPTI_ACTIVITY_KIND_KERNEL;
	return CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
}

static void emit_kernel(const struct fakecuda_op *op, int device, uint32_t stream_id)
{
	const struct fakecuda_kernel *k = op->kernel.kernel;
	CUpti_ActivityKernel10 rec = {
	    .kind = kernel_kind(),
	    OP_PLACE(op, device, stream_id),
	    .registersPerThread = k->registers,
	    .completed = op->end_ns,
	    .gridX = (int32_t)op->kernel.grid[0],
	    .gridY = (int32_t)op->kernel.grid[1],
	    .gridZ = (int32_t)op->kernel.grid[2],
	    .blockX = (int32_t)op->kernel.block[0],
	    .blockY = (int32_t)op->kernel.block[1],
	    .blockZ = (int32_t)op->kernel.block[2],
	    .dynamicSharedMemory = (int32_t)op->kernel.shared_bytes,
	    .gridId = __atomic_fetch_add(&next_grid_id, 1, __ATOMIC_RELAXED),
	    .name = k->name,
	    .queued = op->queued_ns,
	    .submitted = op->queued_ns,
	    .launchType = op->kernel.launch_type,
	    .channelType = CUPTI_CHANNEL_TYPE_COMPUTE,
	};
	char name[4096];

	emit(&rec, sizeof(rec));
	fakecuda_log("\"type\":\"gpu\",\"kind\":\"kernel\",\"pid\":%d,\"name\":%s,\"corr\":%u,"
		     "\"device\":%d,\"stream\":%u,\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],"
		     "\"shared\":%u,\"registers\":%u,\"launch_type\":%u," OP_TIMES_FMT,
		     (int)getpid(), fakecuda_log_str(name, sizeof(name), k->name), op->correlation,
		     device, stream_id, op->kernel.grid[0], op->kernel.grid[1], op->kernel.grid[2],
		     op->kernel.block[0], op->kernel.block[1], op->kernel.block[2],
		     op->kernel.shared_bytes, k->registers, op->kernel.launch_type, OP_TIMES(op));
}

static void emit_memcpy(const struct fakecuda_op *op, int device, uint32_t stream_id)
{
	CUpti_ActivityMemcpy6 rec = {
	    .kind = CUPTI_ACTIVITY_KIND_MEMCPY,
	    OP_PLACE(op, device, stream_id),
	    .copyKind = op->memcpy.copy_kind,
	    .srcKind = op->memcpy.src_kind,
	    .dstKind = op->memcpy.dst_kind,
	    .flags = op->async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0,
	    .bytes = op->memcpy.bytes,
	    .runtimeCorrelationId = op->runtime ? op->correlation : 0,
	    .channelType = CUPTI_CHANNEL_TYPE_ASYNC_MEMCPY,
	    .copyCount = 1,
	};

	emit(&rec, sizeof(rec));
	fakecuda_log("\"type\":\"gpu\",\"kind\":\"memcpy\",\"pid\":%d,\"corr\":%u,\"device\":%d,"
		     "\"stream\":%u,\"copy_kind\":\"%s\",\"src_kind\":\"%s\",\"dst_kind\":\"%s\","
		     "\"bytes\":%llu," OP_TIMES_FMT,
		     (int)getpid(), op->correlation, device, stream_id,
		     copy_kind_names[op->memcpy.copy_kind], memory_kind_names[op->memcpy.src_kind],
		     memory_kind_names[op->memcpy.dst_kind], (unsigned long long)op->memcpy.bytes,
		     OP_TIMES(op));
}

static void emit_memset(const struct fakecuda_op *op, int device, uint32_t stream_id)
{
	CUpti_ActivityMemset4 rec = {
	    .kind = CUPTI_ACTIVITY_KIND_MEMSET,
	    OP_PLACE(op, device, stream_id),
	    .value = op->memset.value,
	    .bytes = op->memset.bytes,
	    .flags = op->async ? CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC : 0,
	    .memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
	    .channelType = CUPTI_CHANNEL_TYPE_ASYNC_MEMCPY,
	};

	emit(&rec, sizeof(rec));
	fakecuda_log("\"type\":\"gpu\",\"kind\":\"memset\",\"pid\":%d,\"corr\":%u,\"device\":%d,"
		     "\"stream\":%u,\"bytes\":%llu,\"value\":%u," OP_TIMES_FMT,
		     (int)getpid(), op->correlation, device, stream_id,
		     (unsigned long long)op->memset.bytes, op->memset.value, OP_TIMES(op));
}

static void (*const emitters[])(const struct fakecuda_op *, int, uint32_t) = {
    [FAKECUDA_OP_KERNEL] = emit_kernel,
    [FAKECUDA_OP_MEMCPY] = emit_memcpy,
    [FAKECUDA_OP_MEMSET] = emit_memset,
    [FAKECUDA_OP_MARKER] = NULL,
};

void fakecuda_emit_op(const struct fakecuda_op *op, int device, uint32_t stream_id)
{
	if (emitters[op->kind])
		emitters[op->kind](op, device, stream_id);
}

void fakecuda_emit_event(const struct fakecuda_event *event, const struct fakecuda_stream *stream)
{
	int device = fakecuda_stream_device(stream);
	CUpti_ActivityCudaEvent2 rec = {
	    .kind = CUPTI_ACTIVITY_KIND_CUDA_EVENT,
	    .correlationId = event->record_correlation,
	    .contextId = fakecuda_context_id(device),
	    .streamId = fakecuda_stream_id(stream),
	    .eventId = event->id,
	    .deviceId = (uint32_t)device,
	    .cudaEventSyncId = event->sync_id,
	};

	if (fakegpu_activity_enabled(CUPTI_ACTIVITY_KIND_CUDA_EVENT))
		emit(&rec, sizeof(rec));
}

/* What the log calls each CUpti_ActivitySynchronizationType. */
static const char *const sync_kinds[] = {
    [CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE] = "event",
    [CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT] = "stream_wait_event",
    [CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE] = "stream",
    [CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE] = "context",
};

void fakecuda_sync_done(struct fakecuda_call *call, CUpti_ActivitySynchronizationType type,
			int device, const struct fakecuda_stream *stream,
			const struct fakecuda_event *event)
{
	/* A runtime call's record comes from the first driver call that waits for it. */
	struct fakecuda_call *owner = call->nested ? call->outer : call;
	/* An event never recorded has nothing to name: its sync id is not applicable either. */
	const struct fakecuda_stream *recorded = event ? event->stream : NULL;
	CUpti_ActivitySynchronization2 rec = {
	    .kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
	    .type = type,
	    .end = fakegpu_timestamp(),
	    .correlationId = call->correlation,
	    .contextId = fakecuda_context_id(device),
	    .streamId = stream ? fakecuda_stream_id(stream) : CUPTI_SYNCHRONIZATION_INVALID_VALUE,
	    .cudaEventId = event ? event->id : CUPTI_SYNCHRONIZATION_INVALID_VALUE,
	    .cudaEventSyncId = recorded ? event->sync_id : CUPTI_SYNCHRONIZATION_INVALID_VALUE,
	    .returnValue = 0, /* CUPTI reports failed ones only if asked (EnableAllSyncRecords) */
	};

	/* What a synchronisation does to the stream-ordered pools (not a stream's wait). */
	if (type != CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT)
		fakecuda_pools_release(device);
	if (!owner || owner->synced)
		return;
	owner->synced = true;
	rec.start = owner->start_ns;
	if (fakegpu_activity_enabled(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION))
		emit(&rec, sizeof(rec));
	fakecuda_log("\"type\":\"sync\",\"pid\":%d,\"kind\":\"%s\",\"corr\":%u,\"device\":%d,"
		     "\"stream\":%lld,\"event_record_corr\":%lld,\"event_record_stream\":%lld,"
		     "\"start\":%llu,\"end\":%llu",
		     (int)getpid(), sync_kinds[type], call->correlation, device,
		     stream ? (long long)fakecuda_stream_id(stream) : -1LL,
		     recorded ? (long long)event->record_correlation : -1LL,
		     recorded ? (long long)fakecuda_stream_id(recorded) : -1LL,
		     (unsigned long long)rec.start, (unsigned long long)rec.end);
}
