/*
 * The fake libcuda.so.1's driver API: what a Triton-style program needs (cuInit, contexts,
 * modules and functions, memory, synchronous copies, launches) and cuGetProcAddress to find it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#pragma GCC visibility push(default)
#include <cuda.h>
#pragma GCC visibility pop

#include "test/fakecuda/sim.h"

#define DRV_CBID(fn)	    CUPTI_DRIVER_TRACE_CBID_##fn
#define CUDA_VERSION_NUMBER 13000

/* A CUmodule points at one; the image is never looked at. */
struct fakecuda_module {
	const void *image;
};

static void drv_enter(struct fakecuda_call *call, CUpti_CallbackId cbid, const char *name,
		      const void *params, const char *symbol)
{
	fakecuda_api_enter(call, CUPTI_CB_DOMAIN_DRIVER_API, cbid, name, params, symbol);
}

/* Every call but cuInit, cuDriverGetVersion and cuGetProcAddress needs cuInit first. */
static CUresult need_init(void)
{
	return fakecuda_context_current() ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

static CUresult drv_error(int err)
{
	return !err		? CUDA_SUCCESS
	       : err == -ENOMEM ? CUDA_ERROR_OUT_OF_MEMORY
				: CUDA_ERROR_INVALID_VALUE;
}

CUresult cuInit(unsigned int Flags)
{
	cuInit_params p = {Flags};
	struct fakecuda_call c;

	drv_enter(&c, DRV_CBID(cuInit), "cuInit", &p, NULL);
	if (Flags)
		return fakecuda_api_exit(&c, CUDA_ERROR_INVALID_VALUE, NULL);
	fakecuda_init();
	return fakecuda_api_exit(&c, CUDA_SUCCESS, "\"flags\":%u", Flags);
}

CUresult cuDriverGetVersion(int *driverVersion)
{
	cuDriverGetVersion_params p = {driverVersion};
	struct fakecuda_call c;

	drv_enter(&c, DRV_CBID(cuDriverGetVersion), "cuDriverGetVersion", &p, NULL);
	if (!driverVersion)
		return fakecuda_api_exit(&c, CUDA_ERROR_INVALID_VALUE, NULL);
	*driverVersion = CUDA_VERSION_NUMBER;
	return fakecuda_api_exit(&c, CUDA_SUCCESS, "\"version\":%d", *driverVersion);
}

/* ---- devices and contexts: one primary context per device, always current ---- */

CUresult cuDeviceGetCount(int *count)
{
	cuDeviceGetCount_params p = {count};
	struct fakecuda_call c;
	CUresult err;

	drv_enter(&c, DRV_CBID(cuDeviceGetCount), "cuDeviceGetCount", &p, NULL);
	err = count ? need_init() : CUDA_ERROR_INVALID_VALUE;
	if (!err)
		*count = fakecuda_device_count();
	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	cuDeviceGet_params p = {device, ordinal};
	struct fakecuda_call c;
	CUresult err;

	drv_enter(&c, DRV_CBID(cuDeviceGet), "cuDeviceGet", &p, NULL);
	err = device ? need_init() : CUDA_ERROR_INVALID_VALUE;
	if (!err && (ordinal < 0 || ordinal >= fakecuda_device_count()))
		err = CUDA_ERROR_INVALID_DEVICE;
	if (!err)
		*device = ordinal;
	return fakecuda_api_exit(&c, err, "\"ordinal\":%d", ordinal);
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	cuDevicePrimaryCtxRetain_params p = {pctx, dev};
	struct fakecuda_call c;
	CUresult err;

	drv_enter(&c, DRV_CBID(cuDevicePrimaryCtxRetain), "cuDevicePrimaryCtxRetain", &p, NULL);
	err = pctx ? need_init() : CUDA_ERROR_INVALID_VALUE;
	if (!err && (dev < 0 || dev >= fakecuda_device_count()))
		err = CUDA_ERROR_INVALID_DEVICE;
	if (!err)
		*pctx = fakecuda_context(dev);
	return fakecuda_api_exit(&c, err, "\"device\":%d", dev);
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	cuCtxGetCurrent_params p = {pctx};
	struct fakecuda_call c;
	CUresult err;

	drv_enter(&c, DRV_CBID(cuCtxGetCurrent), "cuCtxGetCurrent", &p, NULL);
	err = pctx ? need_init() : CUDA_ERROR_INVALID_VALUE;
	if (!err)
		*pctx = fakecuda_context(fakecuda_device_current());
	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
	cuCtxSetCurrent_params p = {ctx};
	int device = fakecuda_context_device(ctx);
	struct fakecuda_call c;
	CUresult err;

	drv_enter(&c, DRV_CBID(cuCtxSetCurrent), "cuCtxSetCurrent", &p, NULL);
	err = need_init();
	if (!err && device < 0)
		err = CUDA_ERROR_INVALID_CONTEXT;
	if (!err)
		fakecuda_device_set(device);
	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuCtxSynchronize(void)
{
	struct fakecuda_call c;
	CUresult err;

	drv_enter(&c, DRV_CBID(cuCtxSynchronize), "cuCtxSynchronize", NULL, NULL);
	err = need_init();
	if (!err)
		fakecuda_sync(NULL, fakecuda_device_current());
	return fakecuda_api_exit(&c, err, NULL);
}

/* ---- modules and functions ---- */

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	cuModuleLoadData_params p = {module, image};
	struct fakecuda_module *m = NULL;
	struct fakecuda_call c;
	CUresult err;

	drv_enter(&c, DRV_CBID(cuModuleLoadData), "cuModuleLoadData", &p, NULL);
	err = module && image ? need_init() : CUDA_ERROR_INVALID_VALUE;
	if (!err && !(m = calloc(1, sizeof(*m))))
		err = CUDA_ERROR_OUT_OF_MEMORY;
	if (!err) {
		m->image = image;
		*module = (CUmodule)m;
	}
	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuModuleUnload(CUmodule hmod)
{
	cuModuleUnload_params p = {hmod};
	struct fakecuda_call c;
	CUresult err;

	drv_enter(&c, DRV_CBID(cuModuleUnload), "cuModuleUnload", &p, NULL);
	err = hmod ? need_init() : CUDA_ERROR_INVALID_HANDLE;
	if (!err)
		free(hmod);
	return fakecuda_api_exit(&c, err, NULL);
}

/* Any name exists in any module: the function is named by what the program asked for. */
CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	cuModuleGetFunction_params p = {hfunc, hmod, name};
	const struct fakecuda_kernel *k = NULL;
	struct fakecuda_call c;
	CUresult err;

	drv_enter(&c, DRV_CBID(cuModuleGetFunction), "cuModuleGetFunction", &p, NULL);
	err = hfunc && hmod && name ? need_init() : CUDA_ERROR_INVALID_VALUE;
	if (!err && !(k = fakecuda_kernel_function(hmod, name)))
		err = CUDA_ERROR_OUT_OF_MEMORY;
	if (!err)
		*hfunc = (CUfunction)k;
	return fakecuda_api_exit(&c, err, NULL);
}

/* ---- memory ---- */

CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
	cuMemAlloc_v2_params p = {dptr, bytesize};
	struct fakecuda_call c;
	void *ptr = NULL;
	CUresult err;

	drv_enter(&c, DRV_CBID(cuMemAlloc_v2), "cuMemAlloc_v2", &p, NULL);
	err = dptr ? need_init() : CUDA_ERROR_INVALID_VALUE;
	if (!err && !bytesize)
		err = CUDA_ERROR_INVALID_VALUE; /* unlike cudaMalloc */
	if (!err)
		err = drv_error(fakecuda_mem_alloc(
		    &ptr, bytesize, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, fakecuda_device_current(),
		    c.correlation, CUPTI_INVALID_STREAM_ID));
	if (!err)
		*dptr = (CUdeviceptr)(uintptr_t)ptr;
	return fakecuda_api_exit(&c, err, "\"bytes\":%zu,\"ptr\":%llu", bytesize,
				 (unsigned long long)(uintptr_t)ptr);
}

CUresult cuMemFree(CUdeviceptr dptr)
{
	cuMemFree_v2_params p = {dptr};
	struct fakecuda_call c;
	CUresult err;

	drv_enter(&c, DRV_CBID(cuMemFree_v2), "cuMemFree_v2", &p, NULL);
	err = need_init();
	if (!err && dptr) /* like cudaFree, it waits for the device to be idle */
		fakecuda_sync(NULL, fakecuda_device_current());
	if (!err)
		err = drv_error(fakecuda_mem_free((void *)(uintptr_t)dptr,
						  CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, c.correlation,
						  CUPTI_INVALID_STREAM_ID));
	return fakecuda_api_exit(&c, err, "\"ptr\":%llu", (unsigned long long)dptr);
}

/* A synchronous copy on the legacy stream: bytes move now, the call returns when it is done. */
static CUresult copy(const struct fakecuda_call *c, void *dst, const void *src, size_t bytes,
		     bool to_device)
{
	struct fakecuda_stream *s;
	struct fakecuda_op op = {.kind = FAKECUDA_OP_MEMCPY, .correlation = c->correlation};
	const void *host = to_device ? src : dst, *dev = to_device ? dst : src;
	CUresult err = need_init();

	if (!err && bytes && (!host || fakecuda_mem_kind(dev) != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE))
		err = CUDA_ERROR_INVALID_VALUE;
	if (err || !bytes)
		return err;
	memmove(dst, src, bytes);
	op.memcpy.bytes = bytes;
	op.memcpy.copy_kind =
	    to_device ? CUPTI_ACTIVITY_MEMCPY_KIND_HTOD : CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
	op.memcpy.src_kind = to_device ? fakecuda_mem_kind(src) : CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	op.memcpy.dst_kind = to_device ? CUPTI_ACTIVITY_MEMORY_KIND_DEVICE : fakecuda_mem_kind(dst);
	s = fakecuda_stream_get(NULL, false);
	fakecuda_stream_wait(s, fakecuda_op_enqueue(s, &op));
	return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
	cuMemcpyHtoD_v2_params p = {dstDevice, srcHost, ByteCount};
	struct fakecuda_call c;
	CUresult err;

	drv_enter(&c, DRV_CBID(cuMemcpyHtoD_v2), "cuMemcpyHtoD_v2", &p, NULL);
	err = copy(&c, (void *)(uintptr_t)dstDevice, srcHost, ByteCount, true);
	return fakecuda_api_exit(&c, err, "\"bytes\":%zu", ByteCount);
}

CUresult cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
	cuMemcpyDtoH_v2_params p = {dstHost, srcDevice, ByteCount};
	struct fakecuda_call c;
	CUresult err;

	drv_enter(&c, DRV_CBID(cuMemcpyDtoH_v2), "cuMemcpyDtoH_v2", &p, NULL);
	err = copy(&c, dstHost, (const void *)(uintptr_t)srcDevice, ByteCount, false);
	return fakecuda_api_exit(&c, err, "\"bytes\":%zu", ByteCount);
}

/* ---- launches ---- */

static bool valid_launch(const unsigned int g[3], const unsigned int b[3])
{
	if (!g[0] || !g[1] || !g[2] || !b[0] || !b[1] || !b[2] || b[2] > 64)
		return false;
	if (g[0] > 0x7fffffffu || g[1] > 65535 || g[2] > 65535)
		return false;
	return (uint64_t)b[0] * b[1] * b[2] <= 1024;
}

static CUresult launch(CUpti_CallbackId cbid, const char *name, const void *params, CUfunction f,
		       const unsigned int grid[3], const unsigned int block[3], unsigned int shared,
		       CUstream stream)
{
	const struct fakecuda_kernel *k = fakecuda_kernel_find(f);
	struct fakecuda_op op = {.kind = FAKECUDA_OP_KERNEL, .async = true};
	struct fakecuda_stream *s = NULL;
	struct fakecuda_call c;
	CUresult err;

	drv_enter(&c, cbid, name, params, k ? k->name : NULL);
	err = need_init();
	if (!err && !k)
		err = CUDA_ERROR_INVALID_HANDLE;
	if (!err && !valid_launch(grid, block))
		err = CUDA_ERROR_INVALID_VALUE;
	if (!err) {
		s = fakecuda_stream_get(stream, false);
		op.correlation = c.correlation;
		op.kernel.kernel = k;
		memcpy(op.kernel.grid, grid, sizeof(op.kernel.grid));
		memcpy(op.kernel.block, block, sizeof(op.kernel.block));
		op.kernel.shared_bytes = shared;
		fakecuda_op_enqueue(s, &op);
	}
	return fakecuda_api_exit(&c, err,
				 "\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"shared\":%u,"
				 "\"stream\":%d",
				 grid[0], grid[1], grid[2], block[0], block[1], block[2], shared,
				 s ? (int)fakecuda_stream_id(s) : -1);
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
			unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
			unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
			void **kernelParams, void **extra)
{
	cuLaunchKernel_params p = {f,	      gridDimX,	    gridDimY,  gridDimZ,
				   blockDimX, blockDimY,    blockDimZ, sharedMemBytes,
				   hStream,   kernelParams, extra};
	const unsigned int grid[3] = {gridDimX, gridDimY, gridDimZ};
	const unsigned int block[3] = {blockDimX, blockDimY, blockDimZ};

	return launch(DRV_CBID(cuLaunchKernel), "cuLaunchKernel", &p, f, grid, block,
		      sharedMemBytes, hStream);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
			  void **extra)
{
	cuLaunchKernelEx_params p = {config, f, kernelParams, extra};
	unsigned int grid[3] = {0}, block[3] = {0}, shared = 0;
	CUstream stream = NULL;

	if (config) {
		grid[0] = config->gridDimX, grid[1] = config->gridDimY, grid[2] = config->gridDimZ;
		block[0] = config->blockDimX, block[1] = config->blockDimY;
		block[2] = config->blockDimZ;
		shared = config->sharedMemBytes;
		stream = config->hStream;
	}
	return launch(DRV_CBID(cuLaunchKernelEx), "cuLaunchKernelEx", &p, f, grid, block, shared,
		      stream);
}

/* ---- cuGetProcAddress ---- */

/* Symbols by the base name cuGetProcAddress is asked for (cuda.h maps them to their _v2). */
static const struct {
	const char *name;
	void *fn;
} procs[] = {
    {"cuInit", cuInit},
    {"cuDriverGetVersion", cuDriverGetVersion},
    {"cuDeviceGet", cuDeviceGet},
    {"cuDeviceGetCount", cuDeviceGetCount},
    {"cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain},
    {"cuCtxGetCurrent", cuCtxGetCurrent},
    {"cuCtxSetCurrent", cuCtxSetCurrent},
    {"cuCtxSynchronize", cuCtxSynchronize},
    {"cuModuleLoadData", cuModuleLoadData},
    {"cuModuleUnload", cuModuleUnload},
    {"cuModuleGetFunction", cuModuleGetFunction},
    {"cuMemAlloc", cuMemAlloc},
    {"cuMemFree", cuMemFree},
    {"cuMemcpyHtoD", cuMemcpyHtoD},
    {"cuMemcpyDtoH", cuMemcpyDtoH},
    {"cuLaunchKernel", cuLaunchKernel},
    {"cuLaunchKernelEx", cuLaunchKernelEx},
    {"cuGetProcAddress", cuGetProcAddress},
};

static CUresult get_proc(const char *symbol, void **pfn, CUdriverProcAddressQueryResult *status)
{
	if (!symbol || !pfn)
		return CUDA_ERROR_INVALID_VALUE;
	*pfn = NULL;
	for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]) && !*pfn; i++)
		if (!strcmp(procs[i].name, symbol))
			*pfn = procs[i].fn;
	if (status)
		*status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
			  CUdriverProcAddressQueryResult *symbolStatus)
{
	cuGetProcAddress_v2_params p = {symbol, pfn, cudaVersion, flags, symbolStatus};
	struct fakecuda_call c;
	char name[256];

	drv_enter(&c, DRV_CBID(cuGetProcAddress_v2), "cuGetProcAddress_v2", &p, NULL);
	return fakecuda_api_exit(&c, get_proc(symbol, pfn, symbolStatus), "\"symbol\":%s",
				 fakecuda_log_str(name, sizeof(name), symbol));
}

/* The CUDA 11.3 entry point without symbolStatus, still exported under the plain name. */
__attribute__((visibility("default"))) CUresult
get_proc_address_v1(const char *symbol, void **pfn, int cudaVersion,
		    cuuint64_t flags) __asm__("cuGetProcAddress");

CUresult get_proc_address_v1(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	cuGetProcAddress_params p = {symbol, pfn, cudaVersion, flags};
	struct fakecuda_call c;
	char name[256];

	drv_enter(&c, DRV_CBID(cuGetProcAddress), "cuGetProcAddress", &p, NULL);
	return fakecuda_api_exit(&c, get_proc(symbol, pfn, NULL), "\"symbol\":%s",
				 fakecuda_log_str(name, sizeof(name), symbol));
}
