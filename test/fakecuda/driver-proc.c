/*
 * cuGetProcAddress: how NVIDIA's runtime (and cuBLAS, and Triton) find every driver entry point.
 * A request names a base name ("cuMemAlloc") and the CUDA version the caller was built for; the
 * answer is the newest form of the function that is not newer than that version (cuMemAlloc at
 * 13000 is cuMemAlloc_v2, since 3020; cuCtxSynchronize at 13000 is cuCtxSynchronize_v2(ctx)),
 * and its per-thread-default-stream form (_ptds/_ptsz) when the flags ask for one. Names the
 * simulated driver does not have are NOT_FOUND, as a real driver answers for names it lacks.
 */
#include <string.h>

#include "test/fakecuda/driver.h"

/* The CUDA 11.3 entry point without symbolStatus, still exported under the plain name. */
__attribute__((visibility("default"))) CUresult
get_proc_address_v1(const char *symbol, void **pfn, int cudaVersion,
		    cuuint64_t flags) __asm__("cuGetProcAddress");

/*
 * The form `fn` of `name` since CUDA `version` (cudaTypedefs.h's PFN_name_vVERSION). Where the
 * runtime asks for an older form whose meaning is the same (cuDevicePrimaryCtxRelease at 7000),
 * the newer one answers it.
 */
static const struct proc {
	const char *name;
	int version;
	void *fn, *per_thread_fn;
} procs[] = {
    {"cuCtxGetApiVersion", 3020, cuCtxGetApiVersion, NULL},
    {"cuCtxGetCacheConfig", 3020, cuCtxGetCacheConfig, NULL},
    {"cuCtxGetCurrent", 4000, cuCtxGetCurrent, NULL},
    {"cuCtxGetDevice", 2000, cuCtxGetDevice, NULL},
    {"cuCtxGetDevice", 13000, cuCtxGetDevice_v2, NULL},
    {"cuCtxGetFlags", 7000, cuCtxGetFlags, NULL},
    {"cuCtxGetId", 12000, cuCtxGetId, NULL},
    {"cuCtxGetLimit", 3010, cuCtxGetLimit, NULL},
    {"cuCtxGetStreamPriorityRange", 5050, cuCtxGetStreamPriorityRange, NULL},
    {"cuCtxPopCurrent", 4000, cuCtxPopCurrent, NULL},
    {"cuCtxPushCurrent", 4000, cuCtxPushCurrent, NULL},
    {"cuCtxSetCacheConfig", 3020, cuCtxSetCacheConfig, NULL},
    {"cuCtxSetCurrent", 4000, cuCtxSetCurrent, NULL},
    {"cuCtxSetLimit", 3010, cuCtxSetLimit, NULL},
    {"cuCtxSynchronize", 2000, cuCtxSynchronize, NULL},
    {"cuCtxSynchronize", 13000, cuCtxSynchronize_v2, NULL},
    {"cuDeviceCanAccessPeer", 4000, cuDeviceCanAccessPeer, NULL},
    {"cuDeviceGet", 2000, cuDeviceGet, NULL},
    {"cuDeviceGetAttribute", 2000, cuDeviceGetAttribute, NULL},
    {"cuDeviceGetCount", 2000, cuDeviceGetCount, NULL},
    {"cuDeviceGetDefaultMemPool", 11020, cuDeviceGetDefaultMemPool, NULL},
    {"cuDeviceGetMemPool", 11020, cuDeviceGetMemPool, NULL},
    {"cuDeviceGetName", 2000, cuDeviceGetName, NULL},
    {"cuDeviceGetPCIBusId", 4010, cuDeviceGetPCIBusId, NULL},
    {"cuDeviceGetUuid", 9020, cuDeviceGetUuid_v2, NULL},
    {"cuDeviceGetUuid", 11040, cuDeviceGetUuid_v2, NULL},
    {"cuDevicePrimaryCtxGetState", 7000, cuDevicePrimaryCtxGetState, NULL},
    {"cuDevicePrimaryCtxRelease", 7000, cuDevicePrimaryCtxRelease, NULL},
    {"cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease, NULL},
    {"cuDevicePrimaryCtxReset", 7000, cuDevicePrimaryCtxReset, NULL},
    {"cuDevicePrimaryCtxReset", 11000, cuDevicePrimaryCtxReset, NULL},
    {"cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain, NULL},
    {"cuDevicePrimaryCtxSetFlags", 7000, cuDevicePrimaryCtxSetFlags, NULL},
    {"cuDevicePrimaryCtxSetFlags", 11000, cuDevicePrimaryCtxSetFlags, NULL},
    {"cuDeviceSetMemPool", 11020, cuDeviceSetMemPool, NULL},
    {"cuDeviceTotalMem", 3020, cuDeviceTotalMem, NULL},
    {"cuDriverGetVersion", 2020, cuDriverGetVersion, NULL},
    {"cuEventCreate", 2000, cuEventCreate, NULL},
    {"cuEventDestroy", 4000, cuEventDestroy, NULL},
    {"cuEventElapsedTime", 12080, cuEventElapsedTime, NULL},
    {"cuEventQuery", 2000, cuEventQuery, NULL},
    {"cuEventRecord", 2000, cuEventRecord, cuEventRecord_ptsz},
    {"cuEventRecordWithFlags", 11010, cuEventRecordWithFlags, cuEventRecordWithFlags_ptsz},
    {"cuEventSynchronize", 2000, cuEventSynchronize, NULL},
    {"cuFuncGetAttribute", 2020, cuFuncGetAttribute, NULL},
    {"cuFuncGetName", 12030, cuFuncGetName, NULL},
    {"cuFuncSetAttribute", 9000, cuFuncSetAttribute, NULL},
    {"cuGetExportTable", 3000, cuGetExportTable, NULL},
    {"cuGetProcAddress", 11030, get_proc_address_v1, NULL},
    {"cuGetProcAddress", 12000, cuGetProcAddress_v2, NULL},
    {"cuGraphDestroy", 10000, cuGraphDestroy, NULL},
    {"cuGraphExecDestroy", 10000, cuGraphExecDestroy, NULL},
    {"cuGraphInstantiateWithFlags", 11040, cuGraphInstantiateWithFlags, NULL},
    {"cuGraphInstantiateWithParams", 12000, cuGraphInstantiateWithParams,
     cuGraphInstantiateWithParams_ptsz},
    {"cuGraphGetNodes", 10000, cuGraphGetNodes, NULL},
    {"cuGraphLaunch", 10000, cuGraphLaunch, cuGraphLaunch_ptsz},
    {"cuGraphUpload", 11010, cuGraphUpload, cuGraphUpload_ptsz},
    {"cuInit", 2000, cuInit, NULL},
    {"cuKernelGetAttribute", 12000, cuKernelGetAttribute, NULL},
    {"cuKernelGetFunction", 12000, cuKernelGetFunction, NULL},
    {"cuKernelGetName", 12030, cuKernelGetName, NULL},
    {"cuKernelSetAttribute", 12000, cuKernelSetAttribute, NULL},
    {"cuLaunchCooperativeKernel", 9000, cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz},
    {"cuLaunchKernel", 4000, cuLaunchKernel, cuLaunchKernel_ptsz},
    {"cuLaunchKernelEx", 11060, cuLaunchKernelEx, cuLaunchKernelEx_ptsz},
    {"cuLibraryGetGlobal", 12000, cuLibraryGetGlobal, NULL},
    {"cuLibraryGetManaged", 12000, cuLibraryGetManaged, NULL},
    {"cuLibraryGetModule", 12000, cuLibraryGetModule, NULL},
    {"cuLibraryGetKernel", 12000, cuLibraryGetKernel, NULL},
    {"cuLibraryLoadData", 12000, cuLibraryLoadData, NULL},
    {"cuLibraryLoadFromFile", 12000, cuLibraryLoadFromFile, NULL},
    {"cuLibraryUnload", 12000, cuLibraryUnload, NULL},
    {"cuLinkAddData", 5050, link_add_data_v1, NULL},
    {"cuLinkAddData", 6050, cuLinkAddData_v2, NULL},
    {"cuLinkAddFile", 5050, link_add_file_v1, NULL},
    {"cuLinkAddFile", 6050, cuLinkAddFile_v2, NULL},
    {"cuLinkComplete", 5050, cuLinkComplete, NULL},
    {"cuLinkCreate", 5050, link_create_v1, NULL},
    {"cuLinkCreate", 6050, cuLinkCreate_v2, NULL},
    {"cuLinkDestroy", 5050, cuLinkDestroy, NULL},
    {"cuMemAlloc", 3020, cuMemAlloc, NULL},
    {"cuMemAllocAsync", 11020, cuMemAllocAsync, cuMemAllocAsync_ptsz},
    {"cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz},
    {"cuMemAllocHost", 3020, cuMemAllocHost, NULL},
    {"cuMemFree", 3020, cuMemFree, NULL},
    {"cuMemFreeAsync", 11020, cuMemFreeAsync, cuMemFreeAsync_ptsz},
    {"cuMemFreeHost", 2000, cuMemFreeHost, NULL},
    {"cuMemGetAddressRange", 3020, cuMemGetAddressRange, NULL},
    {"cuMemGetDefaultMemPool", 13000, cuMemGetDefaultMemPool, NULL},
    {"cuMemGetInfo", 3020, cuMemGetInfo, NULL},
    {"cuMemGetMemPool", 13000, cuMemGetMemPool, NULL},
    {"cuMemHostAlloc", 2020, cuMemHostAlloc, NULL},
    {"cuMemHostGetDevicePointer", 3020, cuMemHostGetDevicePointer, NULL},
    {"cuMemPoolCreate", 11020, cuMemPoolCreate, NULL},
    {"cuMemPoolDestroy", 11020, cuMemPoolDestroy, NULL},
    {"cuMemPoolGetAccess", 11020, cuMemPoolGetAccess, NULL},
    {"cuMemPoolGetAttribute", 11020, cuMemPoolGetAttribute, NULL},
    {"cuMemPoolSetAccess", 11020, cuMemPoolSetAccess, NULL},
    {"cuMemPoolSetAttribute", 11020, cuMemPoolSetAttribute, NULL},
    {"cuMemPoolTrimTo", 11020, cuMemPoolTrimTo, NULL},
    {"cuMemSetMemPool", 13000, cuMemSetMemPool, NULL},
    {"cuMemcpy", 4000, cuMemcpy, cuMemcpy_ptds},
    {"cuMemcpyAsync", 4000, cuMemcpyAsync, cuMemcpyAsync_ptsz},
    {"cuMemcpyDtoD", 3020, cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds},
    {"cuMemcpyDtoDAsync", 3020, cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz},
    {"cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds},
    {"cuMemcpyDtoHAsync", 3020, cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz},
    {"cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds},
    {"cuMemcpyHtoDAsync", 3020, cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz},
    {"cuMemsetD32", 3020, cuMemsetD32_v2, cuMemsetD32_v2_ptds},
    {"cuMemsetD32Async", 3020, cuMemsetD32Async, cuMemsetD32Async_ptsz},
    {"cuMemsetD8", 3020, cuMemsetD8_v2, cuMemsetD8_v2_ptds},
    {"cuMemsetD8Async", 3020, cuMemsetD8Async, cuMemsetD8Async_ptsz},
    {"cuModuleGetGlobal", 3020, cuModuleGetGlobal, NULL},
    {"cuModuleGetFunction", 2000, cuModuleGetFunction, NULL},
    {"cuModuleGetLoadingMode", 11070, cuModuleGetLoadingMode, NULL},
    {"cuModuleLoad", 2000, cuModuleLoad, NULL},
    {"cuModuleLoadData", 2000, cuModuleLoadData, NULL},
    {"cuModuleUnload", 2000, cuModuleUnload, NULL},
    {"cuOccupancyAvailableDynamicSMemPerBlock", 10020, cuOccupancyAvailableDynamicSMemPerBlock,
     NULL},
    {"cuOccupancyMaxActiveBlocksPerMultiprocessor", 6050,
     cuOccupancyMaxActiveBlocksPerMultiprocessor, NULL},
    {"cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", 7000,
     cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, NULL},
    {"cuOccupancyMaxActiveClusters", 11070, cuOccupancyMaxActiveClusters, NULL},
    {"cuOccupancyMaxPotentialClusterSize", 11070, cuOccupancyMaxPotentialClusterSize, NULL},
    {"cuPointerGetAttribute", 4000, cuPointerGetAttribute, NULL},
    {"cuPointerGetAttributes", 7000, cuPointerGetAttributes, NULL},
    {"cuStreamCreate", 2000, cuStreamCreate, NULL},
    {"cuStreamCreateWithPriority", 5050, cuStreamCreateWithPriority, NULL},
    {"cuStreamDestroy", 4000, cuStreamDestroy, NULL},
    {"cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz},
    {"cuStreamEndCapture", 10000, cuStreamEndCapture, cuStreamEndCapture_ptsz},
    {"cuStreamGetCaptureInfo", 10010, capture_info_v1, NULL},
    {"cuStreamGetCaptureInfo", 11030, capture_info_v2, NULL},
    {"cuStreamGetCaptureInfo", 12030, cuStreamGetCaptureInfo, cuStreamGetCaptureInfo_v3_ptsz},
    {"cuStreamGetCtx", 9020, cuStreamGetCtx, cuStreamGetCtx_ptsz},
    {"cuStreamGetFlags", 5050, cuStreamGetFlags, cuStreamGetFlags_ptsz},
    {"cuStreamGetId", 12000, cuStreamGetId, cuStreamGetId_ptsz},
    {"cuStreamIsCapturing", 10000, cuStreamIsCapturing, cuStreamIsCapturing_ptsz},
    {"cuStreamQuery", 2000, cuStreamQuery, cuStreamQuery_ptsz},
    {"cuStreamSynchronize", 2000, cuStreamSynchronize, cuStreamSynchronize_ptsz},
    {"cuStreamWaitEvent", 3020, cuStreamWaitEvent, cuStreamWaitEvent_ptsz},
    {"cuThreadExchangeStreamCaptureMode", 10010, cuThreadExchangeStreamCaptureMode, NULL},
};

static CUresult get_proc(const char *symbol, void **pfn, int version, cuuint64_t flags,
			 CUdriverProcAddressQueryResult *status)
{
	const struct proc *best = NULL;
	bool known = false;

	if (!symbol || !pfn)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
		if (strcmp(procs[i].name, symbol))
			continue;
		known = true;
		if (procs[i].version <= version && (!best || procs[i].version > best->version))
			best = &procs[i];
	}
	*pfn = !best ? NULL
	       : (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && best->per_thread_fn
		   ? best->per_thread_fn
		   : best->fn;
	if (status)
		*status = best	  ? CU_GET_PROC_ADDRESS_SUCCESS
			  : known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
				  : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return best ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
			  CUdriverProcAddressQueryResult *symbolStatus)
{
	if (symbol && !*symbol) /* the runtime's first question; it must fail */
		fakecuda_drv_runtime_seen(DRV_CALLER);
	DRV_CALL(cuGetProcAddress_v2, symbol, pfn, cudaVersion, flags, symbolStatus);
	char name[256];

	return fakecuda_api_exit(&c, get_proc(symbol, pfn, cudaVersion, flags, symbolStatus),
				 "\"symbol\":%s,\"version\":%d,\"flags\":%llu",
				 fakecuda_log_str(name, sizeof(name), symbol), cudaVersion,
				 (unsigned long long)flags);
}

CUresult get_proc_address_v1(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	DRV_CALL(cuGetProcAddress, symbol, pfn, cudaVersion, flags);
	char name[256];

	return fakecuda_api_exit(&c, get_proc(symbol, pfn, cudaVersion, flags, NULL),
				 "\"symbol\":%s,\"version\":%d",
				 fakecuda_log_str(name, sizeof(name), symbol), cudaVersion);
}
