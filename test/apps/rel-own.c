/*
 * A program that uses what is its own, for the reliability tests of issue 16:
 * `rel-own [-s steps] [-C fd] [-d dir] [-e] [-f file]`.
 * Each of its steps (default 12) launches kernel work (_Z4workPf) 3 times, synchronises,
 * writes "step N" to stdout and stderr, marks NVTX "step" and sleeps 2 ms.
 *   -C fd    closes fd and runs itself again without -C, so that a preloaded libgprof starts
 *            with it closed (`>&-`); repeatable
 *   -d dir   changes to dir after the first CUDA call
 *   -e       a thread sets and unsets 64 variables in a loop while the steps run (setenv
 *            moves the environment array)
 *   -f file  at step 4 closes every descriptor from 3 up (but the simulated GPU's log), then
 *            opens file (truncating it) and writes a line to it in each later step
 *   -k       at the start of step 8 sends itself SIGTERM
 *   -w text  a thread looks through the program's descriptors while the steps run, and at the
 *            end prints "rel-own: descriptor N is PATH" for each one it saw whose path holds
 *            text (libgprof's files must never be among the program's); repeatable
 * Ends with "rel-own: ok" on stdout and status 0; a failing call prints why and ends 2.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include "fatbin.h"

static volatile int stub_calls;
static int stop;

static void work_stub(void)
{
	stub_calls++;
}

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "rel-own: %s failed\n", what);
		exit(2);
	}
}

static void *churn(void *arg)
{
	char name[32];

	(void)arg;
	for (unsigned i = 0; !__atomic_load_n(&stop, __ATOMIC_ACQUIRE); i++) {
		snprintf(name, sizeof(name), "REL_OWN_%u", i % 64);
		if (i / 64 % 2)
			unsetenv(name);
		else
			setenv(name, "a value long enough to need its own allocation", 1);
	}
	return NULL;
}

static const char *watched[4];
static int n_watched;
static char seen[16][PATH_MAX + 300];
static int n_seen;

static int watched_path(const char *path)
{
	for (int i = 0; i < n_watched; i++)
		if (strstr(path, watched[i]))
			return 1;
	return 0;
}

/* -w: every descriptor of the program's, again and again, until the steps end. */
static void *watch(void *arg)
{
	char link[300], target[PATH_MAX];

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		DIR *d = opendir("/proc/self/fd");
		struct dirent *e;

		check(d != NULL, "opendir");
		while ((e = readdir(d))) {
			ssize_t n;

			snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
			n = readlink(link, target, sizeof(target) - 1);
			if (n < 0)
				continue;
			target[n] = '\0';
			if (!watched_path(target) || n_seen == 16)
				continue;
			snprintf(seen[n_seen], sizeof(seen[n_seen]), "%s is %s", e->d_name, target);
			for (int i = 0; i < n_seen; i++)
				if (!strcmp(seen[i], seen[n_seen]))
					seen[n_seen][0] = '\0';
			n_seen += seen[n_seen][0] != '\0';
		}
		closedir(d);
	}
	return NULL;
}

/* Every descriptor from 3 up, but the one open on the simulated GPU's log. */
static void close_from_3(void)
{
	const char *log = getenv("FAKEGPU_LOG");
	char link[64], target[PATH_MAX];

	for (int fd = 3; fd < 65536; fd++) {
		ssize_t n;

		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		if (!log || strcmp(target, log))
			close(fd);
	}
}

/* -C: closes the descriptors named and runs the program again without those options. */
static void rerun_closed(int argc, char **argv)
{
	char *args[64];
	int n = 0, closed = 0;

	for (int i = 0; i < argc && n < 63; i++) {
		if (!strcmp(argv[i], "-C") && i + 1 < argc) {
			close(atoi(argv[++i]));
			closed = 1;
			continue;
		}
		args[n++] = argv[i];
	}
	args[n] = NULL;
	if (!closed)
		return;
	execv("/proc/self/exe", args);
	_exit(3);
}

int main(int argc, char **argv)
{
	static char fatbin[16];
	const char *dir = NULL, *file = NULL;
	int steps = 12, env = 0, term = 0, opt, out = -1;
	void *args[] = {NULL};
	void **handle;
	pthread_t t, w;

	rerun_closed(argc, argv);
	while ((opt = getopt(argc, argv, "s:d:ef:kw:")) != -1) {
		if (opt == 's')
			steps = atoi(optarg);
		else if (opt == 'd')
			dir = optarg;
		else if (opt == 'e')
			env = 1;
		else if (opt == 'f')
			file = optarg;
		else if (opt == 'k')
			term = 1;
		else if (opt == 'w' && n_watched < 4)
			watched[n_watched++] = optarg;
	}
	handle = __cudaRegisterFatBinary(fatbin);
	__cudaRegisterFunction(handle, (const char *)work_stub, "_Z4workPf", "_Z4workPf", -1, NULL,
			       NULL, NULL, NULL, NULL);
	__cudaRegisterFatBinaryEnd(handle);
	check(cudaDeviceSynchronize() == cudaSuccess, "cudaDeviceSynchronize");
	if (dir)
		check(chdir(dir) == 0, "chdir");
	/* NVTX's own start-up reads the environment: before the thread that changes it. */
	nvtxMarkA("rel-own starts");
	if (env)
		check(pthread_create(&t, NULL, churn, NULL) == 0, "pthread_create");
	if (n_watched)
		check(pthread_create(&w, NULL, watch, NULL) == 0, "pthread_create");
	for (int s = 0; s < steps; s++) {
		if (term && s == 8)
			raise(SIGTERM);
		for (int k = 0; k < 3; k++)
			check(cudaLaunchKernel((const void *)work_stub, (dim3){1, 1, 1},
					       (dim3){s + 1, 1, 1}, args, 0, 0) == cudaSuccess,
			      "cudaLaunchKernel");
		check(cudaDeviceSynchronize() == cudaSuccess, "cudaDeviceSynchronize");
		if (file && s == 4) {
			close_from_3();
			out = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			check(out >= 0, "open");
		}
		if (out >= 0)
			check(dprintf(out, "line of step %d\n", s) > 0, "write");
		printf("step %d\n", s);
		fflush(stdout);
		fprintf(stderr, "step %d\n", s);
		nvtxMarkA("step");
		nanosleep(&(struct timespec){.tv_nsec = 2 * 1000 * 1000}, NULL);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	if (env)
		pthread_join(t, NULL);
	if (n_watched)
		pthread_join(w, NULL);
	for (int i = 0; i < n_seen; i++)
		printf("rel-own: descriptor %s\n", seen[i]);
	if (out >= 0)
		check(close(out) == 0, "close");
	printf("rel-own: ok\n");
	return 0;
}
