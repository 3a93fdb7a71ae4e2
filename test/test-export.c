/*
 * Tests of export: the trace schema (memory sink), the gzip framing and a file cut short,
 * the writer thread end to end, producers under concurrency, the memory cap and thread exit,
 * output names and errors, interning, and the trace checker itself.
 */
#include <cupti_activity.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/heap.h"
#include "export/format.h"
#include "export/internal.h"
#include "task.h"
#include "util/proc.h"
#include "util/text.h"
#include "util/threads.h"
#include "util/trace.h"

/* The export enums mirror CUPTI's, so the collector can pass its values through. */
_Static_assert((int)GPROF_COPY_PTOP == (int)CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, "copy kinds");
_Static_assert((int)GPROF_COPY_HTOD == (int)CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, "copy kinds");
_Static_assert((int)GPROF_MEM_PINNED == (int)CUPTI_ACTIVITY_MEMORY_KIND_PINNED, "memory kinds");
_Static_assert((int)GPROF_MEM_MANAGED_STATIC == (int)CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC,
	       "memory kinds");

#define BASE_NS 1751410836000000000ull	       /* baseTimeNanoseconds of the synthetic traces */
#define US(x)	((uint64_t)((x)*1000.0 + 0.5)) /* µs after BASE_NS, in ns */

static char why[512];

#define ASSERT_TRACE_OK(t) ASSERT_MSG(trace_check((t), why, sizeof(why)) == 0, "%s", why)

static uint32_t my_tid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

static void make_tmpdir(char *path, size_t size)
{
	snprintf(path, size, "/tmp/gprof-test-export-XXXXXX");
	ASSERT(mkdtemp(path));
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static void rm_rf(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * stderr into a temp file while a test provokes gprof: lines; end_capture() puts stderr back
 * (so failing assertions can be read) and returns what was written since the capture began.
 */
static int saved_stderr = -1;
static char capture_path[64];

static void capture_stderr(void)
{
	int fd;

	snprintf(capture_path, sizeof(capture_path), "/tmp/gprof-test-stderr-XXXXXX");
	fd = mkstemp(capture_path);
	ASSERT(fd >= 0);
	if (saved_stderr < 0)
		saved_stderr = dup(STDERR_FILENO);
	ASSERT(saved_stderr >= 0 && dup2(fd, STDERR_FILENO) >= 0);
	close(fd);
}

static char *end_capture(void)
{
	static char buf[16384];
	int fd = open(capture_path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	unlink(capture_path);
	dup2(saved_stderr, STDERR_FILENO);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* The results the writer reports, for the tests to read after a wait. */
static struct gprof_export_result last_result;
static char last_path[4096];

static void on_done(const struct gprof_export_result *r, void *arg)
{
	(void)arg;
	last_result = *r;
	snprintf(last_path, sizeof(last_path), "%s", r->path);
	last_result.path = last_path;
}

/* Compressor threads the writer may start (a test that wants them sets it first). */
static unsigned export_threads;
/* The writer's format (NULL: the default); export_format_plugged_in sets it. */
static const struct gprof_format_row *export_format;

static void start_export(const char *output, size_t cap)
{
	struct gprof_export_config cfg = {
	    .output = output,
	    .gzip_level = 1,
	    .buffer_bytes = cap,
	    .writer_threads = export_threads,
	    .base_ns = BASE_NS,
	    .on_window_done = on_done,
	    .format = export_format,
	};

	ASSERT_EQ(gprof_export_init(&cfg), 0);
}

static uint32_t open_window(uint64_t number, uint64_t first_step)
{
	struct gprof_export_window_info info = {
	    .number = number,
	    .first_step = first_step,
	    .schedule = "wait=1,warmup=1,active=3,repeat=1",
	    .begin_ns = 1000 + number,
	};
	uint32_t id = 0;

	ASSERT_EQ(gprof_export_window_open(&info, &id), 0);
	ASSERT_NE(id, 0);
	return id;
}

static void close_window(uint32_t id)
{
	gprof_export_window_release(id);
	ASSERT_EQ(gprof_export_window_wait(id, 20000), 0);
}

/* A device like the reference trace's H100. */
static void set_h100(void)
{
	struct gprof_export_process_info *p = calloc(1, sizeof(*p));

	*p = (struct gprof_export_process_info){
	    .cupti_version = 24,
	    .cuda_runtime_version = 13000,
	    .cuda_driver_version = 13000,
	    .cupti_path = "/opt/cuda/lib64/libcupti.so.13",
	    .cupti_status = "in use",
	    .n_devices = 1,
	    .devices[0] = {.id = 0,
			   .name = "NVIDIA H100 80GB HBM3",
			   .total_global_mem = 85029158912ull,
			   .compute_major = 9,
			   .max_threads_per_block = 1024,
			   .max_threads_per_mp = 2048,
			   .regs_per_block = 65536,
			   .regs_per_mp = 65536,
			   .warp_size = 32,
			   .shared_mem_per_block = 49152,
			   .shared_mem_per_block_optin = 232448,
			   .shared_mem_per_mp = 233472,
			   .num_sms = 132},
	};
	gprof_export_set_process_info(p);
	free(p);
}

/* Puts *e in window w on host thread tid (0: none), from ts to ts + dur µs after the base. */
static void on_thread(struct gprof_export_event *e, uint32_t w, uint32_t tid, double ts, double dur)
{
	e->window = w;
	e->tid = tid;
	e->ts_ns = BASE_NS + US(ts);
	e->dur_ns = US(dur);
}

/* Puts *e on GPU 0's stream 7 in window w, from ts to ts + dur µs after the base. */
static void on_stream7(struct gprof_export_event *e, uint32_t w, double ts, double dur)
{
	on_thread(e, w, 0, ts, dur);
	e->device = 0;
	e->stream = 7;
}

/*
 * One event of every kind, on one host thread and GPU 0 stream 7 (times in µs after the
 * base, chosen so tracks nest and the stream has no overlap; two flows link a launch and a
 * copy to their GPU work).
 */
static size_t every_kind(uint32_t w, uint32_t tid, struct gprof_export_event *ev)
{
	const struct gprof_export_str *kname =
	    gprof_export_intern("void gemm_kernel<float>(float*, float const*, int)");
	size_t n = 0;

	ev[n] = (struct gprof_export_event){.kind = GPROF_EXPORT_STEP, .u.step = 12};
	on_thread(&ev[n++], w, tid, 1001000, 900);
	ev[n] = (struct gprof_export_event){.kind = GPROF_EXPORT_NVTX_RANGE,
					    .name = gprof_export_intern("forward"),
					    .u.nvtx.domain = gprof_export_intern("my \"domain\"")};
	on_thread(&ev[n++], w, tid, 1001005, 600);
	ev[n] = (struct gprof_export_event){.kind = GPROF_EXPORT_NVTX_MARK,
					    .name = gprof_export_intern("mark\tme")};
	on_thread(&ev[n++], w, tid, 1001006, 0);
	ev[n] = (struct gprof_export_event){
	    .kind = GPROF_EXPORT_RUNTIME,
	    .correlation = 1000,
	    .flags = GPROF_EXPORT_FLOW | GPROF_EXPORT_ARG_LAUNCH | GPROF_EXPORT_ARG_STREAM |
		     GPROF_EXPORT_ARG_RESULT,
	    .name = gprof_export_intern("cudaLaunchKernel"),
	    .u.api = {.api = gprof_export_intern("__cudaLaunchKernel_ptsz"),
		      .kernel = kname,
		      .cbid = 211,
		      .grid = {198, 1, 1},
		      .block = {128, 1, 1},
		      .shared_bytes = 1024,
		      .stream = 0x5555deadbeefull,
		      .result = 0}};
	on_thread(&ev[n++], w, tid, 1001010, 5.25);
	ev[n] = (struct gprof_export_event){
	    .kind = GPROF_EXPORT_KERNEL,
	    .correlation = 1000,
	    .flags = GPROF_EXPORT_FLOW,
	    .name = kname,
	    .u.kernel = {.grid = {198, 1, 1}, .block = {128, 1, 1}, .registers = 32, .context = 1}};
	on_stream7(&ev[n++], w, 1001020, 300.125);
	ev[n] = (struct gprof_export_event){
	    .kind = GPROF_EXPORT_DRIVER,
	    .correlation = 1001,
	    .flags = GPROF_EXPORT_FLOW | GPROF_EXPORT_ARG_BYTES | GPROF_EXPORT_ARG_COPY_KIND |
		     GPROF_EXPORT_ARG_PTR | GPROF_EXPORT_ARG_RESULT,
	    .name = gprof_export_intern("cuMemcpyHtoDAsync"),
	    .u.api = {.api = gprof_export_intern("cuMemcpyHtoDAsync_v2"),
		      .cbid = 279,
		      .bytes = 1048576,
		      .copy_kind = GPROF_COPY_HTOD,
		      .ptr = 0x7f0000001000ull,
		      .result = 700}};
	on_thread(&ev[n++], w, tid, 1001400, 8);
	ev[n] = (struct gprof_export_event){.kind = GPROF_EXPORT_MEMCPY,
					    .correlation = 1001,
					    .flags = GPROF_EXPORT_FLOW,
					    .u.copy = {.bytes = 1048576,
						       .context = 1,
						       .copy_kind = GPROF_COPY_HTOD,
						       .src_kind = GPROF_MEM_PINNED,
						       .dst_kind = GPROF_MEM_DEVICE}};
	on_stream7(&ev[n++], w, 1001410, 20);
	ev[n] = (struct gprof_export_event){
	    .kind = GPROF_EXPORT_MEMSET,
	    .correlation = 1002,
	    .u.copy = {.bytes = 4096, .context = 1, .dst_kind = GPROF_MEM_DEVICE}};
	on_stream7(&ev[n++], w, 1001440, 2);
	ev[n++] = (struct gprof_export_event){.kind = GPROF_EXPORT_MEMORY,
					      .window = w,
					      .device = 0,
					      .ts_ns = BASE_NS + US(1001450),
					      .u.memory.allocated = 1 << 20};
	return n;
}

/* The event of traceEvents with this ph and cat (and name, if given); fails if none. */
static json_t *find_event(const struct trace *t, const char *ph, const char *cat, const char *name)
{
	size_t i;
	json_t *ev;

	json_array_foreach(t->events, i, ev)
	{
		if (!strcmp(trace_str(ev, "ph"), ph) && !strcmp(trace_str(ev, "cat"), cat) &&
		    (!name || !strcmp(trace_str(ev, "name"), name)))
			return ev;
	}
	FAIL("no event ph=%s cat=%s name=%s", ph, cat, name ? name : "*");
}

static json_t *find_meta(const struct trace *t, const char *name, long long pid, long long tid)
{
	size_t i;
	json_t *ev;

	json_array_foreach(t->events, i, ev)
	{
		if (!strcmp(trace_str(ev, "ph"), "M") && !strcmp(trace_str(ev, "name"), name) &&
		    json_integer_value(json_object_get(ev, "pid")) == pid &&
		    json_integer_value(json_object_get(ev, "tid")) == tid)
			return json_object_get(ev, "args");
	}
	FAIL("no metadata %s pid=%lld tid=%lld", name, pid, tid);
}

static long long int_at(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(obj, key);

	ASSERT_MSG(json_is_integer(v), "\"%s\" is not an integer", key);
	return json_integer_value(v);
}

static double num_at(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(obj, key);

	ASSERT_MSG(json_is_number(v), "\"%s\" is not a number", key);
	return json_number_value(v);
}

static void expect_dim3(const json_t *obj, const char *key, int x, int y, int z)
{
	const json_t *a = json_object_get(obj, key);

	ASSERT_EQ(json_array_size(a), 3);
	ASSERT_EQ(json_integer_value(json_array_get(a, 0)), x);
	ASSERT_EQ(json_integer_value(json_array_get(a, 1)), y);
	ASSERT_EQ(json_integer_value(json_array_get(a, 2)), z);
}

/* Every field of every kind, as TRACE_FORMAT.md's table and export.h say. */
static void check_every_kind(const struct trace *t, long long pid, uint32_t tid)
{
	json_t *ev, *a;

	ev = find_event(t, "X", "user_annotation", "ProfilerStep#12");
	ASSERT_EQ(int_at(ev, "pid"), pid);
	ASSERT_EQ(int_at(ev, "tid"), tid);
	ASSERT(num_at(ev, "ts") == 1001000.0 && num_at(ev, "dur") == 900.0);
	ev = find_event(t, "X", "user_annotation", "forward");
	ASSERT_STR_EQ(trace_str(json_object_get(ev, "args"), "domain"), "my \"domain\"");
	ev = find_event(t, "i", "user_annotation", "mark\tme");
	ASSERT(num_at(ev, "ts") == 1001006.0 && !json_object_get(ev, "dur"));

	ev = find_event(t, "X", "cuda_runtime", "cudaLaunchKernel");
	ASSERT(num_at(ev, "ts") == 1001010.0 && num_at(ev, "dur") == 5.25);
	a = json_object_get(ev, "args");
	ASSERT_STR_EQ(trace_str(a, "api"), "__cudaLaunchKernel_ptsz");
	ASSERT_EQ(int_at(a, "cbid"), 211);
	ASSERT_EQ(int_at(a, "correlation"), 1000);
	ASSERT_STR_EQ(trace_str(a, "kernel"), "void gemm_kernel<float>(float*, float const*, int)");
	expect_dim3(a, "grid", 198, 1, 1);
	expect_dim3(a, "block", 128, 1, 1);
	ASSERT_EQ(int_at(a, "shared memory"), 1024);
	ASSERT_STR_EQ(trace_str(a, "stream handle"), "0x5555deadbeef");
	ASSERT_EQ(int_at(a, "result"), 0);
	ASSERT(!json_object_get(a, "stream") && !json_object_get(a, "bytes"));

	ev = find_event(t, "X", "cuda_driver", "cuMemcpyHtoDAsync");
	a = json_object_get(ev, "args");
	ASSERT_STR_EQ(trace_str(a, "api"), "cuMemcpyHtoDAsync_v2");
	ASSERT_EQ(int_at(a, "bytes"), 1048576);
	ASSERT_STR_EQ(trace_str(a, "copy kind"), "HtoD");
	ASSERT_STR_EQ(trace_str(a, "ptr"), "0x7f0000001000");
	ASSERT_EQ(int_at(a, "result"), 700);
	ASSERT(!json_object_get(a, "grid") && !json_object_get(a, "stream handle"));

	ev = find_event(t, "X", "kernel", NULL);
	ASSERT_STR_EQ(trace_str(ev, "name"), "void gemm_kernel<float>(float*, float const*, int)");
	ASSERT_EQ(int_at(ev, "pid"), 0);
	ASSERT_EQ(int_at(ev, "tid"), 7);
	ASSERT(num_at(ev, "ts") == 1001020.0 && num_at(ev, "dur") == 300.125);
	a = json_object_get(ev, "args");
	ASSERT(int_at(a, "queued") == 0 && int_at(a, "device") == 0 && int_at(a, "context") == 1);
	ASSERT(int_at(a, "stream") == 7 && int_at(a, "correlation") == 1000);
	ASSERT(int_at(a, "registers per thread") == 32 && int_at(a, "shared memory") == 0);
	/* 198 blocks on 132 SMs; 4 warps a block; 6 of 64 warp slots: 9.375 % */
	ASSERT(num_at(a, "blocks per SM") == 1.5 && num_at(a, "warps per SM") == 6.0);
	expect_dim3(a, "grid", 198, 1, 1);
	expect_dim3(a, "block", 128, 1, 1);
	ASSERT_EQ(int_at(a, "est. achieved occupancy %"), 9);

	ev = find_event(t, "X", "gpu_memcpy", "Memcpy HtoD (Pinned -> Device)");
	a = json_object_get(ev, "args");
	ASSERT(int_at(a, "device") == 0 && int_at(a, "context") == 1 && int_at(a, "stream") == 7);
	ASSERT(int_at(a, "correlation") == 1001 && int_at(a, "bytes") == 1048576);
	ASSERT(num_at(a, "memory bandwidth (GB/s)") == 52.4288); /* 1048576 B / 20000 ns */
	ev = find_event(t, "X", "gpu_memset", "Memset (Device)");
	a = json_object_get(ev, "args");
	ASSERT(int_at(a, "bytes") == 4096 && num_at(a, "memory bandwidth (GB/s)") == 2.048);

	ev = find_event(t, "C", "gpu_memory", NULL);
	ASSERT(int_at(ev, "pid") == 0 &&
	       int_at(json_object_get(ev, "args"), "allocated") == 1 << 20);

	/* The two links, each side on its own track at its own event's start. */
	ev = find_event(t, "s", "ac2g", NULL);
	ASSERT(int_at(ev, "id") == 1000 && int_at(ev, "pid") == pid &&
	       num_at(ev, "ts") == 1001010.0);
	ev = find_event(t, "f", "ac2g", NULL);
	ASSERT(int_at(ev, "id") == 1000 && int_at(ev, "tid") == 7 && num_at(ev, "ts") == 1001020.0);
	ASSERT_STR_EQ(trace_str(ev, "bp"), "e");

	ASSERT_STR_EQ(trace_str(find_meta(t, "process_labels", pid, 0), "labels"), "CPU");
	ASSERT_EQ(int_at(find_meta(t, "process_sort_index", pid, 0), "sort_index"), pid);
	ASSERT_STR_EQ(trace_str(find_meta(t, "process_labels", 0, 0), "labels"), "GPU 0");
	ASSERT_EQ(int_at(find_meta(t, "process_sort_index", 0, 0), "sort_index"), 5000000);
	ASSERT_STR_EQ(trace_str(find_meta(t, "thread_name", 0, 7), "name"), "stream 7 ");
	ASSERT_EQ(int_at(find_meta(t, "thread_sort_index", 0, 7), "sort_index"), 7);
	ASSERT_EQ(int_at(find_meta(t, "thread_sort_index", pid, tid), "sort_index"), tid);
	ASSERT_STR_EQ(trace_str(find_meta(t, "process_name", pid, 0), "name"),
		      program_invocation_short_name);
}

/* The header in TRACE_FORMAT.md's order, with these values. */
static void check_header(const struct trace *t, long rank, long world)
{
	char want[64];
	const char *p = t->raw;
	static const char *const keys[] = {"\"schemaVersion\"",
					   "\"deviceProperties\"",
					   "\"distributedInfo\"",
					   "\"cupti_version\"",
					   "\"cuda_runtime_version\"",
					   "\"cuda_driver_version\"",
					   "\"gprof\"",
					   "\"displayTimeUnit\"",
					   "\"baseTimeNanoseconds\"",
					   "\"traceEvents\"",
					   "\"traceName\""};

	/* Key order read from the text itself, independently of the checker. */
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		p = strstr(p, keys[i]);
		ASSERT_MSG(p, "%s missing or out of order", keys[i]);
	}
	snprintf(want, sizeof(want), "\"distributedInfo\": {\"rank\": %ld, \"world_size\": %ld}",
		 rank, world);
	ASSERT_STR_CONTAINS(t->raw, want); /* no "backend": this process has no NCCL loaded */
	ASSERT_EQ(int_at(t->root, "baseTimeNanoseconds"), (long long)BASE_NS);
	ASSERT_STR_EQ(trace_str(t->root, "displayTimeUnit"), "ms");
}

/* The metadata of a trace of rank 0 of 1, by the process proc describes, named trace_name. */
static struct gprof_trace_meta trace_meta(const struct gprof_export_process_info *proc,
					  const char *trace_name)
{
	return (struct gprof_trace_meta){
	    .proc = proc, .rank = {0, 1}, .base_ns = BASE_NS, .trace_name = trace_name};
}

/* A Kineto trace and the sink it writes: memory, or a gzip file (level 1). */
struct tt {
	struct gprof_sink *sink;
	struct gprof_format *tr;
};

/* Opens m's trace at open_ns into memory (fd < 0) or a gzip file on fd (taken). */
static void tt_open(struct tt *tt, const struct gprof_trace_meta *m, uint64_t open_ns, int fd)
{
	int err = -ENOMEM;

	tt->sink = fd < 0 ? gprof_sink_memory() : gprof_sink_gzip(fd, 1, &err);
	ASSERT_MSG(tt->sink, "%s", strerror(-err));
	tt->tr = gprof_format_kineto.open(m, open_ns, tt->sink, &err);
	ASSERT_MSG(tt->tr, "%s", strerror(-err));
}

static void tt_events(struct tt *tt, const struct gprof_export_event *ev, size_t n)
{
	tt->tr->ops->events(tt->tr, ev, n);
}

static int tt_tick(struct tt *tt, uint64_t now_ns)
{
	return tt->tr->ops->tick(tt->tr, now_ns);
}

static int tt_close(struct tt *tt, struct gprof_trace_meta *m)
{
	return tt->tr->ops->close(tt->tr, m);
}

/* The text of a memory trace. */
static const char *tt_text(const struct tt *tt, size_t *len)
{
	return gprof_sink_memory_text(tt->sink, len);
}

static void tt_free(struct tt *tt)
{
	tt->tr->ops->free(tt->tr);
	gprof_sink_free(tt->sink);
}

TEST(export_trace_every_kind)
{
	struct gprof_export_process_info proc = {.n_devices = 1,
						 .devices[0] = {.num_sms = 132,
								.warp_size = 32,
								.max_threads_per_mp = 2048,
								.regs_per_mp = 65536,
								.shared_mem_per_mp = 233472}};
	struct gprof_trace_meta m = trace_meta(&proc, "host_1.2.pt.trace.json.gz");
	struct gprof_export_event ev[16];
	size_t n = every_kind(1, 4242, ev), len;
	struct tt tr;
	struct trace t;

	tt_open(&tr, &m, BASE_NS + US(1000000), -1);
	tt_events(&tr, ev, n);
	ASSERT_EQ(tt_close(&tr, &m), 0);
	const char *text = tt_text(&tr, &len);

	ASSERT_EQ(trace_parse(text, len, &t, why, sizeof(why)), 0);
	ASSERT_TRACE_OK(&t);
	check_header(&t, 0, 1);
	check_every_kind(&t, getpid(), 4242);
	/* One event per line; the header is exactly its reserved size. */
	ASSERT(!strncmp(text + GPROF_TRACE_HEAD_BYTES - 17, "\"traceEvents\": [\n", 17));
	ASSERT_EQ(text_lines(text + GPROF_TRACE_HEAD_BYTES, "{"), json_array_size(t.events));
	ASSERT_EQ(int_at(json_object_get(json_object_get(t.root, "gprof"), "records"), "kernel"),
		  1);
	trace_free(&t);
	tt_free(&tr);
}

/*
 * --torch's operators wait for the window's end and take the inputs handed over then, by
 * Record function id; past GPROF_EXPORT_HELD_OPS the oldest are written at once with their
 * own sizes, so the last ones (those the hook's table keeps) carry the inputs.
 */
TEST(export_operators_take_their_inputs)
{
	struct gprof_export_process_info proc = {0};
	struct gprof_trace_meta m = {.proc = &proc,
				     .rank = {0, 1},
				     .base_ns = BASE_NS,
				     .torch_ops = true,
				     .trace_name = "host_1.2.pt.trace.json.gz"};
	/* libgprof saw n operators; the ring keeps the last HELD_OPS (kid 2 made room) */
	const uint64_t n = GPROF_EXPORT_HELD_OPS + 3;
	struct gprof_export_event ev = {.kind = GPROF_EXPORT_CPU_OP,
					.flags = GPROF_EXPORT_OP_KINETO,
					.window = 1,
					.tid = 7,
					.dur_ns = 1000};
	const char *bad, *text;
	char json[1024];
	size_t len, i;
	int ops = 0, flows = 0;
	struct tt tr;
	struct trace t;
	json_t *e;

	/* kid 2 made room: written by PyTorch's times; 1 and n + 1 ran outside the window */
	snprintf(json, sizeof(json),
		 "[[2,0,\"aten::early\",{\"Input type\":[\"int\"]},%llu,500,9,0],"
		 "[%llu,0,\"aten::mm\",{\"Input type\":[\"float\"]},1,1,1,0],"
		 "[%llu,1,\"bwd \\\"q\\\"\",{},1,1,1,%llu],"
		 "[1,0,\"aten::before\",{},%llu,10,9,0],"
		 "[%llu,0,\"aten::after\",{},%llu,10,9,0]]",
		 (unsigned long long)(BASE_NS + US(2)), (unsigned long long)(n - 1),
		 (unsigned long long)n, (unsigned long long)(n - 1),
		 (unsigned long long)(BASE_NS - 20), (unsigned long long)(n + 1),
		 (unsigned long long)(BASE_NS + US(n + 5)));
	m.op_args = gprof_op_args_parse(json, strlen(json), BASE_NS, &bad);
	ASSERT_MSG(m.op_args, "%s", bad);
	ASSERT(!gprof_op_args_parse("[[1,0,\"x\",{},1,1,1,0],[0,0,\"x\",{},1,1,1,0]]", 44, BASE_NS,
				    &bad));
	ASSERT_STR_EQ(bad, "not a JSON array of [id, user, name, {args}, ts, dur, tid, fwd] "
			   "operators");
	ASSERT(!gprof_op_args_parse("[[1,{}]]", 8, BASE_NS, &bad));
	tt_open(&tr, &m, BASE_NS, -1);
	for (uint64_t k = 1; k <= n; k++) {
		ev.ts_ns = BASE_NS + US(k);
		ev.u.op.rf_id = k;
		ev.u.op.external = (uint32_t)(k + 100);
		ev.flags = GPROF_EXPORT_OP_KINETO | (k == n ? GPROF_EXPORT_OP_USER : 0);
		tt_events(&tr, &ev, 1);
	}
	ASSERT_EQ(tt_close(&tr, &m), 0);
	text = tt_text(&tr, &len);
	ASSERT_EQ(trace_parse(text, len, &t, why, sizeof(why)), 0);
	json_array_foreach(t.events, i, e)
	{
		json_t *args = json_object_get(e, "args");
		const char *name = trace_str(e, "name");

		if (!strcmp(trace_str(e, "cat"), "fwdbwd")) {
			/* from the forward operator's start to the backward one's */
			ASSERT_EQ(int_at(e, "id"), (long long)(n + 100));
			ASSERT_EQ(json_number_value(json_object_get(e, "ts")),
				  !strcmp(trace_str(e, "ph"), "s") ? (double)(n - 1) : (double)n);
			flows++;
			continue;
		}
		if (strcmp(trace_str(e, "cat"), "cpu_op") &&
		    strcmp(trace_str(e, "cat"), "user_annotation"))
			continue;
		ops++;
		if (!strcmp(name, "aten::early")) {
			/* PyTorch's own time and thread; no External id libgprof gave */
			ASSERT_EQ(int_at(e, "tid"), 9);
			ASSERT(!json_object_get(args, "External id"));
			ASSERT_STR_EQ(trace_str(e, "cat"), "cpu_op");
		} else if (!strcmp(name, "aten::mm")) {
			ASSERT_EQ(int_at(args, "External id"), (long long)(n - 1 + 100));
			ASSERT_STR_EQ(json_string_value(
					  json_array_get(json_object_get(args, "Input type"), 0)),
				      "float");
			ASSERT_EQ(int_at(e, "tid"), 7);
		} else {
			ASSERT_STR_EQ(name, "bwd \"q\"");
			ASSERT_STR_EQ(trace_str(e, "cat"), "user_annotation");
			ASSERT_EQ(int_at(args, "External id"), (long long)(n + 100));
		}
	}
	/* the operators PyTorch's profiler did not hand over are not written */
	ASSERT_EQ(ops, 3);
	ASSERT_EQ(flows, 2);
	gprof_op_args_free(m.op_args);
	trace_free(&t);
	tt_free(&tr);
}

/*
 * Every kind of common/activity.h's GPROF_EXPORT_KIND_TABLE is written and counted under a
 * key of its own (issue #19); a kind past the table is skipped, not looked up.
 */
TEST(export_kind_tables)
{
	struct gprof_export_process_info proc = {.n_devices = 1};
	struct gprof_trace_meta m = trace_meta(&proc, "host_1.2.pt.trace.json.gz");
	struct gprof_export_event ev[GPROF_EXPORT_KINDS + 1];
	const json_t *records, *v;
	const char *key;
	size_t len;
	struct tt tr;
	struct trace t;

	for (unsigned k = 0; k <= GPROF_EXPORT_KINDS; k++)
		ev[k] = (struct gprof_export_event){
		    .kind = (uint16_t)k, .window = 1, .ts_ns = BASE_NS + US(k + 1), .tid = 4242};
	tt_open(&tr, &m, BASE_NS, -1);
	tt_events(&tr, ev, ARRAY_SIZE(ev));
	ASSERT_EQ(tt_close(&tr, &m), 0);
	const char *text = tt_text(&tr, &len);

	ASSERT_EQ(trace_parse(text, len, &t, why, sizeof(why)), 0);
	records = json_object_get(json_object_get(t.root, "gprof"), "records");
	ASSERT_EQ(json_object_size(records), GPROF_EXPORT_KINDS);
	json_object_foreach((json_t *)records, key, v)
	{
		ASSERT_MSG(*key, "an empty key");
		ASSERT_MSG(json_integer_value(v) == 1, "records.%s: %lld", key,
			   (long long)json_integer_value(v));
	}
	trace_free(&t);
	tt_free(&tr);
}

/* Every column of a row of GPROF_EXPORT_KIND_TABLE, as text. */
static const struct {
	char ph;
	const char *cat, *payload, *summary, *external;
} kind_rows[] = {
#define KIND_ROW(name, key, emitter, ph, cat, payload, summary, external) \
	[GPROF_EXPORT_##name] = {ph, cat, #payload, #summary, #external},
    GPROF_EXPORT_KIND_TABLE(KIND_ROW)
#undef KIND_ROW
};

static int by_ts(const void *a, const void *b)
{
	const struct gprof_export_event *x = a, *y = b;

	return x->ts_ns < y->ts_ns ? -1 : x->ts_ns > y->ts_ns;
}

/* One event of every kind, in time order, inside step 1 (each a name of its own). */
static void one_of_each(struct gprof_export_event ev[GPROF_EXPORT_KINDS])
{
	static const double at_us[GPROF_EXPORT_KINDS] = {
	    [GPROF_EXPORT_STEP] = 1,	   [GPROF_EXPORT_EARLIER] = 2,
	    [GPROF_EXPORT_NVTX_RANGE] = 3, [GPROF_EXPORT_NVTX_MARK] = 4,
	    [GPROF_EXPORT_CPU_OP] = 5,	   [GPROF_EXPORT_PYTHON] = 6,
	    [GPROF_EXPORT_RUNTIME] = 7,	   [GPROF_EXPORT_DRIVER] = 8,
	    [GPROF_EXPORT_KERNEL] = 10,	   [GPROF_EXPORT_MEMCPY] = 40,
	    [GPROF_EXPORT_MEMSET] = 50,	   [GPROF_EXPORT_MEMORY] = 60,
	    [GPROF_EXPORT_SYNC] = 70,	   [GPROF_EXPORT_OVERHEAD] = 80,
	};

	for (unsigned k = 0; k < GPROF_EXPORT_KINDS; k++) {
		char name[32];

		ASSERT_MSG(at_us[k], "kind %u has no event here: give it a time", k);
		snprintf(name, sizeof(name), "kind %u", k);
		ev[k] =
		    (struct gprof_export_event){.kind = (uint16_t)k,
						.window = 1,
						.ts_ns = BASE_NS + US(at_us[k]),
						.dur_ns = US(k == GPROF_EXPORT_STEP ? 100 : k + 1),
						.tid = 4242,
						.stream = 7,
						.correlation = k + 1,
						.name = gprof_export_intern(name)};
	}
	ev[GPROF_EXPORT_STEP].u.step = 1;
	ev[GPROF_EXPORT_KERNEL].u.kernel.external = 9;
	ev[GPROF_EXPORT_MEMCPY].u.copy =
	    (struct gprof_export_copy){.bytes = 4096, .copy_kind = GPROF_COPY_HTOD, .external = 9};
	ev[GPROF_EXPORT_MEMSET].u.copy.bytes = 64;
	ev[GPROF_EXPORT_MEMORY].u.memory.allocated = 1u << 20;
	ev[GPROF_EXPORT_CPU_OP].u.op.external = 9;
	ev[GPROF_EXPORT_PYTHON].u.py.id = 1;
	ev[GPROF_EXPORT_SYNC].u.sync = (typeof(ev->u.sync)){.wait_stream = -1, .wait_corr = -1};
	qsort(ev, GPROF_EXPORT_KINDS, sizeof(*ev), by_ts);
}

/* The trace's event of ev's kind, found by its time; it has the row's phase and category. */
static void check_row(const struct trace *t, const struct gprof_export_event *ev)
{
	double at_us = (double)(ev->ts_ns - BASE_NS) / 1e3;
	char ph[2] = {kind_rows[ev->kind].ph, 0};
	const json_t *events = json_object_get(t->root, "traceEvents"), *e;
	size_t i;

	json_array_foreach(events, i, e)
	{
		if (!strcmp(trace_str(e, "ph"), "M") ||
		    fabs(json_number_value(json_object_get(e, "ts")) - at_us) > 1e-3)
			continue;
		ASSERT_MSG(!strcmp(trace_str(e, "ph"), ph) &&
			       !strcmp(trace_str(e, "cat"), kind_rows[ev->kind].cat),
			   "kind %u: written as ph %s cat %s, its row says %s %s", ev->kind,
			   trace_str(e, "ph"), trace_str(e, "cat"), ph, kind_rows[ev->kind].cat);
		return;
	}
	FAIL("kind %u is not in the trace", ev->kind);
}

/*
 * A kind lacks no row anywhere (issue #30): every kind is written with the phase and category
 * of its row; GPU work has the payload the summaries read, and takes an External id; and
 * gprof-summary, reading the trace back, prints what the library's summary of the same events
 * says, so every kind the summary counts is read back (scripts/summary/load.c).
 */
TEST(export_kind_rows)
{
	struct gprof_export_process_info proc = {.n_devices = 1};
	struct gprof_trace_meta m = {.proc = &proc,
				     .rank = {0, 1},
				     .base_ns = BASE_NS,
				     .first_step = 1,
				     .last_step = 1,
				     .has_last_step = true,
				     .trace_name = "host_1.2.pt.trace.json.gz"};
	const char *path = proc_tmp_file();
	const char *argv[] = {proc_build_path("gprof-summary"), path, NULL};
	const char *env[] = {"LD_PRELOAD", NULL};
	struct gprof_export_event ev[GPROF_EXPORT_KINDS];
	struct gprof_export_summary *s = gprof_summary_new();
	struct gprof_export_result r = {
	    .path = path, .first_step = 1, .last_step = 1, .summary = s};
	struct proc_result res;
	struct tt tr;
	struct trace t;
	size_t len;
	char *lib;
	int fd;

	for (unsigned k = 0; k < GPROF_EXPORT_KINDS; k++) {
		enum gprof_summary_class c = gprof_export_summary_class(k);

		if (c == GPROF_SUM_KERNEL)
			ASSERT_STR_EQ(kind_rows[k].payload, "kernel");
		if (c == GPROF_SUM_MEMCPY || c == GPROF_SUM_MEMSET)
			ASSERT_STR_EQ(kind_rows[k].payload, "copy");
		if (c <= GPROF_SUM_MEMSET)
			ASSERT_STR_EQ(kind_rows[k].external, "WORK");
	}
	one_of_each(ev);
	tt_open(&tr, &m, BASE_NS, -1);
	tt_events(&tr, ev, ARRAY_SIZE(ev));
	ASSERT_EQ(tt_close(&tr, &m), 0);
	const char *text = tt_text(&tr, &len);
	ASSERT_EQ(trace_parse(text, len, &t, why, sizeof(why)), 0);
	for (unsigned k = 0; k < GPROF_EXPORT_KINDS; k++)
		check_row(&t, &ev[k]);
	ASSERT((fd = open(path, O_WRONLY | O_TRUNC)) >= 0);
	ASSERT_EQ(write(fd, text, len), (ssize_t)len);
	ASSERT_EQ(close(fd), 0);
	trace_free(&t);
	tt_free(&tr);

	ASSERT(s);
	gprof_summary_events(s, ev, ARRAY_SIZE(ev));
	lib = gprof_export_summary_text(&r);
	ASSERT(lib && !strncmp(lib, "gprof: trace written: ", 22));
	ASSERT_STR_CONTAINS(lib, "kernels by GPU time");
	ASSERT_STR_CONTAINS(lib, "NVTX ranges");
	ASSERT_STR_CONTAINS(lib, "CUDA calls");
	ASSERT_EQ(proc_run(argv, env, 120, &res), 0);
	ASSERT_MSG(res.status == 0, "status %d: %s", res.status, res.err);
	ASSERT(!strncmp(res.out, "gprof: trace read: ", 19));
	ASSERT_STR_EQ(strchr(res.out, '\n'), strchr(lib, '\n'));
	proc_result_free(&res);
	gprof_free(lib);
	gprof_summary_free(s);
}

/* Skips a number written as digits and an optional fraction: where it ends, or NULL. */
static const char *skip_number(const char *p)
{
	const char *start = p;

	p += strspn(p, "0123456789");
	if (*p == '.')
		p += 1 + strspn(p + 1, "0123456789");
	return p > start ? p : NULL;
}

/*
 * What changes from one event to the next ends each line (trace.c): an event line ends with
 * "ts" (and "dur" for X events), and where an event has a correlation, it closes the args.
 */
TEST(export_lines_end_with_what_varies)
{
	struct gprof_export_process_info proc = {.cupti_status = "not used"};
	struct gprof_trace_meta m = trace_meta(&proc, "h_1.2.pt.trace.json.gz");
	struct gprof_export_event ev[16];
	size_t n = every_kind(1, 4242, ev), len, lines = 0;
	char *text, *line, *save = NULL;
	struct tt tr;

	tt_open(&tr, &m, BASE_NS, -1);
	tt_events(&tr, ev, n);
	ASSERT_EQ(tt_close(&tr, &m), 0);
	text = strdup(tt_text(&tr, &len) + GPROF_TRACE_HEAD_BYTES);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *ts = strstr(line, ",\"ts\":"), *end, *corr;

		if (line[0] != '{' || strstr(line, "\"ph\":\"M\""))
			continue;
		lines++;
		ASSERT_MSG(ts && !strstr(ts + 1, ",\"ts\":"), "no ts or two: %s", line);
		end = skip_number(ts + 6);
		if (end && !strncmp(end, ",\"dur\":", 7))
			end = skip_number(end + 7);
		ASSERT_MSG(end && !strcmp(end, "},"), "not last: %s", line);
		ASSERT_EQ(!strncmp(line, "{\"ph\":\"X\"", 9), !!strstr(ts, ",\"dur\":"));
		corr = strstr(line, "\"correlation\":");
		ASSERT_MSG(!corr ||
			       ((end = skip_number(corr + 14)) && end[0] == '}' && end == ts - 1),
			   "correlation does not close the args: %s", line);
	}
	/* every_kind's events and their four flow halves. */
	ASSERT_EQ(lines, n + 4);
	free(text);
	tt_free(&tr);
}

/* Every track gets its metadata, however many (the track sets grow past their first size). */
TEST(export_trace_many_tracks)
{
	struct gprof_export_process_info proc = {.cupti_status = "not used"};
	struct gprof_trace_meta m = trace_meta(&proc, "h_1.2.pt.trace.json.gz");
	int threads = 0, streams = 0, gpus = 0;
	size_t len, i;
	struct trace t;
	struct tt tr;
	json_t *ev;

	tt_open(&tr, &m, BASE_NS, -1);
	for (uint32_t k = 0; k < 100; k++) {
		struct gprof_export_event e[2] = {
		    {.kind = GPROF_EXPORT_NVTX_MARK,
		     .tid = 1000 + k % 40,
		     .ts_ns = BASE_NS + k,
		     .name = gprof_export_intern("m")},
		    {.kind = GPROF_EXPORT_MEMSET,
		     .device = k % 3,
		     .stream = k % 37,
		     .ts_ns = BASE_NS + k * 1000,
		     .dur_ns = 10},
		};

		tt_events(&tr, e, 2);
	}
	ASSERT_EQ(tt_close(&tr, &m), 0);
	const char *text = tt_text(&tr, &len);

	ASSERT_EQ(trace_parse(text, len, &t, why, sizeof(why)), 0);
	ASSERT_TRACE_OK(&t);
	json_array_foreach(t.events, i, ev)
	{
		const char *name = trace_str(ev, "name");
		const char *label = trace_str(json_object_get(ev, "args"), "name");

		threads += !strcmp(name, "thread_name") && !strncmp(label, "thread ", 7);
		streams += !strcmp(name, "thread_name") && !strncmp(label, "stream ", 7);
		gpus += !strcmp(name, "process_labels") &&
			!strncmp(trace_str(json_object_get(ev, "args"), "labels"), "GPU ", 4);
	}
	/* 40 thread ids; (k % 3, k % 37) for k < 100 takes 100 distinct pairs; 3 devices. */
	ASSERT_EQ(threads, 40);
	ASSERT_EQ(streams, 100);
	ASSERT_EQ(gpus, 3);
	trace_free(&t);
	tt_free(&tr);
}

/* The one trace file in dir (no .partial left, nothing else); its name into name. */
static void the_trace(const char *dir, char *path, size_t size)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	ASSERT_MSG(d, "no folder %s", dir);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		ASSERT_MSG(!strstr(de->d_name, ".partial"), "left behind: %s", de->d_name);
		snprintf(path, size, "%s/%s", dir, de->d_name);
		n++;
	}
	closedir(d);
	ASSERT_EQ(n, 1);
}

/* `<host>_<pid>.<unix_ns>.pt.trace.json.gz`, ns within the last minute. */
static void check_name(const char *path, const char *suffix)
{
	char host[256], want[300];
	const char *name = strrchr(path, '/') + 1, *ns;
	unsigned long long when;
	struct timespec now;

	gethostname(host, sizeof(host));
	snprintf(want, sizeof(want), "%s_%d.", host, (int)getpid());
	ASSERT_MSG(!strncmp(name, want, strlen(want)), "%s vs %s...", name, want);
	ns = name + strlen(want);
	ASSERT(strspn(ns, "0123456789") == 19);
	ASSERT_STR_EQ(ns + 19, suffix);
	when = strtoull(ns, NULL, 10);
	clock_gettime(CLOCK_REALTIME, &now);
	ASSERT(when <=
	       (unsigned long long)now.tv_sec * 1000000000ull + (unsigned long long)now.tv_nsec);
	ASSERT(when + 60000000000ull > (unsigned long long)now.tv_sec * 1000000000ull);
}

/* Waits (polling) for a file whose name ends with suffix in dir. */
static void wait_for_file(const char *dir, const char *suffix, char *path, size_t size)
{
	for (int i = 0; i < 2000; i++) {
		DIR *d = opendir(dir);
		struct dirent *de;

		while (d && (de = readdir(d))) {
			size_t n = strlen(de->d_name);

			if (n > strlen(suffix) &&
			    !strcmp(de->d_name + n - strlen(suffix), suffix)) {
				snprintf(path, size, "%s/%s", dir, de->d_name);
				closedir(d);
				return;
			}
		}
		if (d)
			closedir(d);
		usleep(5000);
	}
	FAIL("no *%s in %s", suffix, dir);
}

static const json_t *gprof_meta(const struct trace *t, const char *key)
{
	return json_object_get(json_object_get(t->root, "gprof"), key);
}

static void clear_rank_env(void)
{
	static const char *const vars[] = {"RANK",
					   "WORLD_SIZE",
					   "OMPI_COMM_WORLD_RANK",
					   "OMPI_COMM_WORLD_SIZE",
					   "SLURM_PROCID",
					   "SLURM_NTASKS",
					   "PMI_RANK",
					   "PMI_SIZE"};

	for (size_t i = 0; i < ARRAY_SIZE(vars); i++)
		unsetenv(vars[i]);
}

/* Every kind through the writer thread into a file; the file, its name, every field. */
TEST(export_writer_roundtrip)
{
	char dir[64], tmpl[128], out[128], path[512], partial[512], thread[64];
	struct gprof_export_event ev[16];
	const json_t *dev, *records;
	struct trace t;
	uint32_t w;
	size_t n;

	clear_rank_env();
	make_tmpdir(dir, sizeof(dir));
	snprintf(tmpl, sizeof(tmpl), "%s/a/b/%%p", dir);
	snprintf(out, sizeof(out), "%s/a/b/%d", dir, (int)getpid());
	start_export(tmpl, 8u << 20);
	set_h100();
	pthread_setname_np(pthread_self(), "roundtrip-main");
	w = open_window(3, 12);
	/* The file exists as .partial while the window is open. */
	wait_for_file(out, ".pt.trace.json.gz.partial", partial, sizeof(partial));
	check_name(partial, ".pt.trace.json.gz.partial");
	n = every_kind(w, my_tid(), ev);
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(gprof_export_push(&ev[i]), 0);
	gprof_export_window_set_last_step(w, 14);
	gprof_export_window_add_cupti_dropped(w, 5);
	close_window(w);
	ASSERT_EQ(last_result.error, 0);
	the_trace(out, path, sizeof(path));
	check_name(path, ".pt.trace.json.gz");
	ASSERT_EQ(strlen(path) + strlen(".partial"), strlen(partial));
	ASSERT(!strncmp(path, partial, strlen(path)));
	ASSERT_STR_EQ(last_result.path, path);
	ASSERT_EQ(trace_load(path, &t, why, sizeof(why)), 0);
	ASSERT_TRACE_OK(&t);
	check_header(&t, 0, 1);
	check_every_kind(&t, getpid(), my_tid());
	snprintf(thread, sizeof(thread), "thread %u (roundtrip-main)", my_tid());
	ASSERT_STR_EQ(trace_str(find_meta(&t, "thread_name", getpid(), my_tid()), "name"), thread);
	ASSERT_STR_EQ(trace_str(t.root, "traceName"), strrchr(path, '/') + 1);
	ASSERT_EQ(int_at(t.root, "cupti_version"), 24);
	ASSERT_EQ(int_at(t.root, "cuda_runtime_version"), 13000);
	dev = json_array_get(json_object_get(t.root, "deviceProperties"), 0);
	ASSERT_STR_EQ(trace_str(dev, "name"), "NVIDIA H100 80GB HBM3");
	ASSERT(int_at(dev, "numSms") == 132 && int_at(dev, "totalGlobalMem") == 85029158912ll);
	ASSERT(int_at(dev, "sharedMemPerMultiprocessor") == 233472 && int_at(dev, "id") == 0);
	ASSERT_STR_EQ(json_string_value(gprof_meta(&t, "version")), GPROF_VERSION);
	ASSERT_STR_EQ(json_string_value(gprof_meta(&t, "schedule")),
		      "wait=1,warmup=1,active=3,repeat=1");
	ASSERT_EQ(json_integer_value(gprof_meta(&t, "window")), 3);
	ASSERT_EQ(json_integer_value(gprof_meta(&t, "first_step")), 12);
	ASSERT_EQ(json_integer_value(gprof_meta(&t, "last_step")), 14);
	records = gprof_meta(&t, "records");
	ASSERT_EQ(json_object_size(records), GPROF_EXPORT_KINDS);
	for (const char *k = "step\0nvtx_range\0nvtx_mark\0runtime\0driver\0kernel\0memcpy\0memset"
			     "\0memory\0";
	     *k; k += strlen(k) + 1)
		ASSERT_MSG(int_at(records, k) == 1, "records.%s", k);
	ASSERT_EQ(int_at(gprof_meta(&t, "dropped"), "cupti"), 5);
	ASSERT_EQ(int_at(gprof_meta(&t, "dropped"), "buffer_full"), 0);
	ASSERT_STR_EQ(trace_str(gprof_meta(&t, "cupti"), "library"),
		      "/opt/cuda/lib64/libcupti.so.13");
	ASSERT_EQ(last_result.events[GPROF_EXPORT_KERNEL], 1);
	ASSERT(last_result.number == 3 && last_result.first_step == 12 &&
	       last_result.last_step == 14);
	trace_free(&t);
	ASSERT_EQ(gprof_export_shutdown(5000), 0);
	rm_rf(dir);
}

TEST(export_rank_and_names)
{
	static const struct {
		const char *env[4];
		long rank, world;
	} cases[] = {
	    {{NULL}, 0, 1},
	    {{"RANK=3", "WORLD_SIZE=8"}, 3, 8},
	    {{"OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_SIZE=6"}, 5, 6},
	    {{"SLURM_PROCID=2", "SLURM_NTASKS=4"}, 2, 4},
	    {{"PMI_RANK=7", "PMI_SIZE=16"}, 7, 16},
	    {{"PMI_RANK=1", "RANK=2", "WORLD_SIZE=4"}, 2, 4},	     /* torchrun's first */
	    {{"RANK=x1", "SLURM_PROCID=3", "SLURM_NTASKS=5"}, 3, 5}, /* junk is ignored */
	    {{"RANK=3"}, 3, 4},					     /* no size: rank + 1 */
	    {{"WORLD_SIZE=4"}, 0, 4},
	};
	char *const env[] = {"FOO=bar", "RANK=5", NULL};
	char host[256], want[512], got[512];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct gprof_rank r;

		gprof_output_rank((char *const *)cases[i].env, &r);
		ASSERT_MSG(r.rank == cases[i].rank && r.world_size == cases[i].world,
			   "case %zu: %ld/%ld", i, r.rank, r.world_size);
	}
	gethostname(host, sizeof(host));
	ASSERT_EQ(
	    gprof_output_expand("o/%h/%p/%r/%q{FOO}/%q{NOPE}/%%/%x/%q{", env, got, sizeof(got)), 0);
	snprintf(want, sizeof(want), "o/%s/%d/5/bar//%%/%%x/%%q{", host, (int)getpid());
	ASSERT_STR_EQ(got, want);
	ASSERT_EQ(gprof_output_expand("0123456789", env, got, 8), -ENAMETOOLONG);
	ASSERT_EQ(gprof_output_expand("%q{FOO}%q{FOO}%q{FOO}", env, got, 9), -ENAMETOOLONG);
	ASSERT_STR_EQ(got, "barbarba"); /* what fits, to name it */
	/* The first %q{VAR} whose VAR is unset; %%q{...} is no sequence, %q{ without } neither. */
	ASSERT(gprof_output_unset("o/%q{FOO}/%%q{NOPE}/%q{NOT_SET}/%q{NOPE}", env, got, 64));
	ASSERT_STR_EQ(got, "NOT_SET");
	ASSERT(!gprof_output_unset("o/%q{FOO}/%%q{NOPE}/%q{NOPE/%", env, got, 64));
	ASSERT(!gprof_output_unset("%", env, got, 64));
	/* The default format: Kineto's JSON, gzipped. */
	ASSERT(gprof_formats[0].ops == &gprof_format_kineto);
	ASSERT_EQ(gprof_formats[0].sink, GPROF_SINK_GZIP);
	ASSERT_EQ(
	    gprof_output_name(1751410836123456789ull, gprof_formats[0].suffix, got, sizeof(got)),
	    0);
	snprintf(want, sizeof(want), "%s_%d.1751410836123456789.pt.trace.json.gz", host,
		 (int)getpid());
	ASSERT_STR_EQ(got, want);
}

/* The rank from the environment reaches the folder (%r) and the header, spaced for HTA. */
TEST(export_rank_in_header)
{
	char dir[64], tmpl[128], out[128], path[512];
	struct trace t;
	uint32_t w;

	clear_rank_env();
	setenv("SLURM_PROCID", "3", 1);
	setenv("SLURM_NTASKS", "8", 1);
	make_tmpdir(dir, sizeof(dir));
	snprintf(tmpl, sizeof(tmpl), "%s/rank%%r", dir);
	snprintf(out, sizeof(out), "%s/rank3", dir);
	start_export(tmpl, 1u << 20);
	w = open_window(0, 0);
	close_window(w);
	the_trace(out, path, sizeof(path));
	ASSERT_EQ(trace_load(path, &t, why, sizeof(why)), 0);
	ASSERT_TRACE_OK(&t);
	check_header(&t, 3, 8);
	trace_free(&t);
	rm_rf(dir);
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;

	ASSERT(f);
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	rewind(f);
	buf = malloc(*len + 1);
	ASSERT(buf && fread(buf, 1, *len, f) == *len);
	fclose(f);
	return buf;
}

static size_t lines(char *buf, const char *fmt, int from, int to)
{
	size_t n = 0;

	for (int i = from; i < to; i++)
		n += (size_t)sprintf(buf + n, fmt, i);
	return n;
}

/*
 * The gzip framing: the file at a sync flush inflates to exactly the head and the body up
 * to it; finished, it is one valid member (CRC and size checked by zlib) with the new head.
 */
TEST(export_cut_after_sync_flush)
{
	char dir[64], path[128], head[1000], head2[1000];
	size_t a_len, b_len, cut_len, full_len, len;
	char *a = malloc(1 << 20), *b = malloc(4 << 20), *cut, *full, *text;
	struct gprof_sink *s;
	int fd, err;

	make_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/t.gz", dir);
	memset(head, ' ', sizeof(head));
	memcpy(head, "{\"first\": 1,", 12);
	memset(head2, ' ', sizeof(head2));
	memcpy(head2, "{\"final\": 2,", 12);
	a_len = lines(a, "{\"event\": %d, \"before\": \"the flush\"},\n", 0, 20000);
	b_len = lines(b, "{\"event\": %d, \"after\": \"the flush\"},\n", 20000, 80000);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0644);
	ASSERT(fd >= 0);
	s = gprof_sink_gzip(fd, 1, &err);
	ASSERT(s);
	ASSERT_EQ(gprof_sink_head(s, head, sizeof(head)), 0);
	ASSERT_EQ(gprof_sink_write(s, a, a_len), 0);
	ASSERT_EQ(gprof_sink_sync(s), 0);
	/* A crash here: the file as it is now. */
	cut = read_file(path, &cut_len);
	ASSERT_EQ(gprof_sink_write(s, b, b_len), 0); /* > 1 MiB: syncs on its own too */
	ASSERT_EQ(gprof_sink_finish(s, head2, sizeof(head2)), 0);
	gprof_sink_free(s);

	ASSERT_EQ(trace_gunzip(cut, cut_len, true, &text, &len, why, sizeof(why)), 0);
	ASSERT_EQ(len, sizeof(head) + a_len);
	ASSERT(!memcmp(text, head, sizeof(head)) && !memcmp(text + sizeof(head), a, a_len));
	free(text);
	ASSERT(trace_gunzip(cut, cut_len, false, &text, &len, why, sizeof(why)) != 0);
	free(text);

	full = read_file(path, &full_len);
	ASSERT_EQ(trace_gunzip(full, full_len, false, &text, &len, why, sizeof(why)), 0);
	ASSERT_EQ(len, sizeof(head2) + a_len + b_len);
	ASSERT(!memcmp(text, head2, sizeof(head2)));
	ASSERT(!memcmp(text + sizeof(head2), a, a_len));
	ASSERT(!memcmp(text + sizeof(head2) + a_len, b, b_len));
	free(text);
	/* Cut anywhere later: still the head, all of a, and a prefix of b. */
	for (size_t at = cut_len; at < full_len; at += (full_len - cut_len) / 7 + 1) {
		ASSERT_EQ(trace_gunzip(full, at, true, &text, &len, why, sizeof(why)), 0);
		ASSERT(len >= sizeof(head2) + a_len && len <= sizeof(head2) + a_len + b_len);
		ASSERT(!memcmp(text + sizeof(head2) + a_len, b, len - sizeof(head2) - a_len));
		free(text);
	}
	free(a), free(b), free(cut), free(full);
	rm_rf(dir);
}

/*
 * A format of the tests' own: a head "lines N\n" (N: 5 digits, the events written, 0 at
 * open), then one line "<kind> <tid>" per event. Whether the writer calls it is all it shows.
 */
struct lines_format {
	struct gprof_format base;
	struct gprof_sink *sink;
	uint64_t counts[GPROF_EXPORT_KINDS];
	size_t n;
};

static unsigned lines_closed; /* close() calls, on the writer thread */

static int lines_head(struct lines_format *l, bool final)
{
	char head[16];

	snprintf(head, sizeof(head), "lines %05zu\n", l->n);
	return final ? gprof_sink_finish(l->sink, head, 12) : gprof_sink_head(l->sink, head, 12);
}

static void lines_free(struct gprof_format *f)
{
	free(f);
}

static struct gprof_format *lines_open(const struct gprof_trace_meta *m, uint64_t open_ns,
				       struct gprof_sink *s, int *err);

static void lines_events(struct gprof_format *f, const struct gprof_export_event *ev, size_t n)
{
	struct lines_format *l = (struct lines_format *)f;
	char line[32];

	for (size_t i = 0; i < n; i++, l->n++) {
		l->counts[ev[i].kind]++;
		gprof_sink_write(
		    l->sink, line,
		    (size_t)snprintf(line, sizeof(line), "%u %u\n", ev[i].kind, ev[i].tid));
	}
}

static int lines_tick(struct gprof_format *f, uint64_t now_ns)
{
	(void)now_ns;
	return gprof_sink_sync(((struct lines_format *)f)->sink);
}

static void lines_set_proc(struct gprof_format *f, const struct gprof_export_process_info *p)
{
	(void)f, (void)p;
}

static int lines_close(struct gprof_format *f, struct gprof_trace_meta *m)
{
	(void)m;
	lines_closed++;
	return lines_head((struct lines_format *)f, true);
}

static const uint64_t *lines_counts(const struct gprof_format *f)
{
	return ((const struct lines_format *)f)->counts;
}

static const struct gprof_format_ops lines_ops = {
    .name = "lines",
    GPROF_FORMAT_OPS(lines),
};

static struct gprof_format *lines_open(const struct gprof_trace_meta *m, uint64_t open_ns,
				       struct gprof_sink *s, int *err)
{
	struct lines_format *l = calloc(1, sizeof(*l));

	(void)m, (void)open_ns;
	*err = l ? 0 : -ENOMEM;
	if (!l)
		return NULL;
	*l = (struct lines_format){.base.ops = &lines_ops, .sink = s};
	*err = lines_head(l, false);
	if (*err) {
		free(l);
		return NULL;
	}
	return &l->base;
}

/* Its row: plain text (the default is gzip) in files named *.lines. */
static const struct gprof_format_row lines_row = {
    .ops = &lines_ops,
    .sink = GPROF_SINK_PLAIN,
    .suffix = ".lines",
};

/*
 * The writer takes its format from the config: a window goes through the tests' own, into a
 * file of its sink and with its suffix.
 */
TEST(export_format_plugged_in)
{
	char dir[64], path[512], want[64], got[512], *text;
	struct gprof_export_event ev[16];
	uint64_t counts[GPROF_EXPORT_KINDS] = {0};
	size_t n, len, at;
	uint32_t w;

	make_tmpdir(dir, sizeof(dir));
	export_format = &lines_row;
	start_export(dir, 8u << 20);
	w = open_window(1, 0);
	n = every_kind(w, my_tid(), ev);
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(gprof_export_push(&ev[i]), 0);
	close_window(w);
	ASSERT_EQ(last_result.error, 0);
	ASSERT_EQ(lines_closed, 1);
	for (size_t i = 0; i < n; i++)
		counts[ev[i].kind]++;
	ASSERT(!memcmp(last_result.events, counts, sizeof(counts)));
	the_trace(dir, path, sizeof(path));
	check_name(path, ".lines");
	text = read_file(path, &len); /* plain: the text itself */
	ASSERT(len < sizeof(got));
	memcpy(got, text, len);
	got[len] = '\0';
	/* The final head, then a line per event, in the order the writer drained them. */
	at = (size_t)snprintf(want, sizeof(want), "lines %05zu\n", n);
	ASSERT_MSG(!strncmp(got, want, at), "%s", got);
	for (size_t i = 0; i < n; i++) {
		size_t k = (size_t)snprintf(want, sizeof(want), "\n%u %u\n", ev[i].kind, ev[i].tid);

		ASSERT_MSG(strstr(got, want), "no '%.*s' in %s", (int)k - 2, want + 1, got);
		at += k - 1;
	}
	ASSERT_EQ(len, at);
	free(text);
	ASSERT_EQ(gprof_export_shutdown(5000), 0);
	rm_rf(dir);
}

/* Kernel i with its launch and their flow, as in B2 (bench/export-bench.c). */
static void launch_pair(uint32_t i, struct gprof_export_event ev[2])
{
	uint64_t at = BASE_NS + US(1000) + i * 2000ull;

	ev[0] = (struct gprof_export_event){
	    .kind = GPROF_EXPORT_RUNTIME,
	    .ts_ns = at,
	    .dur_ns = 1500 + i % 400,
	    .tid = 4242,
	    .correlation = i + 1,
	    .flags = GPROF_EXPORT_FLOW | GPROF_EXPORT_ARG_RESULT,
	    .name = gprof_export_intern("cudaLaunchKernel"),
	    .u.api.cbid = 211,
	};
	ev[1] = (struct gprof_export_event){
	    .kind = GPROF_EXPORT_KERNEL,
	    .ts_ns = at + 5000,
	    .dur_ns = 900 + (i * 37) % 1000,
	    .stream = 7 + (i % 2) * 6,
	    .correlation = i + 1,
	    .flags = GPROF_EXPORT_FLOW,
	    .name =
		gprof_export_intern(i % 3 ? "void gemm<float, 128>(float*, int)" : "relu(float*)"),
	    .u.kernel = {.grid = {64u << (i % 4), 1, 1}, .block = {128, 1, 1}, .context = 1},
	};
}

/*
 * One window of `pairs` launches into tr, with a writer pass (tick) every 500 pairs, 150 ms of
 * trace time apart, so that sync flushes fall between slices too. The text of a memory trace.
 */
static const char *write_pairs(struct tt *tr, struct gprof_trace_meta *m, uint32_t pairs,
			       size_t *len)
{
	struct gprof_export_event ev[2];

	for (uint32_t i = 0; i < pairs; i++) {
		launch_pair(i, ev);
		tt_events(tr, ev, 2);
		if (i % 500 == 499)
			ASSERT_EQ(tt_tick(tr, BASE_NS + i / 500 * US(150000)), 0);
	}
	ASSERT_EQ(tt_close(tr, m), 0);
	return len ? tt_text(tr, len) : NULL;
}

/* What argv printed on stdout; it must exit 0. Skips the test where argv[1] is missing. */
static char *run_tool(const char *const argv[], size_t *len)
{
	struct proc_result res;

	ASSERT_EQ(proc_run(argv, NULL, 120, &res), 0);
	if (res.status == 127)
		SKIP("no %s", argv[1]);
	ASSERT_MSG(res.status == 0, "%s %s: %s", argv[1], argv[2], res.err);
	*len = res.out_len;
	free(res.err);
	return res.out;
}

/*
 * Compressor threads: a window cut into slices of 1 byte to 16 MiB, deflated by up to three
 * threads and the writer, is one gzip member whose text is byte for byte the single-thread
 * writer's; gzip -t, Python's gzip and the trace checker read it. Slices joined out of order,
 * a wrong CRC or a slice lost would each fail here.
 */
TEST(export_slices_match_single_thread)
{
	static const struct {
		size_t slice_bytes;
		unsigned threads;
		uint32_t pairs;
	} cases[] = {
	    {1, 2, 60},	      {7, 1, 400},	    {4093, 3, 4000},
	    {65536, 2, 4000}, {1u << 20, 1, 30000}, {16u << 20, 3, 30000},
	};
	struct gprof_export_process_info proc = {.cupti_status = "not used"};
	struct gprof_trace_meta m = trace_meta(&proc, "h_1.2.pt.trace.json.gz");
	char dir[64], path[128];

	make_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/t.gz", dir);
	for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
		const char *gzip_t[] = {"/usr/bin/env", "gzip", "-t", path, NULL};
		const char *py[] = {"/usr/bin/env",
				    "python3",
				    "-c",
				    "import gzip, sys; "
				    "sys.stdout.buffer.write(gzip.open(sys.argv[1]).read())",
				    path,
				    NULL};
		size_t one_len, gz_len, len;
		struct tt one, tr;
		const char *want;
		char *gz, *text;
		struct trace t;
		int fd;

		m.proc = &proc;
		tt_open(&one, &m, BASE_NS, -1);
		want = write_pairs(&one, &m, cases[c].pairs, &one_len);
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
		ASSERT(fd >= 0);
		m.proc = &proc; /* close pointed it at the trace's copy */
		tt_open(&tr, &m, BASE_NS, fd);
		gprof_sink_threads(tr.sink, cases[c].threads, cases[c].slice_bytes, NULL);
		write_pairs(&tr, &m, cases[c].pairs, NULL);
		tt_free(&tr);

		gz = read_file(path, &gz_len);
		ASSERT_MSG(trace_gunzip(gz, gz_len, false, &text, &len, why, sizeof(why)) == 0,
			   "slices of %zu: %s", cases[c].slice_bytes, why);
		ASSERT_MSG(len == one_len && !memcmp(text, want, len),
			   "slices of %zu: the text differs", cases[c].slice_bytes);
		ASSERT_EQ(trace_parse(text, len, &t, why, sizeof(why)), 0);
		ASSERT_TRACE_OK(&t);
		trace_free(&t);
		free(text), free(gz);
		free(run_tool(gzip_t, &len));
		text = run_tool(py, &len);
		ASSERT_MSG(len == one_len && !memcmp(text, want, len),
			   "slices of %zu: Python's gzip reads other text", cases[c].slice_bytes);
		free(text);
		tt_free(&one);
	}
	rm_rf(dir);
}

/* Compressor threads that cannot start: the writer deflates every slice, and says so once. */
TEST(export_slices_without_threads)
{
	struct gprof_export_process_info proc = {.cupti_status = "not used"};
	struct gprof_trace_meta m = trace_meta(&proc, "h_1.2.pt.trace.json.gz");
	char dir[64], path[128], *gz, *text;
	size_t one_len, gz_len, len;
	const char *want, *err_text;
	struct tt one, tr;
	int fd;

	make_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/t.gz", dir);
	tt_open(&one, &m, BASE_NS, -1);
	want = write_pairs(&one, &m, 4000, &one_len);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	ASSERT(fd >= 0);
	m.proc = &proc;
	tt_open(&tr, &m, BASE_NS, fd);
	gprof_sink_fail_threads(true);
	capture_stderr();
	gprof_sink_threads(tr.sink, 2, 65536, NULL);
	write_pairs(&tr, &m, 4000, NULL);
	tt_free(&tr);
	/* A second file tries again, and says nothing more. */
	m.proc = &proc;
	fd = open(path, O_RDWR | O_TRUNC);
	ASSERT(fd >= 0);
	tt_open(&tr, &m, BASE_NS, fd);
	gprof_sink_threads(tr.sink, 2, 65536, NULL);
	write_pairs(&tr, &m, 4000, NULL);
	tt_free(&tr);
	err_text = end_capture();
	ASSERT_MSG(text_lines(err_text, "gprof: ") == 1 && text_lines(err_text, "") == 1, "%s",
		   err_text);
	ASSERT_STR_CONTAINS(err_text, "compressor thread");
	gz = read_file(path, &gz_len);
	ASSERT_MSG(trace_gunzip(gz, gz_len, false, &text, &len, why, sizeof(why)) == 0, "%s", why);
	ASSERT(len == one_len && !memcmp(text, want, len));
	free(text), free(gz);
	tt_free(&one);
	rm_rf(dir);
}

/* Pushes n NVTX marks "m" into window w from thread 1, one a µs from the base on. */
static void push_marks(uint32_t w, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct gprof_export_event ev = {.kind = GPROF_EXPORT_NVTX_MARK,
						.window = w,
						.tid = 1,
						.ts_ns = BASE_NS + i * 1000ull,
						.name = gprof_export_intern("m")};

		ASSERT_EQ(gprof_export_push(&ev), 0);
	}
}

/* The writer's .partial, copied while the window is open, holds every event pushed so far. */
TEST(export_partial_file_readable)
{
	char dir[64], partial[512];
	size_t len, text_len;
	char *data, *text = NULL;
	uint32_t w;
	int found = 0;

	make_tmpdir(dir, sizeof(dir));
	start_export(dir, 4u << 20);
	w = open_window(0, 0);
	push_marks(w, 2000);
	wait_for_file(dir, ".partial", partial, sizeof(partial));
	/* The writer syncs within 100 ms of new data: poll the file as a crash would leave it. */
	for (int tries = 0; tries < 1000 && found < 2000; tries++, usleep(10000)) {
		free(text);
		data = read_file(partial, &len);
		text = NULL;
		/* The file may not even hold its header yet. */
		if (trace_gunzip(data, len, true, &text, &text_len, why, sizeof(why)) == 0 &&
		    text_len >= GPROF_TRACE_HEAD_BYTES)
			found = text_lines(text + GPROF_TRACE_HEAD_BYTES, "{\"ph\":\"i\"");
		free(data);
	}
	ASSERT_EQ(found, 2000);
	ASSERT_MSG(!strncmp(text, "{\n  \"schemaVersion\": 1,", 23), "%.40s", text);
	/* Each of those lines is a complete JSON object. */
	for (char *line = text + GPROF_TRACE_HEAD_BYTES, *end; *line; line = end + 1) {
		json_error_t err;
		json_t *j;

		end = strchr(line, '\n');
		ASSERT(end && end[-1] == ',');
		j = json_loadb(line, (size_t)(end - 1 - line), 0, &err);
		ASSERT_MSG(j, "%s", err.text);
		json_decref(j);
	}
	free(text);
	close_window(w);
	rm_rf(dir);
}

/*
 * Producers: thread `idx` pushes `count` RUNTIME events numbered by correlation; with
 * in_place it builds each in the slot gprof_export_reserve() gives and commits it, and with
 * `abandon` too, every 7th event first fills a reserved slot with junk and gives it up (the
 * hooks do so when no window takes the call): never read, the next reserve reuses it.
 */
struct producer_arg {
	uint32_t window, idx, count;
	bool in_place, abandon;
	uint32_t ok, dropped;
};

static int produce_one(const struct producer_arg *a, const struct gprof_export_event *ev,
		       uint32_t seq)
{
	struct gprof_export_event *slot;

	if (!a->in_place)
		return gprof_export_push(ev);
	if (a->abandon && seq % 7 == 0) {
		slot = gprof_export_reserve(a->window);
		ASSERT(slot);
		memset(slot, 0xff, sizeof(*slot));
		ASSERT(gprof_export_reserve(a->window) == slot);
	}
	slot = gprof_export_reserve(a->window);
	if (!slot)
		return -ENOBUFS;
	*slot = *ev;
	gprof_export_commit();
	return 0;
}

static void *produce(void *p)
{
	struct producer_arg *a = p;
	const struct gprof_export_str *name = gprof_export_intern("cudaLaunchKernel");

	for (uint32_t seq = 0; seq < a->count; seq++) {
		struct gprof_export_event ev = {
		    .kind = GPROF_EXPORT_RUNTIME,
		    .window = a->window,
		    .tid = 100000 + a->idx,
		    .ts_ns = BASE_NS + US(2000000) + seq * 1000ull,
		    .dur_ns = 500,
		    .correlation = seq,
		    .name = name,
		    .u.api.cbid = 211,
		};
		int rc = produce_one(a, &ev, seq);

		ASSERT(rc == 0 || rc == -ENOBUFS);
		a->ok += rc == 0;
		a->dropped += rc != 0;
	}
	return NULL;
}

static void run_producers(struct producer_arg *args, unsigned n)
{
	threads_run(produce, args, sizeof(*args), n);
}

/* Of the runtime events per producer tid, which correlations (sequence numbers) came out. */
static void count_sequences(const struct trace *t, unsigned threads, uint32_t per_thread,
			    uint8_t *seen)
{
	size_t i;
	json_t *ev;

	json_array_foreach(t->events, i, ev)
	{
		long long tid = json_integer_value(json_object_get(ev, "tid")) - 100000;
		long long seq =
		    json_integer_value(json_object_get(json_object_get(ev, "args"), "correlation"));

		if (strcmp(trace_str(ev, "cat"), "cuda_runtime"))
			continue;
		ASSERT_MSG(tid >= 0 && tid < threads && seq >= 0 && seq < per_thread,
			   "event %zu: tid %lld seq %lld", i, tid, seq);
		ASSERT_MSG(!seen[tid * per_thread + seq]++, "duplicate: tid %lld seq %lld", tid,
			   seq);
	}
}

static void load_only_trace(const char *dir, struct trace *t)
{
	char path[512];

	the_trace(dir, path, sizeof(path));
	ASSERT_EQ(trace_load(path, t, why, sizeof(why)), 0);
	ASSERT_TRACE_OK(t);
}

/* With `behind`, the writer reads nothing until every producer is done: it starts far behind. */
static void concurrent_producers(bool behind)
{
	enum {
		THREADS = 8,
		PER_THREAD = 10000
	};
	struct producer_arg args[THREADS];
	uint8_t *seen = calloc(THREADS, PER_THREAD);
	char dir[64];
	struct trace t;
	uint32_t w;

	make_tmpdir(dir, sizeof(dir));
	start_export(dir, 64u << 20);
	w = open_window(0, 0);
	gprof_export_pause(behind);
	/* half of them in place, giving up a reserved slot now and then */
	for (uint32_t i = 0; i < THREADS; i++)
		args[i] = (struct producer_arg){.window = w,
						.idx = i,
						.count = PER_THREAD,
						.in_place = i % 2,
						.abandon = i % 2};
	run_producers(args, THREADS);
	gprof_export_pause(false);
	close_window(w);
	load_only_trace(dir, &t);
	count_sequences(&t, THREADS, PER_THREAD, seen);
	for (size_t i = 0; i < (size_t)THREADS * PER_THREAD; i++)
		ASSERT_MSG(seen[i] == 1, "tid %zu seq %zu missing", i / PER_THREAD, i % PER_THREAD);
	ASSERT_EQ(int_at(gprof_meta(&t, "records"), "runtime"), THREADS * PER_THREAD);
	ASSERT_EQ(int_at(gprof_meta(&t, "dropped"), "buffer_full"), 0);
	trace_free(&t);
	free(seen);
	rm_rf(dir);
}

TEST(export_concurrent_producers)
{
	concurrent_producers(false);
}

/* The writer behind with compressor threads allowed: the same file, written in slices. */
TEST(export_concurrent_producers_threads)
{
	export_threads = 2;
	concurrent_producers(true);
}

/*
 * Call records (struct gprof_export_call) between whole events, one event to two records, so
 * that events begin on odd lines and some would cross a chunk's end: each record is written as
 * the RUNTIME event it stands for, the same as a whole event with its fields, none lost.
 */
enum {
	CALLS = 3000,
	CALL_TYPE = 3
};

static void call_record(uint32_t w, uint32_t seq, const struct gprof_export_str *kernel)
{
	uint32_t grid[3] = {seq + 1, seq % 7 + 1, 65535}, block[3] = {seq % 1024 + 1, 1, 64};
	uint64_t ts = BASE_NS + US(2000000) + seq * 1000ull, dur = seq % 997 + 1;
	struct gprof_export_call *r;

	ASSERT(gprof_export_call_fits(dur, (int32_t)(seq % 11), grid[1] | grid[2] | block[0]));
	if (seq % 3 == 0) {
		struct gprof_export_event ev = {
		    .kind = GPROF_EXPORT_RUNTIME,
		    .window = w,
		    .tid = 4242,
		    .ts_ns = ts,
		    .dur_ns = dur,
		    .name = gprof_export_call_types[CALL_TYPE].name,
		    .flags = gprof_export_call_types[CALL_TYPE].flags,
		    .u.api = {.api = gprof_export_call_types[CALL_TYPE].api,
			      .kernel = kernel,
			      .stream = 0x7f0000000000ull + seq,
			      .grid = {grid[0], grid[1], grid[2]},
			      .block = {block[0], block[1], block[2]},
			      .shared_bytes = seq * 8,
			      .cbid = gprof_export_call_types[CALL_TYPE].cbid,
			      .result = (int32_t)(seq % 11),
			      .external = seq + 1},
		};

		ASSERT_EQ(gprof_export_push(&ev), 0);
		return;
	}
	r = gprof_export_reserve_call(w);
	ASSERT(r);
	*r = (struct gprof_export_call){
	    .ts_ns = ts,
	    .dur_ns = (uint32_t)dur,
	    .window = w,
	    .tid = 4242,
	    .external = seq + 1,
	    .kernel = kernel,
	    .stream = 0x7f0000000000ull + seq,
	    .grid_x = grid[0],
	    .kind = GPROF_EXPORT_CALL,
	    .result = (int16_t)(seq % 11),
	    .grid_yz = {(uint16_t)grid[1], (uint16_t)grid[2]},
	    .block = {(uint16_t)block[0], (uint16_t)block[1], (uint16_t)block[2]},
	    .type = CALL_TYPE,
	    .shared_bytes = seq * 8,
	};
	gprof_export_commit_call();
}

TEST(export_call_records)
{
	const struct gprof_export_str *kernel = gprof_export_intern("void k<int>(int*)");
	uint8_t *seen = calloc(CALLS, 1);
	char dir[64], stream[32];
	struct trace t;
	size_t i;
	json_t *ev;
	uint32_t w;

	make_tmpdir(dir, sizeof(dir));
	start_export(dir, 16u << 20);
	gprof_export_call_types[CALL_TYPE] = (struct gprof_export_call_type){
	    .name = gprof_export_intern("cudaLaunchKernel"),
	    .api = gprof_export_intern("cudaLaunchKernel_ptsz"),
	    .flags = GPROF_EXPORT_ARG_LAUNCH | GPROF_EXPORT_ARG_STREAM | GPROF_EXPORT_ARG_RESULT,
	    .cbid = 211,
	};
	w = open_window(0, 0);
	for (uint32_t seq = 0; seq < CALLS; seq++)
		call_record(w, seq, kernel);
	close_window(w);
	load_only_trace(dir, &t);
	json_array_foreach(t.events, i, ev)
	{
		json_t *a = json_object_get(ev, "args");
		long long seq =
		    json_integer_value(json_array_get(json_object_get(a, "grid"), 0)) - 1;

		if (strcmp(trace_str(ev, "cat"), "cuda_runtime"))
			continue;
		ASSERT_MSG(seq >= 0 && seq < CALLS && !seen[seq]++, "event %zu: grid.x - 1 %lld", i,
			   seq);
		ASSERT_STR_EQ(trace_str(ev, "name"), "cudaLaunchKernel");
		ASSERT_EQ(int_at(ev, "tid"), 4242);
		ASSERT(num_at(ev, "ts") == 2000000.0 + (double)seq);
		ASSERT(num_at(ev, "dur") == (double)(seq % 997 + 1) / 1000.0);
		ASSERT_STR_EQ(trace_str(a, "api"), "cudaLaunchKernel_ptsz");
		ASSERT_EQ(int_at(a, "cbid"), 211);
		ASSERT_STR_EQ(trace_str(a, "kernel"), "void k<int>(int*)");
		expect_dim3(a, "grid", seq + 1, seq % 7 + 1, 65535);
		expect_dim3(a, "block", seq % 1024 + 1, 1, 64);
		ASSERT_EQ(int_at(a, "shared memory"), seq * 8);
		snprintf(stream, sizeof(stream), "0x%llx",
			 0x7f0000000000ull + (unsigned long long)seq);
		ASSERT_STR_EQ(trace_str(a, "stream handle"), stream);
		ASSERT_EQ(int_at(a, "result"), seq % 11);
		ASSERT_EQ(int_at(a, "External id"), seq + 1);
	}
	for (uint32_t seq = 0; seq < CALLS; seq++)
		ASSERT_MSG(seen[seq] == 1, "call %u missing", seq);
	trace_free(&t);
	free(seen);
	rm_rf(dir);
}

/* What fits a call record: the bounds of its narrower fields. */
TEST(export_call_fits)
{
	ASSERT(gprof_export_call_fits(UINT32_MAX, 0, 0));
	ASSERT(!gprof_export_call_fits(UINT32_MAX + 1ull, 0, 0));
	ASSERT(gprof_export_call_fits(0, INT16_MAX, 0) && gprof_export_call_fits(0, INT16_MIN, 0));
	ASSERT(!gprof_export_call_fits(0, INT16_MAX + 1, 0));
	ASSERT(!gprof_export_call_fits(0, INT16_MIN - 1, 0));
	ASSERT(gprof_export_call_fits(0, 0, UINT16_MAX));
	ASSERT(!gprof_export_call_fits(0, 0, UINT16_MAX + 1u));
}

/*
 * A pool of 4 chunks and a writer that reads nothing: producers fill what they can, drop the
 * rest without waiting, and the file (once the writer reads again) counts exactly the drops.
 */
TEST(export_cap_drops_counted)
{
	enum {
		THREADS = 4,
		PER_THREAD = 5000
	};
	struct producer_arg args[THREADS];
	struct gprof_export_stats st;
	uint32_t w, ok = 0, dropped = 0;
	uint8_t *seen = calloc(THREADS, PER_THREAD);
	char dir[64];
	struct trace t;

	make_tmpdir(dir, sizeof(dir));
	start_export(dir, 4 * GPROF_CHUNK_BYTES);
	w = open_window(0, 0);
	gprof_export_pause(true);
	/* half of them build in place: a reserve that finds the pool empty drops and counts */
	for (uint32_t i = 0; i < THREADS; i++)
		args[i] = (struct producer_arg){
		    .window = w, .idx = i, .count = PER_THREAD, .in_place = i % 2};
	run_producers(args, THREADS);
	for (uint32_t i = 0; i < THREADS; i++) {
		ok += args[i].ok;
		dropped += args[i].dropped;
	}
	/* 4 chunks of 64 KiB hold at most 4 * 511 events of 128 bytes. */
	ASSERT(ok <= 4 * 511 && ok > 0);
	ASSERT_EQ(ok + dropped, THREADS * PER_THREAD);
	gprof_export_get_stats(&st);
	ASSERT_EQ(st.dropped, dropped);
	gprof_export_pause(false);
	close_window(w);
	ASSERT_EQ(last_result.dropped, dropped);
	load_only_trace(dir, &t);
	ASSERT_EQ(int_at(gprof_meta(&t, "dropped"), "buffer_full"), dropped);
	ASSERT_EQ(int_at(gprof_meta(&t, "records"), "runtime"), ok);
	count_sequences(&t, THREADS, PER_THREAD, seen);
	trace_free(&t);
	free(seen);
	rm_rf(dir);
}

/* This process's address space in use (VmSize), in bytes. */
static size_t address_space_used(void)
{
	char line[128];
	FILE *f = fopen("/proc/self/status", "r");
	size_t kib = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %zu kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	ASSERT(kib > 0);
	return kib << 10;
}

/*
 * The buffer takes address space as events need it: with `ulimit -v` leaving less than its
 * cap, it fills what it could map, drops and counts the rest, and one line in the window's
 * warnings says that it could not grow.
 */
TEST(export_buffer_grows_as_needed)
{
	struct producer_arg arg = {.count = 8 * 64 * 511};
	struct rlimit was, now;
	char dir[64];
	struct trace t;
	json_t *w;
	size_t i;
	int said = 0;

	if (getenv("TEST_SAN") && getenv("TEST_SAN")[0])
		SKIP("the sanitizers reserve terabytes of address space");
	make_tmpdir(dir, sizeof(dir));
	start_export(dir, 8 * 64 * GPROF_CHUNK_BYTES); /* 8 segments of 4 MiB */
	arg.window = open_window(0, 0);
	gprof_export_pause(true);
	ASSERT_EQ(getrlimit(RLIMIT_AS, &was), 0);
	now = was;
	now.rlim_cur = address_space_used() + (6u << 20); /* room for one segment more */
	ASSERT_EQ(setrlimit(RLIMIT_AS, &now), 0);
	produce(&arg);
	ASSERT_EQ(setrlimit(RLIMIT_AS, &was), 0);
	ASSERT_MSG(arg.ok >= 64 * 511 && arg.ok < 4 * 64 * 511 && arg.dropped > 0,
		   "%u written, %u dropped", arg.ok, arg.dropped);
	gprof_export_pause(false);
	close_window(arg.window);
	ASSERT_EQ(last_result.dropped, arg.dropped);
	load_only_trace(dir, &t);
	ASSERT_EQ(int_at(gprof_meta(&t, "records"), "runtime"), arg.ok);
	json_array_foreach(gprof_meta(&t, "warnings"), i, w) said +=
	    strstr(json_string_value(w), "the event buffer cannot grow past") != NULL;
	ASSERT_EQ(said, 1);
	trace_free(&t);
	rm_rf(dir);
}

static void wait_written(uint64_t n)
{
	struct gprof_export_stats st;

	for (int i = 0; i < 4000; i++, usleep(2500)) {
		gprof_export_get_stats(&st);
		if (st.written >= n)
			return;
	}
	FAIL("written %llu of %llu", (unsigned long long)st.written, (unsigned long long)n);
}

/*
 * Threads that exit mid-window (one round while the writer reads nothing) keep their events,
 * and their chunks come back: 5 rounds of 3 threads take 15 chunks from a pool of 6.
 */
TEST(export_thread_exit_mid_window)
{
	enum {
		ROUNDS = 5,
		THREADS = 3,
		PER_THREAD = 500
	};
	struct producer_arg args[THREADS];
	uint8_t *seen = calloc(ROUNDS * THREADS, PER_THREAD);
	char dir[64];
	struct trace t;
	uint32_t w;

	make_tmpdir(dir, sizeof(dir));
	start_export(dir, 6 * GPROF_CHUNK_BYTES);
	w = open_window(0, 0);
	for (uint32_t r = 0; r < ROUNDS; r++) {
		gprof_export_pause(r == 0);
		for (uint32_t i = 0; i < THREADS; i++)
			args[i] = (struct producer_arg){
			    .window = w, .idx = r * THREADS + i, .count = PER_THREAD};
		run_producers(args, THREADS);
		for (uint32_t i = 0; i < THREADS; i++)
			ASSERT_EQ(args[i].ok, PER_THREAD);
		gprof_export_pause(false);
		wait_written((r + 1) * THREADS * PER_THREAD);
	}
	close_window(w);
	load_only_trace(dir, &t);
	count_sequences(&t, ROUNDS * THREADS, PER_THREAD, seen);
	for (size_t i = 0; i < ROUNDS * THREADS * PER_THREAD; i++)
		ASSERT_MSG(seen[i] == 1, "tid %zu seq %zu missing", i / PER_THREAD, i % PER_THREAD);
	ASSERT_EQ(int_at(gprof_meta(&t, "dropped"), "buffer_full"), 0);
	trace_free(&t);
	free(seen);
	rm_rf(dir);
}

/* A chunk's pages (export/buffer.c). */
enum {
	PAGES_PER_CHUNK = GPROF_CHUNK_BYTES / 4096
};

/* This thread's page faults so far. */
static long thread_faults(void)
{
	struct rusage ru = {0};

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_minflt + ru.ru_majflt;
}

/*
 * The fault tests' start: a pool of `chunks`, one window, one event written, so the writer has
 * made a pass, whose start fills its reserve. Skipped under TSan, whose shadow memory takes
 * faults of its own on every new page the events touch.
 */
static uint32_t faults_start(char *dir, size_t size, uint32_t chunks)
{
	const char *san = getenv("TEST_SAN");
	struct producer_arg arg;
	uint32_t w;

	if (san && strstr(san, "thread"))
		SKIP("page faults are TSan's own under TSan");
	make_tmpdir(dir, size);
	start_export(dir, chunks * GPROF_CHUNK_BYTES);
	w = open_window(0, 0);
	arg = (struct producer_arg){.window = w, .count = 1};
	produce(&arg);
	wait_written(1);
	return w;
}

/* With the writer paused: this thread's page faults while it fills `chunks` chunks. */
static long faults_filling(uint32_t w, uint32_t chunks)
{
	struct producer_arg arg = {.window = w, .count = chunks * GPROF_CHUNK_EVENTS};
	long faults;

	gprof_export_pause(true);
	faults = thread_faults();
	produce(&arg);
	faults = thread_faults() - faults;
	ASSERT_EQ(arg.ok, chunks * GPROF_CHUNK_EVENTS);
	return faults;
}

/* Under ASan, reading shadow memory of new pages takes a fault per 32 KiB of events. */
static long asan_faults(uint32_t chunks)
{
	const char *san = getenv("TEST_SAN");

	return san && strstr(san, "address") ? chunks * (GPROF_CHUNK_BYTES / 32768) : 0;
}

/*
 * The writer faults chunks in before producers take them: with the writer paused after its
 * first pass, a thread that fills 16 chunks (256 pages of events) touches hardly any page for
 * the first time. Taking fresh chunks itself, it would fault each page: 256 times.
 */
TEST(export_producers_get_faulted_chunks)
{
	enum {
		CHUNKS = 16
	};
	char dir[64];
	uint32_t w = faults_start(dir, sizeof(dir), 256);
	long faults = faults_filling(w, CHUNKS);

	ASSERT_MSG(faults < asan_faults(CHUNKS) + CHUNKS * PAGES_PER_CHUNK / 8,
		   "%ld page faults while filling %d pages", faults, CHUNKS * PAGES_PER_CHUNK);
	gprof_export_pause(false);
	close_window(w);
	rm_rf(dir);
}

/*
 * Producers that ran past the reserve make the writer keep a bigger one. The first reserve
 * is 64 chunks; a thread fills 128 with the writer paused, taking 64 never-used chunks itself.
 * After the writer's pass, it finds the 128 it filled and a reserve of 128 on the stack, and
 * fills 250 more with the writer paused again, faulting no page for the first time. With the
 * first reserve kept, 58 chunks would be new to it: 928 page faults.
 */
TEST(export_reserve_grows_when_outrun)
{
	enum {
		OUTRUN = 128,
		AGAIN = 250,
		NEW_WITHOUT_GROWTH = AGAIN - 64 - OUTRUN
	};
	char dir[64];
	uint32_t w = faults_start(dir, sizeof(dir), 1024);
	struct producer_arg arg = {.window = w, .count = 1};
	long faults;

	faults_filling(w, OUTRUN);
	gprof_export_pause(false);
	produce(&arg);
	wait_written(2 + OUTRUN * GPROF_CHUNK_EVENTS);
	faults = faults_filling(w, AGAIN);
	ASSERT_MSG(faults < asan_faults(AGAIN) + NEW_WITHOUT_GROWTH * PAGES_PER_CHUNK / 2,
		   "%ld page faults while filling %d chunks", faults, AGAIN);
	gprof_export_pause(false);
	close_window(w);
	rm_rf(dir);
}

/*
 * Output under a regular file: one clear line, that window is lost, nothing crashes. The
 * folder is resolved once, at start: a later setenv and chdir change nothing, and once the
 * file is gone the next window is written there.
 */
TEST(export_unwritable_folder)
{
	char dir[64], file[128], out[160], path[512], cwd[PATH_MAX];
	struct gprof_export_stats st;
	int f;
	const char *err;
	uint32_t w;

	make_tmpdir(dir, sizeof(dir));
	snprintf(file, sizeof(file), "%s/file", dir);
	f = open(file, O_WRONLY | O_CREAT, 0644);
	ASSERT(f >= 0);
	close(f);
	snprintf(out, sizeof(out), "%s/sub", file);
	setenv("GPROF_TEST_OUT", out, 1);
	start_export("%q{GPROF_TEST_OUT}", 1u << 20);
	capture_stderr();
	w = open_window(4, 0);
	push_marks(w, 10);
	close_window(w);
	err = end_capture();
	ASSERT_EQ(last_result.error, -ENOTDIR);
	ASSERT_EQ(gprof_export_window_life(w), GPROF_WINDOW_GIVEN_UP);
	ASSERT_MSG(text_lines(err, "gprof: ") == 1 && text_lines(err, "") == 1, "%s", err);
	ASSERT_STR_CONTAINS(err, "cannot create the output folder");
	ASSERT_STR_CONTAINS(err, out);
	ASSERT_STR_CONTAINS(err, "window 4");
	ASSERT_STR_CONTAINS(err, "GPROF_OUTPUT");
	gprof_export_get_stats(&st);
	ASSERT_EQ(st.windows_failed, 1);
	ASSERT_EQ(st.late, 10); /* its events were dropped */

	/* The environment and the current folder change: the folder does not. */
	setenv("GPROF_TEST_OUT", "elsewhere", 1);
	ASSERT(getcwd(cwd, sizeof(cwd)));
	ASSERT_EQ(chdir(dir), 0);
	capture_stderr();
	w = open_window(5, 0);
	close_window(w);
	err = end_capture();
	ASSERT_EQ(last_result.error, -ENOTDIR);
	ASSERT_STR_CONTAINS(err, out);
	ASSERT_STR_CONTAINS(err, "window 5");

	ASSERT_EQ(unlink(file), 0);
	capture_stderr();
	w = open_window(6, 0);
	push_marks(w, 3);
	close_window(w);
	ASSERT_STR_EQ(end_capture(), "");
	ASSERT_EQ(last_result.error, 0);
	the_trace(out, path, sizeof(path));
	ASSERT_EQ(access("elsewhere", F_OK), -1);
	ASSERT_EQ(chdir(cwd), 0);
	gprof_export_get_stats(&st);
	ASSERT(st.windows_failed == 2 && st.windows_done == 1 && st.written == 3);
	rm_rf(dir);
}

/*
 * The program replaces the window's .partial by a file of its own at that name while the
 * window is written: libgprof's descriptor still writes the file it created (now unlinked),
 * and at the end the name is left alone: not renamed, not removed; one line says so.
 */
TEST(export_partial_replaced)
{
	char dir[64], partial[512], final[512];
	const char *err;
	uint32_t w;
	int fd;

	make_tmpdir(dir, sizeof(dir));
	start_export(dir, 1u << 20);
	w = open_window(3, 0);
	push_marks(w, 10);
	wait_for_file(dir, ".partial", partial, sizeof(partial));
	ASSERT_EQ(unlink(partial), 0);
	fd = open(partial, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ASSERT(fd >= 0 && write(fd, "theirs\n", 7) == 7 && close(fd) == 0);
	capture_stderr();
	close_window(w);
	err = end_capture();
	ASSERT_MSG(text_lines(err, "gprof: ") == 1 && text_lines(err, "") == 1, "%s", err);
	ASSERT_STR_CONTAINS(err, "is no longer the file libgprof wrote");
	ASSERT_NE(last_result.error, 0);
	snprintf(final, sizeof(final), "%.*s", (int)(strlen(partial) - strlen(".partial")),
		 partial);
	ASSERT_EQ(access(final, F_OK), -1);
	fd = open(partial, O_RDONLY);
	ASSERT(fd >= 0 && read(fd, final, sizeof(final)) == 7 && close(fd) == 0);
	ASSERT(!strncmp(final, "theirs\n", 7));
	rm_rf(dir);
}

/* The disk fills mid-window (a file size limit): one line, the .partial removed, no crash. */
TEST(export_disk_full)
{
	struct rlimit lim = {.rlim_cur = 256 << 10, .rlim_max = 256 << 10};
	char dir[64];
	const char *err;
	DIR *d;
	uint32_t w;

	make_tmpdir(dir, sizeof(dir));
	signal(SIGXFSZ, SIG_IGN);
	ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
	start_export(dir, 64u << 20);
	capture_stderr();
	w = open_window(0, 0);
	for (uint32_t i = 0; i < 200000; i++) {
		struct gprof_export_event ev = {.kind = GPROF_EXPORT_KERNEL,
						.window = w,
						.stream = 7,
						.ts_ns = BASE_NS + i * 1733ull,
						.dur_ns = 1000 + i % 700,
						.correlation = i,
						.name = gprof_export_intern("k")};

		ASSERT_EQ(gprof_export_push(&ev), 0);
		if (i % 20000 == 0)
			usleep(1000);
	}
	close_window(w);
	err = end_capture();
	ASSERT_EQ(last_result.error, -EFBIG);
	ASSERT_MSG(text_lines(err, "gprof: ") == 1 && text_lines(err, "") == 1, "%s", err);
	ASSERT_STR_CONTAINS(err, strerror(EFBIG));
	ASSERT_STR_CONTAINS(err, ".partial");
	d = opendir(dir);
	for (struct dirent *de; (de = readdir(d));)
		ASSERT_MSG(de->d_name[0] == '.', "left behind: %s", de->d_name);
	closedir(d);
	rm_rf(dir);
}

/* The same with compressor threads allowed: still one line, nothing left behind. */
TEST(export_disk_full_threads)
{
	export_threads = 2;
	test_export_disk_full();
}

/* Threads of this process named `comm` now. */
static int threads_named(const char *comm)
{
	char path[64], name[32];
	DIR *d = opendir("/proc/self/task");
	int n = 0;

	ASSERT(d);
	for (struct dirent *de; (de = readdir(d));) {
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/task/%.16s/comm", de->d_name);
		f = fopen(path, "re");
		if (f && fgets(name, sizeof(name), f))
			n += strcspn(name, "\n") == strlen(comm) &&
			     !strncmp(name, comm, strlen(comm));
		if (f)
			fclose(f);
	}
	closedir(d);
	return n;
}

/* A light window, which the writer keeps up with, starts no compressor thread. */
TEST(export_light_window_no_compressor)
{
	char dir[64];
	struct trace t;
	uint32_t w;

	make_tmpdir(dir, sizeof(dir));
	export_threads = 2;
	start_export(dir, 16u << 20);
	w = open_window(0, 0);
	for (int i = 0; i < 20; i++, usleep(20000)) {
		push_marks(w, 200);
		ASSERT_EQ(threads_named("gprof-deflate"), 0);
	}
	ASSERT_EQ(threads_named("gprof-writer"), 1);
	close_window(w);
	load_only_trace(dir, &t);
	ASSERT_TRACE_OK(&t);
	trace_free(&t);
	rm_rf(dir);
}

/* Events for a finished window are dropped, counted, and reported by the next file. */
TEST(export_late_events_dropped)
{
	struct gprof_export_stats st;
	char dir[64];
	struct trace t;
	uint32_t w1, w2;

	make_tmpdir(dir, sizeof(dir));
	start_export(dir, 1u << 20);
	w1 = open_window(0, 0);
	push_marks(w1, 10);
	close_window(w1);
	the_trace(dir, last_path, sizeof(last_path));
	unlink(last_path);
	push_marks(w1, 7);
	for (int i = 0; i < 4000; i++, usleep(2500)) {
		gprof_export_get_stats(&st);
		if (st.late >= 7)
			break;
	}
	ASSERT_EQ(st.late, 7);
	ASSERT_EQ(st.written, 10);
	w2 = open_window(1, 5);
	ASSERT_NE(w2, w1);
	push_marks(w2, 3);
	close_window(w2);
	load_only_trace(dir, &t);
	ASSERT_EQ(int_at(gprof_meta(&t, "dropped"), "late"), 7);
	ASSERT_EQ(int_at(gprof_meta(&t, "records"), "nvtx_mark"), 3);
	trace_free(&t);
	rm_rf(dir);
}

/* A window's life, as export.h tells it: each step shown by what the window then does. */
TEST(export_window_life)
{
	uint32_t w, later[GPROF_EXPORT_WINDOWS];
	struct gprof_span span;
	char dir[64];
	struct trace t;

	make_tmpdir(dir, sizeof(dir));
	start_export(dir, 1u << 20);
	ASSERT_EQ(gprof_export_window_life(1), GPROF_WINDOW_FREE);
	w = open_window(0, 0);
	ASSERT_EQ(gprof_export_window_life(w), GPROF_WINDOW_ACTIVE);
	/* its span: from its info on, no end yet */
	span = gprof_export_window_span(w);
	ASSERT(span.begin == 1000 && span.end == UINT64_MAX);
	ASSERT(gprof_export_window_hold(w)); /* as the collector does */
	gprof_export_window_end(w, 5000);
	gprof_export_window_close(w);
	ASSERT_EQ(gprof_export_window_life(w), GPROF_WINDOW_DRAINING);
	gprof_export_window_close(w); /* the opener's hold goes once */
	push_marks(w, 4);	      /* late records still come */
	ASSERT_EQ(gprof_export_window_wait(w, 50), -ETIMEDOUT);
	ASSERT_EQ(gprof_export_window_life(w), GPROF_WINDOW_DRAINING);
	close_window(w);
	ASSERT_EQ(gprof_export_window_life(w), GPROF_WINDOW_WRITTEN);
	ASSERT(!gprof_export_window_hold(w));
	gprof_export_window_end(w, 9000); /* a finished window's span stays */
	span = gprof_export_window_span(w);
	ASSERT(span.begin == 1000 && span.end == 5000);
	load_only_trace(dir, &t);
	ASSERT_EQ(int_at(gprof_meta(&t, "records"), "nvtx_mark"), 4);
	trace_free(&t);
	/* Its slot is claimed again GPROF_EXPORT_WINDOWS ids on: the old id is then unknown. */
	for (unsigned i = 0; i < GPROF_EXPORT_WINDOWS; i++)
		later[i] = open_window(1 + i, 0);
	ASSERT_EQ(later[GPROF_EXPORT_WINDOWS - 1], w + GPROF_EXPORT_WINDOWS);
	ASSERT_EQ(gprof_export_window_life(w), GPROF_WINDOW_FREE);
	span = gprof_export_window_span(w); /* the slot answers for its new window */
	ASSERT(span.begin == 1000 + GPROF_EXPORT_WINDOWS && span.end == UINT64_MAX);
	ASSERT(!gprof_export_window_can_open());
	for (unsigned i = 0; i < GPROF_EXPORT_WINDOWS; i++)
		close_window(later[i]);
	ASSERT_EQ(gprof_export_window_life(later[0]), GPROF_WINDOW_WRITTEN);
	rm_rf(dir);
}

/* Runs fn in a forked child; returns its exit status. */
static int in_child(void (*fn)(void))
{
	pid_t pid = fork();
	int status;

	ASSERT(pid >= 0);
	if (pid == 0) {
		fn();
		_exit(0);
	}
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* A child forked before any window (a launcher's worker) writes traces of its own. */
static void child_writes(void)
{
	uint32_t w = open_window(7, 0);

	push_marks(w, 5);
	close_window(w);
	ASSERT_EQ(last_result.error, 0);
	ASSERT(strstr(last_result.path, "_") && gprof_export_shutdown(5000) == 0);
}

/* A child of a process whose writer runs writes nothing, and no lock is left held. */
static void child_inert(void)
{
	struct gprof_export_window_info info = {.schedule = ""};
	uint32_t id;

	ASSERT_EQ(gprof_export_window_open(&info, &id), -ENODEV);
	ASSERT(gprof_export_intern("a string first seen in the child")->len == 32);
	ASSERT_EQ(gprof_export_shutdown(1000), 0);
}

TEST(export_fork)
{
	char dir[64], sub[128], path[512];
	struct trace t;
	uint32_t w;
	DIR *d;
	int files = 0;

	make_tmpdir(dir, sizeof(dir));
	snprintf(sub, sizeof(sub), "%s/%%p", dir);
	start_export(sub, 1u << 20);
	ASSERT_EQ(in_child(child_writes), 0);
	w = open_window(0, 0);
	push_marks(w, 3);
	ASSERT_EQ(in_child(child_inert), 0);
	close_window(w);
	snprintf(sub, sizeof(sub), "%s/%d", dir, (int)getpid());
	the_trace(sub, path, sizeof(path));
	ASSERT_EQ(trace_load(path, &t, why, sizeof(why)), 0);
	ASSERT_TRACE_OK(&t);
	ASSERT_EQ(int_at(gprof_meta(&t, "records"), "nvtx_mark"), 3);
	trace_free(&t);
	/* Two folders: ours and the first child's; the second child made none. */
	d = opendir(dir);
	for (struct dirent *de; (de = readdir(d));)
		files += de->d_name[0] != '.';
	closedir(d);
	ASSERT_EQ(files, 2);
	rm_rf(dir);
}

/* Warnings that don't fit the reserved header give way, and the header says how many. */
TEST(export_header_shortens_warnings)
{
	static char warnings[GPROF_LOG_KEPT][GPROF_LOG_LINE_MAX];
	struct gprof_export_process_info proc = {.cupti_status = "not used"};
	struct gprof_trace_meta m = {.proc = &proc,
				     .rank = {0, 1},
				     .base_ns = BASE_NS,
				     .trace_name = "h_1.2.pt.trace.json.gz",
				     .warnings = warnings,
				     .n_warnings = GPROF_LOG_KEPT};
	const json_t *kept;
	const char *text;
	struct trace t;
	struct tt tr;
	size_t len;

	/* Each 0xff becomes a 3-byte U+FFFD: 32 of these need about 49 KB. */
	for (int i = 0; i < GPROF_LOG_KEPT; i++)
		memset(warnings[i], 0xff, GPROF_LOG_LINE_MAX - 1);
	tt_open(&tr, &m, BASE_NS, -1);
	ASSERT_EQ(tt_close(&tr, &m), 0);
	text = tt_text(&tr, &len);
	ASSERT_EQ(trace_parse(text, len, &t, why, sizeof(why)), 0);
	ASSERT_TRACE_OK(&t);
	kept = gprof_meta(&t, "warnings");
	ASSERT(json_array_size(kept) > 0 && json_array_size(kept) < GPROF_LOG_KEPT);
	ASSERT_EQ(json_array_size(kept) +
		      (size_t)json_integer_value(gprof_meta(&t, "warnings_omitted")),
		  GPROF_LOG_KEPT);
	ASSERT(!strncmp(text + GPROF_TRACE_HEAD_BYTES - 17, "\"traceEvents\": [\n", 17));
	trace_free(&t);
	tt_free(&tr);
}

struct intern_arg {
	const struct gprof_export_str *got[1000];
	unsigned offset;
};

static void *intern_many(void *p)
{
	struct intern_arg *a = p;
	char s[32];

	for (unsigned i = 0; i < 1000; i++) {
		unsigned k = (i + a->offset) % 1000;

		snprintf(s, sizeof(s), "name %u", k);
		a->got[k] = gprof_export_intern(s);
	}
	return NULL;
}

TEST(export_intern_strings)
{
	static struct intern_arg args[4];
	size_t n = 1u << 20;
	char *big = malloc(n + 1);
	const struct gprof_export_str *a, *cut;
	int full = 0;
	const char *err;

	a = gprof_export_intern("abc");
	ASSERT(a == gprof_export_intern_n("abcdef", 3));
	ASSERT(a->len == 3 && !memcmp(a->text, "abc", 3));
	ASSERT(gprof_export_intern("")->len == 0 && gprof_export_intern(NULL)->len == 0);
	a = gprof_export_intern("a\"b\x01\xff");
	ASSERT(a->len == 7 && !memcmp(a->text, "a\\\"b\xef\xbf\xbd", 7));
	/* 1 MiB: "x" then é (2 bytes) repeated; byte 8192 is inside an é, so the cut backs off. */
	big[0] = 'x';
	for (size_t i = 1; i < n; i += 2)
		memcpy(big + i, "\xc3\xa9", 2);
	big[n] = '\0';
	cut = gprof_export_intern(big);
	ASSERT_EQ(cut->len, GPROF_EXPORT_STR_MAX - 1 + strlen(GPROF_EXPORT_STR_CUT));
	ASSERT(!memcmp(cut->text, big, GPROF_EXPORT_STR_MAX - 1));
	ASSERT(!memcmp(cut->text + GPROF_EXPORT_STR_MAX - 1, GPROF_EXPORT_STR_CUT,
		       strlen(GPROF_EXPORT_STR_CUT)));
	ASSERT(cut == gprof_export_intern(big));
	ASSERT(cut != gprof_export_intern_n(big, GPROF_EXPORT_STR_MAX - 1));
	/* Threads interning the same names in different orders get the same entries. */
	for (unsigned i = 0; i < 4; i++)
		args[i].offset = i * 250;
	threads_run(intern_many, args, sizeof(args[0]), 4);
	for (unsigned k = 0; k < 1000; k++)
		for (unsigned i = 1; i < 4; i++)
			ASSERT(args[i].got[k] == args[0].got[k] && args[0].got[k]->len > 5);
	/* The table's byte cap: new strings become the placeholder, with one warning. */
	capture_stderr();
	for (unsigned i = 0; i < 2 * GPROF_EXPORT_STR_BYTES / 4096; i++) {
		snprintf(big, 16, "%08u", i);
		big[8] = 'y';
		a = gprof_export_intern_n(big, 4096);
		full += a->len && !strcmp(a->text, "[gprof: string table full]");
	}
	err = end_capture();
	ASSERT(full > 0);
	ASSERT_EQ(text_lines(err, "gprof: "), 1);
	ASSERT_STR_CONTAINS(err, "string table is full");
	free(big);
}

/* A small trace that keeps every rule, written by hand from TRACE_FORMAT.md. */
#define KERNEL_ARGS(corr)                                                                      \
	"\"args\":{\"queued\":0,\"device\":0,\"context\":1,\"stream\":7,\"correlation\":" corr \
	",\"registers per thread\":8,\"shared memory\":0,\"blocks per SM\":1.0,\"warps per "   \
	"SM\":1.0,\"grid\":[1,1,1],\"block\":[32,1,1],\"est. achieved occupancy %\":1}"
static const char good_trace[] =
    "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [],\n"
    "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 1},\n"
    "  \"cupti_version\": 24, \"cuda_runtime_version\": 13000, \"cuda_driver_version\": 13000,\n"
    "  \"gprof\": {\"version\": \"t\", \"window\": 0, \"records\": {}, \"dropped\": {}, "
    "\"warnings\": []},\n"
    "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": 1000,\n  \"traceEvents\": [\n"
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"pid\":1,\"tid\":1,"
    "\"ts\":10.000,\"dur\":100.000},\n"
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,"
    "\"ts\":20.000,\"dur\":5.000,\"args\":{\"cbid\":211,\"correlation\":7}},\n"
    "{\"ph\":\"s\",\"id\":7,\"pid\":1,\"tid\":1,\"ts\":20.000,\"cat\":\"ac2g\",\"name\":\"ac2g\"},"
    "\n"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":30.000,"
    "\"dur\":10.000," KERNEL_ARGS(
	"7") "},\n"
	     "{\"ph\":\"f\",\"id\":7,\"pid\":0,\"tid\":7,\"ts\":30.000,\"cat\":\"ac2g\",\"name\":"
	     "\"ac2g\","
	     "\"bp\":\"e\"},\n"
	     "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k2\",\"pid\":0,\"tid\":7,\"ts\":40.000,"
	     "\"dur\":10.000," KERNEL_ARGS(
		 "8") "},\n"
		      "{\"ph\":\"C\",\"cat\":\"gpu_memory\",\"name\":\"GPU "
		      "memory\",\"pid\":0,\"ts\":41.000,"
		      "\"args\":{\"allocated\":64}},\n"
		      "{\"name\":\"process_name\",\"ph\":\"M\",\"ts\":0.000,\"pid\":1,\"tid\":0,"
		      "\"args\":{\"name\":\"p\"}}\n"
		      "  ],\n  \"traceName\": \"h_1.5.pt.trace.json.gz\"\n}\n";

/* An event that starts where one of ts 5709.608 and dur 1939.377 ends, in doubles after it. */
#define TOUCHING(cat, pid_tid)                                              \
	"{\"ph\":\"X\",\"cat\":\"" cat "\",\"name\":\"n\",\"pid\":" pid_tid \
	",\"ts\":7648.985,\"dur\":1.000,\"args\":{\"device\":0,\"launched\":1}},\n"

/* The checker must be able to fail: each breakage of one rule, and what it must say. */
static const struct {
	const char *from, *to, *reason;
} breakages[] = {
    {"\"ts\":20.000,\"dur\":5.000", "\"ts\":105.000,\"dur\":10.000", "overlap on track 1/1"},
    /* nested: fine on a track, not on a stream */
    {"\"ts\":40.000,\"dur\":10.000", "\"ts\":32.000,\"dur\":3.000", "GPU events"},
    {"\"dur\":100.000", "\"dur\":-100.000", "negative dur"},
    {"\"cat\":\"cuda_runtime\",", "", "X without cat"},
    {"\"tid\":1,\"ts\":10.000", "\"ts\":10.000", "X without cat, ts, dur, pid or tid"},
    {"\"queued\":0,", "", "no args.\"queued\""},
    {"{\"cbid\":211,", "{\"stream\":7,\"cbid\":211,", "\"stream\" on a host event"},
    {"\"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": 1000,",
     "\"baseTimeNanoseconds\": 1000,\n  \"displayTimeUnit\": \"ms\",", "top-level key 7"},
    {"  \"gprof\": {", "  \"traceName\": \"x.pt.trace.json.gz\", \"gprof\": {", "top-level key"},
    {"\"rank\": 0", "\"rank\":0", "\"rank\": N"},
    {"\"rank\": 0", "\"rank\":  0", "\"rank\": N"},
    {"\"name\":\"k\"", "\"name\":\"k\x01\"", "raw control byte 0x01"},
    {"\"name\":\"k\"", "\"name\":\"k\\u0041\"", "escape \\u"},
    {"\"name\":\"k\"", "\"name\":\"k\\r\"", "escape \\r"},
    {"\"ts\":30.000,\"dur\"", "\"ts\":30.00,\"dur\"", "three decimals"},
    {"\"dur\":10.000,\"args\":{\"queued\":0,\"device\":0,\"context\":1,\"stream\":7,"
     "\"correlation\":8",
     "\"dur\":1e1,\"args\":{\"queued\":0,\"device\":0,\"context\":1,\"stream\":7,\"correlation\":8",
     "three decimals"},
    {"ProfilerStep#1", "ProfilerStep 1", "step name"},
    {"{\"ph\":\"f\",\"id\":7,", "{\"ph\":\"f\",\"id\":9,", "flow id"},
    {"\"ts\":30.000,\"cat\":\"ac2g\"", "\"ts\":19.000,\"cat\":\"ac2g\"", "ends before it starts"},
    {",\"bp\":\"e\"", "", "bp"},
    {"\"displayTimeUnit\": \"ms\"", "\"displayTimeUnit\": \"ns\"", "displayTimeUnit"},
    {"h_1.5.pt.trace.json.gz", "h_1.5.json", "traceName"},
    {"\"allocated\":64", "\"used\":64", "allocated"},
    {"\"name\":\"process_name\"", "\"name\":\"process_nom\"", "unknown metadata"},
    {"\"ph\":\"C\"", "\"ph\":\"B\"", "ph \"B\""},
    {"\"rank\": 0, \"world_size\": 1", "\"rank\": 2, \"world_size\": 1", "rank 2 of 1"},
    {"\n}\n", "\n}\n{}", "after the top-level object"},
    /* TensorBoard's plugin adds ts and dur in doubles: host events must not touch */
    {"\"ts\":10.000,\"dur\":100.000},\n",
     "\"ts\":5709.608,\"dur\":1939.377},\n" TOUCHING("user_annotation", "1,\"tid\":1"),
     "as ts + dur in doubles"},
};

TEST(export_trace_checker_rejects)
{
	char broken[sizeof(good_trace) + 256];
	struct trace t;

	ASSERT_EQ(trace_parse(good_trace, strlen(good_trace), &t, why, sizeof(why)), 0);
	ASSERT_TRACE_OK(&t);
	trace_free(&t);
	for (size_t i = 0; i < ARRAY_SIZE(breakages); i++) {
		const char *at = strstr(good_trace, breakages[i].from);
		size_t pre = (size_t)(at - good_trace);

		ASSERT_MSG(at, "case %zu: no \"%s\"", i, breakages[i].from);
		snprintf(broken, sizeof(broken), "%.*s%s%s", (int)pre, good_trace, breakages[i].to,
			 at + strlen(breakages[i].from));
		trace_parse(broken, strlen(broken), &t, why, sizeof(why));
		ASSERT_MSG(trace_check(&t, why, sizeof(why)) != 0, "case %zu passed", i);
		ASSERT_MSG(strstr(why, breakages[i].reason), "case %zu: \"%s\", want \"%s\"", i,
			   why, breakages[i].reason);
		trace_free(&t);
	}
}

/*
 * Touching in doubles on a stream (GPU work launched before the window, gpu_earlier): the
 * plugin builds no operator tree there.
 */
TEST(export_trace_checker_accepts_touching_stream_events)
{
	static const char *const from = "{\"ph\":\"C\"";
	char with[sizeof(good_trace) + 512];
	const char *at = strstr(good_trace, from);
	struct trace t;

	ASSERT(at);
	snprintf(with, sizeof(with), "%.*s%s%s%s", (int)(at - good_trace), good_trace,
		 "{\"ph\":\"X\",\"cat\":\"gpu_earlier\",\"name\":\"e\",\"pid\":0,\"tid\":7,"
		 "\"ts\":5709.608,\"dur\":1939.377,\"args\":{\"device\":0,\"launched\":1}},\n",
		 TOUCHING("gpu_earlier", "0,\"tid\":7"), at);
	ASSERT_EQ(trace_parse(with, strlen(with), &t, why, sizeof(why)), 0);
	ASSERT_TRACE_OK(&t);
	trace_free(&t);
}

/* Keeps the writer busy with bursts of events for window *arg until `busy_stop`. */
static volatile int busy_stop;
static uint64_t pushed; /* events accepted by gprof_export_push, all threads */

static void push_counted(const struct gprof_export_event *ev)
{
	if (gprof_export_push(ev) == 0)
		__atomic_add_fetch(&pushed, 1, __ATOMIC_RELAXED);
}

static void *busy_producer(void *arg)
{
	uint32_t w = *(uint32_t *)arg;
	struct gprof_export_event ev = {
	    .kind = GPROF_EXPORT_NVTX_MARK,
	    .window = w,
	    .ts_ns = BASE_NS + 1000,
	    .tid = my_tid(),
	    .name = gprof_export_intern("busy"),
	};

	/* Bursts, so that the writer is often mid-pass. */
	while (!__atomic_load_n(&busy_stop, __ATOMIC_RELAXED)) {
		for (int i = 0; i < 500; i++)
			push_counted(&ev);
		usleep(200);
	}
	return NULL;
}

/*
 * Windows opened while the writer is in the middle of a pass get every event pushed right after
 * the open (a pass plans which windows exist, then drains: events of a window opened in between
 * are early, not late). Every accepted event is written; none is late.
 */
TEST(export_window_opened_mid_pass)
{
	char dir[256];
	struct gprof_export_stats st;

	make_tmpdir(dir, sizeof(dir));
	start_export(dir, 16u << 20);
	/* Rounds of one busy window and 6 short ones: window slots are reused as ids advance. */
	for (unsigned round = 0; round < 40; round++) {
		uint32_t busy_window = open_window(round * 10, 0);
		pthread_t busy;

		__atomic_store_n(&busy_stop, 0, __ATOMIC_RELAXED);
		ASSERT_EQ(pthread_create(&busy, NULL, busy_producer, &busy_window), 0);
		for (unsigned i = 1; i <= 6; i++) {
			uint32_t w = open_window(round * 10 + i, i);
			struct gprof_export_event ev = {
			    .kind = GPROF_EXPORT_NVTX_MARK,
			    .window = w,
			    .ts_ns = BASE_NS + i,
			    .tid = my_tid(),
			    .name = gprof_export_intern("early"),
			};

			for (int k = 0; k < 20; k++)
				push_counted(&ev);
			close_window(w);
		}
		__atomic_store_n(&busy_stop, 1, __ATOMIC_RELAXED);
		pthread_join(busy, NULL);
		close_window(busy_window);
	}
	ASSERT_EQ(gprof_export_shutdown(10000), 0);
	gprof_export_get_stats(&st);
	ASSERT_EQ(st.late, 0);
	ASSERT_EQ(st.written, pushed);
	rm_rf(dir);
}
