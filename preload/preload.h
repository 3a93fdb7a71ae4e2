/*
 * preload/'s internal interface, one section per file. Calls go one way, down: the entry points
 * (init.c, hooks.c, nvtx.c, nccl.c, kineto.c, handover.c, the start-up hook's in torch.c) call
 * the session and the helpers under it (hooks.c also kernels.c, resolve.c and the export
 * buffer, on the hot path), and the timer thread (trigger.c) reaches the session only through
 * the callbacks it was given.
 */
#ifndef GPROF_PRELOAD_H
#define GPROF_PRELOAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/collector.h"
#include "common/compiler.h"
#include "common/torchop.h"

struct gprof_config;
struct gprof_export_event;
struct gprof_export_result;
struct gprof_export_str;
struct gprof_sched_event;
struct gprof_stepper;

/* ---- hot.c: what the hot path reads ---- */

/*
 * gprof_hot is the one word every hook reads first; 0 means "forward and do nothing else".
 * Its low half holds the bits that send the next CUDA call to the session; its high half is
 * the recording word: the export window the hooks' events go to, 0 when none (outside an
 * active window, in warmup, once the process exits). Export window ids are never 0.
 */
enum {
	GPROF_HOT_FIRST_CALL = 1 << 1, /* no CUDA call seen yet */
	GPROF_HOT_SIGNAL = 1 << 2,     /* a SIGUSR2 waits to be acted on */
};
/* The bits that send the next CUDA call to gprof_session_cuda_call(). */
#define GPROF_HOT_SESSION      (GPROF_HOT_FIRST_CALL | GPROF_HOT_SIGNAL)
#define GPROF_HOT_WINDOW_SHIFT 32

/*
 * The window half is written by the session at a window's start and end (under the stepper's
 * lock) and at exit; the bits by the session and the SIGUSR2 handler; read by every hook.
 */
extern uint64_t gprof_hot;

static inline uint64_t gprof_hot_load(void)
{
	return __atomic_load_n(&gprof_hot, __ATOMIC_RELAXED);
}

/* The window a hooked call records into: 0 when none. */
static inline uint32_t gprof_hot_window(uint64_t hot)
{
	return (uint32_t)(hot >> GPROF_HOT_WINDOW_SHIFT);
}

/* The bits (not the window). Async-signal-safe (lock-free atomics). */
static inline void gprof_hot_set(uint64_t bits, bool on)
{
	if (on)
		__atomic_fetch_or(&gprof_hot, bits, __ATOMIC_RELEASE);
	else
		__atomic_fetch_and(&gprof_hot, ~bits, __ATOMIC_RELAXED);
}

/* The window the hooks record into from now on (0: none); the bits stay. */
void gprof_hot_set_window(uint32_t id);

/* Per-thread: the thread id, cached; forgotten in a child after fork(). Inline: every event. */
extern GPROF_TLS int gprof_cached_tid;
int gprof_tid_fetch(void);
void gprof_tid_forget(void);

static inline int gprof_tid(void)
{
	int tid = gprof_cached_tid;

	return likely(tid) ? tid : gprof_tid_fetch();
}

/*
 * Per-thread: the External id of the CPU operator (nccl.c) the thread is in; 0 outside one.
 * Written by nccl.c around a collective's real call, read by the hooks' events inside it.
 */
extern GPROF_TLS uint32_t gprof_current_op_id;

/* A per-thread state's key: free(state) runs at the thread's exit. */
struct gprof_thread_key {
	pthread_mutex_t lock;
	bool made; /* atomic: key is made */
	pthread_key_t key;
	void (*free)(void *state);
};

/* The calling thread's new state of size bytes, zeroed, freed at its exit; NULL: no memory. */
void *gprof_thread_state(struct gprof_thread_key *k, size_t size);
/* The calling thread's state made by gprof_thread_state, or NULL. */
void *gprof_thread_state_of(struct gprof_thread_key *k);

static inline uint32_t gprof_current_op(void)
{
	return gprof_current_op_id;
}

static inline void gprof_set_current_op(uint32_t external)
{
	gprof_current_op_id = external;
}

/* ---- hook-table.c: the hooked entry points ---- */

/*
 * Every hooked entry point: X(symbol, public name, version of its CUPTI runtime cbid, family);
 * the cbid is CUPTI_RUNTIME_TRACE_CBID_<symbol>_<version> of <cupti_runtime_cbid.h>. Each has
 * its definition in hooks.c.
 */
#define GPROF_HOOKS(X)                                                     \
	X(cudaLaunchKernel, "cudaLaunchKernel", v7000, LAUNCH)             \
	X(cudaLaunchKernel_ptsz, "cudaLaunchKernel", v7000, LAUNCH)        \
	X(__cudaLaunchKernel, "cudaLaunchKernel", v13000, LAUNCH)          \
	X(__cudaLaunchKernel_ptsz, "cudaLaunchKernel", v13000, LAUNCH)     \
	X(cudaLaunchKernelExC, "cudaLaunchKernelExC", v11060, LAUNCH)      \
	X(cudaLaunchKernelExC_ptsz, "cudaLaunchKernelExC", v11060, LAUNCH) \
	X(cudaMalloc, "cudaMalloc", v3020, ALLOC)                          \
	X(cudaFree, "cudaFree", v3020, FREE)                               \
	X(cudaMallocAsync, "cudaMallocAsync", v11020, ALLOC)               \
	X(cudaMallocAsync_ptsz, "cudaMallocAsync", v11020, ALLOC)          \
	X(cudaFreeAsync, "cudaFreeAsync", v11020, FREE)                    \
	X(cudaFreeAsync_ptsz, "cudaFreeAsync", v11020, FREE)               \
	X(cudaMemcpy, "cudaMemcpy", v3020, COPY)                           \
	X(cudaMemcpy_ptds, "cudaMemcpy", v7000, COPY)                      \
	X(cudaMemcpyAsync, "cudaMemcpyAsync", v3020, COPY)                 \
	X(cudaMemcpyAsync_ptsz, "cudaMemcpyAsync", v7000, COPY)            \
	X(cudaMemset, "cudaMemset", v3020, SET)                            \
	X(cudaMemset_ptds, "cudaMemset", v7000, SET)                       \
	X(cudaMemsetAsync, "cudaMemsetAsync", v3020, SET)                  \
	X(cudaMemsetAsync_ptsz, "cudaMemsetAsync", v7000, SET)             \
	X(cudaProfilerStart, "cudaProfilerStart", v4000, PROFILER)         \
	X(cudaProfilerStop, "cudaProfilerStop", v4000, PROFILER)

enum gprof_hook {
#define X(sym, name, version, family) GPROF_HOOK_##sym,
	GPROF_HOOKS(X)
#undef X
	GPROF_HOOK_COUNT
};

/*
 * Every family of hooks: X(family, what its calls may write, the arguments an event of it
 * shows). The activities are GPROF_ACT_* bits, the arguments GPROF_EXPORT_ARG_* bits.
 */
#define GPROF_HOOK_FAMILIES(X)                                                                    \
	X(LAUNCH, GPROF_ACT_API, GPROF_EXPORT_ARG_LAUNCH | GPROF_EXPORT_ARG_STREAM)               \
	X(ALLOC, GPROF_ACT_API | GPROF_ACT_MEMORY, GPROF_EXPORT_ARG_BYTES | GPROF_EXPORT_ARG_PTR) \
	X(FREE, GPROF_ACT_API | GPROF_ACT_MEMORY, GPROF_EXPORT_ARG_PTR)                           \
	X(COPY, GPROF_ACT_API,                                                                    \
	  GPROF_EXPORT_ARG_BYTES | GPROF_EXPORT_ARG_COPY_KIND | GPROF_EXPORT_ARG_STREAM)          \
	X(SET, GPROF_ACT_API,                                                                     \
	  GPROF_EXPORT_ARG_BYTES | GPROF_EXPORT_ARG_PTR | GPROF_EXPORT_ARG_STREAM)                \
	X(PROFILER, GPROF_ACT_API, 0)

enum gprof_hook_family {
#define X(family, acts, args) GPROF_FAMILY_##family,
	GPROF_HOOK_FAMILIES(X)
#undef X
	GPROF_FAMILY_COUNT
};

struct gprof_hook_info {
	const char *symbol;	 /* the exact entry point, for args.api */
	const char *public_name; /* the name readers know */
	int cbid;		 /* CUPTI runtime cbid */
	enum gprof_hook_family family;
};

struct gprof_hook_family_info {
	const char *name;
	unsigned acts;	/* GPROF_ACT_* bits a call of the family may write */
	uint16_t flags; /* GPROF_EXPORT_ARG_* bits of its events */
};

extern const struct gprof_hook_info gprof_hook_info[GPROF_HOOK_COUNT];
extern const struct gprof_hook_family_info gprof_hook_family[GPROF_FAMILY_COUNT];

/* ---- hooks.c: the hooked calls ---- */

/*
 * A hooked call the session wants, on its hook's stack: what the session and events.c need of
 * it beyond its family's arguments, which the hook writes into the call's event itself.
 */
struct gprof_hooked_call {
	enum gprof_hook hook;
	unsigned writes;	   /* GPROF_ACT_* bits the hooks write for it; 0: not timed */
	uint64_t start_ns, end_ns; /* when writes is not 0 */
	int result;		   /* the cudaError_t the runtime returned */
};

/* ---- nccl.c: NCCL's collectives ---- */

/* One collective call inside a window, as a CPU operator; handed to the session at its end. */
struct gprof_nccl_call {
	const char *name; /* "nccl:all_reduce" */
	const char *type; /* "float": its element type as PyTorch names it; NULL if unknown */
	size_t count;	  /* elements, the call's count argument */
	uint32_t external;
	bool pushed; /* CUPTI ties the calls it made to `external` */
	uint64_t start_ns;
	uint64_t end_ns;
};

/* ---- torch.c: PyTorch's operators, from the NVTX ranges of its profiler's NVTX mode ---- */

/* An NVTX range open on a thread, as an operator (nvtx.c keeps one per push it copied). */
struct gprof_torch_frame {
	struct gprof_torch_op op; /* parsed from the frame's message */
	uint32_t external;	  /* its External id; 0: the range is not an operator */
	uint32_t py_id;		  /* a module's forward ("nn.Module: ..."): its Python id; 0: not */
	uint32_t py_parent;	  /* the innermost module's forward it is in; 0: none */
	bool pushed;		  /* CUPTI ties the calls made inside to `external` */
	bool annotated;		  /* a user scope: its GPU work carries `external` too */
	bool flow;		  /* a backward node: linked to its forward operator */
	uint32_t fwd_tid;	  /* backward: its forward operator's thread; 0: forward */
	uint64_t fwd_ns;	  /* backward: when its forward operator began */
};

/*
 * A push whose message (len bytes, kept until the pop) was copied while recording; up is the
 * range it opens in (with its message), NULL at the thread's top.
 */
void gprof_torch_open(struct gprof_torch_frame *f, const char *msg, size_t len,
		      struct gprof_torch_frame *up, const char *up_msg, uint64_t start_ns);
/* Its pop, for an operator or a module (f->external or f->py_id set): written as one while
 * still recording. */
void gprof_torch_close(struct gprof_torch_frame *f, const char *msg, uint64_t start_ns,
		       uint64_t end_ns);

/* For --torch's start-up hook (ctypes): gprof_session_torch_wants. */
GPROF_EXPORT int gprof_torch_wanted(void);
/* For the start-up hook (ctypes): the calling thread's next step marker is the hook's. */
GPROF_EXPORT void gprof_torch_marks(void);
/* For the start-up hook (ctypes): the default process group's backend, kept once. */
GPROF_EXPORT void gprof_torch_backend(const char *name);
/* For --torch's start-up hook (ctypes): gprof_session_tensor_memory, ts in ns. */
GPROF_EXPORT void gprof_torch_memory(uint64_t ts_ns, uint64_t address, int64_t bytes,
				     uint64_t allocated, uint64_t reserved, int device);
/* For --torch's start-up hook (ctypes): gprof_session_torch_hold, 1 if held. */
GPROF_EXPORT int gprof_torch_hold(void);
GPROF_EXPORT void gprof_torch_release(void);
/* For --torch's start-up hook (ctypes): gprof_session_torch_ops; how many, or -1. */
GPROF_EXPORT int gprof_torch_ops(const char *json, size_t len);
/*
 * Whether a step marker of the calling thread counts: the hook's (gprof_torch_marks came
 * before it) until the program makes one of its own, then only the program's (one line says
 * so when a hook's had counted).
 */
bool gprof_torch_step_counts(const char *marker);
/*
 * Whether the steps are the hook's: its markers end steps (after an optimizer's step), so the
 * step in progress at exit is what ran after the last one, not a step.
 */
bool gprof_torch_steps_hooked(void);

/* ---- kineto.c: PyTorch's profiler for --torch, on libgprof's CUPTI ---- */

/*
 * A cuptiSubscribe of PyTorch's libraries: true when libgprof serves it (the hook claimed
 * PyTorch's CUPTI calls; *subscriber is a handle of its own), false to hand CUPTI over.
 */
bool gprof_kineto_subscribe(void *subscriber);
/* Whether the calling thread is inside an operator or scope of PyTorch's profiler. */
bool gprof_kineto_in_op(void);
/* A step marker of the calling thread made inside an operator: counts at its end (true). */
bool gprof_kineto_defer_step(void);
/* For --torch's start-up hook (ctypes): PyTorch's CUPTI calls are libgprof's; 0: they can't be. */
GPROF_EXPORT int gprof_torch_kineto(void);
/* For --torch's start-up hook (ctypes): operators open now, on every thread. */
GPROF_EXPORT int gprof_torch_kineto_open(void);

/* ---- resolve.c ---- */

/* Finds the runtime's definition of a hooked symbol; NULL when no libcudart is loaded. */
void *gprof_resolve(const char *symbol);
/* The same for a symbol of another library: the next definition, or one in a loaded `lib`. */
void *gprof_resolve_in(const char *symbol, const char *lib);

/* ---- init.c: the session's end before an exec (exec.c's hooks) ---- */

/* The session ends as at exit; true if it did (this process's own, live session). */
bool gprof_preload_exec(void);
/* The exec after gprof_preload_exec() returned with err: one line. */
void gprof_preload_exec_failed(const char *what, int err);

/* ---- session.c: the configuration's windows, driven by the entry points ---- */

/*
 * From the constructor with the configuration it loaded (kept: it must outlive the session),
 * once export and the collector are initialised. Returns 0, or a negative errno when libgprof
 * is to stay inert (the caller says so).
 */
int gprof_session_init(const struct gprof_config *cfg);
/*
 * A CUDA call saw a GPROF_HOT_SESSION bit: the first call, or a SIGUSR2 waits. from_hook: a
 * hooked call, which may wait for another thread's first call to finish setting up.
 */
void gprof_session_cuda_call(bool from_hook);
/* --torch's hook's first call: a marker for step 0's start (torch.c). */
void gprof_session_step_zero(void);
void gprof_session_step_marker(uint64_t ts_ns);
bool gprof_session_recording(void);
/* GPROF_ACTIVITIES has nvtx: NVTX ranges and marks are written (and ranges annotate the GPU). */
bool gprof_session_nvtx_recorded(void);
/*
 * A hooked call while recording, after the real call returned. With GPROF_ACT_MEMORY in
 * c->writes, mem_ptr is what a successful allocation returned or a successful free released
 * (NULL: nothing changed) and mem_bytes an allocation's size. Returns the window of the call's
 * runtime event, which the hook reserves in the export buffer (gprof_events_api), completes
 * and commits; 0 when there is none (no window, or the hooks write no API event).
 */
uint32_t gprof_session_call(const struct gprof_hooked_call *c, const void *mem_ptr,
			    size_t mem_bytes);
/* An NCCL collective recorded by nccl.c, after it returned. */
void gprof_session_nccl(const struct gprof_nccl_call *call);
/*
 * For --torch's hook: 1 when the step the next marker begins records (warmup or active), | 2
 * when the one it ends is a window's last (scheduler.h).
 */
int gprof_session_torch_wants(void);
/*
 * --torch: holds the open window for what the start-up hook hands over after the marker that
 * ends it (releasing one held before); false when none is open.
 */
bool gprof_session_torch_hold(void);
void gprof_session_torch_release(void);
/* The held window's operators' inputs (gprof_export_window_op_args). */
int gprof_session_torch_ops(const char *json, size_t len, const char **why);
/*
 * A tensor's allocation (bytes > 0) or free in PyTorch's caching allocator, with its totals
 * after it, written when it falls in the held window.
 */
void gprof_session_tensor_memory(uint64_t ts_ns, uint64_t address, int64_t bytes,
				 uint64_t allocated, uint64_t reserved, uint32_t device);
/*
 * A PyTorch operator (user: a record_function scope) kineto.c saw begin and end, by Kineto's
 * External id kid; ext: libgprof's (0: none).
 */
void gprof_session_kineto_op(uint64_t kid, uint32_t ext, bool user, uint64_t start_ns,
			     uint64_t end_ns);
/* A PyTorch operator recorded by torch.c, at its end. */
void gprof_session_torch_op(const struct gprof_torch_frame *f, const char *msg, uint64_t start_ns,
			    uint64_t end_ns);
/* An NVTX event on thread tid (0: the calling thread); a range's External id, or 0. */
void gprof_session_nvtx(int tid, const char *domain, const char *msg, size_t len, uint64_t start_ns,
			uint64_t end_ns, bool is_mark, uint32_t external);
/*
 * GPROF_TRIGGER=cuda-profiler-api: cudaProfilerStart (start true) or cudaProfilerStop was
 * called; from their hooks, before the call is forwarded, whatever gprof_hot holds.
 */
void gprof_session_profiler_api(bool start);
/* NVTX_INJECTION64_PATH names another tool: no step marker can reach libgprof. */
void gprof_session_nvtx_foreign(void);
/*
 * Process exit, run for thread tid (the one that ends the process): finishes the window in
 * progress, with the step in progress only if tid marked it (tid 0: not at all), and writes
 * what is pending.
 */
void gprof_session_fini(int tid);
/* In a child after fork(): it inherits no window and writes nothing. */
void gprof_session_forked(void);

/* ---- nvtx.c ---- */

/*
 * Whether one of the calling thread's open ranges is PyTorch's operator `name` (it names its
 * own NCCL collectives: libgprof's event for the call would repeat it).
 */
bool gprof_nvtx_in_op(const char *name);
/* The step marker NVTX messages are matched against (from the constructor). */
void gprof_nvtx_set_marker(const char *marker);
/*
 * InitializeInjectionNvtx2's work: fills the CORE and CORE2 tables of the module whose
 * export tables get_table gives. 1, or 0 when it cannot.
 */
int gprof_nvtx_inject(const void *(*get_table)(uint32_t id));

/* ---- windows.c: the recording window, on the stepper's transitions ---- */

/*
 * What the session lends the window: whether the process exits; at a window's opening, the
 * device memory figure its counter starts from (and its event); at its end, what the session
 * does before the hooks stop recording into it (closing) and once they have (closed).
 */
struct gprof_windows_session {
	bool (*exiting)(void);
	void (*memory_at_open)(uint32_t id, uint64_t begin_ns, struct gprof_memory_base *base);
	void (*closed)(void);
};

/*
 * init: from the session's init, with the configuration and schedule text (kept). begin, step, end
 * and discard: the stepper's ACTIVE, STEP, SAVE and DISCARD events, under its lock. due: whether
 * any window began, recorded or not. report_exit: the exit's line on windows that had no file of
 * their own.
 */
void gprof_windows_init(const struct gprof_config *cfg, const char *schedule,
			struct gprof_stepper *stepper, const struct gprof_windows_session *s);
void gprof_windows_begin(const struct gprof_sched_event *ev);
void gprof_windows_step(const struct gprof_sched_event *ev);
void gprof_windows_end(const struct gprof_sched_event *ev);
void gprof_windows_discard(const struct gprof_sched_event *ev);
bool gprof_windows_due(void);
void gprof_windows_report_exit(void);
/* In a child after fork(): no window. */
void gprof_windows_forked(void);

/* ---- trigger.c: SIGUSR2 and the timer ---- */

/*
 * What the session lends the triggers: the stepper their requests go to; whether it is inert
 * (the timer then does nothing); and what the timer's thread calls before it acts, since it is
 * libgprof's own (no CUDA call of its own from it).
 */
struct gprof_trigger_session {
	struct gprof_stepper *stepper;
	bool (*inert)(void);
	void (*own_thread)(void);
};

/*
 * setup: from the session's init, with the configuration (kept) and what it lends; the sources
 * the configuration uses set up (SIGUSR2's handler goes in). At the first CUDA call: first_call
 * before recording can start (the process joins its gprof-run), start once the stepper has
 * (the timer thread). The rest are for the session: the SIGUSR2s received since the last call
 * act; a step marker comes (they act; a line if the program replaced our handler, once); a
 * deadline changed; exit; a child after fork().
 */
void gprof_trigger_setup(const struct gprof_config *cfg, const struct gprof_trigger_session *s);
void gprof_trigger_first_call(void);
void gprof_trigger_start(void);
void gprof_trigger_take_signals(void);
void gprof_trigger_marker(void);
void gprof_trigger_wake(void);
void gprof_trigger_stop(void);
void gprof_trigger_forked(void);

/* ---- events.c: host events ---- */

/*
 * From the session's init (export running): the GPROF_ACT_* bits the configuration asks for.
 * Sets each hook's call type in the export (gprof_export_call_types: the type is the hook).
 */
void gprof_events_init(unsigned activities);
/* Written once by gprof_events_init: by hook, what its calls may write that is asked for. */
extern unsigned gprof_events_acts[GPROF_HOOK_COUNT];

/* The GPROF_ACT_* bits the hooks write for a call of h: asked for, and not CUPTI's now. */
static inline unsigned gprof_events_writes(enum gprof_hook h)
{
	return gprof_events_acts[h] & ~gprof_collector_covers();
}
/* The step span of a stepper event, in window `window`. */
void gprof_events_step(uint32_t window, const struct gprof_sched_event *ev);
/*
 * A timed call of this thread: sets every field of its runtime event e, reserved in the export
 * buffer, but the family's arguments (u.api's kernel, grid, block, shared_bytes, stream,
 * bytes, ptr, copy_kind: zero), which the hook sets before gprof_export_commit(). Returns e.
 * Inline: every hooked call in a window fills one. Every field, in place (the slot holds an
 * older event), one by one: a compound literal of the whole event would clear its 128 bytes
 * first (u.api's below clears that member only).
 */
static inline struct gprof_export_event *
gprof_events_api(struct gprof_export_event *e, uint32_t window, const struct gprof_hooked_call *c)
{
	const struct gprof_export_call_type *row = &gprof_export_call_types[c->hook];

	e->ts_ns = c->start_ns;
	e->dur_ns = c->end_ns - c->start_ns;
	e->name = row->name;
	e->window = window;
	e->tid = (uint32_t)gprof_tid();
	e->device = 0;
	e->stream = 0;
	e->correlation = 0;
	e->kind = GPROF_EXPORT_RUNTIME;
	e->flags = row->flags;
	e->u.api = (struct gprof_export_api){
	    .api = row->api,
	    .cbid = row->cbid,
	    .result = c->result,
	    .external = gprof_current_op(),
	};
	return e;
}
/*
 * The same for a call record r (NULL: none), which takes a launch's arguments: sets all but
 * those (kernel, stream, grid_x, grid_yz, block, shared_bytes). c's call fits one
 * (gprof_export_call_fits). Returns r.
 */
static inline struct gprof_export_call *
gprof_events_call(struct gprof_export_call *r, uint32_t window, const struct gprof_hooked_call *c)
{
	if (r) {
		r->ts_ns = c->start_ns;
		r->dur_ns = (uint32_t)(c->end_ns - c->start_ns);
		r->window = window;
		r->tid = (uint32_t)gprof_tid();
		r->external = gprof_current_op();
		r->kind = GPROF_EXPORT_CALL;
		r->result = (int16_t)c->result;
		r->type = (uint16_t)c->hook;
	}
	return r;
}
/* External ids of CPU operators, from 1, never 0, unique in the process until they wrap. */
uint32_t gprof_events_next_external(void);
/* A PyTorch operator (torch.c). */
void gprof_events_torch_op(uint32_t window, uint32_t tid, const struct gprof_torch_frame *f,
			   const char *msg, uint64_t start_ns, uint64_t end_ns);
/* A PyTorch operator of kineto.c: named when the hook hands its name and args over. */
void gprof_events_kineto_op(uint32_t window, uint32_t tid, uint64_t kid, uint32_t ext, bool user,
			    uint64_t start_ns, uint64_t end_ns);
/* An NCCL collective as a CPU operator. */
void gprof_events_nccl(uint32_t window, uint32_t tid, const struct gprof_nccl_call *call);
/* An NVTX mark or range. */
void gprof_events_nvtx(uint32_t window, uint32_t tid, const char *domain, const char *msg,
		       size_t len, uint64_t start_ns, uint64_t end_ns, bool is_mark,
		       uint32_t external);

/*
 * Slots of memory.c's and kernels.c's maps, which the program's threads fill without a lock
 * and so never grow: a full map leaves new allocations uncounted, new kernel names unkept.
 */
#define GPROF_PRELOAD_MAP_SLOTS 32768

/* ---- memory.c: device memory by allocation ---- */

/* From the session's init: 0 or -ENOMEM. */
int gprof_memory_init(void);

/*
 * A window opens: the counter starts from what was in use then (in_use < 0: unknown, and the
 * counter holds the window's own allocations), a figure taken at since_ns: calls that began
 * before it are in it already.
 */
void gprof_memory_reset(int64_t in_use, uint64_t since_ns);
/*
 * A successful allocation or free, c (ptr not NULL; bytes: an allocation's size): the
 * counter's new value as an event, if it changed.
 */
void gprof_memory_event(uint32_t window, const struct gprof_hooked_call *c, const void *ptr,
			size_t bytes);
/*
 * Before a free of ptr: an allocation the hooks did not see (made before the window) is
 * sized from the driver, so that its free counts.
 */
void gprof_memory_before_free(const void *ptr);

/* ---- run.c: the processes of one gprof-run (GPROF_RUN_DIR) ---- */

/* From the constructor: GPROF_RUN_DIR as it is now (gprof-run sets it before the start). */
void gprof_run_setup(void);
/* GPROF_RUN_DIR is set, even empty: this process is one of a gprof-run's. */
bool gprof_run_given(void);
/* This process uses CUDA: gprof-run's SIGUSR2 is to reach it too. */
void gprof_run_register(void);
/*
 * The marker number the window of the run's `signal_number`-th SIGUSR2 begins at: the first
 * process to ask sets it to `proposed`; without GPROF_RUN_DIR, `proposed`.
 */
uint64_t gprof_run_agree(unsigned signal_number, uint64_t proposed);

/* ---- runtime.c: what libgprof asks the CUDA runtime ---- */

/*
 * Device memory in use on the calling thread's current device (*device), as the driver counts
 * it (total - free: this process's and others', the caching allocator's reserve included) less
 * what the device's current stream-ordered pool holds unused (its allocations count as they
 * are made), as it was at *at_ns; -1 if the runtime cannot say.
 */
int64_t gprof_runtime_memory_in_use(int *device, uint64_t *at_ns);

/* The size of the device allocation that begins at ptr, from the driver; 0 if none or unknown. */
uint64_t gprof_runtime_allocation_size(const void *ptr);

/*
 * A runtime function, looked up once into *cache (a race only looks it up twice), found or not:
 * asked once the process uses CUDA, when its runtime is loaded.
 */
void *gprof_runtime_fn(void **cache, const char *symbol);
/* Versions and devices for every trace header: once per process, when the caller may. */
void gprof_runtime_facts(void);
/* The calling thread's current device (0 if the runtime can't say). */
int gprof_runtime_device(void);

/* ---- kernels.c ---- */

/* From the session's init: 0 or -ENOMEM. */
int gprof_kernels_init(void);

/* The demangled name of a kernel by host stub or cudaKernel_t, interned; NULL if unknown. */
const struct gprof_export_str *gprof_kernel_name(const void *func);

/* ---- report.c: what the user reads on stderr ---- */

/* On the writer thread: a window's file is done; the summary as GPROF_SUMMARY says (cfg). */
void gprof_report_window_done(const struct gprof_export_result *r, void *cfg);

/* What the exit's hints go by. */
struct gprof_report_exit {
	uint64_t markers;      /* step markers that came */
	bool marked;	       /* a step marker came */
	bool nvtx_foreign;     /* NVTX_INJECTION64_PATH names another tool */
	bool armed;	       /* a SIGUSR2 armed a window that never began */
	bool profiler_started; /* cudaProfilerStart seen */
	bool window_due;       /* any window began, recorded or not */
};

/* At exit of a process that used CUDA: a line when its trigger never came, naming a way out. */
void gprof_report_exit(const struct gprof_config *cfg, const struct gprof_report_exit *e);

#endif
