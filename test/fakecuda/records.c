/*
 * Records of completed GPU operations: CUpti_ActivityKernel10, Memcpy6 and Memset4 in their
 * CUDA 13.0 layouts, and the matching ground-truth log lines.
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
	    .registersPerThread = k->registers,
	    .start = op->start_ns,
	    .end = op->end_ns,
	    .completed = op->end_ns,
	    .deviceId = (uint32_t)device,
	    .contextId = fakecuda_context_id(device),
	    .streamId = stream_id,
	    .gridX = (int32_t)op->kernel.grid[0],
	    .gridY = (int32_t)op->kernel.grid[1],
	    .gridZ = (int32_t)op->kernel.grid[2],
	    .blockX = (int32_t)op->kernel.block[0],
	    .blockY = (int32_t)op->kernel.block[1],
	    .blockZ = (int32_t)op->kernel.block[2],
	    .dynamicSharedMemory = (int32_t)op->kernel.shared_bytes,
	    .correlationId = op->correlation,
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
		     "\"shared\":%u,\"registers\":%u,\"launch_type\":%u,\"queued\":%llu,"
		     "\"start\":%llu,\"end\":%llu",
		     (int)getpid(), fakecuda_log_str(name, sizeof(name), k->name), op->correlation,
		     device, stream_id, op->kernel.grid[0], op->kernel.grid[1], op->kernel.grid[2],
		     op->kernel.block[0], op->kernel.block[1], op->kernel.block[2],
		     op->kernel.shared_bytes, k->registers, op->kernel.launch_type,
		     (unsigned long long)op->queued_ns, (unsigned long long)op->start_ns,
		     (unsigned long long)op->end_ns);
}

static void emit_memcpy(const struct fakecuda_op *op, int device, uint32_t stream_id)
{
	CUpti_ActivityMemcpy6 rec = {
	    .kind = CUPTI_ACTIVITY_KIND_MEMCPY,
	    .copyKind = op->memcpy.copy_kind,
	    .srcKind = op->memcpy.src_kind,
	    .dstKind = op->memcpy.dst_kind,
	    .flags = op->async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0,
	    .bytes = op->memcpy.bytes,
	    .start = op->start_ns,
	    .end = op->end_ns,
	    .deviceId = (uint32_t)device,
	    .contextId = fakecuda_context_id(device),
	    .streamId = stream_id,
	    .correlationId = op->correlation,
	    .runtimeCorrelationId = op->runtime ? op->correlation : 0,
	    .channelType = CUPTI_CHANNEL_TYPE_ASYNC_MEMCPY,
	    .copyCount = 1,
	};

	emit(&rec, sizeof(rec));
	fakecuda_log("\"type\":\"gpu\",\"kind\":\"memcpy\",\"pid\":%d,\"corr\":%u,\"device\":%d,"
		     "\"stream\":%u,\"copy_kind\":\"%s\",\"src_kind\":\"%s\",\"dst_kind\":\"%s\","
		     "\"bytes\":%llu,\"queued\":%llu,\"start\":%llu,\"end\":%llu",
		     (int)getpid(), op->correlation, device, stream_id,
		     copy_kind_names[op->memcpy.copy_kind], memory_kind_names[op->memcpy.src_kind],
		     memory_kind_names[op->memcpy.dst_kind], (unsigned long long)op->memcpy.bytes,
		     (unsigned long long)op->queued_ns, (unsigned long long)op->start_ns,
		     (unsigned long long)op->end_ns);
}

static void emit_memset(const struct fakecuda_op *op, int device, uint32_t stream_id)
{
	CUpti_ActivityMemset4 rec = {
	    .kind = CUPTI_ACTIVITY_KIND_MEMSET,
	    .value = op->memset.value,
	    .bytes = op->memset.bytes,
	    .start = op->start_ns,
	    .end = op->end_ns,
	    .deviceId = (uint32_t)device,
	    .contextId = fakecuda_context_id(device),
	    .streamId = stream_id,
	    .correlationId = op->correlation,
	    .flags = op->async ? CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC : 0,
	    .memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
	    .channelType = CUPTI_CHANNEL_TYPE_ASYNC_MEMCPY,
	};

	emit(&rec, sizeof(rec));
	fakecuda_log("\"type\":\"gpu\",\"kind\":\"memset\",\"pid\":%d,\"corr\":%u,\"device\":%d,"
		     "\"stream\":%u,\"bytes\":%llu,\"value\":%u,\"queued\":%llu,\"start\":%llu,"
		     "\"end\":%llu",
		     (int)getpid(), op->correlation, device, stream_id,
		     (unsigned long long)op->memset.bytes, op->memset.value,
		     (unsigned long long)op->queued_ns, (unsigned long long)op->start_ns,
		     (unsigned long long)op->end_ns);
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
