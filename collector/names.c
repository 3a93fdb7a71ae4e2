/*
 * Names: API functions by CUPTI callback id (the loaded CUPTI's cuptiGetCallbackName, or a
 * built-in table of common entry points) in the forms TRACE_FORMAT.md asks for, and kernel
 * names demangled once each. Used by the collector thread (and unit tests) only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/internal.h"
#include "common/config.h"
#include "common/demangle.h"

/*
 * The built-in names, for a CUPTI without cuptiGetCallbackName: the enum's own suffixes, so
 * they read exactly as CUPTI's names do ("cudaMalloc_v3020").
 */
#define RT(x)  [CUPTI_RUNTIME_TRACE_CBID_##x] = #x
#define DRV(x) [CUPTI_DRIVER_TRACE_CBID_##x] = #x

static const char *const runtime_table[CUPTI_RUNTIME_TRACE_CBID_SIZE] = {
    RT(cudaDriverGetVersion_v3020),
    RT(cudaRuntimeGetVersion_v3020),
    RT(cudaGetDeviceCount_v3020),
    RT(cudaGetLastError_v3020),
    RT(cudaPeekAtLastError_v3020),
    RT(cudaGetErrorString_v3020),
    RT(cudaSetDevice_v3020),
    RT(cudaGetDevice_v3020),
    RT(cudaMalloc_v3020),
    RT(cudaFree_v3020),
    RT(cudaMallocHost_v3020),
    RT(cudaFreeHost_v3020),
    RT(cudaHostAlloc_v3020),
    RT(cudaMemcpy_v3020),
    RT(cudaMemcpy2D_v3020),
    RT(cudaMemcpyToSymbol_v3020),
    RT(cudaMemcpyFromSymbol_v3020),
    RT(cudaMemcpyAsync_v3020),
    RT(cudaMemcpy2DAsync_v3020),
    RT(cudaMemset_v3020),
    RT(cudaMemsetAsync_v3020),
    RT(cudaStreamCreate_v3020),
    RT(cudaStreamSynchronize_v3020),
    RT(cudaStreamQuery_v3020),
    RT(cudaEventCreate_v3020),
    RT(cudaEventCreateWithFlags_v3020),
    RT(cudaEventRecord_v3020),
    RT(cudaEventDestroy_v3020),
    RT(cudaEventSynchronize_v3020),
    RT(cudaEventQuery_v3020),
    RT(cudaStreamWaitEvent_v3020),
    RT(cudaMemcpyPeer_v4000),
    RT(cudaMemcpyPeerAsync_v4000),
    RT(cudaDeviceSynchronize_v3020),
    RT(cudaProfilerStart_v4000),
    RT(cudaProfilerStop_v4000),
    RT(cudaStreamCreateWithFlags_v5000),
    RT(cudaStreamDestroy_v5050),
    RT(cudaStreamCreateWithPriority_v5050),
    RT(cudaMallocManaged_v6000),
    RT(cudaGetErrorName_v6050),
    RT(cudaLaunchKernel_v7000),
    RT(cudaLaunchKernel_ptsz_v7000),
    RT(cudaMemcpy_ptds_v7000),
    RT(cudaMemcpyAsync_ptsz_v7000),
    RT(cudaMemset_ptds_v7000),
    RT(cudaMemsetAsync_ptsz_v7000),
    RT(cudaStreamSynchronize_ptsz_v7000),
    RT(cudaEventRecord_ptsz_v7000),
    RT(cudaStreamWaitEvent_ptsz_v7000),
    RT(cudaLaunchCooperativeKernel_v9000),
    RT(cudaLaunchHostFunc_v10000),
    RT(cudaGraphLaunch_v10000),
    RT(cudaMallocAsync_v11020),
    RT(cudaMallocAsync_ptsz_v11020),
    RT(cudaFreeAsync_v11020),
    RT(cudaFreeAsync_ptsz_v11020),
    RT(cudaLaunchKernelExC_v11060),
    RT(cudaLaunchKernelExC_ptsz_v11060),
    RT(cudaGetDeviceProperties_v12000),
    RT(cudaFuncGetName_v12030),
    RT(cudaEventElapsedTime_v12080),
    RT(__cudaRegisterFatBinary_v13000),
    RT(__cudaRegisterFatBinaryEnd_v13000),
    RT(__cudaUnregisterFatBinary_v13000),
    RT(__cudaRegisterVar_v13000),
    RT(__cudaRegisterFunction_v13000),
    RT(__cudaInitModule_v13000),
    RT(__cudaPushCallConfiguration_v13000),
    RT(__cudaPopCallConfiguration_v13000),
    RT(__cudaGetKernel_v13000),
    RT(__cudaLaunchKernel_v13000),
    RT(__cudaLaunchKernel_ptsz_v13000),
};

static const char *const driver_table[CUPTI_DRIVER_TRACE_CBID_SIZE] = {
    DRV(cuInit),
    DRV(cuDriverGetVersion),
    DRV(cuDeviceGet),
    DRV(cuDeviceGetCount),
    DRV(cuCtxSynchronize),
    DRV(cuModuleLoadData),
    DRV(cuModuleUnload),
    DRV(cuModuleGetFunction),
    DRV(cuMemFreeHost),
    DRV(cuMemHostAlloc),
    DRV(cuEventRecord),
    DRV(cuStreamSynchronize),
    DRV(cuMemsetD8Async),
    DRV(cuMemsetD32Async),
    DRV(cuMemAlloc_v2),
    DRV(cuMemFree_v2),
    DRV(cuMemsetD8_v2),
    DRV(cuMemsetD32_v2),
    DRV(cuMemcpyHtoD_v2),
    DRV(cuMemcpyHtoDAsync_v2),
    DRV(cuMemcpyDtoH_v2),
    DRV(cuMemcpyDtoHAsync_v2),
    DRV(cuMemcpyDtoD_v2),
    DRV(cuMemAllocHost_v2),
    DRV(cuStreamWaitEvent),
    DRV(cuCtxSetCurrent),
    DRV(cuCtxGetCurrent),
    DRV(cuMemcpy),
    DRV(cuMemcpyAsync),
    DRV(cuLaunchKernel),
    DRV(cuDevicePrimaryCtxRetain),
    DRV(cuLaunchKernel_ptsz),
    DRV(cuLaunchCooperativeKernel),
    DRV(cuGraphLaunch),
    DRV(cuMemAllocAsync),
    DRV(cuMemFreeAsync),
    DRV(cuGetProcAddress),
    DRV(cuLaunchKernelEx),
    DRV(cuLaunchKernelEx_ptsz),
    DRV(cuGetProcAddress_v2),
    DRV(cuLibraryLoadData),
    DRV(cuLibraryGetKernel),
};

/* Public names that queue work CUPTI reports as a record, and the GPROF_ACTIVITIES bit of it. */
static const struct {
	const char *prefix;
	unsigned act;
} launch_prefixes[] = {
    {"cudaLaunchKernel", GPROF_ACT_KERNEL},
    {"cudaLaunchCooperativeKernel", GPROF_ACT_KERNEL},
    {"cudaGraphLaunch", GPROF_ACT_KERNEL},
    {"cudaMemcpy", GPROF_ACT_MEMCPY},
    {"cudaMemset", GPROF_ACT_MEMSET},
    {"cuLaunchKernel", GPROF_ACT_KERNEL},
    {"cuLaunchCooperativeKernel", GPROF_ACT_KERNEL},
    {"cuGraphLaunch", GPROF_ACT_KERNEL},
    {"cuMemcpy", GPROF_ACT_MEMCPY},
    {"cuMemset", GPROF_ACT_MEMSET},
};

/*
 * The calls GPROF_API_CALLS=lean leaves out (README.md lists them): they queue no GPU work and
 * wait for none; they ask for or set state, and a framework makes thousands of them per step
 * (PyTorch: cudaGetDevice and cuDevicePrimaryCtxGetState around every operator). Kineto leaves
 * out the runtime's first six, and writes no driver call but the launches.
 */
static const char *const quiet_names[] = {
    "cudaGetDevice",
    "cudaSetDevice",
    "cudaGetLastError",
    "cudaEventCreate",
    "cudaEventCreateWithFlags",
    "cudaEventDestroy",
    "cudaPeekAtLastError",
    "cudaGetDeviceCount",
    "cudaDeviceGetAttribute",
    "cudaGetErrorString",
    "cudaGetErrorName",
    "cudaStreamIsCapturing",
    "cudaStreamGetCaptureInfo",
    "cudaThreadExchangeStreamCaptureMode",
    "cudaGetFuncBySymbol",
    "cudaFuncGetAttributes",
    "cudaPointerGetAttributes",
    "cudaDriverGetVersion",
    "cudaRuntimeGetVersion",
    "cuDevicePrimaryCtxGetState",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuCtxGetDevice",
    "cuCtxGetLimit",
    "cuCtxGetFlags",
    "cuDeviceGet",
    "cuDeviceGetCount",
    "cuDeviceGetAttribute",
    "cuDriverGetVersion",
    "cuKernelGetAttribute",
    "cuKernelSetAttribute",
    "cuKernelGetFunction",
    "cuFuncGetAttribute",
    "cuFuncSetAttribute",
    "cuLibraryGetKernel",
    "cuModuleGetFunction",
    "cuGetProcAddress",
    "cuStreamIsCapturing",
    "cuStreamGetCaptureInfo",
    "cuThreadExchangeStreamCaptureMode",
    "cuPointerGetAttribute",
    "cuPointerGetAttributes",
    "cuGetErrorString",
    "cuGetErrorName",
};

/* Set when CUPTI is loaded, before the collector thread starts. */
static gprof_coll_cbname_fn cbname;
static bool keep_all;

/* Resolved names by domain and cbid, made on first use (collector thread only). */
static struct gprof_coll_api runtime_names[CUPTI_RUNTIME_TRACE_CBID_SIZE];
static struct gprof_coll_api driver_names[CUPTI_DRIVER_TRACE_CBID_SIZE];

void gprof_coll_names_use(gprof_coll_cbname_fn fn)
{
	cbname = fn;
}

void gprof_coll_names_keep_all(bool all)
{
	keep_all = all;
}

bool gprof_coll_name_quiet(const char *pub)
{
	for (size_t i = 0; i < ARRAY_SIZE(quiet_names); i++)
		if (!strcmp(pub, quiet_names[i]))
			return true;
	return false;
}

static bool ends_with(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len >= n && !memcmp(s + len - n, suffix, n);
}

/* Length of s without a trailing "_v<digits>" of at least min_digits digits. */
static size_t drop_version(const char *s, size_t len, size_t min_digits)
{
	size_t d = 0;

	while (d < len && s[len - 1 - d] >= '0' && s[len - 1 - d] <= '9')
		d++;
	if (d >= min_digits && d && len >= d + 2 && s[len - d - 1] == 'v' && s[len - d - 2] == '_')
		return len - d - 2;
	return len;
}

void gprof_coll_clean_name(const char *cupti_name, char *api, char *pub, size_t size)
{
	const char *s = cupti_name ? cupti_name : "";
	/* Runtime tags are CUDA versions (_v3020, _v13000); the driver's _v2 is in the symbol. */
	size_t len = drop_version(s, strlen(s), 4);

	snprintf(api, size, "%.*s", (int)len, s);
	if (!strncmp(s, "__", 2))
		s += 2, len -= 2;
	if (ends_with(s, len, "_ptsz") || ends_with(s, len, "_ptds"))
		len -= 5;
	len = drop_version(s, len, 1);
	snprintf(pub, size, "%.*s", (int)len, s);
}

unsigned gprof_coll_name_launches(const char *pub)
{
	for (size_t i = 0; i < ARRAY_SIZE(launch_prefixes); i++) {
		const char *p = launch_prefixes[i].prefix;

		if (!strncmp(pub, p, strlen(p)))
			return launch_prefixes[i].act;
	}
	return 0;
}

/* CUPTI's name for the id, then the table's, then a made-up one. */
static void raw_name(bool driver, uint32_t cbid, char *out, size_t size)
{
	const char *s = NULL;
	CUpti_CallbackDomain d = driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;

	if (cbname && cbname(d, cbid, &s) != CUPTI_SUCCESS)
		s = NULL;
	if (!s && driver && cbid < ARRAY_SIZE(driver_table))
		s = driver_table[cbid];
	if (!s && !driver && cbid < ARRAY_SIZE(runtime_table))
		s = runtime_table[cbid];
	if (s && *s)
		snprintf(out, size, "%s", s);
	else
		snprintf(out, size, "%s#%u", driver ? "cuDriverApi" : "cudaRuntimeApi", cbid);
}

static void resolve(struct gprof_coll_api *a, bool driver, uint32_t cbid)
{
	char raw[256], api[256], pub[256];

	raw_name(driver, cbid, raw, sizeof(raw));
	gprof_coll_clean_name(raw, api, pub, sizeof(api));
	a->launches = gprof_coll_name_launches(pub);
	a->quiet = !keep_all && gprof_coll_name_quiet(pub);
	a->api = gprof_export_intern(api);
	a->name = gprof_export_intern(pub);
}

const struct gprof_coll_api *gprof_coll_api_name(bool driver, uint32_t cbid)
{
	static struct gprof_coll_api beyond; /* an id newer than our headers: not cached */
	struct gprof_coll_api *a = &beyond;

	if (driver && cbid < ARRAY_SIZE(driver_names))
		a = &driver_names[cbid];
	else if (!driver && cbid < ARRAY_SIZE(runtime_names))
		a = &runtime_names[cbid];
	if (!a->name || a == &beyond)
		resolve(a, driver, cbid);
	return a;
}

/* Kernel names: the raw name's key -> its entry; a key collision just skips the cache. */
struct kname {
	const struct gprof_export_str *name;
	char raw[];
};

static struct gprof_map knames;

static void remember(uint64_t h, const char *raw, const struct gprof_export_str *name)
{
	size_t len = strlen(raw);
	struct kname *k;

	k = malloc(sizeof(*k) + len + 1);
	if (!k)
		return;
	k->name = name;
	memcpy(k->raw, raw, len + 1);
	if (gprof_map_set(&knames, h, (uintptr_t)k))
		free(k);
}

const struct gprof_export_str *gprof_coll_kernel_name(const char *raw)
{
	char buf[GPROF_EXPORT_STR_MAX];
	const struct gprof_export_str *name;
	uint64_t h, v;

	raw = raw ? raw : "";
	h = gprof_map_key_bytes(raw, strlen(raw), 0);
	if (gprof_map_get(&knames, h, &v)) {
		const struct kname *k = (const struct kname *)(uintptr_t)v;

		if (!strcmp(k->raw, raw))
			return k->name;
		return gprof_export_intern(gprof_demangle(raw, buf, sizeof(buf)));
	}
	name = gprof_export_intern(gprof_demangle(raw, buf, sizeof(buf)));
	remember(h, raw, name);
	return name;
}
