/*
 * A training-loop-shaped C program for the preload tests, whose every call says which step made
 * it: in step k (from 0) each worker thread makes exactly
 *
 *	cudaMalloc((k+1) * 4096)                        [NVTX range "forward" opens before it]
 *	cudaMemcpy((k+1) * 256 bytes, HtoD)
 *	cudaLaunchKernel scale<float>, grid (k+1, 1, 1), block (128, 1, 1), shared k * 16
 *	                                                [inside NVTX range "inner"]
 *	cudaMemsetAsync((k+1) * 128 bytes, value k)
 *	cudaMemcpyAsync((k+1) * 256 bytes, DtoH)
 *	cudaStreamSynchronize, cudaFree                 ["forward" closes after them]
 *	a range "dom-range" in NVTX domain "mydomain", and a mark nvtxMarkW(L"wide \u2713")
 *
 * and the main thread starts a range "across" (nvtxRangeStartA) with each step's marker that the
 * first worker ends (nvtxRangeEnd) after its step body.
 * Options: -s steps (default 10), -t worker threads (default 1), -S the main thread does the
 * work itself instead of workers (step markers and launches on one thread), -x the step marker
 * is "step#k" instead of "step", -e after the steps, calls that fail (one a launch of grid
 * (1, 70000, 1)): prints each result and errno, so outputs with and without a profiler can be
 * compared, -l k after the body of step k each worker also launches kernel slow (_Z4slowPf,
 * grid 1, block 32) on a second stream of its own that nothing waits for until the next step's
 * cudaFree (make it long with FAKEGPU_KERNEL_TABLE=slow=<ns> to have it end after the next
 * step marker), -c each step's cudaFree frees the allocation of the step before (none in step
 * 0; the last after the steps).
 * The main thread marks NVTX "step" at the start of each step, then the workers run it; on
 * the simulated GPU each mark is also a ground-truth line {"type":"mark","step":k,"before":ns,
 * "after":ns}, with the clock read just before and just after it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#define APP "steps-app"
#define CHECK_ON_STDOUT
#include "check.h"
#include "fatbin.h"

static volatile int stub_calls;

static void scale_stub(void)
{
	stub_calls++;
}

static void slow_stub(void)
{
	stub_calls += 2;
}

static int steps = 10, workers = 1, single, numbered, errors, late_step = -1, carry;
static __thread float *carried; /* -c: the allocation of the thread's step before */
static pthread_barrier_t step_begin, step_end;
static nvtxDomainHandle_t domain;
static nvtxRangeId_t across; /* started by the main thread, ended by the first worker */

static void domain_range(void)
{
	nvtxEventAttributes_t a = {
	    .version = NVTX_VERSION,
	    .size = NVTX_EVENT_ATTRIB_STRUCT_SIZE,
	    .messageType = NVTX_MESSAGE_TYPE_ASCII,
	    .message.ascii = "dom-range",
	};

	nvtxDomainRangePushEx(domain, &a);
	nvtxDomainRangePop(domain);
	nvtxMarkW(L"wide \u2713");
}

static void step_body(int k, cudaStream_t s)
{
	size_t n = (size_t)(k + 1);
	char *host = malloc(n * 256);
	float *dev = NULL;
	void *args[] = {&dev};

	if (!host)
		exit(3);
	memset(host, k, n * 256);
	nvtxRangePushA("forward");
	CHECK(cudaMalloc((void **)&dev, n * 4096));
	CHECK(cudaMemcpy(dev, host, n * 256, cudaMemcpyHostToDevice));
	nvtxRangePushA("inner");
	CHECK(cudaLaunchKernel((const void *)scale_stub, (dim3){(unsigned)n, 1, 1},
			       (dim3){128, 1, 1}, args, (size_t)k * 16, s));
	nvtxRangePop();
	CHECK(cudaMemsetAsync(dev, k, n * 128, s));
	CHECK(cudaMemcpyAsync(host, dev, n * 256, cudaMemcpyDeviceToHost, s));
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaFree(carry ? carried : dev));
	carried = carry ? dev : NULL;
	free(host);
	nvtxRangePop();
	domain_range();
}

/* -l: the side stream (only then), and a kernel on it after step k's body, left running. */
static void side_stream(cudaStream_t *side, int create)
{
	if (late_step < 0)
		return;
	if (create)
		CHECK(cudaStreamCreateWithFlags(side, cudaStreamNonBlocking));
	else
		CHECK(cudaStreamDestroy(*side));
}

static void late_launch(int k, cudaStream_t side)
{
	void *args[] = {NULL};

	if (k == late_step)
		CHECK(cudaLaunchKernel((const void *)slow_stub, (dim3){1, 1, 1}, (dim3){32, 1, 1},
				       args, 0, side));
}

static void *worker(void *arg)
{
	int first = arg != NULL;
	cudaStream_t s, side = NULL;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	side_stream(&side, 1);
	for (int k = 0; k < steps; k++) {
		pthread_barrier_wait(&step_begin);
		step_body(k, s);
		late_launch(k, side);
		if (first)
			nvtxRangeEnd(across);
		pthread_barrier_wait(&step_end);
	}
	if (carried)
		CHECK(cudaFree(carried));
	CHECK(cudaStreamDestroy(s));
	side_stream(&side, 0);
	return NULL;
}

static void mark_step(int k)
{
	static void (*gt_log)(const char *, ...);
	struct timespec before, after;
	char msg[32];

	if (!gt_log) /* the simulated GPU's ground-truth log, when it is there */
		*(void **)&gt_log = dlsym(RTLD_DEFAULT, "fakecuda_log");
	snprintf(msg, sizeof(msg), "step#%d", k);
	clock_gettime(CLOCK_REALTIME, &before);
	nvtxMarkA(numbered ? msg : "step");
	clock_gettime(CLOCK_REALTIME, &after);
	if (gt_log)
		gt_log("\"type\":\"mark\",\"step\":%d,\"before\":%lld,\"after\":%lld", k,
		       (long long)before.tv_sec * 1000000000 + before.tv_nsec,
		       (long long)after.tv_sec * 1000000000 + after.tv_nsec);
}

/* Calls that fail on the simulated runtime (FAKEGPU_MALLOC_FAIL_ABOVE) and on any runtime. */
static void failing_calls(void)
{
	void *p = NULL;
	cudaError_t r;

	errno = 4242;
	r = cudaMalloc(&p, (size_t)1 << 40);
	printf("cudaMalloc(1 TiB) = %d, errno %d\n", (int)r, errno);
	errno = 77;
	r = cudaMemcpy(NULL, NULL, 16, (enum cudaMemcpyKind)42);
	printf("cudaMemcpy(bad kind) = %d, errno %d\n", (int)r, errno);
	errno = 0;
	r = cudaFree((void *)0x10);
	printf("cudaFree(bad pointer) = %d, errno %d\n", (int)r, errno);
	errno = 5;
	r = cudaLaunchKernel((const void *)scale_stub, (dim3){1, 70000, 1}, (dim3){1, 1, 1}, NULL,
			     0, NULL);
	printf("cudaLaunchKernel(grid 1 x 70000) = %d, errno %d\n", (int)r, errno);
	printf("cudaGetLastError = %d\n", (int)cudaGetLastError());
}

static void parse(int argc, char **argv)
{
	int c;

	while ((c = getopt(argc, argv, "s:t:Sxel:c")) != -1) {
		switch (c) {
		case 's':
			steps = atoi(optarg);
			break;
		case 't':
			workers = atoi(optarg);
			break;
		case 'S':
			single = 1;
			break;
		case 'x':
			numbered = 1;
			break;
		case 'e':
			errors = 1;
			break;
		case 'l':
			late_step = atoi(optarg);
			break;
		case 'c':
			carry = 1;
			break;
		default:
			fprintf(stderr, "usage: steps-app [-s steps] [-t threads] [-S] [-x] [-e] "
					"[-l step] [-c]\n");
			exit(64);
		}
	}
}

int main(int argc, char **argv)
{
	pthread_t *t;
	void **handle;
	static char fatbin[16];

	parse(argc, argv);
	if (errors) {
		failing_calls();
		return 0;
	}
	handle = __cudaRegisterFatBinary(fatbin);
	__cudaRegisterFunction(handle, (const char *)scale_stub, (char *)"_Z5scaleIfEvPT_i",
			       "_Z5scaleIfEvPT_i", -1, NULL, NULL, NULL, NULL, NULL);
	__cudaRegisterFunction(handle, (const char *)slow_stub, (char *)"_Z4slowPf", "_Z4slowPf",
			       -1, NULL, NULL, NULL, NULL, NULL);
	__cudaRegisterFatBinaryEnd(handle);
	domain = nvtxDomainCreateA("mydomain");
	if (single) {
		cudaStream_t s, side = NULL;

		CHECK(cudaStreamCreate(&s));
		side_stream(&side, 1);
		for (int k = 0; k < steps; k++) {
			mark_step(k);
			step_body(k, s);
			late_launch(k, side);
		}
		if (carried)
			CHECK(cudaFree(carried));
		printf("steps-app: %d steps on one thread ok\n", steps);
		return 0;
	}
	pthread_barrier_init(&step_begin, NULL, (unsigned)workers + 1);
	pthread_barrier_init(&step_end, NULL, (unsigned)workers + 1);
	t = calloc((size_t)workers, sizeof(*t));
	for (int i = 0; i < workers; i++)
		if (pthread_create(&t[i], NULL, worker, i == 0 ? (void *)t : NULL) != 0) {
			fprintf(stderr, "steps-app: cannot start worker %d\n", i);
			return 1; /* the others wait at the barrier: they end with the process */
		}
	for (int k = 0; k < steps; k++) {
		mark_step(k);
		across = nvtxRangeStartA("across");
		pthread_barrier_wait(&step_begin);
		pthread_barrier_wait(&step_end);
	}
	for (int i = 0; i < workers; i++)
		pthread_join(t[i], NULL);
	free(t);
	printf("steps-app: %d steps x %d threads ok\n", steps, workers);
	return 0;
}
