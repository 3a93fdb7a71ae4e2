/* End-to-end runs on the simulated GPU (e2e.h). */
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../task.h"
#include "e2e.h"
#include "gtlog.h"

#define MAX_ENV 40

void e2e_env_put(const char **env, size_t cap, const char *spec)
{
	size_t name = strcspn(spec, "="), i = 0;

	for (; env[i]; i++)
		if (strcspn(env[i], "=") == name && !strncmp(env[i], spec, name))
			break;
	ASSERT(i + 1 < cap);
	if (!env[i])
		env[i + 1] = NULL;
	env[i] = spec;
}

static void env_put(const char **env, const char *spec)
{
	e2e_env_put(env, MAX_ENV, spec);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void load_traces(struct e2e_run *r)
{
	char *names[E2E_MAX_TRACES], why[512], path[PATH_MAX * 2];
	DIR *d = opendir(r->dir);
	struct dirent *de;
	int n = 0;

	ASSERT(d);
	while ((de = readdir(d))) {
		ASSERT_MSG(!strstr(de->d_name, ".partial"), "left behind: %s", de->d_name);
		if (strstr(de->d_name, ".pt.trace.json.gz") && n < E2E_MAX_TRACES)
			names[n++] = strdup(de->d_name);
	}
	closedir(d);
	qsort(names, (size_t)n, sizeof(names[0]), cmp_str);
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", r->dir, names[i]);
		ASSERT_MSG(trace_load(path, &r->traces[i], why, sizeof(why)) == 0, "%s: %s", path,
			   why);
		ASSERT_MSG(trace_check(&r->traces[i], why, sizeof(why)) == 0, "%s: %s", path, why);
		free(names[i]);
	}
	r->n_traces = n;
}

void e2e_run(struct e2e_run *r, const char *const argv[], const char *cupti_lib,
	     const char *const *extra, bool preload)
{
	static const char *lib; /* kept: LeakSanitizer reads a lost pointer as a leak */
	char *out_env = NULL, *gt_env = NULL, *cupti_env = NULL;
	const char *env[MAX_ENV] = {NULL};

	memset(r, 0, sizeof(*r));
	snprintf(r->dir, sizeof(r->dir), "/tmp/gprof-e2e-XXXXXX");
	ASSERT(mkdtemp(r->dir));
	snprintf(r->gt_path, sizeof(r->gt_path), "%s/gt.log", r->dir);
	ASSERT(asprintf(&out_env, "GPROF_OUTPUT=%s", r->dir) > 0);
	ASSERT(asprintf(&gt_env, "FAKEGPU_LOG=%s", r->gt_path) > 0);
	if (!lib)
		lib = proc_build_path("libgprof.so");
	env_put(env, preload ? proc_preload(lib) : "LD_PRELOAD");
	env_put(env, out_env);
	env_put(env, gt_env);
	env_put(env, "NVTX_INJECTION64_PATH");
	env_put(env, "CUDA_INJECTION64_PATH");
	env_put(env, "FAKEGPU_TIME_SCALE=0.1");
	if (cupti_lib) {
		ASSERT(asprintf(&cupti_env, "GPROF_CUPTI_LIB=%s", cupti_lib) > 0);
		env_put(env, cupti_env);
	}
	for (; extra && *extra; extra++)
		env_put(env, *extra);
	ASSERT_EQ(proc_run(argv, env, 120, &r->res), 0);
	ASSERT_MSG(!r->res.timed_out, "%s timed out", argv[0]);
	load_traces(r);
	r->gt = gtlog_load(r->gt_path);
	free(out_env);
	free(gt_env);
	free(cupti_env);
}

const char *e2e_cupti(bool simulated)
{
	static const char *lib; /* kept, as e2e_run's */

	if (simulated && !lib)
		lib = proc_build_path("fakecuda/libcupti.so.13");
	return simulated ? lib : "/nonexistent/libcupti.so.13";
}

void e2e_run_ok(struct e2e_run *r, const char *const *argv, bool cupti, const char *const *env,
		int n_traces)
{
	e2e_run(r, argv, e2e_cupti(cupti), env, true);
	ASSERT_MSG(r->res.status == 0, "%s: status %d: %s", argv[0], r->res.status, r->res.err);
	ASSERT_MSG(r->n_traces == n_traces, "%s: %d traces, not %d: %s", argv[0], r->n_traces,
		   n_traces, r->res.err);
}

void e2e_free(struct e2e_run *r)
{
	char cmd[PATH_MAX + 16];

	for (int i = 0; i < r->n_traces; i++)
		trace_free(&r->traces[i]);
	json_decref(r->gt);
	proc_result_free(&r->res);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", r->dir);
	ASSERT_EQ(system(cmd), 0);
}

int e2e_count(const struct trace *t, const char *cat, const char *name)
{
	size_t i;
	json_t *ev;
	int n = 0;

	json_array_foreach(t->events, i, ev)
	{
		if (!strcmp(trace_str(ev, "cat"), cat) &&
		    (!name || !strcmp(trace_str(ev, "name"), name)))
			n++;
	}
	return n;
}

long long e2e_arg_int(const json_t *ev, const char *key)
{
	json_t *v = json_object_get(json_object_get(ev, "args"), key);

	return json_is_integer(v) ? json_integer_value(v) : -1;
}

void e2e_need_real_runtime(const char *app)
{
	char path[PATH_MAX];
	int (*version_of)(int *) = NULL;
	int version = 0;
	void *lib;

	if (access(app, X_OK) != 0)
		SKIP("no %s (nvcc missing)", app);
	snprintf(path, sizeof(path), "%s/lib64/libcudart.so.13", getenv("CUDA_HOME"));
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (lib)
		*(void **)&version_of = dlsym(lib, "cudaRuntimeGetVersion");
	if (!version_of || version_of(&version) || version != 13000)
		SKIP("the toolkit's CUDA runtime is %d, not 13000, whose private tables the "
		     "simulated driver has",
		     version);
}

long long e2e_gt_in_use(json_t *gt, long long ns)
{
	long long bytes = 0;
	size_t i;
	json_t *g;

	json_array_foreach(gt, i, g)
	{
		if (strcmp(gtlog_str(g, "type"), "memory") ||
		    strcmp(gtlog_str(g, "memory_kind"), "device") || gtlog_int(g, "time") > ns)
			continue;
		bytes += strcmp(gtlog_str(g, "op"), "alloc") ? -gtlog_int(g, "bytes")
							     : gtlog_int(g, "bytes");
	}
	return bytes;
}

int e2e_check_memory(const struct trace *t, json_t *gt)
{
	long long base = json_integer_value(json_object_get(t->root, "baseTimeNanoseconds"));
	long long first = -1, first_step = -1;
	size_t i;
	json_t *ev;
	int n = 0;

	json_array_foreach(t->events, i, ev)
	{
		long long ts =
		    base + (long long)(json_number_value(json_object_get(ev, "ts")) * 1000 + 0.5);

		if (!strncmp(trace_str(ev, "name"), "ProfilerStep#", 13) &&
		    (first_step < 0 || ts < first_step))
			first_step = ts;
		if (strcmp(trace_str(ev, "cat"), "gpu_memory"))
			continue;
		ASSERT_EQ(e2e_arg_int(ev, "allocated"), e2e_gt_in_use(gt, ts));
		if (first < 0 || ts < first)
			first = ts;
		n++;
	}
	ASSERT_MSG(n > 0, "no gpu_memory event");
	ASSERT_LE(first, first_step);
	return n;
}
