/*
 * Tests of the user tools: make install, scripts/gprof-run (options, exit status, signals, the
 * closing line on the traces it wrote, %r for ranks) and its --torch-steps startup hook, run
 * with a stand-in torch (test/stand-ins/) on the simulated GPU.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/compiler.h"
#include "export/format.h"
#include "task.h"
#include "util/e2e.h"
#include "util/gtlog.h"
#include "util/text.h"

#define MAX_ARGS 48
#define MAX_ENV	 24

/* One gprof-run: a fresh folder for its traces and what it printed. */
struct run {
	char dir[PATH_MAX];
	struct proc_result res;
};

static char *fmt(const char *f, const char *a)
{
	char *p = NULL;

	ASSERT(asprintf(&p, f, a) > 0);
	return p;
}

static char *path_join(const char *dir, const char *name)
{
	char *p = NULL;

	ASSERT(asprintf(&p, "%s/%s", dir, name) > 0);
	return p;
}

static void run_init(struct run *r)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->dir, sizeof(r->dir), "/tmp/gprof-tools-XXXXXX");
	ASSERT(mkdtemp(r->dir));
}

static void run_free(struct run *r)
{
	char *cmd = fmt("rm -rf '%s'", r->dir);

	ASSERT_EQ(system(cmd), 0);
	free(cmd);
	proc_result_free(&r->res);
}

static void env_put(const char **env, const char *spec)
{
	e2e_env_put(env, MAX_ENV, spec);
}

/*
 * The environment every run starts from: no preload or injection variables of ours (only the
 * sanitizer runtime, which must come first), the simulated GPU fast, no CUPTI (the hooks' own
 * events carry the arguments the tests check), no leak reports from bash and python, no rank
 * and none of the variables of the make running the tests (the install test runs make).
 */
static void base_env(const char **env)
{
	const char *rt = proc_sanitizer_runtime();

	env[0] = NULL;
	env_put(env, rt ? fmt("LD_PRELOAD=%s", rt) : "LD_PRELOAD");
	env_put(env, "NVTX_INJECTION64_PATH");
	env_put(env, "CUDA_INJECTION64_PATH");
	env_put(env, "GPROF_OUTPUT");
	env_put(env, "FAKEGPU_TIME_SCALE=0.1");
	env_put(env, "GPROF_CUPTI_LIB=/nonexistent/libcupti.so.13");
	env_put(env, "MAKEFLAGS");
	env_put(env, "MAKELEVEL");
	env_put(env, "MFLAGS");
	env_put(env, "RANK");
	env_put(env, "OMPI_COMM_WORLD_RANK");
	env_put(env, "SLURM_PROCID");
	env_put(env, "PMI_RANK");
	if (rt)
		env_put(env, "ASAN_OPTIONS=detect_leaks=0");
}

/*
 * Runs `tool` (NULL: the tree's gprof-run with --lib of this build) with args, the base
 * environment and then `extra`. Fails the test if it cannot run or times out.
 */
/*
 * The sanitized libgprof needs its runtime preloaded, and bash (and gcc, which make install's
 * checks run) crash with TSan's preloaded, before libgprof runs: gprof-run and make install
 * are tested plain and under ASan.
 */
static void skip_under_tsan(void)
{
	const char *san = getenv("TEST_SAN");

	if (san && strstr(san, "thread"))
		SKIP("bash and gcc crash with the TSan runtime preloaded; tested plain and under "
		     "ASan");
}

static void run_tool(struct run *r, const char *tool, const char *const *args,
		     const char *const *extra)
{
	const char *argv[MAX_ARGS], *env[MAX_ENV];
	int n = 0;

	skip_under_tsan();
	argv[n++] = tool ? tool : proc_src_path("scripts/gprof-run");
	if (!tool) {
		argv[n++] = "--lib";
		argv[n++] = proc_build_path("libgprof.so");
	}
	for (; args && *args; args++) {
		ASSERT(n < MAX_ARGS - 1);
		argv[n++] = *args;
	}
	argv[n] = NULL;
	base_env(env);
	for (; extra && *extra; extra++)
		env_put(env, *extra);
	proc_result_free(&r->res);
	ASSERT_EQ(proc_run(argv, env, 120, &r->res), 0);
	ASSERT_MSG(!r->res.timed_out, "%s timed out", argv[0]);
}

/* The last line of text, without its newline, in a static buffer. */
static const char *last_line(const char *text)
{
	static char line[4096];
	size_t len = strlen(text);
	const char *start;

	while (len && text[len - 1] == '\n')
		len--;
	for (start = text + len; start > text && start[-1] != '\n'; start--)
		;
	snprintf(line, sizeof(line), "%.*s", (int)(text + len - start), start);
	return line;
}

/* The names in dir that end with suffix, sorted, at most max; returns how many. */
static int list_dir(const char *dir, const char *suffix, char names[][NAME_MAX + 1], int max)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t sl = strlen(suffix);
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);

		if (len >= sl && !strcmp(de->d_name + len - sl, suffix) && n < max)
			snprintf(names[n++], NAME_MAX + 1, "%s", de->d_name);
	}
	closedir(d);
	qsort(names, (size_t)n, NAME_MAX + 1, (int (*)(const void *, const void *))strcmp);
	return n;
}

/* Loads dir/name and checks it against TRACE_FORMAT.md. */
static void load_checked(const char *dir, const char *name, struct trace *t)
{
	char path[PATH_MAX * 2], why[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ASSERT_MSG(trace_load(path, t, why, sizeof(why)) == 0, "%s: %s", path, why);
	ASSERT_MSG(trace_check(t, why, sizeof(why)) == 0, "%s: %s", path, why);
}

static double num(const json_t *ev, const char *key)
{
	return json_number_value(json_object_get(ev, key));
}

static void require_python(void)
{
	const char *argv[] = {"/usr/bin/env", "python3", "-c", "", NULL};
	struct proc_result res;

	if (proc_run(argv, NULL, 60, &res) != 0 || res.status != 0)
		SKIP("no python3");
	proc_result_free(&res);
}

/* ---- gprof-run: options ---- */

/*
 * Every option sets its variable (the table of README.md's gprof-run section) to the value
 * given, in both forms; two runs, as the library refuses a time window with a schedule.
 */
TEST(tools_run_sets_variables)
{
	static const struct {
		const char *args[24], *want[12];
	} runs[] = {
	    {{"--schedule", "wait=2,warmup=1,active=2", "--step-marker=iter", "-o", "out/%p",
	      "--activities", "kernel,api", "--summary=off", "--gzip", "6", "--buffer-mb=32",
	      "--log", "error", "--env", "TOOLS_X=a b=c", "--env=GPROF_DISABLE=0", "--",
	      "/usr/bin/env"},
	     {"GPROF_SCHEDULE=wait=2,warmup=1,active=2\n", "GPROF_STEP_MARKER=iter\n",
	      "GPROF_OUTPUT=out/%p\n", "GPROF_ACTIVITIES=kernel,api\n", "GPROF_SUMMARY=off\n",
	      "GPROF_GZIP_LEVEL=6\n", "GPROF_BUFFER_MB=32\n", "GPROF_LOG=error\n",
	      "TOOLS_X=a b=c\n", "GPROF_DISABLE=0\n"}},
	    {{"--trigger", "steps", "--delay=2.5", "--duration", "10", "--output=out/%p", "--",
	      "/usr/bin/env"},
	     {"GPROF_TRIGGER=steps\n", "GPROF_DELAY=2.5\n", "GPROF_DURATION=10\n"}},
	};
	const char *rt = proc_sanitizer_runtime();
	const char *extra[] = {NULL, "PYTHONPATH", NULL};
	char lib[PATH_MAX], *preload = NULL;
	struct run r;

	/* An LD_PRELOAD already set stays, after libgprof (and after a sanitizer runtime). */
	extra[0] = rt ? fmt("LD_PRELOAD=%s libz.so.1", rt) : "LD_PRELOAD=libz.so.1";
	ASSERT(realpath(proc_build_path("libgprof.so"), lib));
	ASSERT(asprintf(&preload, "\nLD_PRELOAD=%s%s%s:libz.so.1\n", rt ? rt : "", rt ? ":" : "",
			lib) > 0);
	for (size_t i = 0; i < ARRAY_SIZE(runs); i++) {
		run_init(&r);
		run_tool(&r, NULL, runs[i].args, extra);
		ASSERT_MSG(r.res.status == 0, "run %zu: status %d: %s", i, r.res.status, r.res.err);
		for (size_t w = 0; w < ARRAY_SIZE(runs[i].want) && runs[i].want[w]; w++)
			ASSERT_STR_CONTAINS(r.res.out, runs[i].want[w]);
		ASSERT_STR_CONTAINS(r.res.out, preload);
		ASSERT_MSG(!strstr(r.res.out, "PYTHONPATH="), "PYTHONPATH without --torch-steps");
		ASSERT_STR_EQ(last_line(r.res.err), "gprof: this run wrote no trace in 'out/%p'");
		run_free(&r);
	}
	/* --env LD_PRELOAD=... is that LD_PRELOAD, after libgprof (it was dropped). */
	const char *args[] = {"--env", NULL, "-o", "out/%p", "--", "/usr/bin/env", NULL};

	args[1] = rt ? fmt("LD_PRELOAD=%s libm.so.6", rt) : "LD_PRELOAD=libm.so.6";
	free(preload);
	ASSERT(asprintf(&preload, "\nLD_PRELOAD=%s%s%s:libm.so.6\n", rt ? rt : "", rt ? ":" : "",
			lib) > 0);
	run_init(&r);
	run_tool(&r, NULL, args, extra);
	ASSERT_MSG(r.res.status == 0, "status %d: %s", r.res.status, r.res.err);
	ASSERT_STR_CONTAINS(r.res.out, preload);
	run_free(&r);
	free(preload);
}

/* A bad option: one gprof: line that names it, exit 2, and the command is not run. */
TEST(tools_run_bad_options)
{
	static const struct {
		const char *args[4], *says;
	} cases[] = {
	    {{"--bogus", "1"}, "unknown option '--bogus'"},
	    {{"-x"}, "unknown option '-x'"},
	    {{"--schedule"}, "--schedule needs a value"},
	    {{"--env", "NOEQUALS"}, "--env needs NAME=VALUE"},
	    {{"--env", "1X=2"}, "--env needs NAME=VALUE"},
	    {{"--torch-steps=yes"}, "--torch-steps takes no value"},
	    {{"--schedule", "wait=x"}, "gprof: GPROF_SCHEDULE='wait=x': "},
	    {{"--gzip=12"}, "gprof: GPROF_GZIP_LEVEL='12': "},
	    {{"-o", "out/%z"}, "gprof: GPROF_OUTPUT='out/%z': "},
	    {{"--env", "GPROF_LOG=loud"}, "gprof: GPROF_LOG='loud': "},
	    {{"--lib", "/nonexistent/libgprof.so"}, "--lib: no such file"},
	    /* checked before the command runs (it was said after its steps, with status 0) */
	    {{"-o", "/proc/gprof/%p"},
	     "the output folder '/proc/gprof/%p' cannot be made: nothing can be made in '/proc'"},
	    {{"-o", "/dev/null/x"}, "nothing can be made in '/dev/null'"},
	};
	const char *marker = proc_tmp_file();

	for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
		const char *args[8];
		struct run r;
		struct stat st;
		int n = 0;

		for (int i = 0; i < 4 && cases[c].args[i]; i++)
			args[n++] = cases[c].args[i];
		args[n++] = "--";
		args[n++] = "/bin/sh";
		args[n++] = "-c";
		args[n++] = fmt("echo ran > %s", marker);
		args[n] = NULL;
		run_init(&r);
		run_tool(&r, NULL, args, NULL);
		ASSERT_MSG(r.res.status == 2, "case %zu: status %d", c, r.res.status);
		ASSERT_MSG(text_lines(r.res.err, "") == 1 && !strncmp(r.res.err, "gprof: ", 7),
			   "case %zu: %s", c, r.res.err);
		ASSERT_STR_CONTAINS(r.res.err, cases[c].says);
		ASSERT_EQ(stat(marker, &st), 0);
		ASSERT_MSG(st.st_size == 0, "case %zu: the command ran", c);
		run_free(&r);
	}
}

/* No command at all, a command that is not there, a file that is no library. */
TEST(tools_run_cannot_start)
{
	static const char *const no_cmd[] = {"--schedule", "all", NULL};
	static const char *const missing[] = {"--", "/nonexistent/program", NULL};
	const char *bad_lib[] = {"--lib", NULL, "--", "/bin/true", NULL};
	struct run r;
	FILE *f;

	run_init(&r);
	run_tool(&r, NULL, no_cmd, NULL);
	ASSERT_EQ(r.res.status, 2);
	ASSERT_STR_CONTAINS(r.res.err, "gprof: no command to run");
	run_free(&r);

	run_init(&r);
	run_tool(&r, NULL, missing, NULL);
	ASSERT_EQ(r.res.status, 127);
	ASSERT_STR_EQ(r.res.err, "gprof: command not found: '/nonexistent/program'\n");
	run_free(&r);

	/* A file that is no library (run_tool's own --lib comes first; the last one wins). */
	run_init(&r);
	bad_lib[1] = path_join(r.dir, "libnot.so");
	f = fopen(bad_lib[1], "w");
	ASSERT(f && fputs("not a library\n", f) >= 0 && fclose(f) == 0);
	run_tool(&r, NULL, bad_lib, NULL);
	ASSERT_EQ(r.res.status, 2);
	ASSERT_EQ(text_lines(r.res.err, ""), 1);
	ASSERT_STR_CONTAINS(r.res.err, "gprof: cannot preload '");
	run_free(&r);
}

/* ---- gprof-run: exit status and signals ---- */

/* gprof-run on /bin/sh -c script [arg], in the background, its output to /dev/null. */
/* gprof-run [option] -- sh -c script sh arg, in the background, with the tests' environment. */
static pid_t spawn_with(const char *option, const char *script, const char *arg, const char *tmpdir)
{
	const char *argv[] = {proc_src_path("scripts/gprof-run"),
			      "--lib",
			      proc_build_path("libgprof.so"),
			      option ? option : "--",
			      "--",
			      "/bin/sh",
			      "-c",
			      script,
			      "sh",
			      arg,
			      NULL};
	const char *env[MAX_ENV];
	pid_t pid;

	if (!option) /* "--" once */
		memmove(&argv[3], &argv[4], sizeof(argv) - 4 * sizeof(argv[0]));
	base_env(env);
	if (tmpdir)
		env_put(env, fmt("TMPDIR=%s", tmpdir));
	pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		for (const char **e = env; *e; e++) {
			char *name = strndup(*e, strcspn(*e, "="));

			if (strchr(*e, '='))
				setenv(name, strchr(*e, '=') + 1, 1);
			else
				unsetenv(name);
		}
		execv(argv[0], (char *const *)argv);
		_exit(126);
	}
	return pid;
}

static pid_t spawn(const char *script, const char *arg)
{
	return spawn_with(NULL, script, arg, NULL);
}

static int reap(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		ASSERT_EQ(errno, EINTR);
	return status;
}

/* Waits until path exists (the command got that far); the test's own timeout bounds it. */
static void wait_for(const char *path)
{
	struct timespec pause = {.tv_nsec = 20 * 1000 * 1000};

	while (access(path, F_OK) != 0)
		nanosleep(&pause, NULL);
}

/* The command's exit code, or death by its signal, is gprof-run's; one never reads as the other. */
TEST(tools_run_exit_status)
{
	static const struct {
		const char *script;
		int code, sig;
	} cases[] = {
	    {"exit 0", 0, 0},
	    {"exit 3", 3, 0},
	    /* Exits with what a shell reports for a signal: still an exit, not a signal. */
	    {"exit 130", 130, 0},
	    {"exit 137", 137, 0},
	    {"exit 139", 139, 0},
	    {"exit 255", 255, 0},
	    {"kill -TERM $$", -1, SIGTERM},
	    {"kill -KILL $$", -1, SIGKILL},
	    {"kill -USR1 $$", -1, SIGUSR1},
	    {"kill -ABRT $$", -1, SIGABRT}, /* one that dumps core */
	};

	skip_under_tsan();

	for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
		int status = reap(spawn(cases[c].script, ""));

		if (cases[c].sig)
			ASSERT_MSG(WIFSIGNALED(status) && WTERMSIG(status) == cases[c].sig,
				   "%s: status 0x%x", cases[c].script, status);
		else
			ASSERT_MSG(WIFEXITED(status) && WEXITSTATUS(status) == cases[c].code,
				   "%s: status 0x%x", cases[c].script, status);
	}
}

/* TERM, HUP, USR1 and USR2 sent to gprof-run reach the command. */
TEST(tools_run_passes_signals_on)
{
	static const int sigs[] = {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};

	skip_under_tsan();

	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++) {
		struct run r;
		char *script;
		int status;
		pid_t pid;

		/* $1 is a folder: the command says there that it is ready, then waits. */
		ASSERT(asprintf(&script,
				"trap 'exit %d' %d; touch \"$1/ready\"; "
				"while :; do sleep 0.05; done",
				40 + sigs[i], sigs[i]) > 0);
		run_init(&r);
		pid = spawn(script, r.dir);
		wait_for(path_join(r.dir, "ready"));
		ASSERT_EQ(kill(pid, sigs[i]), 0);
		status = reap(pid);
		ASSERT_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 40 + sigs[i],
			   "signal %d: status 0x%x", sigs[i], status);
		run_free(&r);
	}
}

/* ---- gprof-run: the closing line names what this run wrote ---- */

/* The trace files in dir (at most 8), each loaded into t[] and checked unless t is NULL. */
static int traces_in(const char *dir, char names[8][NAME_MAX + 1], struct trace *t)
{
	int n = list_dir(dir, ".pt.trace.json.gz", names, 8);

	for (int i = 0; t && i < n; i++)
		load_checked(dir, names[i], &t[i]);
	return n;
}

/* A window's file next to an older trace, which is not this run's; two in a folder by pid. */
TEST(tools_run_reports_traces)
{
	static const char prefix[] = "gprof: this run wrote 2 traces in ";
	const char *app = proc_build_path("test/apps/steps-app");
	const char *args[] = {"-o", NULL, "--summary=off", "--schedule", NULL, "--", app, "-s",
			      "6",  NULL};
	struct timespec past[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
	char names[8][NAME_MAX + 1];
	struct run r;
	int fd, new;

	run_init(&r);
	fd = open(path_join(r.dir, "old_1.1000000000000000000.pt.trace.json.gz"),
		  O_CREAT | O_WRONLY, 0644);
	ASSERT(fd >= 0);
	ASSERT_EQ(futimens(fd, past), 0);
	close(fd);
	args[1] = r.dir;
	args[4] = "wait=1,warmup=1,active=3";
	run_tool(&r, NULL, args, NULL);
	ASSERT_EQ(r.res.status, 0);
	ASSERT_EQ(list_dir(r.dir, ".pt.trace.json.gz", names, 8), 2);
	new = strncmp(names[0], "old_", 4) ? 0 : 1;
	ASSERT_STR_EQ(last_line(r.res.err),
		      fmt("gprof: this run wrote 1 trace: %s", path_join(r.dir, names[new])));
	run_free(&r);

	run_init(&r);
	args[1] = path_join(r.dir, "pid%p");
	args[4] = "wait=0,warmup=0,active=1,repeat=2";
	run_tool(&r, NULL, args, NULL);
	ASSERT_EQ(r.res.status, 0);
	ASSERT_STR_CONTAINS(last_line(r.res.err), prefix);
	ASSERT_STR_CONTAINS(last_line(r.res.err), path_join(r.dir, "pid"));
	ASSERT_EQ(traces_in(last_line(r.res.err) + strlen(prefix), names, NULL), 2);
	run_free(&r);
}

/*
 * gprof-run counts the files of every format: its trace_suffixes are the suffixes of
 * export/format.h's gprof_formats, in order, and a file ending in each one (or in it and
 * .partial) is this run's; a file ending otherwise is not.
 */
TEST(tools_run_counts_every_format)
{
	const char *args[] = {"-o", NULL, "--", "/bin/sh", "-c", NULL, NULL};
	char *script = NULL, *at, *end, cmd[4096], want[4096 + 128];
	size_t len, n = 0, at_cmd = 0;
	struct run r;

	text_read_file(proc_src_path("scripts/gprof-run"), &script, &len);
	at = strstr(script, "\ntrace_suffixes=(");
	ASSERT_MSG(at, "no trace_suffixes=(...) in scripts/gprof-run");
	at += strlen("\ntrace_suffixes=(");
	end = strchr(at, ')');
	ASSERT(end && !memchr(at, '\n', (size_t)(end - at)));
	*end = '\0';
	run_init(&r);
	for (char *word = strtok(at, " "); word; word = strtok(NULL, " "), n++) {
		ASSERT_MSG(gprof_formats[n].ops, "%s: no such format in gprof_formats", word);
		ASSERT_STR_EQ(word, gprof_formats[n].suffix);
		at_cmd +=
		    (size_t)snprintf(cmd + at_cmd, sizeof(cmd) - at_cmd,
				     "touch '%s/a%s' '%s/b%s.partial'; ", r.dir, word, r.dir, word);
		ASSERT(at_cmd < sizeof(cmd));
	}
	ASSERT_MSG(!gprof_formats[n].ops, "scripts/gprof-run's trace_suffixes lack %s",
		   gprof_formats[n].suffix);
	ASSERT((size_t)snprintf(cmd + at_cmd, sizeof(cmd) - at_cmd, "touch '%s/c.json'", r.dir) <
	       sizeof(cmd) - at_cmd);
	args[1] = r.dir;
	args[5] = cmd;
	run_tool(&r, NULL, args, NULL);
	ASSERT_EQ(r.res.status, 0);
	snprintf(want, sizeof(want),
		 "gprof: this run wrote %zu traces (%zu left incomplete as .partial: gprof-repair "
		 "completes them) in %s",
		 2 * n, n, r.dir);
	ASSERT_STR_EQ(last_line(r.res.err), want);
	run_free(&r);
	free(script);
}

/*
 * A program killed in its window leaves its trace .partial: gprof-run completes it with
 * gprof-repair (its whole steps), removes the .partial, prints its summary and still ends as
 * the command did. Killed itself (rel-exit sigkill, in step 6 of a window of steps 2-11), and
 * by a TERM sent to gprof-run (which passes it on) in a window under --schedule=all. Before:
 * the .partial stayed, with no summary.
 */
TEST(tools_run_completes_partial)
{
	const char *args[] = {"-o",
			      NULL,
			      "--schedule=wait=1,warmup=1,active=10",
			      "--",
			      proc_build_path("test/apps/rel-exit"),
			      "sigkill",
			      NULL};
	char names[8][NAME_MAX + 1], *script;
	const char *dir;
	struct trace t;
	struct run r;
	pid_t pid;
	int status;

	skip_under_tsan();
	run_init(&r);
	args[1] = r.dir;
	run_tool(&r, NULL, args, NULL);
	ASSERT_EQ(r.res.status, 128 + SIGKILL);
	ASSERT_EQ(list_dir(r.dir, ".partial", names, 8), 0);
	ASSERT_EQ(traces_in(r.dir, names, &t), 1);
	trace_free(&t);
	ASSERT_STR_CONTAINS(r.res.err,
			    fmt("gprof-repair: %s: repaired", path_join(r.dir, names[0])));
	/* its summary: the steps the file had whole when the program died */
	ASSERT_STR_CONTAINS(r.res.err,
			    fmt("gprof: trace read: %s (steps 2-", path_join(r.dir, names[0])));
	ASSERT_STR_EQ(last_line(r.res.err),
		      fmt("gprof: this run wrote 1 trace: %s", path_join(r.dir, names[0])));
	run_free(&r);

	run_init(&r);
	dir = r.dir;
	ASSERT(asprintf(&script, "GPROF_SCHEDULE=all exec '%s' -s 1000000",
			proc_build_path("test/apps/steps-app")) > 0);
	pid = spawn_with(fmt("--output=%s", dir), script, "", NULL);
	while (list_dir(dir, ".partial", names, 8) == 0)
		usleep(10000);
	ASSERT_EQ(kill(pid, SIGTERM), 0);
	status = reap(pid);
	ASSERT_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "status 0x%x", status);
	ASSERT_EQ(list_dir(dir, ".partial", names, 8), 0);
	ASSERT_EQ(traces_in(dir, names, &t), 1);
	trace_free(&t);
	free(script);
	run_free(&r);
}

/*
 * --simulated-gpu runs a program built as a user builds one (nvcc-plain: NVIDIA's static
 * runtime, nothing that finds the simulated driver) on the simulated GPU, with its CUPTI:
 * every kernel of the ground truth is in the trace. Without it the program finds no driver.
 */
TEST(tools_run_simulated_gpu)
{
	const char *app = proc_build_path("test/apps/nvcc-plain");
	const char *args[] = {
	    "--simulated-gpu", "--schedule=all", "--summary=off", "-o", NULL, "--", app, "4", NULL};
	const char *extra[] = {"GPROF_CUPTI_LIB", NULL, NULL};
	char names[8][NAME_MAX + 1], *gt_path;
	struct trace t;
	struct run r;
	json_t *gt;

	if (access(app, X_OK) != 0)
		SKIP("no nvcc-plain (no nvcc)");
	run_init(&r);
	gt_path = path_join(r.dir, "gt.log");
	extra[1] = fmt("FAKEGPU_LOG=%s", gt_path);
	args[4] = r.dir;
	run_tool(&r, NULL, args, extra);
	ASSERT_MSG(r.res.status == 0, "%s", r.res.err);
	ASSERT_STR_CONTAINS(r.res.err, "gprof: --simulated-gpu: on the simulated GPU (");
	ASSERT_EQ(traces_in(r.dir, names, &t), 1);
	gt = gtlog_load(gt_path);
	ASSERT(gt && gtlog_count(gt, "{\"type\":\"gpu\",\"kind\":\"kernel\"}") == 12);
	ASSERT_EQ(e2e_count(&t, "kernel", NULL), 12);
	json_decref(gt);
	trace_free(&t);

	args[0] = "--log=error"; /* the same run without --simulated-gpu */
	run_tool(&r, NULL, args, extra);
	ASSERT_MSG(r.res.status != 0 && strstr(r.res.err, "driver"), "%d: %s", r.res.status,
		   r.res.err);
	run_free(&r);
}

/* ---- multi-rank: %r ---- */

static long header_int(const struct trace *t, const char *key)
{
	return (long)json_integer_value(
	    json_object_get(json_object_get(t->root, "distributedInfo"), key));
}

/*
 * %r is the rank of each process (RANK, else SLURM_PROCID, ...): two ranks run at once by one
 * gprof-run write one folder each, with the rank and world size in distributedInfo.
 */
TEST(tools_rank_folders)
{
	static const struct {
		const char *vars;
		long rank[2], world;
	} cases[] = {
	    {"RANK=$r WORLD_SIZE=2", {0, 1}, 2},
	    {"SLURM_PROCID=$((r + 4)) SLURM_NTASKS=8", {4, 5}, 8},
	};
	const char *args[] = {"-o",
			      NULL,
			      "--schedule=all",
			      "--summary=off",
			      "--",
			      "/bin/sh",
			      "-c",
			      NULL,
			      proc_build_path("test/apps/steps-app"),
			      NULL};

	for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
		char names[8][NAME_MAX + 1];
		struct run r;

		run_init(&r);
		args[1] = path_join(r.dir, "rank%r");
		args[7] = fmt("for r in 0 1; do env %s \"$0\" -s 3 & done; wait", cases[c].vars);
		run_tool(&r, NULL, args, NULL);
		ASSERT_MSG(r.res.status == 0, "%s", r.res.err);
		ASSERT_STR_EQ(last_line(r.res.err),
			      fmt("gprof: this run wrote 2 traces in 2 folders of '%s'", args[1]));
		for (int i = 0; i < 2; i++) {
			char rank[32];
			struct trace t;
			char *dir;

			snprintf(rank, sizeof(rank), "rank%ld", cases[c].rank[i]);
			dir = path_join(r.dir, rank);
			ASSERT_EQ(list_dir(dir, ".pt.trace.json.gz", names, 8), 1);
			load_checked(dir, names[0], &t);
			ASSERT_EQ(header_int(&t, "rank"), cases[c].rank[i]);
			ASSERT_EQ(header_int(&t, "world_size"), cases[c].world);
			trace_free(&t);
		}
		run_free(&r);
	}
}

/* ---- --torch-steps ---- */

static const char *tool_lib_env(void)
{
	return fmt("TOOLS_TEST_LIB=%s", proc_build_path("test/apps/tool-steps.so"));
}

/* Runs test/stand-ins/train.py under gprof-run with opts, with the stand-in torch. */
static void run_train(struct run *r, const char *const *opts, const char *iters,
		      const char *optimizers)
{
	const char *env[] = {fmt("PYTHONPATH=%s", proc_src_path("test/stand-ins")), tool_lib_env(),
			     NULL};
	const char *args[MAX_ARGS];
	int n = 0;

	args[n++] = "-o";
	args[n++] = r->dir;
	args[n++] = "--summary=off";
	for (; opts && *opts; opts++)
		args[n++] = *opts;
	args[n++] = "--";
	args[n++] = "python3";
	args[n++] = proc_src_path("test/stand-ins/train.py");
	args[n++] = iters;
	args[n++] = optimizers;
	args[n] = NULL;
	run_tool(r, NULL, args, env);
	ASSERT_MSG(r->res.status == 0, "status %d: %s", r->res.status, r->res.err);
}

struct span {
	double ts, end;
};

/* The ProfilerStep#k spans of t: each k in [0, n) exactly once, and no other. */
static void step_spans(const struct trace *t, struct span *steps, int n)
{
	bool seen[64] = {false};
	size_t i;
	json_t *ev;
	int k;

	ASSERT(n <= 64);
	json_array_foreach(t->events, i, ev)
	{
		if (sscanf(trace_str(ev, "name"), "ProfilerStep#%d", &k) != 1)
			continue;
		ASSERT_MSG(k >= 0 && k < n && !seen[k], "ProfilerStep#%d", k);
		seen[k] = true;
		steps[k] = (struct span){num(ev, "ts"), num(ev, "ts") + num(ev, "dur")};
	}
	for (k = 0; k < n; k++)
		ASSERT_MSG(seen[k], "no ProfilerStep#%d", k);
}

/* train.py's iteration and optimizer of a call, from its bytes (j = optimizers: the forward). */
static bool call_of(const json_t *ev, int optimizers, int *k, int *j)
{
	const char *name = trace_str(ev, "name");
	long long bytes = e2e_arg_int(ev, "bytes");

	if (strcmp(trace_str(ev, "cat"), "cuda_runtime"))
		return false;
	if (!strcmp(name, "cudaMemset")) {
		*k = (int)(bytes / 128) - 1;
		*j = (int)(bytes % 128);
		return true;
	}
	if (!strcmp(name, "cudaMemcpy")) {
		*k = (int)(bytes / 256) - 1;
		*j = optimizers;
		return true;
	}
	return false;
}

/*
 * train.py's documented work against the steps: each call exactly once, and where the marks
 * after the first optimizer's steps put them: iteration k's forward copy and first update come
 * before its mark, in step k - 1 (iteration 0: before step 0); the other optimizers' updates
 * come after it, in step k. What follows the last mark runs to the exit and is no step (it
 * would inflate the longest): the last iteration's other updates come after the last step.
 */
static void check_steps(const struct trace *t, int iters, int optimizers)
{
	struct span steps[64];
	int seen[64][4] = {{0}}, k, j;
	size_t i;
	json_t *ev;

	step_spans(t, steps, iters - 1);
	json_array_foreach(t->events, i, ev)
	{
		double ts = num(ev, "ts"), end = ts + num(ev, "dur");
		int step;

		if (!call_of(ev, optimizers, &k, &j))
			continue;
		ASSERT_MSG(k >= 0 && k < iters && j >= 0 && j <= optimizers, "%s of %lld bytes",
			   trace_str(ev, "name"), e2e_arg_int(ev, "bytes"));
		seen[k][j]++;
		step = j == 0 || j == optimizers ? k - 1 : k;
		if (step < 0)
			ASSERT_MSG(ts < steps[0].ts, "iteration %d, %d before step 0", k, j);
		else if (step == iters - 1)
			ASSERT_MSG(ts >= steps[step - 1].end, "iteration %d, %d after the steps", k,
				   j);
		else
			ASSERT_MSG(ts >= steps[step].ts && end <= steps[step].end,
				   "iteration %d, %d outside step %d", k, j, step);
	}
	for (k = 0; k < iters; k++)
		for (j = 0; j <= optimizers; j++)
			ASSERT_MSG(seen[k][j] == 1, "iteration %d, %d: %d calls", k, j, seen[k][j]);
}

/* One step per optimizer step; with two optimizers, per step of the first. */
TEST(tools_torch_steps_marks_optimizer_steps)
{
	static const char *const opts[] = {"--torch-steps", "--schedule=all", NULL};
	static const struct {
		const char *iters, *optimizers;
	} cases[] = {{"6", "1"}, {"5", "2"}};

	require_python();
	for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
		char names[8][NAME_MAX + 1];
		struct trace t;
		struct run r;

		run_init(&r);
		run_train(&r, opts, cases[c].iters, cases[c].optimizers);
		ASSERT_EQ(traces_in(r.dir, names, &t), 1);
		check_steps(&t, atoi(cases[c].iters), atoi(cases[c].optimizers));
		ASSERT_EQ(e2e_count(&t, "user_annotation", "step"), atoi(cases[c].iters));
		trace_free(&t);
		run_free(&r);
	}
}

/* train.py, 4 iterations of one optimizer, under gprof-run opts: its one trace, checked. */
static void train_four(struct run *r, const char *const *opts, struct trace *t)
{
	char names[8][NAME_MAX + 1];

	require_python();
	run_init(r);
	run_train(r, opts, "4", "1");
	ASSERT_EQ(traces_in(r->dir, names, t), 1);
	check_steps(t, 4, 1);
}

/* The marks carry --step-marker; without --torch-steps nothing marks a step. */
TEST(tools_torch_steps_marker_and_off)
{
	static const char *const marker[] = {"--torch-steps", "--schedule=all",
					     "--step-marker=iteration", NULL};
	static const char *const off[] = {"--schedule=all", NULL};
	char names[8][NAME_MAX + 1];
	struct trace t;
	struct run r;

	train_four(&r, marker, &t);
	ASSERT_EQ(e2e_count(&t, "user_annotation", "iteration"), 4);
	ASSERT_EQ(e2e_count(&t, "user_annotation", "step"), 0);
	trace_free(&t);
	run_free(&r);

	run_init(&r);
	run_train(&r, off, "4", "1");
	ASSERT_EQ(traces_in(r.dir, names, &t), 1);
	ASSERT_EQ(e2e_count(&t, "user_annotation", NULL), 0);
	trace_free(&t);
	run_free(&r);
}

/*
 * A program that marks its own steps (at each iteration's start) under --torch-steps: only its
 * marks count, one step per iteration, nothing said.
 */
TEST(tools_torch_steps_program_marks)
{
	char *path = fmt("PYTHONPATH=%s", proc_src_path("test/stand-ins"));
	char *lib = (char *)tool_lib_env();
	const char *env[] = {path, lib, NULL};
	char names[8][NAME_MAX + 1];
	struct span steps[4];
	struct trace t;
	struct run r;

	require_python();
	run_init(&r);
	{
		const char *args[] = {"-o",
				      r.dir,
				      "--torch-steps",
				      "--schedule=all",
				      "--",
				      "python3",
				      proc_src_path("test/stand-ins/train.py"),
				      "4",
				      "1",
				      "marks",
				      NULL};

		run_tool(&r, NULL, args, env);
	}
	ASSERT_MSG(r.res.status == 0 && !strstr(r.res.err, "torch"), "status %d: %s", r.res.status,
		   r.res.err);
	ASSERT_EQ(traces_in(r.dir, names, &t), 1);
	step_spans(&t, steps, 4);
	/* the program's 4 marks and the hook's 4, which do not count */
	ASSERT_EQ(e2e_count(&t, "user_annotation", "step"), 8);
	trace_free(&t);
	run_free(&r);
	free(path);
	free(lib);
}

/*
 * A launcher that passes only environment: LD_PRELOAD and GPROF_TORCH=steps, no gprof-run.
 * libgprof puts the start-up hook on PYTHONPATH itself, in front of what is there, once.
 */
TEST(tools_torch_variable_for_launchers)
{
	const char *args[] = {"python3", proc_src_path("test/stand-ins/train.py"), "4", "1", NULL};
	char names[8][NAME_MAX + 1];
	struct trace t;
	struct run r;

	require_python();
	run_init(&r);
	char *out = fmt("GPROF_OUTPUT=%s", r.dir);
	char *path = fmt("PYTHONPATH=%s", proc_src_path("test/stand-ins"));
	char *lib = (char *)tool_lib_env();
	const char *env[] = {proc_preload(proc_build_path("libgprof.so")),
			     "GPROF_TORCH=steps",
			     "GPROF_SCHEDULE=all",
			     "GPROF_SUMMARY=off",
			     out,
			     path,
			     lib,
			     NULL};

	run_tool(&r, "/usr/bin/env", args, env);
	free(out);
	free(path);
	free(lib);
	ASSERT_MSG(r.res.status == 0 && !strstr(r.res.err, "torch"), "status %d: %s", r.res.status,
		   r.res.err);
	ASSERT_EQ(traces_in(r.dir, names, &t), 1);
	check_steps(&t, 4, 1);
	trace_free(&t);
	run_free(&r);
}

/*
 * --torch marks steps as --torch-steps does; a torch without PyTorch's module hooks and
 * profiler (the stand-in) records no operators and says so in one line.
 */
TEST(tools_torch_without_its_profiler)
{
	static const char *const opts[] = {"--torch", "--schedule=all", NULL};
	struct trace t;
	struct run r;

	train_four(&r, opts, &t);
	ASSERT_EQ(text_lines(r.res.err, "gprof: --torch"), 1);
	ASSERT_STR_CONTAINS(r.res.err, "gprof: --torch: operators are not recorded: this torch "
				       "has no global module hooks");
	ASSERT_EQ(e2e_count(&t, "cpu_op", NULL), 0);
	trace_free(&t);
	run_free(&r);
}

/* python3 -c code under gprof-run [opt]; PYTHONPATH as given (NULL: unset). */
static void run_python(struct run *r, const char *opt, const char *pythonpath, const char *code)
{
	const char *args[] = {"--", "python3", "-c", code, NULL, NULL};
	const char *env[] = {pythonpath ? fmt("PYTHONPATH=%s", pythonpath) : "PYTHONPATH",
			     tool_lib_env(), NULL};

	if (opt) {
		memmove(args + 1, args, 4 * sizeof(args[0]));
		args[0] = opt;
	}
	run_tool(r, NULL, args, env);
	ASSERT_MSG(r->res.status == 0, "status %d: %s", r->res.status, r->res.err);
}

/*
 * The startup hook imports no torch, registers one global hook when the program imports torch
 * (none without --torch-steps), and still runs the sitecustomize it hides.
 */
TEST(tools_torch_steps_startup_hook)
{
	static const char hooks[] = "import torch.optim.optimizer as o; "
				    "print('hooks', len(o._global_post_hooks))";
	static const char other[] = "import os\n"
				    "open(os.path.join(os.path.dirname(__file__), 'ran'), 'w')\n";
	const char *stand_ins = proc_src_path("test/stand-ins");
	char *path = NULL;
	struct run r;
	FILE *f;

	require_python();
	run_init(&r);
	run_python(&r, "--torch-steps", stand_ins, "import sys; print('torch' in sys.modules)");
	ASSERT_STR_EQ(r.res.out, "False\n");
	run_python(&r, "--torch-steps", stand_ins, hooks);
	ASSERT_STR_EQ(r.res.out, "hooks 1\n");
	run_python(&r, NULL, stand_ins, hooks);
	ASSERT_STR_EQ(r.res.out, "hooks 0\n");

	/* Another sitecustomize later on PYTHONPATH runs too. */
	f = fopen(path_join(r.dir, "sitecustomize.py"), "w");
	ASSERT(f && fputs(other, f) >= 0 && fclose(f) == 0);
	ASSERT(asprintf(&path, "%s:%s", stand_ins, r.dir) > 0);
	run_python(&r, "--torch-steps", path, hooks);
	ASSERT_STR_EQ(r.res.out, "hooks 1\n");
	ASSERT_EQ(access(path_join(r.dir, "ran"), F_OK), 0);

	/* No torch anywhere: the program runs as it would, and nothing is said about steps. */
	run_python(&r, "--torch-steps", NULL, "print('plain')");
	ASSERT_STR_EQ(r.res.out, "plain\n");
	ASSERT(!strstr(r.res.err, "--torch-steps"));
	run_free(&r);
}

/*
 * Issue #15: under python -E, which ignores PYTHONPATH, the start-up hook never runs and no step
 * is marked; libgprof says why at exit, not only that no step was marked.
 */
TEST(tools_torch_steps_under_python_E)
{
	char *code = NULL;
	struct run r;

	require_python();
	ASSERT(asprintf(&code,
			"import sys; sys.path.insert(0, '%s'); sys.argv = ['train.py', '4']; "
			"exec(open('%s').read())",
			proc_src_path("test/stand-ins"),
			proc_src_path("test/stand-ins/train.py")) > 0);
	for (int plain = 0; plain < 2; plain++) {
		const char *args[] = {"--torch-steps", "--", "python3", "-E", "-c", code, NULL};
		const char *env[] = {"PYTHONPATH", tool_lib_env(), NULL};

		if (plain) /* without -E */
			memmove(&args[3], &args[4], 3 * sizeof(args[0]));
		run_init(&r);
		run_tool(&r, NULL, args, env);
		ASSERT_MSG(r.res.status == 0, "status %d: %s", r.res.status, r.res.err);
		ASSERT_MSG(
		    (strstr(r.res.err, "gprof: --torch-steps: its start-up hook never ran") !=
		     NULL) == !plain,
		    "%s", r.res.err);
		run_free(&r);
	}
	free(code);
}

/* ---- make install ---- */

/* make -C TEST_SRC target for this build (SAN) without rebuilding anything (-o all). */
static void run_make(const char *target, const char *prefix, const char *destdir)
{
	const char *san = getenv("TEST_SAN");
	const char *argv[] = {"/usr/bin/env",
			      "make",
			      "-s",
			      "-C",
			      proc_src_path(""),
			      "-o",
			      "all",
			      target,
			      fmt("PREFIX=%s", prefix),
			      fmt("DESTDIR=%s", destdir),
			      fmt("SAN=%s", san ? san : ""),
			      NULL};
	const char *env[MAX_ENV];
	struct proc_result res;

	base_env(env);
	ASSERT_EQ(proc_run(argv, env, 120, &res), 0);
	ASSERT_MSG(res.status == 0, "make %s: %d: %s", target, res.status, res.err);
	proc_result_free(&res);
}

static const char *const installed[] = {
    "lib/libgprof.so",
    "bin/gprof-run",
    "bin/gprof-repair",
    "bin/gprof-summary",
    "share/libgprof/torch-steps/sitecustomize.py",
    "libexec/libgprof/gprof-run-wait",
    "share/doc/libgprof/README.md",
};

/*
 * gprof-run --help lists every variable of the README's configuration table (the library's
 * own, config_readme_table checks), each with its accepted values (it named five options
 * and pointed to a README an installed user did not have).
 */
static void check_help_lists_variables(const char *help)
{
	char *readme = NULL, *line, *end, name[64];
	size_t len, n = 0;

	text_read_file(proc_src_path("README.md"), &readme, &len);
	line = strstr(readme, "<!-- config-table -->");
	end = line ? strstr(line, "<!-- /config-table -->") : NULL;
	ASSERT(line && end);
	for (; line < end; line = strchr(line, '\n') + 1)
		if (sscanf(line, "| `%63[A-Z0-9_]` |", name) == 1) {
			ASSERT_MSG(strstr(help, fmt("\n  %s (default: ", name)), "%s not in: %s",
				   name, help);
			n++;
		}
	ASSERT_LE(16, n);
	ASSERT_STR_CONTAINS(help, "1 makes the library inert; accepted: 0 or 1");
	free(readme);
}

/* Every file is where it should be; each program answers --help with its usage. */
static void check_installed(const char *root)
{
	bool summary_built = access(proc_build_path("gprof-summary"), X_OK) == 0;

	for (size_t i = 0; i < ARRAY_SIZE(installed); i++) {
		const char *path = path_join(root, installed[i]);
		const char *argv[] = {path, "--help", NULL};
		struct proc_result res;

		if (!strcmp(installed[i], "bin/gprof-summary") && !summary_built) {
			ASSERT_MSG(access(path, F_OK) != 0, "%s installed but not built", path);
			continue;
		}
		ASSERT_MSG(access(path, R_OK) == 0, "%s missing", path);
		if (strncmp(installed[i], "bin/", 4))
			continue;
		ASSERT_EQ(proc_run(argv, NULL, 60, &res), 0);
		ASSERT_MSG(res.status == 0, "%s --help: %d", path, res.status);
		ASSERT_MSG(strcasestr(res.out, "usage") && strstr(res.out, installed[i] + 4),
			   "%s --help: %s", path, res.out);
		if (!strcmp(installed[i], "bin/gprof-run"))
			check_help_lists_variables(res.out);
		proc_result_free(&res);
	}
}

/* The installed gprof-run finds the installed library by itself and records a run. */
static void run_installed(const char *prefix)
{
	const char *tool = path_join(prefix, "bin/gprof-run");
	const char *args[] = {"-o",
			      NULL,
			      "--schedule=all",
			      "--summary=off",
			      "--",
			      proc_build_path("test/apps/steps-app"),
			      "-s",
			      "3",
			      NULL};
	const char *env_args[] = {"--", "/usr/bin/env", NULL};
	char names[8][NAME_MAX + 1];
	struct trace t;
	struct run r;

	run_init(&r);
	args[1] = r.dir;
	run_tool(&r, tool, args, NULL);
	ASSERT_MSG(r.res.status == 0, "%s", r.res.err);
	ASSERT_EQ(traces_in(r.dir, names, &t), 1);
	ASSERT_EQ(e2e_count(&t, "user_annotation", "ProfilerStep#2"), 1);
	trace_free(&t);
	ASSERT_STR_EQ(last_line(r.res.err),
		      fmt("gprof: this run wrote 1 trace: %s", path_join(r.dir, names[0])));
	run_tool(&r, tool, env_args, NULL);
	ASSERT_STR_CONTAINS(r.res.out, path_join(prefix, "lib/libgprof.so"));
	run_free(&r);
}

TEST(tools_install)
{
	char tmp[] = "/tmp/gprof-install-XXXXXX";
	const char *prefix, *staged = "/opt/gprof-install-test";
	bool staged_there = access(staged, F_OK) == 0;

	skip_under_tsan();

	ASSERT(mkdtemp(tmp));
	prefix = path_join(tmp, "usr");
	run_make("install", prefix, "");
	check_installed(prefix);
	run_installed(prefix);

	run_make("uninstall", prefix, "");
	for (size_t i = 0; i < ARRAY_SIZE(installed); i++)
		ASSERT_MSG(access(path_join(prefix, installed[i]), F_OK) != 0, "%s left",
			   installed[i]);

	/* DESTDIR stages the tree under it, and nothing goes to PREFIX itself. */
	run_make("install", staged, path_join(tmp, "stage"));
	check_installed(fmt("%s/stage/opt/gprof-install-test", tmp));
	ASSERT(staged_there || access(staged, F_OK) != 0);
	ASSERT_EQ(system(fmt("rm -rf '%s'", tmp)), 0);
}

/* How many files dir's subfolders whose names begin with `sub` hold that begin with `prefix`. */
static int count_in_subdirs(const char *dir, const char *sub, const char *prefix)
{
	char names[8][NAME_MAX + 1], inner[8][NAME_MAX + 1];
	int n = list_dir(dir, "", names, 8), count = 0;

	for (int i = 0; i < n; i++)
		if (!strncmp(names[i], sub, strlen(sub))) {
			int m = list_dir(path_join(dir, names[i]), "", inner, 8);

			for (int j = 0; j < m; j++)
				count += !strncmp(inner[j], prefix, strlen(prefix));
		}
	return count;
}

/* Bit k for each ProfilerStep#k (k < 64) of t. */
static uint64_t steps_of(const struct trace *t)
{
	uint64_t set = 0;
	size_t i;
	json_t *ev;
	int k;

	json_array_foreach(t->events, i, ev)
	{
		if (sscanf(trace_str(ev, "name"), "ProfilerStep#%d", &k) == 1 && k >= 0 && k < 64)
			set |= 1ull << k;
	}
	return set;
}

/*
 * Issue #15: a launcher that uses no CUDA starts two CUDA workers (as torchrun does) under
 * gprof-run --trigger signal: one SIGUSR2 to gprof-run reaches both workers, and both record
 * the same steps.
 */
TEST(tools_run_signal_reaches_workers)
{
	struct timespec pause = {.tv_nsec = 20 * 1000 * 1000};
	char names[8][NAME_MAX + 1];
	struct trace t[2];
	struct run r;
	char *script;
	int status;
	pid_t pid;

	skip_under_tsan();
	run_init(&r);
	ASSERT(asprintf(&script, "cd \"$1\" && exec python3 '%s' '%s' -s 150 -d 20",
			proc_src_path("test/apps/launcher.py"),
			proc_build_path("test/apps/trig-app")) > 0);
	pid = spawn_with("--trigger=signal", script, r.dir, r.dir);
	/* both workers made their first CUDA call: they are in the run */
	while (count_in_subdirs(r.dir, "gprof-run.", "pid.") < 2)
		nanosleep(&pause, NULL);
	ASSERT_EQ(kill(pid, SIGUSR2), 0);
	status = reap(pid);
	ASSERT_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status 0x%x", status);
	ASSERT_EQ(traces_in(path_join(r.dir, "gprof_traces"), names, t), 2);
	ASSERT(steps_of(&t[0]));
	ASSERT_EQ(steps_of(&t[0]), steps_of(&t[1]));
	ASSERT_EQ(e2e_count(&t[0], "user_annotation", NULL),
		  e2e_count(&t[1], "user_annotation", NULL));
	trace_free(&t[0]);
	trace_free(&t[1]);
	free(script);
	run_free(&r);
}
