/*
 * End-to-end tests of the collector: programs run on the simulated GPU and CUPTI under
 * LD_PRELOAD, and every trace is checked against TRACE_FORMAT.md and against the simulation's
 * ground-truth log (FAKEGPU_LOG): which GPU work ran, launched by which call, on which stream.
 */
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <unistd.h>

#include "collector/internal.h"
#include "common/compiler.h"
#include "task.h"
#include "util/e2e.h"
#include "util/gtlog.h"
#include "util/text.h"

static json_t *arg(const json_t *ev, const char *key)
{
	return json_object_get(json_object_get(ev, "args"), key);
}

static long long int_of(const json_t *v)
{
	return json_is_integer(v) ? json_integer_value(v) : -1;
}

/* µs with three decimals -> ns */
static long long ts_ns(const json_t *ev, const char *key)
{
	return (long long)(json_number_value(json_object_get(ev, key)) * 1000.0 + 0.5);
}

static bool is_gpu(const json_t *ev)
{
	const char *cat = trace_str(ev, "cat");

	return !strcmp(cat, "kernel") || !strcmp(cat, "gpu_memcpy") || !strcmp(cat, "gpu_memset");
}

static bool is_api(const json_t *ev)
{
	const char *cat = trace_str(ev, "cat");

	return !strcmp(cat, "cuda_runtime") || !strcmp(cat, "cuda_driver");
}

/* The trace's events with correlation `corr` that pass `pick`, and how many there are. */
static int find_corr(const struct trace *t, long long corr, bool (*pick)(const json_t *),
		     json_t **found)
{
	size_t i;
	json_t *ev;
	int n = 0;

	json_array_foreach(t->events, i, ev)
	{
		if (pick(ev) && e2e_arg_int(ev, "correlation") == corr) {
			*found = ev;
			n++;
		}
	}
	return n;
}

/* The flow half of type ph ("s" or "f") with id corr, and how many there are. */
static int find_flow(const struct trace *t, long long corr, const char *ph, json_t **found)
{
	size_t i;
	json_t *ev;
	int n = 0;

	json_array_foreach(t->events, i, ev)
	{
		if (!strcmp(trace_str(ev, "ph"), ph) && int_of(json_object_get(ev, "id")) == corr) {
			*found = ev;
			n++;
		}
	}
	return n;
}

/* The ground-truth API call with correlation corr. */
static json_t *gt_api(json_t *gt, long long corr)
{
	size_t i;
	json_t *e;

	json_array_foreach(gt, i, e)
	{
		if (!strcmp(gtlog_str(e, "type"), "api") && gtlog_int(e, "corr") == corr)
			return e;
	}
	return NULL;
}

/* TRACE_FORMAT.md: the names readers know for the entry points the simulation has. */
static const char *public_name(const char *symbol)
{
	static const char *const forms[][2] = {
	    {"__cudaLaunchKernel", "cudaLaunchKernel"},
	    {"__cudaLaunchKernel_ptsz", "cudaLaunchKernel"},
	    {"cudaLaunchKernel_ptsz", "cudaLaunchKernel"},
	    {"cudaLaunchKernelExC_ptsz", "cudaLaunchKernelExC"},
	    {"cudaMemcpy_ptds", "cudaMemcpy"},
	    {"cudaMemcpyAsync_ptsz", "cudaMemcpyAsync"},
	    {"cudaMemset_ptds", "cudaMemset"},
	    {"cudaMemsetAsync_ptsz", "cudaMemsetAsync"},
	    {"cudaStreamSynchronize_ptsz", "cudaStreamSynchronize"},
	    {"cuMemcpyHtoD_v2", "cuMemcpyHtoD"},
	    {"cuMemcpyDtoH_v2", "cuMemcpyDtoH"},
	    {"cuMemAlloc_v2", "cuMemAlloc"},
	    {"cuMemFree_v2", "cuMemFree"},
	};

	for (size_t i = 0; i < ARRAY_SIZE(forms); i++)
		if (!strcmp(symbol, forms[i][0]))
			return forms[i][1];
	return symbol;
}

/* What the trace calls a memcpy of gt's copy_kind "HtoD" from "pageable" to "device". */
static void memcpy_name(json_t *g, char *out, size_t size)
{
	static const char *const kinds[][2] = {
	    {"pageable", "Pageable"}, {"pinned", "Pinned"}, {"device", "Device"}};
	const char *src = gtlog_str(g, "src_kind"), *dst = gtlog_str(g, "dst_kind");

	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		src = strcmp(src, kinds[i][0]) ? src : kinds[i][1];
		dst = strcmp(dst, kinds[i][0]) ? dst : kinds[i][1];
	}
	snprintf(out, size, "Memcpy %s (%s -> %s)", gtlog_str(g, "copy_kind"), src, dst);
}

static bool dim3_is(const json_t *a, const json_t *b)
{
	for (size_t i = 0; i < 3; i++)
		if (int_of(json_array_get(a, i)) != int_of(json_array_get(b, i)) ||
		    int_of(json_array_get(a, i)) < 0)
			return false;
	return true;
}

/*
 * A kernel's name in the trace: demangled (as c++filt writes it) when the program has a C++
 * runtime (cxx); a C program may have none, and then the raw name is right too.
 */
/* raw demangled by binutils' c++filt (raw itself if it is no C++ name), in out. */
static const char *cxx_name(const char *raw, char *out, size_t size)
{
	const char *filt[] = {"/usr/bin/c++filt", raw, NULL};
	struct proc_result res;

	snprintf(out, size, "%s", raw);
	if (!strncmp(raw, "_Z", 2) && proc_run(filt, NULL, 10, &res) == 0) {
		if (res.status == 0)
			snprintf(out, size, "%.*s", (int)strcspn(res.out, "\n"), res.out);
		proc_result_free(&res);
	}
	return out;
}

static void check_kernel_name(const char *got, const char *raw, bool cxx)
{
	static const char *const demangled[][2] = {
	    {"_Z5scaleIfEvPT_i", "void scale<float>(float*, int)"},
	    {"_Z4slowPf", "slow(float*)"},
	    {"_Z4fillPffi", "fill(float*, float, int)"},
	    {"_Z5scaleIdEvPT_S0_i", "void scale<double>(double*, double, int)"},
	    {"_Z5scaleIfEvPT_S0_i", "void scale<float>(float*, float, int)"},
	    {"_Z4reluPfi", "relu(float*, int)"},
	    {"_Z7vec_addPfPKfS1_i", "vec_add(float*, float const*, float const*, int)"},
	};
	char filtered[1024];
	const char *want = raw;

	for (size_t i = 0; i < ARRAY_SIZE(demangled); i++)
		if (!strcmp(raw, demangled[i][0]))
			want = demangled[i][1];
	if (!cxx && !strcmp(got, raw))
		return;
	/* names of libraries' kernels (cuBLAS's): binutils' demangler says what they are */
	if (want == raw)
		want = cxx_name(raw, filtered, sizeof(filtered));
	ASSERT_STR_EQ(got, want);
}

/* The GPU event ev is the gt operation g: kind, name, dimensions, bytes, device, stream. */
static void check_gpu_fields(const json_t *ev, json_t *g, bool cxx)
{
	const char *kind = gtlog_str(g, "kind");
	char name[256];

	ASSERT_EQ(e2e_arg_int(ev, "device"), gtlog_int(g, "device"));
	ASSERT_EQ(e2e_arg_int(ev, "stream"), gtlog_int(g, "stream"));
	ASSERT_EQ(int_of(json_object_get(ev, "pid")), gtlog_int(g, "device"));
	ASSERT_EQ(int_of(json_object_get(ev, "tid")), gtlog_int(g, "stream"));
	if (!strcmp(kind, "kernel")) {
		ASSERT_STR_EQ(trace_str(ev, "cat"), "kernel");
		check_kernel_name(trace_str(ev, "name"), gtlog_str(g, "name"), cxx);
		ASSERT(dim3_is(arg(ev, "grid"), json_object_get(g, "grid")));
		ASSERT(dim3_is(arg(ev, "block"), json_object_get(g, "block")));
		ASSERT_EQ(e2e_arg_int(ev, "shared memory"), gtlog_int(g, "shared"));
		return;
	}
	ASSERT_EQ(e2e_arg_int(ev, "bytes"), gtlog_int(g, "bytes"));
	if (!strcmp(kind, "memcpy")) {
		memcpy_name(g, name, sizeof(name));
		ASSERT_STR_EQ(trace_str(ev, "cat"), "gpu_memcpy");
		ASSERT_STR_EQ(trace_str(ev, "name"), name);
	} else {
		ASSERT_STR_EQ(trace_str(ev, "cat"), "gpu_memset");
	}
}

/* Trace times are ns since baseTimeNanoseconds, written as µs with 3 decimals: exact. */
static void check_times(const struct trace *t, const json_t *ev, json_t *g)
{
	long long base = int_of(json_object_get(t->root, "baseTimeNanoseconds"));

	ASSERT_EQ(ts_ns(ev, "ts") + base, gtlog_int(g, "start"));
	ASSERT_EQ(ts_ns(ev, "dur"), gtlog_int(g, "end") - gtlog_int(g, "start"));
}

/*
 * The GPU events of t that are gt operation g: its correlation and its start (a CUDA graph's
 * operations share their launch's correlation), and how many there are.
 */
static int find_gpu(const struct trace *t, json_t *g, json_t **found)
{
	long long base = int_of(json_object_get(t->root, "baseTimeNanoseconds"));
	size_t i;
	json_t *ev;
	int n = 0;

	json_array_foreach(t->events, i, ev)
	{
		if (is_gpu(ev) && e2e_arg_int(ev, "correlation") == gtlog_int(g, "corr") &&
		    ts_ns(ev, "ts") + base == gtlog_int(g, "start")) {
			*found = ev;
			n++;
		}
	}
	return n;
}

/*
 * The GPU event for gt operation g is in t exactly once, as g says, with exactly one launch
 * event (the gt call with its correlation: name, cbid, thread) that starts no later than it, and
 * one ac2g flow pair between the two.
 */
static void check_linked(const struct trace *t, json_t *gt, json_t *g, bool cxx)
{
	long long corr = gtlog_int(g, "corr");
	json_t *ev = NULL, *api = NULL, *s = NULL, *f = NULL, *call = gt_api(gt, corr);

	ASSERT_MSG(find_gpu(t, g, &ev) == 1, "GPU work of correlation %lld", corr);
	check_gpu_fields(ev, g, cxx);
	check_times(t, ev, g);
	ASSERT_MSG(call, "no call with correlation %lld in the log", corr);
	ASSERT_MSG(find_corr(t, corr, is_api, &api) == 1, "launch of correlation %lld", corr);
	ASSERT_STR_EQ(trace_str(api, "name"), public_name(gtlog_str(call, "name")));
	ASSERT_STR_EQ(trace_str(api, "cat"), !strcmp(gtlog_str(call, "domain"), "driver")
						 ? "cuda_driver"
						 : "cuda_runtime");
	ASSERT_EQ(e2e_arg_int(api, "cbid"), gtlog_int(call, "cbid"));
	ASSERT_EQ(int_of(json_object_get(api, "tid")), gtlog_int(call, "tid"));
	ASSERT_LE(ts_ns(api, "ts"), ts_ns(ev, "ts"));
	ASSERT_EQ(find_flow(t, corr, "s", &s), 1);
	ASSERT_EQ(find_flow(t, corr, "f", &f), 1);
	ASSERT(json_equal(json_object_get(s, "tid"), json_object_get(api, "tid")));
	ASSERT(json_equal(json_object_get(f, "tid"), json_object_get(ev, "tid")));
	ASSERT(json_equal(json_object_get(f, "pid"), json_object_get(ev, "pid")));
}

/* gt operations that pass `want` are each linked in t; t has no other GPU work. */
static int check_gpu_work(const struct trace *t, json_t *gt, bool (*want)(json_t *g, void *arg),
			  void *arg, bool cxx)
{
	size_t i;
	json_t *g;
	int n = 0;

	ASSERT_MSG(gt, "no ground-truth log");
	json_array_foreach(gt, i, g)
	{
		if (strcmp(gtlog_str(g, "type"), "gpu") || !want(g, arg))
			continue;
		check_linked(t, gt, g, cxx);
		n++;
	}
	ASSERT_EQ(e2e_count(t, "kernel", NULL) + e2e_count(t, "gpu_memcpy", NULL) +
		      e2e_count(t, "gpu_memset", NULL),
		  n);
	return n;
}

/* steps-app: the step of a GPU operation, from its arguments (see steps-app.c). */
static int steps_app_step(json_t *g, int late_step)
{
	const char *kind = gtlog_str(g, "kind");

	if (!strcmp(kind, "kernel") && strstr(gtlog_str(g, "name"), "slow"))
		return late_step;
	if (!strcmp(kind, "kernel"))
		return (int)int_of(json_array_get(json_object_get(g, "grid"), 0)) - 1;
	if (!strcmp(kind, "memcpy"))
		return (int)(gtlog_int(g, "bytes") / 256) - 1;
	return (int)(gtlog_int(g, "bytes") / 128) - 1;
}

struct steps {
	int first, last, late;
};

static bool in_steps(json_t *g, void *arg)
{
	const struct steps *s = arg;
	int k = steps_app_step(g, s->late);

	return k >= s->first && k <= s->last;
}

/* steps-app: the step of a call, from its arguments; -1 for calls that do not say. */
static int steps_app_call_step(json_t *call)
{
	static const struct {
		const char *name, *key;
		long long unit;
	} calls[] = {
	    {"cudaMalloc", "bytes", 4096},     {"cudaMemcpy", "bytes", 256},
	    {"cudaMemcpyAsync", "bytes", 256}, {"cudaMemsetAsync", "bytes", 128},
	    {"cudaLaunchKernel", "grid", 1},
	};
	json_t *args = json_object_get(call, "args");

	if (strstr(gtlog_str(call, "symbol"), "slow"))
		return -1; /* -l's launch: its step is not in its arguments */
	for (size_t i = 0; i < ARRAY_SIZE(calls); i++) {
		json_t *v = json_object_get(args, calls[i].key);

		if (strcmp(gtlog_str(call, "name"), calls[i].name))
			continue;
		if (json_is_array(v))
			v = json_array_get(v, 0);
		return int_of(v) > 0 ? (int)(int_of(v) / calls[i].unit) - 1 : -1;
	}
	return -1;
}

/*
 * steps-app: each call of steps [first, last] whose arguments say its step is in t exactly
 * once (name, cbid, result, thread), and no API event of t is a call of another step.
 */
static void check_steps_calls(const struct trace *t, json_t *gt, const struct steps *s)
{
	size_t i;
	json_t *e, *ev = NULL;
	int n = 0;

	json_array_foreach(gt, i, e)
	{
		int k = steps_app_call_step(e);

		if (strcmp(gtlog_str(e, "type"), "api") || k < s->first || k > s->last)
			continue;
		ASSERT_EQ(find_corr(t, gtlog_int(e, "corr"), is_api, &ev), 1);
		ASSERT_STR_EQ(trace_str(ev, "name"), gtlog_str(e, "name"));
		ASSERT_EQ(e2e_arg_int(ev, "cbid"), gtlog_int(e, "cbid"));
		ASSERT_EQ(e2e_arg_int(ev, "result"), gtlog_int(e, "result"));
		ASSERT_EQ(int_of(json_object_get(ev, "tid")), gtlog_int(e, "tid"));
		n++;
	}
	ASSERT_GT(n, 0);
	json_array_foreach(t->events, i, ev)
	{
		json_t *call = is_api(ev) ? gt_api(gt, e2e_arg_int(ev, "correlation")) : NULL;
		int k = call ? steps_app_call_step(call) : -1;

		ASSERT_MSG(!is_api(ev) || call, "API event without its call in the log");
		ASSERT_MSG(k < 0 || (k >= s->first && k <= s->last), "a call of step %d", k);
	}
}

static bool every_op(json_t *g, void *arg)
{
	(void)g;
	(void)arg;
	return true;
}

/* No host event is written twice: every API event is CUPTI's (a correlation), each once. */
static void check_api_once(const struct trace *t)
{
	size_t i;
	json_t *ev, *other;

	json_array_foreach(t->events, i, ev)
	{
		if (!is_api(ev))
			continue;
		ASSERT_GT(e2e_arg_int(ev, "correlation"), 0);
		ASSERT_EQ(find_corr(t, e2e_arg_int(ev, "correlation"), is_api, &other), 1);
	}
}

/*
 * deviceProperties from the simulated runtime (FAKEGPU_DEVICES=1: an H200), and none of the
 * calls libgprof made to learn them in the trace: the test programs make none of their own.
 */
static void check_devices(const struct trace *t)
{
	static const char *const ours[] = {"cudaGetDeviceProperties", "cudaGetDeviceCount",
					   "cudaRuntimeGetVersion", "cudaDriverGetVersion"};
	json_t *dev = json_array_get(json_object_get(t->root, "deviceProperties"), 0);
	size_t i;
	json_t *ev;

	ASSERT_EQ(json_array_size(json_object_get(t->root, "deviceProperties")), 1);
	ASSERT_STR_EQ(trace_str(dev, "name"), "NVIDIA H200");
	ASSERT_EQ(int_of(json_object_get(dev, "numSms")), 132);
	ASSERT_EQ(int_of(json_object_get(t->root, "cuda_runtime_version")), 13000);
	json_array_foreach(t->events, i, ev)
	{
		for (size_t k = 0; k < ARRAY_SIZE(ours); k++)
			ASSERT_MSG(strcmp(trace_str(ev, "name"), ours[k]), "%s", ours[k]);
	}
}

static json_t *gprof_meta(const struct trace *t, const char *key)
{
	return json_object_get(json_object_get(t->root, "gprof"), key);
}

static const char *cupti_status(const struct trace *t)
{
	return trace_str(gprof_meta(t, "cupti"), "status");
}

/* A warning line of the trace's metadata that contains `text`, or NULL. */
static const char *warning_with(const struct trace *t, const char *text)
{
	size_t i;
	json_t *w;

	json_array_foreach(gprof_meta(t, "warnings"), i, w)
	{
		if (json_is_string(w) && strstr(json_string_value(w), text))
			return json_string_value(w);
	}
	return NULL;
}

/*
 * argv with env (e2e_run's extra) and the simulated CUPTI, once without libgprof and once
 * under it: it prints the same and exits alike, and libgprof writes one trace.
 */
static void run_beside_plain(struct e2e_run *with, struct e2e_run *without, const char *const *argv,
			     const char *const *env)
{
	e2e_run(without, argv, e2e_cupti(true), env, false);
	e2e_run(with, argv, e2e_cupti(true), env, true);
	ASSERT_EQ(with->res.status, without->res.status);
	ASSERT_STR_EQ(with->res.out, without->res.out);
	ASSERT_EQ(with->n_traces, 1);
}

/* gprof-summary run on r's first trace file, its output in res; the run itself must work. */
static void summary_tool(const struct e2e_run *r, struct proc_result *res)
{
	char path[PATH_MAX * 2];
	const char *tool[] = {proc_build_path("gprof-summary"), path, NULL};

	snprintf(path, sizeof(path), "%s/%s", r->dir, trace_str(r->traces[0].root, "traceName"));
	ASSERT(proc_run(tool, NULL, 60, res) == 0);
}

TEST(e2e_collector_default_schedule)
{
	const char *argv[] = {proc_build_path("test/apps/steps-app"), "-s", "10", NULL};
	struct steps steps = {2, 4, -1};
	struct e2e_run r;
	char lib[PATH_MAX];

	e2e_run_ok(&r, argv, true, NULL, 1);
	/* Per step one kernel, two copies and a memset (steps-app.c), all of steps 2-4. */
	ASSERT_EQ(check_gpu_work(&r.traces[0], r.gt, in_steps, &steps, false), 12);
	check_api_once(&r.traces[0]);
	check_steps_calls(&r.traces[0], r.gt, &steps);
	ASSERT_STR_EQ(cupti_status(&r.traces[0]), "in use");
	ASSERT(realpath(e2e_cupti(true), lib));
	ASSERT_STR_EQ(trace_str(gprof_meta(&r.traces[0], "cupti"), "library"), lib);
	/* What was in use at the opening, then MEMORY2: 3 cudaMalloc and 3 cudaFree in it. */
	ASSERT_EQ(e2e_check_memory(&r.traces[0], r.gt), 7);
	check_devices(&r.traces[0]);
	ASSERT(!strstr(r.res.err, "CUPTI"));
	e2e_free(&r);
}

/* Where a step began or ended (its ProfilerStep span), in ns of CLOCK_REALTIME. */
static long long step_time_ns(const struct trace *t, unsigned step, bool end)
{
	long long base = int_of(json_object_get(t->root, "baseTimeNanoseconds"));
	char name[32];
	size_t i;
	json_t *ev;

	snprintf(name, sizeof(name), "ProfilerStep#%u", step);
	json_array_foreach(t->events, i, ev)
	{
		if (!strcmp(trace_str(ev, "name"), name))
			return base + ts_ns(ev, "ts") + (end ? ts_ns(ev, "dur") : 0);
	}
	FAIL("no %s", name);
}

static json_t *gt_slow_kernel(json_t *gt)
{
	size_t i;
	json_t *g;

	json_array_foreach(gt, i, g)
	{
		if (!strcmp(gtlog_str(g, "type"), "gpu") && strstr(gtlog_str(g, "name"), "slow"))
			return g;
	}
	FAIL("no slow kernel in the log");
}

/*
 * A kernel launched in the last active step that ends after the next step marker is in the
 * trace; one launched in the warmup step that ends inside the window is not.
 */
TEST(e2e_collector_late_kernel)
{
	const char *env[] = {"FAKEGPU_KERNEL_TABLE=slow=300000000", NULL}; /* 30 ms at 0.1 */
	const char *const late[] = {"4", "1"};

	for (size_t c = 0; c < ARRAY_SIZE(late); c++) {
		const char *argv[] = {
		    proc_build_path("test/apps/steps-app"), "-s", "8", "-l", late[c], NULL};
		struct steps steps = {2, 4, atoi(late[c])};
		long long marker;
		json_t *slow;
		struct e2e_run r;

		e2e_run_ok(&r, argv, true, env, 1);
		slow = gt_slow_kernel(r.gt);
		/* The point: it ends after the next marker (the window's end; its beginning). */
		marker = steps.late == 4 ? step_time_ns(&r.traces[0], 4, true)
					 : step_time_ns(&r.traces[0], 2, false);
		ASSERT_GT(gtlog_int(slow, "end"), marker);
		ASSERT_EQ(check_gpu_work(&r.traces[0], r.gt, in_steps, &steps, false),
			  steps.late == 4 ? 13 : 12);
		e2e_free(&r);
	}
}

/*
 * The union of gt's GPU operations within [lo, hi), in ns: whatever launched them, or with
 * `owned`, only those of its window (whose correlation its GPU events have).
 */
static long long gt_busy_ns(json_t *gt, long long lo, long long hi, const struct trace *owned)
{
	long long total = 0, cur_b = 0, cur_e = 0;
	json_t *spans = json_array(), *g;
	size_t i;

	json_array_foreach(gt, i, g)
	{
		long long b = gtlog_int(g, "start"), e = gtlog_int(g, "end");

		json_t *ev;

		if (strcmp(gtlog_str(g, "type"), "gpu") || e <= lo || b >= hi ||
		    (owned && !find_corr(owned, gtlog_int(g, "corr"), is_gpu, &ev)))
			continue;
		json_array_append_new(spans, json_pack("[II]", b > lo ? b : lo, e < hi ? e : hi));
	}
	/* few spans: a selection sort by start keeps this short */
	while (json_array_size(spans)) {
		size_t first = 0;

		for (i = 1; i < json_array_size(spans); i++)
			if (int_of(json_array_get(json_array_get(spans, i), 0)) <
			    int_of(json_array_get(json_array_get(spans, first), 0)))
				first = i;
		long long b = int_of(json_array_get(json_array_get(spans, first), 0));
		long long e = int_of(json_array_get(json_array_get(spans, first), 1));

		if (b > cur_e) {
			total += cur_e - cur_b;
			cur_b = b, cur_e = e;
		} else if (e > cur_e) {
			cur_e = e;
		}
		json_array_remove(spans, first);
	}
	json_decref(spans);
	return total + cur_e - cur_b;
}

/* The time in ns that `label` ("busy ", "busy after the last step: ") gives in summary text. */
static double summary_time_ns(const char *text, const char *label)
{
	const char *p = strstr(text, label), *paren;
	char unit[4] = "";
	double v = -1;

	ASSERT_MSG(p, "no \"%s\" in: %s", label, text);
	p += strlen(label);
	paren = strstr(p, "% of step time (");
	if (paren && paren - p < 8)
		p = paren + strlen("% of step time (");
	ASSERT_MSG(sscanf(p, "%lf %3s", &v, unit) == 2, "%s", p);
	return v * (!strncmp(unit, "ms", 2)   ? 1e6
		    : !strncmp(unit, "us", 2) ? 1e3
		    : !strncmp(unit, "s", 1)  ? 1e9
					      : 1);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * Bounds of steps 2-4's times from steps-app's marks in gt (each read just before and after
 * nvtxMarkA, inside which libgprof takes the step's time): lo[i] and hi[i] bound the i-th
 * shortest step, since each step lies in [its lo, its hi].
 */
static void gt_step_bounds(json_t *gt, double lo[3], double hi[3])
{
	long long before[6] = {0}, after[6] = {0};
	size_t i;
	json_t *g;

	json_array_foreach(gt, i, g)
	{
		long long k = gtlog_int(g, "step");

		if (!strcmp(gtlog_str(g, "type"), "mark") && k >= 2 && k <= 5) {
			before[k] = gtlog_int(g, "before");
			after[k] = gtlog_int(g, "after");
		}
	}
	for (int k = 2; k <= 4; k++) {
		ASSERT_MSG(before[k] && before[k + 1], "no mark of step %d or %d", k, k + 1);
		lo[k - 2] = (double)(before[k + 1] - after[k]);
		hi[k - 2] = (double)(after[k + 1] - before[k]);
	}
	qsort(lo, 3, sizeof(*lo), cmp_double);
	qsort(hi, 3, sizeof(*hi), cmp_double);
}

/*
 * The summary's step statistics (default schedule: steps 2-4) within what the ground truth
 * allows (lo[i], hi[i] bound the i-th shortest step): mean, median, min, p90 (nearest rank: the
 * largest of three), max; 1 us for the printed digits.
 */
static void check_step_stats(const char *text, const double lo[3], const double hi[3])
{
	static const char *const labels[] = {"min ", "median ", "p90 ", "max "};
	static const int rank[] = {0, 1, 2, 2};
	double v;

	v = summary_time_ns(text, "mean step ");
	ASSERT_MSG(v >= (lo[0] + lo[1] + lo[2]) / 3 - 1000 &&
		       v <= (hi[0] + hi[1] + hi[2]) / 3 + 1000,
		   "mean %.0f ns: %s", v, text);
	for (size_t i = 0; i < ARRAY_SIZE(labels); i++) {
		v = summary_time_ns(text, labels[i]);
		ASSERT_MSG(v >= lo[rank[i]] - 1000 && v <= hi[rank[i]] + 1000,
			   "%s%.0f ns, not in [%.0f, %.0f]: %s", labels[i], v, lo[rank[i]],
			   hi[rank[i]], text);
	}
}

/*
 * GPU busy time is the union of the device's GPU intervals within the steps' span, whatever
 * step launched them (issue #15): a kernel launched in the warmup step that runs on into the
 * window (the CPU ahead of the GPU) counts, and one launched in the last step that runs past it
 * is said as busy after the last step. The library's summary and gprof-summary's reading of the
 * trace say what the ground-truth log gives.
 */
TEST(e2e_collector_busy_cpu_ahead)
{
	/* 30 ms at 0.1: far longer than a step on the CPU, even under a sanitizer on a loaded
	 * machine (10 ms was not, once under ASan with two other test runs beside it) */
	const char *env[] = {"FAKEGPU_KERNEL_TABLE=slow=300000000", NULL};
	const char *const late[] = {"1", "4"};

	for (size_t c = 0; c < ARRAY_SIZE(late); c++) {
		const char *argv[] = {
		    proc_build_path("test/apps/steps-app"), "-s", "8", "-l", late[c], NULL};
		struct proc_result again;
		double step_lo[3], step_hi[3];
		long long lo, hi, want;
		struct e2e_run r;

		e2e_run_ok(&r, argv, true, env, 1);
		lo = step_time_ns(&r.traces[0], 2, false);
		hi = step_time_ns(&r.traces[0], 4, true);
		want = gt_busy_ns(r.gt, lo, hi, NULL);
		summary_tool(&r, &again);
		ASSERT_EQ(again.status, 0);
		for (int k = 0; k < 2; k++) {
			const char *text = k ? again.out : r.res.err;

			ASSERT_LE(fabs(summary_time_ns(text, "busy ") - (double)want),
				  2000 + 0.001 * (double)want);
			if (!strcmp(late[c], "4"))
				ASSERT_LE(
				    fabs(summary_time_ns(text, "busy after the last step: ") -
					 (double)gt_busy_ns(r.gt, hi, LLONG_MAX, &r.traces[0])),
				    2000 + 0.001 * (double)want);
		}
		/* the warmup kernel's part in the window is most of it */
		if (!strcmp(late[c], "1"))
			ASSERT_GT(want, (hi - lo) / 2);
		gt_step_bounds(r.gt, step_lo, step_hi);
		check_step_stats(r.res.err, step_lo, step_hi);
		proc_result_free(&again);
		e2e_free(&r);
	}
}

/*
 * Bounds of steps 2-4's times of make demo's program from its calls in gt: each step's first
 * call is a cudaMemcpyAsync followed by a launch (train.cu), its marker comes after the last
 * call of the step before (the loop's calls; libgprof's own at the markers are left out), so step k lies within (last end of k - first start of k,
 * first start of k+1 - last end of k-1). Sorted, as gt_step_bounds.
 */
static void demo_step_bounds(json_t *gt, double lo[3], double hi[3])
{
	long long first[8] = {0}, last[8] = {0};
	json_t *calls = json_array(), *g, *next;
	size_t i;
	int step = -1;

	json_array_foreach(gt, i, g)
	{
		const char *name = gtlog_str(g, "name");

		/* the loop's calls (not libgprof's own: cudaMemGetInfo, cudaGetDeviceProperties) */
		if (!strcmp(gtlog_str(g, "type"), "api") &&
		    (!strncmp(name, "cudaMemcpy", 10) || !strcmp(name, "cudaLaunchKernel") ||
		     !strcmp(name, "cudaMemsetAsync") || !strcmp(name, "cudaStreamSynchronize")))
			json_array_append(calls, g);
	}
	json_array_foreach(calls, i, g) /* in the order of their records: by their ends */
	{
		next = json_array_get(calls, i + 1);
		if (!strcmp(gtlog_str(g, "name"), "cudaMemcpyAsync") && next &&
		    !strcmp(gtlog_str(next, "name"), "cudaLaunchKernel") && step < 7)
			first[++step] = gtlog_int(g, "start");
		if (step >= 0)
			last[step] = gtlog_int(g, "end");
	}
	json_decref(calls);
	ASSERT_MSG(step >= 5, "%d steps", step + 1);
	for (int k = 2; k <= 4; k++) {
		lo[k - 2] = (double)(last[k] - first[k]);
		hi[k - 2] = (double)(first[k + 1] - last[k - 1]);
	}
	qsort(lo, 3, sizeof(*lo), cmp_double);
	qsort(hi, 3, sizeof(*hi), cmp_double);
}

/* The run's one trace, its counter and its summary's "X at the start": the ground truth at step k. */
static void check_start_memory(struct e2e_run *r, unsigned k)
{
	char start[64];
	long long in_use;

	ASSERT_EQ(r->res.status, 0);
	ASSERT_EQ(r->n_traces, 1);
	in_use = e2e_gt_in_use(r->gt, step_time_ns(&r->traces[0], k, false));
	ASSERT_GE(in_use, 768 << 10);
	e2e_check_memory(&r->traces[0], r->gt);
	snprintf(start, sizeof(start), ", %.2f KiB at the start", (double)in_use / 1024);
	ASSERT_STR_CONTAINS(r->res.err, start);
}

/*
 * make demo's program (scripts/demo/train.cu, 768 KiB allocated before its loop) under the
 * default schedule: the summary's busy time, the memory in use at the window's start and its
 * step statistics are what the ground-truth log gives (issue #15).
 */
TEST(e2e_collector_demo_summary)
{
	const char *argv[] = {proc_build_path("demo/train-sim"), "20", NULL};
	const char *all[] = {"GPROF_SCHEDULE=all", NULL};
	long long lo, hi;
	double lo_step[3], hi_step[3];
	struct e2e_run r;

	if (access(argv[0], X_OK))
		SKIP("no %s (nvcc missing)", argv[0]);
	e2e_run(&r, argv, e2e_cupti(true), NULL, true);
	check_start_memory(&r, 2);
	lo = step_time_ns(&r.traces[0], 2, false);
	hi = step_time_ns(&r.traces[0], 4, true);
	ASSERT_LE(
	    fabs(summary_time_ns(r.res.err, "busy ") - (double)gt_busy_ns(r.gt, lo, hi, NULL)),
	    2000);
	demo_step_bounds(r.gt, lo_step, hi_step);
	check_step_stats(r.res.err, lo_step, hi_step);
	e2e_free(&r);
	/*
	 * Under `all` the window opens at the first CUDA call, before the allocations: what was in
	 * use at the start is what they left at step 0, not the counter's first point (issue #28).
	 */
	e2e_run(&r, argv, e2e_cupti(true), all, true);
	check_start_memory(&r, 0);
	e2e_free(&r);
}

/*
 * What a window's counter says its stream-ordered pools hold at ns: for each pool of the
 * ground truth with a reported operation (an allocation, a free, or the program's trim,
 * destroy) in [from, ns], what the latest said it held; -1 before any.
 */
static long long gt_pools_reported(json_t *gt, long long from, long long ns)
{
	json_t *latest = json_object(), *g, *v;
	long long total = -1;
	const char *key;
	size_t i;

	json_array_foreach(gt, i, g)
	{
		bool memory = !strcmp(gtlog_str(g, "type"), "memory");
		long long t = gtlog_int(g, "time");
		char id[24];

		if (!(memory || (!strcmp(gtlog_str(g, "type"), "pool") &&
				 strcmp(gtlog_str(g, "op"), "release"))) ||
		    gtlog_int(g, "pool") < 0 || t < from || t > ns)
			continue;
		snprintf(id, sizeof(id), "%lld", gtlog_int(g, "pool"));
		v = json_object_get(latest, id);
		if (!v || t >= gtlog_int(v, "time"))
			json_object_set(latest, id, g);
	}
	json_object_foreach(latest, key, v)
	{
		const char *size =
		    !strcmp(gtlog_str(v, "type"), "memory") ? "pool_reserved" : "reserved";

		total = (total < 0 ? 0 : total) + gtlog_int(v, size);
	}
	json_decref(latest);
	return total;
}

/*
 * pool-app (cudaMallocAsync from the default pool, which keeps what it reserves, and from one
 * of its own, which gives it back at each synchronisation) on NVIDIA's runtime, shared and
 * static, under the default schedule and `all`: the counter's "allocated" is what the
 * program's allocations hold, stream-ordered ones included (the default pool's unused reserve
 * at the opening is not), and its "pool reserved" what the pools' latest records said they
 * hold, both as the ground truth has them; the summary names the pools' peak, and
 * gprof-summary reads it from the file (issue #27).
 */
TEST(e2e_collector_stream_ordered_pools)
{
	const char *const apps[] = {"test/apps/pool-real", "test/apps/pool-real-static"};
	const char *all[] = {"GPROF_SCHEDULE=all", NULL};

	for (size_t a = 0; a < 2 * ARRAY_SIZE(apps); a++) {
		const char *argv[] = {proc_build_path(apps[a / 2]), "6", NULL};
		long long base, from = -1, peak = 0;
		char line[96];
		struct proc_result again;
		struct e2e_run r;
		size_t i;
		json_t *ev;
		int pooled = 0;

		e2e_need_real_runtime(argv[0]);
		e2e_run_ok(&r, argv, true, a % 2 ? all : NULL, 1);
		e2e_check_memory(&r.traces[0], r.gt);
		base = json_integer_value(json_object_get(r.traces[0].root, "baseTimeNanoseconds"));
		json_array_foreach(r.traces[0].events, i, ev)
		{
			long long ts = base + ts_ns(ev, "ts"), want;
			json_t *reserved =
			    json_object_get(json_object_get(ev, "args"), "pool reserved");

			if (strcmp(trace_str(ev, "cat"), "gpu_memory"))
				continue;
			from = from < 0 ? ts : from; /* the opening's point comes first */
			want = gt_pools_reported(r.gt, from, ts);
			ASSERT_EQ(reserved ? json_integer_value(reserved) : -1, want);
			pooled += want > 0;
			peak = want > peak ? want : peak;
		}
		ASSERT_GT(pooled, 0);
		snprintf(line, sizeof(line), "; stream-ordered pools: peak %.2f MiB reserved",
			 (double)peak / (1 << 20));
		ASSERT_STR_CONTAINS(r.res.err, line);
		/* gprof-summary reads the same from the file */
		summary_tool(&r, &again);
		ASSERT_MSG(again.status == 0 && strstr(again.out, line), "%s", again.out);
		proc_result_free(&again);
		e2e_free(&r);
	}
}

/*
 * A CUPTI that cannot enable the kinds that only add to the rest (MEMORY_POOL; SYNCHRONIZATION
 * and CUDA_EVENT under `all`): one line each, once, and the rest is recorded as ever.
 */
TEST(e2e_collector_optional_kinds_refused)
{
	const char *argv[] = {proc_build_path("test/apps/pool-real"), "6", NULL};
	const char *env[] = {"GPROF_ACTIVITIES=all", "FAKEGPU_CUPTI_ENABLE_FAIL=36,38,50", NULL};
	struct e2e_run r;

	e2e_need_real_runtime(argv[0]);
	e2e_run_ok(&r, argv, true, env, 1);
	ASSERT_EQ(text_lines(r.res.err,
			     "gprof: collector: synchronisations (cuda_sync) are not recorded: "
			     "cuptiActivityEnable(kind 38) failed"),
		  1);
	ASSERT_EQ(text_lines(r.res.err,
			     "gprof: collector: what trimming or destroying a stream-ordered "
			     "pool leaves of it is not recorded: cuptiActivityEnable(kind 50)"),
		  1);
	ASSERT_EQ(text_count(r.res.err, "not recorded"), 2);
	ASSERT_GT(e2e_count(&r.traces[0], "gpu_memset", NULL), 0);
	ASSERT_EQ(e2e_count(&r.traces[0], "cuda_sync", NULL), 0);
	e2e_check_memory(&r.traces[0], r.gt);
	e2e_free(&r);
}

/* Whether a device allocation or free of the log was made during the first call named `name`. */
static bool gt_memory_during_first(json_t *gt, const char *name)
{
	json_t *calls = gtlog_sorted(gt, "{\"type\":\"api\"}", "start");
	json_t *ops = gtlog_filter(gt, "{\"type\":\"memory\",\"memory_kind\":\"device\"}");
	long long start = -1, end = -1;
	bool during = false;
	size_t i;
	json_t *g;

	json_array_foreach(calls, i, g)
	{
		if (start < 0 && !strcmp(gtlog_str(g, "name"), name)) {
			start = gtlog_int(g, "start");
			end = gtlog_int(g, "end");
		}
	}
	json_array_foreach(ops, i, g) during |=
	    start <= gtlog_int(g, "time") && gtlog_int(g, "time") <= end;
	json_decref(calls);
	json_decref(ops);
	return during;
}

/*
 * The opening's figure when another thread allocates or frees while it is read (the reading
 * thread stopped inside cudaMemGetInfo): the counter still equals the memory the program holds.
 */
TEST(e2e_collector_memory_read_while_allocating)
{
	const char *argv[] = {proc_build_path("test/apps/rt-app"), "-s", "8", "-t", "2", NULL};
	const char *env[] = {"FAKEGPU_MEMINFO_RACE=1", NULL};
	struct e2e_run r;

	e2e_run_ok(&r, argv, true, env, 1);
	ASSERT(gt_memory_during_first(r.gt, "cudaMemGetInfo"));
	e2e_check_memory(&r.traces[0], r.gt);
	e2e_free(&r);
}

/* Driver-API launches (the Triton pattern: no hook sees them) with their cuda_driver events. */
TEST(e2e_collector_driver_api)
{
	const char *argv[] = {proc_build_path("test/apps/drv-app"), "3", NULL};
	const char *env[] = {"GPROF_SCHEDULE=all", NULL};
	struct e2e_run r;

	e2e_run_ok(&r, argv, true, env, 1);
	ASSERT_STR_CONTAINS(r.res.out, "drv-app: 3 steps ok");
	/* 2 kernels per step and the two copies (drv-app.c), all after cuInit opened the window. */
	ASSERT_EQ(check_gpu_work(&r.traces[0], r.gt, every_op, NULL, false), 8);
	ASSERT_EQ(e2e_count(&r.traces[0], "cuda_runtime", NULL), 0);
	ASSERT_GE(e2e_count(&r.traces[0], "cuda_driver", NULL), 8);
	check_api_once(&r.traces[0]);
	e2e_free(&r);
}

/* nvcc 13's <<<>>> (__cudaLaunchKernel, and its _ptsz form): every launch, copy and memset. */
TEST(e2e_collector_nvcc_app)
{
	const char *const apps[] = {proc_build_path("test/apps/nvcc-app"),
				    proc_build_path("test/apps/nvcc-app-pt")};
	const char *env[] = {"GPROF_SCHEDULE=all", NULL};

	if (access(apps[0], X_OK) != 0)
		SKIP("no nvcc-app (nvcc missing)");
	for (size_t a = 0; a < ARRAY_SIZE(apps); a++) {
		const char *argv[] = {apps[a], NULL};
		struct e2e_run r;

		e2e_run_ok(&r, argv, true, env, 1);
		/* Per step 3 kernels, 3 copies, 1 memset (nvcc-app.cu), 3 steps. */
		ASSERT_EQ(check_gpu_work(&r.traces[0], r.gt, every_op, NULL, true), 21);
		check_api_once(&r.traces[0]);
		check_devices(&r.traces[0]);
		e2e_free(&r);
	}
}

/*
 * argv (a program on NVIDIA's runtime) under libgprof with the default schedule: it prints the
 * same and exits alike (0) with and without libgprof, and writes one trace.
 */
static void run_real(const char *const *argv, struct e2e_run *r)
{
	struct proc_result plain;

	e2e_need_real_runtime(argv[0]);
	ASSERT(proc_run(argv, NULL, 120, &plain) == 0);
	e2e_run(r, argv, e2e_cupti(true), NULL, true);
	ASSERT_EQ(plain.status, 0);
	ASSERT_EQ(r->res.status, plain.status);
	ASSERT_STR_EQ(r->res.out, plain.out);
	ASSERT_EQ(r->n_traces, 1);
	proc_result_free(&plain);
}

/* How many GPU operations of the ground truth gt were launched before g. */
static size_t gpu_ops_before(json_t *g, json_t *gt)
{
	size_t i, before = 0;
	json_t *o;

	json_array_foreach(gt, i, o)
	{
		if (!strcmp(gtlog_str(o, "type"), "gpu") &&
		    gtlog_int(o, "corr") < gtlog_int(g, "corr"))
			before++;
	}
	return before;
}

/* nvcc-app's GPU operations, in launch order, are 7 per step: those of steps 2-4. */
static bool nvcc_app_scheduled(json_t *g, void *gt)
{
	size_t before = gpu_ops_before(g, gt);

	return before / 7 >= 2 && before / 7 <= 4;
}

/*
 * Copies and memsets of 0 bytes on NVIDIA's runtime queue no GPU work: the calls are in the
 * trace, and no line says they lost their GPU record (before, every PyTorch run with cuBLASLt
 * GEMMs said "launches had no GPU record").
 */
TEST(e2e_collector_zero_byte_copies)
{
	const char *argv[] = {proc_build_path("test/apps/zero-app"), "6", NULL};
	struct e2e_run r;

	run_real(argv, &r);
	ASSERT_EQ(gtlog_count(r.gt, "{\"type\":\"gpu\",\"kind\":\"memset\"}") +
		      gtlog_count(r.gt, "{\"type\":\"gpu\",\"kind\":\"memcpy\"}"),
		  0);
	ASSERT_EQ(gtlog_count(r.gt, "{\"type\":\"gpu\",\"kind\":\"kernel\"}"), 6);
	ASSERT_EQ(e2e_count(&r.traces[0], "kernel", NULL), 3);
	ASSERT_EQ(e2e_count(&r.traces[0], "cuda_runtime", "cudaMemsetAsync"), 3);
	ASSERT_EQ(e2e_count(&r.traces[0], "cuda_runtime", "cudaMemcpyAsync"), 3);
	ASSERT_EQ(e2e_count(&r.traces[0], "gpu_memset", NULL) +
		      e2e_count(&r.traces[0], "gpu_memcpy", NULL),
		  0);
	ASSERT_EQ(text_lines(r.res.err, "gprof: collector"), 0);
	e2e_free(&r);
}

/*
 * nvcc-app built three ways on NVIDIA's own runtime, which runs on the simulated driver: the
 * shared libcudart.so.13, the static cudart (nvcc's default), per-thread default streams. The
 * default schedule's steps hold exactly their GPU work, every kernel by its real name linked to
 * its launch; each program prints and exits alike with and without libgprof.
 */
TEST(e2e_collector_real_runtime)
{
	const char *const apps[] = {"test/apps/nvcc-real", "test/apps/nvcc-real-static",
				    "test/apps/nvcc-real-pt"};

	for (size_t a = 0; a < ARRAY_SIZE(apps); a++) {
		const char *argv[] = {proc_build_path(apps[a]), "6", NULL};
		struct e2e_run r;

		run_real(argv, &r);
		ASSERT_EQ(check_gpu_work(&r.traces[0], r.gt, nvcc_app_scheduled, r.gt, true), 21);
		/*
		 * NVIDIA's runtime reports its calls; the driver calls it makes are its own (and
		 * with the static cudart, libgprof asks the driver for the devices: its own calls)
		 */
		ASSERT_EQ(e2e_count(&r.traces[0], "cuda_runtime", "cudaLaunchKernel"), 9);
		ASSERT_EQ(e2e_count(&r.traces[0], "cuda_driver", NULL), 0);
		ASSERT_EQ(json_array_size(json_object_get(r.traces[0].root, "deviceProperties")),
			  1);
		check_api_once(&r.traces[0]);
		/* the 3 allocations before the loop were in use when the window opened */
		ASSERT_EQ(e2e_check_memory(&r.traces[0], r.gt), 1);
		ASSERT_STR_CONTAINS(r.res.err,
				    "peak device memory in use 12.00 KiB, 12.00 KiB at the start");
		e2e_free(&r);
	}
}

/* The API events of a trace, by name. */
static json_t *api_names(const struct trace *t)
{
	json_t *names = json_object(), *ev;
	size_t i;

	json_array_foreach(t->events, i, ev)
	{
		const char *cat = trace_str(ev, "cat"), *name = trace_str(ev, "name");

		if (strcmp(cat, "cuda_runtime") && strcmp(cat, "cuda_driver"))
			continue;
		json_object_set_new(
		    names, name,
		    json_integer(json_integer_value(json_object_get(names, name)) + 1));
	}
	return names;
}

/*
 * GPROF_API_CALLS: by default (lean) the calls that queue no work are left out and counted in
 * gprof.left_out, every other call stays; all keeps them. nvcc-app checks cudaGetLastError
 * once a step.
 */
TEST(e2e_collector_lean_api_calls)
{
	const char *argv[] = {proc_build_path("test/apps/nvcc-real"), "6", NULL};
	const char *all_env[] = {"GPROF_API_CALLS=all", NULL};
	struct e2e_run lean, all;
	json_t *a, *b, *n;
	const char *name;
	long long left = 0;

	run_real(argv, &lean);
	e2e_run(&all, argv, e2e_cupti(true), all_env, true);
	ASSERT_EQ(all.n_traces, 1);
	a = api_names(&all.traces[0]);
	b = api_names(&lean.traces[0]);
	ASSERT_EQ(json_integer_value(json_object_get(a, "cudaGetLastError")), 3);
	json_object_foreach(a, name, n)
	{
		long long kept = json_integer_value(json_object_get(b, name));

		ASSERT_MSG(kept == (gprof_coll_name_quiet(name) ? 0 : json_integer_value(n)),
			   "%s: %lld of %lld", name, kept, json_integer_value(n));
		left += json_integer_value(n) - kept;
	}
	ASSERT_EQ(json_object_size(b) + 1, json_object_size(a));
	ASSERT_EQ(left, 3);
	ASSERT_EQ(json_integer_value(
		      json_object_get(gprof_meta(&lean.traces[0], "left_out"), "api_calls")),
		  left);
	ASSERT_EQ(json_integer_value(
		      json_object_get(gprof_meta(&all.traces[0], "left_out"), "api_calls")),
		  0);
	json_decref(a);
	json_decref(b);
	e2e_free(&lean);
	e2e_free(&all);
}

/*
 * blas-app's and graph-app's GPU work, in launch order, is the same each of their 6 steps:
 * that of steps 2-4.
 */
static bool blas_app_scheduled(json_t *g, void *gt)
{
	size_t per_step = gtlog_count(gt, "{\"type\":\"gpu\"}") / 6;
	size_t before = gpu_ops_before(g, gt);

	return per_step && before / per_step >= 2 && before / per_step <= 4;
}

/* A kernel's name as the summary prints it: demangled, cut to the summary's width. */
static const char *summary_name(const char *mangled, char *out, size_t size)
{
	cxx_name(mangled, out, size);
	out[strnlen(out, 60)] = '\0';
	return out;
}

/*
 * cuBLAS (fp32 and bf16 GEMMs each step) on NVIDIA's runtime and the simulated driver: the
 * default schedule's steps hold exactly the kernels cuBLAS launched in them, by the names cuBLAS
 * gave them, each linked to its launch, and the summary's top kernels are those.
 */
TEST(e2e_collector_cublas)
{
	const char *argv[] = {proc_build_path("test/apps/blas-app"), "6", NULL};
	struct e2e_run r;
	size_t i;
	json_t *g;

	run_real(argv, &r);
	ASSERT_EQ(gtlog_count(r.gt, "{\"type\":\"gpu\"}") % 6, 0);
	ASSERT_GE(check_gpu_work(&r.traces[0], r.gt, blas_app_scheduled, r.gt, true), 2 * 3);
	json_array_foreach(r.gt, i, g)
	{
		char name[512];

		if (!strcmp(gtlog_str(g, "type"), "gpu") && blas_app_scheduled(g, r.gt) &&
		    !strcmp(gtlog_str(g, "kind"), "kernel"))
			ASSERT_STR_CONTAINS(r.res.err,
					    summary_name(gtlog_str(g, "name"), name, sizeof(name)));
	}
	e2e_free(&r);
}

/*
 * A CUDA graph (stream capture of copies and kernels, one cudaGraphLaunch per step) on NVIDIA's
 * runtime: the replayed operations are in the trace under their steps, each with its launch's
 * correlation, and the launch's flow goes to the graph's first operation.
 */
TEST(e2e_collector_cuda_graph)
{
	const char *argv[] = {proc_build_path("test/apps/graph-app"), "6", NULL};
	struct e2e_run r;
	json_t *s, *f, *first;
	size_t i;
	json_t *g;

	run_real(argv, &r);
	ASSERT_STR_CONTAINS(r.res.out, "graph-app: 4 nodes, 4 listed\n");
	/* per step: HtoD, fill, scale, DtoD (graph-app.cu), one graph launch */
	ASSERT_EQ(gtlog_count(r.gt, "{\"type\":\"gpu\"}"), 6 * 4);
	ASSERT_EQ(check_gpu_work(&r.traces[0], r.gt, blas_app_scheduled, r.gt, true), 3 * 4);
	ASSERT_EQ(e2e_count(&r.traces[0], "cuda_runtime", "cudaGraphLaunch"), 3);
	json_array_foreach(r.gt, i, g)
	{
		if (strcmp(gtlog_str(g, "type"), "gpu") || !blas_app_scheduled(g, r.gt) ||
		    strcmp(gtlog_str(g, "copy_kind"), "HtoD"))
			continue;
		ASSERT_EQ(find_flow(&r.traces[0], gtlog_int(g, "corr"), "s", &s), 1);
		ASSERT_EQ(find_flow(&r.traces[0], gtlog_int(g, "corr"), "f", &f), 1);
		ASSERT_EQ(find_gpu(&r.traces[0], g, &first), 1);
		ASSERT_EQ(ts_ns(f, "ts"), ts_ns(first, "ts"));
	}
	e2e_free(&r);
}

/*
 * Stream capture in a recorded window (graph-app: its capture in step 3 of the default
 * schedule's window, and before its loop under GPROF_SCHEDULE=all): the captured launches and
 * copies queue nothing (their nodes run in the replays), so they are written as calls without
 * GPU work and nothing waits for them. No line: the window waited DRAIN_MS for them and said
 * "2 launches had no GPU record". Every replay of the window's steps has its GPU work there.
 */
TEST(e2e_collector_capture_in_window)
{
	static const struct {
		const char *capture_step, *schedule;
		int replays_recorded;
	} runs[] = {{"3", "GPROF_SCHEDULE=wait=1,warmup=1,active=3", 2},
		    {"-1", "GPROF_SCHEDULE=all", 6}};

	for (size_t i = 0; i < ARRAY_SIZE(runs); i++) {
		const char *argv[] = {proc_build_path("test/apps/graph-app"), "6",
				      runs[i].capture_step, NULL};
		const char *env[] = {runs[i].schedule, "GPROF_SUMMARY=off", NULL};
		struct e2e_run r;

		e2e_need_real_runtime(argv[0]);
		e2e_run_ok(&r, argv, true, env, 1);
		ASSERT_MSG(text_lines(r.res.err, "gprof: ") == 0, "%s", r.res.err);
		ASSERT_EQ(e2e_count(&r.traces[0], "cuda_runtime", "cudaStreamBeginCapture"), 1);
		ASSERT_EQ(e2e_count(&r.traces[0], "cuda_runtime", "cudaLaunchKernel"), 2);
		ASSERT_EQ(e2e_count(&r.traces[0], "cuda_runtime", "cudaMemcpyAsync"), 2);
		ASSERT_EQ(text_count(r.traces[0].raw, "\"graph capture\":true"), 4);
		/* per replay: fill and scale, HtoD and DtoD (graph-app.cu) */
		ASSERT_EQ(e2e_count(&r.traces[0], "kernel", NULL), 2 * runs[i].replays_recorded);
		ASSERT_EQ(e2e_count(&r.traces[0], "gpu_memcpy", NULL),
			  2 * runs[i].replays_recorded);
		ASSERT_EQ(e2e_count(&r.traces[0], "cuda_runtime", "cudaGraphLaunch"),
			  runs[i].replays_recorded);
		e2e_free(&r);
	}
}

/* 8 threads launching on their own streams while the main thread marks steps; rt-app. */
TEST(e2e_collector_threads_and_streams)
{
	const char *steps_argv[] = {
	    proc_build_path("test/apps/steps-app"), "-s", "8", "-t", "8", NULL};
	const char *rt_argv[] = {proc_build_path("test/apps/rt-app"), "-s", "3", "-t", "4", NULL};
	const char *all[] = {"GPROF_SCHEDULE=all", NULL};
	struct steps steps = {2, 4, -1};
	struct e2e_run r;

	e2e_run_ok(&r, steps_argv, true, NULL, 1);
	ASSERT_EQ(check_gpu_work(&r.traces[0], r.gt, in_steps, &steps, false), 8 * 3 * 4);
	check_api_once(&r.traces[0]);
	check_steps_calls(&r.traces[0], r.gt, &steps);
	e2e_free(&r);

	e2e_run_ok(&r, rt_argv, true, all, 1);
	/* Per step and thread 2 copies, 2 kernels, 1 memset (rt-app.c). */
	ASSERT_EQ(check_gpu_work(&r.traces[0], r.gt, every_op, NULL, false), 3 * 4 * 5);
	check_api_once(&r.traces[0]);
	/* 4 threads allocate and free at once: the counter follows time, not record order */
	e2e_check_memory(&r.traces[0], r.gt);
	e2e_free(&r);
}

/* gt operations whose GPU work the trace `arg` has. */
static bool in_trace(json_t *g, void *arg)
{
	json_t *ev;

	return find_corr(arg, gtlog_int(g, "corr"), is_gpu, &ev) > 0;
}

/*
 * rt-app's threads stop for 20 ms between each launch's end and its record
 * (FAKEGPU_API_EXIT_PAUSE, as a thread the scheduler takes the CPU from there), the second
 * 10 ms behind the first (of a 40 ms step), so when the first thread's step marker ends one of
 * 8 one-step windows, the record of a kernel the second launched comes before its launch's.
 * Every kernel in the traces has its launch, linked. Before, the collector finished the
 * window 5 ms after its end, wrote such a kernel without its launch and lost the launch (HTA
 * then leaves the kernel out: CI's clients_hta_one_rank under TSan, once).
 */
TEST(e2e_collector_launch_record_late)
{
	const char *argv[] = {
	    proc_build_path("test/apps/rt-app"), "-s", "16", "-t", "2", "-o", "10", NULL};
	const char *env[] = {"FAKEGPU_API_EXIT_PAUSE=cudaLaunchKernel:20000000",
			     "GPROF_SCHEDULE=wait=1,warmup=0,active=1,repeat=0", NULL};
	struct e2e_run r;

	e2e_run_ok(&r, argv, true, env, 8);
	for (int i = 0; i < r.n_traces; i++) {
		ASSERT_GT(check_gpu_work(&r.traces[i], r.gt, in_trace, &r.traces[i], false), 0);
		check_api_once(&r.traces[i]);
	}
	e2e_free(&r);
}

/* The GPU events t has are gt operations of `steps`, as gt says; returns how many. */
static int check_gpu_present(const struct trace *t, json_t *gt, const struct steps *steps)
{
	size_t i, j;
	json_t *ev, *g;
	int n = 0;

	ASSERT_MSG(gt, "no ground-truth log");
	json_array_foreach(t->events, i, ev)
	{
		bool found = false;

		if (!is_gpu(ev))
			continue;
		json_array_foreach(gt, j, g)
		{
			if (strcmp(gtlog_str(g, "type"), "gpu") ||
			    gtlog_int(g, "corr") != e2e_arg_int(ev, "correlation"))
				continue;
			ASSERT(in_steps(g, (void *)steps));
			check_gpu_fields(ev, g, false);
			check_times(t, ev, g);
			found = true;
		}
		ASSERT_MSG(found, "GPU event of correlation %lld", e2e_arg_int(ev, "correlation"));
		n++;
	}
	return n;
}

static int gt_ops_in(json_t *gt, const struct steps *steps)
{
	size_t i;
	json_t *g;
	int n = 0;

	json_array_foreach(gt, i, g) n +=
	    !strcmp(gtlog_str(g, "type"), "gpu") && in_steps(g, (void *)steps);
	return n;
}

/*
 * Injected drops: counted in the metadata, reported once, the rest of the trace right. Without
 * NVTX and syncs, whose records (annotations' external correlations, waits) would shift which
 * records every fifth one is, so that none of the steps' GPU work may be among them.
 */
TEST(e2e_collector_dropped_records)
{
	const char *argv[] = {proc_build_path("test/apps/steps-app"), "-s", "8", NULL};
	const char *env[] = {"FAKEGPU_CUPTI_DROP_EVERY=5",
			     "GPROF_ACTIVITIES=kernel,memcpy,memset,memory,api", NULL};
	struct steps steps = {2, 4, -1};
	long long dropped;
	struct e2e_run r;
	char said[64];
	int present;

	e2e_run_ok(&r, argv, true, env, 1);
	dropped = int_of(json_object_get(gprof_meta(&r.traces[0], "dropped"), "cupti"));
	present = check_gpu_present(&r.traces[0], r.gt, &steps);
	/* Every 5th record of the window (API and GPU ones) was lost: some GPU work too. */
	ASSERT_GT(dropped, 0);
	ASSERT_LT(present, gt_ops_in(r.gt, &steps));
	ASSERT_LE(gt_ops_in(r.gt, &steps) - present, dropped);
	ASSERT(warning_with(&r.traces[0], "dropped"));
	/* said of the window by its number, which the collector asks export for */
	snprintf(said, sizeof(said), "gprof: collector: window %lld: ",
		 (long long)int_of(gprof_meta(&r.traces[0], "window")));
	ASSERT_MSG(text_lines(r.res.err, said) >= 1 &&
		       text_lines(r.res.err, said) ==
			   text_lines(r.res.err, "gprof: collector: window "),
		   "%s", r.res.err);
	ASSERT_STR_CONTAINS(r.res.err, "CUPTI activity records were dropped");
	e2e_free(&r);
}

/* Numbers in the metadata's "skipped CUPTI records" warning. */
static void skipped_counts(const struct trace *t, unsigned long long *untimed,
			   unsigned long long *unknown)
{
	const char *w = warning_with(t, "skipped CUPTI records: ");

	*untimed = *unknown = 0;
	if (w)
		ASSERT_EQ(sscanf(strstr(w, "records: "), "records: %llu without timestamps, %llu",
				 untimed, unknown),
			  2);
}

/* Zero timestamps and unknown kinds: skipped and counted; every event left has a real time. */
TEST(e2e_collector_skipped_records)
{
	const char *argv[] = {proc_build_path("test/apps/steps-app"), "-s", "8", NULL};
	const char *zero[] = {"FAKEGPU_CUPTI_ZERO_TS_EVERY=4", NULL};
	const char *unknown[] = {"FAKEGPU_CUPTI_UNKNOWN_KIND_EVERY=7", NULL};
	struct steps steps = {2, 4, -1};
	unsigned long long n_untimed, n_unknown;
	struct e2e_run r;
	size_t i;
	json_t *ev;
	int present;

	e2e_run_ok(&r, argv, true, zero, 1);
	skipped_counts(&r.traces[0], &n_untimed, &n_unknown);
	present = check_gpu_present(&r.traces[0], r.gt, &steps);
	ASSERT_GT(n_untimed, 0);
	ASSERT_LE(gt_ops_in(r.gt, &steps) - present, (long long)n_untimed);
	json_array_foreach(r.traces[0].events, i, ev)
	{
		if (json_object_get(ev, "ts"))
			ASSERT_GE(ts_ns(ev, "ts"), 0);
	}
	e2e_free(&r);

	e2e_run_ok(&r, argv, true, unknown, 1);
	skipped_counts(&r.traces[0], &n_untimed, &n_unknown);
	ASSERT_GT(n_unknown, 0);
	check_gpu_present(&r.traces[0], r.gt, &steps);
	e2e_free(&r);
}

/* The hooks' own events (issue #4): launches carry their arguments, no GPU work, no CUPTI. */
static void check_hooks_only(const struct trace *t)
{
	size_t i;
	json_t *ev;
	int launches = 0;

	json_array_foreach(t->events, i, ev)
	{
		ASSERT(!is_gpu(ev));
		ASSERT(strcmp(trace_str(ev, "cat"), "cuda_driver"));
		if (!strcmp(trace_str(ev, "name"), "cudaLaunchKernel")) {
			ASSERT(json_is_array(arg(ev, "grid")));
			launches++;
		}
	}
	ASSERT_GT(launches, 0);
}

/*
 * CUPTI absent, held by another tool (error 39), or failing to enable: the program's output and
 * status as without libgprof, a hooks-only trace, one message saying why, the same in the trace.
 */
TEST(e2e_collector_cupti_unavailable)
{
	const char *argv[] = {proc_build_path("test/apps/steps-app"), "-s", "6", NULL};
	const struct {
		const char *env, *why;
	} cases[] = {
	    {"GPROF_CUPTI_LIB=/nonexistent/libcupti.so.13",
	     "GPROF_CUPTI_LIB='/nonexistent/libcupti.so.13' cannot be loaded"},
	    {"FAKEGPU_CUPTI_SUBSCRIBE_TAKEN=1", "another tool holds CUPTI"},
	    {"FAKEGPU_CUPTI_ENABLE_FAIL=all", "cuptiActivityEnable"},
	};

	for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
		const char *env[] = {cases[c].env, NULL};
		struct e2e_run with, without;

		run_beside_plain(&with, &without, argv, env);
		check_hooks_only(&with.traces[0]);
		ASSERT_EQ(text_count(with.res.err, "gprof: "), 2); /* the reason, the trace */
		ASSERT_EQ(text_count(with.res.err, "GPU activity is not recorded: "), 1);
		ASSERT_STR_CONTAINS(with.res.err, cases[c].why);
		ASSERT_STR_CONTAINS(cupti_status(&with.traces[0]), "not used: ");
		ASSERT_STR_CONTAINS(cupti_status(&with.traces[0]), cases[c].why);
		e2e_free(&with);
		e2e_free(&without);
	}
}

/*
 * CUPTI absent: each cudaMemcpy's "copy kind" is the direction the simulated GPU copied in
 * (its ground truth), in the trace's vocabulary; a cudaMemcpyDefault copy, whose direction only
 * the runtime knows, says "Unknown".
 */
TEST(e2e_collector_hooks_only_copy_kinds)
{
	const char *argv[] = {proc_build_path("test/apps/copy-app"), "-s", "3", NULL};
	const char *env[] = {"GPROF_SCHEDULE=all", NULL};
	int seen[6] = {0};
	struct e2e_run r;
	size_t i;
	json_t *ev;

	e2e_run_ok(&r, argv, false, env, 1);
	json_array_foreach(r.traces[0].events, i, ev)
	{
		if (strcmp(trace_str(ev, "name"), "cudaMemcpy"))
			continue;
		long long bytes = e2e_arg_int(ev, "bytes");
		char match[128];

		ASSERT(bytes > 0 && bytes % 1024 == 0 && bytes / 1024 < 6);
		snprintf(match, sizeof(match),
			 "{\"type\":\"gpu\",\"kind\":\"memcpy\",\"bytes\":%lld}", bytes);
		json_t *gpu = gtlog_filter(r.gt, match);
		ASSERT_GT(json_array_size(gpu), 0);
		snprintf(match, sizeof(match), "{\"type\":\"api\",\"corr\":%lld}",
			 gtlog_int(json_array_get(gpu, 0), "corr"));
		json_t *api = gtlog_filter(r.gt, match);
		ASSERT_EQ(json_array_size(api), 1);
		json_t *args = json_object_get(json_array_get(api, 0), "args");
		bool by_pointers = gtlog_int(args, "kind") == 4; /* cudaMemcpyDefault */
		const char *kind = json_string_value(arg(ev, "copy kind"));

		ASSERT(kind);
		ASSERT_STR_EQ(kind, by_pointers ? "Unknown"
						: gtlog_str(json_array_get(gpu, 0), "copy_kind"));
		seen[bytes / 1024]++;
		json_decref(gpu);
		json_decref(api);
	}
	for (int k = 1; k <= 5; k++)
		ASSERT_GT(seen[k], 2); /* one per step */
	e2e_free(&r);
}

/* Whether t has a runtime or driver call event named name. */
static bool has_api(const struct trace *t, const char *name)
{
	size_t i;
	json_t *ev;

	json_array_foreach(t->events, i, ev)
	{
		if (is_api(ev) && !strcmp(trace_str(ev, "name"), name))
			return true;
	}
	return false;
}

/*
 * Hooks only, the hooks time each call themselves (their clock is the TSC's line through
 * CLOCK_REALTIME where the kernel's clock is the TSC): with the whole run recorded, every runtime
 * call event holds exactly one call of the same name on its thread as the simulated runtime
 * timed it, and every such call of a name the trace has is held by one event.
 */
TEST(e2e_collector_hooks_only_times)
{
	const char *argv[] = {proc_build_path("test/apps/steps-app"), "-s", "6", NULL};
	const char *env[] = {"GPROF_SCHEDULE=all", NULL};
	struct e2e_run r;
	size_t i, k, events = 0;
	json_t *ev, *g, *calls;

	e2e_run_ok(&r, argv, false, env, 1);
	calls = gtlog_filter(r.gt, "{\"type\":\"api\",\"domain\":\"runtime\"}");
	int *held = calloc(json_array_size(calls) + 1, sizeof(*held));
	long long base = int_of(json_object_get(r.traces[0].root, "baseTimeNanoseconds"));

	ASSERT(held);

	json_array_foreach(r.traces[0].events, i, ev)
	{
		if (!is_api(ev))
			continue;
		long long b = base + ts_ns(ev, "ts"), e = b + ts_ns(ev, "dur");
		int n = 0;

		json_array_foreach(calls, k, g)
		{
			if (gtlog_int(g, "tid") == int_of(json_object_get(ev, "tid")) &&
			    !strcmp(public_name(gtlog_str(g, "name")), trace_str(ev, "name")) &&
			    gtlog_int(g, "start") >= b && gtlog_int(g, "end") <= e) {
				held[k]++;
				n++;
			}
		}
		ASSERT_MSG(n == 1, "%s at %lld for %lld ns holds %d calls", trace_str(ev, "name"),
			   b, e - b, n);
		events++;
	}
	ASSERT_GT(events, 12); /* a launch and a copy a step, at least */
	json_array_foreach(calls, k, g)
	{
		bool traced = has_api(&r.traces[0], public_name(gtlog_str(g, "name")));

		ASSERT_MSG(!traced || held[k] == 1, "%s at %lld is held by %d events",
			   gtlog_str(g, "name"), gtlog_int(g, "start"), held[k]);
	}
	free(held);
	json_decref(calls);
	e2e_free(&r);
}

/*
 * Without GPROF_CUPTI_LIB, CUPTI is found next to the runtime in use: the simulated one next to
 * the simulated runtime; the toolkit's next to the real runtime, which with no GPU cannot
 * subscribe: then the program runs as always with a hooks-only trace.
 */
TEST(e2e_collector_cupti_found_next_to_runtime)
{
	const char *argv[] = {proc_build_path("test/apps/steps-app"), "-s", "6", NULL};
	const char *real_argv[] = {proc_build_path("test/apps/steps-app-real"), "-e", NULL};
	const char *env[] = {"GPROF_CUPTI_LIB", NULL};
	const char *real_env[] = {"GPROF_CUPTI_LIB", "GPROF_SCHEDULE=all", NULL};
	struct e2e_run r, without;
	char lib[PATH_MAX];

	e2e_run(&r, argv, e2e_cupti(true), env, true);
	ASSERT_EQ(r.n_traces, 1);
	ASSERT(realpath(e2e_cupti(true), lib));
	ASSERT_STR_EQ(trace_str(gprof_meta(&r.traces[0], "cupti"), "library"), lib);
	ASSERT_STR_EQ(cupti_status(&r.traces[0]), "in use");
	ASSERT_GT(e2e_count(&r.traces[0], "kernel", NULL), 0);
	e2e_free(&r);

	run_beside_plain(&r, &without, real_argv, real_env);
	ASSERT_STR_CONTAINS(cupti_status(&r.traces[0]), "not used: ");
	ASSERT_EQ(text_count(r.res.err, "GPU activity is not recorded: "), 1);
	e2e_free(&r);
	e2e_free(&without);
}

/* GPROF_ACTIVITIES chooses: kernels alone (no API events, no links), or API events alone. */
TEST(e2e_collector_activities)
{
	const char *argv[] = {proc_build_path("test/apps/steps-app"), "-s", "6", NULL};
	const char *kernels[] = {"GPROF_ACTIVITIES=kernel,nvtx", NULL};
	const char *api[] = {"GPROF_ACTIVITIES=api", NULL};
	struct e2e_run r;

	e2e_run(&r, argv, e2e_cupti(true), kernels, true);
	ASSERT_EQ(r.n_traces, 1);
	ASSERT_EQ(e2e_count(&r.traces[0], "kernel", NULL), 3);
	ASSERT_EQ(e2e_count(&r.traces[0], "gpu_memcpy", NULL) +
		      e2e_count(&r.traces[0], "gpu_memset", NULL) +
		      e2e_count(&r.traces[0], "cuda_runtime", NULL) +
		      e2e_count(&r.traces[0], "gpu_memory", NULL) +
		      e2e_count(&r.traces[0], "ac2g", NULL),
		  0);
	e2e_free(&r);

	e2e_run(&r, argv, e2e_cupti(true), api, true);
	ASSERT_EQ(r.n_traces, 1);
	ASSERT_GT(e2e_count(&r.traces[0], "cuda_runtime", NULL), 0);
	check_api_once(&r.traces[0]);
	ASSERT_EQ(e2e_count(&r.traces[0], "kernel", NULL) + e2e_count(&r.traces[0], "ac2g", NULL) +
		      e2e_count(&r.traces[0], "user_annotation", NULL) - 3,
		  0);
	e2e_free(&r);
}

/*
 * Windows back to back (no wait, no warmup): each trace has the GPU work launched in its own
 * steps, also the kernel launched at the end of the first window that runs into the second.
 * Windows start at step 1, so that each holds two whole steps.
 */
TEST(e2e_collector_back_to_back_windows)
{
	const char *argv[] = {proc_build_path("test/apps/steps-app"), "-s", "7", "-l", "2", NULL};
	const char *env[] = {"GPROF_SCHEDULE=skip_first=1,wait=0,warmup=0,active=2,repeat=0",
			     "FAKEGPU_KERNEL_TABLE=slow=300000000", NULL};
	struct e2e_run r;

	e2e_run_ok(&r, argv, true, env, 3);
	for (int w = 0; w < 3; w++) {
		struct steps steps = {2 * w + 1, 2 * w + 2, 2};

		/* 4 operations per step; the slow kernel belongs to step 2. */
		ASSERT_EQ(check_gpu_work(&r.traces[w], r.gt, in_steps, &steps, false),
			  8 + (w == 0));
		check_api_once(&r.traces[w]);
		check_steps_calls(&r.traces[w], r.gt, &steps);
	}
	ASSERT_GT(gtlog_int(gt_slow_kernel(r.gt), "end"), step_time_ns(&r.traces[1], 3, false));
	e2e_free(&r);
}

/*
 * NVTX ranges started on one thread and ended on another (steps-app's "across") overlap the
 * calls of both threads, so they go on lanes of their own: the whole run, step 0 included, keeps
 * every track nested (e2e_run checks each trace).
 */
TEST(e2e_collector_cross_thread_ranges)
{
	const char *argv[] = {proc_build_path("test/apps/steps-app"), "-s", "4", "-t", "2", NULL};
	const char *env[] = {"GPROF_SCHEDULE=all", NULL};
	struct e2e_run r;
	size_t i;
	json_t *ev;
	int across = 0;

	e2e_run_ok(&r, argv, true, env, 1);
	json_array_foreach(r.traces[0].events, i, ev)
	{
		if (strcmp(trace_str(ev, "name"), "across"))
			continue;
		across++;
		ASSERT_GE(json_integer_value(json_object_get(ev, "tid")), 0x7fff0000);
	}
	/*
	 * One per step, ended by the first worker after its step body; step 0's may start before
	 * the window (it opens at the first CUDA call, the workers' racing stream creation).
	 */
	ASSERT_GE(across, 3);
	ASSERT_LE(across, 4);
	e2e_free(&r);
}

/* A span of GPU work in ns, on a stream, under a user annotation's name. */
struct gpu_span {
	const char *name;
	long long stream, start, end;
};

static bool same_span(const struct gpu_span *a, const struct gpu_span *b)
{
	return !strcmp(a->name, b->name) && a->stream == b->stream && a->start == b->start &&
	       a->end == b->end;
}

/*
 * NVTX ranges on the GPU's streams (gpu_user_annotation), against the simulated GPU's log: in
 * each step of steps-app, "inner" holds the kernel alone; "forward" the copy to the device
 * (on the legacy stream), and the memset and the copy back on the worker's stream (the
 * kernel's work is inner's, the innermost range's, as Kineto's annotations are).
 */
TEST(e2e_collector_gpu_annotations)
{
	enum {
		STEPS = 4,
		WANT = 3 * STEPS
	};
	const char *argv[] = {proc_build_path("test/apps/steps-app"), "-s", "4", NULL};
	const char *env[] = {"GPROF_SCHEDULE=all", NULL};
	struct gpu_span want[WANT], got[WANT + 1];
	int n_got = 0;
	struct e2e_run r;
	json_t *ops, *g, *ev;
	long long base;
	size_t i;

	e2e_run_ok(&r, argv, true, env, 1);
	ops = gtlog_filter(r.gt, "{\"type\":\"gpu\"}");
	ASSERT_EQ(json_array_size(ops), 4 * STEPS); /* HtoD, kernel, memset, DtoH a step */
	for (int k = 0; k < STEPS; k++) {
		json_t *h = json_array_get(ops, 4 * k), *kern = json_array_get(ops, 4 * k + 1),
		       *set = json_array_get(ops, 4 * k + 2),
		       *back = json_array_get(ops, 4 * k + 3);

		ASSERT_STR_EQ(gtlog_str(kern, "kind"), "kernel");
		want[3 * k] = (struct gpu_span){"forward", gtlog_int(h, "stream"),
						gtlog_int(h, "start"), gtlog_int(h, "end")};
		want[3 * k + 1] =
		    (struct gpu_span){"inner", gtlog_int(kern, "stream"), gtlog_int(kern, "start"),
				      gtlog_int(kern, "end")};
		want[3 * k + 2] =
		    (struct gpu_span){"forward", gtlog_int(set, "stream"), gtlog_int(set, "start"),
				      gtlog_int(back, "end")};
	}
	base = json_integer_value(json_object_get(r.traces[0].root, "baseTimeNanoseconds"));
	json_array_foreach(r.traces[0].events, i, ev)
	{
		const json_t *args = json_object_get(ev, "args");
		long long ts = base + ts_ns(ev, "ts");

		if (strcmp(trace_str(ev, "cat"), "gpu_user_annotation"))
			continue;
		ASSERT_LT(n_got, WANT + 1);
		ASSERT(json_integer_value(json_object_get(args, "External id")) > 0);
		got[n_got++] = (struct gpu_span){trace_str(ev, "name"),
						 json_integer_value(json_object_get(ev, "tid")), ts,
						 ts + ts_ns(ev, "dur")};
	}
	ASSERT_EQ(n_got, WANT);
	for (int w = 0; w < WANT; w++) {
		int found = 0;

		for (int k = 0; k < n_got; k++)
			found += same_span(&want[w], &got[k]);
		ASSERT_MSG(found == 1, "%s on stream %lld, %lld..%lld: %d in the trace",
			   want[w].name, want[w].stream, want[w].start, want[w].end, found);
	}
	/* Each annotation's host event names it by the same External id. */
	json_array_foreach(r.traces[0].events, i, g)
	{
		if (!strcmp(trace_str(g, "cat"), "user_annotation") &&
		    (!strcmp(trace_str(g, "name"), "inner") ||
		     !strcmp(trace_str(g, "name"), "forward")))
			ASSERT(json_integer_value(
				   json_object_get(json_object_get(g, "args"), "External id")) > 0);
	}
	json_decref(ops);
	e2e_free(&r);
}

/* The cuda_sync event of correlation corr in t: one, or the test fails. */
static const json_t *sync_event(const struct trace *t, long long corr)
{
	const json_t *found = NULL;
	json_t *ev;
	size_t i;

	json_array_foreach(t->events, i, ev)
	{
		if (strcmp(trace_str(ev, "cat"), "cuda_sync") ||
		    e2e_arg_int(ev, "correlation") != corr)
			continue;
		ASSERT_MSG(!found, "two cuda_sync events of call %lld", corr);
		found = ev;
	}
	ASSERT_MSG(found, "no cuda_sync event of call %lld", corr);
	return found;
}

/*
 * With sync in GPROF_ACTIVITIES, every wait of sync-app (each kind, on the fake runtime and on
 * NVIDIA's, legacy and per-thread default stream) is one cuda_sync event: its call's, with the
 * time, stream and, for an event, the stream and call that recorded it, as the simulated GPU's
 * log says.
 */
TEST(e2e_collector_sync_events)
{
	static const char *const apps[] = {"test/apps/sync-app", "test/apps/sync-app-pt",
					   "test/apps/sync-real", "test/apps/sync-real-pt"};
	static const char *const kinds[][2] = {{"stream", "Stream Sync"},
					       {"event", "Event Sync"},
					       {"context", "Context Sync"},
					       {"stream_wait_event", "Stream Wait Event"}};
	const char *env[] = {"GPROF_SCHEDULE=all", "GPROF_ACTIVITIES=all", "GPROF_SUMMARY=off",
			     NULL};

	for (size_t a = 0; a < ARRAY_SIZE(apps); a++) {
		const char *argv[] = {proc_build_path(apps[a]), "4", NULL};
		struct e2e_run r;
		json_t *syncs, *g;
		long long base;
		size_t i;

		if (strstr(apps[a], "real"))
			e2e_need_real_runtime(argv[0]);
		e2e_run_ok(&r, argv, true, env, 1);
		base = json_integer_value(json_object_get(r.traces[0].root, "baseTimeNanoseconds"));
		syncs = gtlog_filter(r.gt, "{\"type\":\"sync\"}");
		ASSERT_EQ(json_array_size(syncs), 4 * 5 + 1); /* 5 a step, 1 device sync */
		ASSERT_EQ(e2e_count(&r.traces[0], "cuda_sync", NULL), (int)json_array_size(syncs));
		json_array_foreach(syncs, i, g)
		{
			const json_t *ev = sync_event(&r.traces[0], gtlog_int(g, "corr"));
			const char *name = NULL;

			for (size_t k = 0; k < ARRAY_SIZE(kinds); k++)
				if (!strcmp(gtlog_str(g, "kind"), kinds[k][0]))
					name = kinds[k][1];
			ASSERT_STR_EQ(trace_str(ev, "name"), name);
			ASSERT_EQ(e2e_arg_int(ev, "stream"), gtlog_int(g, "stream"));
			ASSERT_EQ(base + ts_ns(ev, "ts"), gtlog_int(g, "start"));
			ASSERT_EQ(ts_ns(ev, "dur"), gtlog_int(g, "end") - gtlog_int(g, "start"));
			if (gtlog_int(g, "event_record_corr") < 0)
				continue;
			ASSERT_EQ(e2e_arg_int(ev, "wait_on_cuda_event_record_corr_id"),
				  gtlog_int(g, "event_record_corr"));
			ASSERT_EQ(e2e_arg_int(ev, "wait_on_stream"),
				  gtlog_int(g, "event_record_stream"));
		}
		json_decref(syncs);
		e2e_free(&r);
	}
}

/* The ground-truth line of an overhead event: its kind's, thread's and times; NULL if none. */
static json_t *gt_overhead(json_t *gt, const json_t *ev, long long base)
{
	static const char *const kinds[][2] = {{"buffer_request", "Activity Buffer Request"},
					       {"buffer_flush", "Buffer Flush"}};
	long long start = base + ts_ns(ev, "ts"), end = start + ts_ns(ev, "dur");
	json_t *g;
	size_t i;

	json_array_foreach(gt, i, g)
	{
		for (size_t k = 0; k < ARRAY_SIZE(kinds); k++)
			if (!strcmp(gtlog_str(g, "type"), "overhead") &&
			    !strcmp(gtlog_str(g, "kind"), kinds[k][0]) &&
			    !strcmp(trace_str(ev, "name"), kinds[k][1]) &&
			    gtlog_int(g, "tid") == int_of(json_object_get(ev, "tid")) &&
			    gtlog_int(g, "pid") == int_of(json_object_get(ev, "pid")) &&
			    gtlog_int(g, "start") == start && gtlog_int(g, "end") == end)
				return g;
	}
	return NULL;
}

/*
 * CUPTI's own time (GPROF_ACTIVITIES' "overhead", off by default): the simulated CUPTI's
 * buffer requests and flushes, each on the thread that spent it, as its log says; every
 * request made while the window records is there (a flush's record waits for the next flush).
 */
TEST(e2e_collector_overhead_events)
{
	/*
	 * Slow kernels in step 1 that step 2 waits for (1.4 s each at FAKEGPU_TIME_SCALE 0.1, run
	 * side by side or one after the other): a window longer than the collector's first sleep
	 * (1 s), so that it flushes while the window records.
	 */
	const char *argv[] = {
	    proc_build_path("test/apps/steps-app"), "-s", "4", "-t", "2", "-l", "1", NULL};
	const char *on[] = {"GPROF_SCHEDULE=all", "GPROF_ACTIVITIES=kernel,api,nvtx,overhead",
			    "FAKEGPU_KERNEL_TABLE=slow=14000000000", NULL};
	const char *off[] = {"GPROF_SCHEDULE=all", NULL};
	long long base, first = LLONG_MAX, last = 0;
	int requests = 0, flushes = 0, in_window = 0;
	struct e2e_run r;
	json_t *ev, *g;
	size_t i;

	e2e_run_ok(&r, argv, true, on, 1);
	base = json_integer_value(json_object_get(r.traces[0].root, "baseTimeNanoseconds"));
	json_array_foreach(r.traces[0].events, i, ev)
	{
		long long b = base + ts_ns(ev, "ts"), e = b + ts_ns(ev, "dur");

		if (!strcmp(trace_str(ev, "ph"), "M"))
			continue;
		first = b < first ? b : first;
		last = e > last ? e : last;
		if (strcmp(trace_str(ev, "cat"), "overhead"))
			continue;
		ASSERT_MSG(gt_overhead(r.gt, ev, base),
			   "%s at %.3f µs on thread %lld: not in the log", trace_str(ev, "name"),
			   json_number_value(json_object_get(ev, "ts")),
			   int_of(json_object_get(ev, "tid")));
		ASSERT_EQ(json_object_get(ev, "args"), NULL);
		requests += !strcmp(trace_str(ev, "name"), "Activity Buffer Request");
		flushes += !strcmp(trace_str(ev, "name"), "Buffer Flush");
	}
	json_array_foreach(r.gt, i, g) in_window +=
	    !strcmp(gtlog_str(g, "type"), "overhead") &&
	    !strcmp(gtlog_str(g, "kind"), "buffer_request") && gtlog_int(g, "start") >= first &&
	    gtlog_int(g, "end") <= last;
	ASSERT_GT(requests, 1);
	ASSERT_EQ(requests, in_window);
	ASSERT_GT(flushes, 0);
	ASSERT_EQ(json_integer_value(json_object_get(
		      json_object_get(json_object_get(r.traces[0].root, "gprof"), "records"),
		      "overhead")),
		  requests + flushes);
	e2e_free(&r);

	e2e_run_ok(&r, argv, true, off, 1);
	ASSERT_GT(gtlog_count(r.gt, "{\"type\":\"overhead\",\"kind\":\"buffer_request\"}"), 1);
	ASSERT_EQ(e2e_count(&r.traces[0], "overhead", NULL), 0);
	e2e_free(&r);
}
