/* The comparison of the scheduler's events with a test's expected ones (sched-events.h). */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

#include "test/util/sched-events.h"

static bool same_event(const struct gprof_sched_event *a, const struct gprof_sched_event *b)
{
	return a->kind == b->kind && a->window == b->window && a->first_step == b->first_step &&
	       a->last_step == b->last_step && a->n_steps == b->n_steps &&
	       a->begin_ns == b->begin_ns && a->end_ns == b->end_ns && a->tid == b->tid;
}

static void print_event(const char *label, size_t i, const struct gprof_sched_event *e)
{
	fprintf(stderr,
		"  %s[%zu]: kind %d window %" PRIu64 " steps %" PRIu64 "-%" PRIu64 " n %" PRIu64
		" ns %" PRIu64 "-%" PRIu64 " tid %d\n",
		label, i, e->kind, e->window, e->first_step, e->last_step, e->n_steps, e->begin_ns,
		e->end_ns, (int)e->tid);
}

int sched_events_differ(const char *what, const struct gprof_sched_event *want, size_t n_want,
			const struct gprof_sched_event *got, size_t n_got, size_t kept)
{
	size_t i = 0;

	while (i < n_want && i < n_got && i < kept && same_event(&want[i], &got[i]))
		i++;
	if (i == n_want && i == n_got)
		return 0;
	fprintf(stderr, "%s: events differ from #%zu (%zu expected, %zu got)\n", what, i, n_want,
		n_got);
	for (size_t j = 0; j < n_want; j++)
		print_event("want", j, &want[j]);
	for (size_t j = 0; j < n_got && j < kept && j < 64; j++)
		print_event("got ", j, &got[j]);
	return 1;
}
