/*
 * Reliability, round two (issue 16): libgprof never touches what is the program's own: its
 * environment, current folder, descriptors, standard streams. Each test runs test/apps/rel-own
 * on the simulated GPU and checks the program's output and the traces against what it did.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/compiler.h"
#include "task.h"
#include "util/e2e.h"
#include "util/gtlog.h"
#include "util/text.h"

#define APP "test/apps/rel-own"

static char *slurp(const char *path, size_t *len);

/* A fresh folder under /tmp. */
static void make_dir(char *dir, size_t size)
{
	snprintf(dir, size, "/tmp/gprof-rel-own-XXXXXX");
	ASSERT(mkdtemp(dir));
}

static void rm_rf(const char *dir)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ASSERT_EQ(system(cmd), 0);
}

/* Loads and checks every trace in dir (at most max); returns how many. */
static int traces_in(const char *dir, struct trace *t, int max)
{
	char path[PATH_MAX * 2], why[512];
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		ASSERT_MSG(!strstr(de->d_name, ".partial"), "left behind: %s", de->d_name);
		if (!strstr(de->d_name, ".pt.trace.json.gz") || n == max)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		ASSERT_MSG(trace_load(path, &t[n], why, sizeof(why)) == 0, "%s: %s", path, why);
		ASSERT_MSG(trace_check(&t[n], why, sizeof(why)) == 0, "%s: %s", path, why);
		n++;
	}
	closedir(d);
	return n;
}

static int step_spans(const struct trace *t)
{
	size_t i;
	json_t *ev;
	int n = 0;

	json_array_foreach(t->events, i, ev) n +=
	    !strncmp(trace_str(ev, "name"), "ProfilerStep#", 13);
	return n;
}

/*
 * Whether every kernel in t lies in a step that has its ProfilerStep span in t, the kernel of
 * program step k having dim[0] (args "grid" or "block") k + 1 and lying in libgprof's step
 * k - offset; the number of spans into *steps.
 */
static bool kernels_in_steps(const struct trace *t, const char *dim, int offset, int *steps)
{
	static bool span[1024];
	size_t i;
	json_t *ev;

	memset(span, 0, sizeof(span));
	*steps = 0;
	json_array_foreach(t->events, i, ev)
	{
		const char *name = trace_str(ev, "name");

		if (!strncmp(name, "ProfilerStep#", 13) && atoi(name + 13) < 1024) {
			span[atoi(name + 13)] = true;
			++*steps;
		}
	}
	json_array_foreach(t->events, i, ev)
	{
		json_t *d = json_object_get(json_object_get(ev, "args"), dim);
		long long k = json_integer_value(json_array_get(d, 0)) - 1 - offset;

		if (!strcmp(trace_str(ev, "cat"), "kernel") && (k < 0 || k >= 1024 || !span[k]))
			return false;
	}
	return true;
}

/*
 * Every window whole: each ProfilerStep with its 3 kernels and their launches. With repeat=0 a
 * file may hold several windows of steps_each steps (may_merge), merged when the writer had no
 * slot for the next (the EBUSY rule, RELIABILITY.md), with the steps between them, each in its
 * span; the last of the run (after rel-own's last marker, to its exit) launches nothing.
 */
static void check_windows(const struct trace *t, int n, int steps_each, bool may_merge)
{
	for (int i = 0; i < n; i++) {
		int steps = step_spans(&t[i]), kernels = e2e_count(&t[i], "kernel", NULL), spans;

		ASSERT_MSG(may_merge ? steps >= steps_each : steps == steps_each, "%d steps",
			   steps);
		/* rel-own's step k launches with block (k + 1, 1, 1) before marker k */
		ASSERT_MSG(!may_merge || kernels_in_steps(&t[i], "block", 1, &spans),
			   "a kernel outside its step");
		ASSERT_MSG(kernels == 3 * steps || (may_merge && kernels == 3 * steps - 3),
			   "%d kernels in %d steps", kernels, steps);
		ASSERT_EQ(e2e_count(&t[i], "cuda_runtime", "cudaLaunchKernel"), kernels);
	}
}

/*
 * A thread of the program sets and unsets variables all through the run while windows open
 * and close: libgprof read the environment from its writer thread at each window's open
 * (ASan: heap-use-after-free in 3 runs of 3); now it reads it once, at start-up.
 */
TEST(rel_own_setenv_thread)
{
	const char *argv[] = {proc_build_path(APP), "-e", "-s", "37", NULL};
	const char *extra[] = {"GPROF_SCHEDULE=wait=1,warmup=1,active=2,repeat=0",
			       "GPROF_SUMMARY=off", "RANK=3", "WORLD_SIZE=4", NULL};
	struct e2e_run r;

	e2e_run(&r, argv, e2e_cupti(true), extra, true);
	ASSERT_MSG(r.res.status == 0, "status %d: %s", r.res.status, r.res.err);
	ASSERT_STR_CONTAINS(r.res.out, "rel-own: ok\n");
	ASSERT_MSG(!strstr(r.res.err, "Sanitizer"), "%s", r.res.err);
	ASSERT_GE(r.n_traces, 1);
	check_windows(r.traces, r.n_traces, 2, true);
	e2e_free(&r);
}

/*
 * The program changes folder after its first CUDA call: a relative GPROF_OUTPUT and
 * GPROF_SUMMARY stay where the program started (the trace went under the new folder, while
 * the message and gprof-run named the old one).
 */
TEST(rel_own_chdir_after_start)
{
	char start[PATH_MAX], later[PATH_MAX], out[PATH_MAX + 8], cwd[PATH_MAX], *line = NULL;
	const char *argv[] = {proc_build_path(APP), "-d", later, "-s", "6", NULL};
	const char *extra[] = {"GPROF_SCHEDULE=wait=1,warmup=1,active=3", "GPROF_OUTPUT=traces",
			       "GPROF_SUMMARY=summary.txt", NULL};
	char sum[PATH_MAX + 16], *text;
	struct trace t[2];
	size_t len;
	struct e2e_run r;

	make_dir(start, sizeof(start));
	make_dir(later, sizeof(later));
	ASSERT(getcwd(cwd, sizeof(cwd)));
	ASSERT_EQ(chdir(start), 0);
	e2e_run(&r, argv, e2e_cupti(true), extra, true);
	ASSERT_EQ(chdir(cwd), 0);
	ASSERT_MSG(r.res.status == 0, "status %d: %s", r.res.status, r.res.err);
	snprintf(out, sizeof(out), "%s/traces", later);
	ASSERT_EQ(traces_in(out, t, 2), 0);
	snprintf(out, sizeof(out), "%s/traces", start);
	ASSERT_EQ(traces_in(out, t, 2), 1);
	check_windows(t, 1, 3, false);
	trace_free(&t[0]);
	/* The summary file where the program started; it names the trace by its absolute path. */
	snprintf(sum, sizeof(sum), "%s/summary.txt", later);
	ASSERT_EQ(access(sum, F_OK), -1);
	snprintf(sum, sizeof(sum), "%s/summary.txt", start);
	text = slurp(sum, &len);
	ASSERT(asprintf(&line, "gprof: trace written: %s/", out) > 0);
	ASSERT_STR_CONTAINS(text, line);
	free(line);
	free(text);
	e2e_free(&r);
	rm_rf(start);
	rm_rf(later);
}

/*
 * A library's constructor starts a thread that marks steps and launches kernels, before
 * libgprof's constructor ran, with NVTX_INJECTION64_PATH already naming libgprof (as in a
 * process started by one under libgprof): its first NVTX call loads the configuration first
 * (steps were lost and "never marked a step" said; TSan: a race on `inert`). Without the
 * variable, NVTX's loader reads it (getenv) before libgprof's constructor set it: that read
 * sets the session up (steps were lost in 5 of 8 runs).
 */
TEST(rel_own_constructor_thread)
{
	char nvtx[PATH_MAX + 32];
	const char *argv[] = {proc_build_path("test/apps/rel-ctor"), NULL};
	const char *extra[] = {"GPROF_SCHEDULE=wait=1,warmup=1,active=3", nvtx, NULL};

	snprintf(nvtx, sizeof(nvtx), "NVTX_INJECTION64_PATH=%s", proc_build_path("libgprof.so"));
	/* with the variable set, as a child has it; 5 times without, as a program started alone */
	for (int run = 0; run < 6; run++) {
		struct e2e_run r;

		extra[1] = run ? NULL : nvtx;
		e2e_run(&r, argv, e2e_cupti(true), extra, true);
		ASSERT_MSG(r.res.status == 0, "status %d: %s", r.res.status, r.res.err);
		ASSERT_STR_EQ(r.res.out, "rel-ctor: ok\n");
		ASSERT_MSG(!strstr(r.res.err, "never marked") && !strstr(r.res.err, "Sanitizer"),
			   "run %d: %s", run, r.res.err);
		ASSERT_EQ(r.n_traces, 1);
		check_windows(r.traces, 1, 3, false);
		e2e_free(&r);
	}
}

/* The bytes of a file (NUL-terminated; "" if missing) into a malloc'd buffer. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = calloc(1, 1 << 20);

	ASSERT(buf);
	*len = f ? fread(buf, 1, (1 << 20) - 1, f) : 0;
	if (f)
		fclose(f);
	return buf;
}

/*
 * rel-own with args and `-f <folder>/out`, with and without libgprof (a window over steps
 * 2-9, the descriptors closed in step 3, ten steps after the window for its summary to be
 * printed while the program still writes its file): the program's file byte for byte the same, its
 * status and stdout the same; the trace is checked by the caller (libgprof opens its file
 * again by its path when the program closed its descriptor). r[1] is the run under libgprof.
 */
static void same_with_and_without(const char *const *args, struct e2e_run r[2])
{
	/*
	 * No ground-truth log: its descriptor would take the number the program closed. TSan
	 * reports the program's closing of libgprof's descriptor, the hostile act under test, as
	 * a race with the writer thread's open: that one report is suppressed.
	 */
	const char *supp = proc_tmp_file();
	char tsan[PATH_MAX + 32];
	const char *extra[] = {"GPROF_SCHEDULE=wait=1,warmup=1,active=8", "GPROF_SIGNALS=1",
			       "FAKEGPU_LOG", tsan, NULL};
	FILE *f = fopen(supp, "w");

	ASSERT(f && fputs("race:close_from_3\n", f) >= 0 && fclose(f) == 0);
	snprintf(tsan, sizeof(tsan), "TSAN_OPTIONS=suppressions=%s", supp);
	char dirs[2][PATH_MAX], file[2][PATH_MAX + 8], *data[2];
	size_t len[2];

	for (int with = 0; with < 2; with++) {
		const char *argv[16] = {proc_build_path(APP), "-s", "20", "-f", file[with]};
		int n = 5;

		make_dir(dirs[with], sizeof(dirs[with]));
		snprintf(file[with], sizeof(file[with]), "%s/out", dirs[with]);
		for (const char *const *a = args; *a; a++)
			argv[n++] = *a;
		e2e_run(&r[with], argv, e2e_cupti(true), extra, with);
		data[with] = slurp(file[with], &len[with]);
	}
	ASSERT_EQ(r[1].res.status, r[0].res.status);
	ASSERT_STR_EQ(r[1].res.out, r[0].res.out);
	ASSERT_GT(len[0], 0);
	ASSERT_MSG(len[1] == len[0] && !memcmp(data[1], data[0], len[0]),
		   "the program's file differs under libgprof: %zu bytes vs %zu: \"%.300s\"",
		   len[1], len[0], data[1]);
	for (int with = 0; with < 2; with++) {
		free(data[with]);
		rm_rf(dirs[with]);
	}
}

/* Both runs of same_with_and_without, with the one under libgprof's window whole. */
static void same_and_whole(const char *const *args)
{
	struct e2e_run r[2];

	same_with_and_without(args, r);
	ASSERT_MSG(r[1].n_traces == 1, "%d traces; stderr: %.2000s", r[1].n_traces, r[1].res.err);
	check_windows(r[1].traces, 1, 8, false);
	e2e_free(&r[0]);
	e2e_free(&r[1]);
}

/*
 * The program closes every descriptor from 3 up in the middle of a window, then opens a file
 * of its own: it got the trace's number, and libgprof wrote gzip bytes and its header into
 * it and then closed it.
 */
TEST(rel_own_closes_descriptors)
{
	static const char *const none[] = {NULL};

	same_and_whole(none);
}

/*
 * The program starts with stdout closed (`>&-`), then with stderr closed: the trace took
 * descriptor 1 or 2, the program's writes to its closed stream landed in the trace (and its
 * file then got another number), and libgprof's own lines went into a file of the program's.
 */
TEST(rel_own_stdio_closed)
{
	static const char *const out[] = {"-C", "1", NULL}, *const err[] = {"-C", "2", NULL};

	same_and_whole(out);
	same_and_whole(err);
}

/*
 * A thread of the program looks through the program's descriptors for the whole run (rel-own
 * -w): none is ever a file of libgprof's (the trace, its .partial, the summary file), since
 * the writer keeps them in a descriptor table of its own, so that the program can neither
 * close nor replace them, nor write into one through a number it closed (RELIABILITY.md,
 * Known bugs 4). Before, the trace's descriptor was among the program's for the whole window.
 * TSan's runs keep the program's table (common/thread.c says why).
 */
TEST(rel_own_descriptors_never_the_programs)
{
	char dir[PATH_MAX], summary[PATH_MAX + 16], summary_env[PATH_MAX + 32];
	/* the output folder (an unnamed file's path is "<folder>/#<inode> (deleted)") and the
	 * summary's; the simulated GPU's log, a file of the program's, is not written */
	const char *argv[] = {proc_build_path(APP), "-s", "20", "-w",
			      "/gprof-e2e-",	    "-w", dir,	NULL};
	const char *extra[] = {"GPROF_SCHEDULE=wait=1,warmup=1,active=3,repeat=0", summary_env,
			       "FAKEGPU_LOG", NULL};
	size_t len;
	char *text;
	struct e2e_run r;
	pid_t child;
	int status;

	if (strstr(getenv("TEST_SAN") ? getenv("TEST_SAN") : "", "thread"))
		SKIP("TSan's runs keep the program's descriptor table");
	child = fork();
	ASSERT(child >= 0);
	if (child == 0)
		_exit(unshare(CLONE_FILES) == 0 ? 0 : 1);
	ASSERT(waitpid(child, &status, 0) == child);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		SKIP("unshare(CLONE_FILES) is refused here: the writer shares the program's table");
	make_dir(dir, sizeof(dir));
	snprintf(summary, sizeof(summary), "%s/summary", dir);
	snprintf(summary_env, sizeof(summary_env), "GPROF_SUMMARY=%s", summary);
	e2e_run(&r, argv, e2e_cupti(true), extra, true);
	ASSERT_MSG(r.res.status == 0, "status %d: %s", r.res.status, r.res.err);
	ASSERT_MSG(!strstr(r.res.out, "rel-own: descriptor"), "%s", r.res.out);
	ASSERT_EQ(r.n_traces, 4);
	text = slurp(summary, &len);
	ASSERT_MSG(len > 0, "no summary in %s; stderr: %.500s", summary, r.res.err);
	free(text);
	rm_rf(dir);
	e2e_free(&r);
}

/*
 * GPROF_SIGNALS=1: the program closes every descriptor from 3 up, opens a file of its own,
 * then gets SIGTERM at the start of step 8. The signal thread read EOF on its closed pipe and
 * ended the session early, and the handler wrote a byte into the file that now held the
 * pipe's number; now a semaphore wakes the thread: the window is finished with steps 2-6
 * whole (step 7 had launched nothing) and the process dies by SIGTERM, as without libgprof.
 */
TEST(rel_own_signal_after_closing_descriptors)
{
	static const char *const kill[] = {"-k", NULL};
	struct e2e_run r[2];

	same_with_and_without(kill, r);
	ASSERT_EQ(r[1].res.status, 128 + SIGTERM);
	ASSERT_EQ(r[1].n_traces, 1);
	ASSERT_EQ(e2e_count(&r[1].traces[0], "kernel", NULL), 15);
	ASSERT_EQ(e2e_count(&r[1].traces[0], "cuda_runtime", "cudaLaunchKernel"), 15);
	e2e_free(&r[0]);
	e2e_free(&r[1]);
}

/* Files whose name holds "trace" in dir. */
static int trace_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d)))
		n += strstr(de->d_name, "trace") != NULL;
	if (d)
		closedir(d);
	return n;
}

/* rel-own under libgprof with GPROF_OUTPUT and GPROF_SUMMARY, each unless NULL. */
static void run_with(struct e2e_run *r, const char *output, const char *summary)
{
	static char out_env[PATH_MAX + 16], sum_env[PATH_MAX + 16];
	const char *argv[] = {proc_build_path(APP), "-s", "6", NULL};
	const char *extra[4] = {"GPROF_SCHEDULE=wait=1,warmup=1,active=3"};
	int n = 1;

	if (output) {
		snprintf(out_env, sizeof(out_env), "GPROF_OUTPUT=%s", output);
		extra[n++] = out_env;
	}
	if (summary) {
		snprintf(sum_env, sizeof(sum_env), "GPROF_SUMMARY=%s", summary);
		extra[n++] = sum_env;
	}
	e2e_run(r, argv, e2e_cupti(true), extra, true);
	ASSERT_MSG(r->res.status == 0, "status %d: %s", r->res.status, r->res.err);
}

/* A folder owned by the unprivileged user `nobody`, with mode. */
static void nobodys_folder(char *path, size_t size, const char *base, const char *name, mode_t mode)
{
	snprintf(path, size, "%s/%s", base, name);
	ASSERT_EQ(mkdir(path, 0700), 0);
	ASSERT_EQ(chown(path, 65534, 65534), 0);
	ASSERT_EQ(chmod(path, mode), 0);
}

/* GPROF_OUTPUT=output is refused with one line holding `says`; no trace in `untouched`. */
static void output_refused(const char *output, const char *says, const char *untouched)
{
	struct e2e_run r;

	run_with(&r, output, NULL);
	ASSERT_EQ(text_lines(r.res.err, "gprof: "), 1);
	ASSERT_STR_CONTAINS(r.res.err, says);
	ASSERT_EQ(trace_files(untouched), 0);
	e2e_free(&r);
}

/*
 * Other users' paths: an output folder another user owns that every user may write (no
 * sticky bit), a symbolic link to a folder another user owns (planted where the output
 * folder was to be made), a GPROF_SUMMARY path that is another user's symbolic link to a
 * file, and a FIFO there: one line each, nothing written there, the program unaffected. Were used as they
 * were (the FIFO blocked the writer: exit 10 s late, windows left .partial). The same folder
 * with the sticky bit is fine. A symbolic link another user owns, to a folder of ours, as the
 * output folder or on the way to it: one line, nothing made or written there (was followed).
 */
TEST(rel_own_other_users_paths)
{
	char base[PATH_MAX], open_dir[PATH_MAX + 16], sticky[PATH_MAX + 16], theirs[PATH_MAX + 16];
	char link[PATH_MAX + 32], target[PATH_MAX + 16], fifo[PATH_MAX + 16];
	struct e2e_run r;
	size_t len;

	if (geteuid() != 0)
		SKIP("needs root, to make folders of another user");
	make_dir(base, sizeof(base));
	ASSERT_EQ(chmod(base, 0755), 0);
	nobodys_folder(open_dir, sizeof(open_dir), base, "open", 0777);
	output_refused(open_dir, "refusing the output folder (another user owns it", open_dir);

	nobodys_folder(sticky, sizeof(sticky), base, "sticky", 01777);
	run_with(&r, sticky, NULL);
	ASSERT_EQ(trace_files(sticky), 1);
	e2e_free(&r);

	nobodys_folder(theirs, sizeof(theirs), base, "theirs", 0755);
	snprintf(link, sizeof(link), "%s/gprof_traces", base);
	ASSERT_EQ(symlink(theirs, link), 0);
	output_refused(link, "refusing the output folder (a symbolic link", theirs);

	snprintf(target, sizeof(target), "%s/mine", base);
	ASSERT_EQ(mkdir(target, 0700), 0);
	snprintf(link, sizeof(link), "%s/planted", base);
	ASSERT_EQ(symlink(target, link), 0);
	ASSERT_EQ(lchown(link, 65534, 65534), 0);
	output_refused(link, "path goes through a symbolic link another user", target);
	strcat(link, "/sub");
	output_refused(link, "path goes through a symbolic link another user", target);
	snprintf(target, sizeof(target), "%s/mine/sub", base);
	ASSERT_MSG(access(target, F_OK) != 0, "a folder was made through the link");

	snprintf(target, sizeof(target), "%s/target", base);
	ASSERT(fclose(fopen(target, "w")) == 0);
	snprintf(link, sizeof(link), "%s/summary-link", base);
	ASSERT_EQ(symlink(target, link), 0);
	ASSERT_EQ(lchown(link, 65534, 65534), 0);
	run_with(&r, NULL, link);
	ASSERT_EQ(r.n_traces, 1);
	ASSERT_EQ(text_lines(r.res.err, "gprof: "), 1);
	ASSERT_STR_CONTAINS(r.res.err, "it is a symbolic link another user owns");
	free(slurp(target, &len));
	ASSERT_EQ(len, 0);
	e2e_free(&r);

	snprintf(fifo, sizeof(fifo), "%s/fifo", base);
	ASSERT_EQ(mkfifo(fifo, 0600), 0);
	run_with(&r, NULL, fifo);
	ASSERT_EQ(r.n_traces, 1);
	ASSERT_EQ(text_lines(r.res.err, "gprof: "), 1);
	ASSERT_STR_CONTAINS(r.res.err, "it is a FIFO");
	e2e_free(&r);
	rm_rf(base);
}

/*
 * 5000 threads that each launch once and end, 10 alive at a time, under GPROF_SCHEDULE=all, with
 * the default GPROF_BUFFER_MB and a quarter of it: every launch and kernel of the ground truth in
 * the trace, each linked, nothing dropped, no warning. CUDA 13 gives each thread an activity
 * buffer of its own that comes back only at a flush, so they took CUPTI's pool a record at a
 * time (377 of 5005 runtime events and 2424 of 5000 kernels kept, a line blaming a full table,
 * the run 10 times longer); the pool running low now makes the collector flush at once. While
 * it is low, new buffers are small ones: before that, the threads started before the flush came
 * took the last big buffers and dozens of records were dropped (at 16 MiB every run; at 64 MiB
 * on a loaded machine).
 */
TEST(rel_own_short_lived_threads)
{
	const char *argv[] = {proc_build_path("test/apps/rel-threads"), "-n", "5000", NULL};
	const char *buffer_mb[] = {NULL, "GPROF_BUFFER_MB=16"};

	for (size_t b = 0; b < ARRAY_SIZE(buffer_mb); b++) {
		const char *extra[] = {"GPROF_SCHEDULE=all", "GPROF_SUMMARY=off", buffer_mb[b],
				       NULL};
		size_t kernels;
		struct e2e_run r;

		e2e_run(&r, argv, e2e_cupti(true), extra, true);
		ASSERT_MSG(r.res.status == 0, "status %d: %s", r.res.status, r.res.err);
		ASSERT_STR_EQ(r.res.err, "");
		ASSERT_EQ(r.n_traces, 1);
		kernels = gtlog_count(r.gt, "{\"type\":\"gpu\",\"kind\":\"kernel\"}");
		ASSERT_EQ(kernels, 5000);
		ASSERT_EQ(e2e_count(&r.traces[0], "kernel", NULL), (int)kernels);
		ASSERT_EQ(e2e_count(&r.traces[0], "cuda_runtime", "cudaLaunchKernel"), 5000);
		ASSERT_EQ(e2e_count(&r.traces[0], "ac2g", NULL), 2 * 5000);
		e2e_free(&r);
	}
}

/*
 * Threads that make the process's first CUDA call together (-f: 300 at a barrier, then again
 * after each device synchronize), under GPROF_SCHEDULE=all, with CUPTI and hooks-only: every
 * launch of the ground truth in the trace, with its kernel where CUPTI records. The first
 * thread to call set CUPTI and the window up while the others launched past it: 1 to 299 of the
 * first 300 launches were missing in every run, with nothing counted and no line.
 */
TEST(rel_own_threads_first_call_together)
{
	const char *argv[] = {
	    proc_build_path("test/apps/rel-threads"), "-n", "900", "-a", "300", "-f", "-s", NULL};
	const char *extra[] = {"GPROF_SCHEDULE=all", "GPROF_SUMMARY=off", NULL};

	for (int cupti = 1; cupti >= 0; cupti--) {
		struct e2e_run r;

		e2e_run(&r, argv, e2e_cupti(cupti), extra, true);
		ASSERT_MSG(r.res.status == 0, "status %d: %s", r.res.status, r.res.err);
		/* hooks-only: the one line that says CUPTI is not used */
		ASSERT_EQ(text_lines(r.res.err, "gprof: "), !cupti);
		ASSERT_EQ(r.n_traces, 1);
		ASSERT_EQ(gtlog_count(r.gt, "{\"type\":\"gpu\",\"kind\":\"kernel\"}"), 900);
		ASSERT_EQ(e2e_count(&r.traces[0], "cuda_runtime", "cudaLaunchKernel"), 900);
		ASSERT_EQ(e2e_count(&r.traces[0], "kernel", NULL), cupti ? 900 : 0);
		e2e_free(&r);
	}
}

/*
 * 2-step windows back to back (repeat=0) over 200 quick steps: more windows end than the
 * writer may hold (GPROF_EXPORT_WINDOWS, each kept until its GPU records are in). 84 of 100
 * windows were lost, each with a line "is not recorded: Device or resource busy" (25 576 lines
 * in one run). Now a window that leaves no slot for the next stays open and the next merges
 * into it: every step and every kernel of the ground truth is in a trace, and two lines say
 * so (the first time, and the count at exit). With a wait and a warmup step between windows,
 * a merged file holds those steps too, each with its ProfilerStep span (their kernels were
 * there without one).
 */
TEST(rel_own_windows_busy)
{
	static const char *const schedules[] = {"GPROF_SCHEDULE=wait=0,warmup=0,active=2,repeat=0",
						"GPROF_SCHEDULE=wait=1,warmup=1,active=2,repeat=0"};
	const char *argv[] = {proc_build_path("test/apps/steps-app"), "-s", "200", "-S", NULL};
	static struct trace t[128];

	for (int c = 0; c < 2; c++) {
		const char *extra[] = {schedules[c], "GPROF_SUMMARY=off", NULL};
		int n, steps = 0, kernels = 0, windows = c ? 50 : 100;
		struct e2e_run r;

		e2e_run(&r, argv, e2e_cupti(true), extra, true);
		ASSERT_MSG(r.res.status == 0, "status %d: %s", r.res.status, r.res.err);
		n = traces_in(r.dir, t, 128);
		ASSERT_GE(n, 1);
		for (int i = 0; i < n; i++) {
			int spans;

			ASSERT_MSG(kernels_in_steps(&t[i], "grid", 0, &spans),
				   "%s: a kernel of a step without its span", schedules[c]);
			steps += spans;
			kernels += e2e_count(&t[i], "kernel", NULL);
			trace_free(&t[i]);
		}
		/* without a wait, every step of the run and every kernel */
		if (!c) {
			ASSERT_EQ(steps, 200);
			ASSERT_MSG(kernels == (int)gtlog_count(
						  r.gt, "{\"type\":\"gpu\",\"kind\":\"kernel\"}"),
				   "%d kernels in %d files: %s", kernels, n, r.res.err);
		}
		ASSERT_MSG(!strstr(r.res.err, "is not recorded"), "%s", r.res.err);
		if (n < windows) {
			ASSERT_EQ(text_lines(r.res.err, "gprof: "), 2);
			ASSERT_STR_CONTAINS(r.res.err, "merges into its file");
			ASSERT_STR_CONTAINS(r.res.err, "0 were not recorded");
		}
		e2e_free(&r);
	}
}
