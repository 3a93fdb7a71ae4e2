/*
 * The fake libcuda.so.1's streams and events, in their legacy and per-thread-default-stream
 * (_ptsz) forms. An event record is a zero-length marker queued on its stream: it completes,
 * and takes its time, when all the work queued before it has.
 */
#include <stdlib.h>

#include "test/fakecuda/driver.h"

/* A CUevent points at one. */
struct drv_event {
	unsigned int flags;
	struct fakecuda_stream *stream; /* NULL until recorded */
	uint64_t seq;			/* the marker's sequence number on `stream` */
	uint64_t time_ns;		/* when the marker completes */
};

#define EVENT(e) ((struct drv_event *)(e))

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

static CUresult stream_sync(CUstream h, bool per_thread)
{
	CUresult err = fakecuda_drv_need_init();

	if (!err)
		fakecuda_sync(fakecuda_stream_get(h, per_thread), fakecuda_device_current());
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

CUresult cuStreamSynchronize(CUstream hStream)
{
	DRV_CALL(cuStreamSynchronize, hStream);
	return fakecuda_api_exit(&c, stream_sync(hStream, false), NULL);
}

CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
	DRV_CALL(cuStreamSynchronize_ptsz, hStream);
	return fakecuda_api_exit(&c, stream_sync(hStream, true), NULL);
}

CUresult cuStreamQuery(CUstream hStream)
{
	DRV_CALL(cuStreamQuery, hStream);
	return fakecuda_api_exit(&c, stream_query(hStream, false), NULL);
}

CUresult cuStreamQuery_ptsz(CUstream hStream)
{
	DRV_CALL(cuStreamQuery_ptsz, hStream);
	return fakecuda_api_exit(&c, stream_query(hStream, true), NULL);
}

CUresult cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
	DRV_CALL(cuStreamGetFlags, hStream, flags);
	return fakecuda_api_exit(&c, stream_flags(hStream, flags), NULL);
}

CUresult cuStreamGetFlags_ptsz(CUstream hStream, unsigned int *flags)
{
	DRV_CALL(cuStreamGetFlags_ptsz, hStream, flags);
	return fakecuda_api_exit(&c, stream_flags(hStream, flags), NULL);
}

CUresult cuStreamGetId(CUstream hStream, unsigned long long *streamId)
{
	DRV_CALL(cuStreamGetId, hStream, streamId);
	return fakecuda_api_exit(&c, stream_id(hStream, false, streamId), NULL);
}

CUresult cuStreamGetId_ptsz(CUstream hStream, unsigned long long *streamId)
{
	DRV_CALL(cuStreamGetId_ptsz, hStream, streamId);
	return fakecuda_api_exit(&c, stream_id(hStream, true, streamId), NULL);
}

CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
	DRV_CALL(cuStreamGetCtx, hStream, pctx);
	return fakecuda_api_exit(&c, stream_ctx(hStream, false, pctx), NULL);
}

CUresult cuStreamGetCtx_ptsz(CUstream hStream, CUcontext *pctx)
{
	DRV_CALL(cuStreamGetCtx_ptsz, hStream, pctx);
	return fakecuda_api_exit(&c, stream_ctx(hStream, true, pctx), NULL);
}

CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
	DRV_CALL(cuStreamIsCapturing, hStream, captureStatus);
	return fakecuda_api_exit(&c, capturing(hStream, false, captureStatus, NULL), NULL);
}

CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
	DRV_CALL(cuStreamIsCapturing_ptsz, hStream, captureStatus);
	return fakecuda_api_exit(&c, capturing(hStream, true, captureStatus, NULL), NULL);
}

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

CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
				cuuint64_t *id_out, CUgraph *graph_out,
				const CUgraphNode **dependencies_out,
				const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
	DRV_CALL(cuStreamGetCaptureInfo_v3, hStream, captureStatus_out, id_out, graph_out,
		 dependencies_out, edgeData_out, numDependencies_out);
	return fakecuda_api_exit(&c,
				 capture_info(hStream, false, captureStatus_out, id_out, graph_out,
					      dependencies_out, edgeData_out, numDependencies_out),
				 NULL);
}

CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
					cuuint64_t *id_out, CUgraph *graph_out,
					const CUgraphNode **dependencies_out,
					const CUgraphEdgeData **edgeData_out,
					size_t *numDependencies_out)
{
	DRV_CALL(cuStreamGetCaptureInfo_v3_ptsz, hStream, captureStatus_out, id_out, graph_out,
		 dependencies_out, edgeData_out, numDependencies_out);
	return fakecuda_api_exit(&c,
				 capture_info(hStream, true, captureStatus_out, id_out, graph_out,
					      dependencies_out, edgeData_out, numDependencies_out),
				 NULL);
}

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
	struct drv_event *e = NULL;
	CUresult err = phEvent ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err && !(e = calloc(1, sizeof(*e))))
		err = CUDA_ERROR_OUT_OF_MEMORY;
	if (!err) {
		e->flags = Flags;
		*phEvent = (CUevent)e;
	}
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
	struct fakecuda_op marker = {.kind = FAKECUDA_OP_MARKER, .correlation = c->correlation};
	struct drv_event *e = EVENT(h);
	CUresult err = e ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_HANDLE;

	if (err)
		return err;
	marker.runtime = c->nested;
	e->stream = fakecuda_stream_get(stream, per_thread);
	e->seq = fakecuda_op_enqueue(e->stream, &marker);
	e->time_ns = marker.end_ns;
	return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
	DRV_CALL(cuEventRecord, hEvent, hStream);
	return fakecuda_api_exit(&c, event_record(&c, hEvent, hStream, false), NULL);
}

CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
	DRV_CALL(cuEventRecord_ptsz, hEvent, hStream);
	return fakecuda_api_exit(&c, event_record(&c, hEvent, hStream, true), NULL);
}

CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
	DRV_CALL(cuEventRecordWithFlags, hEvent, hStream, flags);
	return fakecuda_api_exit(&c, event_record(&c, hEvent, hStream, false), NULL);
}

CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags)
{
	DRV_CALL(cuEventRecordWithFlags_ptsz, hEvent, hStream, flags);
	return fakecuda_api_exit(&c, event_record(&c, hEvent, hStream, true), NULL);
}

CUresult cuEventSynchronize(CUevent hEvent)
{
	DRV_CALL(cuEventSynchronize, hEvent);
	struct drv_event *e = EVENT(hEvent);
	CUresult err = e ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_HANDLE;

	if (!err && e->stream)
		fakecuda_stream_wait(e->stream, e->seq);
	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuEventQuery(CUevent hEvent)
{
	DRV_CALL(cuEventQuery, hEvent);
	struct drv_event *e = EVENT(hEvent);
	CUresult err = e ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_HANDLE;

	if (!err && e->stream && !fakecuda_stream_done(e->stream, e->seq))
		err = CUDA_ERROR_NOT_READY;
	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	DRV_CALL(cuEventElapsedTime_v2, pMilliseconds, hStart, hEnd);
	struct drv_event *s = EVENT(hStart), *e = EVENT(hEnd);
	CUresult err =
	    pMilliseconds && s && e ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_HANDLE;

	if (!err && (!s->stream || !e->stream || ((s->flags | e->flags) & CU_EVENT_DISABLE_TIMING)))
		err = CUDA_ERROR_INVALID_HANDLE;
	if (!err &&
	    (!fakecuda_stream_done(s->stream, s->seq) || !fakecuda_stream_done(e->stream, e->seq)))
		err = CUDA_ERROR_NOT_READY;
	if (!err)
		*pMilliseconds = (float)((double)((int64_t)(e->time_ns - s->time_ns)) / 1e6);
	return fakecuda_api_exit(&c, err, NULL);
}

static CUresult stream_wait_event(CUstream stream, CUevent h, bool per_thread)
{
	struct drv_event *e = EVENT(h);
	CUresult err = e ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_HANDLE;

	if (!err && e->stream)
		fakecuda_stream_wait_until(fakecuda_stream_get(stream, per_thread), e->time_ns);
	return err;
}

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
	DRV_CALL(cuStreamWaitEvent, hStream, hEvent, Flags);
	return fakecuda_api_exit(&c, stream_wait_event(hStream, hEvent, false), NULL);
}

CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
	DRV_CALL(cuStreamWaitEvent_ptsz, hStream, hEvent, Flags);
	return fakecuda_api_exit(&c, stream_wait_event(hStream, hEvent, true), NULL);
}
