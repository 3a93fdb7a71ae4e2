/*
 * preload/'s internal interface: what the NVTX layer and the CUDA hooks hand to the session
 * (preload/session.c), which owns the stepper and the current window.
 */
#ifndef GPROF_PRELOAD_H
#define GPROF_PRELOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/compiler.h"

/* Bits of gprof_hot; zero means "forward and do nothing else" (the hooks' only check). */
enum {
	GPROF_HOT_RECORDING = 1 << 0, /* a window is in warmup or active: record host events */
	/*
	 * The next CUDA call goes to gprof_session_first_cuda_call(): set at the start (no CUDA
	 * call seen yet) and by the SIGUSR2 handler (a signal waits to be acted on).
	 */
	GPROF_HOT_FIRST_CALL = 1 << 1,
};

/* Written by the session on phase changes; read by every hook (one load and a branch). */
extern int gprof_hot;

static inline int gprof_hot_load(void)
{
	return __atomic_load_n(&gprof_hot, __ATOMIC_RELAXED);
}

/* Per-thread: the thread id, cached. */
int gprof_tid(void);

/* CLOCK_REALTIME in ns, CUPTI's default clock. */
uint64_t gprof_now_ns(void);

/* The session, called from the NVTX layer and the hooks. */
void gprof_session_first_cuda_call(void);
void gprof_session_step_marker(uint64_t ts_ns);
bool gprof_session_recording(void);
/* An NVTX event on thread tid (0: the calling thread). */
void gprof_session_nvtx(int tid, const char *domain, const char *msg, size_t len, uint64_t start_ns,
			uint64_t end_ns, bool is_mark);

/* NVTX: the marker the session matches against messages. */
bool gprof_nvtx_is_step(const char *msg, size_t len);

/*
 * GPROF_TRIGGER=cuda-profiler-api: cudaProfilerStart (start true) or cudaProfilerStop was
 * called; from their hooks, before the call is forwarded, whatever gprof_hot holds.
 */
void gprof_session_profiler_api(bool start);

/* For the timer thread (preload/trigger.c): its next deadline (UINT64_MAX: none), and acting. */
uint64_t gprof_session_deadline(void);
void gprof_session_tick(void);

/*
 * Triggers (preload/trigger.c). setup: from the constructor, what this process uses, and the
 * SIGUSR2 handler installed. start: at the first CUDA call, starts the timer thread. The rest
 * are for the session: SIGUSR2s received since the last call; a line if the program replaced
 * our handler (once); a deadline changed; exit; a child after fork().
 */
void gprof_trigger_setup(bool signal, bool timer);
void gprof_trigger_start(void);
unsigned gprof_trigger_take_signals(void);
void gprof_trigger_check_handler(void);
void gprof_trigger_wake(void);
void gprof_trigger_stop(void);
void gprof_trigger_forked(void);

#endif

/* Every hooked entry point; X(symbol, public name, CUPTI cbid, family). */
#define GPROF_HOOKS(X)                                                  \
	X(cudaLaunchKernel, "cudaLaunchKernel", 211, LAUNCH)            \
	X(cudaLaunchKernel_ptsz, "cudaLaunchKernel", 214, LAUNCH)       \
	X(__cudaLaunchKernel, "cudaLaunchKernel", 505, LAUNCH)          \
	X(__cudaLaunchKernel_ptsz, "cudaLaunchKernel", 506, LAUNCH)     \
	X(cudaLaunchKernelExC, "cudaLaunchKernelExC", 430, LAUNCH)      \
	X(cudaLaunchKernelExC_ptsz, "cudaLaunchKernelExC", 431, LAUNCH) \
	X(cudaMalloc, "cudaMalloc", 20, ALLOC)                          \
	X(cudaFree, "cudaFree", 22, FREE)                               \
	X(cudaMallocAsync, "cudaMallocAsync", 373, ALLOC)               \
	X(cudaMallocAsync_ptsz, "cudaMallocAsync", 374, ALLOC)          \
	X(cudaFreeAsync, "cudaFreeAsync", 375, FREE)                    \
	X(cudaFreeAsync_ptsz, "cudaFreeAsync", 376, FREE)               \
	X(cudaMemcpy, "cudaMemcpy", 31, COPY)                           \
	X(cudaMemcpy_ptds, "cudaMemcpy", 215, COPY)                     \
	X(cudaMemcpyAsync, "cudaMemcpyAsync", 41, COPY)                 \
	X(cudaMemcpyAsync_ptsz, "cudaMemcpyAsync", 225, COPY)           \
	X(cudaMemset, "cudaMemset", 49, SET)                            \
	X(cudaMemset_ptds, "cudaMemset", 233, SET)                      \
	X(cudaMemsetAsync, "cudaMemsetAsync", 51, SET)                  \
	X(cudaMemsetAsync_ptsz, "cudaMemsetAsync", 235, SET)            \
	X(cudaProfilerStart, "cudaProfilerStart", 171, PROFILER)        \
	X(cudaProfilerStop, "cudaProfilerStop", 172, PROFILER)

enum gprof_hook {
#define X(sym, name, cbid, family) GPROF_HOOK_##sym,
	GPROF_HOOKS(X)
#undef X
	GPROF_HOOK_COUNT
};

enum gprof_hook_family {
	GPROF_FAMILY_LAUNCH,
	GPROF_FAMILY_ALLOC,
	GPROF_FAMILY_FREE,
	GPROF_FAMILY_COPY,
	GPROF_FAMILY_SET,
	GPROF_FAMILY_PROFILER,
};

struct gprof_hook_info {
	const char *symbol;	 /* the exact entry point, for args.api */
	const char *public_name; /* the name readers know */
	int cbid;		 /* CUPTI runtime cbid */
	enum gprof_hook_family family;
};

extern const struct gprof_hook_info gprof_hook_info[GPROF_HOOK_COUNT];

/* One hooked call, as the hook saw it; handed to the session while recording. */
struct gprof_api_call {
	uint64_t start_ns;
	uint64_t end_ns;
	enum gprof_hook hook;
	int result;	  /* the cudaError_t the runtime returned */
	const void *func; /* launches: host stub or cudaKernel_t */
	unsigned grid[3];
	unsigned block[3];
	size_t bytes;	    /* launch: dynamic shared memory; copy, set, alloc: size */
	void *ptr;	    /* alloc, free: the device pointer; copy, set: destination */
	const void *src;    /* copy: source */
	int copy_kind;	    /* enum cudaMemcpyKind */
	int value;	    /* set: the byte value */
	const void *stream; /* NULL: the legacy default stream */
};

void gprof_session_api(const struct gprof_api_call *call);

/* Finds the runtime's definition of a hooked symbol; NULL when no libcudart is loaded. */
void *gprof_resolve(const char *symbol);
