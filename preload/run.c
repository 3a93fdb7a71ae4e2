/*
 * The processes of one gprof-run (GPROF_RUN_DIR, a folder gprof-run makes for
 * --trigger signal): each process that uses CUDA puts a file named by its pid there, so that
 * gprof-run sends its SIGUSR2 to every one of them, whatever launched them (torchrun, mpirun, a
 * script); and for the n-th SIGUSR2 the first of them to act writes the step its window begins
 * at, so that every process records the same steps. docs/TRIGGERS.md says how.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PR_FMT "GPROF_RUN_DIR: "
#include "common/log.h"
#include "preload/preload.h"

/* How long a process waits for the first one's step to be written after its file appears. */
#define AGREE_WAIT_MS 100

static const char *run_dir(void)
{
	const char *dir = getenv("GPROF_RUN_DIR");

	return dir && *dir ? dir : NULL;
}

void gprof_run_register(void)
{
	const char *dir = run_dir();
	char path[4096];
	int fd;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/pid.%ld", dir, (long)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		pr_warn("cannot join the run in '%s' (%s): a SIGUSR2 to gprof-run will not reach "
			"this process; send it to pid %ld",
			dir, strerror(errno), (long)getpid());
		return;
	}
	close(fd);
}

/* The step written in path, or -1 while it is empty (its writer is between open and write). */
static int64_t read_step(const char *path)
{
	char buf[32] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	return n > 0 ? strtoll(buf, NULL, 10) : -1;
}

uint64_t gprof_run_agree(unsigned signal_number, uint64_t proposed)
{
	const struct timespec pause = {.tv_nsec = 1000000};
	const char *dir = run_dir();
	char path[4096], text[32];
	int64_t step = -1;
	bool taken;
	int fd, len;

	if (!dir)
		return proposed;
	snprintf(path, sizeof(path), "%s/window.%u", dir, signal_number);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd >= 0) {
		len = snprintf(text, sizeof(text), "%" PRIu64 "\n", proposed);
		if (write(fd, text, (size_t)len) != len)
			pr_warn(
			    "cannot write '%s': this run's processes may record different steps",
			    path);
		close(fd);
		return proposed;
	}
	taken = errno == EEXIST;
	for (int i = 0; taken && step < 0 && i < AGREE_WAIT_MS; i++) {
		step = read_step(path);
		if (step < 0)
			nanosleep(&pause, NULL);
	}
	if (step < 0) {
		pr_warn("no step agreed in '%s': this process's window begins at its own next step",
			path);
		return proposed;
	}
	return (uint64_t)step;
}
