/*
 * End-to-end tests of NCCL's collectives (preload/nccl.c): test/apps/nccl-app on the simulated
 * libnccl, GPU and CUPTI. Each collective call of the recorded steps, as the simulated libnccl's
 * own ground-truth lines tell them, must be one nccl:<op> cpu_op with its count and type, whose
 * External id is carried by exactly the driver call (cuLaunchKernel: NCCL launches through the
 * driver) and the kernel that call launched (none for a call NCCL refused).
 */
#include <stdio.h>
#include <string.h>

#include "task.h"
#include "util/e2e.h"
#include "util/gtlog.h"

/*
 * nccl-app: per step ncclAllReduce of 2^20 floats, then ncclAllGather of 2^18 / WORLD_SIZE bf16
 * (and with -e an all-reduce that NCCL refuses).
 */
#define FIRST_STEP 2 /* the default schedule records steps 2-4 */
#define STEPS	   3

/* The operator PyTorch's profiler names for a call, and the element types of ncclDataType_t. */
static const struct {
	const char *symbol, *op;
} ops[] = {
    {"ncclAllReduce", "nccl:all_reduce"},
    {"ncclBroadcast", "nccl:broadcast"},
    {"ncclReduce", "nccl:reduce"},
    {"ncclAllGather", "nccl:all_gather"},
    {"ncclReduceScatter", "nccl:reduce_scatter"},
};

static const char *const types[] = {"signed char", "unsigned char", "int",	 "unsigned int",
				    "long int",	   "unsigned long", "c10::Half", "float",
				    "double",	   "c10::BFloat16"};

static const char *op_of(const char *symbol)
{
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(ops[i].symbol, symbol))
			return ops[i].op;
	FAIL("no operator for %s", symbol);
}

/* Trace times are ns since baseTimeNanoseconds, written as µs with 3 decimals: exact. */
static long long abs_ns(const struct trace *t, const json_t *ev, const char *key)
{
	json_t *base = json_object_get(t->root, "baseTimeNanoseconds");

	return json_integer_value(base) +
	       (long long)(json_number_value(json_object_get(ev, key)) * 1000.0 + 0.5);
}

/* The launch (a driver call of the ground truth) the NCCL call `n` made on its thread. */
static json_t *gt_launch(json_t *gt, json_t *n)
{
	json_t *calls = gtlog_filter(gt, "{\"type\":\"api\",\"name\":\"cuLaunchKernel\"}");
	json_t *found = NULL, *g;
	size_t i;

	json_array_foreach(calls, i, g)
	{
		if (gtlog_int(g, "tid") == gtlog_int(n, "tid") &&
		    gtlog_int(g, "start") >= gtlog_int(n, "start") &&
		    gtlog_int(g, "end") <= gtlog_int(n, "end")) {
			ASSERT_MSG(!found, "two launches in one %s", gtlog_str(n, "name"));
			found = g;
		}
	}
	ASSERT_MSG(found, "no launch in %s at %lld", gtlog_str(n, "name"), gtlog_int(n, "start"));
	json_incref(found);
	json_decref(calls);
	return found;
}

/* The trace's only cpu_op whose span holds the ground truth's call n. */
static json_t *trace_op(const struct trace *t, json_t *n)
{
	json_t *found = NULL, *ev;
	size_t i;

	json_array_foreach(t->events, i, ev)
	{
		long long ts = abs_ns(t, ev, "ts");
		long long end =
		    ts + (long long)(json_number_value(json_object_get(ev, "dur")) * 1000.0 + 0.5);

		if (strcmp(trace_str(ev, "cat"), "cpu_op") || ts > gtlog_int(n, "start") ||
		    end < gtlog_int(n, "end"))
			continue;
		ASSERT_MSG(!found, "two cpu_op events hold %s at %lld", gtlog_str(n, "name"),
			   gtlog_int(n, "start"));
		found = ev;
	}
	ASSERT_MSG(found, "no cpu_op holds %s at %lld", gtlog_str(n, "name"),
		   gtlog_int(n, "start"));
	return found;
}

/* Input Dims [[count]] and Input type [type] of op, as the call had them. */
static void check_inputs(const json_t *op, json_t *n)
{
	json_t *dims = json_object_get(json_object_get(op, "args"), "Input Dims");
	json_t *type = json_object_get(json_object_get(op, "args"), "Input type");
	long long dt = gtlog_int(n, "datatype");

	ASSERT_EQ(json_array_size(dims), 1);
	ASSERT_EQ(json_array_size(json_array_get(dims, 0)), 1);
	ASSERT_EQ(json_integer_value(json_array_get(json_array_get(dims, 0), 0)),
		  gtlog_int(n, "count"));
	ASSERT(dt >= 0 && dt < (long long)(sizeof(types) / sizeof(types[0])));
	ASSERT_EQ(json_array_size(type), 1);
	ASSERT_STR_EQ(json_string_value(json_array_get(type, 0)), types[dt]);
}

/*
 * The events carrying External id `id`: with CUPTI, exactly the driver call with the launch's
 * correlation and the kernel it launched (the ground truth's, by name); none without a launch,
 * or without CUPTI (no hook sees a driver call). Returns how many.
 */
static int check_external(const struct trace *t, json_t *gt, long long id, json_t *launch,
			  bool cupti)
{
	long long corr = launch ? gtlog_int(launch, "corr") : -2;
	int driver = 0, kernels = 0;
	json_t *ev;
	size_t i;

	json_array_foreach(t->events, i, ev)
	{
		const char *cat = trace_str(ev, "cat");

		if (e2e_arg_int(ev, "External id") != id || !strcmp(cat, "cpu_op"))
			continue;
		if (!strcmp(cat, "cuda_driver")) {
			ASSERT_STR_EQ(trace_str(ev, "name"), "cuLaunchKernel");
			ASSERT_EQ(e2e_arg_int(ev, "correlation"), corr);
			driver++;
		} else {
			char match[128];
			json_t *gpu;

			ASSERT_STR_EQ(cat, "kernel");
			ASSERT_EQ(e2e_arg_int(ev, "correlation"), corr);
			snprintf(match, sizeof(match), "{\"type\":\"gpu\",\"corr\":%lld}", corr);
			gpu = gtlog_filter(gt, match);
			ASSERT_EQ(json_array_size(gpu), 1);
			ASSERT_STR_EQ(trace_str(ev, "name"),
				      gtlog_str(json_array_get(gpu, 0), "name"));
			json_decref(gpu);
			kernels++;
		}
	}
	ASSERT_EQ(driver, launch && cupti ? 1 : 0);
	ASSERT_EQ(kernels, launch && cupti ? 1 : 0);
	return driver + kernels;
}

/* Every event with an External id belongs to one of the window's collectives (n_ids of them). */
static void check_no_other_ids(const struct trace *t, int n_ids, int carried)
{
	int with_id = 0, ops_seen = 0;
	json_t *ev;
	size_t i;

	json_array_foreach(t->events, i, ev)
	{
		if (e2e_arg_int(ev, "External id") <= 0)
			continue;
		if (!strcmp(trace_str(ev, "cat"), "cpu_op"))
			ops_seen++;
		else
			with_id++;
	}
	ASSERT_EQ(ops_seen, n_ids);
	ASSERT_EQ(with_id, carried);
}

static void run_nccl_app(struct e2e_run *r, bool cupti, bool refused)
{
	const char *argv[] = {proc_build_path("test/apps/nccl-app"), "-s", "8",
			      refused ? "-e" : NULL, NULL};
	const char *env[] = {"GPROF_SUMMARY=off", "RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=0", NULL};

	e2e_run_ok(r, argv, cupti, env, 1);
	/* a process with NCCL loaded names its backend (test-export: one without it does not) */
	ASSERT_STR_CONTAINS(r->traces[0].raw,
			    "\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 1");
}

/* The collectives of the recorded steps, by the simulated libnccl's ground truth. */
static void check_collectives(bool cupti, bool refused)
{
	size_t i, per_step = refused ? 3 : 2;
	struct e2e_run r;
	json_t *calls;
	int carried = 0;

	run_nccl_app(&r, cupti, refused);
	calls = gtlog_sorted(r.gt, "{\"type\":\"nccl\"}", "start");
	ASSERT_EQ(json_array_size(calls), 8 * per_step);
	for (i = FIRST_STEP * per_step; i < (FIRST_STEP + STEPS) * per_step; i++) {
		json_t *n = json_array_get(calls, i), *launch = NULL, *op;

		/* the hook returned what NCCL did: nccl-app checks it and exits 1 otherwise */
		ASSERT_EQ(gtlog_int(n, "result"), refused && i % per_step == 2 ? 4 : 0);
		op = trace_op(&r.traces[0], n);
		ASSERT_STR_EQ(trace_str(op, "name"), op_of(gtlog_str(n, "name")));
		check_inputs(op, n);
		ASSERT_GT(e2e_arg_int(op, "External id"), 0);
		if (gtlog_int(n, "result") == 0)
			launch = gt_launch(r.gt, n);
		carried += check_external(&r.traces[0], r.gt, e2e_arg_int(op, "External id"),
					  launch, cupti);
		json_decref(launch);
	}
	check_no_other_ids(&r.traces[0], (int)(STEPS * per_step), carried);
	json_decref(calls);
	e2e_free(&r);
}

TEST(e2e_nccl_collectives)
{
	check_collectives(true, false);
}

/*
 * Without CUPTI the hooks write the operators, and no launch: NCCL launches through the driver,
 * which no hook sees (as with NVIDIA's NCCL).
 */
TEST(e2e_nccl_hooks_only)
{
	check_collectives(false, false);
}

/* A call NCCL refuses returns its error through the hook and is an operator with no work. */
TEST(e2e_nccl_refused_call)
{
	check_collectives(true, true);
}

/* nccl-app with PyTorch around its collectives (-p or -k), as rank 1 of 2: one trace. */
static void run_inside_pytorch(struct e2e_run *r, const char *how)
{
	const char *argv[] = {proc_build_path("test/apps/nccl-app"), "-s", "8", how, NULL};
	const char *env[] = {"GPROF_SUMMARY=off", "RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=0", NULL};

	e2e_run_ok(r, argv, true, env, 1);
}

/*
 * Collectives made inside an operator of PyTorch's own profiler (nccl-app -k, as PyTorch's
 * process groups under --torch): PyTorch's profiler writes them, libgprof's NCCL hook writes
 * nothing of its own, and each collective's kernel carries the operator's External id.
 */
TEST(e2e_nccl_inside_pytorch_profiler)
{
	int kernels = 0;
	struct e2e_run r;
	json_t *ev;
	size_t i;

	run_inside_pytorch(&r, "-k");
	ASSERT(!strstr(r.res.err, "handed it over"));
	json_array_foreach(r.traces[0].events, i, ev)
	{
		ASSERT_MSG(strncmp(trace_str(ev, "name"), "nccl:", 5), "%s", trace_str(ev, "name"));
		if (strcmp(trace_str(ev, "cat"), "kernel") ||
		    strncmp(trace_str(ev, "name"), "ncclDevKernel_", 14))
			continue;
		ASSERT_GT(e2e_arg_int(ev, "External id"), 0);
		kernels++;
	}
	ASSERT_EQ(kernels, 2 * STEPS);
	e2e_free(&r);
}

/*
 * Collectives made inside PyTorch's own ranges of their names (nccl-app -p, as PyTorch's
 * process groups in NVTX mode): PyTorch's event is the only one (a user_annotation, as
 * torch.profiler writes it), and the collective's kernel is tied to it.
 */
TEST(e2e_nccl_inside_pytorch_operators)
{
	long long ids[2 * STEPS];
	int n = 0, kernels = 0;
	struct e2e_run r;
	json_t *ev;
	size_t i;

	run_inside_pytorch(&r, "-p");
	json_array_foreach(r.traces[0].events, i, ev)
	{
		/* the host's events; their spans on the GPU's streams aside */
		if (strncmp(trace_str(ev, "name"), "nccl:", 5) ||
		    strcmp(trace_str(ev, "ph"), "X") ||
		    !strcmp(trace_str(ev, "cat"), "gpu_user_annotation"))
			continue;
		ASSERT_STR_EQ(trace_str(ev, "cat"), "user_annotation");
		ASSERT_GT(e2e_arg_int(ev, "Record function id"), 0);
		ASSERT_MSG(n < 2 * STEPS, "more than one event per collective");
		ids[n++] = e2e_arg_int(ev, "External id");
	}
	ASSERT_EQ(n, 2 * STEPS);
	json_array_foreach(r.traces[0].events, i, ev)
	{
		if (strcmp(trace_str(ev, "cat"), "kernel") ||
		    strncmp(trace_str(ev, "name"), "ncclDevKernel_", 14))
			continue;
		for (int k = 0; k < n && ids[k] != e2e_arg_int(ev, "External id"); k++)
			ASSERT_MSG(k + 1 < n, "%s not tied to a collective", trace_str(ev, "name"));
		kernels++;
	}
	ASSERT_EQ(kernels, 2 * STEPS);
	e2e_free(&r);
}
