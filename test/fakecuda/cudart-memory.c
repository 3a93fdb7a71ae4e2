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

/* The call of entry point fn, whose CUPTI callback id carries version; then its other fields. */
#define RT_CALL(fn, version, params_, ...)                                                   \
	{                                                                                    \
		.cbid = RT_CBID(fn##_##version), .name = #fn, .params = params_, __VA_ARGS__ \
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

cudaError_t cudaMalloc(void **devPtr, size_t size)
{
	cudaMalloc_v3020_params p = {devPtr, size};
	struct rt_call a = RT_CALL(cudaMalloc, v3020, &p, .kind = DEVICE);

	return do_alloc(&a, devPtr, size);
}

cudaError_t cudaFree(void *devPtr)
{
	cudaFree_v3020_params p = {devPtr};
	struct rt_call a = RT_CALL(cudaFree, v3020, &p, .kind = DEVICE);

	return do_free(&a, devPtr);
}

cudaError_t cudaMallocHost(void **ptr, size_t size)
{
	cudaMallocHost_v3020_params p = {ptr, size};
	struct rt_call a = RT_CALL(cudaMallocHost, v3020, &p, .kind = PINNED);

	return do_alloc(&a, ptr, size);
}

/* What C++'s cudaMallocHost(T **, size, flags) template calls; flags change nothing here. */
cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
	cudaHostAlloc_v3020_params p = {pHost, size, flags};
	struct rt_call a = RT_CALL(cudaHostAlloc, v3020, &p, .kind = PINNED);

	return do_alloc(&a, pHost, size);
}

cudaError_t cudaFreeHost(void *ptr)
{
	cudaFreeHost_v3020_params p = {ptr};
	struct rt_call a = RT_CALL(cudaFreeHost, v3020, &p, .kind = PINNED);

	return do_free(&a, ptr);
}

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

cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
	cudaMallocAsync_v11020_params p = {devPtr, size, hStream};
	struct rt_call a =
	    RT_CALL(cudaMallocAsync, v11020, &p, .kind = DEVICE, .stream = hStream, .async = true);

	return do_alloc(&a, devPtr, size);
}

cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream)
{
	cudaMallocAsync_ptsz_v11020_params p = {devPtr, size, hStream};
	struct rt_call a = RT_CALL(cudaMallocAsync_ptsz, v11020, &p, .kind = DEVICE,
				   .stream = hStream, .async = true, .per_thread = true);

	return do_alloc(&a, devPtr, size);
}

cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
	cudaFreeAsync_v11020_params p = {devPtr, hStream};
	struct rt_call a =
	    RT_CALL(cudaFreeAsync, v11020, &p, .kind = DEVICE, .stream = hStream, .async = true);

	return do_free(&a, devPtr);
}

cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream)
{
	cudaFreeAsync_ptsz_v11020_params p = {devPtr, hStream};
	struct rt_call a = RT_CALL(cudaFreeAsync_ptsz, v11020, &p, .kind = DEVICE,
				   .stream = hStream, .async = true, .per_thread = true);

	return do_free(&a, devPtr);
}

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

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	cudaMemcpy_v3020_params p = {dst, src, count, kind};
	struct rt_call g = RT_CALL(cudaMemcpy, v3020, &p);

	return do_copy(&g, dst, src, count, kind);
}

cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	cudaMemcpy_ptds_v7000_params p = {dst, src, count, kind};
	struct rt_call g = RT_CALL(cudaMemcpy_ptds, v7000, &p, .per_thread = true);

	return do_copy(&g, dst, src, count, kind);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
			    cudaStream_t stream)
{
	cudaMemcpyAsync_v3020_params p = {dst, src, count, kind, stream};
	struct rt_call g = RT_CALL(cudaMemcpyAsync, v3020, &p, .stream = stream, .async = true);

	return do_copy(&g, dst, src, count, kind);
}

cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
				 cudaStream_t stream)
{
	cudaMemcpyAsync_ptsz_v7000_params p = {dst, src, count, kind, stream};
	struct rt_call g = RT_CALL(cudaMemcpyAsync_ptsz, v7000, &p, .stream = stream, .async = true,
				   .per_thread = true);

	return do_copy(&g, dst, src, count, kind);
}

cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
	cudaMemset_v3020_params p = {devPtr, value, count};
	struct rt_call g = RT_CALL(cudaMemset, v3020, &p);

	return do_set(&g, devPtr, value, count);
}

cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count)
{
	cudaMemset_ptds_v7000_params p = {devPtr, value, count};
	struct rt_call g = RT_CALL(cudaMemset_ptds, v7000, &p, .per_thread = true);

	return do_set(&g, devPtr, value, count);
}

cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
	cudaMemsetAsync_v3020_params p = {devPtr, value, count, stream};
	struct rt_call g = RT_CALL(cudaMemsetAsync, v3020, &p, .stream = stream, .async = true);

	return do_set(&g, devPtr, value, count);
}

cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream)
{
	cudaMemsetAsync_ptsz_v7000_params p = {devPtr, value, count, stream};
	struct rt_call g = RT_CALL(cudaMemsetAsync_ptsz, v7000, &p, .stream = stream, .async = true,
				   .per_thread = true);

	return do_set(&g, devPtr, value, count);
}
