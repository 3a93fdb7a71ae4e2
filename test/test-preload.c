/*
 * End-to-end tests of preload/: programs run on the simulated runtime under LD_PRELOAD, and each
 * trace is checked against TRACE_FORMAT.md and against what the program really did (its
 * documented behaviour, test/apps/steps-app.c, and the simulation's ground-truth log). They are
 * about the hooks' own events, which libgprof writes when CUPTI is not there (e2e_cupti(false));
 * test-e2e-collector.c runs the same programs with the simulated CUPTI.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/compiler.h"
#include "preload/preload.h"
#include "task.h"
#include "util/e2e.h"
#include "util/gtlog.h"
#include "util/text.h"

/* The step numbers of t's ProfilerStep#N spans, as a bit set. */
static uint64_t step_set(const struct trace *t)
{
	uint64_t set = 0;
	size_t i;
	json_t *ev;

	json_array_foreach(t->events, i, ev)
	{
		unsigned n;

		if (sscanf(trace_str(ev, "name"), "ProfilerStep#%u", &n) == 1 && n < 64)
			set |= 1ull << n;
	}
	return set;
}

static uint64_t steps_between(unsigned first, unsigned last)
{
	uint64_t set = 0;

	for (unsigned k = first; k <= last; k++)
		set |= 1ull << k;
	return set;
}

/* steps-app: the step an API call of the program belongs to, from its arguments. */
static int step_of_call(const char *name, long long bytes, long long grid_x)
{
	if (!strcmp(name, "cudaLaunchKernel"))
		return (int)grid_x - 1;
	if (!strcmp(name, "cudaMalloc"))
		return (int)(bytes / 4096) - 1;
	if (!strcmp(name, "cudaMemcpy") || !strcmp(name, "cudaMemcpyAsync"))
		return (int)(bytes / 256) - 1;
	if (!strcmp(name, "cudaMemsetAsync"))
		return (int)(bytes / 128) - 1;
	return -1;
}

static long long grid_x(const json_t *ev)
{
	json_t *g = json_object_get(json_object_get(ev, "args"), "grid");

	return json_is_array(g) ? json_integer_value(json_array_get(g, 0)) : -1;
}

/*
 * Every hooked call steps-app made in steps [first, last] (per the ground-truth log) is in the
 * trace exactly once, with its name and arguments, and nothing from other steps.
 */
static void check_calls(const struct e2e_run *r, const struct trace *t, unsigned first,
			unsigned last, int workers)
{
	static const char *const hooked[] = {"cudaLaunchKernel", "cudaMalloc", "cudaMemcpy",
					     "cudaMemcpyAsync", "cudaMemsetAsync"};
	size_t i;
	json_t *ev;

	ASSERT(r->gt);
	for (size_t h = 0; h < ARRAY_SIZE(hooked); h++) {
		/* Expected from the program's definition: `workers` calls per step. */
		int want[64] = {0}, got[64] = {0}, gt_count[64] = {0};

		for (unsigned k = first; k <= last; k++)
			want[k] = workers;
		json_array_foreach(r->gt, i, ev)
		{
			json_t *args = json_object_get(ev, "args");
			int k;

			if (strcmp(gtlog_str(ev, "type"), "api") ||
			    strcmp(gtlog_str(ev, "name"), hooked[h]))
				continue;
			k = step_of_call(hooked[h], gtlog_int(args, "bytes"), grid_x(ev));
			if (k >= 0 && k < 64 && (unsigned)k >= first && (unsigned)k <= last)
				gt_count[k]++;
		}
		json_array_foreach(t->events, i, ev)
		{
			int k;

			if (strcmp(trace_str(ev, "cat"), "cuda_runtime") ||
			    strcmp(trace_str(ev, "name"), hooked[h]))
				continue;
			k = step_of_call(hooked[h], e2e_arg_int(ev, "bytes"), grid_x(ev));
			ASSERT_MSG(k >= 0 && k < 64, "%s with unexpected arguments", hooked[h]);
			got[k]++;
			ASSERT_EQ(e2e_arg_int(ev, "result"), 0);
			if (!strcmp(hooked[h], "cudaLaunchKernel")) {
				ASSERT_EQ(e2e_arg_int(ev, "shared memory"), k * 16);
				ASSERT_STR_CONTAINS(
				    trace_str(json_object_get(ev, "args"), "kernel"), "scale");
			}
		}
		for (int k = 0; k < 64; k++) {
			ASSERT_MSG(got[k] == want[k], "%s step %d: %d in the trace, %d expected",
				   hooked[h], k, got[k], want[k]);
			ASSERT_MSG(gt_count[k] == want[k], "%s step %d: %d in the log, %d expected",
				   hooked[h], k, gt_count[k], want[k]);
		}
	}
}

/* steps-app's one trace under the default schedule: steps 2-4, each call of theirs once. */
static void check_default_window(const struct e2e_run *r)
{
	ASSERT_EQ(step_set(&r->traces[0]), steps_between(2, 4));
	check_calls(r, &r->traces[0], 2, 4, 1);
}

TEST(preload_default_schedule)
{
	const char *argv[] = {proc_build_path("test/apps/steps-app"), "-s", "10", NULL};
	struct e2e_run r;

	e2e_run_ok(&r, argv, false, NULL, 1);
	check_default_window(&r);
	/* NVTX: per step, forward + inner + dom-range ranges, the cross-thread range, marks. */
	ASSERT_EQ(e2e_count(&r.traces[0], "user_annotation", "forward"), 3);
	ASSERT_EQ(e2e_count(&r.traces[0], "user_annotation", "inner"), 3);
	ASSERT_EQ(e2e_count(&r.traces[0], "user_annotation", "dom-range"), 3);
	ASSERT_EQ(e2e_count(&r.traces[0], "user_annotation", "wide \xe2\x9c\x93"), 3);
	ASSERT_GE(e2e_count(&r.traces[0], "user_annotation", "across"), 2);
	/* what was in use at the opening, then 3 cudaMalloc and 3 cudaFree in the window */
	ASSERT_EQ(e2e_check_memory(&r.traces[0], r.gt), 7);
	ASSERT_EQ(e2e_count(&r.traces[0], "cuda_runtime", "cudaFree"), 3);
	e2e_free(&r);
}

/*
 * Allocations made before the window and freed in it (steps-app -c: each step frees the step
 * before's): their frees count, from the hooks (sized from the driver) as from CUPTI. The hooks
 * with one worker: of two threads' allocations in the same microseconds they may tell the
 * later first (they see the call, not the moment in it the memory changed hands).
 */
TEST(preload_memory_freed_from_before_the_window)
{
	const char *workers[] = {"1", "2"};

	for (int cupti = 0; cupti < 2; cupti++) {
		const char *argv[] = {proc_build_path("test/apps/steps-app"),
				      "-c",
				      "-t",
				      workers[cupti],
				      "-s",
				      "8",
				      NULL};
		struct e2e_run r;

		e2e_run(&r, argv, e2e_cupti(cupti), NULL, true);
		ASSERT_MSG(r.res.status == 0 && r.n_traces == 1, "%s", r.res.err);
		/* the opening's figure, then per step and worker a cudaMalloc and a cudaFree */
		ASSERT_EQ(e2e_check_memory(&r.traces[0], r.gt), 1 + 3 * 2 * (cupti + 1));
		e2e_free(&r);
	}
}

TEST(preload_domain_and_tids)
{
	const char *argv[] = {proc_build_path("test/apps/steps-app"), "-s", "6", NULL};
	struct e2e_run r;
	size_t i;
	json_t *ev;
	long long worker_tid = -1;

	e2e_run(&r, argv, e2e_cupti(false), NULL, true);
	ASSERT_EQ(r.n_traces, 1);
	/* The worker's calls carry the worker's thread id, as the ground-truth log saw it. */
	json_array_foreach(r.gt, i, ev)
	{
		if (!strcmp(gtlog_str(ev, "name"), "cudaMalloc"))
			worker_tid = gtlog_int(ev, "tid");
	}
	ASSERT_GT(worker_tid, 0);
	json_array_foreach(r.traces[0].events, i, ev)
	{
		const char *name = trace_str(ev, "name");

		if (!strcmp(trace_str(ev, "cat"), "cuda_runtime"))
			ASSERT_EQ(json_integer_value(json_object_get(ev, "tid")), worker_tid);
		if (!strcmp(name, "dom-range"))
			ASSERT_STR_EQ(trace_str(json_object_get(ev, "args"), "domain"), "mydomain");
		if (!strcmp(name, "forward"))
			ASSERT(!json_object_get(json_object_get(ev, "args"), "domain"));
	}
	e2e_free(&r);
}

TEST(preload_markers_on_launching_thread)
{
	const char *argv[] = {proc_build_path("test/apps/steps-app"), "-s", "10", "-S", NULL};
	struct e2e_run r;

	e2e_run_ok(&r, argv, false, NULL, 1);
	check_default_window(&r);
	e2e_free(&r);
}

TEST(preload_numbered_step_markers)
{
	const char *argv[] = {proc_build_path("test/apps/steps-app"), "-s", "10", "-x", NULL};
	struct e2e_run r;

	e2e_run(&r, argv, e2e_cupti(false), NULL, true);
	ASSERT_EQ(r.n_traces, 1);
	ASSERT_EQ(step_set(&r.traces[0]), steps_between(2, 4));
	e2e_free(&r);
}

TEST(preload_eight_threads)
{
	const char *argv[] = {proc_build_path("test/apps/steps-app"), "-s", "8", "-t", "8", NULL};
	struct e2e_run r;

	e2e_run_ok(&r, argv, false, NULL, 1);
	check_calls(&r, &r.traces[0], 2, 4, 8);
	ASSERT_EQ(e2e_count(&r.traces[0], "user_annotation", "forward"), 24);
	e2e_free(&r);
}

TEST(preload_repeat)
{
	const char *argv[] = {proc_build_path("test/apps/steps-app"), "-s", "10", NULL};
	const char *env2[] = {"GPROF_SCHEDULE=wait=1,warmup=1,active=2,repeat=2", NULL};
	const char *env0[] = {"GPROF_SCHEDULE=wait=1,warmup=1,active=2,repeat=0", NULL};
	struct e2e_run r;

	/* Cycles of 4 steps (wait, warmup, active, active): steps 2-3 and 6-7 are recorded. */
	e2e_run(&r, argv, e2e_cupti(false), env2, true);
	ASSERT_EQ(r.n_traces, 2);
	ASSERT_EQ(step_set(&r.traces[0]), steps_between(2, 3));
	ASSERT_EQ(step_set(&r.traces[1]), steps_between(6, 7));
	check_calls(&r, &r.traces[0], 2, 3, 1);
	check_calls(&r, &r.traces[1], 6, 7, 1);
	e2e_free(&r);

	/* repeat=0 over 12 steps: 2-3, 6-7 and 10-11, the last saved at exit. */
	const char *argv12[] = {proc_build_path("test/apps/steps-app"), "-s", "12", NULL};

	e2e_run(&r, argv12, e2e_cupti(false), env0, true);
	ASSERT_EQ(r.n_traces, 3);
	ASSERT_EQ(step_set(&r.traces[2]), steps_between(10, 11));
	check_calls(&r, &r.traces[2], 10, 11, 1);
	e2e_free(&r);
}

TEST(preload_schedule_all)
{
	const char *argv[] = {proc_build_path("test/apps/steps-app"), "-s", "5", NULL};
	const char *env[] = {"GPROF_SCHEDULE=all", NULL};
	struct e2e_run r;

	e2e_run(&r, argv, e2e_cupti(false), env, true);
	ASSERT_EQ(r.n_traces, 1);
	check_calls(&r, &r.traces[0], 0, 4, 1);
	e2e_free(&r);
}

TEST(preload_nvcc_app)
{
	const char *app = proc_build_path("test/apps/nvcc-app");
	const char *pt = proc_build_path("test/apps/nvcc-app-pt");
	const char *const apps[][2] = {{app, "__cudaLaunchKernel"},
				       {pt, "__cudaLaunchKernel_ptsz"}};
	const char *env[] = {"GPROF_SCHEDULE=all", NULL};

	if (access(app, X_OK) != 0)
		SKIP("no nvcc-app (nvcc missing)");
	for (size_t a = 0; a < 2; a++) {
		const char *argv[] = {apps[a][0], NULL};
		struct e2e_run r;
		size_t i;
		json_t *ev;
		int launches = 0;

		e2e_run_ok(&r, argv, false, env, 1);
		json_array_foreach(r.traces[0].events, i, ev)
		{
			const char *kernel = trace_str(json_object_get(ev, "args"), "kernel");

			if (strcmp(trace_str(ev, "name"), "cudaLaunchKernel"))
				continue;
			launches++;
			ASSERT_STR_EQ(trace_str(json_object_get(ev, "args"), "api"), apps[a][1]);
			ASSERT_MSG(kernel[0] && !strstr(kernel, "_Z"), "not demangled: %s", kernel);
		}
		/* Every launch the program made, per the ground-truth log. */
		ASSERT_GT(launches, 0);
		ASSERT_EQ(launches, (int)gtlog_count(r.gt, "{\"type\":\"api\",\"cbid\":211}") +
					(int)gtlog_count(r.gt, "{\"type\":\"api\",\"cbid\":214}"));
		ASSERT_GE(e2e_count(&r.traces[0], "cuda_runtime", "cudaLaunchKernel"), 1);
		e2e_free(&r);
	}
}

/*
 * -e's launch of grid (1, 70000, 1), too wide for a call record (export.h): a whole event in
 * the trace, once, with its grid and the result the program printed.
 */
static void check_wide_launch(const struct e2e_run *r)
{
	static const char said[] = "cudaLaunchKernel(grid 1 x 70000) = ";
	const char *at = strstr(r->res.out, said);
	int result = 0, found = 0;
	size_t i;
	json_t *ev;

	ASSERT_MSG(at && sscanf(at + strlen(said), "%d", &result) == 1, "%s", r->res.out);
	ASSERT_NE(result, 0);
	ASSERT_GE(r->n_traces, 1);
	json_array_foreach(r->traces[0].events, i, ev)
	{
		json_t *grid = json_object_get(json_object_get(ev, "args"), "grid");

		if (strcmp(trace_str(ev, "cat"), "cuda_runtime") ||
		    json_integer_value(json_array_get(grid, 1)) != 70000)
			continue;
		ASSERT_STR_EQ(trace_str(ev, "name"), "cudaLaunchKernel");
		ASSERT_EQ(json_integer_value(json_array_get(grid, 0)), 1);
		ASSERT_EQ(e2e_arg_int(ev, "result"), result);
		found++;
	}
	ASSERT_EQ(found, 1);
}

/* Output, errno and exit status identical with and without libgprof, on both runtimes. */
TEST(preload_results_unchanged)
{
	const char *const apps[] = {proc_build_path("test/apps/steps-app"),
				    proc_build_path("test/apps/steps-app-real")};
	const char *env[] = {"GPROF_SCHEDULE=all", NULL};

	for (size_t a = 0; a < ARRAY_SIZE(apps); a++) {
		const char *argv[] = {apps[a], "-e", NULL};
		struct e2e_run with, without;

		e2e_run(&without, argv, e2e_cupti(false), env, false);
		e2e_run(&with, argv, e2e_cupti(false), env, true);
		ASSERT_EQ(with.res.status, without.res.status);
		ASSERT_STR_EQ(with.res.out, without.res.out);
		ASSERT_STR_CONTAINS(with.res.out, "cudaMalloc(1 TiB) = ");
		ASSERT_STR_CONTAINS(with.res.out, ", errno 4242\n");
		check_wide_launch(&with);
		e2e_free(&with);
		e2e_free(&without);
	}
}

/* With the real libcudart and no GPU every call fails with 35, and passes through as it is. */
TEST(preload_real_runtime_without_gpu)
{
	const char *argv[] = {proc_build_path("test/apps/steps-app-real"), "-e", NULL};
	const char *env[] = {"GPROF_SCHEDULE=all", NULL};
	struct e2e_run r;

	e2e_run_ok(&r, argv, false, env, 1);
	ASSERT_STR_CONTAINS(r.res.out, "cudaMalloc(1 TiB) = 35, errno 4242");
	ASSERT_STR_CONTAINS(r.res.out, "cudaMemcpy(bad kind) = 35, errno 77");
	ASSERT_EQ(e2e_count(&r.traces[0], "cuda_runtime", "cudaMalloc"), 1);
	e2e_free(&r);
}

/* No CUDA, or GPROF_DISABLE=1: no file, no message, the same exit status. */
TEST(preload_inert_cases)
{
	const char *py_argv[] = {"/usr/bin/env", "python3", "-c", "import sys; sys.exit(3)", NULL};
	const char *sh_argv[] = {"/bin/sh", "-c", "exit 5", NULL};
	const char *true_argv[] = {"/bin/true", NULL};
	const char *disable[] = {"GPROF_DISABLE=1", NULL};
	const char *app_argv[] = {proc_build_path("test/apps/steps-app"), "-s", "6", NULL};
	struct {
		const char *const *argv;
		const char *const *env;
		int status;
	} cases[] = {
	    {true_argv, NULL, 0},    {sh_argv, NULL, 5},     {py_argv, NULL, 3},
	    {true_argv, disable, 0}, {app_argv, disable, 0},
	};

	for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
		struct e2e_run r;

		if (cases[c].argv == py_argv && access("/usr/bin/python3", X_OK) != 0)
			continue;
		e2e_run(&r, cases[c].argv, e2e_cupti(false), cases[c].env, true);
		ASSERT_MSG(r.res.status == cases[c].status, "case %zu: status %d, stderr %s", c,
			   r.res.status, r.res.err);
		ASSERT_EQ(r.n_traces, 0);
		ASSERT_MSG(!strstr(r.res.err, "gprof:"), "case %zu printed: %s", c, r.res.err);
		e2e_free(&r);
	}
}

/* A CUDA program that never marks a step gets one message naming the two ways out. */
TEST(preload_no_step_marker)
{
	const char *argv[] = {proc_build_path("test/apps/steps-app-real"), "-e", NULL};
	struct e2e_run r;

	e2e_run_ok(&r, argv, false, NULL, 0);
	ASSERT_STR_CONTAINS(r.res.err, "gprof: ");
	ASSERT_STR_CONTAINS(r.res.err, "torch.cuda.nvtx.mark");
	ASSERT_STR_CONTAINS(r.res.err, "GPROF_SCHEDULE=all");
	e2e_free(&r);
}

/* A bad configuration value: one line, libgprof off, the program as without it. */
TEST(preload_bad_config)
{
	const char *argv[] = {proc_build_path("test/apps/steps-app"), "-s", "6", NULL};
	const char *env[] = {"GPROF_SCHEDULE=wait=1,bogus=2", NULL};
	struct e2e_run r;

	e2e_run_ok(&r, argv, false, env, 0);
	ASSERT_STR_CONTAINS(r.res.err, "gprof: GPROF_SCHEDULE='wait=1,bogus=2': ");
	ASSERT_MSG(text_one_line(r.res.err), "%s", r.res.err);
	ASSERT_STR_CONTAINS(r.res.out, "steps-app: 6 steps x 1 threads ok");
	e2e_free(&r);
}

/* NVTX_INJECTION64_PATH set by the user: one warning, the program runs. */
TEST(preload_nvtx_path_taken)
{
	const char *argv[] = {proc_build_path("test/apps/steps-app"), "-s", "3", NULL};
	const char *env[] = {"NVTX_INJECTION64_PATH=/nonexistent/libothertool.so", NULL};
	struct e2e_run r;

	e2e_run(&r, argv, e2e_cupti(false), env, true);
	ASSERT_EQ(r.res.status, 0);
	ASSERT_STR_CONTAINS(r.res.err,
			    "gprof: NVTX_INJECTION64_PATH is already set to "
			    "'/nonexistent/libothertool.so', another tool: libgprof sees "
			    "no NVTX step markers or ranges");
	/* why nothing was recorded, not "never marked a step" (issue #15) */
	ASSERT_STR_CONTAINS(r.res.err, "gprof: no step marker reached libgprof, as "
				       "NVTX_INJECTION64_PATH names another tool");
	ASSERT(!strstr(r.res.err, "never marked a step"));
	ASSERT_STR_CONTAINS(r.res.out, "steps-app: 3 steps x 1 threads ok");
	e2e_free(&r);
}

/*
 * Why nothing was recorded is said by a process that did GPU work: one that never marked a step
 * says so in one line; one that only asked how many devices there are (torchrun's launcher)
 * made no CUDA context and says nothing (issue #28). On our runtime, then on NVIDIA's (static).
 */
TEST(preload_never_marked_a_step)
{
	const char *const apps[] = {"test/apps/nvcc-app", "test/apps/nvcc-real-static"};
	const char *env[] = {"GPROF_STEP_MARKER=nomark", NULL};

	for (size_t a = 0; a < ARRAY_SIZE(apps); a++) {
		const char *work[] = {proc_build_path(apps[a]), NULL};
		const char *count[] = {proc_build_path(apps[a]), "-q", NULL};
		struct e2e_run r;

		if (access(work[0], X_OK))
			SKIP("no %s (nvcc missing)", work[0]);
		if (a)
			e2e_need_real_runtime(work[0]);
		e2e_run(&r, work, e2e_cupti(true), env, true);
		ASSERT_MSG(r.res.status == 0 && r.n_traces == 0, "%s", r.res.err);
		ASSERT_STR_CONTAINS(r.res.err, "gprof: the program used CUDA but never marked a "
					       "step ('nomark'), so nothing was recorded");
		ASSERT_MSG(text_one_line(r.res.err), "%s", r.res.err);
		e2e_free(&r);
		e2e_run(&r, count, e2e_cupti(true), env, true);
		ASSERT_EQ(r.res.status, 0);
		ASSERT_STR_CONTAINS(r.res.out, "nvcc-app: 1 devices");
		ASSERT_MSG(!strstr(r.res.err, "gprof:"), "%s", r.res.err);
		e2e_free(&r);
	}
}

/* A program that ends before the schedule's first active step: one line saying so (issue #15). */
TEST(preload_ends_before_first_active_step)
{
	const char *argv[] = {proc_build_path("test/apps/steps-app"), "-s", "3", NULL};
	const char *env[] = {"GPROF_SCHEDULE=skip_first=1,wait=1,warmup=2,active=1", NULL};
	struct e2e_run r;

	e2e_run_ok(&r, argv, true, env, 0);
	ASSERT_STR_EQ(r.res.err,
		      "gprof: the program ended at step 2, before step 4, the first "
		      "that GPROF_SCHEDULE=skip_first=1,wait=1,warmup=2,active=1,repeat=1 "
		      "records, so nothing was recorded: lower skip_first, wait or warmup\n");
	e2e_free(&r);
}

/* local-app, under GPROF_SCHEDULE=all: one trace. */
static void run_local_app(struct e2e_run *r, bool cupti)
{
	const char *argv[] = {proc_build_path("test/apps/local-app"), NULL};
	const char *env[] = {"GPROF_SCHEDULE=all", NULL};

	e2e_run_ok(r, argv, cupti, env, 1);
}

/*
 * The runtime loaded RTLD_LOCAL inside a plugin (as Python loads extension modules), where
 * dlsym(RTLD_NEXT) finds nothing: the hooks still reach it, and the calls are recorded.
 */
TEST(preload_runtime_loaded_local)
{
	struct e2e_run r;

	run_local_app(&r, false);
	ASSERT_STR_CONTAINS(r.res.out, "cudaMalloc 0, cudaMemcpy 0, cudaFree 0");
	ASSERT_EQ(e2e_count(&r.traces[0], "cuda_runtime", "cudaMalloc"), 1);
	ASSERT_EQ(e2e_count(&r.traces[0], "cuda_runtime", "cudaMemcpy"), 1);
	ASSERT_EQ(e2e_count(&r.traces[0], "cuda_runtime", "cudaFree"), 1);
	e2e_free(&r);
}

/*
 * Kernel names are demangled with the C++ runtime of the plugin that launched them, which is
 * not in the global scope either (PyTorch's, under Python).
 */
TEST(preload_demangles_with_a_local_cxx_runtime)
{
	struct e2e_run r;

	run_local_app(&r, true);
	ASSERT_EQ(e2e_count(&r.traces[0], "kernel", "work(float*)"), 1);
	ASSERT_EQ(e2e_count(&r.traces[0], "kernel", NULL), 1);
	e2e_free(&r);
}

/*
 * Another CUPTI tool that starts mid-run (cupti-tool subscribes before its step 4, as
 * torch.profiler's Kineto does when its profiler starts) gets CUPTI: its subscription succeeds
 * and it records every kernel from then on; libgprof says so in one line, keeps the GPU work of
 * steps 2-3 (each kernel linked) and records step 4 from its hooks. Before, the tool got
 * CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED and recorded nothing.
 */
TEST(preload_cupti_handed_over)
{
	const char *argv[] = {proc_build_path("test/apps/cupti-tool"), NULL};
	struct e2e_run r;

	e2e_run_ok(&r, argv, true, NULL, 1);
	/* 4 launches in each of steps 4-7 */
	ASSERT_STR_EQ(r.res.out, "cupti-tool: subscribe 0, 16 kernels\n");
	ASSERT_EQ(text_lines(r.res.err, "gprof: collector: "), 1);
	ASSERT_STR_CONTAINS(r.res.err, "subscribed to CUPTI (torch.profiler, Nsight?): libgprof "
				       "handed it over");
	ASSERT_EQ(e2e_count(&r.traces[0], "kernel", NULL), 8);
	ASSERT_EQ(e2e_count(&r.traces[0], "ac2g", NULL), 2 * 8);
	ASSERT_EQ(e2e_count(&r.traces[0], "cuda_runtime", "cudaLaunchKernel"), 12);
	e2e_free(&r);
}

/*
 * The hook tables have a row for every value of their enums, each row names a CUPTI cbid, a
 * family and the public name its symbol carries, and every hooked symbol is a definition of
 * libgprof's own (preload/hooks.c), not one it would forward from a runtime.
 */
TEST(preload_hook_table)
{
	const char *lib = proc_build_path("libgprof.so");
	void *h;

	for (int f = 0; f < GPROF_FAMILY_COUNT; f++)
		ASSERT_MSG(gprof_hook_family[f].name && gprof_hook_family[f].acts,
			   "family %d has no row", f);
	/* What the library may run in its constructor is off. */
	setenv("GPROF_DISABLE", "1", 1);
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	ASSERT_MSG(h, "%s", dlerror());
	for (int i = 0; i < GPROF_HOOK_COUNT; i++) {
		const struct gprof_hook_info *hi = &gprof_hook_info[i];
		Dl_info where;
		void *sym;

		ASSERT_MSG(hi->symbol && hi->public_name, "hook %d has no row", i);
		ASSERT_MSG(hi->cbid > 0, "%s", hi->symbol);
		ASSERT_MSG((unsigned)hi->family < GPROF_FAMILY_COUNT, "%s", hi->symbol);
		ASSERT_STR_CONTAINS(hi->symbol, hi->public_name);
		sym = dlsym(h, hi->symbol);
		ASSERT_MSG(sym && dladdr(sym, &where) && !strcmp(where.dli_fname, lib),
			   "%s is not defined by %s", hi->symbol, lib);
	}
	dlclose(h);
}
