/*
 * Runs a program for an end-to-end test: a given environment on top of this process's, its
 * stdout and stderr captured, its exit status, and a time limit.
 */
#ifndef GPROF_TEST_PROC_H
#define GPROF_TEST_PROC_H

#include <stdbool.h>
#include <stddef.h>

struct proc_result {
	int status;	 /* exit code; 128 + signal if killed; -1 if it could not be started */
	bool timed_out;	 /* killed at the time limit */
	char *out, *err; /* what it wrote, NUL-terminated (it may hold NULs of its own) */
	size_t out_len, err_len;
};

/*
 * Runs argv[0] (a path) with arguments argv (NULL-terminated). `env` (NULL-terminated, or
 * NULL) changes the inherited environment: "NAME=value" sets NAME, "NAME" removes it. After
 * timeout_s seconds the program is killed. Returns 0, or a negative errno if it could not be run.
 * Free the result with proc_result_free().
 */
int proc_run(const char *const argv[], const char *const env[], unsigned int timeout_s,
	     struct proc_result *res);
void proc_result_free(struct proc_result *res);

/*
 * The sanitizer runtime (libasan, libtsan) this process was linked with, or NULL. A library
 * preloaded into a sanitized program must come after it in LD_PRELOAD; proc_preload() does that.
 */
const char *proc_sanitizer_runtime(void);

/* "LD_PRELOAD=[sanitizer runtime ]lib" in a static buffer, for proc_run's env. */
const char *proc_preload(const char *lib);

/* $TEST_BUILD/rel (never freed); the test skips without TEST_BUILD. */
const char *proc_build_path(const char *rel);
/* $TEST_SRC/rel, the source tree's file (never freed); the test skips without TEST_SRC. */
const char *proc_src_path(const char *rel);

/*
 * The path of a new empty file (at most 8 per test) that any process may open while this one
 * runs, and that disappears with this process: no clean-up needed.
 */
const char *proc_tmp_file(void);

#endif
