/*
 * Load for the reliability tests: `rel-load [-t threads] [-n launches] [-w ms]` (default
 * 32 x 100000, no wait).
 * Each worker thread t (from 0) creates a stream of its own and launches kernel work
 * (_Z4workPf) n times on it: launch i has grid (t+1, i/1000+1, 1) and block (i%1000+1, 1, 1),
 * so every launch of the run has dimensions of its own. Meanwhile a separate thread marks NVTX
 * "step" every 2 ms. After joining the workers, main synchronises the device, stops the marker
 * thread and prints "rel-load: <threads> threads x <n> launches ok"; then waits up to ms while
 * its other threads still work (so that a profiler writing millions of events finishes while
 * the program runs) and exits 0.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#define APP "rel-load"
/* A failed call exits 2, as the rel-* apps' other failures do. */
#define CHECK_EXIT 2
#include "check.h"
#include "options.h"
#include "fatbin.h"

static volatile int stub_calls;
static int launches = 100000, stop;

static void work_stub(void)
{
	stub_calls++;
}

static void *worker(void *arg)
{
	unsigned t = (unsigned)(long)arg;
	void *args[] = {NULL};
	cudaStream_t s;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	for (unsigned i = 0; i < (unsigned)launches; i++)
		CHECK(cudaLaunchKernel((const void *)work_stub, (dim3){t + 1, i / 1000 + 1, 1},
				       (dim3){i % 1000 + 1, 1, 1}, args, 0, s));
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaStreamDestroy(s));
	return NULL;
}

static void *marker(void *arg)
{
	const struct timespec tick = {.tv_nsec = 2 * 1000 * 1000};

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		nvtxMarkA("step");
		nanosleep(&tick, NULL);
	}
	return NULL;
}

static long long ms_of(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Up to ms, until the process's other threads used under 5 ms of CPU in 200 ms. */
static void wait_idle(int ms)
{
	const struct timespec tick = {.tv_nsec = 200 * 1000000L};
	long long until = ms_of(CLOCK_MONOTONIC) + ms, cpu = ms_of(CLOCK_PROCESS_CPUTIME_ID), was;

	do {
		was = cpu;
		nanosleep(&tick, NULL);
		cpu = ms_of(CLOCK_PROCESS_CPUTIME_ID);
	} while (cpu - was >= 5 && ms_of(CLOCK_MONOTONIC) < until);
}

int main(int argc, char **argv)
{
	static char fatbin[16];
	void **handle = __cudaRegisterFatBinary(fatbin);
	pthread_t tids[256], mark;
	int threads = 32, wait_ms = 0;
	const struct app_option options[] = {
	    {'t', false, &threads}, {'n', false, &launches}, {'w', false, &wait_ms}};

	if (APP_OPTIONS(argc, argv, options) || threads < 1 || threads > 256 || launches < 1 ||
	    launches > 1000 * 65535) {
		fprintf(stderr, "usage: rel-load [-t threads (1..256)] [-n launches] [-w ms]\n");
		return 64;
	}
	__cudaRegisterFunction(handle, (const char *)work_stub, "_Z4workPf", "_Z4workPf", -1, NULL,
			       NULL, NULL, NULL, NULL);
	__cudaRegisterFatBinaryEnd(handle);
	/* NVTX initialises itself at the first call, racily: make that call before any thread. */
	nvtxMarkA("step");
	pthread_create(&mark, NULL, marker, NULL);
	for (long t = 0; t < threads; t++)
		pthread_create(&tids[t], NULL, worker, (void *)t);
	for (int t = 0; t < threads; t++)
		pthread_join(tids[t], NULL);
	CHECK(cudaDeviceSynchronize());
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(mark, NULL);
	printf("rel-load: %d threads x %d launches ok\n", threads, launches);
	fflush(stdout);
	wait_idle(wait_ms);
	return 0;
}
