/*
 * The fake libcudart.so.13: call tracing, errors (last error, names, strings), nvcc's
 * registration and launch entry points, cudaLaunchKernel*, cudaFuncGetName, profiler control.
 */
#include <errno.h>
#include <string.h>

#include "test/fakecuda/cudart.h"

#define CUDA_VERSION_NUMBER 13000
#define MAX_CALL_CONFIGS    8

/* cudaGetLastError's state: the last error of a runtime call made by this thread. */
static __thread cudaError_t last_error;

/* <<<...>>> pushes its configuration and the stub pops it; nested launches may stack up. */
struct call_config {
	dim3 grid, block;
	size_t shared;
	cudaStream_t stream;
};
static __thread struct call_config configs[MAX_CALL_CONFIGS];
static __thread unsigned n_configs;

void fakert_enter(struct fakecuda_call *call, CUpti_CallbackId cbid, const char *name,
		  const void *params, const char *symbol)
{
	fakecuda_api_enter(call, CUPTI_CB_DOMAIN_RUNTIME_API, cbid, name, params, symbol);
}

/* The calls that need no context: asking what there is, and the errors' state and names. */
static bool makes_context(CUpti_CallbackId cbid)
{
	static const CUpti_CallbackId queries[] = {
	    RT_CBID(cudaGetDeviceCount_v3020),	     RT_CBID(cudaGetDevice_v3020),
	    RT_CBID(cudaGetDeviceProperties_v12000), RT_CBID(cudaDriverGetVersion_v3020),
	    RT_CBID(cudaRuntimeGetVersion_v3020),    RT_CBID(cudaGetLastError_v3020),
	    RT_CBID(cudaPeekAtLastError_v3020),	     RT_CBID(cudaGetErrorString_v3020),
	    RT_CBID(cudaGetErrorName_v6050),
	};

	for (size_t i = 0; i < sizeof(queries) / sizeof(queries[0]); i++)
		if (cbid == queries[i])
			return false;
	return true;
}

/*
 * A call's end. Any other call than a query makes the current device's primary context, as
 * the runtime's lazy initialisation does (cudaSetDevice too, since CUDA 12).
 */
cudaError_t fakert_exit(struct fakecuda_call *call, cudaError_t err, const char *args_fmt, ...)
{
	va_list ap;

	if (err == cudaSuccess && makes_context(call->cbid))
		fakecuda_context_make(fakecuda_device_current());
	va_start(ap, args_fmt);
	fakecuda_api_vexit(call, err, args_fmt, ap);
	va_end(ap);
	if (err != cudaSuccess)
		last_error = err;
	return err;
}

cudaError_t fakert_error(int err)
{
	switch (err) {
	case 0:
		return cudaSuccess;
	case -ENOMEM:
		return cudaErrorMemoryAllocation;
	default:
		return cudaErrorInvalidValue;
	}
}

/* A traced call that does nothing else and succeeds. */
static cudaError_t noop_call(CUpti_CallbackId cbid, const char *name, const void *params)
{
	struct fakecuda_call c;

	fakert_enter(&c, cbid, name, params, NULL);
	return fakert_exit(&c, cudaSuccess, NULL);
}

/* ---- errors ---- */

/* The real runtime's names and strings for the errors the simulation returns. */
static const struct {
	cudaError_t err;
	const char *name, *string;
} errors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorMissingConfiguration, "cudaErrorMissingConfiguration",
     "__global__ function call is not configured"},
    {cudaErrorLaunchOutOfResources, "cudaErrorLaunchOutOfResources",
     "too many resources requested for launch"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration",
     "invalid configuration argument"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection",
     "invalid copy direction for memcpy"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

static int error_index(cudaError_t err)
{
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
		if (errors[i].err == err)
			return (int)i;
	return -1;
}

/* Neither records its own result as the last error: that would undo the reset. */
cudaError_t cudaGetLastError(void)
{
	cudaError_t err = last_error;
	struct fakecuda_call c;

	fakert_enter(&c, RT_CBID(cudaGetLastError_v3020), "cudaGetLastError", NULL, NULL);
	last_error = cudaSuccess;
	return fakecuda_api_exit(&c, err, NULL);
}

cudaError_t cudaPeekAtLastError(void)
{
	struct fakecuda_call c;

	fakert_enter(&c, RT_CBID(cudaPeekAtLastError_v3020), "cudaPeekAtLastError", NULL, NULL);
	return fakecuda_api_exit(&c, last_error, NULL);
}

/* cudaGetErrorName and cudaGetErrorString: the error's row, its name or its words. */
static const char *error_text(CUpti_CallbackId cbid, const char *fn, const void *params,
			      cudaError_t error, bool words)
{
	int i = error_index(error);
	struct fakecuda_call c;

	fakert_enter(&c, cbid, fn, params, NULL);
	fakecuda_api_exit(&c, 0, "\"error\":%d", (int)error);
	if (i < 0)
		return "unrecognized error code";
	return words ? errors[i].string : errors[i].name;
}

const char *cudaGetErrorName(cudaError_t error)
{
	cudaGetErrorName_v6050_params p = {error};

	return error_text(RT_CBID(cudaGetErrorName_v6050), "cudaGetErrorName", &p, error, false);
}

const char *cudaGetErrorString(cudaError_t error)
{
	cudaGetErrorString_v3020_params p = {error};

	return error_text(RT_CBID(cudaGetErrorString_v3020), "cudaGetErrorString", &p, error, true);
}

/*
 * ---- registration of nvcc-compiled modules, and nvcc's launch plumbing: NVIDIA's 13.0
 *      runtime reports none of these to tools, so neither does this one ----
 */

/* The fat binary's address is a fine module handle: nvcc only hands it back to us. */
void **__cudaRegisterFatBinary(void *fatCubin)
{
	return fatCubin;
}

void __cudaRegisterFatBinaryEnd(void **fatCubinHandle)
{
	(void)fatCubinHandle;
}

void __cudaUnregisterFatBinary(void **fatCubinHandle)
{
	(void)fatCubinHandle;
}

void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
		       const char *deviceName, int ext, size_t size, int constant, int global)
{
	(void)fatCubinHandle, (void)hostVar, (void)deviceAddress, (void)deviceName;
	(void)ext, (void)size, (void)constant, (void)global;
}

/* deviceName is the kernel's mangled name: what CUPTI records and cudaFuncGetName report. */
void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
			    const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
			    dim3 *bDim, dim3 *gDim, int *wSize)
{
	(void)fatCubinHandle, (void)deviceFun, (void)thread_limit, (void)tid, (void)bid;
	(void)bDim, (void)gDim, (void)wSize;
	fakecuda_kernel_register(hostFun, deviceName);
}

char __cudaInitModule(void **fatCubinHandle)
{
	(void)fatCubinHandle;
	return 1;
}

cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun)
{
	const struct fakecuda_kernel *k = fakecuda_kernel_find(hostFun);

	if (k && kernel)
		*kernel = (cudaKernel_t)k;
	return k && kernel ? cudaSuccess : cudaErrorInvalidDeviceFunction;
}

unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
				     struct CUstream_st *stream)
{
	if (n_configs == MAX_CALL_CONFIGS)
		return cudaErrorLaunchOutOfResources;
	configs[n_configs++] = (struct call_config){gridDim, blockDim, sharedMem, stream};
	return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
				       void *stream)
{
	struct call_config *cfg;

	if (!n_configs)
		return cudaErrorMissingConfiguration;
	cfg = &configs[--n_configs];
	*gridDim = cfg->grid;
	*blockDim = cfg->block;
	*sharedMem = cfg->shared;
	*(cudaStream_t *)stream = cfg->stream;
	return cudaSuccess;
}

/* ---- launches ---- */

static bool valid_config(dim3 g, dim3 b)
{
	if (!g.x || !g.y || !g.z || !b.x || !b.y || !b.z)
		return false;
	if (g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535 || b.z > 64)
		return false;
	return (uint64_t)b.x * b.y * b.z <= 1024;
}

struct launch {
	const void *func; /* host stub or cudaKernel_t */
	dim3 grid, block;
	size_t shared;
	cudaStream_t stream;
	bool per_thread; /* a _ptsz entry point */
};

/* Every runtime launch entry point: cbid and name of the entry, its CUPTI params struct. */
static cudaError_t launch(CUpti_CallbackId cbid, const char *name, const void *params,
			  const struct launch *l)
{
	const struct fakecuda_kernel *k = fakecuda_kernel_find(l->func);
	struct fakecuda_stream *s = fakecuda_stream_get(l->stream, l->per_thread);
	struct fakecuda_op op = {.kind = FAKECUDA_OP_KERNEL, .runtime = true, .async = true};
	cudaError_t err = cudaSuccess;
	struct fakecuda_call c;

	fakert_enter(&c, cbid, name, params, k ? k->name : NULL);
	if (!k)
		err = cudaErrorInvalidDeviceFunction;
	else if (!valid_config(l->grid, l->block))
		err = cudaErrorInvalidConfiguration;
	if (!err) {
		op.correlation = c.correlation;
		op.kernel.kernel = k;
		memcpy(op.kernel.grid, &l->grid, sizeof(op.kernel.grid));
		memcpy(op.kernel.block, &l->block, sizeof(op.kernel.block));
		op.kernel.shared_bytes = (uint32_t)l->shared;
		fakecuda_op_enqueue(s, &op);
	}
	return fakert_exit(&c, err,
			   "\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"shared\":%zu,\"stream\":%u",
			   l->grid.x, l->grid.y, l->grid.z, l->block.x, l->block.y, l->block.z,
			   l->shared, fakecuda_stream_id(s));
}

/*
 * NVIDIA's 13.0 runtime reports nvcc's <<<>>> launch (__cudaLaunchKernel) to tools as
 * cudaLaunchKernel, cbid 211 (cudaLaunchKernel_ptsz, 214, under per-thread streams), with
 * cudaLaunchKernel's params holding the cudaKernel_t; the 505/506 cbids are never reported.
 */
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
			       size_t sharedMem, cudaStream_t stream)
{
	cudaLaunchKernel_v7000_params p = {kernel, gridDim, blockDim, args, sharedMem, stream};
	struct launch l = {kernel, gridDim, blockDim, sharedMem, stream, false};

	return launch(RT_CBID(cudaLaunchKernel_v7000), "cudaLaunchKernel", &p, &l);
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
				    size_t sharedMem, cudaStream_t stream)
{
	cudaLaunchKernel_v7000_params p = {kernel, gridDim, blockDim, args, sharedMem, stream};
	struct launch l = {kernel, gridDim, blockDim, sharedMem, stream, true};

	return launch(RT_CBID(cudaLaunchKernel_ptsz_v7000), "cudaLaunchKernel_ptsz", &p, &l);
}

cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
			     size_t sharedMem, cudaStream_t stream)
{
	cudaLaunchKernel_v7000_params p = {func, gridDim, blockDim, args, sharedMem, stream};
	struct launch l = {func, gridDim, blockDim, sharedMem, stream, false};

	return launch(RT_CBID(cudaLaunchKernel_v7000), "cudaLaunchKernel", &p, &l);
}

cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
				  size_t sharedMem, cudaStream_t stream)
{
	cudaLaunchKernel_ptsz_v7000_params p = {func, gridDim, blockDim, args, sharedMem, stream};
	struct launch l = {func, gridDim, blockDim, sharedMem, stream, true};

	return launch(RT_CBID(cudaLaunchKernel_ptsz_v7000), "cudaLaunchKernel_ptsz", &p, &l);
}

static struct launch launch_ex(const cudaLaunchConfig_t *config, const void *func, bool ptsz)
{
	return (struct launch){
	    func, config->gridDim, config->blockDim, config->dynamicSmemBytes, config->stream,
	    ptsz};
}

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args)
{
	cudaLaunchKernelExC_v11060_params p = {config, func, args};
	struct launch l = launch_ex(config, func, false);

	return launch(RT_CBID(cudaLaunchKernelExC_v11060), "cudaLaunchKernelExC", &p, &l);
}

cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func,
				     void **args)
{
	cudaLaunchKernelExC_ptsz_v11060_params p = {config, func, args};
	struct launch l = launch_ex(config, func, true);

	return launch(RT_CBID(cudaLaunchKernelExC_ptsz_v11060), "cudaLaunchKernelExC_ptsz", &p, &l);
}

/* The mangled name, as the real runtime returns it. */
cudaError_t cudaFuncGetName(const char **name, const void *func)
{
	cudaFuncGetName_v12030_params p = {name, func};
	const struct fakecuda_kernel *k = fakecuda_kernel_find(func);
	struct fakecuda_call c;

	fakert_enter(&c, RT_CBID(cudaFuncGetName_v12030), "cudaFuncGetName", &p, NULL);
	if (!name)
		return fakert_exit(&c, cudaErrorInvalidValue, NULL);
	if (!k)
		return fakert_exit(&c, cudaErrorInvalidDeviceFunction, NULL);
	*name = k->name;
	return fakert_exit(&c, cudaSuccess, NULL);
}

/* ---- profiler control: accepted, changes nothing ---- */

cudaError_t cudaProfilerStart(void)
{
	return noop_call(RT_CBID(cudaProfilerStart_v4000), "cudaProfilerStart", NULL);
}

cudaError_t cudaProfilerStop(void)
{
	return noop_call(RT_CBID(cudaProfilerStop_v4000), "cudaProfilerStop", NULL);
}
