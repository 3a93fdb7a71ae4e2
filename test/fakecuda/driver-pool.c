/*
 * The fake libcuda.so.1's stream-ordered allocator: cuMemAllocAsync, cuMemAllocFromPoolAsync and
 * cuMemFreeAsync (with their per-thread-default-stream forms), and the memory pools they take
 * from (memory.c): a device's default and current pool, by device (11.2) or by location (13.0),
 * pools a program makes, their attributes, trimming and access. An allocation is made, and a
 * free takes effect, when the call is made: the simulated GPU needs no more order than that.
 */
#include "test/fakecuda/driver.h"

#define PTR(p)	  ((void *)(uintptr_t)(p))
#define POOL(h)	  ((struct fakecuda_pool *)(h))
#define HANDLE(p) ((CUmemoryPool)(p))

/* The device a location names: a device ordinal of pinned memory only. */
static int location_device(const CUmemLocation *location, CUmemAllocationType type)
{
	if (!location || location->type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    type != CU_MEM_ALLOCATION_TYPE_PINNED || location->id < 0 ||
	    location->id >= fakecuda_device_count())
		return -1;
	return location->id;
}

/* From `pool`, or the current pool of the stream's device (NULL). */
static CUresult alloc_async(const struct fakecuda_call *c, CUdeviceptr *dptr, size_t bytes,
			    struct fakecuda_pool *pool, CUstream stream, bool per_thread)
{
	struct fakecuda_stream *s;
	void *ptr = NULL;
	CUresult err = dptr ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err && !bytes)
		err = CUDA_ERROR_INVALID_VALUE;
	if (err)
		return err;
	s = fakecuda_stream_get(stream, per_thread);
	if (!pool)
		pool = fakecuda_pool_current(fakecuda_stream_device(s));
	err = fakecuda_drv_error(
	    fakecuda_pool_alloc(&ptr, bytes, pool, c->correlation, fakecuda_stream_id(s)));
	if (!err)
		*dptr = (CUdeviceptr)(uintptr_t)ptr;
	return err;
}

static CUresult free_async(const struct fakecuda_call *c, CUdeviceptr dptr, CUstream stream,
			   bool per_thread)
{
	CUresult err = fakecuda_drv_need_init();

	if (err)
		return err;
	return fakecuda_drv_error(
	    fakecuda_mem_free(PTR(dptr), CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, c->correlation,
			      fakecuda_stream_id(fakecuda_stream_get(stream, per_thread))));
}

DRV_PAIR(cuMemAllocAsync, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream),
	 alloc_async(&c, dptr, bytesize, NULL, hStream, per_thread), dptr, bytesize, hStream)
DRV_PAIR(cuMemAllocFromPoolAsync,
	 (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),
	 pool ? alloc_async(&c, dptr, bytesize, POOL(pool), hStream, per_thread)
	      : CUDA_ERROR_INVALID_VALUE,
	 dptr, bytesize, pool, hStream)
DRV_PAIR(cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream),
	 free_async(&c, dptr, hStream, per_thread), dptr, hStream)

/* ---- a device's pools ---- */

static CUresult get_pool(CUmemoryPool *out, int device, bool current)
{
	CUresult err = out ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err && (device < 0 || device >= fakecuda_device_count()))
		err = CUDA_ERROR_INVALID_DEVICE;
	if (!err)
		*out =
		    HANDLE(current ? fakecuda_pool_current(device) : fakecuda_pool_default(device));
	return err;
}

static CUresult set_pool(int device, CUmemoryPool pool)
{
	CUresult err = fakecuda_drv_need_init();

	if (!err && (device < 0 || device >= fakecuda_device_count()))
		err = CUDA_ERROR_INVALID_DEVICE;
	return err ? err : fakecuda_drv_error(fakecuda_pool_set_current(device, POOL(pool)));
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
	DRV_CALL(cuDeviceGetDefaultMemPool, pool_out, dev);
	return fakecuda_api_exit(&c, get_pool(pool_out, dev, false), NULL);
}

CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
	DRV_CALL(cuDeviceGetMemPool, pool, dev);
	return fakecuda_api_exit(&c, get_pool(pool, dev, true), NULL);
}

CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
	DRV_CALL(cuDeviceSetMemPool, dev, pool);
	return fakecuda_api_exit(&c, set_pool(dev, pool), NULL);
}

CUresult cuMemGetDefaultMemPool(CUmemoryPool *pool_out, CUmemLocation *location,
				CUmemAllocationType type)
{
	DRV_CALL(cuMemGetDefaultMemPool, pool_out, location, type);
	return fakecuda_api_exit(&c, get_pool(pool_out, location_device(location, type), false),
				 NULL);
}

CUresult cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *location, CUmemAllocationType type)
{
	DRV_CALL(cuMemGetMemPool, pool, location, type);
	return fakecuda_api_exit(&c, get_pool(pool, location_device(location, type), true), NULL);
}

CUresult cuMemSetMemPool(CUmemLocation *location, CUmemAllocationType type, CUmemoryPool pool)
{
	DRV_CALL(cuMemSetMemPool, location, type, pool);
	return fakecuda_api_exit(&c, set_pool(location_device(location, type), pool), NULL);
}

/* ---- pools a program makes, and any pool's figures ---- */

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
	DRV_CALL(cuMemPoolCreate, pool, poolProps);
	struct fakecuda_pool *p = NULL;
	CUresult err = pool && poolProps ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;
	int device = poolProps ? location_device(&poolProps->location, poolProps->allocType) : -1;

	if (!err && device < 0)
		err = CUDA_ERROR_INVALID_VALUE;
	if (!err)
		err = fakecuda_drv_error(fakecuda_pool_create(&p, device, c.correlation));
	if (!err)
		*pool = HANDLE(p);
	return fakecuda_api_exit(&c, err, "\"device\":%d", device);
}

CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
	DRV_CALL(cuMemPoolDestroy, pool);
	CUresult err = fakecuda_drv_need_init();

	return fakecuda_api_exit(
	    &c, err ? err : fakecuda_drv_error(fakecuda_pool_destroy(POOL(pool), c.correlation)),
	    NULL);
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
	DRV_CALL(cuMemPoolTrimTo, pool, minBytesToKeep);
	CUresult err = fakecuda_drv_need_init();

	if (!err)
		err = fakecuda_drv_error(
		    fakecuda_pool_trim(POOL(pool), minBytesToKeep, c.correlation));
	return fakecuda_api_exit(&c, err, "\"keep\":%zu", minBytesToKeep);
}

static CUresult attribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value, bool set)
{
	CUresult err = fakecuda_drv_need_init();

	return err ? err
		   : fakecuda_drv_error(fakecuda_pool_attribute(POOL(pool), attr, value, set));
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	DRV_CALL(cuMemPoolSetAttribute, pool, attr, value);
	return fakecuda_api_exit(&c, attribute(pool, attr, value, true), "\"attribute\":%d",
				 (int)attr);
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	DRV_CALL(cuMemPoolGetAttribute, pool, attr, value);
	return fakecuda_api_exit(&c, attribute(pool, attr, value, false), "\"attribute\":%d",
				 (int)attr);
}

/* One process, its devices: every pool is readable and writable from each of them. */
CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)
{
	DRV_CALL(cuMemPoolSetAccess, pool, map, count);
	CUresult err =
	    pool && (map || !count) ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool, CUmemLocation *location)
{
	DRV_CALL(cuMemPoolGetAccess, flags, memPool, location);
	CUresult err =
	    flags && memPool && location ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err)
		*flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	return fakecuda_api_exit(&c, err, NULL);
}
