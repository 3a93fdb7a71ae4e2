/*
 * The session's recording window, on the stepper's transitions (under its lock): opens it in
 * export and the collector, merges a window into the one before or lets it wait for a slot
 * when the writer is behind, and closes it.
 */
#include <errno.h>

#define PR_FMT ""
#include "collector/collector.h"
#include "common/config.h"
#include "common/log.h"
#include "export/export.h"
#include "preload/preload.h"
#include "scheduler/scheduler.h"

/* Written once by gprof_windows_init, before any window. */
static const struct gprof_config *cfg;
static const char *schedule_str;
static struct gprof_stepper *stepper;
static const struct gprof_windows_session *session;

/*
 * The session's window's life (export.h), under the stepper's lock: FREE, OPENING (no slot
 * yet), ACTIVE (the hooks record into cur_window); from its close on it is export's, and
 * here FREE again. merging: the active window goes on into the schedule's next one.
 */
static enum gprof_window_life state;
static bool merging_on;
/* The open window (its span is export's: gprof_export_window_span); the stepper's lock. */
static uint32_t cur_window;
static int windows_due; /* any window began, recorded or not: for the exit's hints */

/*
 * GPROF_EXPORT_WINDOWS windows can be in the writer's hands at once (the collector holds each
 * until its late GPU records are in), and short windows back to back outrun that. The rule:
 * a window of the step schedule whose end leaves no slot for the next one stays open, and
 * the next window merges into it (its file then spans both, with whatever ran between);
 * a window that still cannot open (other triggers) waits, and opens at the end of a later
 * step of its own once a slot is free. Counted, said once when it first happens, and in
 * total at exit. Under the stepper's lock, like the rest of its events.
 */
static struct {
	uint64_t merge_last;   /* the last step of the windows merged so far */
	uint64_t window, last; /* the waiting window's number; its last step, or UINT64_MAX */
	uint64_t merged, busy, late, lost;
} wait_slot;

void gprof_windows_init(const struct gprof_config *config, const char *schedule,
			struct gprof_stepper *st, const struct gprof_windows_session *s)
{
	cfg = config;
	schedule_str = schedule;
	stepper = st;
	session = s;
}

bool gprof_windows_due(void)
{
	return __atomic_load_n(&windows_due, __ATOMIC_RELAXED);
}

/* The open window goes on into the next one (or stops doing so), with the steps between. */
static void merging(bool on)
{
	merging_on = on;
	gprof_stepper_every_step(stepper, on);
}

/* The first time a window cannot have a file of its own: one line on why. */
static void say_busy_once(const struct gprof_sched_event *ev)
{
	if (wait_slot.merged + wait_slot.busy == 1)
		pr_warn("window %llu (to step %llu): the %d windows before it are still being "
			"written (each waits for its GPU records), so the next one %s. Windows "
			"fewer or farther apart avoid it (the schedule's wait or repeat)",
			(unsigned long long)ev->window, (unsigned long long)ev->last_step,
			GPROF_EXPORT_WINDOWS,
			wait_slot.merged ? "merges into its file"
					 : "begins at a later step of its own, once one is done");
}

/* The steps schedule has a window after ev's. */
static bool another_follows(const struct gprof_sched_event *ev)
{
	const struct gprof_schedule *sc = &cfg->schedule;

	return cfg->trigger == GPROF_TRIGGER_STEPS && !sc->all && !cfg->delay.set &&
	       !cfg->duration.set && (sc->repeat == 0 || ev->window + 1 < sc->repeat) &&
	       !session->exiting();
}

static int open_at(const struct gprof_sched_event *ev, uint64_t first_step, uint64_t begin_ns)
{
	struct gprof_export_window_info info = {.number = ev->window,
						.first_step = first_step,
						.schedule = schedule_str,
						.begin_ns = begin_ns};
	struct gprof_memory_base base;
	uint32_t id;
	int err = gprof_export_window_open(&info, &id);

	if (err)
		return err;
	session->memory_at_open(id, begin_ns, &base);
	gprof_collector_window_begin(id, &base);
	cur_window = id;
	state = GPROF_WINDOW_ACTIVE;
	if (!session->exiting())
		gprof_hot_set_window(id);
	/* Its duration, if it has one, is the timer's next deadline. */
	gprof_trigger_wake();
	return 0;
}

void gprof_windows_begin(const struct gprof_sched_event *ev)
{
	int err;

	__atomic_store_n(&windows_due, 1, __ATOMIC_RELAXED);
	if (merging_on) {
		merging(false); /* the open window goes on for this one */
		return;
	}
	/* Any other failure is said by export, with its cause. */
	err = open_at(ev, ev->first_step, ev->begin_ns);

	if (err == -EBUSY) {
		state = GPROF_WINDOW_OPENING;
		wait_slot.window = ev->window;
		wait_slot.last = cfg->trigger == GPROF_TRIGGER_STEPS && !cfg->schedule.all
				     ? ev->first_step + cfg->schedule.active - 1
				     : UINT64_MAX;
		wait_slot.busy++;
		say_busy_once(ev);
	}
}

/* A step ended: the open window's, or one of a window still waiting, which opens if it can. */
void gprof_windows_step(const struct gprof_sched_event *ev)
{
	if (state == GPROF_WINDOW_ACTIVE) {
		gprof_events_step(cur_window, ev);
		return;
	}
	if (state != GPROF_WINDOW_OPENING || ev->window != wait_slot.window ||
	    ev->first_step + 1 > wait_slot.last)
		return;
	if (open_at(ev, ev->first_step + 1, ev->end_ns) == 0)
		wait_slot.late++;
}

void gprof_windows_end(const struct gprof_sched_event *ev)
{
	if (state == GPROF_WINDOW_OPENING && ev->window == wait_slot.window) {
		state = GPROF_WINDOW_FREE;
		wait_slot.lost++;
	}
	if (state != GPROF_WINDOW_ACTIVE)
		return;
	if (ev->kind == GPROF_SCHED_EV_SAVE && another_follows(ev) &&
	    !gprof_export_window_can_open()) {
		merging(true);
		wait_slot.merge_last = ev->last_step;
		wait_slot.merged++;
		say_busy_once(ev);
		return;
	}
	if (merging_on) {
		/* The window that was to merge in never began (exit in its warmup). */
		merging(false);
		gprof_export_window_set_last_step(cur_window, wait_slot.merge_last);
	} else {
		gprof_export_window_set_last_step(cur_window, ev->last_step);
	}
	gprof_export_window_end(cur_window, ev->end_ns);
	gprof_hot_set_window(0);
	state = GPROF_WINDOW_FREE;
	session->closed();
	/* The collector drains the window's late GPU records on its own thread. */
	gprof_collector_window_end(cur_window);
	gprof_export_window_close(cur_window);
}

void gprof_windows_discard(const struct gprof_sched_event *ev)
{
	if (merging_on)
		gprof_windows_end(ev);
}

void gprof_windows_report_exit(void)
{
	if (wait_slot.merged + wait_slot.busy)
		pr_warn("%llu windows could not have a file of their own (the %d before them were "
			"still being written): %llu merged into the one before, %llu began at a "
			"later step of theirs, %llu were not recorded",
			(unsigned long long)(wait_slot.merged + wait_slot.busy),
			GPROF_EXPORT_WINDOWS, (unsigned long long)wait_slot.merged,
			(unsigned long long)wait_slot.late, (unsigned long long)wait_slot.lost);
}

void gprof_windows_forked(void)
{
	state = GPROF_WINDOW_FREE;
	merging_on = false;
}
