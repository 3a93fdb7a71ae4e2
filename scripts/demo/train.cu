/*
 * The demo: a training-loop-shaped CUDA program. Each step marks NVTX "step", copies a batch
 * to the device, runs a forward and a backward pass (small kernels on a compute stream), an
 * all-reduce-like copy on a second stream, and reads the loss back. Usage: train [steps].
 */
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define N (1 << 16)

template <typename T> __global__ void linear(T *y, const T *x, T w, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = w * x[i];
}

__global__ void relu(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n && x[i] < 0)
		x[i] = 0;
}

__global__ void loss(const float *x, float *out, int n)
{
	if (blockIdx.x == 0 && threadIdx.x == 0)
		out[0] = x[0] + x[n - 1];
}

#define CHECK(call)                                                                                \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "train: %s: %s\n", #call, cudaGetErrorString(e_));         \
			return 1;                                                                  \
		}                                                                                  \
	} while (0)

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 20;
	float *host, *x, *y, *grad, *out, result = 0;
	cudaStream_t compute, comm;

	CHECK(cudaMallocHost((void **)&host, N * sizeof(float)));
	CHECK(cudaMalloc((void **)&x, N * sizeof(float)));
	CHECK(cudaMalloc((void **)&y, N * sizeof(float)));
	CHECK(cudaMalloc((void **)&grad, N * sizeof(float)));
	CHECK(cudaMalloc((void **)&out, sizeof(float)));
	CHECK(cudaStreamCreate(&compute));
	CHECK(cudaStreamCreate(&comm));
	for (int i = 0; i < N; i++)
		host[i] = (float)(i % 7) - 3;
	for (int s = 0; s < steps; s++) {
		nvtxMarkA("step");
		CHECK(cudaMemcpyAsync(x, host, N * sizeof(float), cudaMemcpyHostToDevice, compute));
		nvtxRangePushA("forward");
		linear<float><<<N / 256, 256, 0, compute>>>(y, x, 0.5f, N);
		relu<<<N / 256, 256, 0, compute>>>(y, N);
		loss<<<1, 32, 0, compute>>>(y, out, N);
		nvtxRangePop();
		nvtxRangePushA("backward");
		CHECK(cudaMemsetAsync(grad, 0, N * sizeof(float), compute));
		linear<float><<<N / 256, 256, 0, compute>>>(grad, y, 2.0f, N);
		CHECK(cudaStreamSynchronize(compute));
		CHECK(cudaMemcpyAsync(x, grad, N * sizeof(float), cudaMemcpyDeviceToDevice, comm));
		nvtxRangePop();
		CHECK(cudaMemcpy(&result, out, sizeof(float), cudaMemcpyDeviceToHost));
		CHECK(cudaStreamSynchronize(comm));
	}
	CHECK(cudaDeviceSynchronize());
	printf("train: %d steps, last loss %g\n", steps, result);
	return 0;
}
