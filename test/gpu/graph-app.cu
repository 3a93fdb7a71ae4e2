/*
 * GPU suite case 5: a CUDA graph captured once and replayed. Usage: graph-app [steps]. Before
 * the loop, stream capture records three kernels on one stream: stage_a, stage_b<float> and
 * stage_c (grid 128, block 256 each). Each step: nvtxMarkA("step"); cudaGraphLaunch twice;
 * cudaStreamSynchronize. So each step runs each kernel twice, all six under the correlation
 * ids of the two cudaGraphLaunch calls.
 */
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define N (128 * 256)

__global__ void stage_a(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] += 1.0f;
}

template <typename T> __global__ void stage_b(T *x, T a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] *= a;
}

__global__ void stage_c(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] -= 1.0f;
}

#define APP "graph-app"
#include "../apps/check.h"

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 8;
	float *x, host = -1;
	cudaStream_t s;
	cudaGraph_t graph;
	cudaGraphExec_t exec;

	CHECK(cudaMalloc(&x, N * sizeof(float)));
	CHECK(cudaMemset(x, 0, N * sizeof(float)));
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	stage_a<<<N / 256, 256, 0, s>>>(x, N);
	stage_b<float><<<N / 256, 256, 0, s>>>(x, 1.0f, N);
	stage_c<<<N / 256, 256, 0, s>>>(x, N);
	CHECK(cudaStreamEndCapture(s, &graph));
	CHECK(cudaGraphInstantiate(&exec, graph, 0));
	for (int st = 0; st < steps; st++) {
		nvtxMarkA("step");
		CHECK(cudaGraphLaunch(exec, s));
		CHECK(cudaGraphLaunch(exec, s));
		CHECK(cudaStreamSynchronize(s));
	}
	/* +1, *1, -1: the zeros survive every replay. */
	CHECK(cudaMemcpy(&host, x, sizeof(float), cudaMemcpyDeviceToHost));
	if (host != 0.0f) {
		fprintf(stderr, "graph-app: x[0] is %g, expected 0\n", host);
		return 1;
	}
	CHECK(cudaGraphExecDestroy(exec));
	CHECK(cudaGraphDestroy(graph));
	return STEPS_OK(steps);
}
