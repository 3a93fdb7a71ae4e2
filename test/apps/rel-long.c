/*
 * A long window for the reliability tests: `rel-long [-n kernels] [-s per step]` (default
 * 5000000 x 1000). One thread marks NVTX "step", launches kernel _Z4longPf `per step` times on
 * a stream of its own and synchronises it, until n kernels are launched; then prints
 * "rel-long: <n> kernels ok" and exits 0. Its own memory stays flat: the simulated GPU never
 * holds more than one step of work.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include "fatbin.h"

static volatile int stub_calls;

static void long_stub(void)
{
	stub_calls++;
}

static void check(cudaError_t err, const char *what)
{
	if (err != cudaSuccess) {
		fprintf(stderr, "rel-long: %s: %d\n", what, (int)err);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	static char fatbin[16];
	void **handle = __cudaRegisterFatBinary(fatbin);
	long kernels = 5000000, per_step = 1000;
	void *args[] = {NULL};
	cudaStream_t s;
	int opt;

	while ((opt = getopt(argc, argv, "n:s:")) != -1) {
		if (opt == 'n')
			kernels = atol(optarg);
		else if (opt == 's')
			per_step = atol(optarg);
	}
	if (kernels < 1 || per_step < 1) {
		fprintf(stderr, "usage: rel-long [-n kernels] [-s kernels per step]\n");
		return 64;
	}
	__cudaRegisterFunction(handle, (const char *)long_stub, "_Z4longPf", "_Z4longPf", -1, NULL,
			       NULL, NULL, NULL, NULL);
	__cudaRegisterFatBinaryEnd(handle);
	check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
	for (long done = 0; done < kernels;) {
		nvtxMarkA("step");
		for (long i = 0; i < per_step && done < kernels; i++, done++)
			check(cudaLaunchKernel((const void *)long_stub, (dim3){1, 1, 1},
					       (dim3){32, 1, 1}, args, 0, s),
			      "cudaLaunchKernel");
		check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
	}
	check(cudaStreamDestroy(s), "cudaStreamDestroy");
	printf("rel-long: %ld kernels ok\n", kernels);
	return 0;
}
