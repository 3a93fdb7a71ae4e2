/*
 * `make bench`: runs B1-B5 side by side in repeated rounds and prints, as Markdown, the machine,
 * one table per benchmark (median and range over the rounds) and where each target stands.
 *
 *	bench <build folder> [B1B2...]            everything (what `make bench` runs), or those
 *	bench --export <level> <dir> <kernels> <threads>    B2's child (bench/export-bench.c)
 */
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"

#define MAX_ROUNDS 16
#define MAX_ENV	   10

/* Rounds and sizes: enough to see through a noisy shared machine, small enough for minutes. */
#define B1_ROUNDS   7
#define B1_CALLS    1000000 /* per timed loop; the active phase makes a twentieth of them */
#define B1_REPS	    "5"
#define B2_ROUNDS   3
#define B2_KERNELS  1000000
#define B3_ROUNDS   3
#define B3_LAUNCHES 5000000
#define B4_ROUNDS   5
#define B4_STEPS    "10000"
#define B5_ROUNDS   3
#define B5_STEPS    14 /* the window is steps 2-4; 6 to the last but one are after it */

/* The build's programs and the scratch folder; set once by main. */
static struct {
	char self[PATH_MAX], lib[PATH_MAX], hook_loop[PATH_MAX], steps_loop[PATH_MAX];
	char steps_loop_real[PATH_MAX], python[PATH_MAX], train[PATH_MAX], driver[PATH_MAX + 32];
	char tmp[1024], err_log[1024 + 16], preload[PATH_MAX + 16], cupti[PATH_MAX + 32];
	int failures;
} g;

/* The figures the targets table compares (filled by each benchmark). */
static struct {
	double idle_extra_ns, active_launch_ns[2], m_events_per_s, bytes_per_event, rename_s_per_m;
	double rss_extra_mib[2];
} fig = {
    .idle_extra_ns = NAN,
    .active_launch_ns = {NAN, NAN},
    .m_events_per_s = NAN,
    .bytes_per_event = NAN,
    .rename_s_per_m = NAN,
    .rss_extra_mib = {NAN, NAN},
};

/* "12.3 (11.0-15.2)": median and range, into buf[CELL_MAX]. */
#define CELL_MAX 64
static const char *fmt(char *buf, const struct bench_stat *s, int decimals)
{
	if (!s->n)
		snprintf(buf, CELL_MAX, "n/a");
	else
		snprintf(buf, CELL_MAX, "%.*f (%.*f-%.*f)", decimals, s->med, decimals, s->lo,
			 decimals, s->hi);
	return buf;
}

static struct bench_stat stat_of(const double *v, int n)
{
	double tmp[MAX_ROUNDS];
	struct bench_stat s;

	memcpy(tmp, v, (size_t)n * sizeof(*v));
	bench_stat_of(tmp, n, &s);
	return s;
}

/* Runs one program; on failure says so with the tail of its stderr. Returns 0 or -1. */
static int run(const char *what, const char *const argv[], const char *const env[],
	       struct bench_out *out)
{
	char cmd[PATH_MAX + 64];

	if (bench_run(argv, env, g.err_log, out) == 0)
		return 0;
	fprintf(stderr, "bench: %s failed (status %d); its output:\n%s\n", what, out->status,
		out->text);
	snprintf(cmd, sizeof(cmd), "tail -n 20 '%s' >&2", g.err_log);
	if (system(cmd) != 0)
		fprintf(stderr, "bench: (no stderr log)\n");
	g.failures++;
	return -1;
}

/* A fresh GPROF_OUTPUT=<tmp>/<name>-<round> entry in buf. */
static const char *output_env(char *buf, size_t size, const char *name, int round)
{
	snprintf(buf, size, "GPROF_OUTPUT=%s/%s-%d", g.tmp, name, round);
	return buf;
}

/* ---- B1: hook cost ---- */

struct b1_mode {
	const char *name;
	bool preload;
	bool active; /* ends its window (-e) after a twentieth of the calls */
	bool idle;   /* counts for the <= 5 ns target */
	int cupti; /* 1: the simulated GPU's libcupti records the API; the stub makes no records */
	const char *marker_args;
	const char *env[3];
};

static const struct b1_mode b1_modes[] = {
    {.name = "bare (no libgprof)"},
    {.name = "before any step marker", .preload = true, .idle = true},
    {.name = "wait phase",
     .preload = true,
     .idle = true,
     .marker_args = "1",
     .env = {"GPROF_SCHEDULE=wait=1000000,warmup=1,active=1"}},
    {.name = "active phase, no CUPTI: the hooks write every call",
     .preload = true,
     .active = true,
     .marker_args = "1",
     .env = {"GPROF_SCHEDULE=wait=0,warmup=0,active=1", "GPROF_BUFFER_MB=1024"}},
    {.name = "active phase, CUPTI records the API",
     .preload = true,
     .active = true,
     .cupti = 1,
     .marker_args = "2",
     .env = {"GPROF_SCHEDULE=wait=0,warmup=1,active=1"}},
    {.name = "GPROF_DISABLE=1", .preload = true, .env = {"GPROF_DISABLE=1"}},
};
#define B1_MODES (sizeof(b1_modes) / sizeof(b1_modes[0]))

static const char *const b1_calls[] = {"launch", "copy", "alloc"};
static const char *const b1_call_names[] = {"cudaLaunchKernel", "cudaMemcpyAsync",
					    "cudaMalloc/cudaFree"};
#define B1_CALLS_N 3

/*
 * [mode][call][round]: CPU ns of the calling thread per call, wall ns per call, and that
 * thread's page faults per 1000 calls; dropped events of the active runs.
 */
static double b1_ns[B1_MODES][B1_CALLS_N][MAX_ROUNDS];
static double b1_wall[B1_MODES][B1_CALLS_N][MAX_ROUNDS];
static double b1_faults[B1_MODES][B1_CALLS_N][MAX_ROUNDS];
static double b1_dropped;

static void b1_run(const struct b1_mode *m, int round)
{
	char n[32], name[32], out_env[PATH_MAX + 32];
	const char *argv[12] = {g.hook_loop, "-n", n, "-r", B1_REPS};
	const char *env[MAX_ENV] = {"GPROF_CUPTI_LIB=/nonexistent", "GPROF_LOG=error",
				    "GPROF_SUMMARY=off", out_env};
	int a = 5, e = 4;
	struct bench_out out;

	snprintf(name, sizeof(name), "b1-%d", (int)(m - b1_modes));
	output_env(out_env, sizeof(out_env), name, round);
	snprintf(n, sizeof(n), "%d", m->active ? B1_CALLS / 20 : B1_CALLS);
	if (m->marker_args) {
		argv[a++] = "-s";
		argv[a++] = m->marker_args;
	}
	if (m->active)
		argv[a++] = "-e";
	for (int i = 0; i < 3 && m->env[i]; i++)
		env[e++] = m->env[i];
	if (m->preload)
		env[e++] = g.preload;
	if (m->cupti)
		env[e++] = g.cupti; /* after GPROF_CUPTI_LIB=/nonexistent: replaces it */
	for (int c = 0; c < B1_CALLS_N; c++)
		b1_ns[m - b1_modes][c][round] = b1_wall[m - b1_modes][c][round] =
		    b1_faults[m - b1_modes][c][round] = NAN;
	if (run(m->name, argv, env, &out))
		return;
	for (int c = 0; c < B1_CALLS_N; c++) {
		char key[32];

		snprintf(key, sizeof(key), "%s_cpu_ns", b1_calls[c]);
		b1_ns[m - b1_modes][c][round] = bench_value(&out, key);
		snprintf(key, sizeof(key), "%s_ns", b1_calls[c]);
		b1_wall[m - b1_modes][c][round] = bench_value(&out, key);
		snprintf(key, sizeof(key), "%s_faults", b1_calls[c]);
		b1_faults[m - b1_modes][c][round] = bench_value(&out, key);
	}
	if (m->active)
		b1_dropped += bench_value(&out, "dropped");
}

/* One table cell: ns per call, then its extra over bare and the ratio, paired by round. */
static void b1_cell(size_t mode, int c, char *cell, size_t size)
{
	double extra[MAX_ROUNDS], ratio[MAX_ROUNDS];
	struct bench_stat s = stat_of(b1_ns[mode][c], B1_ROUNDS), se, sr;
	char a[CELL_MAX], b[CELL_MAX];

	for (int r = 0; r < B1_ROUNDS; r++) {
		extra[r] = b1_ns[mode][c][r] - b1_ns[0][c][r];
		ratio[r] = b1_ns[mode][c][r] / b1_ns[0][c][r];
	}
	se = stat_of(extra, B1_ROUNDS);
	sr = stat_of(ratio, B1_ROUNDS);
	if (mode == 0)
		snprintf(cell, size, "%s", fmt(a, &s, 1));
	else
		snprintf(cell, size, "%s; +%s; x%.1f", fmt(a, &s, 1), fmt(b, &se, 1), sr.med);
	if (b1_modes[mode].active && c == 0)
		fig.active_launch_ns[b1_modes[mode].cupti] = se.med;
	if (b1_modes[mode].idle && !(se.med <= fig.idle_extra_ns))
		fig.idle_extra_ns = se.med;
}

/* The active phases again: wall ns per call, and page faults of the calling thread. */
static void b1_active(void)
{
	char a[CELL_MAX], b[CELL_MAX];

	printf("\nThe active phase by the wall clock (the writer thread and the machine's other "
	       "work compete for the CPUs) and the calling thread's page faults per 1000 calls "
	       "(first touches of event buffer pages).\n\n| phase | call | wall ns per call | "
	       "page faults per 1000 calls |\n| --- | --- | --- | --- |\n");
	for (size_t m = 0; m < B1_MODES; m++) {
		for (int c = 0; c < B1_CALLS_N && b1_modes[m].active; c++) {
			struct bench_stat w = stat_of(b1_wall[m][c], B1_ROUNDS);
			struct bench_stat f = stat_of(b1_faults[m][c], B1_ROUNDS);

			printf("| %s | %s | %s | %s |\n", b1_modes[m].name, b1_call_names[c],
			       fmt(a, &w, 1), fmt(b, &f, 2));
		}
	}
}

/*
 * The floor of the hooks-only launch: `hook-loop -f` once per round prints what the machine
 * charges for the parts of a recorded call no profiler leaves out; [figure][round].
 */
enum {
	FLOOR_TSC,
	FLOOR_CLOCK,
	FLOOR_EVENT,
	FLOOR_FAULT,
	FLOOR_FIGS
};
static const struct {
	const char *key, *text;
} floor_figs[FLOOR_FIGS] = {
    [FLOOR_TSC] = {"floor_tsc_pair_ns", "two TSC reads (the hooks' clock where the kernel's "
					"clock source is the TSC)"},
    [FLOOR_CLOCK] = {"floor_clock_pair_ns", "two clock_gettime(CLOCK_REALTIME) calls"},
    [FLOOR_EVENT] = {"floor_event_ns",
		     "one launch's event (a 64-byte record) written into a 16 MiB ring"},
    [FLOOR_FAULT] = {"floor_page_fault_ns", "a page of memory touched for the first time"},
};
static double b1_floor[FLOOR_FIGS][MAX_ROUNDS];

static void b1_floor_run(int round)
{
	const char *argv[] = {g.hook_loop, "-f", NULL};
	struct bench_out out;
	int ok = run("hook-loop -f", argv, NULL, &out) == 0;

	for (int f = 0; f < FLOOR_FIGS; f++)
		b1_floor[f][round] = ok ? bench_value(&out, floor_figs[f].key) : NAN;
}

/*
 * The figures, then the hooks-only launch's extra over bare split, round by round, into that
 * floor (the clock's two readings, its event, and its page faults at the round's price) and
 * the rest: libgprof's own instructions.
 */
static void b1_floor_table(void)
{
	size_t m = 0;
	double floor[MAX_ROUNDS], rest[MAX_ROUNDS];
	struct bench_stat st;
	char cell[CELL_MAX];

	while (m < B1_MODES && !(b1_modes[m].active && !b1_modes[m].cupti))
		m++;
	printf("\nThe floor of a call the hooks record alone: what this machine charges for the "
	       "parts no profiler leaves out (bench/hook-loop -f, once per round, CPU time: median "
	       "(range) ns), and the hooks-only cudaLaunchKernel's extra over bare split into that "
	       "floor and the rest, libgprof's own instructions.\n\n| figure | ns |\n"
	       "| --- | --- |\n");
	for (int f = 0; f < FLOOR_FIGS; f++) {
		st = stat_of(b1_floor[f], B1_ROUNDS);
		printf("| %s | %s |\n", floor_figs[f].text, fmt(cell, &st, 1));
	}
	if (m == B1_MODES)
		return;
	for (int r = 0; r < B1_ROUNDS; r++) {
		double clock = isnan(b1_floor[FLOOR_TSC][r]) ? b1_floor[FLOOR_CLOCK][r]
							     : b1_floor[FLOOR_TSC][r];

		floor[r] = clock + b1_floor[FLOOR_EVENT][r] +
			   b1_faults[m][0][r] / 1000 * b1_floor[FLOOR_FAULT][r];
		rest[r] = b1_ns[m][0][r] - b1_ns[0][0][r] - floor[r];
	}
	st = stat_of(floor, B1_ROUNDS);
	printf("| hooks-only launch: the floor (its clock, its event, its page faults) | %s |\n",
	       fmt(cell, &st, 1));
	st = stat_of(rest, B1_ROUNDS);
	printf("| hooks-only launch: the rest, libgprof's own work | %s |\n", fmt(cell, &st, 1));
}

static void b1(void)
{
	char cell[256];

	for (int r = 0; r < B1_ROUNDS; r++) {
		fprintf(stderr, "bench: B1 round %d/%d\n", r + 1, B1_ROUNDS);
		for (size_t i = 0; i < B1_MODES; i++)
			b1_run(&b1_modes[(i + (size_t)r) % B1_MODES], r);
		b1_floor_run(r);
	}
	printf("\n## B1 hook cost\n\nns per call on a runtime whose calls cost nothing "
	       "(bench/stub-cudart.c), CPU time of the calling thread: median (range) of %d "
	       "rounds; +extra over bare in the same round; x ratio to bare. Active phase "
	       "without CUPTI: each call becomes an event (%.0f dropped); with CUPTI recording "
	       "the API (the simulated GPU's libcupti, to which the stub reports nothing, so "
	       "CUPTI's own cost is left out) the hooks neither time nor describe a call.\n\n"
	       "| phase | %s | %s | %s |\n| --- | --- | --- | --- |\n",
	       B1_ROUNDS, b1_dropped, b1_call_names[0], b1_call_names[1], b1_call_names[2]);
	for (size_t m = 0; m < B1_MODES; m++) {
		printf("| %s |", b1_modes[m].name);
		for (int c = 0; c < B1_CALLS_N; c++) {
			b1_cell(m, c, cell, sizeof(cell));
			printf(" %s |", cell);
		}
		printf("\n");
	}
	b1_active();
	b1_floor_table();
}

/* ---- B2: export ---- */

/* The runs: gzip level and compressor threads (GPROF_WRITER_THREADS); 1 is the default. */
static const struct {
	int level;
	unsigned threads;
} b2_runs[] = {{1, 0}, {1, 1}, {1, 2}, {6, 0}, {6, 1}};
#define B2_RUNS	       (sizeof(b2_runs) / sizeof(b2_runs[0]))
#define B2_DEFAULT_RUN 1 /* level 1 with the default thread: the targets' figures */

/* The table's columns, each a figure of one run; `decimals` as printed. */
enum {
	B2_WALL_EV_S,
	B2_SPEEDUP,
	B2_EV_S,
	B2_CPU_NS,
	B2_GZ,
	B2_RAW,
	B2_RENAME,
	B2_ZLIB_EV_S,
	B2_PUSH,
	B2_COLS
};
static const struct {
	const char *header;
	int decimals;
} b2_cols[B2_COLS] = {
    [B2_WALL_EV_S] = {"M events/s of writer wall time", 2},
    [B2_SPEEDUP] = {"x threads 0", 2},
    [B2_EV_S] = {"writer thread M events/s (CPU)", 2},
    [B2_CPU_NS] = {"export CPU ns/event (all threads)", 0},
    [B2_GZ] = {"bytes/event on disk", 1},
    [B2_RAW] = {"bytes/event JSON", 0},
    [B2_RENAME] = {"release to rename ms", 0},
    [B2_ZLIB_EV_S] = {"zlib alone M events/s", 2},
    [B2_PUSH] = {"push ns/event", 1},
};

/* [column][run][round]; the window's events (the same every run). */
static double b2_fig[B2_COLS][B2_RUNS][MAX_ROUNDS];
static double b2_events;

static void b2_run(size_t ri, int round)
{
	char level[8], dir[PATH_MAX + 32], kernels[32], threads[8];
	const char *argv[] = {g.self, "--export", level, dir, kernels, threads, NULL};
	struct bench_out out;
	double ev;

	snprintf(level, sizeof(level), "%d", b2_runs[ri].level);
	snprintf(threads, sizeof(threads), "%u", b2_runs[ri].threads);
	snprintf(dir, sizeof(dir), "%s/b2-%zu-%d", g.tmp, ri, round);
	snprintf(kernels, sizeof(kernels), "%d", B2_KERNELS);
	for (int c = 0; c < B2_COLS; c++)
		b2_fig[c][ri][round] = NAN;
	if (run("B2 export", argv, NULL, &out))
		return;
	b2_events = ev = bench_value(&out, "events");
	b2_fig[B2_WALL_EV_S][ri][round] = ev / bench_value(&out, "window_wall_ms") / 1e3;
	b2_fig[B2_EV_S][ri][round] = ev / bench_value(&out, "writer_cpu_ms") / 1e3;
	b2_fig[B2_CPU_NS][ri][round] = bench_value(&out, "export_cpu_ms") * 1e6 / ev;
	b2_fig[B2_GZ][ri][round] = bench_value(&out, "file_bytes") / ev;
	b2_fig[B2_RAW][ri][round] = bench_value(&out, "raw_bytes") / ev;
	b2_fig[B2_RENAME][ri][round] = bench_value(&out, "release_to_rename_ms");
	b2_fig[B2_ZLIB_EV_S][ri][round] = ev / bench_value(&out, "zlib_cpu_ms") / 1e3;
	b2_fig[B2_PUSH][ri][round] = bench_value(&out, "push_ns");
	if (bench_value(&out, "dropped") != 0)
		fprintf(stderr, "bench: B2 dropped events: the window did not fit\n");
}

/* Each run's wall rate over that of its level without threads in the same round. */
static void b2_speedups(void)
{
	for (size_t ri = 0; ri < B2_RUNS; ri++) {
		for (size_t base = 0; base < B2_RUNS; base++) {
			if (b2_runs[base].level != b2_runs[ri].level || b2_runs[base].threads)
				continue;
			for (int r = 0; r < B2_ROUNDS; r++)
				b2_fig[B2_SPEEDUP][ri][r] =
				    b2_fig[B2_WALL_EV_S][ri][r] / b2_fig[B2_WALL_EV_S][base][r];
		}
	}
}

static void b2_row(size_t ri)
{
	struct bench_stat st[B2_COLS];
	char cell[CELL_MAX];

	printf("| %d | %u |", b2_runs[ri].level, b2_runs[ri].threads);
	for (int c = 0; c < B2_COLS; c++) {
		st[c] = stat_of(b2_fig[c][ri], B2_ROUNDS);
		printf(" %s |", fmt(cell, &st[c], b2_cols[c].decimals));
	}
	printf("\n");
	if (ri == B2_DEFAULT_RUN) {
		fig.m_events_per_s = st[B2_WALL_EV_S].med;
		fig.bytes_per_event = st[B2_GZ].med;
		fig.rename_s_per_m = st[B2_RENAME].med / 1e3 / (b2_events / 1e6);
	}
}

static void b2(void)
{
	for (int r = 0; r < B2_ROUNDS; r++) {
		fprintf(stderr, "bench: B2 round %d/%d\n", r + 1, B2_ROUNDS);
		for (size_t i = 0; i < B2_RUNS; i++)
			b2_run((i + (size_t)r) % B2_RUNS, r);
	}
	b2_speedups();
	printf("\n## B2 export\n\nOne window of %d kernels, each with its cudaLaunchKernel event "
	       "and ac2g flow (%.0f events), through the real writer, with 0 to 2 compressor "
	       "threads (GPROF_WRITER_THREADS); median (range) of %d rounds. Writer wall time: "
	       "from the first push to the rename (the window is pushed at once, so the writer "
	       "is behind from its first pass); x threads 0: that rate over the same level's "
	       "without threads in the same round. Writer thread: events over its own CPU time. "
	       "Export CPU: the writer's and the compressor threads' CPU time together. Release "
	       "to rename: the wait at the window's end. zlib alone: deflate + CRC-32 of the "
	       "same JSON with the sink's settings on one thread (CPU time). Push: the "
	       "producer's cost per event.\n\n"
	       "| gzip level | threads |",
	       B2_KERNELS, b2_events, B2_ROUNDS);
	for (int c = 0; c < B2_COLS; c++)
		printf(" %s |", b2_cols[c].header);
	printf("\n| --- | --- |");
	for (int c = 0; c < B2_COLS; c++)
		printf(" --- |");
	printf("\n");
	for (size_t ri = 0; ri < B2_RUNS; ri++)
		b2_row(ri);
}

/* ---- B3: memory ---- */

static const int b3_mb[] = {16, 64};
static double b3_extra[2][MAX_ROUNDS], b3_dropped[2][MAX_ROUNDS];

static void b3_run(int i, int round)
{
	char mb[32], launches[32], name[32], out_env[PATH_MAX + 32];
	const char *argv[] = {g.hook_loop, "-w", launches, NULL};
	const char *env[] = {"GPROF_CUPTI_LIB=/nonexistent",
			     "GPROF_LOG=error",
			     "GPROF_SUMMARY=off",
			     "GPROF_SCHEDULE=wait=0,warmup=0,active=1",
			     mb,
			     out_env,
			     g.preload,
			     NULL};
	struct bench_out out;

	snprintf(mb, sizeof(mb), "GPROF_BUFFER_MB=%d", b3_mb[i]);
	snprintf(name, sizeof(name), "b3-%d", b3_mb[i]);
	output_env(out_env, sizeof(out_env), name, round);
	snprintf(launches, sizeof(launches), "%d", B3_LAUNCHES);
	b3_extra[i][round] = b3_dropped[i][round] = NAN;
	if (run("B3 memory", argv, env, &out))
		return;
	b3_extra[i][round] =
	    (bench_value(&out, "hwm_after_kib") - bench_value(&out, "rss_before_kib")) / 1024;
	b3_dropped[i][round] = bench_value(&out, "dropped");
}

static void b3(void)
{
	char a[CELL_MAX], b[CELL_MAX];

	for (int r = 0; r < B3_ROUNDS; r++) {
		fprintf(stderr, "bench: B3 round %d/%d\n", r + 1, B3_ROUNDS);
		for (int i = 0; i < 2; i++)
			b3_run((i + r) % 2, r);
	}
	printf("\n## B3 memory\n\nOne window of %d launches (one event each, no CUPTI) on the "
	       "stub runtime: peak RSS (VmHWM) after the window is written, minus VmRSS just "
	       "before it; median (range) of %d rounds.\n\n"
	       "| GPROF_BUFFER_MB | extra peak RSS MiB | target MiB | events dropped (cap) |\n"
	       "| --- | --- | --- | --- |\n",
	       B3_LAUNCHES, B3_ROUNDS);
	for (int i = 0; i < 2; i++) {
		struct bench_stat e = stat_of(b3_extra[i], B3_ROUNDS);
		struct bench_stat d = stat_of(b3_dropped[i], B3_ROUNDS);

		printf("| %d | %s | %d | %s |\n", b3_mb[i], fmt(a, &e, 1), b3_mb[i] + 16,
		       fmt(b, &d, 0));
		fig.rss_extra_mib[i] = e.med;
	}
}

/* ---- B4: end to end on the simulated GPU ---- */

struct b4_mode {
	const char *name;
	const char *schedule; /* NULL: no libgprof */
};

static const struct b4_mode b4_modes[] = {
    {.name = "no profiler"},
    {.name = "libgprof, idle (`wait=1000000`)", .schedule = "wait=1000000"},
    {.name = "libgprof, default schedule", .schedule = "wait=1,warmup=1,active=3,repeat=1"},
    {.name = "libgprof, GPROF_SCHEDULE=all", .schedule = "all"},
};
#define B4_MODES (sizeof(b4_modes) / sizeof(b4_modes[0]))

/* steps-loop on the simulation's runtime, and on NVIDIA's over the simulated driver */
#define B4_PROGS 2
static const char *const b4_prog_names[B4_PROGS] = {
    "the simulation's runtime", "NVIDIA's runtime (libcudart.so.13) on the simulated driver"};

/* [program][mode][round]: the loop's own time and the process's */
static double b4_loop[B4_PROGS][B4_MODES][MAX_ROUNDS], b4_proc[B4_PROGS][B4_MODES][MAX_ROUNDS];

static void b4_run(int prog, size_t m, int round)
{
	char sched[64], out_env[PATH_MAX + 32];
	const char *argv[] = {prog ? g.steps_loop_real : g.steps_loop, B4_STEPS, NULL};
	/* NVIDIA's runtime has NVIDIA's libcupti beside it: the simulation's is named */
	const char *env[] = {sched,
			     output_env(out_env, sizeof(out_env), "b4", round),
			     "GPROF_SUMMARY=off",
			     g.preload,
			     prog ? g.cupti : NULL,
			     NULL};

	snprintf(sched, sizeof(sched), "GPROF_SCHEDULE=%s", b4_modes[m].schedule);
	b4_loop[prog][m][round] = b4_proc[prog][m][round] = NAN;
	struct bench_out out;

	if (run(b4_modes[m].name, argv, b4_modes[m].schedule ? env : NULL, &out))
		return;
	b4_loop[prog][m][round] = bench_value(&out, "wall_ms");
	b4_proc[prog][m][round] = out.wall_ms;
}

static void b4_row(int prog, size_t m)
{
	double rl[MAX_ROUNDS], rp[MAX_ROUNDS];
	struct bench_stat l = stat_of(b4_loop[prog][m], B4_ROUNDS),
			  p = stat_of(b4_proc[prog][m], B4_ROUNDS);
	struct bench_stat sl, sp;
	char a[CELL_MAX], b[CELL_MAX], c[CELL_MAX], d[CELL_MAX];

	for (int r = 0; r < B4_ROUNDS; r++) {
		rl[r] = b4_loop[prog][m][r] / b4_loop[prog][0][r];
		rp[r] = b4_proc[prog][m][r] / b4_proc[prog][0][r];
	}
	sl = stat_of(rl, B4_ROUNDS);
	sp = stat_of(rp, B4_ROUNDS);
	printf("| %s | %s | %s | %s | %s |\n", b4_modes[m].name, fmt(a, &l, 0), fmt(b, &sl, 3),
	       fmt(c, &p, 0), fmt(d, &sp, 3));
}

static void b4(void)
{
	int progs = access(g.steps_loop_real, X_OK) == 0 ? 2 : 1;

	for (int r = 0; r < B4_ROUNDS; r++) {
		fprintf(stderr, "bench: B4 round %d/%d\n", r + 1, B4_ROUNDS);
		for (int prog = 0; prog < progs; prog++)
			for (size_t i = 0; i < B4_MODES; i++)
				b4_run(prog, (i + (size_t)r) % B4_MODES, r);
	}
	printf("\n## B4 end to end on the simulated GPU\n\nbench/steps-loop: %s steps of a "
	       "copy in, 8 launches, a memset, a copy out and a synchronisation, on the "
	       "simulated GPU (its CUPTI in use); median (range) of %d rounds, ratios to no "
	       "profiler in the same round. The loop's time excludes start-up and exit (where "
	       "`all` writes its window); the process's includes them.\n",
	       B4_STEPS, B4_ROUNDS);
	for (int prog = 0; prog < progs; prog++) {
		printf("\nOn %s:\n\n| run | loop ms | ratio | process ms | ratio |\n"
		       "| --- | --- | --- | --- | --- |\n",
		       b4_prog_names[prog]);
		for (size_t m = 0; m < B4_MODES; m++)
			b4_row(prog, m);
	}
}

/* ---- B5: PyTorch on the simulated GPU ---- */

struct b5_mode {
	const char *name;
	const char *torch;   /* GPROF_TORCH: steps or on; NULL: no libgprof */
	bool torch_profiler; /* train.py --torch-profiler */
};

static const struct b5_mode b5_modes[] = {
    {.name = "no profiler"},
    {.name = "libgprof default (`gprof-run --torch-steps`)", .torch = "steps"},
    {.name = "libgprof `--torch` (operators and their inputs, modules, tensor memory)",
     .torch = "on"},
    {.name = "torch.profiler (record_shapes, profile_memory, with_modules, with_stack)",
     .torch_profiler = true},
};
#define B5_MODES (sizeof(b5_modes) / sizeof(b5_modes[0]))

/* [mode][round]: mean step ms in the window (steps 2-4) and after it (6 on) */
static double b5_in[B5_MODES][MAX_ROUNDS], b5_after[B5_MODES][MAX_ROUNDS];

/* Mean duration (ms) of steps [from, to] by the step starts train.py wrote; NAN if missing. */
static double b5_mean(const double *start, int n, int from, int to)
{
	return to + 1 < n ? (start[to + 1] - start[from]) / 1e6 / (to + 1 - from) : NAN;
}

static void b5_run(size_t m, int round)
{
	char marks[1100], marks_env[1200], out_env[PATH_MAX + 32], trace[1100], torch[32];
	char kineto[PATH_MAX + 48];
	const struct b5_mode *mode = &b5_modes[m];
	const char *argv[] = {g.python, g.train, "--steps", "14", NULL, NULL, NULL};
	const char *env[MAX_ENV] = {g.driver, marks_env};
	double start[64];
	int n = 0, e = 2;
	struct bench_out out;
	FILE *f;

	snprintf(marks, sizeof(marks), "%s/b5-marks-%zu-%d", g.tmp, m, round);
	snprintf(marks_env, sizeof(marks_env), "FRAMEWORKS_MARKS=%s", marks);
	if (mode->torch) {
		snprintf(torch, sizeof(torch), "GPROF_TORCH=%s", mode->torch);
		env[e++] = g.preload;
		env[e++] = g.cupti;
		env[e++] = torch;
		env[e++] = "GPROF_SUMMARY=off";
		env[e++] = output_env(out_env, sizeof(out_env), "b5", round);
	} else if (mode->torch_profiler) {
		/* Kineto loads libcupti.so.13 by name: the simulation's, loaded first */
		snprintf(kineto, sizeof(kineto), "LD_PRELOAD=%s", strchr(g.cupti, '=') + 1);
		env[e++] = kineto;
		snprintf(trace, sizeof(trace), "%s/b5-kineto-%d.json", g.tmp, round);
		argv[4] = "--torch-profiler";
		argv[5] = trace;
	}
	b5_in[m][round] = b5_after[m][round] = NAN;
	if (run(mode->name, argv, env, &out) || !(f = fopen(marks, "re")))
		return;
	while (n < 64 && fscanf(f, "%lf", &start[n]) == 1)
		n++;
	fclose(f);
	b5_in[m][round] = b5_mean(start, n, 2, 4);
	b5_after[m][round] = b5_mean(start, n, 6, B5_STEPS - 2);
}

static void b5_row(size_t m)
{
	double ri[MAX_ROUNDS], ra[MAX_ROUNDS];
	char a[CELL_MAX], b[CELL_MAX], c[CELL_MAX], d[CELL_MAX];

	for (int r = 0; r < B5_ROUNDS; r++) {
		ri[r] = b5_in[m][r] / b5_in[0][r];
		ra[r] = b5_after[m][r] / b5_after[0][r];
	}
	struct bench_stat i = stat_of(b5_in[m], B5_ROUNDS), si = stat_of(ri, B5_ROUNDS),
			  f = stat_of(b5_after[m], B5_ROUNDS), sa = stat_of(ra, B5_ROUNDS);

	printf("| %s | %s | %s | %s | %s |\n", b5_modes[m].name, fmt(a, &i, 2), fmt(b, &si, 3),
	       fmt(c, &f, 2), fmt(d, &sa, 3));
}

static void b5(const char *build)
{
	char status[PATH_MAX + 32], line[16] = "";
	FILE *f;

	snprintf(status, sizeof(status), "%s/frameworks/status", build);
	f = fopen(status, "re");
	if (!f || !fgets(line, sizeof(line), f) || strcmp(line, "ok\n") != 0) {
		printf("\n## B5 PyTorch on the simulated GPU\n\nNot measured: no PyTorch "
		       "environment (`make test-frameworks` makes it).\n");
		if (f)
			fclose(f);
		return;
	}
	fclose(f);
	for (int r = 0; r < B5_ROUNDS; r++) {
		fprintf(stderr, "bench: B5 round %d/%d\n", r + 1, B5_ROUNDS);
		for (size_t i = 0; i < B5_MODES; i++)
			b5_run((i + (size_t)r) % B5_MODES, r);
	}
	printf("\n## B5 PyTorch on the simulated GPU\n\ntest/frameworks/train.py, %d steps "
	       "(a 2-layer transformer encoder, AdamW, bf16 autocast) on PyTorch's CUDA wheels "
	       "over the simulated driver; mean step time (ms) from the program's own step "
	       "starts, in the recorded window (steps 2-4, the default schedule for all) and "
	       "after it (steps 6-%d); median (range) of %d rounds, ratios to no profiler in "
	       "the same round.\n\n| run | window step ms | ratio | after-window step ms | "
	       "ratio |\n| --- | --- | --- | --- | --- |\n",
	       B5_STEPS, B5_STEPS - 2, B5_ROUNDS);
	for (size_t m = 0; m < B5_MODES; m++)
		b5_row(m);
}

/* ---- the machine, the targets, main ---- */

static void machine(void)
{
	char line[256], model[256] = "unknown";
	double load[3] = {0};
	struct utsname u = {0};
	time_t now = time(NULL);
	FILE *f = fopen("/proc/cpuinfo", "re");

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "model name", 10) == 0 && strchr(line, ':')) {
			snprintf(model, sizeof(model), "%s", strchr(line, ':') + 2);
			model[strcspn(model, "\n")] = '\0';
			break;
		}
	if (f)
		fclose(f);
	uname(&u);
	if (getloadavg(load, 3) < 0)
		load[0] = NAN;
	printf("# libgprof benchmarks\n\nMachine: %ld CPUs (nproc), %s, Linux %s; load average "
	       "%.2f at start; %s",
	       sysconf(_SC_NPROCESSORS_ONLN), model, u.release, load[0], ctime(&now));
}

struct target {
	const char *what;
	const double *value; /* NAN: not measured */
	double limit;
	bool at_least; /* the value must reach the limit, not stay under it */
	const char *unit;
};

#define AT_MOST(text, v, lim, u)                                       \
	{                                                              \
		.what = text, .value = &fig.v, .limit = lim, .unit = u \
	}
#define AT_LEAST(text, v, lim, u)                                                        \
	{                                                                                \
		.what = text, .value = &fig.v, .limit = lim, .at_least = true, .unit = u \
	}

static const struct target target_rows[] = {
    AT_MOST("before any marker / wait phase: <= 1 ns extra per hooked call (worst call)",
	    idle_extra_ns, 1, "ns"),
    AT_MOST("active phase: <= 60 ns own work per launch (no CUPTI: hooks write events)",
	    active_launch_ns[0], 60, "ns"),
    AT_MOST("active phase: <= 20 ns own work per launch (CUPTI records the API)",
	    active_launch_ns[1], 20, "ns"),
    AT_LEAST("export: >= 2 M events/s of writer wall time at level 1 (default threads)",
	     m_events_per_s, 2, "M events/s"),
    AT_MOST("export: <= 25 bytes per event on disk at level 1", bytes_per_event, 25, "bytes"),
    AT_MOST("a 1 M-event window renamed <= 0.5 s after it ends (level 1)", rename_s_per_m, 0.5,
	    "s per M events"),
    AT_MOST("peak extra RSS <= GPROF_BUFFER_MB + 16 MiB, at 16", rss_extra_mib[0], 32, "MiB"),
    AT_MOST("peak extra RSS <= GPROF_BUFFER_MB + 16 MiB, at 64", rss_extra_mib[1], 80, "MiB"),
};

static const char *verdict(const struct target *t)
{
	double v = *t->value;

	if (isnan(v))
		return "not measured";
	return (t->at_least ? v >= t->limit : v <= t->limit) ? "met" : "missed";
}

static void targets(void)
{
	printf("\n## Targets (DESIGN.md)\n\n| target | measured (median) | status |\n"
	       "| --- | --- | --- |\n");
	for (size_t i = 0; i < sizeof(target_rows) / sizeof(target_rows[0]); i++) {
		const struct target *t = &target_rows[i];

		printf("| %s | %.*f %s | %s |\n", t->what, *t->value < 10 ? 2 : 1, *t->value,
		       t->unit, verdict(t));
	}
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static int setup(const char *build, const char *argv0)
{
	const char *tmp = getenv("TMPDIR");
	char lib[PATH_MAX + 16];

	snprintf(lib, sizeof(lib), "%s/libgprof.so", build);
	if (snprintf(g.tmp, sizeof(g.tmp), "%s/gprof-bench.XXXXXX", tmp && *tmp ? tmp : P_tmpdir) >=
		(int)sizeof(g.tmp) ||
	    !realpath(lib, g.lib) || !realpath(argv0, g.self) || !mkdtemp(g.tmp)) {
		fprintf(stderr, "bench: %s or a scratch folder missing: run `make bench`\n", lib);
		return -1;
	}
	snprintf(g.hook_loop, sizeof(g.hook_loop), "%s/bench/hook-loop", build);
	snprintf(g.steps_loop, sizeof(g.steps_loop), "%s/bench/steps-loop", build);
	snprintf(g.steps_loop_real, sizeof(g.steps_loop_real), "%s/bench/steps-loop-real", build);
	snprintf(g.preload, sizeof(g.preload), "LD_PRELOAD=%s", g.lib);
	snprintf(g.cupti, sizeof(g.cupti), "GPROF_CUPTI_LIB=%s", g.lib);
	strcpy(strrchr(g.cupti, '/'), "/fakecuda/libcupti.so.13");
	snprintf(g.err_log, sizeof(g.err_log), "%s/stderr.log", g.tmp);
	snprintf(g.python, sizeof(g.python), "%s/frameworks/env/bin/python", build);
	if (!realpath("test/frameworks/train.py", g.train))
		g.train[0] = '\0';
	snprintf(g.driver, sizeof(g.driver), "LD_LIBRARY_PATH=%s", g.lib);
	strcpy(strrchr(g.driver, '/'), "/fakecuda/driver");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 6 && strcmp(argv[1], "--export") == 0)
		return bench_export_main(atoi(argv[2]), argv[3], atol(argv[4]),
					 (unsigned)atoi(argv[5]));
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: bench <build folder> [benchmarks, e.g. B4B5]\n");
		return 64;
	}
	if (setup(argv[1], argv[0]))
		return 1;
#define WANTED(b) (argc < 3 || strstr(argv[2], b))
	machine();
	if (WANTED("B1"))
		b1();
	if (WANTED("B2"))
		b2();
	if (WANTED("B3"))
		b3();
	if (WANTED("B4"))
		b4();
	if (WANTED("B5"))
		b5(argv[1]);
	targets();
	fflush(stdout);
	nftw(g.tmp, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	if (g.failures)
		fprintf(stderr, "bench: %d runs failed; their figures are missing\n", g.failures);
	return g.failures ? 1 : 0;
}
