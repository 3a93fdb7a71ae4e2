/*
 * The fake libcuda.so.1's driver API: initialisation, current contexts, modules and functions,
 * and launches (cooperative ones too). Memory, copies and memsets are in driver-memory.c, streams
 * and events in driver-stream.c, device and kernel queries in driver-device.c, what NVIDIA's
 * runtime asks for in driver-exports.c and driver-proc.c, linking and loading from files in
 * driver-link.c, what an image holds in fatbin.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "test/fakecuda/driver.h"

/* Every call but cuInit, cuDriverGetVersion and cuGetProcAddress needs cuInit first. */
CUresult fakecuda_drv_need_init(void)
{
	return fakecuda_context_current() ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult fakecuda_drv_error(int err)
{
	return !err		? CUDA_SUCCESS
	       : err == -ENOMEM ? CUDA_ERROR_OUT_OF_MEMORY
				: CUDA_ERROR_INVALID_VALUE;
}

CUresult cuInit(unsigned int Flags)
{
	DRV_CALL(cuInit, Flags);
	if (Flags)
		return fakecuda_api_exit(&c, CUDA_ERROR_INVALID_VALUE, NULL);
	fakecuda_init();
	return fakecuda_api_exit(&c, CUDA_SUCCESS, "\"flags\":%u", Flags);
}

CUresult cuDriverGetVersion(int *driverVersion)
{
	DRV_CALL(cuDriverGetVersion, driverVersion);
	if (!driverVersion)
		return fakecuda_api_exit(&c, CUDA_ERROR_INVALID_VALUE, NULL);
	*driverVersion = CUDA_VERSION_NUMBER;
	return fakecuda_api_exit(&c, CUDA_SUCCESS, "\"version\":%d", *driverVersion);
}

/* ---- devices and contexts: one primary context per device, always current ---- */

DRV_GET(cuDeviceGetCount, int, fakecuda_device_count())

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	DRV_CALL(cuDeviceGet, device, ordinal);
	CUresult err = device ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err && (ordinal < 0 || ordinal >= fakecuda_device_count()))
		err = CUDA_ERROR_INVALID_DEVICE;
	if (!err)
		*device = ordinal;
	return fakecuda_api_exit(&c, err, "\"ordinal\":%d", ordinal);
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	DRV_CALL(cuDevicePrimaryCtxRetain, pctx, dev);
	CUresult err = pctx ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err && (dev < 0 || dev >= fakecuda_device_count()))
		err = CUDA_ERROR_INVALID_DEVICE;
	if (!err) {
		fakecuda_context_make(dev);
		*pctx = fakecuda_context(dev);
	}
	return fakecuda_api_exit(&c, err, "\"device\":%d", dev);
}

DRV_GET(cuCtxGetCurrent, CUcontext, fakecuda_context(fakecuda_device_current()))

CUresult cuCtxSetCurrent(CUcontext ctx)
{
	int device = fakecuda_context_device(ctx);
	DRV_CALL(cuCtxSetCurrent, ctx);
	CUresult err = fakecuda_drv_need_init();

	if (!err && device < 0)
		err = CUDA_ERROR_INVALID_CONTEXT;
	if (!err)
		fakecuda_device_set(device);
	return fakecuda_api_exit(&c, err, NULL);
}

/* No parameters, so no cuCtxSynchronize_params for DRV_CALL. */
CUresult cuCtxSynchronize(void)
{
	struct fakecuda_call c;
	CUresult err;

	fakecuda_drv_enter(&c, DRV_CBID(cuCtxSynchronize), "cuCtxSynchronize", NULL, NULL,
			   DRV_CALLER);
	err = fakecuda_drv_need_init();
	if (!err) {
		fakecuda_sync(NULL, fakecuda_device_current());
		fakecuda_sync_done(&c, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE,
				   fakecuda_device_current(), NULL, NULL);
	}
	return fakecuda_api_exit(&c, err, NULL);
}

/* ---- modules and functions ---- */

CUresult fakecuda_drv_load_data(struct fakecuda_call *c, const void *image, CUmodule *module,
				CUlibrary *library)
{
	CUresult err =
	    (module || library) && image ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;
	struct fakecuda_module *m = NULL;

	if (!err && !(m = fakecuda_module_new(image, false)))
		err = CUDA_ERROR_OUT_OF_MEMORY;
	if (!err && module)
		*module = (CUmodule)m;
	else if (!err)
		*library = (CUlibrary)m;
	return fakecuda_api_exit(c, err, NULL);
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	DRV_CALL(cuModuleLoadData, module, image);
	return fakecuda_drv_load_data(&c, image, module, NULL);
}

CUresult fakecuda_drv_unload(struct fakecuda_call *c, void *m)
{
	CUresult err = m ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_HANDLE;

	if (!err)
		fakecuda_module_free(m);
	return fakecuda_api_exit(c, err, NULL);
}

CUresult cuModuleUnload(CUmodule hmod)
{
	DRV_CALL(cuModuleUnload, hmod);
	return fakecuda_drv_unload(&c, hmod);
}

CUresult fakecuda_drv_get_kernel(struct fakecuda_call *c, void *m, const char *name,
				 CUfunction *func, CUkernel *kernel)
{
	const struct fakecuda_module *module = m;
	CUresult err =
	    (func || kernel) && m && name ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;
	const struct fakecuda_kernel *k = NULL;
	char log_name[512];

	if (!err && !fakecuda_image_has_kernel(module->image, name))
		err = CUDA_ERROR_NOT_FOUND;
	if (!err && !(k = fakecuda_kernel_function(module, name)))
		err = CUDA_ERROR_OUT_OF_MEMORY;
	if (!err && func)
		*func = (CUfunction)k;
	else if (!err)
		*kernel = (CUkernel)k;
	return fakecuda_api_exit(c, err, "\"name\":%s",
				 fakecuda_log_str(log_name, sizeof(log_name), name));
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	DRV_CALL(cuModuleGetFunction, hfunc, hmod, name);
	return fakecuda_drv_get_kernel(&c, hmod, name, hfunc, NULL);
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

/* The launch of a kernel: `type` is its CUpti_ActivityLaunchType (regular or cooperative). */
static CUresult launch(CUpti_CallbackId cbid, const char *name, const void *params, CUfunction f,
		       const unsigned int grid[3], const unsigned int block[3], unsigned int shared,
		       CUstream stream, bool per_thread, uint8_t type, const void *caller)
{
	const struct fakecuda_kernel *k = fakecuda_kernel_find(f);
	struct fakecuda_op op = {.kind = FAKECUDA_OP_KERNEL, .async = true};
	struct fakecuda_stream *s = NULL;
	struct fakecuda_call c;
	CUresult err;

	fakecuda_drv_enter(&c, cbid, name, params, k ? k->name : NULL, caller);
	err = fakecuda_drv_need_init();
	if (!err && !k)
		err = CUDA_ERROR_INVALID_HANDLE;
	if (!err && !valid_launch(grid, block))
		err = CUDA_ERROR_INVALID_VALUE;
	if (!err) {
		s = fakecuda_stream_get(stream, per_thread);
		op.correlation = c.correlation;
		op.runtime = c.nested;
		op.kernel.kernel = k;
		memcpy(op.kernel.grid, grid, sizeof(op.kernel.grid));
		memcpy(op.kernel.block, block, sizeof(op.kernel.block));
		op.kernel.shared_bytes = shared;
		op.kernel.launch_type = type;
		fakecuda_op_enqueue(s, &op);
	}
	return fakecuda_api_exit(&c, err,
				 "\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"shared\":%u,"
				 "\"stream\":%d",
				 grid[0], grid[1], grid[2], block[0], block[1], block[2], shared,
				 s ? (int)fakecuda_stream_id(s) : -1);
}

#define LAUNCH_ARGS                                                                        \
	CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, \
	    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,        \
	    unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra
#define LAUNCH(name, per_thread)                                                          \
	name##_params p = {                                                               \
	    f,	       gridDimX,       gridDimY, gridDimZ,     blockDimX, blockDimY,      \
	    blockDimZ, sharedMemBytes, hStream,	 kernelParams, extra};                    \
	const unsigned int grid[3] = {gridDimX, gridDimY, gridDimZ};                      \
	const unsigned int block[3] = {blockDimX, blockDimY, blockDimZ};                  \
	return launch(DRV_CBID(name), #name, &p, f, grid, block, sharedMemBytes, hStream, \
		      per_thread, CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR, DRV_CALLER)

CUresult cuLaunchKernel(LAUNCH_ARGS)
{
	LAUNCH(cuLaunchKernel, false);
}

CUresult cuLaunchKernel_ptsz(LAUNCH_ARGS)
{
	LAUNCH(cuLaunchKernel_ptsz, true);
}

/*
 * A cooperative launch is a launch whose blocks may all synchronise with each other: the
 * simulation times it as any other, and its record says it was cooperative.
 */
#define COOPERATIVE_ARGS                                                                   \
	CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, \
	    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,        \
	    unsigned int sharedMemBytes, CUstream hStream, void **kernelParams
#define COOPERATIVE(name, per_thread)                                                     \
	name##_params p = {f,	      gridDimX,	 gridDimY,	 gridDimZ, blockDimX,     \
			   blockDimY, blockDimZ, sharedMemBytes, hStream,  kernelParams}; \
	const unsigned int grid[3] = {gridDimX, gridDimY, gridDimZ};                      \
	const unsigned int block[3] = {blockDimX, blockDimY, blockDimZ};                  \
	return launch(DRV_CBID(name), #name, &p, f, grid, block, sharedMemBytes, hStream, \
		      per_thread, CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE,   \
		      DRV_CALLER)

CUresult cuLaunchCooperativeKernel(COOPERATIVE_ARGS)
{
	COOPERATIVE(cuLaunchCooperativeKernel, false);
}

CUresult cuLaunchCooperativeKernel_ptsz(COOPERATIVE_ARGS)
{
	COOPERATIVE(cuLaunchCooperativeKernel_ptsz, true);
}

static CUresult launch_ex(CUpti_CallbackId cbid, const char *name, const void *params,
			  const CUlaunchConfig *config, CUfunction f, bool per_thread,
			  const void *caller)
{
	unsigned int grid[3] = {0}, block[3] = {0}, shared = 0;
	uint8_t type = CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
	CUstream stream = NULL;

	if (config) {
		grid[0] = config->gridDimX, grid[1] = config->gridDimY, grid[2] = config->gridDimZ;
		block[0] = config->blockDimX, block[1] = config->blockDimY;
		block[2] = config->blockDimZ;
		shared = config->sharedMemBytes;
		stream = config->hStream;
		for (unsigned int i = 0; i < config->numAttrs; i++)
			if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE &&
			    config->attrs[i].value.cooperative)
				type = CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE;
	}
	return launch(cbid, name, params, f, grid, block, shared, stream, per_thread, type, caller);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
			  void **extra)
{
	cuLaunchKernelEx_params p = {config, f, kernelParams, extra};

	return launch_ex(DRV_CBID(cuLaunchKernelEx), "cuLaunchKernelEx", &p, config, f, false,
			 DRV_CALLER);
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
			       void **extra)
{
	cuLaunchKernelEx_ptsz_params p = {config, f, kernelParams, extra};

	return launch_ex(DRV_CBID(cuLaunchKernelEx_ptsz), "cuLaunchKernelEx_ptsz", &p, config, f,
			 true, DRV_CALLER);
}
