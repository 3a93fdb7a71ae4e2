/*
 * What libgprof asks the CUDA runtime itself: its functions, looked up once; the versions and
 * devices every trace header shows; the current device; the memory in use. CUPTI sees these
 * calls: the collector is told they are ours, not the program's. A program that links the
 * static cudart (nvcc's default) has no runtime to ask: the driver it loaded answers.
 */
#include <stdio.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "collector/collector.h"
#include "common/clock.h"
#include "common/dso.h"
#include "export/export.h"
#include "preload/preload.h"

/* What a cache holds for a function the runtime lacks (the static cudart, an older one). */
static char missing;

/* find(symbol), looked up once into *cache (a race only looks it up twice), found or not. */
static void *cached(void **cache, const char *symbol, void *(*find)(const char *))
{
	void *fn = __atomic_load_n(cache, __ATOMIC_RELAXED);

	if (!fn) {
		fn = find(symbol);
		__atomic_store_n(cache, fn ? fn : &missing, __ATOMIC_RELAXED);
	}
	return fn == &missing ? NULL : fn;
}

void *gprof_runtime_fn(void **cache, const char *symbol)
{
	return cached(cache, symbol, gprof_resolve);
}

int gprof_runtime_device(void)
{
	typedef cudaError_t (*get_device_fn)(int *);
	static void *cache;
	get_device_fn get_device = (get_device_fn)gprof_runtime_fn(&cache, "cudaGetDevice");
	int device = 0;

	if (get_device)
		get_device(&device);
	return device;
}

/* A driver function of the libcuda.so.1 the process has loaded (libgprof never loads it). */
static void *driver_fn(const char *symbol)
{
	return gprof_dso_sym("libcuda.so.1", symbol);
}

/* The same, looked up once (for the calls made at each window's opening, or free). */
static void *driver_fn_once(void **cache, const char *symbol)
{
	return cached(cache, symbol, driver_fn);
}

/* The runtime's pool calls are the driver's, handle and attribute numbers alike. */
_Static_assert((int)cudaMemPoolAttrReservedMemCurrent == (int)CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
	       "the runtime's and the driver's pool attributes agree");
_Static_assert((int)cudaMemPoolAttrUsedMemCurrent == (int)CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
	       "the runtime's and the driver's pool attributes agree");

/*
 * What the device's current stream-ordered pool holds that no allocation uses (reserved -
 * used): in the driver's figure, not in the program's allocations; 0 if it cannot say. Asked of
 * the runtime, or of the driver where the runtime is static.
 */
static uint64_t pool_unused(int device, bool runtime)
{
	typedef CUresult (*pool_fn)(CUmemoryPool *, CUdevice);
	typedef CUresult (*attr_fn)(CUmemoryPool, CUmemPool_attribute, void *);
	static const char *const names[2][2] = {
	    {"cuDeviceGetMemPool", "cuMemPoolGetAttribute"},
	    {"cudaDeviceGetMemPool", "cudaMemPoolGetAttribute"},
	};
	static void *cache[2][2];
	void *(*find)(void **, const char *) = runtime ? gprof_runtime_fn : driver_fn_once;
	pool_fn get_pool = (pool_fn)find(&cache[runtime][0], names[runtime][0]);
	attr_fn get = (attr_fn)find(&cache[runtime][1], names[runtime][1]);
	cuuint64_t reserved = 0, used = 0;
	CUmemoryPool pool;
	bool ok = get_pool && get && !get_pool(&pool, device) &&
		  !get(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) &&
		  !get(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used);

	return ok && reserved > used ? reserved - used : 0;
}

/*
 * A reading of the driver's free and total bytes is taken between two clock readings; one the
 * scheduler stretched (the thread preempted) is taken again, up to READ_TRIES times, and the
 * narrowest kept: the memory records of other threads that fall between the two readings are
 * the ones the figure may or may not hold.
 */
#define READ_TRIES 4
#define READ_NS	   20000

int64_t gprof_runtime_memory_in_use(int *device, uint64_t *at_ns)
{
	typedef cudaError_t (*info_fn)(size_t *, size_t *);
	typedef CUresult (*drv_info_fn)(size_t *, size_t *);
	typedef CUresult (*drv_device_fn)(CUdevice *);
	static void *cache, *drv_cache[2];
	info_fn info = (info_fn)gprof_runtime_fn(&cache, "cudaMemGetInfo");
	drv_info_fn drv_info =
	    info ? NULL : (drv_info_fn)driver_fn_once(&drv_cache[0], "cuMemGetInfo_v2");
	drv_device_fn drv_device =
	    info ? NULL : (drv_device_fn)driver_fn_once(&drv_cache[1], "cuCtxGetDevice");
	uint64_t width = UINT64_MAX;
	size_t free_bytes = 0, total = 0;
	bool can = info != NULL, ok;

	gprof_collector_own_calls(true);
	if (info) {
		*device = gprof_runtime_device();
	} else if (drv_info && drv_device) { /* the thread's context, as the runtime set it */
		CUdevice d = 0;

		can = drv_device(&d) == CUDA_SUCCESS;
		*device = d;
	}
	for (int i = 0; can && i < READ_TRIES && width > READ_NS; i++) {
		size_t f = 0, t = 0;
		uint64_t t0 = gprof_realtime_ns();
		bool read = info ? info(&f, &t) == cudaSuccess : drv_info(&f, &t) == CUDA_SUCCESS;
		uint64_t t1 = gprof_realtime_ns();

		if (!read)
			break;
		if (t1 - t0 < width) {
			width = t1 - t0;
			*at_ns = t0 + width / 2;
			free_bytes = f;
			total = t;
		}
	}
	ok = width != UINT64_MAX;
	if (ok && total >= free_bytes) /* as the program's allocations count it */
		free_bytes += pool_unused(*device, info != NULL);
	gprof_collector_own_calls(false);
	return ok && total >= free_bytes ? (int64_t)(total - free_bytes) : -1;
}

uint64_t gprof_runtime_allocation_size(const void *ptr)
{
	typedef CUresult (*range_fn)(CUdeviceptr *, size_t *, CUdeviceptr);
	static void *cache;
	range_fn range = (range_fn)driver_fn_once(&cache, "cuMemGetAddressRange_v2");
	CUdeviceptr base = 0;
	size_t bytes = 0;
	bool ok;

	if (!range)
		return 0;
	gprof_collector_own_calls(true);
	ok = range(&base, &bytes, (CUdeviceptr)(uintptr_t)ptr) == CUDA_SUCCESS;
	gprof_collector_own_calls(false);
	return ok && base == (uintptr_t)ptr ? bytes : 0;
}

/* cudaDeviceProp -> the header's device fields. */
static void device_of(const struct cudaDeviceProp *p, int id, struct gprof_export_device *d)
{
	*d = (struct gprof_export_device){
	    .id = id,
	    .total_global_mem = p->totalGlobalMem,
	    .compute_major = p->major,
	    .compute_minor = p->minor,
	    .max_threads_per_block = p->maxThreadsPerBlock,
	    .max_threads_per_mp = p->maxThreadsPerMultiProcessor,
	    .regs_per_block = p->regsPerBlock,
	    .regs_per_mp = p->regsPerMultiprocessor,
	    .warp_size = p->warpSize,
	    .shared_mem_per_block = (int)p->sharedMemPerBlock,
	    .shared_mem_per_block_optin = (int)p->sharedMemPerBlockOptin,
	    .shared_mem_per_mp = (int)p->sharedMemPerMultiprocessor,
	    .num_sms = p->multiProcessorCount,
	};
	snprintf(d->name, sizeof(d->name), "%s", p->name);
}

/* The header's device fields from the driver's attributes; false if it cannot say. */
static bool driver_device(int ordinal, struct gprof_export_device *d)
{
	typedef CUresult (*get_fn)(CUdevice *, int);
	typedef CUresult (*attr_fn)(int *, CUdevice_attribute, CUdevice);
	typedef CUresult (*name_fn)(char *, int, CUdevice);
	typedef CUresult (*mem_fn)(size_t *, CUdevice);
	get_fn get = (get_fn)driver_fn("cuDeviceGet");
	attr_fn attr = (attr_fn)driver_fn("cuDeviceGetAttribute");
	name_fn name = (name_fn)driver_fn("cuDeviceGetName");
	mem_fn mem = (mem_fn)driver_fn("cuDeviceTotalMem_v2");
	static const struct {
		CUdevice_attribute attr;
		size_t offset;
	} attrs[] = {
#define ATTR(a, field) {CU_DEVICE_ATTRIBUTE_##a, offsetof(struct gprof_export_device, field)}
	    ATTR(COMPUTE_CAPABILITY_MAJOR, compute_major),
	    ATTR(COMPUTE_CAPABILITY_MINOR, compute_minor),
	    ATTR(MAX_THREADS_PER_BLOCK, max_threads_per_block),
	    ATTR(MAX_THREADS_PER_MULTIPROCESSOR, max_threads_per_mp),
	    ATTR(MAX_REGISTERS_PER_BLOCK, regs_per_block),
	    ATTR(MAX_REGISTERS_PER_MULTIPROCESSOR, regs_per_mp),
	    ATTR(WARP_SIZE, warp_size),
	    ATTR(MAX_SHARED_MEMORY_PER_BLOCK, shared_mem_per_block),
	    ATTR(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, shared_mem_per_block_optin),
	    ATTR(MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, shared_mem_per_mp),
	    ATTR(MULTIPROCESSOR_COUNT, num_sms),
#undef ATTR
	};
	size_t total = 0;
	CUdevice dev;

	if (!get || !attr || !name || !mem || get(&dev, ordinal) != CUDA_SUCCESS ||
	    name(d->name, (int)sizeof(d->name), dev) != CUDA_SUCCESS ||
	    mem(&total, dev) != CUDA_SUCCESS)
		return false;
	d->id = ordinal;
	d->total_global_mem = total;
	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++)
		if (attr((int *)((char *)d + attrs[i].offset), attrs[i].attr, dev) != CUDA_SUCCESS)
			return false;
	return true;
}

/* With the static cudart, no runtime to ask: the driver says the devices and its version. */
static void driver_facts(struct gprof_export_process_info *rt)
{
	typedef CUresult (*int_fn)(int *);
	int_fn drv_ver = (int_fn)driver_fn("cuDriverGetVersion");
	int_fn count = (int_fn)driver_fn("cuDeviceGetCount");
	int n = 0;

	if (drv_ver)
		drv_ver(&rt->cuda_driver_version);
	if (!count || count(&n) != CUDA_SUCCESS)
		n = 0;
	for (int i = 0; i < n && rt->n_devices < GPROF_EXPORT_MAX_DEVICES; i++)
		if (driver_device(i, &rt->devices[rt->n_devices]))
			rt->n_devices++;
}

/* Without a libcudart or a libcuda in the process they stay unknown. */
void gprof_runtime_facts(void)
{
	typedef cudaError_t (*int_fn)(int *);
	typedef cudaError_t (*props_fn)(struct cudaDeviceProp *, int);
	static struct gprof_export_process_info rt; /* written by the one caller that gets here */
	static int done;
	struct cudaDeviceProp p;
	int_fn rt_ver, drv_ver, count;
	props_fn props;
	int n = 0;

	if (__atomic_load_n(&done, __ATOMIC_ACQUIRE) ||
	    __atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
		return;
	gprof_collector_own_calls(true);
	rt_ver = (int_fn)gprof_resolve("cudaRuntimeGetVersion");
	drv_ver = (int_fn)gprof_resolve("cudaDriverGetVersion");
	count = (int_fn)gprof_resolve("cudaGetDeviceCount");
	props = (props_fn)gprof_resolve("cudaGetDeviceProperties");
	if (rt_ver)
		rt_ver(&rt.cuda_runtime_version);
	if (drv_ver)
		drv_ver(&rt.cuda_driver_version);
	if (!count || !props || count(&n) != cudaSuccess)
		n = 0;
	for (int i = 0; i < n && rt.n_devices < GPROF_EXPORT_MAX_DEVICES; i++)
		if (props(&p, i) == cudaSuccess)
			device_of(&p, i, &rt.devices[rt.n_devices++]);
	if (!props)
		driver_facts(&rt);
	gprof_collector_own_calls(false);
	gprof_collector_set_runtime_info(&rt);
}
