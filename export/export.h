/*
 * Export: streams the events of each recording window into one gzipped Kineto-format trace
 * (shared/TRACE_FORMAT.md) from a background writer thread. This header is the module's interface.
 *
 * Producers (application threads, CUPTI's buffer thread) fill 128-byte events and push them
 * (a hooked launch may fill a 64-byte call record instead: struct gprof_export_call):
 *
 *	struct gprof_export_event ev = {
 *		.kind = GPROF_EXPORT_NVTX_RANGE, .window = w, .ts_ns = t0, .dur_ns = t1 - t0,
 *		.tid = tid, .name = gprof_export_intern(msg),
 *	};
 *	gprof_export_push(&ev);
 *
 * gprof_export_push() copies the event into the calling thread's current chunk (64 KiB, from a
 * pool whose size is the memory cap) and publishes it with one release store: no lock, no
 * allocation, no system call, no waiting. Exceptions, all amortised: a thread's first push
 * allocates its small producer record (calloc, one gettid); every 511 events (1023 call
 * records) the thread takes a new chunk from the pool with a lock-free pop. The writer keeps
 * up to 64 free chunks (4 MiB, at most a quarter of the pool) faulted in ahead of the
 * producers, so that a push seldom touches a page for the first time. When the pool is empty
 * (the writer is behind and GPROF_BUFFER_MB is used up) the event is dropped and counted for
 * its window's metadata.
 *
 * The writer thread visits every producer every few milliseconds, reads the events committed
 * so far (also from partly filled chunks of idle threads), formats them into the file of their
 * window, and recycles full chunks. A thread's events survive its exit: a pthread key
 * destructor marks the producer exited and the writer frees it after its last event. While the
 * writer falls behind (events of more than 16 chunks wait) it may start compressor threads,
 * at most writer_threads, that deflate slices of the file beside it (export/gzip.c); they end
 * with the file.
 *
 * Windows: the stepper opens one per active window (gprof_export_window_open) and closes it
 * at "window complete" (gprof_export_window_close; its life: enum gprof_window_life); the
 * collector, which still delivers late GPU records for the window, holds it too
 * (gprof_export_window_hold) and releases it after its last flush. When the last
 * hold is released the writer drains every event committed before that moment, then finishes
 * the file: metadata events, the final header, the gzip trailer, rename from .partial. Events
 * for a window that is finished, failed or unknown are dropped and counted (stats.late).
 *
 * Errors of the output (folder not creatable, disk full) print one gprof: line, remove the
 * .partial file and abandon that window; producers never notice.
 *
 * The control calls below (windows, process info, stats) take a mutex that the writer never
 * holds during I/O; they may be called from any thread, but not from on_window_done.
 * After fork() the child of a process whose writer runs exports nothing (pushes are dropped,
 * opens fail); a child forked before the first window keeps a working exporter of its own.
 */
#ifndef GPROF_EXPORT_H
#define GPROF_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/activity.h"
#include "common/spans.h"

#ifndef GPROF_VERSION
#define GPROF_VERSION "0.1.0"
#endif

/*
 * Strings. Names that repeat (API names, kernel names, NVTX messages and domains) are interned
 * once per process and JSON-escaped once; events carry the returned pointer, valid until the
 * process ends. Looking up a known string takes no lock (a hash of the bytes and a probe); a
 * new string takes a lock and one allocation. A string longer than GPROF_EXPORT_STR_MAX bytes
 * is cut at a UTF-8 boundary and ends with GPROF_EXPORT_STR_CUT. When the table holds
 * GPROF_EXPORT_STR_BYTES, new strings all map to one placeholder and a warning says so once.
 * Never returns NULL (NULL in, "" out).
 */
#define GPROF_EXPORT_STR_MAX   8192
#define GPROF_EXPORT_STR_BYTES (8u << 20)
#define GPROF_EXPORT_STR_CUT   "...[truncated]"

/* An interned string: text is escaped, without quotes. */
struct gprof_export_str {
	uint32_t raw_len; /* bytes kept of the original (before the cut marker) */
	uint32_t len;	  /* bytes of text */
	bool cut;	  /* truncated: text ends with GPROF_EXPORT_STR_CUT */
	const char *raw;
	struct gprof_export_str *same_hash; /* the string interned before it with its hash */
	char text[];
};
const struct gprof_export_str *gprof_export_intern(const char *s);
const struct gprof_export_str *gprof_export_intern_n(const char *s, size_t len);

/* What an event is: one per row of common/activity.h's GPROF_EXPORT_KIND_TABLE. */
enum gprof_export_kind {
#define GPROF_EXPORT_KIND_ENUM(name, ...) GPROF_EXPORT_##name,
	GPROF_EXPORT_KIND_TABLE(GPROF_EXPORT_KIND_ENUM)
#undef GPROF_EXPORT_KIND_ENUM
	GPROF_EXPORT_KINDS
};

enum gprof_export_flag {
	/*
	 * The launch -> GPU link is complete: write the ac2g flow half with id = correlation,
	 * "s" after a RUNTIME/DRIVER event, "f" ("bp": "e") after a GPU event. Set it on both
	 * sides, and only when both are in the window.
	 */
	GPROF_EXPORT_FLOW = 1u << 0,
	/* Which optional u.api arguments are written. */
	GPROF_EXPORT_ARG_LAUNCH = 1u << 1, /* "kernel" (if set), "grid", "block", "shared memory" */
	GPROF_EXPORT_ARG_STREAM = 1u << 2, /* "stream handle" (never "stream": that means GPU) */
	GPROF_EXPORT_ARG_BYTES = 1u << 3,  /* "bytes" */
	GPROF_EXPORT_ARG_COPY_KIND = 1u << 4, /* "copy kind": "HtoD", ... */
	GPROF_EXPORT_ARG_PTR = 1u << 5,	      /* "ptr" */
	GPROF_EXPORT_ARG_RESULT = 1u << 6,    /* "result" */
	/* "graph capture": true, a call that stream capture made into a graph node (no GPU work) */
	GPROF_EXPORT_ARG_CAPTURED = 1u << 7,
	/* CPU_OP: u.op.seq is set ("Sequence number" and "Fwd thread id" are written) */
	GPROF_EXPORT_OP_SEQ = 1u << 8,
	/* CPU_OP: a record_function scope, written as user_annotation as PyTorch does */
	GPROF_EXPORT_OP_USER = 1u << 9,
	/*
	 * RUNTIME, DRIVER: a call that queues no GPU work, left out of the trace and its
	 * summary (GPROF_API_CALLS=lean) and counted in gprof.left_out
	 */
	GPROF_EXPORT_QUIET = 1u << 10,
	/*
	 * MEMORY: a tensor's allocation or free in PyTorch's caching allocator (u.memory.address,
	 * bytes, allocated and reserved: its totals after it): the [memory] event alone
	 */
	GPROF_EXPORT_MEMORY_TENSOR = 1u << 11,
	/* MEMORY (a device's): u.memory.reserved is what its stream-ordered pools hold */
	GPROF_EXPORT_MEMORY_POOLS = 1u << 12,
	/*
	 * CPU_OP: an operator of PyTorch's own profiler (preload/kineto.c), u.op.rf_id its
	 * Kineto id: its name, args and "fwdbwd" link come with the window's operators'
	 * (gprof_export_window_op_args)
	 */
	GPROF_EXPORT_OP_KINETO = 1u << 13,
};

/* Same values as CUPTI's CUpti_ActivityMemcpyKind. */
enum gprof_export_copy_kind {
	GPROF_COPY_UNKNOWN,
	GPROF_COPY_HTOD,
	GPROF_COPY_DTOH,
	GPROF_COPY_HTOA,
	GPROF_COPY_ATOH,
	GPROF_COPY_ATOA,
	GPROF_COPY_ATOD,
	GPROF_COPY_DTOA,
	GPROF_COPY_DTOD,
	GPROF_COPY_HTOH,
	GPROF_COPY_PTOP,
};

/* Same values as CUPTI's CUpti_ActivityMemoryKind. */
enum gprof_export_mem_kind {
	GPROF_MEM_UNKNOWN,
	GPROF_MEM_PAGEABLE,
	GPROF_MEM_PINNED,
	GPROF_MEM_DEVICE,
	GPROF_MEM_ARRAY,
	GPROF_MEM_MANAGED,
	GPROF_MEM_DEVICE_STATIC,
	GPROF_MEM_MANAGED_STATIC,
};

struct gprof_export_api {
	const struct gprof_export_str *api;    /* exact entry point ("__cudaLaunchKernel_ptsz") */
	const struct gprof_export_str *kernel; /* ARG_LAUNCH: kernel name, NULL to omit */
	uint64_t stream;		       /* ARG_STREAM: the cudaStream_t / CUstream value */
	uint64_t bytes;			       /* ARG_BYTES */
	uint64_t ptr;			       /* ARG_PTR: the pointer argument or result */
	uint32_t grid[3];		       /* ARG_LAUNCH */
	uint32_t block[3];		       /* ARG_LAUNCH */
	uint32_t shared_bytes;		       /* ARG_LAUNCH: dynamic shared memory */
	uint16_t cbid;			       /* CUPTI callback id */
	uint8_t copy_kind;		       /* ARG_COPY_KIND: enum gprof_export_copy_kind */
	int32_t result;			       /* ARG_RESULT: cudaError_t or CUresult */
	uint32_t external;		       /* the enclosing CPU_OP's External id; 0: none */
};

struct gprof_export_kernel {
	uint32_t grid[3];
	uint32_t block[3];
	uint32_t registers;    /* per thread */
	uint32_t shared_bytes; /* static + dynamic, per block */
	uint32_t context;
	uint32_t external;   /* as in gprof_export_api */
	uint32_t annotation; /* the innermost user annotation's External id; 0: none */
};

struct gprof_export_copy {
	uint64_t bytes;
	uint32_t context;
	uint32_t external;   /* as in gprof_export_api */
	uint32_t annotation; /* as in gprof_export_kernel */
	uint8_t copy_kind;   /* MEMCPY: enum gprof_export_copy_kind */
	uint8_t src_kind;    /* MEMCPY: enum gprof_export_mem_kind */
	uint8_t dst_kind;    /* MEMCPY and MEMSET: enum gprof_export_mem_kind */
};

/* One event, 128 bytes. Fields a kind does not use are ignored. */
/* MEMORY's device for a tensor in the host's memory (PyTorch's "Device Type" 0) */
#define GPROF_EXPORT_HOST UINT32_MAX

struct gprof_export_event {
	uint64_t ts_ns;			     /* start, CLOCK_REALTIME ns (CUPTI's clock) */
	uint64_t dur_ns;		     /* X kinds: end - start (a wrapped negative is 0) */
	const struct gprof_export_str *name; /* see enum gprof_export_kind; NULL writes "" */
	uint32_t window;		     /* from gprof_export_window_open() */
	uint32_t tid;			     /* host kinds: kernel thread id (gettid) */
	uint32_t device;		     /* GPU kinds and MEMORY */
	uint32_t stream;		     /* GPU kinds: CUPTI stream id */
	uint32_t correlation;		     /* API and GPU kinds */
	uint16_t kind;			     /* enum gprof_export_kind */
	uint16_t flags;			     /* enum gprof_export_flag */
	union {
		uint64_t step; /* STEP: the step number */
		struct {
			const struct gprof_export_str *domain; /* NULL for the default */
			uint32_t external;	   /* a range's External id as an annotation; 0 */
		} nvtx;				   /* NVTX kinds */
		struct gprof_export_api api;	   /* RUNTIME, DRIVER */
		struct gprof_export_kernel kernel; /* KERNEL */
		struct gprof_export_copy copy;	   /* MEMCPY, MEMSET */
		struct {
			uint64_t count;			     /* elements of the operator's input */
			const struct gprof_export_str *type; /* their type, as PyTorch names it */
			const struct gprof_export_str *dims; /* "Input Dims" as JSON; NULL: count */
			uint64_t rf_id;			     /* "Record function id"; 0: none */
			uint64_t seq;	   /* "Sequence number", with GPROF_EXPORT_OP_SEQ */
			uint64_t fwd_ns;   /* a backward node: when its forward operator began,
					  * where "fwdbwd" links it from; 0: no link */
			uint32_t fwd_tid;  /* backward: the forward operator's thread; 0: forward */
			uint32_t external; /* its "External id", never 0 */
		} op;			   /* CPU_OP */
		struct {
			uint64_t id;	 /* "Python id", never 0 */
			uint64_t parent; /* "Python parent id"; 0: null */
			uint64_t module; /* "Python module id" */
		} py;			 /* PYTHON */
		struct {
			uint32_t on_event;   /* a wait on an event: says what recorded it */
			uint32_t context;    /* CUPTI's context id */
			uint32_t event;	     /* the CUDA event's id (event types only) */
			int32_t wait_stream; /* the stream that recorded the event; -1: unknown */
			int64_t wait_corr;   /* the correlation id of that record call; -1 */
		} sync;			     /* SYNC (stream: UINT32_MAX for none) */
		struct {
			uint64_t allocated; /* device bytes in use after this change */
			uint64_t address;   /* what was allocated or freed; 0: none (a base) */
			int64_t bytes;	    /* + allocated, - freed */
			uint64_t reserved;  /* the allocator's (TENSOR), the pools' (POOLS) */
		} memory;		    /* MEMORY */
	} u;
};

/*
 * A hooked call's runtime event in 64 bytes, half of an event's space in the buffer, for the
 * call the hooks write most (a launch, when CUPTI does not record the API): a RUNTIME event's
 * fields less what its type holds for every call of one entry point (name, api, flags, cbid;
 * gprof_export_call_types). The writer reads it as that event, with device, stream,
 * correlation and ptr, bytes and copy_kind 0. Its kind, where an event's is, says which it is.
 * Only what gprof_export_call_fits() accepts fits.
 */
#define GPROF_EXPORT_CALL 0xffffu /* a record's kind: a gprof_export_call */

struct gprof_export_call {
	uint64_t ts_ns;
	uint32_t dur_ns;
	uint32_t window;
	uint32_t tid;
	uint32_t external;
	const struct gprof_export_str *kernel;
	uint64_t stream;
	uint32_t grid_x;
	uint16_t kind; /* GPROF_EXPORT_CALL */
	int16_t result;
	uint16_t grid_yz[2];
	uint16_t block[3];
	uint16_t type; /* its row of gprof_export_call_types */
	uint32_t shared_bytes;
};

/* What every call of one entry point carries: set once, before the first of its calls. */
struct gprof_export_call_type {
	const struct gprof_export_str *name; /* the public name */
	const struct gprof_export_str *api;  /* the exact entry point */
	uint16_t flags;
	uint16_t cbid;
};
#define GPROF_EXPORT_CALL_TYPES 256
extern struct gprof_export_call_type gprof_export_call_types[GPROF_EXPORT_CALL_TYPES];

/*
 * Whether a call's event fits a gprof_export_call, else it takes a whole event; dims_or: its
 * grid's y and z and its block's x, y and z or'ed together.
 */
static inline bool gprof_export_call_fits(uint64_t dur_ns, int32_t result, uint32_t dims_or)
{
	return dur_ns <= UINT32_MAX && result == (int16_t)result && !(dims_or >> 16);
}

/*
 * What the end-of-window summary and gprof-summary count of an event: the summary column of
 * its kind's row (common/activity.h). The first three are GPU time and busy time, EARLIER
 * busy time only.
 */
enum gprof_summary_class {
	GPROF_SUM_KERNEL,
	GPROF_SUM_MEMCPY,
	GPROF_SUM_MEMSET,
	GPROF_SUM_EARLIER,
	GPROF_SUM_STEP,
	GPROF_SUM_CALL,
	GPROF_SUM_RANGE,
	GPROF_SUM_MEMORY,
	GPROF_SUM_OP,
	GPROF_SUM_NONE,
};

static inline enum gprof_summary_class gprof_export_summary_class(unsigned kind)
{
	static const unsigned char class_of[GPROF_EXPORT_KINDS] = {
#define GPROF_SUM_OF(name, key, emitter, ph, cat, payload, summary, ...) \
	[GPROF_EXPORT_##name] = GPROF_SUM_##summary,
	    GPROF_EXPORT_KIND_TABLE(GPROF_SUM_OF)
#undef GPROF_SUM_OF
	};

	return kind < GPROF_EXPORT_KINDS ? (enum gprof_summary_class)class_of[kind]
					 : GPROF_SUM_NONE;
}

/* The External id an event carries (its row's external column: 0 for NONE). */
#define GPROF_EXPORT_EXTERNAL_NONE(ev, payload) 0
#define GPROF_EXPORT_EXTERNAL_CALL(ev, payload) (ev)->u.payload.external
#define GPROF_EXPORT_EXTERNAL_WORK(ev, payload) (ev)->u.payload.external
static inline uint32_t gprof_export_external(const struct gprof_export_event *ev)
{
	switch (ev->kind) {
#define GPROF_EXTERNAL_OF(name, key, emitter, ph, cat, payload, summary, external) \
	case GPROF_EXPORT_##name:                                                  \
		return GPROF_EXPORT_EXTERNAL_##external(ev, payload);
		GPROF_EXPORT_KIND_TABLE(GPROF_EXTERNAL_OF)
#undef GPROF_EXTERNAL_OF
	}
	return 0;
}

/*
 * Appends one event (copied) for ev->window. Returns 0, or -ENOBUFS when it was dropped and
 * counted (memory cap reached, export not running, or the thread is exiting). Never blocks.
 */
int gprof_export_push(const struct gprof_export_event *ev);

/*
 * The same without the copy, for a hot path that builds its event in place: reserve returns
 * the calling thread's next slot, or NULL when an event of `window` was dropped and counted
 * (as push). The slot holds an older event's bytes: set every field the kind uses, and
 * .window to `window`, then commit, which publishes it. Between the two the thread reserves
 * and pushes nothing else. Never blocks.
 */
struct gprof_export_event *gprof_export_reserve(uint32_t window);
void gprof_export_commit(void);
/* The same for a gprof_export_call: set every field, then commit it. */
struct gprof_export_call *gprof_export_reserve_call(uint32_t window);
void gprof_export_commit_call(void);

struct gprof_export_summary;

/* What became of a window (on_window_done). */
struct gprof_export_result {
	uint32_t id;
	uint64_t number;     /* the stepper's window number */
	int error;	     /* 0, or the negative errno that made the window fail */
	const char *path;    /* the final file, or the file that failed ("" if none) */
	uint64_t first_step; /* as given to open / set_last_step */
	uint64_t last_step;
	uint64_t events[GPROF_EXPORT_KINDS]; /* written, per kind */
	uint64_t dropped;		     /* buffer full, for this window */
	uint64_t cupti_dropped;		     /* gprof_export_window_add_cupti_dropped */
	/* Figures tallied as the events were written; NULL if the window failed (or no memory). */
	const struct gprof_export_summary *summary;
};

/*
 * The end-of-window summary of r (GPROF_SUMMARY), for on_window_done: malloc'd text (free it)
 * of lines that each start with "gprof: ", or NULL (no summary, out of memory):
 *
 *	gprof: trace written: <path>
 *	gprof:   steps A-B: <n> in <time>, mean step <time>
 *	gprof:   GPU <d>: busy <p>% of step time (<time>); kernels <time>, memcpy <time>,
 *		 memset <time>; peak device memory in use <bytes>                  (one line per device)
 *	gprof:   GPU-bound: ... | host-bound: ... | mixed: ...   (what bounds the steps)
 *	gprof:   top <n> of <m> kernels by GPU time:   (then calls, total, mean, GPU%, name)
 *	gprof:   copies   count  bytes  time  GB/s          (then a line per direction, memset)
 *	gprof:   top <n> of <m> CUDA calls by CPU time:  (then calls, total, mean, step%, name)
 *	gprof:   top <n> of <m> NVTX ranges by time:     (the same)
 *	gprof:   dropped records: <n> (buffer full <n>, CUPTI <n>)      (only when some were)
 *
 * A window without GPU activity (no CUPTI) gets one line: "gprof: trace written: <path> (steps ...;
 * no GPU activity recorded[; GPU <d> peak device memory in use <bytes>][; dropped records...])".
 * Busy is the union of the device's kernel, memcpy and memset intervals within the span of the
 * window's steps (from the first step's start to the last one's end), over that span.
 * GPU% is a kernel's share of all GPU time (kernels, copies and memsets, all devices). Peak
 * memory is the highest gpu_memory counter value. Times are "12.345 ms" (ns, us, ms, s), sizes
 * "1.50 MiB" (B, KiB, MiB, GiB, TiB), GB/s is 1e9 B/s.
 */
char *gprof_export_summary_text(const struct gprof_export_result *r);
/*
 * The one-line form for any window, with each device's busy share when there was GPU activity:
 * "gprof: trace written: <path> (steps ...; GPU <d> busy <p>% of step time (<time>)...)".
 */
char *gprof_export_summary_line(const struct gprof_export_result *r);

struct gprof_format_row;

/* Set up by gprof_export_init(); read by the writer. */
struct gprof_export_config {
	/*
	 * GPROF_OUTPUT template: %h host, %p pid, %r rank, %q{VAR}, %%; expanded once by
	 * gprof_export_init and made absolute there (later setenv or chdir change nothing).
	 */
	const char *output;
	int gzip_level;	     /* 0..9 */
	size_t buffer_bytes; /* cap on chunk memory (GPROF_BUFFER_MB); at least one chunk */
	/*
	 * Compressor threads (GPROF_WRITER_THREADS): at most this many beside the writer, started
	 * only while it falls behind; 0: the writer compresses alone.
	 */
	unsigned writer_threads;
	uint64_t base_ns; /* baseTimeNanoseconds; 0: the week's start (UTC), as every process */
	/* Called on the writer thread when a window's file is done or abandoned; may be NULL. */
	void (*on_window_done)(const struct gprof_export_result *r, void *arg);
	void *arg;
	/* The files' format (export/format.h); NULL: gprof_formats[0], TRACE_FORMAT.md's. */
	const struct gprof_format_row *format;
	/*
	 * PyTorch reports its tensors' memory (GPROF_TORCH=on: MEMORY events flagged
	 * GPROF_EXPORT_MEMORY_TENSOR): device allocations then make the counter only.
	 */
	bool tensor_memory;
	/*
	 * GPROF_TORCH=on (the start-up hook runs PyTorch's own profiler): a window's operators
	 * of PyTorch's profiler (GPROF_EXPORT_OP_KINETO) are written at its end, with the names
	 * and args gprof_export_window_op_args hands over (its last GPROF_EXPORT_HELD_OPS; those
	 * before them by PyTorch's own times).
	 */
	bool torch_ops;
};
#define GPROF_EXPORT_HELD_OPS (1u << 18)

/*
 * Once per process, before anything else here (no thread is started: that waits for the first
 * window, so it is safe in a constructor before fork). Reserves the chunk pool (address space
 * only; pages are touched as they are used, the writer's reserve first). Returns 0 or a
 * negative errno.
 */
int gprof_export_init(const struct gprof_export_config *cfg);

/*
 * Process exit: finishes every open window whatever its holds, drains, writes and renames, and
 * stops the writer. Waits at most timeout_ms; a window not done by then stays .partial. Later
 * pushes are dropped. Returns 0 or -ETIMEDOUT.
 */
int gprof_export_shutdown(unsigned timeout_ms);

/* Process-wide facts for the header, any time; each window's final header takes the latest. */
#define GPROF_EXPORT_MAX_DEVICES 16
struct gprof_export_device {
	int id;
	char name[256];
	uint64_t total_global_mem;
	int compute_major, compute_minor;
	int max_threads_per_block, max_threads_per_mp;
	int regs_per_block, regs_per_mp;
	int warp_size;
	int shared_mem_per_block, shared_mem_per_block_optin, shared_mem_per_mp;
	int num_sms;
};

struct gprof_export_process_info {
	int cupti_version; /* 0: unknown */
	int cuda_runtime_version;
	int cuda_driver_version;
	char cupti_path[4096];	/* the libcupti in use, "" if none */
	char cupti_status[256]; /* "in use", or why CUPTI is not used */
	unsigned n_devices;
	struct gprof_export_device devices[GPROF_EXPORT_MAX_DEVICES];
};
void gprof_export_set_process_info(const struct gprof_export_process_info *info);
/*
 * The communication backend distributedInfo names from now on ("nccl": the process calls
 * NCCL), a string that lives as long as the process; never set: none is written.
 */
void gprof_export_set_backend(const char *name);

/* What the stepper knows when a window becomes active. */
struct gprof_export_window_info {
	uint64_t number; /* the stepper's window number ("window" in the metadata) */
	uint64_t first_step;
	const char *schedule; /* GPROF_SCHEDULE as text */
	uint64_t begin_ns;    /* the window's API calls are those that start at or after it */
};

/*
 * What windows need, ahead of the first: the event buffer (under `ulimit -v` at most a
 * quarter of the address space left) and the writer thread. 0, or a negative errno and why.
 */
#define GPROF_EXPORT_WHY_MAX 320
int gprof_export_start(char why[GPROF_EXPORT_WHY_MAX]);

/*
 * Opens a window holding one hold (the caller's); *id is what events carry. The file is
 * created by the writer thread. Besides shared/TRACE_FORMAT.md's fields its header holds the
 * "gprof" object: version, schedule, window (info->number), first_step, last_step (null
 * until set), records (events written per kind), dropped {buffer_full: this window's events
 * lost to the memory cap, cupti: as added below, late: events that came for windows already
 * finished since the previous file}, cupti {library, version, status}, warnings (every
 * gprof: warning and error line printed while the window was open) and warnings_omitted
 * (those that did not fit the header or were no longer kept). Returns 0, -EBUSY (too many
 * windows not yet finished: GPROF_EXPORT_WINDOWS), or another negative errno, said here in
 * one line: export not running (-ENODEV), no room for the event buffer, which the first
 * window reserves unless gprof_export_start() did, or the writer thread could not start.
 */
#define GPROF_EXPORT_WINDOWS 8
int gprof_export_window_open(const struct gprof_export_window_info *info, uint32_t *id);
/* Whether an open now would find a slot (not -EBUSY). */
bool gprof_export_window_can_open(void);
/*
 * The slot of window id: the one index at which every module keeps its state of the window
 * (the writer's window and its drop count, the collector's attribution). An id opens only
 * when export's slot is free, and every holder frees its own slot before it releases its
 * hold, so the slot is then free everywhere.
 */
static inline unsigned gprof_export_window_slot(uint32_t id)
{
	return id % GPROF_EXPORT_WINDOWS;
}
/*
 * A window's life, in order. Its warmup is the stepper's phase (GPROF_PHASE_WARMUP), before
 * the window has a state; until it opens it is the session's (preload/windows.c), which has
 * no id for it yet; from its opening on, export's, the one record of it: the id is the handle
 * every module keeps, gprof_export_window_slot() where each keeps its state of it.
 */
enum gprof_window_life {
	GPROF_WINDOW_FREE,    /* none (an export slot: none yet, or the id is not its window) */
	GPROF_WINDOW_OPENING, /* the session's: active, but no slot was free: opens at a step's end */
	GPROF_WINDOW_ACTIVE,   /* opened: the hooks record into it */
	GPROF_WINDOW_DRAINING, /* the opener closed it: its late GPU records and args still come */
	GPROF_WINDOW_CLOSING,  /* no holds left (or shutdown): finished after the next drain */
	GPROF_WINDOW_WRITTEN,  /* its trace is on disk under its final name */
	GPROF_WINDOW_GIVEN_UP, /* its trace failed and was removed (said in a gprof: line) */
};
static inline const char *gprof_window_life_name(enum gprof_window_life life)
{
	static const char *const names[] = {"free",    "opening", "active",  "draining",
					    "closing", "written", "given up"};

	return (unsigned)life < sizeof(names) / sizeof(names[0]) ? names[life] : "?";
}
/* Window id's life: FREE once its slot was claimed again by a later id (or never was). */
enum gprof_window_life gprof_export_window_life(uint32_t id);
/* The stepper's number of window id (its info's) while it is live, else UINT64_MAX. */
uint64_t gprof_export_window_number(uint32_t id);
/*
 * Another party (the collector) delays the finish until its own release. Hold before the
 * opener releases: a hold on a window whose holds already reached zero is ignored (false).
 */
bool gprof_export_window_hold(uint32_t id);
/* Drops one hold; at zero the writer drains what was committed before and finishes the file. */
void gprof_export_window_release(uint32_t id);
/* The opener's release: ACTIVE to DRAINING, its hold dropped (once; later calls do nothing). */
void gprof_export_window_close(uint32_t id);
/* The window's API calls are those that start before end_ns (set once, before the close). */
void gprof_export_window_end(uint32_t id, uint64_t end_ns);
/*
 * Window id's span, [begin, end) (end UINT64_MAX until set), without a lock: the one record of
 * it, read by the collector for each of its records. For a window the caller holds or records
 * into (a slot claimed again by a later window answers for that one).
 */
struct gprof_span gprof_export_window_span(uint32_t id);
void gprof_export_window_set_last_step(uint32_t id, uint64_t step);
/*
 * --torch: PyTorch's operators' inputs as torch.profiler's record_shapes writes them, from
 * the start-up hook, as a JSON array [[id, {args}], ...] (export/opargs.c): the window's
 * cpu_op events of those RecordFunction ids take these args in place of their "Input Dims",
 * and those it did not see, from the window's begin on, are added. Call while holding the
 * window; a later call adds to the earlier ones. Returns how many operators it names, or a
 * negative errno with *why.
 */
int gprof_export_window_op_args(uint32_t id, const char *json, size_t len, const char **why);
/* Records CUPTI lost (cuptiActivityGetNumDroppedRecords), for the metadata. */
void gprof_export_window_add_cupti_dropped(uint32_t id, uint64_t n);
/* Waits until the window is finished or abandoned: 0, or -ETIMEDOUT. */
int gprof_export_window_wait(uint32_t id, unsigned timeout_ms);

struct gprof_export_stats {
	uint64_t written; /* events written to files */
	uint64_t dropped; /* buffer full (all windows) */
	uint64_t late;	  /* for a window finished, failed or unknown */
	uint64_t windows_done;
	uint64_t windows_failed;
};
void gprof_export_get_stats(struct gprof_export_stats *st);

/*
 * Tests: while paused the writer reads no event and finishes no window (it still opens files);
 * pausing returns once a pass that may read events is over.
 */
void gprof_export_pause(bool paused);

#endif
