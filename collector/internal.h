/*
 * What collector/'s files share with each other (and with test/test-collector.c). Not an
 * interface: nothing else includes it; use collector.h.
 */
#ifndef GPROF_COLLECTOR_INTERNAL_H
#define GPROF_COLLECTOR_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <cupti.h>

#include "collector/collector.h"
#include "common/compiler.h"
#include "common/map.h"
#include "export/export.h"

/* names.c: API function names by CUPTI callback id, and demangled kernel names. */
struct gprof_coll_api {
	const struct gprof_export_str *name; /* as readers know it: "cudaLaunchKernel" */
	const struct gprof_export_str *api;  /* the entry point: "__cudaLaunchKernel_ptsz" */
	unsigned launches; /* the GPROF_ACT_* bit of the GPU work it queues (kernel, copy,
			    * memset) that CUPTI reports as a record; 0 for none */
	bool quiet;	   /* left out of traces (GPROF_API_CALLS=lean): it queues no work */
};

typedef CUptiResult (*gprof_coll_cbname_fn)(CUpti_CallbackDomain domain, uint32_t cbid,
					    const char **name);
/* The loaded CUPTI's cuptiGetCallbackName (NULL: the built-in table only). */
void gprof_coll_names_use(gprof_coll_cbname_fn fn);
/* GPROF_API_CALLS=all: no call is quiet. Before the collector thread starts. */
void gprof_coll_names_keep_all(bool all);
/* Whether a public API name ("cudaGetDevice") is one GPROF_API_CALLS=lean leaves out. */
bool gprof_coll_name_quiet(const char *pub);
/* Never NULL; unknown ids get "cudaRuntimeApi#<cbid>" or "cuDriverApi#<cbid>". */
const struct gprof_coll_api *gprof_coll_api_name(bool driver, uint32_t cbid);
/*
 * From a CUPTI callback name ("cudaMemcpyAsync_ptsz_v7000", "cuMemcpyHtoD_v2") the entry
 * point (the runtime's _v<version> tag dropped: "cudaMemcpyAsync_ptsz", "cuMemcpyHtoD_v2") and
 * the public name ("cudaMemcpyAsync", "cuMemcpyHtoD"): no "__" prefix, no _ptsz/_ptds, no _vN.
 */
void gprof_coll_clean_name(const char *cupti_name, char *api, char *pub, size_t size);
/* The GPROF_ACT_* bit of the GPU work a public API name queues, 0 for none. */
unsigned gprof_coll_name_launches(const char *pub);
/* A kernel's demangled, interned name; each distinct raw name is demangled once. */
const struct gprof_export_str *gprof_coll_kernel_name(const char *raw);

/* records.c: one CUPTI record -> one event (the pure translation). */
enum gprof_coll_class {
	GPROF_COLL_OTHER,    /* a record of a known kind that is not ours: ignored */
	GPROF_COLL_UNKNOWN,  /* a kind without a row in GPROF_CUPTI_KIND_TABLE: ignored */
	GPROF_COLL_UNTIMED,  /* zero timestamps (CUPTI could not time it): skipped, counted */
	GPROF_COLL_API,	     /* ev is RUNTIME or DRIVER */
	GPROF_COLL_GPU,	     /* ev is KERNEL, MEMCPY or MEMSET */
	GPROF_COLL_MEMORY,   /* device memory allocated or released: ev is MEMORY */
	GPROF_COLL_EXTERNAL, /* a call made inside a CPU operator: ev.correlation, external */
	GPROF_COLL_SYNC,     /* a wait of the host's: ev is SYNC; event types: event_sync */
	GPROF_COLL_EVENT,    /* a CUDA event recorded: ev.stream, ev.correlation, event_sync */
	GPROF_COLL_HOST,     /* a host thread's (CUPTI's id in ev.tid, 0: none), written as is */
};

/*
 * The external correlation kinds libgprof pushes: CPU operators' (Kineto's is CUSTOM0) and
 * user annotations' (CUSTOM1, as Kineto's).
 */
#define GPROF_COLL_EXTERNAL_KIND   CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2
#define GPROF_COLL_ANNOTATION_KIND CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1

struct gprof_coll_rec {
	enum gprof_coll_class cls;
	unsigned launches;   /* API: GPROF_ACT_* bit of the GPU work a successful call queued */
	uint32_t thread;     /* API: CUPTI's threadId (gettid(), or pthread_self() cut) */
	int64_t delta;	     /* MEMORY: +bytes allocated, -bytes released */
	uint64_t address;    /* MEMORY */
	uint64_t pool;	     /* MEMORY: the stream-ordered pool it changed (its address); 0 */
	uint64_t pool_size;  /* MEMORY: what that pool holds after it */
	uint32_t external;   /* EXTERNAL: the operator's, or the annotation's, id */
	bool annotation;     /* EXTERNAL: of GPROF_COLL_ANNOTATION_KIND */
	uint64_t event_sync; /* SYNC, EVENT: CUPTI's id of one record of an event; 0: none */
	/* Every field but window (and, for MEMORY, u.memory.allocated); API's tid is `thread`. */
	struct gprof_export_event ev;
};

void gprof_coll_translate(const CUpti_Activity *rec, struct gprof_coll_rec *out);

/* A successful launch's API event in short, while it waits for its GPU record (held.c). */
struct gprof_coll_held_api {
	uint64_t ts_ns, dur_ns;
	uint32_t tid; /* the event's: the kernel thread id */
	uint32_t cbid : 31, driver : 1;
};

/* The short form of an API event of a call that returned 0, and the event made again. */
void gprof_coll_api_pack(const struct gprof_export_event *ev, struct gprof_coll_held_api *a);
void gprof_coll_api_unpack(const struct gprof_coll_held_api *a, uint32_t correlation,
			   struct gprof_export_event *ev);

/* load.c: finding libcupti and its entry points. */
struct gprof_cupti {
	void *handle;
	char path[PATH_MAX];
	uint32_t version; /* cuptiGetVersion; 0 if it said nothing */
	CUptiResult (*get_version)(uint32_t *version);
	CUptiResult (*result_string)(CUptiResult r, const char **str);
	CUptiResult (*subscribe)(CUpti_SubscriberHandle *h, CUpti_CallbackFunc fn, void *arg);
	CUptiResult (*unsubscribe)(CUpti_SubscriberHandle h);
	CUptiResult (*enable)(CUpti_ActivityKind kind);
	CUptiResult (*disable)(CUpti_ActivityKind kind);
	CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc request,
					  CUpti_BuffersCallbackCompleteFunc complete);
	CUptiResult (*flush_all)(uint32_t flag);
	CUptiResult (*next_record)(uint8_t *buf, size_t valid, CUpti_Activity **rec);
	CUptiResult (*dropped)(CUcontext ctx, uint32_t stream, size_t *n);
	/* Optional: */
	gprof_coll_cbname_fn callback_name;
	CUptiResult (*set_thread_id_type)(CUpti_ActivityThreadIdType type);
	CUptiResult (*push_external)(CUpti_ExternalCorrelationKind kind, uint64_t id);
	CUptiResult (*pop_external)(CUpti_ExternalCorrelationKind kind, uint64_t *id);
	CUptiResult (*enable_callback)(uint32_t enable, CUpti_SubscriberHandle sub,
				       CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
};

/*
 * Loads CUPTI in DESIGN.md's order (lib if not empty, and then nothing else); fills *cupti
 * (gprof_coll.cupti). Returns 0, or a negative errno with the reason in why.
 */
int gprof_coll_load(struct gprof_cupti *cupti, const char *lib, char *why, size_t why_len);
/* From gprof_collector_init: the environment the search needs, read once. */
void gprof_coll_load_env(void);
/* "CUPTI_ERROR_UNKNOWN (999)" */
const char *gprof_coll_strerror(const struct gprof_cupti *cupti, CUptiResult r, char *buf,
				size_t len);

/* buffers.c: the activity buffers and the queue of completed ones. */
#define GPROF_COLL_BUF_BYTES (128u << 10)
/* A thread's first buffer (see gprof_coll_buffer_request). */
#define GPROF_COLL_SMALL_BYTES (4u << 10)

struct gprof_coll_buf {
	uint8_t *buf;
	size_t valid;
	bool discard; /* a static discard buffer: its records count as dropped */
	bool small;   /* one of the pool's small buffers */
};

/*
 * The collector's memory budget is cap_bytes (its share of GPROF_BUFFER_MB): the pool's buffers,
 * allocated as needed, and held.c's table share it. 0 or -ENOMEM.
 */
int gprof_coll_buffers_init(size_t cap_bytes);
size_t gprof_coll_mem_cap(void);
/* Takes bytes of the budget if they are left (any thread); gives them back. */
bool gprof_coll_mem_take(size_t bytes);
void gprof_coll_mem_give(size_t bytes);
void CUPTIAPI gprof_coll_buffer_request(uint8_t **buf, size_t *size, size_t *max_records);
void CUPTIAPI gprof_coll_buffer_complete(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
					 size_t valid);
/* The collector thread: the oldest completed buffer, false if there is none. */
bool gprof_coll_buffers_take(struct gprof_coll_buf *b);
/* The collector thread: whether the pool ran low since the last call (flush CUPTI now). */
bool gprof_coll_buffers_low(void);
void gprof_coll_buffers_give_back(const struct gprof_coll_buf *b);
/* Sleeps until a buffer completes, the pool runs low, gprof_coll_kick(), or timeout_ms. */
void gprof_coll_wait(unsigned timeout_ms);
void gprof_coll_kick(void);

/*
 * held.c: what waits for its partner (a GPU record for its launch record or the other way
 * round), and the correlation map; they grow within half of the budget. Collector thread only.
 */
enum gprof_coll_held_kind {
	GPROF_COLL_HELD_GPU,
	GPROF_COLL_HELD_API
};

struct gprof_coll_held_gpu {
	struct gprof_export_event ev;
	uint32_t next; /* index + 1 of the next GPU event of the same correlation, 0 at the end */
};

/* A table of fixed-size entries and the stack of its free ones, grown by doubling. */
struct gprof_coll_held_table {
	void *items;
	size_t size; /* bytes per entry */
	uint32_t *free_list, n_free, cap;
	uint32_t peak; /* most entries in use since the last reset of the peak */
};

/*
 * What waits, as one struct that the caller owns and passes to every call below (attrib.c's,
 * for the collector thread; a test's own).
 */
struct gprof_coll_held {
	struct gprof_coll_held_table tables[2]; /* by enum gprof_coll_held_kind */
	/* The tables' entries, by index + 1 - 1; they move when they grow (in alloc). */
	struct gprof_coll_held_gpu *gpus;
	struct gprof_coll_held_api *apis;
	struct gprof_map links; /* correlation id -> what attrib.c knows of it */
	size_t charged;		/* what the tables and the map take of the budget now */
	bool refused;		/* an entry was refused for want of room */
};

int gprof_coll_held_init(struct gprof_coll_held *h);
/* A free entry's index + 1, growing the table if the limit allows; 0 at the limit. */
uint32_t gprof_coll_held_alloc(struct gprof_coll_held *h, enum gprof_coll_held_kind k);
void gprof_coll_held_free(struct gprof_coll_held *h, enum gprof_coll_held_kind k, uint32_t index1);
/* Entries in use; the most in use since the last reset of the peak. */
uint32_t gprof_coll_held_count(const struct gprof_coll_held *h, enum gprof_coll_held_kind k);
uint32_t gprof_coll_held_peak(struct gprof_coll_held *h, enum gprof_coll_held_kind k, bool reset);
/* Whether an entry was refused for want of room since the last clear. */
bool gprof_coll_held_refused(struct gprof_coll_held *h, bool clear);
/* gprof_map_put() on the links, growing the map if the limit allows: 0 or -ENOSPC. */
int gprof_coll_links_put(struct gprof_coll_held *h, uint64_t corr, uint64_t link);
/* Everything forgotten; back to the first sizes. */
void gprof_coll_held_reset(struct gprof_coll_held *h);

/*
 * capture.c: calls that stream capture made into graph nodes. _note: CUPTI's resource callback,
 * on the capturing thread (any thread); _made (collector thread): whether a call of thread tid
 * that ran in [begin_ns, end_ns] made one, which then queued nothing.
 */
void gprof_coll_capture_note(uint32_t tid, uint64_t ns);
bool gprof_coll_capture_made(uint32_t tid, uint64_t begin_ns, uint64_t end_ns);

/*
 * external.c, collector thread: an EXTERNAL record's correlation id -> operator id, and an
 * API or GPU event's "External id" set from what was noted for its correlation id (0: none).
 * Direct-mapped by correlation id: an entry lives until a call this many ids later takes its
 * slot, far longer than a launch waits for its GPU record.
 */
#define GPROF_COLL_EXTERNAL_SLOTS 16384
void gprof_coll_external_note(uint32_t corr, bool annotation, uint32_t id);
void gprof_coll_external_apply(struct gprof_export_event *ev);

/* attrib.c: records -> events of windows (collector thread only). */
#define GPROF_COLL_WINDOWS GPROF_EXPORT_WINDOWS

#define GPROF_COLL_MEMORY_DEVICES 64

/* The stream-ordered pools a window saw, and what each holds (its latest record's figure). */
#define GPROF_COLL_POOLS 16
struct gprof_coll_pool {
	uint64_t pool, size;
	uint32_t device;
};

struct gprof_coll_win {
	/*
	 * Claimed (id last) and ended by the session's threads, freed (id = 0) by the collector
	 * thread: read and written with atomics.
	 */
	uint32_t id; /* export window (its handle: its facts, its span included, are export's) */
	/* The collector thread's own; zero while the slot is free. */
	uint64_t ended_ms; /* CLOCK_MONOTONIC ms when the thread saw it end */
	uint32_t lo, hi;   /* correlation ids of its API records seen so far */
	uint64_t pending;  /* launches waiting for their GPU record */
	uint64_t dropped;  /* CUPTI's and ours */
	uint64_t untimed;  /* records with zero timestamps */
	uint64_t unknown;  /* buffers cut at a record of a kind CUPTI did not know */
	uint64_t unlinked; /* GPU records written without their launch record */
	uint64_t unheld;   /* events written without their link: the held table was full */
	uint64_t no_gpu;   /* launches written without their GPU record, which took too long */
	/* The device memory counter: what the driver said was in use at the opening, and on. */
	uint64_t memory[GPROF_COLL_MEMORY_DEVICES];
	uint64_t memory_known; /* bit d: memory[d] started from the driver's figure */
	uint64_t memory_ns;    /* when that figure was taken: changes before it are in it */
	struct gprof_coll_pool pools[GPROF_COLL_POOLS]; /* the counter's "pool reserved" */
	unsigned n_pools;
	/*
	 * Its allocations and frees, held until it finishes: records come in per-thread buffers,
	 * out of time order, and the counter must follow time (collector thread's own).
	 */
	struct gprof_coll_mem *mem;
	size_t n_mem, cap_mem;
	/* Its waits on events, held until it finishes: the event's record may come later. */
	struct gprof_coll_sync *syncs;
	size_t n_syncs, cap_syncs;
};

/* A wait on an event and CUPTI's id of the event's record it waits for. */
struct gprof_coll_sync {
	struct gprof_export_event ev;
	uint64_t event_sync;
};

/*
 * An allocation (delta > 0) or free of device memory, held for its window; of a stream-ordered
 * pool (pool not 0), with what the pool holds after it (a pool's trim or destruction: delta 0).
 */
struct gprof_coll_mem {
	uint64_t ts_ns, address;
	int64_t delta;
	uint32_t device;
	uint64_t pool, pool_size;
};

/* Allocations and frees held per window at most; past it they count in the order they came. */
#define GPROF_COLL_MEM_MAX 16384

/*
 * windows.c: the slots from claim to release. wins is the array of GPROF_COLL_WINDOWS slots
 * (gprof_coll.wins).
 */
/*
 * Under gprof_coll.lock: export window id's slot (gprof_export_window_slot), held from now on,
 * with memory's figure; NULL when the slot is not free.
 */
struct gprof_coll_win *gprof_coll_win_claim(struct gprof_coll_win *wins, uint32_t id,
					    const struct gprof_memory_base *memory);
/* The slot of export window id while the collector has it, or NULL. */
struct gprof_coll_win *gprof_coll_win_of(struct gprof_coll_win *wins, uint32_t id);
/* A window's memory counter starts from the driver's figure, if known (before w is claimed). */
void gprof_coll_win_memory_base(struct gprof_coll_win *w, const struct gprof_memory_base *base);
/* The slot is free, then the export window's hold is let go (in that order). */
void gprof_coll_win_release(struct gprof_coll_win *w);
/*
 * Whether the slot is in use, and then its window's span (export's: API calls that start in
 * [begin, end) are the window's; end UINT64_MAX until the window ends).
 */
bool gprof_coll_win_span(const struct gprof_coll_win *w, struct gprof_span *span);
/* Whether the slot is in use and its window has ended. */
bool gprof_coll_win_ended(const struct gprof_coll_win *w);
bool gprof_coll_windows_in_use(const struct gprof_coll_win *wins);
/* Under gprof_coll.lock, with no collector thread: every slot released. */
void gprof_coll_windows_release_all(struct gprof_coll_win *wins);
/* After fork: the slots are the parent's; forgotten, not released. */
void gprof_coll_windows_forget(struct gprof_coll_win *wins);

/* What waits for its partner, the collector thread's: for its report of the peaks, and tests. */
struct gprof_coll_held *gprof_coll_attrib_held(void);
/*
 * slots: gprof_coll.wins; cupti: whose next_record walks the buffers (gprof_coll.cupti); acts:
 * the GPROF_ACT_* bits to record (GPROF_ACTIVITIES).
 */
int gprof_coll_attrib_init(struct gprof_coll_win *slots, const struct gprof_cupti *cupti,
			   unsigned acts);
/*
 * Whether CUPTI names threads by gettid() (cuptiSetThreadIdType SYSTEM, asked for before any
 * kind is enabled): its thread ids are then ours. Otherwise they are pthread_self() cut to 32
 * bits, mapped to kernel tids by what gprof_collector_note_thread() learnt.
 */
void gprof_coll_attrib_system_tids(bool system);
/* Walks one completed buffer. */
void gprof_coll_attrib_buffer(const struct gprof_coll_buf *b);
/* Dropped records (CUPTI's or ours) count for the window being recorded or drained. */
void gprof_coll_attrib_dropped(uint64_t n);
/*
 * Every flush (now_ms: CLOCK_MONOTONIC): when held.c refused an entry since the last sweep,
 * what waited too long is written without its partner to make room: GPU records whose launch
 * record was lost, launches whose GPU record has not come for patience_ms.
 */
void gprof_coll_attrib_expire(uint64_t now_ms, unsigned patience_ms);
/*
 * Whether GPU records of w's launches still wait for their launch record: the thread that
 * made the launch may not have delivered its record yet (stopped by the scheduler between the
 * call's end and its record, while the GPU work's record came).
 */
bool gprof_coll_attrib_gpu_waiting(const struct gprof_coll_win *w);
/* The window's last records are in: write what is held for it and forget it. */
void gprof_coll_attrib_finish(struct gprof_coll_win *w);
/* No window needs records any more: forget everything held. */
void gprof_coll_attrib_reset(void);

/* The state machine: cupti.c drives it, the collector thread (thread.c) reads it; state.c holds it. */
enum gprof_coll_state {
	GPROF_COLL_IDLE,    /* configured; CUPTI not loaded (no CUDA call yet) */
	GPROF_COLL_LOADING, /* the first CUDA call is loading and subscribing CUPTI */
	GPROF_COLL_READY,   /* subscribed, buffers registered, kinds off */
	GPROF_COLL_ENABLED, /* kinds on: a window warms up, records or drains */
	GPROF_COLL_FAILED,  /* CUPTI unusable: hooks only, for the rest of the process */
	GPROF_COLL_OFF,	    /* not wanted, after fork, or after exit */
};

struct gprof_coll {
	pthread_mutex_t lock; /* the fields below and window claims; never taken by CUPTI's
			       * callbacks, never held while waiting for the thread */
	int state;	      /* enum gprof_coll_state; atomic, written under lock */
	bool want;	      /* a window is warming up or recording */
	bool stop;	      /* exit: the thread ends once every window is finished */
	bool thread_running;
	pthread_t thread;
	CUpti_SubscriberHandle sub; /* libgprof's, while it holds CUPTI */
	int contexts;		    /* gprof_collector_contexts_made(); atomic */
	struct gprof_collector_config cfg;
	char lib[PATH_MAX];
	unsigned drain_ms;
	struct gprof_export_process_info proc; /* what trace headers say */
	/* CUPTI's entry points: written once by gprof_coll_load() before the thread starts. */
	struct gprof_cupti cupti;
	/*
	 * The window slots (windows.c): claimed under lock, each field as struct gprof_coll_win
	 * says; the collector thread scans them without the lock.
	 */
	struct gprof_coll_win wins[GPROF_COLL_WINDOWS];
};

extern struct gprof_coll gprof_coll;

enum gprof_coll_state gprof_coll_state(const struct gprof_coll *c);
/* cupti.c, for the collector thread with no window: disables the kinds (true if it did). */
bool gprof_coll_disable_if_idle(struct gprof_coll *c);

/*
 * thread.c: the collector thread, on the state c (gprof_coll) given here and to nothing else;
 * it calls disable_if_idle when it has no window.
 */
int gprof_coll_thread_start(struct gprof_coll *c, bool (*disable_if_idle)(struct gprof_coll *c));
/* Waits at most timeout_ms for the thread to finish the windows and end. */
void gprof_coll_thread_stop(struct gprof_coll *c, unsigned timeout_ms);

#endif
