/*
 * A real CUDA program, built by nvcc with -cudart shared, that runs unmodified on the fake
 * runtime: <<<>>> launches (templated kernels too), copies in every direction, a memset, two
 * streams and NVTX marks. Usage: nvcc-app [steps] (default 3), or nvcc-app -q: it only asks
 * how many devices there are (as a launcher such as torchrun does). apps.mk also builds it with
 * --default-stream per-thread as nvcc-app-pt: then "legacy" below is the per-thread stream.
 *
 * Before the loop: 3 cudaMalloc of 4 KiB, 1 cudaMallocHost of 4 KiB, 2 streams.
 * Each step: nvtxMarkA("step"); inside an NVTX range "forward":
 *   HtoD 4 KiB pinned -> device, async on stream 1;  fill (grid 4, block 256) on stream 1;
 *   scale<float> (grid 4, block 256) on stream 2;     scale<double> (grid 2, block 256) on the
 *   legacy stream; cudaMemset 4 KiB (legacy);         DtoD 4 KiB async on stream 2;
 *   cudaStreamSynchronize(stream 2);                  DtoH 4 KiB device -> pageable, cudaMemcpy.
 * After the loop: cudaDeviceSynchronize, frees, stream destroys. Exits 0 if the bytes survived
 * the round trip (kernels do not run on the simulated GPU, so they leave data alone).
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define N 1024

__device__ int launches;

template <typename T> __global__ void scale(T *x, T a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] *= a;
}

__global__ void fill(float *x, float v, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = v;
	if (i == 0)
		launches++;
}

#define APP "nvcc-app"
#include "check.h"

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 3, devices = 0;
	size_t bytes = N * sizeof(float);
	float *x, *y, *pinned, page[N];
	double *z;
	cudaStream_t s1, s2;
	const char *name = NULL;

	if (argc > 1 && !strcmp(argv[1], "-q")) {
		CHECK(cudaGetDeviceCount(&devices));
		printf("nvcc-app: %d devices\n", devices);
		return 0;
	}

	CHECK(cudaMalloc(&x, bytes));
	CHECK(cudaMalloc(&y, bytes));
	CHECK(cudaMalloc(&z, bytes));
	CHECK(cudaMallocHost(&pinned, bytes));
	CHECK(cudaStreamCreate(&s1));
	CHECK(cudaStreamCreate(&s2));
	CHECK(cudaFuncGetName(&name, (const void *)scale<float>));
	printf("nvcc-app: scale<float> is %s\n", name);
	for (int s = 0; s < steps; s++) {
		nvtxMarkA("step");
		nvtxRangePushA("forward");
		for (int i = 0; i < N; i++)
			pinned[i] = (float)(s * N + i);
		CHECK(cudaMemcpyAsync(x, pinned, bytes, cudaMemcpyHostToDevice, s1));
		fill<<<4, 256, 0, s1>>>(y, 1.0f, N);
		scale<float><<<4, 256, 0, s2>>>(x, 2.0f, N);
		scale<double><<<2, 256>>>(z, 0.5, N / 4);
		CHECK(cudaGetLastError());
		CHECK(cudaMemset(y, 0, bytes));
		CHECK(cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice, s2));
		CHECK(cudaStreamSynchronize(s2));
		CHECK(cudaMemcpy(page, y, bytes, cudaMemcpyDeviceToHost));
		nvtxRangePop();
		if (memcmp(page, pinned, bytes)) {
			fprintf(stderr, "nvcc-app: step %d: bytes differ after the round trip\n", s);
			return 1;
		}
	}
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaFree(x));
	CHECK(cudaFree(y));
	CHECK(cudaFree(z));
	CHECK(cudaFreeHost(pinned));
	CHECK(cudaStreamDestroy(s1));
	CHECK(cudaStreamDestroy(s2));
	return STEPS_OK(steps);
}
