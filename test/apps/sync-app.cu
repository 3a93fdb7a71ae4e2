/*
 * Every kind of wait, for CUPTI's synchronisation and CUDA event records: built by nvcc like
 * nvcc-app, on the fake runtime (sync-app, sync-app-pt with --default-stream per-thread) and on
 * NVIDIA's over the simulated driver (sync-real, sync-real-pt). Usage: sync-app [steps]
 * (default 2). "default" below is the legacy stream, or the per-thread one in the -pt builds.
 *
 * Before the loop: 1 cudaMalloc of 4 KiB, streams s1 and s2 (cudaStreamCreate), events a
 * (cudaEventCreate) and b (cudaEventCreateWithFlags, cudaEventDisableTiming).
 * Each step:
 *   spin (grid 1, block 32) on s1;       cudaEventRecord(a, s1);
 *   cudaStreamWaitEvent(s2, a, 0);       spin on s2;
 *   cudaEventRecordWithFlags(b, s2, 0);  cudaEventSynchronize(b);
 *   cudaMemsetAsync 4 KiB on default;    cudaEventRecord(a, default);
 *   cudaEventSynchronize(a);             cudaStreamSynchronize(s1);
 *   cudaStreamSynchronize(default).
 * After the loop: cudaDeviceSynchronize, then the events, the memory and the streams go.
 * So per step 3 event records (s1, s2, default), 1 stream wait, 2 event syncs (on the records of
 * s2 and default), 2 stream syncs (s1, default); 1 device sync in all.
 */
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

__global__ void spin(int *x)
{
	if (threadIdx.x == 0)
		x[0]++;
}

#define APP "sync-app"
#include "check.h"

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 2;
	cudaStream_t s1, s2;
	cudaEvent_t a, b;
	int *x;

	CHECK(cudaMalloc(&x, 4096));
	CHECK(cudaStreamCreate(&s1));
	CHECK(cudaStreamCreate(&s2));
	CHECK(cudaEventCreate(&a));
	CHECK(cudaEventCreateWithFlags(&b, cudaEventDisableTiming));
	for (int s = 0; s < steps; s++) {
		spin<<<1, 32, 0, s1>>>(x);
		CHECK(cudaEventRecord(a, s1));
		CHECK(cudaStreamWaitEvent(s2, a, 0));
		spin<<<1, 32, 0, s2>>>(x);
		CHECK(cudaEventRecordWithFlags(b, s2, 0));
		CHECK(cudaEventSynchronize(b));
		CHECK(cudaMemsetAsync(x, 0, 4096, 0));
		CHECK(cudaEventRecord(a, 0));
		CHECK(cudaEventSynchronize(a));
		CHECK(cudaStreamSynchronize(s1));
		CHECK(cudaStreamSynchronize(0));
	}
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaEventDestroy(a));
	CHECK(cudaEventDestroy(b));
	CHECK(cudaFree(x));
	CHECK(cudaStreamDestroy(s1));
	CHECK(cudaStreamDestroy(s2));
	return STEPS_OK(steps);
}
