/*
 * Step-marker matching: which NVTX messages end one step and begin the next. Called for
 * every NVTX mark and range push, so it only compares bytes.
 */
#include <string.h>

#include "scheduler/scheduler.h"

/* A step number suffix: one ' ' or '#', then nothing but ASCII digits, at least one. */
static bool is_number_suffix(const char *s)
{
	if (*s != ' ' && *s != '#')
		return false;
	if (!*++s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
	}
	return true;
}

bool gprof_sched_marker_match(const char *marker, const char *msg)
{
	size_t len;

	if (!marker || !*marker || !msg)
		return false;
	len = strlen(marker);
	if (strncmp(msg, marker, len) != 0)
		return false;
	return !msg[len] || is_number_suffix(msg + len);
}
