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

/* What an H200 reports (CUDA 13 cudaDeviceProp); the rest stays zero. */
static void fill_props(struct cudaDeviceProp *prop, int device)
{
	*prop = (struct cudaDeviceProp){
	    .totalGlobalMem = fakecuda_device_total_mem(device),
	    .sharedMemPerBlock = 48 << 10,
	    .regsPerBlock = 65536,
	    .warpSize = 32,
	    .memPitch = 0x7fffffff,
	    .maxThreadsPerBlock = 1024,
	    .maxThreadsDim = {1024, 1024, 64},
	    .maxGridSize = {0x7fffffff, 65535, 65535},
	    .totalConstMem = 64 << 10,
	    .major = 9,
	    .minor = 0,
	    .textureAlignment = 512,
	    .multiProcessorCount = 132,
	    .canMapHostMemory = 1,
	    .concurrentKernels = 1,
	    .ECCEnabled = 1,
	    .pciBusID = 0x19 + device,
	    .asyncEngineCount = 5,
	    .unifiedAddressing = 1,
	    .memoryBusWidth = 6144,
	    .l2CacheSize = 50 << 20,
	    .maxThreadsPerMultiProcessor = 2048,
	    .streamPrioritiesSupported = 1,
	    .sharedMemPerMultiprocessor = 228 << 10,
	    .regsPerMultiprocessor = 65536,
	    .managedMemory = 1,
	    .cooperativeLaunch = 1,
	    .sharedMemPerBlockOptin = 227 << 10,
	    .maxBlocksPerMultiProcessor = 32,
	    .memoryPoolsSupported = 1,
	    .clusterLaunch = 1,
	};
	snprintf(prop->name, sizeof(prop->name), "NVIDIA H200");
	memset(prop->uuid.bytes, 0x40 + device, sizeof(prop->uuid.bytes));
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
