/*
 * B1 and B3's program: tight loops of hooked runtime calls on the stub runtime
 * (bench/stub-cudart.c), run by bench/bench.c with or without libgprof preloaded, in the phase
 * its step markers select.
 * Prints key=value lines: ns per call of each loop (median of the repetitions) and the calling
 * thread's page faults, or memory figures.
 *
 *	hook-loop [-n calls] [-r reps] [-s markers] [-e] [-w launches] [-f]
 *
 * -s marks that many steps before the loops; -e marks one more after them (ending a window of
 * schedule active=1) and waits for its trace in GPROF_OUTPUT; -w replaces the loops with one
 * window of that many launches and prints the resident memory before it and the peak after it;
 * -f replaces them with the machine's floor figures (floor_figures()).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <zlib.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#define MAX_REPS      64
#define TRACE_WAIT_MS 60000
#define TRACE_SUFFIX  ".pt.trace.json.gz"

static long n_calls = 1000000, reps = 5, markers, end_window, window_launches, floor_only;

/* The launched "kernel": its address is all the runtime sees. */
static void bench_kernel(void)
{
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void launches(long n)
{
	void *args[] = {NULL};

	for (long i = 0; i < n; i++)
		cudaLaunchKernel((const void *)bench_kernel, (dim3){64, 1, 1}, (dim3){128, 1, 1},
				 args, 0, NULL);
}

static void copies(long n)
{
	static char host[256];

	for (long i = 0; i < n; i++)
		cudaMemcpyAsync(host, host + 128, 128, cudaMemcpyDeviceToHost, NULL);
}

/* n calls: n / 2 pairs. */
static void allocs(long n)
{
	void *p;

	for (long i = 0; i < n / 2; i++) {
		cudaMalloc(&p, 4096);
		cudaFree(p);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* This thread's CPU time in ns and its page faults so far. */
static double thread_cpu_ns(long *faults)
{
	struct timespec ts;
	struct rusage ru = {0};

	getrusage(RUSAGE_THREAD, &ru);
	*faults = ru.ru_minflt + ru.ru_majflt;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/*
 * `reps` timed runs of fn(n_calls): prints <key>_ns (wall), <key>_cpu_ns (this thread's CPU
 * time, which a busy machine inflates less) per call, medians, and <key>_faults, this
 * thread's page faults per 1000 calls over all runs.
 */
static void time_loop(const char *key, void (*fn)(long))
{
	double t[MAX_REPS], cpu[MAX_REPS];
	long f0, f1, f;

	fn(n_calls / 10 + 1); /* warm: symbols resolved, caches and pages touched */
	thread_cpu_ns(&f0);
	for (long r = 0; r < reps; r++) {
		double t0 = now_ns(), c0 = thread_cpu_ns(&f);

		fn(n_calls);
		t[r] = (now_ns() - t0) / (double)n_calls;
		cpu[r] = (thread_cpu_ns(&f) - c0) / (double)n_calls;
	}
	thread_cpu_ns(&f1);
	qsort(t, (size_t)reps, sizeof(t[0]), cmp_double);
	qsort(cpu, (size_t)reps, sizeof(cpu[0]), cmp_double);
	printf("%s_ns=%.3f\n%s_cpu_ns=%.3f\n%s_faults=%.3f\n", key, t[reps / 2], key, cpu[reps / 2],
	       key, (f1 - f0) * 1000.0 / ((double)n_calls * reps));
}

/* Whether dir holds a complete (renamed) trace; its path in path. */
static int find_trace(const char *dir, char *path, size_t size)
{
	size_t sl = strlen(TRACE_SUFFIX);
	struct dirent *de;
	DIR *d = opendir(dir);
	int found = 0;

	while (d && !found && (de = readdir(d))) {
		size_t l = strlen(de->d_name);

		found = l > sl && strcmp(de->d_name + l - sl, TRACE_SUFFIX) == 0;
		if (found)
			snprintf(path, size, "%s/%s", dir, de->d_name);
	}
	if (d)
		closedir(d);
	return found;
}

/* The events the trace says the memory cap dropped (its header's dropped.buffer_full). */
static long long trace_dropped(const char *path)
{
	static char head[1 << 16];
	gzFile f = gzopen(path, "rb");
	const char *p;
	int n;

	if (!f)
		return -1;
	n = gzread(f, head, sizeof(head) - 1);
	gzclose(f);
	head[n > 0 ? n : 0] = '\0';
	p = strstr(head, "\"buffer_full\":");
	return p ? strtoll(p + strlen("\"buffer_full\":"), NULL, 10) : -1;
}

/* Ends the window and waits for its file; prints how long that took and what was dropped. */
static int finish_window(void)
{
	const char *dir = getenv("GPROF_OUTPUT");
	char path[4096];
	double t0 = now_ns();

	nvtxMarkA("step");
	while (!find_trace(dir ? dir : ".", path, sizeof(path))) {
		if (now_ns() - t0 > TRACE_WAIT_MS * 1e6) {
			printf("error=no trace in %s\n", dir ? dir : ".");
			return 1;
		}
		usleep(1000);
	}
	printf("trace_ms=%.1f\ndropped=%lld\n", (now_ns() - t0) / 1e6, trace_dropped(path));
	return 0;
}

/* VmRSS or VmHWM of this process, in KiB. */
static long status_kib(const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "re");

	while (f && v < 0 && fgets(line, sizeof(line), f))
		if (strncmp(line, key, strlen(key)) == 0)
			v = atol(line + strlen(key));
	if (f)
		fclose(f);
	return v;
}

static int memory_window(void)
{
	long rss;

	launches(1);
	rss = status_kib("VmRSS:");
	nvtxMarkA("step");
	launches(window_launches);
	if (finish_window())
		return 1;
	printf("rss_before_kib=%ld\nhwm_after_kib=%ld\n", rss, status_kib("VmHWM:"));
	return 0;
}

#define FLOOR_N	       2000000
#define FLOOR_RING     (16u << 20)
#define FLOOR_TOUCHED  (64u << 20)
#define FLOOR_PAGE     4096u
#define FLOOR_EV_WORDS 8 /* a launch's event: one 64-byte call record (export.h) */

/*
 * What the machine charges for the parts of a call recorded by the hooks alone that no
 * profiler can leave out, by this thread's CPU time like the loops: two readings of the TSC
 * (the hooks' clock on x86-64 where it is the kernel's clock source) and, beside them, two of
 * clock_gettime; one launch's event (a 64-byte call record) written into a ring of 16 MiB
 * that is already in memory (the export buffer is bigger than the caches); a page touched for
 * the first time.
 */
static int floor_figures(void)
{
	static volatile uint64_t ring[FLOOR_RING / sizeof(uint64_t)];
	volatile uint64_t sink = 0;
	struct timespec ts;
	volatile char *fresh;
	long f;
	double c0;

	for (size_t i = 0; i < FLOOR_RING / sizeof(uint64_t); i += FLOOR_PAGE / sizeof(uint64_t))
		ring[i] = 0;
#if defined(__x86_64__)
	c0 = thread_cpu_ns(&f);
	for (long i = 0; i < FLOOR_N; i++)
		sink += __rdtsc() - __rdtsc();
	printf("floor_tsc_pair_ns=%.3f\n", (thread_cpu_ns(&f) - c0) / FLOOR_N);
#endif
	c0 = thread_cpu_ns(&f);
	for (long i = 0; i < FLOOR_N; i++) {
		clock_gettime(CLOCK_REALTIME, &ts);
		sink += (uint64_t)ts.tv_nsec;
		clock_gettime(CLOCK_REALTIME, &ts);
		sink += (uint64_t)ts.tv_nsec;
	}
	printf("floor_clock_pair_ns=%.3f\n", (thread_cpu_ns(&f) - c0) / FLOOR_N);
	c0 = thread_cpu_ns(&f);
	for (long i = 0; i < FLOOR_N; i++) {
		size_t at = (size_t)i * FLOOR_EV_WORDS % (FLOOR_RING / sizeof(uint64_t));

		for (int w = 0; w < FLOOR_EV_WORDS; w++)
			ring[at + (size_t)w] = (uint64_t)i;
	}
	printf("floor_event_ns=%.3f\n", (thread_cpu_ns(&f) - c0) / FLOOR_N);
	fresh = mmap(NULL, FLOOR_TOUCHED, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (fresh == MAP_FAILED) {
		printf("error=mmap failed\n");
		return 1;
	}
	c0 = thread_cpu_ns(&f);
	for (size_t off = 0; off < FLOOR_TOUCHED; off += FLOOR_PAGE)
		fresh[off] = 1;
	printf("floor_page_fault_ns=%.3f\n",
	       (thread_cpu_ns(&f) - c0) / (FLOOR_TOUCHED / FLOOR_PAGE));
	munmap((void *)fresh, FLOOR_TOUCHED);
	sink += ring[0];
	return 0;
}

static int parse(int argc, char **argv)
{
	int c;

	while ((c = getopt(argc, argv, "n:r:s:ew:f")) != -1) {
		if (c == 'n')
			n_calls = atol(optarg);
		else if (c == 'r')
			reps = atol(optarg);
		else if (c == 's')
			markers = atol(optarg);
		else if (c == 'e')
			end_window = 1;
		else if (c == 'w')
			window_launches = atol(optarg);
		else if (c == 'f')
			floor_only = 1;
		else
			return -1;
	}
	return n_calls > 0 && reps > 0 && reps <= MAX_REPS ? 0 : -1;
}

int main(int argc, char **argv)
{
	if (parse(argc, argv)) {
		fprintf(stderr,
			"usage: hook-loop [-n calls] [-r reps<=%d] [-s markers] [-e] "
			"[-w launches] [-f]\n",
			MAX_REPS);
		return 64;
	}
	if (floor_only)
		return floor_figures();
	if (window_launches)
		return memory_window();
	launches(1);
	for (long i = 0; i < markers; i++)
		nvtxMarkA("step");
	time_loop("launch", launches);
	time_loop("copy", copies);
	time_loop("alloc", allocs);
	return end_window ? finish_window() : 0;
}
