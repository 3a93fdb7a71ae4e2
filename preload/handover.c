/*
 * CUPTI handed over. CUPTI takes one subscriber per process, and a tool that starts after
 * libgprof (torch.profiler's Kineto when its profiler starts, a profiler library) would
 * otherwise find it taken and record no GPU activity. Preloaded first, libgprof sees that
 * tool's cuptiSubscribe, gives CUPTI up (collector: gprof_collector_yield) and passes the call
 * on, so the tool gets what it asked for; libgprof goes on with its hooks alone. The one
 * exception is --torch's own use of PyTorch's profiler, served by libgprof (kineto.c).
 */
#include <cupti.h>

#include "collector/collector.h"
#include "preload/preload.h"

GPROF_EXPORT CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *subscriber,
						 CUpti_CallbackFunc callback, void *userdata);
GPROF_EXPORT CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber,
						    CUpti_CallbackFunc callback, void *userdata,
						    CUpti_SubscriberParams *params);

GPROF_EXPORT CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *subscriber,
						 CUpti_CallbackFunc callback, void *userdata)
{
	__typeof__(&cuptiSubscribe) fn;

	if (gprof_kineto_subscribe(subscriber))
		return CUPTI_SUCCESS;
	gprof_collector_yield();
	fn = (__typeof__(fn))gprof_resolve_in("cuptiSubscribe", "libcupti.so");
	return fn ? fn(subscriber, callback, userdata) : CUPTI_ERROR_NOT_INITIALIZED;
}

GPROF_EXPORT CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber,
						    CUpti_CallbackFunc callback, void *userdata,
						    CUpti_SubscriberParams *params)
{
	__typeof__(&cuptiSubscribe_v2) fn;

	if (gprof_kineto_subscribe(subscriber))
		return CUPTI_SUCCESS;
	gprof_collector_yield();
	fn = (__typeof__(fn))gprof_resolve_in("cuptiSubscribe_v2", "libcupti.so");
	return fn ? fn(subscriber, callback, userdata, params) : CUPTI_ERROR_NOT_INITIALIZED;
}
