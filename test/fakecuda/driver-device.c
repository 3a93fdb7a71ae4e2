/*
 * The fake libcuda.so.1's queries: devices and their attributes (device.c's H200), contexts,
 * libraries and kernels (how CUDA 13's runtime loads the fatbins nvcc registers), kernel
 * attributes and occupancy. The answers that no simulated operation depends on (occupancy,
 * registers) are plausible H200 figures, so that cuBLAS's heuristics pick the kernels they would
 * pick on one.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/fakecuda/driver.h"

#define KIB 1024

/* ---- devices ---- */

/* An attribute of the calling thread's current device (device.c's H200). */
static int current_attribute(CUdevice_attribute attr)
{
	return fakecuda_device_attribute(attr, fakecuda_device_current());
}

static CUresult valid_device(CUdevice dev)
{
	CUresult err = fakecuda_drv_need_init();

	if (!err && (dev < 0 || dev >= fakecuda_device_count()))
		err = CUDA_ERROR_INVALID_DEVICE;
	return err;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	DRV_CALL(cuDeviceGetName, name, len, dev);
	CUresult err = name && len > 0 ? valid_device(dev) : CUDA_ERROR_INVALID_VALUE;

	if (!err)
		snprintf(name, (size_t)len, FAKECUDA_DEVICE_NAME);
	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
	DRV_CALL(cuDeviceTotalMem_v2, bytes, dev);
	CUresult err = bytes ? valid_device(dev) : CUDA_ERROR_INVALID_VALUE;

	if (!err)
		*bytes = fakecuda_device_total_mem(dev);
	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	DRV_CALL(cuDeviceGetAttribute, pi, attrib, dev);
	CUresult err = pi ? valid_device(dev) : CUDA_ERROR_INVALID_VALUE;

	if (!err && (attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX))
		err = CUDA_ERROR_INVALID_VALUE;
	if (!err)
		*pi = fakecuda_device_attribute(attrib, dev);
	return fakecuda_api_exit(&c, err, "\"attribute\":%d,\"value\":%d", (int)attrib,
				 err ? 0 : *pi);
}

CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
	DRV_CALL(cuDeviceGetUuid_v2, uuid, dev);
	CUresult err = uuid ? valid_device(dev) : CUDA_ERROR_INVALID_VALUE;

	if (!err)
		fakecuda_device_uuid(uuid, dev);
	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
	DRV_CALL(cuDeviceGetPCIBusId, pciBusId, len, dev);
	CUresult err = pciBusId && len > 0 ? valid_device(dev) : CUDA_ERROR_INVALID_VALUE;

	if (!err)
		snprintf(pciBusId, (size_t)len, "00000000:%02X:00.0",
			 fakecuda_device_attribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev));
	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
	DRV_CALL(cuDeviceCanAccessPeer, canAccessPeer, dev, peerDev);
	CUresult err = canAccessPeer ? valid_device(dev) : CUDA_ERROR_INVALID_VALUE;

	if (!err)
		err = valid_device(peerDev);
	if (!err)
		*canAccessPeer = dev != peerDev;
	return fakecuda_api_exit(&c, err, NULL);
}

/* ---- contexts: the primary context of each device, made once, retained for ever ---- */

CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
	DRV_CALL(cuDevicePrimaryCtxRelease_v2, dev);
	return fakecuda_api_exit(&c, valid_device(dev), NULL);
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
	DRV_CALL(cuDevicePrimaryCtxGetState, dev, flags, active);
	CUresult err = flags && active ? valid_device(dev) : CUDA_ERROR_INVALID_VALUE;

	if (!err)
		*flags = 0, *active = fakecuda_context_made(dev);
	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
	DRV_CALL(cuDevicePrimaryCtxSetFlags_v2, dev, flags);
	return fakecuda_api_exit(&c, valid_device(dev), NULL);
}

CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
	DRV_CALL(cuDevicePrimaryCtxReset_v2, dev);
	return fakecuda_api_exit(&c, valid_device(dev), NULL);
}

/* A thread's context stack holds one context here: push and pop set and read the current one. */
CUresult cuCtxPushCurrent(CUcontext ctx)
{
	DRV_CALL(cuCtxPushCurrent_v2, ctx);
	CUresult err = fakecuda_drv_need_init();

	if (!err && fakecuda_device_set(fakecuda_context_device(ctx)))
		err = CUDA_ERROR_INVALID_CONTEXT;
	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuCtxPopCurrent(CUcontext *pctx)
{
	DRV_CALL(cuCtxPopCurrent_v2, pctx);
	CUresult err = fakecuda_drv_need_init();

	if (!err && pctx)
		*pctx = fakecuda_context_current();
	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
	DRV_CALL(cuCtxGetApiVersion, ctx, version);
	CUresult err = version ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err)
		*version = 3020;
	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
	DRV_CALL(cuCtxSetLimit, limit, value);
	return fakecuda_api_exit(&c, fakecuda_drv_need_init(), NULL);
}

DRV_GET(cuCtxGetCacheConfig, CUfunc_cache, CU_FUNC_CACHE_PREFER_NONE)

CUresult cuCtxSetCacheConfig(CUfunc_cache config)
{
	DRV_CALL(cuCtxSetCacheConfig, config);
	return fakecuda_api_exit(&c, fakecuda_drv_need_init(), NULL);
}

/* The device of `ctx` (NULL: the current one), or -1. */
static int ctx_device(CUcontext ctx)
{
	return ctx ? fakecuda_context_device(ctx) : fakecuda_device_current();
}

/* Whether a call about ctx (NULL: the current one) may go on; out_given: its output pointer. */
static CUresult ctx_usable(CUcontext ctx, bool out_given)
{
	CUresult err = out_given ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err && ctx_device(ctx) < 0)
		err = CUDA_ERROR_INVALID_CONTEXT;
	return err;
}

DRV_GET(cuCtxGetDevice, CUdevice, fakecuda_device_current())

CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
	DRV_CALL(cuCtxGetDevice_v2, device, ctx);
	CUresult err = ctx_usable(ctx, device != NULL);

	if (!err)
		*device = ctx_device(ctx);
	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
	DRV_CALL(cuCtxSynchronize_v2, ctx);
	CUresult err = ctx_usable(ctx, true);

	if (!err) {
		fakecuda_sync(NULL, ctx_device(ctx));
		fakecuda_sync_done(&c, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE,
				   ctx_device(ctx), NULL, NULL);
	}
	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
	DRV_CALL(cuCtxGetId, ctx, ctxId);
	CUresult err = ctx_usable(ctx, ctxId != NULL);

	if (!err)
		*ctxId = fakecuda_context_id(ctx_device(ctx));
	return fakecuda_api_exit(&c, err, NULL);
}

DRV_GET(cuCtxGetFlags, unsigned int, 0)

CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
	static const size_t limits[] = {
	    [CU_LIMIT_STACK_SIZE] = 1024,
	    [CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20,
	    [CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20,
	    [CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2,
	    [CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048,
	    [CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 128,
	    [CU_LIMIT_PERSISTING_L2_CACHE_SIZE] = 0,
	};
	DRV_CALL(cuCtxGetLimit, pvalue, limit);
	CUresult err = pvalue ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err && (unsigned int)limit >= CU_LIMIT_MAX)
		err = CUDA_ERROR_UNSUPPORTED_LIMIT;
	if (!err) /* the others (shared memory, CIG) are 0 on a GPU not shared with graphics */
		*pvalue = (size_t)limit < sizeof(limits) / sizeof(limits[0]) ? limits[limit] : 0;
	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
	DRV_CALL(cuCtxGetStreamPriorityRange, leastPriority, greatestPriority);
	CUresult err = fakecuda_drv_need_init();

	if (!err && leastPriority)
		*leastPriority = 0;
	if (!err && greatestPriority)
		*greatestPriority = -5;
	return fakecuda_api_exit(&c, err, NULL);
}

/* ---- libraries and kernels: CUDA 13's runtime loads each registered fatbin as a library ---- */

DRV_GET(cuModuleGetLoadingMode, CUmoduleLoadingMode, CU_MODULE_LAZY_LOADING)

CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
			   void **jitOptionsValues, unsigned int numJitOptions,
			   CUlibraryOption *libraryOptions, void **libraryOptionValues,
			   unsigned int numLibraryOptions)
{
	DRV_CALL(cuLibraryLoadData, library, code, jitOptions, jitOptionsValues, numJitOptions,
		 libraryOptions, libraryOptionValues, numLibraryOptions);
	return fakecuda_drv_load_data(&c, code, NULL, library);
}

CUresult cuLibraryUnload(CUlibrary library)
{
	DRV_CALL(cuLibraryUnload, library);
	return fakecuda_drv_unload(&c, library);
}

CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
	DRV_CALL(cuLibraryGetKernel, pKernel, library, name);
	return fakecuda_drv_get_kernel(&c, library, name, NULL, pKernel);
}

/*
 * A module's __device__ variable: device memory of its own, the same for every lookup, of the
 * size in the module's cubin. A variable whose cubin cannot be read (compressed) gets
 * GUESS_BYTES, and one line says so.
 */
#define GUESS_BYTES (64 * KIB)

struct global {
	const void *module;
	char *name;
	void *ptr;
	size_t bytes;
};

static pthread_mutex_t globals_lock = PTHREAD_MUTEX_INITIALIZER;
static struct global *globals;
static size_t n_globals;

static struct global *new_global(const struct fakecuda_module *module, const char *name)
{
	struct global *more = realloc(globals, (n_globals + 1) * sizeof(*globals)), *g;

	if (!more)
		return NULL;
	globals = more;
	g = &globals[n_globals];
	*g = (struct global){module, strdup(name), NULL,
			     fakecuda_image_symbol_size(module->image, name)};
	if (!g->bytes) {
		fprintf(stderr,
			"fakecuda: the size of __device__ %s is not readable in its image; "
			"%d KiB assumed\n",
			name, GUESS_BYTES / KIB);
		g->bytes = GUESS_BYTES;
	}
	if (g->name && !fakecuda_mem_module(&g->ptr, g->bytes, fakecuda_device_current()))
		return &globals[n_globals++];
	free(g->name);
	return NULL;
}

static CUresult global(CUdeviceptr *dptr, size_t *bytes, const void *module, const char *name)
{
	CUresult err = module && name ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;
	struct global *g = NULL;

	if (err)
		return err;
	pthread_mutex_lock(&globals_lock);
	for (size_t i = 0; i < n_globals && !g; i++)
		if (globals[i].module == module && !strcmp(globals[i].name, name))
			g = &globals[i];
	if (!g)
		g = new_global(module, name);
	if (g && dptr)
		*dptr = (CUdeviceptr)(uintptr_t)g->ptr;
	if (g && bytes)
		*bytes = g->bytes;
	pthread_mutex_unlock(&globals_lock);
	return g ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name)
{
	DRV_CALL(cuLibraryGetGlobal, dptr, bytes, library, name);
	return fakecuda_api_exit(&c, global(dptr, bytes, library, name), NULL);
}

/* A library is its own module here. */
CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
	DRV_CALL(cuLibraryGetModule, pMod, library);
	CUresult err = pMod && library ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err)
		*pMod = (CUmodule)library;
	return fakecuda_api_exit(&c, err, NULL);
}

/* No variable is __managed__ here. */
CUresult cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name)
{
	DRV_CALL(cuLibraryGetManaged, dptr, bytes, library, name);
	return fakecuda_api_exit(
	    &c, library && name ? CUDA_ERROR_NOT_FOUND : CUDA_ERROR_INVALID_VALUE, NULL);
}

CUresult cuModuleGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name)
{
	DRV_CALL(cuModuleGetGlobal_v2, dptr, bytes, hmod, name);
	return fakecuda_api_exit(&c, global(dptr, bytes, hmod, name), NULL);
}

/* A CUkernel is a CUfunction of the current context here. */
CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	DRV_CALL(cuKernelGetFunction, pFunc, kernel);
	CUresult err = pFunc ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err && !fakecuda_kernel_find(kernel))
		err = CUDA_ERROR_INVALID_HANDLE;
	if (!err)
		*pFunc = (CUfunction)kernel;
	return fakecuda_api_exit(&c, err, NULL);
}

static CUresult kernel_name(const char **name, const void *handle)
{
	const struct fakecuda_kernel *k = fakecuda_kernel_find(handle);
	CUresult err = name ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err && !k)
		err = CUDA_ERROR_INVALID_HANDLE;
	if (!err)
		*name = k->name;
	return err;
}

CUresult cuKernelGetName(const char **name, CUkernel hfunc)
{
	DRV_CALL(cuKernelGetName, name, hfunc);
	return fakecuda_api_exit(&c, kernel_name(name, hfunc), NULL);
}

CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
	DRV_CALL(cuFuncGetName, name, hfunc);
	return fakecuda_api_exit(&c, kernel_name(name, hfunc), NULL);
}

/* What a small kernel compiled for sm_90 reports. */
static CUresult function_attribute(int *pi, CUfunction_attribute attrib, const void *handle)
{
	const struct fakecuda_kernel *k = fakecuda_kernel_find(handle);
	CUresult err = pi ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err && !k)
		err = CUDA_ERROR_INVALID_HANDLE;
	if (err)
		return err;
	switch (attrib) {
	case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
		*pi = current_attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
		break;
	case CU_FUNC_ATTRIBUTE_NUM_REGS:
		*pi = k->registers;
		break;
	case CU_FUNC_ATTRIBUTE_PTX_VERSION:
	case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
		*pi = 90;
		break;
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
		*pi = current_attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
		break;
	default:
		*pi = 0;
	}
	return CUDA_SUCCESS;
}

CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
	DRV_CALL(cuFuncGetAttribute, pi, attrib, hfunc);
	return fakecuda_api_exit(&c, function_attribute(pi, attrib, hfunc), NULL);
}

CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev)
{
	DRV_CALL(cuKernelGetAttribute, pi, attrib, kernel, dev);
	CUresult err = valid_device(dev);

	return fakecuda_api_exit(&c, err ? err : function_attribute(pi, attrib, kernel), NULL);
}

/* Settings are accepted and change nothing the simulation times. */
CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev)
{
	DRV_CALL(cuKernelSetAttribute, attrib, val, kernel, dev);
	CUresult err = valid_device(dev);

	if (!err && !fakecuda_kernel_find(kernel))
		err = CUDA_ERROR_INVALID_HANDLE;
	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
	DRV_CALL(cuFuncSetAttribute, hfunc, attrib, value);
	CUresult err = fakecuda_drv_need_init();

	if (!err && !fakecuda_kernel_find(hfunc))
		err = CUDA_ERROR_INVALID_HANDLE;
	return fakecuda_api_exit(&c, err, NULL);
}

/* ---- occupancy: whole blocks of the block size fit in an SM's threads and block slots ---- */

static int blocks_per_sm(int block_size)
{
	int threads = current_attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
	int most = current_attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
	int n = block_size > 0 ? threads / block_size : 0;

	return n > most ? most : n;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, CUfunction func,
							      int blockSize, size_t dynamicSMemSize,
							      unsigned int flags)
{
	DRV_CALL(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, numBlocks, func, blockSize,
		 dynamicSMemSize, flags);
	CUresult err = numBlocks ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err)
		*numBlocks = blocks_per_sm(blockSize);
	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func, int blockSize,
						     size_t dynamicSMemSize)
{
	DRV_CALL(cuOccupancyMaxActiveBlocksPerMultiprocessor, numBlocks, func, blockSize,
		 dynamicSMemSize);
	CUresult err = numBlocks ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err)
		*numBlocks = blocks_per_sm(blockSize);
	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, CUfunction func,
						 int numBlocks, int blockSize)
{
	DRV_CALL(cuOccupancyAvailableDynamicSMemPerBlock, dynamicSmemSize, func, numBlocks,
		 blockSize);
	CUresult err = dynamicSmemSize ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;
	size_t shared;

	if (!err) {
		shared = (size_t)current_attribute(
		    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
		*dynamicSmemSize = numBlocks > 0 ? shared / (size_t)numBlocks : 0;
	}
	return fakecuda_api_exit(&c, err, NULL);
}

/*
 * A cluster runs inside one GPC (graphics processing cluster): an H200's 132 SMs are split
 * into GPCs of 18, 18, 18, 18, 16, 16, 14 and 14 SMs.
 */
static const int gpc_sms[] = {18, 18, 18, 18, 16, 16, 14, 14};

static unsigned int cluster_blocks(const CUlaunchConfig *config)
{
	for (unsigned int i = 0; i < config->numAttrs; i++)
		if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
			return config->attrs[i].value.clusterDim.x *
			       config->attrs[i].value.clusterDim.y *
			       config->attrs[i].value.clusterDim.z;
	return 1;
}

CUresult cuOccupancyMaxActiveClusters(int *numClusters, CUfunction func,
				      const CUlaunchConfig *config)
{
	DRV_CALL(cuOccupancyMaxActiveClusters, numClusters, func, config);
	CUresult err = numClusters && config ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;
	unsigned int size = err ? 0 : cluster_blocks(config);

	if (!err)
		*numClusters = 0;
	for (size_t i = 0; size && i < sizeof(gpc_sms) / sizeof(gpc_sms[0]); i++)
		*numClusters += gpc_sms[i] / (int)size;
	return fakecuda_api_exit(&c, err, NULL);
}

/* 8 blocks, the portable cluster size. */
CUresult cuOccupancyMaxPotentialClusterSize(int *clusterSize, CUfunction func,
					    const CUlaunchConfig *config)
{
	DRV_CALL(cuOccupancyMaxPotentialClusterSize, clusterSize, func, config);
	CUresult err = clusterSize ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err)
		*clusterSize = 8;
	return fakecuda_api_exit(&c, err, NULL);
}
