/*
 * The scheduler's events as the scheduler and trigger tests expect them: initialisers for a
 * table of them, and their comparison with what a stepper gave.
 */
#ifndef GPROF_TEST_SCHED_EVENTS_H
#define GPROF_TEST_SCHED_EVENTS_H

#include <stddef.h>

#include "scheduler/scheduler.h"

/* Window w's warmup and active phase, begun by step k; step k on thread t; a window saved or
 * discarded with n steps, first to last. */
/* clang-format off */
#define EW(w, k, ts) \
	{.kind = GPROF_SCHED_EV_WARMUP, .window = (w), .first_step = (k), .begin_ns = (ts)}
#define EA(w, k, ts) \
	{.kind = GPROF_SCHED_EV_ACTIVE, .window = (w), .first_step = (k), .begin_ns = (ts)}
#define ES(w, k, b, e, t) \
	{.kind = GPROF_SCHED_EV_STEP, .window = (w), .first_step = (k), .last_step = (k), \
	 .begin_ns = (b), .end_ns = (e), .tid = (t)}
#define ESAVE(w, first, last, n, b, e) \
	{.kind = GPROF_SCHED_EV_SAVE, .window = (w), .first_step = (first), \
	 .last_step = (last), .n_steps = (n), .begin_ns = (b), .end_ns = (e)}
#define EDISC(w, first, last, n, b, e) \
	{.kind = GPROF_SCHED_EV_DISCARD, .window = (w), .first_step = (first), \
	 .last_step = (last), .n_steps = (n), .begin_ns = (b), .end_ns = (e)}
/* clang-format on */

/* A case's .events and .n_events, from the list of its expected events. */
#define EVENTS(...)                                                           \
	.events = (const struct gprof_sched_event[]){__VA_ARGS__},            \
	.n_events = sizeof((const struct gprof_sched_event[]){__VA_ARGS__}) / \
		    sizeof(struct gprof_sched_event)

/*
 * 0 if the n_got events the stepper gave, of which got[0..kept) were kept, are want[0..n_want);
 * else 1, after printing under `what` where they part and both lists.
 */
int sched_events_differ(const char *what, const struct gprof_sched_event *want, size_t n_want,
			const struct gprof_sched_event *got, size_t n_got, size_t kept);

#endif
