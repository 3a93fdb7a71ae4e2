/*
 * Short-lived threads: `rel-threads [-n threads] [-a alive] [-f] [-s]` (default 5000, 10 at a
 * time). Each thread launches kernel work (_Z4workPf) once, with grid (i+1, 1, 1) for thread i,
 * on the legacy stream and ends; main marks no step. -f: main makes no CUDA call before the
 * threads, whose launches wait for each other at a barrier, so that a batch's threads make the
 * process's first CUDA call together. -s: main synchronises the device after each batch. After
 * the last one main synchronises and prints "rel-threads: <n> threads ok".
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include "fatbin.h"
#include "options.h"

static volatile int stub_calls;
static pthread_barrier_t *start_line; /* -f: the batch's threads launch together */

static void work_stub(void)
{
	stub_calls++;
}

static void *launch_once(void *arg)
{
	unsigned i = (unsigned)(long)arg;
	void *args[] = {NULL};

	if (start_line)
		pthread_barrier_wait(start_line);
	if (cudaLaunchKernel((const void *)work_stub, (dim3){i + 1, 1, 1}, (dim3){1, 1, 1}, args, 0,
			     0) != cudaSuccess) {
		fprintf(stderr, "rel-threads: launch %u failed\n", i);
		exit(2);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static char fatbin[16];
	void **handle = __cudaRegisterFatBinary(fatbin);
	int n = 5000, alive = 10, first = 0, sync_batch = 0;
	const struct app_option options[] = {
	    {'n', false, &n}, {'a', false, &alive}, {'f', true, &first}, {'s', true, &sync_batch}};
	static pthread_barrier_t barrier;
	pthread_t tids[512];

	if (APP_OPTIONS(argc, argv, options) || n < 1 || alive < 1 || alive > 512 ||
	    (first && n % alive)) {
		fprintf(stderr, "usage: rel-threads [-n threads] [-a alive (1..512)] [-f] [-s]\n"
				"(with -f, threads a multiple of alive)\n");
		return 64;
	}
	__cudaRegisterFunction(handle, (const char *)work_stub, "_Z4workPf", "_Z4workPf", -1, NULL,
			       NULL, NULL, NULL, NULL);
	__cudaRegisterFatBinaryEnd(handle);
	if (first) {
		pthread_barrier_init(&barrier, NULL, (unsigned)alive);
		start_line = &barrier;
	} else if (cudaDeviceSynchronize() != cudaSuccess) {
		return 2;
	}
	for (int i = 0; i < n; i += alive) {
		int k = 0;

		for (; k < alive && i + k < n; k++)
			if (pthread_create(&tids[k], NULL, launch_once, (void *)(long)(i + k)) != 0)
				return 2;
		while (k--)
			pthread_join(tids[k], NULL);
		if (sync_batch && cudaDeviceSynchronize() != cudaSuccess)
			return 2;
	}
	if (cudaDeviceSynchronize() != cudaSuccess)
		return 2;
	printf("rel-threads: %d threads ok\n", n);
	return 0;
}
