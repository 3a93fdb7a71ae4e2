/*
 * The ways a CUDA program ends, for the reliability tests: `rel-exit [-w] MODE`. Each step k
 * (from 0) the main thread marks NVTX "step", launches kernel work (_Z4workPf) 30 times with
 * grid (k+1, 1, 1) and block (32, 1, 1), 2 ms apart, and synchronises. MODE says how it ends:
 *
 *	return       after 6 steps main returns 0
 *	exit         after 6 steps exit(7), from a function called by main
 *	thread       in step 3, after 10 launches, a second thread calls exit(5); main goes on
 *	             launching meanwhile
 *	sigint       the program handles SIGINT itself; in step 3, after 10 launches, it sends
 *	             itself SIGINT, finishes the step, prints "rel-exit: got SIGINT", returns 0
 *	sigterm      in step 3, after 10 launches, it sends itself SIGTERM (no handler of its own);
 *	             alive 20 s later, it exits 99
 *	sigint-dfl   the same with SIGINT
 *	sigkill      in step 6, after 15 launches, it sends itself SIGKILL
 *	_exit        in step 6, after 15 launches, _exit(3)
 *	exec         in step 3, after 10 launches, it execs itself (execl) in mode return
 *	exec-fail    the same with a path that is not there: it prints "rel-exit: exec: <why>",
 *	             goes on and after 6 steps returns 0
 *	plant        a hostile program: once a *.partial file is in $GPROF_OUTPUT, it puts a
 *	             symbolic link to $REL_VICTIM where that file's final name would go, then
 *	             runs 2 steps and returns 0
 *
 * With -w it runs itself with MODE as a child (fork and exec), waits, prints "rel-exit: child
 * exited N" or "rel-exit: child killed by signal N" and exits 0: a test sees how it ended.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#define APP "rel-exit"
/* A failed call exits 2, as the rel-* apps' other failures do. */
#define CHECK_EXIT 2
#include "check.h"
#include "fatbin.h"

#define LAUNCHES 30

static volatile int stub_calls;
static volatile sig_atomic_t got_sigint;
static int exit_step; /* the thread mode: set by main when the second thread is to exit */

static void work_stub(void)
{
	stub_calls++;
}

static void sleep_ms(long ms)
{
	struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000};

	while (nanosleep(&t, &t) != 0)
		;
}

/* What a mode does after launch i of step k, before the launch. */
static void event(const char *mode, int k, int i)
{
	if (k == 3 && i == 10 && !strcmp(mode, "thread"))
		__atomic_store_n(&exit_step, 1, __ATOMIC_RELEASE);
	if (k == 3 && i == 10 && !strcmp(mode, "sigint"))
		kill(getpid(), SIGINT);
	if (k == 3 && i == 10 && (!strcmp(mode, "sigterm") || !strcmp(mode, "sigint-dfl"))) {
		kill(getpid(), strcmp(mode, "sigterm") ? SIGINT : SIGTERM);
		sleep_ms(20000); /* libgprof finishes the window first: time for a loaded machine */
		exit(99);
	}
	if (k == 3 && i == 10 && !strcmp(mode, "exec")) {
		execl("/proc/self/exe", "rel-exit", "return", (char *)NULL);
		perror("rel-exit: execl");
		exit(2);
	}
	if (k == 3 && i == 10 && !strcmp(mode, "exec-fail")) {
		execl("/nonexistent/rel-exit", "rel-exit", "return", (char *)NULL);
		printf("rel-exit: exec: %s\n", strerror(errno));
	}
	if (k == 6 && i == 15 && !strcmp(mode, "sigkill"))
		kill(getpid(), SIGKILL);
	if (k == 6 && i == 15 && !strcmp(mode, "_exit"))
		_exit(3);
}

static void step(const char *mode, int k)
{
	void *args[] = {NULL};

	nvtxMarkA("step");
	for (int i = 0; i < LAUNCHES; i++) {
		event(mode, k, i);
		CHECK(cudaLaunchKernel((const void *)work_stub, (dim3){(unsigned)k + 1, 1, 1},
				       (dim3){32, 1, 1}, args, 0, NULL));
		sleep_ms(2);
	}
	CHECK(cudaDeviceSynchronize());
}

static void *exiter(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&exit_step, __ATOMIC_ACQUIRE))
		sleep_ms(1);
	exit(5);
}

static void on_sigint(int sig)
{
	(void)sig;
	got_sigint = 1;
}

static void finish_with_exit(void)
{
	exit(7);
}

/* plant: the link goes where the window's file will be renamed to. */
static void plant(void)
{
	const char *dir = getenv("GPROF_OUTPUT"), *victim = getenv("REL_VICTIM");
	char link_path[4096];
	struct dirent *de;

	for (int tries = 0; dir && victim && tries < 5000; tries++, sleep_ms(1)) {
		DIR *d = opendir(dir);

		while (d && (de = readdir(d))) {
			size_t n = strlen(de->d_name);

			if (n <= 8 || strcmp(de->d_name + n - 8, ".partial"))
				continue;
			snprintf(link_path, sizeof(link_path), "%s/%.*s", dir, (int)n - 8,
				 de->d_name);
			closedir(d);
			if (symlink(victim, link_path) != 0)
				perror("rel-exit: symlink");
			return;
		}
		if (d)
			closedir(d);
	}
	fprintf(stderr, "rel-exit: no .partial file appeared\n");
	exit(2);
}

static int run(const char *mode)
{
	struct sigaction sa = {.sa_handler = on_sigint};
	static char fatbin[16];
	void **handle = __cudaRegisterFatBinary(fatbin);
	pthread_t t;
	int steps = strcmp(mode, "plant") ? 6 : 2;

	__cudaRegisterFunction(handle, (const char *)work_stub, "_Z4workPf", "_Z4workPf", -1, NULL,
			       NULL, NULL, NULL, NULL);
	__cudaRegisterFatBinaryEnd(handle);
	if (!strcmp(mode, "sigint"))
		sigaction(SIGINT, &sa, NULL);
	/*
	 * At their default whatever this process inherited: a shell's background job (make test &)
	 * starts with SIGINT ignored, and then the signal did nothing, with or without libgprof.
	 */
	if (!strcmp(mode, "sigint-dfl"))
		signal(SIGINT, SIG_DFL);
	if (!strcmp(mode, "sigterm"))
		signal(SIGTERM, SIG_DFL);
	if (!strcmp(mode, "thread"))
		pthread_create(&t, NULL, exiter, NULL);
	if (!strcmp(mode, "thread") || !strcmp(mode, "sigterm") || !strcmp(mode, "sigint-dfl") ||
	    !strcmp(mode, "sigkill") || !strcmp(mode, "_exit") || !strcmp(mode, "exec"))
		steps = 1000; /* until the mode ends the program */
	for (int k = 0; k < steps && !got_sigint; k++) {
		step(mode, k);
		if (k == 0 && !strcmp(mode, "plant"))
			plant();
	}
	if (got_sigint)
		printf("rel-exit: got SIGINT\n");
	if (!strcmp(mode, "exit"))
		finish_with_exit();
	return 0;
}

/* -w: the mode in a child process, and how it ended. */
static int wrap(char **argv, const char *mode)
{
	char *child_argv[] = {argv[0], (char *)mode, NULL};
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		execv(argv[0], child_argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 2;
	if (WIFSIGNALED(status))
		printf("rel-exit: child killed by signal %d\n", WTERMSIG(status));
	else
		printf("rel-exit: child exited %d\n", WEXITSTATUS(status));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "-w"))
		return wrap(argv, argv[2]);
	if (argc != 2) {
		fprintf(stderr, "usage: rel-exit [-w] MODE\n");
		return 64;
	}
	return run(argv[1]);
}
