/*
 * A long window for the reliability tests: `rel-long [-n kernels] [-s per step] [-a]` (default
 * 5000000 x 1000). One thread marks NVTX "step", launches kernel _Z4longPf `per step` times on
 * a stream of its own and synchronises it, until n kernels are launched; then prints
 * "rel-long: <n> kernels ok" and exits 0. Its own memory stays flat: the simulated GPU never
 * holds more than one step of work. With -a, right after its first CUDA call, it takes the
 * address space left (under `ulimit -v`, in 1 MiB mappings never touched) but 16 MiB, as a
 * program that maps its data once CUDA is up, and says how much on stderr ("rel-long: took N
 * MiB").
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#define APP "rel-long"
/* A failed call exits 2, as the rel-* apps' other failures do. */
#define CHECK_EXIT 2
#include "check.h"
#include "fatbin.h"

static volatile int stub_calls;

static void long_stub(void)
{
	stub_calls++;
}

/* All the address space left but 16 MiB, in 1 MiB mappings kept to the end. */
static void take_address_space(void)
{
	void *last[16];
	long n = 0;

	for (void *p; (p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)) != MAP_FAILED;
	     n++) {
		if (n >= 16)
			continue; /* kept */
		last[n] = p;
	}
	for (long i = 0; i < n && i < 16; i++)
		munmap(last[i], 1 << 20);
	fprintf(stderr, "rel-long: took %ld MiB\n", n > 16 ? n - 16 : 0);
}

int main(int argc, char **argv)
{
	static char fatbin[16];
	void **handle = __cudaRegisterFatBinary(fatbin);
	long kernels = 5000000, per_step = 1000;
	void *args[] = {NULL};
	cudaStream_t s;
	int opt, take = 0;

	while ((opt = getopt(argc, argv, "n:s:a")) != -1) {
		take |= opt == 'a';
		if (opt == 'n')
			kernels = atol(optarg);
		else if (opt == 's')
			per_step = atol(optarg);
	}
	if (kernels < 1 || per_step < 1) {
		fprintf(stderr, "usage: rel-long [-n kernels] [-s kernels per step] [-a]\n");
		return 64;
	}
	__cudaRegisterFunction(handle, (const char *)long_stub, "_Z4longPf", "_Z4longPf", -1, NULL,
			       NULL, NULL, NULL, NULL);
	__cudaRegisterFatBinaryEnd(handle);
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	if (take)
		take_address_space();
	for (long done = 0; done < kernels;) {
		nvtxMarkA("step");
		for (long i = 0; i < per_step && done < kernels; i++, done++)
			CHECK(cudaLaunchKernel((const void *)long_stub, (dim3){1, 1, 1},
					       (dim3){32, 1, 1}, args, 0, s));
		CHECK(cudaStreamSynchronize(s));
	}
	CHECK(cudaStreamDestroy(s));
	printf("rel-long: %ld kernels ok\n", kernels);
	return 0;
}
