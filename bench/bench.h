/*
 * The benchmark driver's parts (bench/bench.c runs them): running a program and reading the
 * key=value lines it prints, the statistics of repeated runs, and B2's export run.
 */
#ifndef GPROF_BENCH_H
#define GPROF_BENCH_H

#include <stdbool.h>
#include <stddef.h>

#define BENCH_OUT_MAX 4096

struct bench_out {
	char text[BENCH_OUT_MAX]; /* the program's stdout, NUL-terminated, cut if longer */
	int status;		  /* exit status, or 128 + signal */
	double wall_ms;		  /* from fork to exit */
};

/*
 * Runs argv[0] with argv. The environment is the driver's without LD_PRELOAD, the injection
 * variables and any GPROF_ or FAKEGPU_ variable, then `env` ("NAME=value", NULL-terminated;
 * may be NULL). stderr goes to err_path (appended). Returns 0 when the program exited with 0,
 * else -1 (out still holds what there was).
 */
int bench_run(const char *const argv[], const char *const env[], const char *err_path,
	      struct bench_out *out);
/* The number after "key=" at the start of a line of out->text, or NAN. */
double bench_value(const struct bench_out *out, const char *key);

/* Median and range of n values (reorders v); NAN values are left out. */
struct bench_stat {
	double med, lo, hi;
	int n;
};
void bench_stat_of(double *v, int n, struct bench_stat *s);

/*
 * B2's child: one window of synthetic kernels through the real writer, which may start
 * `threads` compressor threads; prints key=value.
 */
int bench_export_main(int level, const char *dir, long kernels, unsigned threads);

#endif
