/*
 * Step scheduler: torch.profiler.schedule's step -> action function, the stepper that turns
 * step markers and triggers (docs/TRIGGERS.md) into window transitions, and step-marker matching.
 */
#ifndef GPROF_SCHEDULER_H
#define GPROF_SCHEDULER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/config.h"

/* torch.profiler.ProfilerAction, same names and values. */
enum gprof_sched_action {
	GPROF_SCHED_NONE = 0,
	GPROF_SCHED_WARMUP = 1,
	GPROF_SCHED_RECORD = 2,
	GPROF_SCHED_RECORD_AND_SAVE = 3,
};

/* What the profiler is doing; hot paths read it through gprof_stepper_phase(). */
enum gprof_sched_phase {
	GPROF_PHASE_IDLE,   /* start-up: before the first step marker (or, for `all`, the start) */
	GPROF_PHASE_WAIT,   /* skip_first or wait steps: nothing enabled */
	GPROF_PHASE_WARMUP, /* CUPTI enabled, records discarded */
	GPROF_PHASE_ACTIVE, /* records kept for the window */
	GPROF_PHASE_DONE,   /* every cycle ran, or finished: nothing more ever */
};

/*
 * torch.profiler.schedule(): skip skip_first steps, then cycles of wait NONE steps, warmup
 * WARMUP steps and active steps (RECORD, the last one RECORD_AND_SAVE); after repeat cycles
 * (repeat > 0) NONE forever. With sched->all every step is RECORD. active = 0 (rejected by the
 * configuration) gives NONE.
 */
enum gprof_sched_action gprof_sched_action(const struct gprof_schedule *sched, uint64_t step);

/* The phase of a step: NONE splits into WAIT and, after the last cycle, DONE. */
enum gprof_sched_phase gprof_sched_phase(const struct gprof_schedule *sched, uint64_t step);

/*
 * Step-marker matching: msg counts when it is marker itself, or marker followed by one ' ' or
 * '#' and one or more ASCII digits ("step", "step 12", "step#12"). Case matters; nothing else
 * may follow ("step ", "step 12x", "step #12", "steps" don't count). The number is not used:
 * steps are counted. A NULL or empty marker or a NULL msg matches nothing.
 */
bool gprof_sched_marker_match(const char *marker, const char *msg);

/* What the stepper reports; which fields are set depends on the kind. */
enum gprof_sched_event_kind {
	GPROF_SCHED_EV_WARMUP,	/* enable CUPTI: window, first_step, begin_ns */
	GPROF_SCHED_EV_ACTIVE,	/* window starts recording: window, first_step, begin_ns */
	GPROF_SCHED_EV_STEP,	/* a step ended inside the active window: first_step (the step),
				 * begin_ns, end_ns, tid (the thread whose marker began it) */
	GPROF_SCHED_EV_SAVE,	/* window complete, write it: window, first_step, last_step,
				 * n_steps, begin_ns (when it became active), end_ns */
	GPROF_SCHED_EV_DISCARD, /* the window ends unsaved (finish during warmup): fields as
				 * SAVE, begin_ns is when its warmup began */
};

struct gprof_sched_event {
	enum gprof_sched_event_kind kind;
	uint64_t window;     /* windows count from 0 */
	uint64_t first_step; /* steps count from 0 */
	uint64_t last_step;
	uint64_t n_steps; /* SAVE: steps in the window; 0 for `all` without any marker */
	uint64_t begin_ns;
	uint64_t end_ns;
	pid_t tid;
};

/*
 * Called for every event, in order, with the stepper's lock held: it must not call back into
 * the stepper (that deadlocks). ev is valid only during the call.
 */
typedef void (*gprof_sched_cb)(const struct gprof_sched_event *ev, void *ctx);

/*
 * How windows begin and end. SCHEDULE: the schedule over step markers. MANUAL: a window is
 * open while one is wanted (from the start, or by gprof_stepper_request), not before the start
 * plus delay_ns; markers inside make steps (GPROF_SCHEDULE=all is MANUAL, wanted from the
 * start). ARMED: each request arms one cycle of the schedule's warmup and active steps, which
 * begins at the first marker once armed and past the delay. In these two modes a window records
 * at most duration_ns (0: no limit), and then is no longer wanted.
 */
enum gprof_stepper_mode {
	GPROF_STEPPER_SCHEDULE,
	GPROF_STEPPER_MANUAL,
	GPROF_STEPPER_ARMED,
};

struct gprof_stepper_trigger {
	enum gprof_stepper_mode mode;
	bool want;	      /* MANUAL: a window is wanted from the start */
	uint64_t delay_ns;    /* no window begins before the start plus this */
	uint64_t duration_ns; /* longest a window records; 0: no limit */
};

enum gprof_stepper_req {
	GPROF_STEPPER_ON,     /* MANUAL: a window is wanted; ARMED: arm one */
	GPROF_STEPPER_OFF,    /* MANUAL: no window is wanted */
	GPROF_STEPPER_TOGGLE, /* MANUAL: the other of the two; ARMED: as ON */
};

enum gprof_stepper_result {
	GPROF_STEPPER_TAKEN,   /* acted on now, or when the start, delay or next marker comes */
	GPROF_STEPPER_BUSY,    /* ARMED: a window is armed or under way already */
	GPROF_STEPPER_IGNORED, /* SCHEDULE mode, OFF when ARMED, or after finish */
};

/*
 * Consumes step markers. Marker number k (from 0) ends step k-1 and begins step k; the
 * transition from the ending step's action to the beginning step's is reported as torch's
 * profile.step() does it. Each window is reported as WARMUP, ACTIVE, STEP..., then SAVE (or
 * DISCARD), also when a window ends and the next begins at the same marker.
 * Fields are private; read them through the functions below.
 */
struct gprof_stepper {
	pthread_mutex_t lock; /* serialises transitions and callbacks */
	struct gprof_schedule sched;
	gprof_sched_cb cb;
	void *ctx;
	/* Under lock. */
	enum gprof_sched_action action; /* of the time in progress; NONE before marker 0 */
	uint64_t step_begin_ns;		/* when the step in progress began */
	pid_t step_tid;
	uint64_t window;       /* current or next window's number */
	uint64_t window_first; /* first step of the current window */
	uint64_t window_begin_ns;
	uint64_t last_ns; /* latest timestamp seen: time never runs backwards */
	bool started, finished;
	struct gprof_stepper_trigger trig;
	bool want;		     /* MANUAL: a window is wanted */
	bool armed, in_cycle;	     /* ARMED: a cycle waits for its marker / is under way */
	uint64_t armed_from;	     /* ARMED: the first marker number the cycle may begin at */
	struct gprof_schedule cycle; /* ARMED: the schedule's warmup and active, once */
	uint64_t cycle_base;	     /* ARMED: the step the cycle under way began at */
	uint64_t not_before_ns;	     /* the start plus the delay; UINT64_MAX before the start */
	bool every_step; /* STEP for steps outside a window too (gprof_stepper_every_step) */
	/* Written under lock with atomic stores, read anywhere with atomic loads. */
	int phase;	  /* enum gprof_sched_phase */
	uint64_t markers; /* step markers seen */
};

/*
 * From the callback only (the lock is held): STEP events for the steps between windows too,
 * while the caller's file goes on across them (a window that the next one merges into).
 */
void gprof_stepper_every_step(struct gprof_stepper *s, bool on);

/* Returns 0 or a negative errno (the mutex could not be made). */
int gprof_stepper_init(struct gprof_stepper *s, const struct gprof_schedule *sched,
		       gprof_sched_cb cb, void *ctx);
void gprof_stepper_destroy(struct gprof_stepper *s);

/*
 * The stepper's trigger for a configuration's GPROF_TRIGGER (an enum gprof_trigger), `all`,
 * GPROF_DELAY and GPROF_DURATION: the mode of the trigger's row (common/config.h), MANUAL under
 * `all`, and MANUAL wanted from the start for a trigger wanted from the start (steps) with a
 * delay or duration. -EINVAL for a trigger without a row (*t untouched).
 */
int gprof_stepper_trigger_of(int trigger, bool all, struct gprof_seconds delay,
			     struct gprof_seconds duration, struct gprof_stepper_trigger *t);

/* Right after init, before any other call: how windows begin and end (default: SCHEDULE). */
void gprof_stepper_set_trigger(struct gprof_stepper *s, const struct gprof_stepper_trigger *t);

/*
 * The process's first CUDA call: the delay counts from here, and a MANUAL window wanted from
 * the start (`all`) opens when there is no delay. Idempotent.
 */
void gprof_stepper_start(struct gprof_stepper *s, uint64_t ts_ns);

/*
 * A trigger at ts_ns on thread tid. A window that ends between two markers keeps the step in
 * progress (cut at ts_ns) only when tid is the thread that began it: elsewhere that thread
 * may be inside a call that outlasts the cut, and its track must nest.
 */
enum gprof_stepper_result gprof_stepper_request(struct gprof_stepper *s, enum gprof_stepper_req r,
						uint64_t ts_ns, pid_t tid);

/* Time passes (the timer): a delay that ends opens, a duration that ends closes. */
void gprof_stepper_tick(struct gprof_stepper *s, uint64_t ts_ns, pid_t tid);

/* When gprof_stepper_tick next has something to do; UINT64_MAX: not before a request. */
uint64_t gprof_stepper_deadline(struct gprof_stepper *s);

/* ARMED: a window was armed and its marker has not come. */
bool gprof_stepper_armed(struct gprof_stepper *s);

/*
 * ARMED: the armed window begins at marker number `marker` or the first after it (processes of
 * one run agree on it). The number the next marker will have, for proposing one.
 */
void gprof_stepper_arm_from(struct gprof_stepper *s, uint64_t marker);
uint64_t gprof_stepper_next_marker(struct gprof_stepper *s);

/*
 * One step marker at ts_ns on thread tid, from any thread. Markers that arrive while another
 * holds the lock are counted in lock order, and a timestamp older than the latest seen is
 * raised to it, so steps never have a negative length.
 */
void gprof_stepper_mark(struct gprof_stepper *s, uint64_t ts_ns, pid_t tid);

/*
 * Exit: a window in progress is closed as torch's stop() does it: an active one is saved with
 * the steps it has (the step in progress ends at ts_ns), a warming-up one is discarded. Then
 * the phase is DONE; later markers are counted but change nothing.
 */
void gprof_stepper_finish(struct gprof_stepper *s, uint64_t ts_ns);

/*
 * The same, by thread tid (the one that runs the process's exit): the step in progress is kept
 * only when tid began it, as for a trigger, since another thread may be inside a call that
 * outlasts ts_ns on the step's track. tid 0: it is left out (it is no step: markers that end
 * steps, as --torch-steps' after each optimizer step, leave only what followed the last one).
 */
void gprof_stepper_finish_on(struct gprof_stepper *s, uint64_t ts_ns, pid_t tid);

/* Cheap reads for hot paths. */
enum gprof_sched_phase gprof_stepper_phase(const struct gprof_stepper *s);
uint64_t gprof_stepper_markers(const struct gprof_stepper *s);
/*
 * Whether the step the next marker begins records (warmup or active): what a tool that is
 * switched on around windows asks at each step. Under a trigger, whether this one does.
 */
bool gprof_stepper_next_records(const struct gprof_stepper *s);
/*
 * Whether the step the next marker ends is the last of a window of the schedule (its
 * RECORD_AND_SAVE step): such a tool hands over what it kept of the window, even when the next
 * window begins at once.
 */
bool gprof_stepper_next_ends_window(const struct gprof_stepper *s);

#endif
