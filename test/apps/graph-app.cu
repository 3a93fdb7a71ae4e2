/*
 * A CUDA graph captured once and replayed each step, on NVIDIA's runtime: how PyTorch's CUDA
 * graphs look to a profiler. Usage: graph-app [steps [capture_step]] (default 6 steps; the
 * capture before the loop). With capture_step k the capture is made in step k instead, after
 * its mark, and the graph is replayed from there on (steps before k launch nothing).
 *
 * Before the loop: 2 cudaMalloc of 4 KiB, 1 cudaMallocHost of 4 KiB, a stream s; on s, stream
 * capture of: cudaMemcpyAsync HtoD 4 KiB (pinned -> x), fill<<<4, 256>>>(y), scale<<<4, 256>>>(x),
 * cudaMemcpyAsync DtoD 4 KiB (x -> y); cudaStreamEndCapture, cudaGraphGetNodes (its count,
 * then its nodes: "graph-app: 4 nodes, 4 listed" printed, as PyTorch asks after a capture),
 * cudaGraphInstantiate.
 * Each step: nvtxMarkA("step"); cudaGraphLaunch(graph, s); cudaStreamSynchronize(s).
 * After the loop: the graph and its instance destroyed, frees. Prints "graph-app: N steps ok".
 */
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define N 1024

__global__ void fill(float *x, float v, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = v;
}

__global__ void scale(float *x, float a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] *= a;
}

#define APP "graph-app"
#include "check.h"

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 6;
	int capture_step = argc > 2 ? atoi(argv[2]) : -1;
	size_t bytes = N * sizeof(float);
	float *x, *y, *pinned;
	cudaStream_t s;
	cudaGraph_t graph;
	cudaGraphExec_t exec;
	cudaGraphNode_t nodes[8];
	size_t n_nodes = 0, listed = 8, named = 0;

	CHECK(cudaMalloc(&x, bytes));
	CHECK(cudaMalloc(&y, bytes));
	CHECK(cudaMallocHost(&pinned, bytes));
	CHECK(cudaStreamCreate(&s));
	for (int i = -1; i < steps; i++) {
		if (i >= 0)
			nvtxMarkA("step");
		if (i == capture_step) {
			CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
			CHECK(cudaMemcpyAsync(x, pinned, bytes, cudaMemcpyHostToDevice, s));
			fill<<<4, 256, 0, s>>>(y, 1.0f, N);
			scale<<<4, 256, 0, s>>>(x, 2.0f, N);
			CHECK(cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice, s));
			CHECK(cudaStreamEndCapture(s, &graph));
			CHECK(cudaGraphGetNodes(graph, NULL, &n_nodes));
			CHECK(cudaGraphGetNodes(graph, nodes, &listed));
			for (size_t k = 0; k < listed; k++)
				named += nodes[k] != NULL;
			printf("graph-app: %zu nodes, %zu listed\n", n_nodes, named);
			CHECK(cudaGraphInstantiate(&exec, graph, 0));
		}
		if (i >= 0 && i >= capture_step) {
			CHECK(cudaGraphLaunch(exec, s));
			CHECK(cudaStreamSynchronize(s));
		}
	}
	CHECK(cudaGraphExecDestroy(exec));
	CHECK(cudaGraphDestroy(graph));
	CHECK(cudaStreamDestroy(s));
	CHECK(cudaFreeHost(pinned));
	CHECK(cudaFree(x));
	CHECK(cudaFree(y));
	return STEPS_OK(steps);
}
