/*
 * B2: one window of synthetic kernels, each with its runtime launch event and ac2g flow, through
 * the real trace writer (export/), then zlib alone on the same bytes as the bound. Runs in a
 * process of its own (the exporter is set up once per process) and prints key=value lines.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zlib.h>

#include "bench/bench.h"
#include "export/format.h"

#define WINDOW_WAIT_MS 120000
#define ZLIB_CHUNK     GPROF_SINK_SYNC_BYTES
#define LAUNCH_GAP_NS  2000 /* one launch every 2 us */

/* Kernel names of the lengths real programs have, demangled as the trace writes them. */
static const char *const kernel_names[] = {
    "void gemm_tn_kernel<float, 128, 64, 8>(int, int, int, float const*, float const*, float*)",
    "void elementwise_add<float>(float*, float const*, float const*, long)",
    "softmax_forward(float*, float const*, int, int)",
    "void layer_norm_kernel<__nv_bfloat16, float>(__nv_bfloat16 const*, __nv_bfloat16*, int)",
    "reduce_sum_f32(float const*, float*, unsigned long)",
    "void attention_fwd<64, true>(half const*, half const*, half const*, half*, int, int)",
    "relu_inplace(float*, int)",
    "adam_update_step(float*, float*, float*, float const*, float, float, float, long)",
};
#define N_NAMES (sizeof(kernel_names) / sizeof(kernel_names[0]))

/* What on_window_done said, kept: its path points into the writer's window slot. */
static struct gprof_export_result result;
static char result_path[4096];

static void on_done(const struct gprof_export_result *r, void *arg)
{
	(void)arg;
	result = *r;
	snprintf(result_path, sizeof(result_path), "%s", r->path ? r->path : "");
	result.path = result_path;
}

static double clock_ms(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The writer thread's time on a CPU so far (schedstat, ns), or -1. */
static double writer_cpu_ms(void)
{
	char path[64], comm[32] = "";
	unsigned long long ns = 0;
	struct dirent *de;
	DIR *d = opendir("/proc/self/task");
	FILE *f;

	while (d && !ns && (de = readdir(d))) {
		snprintf(path, sizeof(path), "/proc/self/task/%.16s/comm", de->d_name);
		f = fopen(path, "re");
		if (f && fgets(comm, sizeof(comm), f) && strcmp(comm, "gprof-writer\n") == 0) {
			fclose(f);
			snprintf(path, sizeof(path), "/proc/self/task/%.16s/schedstat", de->d_name);
			f = fopen(path, "re");
			if (f && fscanf(f, "%llu", &ns) != 1)
				ns = 0;
		}
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return ns ? ns / 1e6 : -1;
}

/* Kernel i and its launch, as the collector makes them from CUPTI's records. */
static void push_pair(uint32_t window, uint64_t i, uint64_t t0,
		      const struct gprof_export_str *const names[],
		      const struct gprof_export_str *api)
{
	uint64_t launch = t0 + i * LAUNCH_GAP_NS;
	struct gprof_export_event ev = {
	    .kind = GPROF_EXPORT_RUNTIME,
	    .window = window,
	    .ts_ns = launch,
	    .dur_ns = 1500 + i % 700,
	    .tid = 4242,
	    .correlation = (uint32_t)(i + 1),
	    .flags = GPROF_EXPORT_FLOW | GPROF_EXPORT_ARG_RESULT,
	    .name = api,
	    .u.api = {.api = api, .cbid = 211},
	};

	gprof_export_push(&ev);
	ev = (struct gprof_export_event){
	    .kind = GPROF_EXPORT_KERNEL,
	    .window = window,
	    .ts_ns = launch + 5000,
	    .dur_ns = 900 + (i * 37) % 1000,
	    .stream = 7 + (uint32_t)(i % 2) * 6,
	    .correlation = (uint32_t)(i + 1),
	    .flags = GPROF_EXPORT_FLOW,
	    .name = names[i % N_NAMES],
	    .u.kernel = {.grid = {(uint32_t)(64 << (i % 4)), 1, 1},
			 .block = {128, 1, 1},
			 .registers = 32 + (uint32_t)(i % 3) * 8,
			 .shared_bytes = 4096,
			 .context = 1},
	};
	gprof_export_push(&ev);
}

/* Pushes the window: a step every tenth of it, kernels with their launches. Returns ms. */
static double push_window(uint32_t window, long kernels, uint64_t t0)
{
	const struct gprof_export_str *names[N_NAMES];
	const struct gprof_export_str *api = gprof_export_intern("cudaLaunchKernel");
	long per_step = kernels / 10 ? kernels / 10 : 1;
	double start = clock_ms(CLOCK_MONOTONIC);

	for (size_t i = 0; i < N_NAMES; i++)
		names[i] = gprof_export_intern(kernel_names[i]);
	for (long i = 0; i < kernels; i++) {
		if (i % per_step == 0) {
			struct gprof_export_event st = {
			    .kind = GPROF_EXPORT_STEP,
			    .window = window,
			    .ts_ns = t0 + (uint64_t)i * LAUNCH_GAP_NS,
			    .dur_ns = (uint64_t)per_step * LAUNCH_GAP_NS,
			    .tid = 4242,
			    .u.step = (uint64_t)(i / per_step),
			};
			gprof_export_push(&st);
		}
		push_pair(window, (uint64_t)i, t0, names, api);
	}
	return clock_ms(CLOCK_MONOTONIC) - start;
}

/* Compresses n bytes at level as the sink does (deflate, CRC-32, sync flushes); CPU ms. */
static double deflate_chunk(z_stream *zs, unsigned char *in, size_t n, unsigned long *crc,
			    unsigned long long *out_bytes)
{
	static unsigned char out[1u << 17];
	double t0 = clock_ms(CLOCK_THREAD_CPUTIME_ID);

	*crc = crc32(*crc, in, (uInt)n);
	zs->next_in = in;
	zs->avail_in = (uInt)n;
	do {
		zs->next_out = out;
		zs->avail_out = sizeof(out);
		deflate(zs, n ? Z_SYNC_FLUSH : Z_FINISH);
		*out_bytes += sizeof(out) - zs->avail_out;
	} while (zs->avail_out == 0);
	return clock_ms(CLOCK_THREAD_CPUTIME_ID) - t0;
}

/* zlib alone on the trace's bytes: inflates the file, deflates it again, timing the deflate. */
static int zlib_bound(const char *path, int level)
{
	unsigned long long raw = 0, out = 0;
	unsigned long crc = crc32(0, NULL, 0);
	unsigned char *buf = malloc(ZLIB_CHUNK);
	gzFile in = gzopen(path, "rb");
	z_stream zs = {0};
	double ms = 0;
	int n = -1;

	if (!buf || !in ||
	    deflateInit2(&zs, level, Z_DEFLATED, -15, GPROF_SINK_MEM_LEVEL, Z_DEFAULT_STRATEGY))
		goto out;
	gzbuffer(in, ZLIB_CHUNK);
	while ((n = gzread(in, buf, ZLIB_CHUNK)) > 0) {
		raw += (unsigned)n;
		ms += deflate_chunk(&zs, buf, (size_t)n, &crc, &out);
	}
	ms += deflate_chunk(&zs, buf, 0, &crc, &out);
	deflateEnd(&zs);
	printf("raw_bytes=%llu\nzlib_bytes=%llu\nzlib_cpu_ms=%.3f\n", raw, out, ms);
out:
	if (n < 0)
		printf("error=cannot re-read %s\n", path);
	if (in)
		gzclose(in);
	free(buf);
	return n < 0;
}

/* CPU time of the process but this thread: the writer's and its compressor threads'. */
static double export_cpu_ms(void)
{
	return clock_ms(CLOCK_PROCESS_CPUTIME_ID) - clock_ms(CLOCK_THREAD_CPUTIME_ID);
}

static int run_window(long kernels, double *release_ms)
{
	struct gprof_export_window_info info = {.number = 0, .schedule = "bench"};
	uint64_t t0 = (uint64_t)(clock_ms(CLOCK_REALTIME) * 1e6);
	double cpu0, t_release, push_ms, start, ecpu0;
	uint32_t id;

	if (gprof_export_window_open(&info, &id)) {
		printf("error=cannot open a window\n");
		return -1;
	}
	/* The writer names itself once it runs. */
	for (int i = 0; i < 1000 && (cpu0 = writer_cpu_ms()) < 0; i++)
		usleep(1000);
	if (cpu0 < 0) {
		printf("error=no gprof-writer thread\n");
		return -1;
	}
	start = clock_ms(CLOCK_MONOTONIC);
	ecpu0 = export_cpu_ms();
	push_ms = push_window(id, kernels, t0);
	gprof_export_window_set_last_step(id, 9);
	t_release = clock_ms(CLOCK_MONOTONIC);
	gprof_export_window_release(id);
	if (gprof_export_window_wait(id, WINDOW_WAIT_MS)) {
		printf("error=the window was not written in %d ms\n", WINDOW_WAIT_MS);
		return -1;
	}
	*release_ms = clock_ms(CLOCK_MONOTONIC) - t_release;
	/* The writer is behind from the first pass on: its wall time is the whole window's. */
	printf("push_ns=%.2f\nwriter_cpu_ms=%.3f\nwindow_wall_ms=%.3f\nexport_cpu_ms=%.3f\n",
	       push_ms * 1e6 / (2.0 * kernels), writer_cpu_ms() - cpu0,
	       clock_ms(CLOCK_MONOTONIC) - start, export_cpu_ms() - ecpu0);
	return 0;
}

int bench_export_main(int level, const char *dir, long kernels, unsigned threads)
{
	struct gprof_export_config cfg = {
	    .output = dir,
	    .gzip_level = level,
	    .writer_threads = threads,
	    /* The whole window fits: the writer may fall behind, no event may be dropped. */
	    .buffer_bytes =
		(size_t)kernels * 2 * sizeof(struct gprof_export_event) * 3 / 2 + (16u << 20),
	    .on_window_done = on_done,
	};
	uint64_t events = 0;
	double release_ms;
	struct stat st;

	if (gprof_export_init(&cfg) || run_window(kernels, &release_ms) || result.error ||
	    stat(result.path, &st)) {
		printf("error=the window was not written (%s)\n", result.path ? result.path : "");
		return 1;
	}
	for (int k = 0; k < GPROF_EXPORT_KINDS; k++)
		events += result.events[k];
	printf("events=%llu\ndropped=%llu\nfile_bytes=%lld\nrelease_to_rename_ms=%.3f\n",
	       (unsigned long long)events, (unsigned long long)result.dropped,
	       (long long)st.st_size, release_ms);
	fflush(stdout);
	return zlib_bound(result.path, level);
}
