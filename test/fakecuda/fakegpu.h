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

/* The simulation's clock, and CUPTI's by default: CLOCK_REALTIME in ns. */
FAKEGPU_API uint64_t fakegpu_timestamp(void);
/*
 * The client's clock (cuptiActivityRegisterTimestampCallback): what cuptiGetTimestamp returns
 * (fakegpu_reported_now) and what records report, the same instants converted; the simulation
 * and its ground-truth log keep their own. -EINVAL for NULL.
 */
FAKEGPU_API int fakegpu_timestamp_callback(CUpti_TimestampCallbackFunc fn);
FAKEGPU_API uint64_t fakegpu_reported_now(void);

/* True while `kind` is enabled (cuptiActivityEnable and not disabled since). */
FAKEGPU_API bool fakegpu_activity_enabled(CUpti_ActivityKind kind);
/*
 * Whether API `cbid` of kind RUNTIME or DRIVER has records: as set for it alone
 * (cuptiActivityEnableRuntimeApi/DriverApi; -EINVAL for another kind or an id out of range),
 * else as its kind.
 */
FAKEGPU_API bool fakegpu_api_enabled(CUpti_ActivityKind kind, uint32_t cbid);
FAKEGPU_API int fakegpu_api_set_enabled(CUpti_ActivityKind kind, uint32_t cbid, bool on);

/*
 * Appends one activity record, in its real CUDA 13 layout (`size` bytes, record->kind set), to
 * the current activity buffer, packed as the real libcupti packs records. If the kind is not
 * enabled (an API record: fakegpu_api_enabled) it is ignored; with no buffer (the client gave NULL or size 0) it is dropped and
 * counted for cuptiActivityGetNumDroppedRecords. Thread-safe; never blocks on the client.
 * Fault injection for records (drops, zero timestamps, unknown kinds) happens here.
 */
FAKEGPU_API void fakegpu_activity_emit(const CUpti_Activity *record, size_t size);

/*
 * Delivers a callback to the subscriber if one is subscribed and the domain/cbid is enabled:
 * an API_ENTER or API_EXIT (data a CUpti_CallbackData, per its callbackSite), or a resource
 * event (a CUpti_ResourceData).
 */
FAKEGPU_API void fakegpu_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
				  const void *data);

/* ---- what the fake libcupti.so.13 builds its API on; these return 0 or a negative errno ---- */

/* A record kind no CUPTI knows, written by FAKEGPU_CUPTI_UNKNOWN_KIND_EVERY. */
#define FAKEGPU_UNKNOWN_KIND ((CUpti_ActivityKind)0x7ffffffe)

/* Size of a record of `kind` in its CUDA 13 layout, 0 for a kind the simulation never writes. */
FAKEGPU_API size_t fakegpu_record_size(CUpti_ActivityKind kind);

/* -EINVAL for a kind out of range, -EIO when FAKEGPU_CUPTI_ENABLE_FAIL names the kind. */
FAKEGPU_API int fakegpu_activity_set_enabled(CUpti_ActivityKind kind, bool on);

/* Buffer callbacks; starts the delivery worker. -EINVAL if either is NULL. */
FAKEGPU_API int fakegpu_activity_register(CUpti_BuffersCallbackRequestFunc request,
					  CUpti_BuffersCallbackCompleteFunc complete);

/*
 * Returns every buffer holding records through the completion callback, on the calling thread,
 * and returns once they are all delivered. -EPERM before fakegpu_activity_register.
 */
FAKEGPU_API int fakegpu_activity_flush_all(void);

/* How often the worker wakes to return full buffers; 0: as soon as one is full. */
FAKEGPU_API void fakegpu_activity_flush_period(uint32_t period_ms);

/* Records dropped since the last call (and resets the count). */
FAKEGPU_API size_t fakegpu_activity_take_dropped(void);

/* CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER (default true) and _ZEROED_OUT_ACTIVITY_BUFFER. */
FAKEGPU_API void fakegpu_activity_set_per_thread(bool per_thread);
FAKEGPU_API void fakegpu_activity_set_client_zeroes(bool client_zeroes);

/*
 * cuptiSetThreadIdType: records name threads by pthread_self() cut to 32 bits (the default) or,
 * with system ids, by gettid(). fakegpu_thread_id() is the calling thread's, as records name it.
 */
FAKEGPU_API void fakegpu_activity_set_system_tids(bool system);
FAKEGPU_API bool fakegpu_activity_system_tids(void);
FAKEGPU_API uint32_t fakegpu_thread_id(void);

/* The calling thread's external correlation stacks; -EINVAL bad kind, -ENOENT empty, -ENOSPC full. */
FAKEGPU_API int fakegpu_external_push(CUpti_ExternalCorrelationKind kind, uint64_t id);
FAKEGPU_API int fakegpu_external_pop(CUpti_ExternalCorrelationKind kind, uint64_t *id);

/* The one callback subscriber: -EBUSY if taken (or FAKEGPU_CUPTI_SUBSCRIBE_TAKEN). */
FAKEGPU_API int fakegpu_subscribe(CUpti_CallbackFunc callback, void *userdata);
/* -EINVAL if there is no subscriber. */
FAKEGPU_API int fakegpu_unsubscribe(void);

/* One cbid of a domain, or all of them with FAKEGPU_ALL_CBIDS; -EINVAL out of range. */
#define FAKEGPU_ALL_CBIDS UINT32_MAX
FAKEGPU_API int fakegpu_callback_set_enabled(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
					     bool on);
FAKEGPU_API int fakegpu_callback_get_enabled(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
					     bool *on);

/* cuptiFinalize: disables everything, returns held buffers, unsubscribes, stops the worker. */
FAKEGPU_API void fakegpu_finalize(void);

#endif
