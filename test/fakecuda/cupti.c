/*
 * The fake libcupti.so.13: the CUPTI entry points a profiler uses, with the real signatures and
 * result codes, on the simulated core of libfakegpu.so. Built with CUPTI_LIB, which makes the
 * declarations in <cupti.h> (and so these definitions) exported.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cbid-names.h" /* made by fakecuda.mk */
#include "test/fakecuda/fakegpu.h"

/* What cuptiGetLastError returns: the last failure of this thread, reset when read. */
static __thread CUptiResult last_error;

static CUptiResult fail(CUptiResult r)
{
	if (r != CUPTI_SUCCESS)
		last_error = r;
	return r;
}

/* The core's negative errno as the CUPTI result the documentation gives for that case. */
static CUptiResult from_errno(int err)
{
	static const CUptiResult map[] = {
	    [EINVAL] = CUPTI_ERROR_INVALID_PARAMETER,
	    [EPERM] = CUPTI_ERROR_INVALID_OPERATION,
	    [EBUSY] = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
	    [ENOENT] = CUPTI_ERROR_QUEUE_EMPTY,
	    [ENOSPC] = CUPTI_ERROR_OUT_OF_MEMORY,
	    [ENOMEM] = CUPTI_ERROR_OUT_OF_MEMORY,
	    [EIO] = CUPTI_ERROR_UNKNOWN,
	};

	if (!err)
		return CUPTI_SUCCESS;
	if (-err > 0 && (size_t)-err < sizeof(map) / sizeof(map[0]) && map[-err])
		return fail(map[-err]);
	return fail(CUPTI_ERROR_UNKNOWN);
}

/* <cupti_result.h>'s codes but 36 and 37, which the real 13.0 library has no string for. */
#define RESULTS(X)                                                   \
	X(CUPTI_SUCCESS)                                             \
	X(CUPTI_ERROR_INVALID_PARAMETER)                             \
	X(CUPTI_ERROR_INVALID_DEVICE)                                \
	X(CUPTI_ERROR_INVALID_CONTEXT)                               \
	X(CUPTI_ERROR_INVALID_EVENT_DOMAIN_ID)                       \
	X(CUPTI_ERROR_INVALID_EVENT_ID)                              \
	X(CUPTI_ERROR_INVALID_EVENT_NAME)                            \
	X(CUPTI_ERROR_INVALID_OPERATION)                             \
	X(CUPTI_ERROR_OUT_OF_MEMORY)                                 \
	X(CUPTI_ERROR_HARDWARE)                                      \
	X(CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT)                 \
	X(CUPTI_ERROR_API_NOT_IMPLEMENTED)                           \
	X(CUPTI_ERROR_MAX_LIMIT_REACHED)                             \
	X(CUPTI_ERROR_NOT_READY)                                     \
	X(CUPTI_ERROR_NOT_COMPATIBLE)                                \
	X(CUPTI_ERROR_NOT_INITIALIZED)                               \
	X(CUPTI_ERROR_INVALID_METRIC_ID)                             \
	X(CUPTI_ERROR_INVALID_METRIC_NAME)                           \
	X(CUPTI_ERROR_QUEUE_EMPTY)                                   \
	X(CUPTI_ERROR_INVALID_HANDLE)                                \
	X(CUPTI_ERROR_INVALID_STREAM)                                \
	X(CUPTI_ERROR_INVALID_KIND)                                  \
	X(CUPTI_ERROR_INVALID_EVENT_VALUE)                           \
	X(CUPTI_ERROR_DISABLED)                                      \
	X(CUPTI_ERROR_INVALID_MODULE)                                \
	X(CUPTI_ERROR_INVALID_METRIC_VALUE)                          \
	X(CUPTI_ERROR_HARDWARE_BUSY)                                 \
	X(CUPTI_ERROR_NOT_SUPPORTED)                                 \
	X(CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED)                    \
	X(CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_DEVICE)          \
	X(CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_NON_P2P_DEVICES) \
	X(CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_WITH_MPS)           \
	X(CUPTI_ERROR_CDP_TRACING_NOT_SUPPORTED)                     \
	X(CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED)              \
	X(CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE)                  \
	X(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)                       \
	X(CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED)                 \
	X(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)            \
	X(CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES)    \
	X(CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED)          \
	X(CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED)                      \
	X(CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED)                      \
	X(CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED)                      \
	X(CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED)                      \
	X(CUPTI_ERROR_INVALID_CHIP_NAME)                             \
	X(CUPTI_ERROR_UNKNOWN)
#define NAME(r) {.result = r, .name = #r},
static const struct {
	CUptiResult result;
	const char *name;
} result_names[] = {RESULTS(NAME)};

/* Like the real one: "<unknown>" and INVALID_PARAMETER for a code it has no name for. */
CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char **str)
{
	if (!str)
		return fail(CUPTI_ERROR_INVALID_PARAMETER);
	for (size_t i = 0; i < sizeof(result_names) / sizeof(result_names[0]); i++) {
		if (result_names[i].result == result) {
			*str = result_names[i].name;
			return CUPTI_SUCCESS;
		}
	}
	*str = "<unknown>";
	return fail(CUPTI_ERROR_INVALID_PARAMETER);
}

static const char *const runtime_names[CUPTI_RUNTIME_TRACE_CBID_SIZE] = {"INVALID",
									 RUNTIME_CBID_NAMES};
static const char *const driver_names[CUPTI_DRIVER_TRACE_CBID_SIZE] = {"INVALID",
								       DRIVER_CBID_NAMES};

/* The enum's own names ("cudaMalloc_v3020", "cuLaunchKernel"), as CUPTI gives them. */
CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
					  const char **name)
{
	const char *found = NULL;

	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE)
		found = runtime_names[cbid];
	else if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE)
		found = driver_names[cbid];
	if (!name || !found)
		return fail(CUPTI_ERROR_INVALID_PARAMETER);
	*name = found;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *version)
{
	if (!version)
		return fail(CUPTI_ERROR_INVALID_PARAMETER);
	*version = CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetLastError(void)
{
	CUptiResult r = last_error;

	last_error = CUPTI_SUCCESS;
	return r;
}

CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *timestamp)
{
	if (!timestamp)
		return fail(CUPTI_ERROR_INVALID_PARAMETER);
	*timestamp = fakegpu_reported_now();
	return CUPTI_SUCCESS;
}

/*
 * Device and context ids come from the fake driver (test/fakecuda/sim.h) when it is loaded in
 * the global scope; without it CUPTI has no driver to ask. A NULL context stands for the current
 * device when the device id is asked for; it has no context id.
 */
static CUptiResult driver_id(CUcontext context, bool device, uint32_t *id)
{
	int (*ctx_device)(const void *) = dlsym(RTLD_DEFAULT, "fakecuda_context_device");
	int (*current)(void) = dlsym(RTLD_DEFAULT, "fakecuda_device_current");
	uint32_t (*ctx_id)(int) = dlsym(RTLD_DEFAULT, "fakecuda_context_id");
	int dev = -1;

	if (!id)
		return fail(CUPTI_ERROR_INVALID_PARAMETER);
	if (!ctx_device || !current || !ctx_id)
		return fail(CUPTI_ERROR_NOT_INITIALIZED);
	if (context)
		dev = ctx_device(context);
	else if (device)
		dev = current();
	if (dev < 0)
		return fail(device ? CUPTI_ERROR_INVALID_DEVICE : CUPTI_ERROR_INVALID_CONTEXT);
	*id = device ? (uint32_t)dev : ctx_id(dev);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetDeviceId(CUcontext context, uint32_t *deviceId)
{
	return driver_id(context, true, deviceId);
}

CUptiResult CUPTIAPI cuptiGetContextId(CUcontext context, uint32_t *contextId)
{
	return driver_id(context, false, contextId);
}

/* ---- activity API ---- */

static bool kind_ok(CUpti_ActivityKind kind)
{
	return kind > CUPTI_ACTIVITY_KIND_INVALID && kind < CUPTI_ACTIVITY_KIND_COUNT;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind)
{
	if (!kind_ok(kind))
		return fail(CUPTI_ERROR_INVALID_KIND);
	return from_errno(fakegpu_activity_set_enabled(kind, true));
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind)
{
	if (!kind_ok(kind))
		return fail(CUPTI_ERROR_INVALID_KIND);
	return from_errno(fakegpu_activity_set_enabled(kind, false));
}

CUptiResult CUPTIAPI cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable)
{
	return from_errno(fakegpu_api_set_enabled(CUPTI_ACTIVITY_KIND_RUNTIME, cbid, enable));
}

CUptiResult CUPTIAPI cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable)
{
	return from_errno(fakegpu_api_set_enabled(CUPTI_ACTIVITY_KIND_DRIVER, cbid, enable));
}

/* The simulation's CUDA event records carry no device timestamp (0): accepted, no effect. */
CUptiResult CUPTIAPI cuptiActivityEnableCudaEventDeviceTimestamps(uint8_t enable)
{
	(void)enable;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn)
{
	return from_errno(fakegpu_timestamp_callback(fn));
}

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
						    CUpti_BuffersCallbackCompleteFunc complete)
{
	return from_errno(fakegpu_activity_register(request, complete));
}

/* Flag 0 and CUPTI_ACTIVITY_FLAG_FLUSH_FORCED agree: the core holds only complete records. */
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag)
{
	(void)flag;
	return from_errno(fakegpu_activity_flush_all());
}

/* Deprecated: context and stream are ignored, as documented. */
CUptiResult CUPTIAPI cuptiActivityFlush(CUcontext context, uint32_t streamId, uint32_t flag)
{
	(void)context;
	(void)streamId;
	return cuptiActivityFlushAll(flag);
}

CUptiResult CUPTIAPI cuptiActivityFlushPeriod(uint32_t time)
{
	fakegpu_activity_flush_period(time);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t streamId,
						       size_t *dropped)
{
	(void)context;
	(void)streamId;
	if (!dropped)
		return fail(CUPTI_ERROR_INVALID_PARAMETER);
	*dropped = fakegpu_activity_take_dropped();
	return CUPTI_SUCCESS;
}

/*
 * Walks a buffer as the real library does (checked by the conformance test): the end of the
 * valid bytes gives MAX_LIMIT_REACHED, an unknown kind INVALID_KIND and leaves *record alone.
 * One difference: fewer than 4 valid bytes left read as the end, where the real one reads the
 * kind past validBufferSizeBytes.
 */
CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t validBufferSizeBytes,
						CUpti_Activity **record)
{
	CUpti_ActivityKind kind;
	size_t off = 0, size;

	if (!buffer || !record)
		return fail(CUPTI_ERROR_INVALID_PARAMETER);
	if (*record) {
		memcpy(&kind, *record, sizeof(kind));
		size = fakegpu_record_size(kind);
		if (!size)
			return fail(CUPTI_ERROR_INVALID_KIND);
		off = (size_t)((uint8_t *)*record - buffer) + size;
	}
	if (off >= validBufferSizeBytes || validBufferSizeBytes - off < sizeof(kind))
		return fail(CUPTI_ERROR_MAX_LIMIT_REACHED);
	memcpy(&kind, buffer + off, sizeof(kind));
	size = fakegpu_record_size(kind);
	if (!size)
		return fail(CUPTI_ERROR_INVALID_KIND);
	if (size > validBufferSizeBytes - off)
		return fail(CUPTI_ERROR_MAX_LIMIT_REACHED);
	*record = (CUpti_Activity *)(buffer + off);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
							    uint64_t id)
{
	return from_errno(fakegpu_external_push(kind, id));
}

CUptiResult CUPTIAPI cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
							   uint64_t *lastId)
{
	return from_errno(fakegpu_external_pop(kind, lastId));
}

/* ---- activity attributes: stored, and the two that change the simulation applied ---- */

static pthread_mutex_t attr_mu = PTHREAD_MUTEX_INITIALIZER;

/* Value sizes and defaults from the CUDA 13.0 cupti_activity.h. */
static struct {
	size_t size;
	uint64_t value;
} attrs[] = {
    [CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE] = {sizeof(size_t), 3200000},
    [CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE_CDP] = {sizeof(size_t), 8388608},
    [CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT] = {sizeof(size_t), 250},
    [CUPTI_ACTIVITY_ATTR_PROFILING_SEMAPHORE_POOL_SIZE] = {sizeof(size_t), 25000},
    [CUPTI_ACTIVITY_ATTR_PROFILING_SEMAPHORE_POOL_LIMIT] = {sizeof(size_t), 250},
    [CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER] = {sizeof(uint8_t), 0},
    [CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE] = {sizeof(size_t), 3},
    [CUPTI_ACTIVITY_ATTR_PROFILING_SEMAPHORE_PRE_ALLOCATE_VALUE] = {sizeof(size_t), 3},
    [CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED] = {sizeof(uint8_t), 0},
    [CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER] = {sizeof(uint8_t), 1},
    [CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE_DEVICE_GRAPHS] = {sizeof(size_t), 16777216},
};

static CUptiResult attr_check(CUpti_ActivityAttribute attr, const size_t *valueSize,
			      const void *value)
{
	if ((unsigned)attr >= sizeof(attrs) / sizeof(attrs[0]) || !valueSize || !value)
		return fail(CUPTI_ERROR_INVALID_PARAMETER);
	if (*valueSize < attrs[attr].size)
		return fail(CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT);
	return CUPTI_SUCCESS;
}

/* Like the real one: DEFAULT (pthread_self) and SYSTEM (gettid) on Linux, nothing else. */
CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType type)
{
	if (type != CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT &&
	    type != CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)
		return fail(CUPTI_ERROR_NOT_SUPPORTED);
	fakegpu_activity_set_system_tids(type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetThreadIdType(CUpti_ActivityThreadIdType *type)
{
	if (!type)
		return fail(CUPTI_ERROR_INVALID_PARAMETER);
	*type = fakegpu_activity_system_tids() ? CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM
					       : CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetAttribute(CUpti_ActivityAttribute attr, size_t *valueSize,
					       void *value)
{
	CUptiResult r = attr_check(attr, valueSize, value);
	size_t v;
	uint8_t b;

	if (r)
		return r;
	pthread_mutex_lock(&attr_mu);
	v = (size_t)attrs[attr].value;
	b = (uint8_t)v;
	memcpy(value, attrs[attr].size == 1 ? (void *)&b : (void *)&v, attrs[attr].size);
	*valueSize = attrs[attr].size;
	pthread_mutex_unlock(&attr_mu);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t *valueSize,
					       void *value)
{
	CUptiResult r = attr_check(attr, valueSize, value);
	size_t v = 0;
	uint8_t b = 0;

	if (r)
		return r;
	memcpy(attrs[attr].size == 1 ? (void *)&b : (void *)&v, value, attrs[attr].size);
	if (attrs[attr].size == 1)
		v = b;
	pthread_mutex_lock(&attr_mu);
	attrs[attr].value = v;
	pthread_mutex_unlock(&attr_mu);
	if (attr == CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER)
		fakegpu_activity_set_per_thread(v != 0);
	if (attr == CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER)
		fakegpu_activity_set_client_zeroes(v != 0);
	return CUPTI_SUCCESS;
}

/* ---- callback API ---- */

/* The handle cuptiSubscribe hands out; its name answers a second subscriber. */
struct CUpti_Subscriber_st {
	char name[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN];
};
static struct CUpti_Subscriber_st the_subscriber;

/*
 * Both entry points, which never call each other through the PLT (as the real library's do not):
 * a preloaded tool that interposes one (libgprof does) must not be entered by the other.
 */
static CUptiResult subscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
			     void *userdata, CUpti_SubscriberParams *params)
{
	int err;

	if (!subscriber || (params && !params->structSize))
		return fail(CUPTI_ERROR_INVALID_PARAMETER);
	*subscriber = NULL;
	err = fakegpu_subscribe(callback, userdata);
	if (err == -EBUSY && params && params->oldSubscriberName && params->oldSubscriberSize)
		snprintf(params->oldSubscriberName, params->oldSubscriberSize, "%s",
			 the_subscriber.name[0] ? the_subscriber.name : "CUPTI for another tool");
	if (err)
		return from_errno(err);
	snprintf(the_subscriber.name, sizeof(the_subscriber.name), "CUPTI for %.*s",
		 CUPTI_SUBSCRIBER_NAME_MAX_LEN,
		 params && params->subscriberName ? params->subscriberName : "");
	*subscriber = &the_subscriber;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber,
				       CUpti_CallbackFunc callback, void *userdata,
				       CUpti_SubscriberParams *params)
{
	return subscribe(subscriber, callback, userdata, params);
}

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
				    void *userdata)
{
	return subscribe(subscriber, callback, userdata, NULL);
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
	if (subscriber != &the_subscriber)
		return fail(CUPTI_ERROR_INVALID_PARAMETER);
	return from_errno(fakegpu_unsubscribe());
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
					 CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	if (subscriber != &the_subscriber)
		return fail(CUPTI_ERROR_INVALID_PARAMETER);
	return from_errno(fakegpu_callback_set_enabled(domain, cbid, enable != 0));
}

CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
				       CUpti_CallbackDomain domain)
{
	if (subscriber != &the_subscriber)
		return fail(CUPTI_ERROR_INVALID_PARAMETER);
	return from_errno(fakegpu_callback_set_enabled(domain, FAKEGPU_ALL_CBIDS, enable != 0));
}

CUptiResult CUPTIAPI cuptiEnableAllDomains(uint32_t enable, CUpti_SubscriberHandle subscriber)
{
	CUptiResult r = CUPTI_SUCCESS;

	for (int d = CUPTI_CB_DOMAIN_DRIVER_API; d < CUPTI_CB_DOMAIN_SIZE && !r; d++)
		r = cuptiEnableDomain(enable, subscriber, (CUpti_CallbackDomain)d);
	return r;
}

CUptiResult CUPTIAPI cuptiGetCallbackState(uint32_t *enable, CUpti_SubscriberHandle subscriber,
					   CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	bool on = false;
	int err;

	if (subscriber != &the_subscriber || !enable)
		return fail(CUPTI_ERROR_INVALID_PARAMETER);
	err = fakegpu_callback_get_enabled(domain, cbid, &on);
	*enable = on;
	return from_errno(err);
}

CUptiResult CUPTIAPI cuptiFinalize(void)
{
	fakegpu_finalize();
	the_subscriber.name[0] = '\0';
	return CUPTI_SUCCESS;
}
