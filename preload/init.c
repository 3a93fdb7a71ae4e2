/*
 * The library's constructor and exit paths: normal exit, and with GPROF_SIGNALS=1 SIGTERM and
 * SIGINT. The constructor only reads the configuration and sets environment variables: no CUDA
 * call (DataLoader workers fork after it, and CUDA must not be initialised before fork).
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PR_FMT ""
#include "collector/collector.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/log.h"
#include "common/thread.h"
#include "export/export.h"
#include "preload/preload.h"

/* Loaded once by the constructor; the session reads it for the rest of the process. */
static struct gprof_config cfg; /* 13 KiB: not on a constructor's stack */

/*
 * Points `var` at this library unless the user set it; says once what another tool's value
 * costs. True when another tool has it.
 */
static bool claim_injection(const char *var, const char *self, const char *loses)
{
	const char *cur = getenv(var);

	if (!cur || !*cur) {
		setenv(var, self, 1);
		return false;
	}
	if (strcmp(cur, self) == 0)
		return false;
	pr_warn("%s is already set to '%s', another tool: %s; unset it to let libgprof in", var,
		cur, loses);
	return true;
}

static void self_path(char *out, size_t size)
{
	Dl_info info;

	/* An absolute path: the program may change directory before CUDA loads us again. */
	out[0] = '\0';
	if (size >= PATH_MAX && dladdr((void *)self_path, &info) && info.dli_fname &&
	    !realpath(info.dli_fname, out))
		out[0] = '\0';
}

/*
 * GPROF_TORCH: the start-up hook's folder (installed, or in the source tree beside build/ or
 * build/<variant>/) first on PYTHONPATH, where a Python this process becomes finds it, unless it
 * is there. Without it, one line, and GPROF_TORCH=off for the processes this one starts.
 */
static void torch_hook_path(const char *self)
{
	static const char *const where[] = {"/../share/libgprof/torch-steps",
					    "/../scripts/torch-steps",
					    "/../../scripts/torch-steps"};
	const char *slash = strrchr(self, '/'), *old = getenv("PYTHONPATH");
	char dir[PATH_MAX], file[PATH_MAX + 32], *path;
	size_t i, n;

	for (i = 0; slash && i < ARRAY_SIZE(where); i++) {
		snprintf(file, sizeof(file), "%.*s%s", (int)(slash - self), self, where[i]);
		if (!realpath(file, dir))
			continue;
		snprintf(file, sizeof(file), "%s/sitecustomize.py", dir);
		if (access(file, R_OK) == 0)
			break;
	}
	if (!slash || i == ARRAY_SIZE(where)) {
		pr_warn(
		    "GPROF_TORCH: the start-up hook (share/libgprof/torch-steps/sitecustomize.py)"
		    " is not beside %s, so PyTorch's steps and operators are not recorded",
		    self);
		setenv("GPROF_TORCH", "off", 1);
		return;
	}
	n = strlen(dir);
	if (old && !strncmp(old, dir, n) && (old[n] == ':' || !old[n]))
		return;
	if (asprintf(&path, "%s%s%s", dir, old && *old ? ":" : "", old ? old : "") < 0)
		return;
	setenv("PYTHONPATH", path, 1);
	setenv("GPROF_TORCH_STEPS", "requested", 0);
	free(path);
}

/*
 * The session's end runs once, on the first of: exit, or the signal thread below. Written by
 * run_fini; read by the signal handler (fini_state only) and by a second exit path.
 */
enum {
	FINI_NOT_STARTED,
	FINI_RUNNING,
	FINI_DONE
};
static int fini_state;
static GPROF_TLS bool in_fini; /* this thread runs it */
static bool live;	       /* the session runs in this process (not inert, not a fork child) */

#define FINI_WAIT_MS 15000 /* the session's own limits (collector 3 s, writer 10 s) and some */

/*
 * Waits for the session's end, at most ms by the clock (a loaded machine's 10 ms sleeps last
 * longer); async-signal-safe (the signal handler uses it).
 */
static void wait_fini(unsigned ms)
{
	const struct timespec tick = {.tv_nsec = 10 * 1000 * 1000};
	uint64_t until_ns = gprof_clock_ns(CLOCK_MONOTONIC) + ms * 1000000ull;

	while (__atomic_load_n(&fini_state, __ATOMIC_ACQUIRE) != FINI_DONE &&
	       gprof_clock_ns(CLOCK_MONOTONIC) < until_ns)
		nanosleep(&tick, NULL);
}

/* tid: the thread that ends the process (exit's caller, or the one a signal interrupted). */
static void run_fini(int tid)
{
	int expect = FINI_NOT_STARTED;

	if (!__atomic_compare_exchange_n(&fini_state, &expect, FINI_RUNNING, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		/* Already under way on another thread (a signal came): let it finish. */
		if (!in_fini)
			wait_fini(FINI_WAIT_MS);
		return;
	}
	in_fini = true;
	/* --torch-steps' markers end steps: what follows the last one is no step */
	gprof_session_fini(gprof_torch_steps_hooked() ? 0 : tid);
	__atomic_store_n(&fini_state, FINI_DONE, __ATOMIC_RELEASE);
}

static void at_exit(void)
{
	run_fini(gprof_tid());
}

static pid_t session_pid; /* the process whose session this is: not a vfork child's */

bool gprof_preload_exec(void)
{
	int saved_errno = errno;

	if (!__atomic_load_n(&live, __ATOMIC_ACQUIRE) || getpid() != session_pid)
		return false;
	run_fini(gprof_tid());
	__atomic_store_n(&live, false, __ATOMIC_RELEASE);
	errno = saved_errno;
	return true;
}

void gprof_preload_exec_failed(const char *what, int err)
{
	int saved_errno = errno;

	pr_warn("exec of '%.200s' failed (%s): libgprof had ended its session for it (the window "
		"in progress is written); nothing more of this process is recorded",
		what, strerror(err));
	errno = saved_errno;
}

/*
 * GPROF_SIGNALS=1. SIGTERM and SIGINT, if still at their default when CUDA starts (a Python
 * interpreter has set its SIGINT handler by then), get a handler that hands the session's end
 * to a thread of ours, waits for it, and re-raises the signal with its default action, so the
 * process ends as it would have, by the signal. The handler itself only writes to a pipe and
 * sleeps: the session's end takes locks that the interrupted thread may hold, in which case
 * the wait times out and the window stays .partial (scripts/gprof-repair). The handler wakes
 * the thread with a semaphore: a pipe's descriptors could be closed by the program (the thread
 * then read EOF and ended the session silently) or reused (the handler wrote into its file).
 */
static int signals_taken;  /* set once, by the first InitializeInjection */
static sem_t signal_sem;   /* posted by the handler: no descriptor the program could close */
static pid_t signal_owner; /* the process whose thread waits on it */
static int signal_tid;	   /* the thread the signal interrupted: written before the post */

static void on_signal(int sig)
{
	int saved_errno = errno;

	/* SA_RESETHAND: the default action is back, and a second signal ends the process now. */
	__atomic_store_n(&signal_tid, (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
	if (!in_fini && getpid() == signal_owner && sem_post(&signal_sem) == 0)
		wait_fini(FINI_WAIT_MS);
	errno = saved_errno;
	raise(sig); /* SA_NODEFER: delivered at once, with the default action */
}

static void *signal_thread(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "gprof-signal");
	while (sem_wait(&signal_sem) != 0 && errno == EINTR)
		;
	run_fini(__atomic_load_n(&signal_tid, __ATOMIC_ACQUIRE));
	return NULL;
}

/* The thread that ends the session on a signal; it never takes a signal itself. 0 or -errno. */
static int start_signal_thread(void)
{
	if (sem_init(&signal_sem, 0, 0) != 0)
		return -errno;
	return gprof_thread_start(NULL, signal_thread, NULL);
}

static void take_signals(void)
{
	static const int sigs[] = {SIGTERM, SIGINT};
	struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESETHAND | SA_NODEFER};
	int err;

	if (!cfg.signals || !__atomic_load_n(&live, __ATOMIC_ACQUIRE) ||
	    __atomic_exchange_n(&signals_taken, 1, __ATOMIC_ACQ_REL))
		return;
	err = start_signal_thread();
	if (err) {
		char why[GPROF_SPACE_ERROR_MAX];

		pr_warn("GPROF_SIGNALS=1: cannot start its thread (%s); SIGTERM and SIGINT end "
			"the process without writing the window in progress",
			gprof_space_error(err, why, sizeof(why)));
		return;
	}
	signal_owner = getpid();
	sigfillset(&sa.sa_mask);
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++) {
		struct sigaction old;

		if (sigaction(sigs[i], NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) &&
		    old.sa_handler == SIG_DFL)
			sigaction(sigs[i], &sa, NULL);
	}
}

static void at_fork_child(void)
{
	gprof_tid_forget();
	__atomic_store_n(&live, false, __ATOMIC_RELEASE);
	/* Nothing of the parent's to finish here, even if its exit was under way. */
	__atomic_store_n(&fini_state, FINI_DONE, __ATOMIC_RELEASE);
	gprof_session_forked();
}

/* A relative GPROF_SUMMARY file, against the folder the program starts in (it may chdir). */
static void summary_absolute(void)
{
	char cwd[PATH_MAX], *path = cfg.summary;

	if (path[0] == '/' || !strcmp(path, "stderr") || !strcmp(path, "off") ||
	    !getcwd(cwd, sizeof(cwd)))
		return;
	if (strlen(cwd) + 1 + strlen(path) < sizeof(cfg.summary)) {
		memmove(path + strlen(cwd) + 1, path, strlen(path) + 1);
		memcpy(path, cwd, strlen(cwd));
		path[strlen(cwd)] = '/';
	}
}

/* Share of GPROF_BUFFER_MB for CUPTI's activity buffers; the exporter gets the rest. */
#define CUPTI_SHARE	4 /* a quarter */
#define CUPTI_MIN_BYTES (256u << 10)

/* Export and the collector, configured (GPROF_BUFFER_MB split between them); 0 or -1. */
static int init_export_and_collector(void)
{
	size_t total = (size_t)cfg.buffer_mb << 20;
	size_t cupti =
	    total / CUPTI_SHARE > CUPTI_MIN_BYTES ? total / CUPTI_SHARE : CUPTI_MIN_BYTES;
	struct gprof_export_config ecfg = {
	    .output = cfg.output,
	    .gzip_level = cfg.gzip_level,
	    .writer_threads = cfg.writer_threads,
	    .buffer_bytes = total - cupti,
	    .on_window_done = gprof_report_window_done,
	    .tensor_memory = cfg.torch == GPROF_TORCH_ON,
	    .torch_ops = cfg.torch == GPROF_TORCH_ON,
	    .arg = &cfg,
	};
	struct gprof_collector_config ccfg = {
	    .cupti_lib = cfg.cupti_lib,
	    .activities = cfg.activities,
	    .buffer_bytes = cupti,
	    .drain_ms = GPROF_COLLECTOR_DRAIN_MS,
	    .all_api_calls = cfg.api_calls == GPROF_API_CALLS_ALL,
	};

	return gprof_export_init(&ecfg) != 0 || gprof_collector_init(&ccfg) != 0 ? -1 : 0;
}

static void init_once(void)
{
	char self[PATH_MAX];

	gprof_log_bind_stderr();
	if (gprof_config_load(&cfg, NULL) != 0 || cfg.disable)
		return;
	summary_absolute();
	gprof_log_level = cfg.log_level;
	gprof_clock_init();
	if (init_export_and_collector() != 0 || gprof_session_init(&cfg) != 0) {
		pr_err("cannot start (out of memory?); libgprof is off for this process");
		return;
	}
	gprof_nvtx_set_marker(cfg.step_marker);
	self_path(self, sizeof(self));
	if (self[0]) {
		if (claim_injection("NVTX_INJECTION64_PATH", self,
				    "libgprof sees no NVTX step markers or ranges"))
			gprof_session_nvtx_foreign();
		claim_injection("CUDA_INJECTION64_PATH", self,
				"libgprof cannot start CUPTI before the program's first CUDA call");
		if (cfg.torch != GPROF_TORCH_OFF)
			torch_hook_path(self);
	}
	session_pid = getpid();
	__atomic_store_n(&live, true, __ATOMIC_RELEASE);
	pthread_atfork(NULL, NULL, at_fork_child);
	atexit(at_exit);
}

static GPROF_TLS bool in_init; /* this thread runs init_once: its getenv calls pass */
static int init_done;	       /* gprof_preload_init has returned once: getenv only looks up */

static void init_once_marked(void)
{
	in_init = true;
	init_once();
	in_init = false;
}

/*
 * Loads the configuration and starts the session, once per process: from the constructor or
 * from an injection entry point called before it; a second caller waits for the first.
 */
static void gprof_preload_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, init_once_marked);
	__atomic_store_n(&init_done, 1, __ATOMIC_RELEASE);
}

extern char **environ;

/*
 * getenv, interposed for the injection variables: a thread that another library's constructor
 * starts can make its first NVTX or CUDA call before libgprof's constructor has run (ours runs
 * after those of the libraries the program links), and NVTX's loader and the driver read their
 * variable once, at that call. Reading one of them before then sets the session up first, which
 * points them at libgprof. Everything else is the plain look-up getenv is.
 */
GPROF_EXPORT char *getenv(const char *name);
GPROF_EXPORT char *getenv(const char *name)
{
	size_t len = strlen(name);

	if (unlikely(!__atomic_load_n(&init_done, __ATOMIC_ACQUIRE)) && !in_init &&
	    (!strcmp(name, "NVTX_INJECTION64_PATH") || !strcmp(name, "CUDA_INJECTION64_PATH")))
		gprof_preload_init();
	for (char **e = environ; e && *e; e++)
		if (!strncmp(*e, name, len) && (*e)[len] == '=')
			return *e + len + 1;
	return NULL;
}

/*
 * The constructor; or earlier, the first of NVTX's and CUDA's injection calls, which a thread
 * started by another library's constructor can make before ours has run.
 */
__attribute__((constructor)) static void gprof_init(void)
{
	gprof_preload_init();
}

/*
 * Called by the NVTX loader of every module that embeds NVTX, each with its own tables, so it
 * fills them every time. A thread may get here before libgprof's constructor ran: the
 * configuration (the step marker) is loaded first, once.
 */
GPROF_EXPORT int InitializeInjectionNvtx2(const void *(*get_table)(uint32_t id));
GPROF_EXPORT int InitializeInjectionNvtx2(const void *(*get_table)(uint32_t id))
{
	gprof_preload_init();
	return gprof_nvtx_inject(get_table);
}

/*
 * The driver calls this at cuInit when CUDA_INJECTION64_PATH names us: the process uses CUDA,
 * also when none of its calls passes a hook.
 */
GPROF_EXPORT int InitializeInjection(void);
GPROF_EXPORT int InitializeInjection(void)
{
	gprof_preload_init();
	if (gprof_hot_load() & GPROF_HOT_SESSION)
		gprof_session_cuda_call(false);
	take_signals();
	return 1;
}
