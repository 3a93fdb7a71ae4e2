/*
 * The processes of one gprof-run (GPROF_RUN_DIR, a folder gprof-run makes for
 * --trigger signal): each process that uses CUDA puts a file named by its pid there, so that
 * gprof-run sends its SIGUSR2 to every one of them, whatever launched them (torchrun, mpirun, a
 * script); and for the n-th SIGUSR2 the first of them to act writes the step its window begins
 * at, so that every process records the same steps. docs/TRIGGERS.md says how.
 *
 * No descriptor is opened for them (one taken on the program's thread could get a number the
 * program closed, 0-2 among them): the pid's file is made by mknod(), the step is the target
 * of a symbolic link, which comes into being whole.
 */
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PR_FMT "GPROF_RUN_DIR: "
#include "common/log.h"
#include "preload/preload.h"

/* GPROF_RUN_DIR, copied by gprof_run_setup (the constructor); read afterwards. */
static bool given;
static char *dir; /* NULL: unset or empty (or no memory to copy it) */

void gprof_run_setup(void)
{
	const char *value = getenv("GPROF_RUN_DIR");

	given = value != NULL;
	dir = value && *value ? strdup(value) : NULL;
}

bool gprof_run_given(void)
{
	return given;
}

void gprof_run_register(void)
{
	char path[PATH_MAX];

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/pid.%ld", dir, (long)getpid());
	if (mknod(path, S_IFREG | 0600, 0) != 0 && errno != EEXIST)
		pr_warn("cannot join the run in '%s' (%s): a SIGUSR2 to gprof-run will not reach "
			"this process; send it to pid %ld",
			dir, strerror(errno), (long)getpid());
}

uint64_t gprof_run_agree(unsigned signal_number, uint64_t proposed)
{
	char path[PATH_MAX], text[32];
	ssize_t n;

	if (!dir)
		return proposed;
	snprintf(path, sizeof(path), "%s/window.%u", dir, signal_number);
	snprintf(text, sizeof(text), "%" PRIu64, proposed);
	if (symlink(text, path) == 0)
		return proposed;
	n = errno == EEXIST ? readlink(path, text, sizeof(text) - 1) : -1;
	if (n <= 0) {
		pr_warn("no step agreed in '%s': this process's window begins at its own next step",
			path);
		return proposed;
	}
	text[n] = '\0';
	return strtoull(text, NULL, 10);
}
