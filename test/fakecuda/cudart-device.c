/*
 * The fake runtime's device management: device count and selection, H200-like properties,
 * versions and cudaDeviceSynchronize.
 */
#include <stdio.h>
#include <string.h>

#include "test/fakecuda/cudart.h"

#define CUDA_VERSION_NUMBER 13000

/*
 * A call that answers one int through its one argument, which is also all its params struct
 * holds: *out = value(), logged as "key":value.
 */
static cudaError_t answer_int(CUpti_CallbackId cbid, const char *name, int *out, int (*value)(void),
			      const char *key)
{
	struct fakecuda_call c;

	fakert_enter(&c, cbid, name, &out, NULL);
	if (!out)
		return fakert_exit(&c, cudaErrorInvalidValue, NULL);
	*out = value();
	return fakert_exit(&c, cudaSuccess, "\"%s\":%d", key, *out);
}

cudaError_t cudaGetDeviceCount(int *count)
{
	return answer_int(RT_CBID(cudaGetDeviceCount_v3020), "cudaGetDeviceCount", count,
			  fakecuda_device_count, "count");
}

cudaError_t cudaGetDevice(int *device)
{
	return answer_int(RT_CBID(cudaGetDevice_v3020), "cudaGetDevice", device,
			  fakecuda_device_current, "device");
}

cudaError_t cudaSetDevice(int device)
{
	cudaSetDevice_v3020_params p = {device};
	struct fakecuda_call c;
	cudaError_t err;

	fakert_enter(&c, RT_CBID(cudaSetDevice_v3020), "cudaSetDevice", &p, NULL);
	err = fakecuda_device_set(device) ? cudaErrorInvalidDevice : cudaSuccess;
	return fakert_exit(&c, err, "\"device\":%d", device);
}

/* The simulated device's attributes as cudaDeviceProp holds them, as the real runtime makes it. */
static void fill_props(struct cudaDeviceProp *prop, int device)
{
#define ATTR(name) fakecuda_device_attribute(CU_DEVICE_ATTRIBUTE_##name, device)
	*prop = (struct cudaDeviceProp){
	    .totalGlobalMem = fakecuda_device_total_mem(device),
	    .sharedMemPerBlock = ATTR(MAX_SHARED_MEMORY_PER_BLOCK),
	    .regsPerBlock = ATTR(MAX_REGISTERS_PER_BLOCK),
	    .warpSize = ATTR(WARP_SIZE),
	    .memPitch = ATTR(MAX_PITCH),
	    .maxThreadsPerBlock = ATTR(MAX_THREADS_PER_BLOCK),
	    .maxThreadsDim = {ATTR(MAX_BLOCK_DIM_X), ATTR(MAX_BLOCK_DIM_Y), ATTR(MAX_BLOCK_DIM_Z)},
	    .maxGridSize = {ATTR(MAX_GRID_DIM_X), ATTR(MAX_GRID_DIM_Y), ATTR(MAX_GRID_DIM_Z)},
	    .totalConstMem = ATTR(TOTAL_CONSTANT_MEMORY),
	    .major = ATTR(COMPUTE_CAPABILITY_MAJOR),
	    .minor = ATTR(COMPUTE_CAPABILITY_MINOR),
	    .textureAlignment = ATTR(TEXTURE_ALIGNMENT),
	    .multiProcessorCount = ATTR(MULTIPROCESSOR_COUNT),
	    .canMapHostMemory = ATTR(CAN_MAP_HOST_MEMORY),
	    .concurrentKernels = ATTR(CONCURRENT_KERNELS),
	    .ECCEnabled = ATTR(ECC_ENABLED),
	    .pciBusID = ATTR(PCI_BUS_ID),
	    .asyncEngineCount = ATTR(ASYNC_ENGINE_COUNT),
	    .unifiedAddressing = ATTR(UNIFIED_ADDRESSING),
	    .memoryBusWidth = ATTR(GLOBAL_MEMORY_BUS_WIDTH),
	    .l2CacheSize = ATTR(L2_CACHE_SIZE),
	    .maxThreadsPerMultiProcessor = ATTR(MAX_THREADS_PER_MULTIPROCESSOR),
	    .streamPrioritiesSupported = ATTR(STREAM_PRIORITIES_SUPPORTED),
	    .sharedMemPerMultiprocessor = ATTR(MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
	    .regsPerMultiprocessor = ATTR(MAX_REGISTERS_PER_MULTIPROCESSOR),
	    .managedMemory = ATTR(MANAGED_MEMORY),
	    .cooperativeLaunch = ATTR(COOPERATIVE_LAUNCH),
	    .sharedMemPerBlockOptin = ATTR(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
	    .maxBlocksPerMultiProcessor = ATTR(MAX_BLOCKS_PER_MULTIPROCESSOR),
	    .memoryPoolsSupported = ATTR(MEMORY_POOLS_SUPPORTED),
	    .clusterLaunch = ATTR(CLUSTER_LAUNCH),
	};
#undef ATTR
	snprintf(prop->name, sizeof(prop->name), FAKECUDA_DEVICE_NAME);
	fakecuda_device_uuid(&prop->uuid, device);
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
	cudaGetDeviceProperties_v12000_params p = {prop, device};
	struct fakecuda_call c;

	fakert_enter(&c, RT_CBID(cudaGetDeviceProperties_v12000), "cudaGetDeviceProperties", &p,
		     NULL);
	if (!prop)
		return fakert_exit(&c, cudaErrorInvalidValue, NULL);
	if (device < 0 || device >= fakecuda_device_count())
		return fakert_exit(&c, cudaErrorInvalidDevice, "\"device\":%d", device);
	fill_props(prop, device);
	return fakert_exit(&c, cudaSuccess, "\"device\":%d", device);
}

static int cuda_version(void)
{
	return CUDA_VERSION_NUMBER;
}

cudaError_t cudaDriverGetVersion(int *driverVersion)
{
	return answer_int(RT_CBID(cudaDriverGetVersion_v3020), "cudaDriverGetVersion",
			  driverVersion, cuda_version, "version");
}

cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
{
	return answer_int(RT_CBID(cudaRuntimeGetVersion_v3020), "cudaRuntimeGetVersion",
			  runtimeVersion, cuda_version, "version");
}

cudaError_t cudaDeviceSynchronize(void)
{
	struct fakecuda_call c;

	fakert_enter(&c, RT_CBID(cudaDeviceSynchronize_v3020), "cudaDeviceSynchronize", NULL, NULL);
	fakecuda_sync(NULL, fakecuda_device_current());
	fakecuda_sync_done(&c, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE,
			   fakecuda_device_current(), NULL, NULL);
	return fakert_exit(&c, cudaSuccess, NULL);
}
