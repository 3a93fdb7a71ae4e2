/*
 * The test programs of test/apps/ run unmodified on the simulated runtime and driver and give
 * the record streams their header comments promise, through the fake libcupti (cupti-dump) and
 * the ground-truth log. cbids are those of cupti_runtime_cbid.h and cupti_driver_cbid.h.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/compiler.h"
#include "task.h"
#include "util/e2e.h"
#include "util/gtlog.h"
#include "util/text.h"
#include "util/proc.h"

#define START(e) gtlog_int(e, "start")
#define END(e)	 gtlog_int(e, "end")

/* How many entries must match a filter. */
struct expect {
	const char *match;
	size_t n;
};

static void check_counts(json_t *log, const struct expect *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ASSERT_MSG(gtlog_count(log, e[i].match) == e[i].n, "%zu entries %s, not %zu",
			   gtlog_count(log, e[i].match), e[i].match, e[i].n);
}

#define CHECK_COUNTS(log, table) check_counts(log, table, sizeof(table) / sizeof(table[0]))

/* Runs argv (a program of $TEST_BUILD) with env; fails the test unless it exits 0. */
static void run_app(const char *const argv[], const char *const env[])
{
	struct proc_result res;

	if (access(argv[0], X_OK))
		SKIP("%s was not built (no nvcc?)", argv[0]);
	ASSERT_EQ(proc_run(argv, env, 60, &res), 0);
	ASSERT_MSG(res.status == 0, "%s exited %d: %s", argv[0], res.status, res.err);
	proc_result_free(&res);
}

/*
 * Runs argv under cupti-dump (and FAKEGPU_LOG if log_path), with the environment `extra` too
 * (up to 4 "NAME=value", or NULL); returns the dump.
 */
static json_t *run_dumped_with(const char *const argv[], const char *log_path,
			       const char *const extra[])
{
	const char *dump_path = proc_tmp_file();
	char out_env[80], log_env[80];
	const char *env[9] = {proc_preload(proc_build_path("test/apps/cupti-dump.so")), out_env,
			      "LD_BIND_NOW=1", log_path ? log_env : NULL};
	size_t n = log_path ? 4 : 3;
	json_t *dump;

	for (; extra && *extra && n < ARRAY_SIZE(env) - 1; extra++)
		env[n++] = *extra;
	snprintf(out_env, sizeof(out_env), "CUPTI_DUMP_OUT=%s", dump_path);
	snprintf(log_env, sizeof(log_env), "FAKEGPU_LOG=%s", log_path ? log_path : "");
	run_app(argv, env);
	dump = gtlog_load_dump(dump_path);
	ASSERT(dump);
	return dump;
}

/* Runs argv under cupti-dump (and FAKEGPU_LOG if log_path); returns the dump. */
static json_t *run_dumped(const char *const argv[], const char *log_path)
{
	return run_dumped_with(argv, log_path, NULL);
}

/* The record of type `type` ("RUNTIME", "DRIVER") with correlation `corr`, or NULL. */
static json_t *find_corr(json_t *dump, const char *type, long long corr)
{
	size_t i;
	json_t *e;

	json_array_foreach(dump, i, e)
	{
		if (!strcmp(gtlog_str(e, "type"), type) && gtlog_int(e, "corr") == corr)
			return e;
	}
	return NULL;
}

/* An API record has one enter and one exit callback with its correlation id and cbid. */
static void check_callbacks_of(json_t *dump, json_t *api)
{
	for (int site = 0; site < 2; site++) {
		char match[160];

		snprintf(match, sizeof(match),
			 "{\"type\":\"CB\",\"site\":\"%s\",\"corr\":%lld,\"cbid\":%lld}",
			 site ? "exit" : "enter", gtlog_int(api, "corr"), gtlog_int(api, "cbid"));
		ASSERT_MSG(gtlog_count(dump, match) == 1, "%s", match);
	}
}

static bool is_gpu_record(const char *type)
{
	return !strcmp(type, "KERNEL") || !strcmp(type, "MEMCPY") || !strcmp(type, "MEMSET");
}

/*
 * Every API record has its pair of callbacks and there are no others; every GPU record belongs
 * to an API record of `api` ("RUNTIME" or "DRIVER") that started before the work did. The dump
 * is complete (END) with nothing dropped.
 */
static void check_correlation(json_t *dump, const char *api)
{
	size_t i, n_api = 0;
	json_t *e, *call;

	json_array_foreach(dump, i, e)
	{
		const char *type = gtlog_str(e, "type");

		if (!strcmp(type, "RUNTIME") || !strcmp(type, "DRIVER")) {
			n_api++;
			check_callbacks_of(dump, e);
		}
		if (!is_gpu_record(type))
			continue;
		call = find_corr(dump, api, gtlog_int(e, "corr"));
		ASSERT_MSG(call, "%s record %lld has no %s record", type, gtlog_int(e, "corr"),
			   api);
		ASSERT_GE(START(e), START(call));
	}
	ASSERT_GT(n_api, 0);
	ASSERT_EQ(gtlog_count(dump, "{\"type\":\"CB\"}"), 2 * n_api);
	ASSERT_EQ(gtlog_count(dump, "{\"type\":\"END\"}"), 1);
	ASSERT_EQ(gtlog_count(dump, "{\"type\":\"DROPPED\"}"), 0);
}

/* Every kernel record of the dump is in the ground-truth log with the same values. */
static void check_against_log(json_t *dump, json_t *log)
{
	json_t *kernels = gtlog_filter(dump, "{\"type\":\"KERNEL\"}"), *e;
	size_t i;

	ASSERT_GT(json_array_size(kernels), 0);
	json_array_foreach(kernels, i, e)
	{
		char match[4096];

		snprintf(match, sizeof(match),
			 "{\"type\":\"gpu\",\"kind\":\"kernel\",\"corr\":%lld,\"name\":\"%s\","
			 "\"start\":%lld,\"end\":%lld,\"stream\":%lld,\"device\":%lld}",
			 gtlog_int(e, "corr"), gtlog_str(e, "name"), START(e), END(e),
			 gtlog_int(e, "stream"), gtlog_int(e, "device"));
		ASSERT_MSG(gtlog_count(log, match) == 1, "%s", match);
	}
	json_decref(kernels);
}

/* The stream id that every entry matching `match` has (there must be some). */
static long long stream_of(json_t *log, const char *match)
{
	json_t *hits = gtlog_filter(log, match), *e;
	long long id = gtlog_int(json_array_get(hits, 0), "stream");
	size_t i;

	ASSERT_MSG(json_array_size(hits) > 0, "%s", match);
	json_array_foreach(hits, i, e)
	{
		ASSERT_EQ(gtlog_int(e, "stream"), id);
	}
	json_decref(hits);
	return id;
}

/* ---- nvcc-app, 3 steps (its header comment says what one step does) ---- */

static const struct expect nvcc_app_records[] = {
    {"{\"type\":\"KERNEL\"}", 9},
    {"{\"type\":\"KERNEL\",\"name\":\"_Z4fillPffi\",\"grid\":\"4,1,1\",\"block\":\"256,1,1\"}", 3},
    {"{\"type\":\"KERNEL\",\"name\":\"_Z5scaleIfEvPT_S0_i\",\"grid\":\"4,1,1\"}", 3},
    {"{\"type\":\"KERNEL\",\"name\":\"_Z5scaleIdEvPT_S0_i\",\"grid\":\"2,1,1\"}", 3},
    /* copy kinds HTOD 1, DTOH 2, DTOD 8; memory kinds PAGEABLE 1, PINNED 2, DEVICE 3 */
    {"{\"type\":\"MEMCPY\",\"copy_kind\":1,\"src_kind\":2,\"dst_kind\":3,\"bytes\":4096}", 3},
    {"{\"type\":\"MEMCPY\",\"copy_kind\":8,\"src_kind\":3,\"dst_kind\":3,\"bytes\":4096}", 3},
    {"{\"type\":\"MEMCPY\",\"copy_kind\":2,\"src_kind\":3,\"dst_kind\":1,\"bytes\":4096}", 3},
    {"{\"type\":\"MEMSET\",\"bytes\":4096,\"value\":0}", 3},
    /* op: ALLOCATION 1, RELEASE 2 */
    {"{\"type\":\"MEMORY2\",\"op\":1,\"memory_kind\":3,\"bytes\":4096}", 3},
    {"{\"type\":\"MEMORY2\",\"op\":2,\"memory_kind\":3,\"bytes\":4096}", 3},
    {"{\"type\":\"MEMORY2\",\"op\":1,\"memory_kind\":2,\"bytes\":4096}", 1},
    {"{\"type\":\"MEMORY2\",\"op\":2,\"memory_kind\":2,\"bytes\":4096}", 1},
    {"{\"type\":\"RUNTIME\",\"cbid\":20}", 3},	/* cudaMalloc */
    {"{\"type\":\"RUNTIME\",\"cbid\":27}", 1},	/* cudaHostAlloc */
    {"{\"type\":\"RUNTIME\",\"cbid\":451}", 1}, /* cudaFuncGetName */
    {"{\"type\":\"DRIVER\"}", 0},
};

/* The launch, copy and memset entry points of the legacy build, then the per-thread one. */
static const struct expect nvcc_app_entries[2][4] = {
    {{"{\"type\":\"RUNTIME\",\"cbid\":211}", 9},  /* __cudaLaunchKernel, as cudaLaunchKernel */
     {"{\"type\":\"RUNTIME\",\"cbid\":41}", 6},	  /* cudaMemcpyAsync */
     {"{\"type\":\"RUNTIME\",\"cbid\":31}", 3},	  /* cudaMemcpy */
     {"{\"type\":\"RUNTIME\",\"cbid\":49}", 3}},  /* cudaMemset */
    {{"{\"type\":\"RUNTIME\",\"cbid\":214}", 9},  /* __cudaLaunchKernel_ptsz, likewise */
     {"{\"type\":\"RUNTIME\",\"cbid\":225}", 6},  /* cudaMemcpyAsync_ptsz */
     {"{\"type\":\"RUNTIME\",\"cbid\":215}", 3},  /* cudaMemcpy_ptds */
     {"{\"type\":\"RUNTIME\",\"cbid\":233}", 3}}, /* cudaMemset_ptds */
};

/* Stream 1, stream 2 and the default stream (legacy: id 7; per-thread: another) as promised. */
static void check_nvcc_app_streams(json_t *dump, bool per_thread)
{
	long long s1 = stream_of(dump, "{\"type\":\"KERNEL\",\"name\":\"_Z4fillPffi\"}");
	long long s2 = stream_of(dump, "{\"type\":\"KERNEL\",\"name\":\"_Z5scaleIfEvPT_S0_i\"}");
	long long dflt = stream_of(dump, "{\"type\":\"KERNEL\",\"name\":\"_Z5scaleIdEvPT_S0_i\"}");

	ASSERT_EQ(stream_of(dump, "{\"type\":\"MEMCPY\",\"copy_kind\":1}"), s1);
	ASSERT_EQ(stream_of(dump, "{\"type\":\"MEMCPY\",\"copy_kind\":8}"), s2);
	ASSERT_EQ(stream_of(dump, "{\"type\":\"MEMCPY\",\"copy_kind\":2}"), dflt);
	ASSERT_EQ(stream_of(dump, "{\"type\":\"MEMSET\"}"), dflt);
	ASSERT(s1 != s2 && s1 != dflt && s2 != dflt);
	ASSERT(per_thread ? dflt != 7 : dflt == 7);
}

static void check_nvcc_app(const char *app, bool per_thread)
{
	const char *log_path = proc_tmp_file();
	const char *argv[] = {proc_build_path(app), "3", NULL};
	json_t *dump = run_dumped(argv, log_path), *log = gtlog_load(log_path);

	ASSERT(log);
	CHECK_COUNTS(dump, nvcc_app_records);
	CHECK_COUNTS(dump, nvcc_app_entries[per_thread]);
	check_nvcc_app_streams(dump, per_thread);
	check_correlation(dump, "RUNTIME");
	check_against_log(dump, log);
	json_decref(dump);
	json_decref(log);
}

TEST(fakecuda_nvcc_app)
{
	check_nvcc_app("test/apps/nvcc-app", false);
}

TEST(fakecuda_nvcc_app_per_thread_stream)
{
	check_nvcc_app("test/apps/nvcc-app-pt", true);
}

/*
 * What a record or callback of a dump says, without what differs from run to run (times,
 * correlation ids, addresses, thread ids): its type and these members.
 */
static char *record_signature(json_t *e)
{
	static const char *const keys[] = {
	    "domain",	"site",	    "cbid",  "func",  "name", "grid",	     "block", "copy_kind",
	    "src_kind", "dst_kind", "bytes", "value", "op",   "memory_kind", "result"};
	char buf[1024];
	int n = snprintf(buf, sizeof(buf), "%s", gtlog_str(e, "type"));

	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		json_t *v = json_object_get(e, keys[i]);
		char *text = v ? json_dumps(v, JSON_ENCODE_ANY) : NULL;

		if (text && n < (int)sizeof(buf))
			n += snprintf(buf + n, sizeof(buf) - (size_t)n, " %s=%s", keys[i], text);
		free(text);
	}
	return strdup(buf);
}

static int compare_strings(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The dump's signatures, sorted; *n gets their number. Free each, then the array. */
static char **signatures(json_t *dump, size_t *n)
{
	char **sigs = calloc(json_array_size(dump) + 1, sizeof(*sigs));
	size_t i;
	json_t *e;

	ASSERT(sigs);
	json_array_foreach(dump, i, e)
	{
		sigs[i] = record_signature(e);
	}
	*n = json_array_size(dump);
	qsort(sigs, *n, sizeof(*sigs), compare_strings);
	return sigs;
}

/*
 * The fake runtime and NVIDIA's, on the same simulated GPU, running the same program: their
 * record and callback streams agree, record for record (kinds, cbids, function and kernel
 * names, dimensions, copy kinds, bytes, memory records, results), so the two cannot drift.
 */
TEST(fakecuda_runtimes_agree)
{
	const char *const pairs[][2] = {{"test/apps/nvcc-app", "test/apps/nvcc-real"},
					{"test/apps/nvcc-app-pt", "test/apps/nvcc-real-pt"}};

	for (size_t p = 0; p < ARRAY_SIZE(pairs); p++) {
		const char *fake_argv[] = {proc_build_path(pairs[p][0]), "3", NULL};
		const char *real_argv[] = {proc_build_path(pairs[p][1]), "3", NULL};
		json_t *fake_dump, *real_dump;
		char **fake, **real;
		size_t n_fake, n_real;

		e2e_need_real_runtime(real_argv[0]);
		fake_dump = run_dumped(fake_argv, NULL);
		real_dump = run_dumped(real_argv, NULL);
		fake = signatures(fake_dump, &n_fake);
		real = signatures(real_dump, &n_real);
		for (size_t i = 0; i < n_fake && i < n_real; i++)
			ASSERT_MSG(!strcmp(fake[i], real[i]), "%s: fake runtime %s, NVIDIA's %s",
				   pairs[p][0], fake[i], real[i]);
		ASSERT_EQ(n_fake, n_real);
		for (size_t i = 0; i < n_fake; i++)
			free(fake[i]);
		for (size_t i = 0; i < n_real; i++)
			free(real[i]);
		free(fake);
		free(real);
		json_decref(fake_dump);
		json_decref(real_dump);
	}
}

/*
 * The same program and the same promises on NVIDIA's own runtime (shared, static, per-thread)
 * over the simulated driver: the record streams of the two runtimes cannot drift apart.
 */
TEST(fakecuda_nvcc_app_real_runtime)
{
	const char *const apps[] = {"test/apps/nvcc-real", "test/apps/nvcc-real-static",
				    "test/apps/nvcc-real-pt"};

	for (size_t a = 0; a < sizeof(apps) / sizeof(apps[0]); a++) {
		e2e_need_real_runtime(proc_build_path(apps[a]));
		check_nvcc_app(apps[a], a == 2);
	}
}

/* symbol-app's one line on stdout, run with args; the test fails unless it exits 0. */
static void check_symbol_app(const char *const argv[], const char *line)
{
	struct proc_result res;

	ASSERT_EQ(proc_run(argv, NULL, 60, &res), 0);
	ASSERT_MSG(res.status == 0 && !strcmp(res.out, line), "%s exited %d: %s%s", argv[0],
		   res.status, res.out, res.err);
	proc_result_free(&res);
}

/*
 * __device__ variables on NVIDIA's runtime (shared and static) over the simulated driver: their
 * sizes as the program declares them, device memory of that size at their addresses, and the
 * driver's answer for the size in a fatbin whose cubin is zstd-compressed and in a bare cubin.
 */
TEST(fakecuda_device_variables_real_runtime)
{
	const char *const apps[] = {"test/apps/symbol-real", "test/apps/symbol-real-static"};
	const char *const images[] = {"test/apps/symbol-app.fatbin", "test/apps/symbol-app.cubin"};
	char line[80];

	snprintf(line, sizeof(line), "symbol-app: counter %zu bytes, big %zu bytes ok\n",
		 sizeof(int), 100000 * sizeof(float));
	for (size_t a = 0; a < ARRAY_SIZE(apps); a++) {
		e2e_need_real_runtime(proc_build_path(apps[a]));
		check_symbol_app((const char *[]){proc_build_path(apps[a]), NULL}, line);
	}
	for (size_t i = 0; i < ARRAY_SIZE(images); i++) {
		check_symbol_app((const char *[]){proc_build_path(apps[0]),
						  proc_build_path(images[i]), "big", NULL},
				 "symbol-app: big 400000 bytes\n");
		check_symbol_app((const char *[]){proc_build_path(apps[0]),
						  proc_build_path(images[i]), "counter", NULL},
				 "symbol-app: counter 4 bytes\n");
	}
}

/* ---- sync-app, 2 steps: what each wait waited for, in the log and in CUPTI's records ---- */

static const struct expect sync_app_log[] = {
    {"{\"type\":\"sync\"}", 11},
    {"{\"type\":\"sync\",\"kind\":\"stream_wait_event\"}", 2},
    {"{\"type\":\"sync\",\"kind\":\"event\",\"stream\":-1}", 4},
    {"{\"type\":\"sync\",\"kind\":\"stream\",\"event_record_corr\":-1,"
     "\"event_record_stream\":-1}",
     4},
    {"{\"type\":\"sync\",\"kind\":\"context\",\"stream\":-1,\"event_record_corr\":-1,"
     "\"event_record_stream\":-1}",
     1},
    {"{\"type\":\"gpu\",\"kind\":\"kernel\",\"name\":\"_Z4spinPi\"}", 4},
    {"{\"type\":\"gpu\",\"kind\":\"memset\",\"bytes\":4096}", 2},
};

/* CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_*: 1 event, 2 stream wait, 3 stream, 4 context */
static const struct expect sync_app_records[] = {
    {"{\"type\":\"SYNC\"}", 11},
    {"{\"type\":\"SYNC\",\"sync_type\":2}", 2},
    {"{\"type\":\"SYNC\",\"sync_type\":1,\"stream\":4294967295}", 4},
    {"{\"type\":\"SYNC\",\"sync_type\":3,\"event\":4294967295,\"event_sync\":4294967295}", 4},
    {"{\"type\":\"SYNC\",\"sync_type\":4,\"stream\":4294967295,\"event\":4294967295,"
     "\"event_sync\":4294967295}",
     1},
    {"{\"type\":\"SYNC\",\"context\":1,\"ret\":0}", 11},
    {"{\"type\":\"CUDA_EVENT\",\"context\":1,\"device\":0}", 6},
    {"{\"type\":\"OTHER\"}", 0},
};

/* The log's API line of correlation id `corr`, whose name must start with `name`. */
static json_t *api_of(json_t *log, long long corr, const char *name)
{
	json_t *e;
	size_t i;

	json_array_foreach(log, i, e)
	{
		if (!strcmp(gtlog_str(e, "type"), "api") && gtlog_int(e, "corr") == corr) {
			ASSERT_MSG(!strncmp(gtlog_str(e, "name"), name, strlen(name)),
				   "corr %lld is %s, not %s", corr, gtlog_str(e, "name"), name);
			return e;
		}
	}
	ASSERT_MSG(0, "no API call %s with corr %lld", name, corr);
	return NULL;
}

/*
 * One sync line: of kind `kind`, made by a call named `name` from the call's start to no later
 * than its end, on `stream` (-1: none), waiting on an event recorded on `record_stream` (-1:
 * none) by a cudaEventRecord* call, and returned after the end of `after` (NULL: anything).
 */
static void check_sync_line(json_t *log, json_t *y, const char *kind, const char *name,
			    long long stream, long long record_stream, json_t *after)
{
	json_t *call = api_of(log, gtlog_int(y, "corr"), name);

	ASSERT_STR_EQ(gtlog_str(y, "kind"), kind);
	ASSERT_EQ(START(y), START(call));
	ASSERT(END(y) >= START(y) && END(y) <= END(call));
	ASSERT_EQ(gtlog_int(y, "stream"), stream);
	ASSERT_EQ(gtlog_int(y, "event_record_stream"), record_stream);
	if (record_stream >= 0)
		api_of(log, gtlog_int(y, "event_record_corr"), "cudaEventRecord");
	if (after)
		ASSERT_GE(END(y), END(after));
}

/* The log says, step by step, what the program's header comment says each call waited on. */
static void check_sync_app_log(json_t *log, bool per_thread)
{
	json_t *k = gtlog_sorted(log, "{\"type\":\"gpu\",\"kind\":\"kernel\"}", "corr");
	json_t *set = gtlog_sorted(log, "{\"type\":\"gpu\",\"kind\":\"memset\"}", "corr");
	json_t *y = gtlog_sorted(log, "{\"type\":\"sync\"}", "corr");
	json_t *gpu = gtlog_filter(log, "{\"type\":\"gpu\"}"), *e;
	size_t i;

	CHECK_COUNTS(log, sync_app_log);
	for (size_t step = 0; step < 2; step++) {
		json_t *k1 = json_array_get(k, 2 * step), *k2 = json_array_get(k, 2 * step + 1);
		json_t *m = json_array_get(set, step);
		long long s1 = gtlog_int(k1, "stream"), s2 = gtlog_int(k2, "stream");
		long long dflt = gtlog_int(m, "stream");

		ASSERT(s1 != s2 && s1 != dflt && s2 != dflt);
		ASSERT(per_thread ? dflt != 7 : dflt == 7);
		ASSERT_GE(START(k2), END(k1)); /* s2 waited for s1's kernel */
		check_sync_line(log, json_array_get(y, 5 * step), "stream_wait_event",
				"cudaStreamWaitEvent", s2, s1, NULL);
		check_sync_line(log, json_array_get(y, 5 * step + 1), "event",
				"cudaEventSynchronize", -1, s2, k2);
		check_sync_line(log, json_array_get(y, 5 * step + 2), "event",
				"cudaEventSynchronize", -1, dflt, m);
		check_sync_line(log, json_array_get(y, 5 * step + 3), "stream",
				"cudaStreamSynchronize", s1, -1, k1);
		check_sync_line(log, json_array_get(y, 5 * step + 4), "stream",
				"cudaStreamSynchronize", dflt, -1, m);
	}
	json_array_foreach(gpu, i, e)
	{
		check_sync_line(log, json_array_get(y, 10), "context", "cudaDeviceSynchronize", -1,
				-1, e);
	}
	json_decref(gpu);
	json_decref(y);
	json_decref(set);
	json_decref(k);
}

/* The dump's entry of `type` with correlation id `corr`: there must be exactly one. */
static json_t *one_of(json_t *dump, const char *type, long long corr)
{
	char match[96];
	json_t *hits, *e;

	snprintf(match, sizeof(match), "{\"type\":\"%s\",\"corr\":%lld}", type, corr);
	hits = gtlog_filter(dump, match);
	ASSERT_MSG(json_array_size(hits) == 1, "%zu entries %s", json_array_size(hits), match);
	e = json_array_get(hits, 0);
	json_decref(hits);
	return e; /* still held by the dump */
}

/*
 * Every SYNC record is its log line (type, stream, times) within its RUNTIME record; one that
 * waits on an event names the CUDA_EVENT record of the call the log says it waits on (event id,
 * sync id, stream). CUDA_EVENT records: one per record call, sync ids increasing, one event id
 * per event (a is recorded twice a step, b once).
 */
static void check_sync_app_records(json_t *dump, json_t *log)
{
	static const char *const kinds[] = {"", "event", "stream_wait_event", "stream", "context"};
	json_t *ev = gtlog_sorted(dump, "{\"type\":\"CUDA_EVENT\"}", "corr");
	json_t *syncs = gtlog_filter(dump, "{\"type\":\"SYNC\"}"), *y, *e;
	long long a_id = gtlog_int(json_array_get(ev, 0), "event");
	size_t i;

	CHECK_COUNTS(dump, sync_app_records);
	json_array_foreach(ev, i, e)
	{
		json_t *call = api_of(log, gtlog_int(e, "corr"), "cudaEventRecord");

		ASSERT_EQ(gtlog_int(one_of(dump, "RUNTIME", gtlog_int(e, "corr")), "cbid"),
			  gtlog_int(call, "cbid"));
		ASSERT_EQ(gtlog_int(e, "event") == a_id, i % 3 != 1);
		if (i)
			ASSERT_GT(gtlog_int(e, "event_sync"),
				  gtlog_int(json_array_get(ev, i - 1), "event_sync"));
	}
	json_array_foreach(syncs, i, y)
	{
		long long corr = gtlog_int(y, "corr"), type = gtlog_int(y, "sync_type");
		json_t *line = one_of(log, "sync", corr), *api = one_of(dump, "RUNTIME", corr);
		long long stream = gtlog_int(line, "stream");

		ASSERT(type >= 1 && type <= 4);
		ASSERT_STR_EQ(gtlog_str(line, "kind"), kinds[type]);
		ASSERT_EQ(gtlog_int(y, "stream"), stream < 0 ? 4294967295LL : stream);
		ASSERT_EQ(START(y), START(line));
		ASSERT_EQ(END(y), END(line));
		ASSERT_EQ(START(y), START(api));
		ASSERT_LE(END(y), END(api));
		if (gtlog_int(line, "event_record_corr") < 0)
			continue;
		e = one_of(dump, "CUDA_EVENT", gtlog_int(line, "event_record_corr"));
		ASSERT_EQ(gtlog_int(y, "event"), gtlog_int(e, "event"));
		ASSERT_EQ(gtlog_int(y, "event_sync"), gtlog_int(e, "event_sync"));
		ASSERT_EQ(gtlog_int(e, "stream"), gtlog_int(line, "event_record_stream"));
	}
	json_decref(syncs);
	json_decref(ev);
}

/*
 * sync-app (legacy and per-thread default stream) with 2 ms kernels: one sync line per sync call
 * saying what it waited on, and with CUDA_EVENT and SYNCHRONIZATION enabled the records that
 * say the same; with them off (cupti-dump's default kinds) no such record, the log unchanged.
 */
static void check_sync_apps(const char *const apps[2], bool real)
{
	/* CUDA_EVENT 36, SYNCHRONIZATION 38, RUNTIME 5 */
	const char *const on[] = {"FAKEGPU_KERNEL_TABLE=spin=2000000", "CUPTI_DUMP_KINDS=36,38,5",
				  "CUPTI_DUMP_CALLBACKS=0", NULL};
	const char *const off[] = {"FAKEGPU_KERNEL_TABLE=spin=2000000", NULL};

	for (size_t a = 0; a < 2; a++) {
		const char *argv[] = {proc_build_path(apps[a]), "2", NULL};
		const char *log_path = proc_tmp_file(), *off_log_path = proc_tmp_file();
		json_t *dump, *log;

		if (real)
			e2e_need_real_runtime(argv[0]);
		dump = run_dumped_with(argv, log_path, on);
		log = gtlog_load(log_path);
		ASSERT(log);
		check_sync_app_log(log, a == 1);
		check_sync_app_records(dump, log);
		json_decref(dump);
		json_decref(log);

		dump = run_dumped_with(argv, off_log_path, off);
		log = gtlog_load(off_log_path);
		ASSERT(log);
		check_sync_app_log(log, a == 1);
		ASSERT_EQ(gtlog_count(dump, "{\"type\":\"SYNC\"}"), 0);
		ASSERT_EQ(gtlog_count(dump, "{\"type\":\"CUDA_EVENT\"}"), 0);
		ASSERT_EQ(gtlog_count(dump, "{\"type\":\"OTHER\"}"), 0);
		ASSERT_GT(gtlog_count(dump, "{\"type\":\"RUNTIME\"}"), 0);
		json_decref(dump);
		json_decref(log);
	}
}

/* On the fake runtime, whose calls report their waits themselves. */
TEST(fakecuda_sync_app_records)
{
	const char *const apps[] = {"test/apps/sync-app", "test/apps/sync-app-pt"};

	check_sync_apps(apps, false);
}

/*
 * On NVIDIA's runtime over the simulated driver: the driver calls it makes inside each of its
 * calls report that call's wait, once.
 */
TEST(fakecuda_sync_real_records)
{
	const char *const apps[] = {"test/apps/sync-real", "test/apps/sync-real-pt"};

	check_sync_apps(apps, true);
}

/* ---- rt-app -s 4 -t 3, through the ground-truth log ---- */

static const struct expect rt_app_log[] = {
    {"{\"kind\":\"kernel\",\"name\":\"_Z7vec_addPfPKfS1_i\",\"grid\":[64,1,1],"
     "\"block\":[256,1,1]}",
     12},
    {"{\"kind\":\"kernel\",\"name\":\"_Z4reluPfi\",\"grid\":[32,1,1],\"block\":[128,1,1]}", 12},
    {"{\"kind\":\"memcpy\",\"copy_kind\":\"HtoD\",\"src_kind\":\"pinned\",\"bytes\":65536}", 12},
    {"{\"kind\":\"memcpy\",\"copy_kind\":\"DtoH\",\"dst_kind\":\"pageable\",\"bytes\":65536}", 12},
    {"{\"kind\":\"memset\",\"bytes\":1048576}", 12},
    {"{\"type\":\"memory\",\"op\":\"alloc\",\"memory_kind\":\"device\"}", 15},
    {"{\"type\":\"memory\",\"op\":\"free\",\"memory_kind\":\"device\"}", 15},
    {"{\"type\":\"memory\",\"op\":\"alloc\",\"memory_kind\":\"pinned\"}", 3},
    {"{\"type\":\"api\",\"name\":\"cudaLaunchKernel\",\"result\":0}", 24},
};

/* How many distinct values integer member `key` takes over the entries matching `match`. */
static size_t distinct(json_t *log, const char *match, const char *key)
{
	json_t *hits = gtlog_filter(log, match), *seen = json_object(), *e;
	size_t i, n;

	json_array_foreach(hits, i, e)
	{
		char k[24];

		snprintf(k, sizeof(k), "%lld", gtlog_int(e, key));
		json_object_set_new(seen, k, json_true());
	}
	n = json_object_size(seen);
	json_decref(seen);
	json_decref(hits);
	return n;
}

/* No two kernels of one stream overlap (kernels in launch order). */
static void check_no_overlap(json_t *kernels)
{
	size_t n = json_array_size(kernels);

	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(kernels, i);

		for (size_t j = 0; j < i; j++) {
			json_t *before = json_array_get(kernels, j);

			if (gtlog_int(before, "stream") == gtlog_int(e, "stream"))
				ASSERT_GE(START(e), END(before));
		}
	}
}

TEST(fakecuda_rt_app_threads)
{
	const char *log_path = proc_tmp_file();
	char log_env[80];
	const char *argv[] = {proc_build_path("test/apps/rt-app"), "-s", "4", "-t", "3", NULL};
	const char *env[] = {log_env, NULL};
	json_t *log, *kernels;

	snprintf(log_env, sizeof(log_env), "FAKEGPU_LOG=%s", log_path);
	run_app(argv, env);
	log = gtlog_load(log_path);
	ASSERT(log);
	CHECK_COUNTS(log, rt_app_log);
	/* one stream per thread, eight kernels on each */
	ASSERT_EQ(distinct(log, "{\"kind\":\"kernel\"}", "stream"), 3);
	ASSERT_EQ(distinct(log, "{\"name\":\"cudaLaunchKernel\"}", "tid"), 3);
	kernels = gtlog_sorted(log, "{\"kind\":\"kernel\"}", "corr");
	check_no_overlap(kernels);
	json_decref(kernels);
	json_decref(log);
}

/* ---- drv-app, 3 steps: only driver records, kernels named by cuModuleGetFunction ---- */

static const struct expect drv_app_records[] = {
    {"{\"type\":\"RUNTIME\"}", 0},
    {"{\"type\":\"CB\",\"domain\":2}", 0},	/* CUPTI_CB_DOMAIN_RUNTIME_API */
    {"{\"type\":\"DRIVER\",\"cbid\":307}", 3},	/* cuLaunchKernel */
    {"{\"type\":\"DRIVER\",\"cbid\":652}", 3},	/* cuLaunchKernelEx */
    {"{\"type\":\"DRIVER\",\"cbid\":677}", 14}, /* cuGetProcAddress_v2 */
    {"{\"type\":\"DRIVER\",\"cbid\":243}", 2},	/* cuMemAlloc_v2 */
    {"{\"type\":\"DRIVER\",\"cbid\":1}", 1},	/* cuInit */
    {"{\"type\":\"KERNEL\",\"name\":\"triton_poi_fused_add_0\",\"grid\":\"8,1,1\","
     "\"block\":\"128,1,1\",\"stream\":7}",
     3},
    {"{\"type\":\"KERNEL\",\"name\":\"triton_red_fused_sum_1\",\"grid\":\"4,1,1\","
     "\"block\":\"64,1,1\",\"shared_dynamic\":256,\"stream\":7}",
     3},
    {"{\"type\":\"MEMCPY\",\"copy_kind\":1,\"src_kind\":1,\"bytes\":4096,\"runtime_corr\":0}", 1},
    {"{\"type\":\"MEMCPY\",\"copy_kind\":2,\"dst_kind\":1,\"bytes\":4096,\"runtime_corr\":0}", 1},
};

TEST(fakecuda_drv_app)
{
	const char *argv[] = {proc_build_path("test/apps/drv-app"), "3", NULL};
	json_t *dump = run_dumped(argv, NULL);

	CHECK_COUNTS(dump, drv_app_records);
	check_correlation(dump, "DRIVER");
	json_decref(dump);
}

/* ---- link-app: code linked at run time, kernels named by its device sources ---- */

/* What link-app launches and calls (its header comment), in the ground-truth log. */
static const struct expect link_app_log[] = {
    {"{\"kind\":\"kernel\"}", 5},
    {"{\"kind\":\"kernel\",\"name\":\"link_scale\",\"grid\":[4,1,1],\"block\":[128,1,1],"
     "\"launch_type\":0}",
     1},
    {"{\"kind\":\"kernel\",\"name\":\"link_scale\",\"grid\":[1,1,1],\"block\":[32,1,1],"
     "\"launch_type\":0}",
     1},
    {"{\"kind\":\"kernel\",\"name\":\"_Z8link_sumPKfPfi\",\"grid\":[2,1,1],\"shared\":512,"
     "\"launch_type\":0}",
     1},
    {"{\"kind\":\"kernel\",\"name\":\"link_grid_sync\",\"grid\":[8,1,1],\"block\":[256,1,1],"
     "\"launch_type\":1}",
     1},
    {"{\"kind\":\"kernel\",\"name\":\"_Z5touchi\",\"grid\":[1,1,1],\"launch_type\":1}", 1},
    {"{\"type\":\"api\",\"name\":\"cuLinkCreate_v2\",\"cbid\":381,\"result\":0}", 1},
    {"{\"type\":\"api\",\"name\":\"cuLinkCreate\",\"cbid\":362,\"result\":0}", 1},
    {"{\"type\":\"api\",\"name\":\"cuLinkAddData_v2\",\"cbid\":382,\"result\":0}", 2},
    {"{\"type\":\"api\",\"name\":\"cuLinkAddData\",\"cbid\":363,\"result\":0}", 1},
    {"{\"type\":\"api\",\"name\":\"cuLinkAddFile_v2\",\"cbid\":383,\"result\":0}", 1},
    {"{\"type\":\"api\",\"name\":\"cuLinkComplete\",\"cbid\":365,\"result\":0}", 2},
    {"{\"type\":\"api\",\"name\":\"cuLinkDestroy\",\"cbid\":366,\"result\":0}", 2},
    {"{\"type\":\"api\",\"name\":\"cuLaunchCooperativeKernel\",\"cbid\":477,"
     "\"symbol\":\"link_grid_sync\",\"result\":0}",
     1},
    {"{\"type\":\"api\",\"name\":\"cuLibraryLoadFromFile\",\"cbid\":679,\"result\":0}", 1},
    /* not_linked, and link_scale in the PTX alone; link_grid_sync in the cubin */
    {"{\"type\":\"api\",\"name\":\"cuModuleGetFunction\",\"result\":500}", 2},
    {"{\"type\":\"api\",\"name\":\"cuLibraryGetKernel\",\"result\":500}", 1},
};

/* The same through CUPTI: a cooperative launch's record says it was one. */
static const struct expect link_app_records[] = {
    {"{\"type\":\"KERNEL\",\"launch_type\":0}", 3},
    /* CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE */
    {"{\"type\":\"KERNEL\",\"name\":\"link_grid_sync\",\"launch_type\":1}", 1},
    {"{\"type\":\"KERNEL\",\"name\":\"_Z5touchi\",\"launch_type\":1}", 1},
    {"{\"type\":\"DRIVER\",\"cbid\":477}", 1}, /* cuLaunchCooperativeKernel */
    {"{\"type\":\"DRIVER\",\"cbid\":652}", 1}, /* cuLaunchKernelEx */
    {"{\"type\":\"DRIVER\",\"cbid\":307}", 3}, /* cuLaunchKernel */
};

/*
 * cuLink* of a cubin, PTX and a compressed fatbin built by nvcc, cuLibraryLoadFromFile and
 * cooperative launches: the linked module has the kernels and variables of its inputs, by the
 * names and sizes the device sources declare, and no others; the kernels go through the
 * simulation like any other launch.
 */
TEST(fakecuda_link_app)
{
	const char *log_path = proc_tmp_file(), *dump_path = proc_tmp_file();
	const char *argv[] = {proc_build_path("test/apps/link-app"),
			      proc_build_path("test/apps/link-kernels.cubin"),
			      proc_build_path("test/apps/link-more.ptx"),
			      proc_build_path("test/apps/symbol-app.fatbin"), NULL};
	char out_env[80], log_env[80], line[128];
	const char *env[] = {proc_preload(proc_build_path("test/apps/cupti-dump.so")), out_env,
			     log_env, NULL};
	struct proc_result res;
	json_t *log, *dump;

	for (size_t i = 1; i < 4; i++)
		if (access(argv[i], R_OK))
			SKIP("%s was not built (no nvcc?)", argv[i]);
	snprintf(out_env, sizeof(out_env), "CUPTI_DUMP_OUT=%s", dump_path);
	snprintf(log_env, sizeof(log_env), "FAKEGPU_LOG=%s", log_path);
	snprintf(line, sizeof(line),
		 "link-app: table %zu bytes, hits %zu bytes, counter %zu bytes, big %zu bytes\n",
		 300 * sizeof(float), sizeof(int), sizeof(int), 100000 * sizeof(float));
	ASSERT_EQ(proc_run(argv, env, 60, &res), 0);
	ASSERT_MSG(res.status == 0 && !strcmp(res.out, line), "link-app exited %d: %s%s",
		   res.status, res.out, res.err);
	proc_result_free(&res);
	log = gtlog_load(log_path);
	dump = gtlog_load_dump(dump_path);
	ASSERT(log && dump);
	CHECK_COUNTS(log, link_app_log);
	CHECK_COUNTS(dump, link_app_records);
	check_correlation(dump, "DRIVER");
	json_decref(dump);
	json_decref(log);
}

/* CUDA_INJECTION64_PATH is loaded by cuInit: the client sees nothing from before it. */
static const struct expect injected_records[] = {
    {"{\"type\":\"INJECTION\"}", 1},
    {"{\"type\":\"DRIVER\",\"cbid\":677}", 0}, /* cuGetProcAddress_v2, all before cuInit */
    {"{\"type\":\"DRIVER\",\"cbid\":1}", 1},   /* cuInit: enabled while it ran */
    {"{\"type\":\"KERNEL\"}", 6},
};

TEST(fakecuda_injection_at_cuinit)
{
	const char *dump_path = proc_tmp_file();
	char out_env[80], inject_env[PATH_MAX + 32];
	const char *argv[] = {proc_build_path("test/apps/drv-app"), "3", NULL};
	const char *env[] = {out_env, inject_env, NULL};
	json_t *dump;

	snprintf(out_env, sizeof(out_env), "CUPTI_DUMP_OUT=%s", dump_path);
	snprintf(inject_env, sizeof(inject_env), "CUDA_INJECTION64_PATH=%s",
		 proc_build_path("test/apps/cupti-dump.so"));
	run_app(argv, env);
	dump = gtlog_load_dump(dump_path);
	ASSERT(dump);
	CHECK_COUNTS(dump, injected_records);
	json_decref(dump);
}

/* ---- pool-app: stream-ordered allocation (its header comment says what it does) ---- */

/* The largest value of integer member `key` over the ground truth's entries matching `match`. */
static long long log_max(json_t *log, const char *match, const char *key)
{
	json_t *hits = gtlog_filter(log, match), *e;
	long long max = 0;
	size_t i;

	json_array_foreach(hits, i, e) max = gtlog_int(e, key) > max ? gtlog_int(e, key) : max;
	json_decref(hits);
	return max;
}

/*
 * Each MEMORY2 record of a pool's allocation or free is the ground truth's line of the same
 * call, with the pool as that operation left it; each MEMORY_POOL record one of its pool lines.
 */
static void check_pool_records(json_t *dump, json_t *log)
{
	static const char *const ops[] = {"", "create", "destroy", "trim"};
	json_t *recs = gtlog_filter(dump, "{\"type\":\"MEMORY2\",\"async\":1}"), *e;
	char match[512];
	size_t i;

	ASSERT_EQ(json_array_size(recs), 16); /* 4 steps x 2 allocations, each freed */
	json_array_foreach(recs, i, e)
	{
		snprintf(match, sizeof(match),
			 "{\"type\":\"memory\",\"op\":\"%s\",\"corr\":%lld,\"address\":%lld,"
			 "\"bytes\":%lld,\"pool_handle\":%lld,\"pool_reserved\":%lld,"
			 "\"pool_used\":%lld,\"time\":%lld}",
			 gtlog_int(e, "op") == 1 ? "alloc" : "free", gtlog_int(e, "corr"),
			 gtlog_int(e, "address"), gtlog_int(e, "bytes"), gtlog_int(e, "pool"),
			 gtlog_int(e, "pool_size"), gtlog_int(e, "pool_used"),
			 gtlog_int(e, "timestamp"));
		ASSERT_MSG(gtlog_count(log, match) == 1, "%s", match);
	}
	json_decref(recs);
	recs = gtlog_filter(dump, "{\"type\":\"MEMORY_POOL\"}");
	ASSERT_EQ(json_array_size(recs), 3);
	json_array_foreach(recs, i, e)
	{
		long long op = gtlog_int(e, "op");

		ASSERT(op >= 1 && op <= 3);
		snprintf(match, sizeof(match),
			 "{\"type\":\"pool\",\"op\":\"%s\",\"corr\":%lld,\"pool_handle\":%lld,"
			 "\"reserved\":%lld,\"used\":%lld,\"threshold\":%lld,\"time\":%lld}",
			 ops[op], gtlog_int(e, "corr"), gtlog_int(e, "pool"), gtlog_int(e, "size"),
			 gtlog_int(e, "used"), gtlog_int(e, "threshold"),
			 gtlog_int(e, "timestamp"));
		ASSERT_MSG(gtlog_count(log, match) == 1, "%s", match);
	}
	json_decref(recs);
}

/*
 * pool-app on NVIDIA's runtime, shared and static, 4 steps. The pools grow by 2 MiB granules:
 * the default one (id 1, 64 MiB threshold) reserves at most 4 MiB (step 3's 4 MiB) and keeps it
 * until trimmed; the program's own (id 2) reserves 4 MiB for 3 MiB and gives all back at each
 * stream synchronisation (threshold 0). What the program reads of its pools is the ground
 * truth's.
 */
TEST(fakecuda_pool_app)
{
	const char *const apps[] = {"test/apps/pool-real", "test/apps/pool-real-static"};

	for (size_t a = 0; a < ARRAY_SIZE(apps); a++) {
		const char *log_path = proc_tmp_file(), *dump_path = proc_tmp_file();
		const char *argv[] = {proc_build_path(apps[a]), NULL};
		char out_env[80], log_env[80], line[512];
		const char *env[] = {proc_preload(proc_build_path("test/apps/cupti-dump.so")),
				     out_env, log_env, "CUPTI_DUMP_KINDS=49,50", NULL};
		struct proc_result res;
		json_t *log, *dump;

		if (access(argv[0], X_OK))
			SKIP("%s was not built (no nvcc?)", argv[0]);
		snprintf(out_env, sizeof(out_env), "CUPTI_DUMP_OUT=%s", dump_path);
		snprintf(log_env, sizeof(log_env), "FAKEGPU_LOG=%s", log_path);
		ASSERT_EQ(proc_run(argv, env, 60, &res), 0);
		ASSERT_MSG(res.status == 0, "%s exited %d: %s", argv[0], res.status, res.err);
		log = gtlog_load(log_path);
		dump = gtlog_load_dump(dump_path);
		ASSERT(log && dump);
		ASSERT_EQ(log_max(log, "{\"type\":\"memory\",\"pool\":1}", "pool_reserved"),
			  4 << 20);
		ASSERT_EQ(log_max(log, "{\"type\":\"memory\",\"pool\":2}", "pool_reserved"),
			  4 << 20);
		ASSERT_EQ(gtlog_count(log, "{\"type\":\"pool\",\"op\":\"release\",\"pool\":2,"
					   "\"reserved\":0}"),
			  4);
		ASSERT_EQ(gtlog_count(log, "{\"type\":\"pool\",\"op\":\"release\",\"pool\":1}"), 0);
		snprintf(line, sizeof(line),
			 "pool-app: default pool: reserved %lld (at most %lld), used at most %lld\n"
			 "pool-app: own pool: reserved 0 (at most %lld), used at most %lld\n",
			 log_max(log, "{\"type\":\"memory\",\"pool\":1}", "pool_reserved"),
			 log_max(log, "{\"type\":\"memory\",\"pool\":1}", "pool_reserved"),
			 log_max(log, "{\"type\":\"memory\",\"pool\":1}", "pool_used"),
			 log_max(log, "{\"type\":\"memory\",\"pool\":2}", "pool_reserved"),
			 log_max(log, "{\"type\":\"memory\",\"pool\":2}", "pool_used"));
		ASSERT_STR_CONTAINS(res.out, line);
		check_pool_records(dump, log);
		proc_result_free(&res);
		json_decref(dump);
		json_decref(log);
	}
}

/*
 * nccl-app -m: three ranks at once, meeting through rank 0's unique id; the bytes each rank's
 * all-reduce, all-gather and broadcast got are what the others gave (nccl-app checks them),
 * and the folder where they met is gone once the last rank destroyed its communicator.
 */
TEST(fakecuda_nccl_ranks_meet)
{
	char tmp[] = "/tmp/gprof-nccl-XXXXXX", id_path[64], script[PATH_MAX * 3], dir[96];
	const char *argv[] = {"/bin/sh", "-c", script, NULL};
	struct proc_result res;
	uint64_t key[2];
	FILE *f;

	ASSERT(mkdtemp(tmp));
	snprintf(id_path, sizeof(id_path), "%s/id", tmp); /* rank 0 makes it */
	snprintf(script, sizeof(script),
		 "for r in 0 1 2; do RANK=$r WORLD_SIZE=3 '%s' -s 3 -n 64 -m '%s' & eval p$r=$!; "
		 "done; s=0; for p in $p0 $p1 $p2; do wait $p || s=1; done; exit $s",
		 proc_build_path("test/apps/nccl-app"), id_path);
	ASSERT_EQ(proc_run(argv, NULL, 120, &res), 0);
	ASSERT_MSG(res.status == 0, "%s%s", res.out, res.err);
	ASSERT_EQ(text_count(res.out, ": the ranks' bytes met\n"), 3);
	f = fopen(id_path, "rb");
	ASSERT(f && fread(key, sizeof(key), 1, f) == 1);
	fclose(f);
	unlink(id_path);
	rmdir(tmp);
	snprintf(dir, sizeof(dir), "%s/fakenccl-%016llx%016llx",
		 access("/dev/shm", W_OK) ? (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp")
					  : "/dev/shm",
		 (unsigned long long)key[0], (unsigned long long)key[1]);
	ASSERT_MSG(access(dir, F_OK), "%s is left", dir);
	proc_result_free(&res);
}
