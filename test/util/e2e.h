/*
 * End-to-end runs: a program on the simulated GPU, under libgprof or not, with its traces
 * loaded and checked against TRACE_FORMAT.md and its ground-truth log (FAKEGPU_LOG) loaded.
 */
#ifndef GPROF_TEST_E2E_H
#define GPROF_TEST_E2E_H

#include <limits.h>
#include <stdbool.h>

#include <jansson.h>

#include "proc.h"
#include "trace.h"

#define E2E_MAX_TRACES 16

struct e2e_run {
	char dir[PATH_MAX]; /* GPROF_OUTPUT: a fresh folder, removed by e2e_free */
	char gt_path[PATH_MAX + 16];
	struct proc_result res;
	int n_traces;
	struct trace traces[E2E_MAX_TRACES]; /* in name (= time) order, each checked */
	json_t *gt;			     /* the ground-truth log; NULL for the real runtime */
};

/*
 * Runs argv with LD_PRELOAD=libgprof (when preload), GPROF_OUTPUT, FAKEGPU_LOG, no injection
 * variables of the caller's, FAKEGPU_TIME_SCALE=0.1 and GPROF_CUPTI_LIB=cupti_lib (when not
 * NULL); then `extra` ("NAME=value" sets, "NAME" removes; later entries win). Fails the test if
 * the program can't run or times out, if a .partial is left, or if a trace breaks the format.
 */
void e2e_run(struct e2e_run *r, const char *const argv[], const char *cupti_lib,
	     const char *const *extra, bool preload);
/* e2e_run's cupti_lib: the simulated CUPTI, or a path where there is none (hooks only). */
const char *e2e_cupti(bool simulated);
/*
 * e2e_run of argv under libgprof with the simulated CUPTI (cupti) or none, and env as its
 * extra: the program must exit 0 and leave n_traces traces (else its stderr is shown).
 */
void e2e_run_ok(struct e2e_run *r, const char *const *argv, bool cupti, const char *const *env,
		int n_traces);
void e2e_free(struct e2e_run *r);

/* Sets or replaces (by name) one "NAME=value" or "NAME" entry of a NULL-terminated list of cap. */
void e2e_env_put(const char **env, size_t cap, const char *spec);

/* The events of t with this cat and, unless NULL, this name. */
int e2e_count(const struct trace *t, const char *cat, const char *name);
/* An integer argument of an event, or -1. */
long long e2e_arg_int(const json_t *ev, const char *key);

/*
 * Skips the test unless `app` (a path) was built and the toolkit's CUDA runtime is 13000:
 * NVIDIA's runtime on the simulated driver needs private tables that belong to its version.
 */
void e2e_need_real_runtime(const char *app);

/* Device memory in use at `ns` by gt's memory records (allocations and frees up to then). */
long long e2e_gt_in_use(json_t *gt, long long ns);

/*
 * The trace's gpu_memory counter: each value is the device memory gt says was in use then, the
 * first at the window's opening (the first step's start, or the first CUDA call's under
 * GPROF_SCHEDULE=all) or before. Returns how many.
 */
int e2e_check_memory(const struct trace *t, json_t *gt);

#endif
