/*
 * A data-parallel training loop in miniature on the simulated libnccl: one communicator of
 * WORLD_SIZE ranks (this process is RANK), and per step an NVTX "step" mark, a compute kernel
 * (_Z7computePfi, grid 64, block 256) on one stream and, on another, as DDP overlaps them,
 * ncclAllReduce of -n floats (sum) and ncclAllGather of -n / 4 / WORLD_SIZE bf16 values; then
 * both streams are synchronized. -s steps (default 6). With -p each collective is made inside
 * an NVTX range named as PyTorch's profiler names it in NVTX mode ("nccl:all_reduce, op_id =
 * <n>"), as PyTorch's process groups in NVTX mode; with -k inside an operator of PyTorch's own
 * profiler, as under --torch (its External id pushed). With -e each step also makes a call
 * NCCL refuses (a NULL communicator) and checks that it returned ncclInvalidArgument. The
 * ranks run one after another (the tests start them so), so their id is zeros: ranks that
 * never meet, whose collectives move nothing (test/fakecuda/nccl.c). With -m FILE the ranks run
 * at once and meet: rank 0's ncclGetUniqueId goes through FILE to the others, and after the
 * loop each checks what the collectives moved (exchange() below).
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

#include "../fakecuda/nccl.h"
#define APP "nccl-app"
#include "check.h"

static volatile int stub_calls;

/* Exported under its mangled name, which is how the runtime names it without registration. */
__attribute__((visibility("default"))) void compute_stub(void) __asm__("_Z7computePfi");
void compute_stub(void)
{
	stub_calls++;
}

/* -m: rank 0's id through `path` (written aside, renamed), which the others wait for. */
static void meet(const char *path, int rank, ncclUniqueId *id)
{
	char part[PATH_MAX];
	FILE *f;

	if (!rank) {
		CHECK_IS(ncclGetUniqueId(id), ncclSuccess);
		snprintf(part, sizeof(part), "%s.part", path);
		f = fopen(part, "wb");
		CHECK_IS(f && fwrite(id, sizeof(*id), 1, f) == 1 && !fclose(f), 1);
		CHECK_IS(rename(part, path), 0);
		return;
	}
	for (int tries = 0; !(f = fopen(path, "rb")); tries++) {
		CHECK_IS(tries < 60000, 1);
		usleep(1000);
	}
	CHECK_IS(fread(id, sizeof(*id), 1, f), 1);
	fclose(f);
}

/*
 * What the collectives moved, N ints per rank: rank r gives r + 1 to an all-reduce (sum), r to
 * an all-gather, 10 r + 7 to a broadcast from rank 0; each gets back what every rank's gift
 * makes.
 */
static void exchange(ncclComm_t comm, cudaStream_t s, int rank, int world)
{
	enum {
		N = 8,
		MAX_RANKS = 16
	};
	int host[N * (MAX_RANKS + 1)], *dev;

	CHECK_IS(world <= MAX_RANKS, 1);
	CHECK(cudaMalloc((void **)&dev, sizeof(host)));
	for (int i = 0; i < N; i++)
		host[i] = rank + 1;
	CHECK(cudaMemcpy(dev, host, N * sizeof(int), cudaMemcpyHostToDevice));
	CHECK_IS(ncclAllReduce(dev, dev, N, ncclInt32, ncclSum, comm, s), ncclSuccess);
	CHECK(cudaMemcpy(host, dev, N * sizeof(int), cudaMemcpyDeviceToHost));
	for (int i = 0; i < N; i++)
		CHECK_IS(host[i], world * (world + 1) / 2);
	for (int i = 0; i < N; i++)
		host[i] = rank;
	CHECK(cudaMemcpy(dev, host, N * sizeof(int), cudaMemcpyHostToDevice));
	CHECK_IS(ncclAllGather(dev, dev + N, N, ncclInt32, comm, s), ncclSuccess);
	CHECK(cudaMemcpy(host, dev + N, (size_t)(N * world) * sizeof(int), cudaMemcpyDeviceToHost));
	for (int i = 0; i < N * world; i++)
		CHECK_IS(host[i], i / N);
	for (int i = 0; i < N; i++)
		host[i] = 10 * rank + 7;
	CHECK(cudaMemcpy(dev, host, N * sizeof(int), cudaMemcpyHostToDevice));
	CHECK_IS(ncclBroadcast(dev, dev, N, ncclInt32, 0, comm, s), ncclSuccess);
	CHECK(cudaMemcpy(host, dev, N * sizeof(int), cudaMemcpyDeviceToHost));
	for (int i = 0; i < N; i++)
		CHECK_IS(host[i], 7);
	CHECK(cudaFree(dev));
	printf("nccl-app: rank %d: the ranks' bytes met\n", rank);
}

static int pytorch; /* -p: 'p'; -k: 'k' */

typedef int (*push_fn)(int kind, uint64_t id);
typedef int (*pop_fn)(int kind, uint64_t *id);

/*
 * With -p, PyTorch's range around a collective, as its profiler's NVTX mode pushes it; with -k
 * the External id its own profiler pushes (CUPTI's CUSTOM0) under --torch, which libgprof
 * serves (found with dlsym, claimed first as --torch's hook and PyTorch do).
 */
static void op_push(const char *name)
{
	static int op_id;
	static push_fn push;
	char msg[64];

	snprintf(msg, sizeof(msg), "%s, op_id = %d", name, ++op_id);
	if (pytorch == 'p')
		nvtxRangePushA(msg);
	if (pytorch == 'k' && !push) {
		int (*claim)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gprof_torch_kineto");
		int (*subscribe)(void **, void *, void *) =
		    (int (*)(void **, void *, void *))dlsym(RTLD_DEFAULT, "cuptiSubscribe");
		void *handle;

		push = (push_fn)dlsym(RTLD_DEFAULT, "cuptiActivityPushExternalCorrelationId");
		if (!claim || !subscribe || !push || !claim() || subscribe(&handle, NULL, NULL)) {
			fprintf(stderr, "nccl-app: libgprof did not take PyTorch's CUPTI calls\n");
			exit(1);
		}
	}
	if (pytorch == 'k')
		push(3, (uint64_t)op_id);
}

static void op_pop(void)
{
	uint64_t id;

	if (pytorch == 'p')
		nvtxRangePop();
	if (pytorch == 'k')
		((pop_fn)dlsym(RTLD_DEFAULT, "cuptiActivityPopExternalCorrelationId"))(3, &id);
}

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
	const char *meet_at = NULL;

	while ((opt = getopt(argc, argv, "s:n:epkm:")) != -1) {
		if (opt == 'e')
			refused = 1;
		else if (opt == 'p' || opt == 'k')
			pytorch = opt;
		else if (opt == 'm')
			meet_at = optarg;
		else if (opt == 's')
			steps = atoi(optarg);
		else if (opt == 'n')
			count = atoi(optarg);
		else
			goto usage;
	}
	if (steps < 0 || count < 4)
		goto usage;
	CHECK(cudaSetDevice(env_int("LOCAL_RANK", 0)));
	CHECK(cudaStreamCreate(&stream));
	CHECK(cudaStreamCreate(&comm_stream));
	CHECK(cudaMalloc((void **)&grads, (size_t)count * sizeof(float)));
	args[0] = &grads;
	memset(&id, 0, sizeof(id));
	if (meet_at)
		meet(meet_at, rank, &id);
	CHECK_IS(ncclCommInitRank(&comm, world, id, rank), ncclSuccess);
	for (int s = 0; s < steps; s++) {
		nvtxMarkA("step");
		CHECK(cudaLaunchKernel((const void *)compute_stub, grid, block, args, 0, stream));
		op_push("nccl:all_reduce");
		CHECK_IS(ncclAllReduce(grads, grads, (size_t)count, ncclFloat32, ncclSum, comm,
				       comm_stream),
			 ncclSuccess);
		op_pop();
		op_push("nccl:all_gather");
		CHECK_IS(ncclAllGather(grads, grads, (size_t)count / 4 / world, ncclBfloat16, comm,
				       comm_stream),
			 ncclSuccess);
		op_pop();
		if (refused)
			CHECK_IS(
			    ncclAllReduce(grads, grads, 1, ncclFloat32, ncclSum, NULL, comm_stream),
			    ncclInvalidArgument);
		CHECK(cudaStreamSynchronize(stream));
		CHECK(cudaStreamSynchronize(comm_stream));
	}
	nvtxMarkA("step");
	if (meet_at)
		exchange(comm, comm_stream, rank, world);
	CHECK_IS(ncclCommDestroy(comm), ncclSuccess);
	CHECK(cudaFree(grads));
	CHECK(cudaStreamDestroy(comm_stream));
	CHECK(cudaStreamDestroy(stream));
	printf("nccl-app: rank %d of %d, %d steps ok\n", rank, world, steps);
	return 0;
usage:
	fprintf(stderr, "usage: nccl-app [-s steps] [-n count] [-e] [-m file]\n");
	return 2;
}
