/*
 * A data-parallel training loop in miniature on the simulated libnccl: one communicator of
 * WORLD_SIZE ranks (this process is RANK), and per step an NVTX "step" mark, a compute kernel
 * (_Z7computePfi, grid 64, block 256) on one stream and, on another, as DDP overlaps them,
 * ncclAllReduce of -n floats (sum) and ncclAllGather of -n / 4 / WORLD_SIZE bf16 values; then
 * both streams are synchronized. -s steps (default 6). With -e each step also makes a call
 * NCCL refuses (a NULL communicator) and checks that it returned ncclInvalidArgument. The
 * ranks run one after another (the tests start them so), so their id is zeros: ranks that
 * never meet, whose collectives move nothing (test/fakecuda/nccl.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

#include "../fakecuda/nccl.h"

static volatile int stub_calls;

/* Exported under its mangled name, which is how the runtime names it without registration. */
__attribute__((visibility("default"))) void compute_stub(void) __asm__("_Z7computePfi");
void compute_stub(void)
{
	stub_calls++;
}

#define CHECK(call, ok)                                                     \
	do {                                                                \
		int err_ = (int)(call);                                     \
		if (err_ != (ok)) {                                         \
			fprintf(stderr, "nccl-app: %s: %d\n", #call, err_); \
			exit(1);                                            \
		}                                                           \
	} while (0)

static int env_int(const char *name, int dflt)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) : dflt;
}

int main(int argc, char **argv)
{
	int steps = 6, count = 1 << 20, opt, rank = env_int("RANK", 0), refused = 0;
	int world = env_int("WORLD_SIZE", 1);
	dim3 grid = {64, 1, 1}, block = {256, 1, 1};
	cudaStream_t stream, comm_stream;
	ncclUniqueId id;
	ncclComm_t comm;
	float *grads;
	void *args[1];

	while ((opt = getopt(argc, argv, "s:n:e")) != -1) {
		if (opt == 'e')
			refused = 1;
		else if (opt == 's')
			steps = atoi(optarg);
		else if (opt == 'n')
			count = atoi(optarg);
		else
			goto usage;
	}
	if (steps < 0 || count < 4)
		goto usage;
	CHECK(cudaSetDevice(env_int("LOCAL_RANK", 0)), cudaSuccess);
	CHECK(cudaStreamCreate(&stream), cudaSuccess);
	CHECK(cudaStreamCreate(&comm_stream), cudaSuccess);
	CHECK(cudaMalloc((void **)&grads, (size_t)count * sizeof(float)), cudaSuccess);
	args[0] = &grads;
	memset(&id, 0, sizeof(id));
	CHECK(ncclCommInitRank(&comm, world, id, rank), ncclSuccess);
	for (int s = 0; s < steps; s++) {
		nvtxMarkA("step");
		CHECK(cudaLaunchKernel((const void *)compute_stub, grid, block, args, 0, stream),
		      cudaSuccess);
		CHECK(ncclAllReduce(grads, grads, (size_t)count, ncclFloat32, ncclSum, comm,
				    comm_stream),
		      ncclSuccess);
		CHECK(ncclAllGather(grads, grads, (size_t)count / 4 / world, ncclBfloat16, comm,
				    comm_stream),
		      ncclSuccess);
		if (refused)
			CHECK(
			    ncclAllReduce(grads, grads, 1, ncclFloat32, ncclSum, NULL, comm_stream),
			    ncclInvalidArgument);
		CHECK(cudaStreamSynchronize(stream), cudaSuccess);
		CHECK(cudaStreamSynchronize(comm_stream), cudaSuccess);
	}
	nvtxMarkA("step");
	CHECK(ncclCommDestroy(comm), ncclSuccess);
	CHECK(cudaFree(grads), cudaSuccess);
	CHECK(cudaStreamDestroy(comm_stream), cudaSuccess);
	CHECK(cudaStreamDestroy(stream), cudaSuccess);
	printf("nccl-app: rank %d of %d, %d steps ok\n", rank, world, steps);
	return 0;
usage:
	fprintf(stderr, "usage: nccl-app [-s steps] [-n count] [-e]\n");
	return 2;
}
