/*
 * libFuzzer target: the step-marker matcher (scheduler/marker.c). The input is the marker, a
 * NUL, then the message. The matcher must agree with scheduler.h's rule, computed here
 * another way: the message is the marker, or the marker then ' ' or '#' then only digits.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/scheduler.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool rule(const char *marker, const char *msg)
{
	size_t m = strlen(marker), n = strlen(msg);

	if (!m || n < m || memcmp(msg, marker, m))
		return false;
	if (n == m)
		return true;
	return n > m + 1 && (msg[m] == ' ' || msg[m] == '#') &&
	       strspn(msg + m + 1, "0123456789") == n - m - 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 2);
	const char *msg;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = text[size + 1] = '\0';
	msg = text + strlen(text) + 1;
	if (msg > text + size)
		msg = text + size; /* no NUL in the input: an empty message */
	if (gprof_sched_marker_match(text, msg) != rule(text, msg) ||
	    gprof_sched_marker_match(NULL, msg) || gprof_sched_marker_match(text, NULL))
		abort();
	free(text);
	return 0;
}
