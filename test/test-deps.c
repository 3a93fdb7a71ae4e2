/*
 * scripts/dev/deps.py: no file of preload/, collector/, scheduler/, export/, common/ or
 * scripts/summary/ depends on another that depends back on it, through includes or through the
 * symbols of their objects; and the script finds such cycles where they are planted.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "task.h"
#include "util/proc.h"

#define CHECKED "preload", "collector", "scheduler", "export", "common", "scripts/summary"

/* Runs deps.py -C root build folder... into *res; skips without python3. */
static void run_deps(const char *root, const char *build, const char *const *folders,
		     struct proc_result *res)
{
	const char *probe[] = {"/usr/bin/env", "python3", "-c", "", NULL};
	const char *argv[16] = {"/usr/bin/env", "python3", NULL, "-C", root, build};
	int n = 6;

	ASSERT(proc_run(probe, NULL, 30, res) == 0);
	if (res->status != 0)
		SKIP("no python3");
	proc_result_free(res);
	argv[2] = proc_src_path("scripts/dev/deps.py");
	while (*folders && n < 15)
		argv[n++] = *folders++;
	ASSERT(proc_run(argv, NULL, 120, res) == 0);
}

TEST(deps_no_cycles)
{
	const char *folders[] = {CHECKED, NULL};
	struct proc_result res;

	run_deps(getenv("TEST_SRC"), getenv("TEST_BUILD"), folders, &res);
	ASSERT_MSG(res.status == 0, "%s%s", res.out, res.err);
	proc_result_free(&res);
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	ASSERT_MSG(f && fputs(text, f) >= 0 && fclose(f) == 0, "%s", path);
}

/* Compiles dir/m/NAME.c into dir/build/m/NAME.o. */
static void compile(const char *dir, const char *name)
{
	char src[PATH_MAX], obj[PATH_MAX];
	const char *argv[] = {"/usr/bin/env", "cc", "-c", "-I", dir, "-o", obj, src, NULL};
	struct proc_result res;

	snprintf(src, sizeof(src), "%s/m/%s.c", dir, name);
	snprintf(obj, sizeof(obj), "%s/build/m/%s.o", dir, name);
	ASSERT(proc_run(argv, NULL, 60, &res) == 0);
	ASSERT_MSG(res.status == 0, "%s", res.err);
	proc_result_free(&res);
}

/* A call cycle between two files, an include cycle between two headers, and neither. */
TEST(deps_planted_cycle)
{
	char dir[] = "/tmp/gprof-deps-XXXXXX", m[PATH_MAX], build[PATH_MAX];
	const char *folders[] = {"m", NULL};
	const char *mkdirs[] = {"/bin/mkdir", "-p", m, build, NULL};
	const char *rm[] = {"/bin/rm", "-rf", dir, NULL};
	struct proc_result res;

	ASSERT(mkdtemp(dir));
	snprintf(m, sizeof(m), "%s/m", dir);
	snprintf(build, sizeof(build), "%s/build/m", dir);
	ASSERT(proc_run(mkdirs, NULL, 30, &res) == 0 && res.status == 0);
	proc_result_free(&res);
	write_file(m, "a.c",
		   "int b_get(void);\nint a_get(void) { return 1; }\n"
		   "int a_sum(void) { return b_get(); }\n");
	write_file(m, "b.c", "int a_get(void);\nint b_get(void) { return a_get(); }\n");
	compile(dir, "a");
	compile(dir, "b");
	run_deps(dir, "build", folders, &res);
	ASSERT_EQ(res.status, 1);
	ASSERT_STR_CONTAINS(res.out, "m/a.c -> m/b.c (uses b_get)");
	ASSERT_STR_CONTAINS(res.out, "m/b.c -> m/a.c (uses a_get)");
	proc_result_free(&res);

	/* b no longer calls a: one way only. */
	write_file(m, "b.c", "int b_get(void) { return 2; }\n");
	compile(dir, "b");
	run_deps(dir, "build", folders, &res);
	ASSERT_MSG(res.status == 0, "%s%s", res.out, res.err);
	proc_result_free(&res);

	write_file(m, "x.h", "#include \"m/y.h\"\n");
	write_file(m, "y.h", "#include \"m/x.h\"\n");
	run_deps(dir, "build", folders, &res);
	ASSERT_EQ(res.status, 1);
	ASSERT_STR_CONTAINS(res.out, "m/x.h -> m/y.h (includes it)");
	proc_result_free(&res);
	ASSERT(proc_run(rm, NULL, 30, &res) == 0 && res.status == 0);
	proc_result_free(&res);
}

/*
 * What only the tests call is not in the shipped library: the link drops it (--gc-sections),
 * while what the library calls stays.
 */
TEST(lib_ships_no_test_only_code)
{
	static const char *const test_only[] = {
	    "gprof_export_pause",	"gprof_export_get_stats", "gprof_export_window_wait",
	    "gprof_sink_fail_threads",	"gprof_sink_memory",	  "gprof_stepper_destroy",
	    "gprof_config_print_table",
	};
	const char *argv[] = {"/usr/bin/env", "nm", "--defined-only",
			      proc_build_path("libgprof.so"), NULL};
	struct proc_result res;
	char word[64];

	ASSERT(proc_run(argv, NULL, 60, &res) == 0);
	if (res.status == 127)
		SKIP("no nm");
	ASSERT_EQ(res.status, 0);
	ASSERT_STR_CONTAINS(res.out, " gprof_export_push\n");
	for (size_t i = 0; i < sizeof(test_only) / sizeof(test_only[0]); i++) {
		snprintf(word, sizeof(word), " %s\n", test_only[i]);
		ASSERT_MSG(!strstr(res.out, word), "%s is in libgprof.so", test_only[i]);
	}
	proc_result_free(&res);
}
