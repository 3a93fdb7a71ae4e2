/*
 * A CUDA runtime whose calls cost nothing, for measuring the hooks alone: each entry point the
 * benchmarks use returns cudaSuccess at once. Built as libcudart.so.13 under the real library's
 * version node, so programs bind to it as they would to NVIDIA's.
 */
#include <string.h>

#include <cuda_runtime_api.h>

#include "common/compiler.h"

/* Every cudaMalloc hands out the same address, as a caching allocator's steady state would. */
#define STUB_DEVICE_PTR ((void *)0x7f0000100000ull)

GPROF_EXPORT cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args,
					  size_t smem, cudaStream_t s)
{
	(void)func, (void)grid, (void)block, (void)args, (void)smem, (void)s;
	return cudaSuccess;
}

GPROF_EXPORT cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
					 enum cudaMemcpyKind kind, cudaStream_t s)
{
	(void)dst, (void)src, (void)count, (void)kind, (void)s;
	return cudaSuccess;
}

GPROF_EXPORT cudaError_t cudaMalloc(void **p, size_t size)
{
	(void)size;
	*p = STUB_DEVICE_PTR;
	return cudaSuccess;
}

GPROF_EXPORT cudaError_t cudaFree(void *p)
{
	(void)p;
	return cudaSuccess;
}

/* What libgprof asks of the runtime while recording: kernel names, devices, versions. */
GPROF_EXPORT cudaError_t cudaFuncGetName(const char **name, const void *func)
{
	(void)func;
	*name = "_Z11bench_kernelPfPKfi";
	return cudaSuccess;
}

GPROF_EXPORT cudaError_t cudaGetDevice(int *device)
{
	*device = 0;
	return cudaSuccess;
}

GPROF_EXPORT cudaError_t cudaGetDeviceCount(int *count)
{
	*count = 1;
	return cudaSuccess;
}

GPROF_EXPORT cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
	(void)device;
	memset(prop, 0, sizeof(*prop));
	strcpy(prop->name, "bench stub device");
	return cudaSuccess;
}

GPROF_EXPORT cudaError_t cudaRuntimeGetVersion(int *version)
{
	*version = 13000;
	return cudaSuccess;
}

GPROF_EXPORT cudaError_t cudaDriverGetVersion(int *version)
{
	*version = 13000;
	return cudaSuccess;
}
