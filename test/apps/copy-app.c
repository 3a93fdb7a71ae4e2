/*
 * One cudaMemcpy in each direction per step, each of its own size so that a test tells them
 * apart: host to host 1 KiB (kind HtoH), 2 KiB HtoD, 3 KiB DtoH, 4 KiB DtoD, and 5 KiB from
 * host to device with cudaMemcpyDefault (the runtime finds the direction from the pointers).
 * Before each of -s steps (default 4) it marks NVTX "step". Prints "copy-app: N steps" and exits
 * 0 once the bytes came back as they went, 2 at the first call that fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#define APP "copy-app"
#define CHECK_ON_STDOUT
#include "check.h"

#define KIB 1024

int main(int argc, char **argv)
{
	static unsigned char src[5 * KIB], back[5 * KIB], host[KIB];
	void *dev, *dev2;
	int steps = 4, opt;

	while ((opt = getopt(argc, argv, "s:")) != -1) {
		if (opt != 's')
			return 1;
		steps = atoi(optarg);
	}
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (unsigned char)(i * 7);
	CHECK(cudaMalloc(&dev, 5 * KIB));
	CHECK(cudaMalloc(&dev2, 5 * KIB));
	for (int k = 0; k < steps; k++) {
		nvtxMarkA("step");
		CHECK(cudaMemcpy(host, src, KIB, cudaMemcpyHostToHost));
		CHECK(cudaMemcpy(dev, src, 2 * KIB, cudaMemcpyHostToDevice));
		CHECK(cudaMemcpy(back, dev, 3 * KIB, cudaMemcpyDeviceToHost));
		CHECK(cudaMemcpy(dev2, dev, 4 * KIB, cudaMemcpyDeviceToDevice));
		CHECK(cudaMemcpy(dev, src, 5 * KIB, cudaMemcpyDefault));
	}
	CHECK(cudaMemcpy(back, dev2, 3 * KIB, cudaMemcpyDeviceToHost));
	CHECK(cudaFree(dev));
	CHECK(cudaFree(dev2));
	if (memcmp(host, src, KIB) || memcmp(back, src, 3 * KIB))
		return 3;
	printf("copy-app: %d steps\n", steps);
	return 0;
}
