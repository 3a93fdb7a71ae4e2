/*
 * The trigger tests' program (test/test-trigger.c): a loop of steps on one thread whose every
 * call says which step made it, with cudaProfilerStart/Stop and SIGUSR2 at chosen steps.
 * Step k (from 0):
 *
 *	nvtxMarkA("step")                                      [not with -n]
 *	the step's triggers: -p starts, then -u signals
 *	cudaMalloc((k+1) * 4096)
 *	cudaMemcpy((k+1) * 256 bytes, HtoD)
 *	cudaLaunchKernel scale<float>, grid (k+1, 1, 1), block (128, 1, 1)
 *	cudaStreamSynchronize, cudaFree (with -m, after the sleep of -d ms)
 *	the step's -p stops; a sleep of -d ms (without -m)
 *
 * Options: -s steps (default 10); -p a:b cudaProfilerStart in step a, cudaProfilerStop at the
 * end of step b ("a:-": never stopped), repeatable; -u k kill(getpid(), SIGUSR2) in step k,
 * repeatable; -d ms; -m the step sleeps holding its device memory; -n no step markers; -W after the steps, more steps until a trace file is
 * in $GPROF_OUTPUT (at most 30 s), then 3 more; -H a SIGUSR2 handler of its own from the
 * start, -L one installed after step 0 that calls the handler it replaced, -R the same
 * without calling it (each prints "usr2 <count>" at the end). Prints "trig-app: N steps".
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#define APP "trig-app"
#define CHECK_ON_STDOUT
#include "check.h"
#include "fatbin.h"

#define MAX_EVENTS 16

static volatile int stub_calls;
static int steps = 10, sleep_ms, hold_memory, no_markers, wait_trace;
static int starts[MAX_EVENTS], stops[MAX_EVENTS], n_ranges;
static int signals_at[MAX_EVENTS], n_signals;
static char own_handler; /* 'H', 'L', 'R' or 0 */
static volatile sig_atomic_t usr2_count;
static struct sigaction replaced;

static void scale_stub(void)
{
	stub_calls++;
}

static void on_usr2(int sig)
{
	usr2_count++;
	if (own_handler == 'L' && !(replaced.sa_flags & SA_SIGINFO) &&
	    replaced.sa_handler != SIG_DFL && replaced.sa_handler != SIG_IGN)
		replaced.sa_handler(sig);
}

static void take_usr2(void)
{
	struct sigaction sa = {.sa_handler = on_usr2, .sa_flags = SA_RESTART};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR2, &sa, &replaced);
}

static void pause_ms(void)
{
	struct timespec d = {.tv_sec = sleep_ms / 1000, .tv_nsec = sleep_ms % 1000 * 1000000L};

	nanosleep(&d, NULL);
}

static void body(int k, cudaStream_t s)
{
	size_t n = (size_t)(k + 1);
	char *host = calloc(n, 256);
	float *dev = NULL;
	void *args[] = {&dev};

	if (!host)
		exit(3);
	CHECK(cudaMalloc((void **)&dev, n * 4096));
	CHECK(cudaMemcpy(dev, host, n * 256, cudaMemcpyHostToDevice));
	CHECK(cudaLaunchKernel((const void *)scale_stub, (dim3){(unsigned)n, 1, 1},
			       (dim3){128, 1, 1}, args, 0, s));
	CHECK(cudaStreamSynchronize(s));
	if (hold_memory)
		pause_ms();
	CHECK(cudaFree(dev));
	free(host);
}

static void step(int k, cudaStream_t s)
{
	if (!no_markers)
		nvtxMarkA("step");
	for (int i = 0; i < n_ranges; i++)
		if (starts[i] == k)
			CHECK(cudaProfilerStart());
	for (int i = 0; i < n_signals; i++)
		if (signals_at[i] == k)
			kill(getpid(), SIGUSR2);
	body(k, s);
	for (int i = 0; i < n_ranges; i++)
		if (stops[i] == k)
			CHECK(cudaProfilerStop());
	if (k == 0 && (own_handler == 'L' || own_handler == 'R'))
		take_usr2();
	if (sleep_ms && !hold_memory)
		pause_ms();
}

static double seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int trace_written(void)
{
	const char *dir = getenv("GPROF_OUTPUT");
	DIR *d = dir ? opendir(dir) : NULL;
	struct dirent *de;
	int found = 0;

	while (d && (de = readdir(d)))
		found |= strstr(de->d_name, ".pt.trace.json.gz") && !strstr(de->d_name, ".partial");
	if (d)
		closedir(d);
	return found;
}

static void parse(int argc, char **argv)
{
	int c;

	while ((c = getopt(argc, argv, "s:p:u:d:mnWHLR")) != -1) {
		if (c == 's') {
			steps = atoi(optarg);
		} else if (c == 'p' && n_ranges < MAX_EVENTS) {
			starts[n_ranges] = atoi(optarg);
			stops[n_ranges++] =
			    strchr(optarg, '-') ? -1 : atoi(strchr(optarg, ':') + 1);
		} else if (c == 'u' && n_signals < MAX_EVENTS) {
			signals_at[n_signals++] = atoi(optarg);
		} else if (c == 'd') {
			sleep_ms = atoi(optarg);
		} else if (c == 'm') {
			hold_memory = 1;
		} else if (c == 'n') {
			no_markers = 1;
		} else if (c == 'W') {
			wait_trace = 1;
		} else if (strchr("HLR", c)) {
			own_handler = (char)c;
		} else {
			fprintf(stderr,
				"usage: trig-app [-s steps] [-p a:b] [-u k] [-d ms] [-m] [-n] "
				"[-W] [-H|-L|-R]\n");
			exit(64);
		}
	}
}

int main(int argc, char **argv)
{
	static char fatbin[16];
	void **handle;
	cudaStream_t s;
	double t0 = seconds();
	int k = 0;

	parse(argc, argv);
	if (own_handler == 'H')
		take_usr2();
	handle = __cudaRegisterFatBinary(fatbin);
	__cudaRegisterFunction(handle, (const char *)scale_stub, (char *)"_Z5scaleIfEvPT_i",
			       "_Z5scaleIfEvPT_i", -1, NULL, NULL, NULL, NULL, NULL);
	__cudaRegisterFatBinaryEnd(handle);
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	for (; k < steps; k++)
		step(k, s);
	while (wait_trace && !trace_written() && seconds() - t0 < 30)
		step(k++, s);
	for (int more = 0; wait_trace && more < 3; more++)
		step(k++, s);
	CHECK(cudaStreamDestroy(s));
	if (own_handler)
		printf("usr2 %d\n", (int)usr2_count);
	printf("trig-app: %d steps\n", k);
	return 0;
}
