/*
 * Short-lived threads: `rel-threads [-n threads] [-a alive]` (default 5000, 10 at a time).
 * Each thread launches kernel work (_Z4workPf) once, with grid (i+1, 1, 1) for thread i, on
 * the legacy stream and ends; main marks no step. After the last one main synchronises and
 * prints "rel-threads: <n> threads ok".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include "fatbin.h"

static volatile int stub_calls;

static void work_stub(void)
{
	stub_calls++;
}

static void *launch_once(void *arg)
{
	unsigned i = (unsigned)(long)arg;
	void *args[] = {NULL};

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
	int n = 5000, alive = 10, opt;
	pthread_t tids[256];

	while ((opt = getopt(argc, argv, "n:a:")) != -1) {
		if (opt == 'n')
			n = atoi(optarg);
		else if (opt == 'a')
			alive = atoi(optarg);
	}
	if (n < 1 || alive < 1 || alive > 256) {
		fprintf(stderr, "usage: rel-threads [-n threads] [-a alive (1..256)]\n");
		return 64;
	}
	__cudaRegisterFunction(handle, (const char *)work_stub, "_Z4workPf", "_Z4workPf", -1, NULL,
			       NULL, NULL, NULL, NULL);
	__cudaRegisterFatBinaryEnd(handle);
	if (cudaDeviceSynchronize() != cudaSuccess)
		return 2;
	for (int i = 0; i < n; i += alive) {
		int k = 0;

		for (; k < alive && i + k < n; k++)
			if (pthread_create(&tids[k], NULL, launch_once, (void *)(long)(i + k)) != 0)
				return 2;
		while (k--)
			pthread_join(tids[k], NULL);
	}
	if (cudaDeviceSynchronize() != cudaSuccess)
		return 2;
	printf("rel-threads: %d threads ok\n", n);
	return 0;
}
