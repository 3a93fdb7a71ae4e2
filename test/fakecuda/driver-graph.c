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

DRV_PAIR(cuStreamBeginCapture_v2, (CUstream hStream, CUstreamCaptureMode mode),
	 begin_capture(hStream, per_thread), hStream, mode)

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

DRV_PAIR(cuStreamEndCapture, (CUstream hStream, CUgraph *phGraph),
	 end_capture(hStream, per_thread, phGraph), hStream, phGraph)

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

DRV_PAIR(cuGraphLaunch, (CUgraphExec hGraphExec, CUstream hStream),
	 launch_graph(&c, hGraphExec, hStream, per_thread), hGraphExec, hStream)

/* Uploading makes the first launch no faster here. */
static CUresult upload(CUgraphExec exec)
{
	return exec ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;
}

DRV_PAIR(cuGraphUpload, (CUgraphExec hGraphExec, CUstream hStream), upload(hGraphExec), hGraphExec,
	 hStream)

/* With nodes NULL, how many; else up to *numNodes of them (and how many that is). */
CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
	DRV_CALL(cuGraphGetNodes, hGraph, nodes, numNodes);
	CUresult err = hGraph && numNodes ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;
	size_t n;

	if (!err) {
		n = fakecuda_graph_nodes(GRAPH(hGraph), (void **)nodes, nodes ? *numNodes : 0);
		for (size_t i = n; nodes && i < *numNodes; i++)
			nodes[i] = NULL;
		*numNodes = nodes && n > *numNodes ? *numNodes : n;
	}
	return fakecuda_api_exit(&c, err, NULL);
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
