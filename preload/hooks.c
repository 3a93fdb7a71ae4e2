/*
 * The CUDA runtime entry points libgprof interposes, one function each (the table is
 * GPROF_HOOKS). Outside a window each hook does two loads (its real function and gprof_hot)
 * and a branch, then forwards. Inside, it times the real call and writes its arguments into
 * an event it reserves in the export buffer (a launch's: a 64-byte call record), in the window
 * the session says, unless CUPTI already records all the hooks could write of it. Every hook
 * returns exactly what the runtime returned and leaves errno as it was.
 */
#include <errno.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include <cuda_profiler_api.h>

#include "common/clock.h"
#include "export/export.h"
#include "preload/preload.h"

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

/*
 * gprof_hot was not 0: the session takes the process's first CUDA call and pending signals
 * (they may open a window); then the call is recorded when a window is. Returns -1 when not,
 * else what the hooks write of it (gprof_events_writes). Out of line: inlined, it made every
 * hook save one register more on its idle path.
 */
static __attribute__((noinline)) int call_begin(enum gprof_hook h, uint64_t hot)
{
	if (in_hook)
		return -1;
	if (unlikely(hot & GPROF_HOT_SESSION)) {
		gprof_session_cuda_call(true);
		hot = gprof_hot_load();
	}
	if (!gprof_hot_window(hot))
		return -1;
	in_hook = 1;
	return (int)gprof_events_writes(h);
}

/* A call the session wants: timed when the hooks write anything of it (writes not 0). */
static inline void call_start(struct gprof_hooked_call *c, enum gprof_hook h, int writes)
{
	c->hook = h;
	c->writes = (unsigned)writes;
	if (writes)
		c->start_ns = gprof_hook_ns();
}

/* The end, never before the start (the two readings may straddle the clock's calibration). */
static inline void call_end(struct gprof_hooked_call *c)
{
	if (c->writes) {
		uint64_t end = gprof_hook_ns();

		c->end_ns = end > c->start_ns ? end : c->start_ns;
	}
}

/*
 * The call's event in `window` (0: none), reserved with all but the family's arguments set
 * (gprof_events_api), to complete and commit; NULL when there is none (no window, or the
 * buffer is full).
 */
static inline struct gprof_export_event *api_event(uint32_t window,
						   const struct gprof_hooked_call *c)
{
	struct gprof_export_event *e;

	if (!window || !(e = gprof_export_reserve(window)))
		return NULL;
	return gprof_events_api(e, window, c);
}

/*
 * After the real call: the session gets the call, and the memory change an allocation or a
 * free made (mem_ptr); returns the call's event (api_event), NULL also when the hooks write
 * no API event of it.
 */
static inline struct gprof_export_event *call_event(const struct gprof_hooked_call *c,
						    const void *mem_ptr, size_t mem_bytes)
{
	return api_event(gprof_session_call(c, mem_ptr, mem_bytes), c);
}

/* The end of a hook that went to the session: errno as the real call left it. */
static inline cudaError_t call_done(const struct gprof_hooked_call *c, int saved_errno)
{
	in_hook = 0;
	errno = saved_errno;
	return (cudaError_t)c->result;
}

/* A hooked symbol whose runtime can't be found: the call fails as it would with no driver. */
#define MISSING cudaErrorInsufficientDriver

/*
 * The start of the hook of `sym`: its runtime definition `fn` is called at once when the
 * process is idle (one load and a branch) or the session does not want the call; otherwise
 * `before` runs (it may read `writes`), the call is timed into c and the hook goes on to
 * describe it.
 */
#define CALL_REAL_AFTER(c, sym, before, ...)                                                       \
	__typeof__(&sym) fn = (__typeof__(&sym))real_fn(GPROF_HOOK_##sym);                         \
	uint64_t hot;                                                                              \
	int writes;                                                                                \
                                                                                                   \
	if (unlikely(!fn))                                                                         \
		return MISSING;                                                                    \
	if (likely(!(hot = gprof_hot_load())) || (writes = call_begin(GPROF_HOOK_##sym, hot)) < 0) \
		return fn(__VA_ARGS__);                                                            \
	before;                                                                                    \
	call_start(&(c), GPROF_HOOK_##sym, writes);                                                \
	(c).result = fn(__VA_ARGS__);                                                              \
	call_end(&(c))

/* A parenthesised list of names, bare. */
#define NAMES(...) __VA_ARGS__

/*
 * The hook of `sym`, with its parameters and their names, each list in parentheses: it runs
 * `before` (which may read `writes`) when the session wants the call, times the call into c
 * and returns `done`, the family's description of it (an expression of c and the arguments).
 * (An entry that forwards an idle call by a tail call, with the rest out of line, halved the
 * idle cost and added 5 to 7 ns to every recorded launch: docs/PERFORMANCE.md.)
 */
#define HOOK(sym, params, names, before, done)                \
	GPROF_EXPORT cudaError_t sym params                   \
	{                                                     \
		struct gprof_hooked_call c;                   \
                                                              \
		CALL_REAL_AFTER(c, sym, before, NAMES names); \
		return done;                                  \
	}

/* Before a free whose memory change the hooks write: the size of what it frees, while it is. */
static inline void before_free(int writes, const void *ptr)
{
	if (writes & GPROF_ACT_MEMORY)
		gprof_memory_before_free(ptr);
}

/*
 * What each family's event shows (its GPROF_EXPORT_ARG_* flags), written into the event
 * call_event reserved, then committed. The rest of u.api stays as gprof_events_api set it.
 */

/* dim3 is x, y, z as unsigned: the event's grid and block take it whole. */
_Static_assert(sizeof(dim3) == 3 * sizeof(uint32_t), "dim3 is three 32-bit fields");

/*
 * A launch's event: a call record, half an event's bytes (what the hooks write most), unless
 * its duration, result or dimensions need the whole event. Inline in each launch hook: out of
 * line, it cost about 20 instructions more per launch.
 */
static inline __attribute__((always_inline)) cudaError_t
launch_done(const struct gprof_hooked_call *c, const void *func, dim3 grid, dim3 block, size_t smem,
	    cudaStream_t s)
{
	int saved_errno = errno;
	uint32_t window = gprof_session_call(c, NULL, 0);
	struct gprof_export_event *e;
	struct gprof_export_call *r;

	if (window && gprof_export_call_fits(c->end_ns - c->start_ns, c->result,
					     grid.y | grid.z | block.x | block.y | block.z)) {
		if ((r = gprof_events_call(gprof_export_reserve_call(window), window, c))) {
			r->kernel = gprof_kernel_name(func);
			r->stream = (uintptr_t)s;
			r->grid_x = grid.x;
			r->grid_yz[0] = (uint16_t)grid.y;
			r->grid_yz[1] = (uint16_t)grid.z;
			r->block[0] = (uint16_t)block.x;
			r->block[1] = (uint16_t)block.y;
			r->block[2] = (uint16_t)block.z;
			r->shared_bytes = (uint32_t)smem;
			gprof_export_commit_call();
		}
	} else if ((e = api_event(window, c))) {
		e->u.api.kernel = gprof_kernel_name(func);
		memcpy(e->u.api.grid, &grid, sizeof(grid));
		memcpy(e->u.api.block, &block, sizeof(block));
		e->u.api.shared_bytes = (uint32_t)smem;
		e->u.api.stream = (uintptr_t)s;
		gprof_export_commit();
	}
	return call_done(c, saved_errno);
}

/* Without a configuration, the dimensions, shared memory and stream are 0. */
static inline cudaError_t launch_ex_done(const struct gprof_hooked_call *c,
					 const cudaLaunchConfig_t *cfg, const void *func)
{
	static const cudaLaunchConfig_t none;
	const cudaLaunchConfig_t *f = cfg ? cfg : &none;

	return launch_done(c, func, f->gridDim, f->blockDim, f->dynamicSmemBytes, f->stream);
}

/*
 * The memory families' arguments (u.api's pointer, bytes, copy kind and stream), written whole:
 * what a family does not show stays zero, as gprof_events_api left it.
 */
static inline void put_memory_args(struct gprof_export_event *e, const void *ptr, size_t bytes,
				   uint8_t kind, cudaStream_t s)
{
	if (e) {
		e->u.api.ptr = (uintptr_t)ptr;
		e->u.api.bytes = bytes;
		e->u.api.copy_kind = kind;
		e->u.api.stream = (uintptr_t)s;
		gprof_export_commit();
	}
}

static inline cudaError_t alloc_done(const struct gprof_hooked_call *c, void **dst, size_t size,
				     cudaStream_t s)
{
	int saved_errno = errno;
	void *ptr = (c->writes && c->result == cudaSuccess && dst) ? *dst : NULL;

	put_memory_args(call_event(c, ptr, size), ptr, size, GPROF_COPY_UNKNOWN, s);
	return call_done(c, saved_errno);
}

static inline cudaError_t free_done(const struct gprof_hooked_call *c, void *ptr, cudaStream_t s)
{
	int saved_errno = errno;

	put_memory_args(call_event(c, c->result == cudaSuccess ? ptr : NULL, 0), ptr, 0,
			GPROF_COPY_UNKNOWN, s);
	return call_done(c, saved_errno);
}

/*
 * The trace's copy kind (CUPTI's vocabulary) for the runtime's cudaMemcpyKind. The direction of a
 * cudaMemcpyDefault copy is known to the runtime, from the pointers, not to the hooks: "Unknown".
 */
static uint8_t copy_kind(enum cudaMemcpyKind kind)
{
	switch (kind) {
	case cudaMemcpyHostToHost:
		return GPROF_COPY_HTOH;
	case cudaMemcpyHostToDevice:
		return GPROF_COPY_HTOD;
	case cudaMemcpyDeviceToHost:
		return GPROF_COPY_DTOH;
	case cudaMemcpyDeviceToDevice:
		return GPROF_COPY_DTOD;
	default:
		return GPROF_COPY_UNKNOWN;
	}
}

static inline cudaError_t copy_done(const struct gprof_hooked_call *c, size_t count,
				    enum cudaMemcpyKind kind, cudaStream_t s)
{
	int saved_errno = errno;
	struct gprof_export_event *e = call_event(c, NULL, 0);

	if (e) {
		e->u.api.bytes = count;
		e->u.api.copy_kind = copy_kind(kind);
		e->u.api.stream = (uintptr_t)s;
		gprof_export_commit();
	}
	return call_done(c, saved_errno);
}

static inline cudaError_t set_done(const struct gprof_hooked_call *c, void *dst, size_t count,
				   cudaStream_t s)
{
	int saved_errno = errno;

	put_memory_args(call_event(c, NULL, 0), dst, count, GPROF_COPY_UNKNOWN, s);
	return call_done(c, saved_errno);
}

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

/*
 * The hooks by family: one definition each, which the entry points of its per-thread default
 * stream forms (_ptsz, _ptds) share.
 */

/* Launches with a kernel and its grid, block, shared memory and stream. */
#define LAUNCH_HOOK(sym, func_t)                                                                  \
	HOOK(sym, (func_t func, dim3 grid, dim3 block, void **args, size_t smem, cudaStream_t s), \
	     (func, grid, block, args, smem, s), (void)0,                                         \
	     launch_done(&c, (const void *)func, grid, block, smem, s))
LAUNCH_HOOK(cudaLaunchKernel, const void *)
LAUNCH_HOOK(cudaLaunchKernel_ptsz, const void *)
LAUNCH_HOOK(__cudaLaunchKernel, cudaKernel_t)
LAUNCH_HOOK(__cudaLaunchKernel_ptsz, cudaKernel_t)

/* Launches from a cudaLaunchConfig_t. */
#define LAUNCH_EX_HOOK(sym)                                                       \
	HOOK(sym, (const cudaLaunchConfig_t *cfg, const void *func, void **args), \
	     (cfg, func, args), (void)0, launch_ex_done(&c, cfg, func))
LAUNCH_EX_HOOK(cudaLaunchKernelExC)
LAUNCH_EX_HOOK(cudaLaunchKernelExC_ptsz)

/* Device memory; a free's size is taken before it frees. */
HOOK(cudaMalloc, (void **dst, size_t size), (dst, size), (void)0, alloc_done(&c, dst, size, NULL))
HOOK(cudaFree, (void *ptr), (ptr), before_free(writes, ptr), free_done(&c, ptr, NULL))

#define ALLOC_ASYNC_HOOK(sym)                                                         \
	HOOK(sym, (void **dst, size_t size, cudaStream_t s), (dst, size, s), (void)0, \
	     alloc_done(&c, dst, size, s))
ALLOC_ASYNC_HOOK(cudaMallocAsync)
ALLOC_ASYNC_HOOK(cudaMallocAsync_ptsz)

#define FREE_ASYNC_HOOK(sym)                                                       \
	HOOK(sym, (void *ptr, cudaStream_t s), (ptr, s), before_free(writes, ptr), \
	     free_done(&c, ptr, s))
FREE_ASYNC_HOOK(cudaFreeAsync)
FREE_ASYNC_HOOK(cudaFreeAsync_ptsz)

/* Copies and memsets: the synchronous ones on the legacy default stream (NULL). */
#define COPY_HOOK(sym)                                                                  \
	HOOK(sym, (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind), \
	     (dst, src, count, kind), (void)0, copy_done(&c, count, kind, NULL))
COPY_HOOK(cudaMemcpy)
COPY_HOOK(cudaMemcpy_ptds)

#define COPY_ASYNC_HOOK(sym)                                                                       \
	HOOK(sym,                                                                                  \
	     (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t s), \
	     (dst, src, count, kind, s), (void)0, copy_done(&c, count, kind, s))
COPY_ASYNC_HOOK(cudaMemcpyAsync)
COPY_ASYNC_HOOK(cudaMemcpyAsync_ptsz)

#define SET_HOOK(sym)                                                                 \
	HOOK(sym, (void *dst, int value, size_t count), (dst, value, count), (void)0, \
	     set_done(&c, dst, count, NULL))
SET_HOOK(cudaMemset)
SET_HOOK(cudaMemset_ptds)

#define SET_ASYNC_HOOK(sym)                                                                     \
	HOOK(sym, (void *dst, int value, size_t count, cudaStream_t s), (dst, value, count, s), \
	     (void)0, set_done(&c, dst, count, s))
SET_ASYNC_HOOK(cudaMemsetAsync)
SET_ASYNC_HOOK(cudaMemsetAsync_ptsz)

/*
 * cudaProfilerStart and Stop tell the session first, idle or not (GPROF_TRIGGER=
 * cuda-profiler-api): a window a Start opens holds that call, one a Stop ends does not.
 */

static inline cudaError_t profiler_call(enum gprof_hook h, cudaError_t (*fn)(void))
{
	struct gprof_hooked_call c;
	struct gprof_export_event *e;
	uint64_t hot;
	int writes, saved_errno;

	if (unlikely(!fn))
		return MISSING;
	gprof_session_profiler_api(h == GPROF_HOOK_cudaProfilerStart);
	if (likely(!(hot = gprof_hot_load())) || (writes = call_begin(h, hot)) < 0)
		return fn();
	call_start(&c, h, writes);
	c.result = fn();
	call_end(&c);
	saved_errno = errno;
	e = call_event(&c, NULL, 0);
	if (e)
		gprof_export_commit();
	return call_done(&c, saved_errno);
}

GPROF_EXPORT cudaError_t cudaProfilerStart(void)
{
	return profiler_call(GPROF_HOOK_cudaProfilerStart, real_fn(GPROF_HOOK_cudaProfilerStart));
}

GPROF_EXPORT cudaError_t cudaProfilerStop(void)
{
	return profiler_call(GPROF_HOOK_cudaProfilerStop, real_fn(GPROF_HOOK_cudaProfilerStop));
}
