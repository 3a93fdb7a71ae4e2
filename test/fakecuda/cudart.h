/*
 * Inside the fake libcudart.so.13: tracing of runtime calls (with the per-thread last error
 * of cudaGetLastError) and the nvcc registration entry points, which no public C header declares.
 */
#ifndef FAKECUDA_CUDART_H
#define FAKECUDA_CUDART_H

/* Everything the headers declare is exported; cudart.map says what really leaves the library. */
#pragma GCC visibility push(default)
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#pragma GCC visibility pop

#include "test/fakecuda/sim.h"

#define RT_API	    __attribute__((visibility("default")))
#define RT_CBID(fn) CUPTI_RUNTIME_TRACE_CBID_##fn

/* fakecuda_api_enter/exit for the runtime domain; a failing call becomes the last error. */
void fakert_enter(struct fakecuda_call *call, CUpti_CallbackId cbid, const char *name,
		  const void *params, const char *symbol);
cudaError_t fakert_exit(struct fakecuda_call *call, cudaError_t err, const char *args_fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A negative errno of the simulation as a runtime error. */
cudaError_t fakert_error(int err);

/*
 * The per-thread default stream variants: cuda_runtime_api.h declares them only under the
 * names they replace when CUDA_API_PER_THREAD_DEFAULT_STREAM is defined.
 */
#pragma GCC visibility push(default)
cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
				  size_t sharedMem, cudaStream_t stream);
cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func,
				     void **args);
cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);
cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
				 cudaStream_t stream);
cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count);
cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream,
					  unsigned int flags);
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
#pragma GCC visibility pop

/* What nvcc-generated host code calls (crt/host_runtime.h, crt/device_functions.h; C++ only). */
RT_API void **__cudaRegisterFatBinary(void *fatCubin);
RT_API void __cudaRegisterFatBinaryEnd(void **fatCubinHandle);
RT_API void __cudaUnregisterFatBinary(void **fatCubinHandle);
RT_API void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
			      const char *deviceName, int ext, size_t size, int constant,
			      int global);
RT_API void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
				   const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
				   dim3 *bDim, dim3 *gDim, int *wSize);
RT_API char __cudaInitModule(void **fatCubinHandle);
RT_API cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun);
RT_API unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
					    struct CUstream_st *stream);
RT_API cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
					      void *stream);
RT_API cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
				      size_t sharedMem, cudaStream_t stream);
RT_API cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
					   void **args, size_t sharedMem, cudaStream_t stream);

#endif
