/*
 * Copies and memsets of 0 bytes on NVIDIA's runtime, which queue no GPU work (cuBLASLt makes
 * such memsets in every GEMM step of PyTorch). Usage: zero-app [steps] (default 6). Each step:
 * nvtxMarkA("step"); fill<<<1, 32>>>(x) on stream s; cudaMemsetAsync(x, 0, 0, s);
 * cudaMemcpyAsync(y, x, 0, DtoD, s); cudaStreamSynchronize(s). Prints "zero-app: N steps ok".
 */
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

__global__ void fill(float *x)
{
	x[threadIdx.x] = 1.0f;
}

#define APP "zero-app"
#include "check.h"

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 6;
	float *x, *y;
	cudaStream_t s;

	CHECK(cudaMalloc(&x, 32 * sizeof(float)));
	CHECK(cudaMalloc(&y, 32 * sizeof(float)));
	CHECK(cudaStreamCreate(&s));
	for (int k = 0; k < steps; k++) {
		nvtxMarkA("step");
		fill<<<1, 32, 0, s>>>(x);
		CHECK(cudaMemsetAsync(x, 0, 0, s));
		CHECK(cudaMemcpyAsync(y, x, 0, cudaMemcpyDeviceToDevice, s));
		CHECK(cudaStreamSynchronize(s));
	}
	CHECK(cudaStreamDestroy(s));
	CHECK(cudaFree(x));
	CHECK(cudaFree(y));
	return STEPS_OK(steps);
}
