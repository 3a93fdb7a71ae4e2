/*
 * The real trace consumers (issue #14): Holistic Trace Analysis and TensorBoard's PyTorch
 * profiler plugin, pinned in test/clients/requirements.txt, read the traces libgprof writes of
 * test/apps/rt-app on the simulated GPU, and the scripts in test/clients/ check their figures
 * against the simulation's ground-truth log. rt-app: 2 threads, each on its own stream, so 2
 * streams of kernels, copies and memsets per step. nccl-app: a compute kernel and two NCCL
 * collectives (the simulated libnccl's) per step, on two streams, for the distributed view.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "task.h"
#include "util/e2e.h"

#define KERNELS	  "FAKEGPU_KERNEL_TABLE=vec_add=40000,relu=25000"
#define LONG_RELU "FAKEGPU_KERNEL_TABLE=vec_add=40000,relu=100000"

/* The virtual environment's python, or a skip with the reason it could not be made. */
static const char *client_python(void)
{
	static char python[PATH_MAX];
	char status[512] = "", path[PATH_MAX];
	const char *venv = getenv("TEST_CLIENTS");
	FILE *f;

	if (!venv)
		SKIP("TEST_CLIENTS is not set (make test sets it)");
	snprintf(path, sizeof(path), "%s/status", venv);
	f = fopen(path, "r");
	if (!f || !fgets(status, sizeof(status), f))
		SKIP("no %s: run make test or make test-clients", path);
	fclose(f);
	status[strcspn(status, "\n")] = '\0';
	if (strcmp(status, "ok"))
		SKIP("the trace clients are not installed: %s", status);
	snprintf(python, sizeof(python), "%s/env/bin/python", venv);
	return python;
}

/* rt-app under libgprof as rank `rank` of `world` (0: no rank variables), with extra (or NULL). */
static void run_rank(struct e2e_run *r, int rank, int world, const char *threads,
		     const char *kernels, const char *extra)
{
	static const char *app; /* kept: LeakSanitizer reads a lost pointer as a leak */
	const char *argv[] = {app ? app : (app = proc_build_path("test/apps/rt-app")),
			      "-t",
			      threads,
			      "-s",
			      "8",
			      NULL};
	char rank_env[32], world_env[32];
	/* times HTA's whole microseconds can tell apart: no time scale, kernels of 25-100 us */
	const char *env[] = {
	    "GPROF_SUMMARY=off", "FAKEGPU_TIME_SCALE=1", kernels, rank_env, world_env, extra, NULL};

	snprintf(rank_env, sizeof(rank_env), world ? "RANK=%d" : "RANK", rank);
	snprintf(world_env, sizeof(world_env), world ? "WORLD_SIZE=%d" : "WORLD_SIZE", world);
	e2e_run_ok(r, argv, true, env, 1);
}

/*
 * nccl-app under libgprof as rank `rank` of 2, its all-reduce kernel taking allreduce_ns: the
 * ranks' communication differs, as it would where one waits for the other.
 */
static void run_nccl_rank(struct e2e_run *r, int rank, const char *allreduce_ns)
{
	static const char *app; /* kept: LeakSanitizer reads a lost pointer as a leak */
	const char *argv[] = {app ? app : (app = proc_build_path("test/apps/nccl-app")), "-s", "8",
			      NULL};
	char rank_env[32], kernels[128];
	const char *env[] = {"GPROF_SUMMARY=off", "FAKEGPU_TIME_SCALE=1", kernels, rank_env,
			     "LOCAL_RANK=0",	  "WORLD_SIZE=2",	  NULL};

	snprintf(rank_env, sizeof(rank_env), "RANK=%d", rank);
	snprintf(kernels, sizeof(kernels),
		 "FAKEGPU_KERNEL_TABLE=compute=50000,AllReduce=%s,AllGather=30000", allreduce_ns);
	e2e_run_ok(r, argv, true, env, 1);
}

/* r's trace file, in one of two buffers (so that two can be named in one call). */
static const char *trace_file(const struct e2e_run *r)
{
	static char path[2][PATH_MAX * 2];
	static int k;

	k = !k;
	snprintf(path[k], sizeof(path[k]), "%s/%s", r->dir,
		 trace_str(r->traces[0].root, "traceName"));
	return path[k];
}

/* Puts the trace of `from` into the folder of `to`, as a second rank writing there would. */
static void share_folder(const struct e2e_run *from, const struct e2e_run *to)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/%s", to->dir,
		 trace_str(from->traces[0].root, "traceName"));
	ASSERT_MSG(link(trace_file(from), path) == 0, "%s", path);
}

/* test/clients/SCRIPT with args; it prints a line per figure it checked. */
static void run_client(const char *script, const char *const *args)
{
	const char *argv[16] = {client_python()};
	char path[PATH_MAX];
	struct proc_result res;
	int n = 1;

	snprintf(path, sizeof(path), "%s/test/clients/%s", getenv("TEST_SRC"), script);
	argv[n++] = path;
	while (*args && n < 15)
		argv[n++] = *args++;
	ASSERT(proc_run(argv, NULL, 300, &res) == 0);
	if (res.status == 77) /* what it needs is missing: it says what */
		SKIP("%s: %s", script, res.out);
	ASSERT_MSG(res.status == 0, "%s: status %d\n%s%s", script, res.status, res.out, res.err);
	ASSERT(strstr(res.out, "ok   "));
	proc_result_free(&res);
}

/* A client's check of two ranks: rank 0's folder (which holds both traces), each trace and its
 * ground truth. */
static void check_two_ranks(const char *script, struct e2e_run *r0, struct e2e_run *r1)
{
	run_client(script, (const char *[]){r0->dir, trace_file(r0), r0->gt_path, trace_file(r1),
					    r1->gt_path, NULL});
}

/*
 * Two ranks' runs as one job's: rank 1's trace put into rank 0's folder, then each script's
 * check of the two ranks (check_two_ranks); frees both runs.
 */
static void check_shared(const char *const *scripts, struct e2e_run *r0, struct e2e_run *r1)
{
	share_folder(r1, r0);
	for (; *scripts; scripts++)
		check_two_ranks(*scripts, r0, r1);
	e2e_free(r0);
	e2e_free(r1);
}

TEST(clients_hta_one_rank)
{
	struct e2e_run r;

	run_rank(&r, 0, 0, "2", KERNELS, NULL);
	run_client("hta_check.py", (const char *[]){r.dir, trace_file(&r), r.gt_path, NULL});
	e2e_free(&r);
}

TEST(clients_hta_two_ranks)
{
	struct e2e_run r0, r1;

	run_rank(&r0, 0, 2, "2", KERNELS, NULL);
	run_rank(&r1, 1, 2, "2", LONG_RELU, NULL);
	check_shared((const char *[]){"hta_check.py", NULL}, &r0, &r1);
}

/* Run B: one thread instead of two, and a relu four times as long. */
TEST(clients_hta_trace_diff)
{
	struct e2e_run a, b;

	run_rank(&a, 0, 0, "2", KERNELS, NULL);
	run_rank(&b, 0, 0, "1", LONG_RELU, NULL);
	run_client("hta_check.py", (const char *[]){"--diff", a.dir, trace_file(&a), a.gt_path,
						    b.dir, trace_file(&b), b.gt_path, NULL});
	e2e_free(&a);
	e2e_free(&b);
}

TEST(clients_tensorboard)
{
	struct e2e_run r0, r1;

	run_rank(&r0, 0, 2, "2", KERNELS, NULL);
	run_client("tb_check.py", (const char *[]){r0.dir, trace_file(&r0), r0.gt_path, NULL});
	run_rank(&r1, 1, 2, "1", LONG_RELU, NULL);
	check_shared((const char *[]){"tb_check.py", NULL}, &r0, &r1);
}

/* Two ranks that call NCCL: the plugin's distributed view, and HTA's comm/comp overlap. */
TEST(clients_nccl_two_ranks)
{
	struct e2e_run r0, r1;

	run_nccl_rank(&r0, 0, "80000");
	run_nccl_rank(&r1, 1, "60000");
	check_shared((const char *[]){"tb_check.py", "hta_check.py", NULL}, &r0, &r1);
}

/*
 * Catapult's trace viewer (chrome://tracing's code, shipped in the plugin's wheel) imports each
 * trace of this tier in headless Chromium with no warning, and holds what the file holds.
 */
TEST(clients_trace_viewer)
{
	struct e2e_run r[4];

	run_rank(&r[0], 0, 2, "2", KERNELS, NULL);
	run_rank(&r[1], 1, 2, "1", LONG_RELU, NULL);
	run_nccl_rank(&r[2], 0, "80000");
	run_nccl_rank(&r[3], 1, "60000");
	run_client("viewer_check.py", (const char *[]){trace_file(&r[0]), trace_file(&r[1]), NULL});
	run_client("viewer_check.py", (const char *[]){trace_file(&r[2]), trace_file(&r[3]), NULL});
	for (int i = 0; i < 4; i++)
		e2e_free(&r[i]);
}

/* With the host's waits recorded (cuda_sync): HTA's critical path finds each of them. */
TEST(clients_hta_critical_path)
{
	struct e2e_run r;

	run_rank(&r, 0, 0, "2", KERNELS, "GPROF_ACTIVITIES=all");
	run_client("hta_check.py",
		   (const char *[]){"--critical-path", r.dir, trace_file(&r), r.gt_path, NULL});
	e2e_free(&r);
}
