/*
 * fork and exec around CUDA work, for the reliability tests: `rel-fork MODE`. A CUDA process
 * runs 6 steps; in each step k it marks NVTX "step" and launches kernel work (_Z4workPf) 10
 * times with grid (k+1, 1, 1), 2 ms apart, then synchronises. MODE:
 *
 *	after   in step 3 (after its launches) the process forks 4 children that do not exec:
 *	        each marks NVTX "step" and pushes and pops a range 3 times, sleeps 20 ms and
 *	        calls exit(0) (children 0 and 1) or returns from main (2 and 3); the parent waits
 *	        for them after its last step
 *	before  the DataLoader pattern: before any CUDA call it forks 4 workers that write 64
 *	        items each into a pipe, with NVTX ranges, and exit(0); worker 0 also runs the 6
 *	        CUDA steps itself. The parent reads every item, then runs the steps
 *	exec    in step 3 the process forks a child that execs `rel-fork child`, which runs the
 *	        6 steps; the parent waits for it after its last step
 *	child   just the 6 steps
 *
 * The first process prints "rel-fork: parent <pid>" first; every process that runs the steps
 * prints "rel-fork: cuda <pid>". A parent exits 0 when every child exited 0, else 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#define APP "rel-fork"
/* A failed call exits 2, as the rel-* apps' other failures do. */
#define CHECK_EXIT 2
#include "check.h"
#include "fatbin.h"

#define CHILDREN 4
#define ITEMS	 64

static volatile int stub_calls;
static pid_t children[CHILDREN];
static int n_children;

static void work_stub(void)
{
	stub_calls++;
}

static void sleep_ms(long ms)
{
	struct timespec t = {.tv_sec = 0, .tv_nsec = ms * 1000000};

	while (nanosleep(&t, &t) != 0)
		;
}

/* A forked child that does no CUDA: NVTX only, then it ends. */
static int idle_child(int i)
{
	for (int k = 0; k < 3; k++) {
		nvtxMarkA("step");
		nvtxRangePushA("child work");
		nvtxRangePop();
	}
	sleep_ms(20);
	if (i < 2)
		exit(0);
	return 0;
}

static void fork_children(const char *self)
{
	for (int i = 0; i < CHILDREN; i++) {
		pid_t pid = fork();

		if (pid == 0 && self) {
			execl(self, self, "child", (char *)NULL);
			_exit(127);
		}
		if (pid == 0)
			exit(idle_child(i));
		children[n_children++] = pid;
		if (self)
			return; /* exec: one child */
	}
}

static void steps(const char *mode, const char *self)
{
	static char fatbin[16];
	void **handle = __cudaRegisterFatBinary(fatbin);
	void *args[] = {NULL};

	__cudaRegisterFunction(handle, (const char *)work_stub, "_Z4workPf", "_Z4workPf", -1, NULL,
			       NULL, NULL, NULL, NULL);
	__cudaRegisterFatBinaryEnd(handle);
	printf("rel-fork: cuda %d\n", (int)getpid());
	fflush(stdout);
	for (int k = 0; k < 6; k++) {
		nvtxMarkA("step");
		for (int i = 0; i < 10; i++, sleep_ms(2))
			CHECK(cudaLaunchKernel((const void *)work_stub,
					       (dim3){(unsigned)k + 1, 1, 1}, (dim3){32, 1, 1},
					       args, 0, NULL));
		CHECK(cudaDeviceSynchronize());
		if (k == 3 && !strcmp(mode, "after"))
			fork_children(NULL);
		if (k == 3 && !strcmp(mode, "exec"))
			fork_children(self);
	}
}

/* The DataLoader pattern: workers forked before CUDA feed the parent through a pipe. */
static void loader(void)
{
	int fds[2], item;

	if (pipe(fds) != 0)
		exit(2);
	for (int i = 0; i < CHILDREN; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			close(fds[0]);
			for (int n = 0; n < ITEMS; n++, item = i * ITEMS + n) {
				nvtxRangePushA("load");
				if (write(fds[1], &item, sizeof(item)) != sizeof(item))
					_exit(2);
				nvtxRangePop();
			}
			if (i == 0)
				steps("child", NULL);
			exit(0);
		}
		children[n_children++] = pid;
	}
	close(fds[1]);
	for (int n = 0; n < CHILDREN * ITEMS; n++)
		if (read(fds[0], &item, sizeof(item)) != sizeof(item))
			exit(2);
	close(fds[0]);
}

int main(int argc, char **argv)
{
	int status, failed = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: rel-fork after|before|exec|child\n");
		return 64;
	}
	if (strcmp(argv[1], "child")) {
		printf("rel-fork: parent %d\n", (int)getpid());
		fflush(stdout);
	}
	if (!strcmp(argv[1], "before"))
		loader();
	steps(argv[1], argv[0]);
	for (int i = 0; i < n_children; i++)
		failed |= waitpid(children[i], &status, 0) != children[i] || !WIFEXITED(status) ||
			  WEXITSTATUS(status) != 0;
	return failed;
}
