/*
 * What cuBLAS and cuBLASLt look up by name in libcuda.so.1 (dlsym, not cuGetProcAddress): a missing
 * name makes cublasCreate fail with CUBLAS_STATUS_INTERNAL_ERROR. The old unversioned forms answer
 * as their newer ones; error strings are real; the features the simulation does not have (graphs
 * built node by node, stream memory operations) fail with CUDA_ERROR_NOT_SUPPORTED and one
 * `fakecuda:` line, so a program that needs them says so instead of going wrong quietly.
 */
#include <stdio.h>
#include <string.h>

#include "test/fakecuda/driver.h"

#pragma GCC visibility push(default)

/* ---- the forms before _v2, same arguments ---- */

#define OLD_FORM(ret, name, new_name, params, args) \
	ret name##_v1 params __asm__(#name);        \
	ret name##_v1 params                        \
	{                                           \
		return new_name args;               \
	}

OLD_FORM(CUresult, cuCtxPushCurrent, cuCtxPushCurrent_v2, (CUcontext ctx), (ctx))
OLD_FORM(CUresult, cuCtxPopCurrent, cuCtxPopCurrent_v2, (CUcontext * pctx), (pctx))
OLD_FORM(CUresult, cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, (CUdevice dev), (dev))
OLD_FORM(CUresult, cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset_v2, (CUdevice dev), (dev))
OLD_FORM(CUresult, cuEventElapsedTime, cuEventElapsedTime_v2, (float *ms, CUevent a, CUevent b),
	 (ms, a, b))

/* ---- errors ---- */

static const struct {
	CUresult code;
	const char *name, *text;
} errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNSUPPORTED_LIMIT, "CUDA_ERROR_UNSUPPORTED_LIMIT", "unsupported limit"},
};

static CUresult error_string(CUresult error, const char **out, bool name)
{
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
		if (errors[i].code == error) {
			*out = name ? errors[i].name : errors[i].text;
			return CUDA_SUCCESS;
		}
	*out = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorName(CUresult error, const char **pStr)
{
	return error_string(error, pStr, true);
}

CUresult cuGetErrorString(CUresult error, const char **pStr)
{
	return error_string(error, pStr, false);
}

/* ---- accepted; nothing the simulation times changes ---- */

CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
	DRV_CALL(cuFuncSetCacheConfig, hfunc, config);
	return fakecuda_api_exit(&c, fakecuda_drv_need_init(), NULL);
}

CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
	DRV_CALL(cuCtxEnablePeerAccess, peerContext, Flags);
	return fakecuda_api_exit(&c, fakecuda_drv_need_init(), NULL);
}

CUresult cuCtxDisablePeerAccess(CUcontext peerContext)
{
	DRV_CALL(cuCtxDisablePeerAccess, peerContext);
	return fakecuda_api_exit(&c, fakecuda_drv_need_init(), NULL);
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
			    CUjit_option *options, void **optionValues)
{
	(void)numOptions, (void)options, (void)optionValues;
	return cuModuleLoadData(module, image);
}

CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
	return cuModuleLoadData(module, fatCubin);
}

/* A tensor map only describes memory for a kernel that is never run: any 128 bytes do. */
CUresult cuTensorMapEncodeTiled(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
				cuuint32_t tensorRank, void *globalAddress,
				const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
				const cuuint32_t *boxDim, const cuuint32_t *elementStrides,
				CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
				CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill)
{
	DRV_CALL(cuTensorMapEncodeTiled, tensorMap, tensorDataType, tensorRank, globalAddress,
		 globalDim, globalStrides, boxDim, elementStrides, interleave, swizzle, l2Promotion,
		 oobFill);
	CUresult err = tensorMap ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err)
		memset(tensorMap, 0, sizeof(*tensorMap));
	return fakecuda_api_exit(&c, err, NULL);
}

/* The 11.3 form, without edge data. */
CUresult capture_info_v2(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
			 cuuint64_t *id_out, CUgraph *graph_out,
			 const CUgraphNode **dependencies_out,
			 size_t *numDependencies_out) __asm__("cuStreamGetCaptureInfo_v2");
CUresult capture_info_v2(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
			 cuuint64_t *id_out, CUgraph *graph_out,
			 const CUgraphNode **dependencies_out, size_t *numDependencies_out)
{
	return cuStreamGetCaptureInfo(hStream, captureStatus_out, id_out, graph_out,
				      dependencies_out, NULL, numDependencies_out);
}

CUresult capture_info_v1(CUstream hStream, CUstreamCaptureStatus *captureStatus, cuuint64_t *id)
{
	return cuStreamGetCaptureInfo(hStream, captureStatus, id, NULL, NULL, NULL, NULL);
}

/* ---- not simulated ---- */

static CUresult not_simulated(const char *name)
{
	fprintf(stderr, "fakecuda: %s is not simulated\n", name);
	return CUDA_ERROR_NOT_SUPPORTED;
}

#define NOT_SIMULATED(name)                           \
	CUresult name##_missing(void) __asm__(#name); \
	CUresult name##_missing(void)                 \
	{                                             \
		return not_simulated(#name);          \
	}

NOT_SIMULATED(cuGraphExecKernelNodeSetParams)
NOT_SIMULATED(cuGraphInstantiate)
NOT_SIMULATED(cuGraphKernelNodeGetParams)
NOT_SIMULATED(cuGraphNodeGetType)
NOT_SIMULATED(cuKernelGetLibrary)
NOT_SIMULATED(cuMemPrefetchAsync)
NOT_SIMULATED(cuMemcpy2DAsync_v2)
NOT_SIMULATED(cuStreamBatchMemOp)
NOT_SIMULATED(cuStreamWaitValue32)

#pragma GCC visibility pop
