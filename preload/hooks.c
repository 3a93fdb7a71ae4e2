/*
 * The CUDA runtime entry points libgprof interposes. Outside a window each hook does one load
 * and a branch, then forwards. Inside, it times the real call and hands its arguments to the
 * session, unless CUPTI already records the call. Every hook returns exactly what the runtime
 * returned and leaves errno as it was.
 */
#include <errno.h>
#include <cuda_runtime_api.h>
#include <cuda_profiler_api.h>

#include "collector/collector.h"
#include "common/config.h"
#include "preload/preload.h"

const struct gprof_hook_info gprof_hook_info[GPROF_HOOK_COUNT] = {
#define X(sym, name, id, fam)  \
	[GPROF_HOOK_##sym] = { \
	    .symbol = #sym, .public_name = name, .cbid = id, .family = GPROF_FAMILY_##fam},
    GPROF_HOOKS(X)
#undef X
};

/* The runtime's definitions, found on first use by any thread (a race only finds them twice). */
static void *real[GPROF_HOOK_COUNT];

/* Set while this thread is inside a hook: calls the runtime makes to itself are not ours. */
static GPROF_TLS int in_hook;

static void *real_fn(enum gprof_hook h)
{
	void *p = __atomic_load_n(&real[h], __ATOMIC_RELAXED);

	if (unlikely(!p)) {
		p = gprof_resolve(gprof_hook_info[h].symbol);
		__atomic_store_n(&real[h], p, __ATOMIC_RELAXED);
	}
	return p;
}

/* What the session may write from a call of each family, unless CUPTI records it. */
static const unsigned family_acts[] = {
    [GPROF_FAMILY_LAUNCH] = GPROF_ACT_API,
    [GPROF_FAMILY_ALLOC] = GPROF_ACT_API | GPROF_ACT_MEMORY,
    [GPROF_FAMILY_FREE] = GPROF_ACT_API | GPROF_ACT_MEMORY,
    [GPROF_FAMILY_COPY] = GPROF_ACT_API,
    [GPROF_FAMILY_SET] = GPROF_ACT_API,
    [GPROF_FAMILY_PROFILER] = GPROF_ACT_API,
};

/*
 * The record of a call CUPTI records: start_ns 0 tells the session it was not timed, so it
 * only does what every call in a window does (note the thread, the runtime's facts).
 */
static const struct gprof_api_call untimed[GPROF_HOOK_COUNT] = {
#define X(sym, name, id, fam) [GPROF_HOOK_##sym] = {.hook = GPROF_HOOK_##sym},
    GPROF_HOOKS(X)
#undef X
};

enum call_mode {
	CALL_FORWARD,
	CALL_UNTIMED,
	CALL_TIMED
};

/* What to do with this call; notes the process's first CUDA call. */
static enum call_mode call_begin(enum gprof_hook h)
{
	int hot = gprof_hot_load();

	if (in_hook)
		return CALL_FORWARD;
	if (hot & GPROF_HOT_FIRST_CALL)
		gprof_session_first_cuda_call();
	if (!gprof_session_recording())
		return CALL_FORWARD;
	in_hook = 1;
	if (!(family_acts[gprof_hook_info[h].family] & ~gprof_collector_covers()))
		return CALL_UNTIMED;
	return CALL_TIMED;
}

/* After the real call: the session gets the record, errno stays the program's. */
static void call_done(const struct gprof_api_call *c)
{
	int saved_errno = errno;

	gprof_session_api(c);
	in_hook = 0;
	errno = saved_errno;
}

/* A hooked symbol whose runtime can't be found: the call fails as it would with no driver. */
#define MISSING cudaErrorInsufficientDriver

/*
 * HOOK(sym, params, args, fill): defines `sym`. `fill` sets the call record's fields from the
 * arguments (and from `r`, the result) after the real call. A call CUPTI records is neither
 * timed nor described: the session writes nothing for it. cudaProfilerStart and Stop tell the
 * session first, idle or not (GPROF_TRIGGER=cuda-profiler-api): a window a Start opens holds
 * that call, one a Stop ends does not.
 */
#define HOOK(sym, params, args, fill)                                                              \
	GPROF_EXPORT cudaError_t sym params                                                        \
	{                                                                                          \
		typedef cudaError_t(*fn_t) params;                                                 \
		fn_t fn = (fn_t)real_fn(GPROF_HOOK_##sym);                                         \
		struct gprof_api_call c;                                                           \
		enum call_mode mode;                                                               \
		cudaError_t r;                                                                     \
                                                                                                   \
		if (unlikely(!fn))                                                                 \
			return MISSING;                                                            \
		if (GPROF_HOOK_##sym == GPROF_HOOK_cudaProfilerStart ||                            \
		    GPROF_HOOK_##sym == GPROF_HOOK_cudaProfilerStop)                               \
			gprof_session_profiler_api(GPROF_HOOK_##sym ==                             \
						   GPROF_HOOK_cudaProfilerStart);                  \
		if (likely(!gprof_hot_load()))                                                     \
			return fn args;                                                            \
		mode = call_begin(GPROF_HOOK_##sym);                                               \
		if (mode == CALL_FORWARD)                                                          \
			return fn args;                                                            \
		if (mode == CALL_UNTIMED) {                                                        \
			r = fn args;                                                               \
			call_done(&untimed[GPROF_HOOK_##sym]);                                     \
			return r;                                                                  \
		}                                                                                  \
		c = (struct gprof_api_call){.hook = GPROF_HOOK_##sym, .start_ns = gprof_now_ns()}; \
		r = fn args;                                                                       \
		c.end_ns = gprof_now_ns();                                                         \
		c.result = r;                                                                      \
		fill;                                                                              \
		call_done(&c);                                                                     \
		return r;                                                                          \
	}

#define DIM3(dst, d) ((dst)[0] = (d).x, (dst)[1] = (d).y, (dst)[2] = (d).z)

#define LAUNCH(sym, ftype)                                                                       \
	HOOK(sym, (ftype func, dim3 grid, dim3 block, void **args, size_t smem, cudaStream_t s), \
	     (func, grid, block, args, smem, s),                                                 \
	     (c.func = (const void *)func, DIM3(c.grid, grid), DIM3(c.block, block),             \
	      c.bytes = smem, c.stream = s))

#define LAUNCH_EX(sym)                                                                          \
	HOOK(sym, (const cudaLaunchConfig_t *cfg, const void *func, void **args),               \
	     (cfg, func, args),                                                                 \
	     (c.func = func, cfg ? (DIM3(c.grid, cfg->gridDim), DIM3(c.block, cfg->blockDim),   \
				    c.bytes = cfg->dynamicSmemBytes, c.stream = cfg->stream, 0) \
				 : 0))

#define COPY(sym, params, args, strm) \
	HOOK(sym, params, args,       \
	     (c.ptr = dst, c.src = src, c.bytes = count, c.copy_kind = kind, c.stream = strm))

#define SET(sym, params, args, strm) \
	HOOK(sym, params, args, (c.ptr = dst, c.value = value, c.bytes = count, c.stream = strm))

#define ALLOC(sym, params, args, strm) \
	HOOK(sym, params, args,        \
	     (c.ptr = (r == cudaSuccess && dst) ? *dst : NULL, c.bytes = size, c.stream = strm))

#define FREE(sym, params, args, strm) HOOK(sym, params, args, (c.ptr = dst, c.stream = strm))

/* The runtime header maps these names to their _ptsz/_ptds forms in some builds. */
#undef cudaLaunchKernel
#undef cudaLaunchKernelExC
#undef cudaMemcpy
#undef cudaMemcpyAsync
#undef cudaMemset
#undef cudaMemsetAsync
#undef cudaMallocAsync
#undef cudaFreeAsync

/* Declared here: nvcc's headers declare them only for device-code compilation. */
GPROF_EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t, dim3, dim3, void **, size_t,
					    cudaStream_t);
GPROF_EXPORT cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t, dim3, dim3, void **, size_t,
						 cudaStream_t);
GPROF_EXPORT cudaError_t cudaLaunchKernel_ptsz(const void *, dim3, dim3, void **, size_t,
					       cudaStream_t);
GPROF_EXPORT cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *, const void *,
						  void **);
GPROF_EXPORT cudaError_t cudaMemcpy_ptds(void *, const void *, size_t, enum cudaMemcpyKind);
GPROF_EXPORT cudaError_t cudaMemcpyAsync_ptsz(void *, const void *, size_t, enum cudaMemcpyKind,
					      cudaStream_t);
GPROF_EXPORT cudaError_t cudaMemset_ptds(void *, int, size_t);
GPROF_EXPORT cudaError_t cudaMemsetAsync_ptsz(void *, int, size_t, cudaStream_t);
GPROF_EXPORT cudaError_t cudaMallocAsync_ptsz(void **, size_t, cudaStream_t);
GPROF_EXPORT cudaError_t cudaFreeAsync_ptsz(void *, cudaStream_t);

LAUNCH(cudaLaunchKernel, const void *)
LAUNCH(cudaLaunchKernel_ptsz, const void *)
LAUNCH(__cudaLaunchKernel, cudaKernel_t)
LAUNCH(__cudaLaunchKernel_ptsz, cudaKernel_t)
LAUNCH_EX(cudaLaunchKernelExC)
LAUNCH_EX(cudaLaunchKernelExC_ptsz)

ALLOC(cudaMalloc, (void **dst, size_t size), (dst, size), NULL)
ALLOC(cudaMallocAsync, (void **dst, size_t size, cudaStream_t s), (dst, size, s), s)
ALLOC(cudaMallocAsync_ptsz, (void **dst, size_t size, cudaStream_t s), (dst, size, s), s)
FREE(cudaFree, (void *dst), (dst), NULL)
FREE(cudaFreeAsync, (void *dst, cudaStream_t s), (dst, s), s)
FREE(cudaFreeAsync_ptsz, (void *dst, cudaStream_t s), (dst, s), s)

COPY(cudaMemcpy, (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind),
     (dst, src, count, kind), NULL)
COPY(cudaMemcpy_ptds, (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind),
     (dst, src, count, kind), NULL)
COPY(cudaMemcpyAsync,
     (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t s),
     (dst, src, count, kind, s), s)
COPY(cudaMemcpyAsync_ptsz,
     (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t s),
     (dst, src, count, kind, s), s)

SET(cudaMemset, (void *dst, int value, size_t count), (dst, value, count), NULL)
SET(cudaMemset_ptds, (void *dst, int value, size_t count), (dst, value, count), NULL)
SET(cudaMemsetAsync, (void *dst, int value, size_t count, cudaStream_t s), (dst, value, count, s),
    s)
SET(cudaMemsetAsync_ptsz, (void *dst, int value, size_t count, cudaStream_t s),
    (dst, value, count, s), s)

HOOK(cudaProfilerStart, (void), (), (void)0)
HOOK(cudaProfilerStop, (void), (), (void)0)
