/*
 * B4's program: a training-loop-shaped run on the simulated GPU (test/fakecuda/), timed by
 * bench/bench.c with and without libgprof. Each step: an NVTX "step" mark, a copy in, a range
 * "forward" around `kernels` launches alternating two kernels, a memset, a copy out and a
 * stream synchronisation. Prints wall_ms=<time of the steps>.
 *
 *	steps-loop [steps (10000)] [kernels per step (8)]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFatBinaryEnd(void **handle);
void __cudaRegisterFunction(void **handle, const char *hostFun, char *deviceFun,
			    const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
			    dim3 *bDim, dim3 *gDim, int *wSize);

#define BYTES (64u << 10)

/* Host stubs: distinct bodies, so the compiler keeps distinct addresses. */
static volatile int stub_calls;

static void gemm_stub(void)
{
	stub_calls++;
}

static void relu_stub(void)
{
	stub_calls += 2;
}

static const struct {
	void (*stub)(void);
	const char *name;
} kernels[] = {
    {gemm_stub, "_Z4gemmPfPKfS1_iii"},
    {relu_stub, "_Z4reluPfi"},
};

static void register_kernels(void)
{
	static char fatbin[16];
	void **h = __cudaRegisterFatBinary(fatbin);

	for (size_t i = 0; i < sizeof(kernels) / sizeof(kernels[0]); i++)
		__cudaRegisterFunction(h, (const char *)kernels[i].stub, (char *)kernels[i].name,
				       kernels[i].name, -1, NULL, NULL, NULL, NULL, NULL);
	__cudaRegisterFatBinaryEnd(h);
}

static int step(int n_kernels, cudaStream_t s, float *dev, char *host)
{
	void *args[] = {&dev};
	int err = 0;

	nvtxMarkA("step");
	err |= cudaMemcpyAsync(dev, host, BYTES, cudaMemcpyHostToDevice, s);
	nvtxRangePushA("forward");
	for (int k = 0; k < n_kernels; k++)
		err |= cudaLaunchKernel((const void *)kernels[k % 2].stub, (dim3){256, 1, 1},
					(dim3){128, 1, 1}, args, 0, s);
	nvtxRangePop();
	err |= cudaMemsetAsync(dev, 0, BYTES, s);
	err |= cudaMemcpyAsync(host, dev, BYTES, cudaMemcpyDeviceToHost, s);
	err |= cudaStreamSynchronize(s);
	return err;
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 10000, n_kernels = argc > 2 ? atoi(argv[2]) : 8;
	static char host[BYTES];
	struct timespec t0, t1;
	cudaStream_t s;
	float *dev;

	register_kernels();
	if (cudaStreamCreate(&s) || cudaMalloc((void **)&dev, BYTES)) {
		fprintf(stderr, "steps-loop: no CUDA device\n");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < steps; i++)
		if (step(n_kernels, s, dev, host)) {
			fprintf(stderr, "steps-loop: a CUDA call failed in step %d\n", i);
			return 1;
		}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cudaFree(dev);
	printf("wall_ms=%.3f\n", (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
	return 0;
}
