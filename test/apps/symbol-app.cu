/*
 * __device__ variables on NVIDIA's runtime: what a program asks of them. Usage: symbol-app
 * [IMAGE NAME].
 *
 * Without arguments: cudaGetSymbolSize and cudaGetSymbolAddress of `counter` (an int) and `big`
 * (100000 floats, far more than any default a driver could give); the address must be device
 * memory (cudaPointerGetAttributes), the two variables must not overlap, and bytes written with
 * cudaMemcpyToSymbol must be read back through the address, and the reverse. Prints
 * "symbol-app: counter 4 bytes, big 400000 bytes ok".
 * With IMAGE NAME: loads the fatbin or cubin file IMAGE with cudaLibraryLoadData and prints
 * "symbol-app: NAME N bytes", N from cudaLibraryGetGlobal (which asks the driver for the size).
 * Exits 1 with one line on stderr at the first thing that is not so.
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>

#define BIG 100000

__device__ int counter;
__device__ float big[BIG];

/* Keeps both variables in the cubin. */
__global__ void touch(int n)
{
	counter += n;
	big[n] = (float)counter;
}

#define APP "symbol-app"
#include "check.h"

#define EXPECT(cond)                                                                               \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "symbol-app: not so: %s\n", #cond);                        \
			return 1;                                                                  \
		}                                                                                  \
	} while (0)

static float out[BIG], in[BIG];

static int library_global(const char *path, const char *name)
{
	FILE *f = fopen(path, "rb");
	static char image[16 << 20];
	size_t len = f ? fread(image, 1, sizeof(image), f) : 0;
	cudaLibrary_t lib;
	void *ptr = NULL;
	size_t bytes = 0;

	EXPECT(f && len > 0 && len < sizeof(image));
	fclose(f);
	CHECK(cudaLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0));
	CHECK(cudaLibraryGetGlobal(&ptr, &bytes, lib, name));
	EXPECT(ptr != NULL);
	printf("symbol-app: %s %zu bytes\n", name, bytes);
	CHECK(cudaLibraryUnload(lib));
	return 0;
}

int main(int argc, char **argv)
{
	size_t counter_size = 0, big_size = 0;
	void *counter_at = NULL, *big_at = NULL;
	cudaPointerAttributes attr;
	int one = 42, back = 0;

	if (argc == 3)
		return library_global(argv[1], argv[2]);
	CHECK(cudaGetSymbolSize(&counter_size, counter));
	CHECK(cudaGetSymbolSize(&big_size, big));
	EXPECT(counter_size == sizeof(int) && big_size == sizeof(float) * BIG);
	CHECK(cudaGetSymbolAddress(&counter_at, counter));
	CHECK(cudaGetSymbolAddress(&big_at, big));
	CHECK(cudaPointerGetAttributes(&attr, big_at));
	EXPECT(attr.type == cudaMemoryTypeDevice);
	EXPECT((char *)counter_at + counter_size <= (char *)big_at ||
	       (char *)big_at + big_size <= (char *)counter_at);

	for (int i = 0; i < BIG; i++)
		out[i] = (float)i;
	CHECK(cudaMemcpyToSymbol(big, out, sizeof(out)));
	CHECK(cudaMemcpy(in, big_at, sizeof(in), cudaMemcpyDeviceToHost));
	EXPECT(!memcmp(in, out, sizeof(in)));
	CHECK(cudaMemcpy(counter_at, &one, sizeof(one), cudaMemcpyHostToDevice));
	CHECK(cudaMemcpyFromSymbol(&back, counter, sizeof(back)));
	EXPECT(back == one);
	touch<<<1, 1>>>(1);
	CHECK(cudaDeviceSynchronize());
	printf("symbol-app: counter %zu bytes, big %zu bytes ok\n", counter_size, big_size);
	return 0;
}
