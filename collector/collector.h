/*
 * The collector: CUPTI's activity records of the GPU (kernels, copies, memsets, device memory)
 * and of the runtime and driver API calls that launched them, turned into events of the
 * window in which they were launched. This header is the module's interface; preload/'s
 * session drives it from the stepper's transitions:
 *
 *	init (constructor: configuration only, no CUDA, no dlopen)
 *	start (first CUDA call or InitializeInjection: load CUPTI, subscribe)
 *	warmup -> window_begin -> window_end (SAVE)      or      warmup -> discard
 *
 * Kinds are enabled at warmup; records of API calls that started before window_begin are
 * discarded. After window_end a thread of the collector's own flushes CUPTI until every launch
 * of the window has its GPU record (or a time limit passes), then releases its hold on the
 * export window; kinds are disabled when no window needs them.
 *
 * Host events: while CUPTI records the runtime API (gprof_collector_covers() has
 * GPROF_ACT_API) the session writes no events for hooked calls, so no call is written twice;
 * the same goes for the gpu_memory counter (GPROF_ACT_MEMORY, from MEMORY2 records).
 *
 * Whatever goes wrong with CUPTI (missing, held by another tool, failing), the program runs as
 * before; the collector says once why GPU activity is missing, records it in the traces'
 * cupti status, and covers nothing, so traces hold the hooks' host events.
 */
#ifndef GPROF_COLLECTOR_H
#define GPROF_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/compiler.h"
#include "export/export.h"

/* How long a window waits for its late GPU records, by default (ms). */
#define GPROF_COLLECTOR_DRAIN_MS 2000

struct gprof_collector_config {
	const char *cupti_lib; /* GPROF_CUPTI_LIB: a path, or "" to search */
	unsigned activities;   /* GPROF_ACTIVITIES: enum gprof_activity bits */
	size_t buffer_bytes;   /* cap on CUPTI's activity buffers */
	unsigned drain_ms;     /* how long a window waits for its late GPU records; 0: the next */
	bool all_api_calls;    /* GPROF_API_CALLS=all: no call is left out of traces */
};

/* Once, from the constructor. Returns 0 or a negative errno. */
int gprof_collector_init(const struct gprof_collector_config *cfg);

/*
 * CUDA is in use (the first hooked call, or the driver's InitializeInjection): loads and
 * subscribes CUPTI once per process, and enables the kinds if a window already wants them.
 * Idempotent and safe to re-enter from inside CUDA's own initialisation.
 */
void gprof_collector_start(void);
/*
 * Another tool subscribes to CUPTI, which takes one subscriber: if libgprof holds it, its records
 * so far are flushed and kept, its subscription ends, and it records from its hooks alone from
 * then on (one line says so). Called before that tool's cuptiSubscribe goes through.
 */
void gprof_collector_yield(void);

/* The stepper's WARMUP: enable the activity kinds (now, or when started). */
void gprof_collector_warmup(void);
/* The stepper's DISCARD: the warming-up window ends unsaved. */
void gprof_collector_discard(void);

/*
 * ACTIVE: export window `id` opened (its span, gprof_export_window_span, is the API calls the
 * collector gives it); the collector holds the window until its GPU records are in. Its device
 * memory counter goes on from `memory` (the session wrote the counter's first value).
 */
struct gprof_memory_base {
	int device;
	int64_t bytes;	/* device memory in use when the window opened; -1: unknown */
	uint64_t ts_ns; /* when that was so: earlier changes are in it, later ones are not */
};
void gprof_collector_window_begin(uint32_t id, const struct gprof_memory_base *memory);
/* SAVE, once export has the window's end (gprof_export_window_end): drain, then release. */
void gprof_collector_window_end(uint32_t id);

/*
 * The GPROF_ACT_* bits whose events come from CUPTI now (the session skips its own). Written by
 * the collector as kinds are enabled and disabled, and when CUPTI is given up mid-window; read
 * by every hooked call in a window (inline).
 */
extern unsigned gprof_coll_covers;

static inline unsigned gprof_collector_covers(void)
{
	return __atomic_load_n(&gprof_coll_covers, __ATOMIC_ACQUIRE);
}

/*
 * Whether the process made a CUDA context since CUPTI was set up (at its first CUDA call,
 * before any context): 1 yes, 0 no (it only asked what devices there are, as torchrun's
 * launcher does), -1 unknown (no CUPTI, or CUPTI given up before any).
 */
int gprof_collector_contexts_made(void);

/*
 * The calling thread's kernel thread id, so CUPTI's records land on the same track as the
 * thread's other events where CUPTI names threads by pthread_self() (one that refuses
 * cuptiSetThreadIdType's system ids); nothing otherwise. Inline: after the first call on a
 * thread, one thread-local compare.
 */
extern GPROF_TLS uint32_t gprof_coll_noted_tid;
void gprof_coll_note_thread(uint32_t tid);

static inline void gprof_collector_note_thread(uint32_t tid)
{
	if (gprof_coll_noted_tid != tid)
		gprof_coll_note_thread(tid);
}

/*
 * Around libgprof's own CUDA calls on the calling thread (begin true, then false): CUPTI's
 * records of them are not the program's and are left out.
 */
void gprof_collector_own_calls(bool begin);

/*
 * Around the real call of a CPU operator (an NCCL collective) on the calling thread: the
 * runtime calls made inside, and their GPU work, carry External id `id` (> 0). begin is false
 * when CUPTI is not recording (nothing to end then); end only after a begin that was true.
 * annotation: `id` is a user annotation's (an NVTX range, PyTorch's record_function scope),
 * on a stack of its own, which only the GPU work carries (written as gpu_user_annotation).
 */
bool gprof_collector_external_begin(bool annotation, uint32_t id);
void gprof_collector_external_end(bool annotation);

/* What the runtime said (versions, devices) for every later trace header; CUPTI's part is ours. */
void gprof_collector_set_runtime_info(const struct gprof_export_process_info *rt);

/* Process exit: finish every window (waits at most timeout_ms), stop the thread. */
void gprof_collector_fini(unsigned timeout_ms);
/* In a child after fork(): CUPTI and the thread stay with the parent; nothing more here. */
void gprof_collector_forked(void);

#endif
