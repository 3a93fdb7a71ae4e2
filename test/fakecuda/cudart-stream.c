/*
 * The fake runtime's streams and events. An event record is a zero-length marker queued on its
 * stream: it completes, and takes its time, when all work queued before it has.
 */
#include <errno.h>
#include <stdlib.h>

#include "test/fakecuda/cudart.h"

#define EVENT(e) ((struct fakecuda_event *)(e))

/* ---- streams ---- */

static cudaError_t create_stream(CUpti_CallbackId cbid, const char *name, const void *params,
				 cudaStream_t *out, unsigned int flags)
{
	struct fakecuda_stream *s = NULL;
	struct fakecuda_call c;

	fakert_enter(&c, cbid, name, params, NULL);
	if (!out)
		return fakert_exit(&c, cudaErrorInvalidValue, NULL);
	s = fakecuda_stream_create(flags);
	if (!s)
		return fakert_exit(&c, cudaErrorMemoryAllocation, NULL);
	*out = (cudaStream_t)s;
	return fakert_exit(&c, cudaSuccess, "\"flags\":%u,\"stream\":%u", flags,
			   fakecuda_stream_id(s));
}

cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
	cudaStreamCreate_v3020_params p = {pStream};

	return create_stream(RT_CBID(cudaStreamCreate_v3020), "cudaStreamCreate", &p, pStream, 0);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
	cudaStreamCreateWithFlags_v5000_params p = {pStream, flags};

	return create_stream(RT_CBID(cudaStreamCreateWithFlags_v5000), "cudaStreamCreateWithFlags",
			     &p, pStream, flags);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
	cudaStreamDestroy_v5050_params p = {stream};
	struct fakecuda_call c;

	fakert_enter(&c, RT_CBID(cudaStreamDestroy_v5050), "cudaStreamDestroy", &p, NULL);
	if (!stream || stream == cudaStreamLegacy || stream == cudaStreamPerThread)
		return fakert_exit(&c, cudaErrorInvalidResourceHandle, NULL);
	fakecuda_stream_destroy((struct fakecuda_stream *)stream);
	return fakert_exit(&c, cudaSuccess, NULL);
}

static cudaError_t stream_sync(CUpti_CallbackId cbid, const char *name, const void *params,
			       cudaStream_t stream, bool per_thread)
{
	struct fakecuda_stream *s = fakecuda_stream_get(stream, per_thread);
	struct fakecuda_call c;

	fakert_enter(&c, cbid, name, params, NULL);
	fakecuda_sync(s, 0);
	fakecuda_sync_done(&c, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE,
			   fakecuda_stream_device(s), s, NULL);
	return fakert_exit(&c, cudaSuccess, "\"stream\":%u", fakecuda_stream_id(s));
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
	cudaStreamSynchronize_v3020_params p = {stream};

	return stream_sync(RT_CBID(cudaStreamSynchronize_v3020), "cudaStreamSynchronize", &p,
			   stream, false);
}

cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
	cudaStreamSynchronize_ptsz_v7000_params p = {stream};

	return stream_sync(RT_CBID(cudaStreamSynchronize_ptsz_v7000), "cudaStreamSynchronize_ptsz",
			   &p, stream, true);
}

static cudaError_t stream_wait_event(CUpti_CallbackId cbid, const char *name, const void *params,
				     cudaStream_t stream, cudaEvent_t event, bool per_thread)
{
	struct fakecuda_stream *s = fakecuda_stream_get(stream, per_thread);
	struct fakecuda_call c;

	fakert_enter(&c, cbid, name, params, NULL);
	if (!event)
		return fakert_exit(&c, cudaErrorInvalidResourceHandle, NULL);
	if (EVENT(event)->stream)
		fakecuda_stream_wait_until(s, EVENT(event)->time_ns);
	fakecuda_sync_done(&c, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT,
			   fakecuda_stream_device(s), s, EVENT(event));
	return fakert_exit(&c, cudaSuccess, "\"stream\":%u", fakecuda_stream_id(s));
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
	cudaStreamWaitEvent_v3020_params p = {stream, event, flags};

	return stream_wait_event(RT_CBID(cudaStreamWaitEvent_v3020), "cudaStreamWaitEvent", &p,
				 stream, event, false);
}

cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
	cudaStreamWaitEvent_ptsz_v7000_params p = {stream, event, flags};

	return stream_wait_event(RT_CBID(cudaStreamWaitEvent_ptsz_v7000),
				 "cudaStreamWaitEvent_ptsz", &p, stream, event, true);
}

/* ---- events ---- */

static cudaError_t create_event(CUpti_CallbackId cbid, const char *name, const void *params,
				cudaEvent_t *out, unsigned int flags)
{
	struct fakecuda_event *e;
	struct fakecuda_call c;

	fakert_enter(&c, cbid, name, params, NULL);
	if (!out)
		return fakert_exit(&c, cudaErrorInvalidValue, NULL);
	e = fakecuda_event_create(flags);
	if (!e)
		return fakert_exit(&c, cudaErrorMemoryAllocation, NULL);
	*out = (cudaEvent_t)e;
	return fakert_exit(&c, cudaSuccess, "\"flags\":%u", flags);
}

cudaError_t cudaEventCreate(cudaEvent_t *event)
{
	cudaEventCreate_v3020_params p = {event};

	return create_event(RT_CBID(cudaEventCreate_v3020), "cudaEventCreate", &p, event, 0);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
	cudaEventCreateWithFlags_v3020_params p = {event, flags};

	return create_event(RT_CBID(cudaEventCreateWithFlags_v3020), "cudaEventCreateWithFlags", &p,
			    event, flags);
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
	cudaEventDestroy_v3020_params p = {event};
	struct fakecuda_call c;

	fakert_enter(&c, RT_CBID(cudaEventDestroy_v3020), "cudaEventDestroy", &p, NULL);
	if (!event)
		return fakert_exit(&c, cudaErrorInvalidResourceHandle, NULL);
	free(EVENT(event));
	return fakert_exit(&c, cudaSuccess, NULL);
}

static cudaError_t event_record(CUpti_CallbackId cbid, const char *name, const void *params,
				cudaEvent_t event, cudaStream_t stream, bool per_thread)
{
	struct fakecuda_stream *s = fakecuda_stream_get(stream, per_thread);
	struct fakecuda_event *e = EVENT(event);
	struct fakecuda_call c;

	fakert_enter(&c, cbid, name, params, NULL);
	if (!e)
		return fakert_exit(&c, cudaErrorInvalidResourceHandle, NULL);
	fakecuda_event_record(e, s, c.correlation, true);
	return fakert_exit(&c, cudaSuccess, "\"stream\":%u", fakecuda_stream_id(s));
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
	cudaEventRecord_v3020_params p = {event, stream};

	return event_record(RT_CBID(cudaEventRecord_v3020), "cudaEventRecord", &p, event, stream,
			    false);
}

cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream)
{
	cudaEventRecord_ptsz_v7000_params p = {event, stream};

	return event_record(RT_CBID(cudaEventRecord_ptsz_v7000), "cudaEventRecord_ptsz", &p, event,
			    stream, true);
}

/* Its flags (cudaEventRecordExternal) matter only in a stream capture, which this runtime lacks. */
cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags)
{
	cudaEventRecordWithFlags_v11010_params p = {event, stream, flags};

	return event_record(RT_CBID(cudaEventRecordWithFlags_v11010), "cudaEventRecordWithFlags",
			    &p, event, stream, false);
}

cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream,
					  unsigned int flags)
{
	cudaEventRecordWithFlags_ptsz_v11010_params p = {event, stream, flags};

	return event_record(RT_CBID(cudaEventRecordWithFlags_ptsz_v11010),
			    "cudaEventRecordWithFlags_ptsz", &p, event, stream, true);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
	cudaEventSynchronize_v3020_params p = {event};
	struct fakecuda_event *e = EVENT(event);
	struct fakecuda_call c;

	fakert_enter(&c, RT_CBID(cudaEventSynchronize_v3020), "cudaEventSynchronize", &p, NULL);
	if (!e)
		return fakert_exit(&c, cudaErrorInvalidResourceHandle, NULL);
	fakecuda_event_sync(e);
	fakecuda_sync_done(
	    &c, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE,
	    e->stream ? fakecuda_stream_device(e->stream) : fakecuda_device_current(), NULL, e);
	return fakert_exit(&c, cudaSuccess, NULL);
}

cudaError_t cudaEventQuery(cudaEvent_t event)
{
	cudaEventQuery_v3020_params p = {event};
	struct fakecuda_event *e = EVENT(event);
	struct fakecuda_call c;

	fakert_enter(&c, RT_CBID(cudaEventQuery_v3020), "cudaEventQuery", &p, NULL);
	if (!e)
		return fakert_exit(&c, cudaErrorInvalidResourceHandle, NULL);
	if (!fakecuda_event_done(e))
		return fakecuda_api_exit(&c, cudaErrorNotReady, NULL); /* not a sticky error */
	return fakert_exit(&c, cudaSuccess, NULL);
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
	cudaEventElapsedTime_v12080_params p = {ms, start, end};
	struct fakecuda_event *s = EVENT(start), *e = EVENT(end);
	struct fakecuda_call c;

	fakert_enter(&c, RT_CBID(cudaEventElapsedTime_v12080), "cudaEventElapsedTime", &p, NULL);
	if (!ms || !s || !e)
		return fakert_exit(&c, cudaErrorInvalidValue, NULL);
	switch (fakecuda_event_elapsed(s, e, ms)) {
	case -EINVAL:
		return fakert_exit(&c, cudaErrorInvalidResourceHandle, NULL);
	case -EAGAIN:
		return fakert_exit(&c, cudaErrorNotReady, NULL);
	}
	return fakert_exit(&c, cudaSuccess, "\"ms\":%.6f", (double)*ms);
}
