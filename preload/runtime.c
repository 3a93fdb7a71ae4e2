/*
 * What libgprof asks the CUDA runtime itself: its functions, looked up once; the versions and
 * devices every trace header shows; the current device. CUPTI sees these calls: the collector
 * is told they are ours, not the program's.
 */
#include <stdio.h>

#include <cuda_runtime_api.h>

#include "collector/collector.h"
#include "export/export.h"
#include "preload/preload.h"

void *gprof_runtime_fn(void **cache, const char *symbol)
{
	void *fn = __atomic_load_n(cache, __ATOMIC_RELAXED);

	if (!fn) {
		fn = gprof_resolve(symbol);
		__atomic_store_n(cache, fn, __ATOMIC_RELAXED);
	}
	return fn;
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

/* Without a libcudart in the process they stay unknown. */
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
	gprof_collector_own_calls(false);
	gprof_collector_set_runtime_info(&rt);
}
