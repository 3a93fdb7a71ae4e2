/*
 * Stream-ordered allocation (cudaMallocAsync) from the device's default pool and from a pool of
 * its own, on NVIDIA's runtime (apps.mk builds it shared, pool-real, and static,
 * pool-real-static). Usage: pool-app [steps] (default 4).
 *
 * Before the loop: a stream; the default pool's release threshold set to 64 MiB, so that it
 * keeps what it reserved (as PyTorch's cudaMallocAsync backend does); a pool of its own
 * (cudaMemPoolCreate) keeps its threshold (0: it gives its unused memory back at each
 * synchronisation).
 * Each step k: nvtxMarkA("step"); (k + 1) MiB from the default pool, 3 MiB from the pool of its
 * own, a memset of the first; both freed (cudaFreeAsync) on the stream; the stream
 * synchronised.
 * After the loop: the pools' figures (reserved now and at most, used at most) printed;
 * cudaMemPoolTrimTo(default pool, 0), cudaMemPoolDestroy(own pool). Exits 0.
 */
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#define APP "pool-app"
#include "check.h"

#define MIB (1ull << 20)

static int print_pool(const char *name, cudaMemPool_t pool)
{
	static const cudaMemPoolAttr attrs[] = {cudaMemPoolAttrReservedMemCurrent,
						cudaMemPoolAttrReservedMemHigh,
						cudaMemPoolAttrUsedMemHigh};
	unsigned long long v[3] = {0, 0, 0};

	for (int i = 0; i < 3; i++)
		CHECK(cudaMemPoolGetAttribute(pool, attrs[i], &v[i]));
	printf("pool-app: %s pool: reserved %llu (at most %llu), used at most %llu\n", name,
	       (unsigned long long)v[0], (unsigned long long)v[1], (unsigned long long)v[2]);
	return 0;
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 4;
	cudaStream_t s;
	cudaMemPool_t def, own;
	cudaMemPoolProps props = {};
	unsigned long long keep = 64 * MIB;
	void *a, *b;

	CHECK(cudaStreamCreate(&s));
	CHECK(cudaDeviceGetDefaultMemPool(&def, 0));
	props.allocType = cudaMemAllocationTypePinned;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = 0;
	CHECK(cudaMemPoolSetAttribute(def, cudaMemPoolAttrReleaseThreshold, &keep));
	CHECK(cudaMemPoolCreate(&own, &props));
	for (int k = 0; k < steps; k++) {
		nvtxMarkA("step");
		CHECK(cudaMallocAsync(&a, (k + 1) * MIB, s));
		CHECK(cudaMallocFromPoolAsync(&b, 3 * MIB, own, s));
		CHECK(cudaMemsetAsync(a, k, (k + 1) * MIB, s));
		CHECK(cudaFreeAsync(a, s));
		CHECK(cudaFreeAsync(b, s));
		CHECK(cudaStreamSynchronize(s));
	}
	if (print_pool("default", def) || print_pool("own", own))
		return 1;
	CHECK(cudaMemPoolTrimTo(def, 0));
	CHECK(cudaMemPoolDestroy(own));
	CHECK(cudaStreamDestroy(s));
	return STEPS_OK(steps);
}
