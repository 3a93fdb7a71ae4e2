/*
 * A C program on the CUDA runtime API: each of -t threads runs -s steps of copies, kernels, a
 * memset and an allocation on its own stream; thread 0 marks each step with NVTX "step".
 *
 * Per step and thread: cudaMalloc + cudaFree of 1 MiB; HtoD 64 KiB (pinned -> device) and DtoH
 * 64 KiB (device -> pageable) with cudaMemcpyAsync; kernels vec_add (grid 64, block 256,
 * registered like nvcc does: _Z7vec_addPfPKfS1_i) and relu (grid 32, block 128, named by its
 * exported symbol _Z4reluPfi); cudaMemsetAsync of 1 MiB; cudaStreamSynchronize.
 * Before the threads start, main marks "rt-app" once. Exits 0 after checking that the bytes went
 * to the device and back. -o ms: the threads after the first begin their steps ms later.
 */
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#define APP "rt-app"
#include "check.h"
#include "options.h"
#include "fatbin.h"

#define COPY_BYTES (64 << 10)
#define TMP_BYTES  (1 << 20)

/* nvcc's registration entry points (crt/host_runtime.h is C++ only). */

/* Host stubs: the runtime knows kernels by these addresses, kept apart by distinct bodies. */
static volatile int stub_calls;

static void vec_add_stub(void)
{
	stub_calls += 1;
}

/* Exported under its mangled name, which is how the runtime names it without registration. */
__attribute__((visibility("default"))) void relu_stub(void) __asm__("_Z4reluPfi");
void relu_stub(void)
{
	stub_calls += 2;
}

static int steps = 3, threads = 1, offset_ms;

static void register_kernels(void)
{
	static char fatbin[16];
	void **handle = __cudaRegisterFatBinary(fatbin);

	__cudaRegisterFunction(handle, (const char *)vec_add_stub, "_Z7vec_addPfPKfS1_i",
			       "_Z7vec_addPfPKfS1_i", -1, NULL, NULL, NULL, NULL, NULL);
	__cudaRegisterFatBinaryEnd(handle);
}

static void step(int tid, int s, cudaStream_t stream, char *pinned, char *pageable, char *dev)
{
	dim3 grid1 = {64, 1, 1}, block1 = {256, 1, 1}, grid2 = {32, 1, 1}, block2 = {128, 1, 1};
	void *args[] = {&dev};
	void *tmp;

	if (tid == 0)
		nvtxMarkA("step");
	nvtxRangePushA("step_body");
	memset(pinned, (tid + s) & 0xff, COPY_BYTES);
	CHECK(cudaMalloc(&tmp, TMP_BYTES));
	CHECK(cudaMemcpyAsync(dev, pinned, COPY_BYTES, cudaMemcpyHostToDevice, stream));
	CHECK(cudaLaunchKernel((const void *)vec_add_stub, grid1, block1, args, 0, stream));
	CHECK(cudaLaunchKernel((const void *)relu_stub, grid2, block2, args, 0, stream));
	CHECK(cudaMemsetAsync(tmp, 0, TMP_BYTES, stream));
	CHECK(cudaMemcpyAsync(pageable, dev, COPY_BYTES, cudaMemcpyDeviceToHost, stream));
	CHECK(cudaStreamSynchronize(stream));
	CHECK(cudaFree(tmp));
	nvtxRangePop();
	if (memcmp(pinned, pageable, COPY_BYTES)) {
		fprintf(stderr, "rt-app: thread %d step %d: bytes differ after the round trip\n",
			tid, s);
		exit(1);
	}
}

static void *worker(void *arg)
{
	int tid = (int)(long)arg;
	char *pinned, *dev, *pageable = malloc(COPY_BYTES);
	cudaStream_t stream;

	if (!pageable)
		exit(1);
	CHECK(cudaStreamCreate(&stream));
	CHECK(cudaMallocHost((void **)&pinned, COPY_BYTES));
	CHECK(cudaMalloc((void **)&dev, COPY_BYTES));
	if (tid)
		nanosleep(&(struct timespec){.tv_sec = offset_ms / 1000,
					     .tv_nsec = offset_ms % 1000 * 1000000L},
			  NULL);
	for (int s = 0; s < steps; s++)
		step(tid, s, stream, pinned, pageable, dev);
	CHECK(cudaFree(dev));
	CHECK(cudaFreeHost(pinned));
	CHECK(cudaStreamDestroy(stream));
	free(pageable);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t tids[64];
	const struct app_option options[] = {
	    {'s', false, &steps}, {'t', false, &threads}, {'o', false, &offset_ms}};

	if (APP_OPTIONS(argc, argv, options) || steps < 0 || threads < 1 || threads > 64)
		goto usage;
	register_kernels();
	/* NVTX initialises itself at the first call, racily: make that call before any thread. */
	nvtxMarkA("rt-app");
	for (long i = 0; i < threads; i++)
		pthread_create(&tids[i], NULL, worker, (void *)i);
	for (int i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	CHECK(cudaDeviceSynchronize());
	printf("rt-app: %d threads x %d steps ok\n", threads, steps);
	return 0;
usage:
	fprintf(stderr, "usage: rt-app [-s steps] [-t threads (1..64)] [-o ms]\n");
	return 2;
}
