/*
 * The fake libcuda.so.1's streams and events, in their legacy and per-thread-default-stream
 * (_ptsz) forms. An event record is a zero-length marker queued on its stream: it completes,
 * and takes its time, when all the work queued before it has.
 */
#include <errno.h>
#include <stdlib.h>

#include "test/fakecuda/driver.h"

#define EVENT(e) ((struct fakecuda_event *)(e))

/* ---- streams ---- */

static CUresult stream_create(CUstream *phStream, unsigned int flags)
{
	struct fakecuda_stream *s = NULL;
	CUresult err = phStream ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err && !(s = fakecuda_stream_create(flags)))
		err = CUDA_ERROR_OUT_OF_MEMORY;
	if (!err)
		*phStream = (CUstream)s;
	return err;
}

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	DRV_CALL(cuStreamCreate, phStream, Flags);
	return fakecuda_api_exit(&c, stream_create(phStream, Flags), "\"flags\":%u", Flags);
}

CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
	DRV_CALL(cuStreamCreateWithPriority, phStream, flags, priority);
	return fakecuda_api_exit(&c, stream_create(phStream, flags), "\"flags\":%u", flags);
}

static bool is_handle(CUstream s)
{
	return s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD;
}

CUresult cuStreamDestroy(CUstream hStream)
{
	DRV_CALL(cuStreamDestroy_v2, hStream);
	CUresult err = is_handle(hStream) ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_HANDLE;

	if (!err)
		fakecuda_stream_destroy((struct fakecuda_stream *)hStream);
	return fakecuda_api_exit(&c, err, NULL);
}

static CUresult stream_sync(struct fakecuda_call *c, CUstream h, bool per_thread)
{
	struct fakecuda_stream *s;
	CUresult err = fakecuda_drv_need_init();

	if (err)
		return err;
	s = fakecuda_stream_get(h, per_thread);
	fakecuda_sync(s, fakecuda_device_current());
	fakecuda_sync_done(c, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE,
			   fakecuda_stream_device(s), s, NULL);
	return err;
}

static CUresult stream_query(CUstream h, bool per_thread)
{
	struct fakecuda_stream *s;
	CUresult err = fakecuda_drv_need_init();
	uint64_t seq;

	if (err)
		return err;
	/* done when a marker queued now would be */
	s = fakecuda_stream_get(h, per_thread);
	seq = fakecuda_op_enqueue(s, &(struct fakecuda_op){.kind = FAKECUDA_OP_MARKER});
	return fakecuda_stream_done(s, seq) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

static CUresult stream_flags(CUstream h, unsigned int *flags)
{
	CUresult err = flags ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err)
		*flags = 0;
	(void)h;
	return err;
}

static CUresult stream_id(CUstream h, bool per_thread, unsigned long long *id)
{
	CUresult err = id ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err)
		*id = fakecuda_stream_id(fakecuda_stream_get(h, per_thread));
	return err;
}

static CUresult stream_ctx(CUstream h, bool per_thread, CUcontext *ctx)
{
	CUresult err = ctx ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err)
		*ctx = fakecuda_context(fakecuda_stream_device(fakecuda_stream_get(h, per_thread)));
	return err;
}

static CUresult capturing(CUstream h, bool per_thread, CUstreamCaptureStatus *status,
			  cuuint64_t *id)
{
	CUresult err = status ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;
	struct fakecuda_stream *s = err ? NULL : fakecuda_stream_get(h, per_thread);

	if (!err)
		*status = fakecuda_capturing(s) ? CU_STREAM_CAPTURE_STATUS_ACTIVE
						: CU_STREAM_CAPTURE_STATUS_NONE;
	if (!err && id)
		*id = *status == CU_STREAM_CAPTURE_STATUS_ACTIVE ? fakecuda_stream_id(s) : 0;
	return err;
}

DRV_PAIR(cuStreamSynchronize, (CUstream hStream), stream_sync(&c, hStream, per_thread), hStream)

DRV_PAIR(cuStreamQuery, (CUstream hStream), stream_query(hStream, per_thread), hStream)

DRV_PAIR(cuStreamGetFlags, (CUstream hStream, unsigned int *flags), stream_flags(hStream, flags),
	 hStream, flags)

DRV_PAIR(cuStreamGetId, (CUstream hStream, unsigned long long *streamId),
	 stream_id(hStream, per_thread, streamId), hStream, streamId)

DRV_PAIR(cuStreamGetCtx, (CUstream hStream, CUcontext *pctx), stream_ctx(hStream, per_thread, pctx),
	 hStream, pctx)

DRV_PAIR(cuStreamIsCapturing, (CUstream hStream, CUstreamCaptureStatus *captureStatus),
	 capturing(hStream, per_thread, captureStatus, NULL), hStream, captureStatus)

/* A capture's graph is not shown while it is made; it depends on nothing. */
static CUresult capture_info(CUstream h, bool per_thread, CUstreamCaptureStatus *status,
			     cuuint64_t *id, CUgraph *graph, const CUgraphNode **dependencies,
			     const CUgraphEdgeData **edges, size_t *n_dependencies)
{
	if (graph)
		*graph = NULL;
	if (dependencies)
		*dependencies = NULL;
	if (edges)
		*edges = NULL;
	if (n_dependencies)
		*n_dependencies = 0;
	return capturing(h, per_thread, status, id);
}

DRV_PAIR(cuStreamGetCaptureInfo_v3,
	 (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
	  CUgraph *graph_out, const CUgraphNode **dependencies_out,
	  const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out),
	 capture_info(hStream, per_thread, captureStatus_out, id_out, graph_out, dependencies_out,
		      edgeData_out, numDependencies_out),
	 hStream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
	 numDependencies_out)

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
	DRV_CALL(cuThreadExchangeStreamCaptureMode, mode);
	return fakecuda_api_exit(&c, mode ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE,
				 NULL);
}

/* ---- events ---- */

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
	DRV_CALL(cuEventCreate, phEvent, Flags);
	struct fakecuda_event *e = NULL;
	CUresult err = phEvent ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err && !(e = fakecuda_event_create(Flags)))
		err = CUDA_ERROR_OUT_OF_MEMORY;
	if (!err)
		*phEvent = (CUevent)e;
	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuEventDestroy(CUevent hEvent)
{
	DRV_CALL(cuEventDestroy_v2, hEvent);
	CUresult err = hEvent ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_HANDLE;

	if (!err)
		free(hEvent);
	return fakecuda_api_exit(&c, err, NULL);
}

static CUresult event_record(const struct fakecuda_call *c, CUevent h, CUstream stream,
			     bool per_thread)
{
	struct fakecuda_event *e = EVENT(h);
	CUresult err = e ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_HANDLE;

	if (!err)
		fakecuda_event_record(e, fakecuda_stream_get(stream, per_thread), c->correlation,
				      c->nested);
	return err;
}

DRV_PAIR(cuEventRecord, (CUevent hEvent, CUstream hStream),
	 event_record(&c, hEvent, hStream, per_thread), hEvent, hStream)

DRV_PAIR(cuEventRecordWithFlags, (CUevent hEvent, CUstream hStream, unsigned int flags),
	 event_record(&c, hEvent, hStream, per_thread), hEvent, hStream, flags)

CUresult cuEventSynchronize(CUevent hEvent)
{
	DRV_CALL(cuEventSynchronize, hEvent);
	struct fakecuda_event *e = EVENT(hEvent);
	CUresult err = e ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_HANDLE;

	if (!err) {
		fakecuda_event_sync(e);
		fakecuda_sync_done(&c, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE,
				   e->stream ? fakecuda_stream_device(e->stream)
					     : fakecuda_device_current(),
				   NULL, e);
	}
	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuEventQuery(CUevent hEvent)
{
	DRV_CALL(cuEventQuery, hEvent);
	struct fakecuda_event *e = EVENT(hEvent);
	CUresult err = e ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_HANDLE;

	if (!err && !fakecuda_event_done(e))
		err = CUDA_ERROR_NOT_READY;
	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	DRV_CALL(cuEventElapsedTime_v2, pMilliseconds, hStart, hEnd);
	struct fakecuda_event *s = EVENT(hStart), *e = EVENT(hEnd);
	CUresult err =
	    pMilliseconds && s && e ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_HANDLE;

	if (!err) {
		int rc = fakecuda_event_elapsed(s, e, pMilliseconds);

		err = rc == -EINVAL ? CUDA_ERROR_INVALID_HANDLE
		      : rc	    ? CUDA_ERROR_NOT_READY
				    : CUDA_SUCCESS;
	}
	return fakecuda_api_exit(&c, err, NULL);
}

static CUresult stream_wait_event(struct fakecuda_call *c, CUstream stream, CUevent h,
				  bool per_thread)
{
	struct fakecuda_event *e = EVENT(h);
	struct fakecuda_stream *s;
	CUresult err = e ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_HANDLE;

	if (err)
		return err;
	s = fakecuda_stream_get(stream, per_thread);
	if (e->stream)
		fakecuda_stream_wait_until(s, e->time_ns);
	fakecuda_sync_done(c, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT,
			   fakecuda_stream_device(s), s, e);
	return err;
}

DRV_PAIR(cuStreamWaitEvent, (CUstream hStream, CUevent hEvent, unsigned int Flags),
	 stream_wait_event(&c, hStream, hEvent, per_thread), hStream, hEvent, Flags)
