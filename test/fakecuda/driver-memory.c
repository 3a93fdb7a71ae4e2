/*
 * The fake libcuda.so.1's memory: device and pinned host allocations, copies and memsets in
 * their synchronous, Async and per-thread-default-stream (_ptds/_ptsz) forms. Bytes move when
 * the call is made; the GPU operation then takes its simulated time on its stream.
 */
#include <string.h>

#include "test/fakecuda/driver.h"

#define DEVICE CUPTI_ACTIVITY_MEMORY_KIND_DEVICE
#define PINNED CUPTI_ACTIVITY_MEMORY_KIND_PINNED
#define PTR(p) ((void *)(uintptr_t)(p))

/* ---- allocations ---- */

static CUresult alloc(const struct fakecuda_call *c, void **ptr, size_t bytes,
		      CUpti_ActivityMemoryKind kind)
{
	CUresult err = ptr ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err && !bytes)
		err = CUDA_ERROR_INVALID_VALUE; /* unlike cudaMalloc */
	if (!err)
		err = fakecuda_drv_error(
		    fakecuda_mem_alloc(ptr, bytes, kind, fakecuda_device_current(), c->correlation,
				       CUPTI_INVALID_STREAM_ID));
	return err;
}

/* Like cudaFree, it waits for the device to be idle first. */
static CUresult release(const struct fakecuda_call *c, void *ptr, CUpti_ActivityMemoryKind kind)
{
	CUresult err = fakecuda_drv_need_init();

	if (!err && ptr)
		fakecuda_sync(NULL, fakecuda_device_current());
	if (!err)
		err = fakecuda_drv_error(
		    fakecuda_mem_free(ptr, kind, c->correlation, CUPTI_INVALID_STREAM_ID));
	return err;
}

CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
	DRV_CALL(cuMemAlloc_v2, dptr, bytesize);
	void *ptr = NULL;
	CUresult err = alloc(&c, &ptr, bytesize, DEVICE);

	if (!err)
		*dptr = (CUdeviceptr)(uintptr_t)ptr;
	return fakecuda_api_exit(&c, err, "\"bytes\":%zu,\"ptr\":%llu", bytesize,
				 (unsigned long long)(uintptr_t)ptr);
}

CUresult cuMemFree(CUdeviceptr dptr)
{
	DRV_CALL(cuMemFree_v2, dptr);
	return fakecuda_api_exit(&c, release(&c, PTR(dptr), DEVICE), "\"ptr\":%llu",
				 (unsigned long long)dptr);
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	DRV_CALL(cuMemHostAlloc, pp, bytesize, Flags);
	CUresult err = alloc(&c, pp, bytesize, PINNED);

	return fakecuda_api_exit(&c, err, "\"bytes\":%zu,\"ptr\":%llu", bytesize,
				 (unsigned long long)(uintptr_t)(err ? NULL : *pp));
}

CUresult cuMemAllocHost(void **pp, size_t bytesize)
{
	DRV_CALL(cuMemAllocHost_v2, pp, bytesize);
	CUresult err = alloc(&c, pp, bytesize, PINNED);

	return fakecuda_api_exit(&c, err, "\"bytes\":%zu,\"ptr\":%llu", bytesize,
				 (unsigned long long)(uintptr_t)(err ? NULL : *pp));
}

CUresult cuMemFreeHost(void *p)
{
	DRV_CALL(cuMemFreeHost, p);
	return fakecuda_api_exit(&c, release(&c, p, PINNED), "\"ptr\":%llu",
				 (unsigned long long)(uintptr_t)p);
}

/* Unified addressing: a pinned buffer's device address is its host address. */
CUresult cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
	DRV_CALL(cuMemHostGetDevicePointer_v2, pdptr, p, Flags);
	CUresult err = pdptr && !Flags ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err && fakecuda_mem_kind(p) != PINNED)
		err = CUDA_ERROR_INVALID_VALUE;
	if (!err)
		*pdptr = (CUdeviceptr)(uintptr_t)p;
	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuMemGetInfo(size_t *free, size_t *total)
{
	DRV_CALL(cuMemGetInfo_v2, free, total);
	CUresult err = free && total ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err) {
		*total = fakecuda_device_total_mem(fakecuda_device_current());
		*free = *total - fakecuda_mem_in_use(fakecuda_device_current());
	}
	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
	DRV_CALL(cuMemGetAddressRange_v2, pbase, psize, dptr);
	CUresult err = fakecuda_drv_need_init();
	void *base = NULL;
	size_t bytes = 0;

	if (!err && fakecuda_mem_range(PTR(dptr), &base, &bytes))
		err = CUDA_ERROR_NOT_FOUND;
	if (!err && pbase)
		*pbase = (CUdeviceptr)(uintptr_t)base;
	if (!err && psize)
		*psize = bytes;
	return fakecuda_api_exit(&c, err, NULL);
}

static CUresult pointer_attribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
	CUpti_ActivityMemoryKind kind = fakecuda_mem_kind(PTR(ptr));

	switch (attribute) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = kind == DEVICE ? fakecuda_context_current() : NULL;
		break;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned int *)data = kind == DEVICE	 ? CU_MEMORYTYPE_DEVICE
					: kind == PINNED ? CU_MEMORYTYPE_HOST
							 : 0;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		*(void **)data = kind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE ? NULL : PTR(ptr);
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data =
		    kind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE ? -2 : fakecuda_device_current();
		break;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
	case CU_POINTER_ATTRIBUTE_MAPPED:
		*(int *)data = attribute == CU_POINTER_ATTRIBUTE_MAPPED &&
			       kind != CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
	DRV_CALL(cuPointerGetAttribute, data, attribute, ptr);
	CUresult err = data ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err && fakecuda_mem_kind(PTR(ptr)) == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE &&
	    attribute != CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
		err = CUDA_ERROR_INVALID_VALUE;
	if (!err)
		err = pointer_attribute(data, attribute, ptr);
	return fakecuda_api_exit(&c, err, NULL);
}

/* Memory libcuda did not allocate is not an error here: its attributes say so. */
CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
				void **data, CUdeviceptr ptr)
{
	DRV_CALL(cuPointerGetAttributes, numAttributes, attributes, data, ptr);
	CUresult err = attributes && data ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	for (unsigned int i = 0; !err && i < numAttributes; i++)
		if (pointer_attribute(data[i], attributes[i], ptr))
			memset(data[i], 0, sizeof(int)); /* unknown attributes: zero */
	return fakecuda_api_exit(&c, err, NULL);
}

/* ---- copies and memsets ---- */

/* Where a copy or memset goes: a stream handle, per the entry point's default stream. */
struct target {
	CUstream stream;
	bool per_thread, async;
};

static void queue(const struct fakecuda_call *c, const struct target *t, struct fakecuda_op *op,
		  bool wait)
{
	struct fakecuda_stream *s = fakecuda_stream_get(t->stream, t->per_thread);
	uint64_t seq;

	op->correlation = c->correlation;
	op->runtime = c->nested;
	op->async = t->async;
	seq = fakecuda_op_enqueue(s, op);
	if (wait)
		fakecuda_stream_wait(s, seq);
}

/*
 * A copy of `bytes` from src to dst; `dev` says which side must be device memory (0 for a copy
 * between any two, cuMemcpy). A synchronous one returns when it is done.
 */
enum side {
	ANY,
	TO_DEV = 1,
	FROM_DEV = 2
};

static CUresult copy(const struct fakecuda_call *c, const struct target *t, void *dst,
		     const void *src, size_t bytes, int dev)
{
	struct fakecuda_op op = {.kind = FAKECUDA_OP_MEMCPY};
	bool src_dev = fakecuda_mem_kind(src) == DEVICE, dst_dev = fakecuda_mem_kind(dst) == DEVICE;
	CUresult err = fakecuda_drv_need_init();

	if (!err && bytes &&
	    (!dst || !src || ((dev & TO_DEV) && !dst_dev) || ((dev & FROM_DEV) && !src_dev)))
		err = CUDA_ERROR_INVALID_VALUE;
	if (err || !bytes)
		return err;
	memmove(dst, src, bytes);
	op.memcpy.bytes = bytes;
	fakecuda_memcpy_kinds(&op, dst, src, src_dev, dst_dev);
	queue(c, t, &op, !t->async || fakecuda_memcpy_blocks(&op));
	return CUDA_SUCCESS;
}

static CUresult set(const struct fakecuda_call *c, const struct target *t, CUdeviceptr ptr,
		    unsigned int value, size_t elem, size_t n)
{
	struct fakecuda_op op = {.kind = FAKECUDA_OP_MEMSET};
	CUresult err = fakecuda_drv_need_init();
	size_t bytes = n * elem;

	if (!err && bytes && fakecuda_mem_kind(PTR(ptr)) != DEVICE)
		err = CUDA_ERROR_INVALID_VALUE;
	if (err || !bytes)
		return err;
	for (size_t i = 0; i < n; i++)
		memcpy((char *)PTR(ptr) + i * elem, &value,
		       elem); /* little-endian: the low bytes */
	op.memset.bytes = bytes;
	op.memset.value = value;
	queue(c, t, &op, false);
	return CUDA_SUCCESS;
}

/* The copies: synchronous on the legacy or per-thread stream, or Async. */
#define COPY(name, dst_t, dst_e, src_t, src_e, dev)                                            \
	DRV_PAIR_AS(name, _ptds, (dst_t dst, src_t src, size_t n),                             \
		    copy(&c, &(struct target){NULL, per_thread, false}, dst_e, src_e, n, dev), \
		    dst, src, n)
#define COPY_ASYNC(name, dst_t, dst_e, src_t, src_e, dev)                                         \
	DRV_PAIR(name, (dst_t dst, src_t src, size_t n, CUstream s),                              \
		 copy(&c, &(struct target){s, per_thread, true}, dst_e, src_e, n, dev), dst, src, \
		 n, s)

COPY(cuMemcpyHtoD_v2, CUdeviceptr, PTR(dst), const void *, src, TO_DEV)
COPY(cuMemcpyDtoH_v2, void *, dst, CUdeviceptr, PTR(src), FROM_DEV)
COPY(cuMemcpyDtoD_v2, CUdeviceptr, PTR(dst), CUdeviceptr, PTR(src), TO_DEV | FROM_DEV)
COPY(cuMemcpy, CUdeviceptr, PTR(dst), CUdeviceptr, PTR(src), ANY)
COPY_ASYNC(cuMemcpyHtoDAsync_v2, CUdeviceptr, PTR(dst), const void *, src, TO_DEV)
COPY_ASYNC(cuMemcpyDtoHAsync_v2, void *, dst, CUdeviceptr, PTR(src), FROM_DEV)
COPY_ASYNC(cuMemcpyDtoDAsync_v2, CUdeviceptr, PTR(dst), CUdeviceptr, PTR(src), TO_DEV | FROM_DEV)
COPY_ASYNC(cuMemcpyAsync, CUdeviceptr, PTR(dst), CUdeviceptr, PTR(src), ANY)

/* The memsets: bytes, 32-bit words; synchronous on the legacy or per-thread stream, or Async. */
DRV_PAIR_AS(cuMemsetD8_v2, _ptds, (CUdeviceptr d, unsigned char v, size_t n),
	    set(&c, &(struct target){NULL, per_thread, false}, d, v, 1, n), d, v, n)
DRV_PAIR_AS(cuMemsetD32_v2, _ptds, (CUdeviceptr d, unsigned int v, size_t n),
	    set(&c, &(struct target){NULL, per_thread, false}, d, v, 4, n), d, v, n)
DRV_PAIR(cuMemsetD8Async, (CUdeviceptr d, unsigned char v, size_t n, CUstream s),
	 set(&c, &(struct target){s, per_thread, true}, d, v, 1, n), d, v, n, s)
DRV_PAIR(cuMemsetD32Async, (CUdeviceptr d, unsigned int v, size_t n, CUstream s),
	 set(&c, &(struct target){s, per_thread, true}, d, v, 4, n), d, v, n, s)
