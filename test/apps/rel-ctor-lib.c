/*
 * A library whose constructor starts a thread that runs the program's steps (rel-ctor links
 * it): with a preloaded libgprof, this constructor runs before libgprof's, and with
 * NVTX_INJECTION64_PATH already set (as a process started by one under libgprof has it) the
 * thread's first NVTX call reaches libgprof before its constructor ran. The thread does 8
 * steps, each marked "step" as it begins, of 3 launches of work (_Z4workPf), synchronised.
 */
#include <pthread.h>
#include <time.h>

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include "fatbin.h"

#define STEPS 8

static volatile int stub_calls;
static pthread_t steps_thread;
static int failed, not_started; /* failed: the thread's own */

static void work_stub(void)
{
	stub_calls++;
}

static void *run_steps(void *arg)
{
	void *args[] = {NULL};

	(void)arg;
	/* Step s begins at its marker, at once: the first one while constructors still run. */
	for (int s = 0; s < STEPS; s++) {
		nvtxMarkA("step");
		for (int k = 0; k < 3; k++)
			failed |= cudaLaunchKernel((const void *)work_stub, (dim3){1, 1, 1},
						   (dim3){s + 1, 1, 1}, args, 0, 0) != cudaSuccess;
		failed |= cudaDeviceSynchronize() != cudaSuccess;
		nanosleep(&(struct timespec){.tv_nsec = 2 * 1000 * 1000}, NULL);
	}
	return NULL;
}

__attribute__((constructor)) static void start_steps(void)
{
	static char fatbin[16];
	void **handle = __cudaRegisterFatBinary(fatbin);

	__cudaRegisterFunction(handle, (const char *)work_stub, "_Z4workPf", "_Z4workPf", -1, NULL,
			       NULL, NULL, NULL, NULL);
	__cudaRegisterFatBinaryEnd(handle);
	not_started = pthread_create(&steps_thread, NULL, run_steps, NULL) != 0;
}

/* Waits for the steps: 0, or 1 if a call failed. */
__attribute__((visibility("default"))) int rel_ctor_join(void);
int rel_ctor_join(void)
{
	if (not_started)
		return 1;
	pthread_join(steps_thread, NULL);
	return failed;
}
