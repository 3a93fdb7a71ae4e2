/*
 * The library's constructor and exit path. The constructor only reads the configuration and
 * sets environment variables: no CUDA call (DataLoader workers fork after it, and CUDA must not
 * be initialised before fork).
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PR_FMT ""
#include "common/log.h"
#include "preload/preload.h"
#include "preload/session.h"

int gprof_hot;

static GPROF_TLS int cached_tid;

int gprof_tid(void)
{
	if (unlikely(!cached_tid))
		cached_tid = (int)syscall(SYS_gettid);
	return cached_tid;
}

uint64_t gprof_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Points `var` at this library unless the user set it; says once what a foreign value costs. */
static void claim_injection(const char *var, const char *self, const char *loses)
{
	const char *cur = getenv(var);

	if (!cur || !*cur) {
		setenv(var, self, 1);
		return;
	}
	if (strcmp(cur, self) != 0)
		pr_warn("%s is already set to '%s': %s; unset it to let libgprof see them", var,
			cur, loses);
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

static void at_exit(void)
{
	gprof_session_fini();
}

static void at_fork_child(void)
{
	cached_tid = 0;
	gprof_session_forked();
}

__attribute__((constructor)) static void gprof_init(void)
{
	char self[PATH_MAX];

	if (gprof_session_init() != 0)
		return;
	self_path(self, sizeof(self));
	if (self[0]) {
		claim_injection("NVTX_INJECTION64_PATH", self, "NVTX step markers and ranges");
		claim_injection("CUDA_INJECTION64_PATH", self, "early CUPTI initialisation");
	}
	pthread_atfork(NULL, NULL, at_fork_child);
	atexit(at_exit);
}

/*
 * The driver calls this at cuInit when CUDA_INJECTION64_PATH names us: the process uses CUDA,
 * also when none of its calls passes a hook.
 */
GPROF_EXPORT int InitializeInjection(void);
GPROF_EXPORT int InitializeInjection(void)
{
	if (gprof_hot_load() & GPROF_HOT_FIRST_CALL)
		gprof_session_first_cuda_call();
	return 1;
}
