/*
 * The simulated CUPTI core, in libfakegpu.so. The fake libcudart.so.13 and libcuda.so.1 produce
 * activity through it; the fake libcupti.so.13 hands that activity to a profiler. Test-only:
 * never linked into libgprof.so.
 */
#ifndef FAKEGPU_H
#define FAKEGPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cupti.h>

#define FAKEGPU_API __attribute__((visibility("default")))

/* The next correlation id: process-wide, starting at 1, one per runtime or driver API call. */
FAKEGPU_API uint32_t fakegpu_next_correlation(void);

/* CUPTI's clock: CLOCK_REALTIME in ns (what cuptiGetTimestamp returns). */
FAKEGPU_API uint64_t fakegpu_timestamp(void);

/* True while `kind` is enabled (cuptiActivityEnable and not disabled since). */
FAKEGPU_API bool fakegpu_activity_enabled(CUpti_ActivityKind kind);

/*
 * Appends one activity record, in its real CUDA 13 layout (`size` bytes, record->kind set), to
 * the current activity buffer, packed as the real libcupti packs records. If the kind is not
 * enabled it is ignored; with no buffer (the client gave NULL or size 0) it is dropped and
 * counted for cuptiActivityGetNumDroppedRecords. Thread-safe; never blocks on the client.
 * Fault injection for records (drops, zero timestamps, unknown kinds) happens here.
 */
FAKEGPU_API void fakegpu_activity_emit(const CUpti_Activity *record, size_t size);

/*
 * Delivers a callback-API event (API_ENTER or API_EXIT, per data->callbackSite) to the
 * subscriber if one is subscribed and the domain/cbid is enabled.
 */
FAKEGPU_API void fakegpu_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
				  const CUpti_CallbackData *data);

#endif
