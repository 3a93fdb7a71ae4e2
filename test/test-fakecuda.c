/*
 * Tests of the simulated runtime, driver and GPU timeline, loaded into the test's process: the
 * exports, the timeline's guarantees, the cost model, fault injection and error semantics.
 * Expected values come from the environment given, the CUDA headers and the real libcudart.
 * The test programs' record streams are tested in test-fakecuda-apps.c.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>

#include "task.h"
#include "util/gtlog.h"
#include "util/proc.h"

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* ---- the fake runtime loaded into the test process ---- */

void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFunction(void **handle, const char *hostFun, char *deviceFun,
			    const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
			    dim3 *bDim, dim3 *gDim, int *wSize);

static struct {
	__typeof__(cudaMalloc) *malloc;
	__typeof__(cudaFree) *free;
	__typeof__(cudaMemcpy) *copy;
	__typeof__(cudaLaunchKernel) *launch;
	__typeof__(cudaLaunchKernelExC) *launch_ex;
	__typeof__(cudaMallocAsync) *malloc_async;
	__typeof__(cudaFreeAsync) *free_async;
	__typeof__(cudaStreamWaitEvent) *wait_event;
	__typeof__(cudaStreamCreate) *stream_create;
	__typeof__(cudaStreamCreateWithFlags) *stream_create_flags;
	__typeof__(cudaStreamSynchronize) *stream_sync;
	__typeof__(cudaDeviceSynchronize) *device_sync;
	__typeof__(cudaEventCreate) *event_create;
	__typeof__(cudaEventRecord) *event_record;
	__typeof__(cudaEventSynchronize) *event_sync;
	__typeof__(cudaEventElapsedTime) *event_elapsed;
	__typeof__(cudaEventDestroy) *event_destroy;
	__typeof__(cudaGetLastError) *get_last_error;
	__typeof__(cudaPeekAtLastError) *peek_last_error;
	__typeof__(cudaGetErrorString) *error_string;
	__typeof__(cudaGetErrorName) *error_name;
	__typeof__(cudaGetDeviceCount) *device_count;
	__typeof__(cudaGetDeviceProperties) *device_props;
	__typeof__(cudaSetDevice) *set_device;
	__typeof__(cudaFuncGetName) *func_name;
	__typeof__(__cudaRegisterFatBinary) *register_fatbin;
	__typeof__(__cudaRegisterFunction) *register_function;
} rt;

/* Which runtime symbol fills which member of `rt`. */
#define RT_SYM(member, sym) #sym, offsetof(__typeof__(rt), member)

static const struct {
	const char *name;
	size_t offset;
} rt_syms[] = {
    {RT_SYM(malloc, cudaMalloc)},
    {RT_SYM(free, cudaFree)},
    {RT_SYM(copy, cudaMemcpy)},
    {RT_SYM(launch_ex, cudaLaunchKernelExC)},
    {RT_SYM(malloc_async, cudaMallocAsync)},
    {RT_SYM(free_async, cudaFreeAsync)},
    {RT_SYM(wait_event, cudaStreamWaitEvent)},
    {RT_SYM(launch, cudaLaunchKernel)},
    {RT_SYM(stream_create, cudaStreamCreate)},
    {RT_SYM(stream_create_flags, cudaStreamCreateWithFlags)},
    {RT_SYM(stream_sync, cudaStreamSynchronize)},
    {RT_SYM(device_sync, cudaDeviceSynchronize)},
    {RT_SYM(event_create, cudaEventCreate)},
    {RT_SYM(event_record, cudaEventRecord)},
    {RT_SYM(event_sync, cudaEventSynchronize)},
    {RT_SYM(event_elapsed, cudaEventElapsedTime)},
    {RT_SYM(event_destroy, cudaEventDestroy)},
    {RT_SYM(get_last_error, cudaGetLastError)},
    {RT_SYM(peek_last_error, cudaPeekAtLastError)},
    {RT_SYM(error_string, cudaGetErrorString)},
    {RT_SYM(error_name, cudaGetErrorName)},
    {RT_SYM(device_count, cudaGetDeviceCount)},
    {RT_SYM(device_props, cudaGetDeviceProperties)},
    {RT_SYM(set_device, cudaSetDevice)},
    {RT_SYM(func_name, cudaFuncGetName)},
    {RT_SYM(register_fatbin, __cudaRegisterFatBinary)},
    {RT_SYM(register_function, __cudaRegisterFunction)},
};

/* Host stubs for the kernels of the in-process tests; distinct bodies keep them apart. */
static volatile int stub_sink;
static void kernel_fast(void)
{
	stub_sink = 1;
}
static void kernel_mid(void)
{
	stub_sink = 2;
}
static void kernel_slow(void)
{
	stub_sink = 3;
}

/*
 * Sets the environment (FAKEGPU_LOG to a new file, then each "NAME=value" of env), loads the
 * fake runtime and registers kernel_fast, kernel_mid and kernel_slow as _Z4fastv, _Z3midv and
 * _Z4slowv. Returns the log's path.
 */
static const char *load_runtime(const char *const env[])
{
	static char fatbin[16];
	const char *log = proc_tmp_file();
	void *lib, **handle;

	setenv("FAKEGPU_LOG", log, 1);
	for (; env && *env; env++)
		ASSERT(putenv((char *)*env) == 0);
	lib = dlopen(proc_build_path("fakecuda/libcudart.so.13"), RTLD_NOW | RTLD_LOCAL);
	ASSERT_MSG(lib, "%s", dlerror());
	for (size_t i = 0; i < sizeof(rt_syms) / sizeof(rt_syms[0]); i++) {
		void *sym = dlsym(lib, rt_syms[i].name);

		ASSERT_MSG(sym, "%s", rt_syms[i].name);
		memcpy((char *)&rt + rt_syms[i].offset, &sym, sizeof(sym));
	}
	handle = rt.register_fatbin(fatbin);
	rt.register_function(handle, (const char *)kernel_fast, "_Z4fastv", "_Z4fastv", -1, NULL,
			     NULL, NULL, NULL, NULL);
	rt.register_function(handle, (const char *)kernel_mid, "_Z3midv", "_Z3midv", -1, NULL, NULL,
			     NULL, NULL, NULL);
	rt.register_function(handle, (const char *)kernel_slow, "_Z4slowv", "_Z4slowv", -1, NULL,
			     NULL, NULL, NULL, NULL);
	return log;
}

static cudaError_t launch(void (*kernel)(void), unsigned int grid, unsigned int block,
			  cudaStream_t stream)
{
	dim3 g = {grid, 1, 1}, b = {block, 1, 1};

	return rt.launch((const void *)kernel, g, b, NULL, 0, stream);
}

/* The kernels of a log, in launch (correlation) order. */
static json_t *kernels_by_corr(json_t *log)
{
	return gtlog_sorted(log, "{\"type\":\"gpu\",\"kind\":\"kernel\"}", "corr");
}

#define KERNEL(arr, i) json_array_get(arr, i)
#define START(e)       gtlog_int(e, "start")
#define END(e)	       gtlog_int(e, "end")

/* ---- the build: exports ---- */

/* What the task requires of the fake libcudart.so.13 (and an nvcc-13 program imports). */
static const char *const runtime_exports[] = {
    "__cudaRegisterFatBinary",
    "__cudaRegisterFatBinaryEnd",
    "__cudaRegisterFunction",
    "__cudaRegisterVar",
    "__cudaUnregisterFatBinary",
    "__cudaInitModule",
    "__cudaGetKernel",
    "__cudaPushCallConfiguration",
    "__cudaPopCallConfiguration",
    "__cudaLaunchKernel",
    "__cudaLaunchKernel_ptsz",
    "cudaLaunchKernel",
    "cudaLaunchKernel_ptsz",
    "cudaLaunchKernelExC",
    "cudaLaunchKernelExC_ptsz",
    "cudaFuncGetName",
    "cudaMalloc",
    "cudaFree",
    "cudaMallocAsync",
    "cudaMallocAsync_ptsz",
    "cudaFreeAsync",
    "cudaFreeAsync_ptsz",
    "cudaMallocHost",
    "cudaHostAlloc",
    "cudaFreeHost",
    "cudaMemGetInfo",
    "cudaMemcpy",
    "cudaMemcpy_ptds",
    "cudaMemcpyAsync",
    "cudaMemcpyAsync_ptsz",
    "cudaMemset",
    "cudaMemset_ptds",
    "cudaMemsetAsync",
    "cudaMemsetAsync_ptsz",
    "cudaStreamCreate",
    "cudaStreamCreateWithFlags",
    "cudaStreamDestroy",
    "cudaStreamSynchronize",
    "cudaStreamSynchronize_ptsz",
    "cudaStreamWaitEvent",
    "cudaDeviceSynchronize",
    "cudaGetDevice",
    "cudaSetDevice",
    "cudaGetDeviceCount",
    "cudaGetDeviceProperties",
    "cudaDriverGetVersion",
    "cudaRuntimeGetVersion",
    "cudaGetLastError",
    "cudaPeekAtLastError",
    "cudaGetErrorString",
    "cudaGetErrorName",
    "cudaEventCreate",
    "cudaEventCreateWithFlags",
    "cudaEventRecord",
    "cudaEventRecord_ptsz",
    "cudaEventRecordWithFlags",
    "cudaEventRecordWithFlags_ptsz",
    "cudaEventSynchronize",
    "cudaEventQuery",
    "cudaEventElapsedTime",
    "cudaEventDestroy",
    "cudaProfilerStart",
    "cudaProfilerStop",
};

static const char *const driver_exports[] = {
    "cuInit",
    "cuDriverGetVersion",
    "cuGetProcAddress",
    "cuGetProcAddress_v2",
    "cuLaunchKernel",
    "cuLaunchKernelEx",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemcpyHtoD_v2",
    "cuMemcpyDtoH_v2",
    "cuCtxSynchronize",
    "cuModuleLoadData",
    "cuModuleGetFunction",
    "cuModuleUnload",
    "cuDeviceGet",
    "cuDeviceGetCount",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuDevicePrimaryCtxRetain",
    /* what cuDNN's loader of runtime-compiled code looks up with dlsym */
    "cuLinkCreate",
    "cuLinkAddData",
    "cuLinkComplete",
    "cuLinkDestroy",
    "cuLaunchCooperativeKernel",
    "cuLibraryLoadFromFile",
};

/* Every name under the version node libcudart.so.13, as in the real library, which has it too. */
TEST(fakecuda_exports)
{
	void *fake = dlopen(proc_build_path("fakecuda/libcudart.so.13"), RTLD_NOW | RTLD_LOCAL);
	void *drv = dlopen(proc_build_path("fakecuda/libcuda.so.1"), RTLD_NOW | RTLD_LOCAL);
	char real_path[PATH_MAX];
	void *real;

	ASSERT_MSG(fake && drv, "%s", dlerror());
	snprintf(real_path, sizeof(real_path), "%s/lib64/libcudart.so.13",
		 getenv("CUDA_HOME") ? getenv("CUDA_HOME") : "/usr/local/cuda");
	real = dlopen(real_path, RTLD_NOW | RTLD_LOCAL);
	for (size_t i = 0; i < sizeof(runtime_exports) / sizeof(runtime_exports[0]); i++) {
		const char *name = runtime_exports[i];

		ASSERT_MSG(dlvsym(fake, name, "libcudart.so.13"), "fake lacks %s", name);
		if (real)
			ASSERT_MSG(dlvsym(real, name, "libcudart.so.13"), "real lacks %s", name);
	}
	for (size_t i = 0; i < sizeof(driver_exports) / sizeof(driver_exports[0]); i++)
		ASSERT_MSG(dlsym(drv, driver_exports[i]), "libcuda.so.1 lacks %s",
			   driver_exports[i]);
	ASSERT_MSG(!dlsym(fake, "fakert_exit") && !dlsym(drv, "fakecuda_emit_op"),
		   "internal names leak");
}

/* ---- the timeline ---- */

/* One stream runs its kernels in launch order, back to back, each for the modelled time. */
TEST(fakecuda_stream_order_and_duration)
{
	const char *env[] = {"FAKEGPU_KERNEL_NS=200000", NULL};
	const char *path = load_runtime(env);
	json_t *log, *k, *api;
	cudaStream_t s;

	ASSERT_EQ(rt.stream_create(&s), cudaSuccess);
	for (int i = 0; i < 5; i++)
		ASSERT_EQ(launch(kernel_fast, 2, 64, s), cudaSuccess);
	ASSERT_EQ(rt.stream_sync(s), cudaSuccess);
	log = gtlog_load(path);
	ASSERT(log);
	k = kernels_by_corr(log);
	api = gtlog_filter(log, "{\"type\":\"api\",\"name\":\"cudaLaunchKernel\"}");
	ASSERT_EQ(json_array_size(k), 5);
	ASSERT_EQ(json_array_size(api), 5);
	for (size_t i = 0; i < 5; i++) {
		json_t *e = KERNEL(k, i), *call = json_array_get(api, i);

		ASSERT_EQ(gtlog_int(e, "corr"), gtlog_int(call, "corr"));
		ASSERT_STR_EQ(gtlog_str(e, "name"), "_Z4fastv");
		ASSERT_EQ(END(e) - START(e), 200000);
		ASSERT_GE(START(e), gtlog_int(call, "start"));
		ASSERT_GE(gtlog_int(e, "queued"), gtlog_int(call, "start"));
		ASSERT_LE(gtlog_int(e, "queued"), gtlog_int(call, "end"));
		ASSERT_EQ(gtlog_int(e, "stream"), gtlog_int(KERNEL(k, 0), "stream"));
		if (i > 0)
			ASSERT_GE(START(e), END(KERNEL(k, i - 1)));
	}
	json_decref(api);
	json_decref(k);
	json_decref(log);
}

/* Kernels on two streams overlap; the legacy stream waits for blocking streams and they for it. */
TEST(fakecuda_streams_concurrency_and_legacy)
{
	const char *env[] = {"FAKEGPU_KERNEL_NS=30000000", NULL};
	const char *path = load_runtime(env);
	cudaStream_t a, b, nb;
	json_t *log, *k;

	ASSERT_EQ(rt.stream_create(&a), cudaSuccess);
	ASSERT_EQ(rt.stream_create(&b), cudaSuccess);
	ASSERT_EQ(rt.stream_create_flags(&nb, cudaStreamNonBlocking), cudaSuccess);
	ASSERT_EQ(launch(kernel_fast, 1, 32, a), cudaSuccess);	  /* 0 */
	ASSERT_EQ(launch(kernel_fast, 1, 32, b), cudaSuccess);	  /* 1: alongside 0 */
	ASSERT_EQ(launch(kernel_fast, 1, 32, NULL), cudaSuccess); /* 2: after 0 and 1 */
	ASSERT_EQ(launch(kernel_fast, 1, 32, nb), cudaSuccess);	  /* 3: alongside everything */
	ASSERT_EQ(launch(kernel_fast, 1, 32, a), cudaSuccess);	  /* 4: after 2 */
	ASSERT_EQ(rt.device_sync(), cudaSuccess);
	log = gtlog_load(path);
	k = kernels_by_corr(log);
	ASSERT_EQ(json_array_size(k), 5);
	ASSERT_EQ(gtlog_int(KERNEL(k, 2), "stream"), 7); /* the legacy stream's id on a real GPU */
	ASSERT_LT(START(KERNEL(k, 1)), END(KERNEL(k, 0)));
	ASSERT_LT(START(KERNEL(k, 0)), END(KERNEL(k, 1)));
	ASSERT_GE(START(KERNEL(k, 2)), END(KERNEL(k, 0)));
	ASSERT_GE(START(KERNEL(k, 2)), END(KERNEL(k, 1)));
	ASSERT_LT(START(KERNEL(k, 3)), END(KERNEL(k, 0)));
	ASSERT_LT(START(KERNEL(k, 3)), END(KERNEL(k, 2)));
	ASSERT_GE(START(KERNEL(k, 4)), END(KERNEL(k, 2)));
	json_decref(k);
	json_decref(log);
}

static size_t gpu_lines(const char *path)
{
	json_t *log = gtlog_load(path);
	size_t n = gtlog_count(log, "{\"type\":\"gpu\"}");

	json_decref(log);
	return n;
}

/* The last GPU operation of the log (by correlation), which must have completed. */
static json_t *last_gpu_op(const char *path)
{
	json_t *log = gtlog_load(path), *ops = gtlog_filter(log, "{\"type\":\"gpu\"}"),
	       *last = NULL;
	size_t i;
	json_t *e;

	json_array_foreach(ops, i, e)
	{
		if (!last || gtlog_int(e, "corr") > gtlog_int(last, "corr"))
			last = e;
	}
	ASSERT(last);
	json_incref(last);
	json_decref(ops);
	json_decref(log);
	return last;
}

/*
 * Completion is asynchronous (no record right after a launch), and stream, event, device and
 * blocking-copy synchronisation (and cudaFree) return only after the work's simulated end, its
 * record written.
 */
TEST(fakecuda_synchronize_waits)
{
	const char *env[] = {"FAKEGPU_KERNEL_TABLE=slow=150000000,mid=20000000", NULL};
	const char *path = load_runtime(env);
	cudaStream_t s;
	cudaEvent_t ev;
	char *dev, host[256];
	json_t *op;

	ASSERT_EQ(rt.stream_create(&s), cudaSuccess);
	ASSERT_EQ(rt.event_create(&ev), cudaSuccess);
	ASSERT_EQ(rt.malloc((void **)&dev, sizeof(host)), cudaSuccess);
	ASSERT_EQ(launch(kernel_slow, 1, 32, s), cudaSuccess);
	ASSERT_EQ(gpu_lines(path), 0);
	ASSERT_EQ(rt.stream_sync(s), cudaSuccess);
	op = last_gpu_op(path);
	ASSERT_GE(now_ns(), gtlog_int(op, "end"));
	json_decref(op);

	ASSERT_EQ(launch(kernel_mid, 1, 32, s), cudaSuccess);
	ASSERT_EQ(rt.event_record(ev, s), cudaSuccess);
	ASSERT_EQ(rt.event_sync(ev), cudaSuccess);
	op = last_gpu_op(path);
	ASSERT_STR_EQ(gtlog_str(op, "name"), "_Z3midv");
	ASSERT_GE(now_ns(), gtlog_int(op, "end"));
	json_decref(op);

	ASSERT_EQ(launch(kernel_mid, 1, 32, NULL), cudaSuccess);
	ASSERT_EQ(rt.copy(host, dev, sizeof(host), cudaMemcpyDeviceToHost), cudaSuccess);
	op = last_gpu_op(path);
	ASSERT_STR_EQ(gtlog_str(op, "kind"), "memcpy");
	ASSERT_GE(now_ns(), gtlog_int(op, "end"));
	json_decref(op);

	ASSERT_EQ(launch(kernel_mid, 1, 32, s), cudaSuccess);
	ASSERT_EQ(rt.device_sync(), cudaSuccess);
	op = last_gpu_op(path);
	ASSERT_STR_EQ(gtlog_str(op, "name"), "_Z3midv");
	ASSERT_GE(now_ns(), gtlog_int(op, "end"));
	json_decref(op);

	ASSERT_EQ(launch(kernel_mid, 1, 32, s), cudaSuccess);
	ASSERT_EQ(rt.free(dev), cudaSuccess);
	op = last_gpu_op(path);
	ASSERT_GE(now_ns(), gtlog_int(op, "end"));
	json_decref(op);
	ASSERT_EQ(gpu_lines(path), 6);
	ASSERT_EQ(rt.event_destroy(ev), cudaSuccess);
}

/* Durations follow the model: kernel table, copy latency + bytes / bandwidth, time scale. */
TEST(fakecuda_cost_model)
{
	const char *env[] = {"FAKEGPU_KERNEL_NS=4000000", "FAKEGPU_KERNEL_TABLE=mid=8000000",
			     "FAKEGPU_COPY_GBPS=2",	  "FAKEGPU_COPY_NS=500",
			     "FAKEGPU_TIME_SCALE=0.25",	  NULL};
	const char *path = load_runtime(env);
	static char host[1000000];
	cudaEvent_t start, end;
	json_t *log, *k, *copy;
	float ms = 0;
	void *dev;

	ASSERT_EQ(rt.malloc(&dev, sizeof(host)), cudaSuccess);
	ASSERT_EQ(rt.event_create(&start), cudaSuccess);
	ASSERT_EQ(rt.event_create(&end), cudaSuccess);
	ASSERT_EQ(rt.event_record(start, NULL), cudaSuccess);
	ASSERT_EQ(launch(kernel_fast, 1, 32, NULL), cudaSuccess);
	ASSERT_EQ(launch(kernel_mid, 1, 32, NULL), cudaSuccess);
	ASSERT_EQ(rt.event_record(end, NULL), cudaSuccess);
	ASSERT_EQ(rt.copy(dev, host, sizeof(host), cudaMemcpyHostToDevice), cudaSuccess);
	ASSERT_EQ(rt.event_sync(end), cudaSuccess);
	ASSERT_EQ(rt.event_elapsed(&ms, start, end), cudaSuccess);
	log = gtlog_load(path);
	k = kernels_by_corr(log);
	copy = gtlog_filter(log, "{\"type\":\"gpu\",\"kind\":\"memcpy\"}");
	ASSERT_EQ(END(KERNEL(k, 0)) - START(KERNEL(k, 0)), 4000000 / 4);
	ASSERT_EQ(END(KERNEL(k, 1)) - START(KERNEL(k, 1)), 8000000 / 4);
	ASSERT_EQ(END(KERNEL(copy, 0)) - START(KERNEL(copy, 0)), (500 + 1000000 / 2) / 4);
	ASSERT_EQ(gtlog_int(KERNEL(copy, 0), "bytes"), sizeof(host));
	/* Both kernels lie between the events: at least their 3 ms, plus host time between calls. */
	ASSERT_MSG(ms >= 3.0f && ms < 50.0f, "elapsed %f ms", (double)ms);
	json_decref(copy);
	json_decref(k);
	json_decref(log);
	ASSERT_EQ(rt.free(dev), cudaSuccess);
}

/*
 * cudaStreamWaitEvent makes a stream wait for work of another; cudaLaunchKernelExC and the
 * stream-ordered allocator record their stream.
 */
TEST(fakecuda_wait_event_launch_ex_async_alloc)
{
	const char *env[] = {"FAKEGPU_KERNEL_TABLE=mid=20000000", NULL};
	const char *path = load_runtime(env);
	cudaLaunchConfig_t config = {
	    .gridDim = {3, 2, 1}, .blockDim = {32, 4, 1}, .dynamicSmemBytes = 128};
	cudaStream_t a, b;
	cudaEvent_t ev;
	json_t *log, *k, *mem, *grid;
	char match[96];
	void *p = NULL;

	ASSERT_EQ(rt.stream_create(&a), cudaSuccess);
	ASSERT_EQ(rt.stream_create_flags(&b, cudaStreamNonBlocking), cudaSuccess);
	ASSERT_EQ(rt.event_create(&ev), cudaSuccess);
	ASSERT_EQ(launch(kernel_mid, 1, 32, a), cudaSuccess);
	ASSERT_EQ(rt.event_record(ev, a), cudaSuccess);
	ASSERT_EQ(rt.wait_event(b, ev, 0), cudaSuccess);
	config.stream = b;
	ASSERT_EQ(rt.launch_ex(&config, (const void *)kernel_fast, NULL), cudaSuccess);
	ASSERT_EQ(rt.malloc_async(&p, 4096, b), cudaSuccess);
	ASSERT_EQ(rt.free_async(p, b), cudaSuccess);
	ASSERT_EQ(rt.device_sync(), cudaSuccess);
	log = gtlog_load(path);
	k = kernels_by_corr(log);
	ASSERT_EQ(json_array_size(k), 2);
	ASSERT_GE(START(KERNEL(k, 1)), END(KERNEL(k, 0)));
	ASSERT_EQ(gtlog_int(KERNEL(k, 1), "shared"), 128);
	grid = json_pack("[iii]", 3, 2, 1);
	ASSERT(json_equal(json_object_get(KERNEL(k, 1), "grid"), grid));
	json_decref(grid);
	snprintf(match, sizeof(match), "{\"type\":\"memory\",\"stream\":%lld,\"bytes\":4096}",
		 gtlog_int(KERNEL(k, 1), "stream"));
	mem = gtlog_filter(log, match);
	ASSERT_EQ(json_array_size(mem), 2);
	json_decref(mem);
	json_decref(k);
	json_decref(log);
	ASSERT_EQ(rt.event_destroy(ev), cudaSuccess);
}

/* ---- errors and fault injection ---- */

/* FAKEGPU_MALLOC_FAIL_ABOVE fails bigger allocations; cudaGetLastError reports and resets. */
TEST(fakecuda_malloc_fault_and_last_error)
{
	const char *env[] = {"FAKEGPU_MALLOC_FAIL_ABOVE=1048576", NULL};
	void *drv, *p = &p, *q = NULL;
	CUresult (*mem_alloc)(CUdeviceptr *, size_t);
	CUresult (*init)(unsigned int);
	CUdeviceptr dp = 0;

	load_runtime(env);
	ASSERT_EQ(rt.malloc(&p, 2 << 20), cudaErrorMemoryAllocation);
	ASSERT(p == NULL);
	ASSERT_EQ(rt.peek_last_error(), cudaErrorMemoryAllocation);
	ASSERT_EQ(rt.get_last_error(), cudaErrorMemoryAllocation);
	ASSERT_EQ(rt.get_last_error(), cudaSuccess);
	ASSERT_EQ(rt.malloc(&q, 1 << 20), cudaSuccess);
	ASSERT(q != NULL);
	ASSERT_EQ(rt.get_last_error(), cudaSuccess);
	ASSERT_EQ(rt.free(q), cudaSuccess);
	ASSERT_EQ(rt.free(q), cudaErrorInvalidValue); /* no longer an allocation */
	ASSERT_EQ(rt.get_last_error(), cudaErrorInvalidValue);

	drv = dlopen(proc_build_path("fakecuda/libcuda.so.1"), RTLD_NOW | RTLD_LOCAL);
	*(void **)&mem_alloc = dlsym(drv, "cuMemAlloc_v2");
	*(void **)&init = dlsym(drv, "cuInit");
	ASSERT(mem_alloc && init);
	ASSERT_EQ(init(0), CUDA_SUCCESS);
	ASSERT_EQ(mem_alloc(&dp, 2 << 20), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_EQ(mem_alloc(&dp, 4096), CUDA_SUCCESS);
	ASSERT(dp != 0);
}

/*
 * The simulated driver's answers to bad arguments, as CUDA documents them: NOT_INITIALIZED
 * before cuInit, INVALID_VALUE for a missing out-parameter or name (nothing written), NOT_FOUND
 * for a kernel the module's PTX does not declare; then the same calls done right.
 */
TEST(fakecuda_driver_argument_errors)
{
	static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
				  ".visible .entry only_one()\n{\n\tret;\n}\n";
	void *drv = dlopen(proc_build_path("fakecuda/libcuda.so.1"), RTLD_NOW | RTLD_LOCAL);
	CUfunction f = NULL;
	CUkernel k = NULL;
	CUmodule mod = NULL;
	CUlibrary lib = NULL;
	CUdevice dev = -1;
	size_t bytes = 0;
	int n = -1;

	ASSERT(drv);
#define CU(name, type, ...) ((CUresult(*) type)dlsym(drv, #name))(__VA_ARGS__)
#define GET_FUNCTION(...) \
	CU(cuModuleGetFunction, (CUfunction *, CUmodule, const char *), __VA_ARGS__)
#define GET_KERNEL(...) CU(cuLibraryGetKernel, (CUkernel *, CUlibrary, const char *), __VA_ARGS__)
	ASSERT_EQ(CU(cuDeviceGetCount, (int *), &n), CUDA_ERROR_NOT_INITIALIZED);
	ASSERT_EQ(n, -1);
	ASSERT_EQ(CU(cuInit, (unsigned), 0), CUDA_SUCCESS);
	ASSERT_EQ(CU(cuDeviceGetCount, (int *), NULL), CUDA_ERROR_INVALID_VALUE);
	ASSERT_EQ(CU(cuDeviceGetCount, (int *), &n), CUDA_SUCCESS);
	ASSERT_GT(n, 0);
	ASSERT_EQ(CU(cuCtxGetDevice, (CUdevice *), NULL), CUDA_ERROR_INVALID_VALUE);
	ASSERT_EQ(CU(cuCtxGetDevice, (CUdevice *), &dev), CUDA_SUCCESS);
	ASSERT_EQ(dev, 0);

	ASSERT_EQ(CU(cuModuleLoadData, (CUmodule *, const void *), &mod, ptx), CUDA_SUCCESS);
	ASSERT_EQ(GET_FUNCTION(NULL, mod, "only_one"), CUDA_ERROR_INVALID_VALUE);
	ASSERT_EQ(GET_FUNCTION(&f, mod, NULL), CUDA_ERROR_INVALID_VALUE);
	ASSERT_EQ(GET_FUNCTION(&f, mod, "other"), CUDA_ERROR_NOT_FOUND);
	ASSERT(f == NULL);
	ASSERT_EQ(GET_FUNCTION(&f, mod, "only_one"), CUDA_SUCCESS);
	ASSERT(f != NULL);
	/* An H200's SM: 2048 threads, 32 blocks; 227 KiB of shared memory a block can opt into. */
#define OCCUPANCY(block)                                                                         \
	CU(cuOccupancyMaxActiveBlocksPerMultiprocessor, (int *, CUfunction, int, size_t), &n, f, \
	   block, 0)
	ASSERT_EQ(OCCUPANCY(256), CUDA_SUCCESS);
	ASSERT_EQ(n, 8);
	ASSERT_EQ(OCCUPANCY(32), CUDA_SUCCESS);
	ASSERT_EQ(n, 32);
	ASSERT_EQ(CU(cuFuncGetAttribute, (int *, CUfunction_attribute, CUfunction), &n,
		     CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f),
		  CUDA_SUCCESS);
	ASSERT_EQ(n, 1024);
	ASSERT_EQ(CU(cuOccupancyAvailableDynamicSMemPerBlock, (size_t *, CUfunction, int, int),
		     &bytes, f, 2, 128),
		  CUDA_SUCCESS);
	ASSERT_EQ(bytes, (227u << 10) / 2);
	ASSERT_EQ(CU(cuModuleUnload, (CUmodule), mod), CUDA_SUCCESS);

	ASSERT_EQ(CU(cuLibraryLoadData,
		     (CUlibrary *, const void *, CUjit_option *, void **, unsigned int,
		      CUlibraryOption *, void **, unsigned int),
		     &lib, ptx, NULL, NULL, 0, NULL, NULL, 0),
		  CUDA_SUCCESS);
	ASSERT_EQ(GET_KERNEL(NULL, lib, "only_one"), CUDA_ERROR_INVALID_VALUE);
	ASSERT_EQ(GET_KERNEL(&k, lib, "other"), CUDA_ERROR_NOT_FOUND);
	ASSERT(k == NULL);
	ASSERT_EQ(GET_KERNEL(&k, lib, "only_one"), CUDA_SUCCESS);
	ASSERT(k != NULL);
	ASSERT_EQ(CU(cuLibraryUnload, (CUlibrary), lib), CUDA_SUCCESS);
#undef GET_KERNEL
#undef GET_FUNCTION
#undef CU
}

/* A bad launch returns its error, which <<<>>> code can only see through cudaGetLastError. */
TEST(fakecuda_launch_errors)
{
	dim3 g = {1, 1, 1}, too_big = {2048, 1, 1};
	const char *name = NULL;

	load_runtime(NULL);
	ASSERT_EQ(rt.launch((const void *)kernel_fast, g, too_big, NULL, 0, NULL),
		  cudaErrorInvalidConfiguration);
	ASSERT_EQ(rt.get_last_error(), cudaErrorInvalidConfiguration);
	ASSERT_EQ(rt.get_last_error(), cudaSuccess);
	ASSERT_EQ(rt.launch((const void *)&name, g, g, NULL, 0, NULL),
		  cudaErrorInvalidDeviceFunction);
	ASSERT_EQ(rt.get_last_error(), cudaErrorInvalidDeviceFunction);
	ASSERT_EQ(rt.func_name(&name, (const void *)kernel_mid), cudaSuccess);
	ASSERT_STR_EQ(name, "_Z3midv");
	ASSERT_EQ(rt.device_sync(), cudaSuccess);
}

/* Error names and strings are the real libcudart's (which needs no GPU for them). */
TEST(fakecuda_error_strings_match_real)
{
	static const cudaError_t codes[] = {
	    cudaSuccess,
	    cudaErrorInvalidValue,
	    cudaErrorMemoryAllocation,
	    cudaErrorInitializationError,
	    cudaErrorMissingConfiguration,
	    cudaErrorLaunchOutOfResources,
	    cudaErrorInvalidConfiguration,
	    cudaErrorInvalidMemcpyDirection,
	    cudaErrorInsufficientDriver,
	    cudaErrorNoDevice,
	    cudaErrorInvalidDevice,
	    cudaErrorInvalidDeviceFunction,
	    cudaErrorInvalidResourceHandle,
	    cudaErrorNotReady,
	    cudaErrorUnknown,
	    (cudaError_t)12345,
	};
	__typeof__(cudaGetErrorString) *real_string;
	__typeof__(cudaGetErrorName) *real_name;
	char path[PATH_MAX];
	void *real;

	snprintf(path, sizeof(path), "%s/lib64/libcudart.so.13",
		 getenv("CUDA_HOME") ? getenv("CUDA_HOME") : "/usr/local/cuda");
	real = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!real)
		SKIP("no real libcudart: %s", dlerror());
	*(void **)&real_string = dlsym(real, "cudaGetErrorString");
	*(void **)&real_name = dlsym(real, "cudaGetErrorName");
	ASSERT(real_string && real_name);
	load_runtime(NULL);
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		ASSERT_STR_EQ(rt.error_string(codes[i]), real_string(codes[i]));
		ASSERT_STR_EQ(rt.error_name(codes[i]), real_name(codes[i]));
	}
}

/* FAKEGPU_DEVICES devices, H200-like; work on device 1 is recorded there. */
TEST(fakecuda_devices)
{
	const char *env[] = {"FAKEGPU_DEVICES=2", NULL};
	const char *path = load_runtime(env);
	struct cudaDeviceProp prop;
	json_t *log, *k;
	int n = 0;

	ASSERT_EQ(rt.device_count(&n), cudaSuccess);
	ASSERT_EQ(n, 2);
	ASSERT_EQ(rt.device_props(&prop, 1), cudaSuccess);
	ASSERT_STR_EQ(prop.name, "NVIDIA H200");
	ASSERT_EQ(prop.major, 9);
	ASSERT_EQ(prop.minor, 0);
	ASSERT_EQ(prop.multiProcessorCount, 132);
	ASSERT_EQ(prop.warpSize, 32);
	ASSERT_GT(prop.totalGlobalMem, 140ull << 30);
	ASSERT_EQ(prop.maxThreadsDim[2], 64);
	ASSERT_EQ(prop.sharedMemPerBlockOptin, 227u << 10);
	ASSERT_EQ(prop.pciBusID, 0x1a); /* each device on its own bus */
	ASSERT_EQ(prop.uuid.bytes[0], 0x41);
	ASSERT_EQ(rt.device_props(&prop, 2), cudaErrorInvalidDevice);
	ASSERT_EQ(rt.set_device(2), cudaErrorInvalidDevice);
	ASSERT_EQ(rt.set_device(1), cudaSuccess);
	ASSERT_EQ(launch(kernel_fast, 1, 32, NULL), cudaSuccess);
	ASSERT_EQ(rt.device_sync(), cudaSuccess);
	log = gtlog_load(path);
	k = kernels_by_corr(log);
	ASSERT_EQ(json_array_size(k), 1);
	ASSERT_EQ(gtlog_int(KERNEL(k, 0), "device"), 1);
	json_decref(k);
	json_decref(log);
}

/* Names holding quotes, backslashes, control bytes and invalid UTF-8 keep the log valid JSON. */
TEST(fakecuda_log_escapes_names)
{
	const char *path = load_runtime(NULL);
	static char fatbin[16];
	json_t *log, *k;

	rt.register_function(rt.register_fatbin(fatbin), (const char *)&stub_sink, "odd",
			     "q\"b\\c\x01\n\xff\xc3\xa9", -1, NULL, NULL, NULL, NULL, NULL);
	ASSERT_EQ(launch((void (*)(void)) & stub_sink, 1, 1, NULL), cudaSuccess);
	ASSERT_EQ(rt.device_sync(), cudaSuccess);
	log = gtlog_load(path);
	ASSERT(log);
	k = kernels_by_corr(log);
	ASSERT_STR_EQ(gtlog_str(KERNEL(k, 0), "name"), "q\"b\\c\x01\n\xef\xbf\xbd\xc3\xa9");
	json_decref(k);
	json_decref(log);
}
