/*
 * The fake runtime's memory calls: cudaMalloc/Free (sync, async, pinned host), cudaMemcpy and
 * cudaMemset in their legacy, _ptds/_ptsz and Async forms. Bytes move when the call is made;
 * the GPU operation then takes its simulated time on its stream.
 */
#include <string.h>

#include "test/fakecuda/cudart.h"

/* An entry point's call as the shared bodies below take it. */
struct rt_call {
	CUpti_CallbackId cbid;
	const char *name;
	const void *params;
	CUpti_ActivityMemoryKind kind; /* allocations */
	cudaStream_t stream;	       /* asynchronous calls */
	bool async, per_thread;
};

#define NAMES(...) __VA_ARGS__

/*
 * Entry point fn, whose CUPTI callback id carries version, with its parameters and their names
 * (each list in parentheses) and the call's other fields (also): its call a, handed to body.
 */
#define RT_ENTRY(fn, version, parameters, names, fields, body)                                 \
	cudaError_t fn parameters                                                              \
	{                                                                                      \
		fn##_##version##_params p = {NAMES names};                                     \
		struct rt_call a = {                                                           \
		    .cbid = RT_CBID(fn##_##version), .name = #fn, .params = &p, NAMES fields}; \
                                                                                               \
		return body;                                                                   \
	}

/* ---- allocation ---- */

static uint32_t async_stream_id(const struct rt_call *a)
{
	if (!a->async)
		return CUPTI_INVALID_STREAM_ID;
	return fakecuda_stream_id(fakecuda_stream_get(a->stream, a->per_thread));
}

static cudaError_t do_alloc(const struct rt_call *a, void **ptr, size_t size)
{
	struct fakecuda_call c;
	int err;

	fakert_enter(&c, a->cbid, a->name, a->params, NULL);
	if (!ptr)
		return fakert_exit(&c, cudaErrorInvalidValue, NULL);
	/* cudaMallocAsync takes from the device's current pool, as NVIDIA's does */
	err = a->async
		  ? fakecuda_pool_alloc(ptr, size, fakecuda_pool_current(fakecuda_device_current()),
					c.correlation, async_stream_id(a))
		  : fakecuda_mem_alloc(ptr, size, a->kind, fakecuda_device_current(), c.correlation,
				       CUPTI_INVALID_STREAM_ID);
	return fakert_exit(&c, fakert_error(err), "\"bytes\":%zu,\"ptr\":%llu", size,
			   (unsigned long long)(uintptr_t)*ptr);
}

/* cudaFree and cudaFreeHost wait for the device to be idle first, as the real ones do. */
static cudaError_t do_free(const struct rt_call *a, void *ptr)
{
	struct fakecuda_call c;
	int err;

	fakert_enter(&c, a->cbid, a->name, a->params, NULL);
	if (!a->async && ptr)
		fakecuda_sync(NULL, fakecuda_device_current());
	err = fakecuda_mem_free(ptr, a->kind, c.correlation, async_stream_id(a));
	return fakert_exit(&c, fakert_error(err), "\"ptr\":%llu",
			   (unsigned long long)(uintptr_t)ptr);
}

#define DEVICE CUPTI_ACTIVITY_MEMORY_KIND_DEVICE
#define PINNED CUPTI_ACTIVITY_MEMORY_KIND_PINNED

RT_ENTRY(cudaMalloc, v3020, (void **devPtr, size_t size), (devPtr, size), (.kind = DEVICE),
	 do_alloc(&a, devPtr, size))

RT_ENTRY(cudaFree, v3020, (void *devPtr), (devPtr), (.kind = DEVICE), do_free(&a, devPtr))

RT_ENTRY(cudaMallocHost, v3020, (void **ptr, size_t size), (ptr, size), (.kind = PINNED),
	 do_alloc(&a, ptr, size))

/* What C++'s cudaMallocHost(T **, size, flags) template calls; flags change nothing here. */
RT_ENTRY(cudaHostAlloc, v3020, (void **pHost, size_t size, unsigned int flags),
	 (pHost, size, flags), (.kind = PINNED), do_alloc(&a, pHost, size))

RT_ENTRY(cudaFreeHost, v3020, (void *ptr), (ptr), (.kind = PINNED), do_free(&a, ptr))

/* free is what the current device's allocations leave of its memory. */
cudaError_t cudaMemGetInfo(size_t *free, size_t *total)
{
	cudaMemGetInfo_v3020_params p = {free, total};
	int device = fakecuda_device_current();
	struct fakecuda_call c;

	fakert_enter(&c, RT_CBID(cudaMemGetInfo_v3020), "cudaMemGetInfo", &p, NULL);
	if (!free || !total)
		return fakert_exit(&c, cudaErrorInvalidValue, NULL);
	*total = fakecuda_device_total_mem(device);
	*free = *total - fakecuda_mem_in_use(device);
	return fakert_exit(&c, cudaSuccess, "\"free\":%zu,\"total\":%zu", *free, *total);
}

RT_ENTRY(cudaMallocAsync, v11020, (void **devPtr, size_t size, cudaStream_t hStream),
	 (devPtr, size, hStream), (.kind = DEVICE, .stream = hStream, .async = true),
	 do_alloc(&a, devPtr, size))

RT_ENTRY(cudaMallocAsync_ptsz, v11020, (void **devPtr, size_t size, cudaStream_t hStream),
	 (devPtr, size, hStream),
	 (.kind = DEVICE, .stream = hStream, .async = true, .per_thread = true),
	 do_alloc(&a, devPtr, size))

RT_ENTRY(cudaFreeAsync, v11020, (void *devPtr, cudaStream_t hStream), (devPtr, hStream),
	 (.kind = DEVICE, .stream = hStream, .async = true), do_free(&a, devPtr))

RT_ENTRY(cudaFreeAsync_ptsz, v11020, (void *devPtr, cudaStream_t hStream), (devPtr, hStream),
	 (.kind = DEVICE, .stream = hStream, .async = true, .per_thread = true),
	 do_free(&a, devPtr))

/* ---- copies and sets ---- */

/* Fills op->memcpy from the direction (cudaMemcpyDefault: from the pointers). */
static cudaError_t classify(struct fakecuda_op *op, void *dst, const void *src,
			    enum cudaMemcpyKind kind)
{
	bool src_dev = fakecuda_mem_kind(src) == DEVICE, dst_dev = fakecuda_mem_kind(dst) == DEVICE;

	if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault)
		return cudaErrorInvalidMemcpyDirection;
	if (kind != cudaMemcpyDefault) {
		src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
		dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
	}
	fakecuda_memcpy_kinds(op, dst, src, src_dev, dst_dev);
	return cudaSuccess;
}

static cudaError_t do_copy(const struct rt_call *g, void *dst, const void *src, size_t count,
			   enum cudaMemcpyKind kind)
{
	struct fakecuda_stream *s = fakecuda_stream_get(g->stream, g->per_thread);
	struct fakecuda_op op = {.kind = FAKECUDA_OP_MEMCPY, .runtime = true, .async = g->async};
	struct fakecuda_call c;
	cudaError_t err;

	fakert_enter(&c, g->cbid, g->name, g->params, NULL);
	err = classify(&op, dst, src, kind);
	if (!err && count && (!dst || !src))
		err = cudaErrorInvalidValue;
	if (!err && count) {
		memmove(dst, src, count);
		op.correlation = c.correlation;
		op.memcpy.bytes = count;
		uint64_t seq = fakecuda_op_enqueue(s, &op);
		if (!g->async || fakecuda_memcpy_blocks(&op))
			fakecuda_stream_wait(s, seq);
	}
	return fakert_exit(&c, err, "\"bytes\":%zu,\"kind\":%d,\"stream\":%u", count, (int)kind,
			   fakecuda_stream_id(s));
}

static cudaError_t do_set(const struct rt_call *g, void *ptr, int value, size_t count)
{
	struct fakecuda_stream *s = fakecuda_stream_get(g->stream, g->per_thread);
	struct fakecuda_op op = {.kind = FAKECUDA_OP_MEMSET, .runtime = true, .async = g->async};
	struct fakecuda_call c;
	cudaError_t err = cudaSuccess;

	fakert_enter(&c, g->cbid, g->name, g->params, NULL);
	if (count && fakecuda_mem_kind(ptr) != DEVICE)
		err = cudaErrorInvalidValue;
	if (!err && count) {
		memset(ptr, value, count);
		op.correlation = c.correlation;
		op.memset.bytes = count;
		op.memset.value = (uint32_t)value;
		fakecuda_op_enqueue(s, &op);
	}
	return fakert_exit(&c, err, "\"bytes\":%zu,\"value\":%d,\"stream\":%u", count, value,
			   fakecuda_stream_id(s));
}

RT_ENTRY(cudaMemcpy, v3020, (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind),
	 (dst, src, count, kind), (), do_copy(&a, dst, src, count, kind))

RT_ENTRY(cudaMemcpy_ptds, v7000,
	 (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind),
	 (dst, src, count, kind), (.per_thread = true), do_copy(&a, dst, src, count, kind))

RT_ENTRY(cudaMemcpyAsync, v3020,
	 (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream),
	 (dst, src, count, kind, stream), (.stream = stream, .async = true),
	 do_copy(&a, dst, src, count, kind))

RT_ENTRY(cudaMemcpyAsync_ptsz, v7000,
	 (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream),
	 (dst, src, count, kind, stream), (.stream = stream, .async = true, .per_thread = true),
	 do_copy(&a, dst, src, count, kind))

RT_ENTRY(cudaMemset, v3020, (void *devPtr, int value, size_t count), (devPtr, value, count), (),
	 do_set(&a, devPtr, value, count))

RT_ENTRY(cudaMemset_ptds, v7000, (void *devPtr, int value, size_t count), (devPtr, value, count),
	 (.per_thread = true), do_set(&a, devPtr, value, count))

RT_ENTRY(cudaMemsetAsync, v3020, (void *devPtr, int value, size_t count, cudaStream_t stream),
	 (devPtr, value, count, stream), (.stream = stream, .async = true),
	 do_set(&a, devPtr, value, count))

RT_ENTRY(cudaMemsetAsync_ptsz, v7000, (void *devPtr, int value, size_t count, cudaStream_t stream),
	 (devPtr, value, count, stream), (.stream = stream, .async = true, .per_thread = true),
	 do_set(&a, devPtr, value, count))
