/*
 * The fake libcuda.so.1's CUDA graphs, as stream capture makes them (what cudaStreamBeginCapture
 * and PyTorch's CUDA graphs use): a CUgraph is the sequence of operations captured on a stream,
 * a CUgraphExec a copy of it, and each launch queues them again on the launch's stream. Graphs
 * built node by node (cuGraphAdd*Node) are not simulated. A captured copy moves its bytes when
 * it is captured, not when it is replayed.
 */
#include <errno.h>

#include "test/fakecuda/driver.h"

#define GRAPH(g) ((struct fakecuda_graph *)(g))

static CUresult begin_capture(CUstream stream, bool per_thread)
{
	CUresult err = fakecuda_drv_need_init();
	int e;

	if (err)
		return err;
	if (!stream && !per_thread)
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* the legacy stream cannot capture */
	e = fakecuda_capture_begin(fakecuda_stream_get(stream, per_thread));
	return e == -EBUSY ? CUDA_ERROR_ILLEGAL_STATE : fakecuda_drv_error(e);
}

CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
	DRV_CALL(cuStreamBeginCapture_v2, hStream, mode);
	return fakecuda_api_exit(&c, begin_capture(hStream, false), NULL);
}

CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode)
{
	DRV_CALL(cuStreamBeginCapture_v2_ptsz, hStream, mode);
	return fakecuda_api_exit(&c, begin_capture(hStream, true), NULL);
}

static CUresult end_capture(CUstream stream, bool per_thread, CUgraph *graph)
{
	CUresult err = graph ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;
	struct fakecuda_graph *g;

	if (err)
		return err;
	g = fakecuda_capture_end(fakecuda_stream_get(stream, per_thread));
	if (!g)
		return CUDA_ERROR_ILLEGAL_STATE;
	*graph = (CUgraph)g;
	return CUDA_SUCCESS;
}

CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
	DRV_CALL(cuStreamEndCapture, hStream, phGraph);
	return fakecuda_api_exit(&c, end_capture(hStream, false, phGraph), NULL);
}

CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
	DRV_CALL(cuStreamEndCapture_ptsz, hStream, phGraph);
	return fakecuda_api_exit(&c, end_capture(hStream, true, phGraph), NULL);
}

static CUresult instantiate(CUgraphExec *exec, CUgraph graph)
{
	struct fakecuda_graph *copy = NULL;
	CUresult err = exec && graph ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err && !(copy = fakecuda_graph_copy(GRAPH(graph))))
		err = CUDA_ERROR_OUT_OF_MEMORY;
	if (!err)
		*exec = (CUgraphExec)copy;
	return err;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
				     unsigned long long flags)
{
	DRV_CALL(cuGraphInstantiateWithFlags, phGraphExec, hGraph, flags);
	return fakecuda_api_exit(&c, instantiate(phGraphExec, hGraph), NULL);
}

CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
				      CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
	DRV_CALL(cuGraphInstantiateWithParams, phGraphExec, hGraph, instantiateParams);
	CUresult err = instantiate(phGraphExec, hGraph);

	if (instantiateParams)
		instantiateParams->result_out =
		    err ? CUDA_GRAPH_INSTANTIATE_ERROR : CUDA_GRAPH_INSTANTIATE_SUCCESS;
	return fakecuda_api_exit(&c, err, NULL);
}

CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
					   CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
	return cuGraphInstantiateWithParams(phGraphExec, hGraph, instantiateParams);
}

static CUresult launch_graph(const struct fakecuda_call *c, CUgraphExec exec, CUstream stream,
			     bool per_thread)
{
	CUresult err = exec ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;

	if (!err)
		fakecuda_graph_launch(GRAPH(exec), fakecuda_stream_get(stream, per_thread),
				      c->correlation, c->nested);
	return err;
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	DRV_CALL(cuGraphLaunch, hGraphExec, hStream);
	return fakecuda_api_exit(&c, launch_graph(&c, hGraphExec, hStream, false), NULL);
}

CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	DRV_CALL(cuGraphLaunch_ptsz, hGraphExec, hStream);
	return fakecuda_api_exit(&c, launch_graph(&c, hGraphExec, hStream, true), NULL);
}

/* Uploading makes the first launch no faster here. */
CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
	DRV_CALL(cuGraphUpload, hGraphExec, hStream);
	return fakecuda_api_exit(
	    &c, hGraphExec ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE, NULL);
}

CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	DRV_CALL(cuGraphUpload_ptsz, hGraphExec, hStream);
	return fakecuda_api_exit(
	    &c, hGraphExec ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE, NULL);
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	DRV_CALL(cuGraphExecDestroy, hGraphExec);
	fakecuda_graph_free(GRAPH(hGraphExec));
	return fakecuda_api_exit(&c, CUDA_SUCCESS, NULL);
}

CUresult cuGraphDestroy(CUgraph hGraph)
{
	DRV_CALL(cuGraphDestroy, hGraph);
	fakecuda_graph_free(GRAPH(hGraph));
	return fakecuda_api_exit(&c, CUDA_SUCCESS, NULL);
}
