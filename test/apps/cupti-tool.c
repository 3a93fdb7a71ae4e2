/*
 * Another CUPTI tool inside the program, started mid-run as torch.profiler's Kineto is. Each of 8
 * steps: nvtxMarkA("step"), then 4 launches of _Z4workPf (grid k+1, block 32) and a
 * synchronize. Before step 4 it subscribes to CUPTI (cuptiSubscribe) and records kernels with
 * buffers of its own. At the end it flushes and prints "cupti-tool: subscribe R, K kernels" (R:
 * what cuptiSubscribe returned, K: the kernel records it got) and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>

#include <cupti.h>
#include <nvtx3/nvToolsExt.h>

#include "fatbin.h"

#define STEPS	 8
#define TAKE_AT	 4
#define LAUNCHES 4
#define BUF	 (64 << 10)

static int kernels;

static void work_stub(void)
{
}

static void CUPTIAPI on_callback(void *arg, CUpti_CallbackDomain d, CUpti_CallbackId id,
				 const void *data)
{
	(void)arg, (void)d, (void)id, (void)data;
}

static void CUPTIAPI requested(uint8_t **buf, size_t *size, size_t *max)
{
	*buf = aligned_alloc(8, BUF);
	*size = *buf ? BUF : 0;
	*max = 0;
}

static void CUPTIAPI completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
			       size_t valid)
{
	CUpti_Activity *r = NULL;

	(void)ctx, (void)stream, (void)size;
	while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS)
		kernels += r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	free(buf);
}

int main(void)
{
	static char fatbin[16];
	void **handle = __cudaRegisterFatBinary(fatbin);
	CUpti_SubscriberHandle sub;
	CUptiResult subscribed = CUPTI_ERROR_UNKNOWN;
	void *args[] = {NULL};

	__cudaRegisterFunction(handle, (const char *)work_stub, "_Z4workPf", "_Z4workPf", -1, NULL,
			       NULL, NULL, NULL, NULL);
	__cudaRegisterFatBinaryEnd(handle);
	for (unsigned k = 0; k < STEPS; k++) {
		if (k == TAKE_AT) {
			subscribed = cuptiSubscribe(&sub, on_callback, NULL);
			if (subscribed == CUPTI_SUCCESS &&
			    (cuptiActivityRegisterCallbacks(requested, completed) ||
			     cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)))
				return 2;
		}
		nvtxMarkA("step");
		for (int i = 0; i < LAUNCHES; i++)
			if (cudaLaunchKernel((const void *)work_stub, (dim3){k + 1, 1, 1},
					     (dim3){32, 1, 1}, args, 0, 0) != cudaSuccess)
				return 2;
		if (cudaDeviceSynchronize() != cudaSuccess)
			return 2;
	}
	if (subscribed == CUPTI_SUCCESS && cuptiActivityFlushAll(1) != CUPTI_SUCCESS)
		return 2;
	printf("cupti-tool: subscribe %d, %d kernels\n", (int)subscribed, kernels);
	return 0;
}
