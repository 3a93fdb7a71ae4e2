/*
 * The simulated GPU behind the fake libcuda.so.1 and libcudart.so.13: devices, API-call tracing,
 * the ground-truth log, device memory, kernels and the per-stream timeline. It lives in
 * libcuda.so.1, which exports it to libcudart.so.13 (see test/fakecuda/README.md).
 */
#ifndef FAKECUDA_SIM_H
#define FAKECUDA_SIM_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cupti.h>

#define FAKECUDA_API	     __attribute__((visibility("default")))
#define FAKECUDA_MAX_DEVICES 16

/* ---- devices and contexts (device.c) ---- */

/* Reads the FAKEGPU_* configuration and runs CUDA_INJECTION64_PATH once; what cuInit does. */
FAKECUDA_API void fakecuda_init(void);
FAKECUDA_API int fakecuda_device_count(void);
/* The calling thread's current device (cudaSetDevice / cuCtxSetCurrent). */
FAKECUDA_API int fakecuda_device_current(void);
FAKECUDA_API int fakecuda_device_set(int device);
/* The primary context of a device (a CUcontext), its CUPTI contextId, and its device. */
FAKECUDA_API void *fakecuda_context(int device);
FAKECUDA_API uint32_t fakecuda_context_id(int device);
/*
 * Whether the device's primary context is made (initialised), and making it: what
 * cuDevicePrimaryCtxRetain and a runtime's first call that needs a context do.
 */
FAKECUDA_API void fakecuda_context_make(int device);
FAKECUDA_API bool fakecuda_context_made(int device);
/* The current device's context, or NULL before initialisation (registration at start-up). */
FAKECUDA_API void *fakecuda_context_current(void);
FAKECUDA_API int fakecuda_context_device(const void *context);
FAKECUDA_API uint64_t fakecuda_device_total_mem(int device);
/*
 * What a simulated H200 is: its CUDA 13.0 attributes (what cuDeviceGetAttribute answers, and
 * what the runtimes' cudaGetDeviceProperties is made of), its UUID and its name.
 */
FAKECUDA_API int fakecuda_device_attribute(CUdevice_attribute attr, int device);
FAKECUDA_API void fakecuda_device_uuid(CUuuid *uuid, int device);
#define FAKECUDA_DEVICE_NAME "NVIDIA H200"

/* ---- API-call tracing (trace.c) ---- */

/* One runtime or driver API call, from fakecuda_api_enter to fakecuda_api_exit. */
struct fakecuda_call {
	CUpti_CallbackDomain domain;
	CUpti_CallbackId cbid;
	uint32_t correlation;
	uint64_t start_ns;
	uint64_t correlation_data; /* what CUpti_CallbackData.correlationData points at */
	int result;		   /* what CUpti_CallbackData.functionReturnValue points at */
	CUpti_CallbackData cb;
	/*
	 * A driver call made inside a runtime call of the same thread (NVIDIA's runtime on the
	 * simulated driver): untraced, as CUPTI leaves it, and its GPU work is the runtime
	 * call's (same correlation id, runtimeCorrelationId set).
	 */
	bool nested;
	struct fakecuda_call *outer; /* the runtime call this one is made in, if any */
	bool synced;		     /* its synchronisation record is out (fakecuda_sync_done) */
};

/*
 * Takes the call's correlation id and delivers the API_ENTER callback. `name` is the exported
 * symbol ("cudaMalloc", "cuMemAlloc_v2"), `params` the *_params struct of the generated CUPTI
 * meta headers (or NULL), `symbol` the kernel name for launches (else NULL).
 */
FAKECUDA_API void fakecuda_api_enter(struct fakecuda_call *call, CUpti_CallbackDomain domain,
				     CUpti_CallbackId cbid, const char *name, const void *params,
				     const char *symbol);
/*
 * A driver call; `untraced` when NVIDIA's runtime makes it (no callback, record or log line, as
 * CUPTI reports only the runtime call), as is every driver call inside a runtime call.
 */
FAKECUDA_API void fakecuda_api_enter_driver(struct fakecuda_call *call, CUpti_CallbackId cbid,
					    const char *name, const void *params,
					    const char *symbol, bool untraced);
/*
 * Delivers API_EXIT, emits the RUNTIME or DRIVER activity record and the ground-truth log line
 * (`args_fmt` formats the members of its "args" object, or is NULL), returns `result`.
 */
FAKECUDA_API int fakecuda_api_exit(struct fakecuda_call *call, int result, const char *args_fmt,
				   ...) __attribute__((format(printf, 3, 4)));
FAKECUDA_API int fakecuda_api_vexit(struct fakecuda_call *call, int result, const char *args_fmt,
				    va_list ap);

/* ---- ground-truth log, FAKEGPU_LOG (gtlog.c) ---- */

FAKECUDA_API bool fakecuda_log_enabled(void);
/* Writes one JSON object (the text between the braces) as one line, in one write(2). */
FAKECUDA_API void fakecuda_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
FAKECUDA_API void fakecuda_log_v(const char *fmt, va_list ap);
/* `s` as a quoted JSON string in buf (cut short, still valid, if it does not fit); returns buf. */
FAKECUDA_API char *fakecuda_log_str(char *buf, size_t size, const char *s);

/* ---- device and pinned host memory (memory.c) ---- */

/* Reads FAKEGPU_MALLOC_FAIL_ABOVE (fakecuda_init calls it). */
FAKECUDA_API void fakecuda_mem_init(void);

struct fakecuda_op;

/*
 * Allocates `bytes` of `kind` memory (CUPTI_ACTIVITY_MEMORY_KIND_DEVICE or _PINNED) on `device`
 * and emits the MEMORY2 record; `stream_id` is the stream of an asynchronous allocation or
 * UINT32_MAX. Returns 0, -ENOMEM (fault injection, capacity, or no memory) or -EINVAL.
 */
FAKECUDA_API int fakecuda_mem_alloc(void **out, size_t bytes, CUpti_ActivityMemoryKind kind,
				    int device, uint32_t correlation, uint32_t stream_id);
/* Frees what fakecuda_mem_alloc returned with the same kind; -EINVAL if it did not. */
FAKECUDA_API int fakecuda_mem_free(void *ptr, CUpti_ActivityMemoryKind kind, uint32_t correlation,
				   uint32_t stream_id);
/*
 * Device memory of a loaded module (its __device__ variables): no record reports it, and it is
 * not counted as in use (cudaMemGetInfo).
 */
FAKECUDA_API int fakecuda_mem_module(void **out, size_t bytes, int device);
/* Device memory in use on `device` (what cudaMemGetInfo reports as taken). */
FAKECUDA_API uint64_t fakecuda_mem_in_use(int device);
/* The allocation `ptr` lies in; -EINVAL if none. */
FAKECUDA_API int fakecuda_mem_range(const void *ptr, void **base, size_t *bytes);
/* DEVICE or PINNED for memory inside one of our allocations, PAGEABLE for any other address. */
FAKECUDA_API CUpti_ActivityMemoryKind fakecuda_mem_kind(const void *ptr);

/*
 * Stream-ordered allocation: pools (a handle, CUmemoryPool, points at one), each on a device.
 * A device's default pool exists from its first use; its current pool (what cuMemAllocAsync
 * takes from) is the default one until cuDeviceSetMemPool. An allocation from a pool is freed
 * by fakecuda_mem_free. Each returns 0, -EINVAL (a pool that is not one, a bad attribute or
 * value) or -ENOMEM.
 */
struct fakecuda_pool;
FAKECUDA_API struct fakecuda_pool *fakecuda_pool_default(int device);
FAKECUDA_API struct fakecuda_pool *fakecuda_pool_current(int device);
FAKECUDA_API int fakecuda_pool_set_current(int device, struct fakecuda_pool *p);
FAKECUDA_API int fakecuda_pool_create(struct fakecuda_pool **out, int device, uint32_t correlation);
FAKECUDA_API int fakecuda_pool_destroy(struct fakecuda_pool *p, uint32_t correlation);
/* Gives back what the pool holds unused above `keep` bytes (cuMemPoolTrimTo). */
FAKECUDA_API int fakecuda_pool_trim(struct fakecuda_pool *p, uint64_t keep, uint32_t correlation);
FAKECUDA_API int fakecuda_pool_alloc(void **out, size_t bytes, struct fakecuda_pool *p,
				     uint32_t correlation, uint32_t stream_id);
/* A synchronisation on `device`: its pools give back what they hold above their thresholds. */
FAKECUDA_API void fakecuda_pools_release(int device);
/* cuMemPoolGetAttribute (set false) and cuMemPoolSetAttribute. */
FAKECUDA_API int fakecuda_pool_attribute(struct fakecuda_pool *p, CUmemPool_attribute attr,
					 void *value, bool set);

/*
 * Fills op->memcpy's copy and memory kinds for a copy from src to dst, each on the device when
 * *_dev says so (a copy's direction may be given), else where the pointer lies.
 */
FAKECUDA_API void fakecuda_memcpy_kinds(struct fakecuda_op *op, const void *dst, const void *src,
					bool src_dev, bool dst_dev);
/* An asynchronous copy from the device to pageable memory returns when done, as a sync one. */
FAKECUDA_API bool fakecuda_memcpy_blocks(const struct fakecuda_op *op);

/* ---- kernels (kernel.c) ---- */

/* A kernel: a cudaKernel_t / CUfunction handle points at one; it lives as long as the process. */
struct fakecuda_kernel {
	uint16_t registers;   /* registers per thread reported in records */
	const void *host_fn;  /* the host stub of a runtime kernel, NULL for driver functions */
	const char *name;     /* mangled, as CUPTI reports it */
	uint64_t duration_ns; /* from the kernel model, before FAKEGPU_TIME_SCALE */
};

/* Registers host stub -> mangled name (__cudaRegisterFunction); idempotent per stub. */
FAKECUDA_API const struct fakecuda_kernel *fakecuda_kernel_register(const void *host_fn,
								    const char *name);
/* A driver function named `name` in module `module` (cuModuleGetFunction). */
FAKECUDA_API const struct fakecuda_kernel *fakecuda_kernel_function(const void *module,
								    const char *name);
/*
 * The kernel of a host stub, a cudaKernel_t or CUfunction; an unregistered stub is named by
 * dladdr (its dynamic symbol name). NULL if none of these applies.
 */
FAKECUDA_API const struct fakecuda_kernel *fakecuda_kernel_find(const void *fn_or_handle);

/* ---- the timeline: streams, events and GPU operations (timeline.c) ---- */

struct fakecuda_stream;

enum fakecuda_op_kind {
	FAKECUDA_OP_KERNEL,
	FAKECUDA_OP_MEMCPY,
	FAKECUDA_OP_MEMSET,
	FAKECUDA_OP_MARKER, /* an event record or a stream wait: takes no time, emits nothing */
};

/* One unit of GPU work, filled by the API call that launches it. */
struct fakecuda_op {
	enum fakecuda_op_kind kind;
	uint32_t correlation;
	bool runtime; /* launched by a runtime call (Memcpy6.runtimeCorrelationId) */
	bool async;   /* an *Async call (the record's ASYNC flag) */
	union {
		struct {
			const struct fakecuda_kernel *kernel;
			uint32_t grid[3], block[3];
			uint32_t shared_bytes; /* dynamic shared memory */
			uint8_t launch_type;   /* CUpti_ActivityLaunchType */
		} kernel;
		struct {
			uint64_t bytes;
			uint8_t copy_kind;	    /* CUpti_ActivityMemcpyKind */
			uint8_t src_kind, dst_kind; /* CUpti_ActivityMemoryKind */
		} memcpy;
		struct {
			uint64_t bytes;
			uint32_t value;
		} memset;
	};
	/* Set by fakecuda_op_enqueue: host time of the launch, and simulated start and end. */
	uint64_t queued_ns, start_ns, end_ns;
};

/* cudaStream_t / CUstream values that are not stream pointers. */
#define FAKECUDA_STREAM_LEGACY	   ((void *)0x1)
#define FAKECUDA_STREAM_PER_THREAD ((void *)0x2)

/*
 * The stream a handle names on the current device: NULL is the legacy default stream, or the
 * calling thread's per-thread default stream when `per_thread` (the _ptsz/_ptds entry points).
 */
FAKECUDA_API struct fakecuda_stream *fakecuda_stream_get(void *handle, bool per_thread);
/* flags: cudaStreamNonBlocking (1) makes a stream that does not wait for the legacy stream. */
FAKECUDA_API struct fakecuda_stream *fakecuda_stream_create(unsigned int flags);
FAKECUDA_API void fakecuda_stream_destroy(struct fakecuda_stream *stream);
FAKECUDA_API uint32_t fakecuda_stream_id(const struct fakecuda_stream *stream);
FAKECUDA_API int fakecuda_stream_device(const struct fakecuda_stream *stream);

/* Reads the cost model (FAKEGPU_TIME_SCALE, ...) and starts the completion thread, once. */
FAKECUDA_API void fakecuda_timeline_init(void);
/* Queues `op` (copied) on `stream`, fills its times, returns its sequence number there. */
FAKECUDA_API uint64_t fakecuda_op_enqueue(struct fakecuda_stream *stream, struct fakecuda_op *op);
/* Waits until the operation `seq` of `stream` and all before it have completed. */
FAKECUDA_API void fakecuda_stream_wait(struct fakecuda_stream *stream, uint64_t seq);
/* True when the operation `seq` of `stream` has completed. */
FAKECUDA_API bool fakecuda_stream_done(struct fakecuda_stream *stream, uint64_t seq);
/* Waits until everything queued so far on `stream` (NULL: on every stream of `device`) is done. */
FAKECUDA_API void fakecuda_sync(struct fakecuda_stream *stream, int device);
/* Makes later work on `stream` start no earlier than `time_ns` (cudaStreamWaitEvent). */
FAKECUDA_API void fakecuda_stream_wait_until(struct fakecuda_stream *stream, uint64_t time_ns);

/*
 * Events (cudaEvent_t and CUevent point at one): a record is a zero-length marker queued on its
 * stream; it completes, and takes its time, when all the work queued before it has.
 */
struct fakecuda_event {
	unsigned int flags;		/* cudaEventDisableTiming (2) as CU_EVENT_DISABLE_TIMING */
	uint32_t id;			/* CUPTI's eventId: one per event, for its whole life */
	struct fakecuda_stream *stream; /* NULL until recorded */
	uint64_t seq;			/* the marker's sequence number on `stream` */
	uint64_t time_ns;		/* when the marker completes */
	uint64_t sync_id;		/* cudaEventSyncId of the latest record, 0 before one */
	uint32_t record_correlation;	/* the correlation id of the latest record call */
};

/* A new event with its own id (cudaEventCreate, cuEventCreate); NULL when out of memory. */
FAKECUDA_API struct fakecuda_event *fakecuda_event_create(unsigned int flags);
/*
 * Queues the event's marker on `stream` for the call `correlation` and emits its CUDA_EVENT
 * record: one per record call, with a new cudaEventSyncId that later waits on it name.
 */
FAKECUDA_API void fakecuda_event_record(struct fakecuda_event *event,
					struct fakecuda_stream *stream, uint32_t correlation,
					bool runtime);
/* Waits for the recorded marker (nothing to wait for before a record). */
FAKECUDA_API void fakecuda_event_sync(const struct fakecuda_event *event);
FAKECUDA_API bool fakecuda_event_done(const struct fakecuda_event *event);
/* end - start in ms: 0, -EINVAL (not recorded, or without timing), -EAGAIN (not done yet). */
FAKECUDA_API int fakecuda_event_elapsed(const struct fakecuda_event *start,
					const struct fakecuda_event *end, float *ms);

/*
 * CUDA graphs by stream capture: while a stream captures, what is queued on it goes into its
 * graph instead of running; a launch of the graph queues those operations again, each with
 * the launch's correlation id (as CUPTI reports a graph's kernels).
 */
struct fakecuda_graph;
/* -EBUSY if the stream already captures, -ENOMEM. */
FAKECUDA_API int fakecuda_capture_begin(struct fakecuda_stream *stream);
/* The captured graph, or NULL if the stream was not capturing. */
FAKECUDA_API struct fakecuda_graph *fakecuda_capture_end(struct fakecuda_stream *stream);
FAKECUDA_API bool fakecuda_capturing(struct fakecuda_stream *stream);
FAKECUDA_API size_t fakecuda_graph_size(const struct fakecuda_graph *graph);
/*
 * The graph's nodes (its kernels, copies and memsets; an event's record or wait in a capture
 * makes an edge, not a node): how many, and the first `room` of their handles into nodes.
 */
FAKECUDA_API size_t fakecuda_graph_nodes(const struct fakecuda_graph *graph, void **nodes,
					 size_t room);
/* An instance (cuGraphInstantiate): a copy, or NULL. */
FAKECUDA_API struct fakecuda_graph *fakecuda_graph_copy(const struct fakecuda_graph *graph);
FAKECUDA_API void fakecuda_graph_free(struct fakecuda_graph *graph);
/* Queues the graph's operations on `stream`; returns the sequence number of the last. */
FAKECUDA_API uint64_t fakecuda_graph_launch(const struct fakecuda_graph *graph,
					    struct fakecuda_stream *stream, uint32_t correlation,
					    bool runtime);

/* ---- records of completed operations and of synchronisation (records.c) ---- */

/* Emits the activity record and the ground-truth log line of a completed operation. */
void fakecuda_emit_op(const struct fakecuda_op *op, int device, uint32_t stream_id);
/* The CUDA_EVENT record of a record call (fakecuda_event_record), on `stream`'s device. */
void fakecuda_emit_event(const struct fakecuda_event *event, const struct fakecuda_stream *stream);
/*
 * After a synchronisation call `call` of `type` has waited and succeeded: its SYNCHRONIZATION
 * record and ground-truth line. `stream` is the stream synchronised or made to wait (NULL for
 * event and context syncs), `event` the event waited on (else NULL), `device` the context's.
 * A driver call made inside a runtime call reports for it, once; one made by NVIDIA's runtime
 * for itself (outside any call of the program) reports nothing.
 */
FAKECUDA_API void fakecuda_sync_done(struct fakecuda_call *call,
				     CUpti_ActivitySynchronizationType type, int device,
				     const struct fakecuda_stream *stream,
				     const struct fakecuda_event *event);

#endif
