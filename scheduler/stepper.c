/*
 * The stepper: counts step markers, compares the action of the step that ends with the action
 * of the step that begins (as torch.profiler.profile.step() does) and reports the transitions.
 */
#include <errno.h>
#include <string.h>

#include "scheduler/scheduler.h"

enum op {
	OP_SAVE = 1 << 0,    /* the window ends and is written */
	OP_DISCARD = 1 << 1, /* the window ends unsaved */
	OP_WARMUP = 1 << 2,  /* a window begins warming up */
	OP_ACTIVE = 1 << 3,  /* the window begins recording */
};

#define OPEN (OP_WARMUP | OP_ACTIVE)

/*
 * [action of the step that ends][action of the step that begins], after torch's action_map.
 * Torch discards a recording that is not followed by RECORD_AND_SAVE ("Incorrect schedule");
 * gprof_sched_action() never produces those pairs, the table keeps torch's answer anyway.
 * A saved window followed by WARMUP or RECORD opens the next window at the same marker.
 */
static const unsigned char transitions[4][4] = {
    [GPROF_SCHED_NONE] =
	{
	    [GPROF_SCHED_WARMUP] = OP_WARMUP,
	    [GPROF_SCHED_RECORD] = OPEN,
	    [GPROF_SCHED_RECORD_AND_SAVE] = OPEN,
	},
    [GPROF_SCHED_WARMUP] =
	{
	    [GPROF_SCHED_NONE] = OP_DISCARD,
	    [GPROF_SCHED_RECORD] = OP_ACTIVE,
	    [GPROF_SCHED_RECORD_AND_SAVE] = OP_ACTIVE,
	},
    [GPROF_SCHED_RECORD] =
	{
	    [GPROF_SCHED_NONE] = OP_DISCARD,
	    [GPROF_SCHED_WARMUP] = OP_DISCARD | OP_WARMUP,
	},
    [GPROF_SCHED_RECORD_AND_SAVE] =
	{
	    [GPROF_SCHED_NONE] = OP_SAVE,
	    [GPROF_SCHED_WARMUP] = OP_SAVE | OP_WARMUP,
	    [GPROF_SCHED_RECORD] = OP_SAVE | OPEN,
	    [GPROF_SCHED_RECORD_AND_SAVE] = OP_SAVE | OPEN,
	},
};

/* At exit, torch's stop(): a recording window is saved, a warming-up one is not. */
static const unsigned char exit_ops[4] = {
    [GPROF_SCHED_WARMUP] = OP_DISCARD,
    [GPROF_SCHED_RECORD] = OP_SAVE,
    [GPROF_SCHED_RECORD_AND_SAVE] = OP_SAVE,
};

static bool recording(enum gprof_sched_action action)
{
	return action == GPROF_SCHED_RECORD || action == GPROF_SCHED_RECORD_AND_SAVE;
}

static void set_phase(struct gprof_stepper *s, enum gprof_sched_phase phase)
{
	__atomic_store_n(&s->phase, (int)phase, __ATOMIC_RELEASE);
}

static void emit(struct gprof_stepper *s, struct gprof_sched_event ev)
{
	if (s->cb)
		s->cb(&ev, s->ctx);
}

/* Time never runs backwards: a marker that lost the race for the lock gets the latest time. */
static uint64_t clamp(struct gprof_stepper *s, uint64_t ts_ns)
{
	if (ts_ns < s->last_ns)
		ts_ns = s->last_ns;
	s->last_ns = ts_ns;
	return ts_ns;
}

/* The step in progress (number markers - 1) ends at ts_ns; report it if it was recorded. */
static void end_step(struct gprof_stepper *s, uint64_t ts_ns)
{
	uint64_t begin = s->step_begin_ns;

	if (!recording(s->action) || s->markers == 0)
		return;
	/* For `all`, a step that began before the start is cut to the window. */
	if (begin < s->window_begin_ns)
		begin = s->window_begin_ns;
	emit(s, (struct gprof_sched_event){
		    .kind = GPROF_SCHED_EV_STEP,
		    .window = s->window,
		    .first_step = s->markers - 1,
		    .last_step = s->markers - 1,
		    .begin_ns = begin,
		    .end_ns = ts_ns,
		    .tid = s->step_tid,
		});
}

/* The current window ends at ts_ns; its last step is the one in progress until now. */
static void close_window(struct gprof_stepper *s, enum gprof_sched_event_kind kind, uint64_t ts_ns)
{
	uint64_t last = s->markers ? s->markers - 1 : 0;

	emit(s, (struct gprof_sched_event){
		    .kind = kind,
		    .window = s->window,
		    .first_step = s->window_first,
		    .last_step = last,
		    .n_steps = s->markers ? last - s->window_first + 1 : 0,
		    .begin_ns = s->window_begin_ns,
		    .end_ns = ts_ns,
		});
	s->window++;
}

static void open_window(struct gprof_stepper *s, enum gprof_sched_event_kind kind, uint64_t ts_ns,
			uint64_t first_step)
{
	s->window_first = first_step;
	s->window_begin_ns = ts_ns;
	emit(s, (struct gprof_sched_event){
		    .kind = kind,
		    .window = s->window,
		    .first_step = first_step,
		    .begin_ns = ts_ns,
		});
}

/*
 * Runs the ops of one transition in order: close, then open. While a window closes the phase
 * reads WAIT, so hot paths stop recording before the window is written; the caller publishes
 * the new phase after the opening callbacks, once the collector is ready.
 */
static void apply(struct gprof_stepper *s, unsigned ops, uint64_t ts_ns, uint64_t first_step)
{
	if (ops & (OP_SAVE | OP_DISCARD)) {
		set_phase(s, GPROF_PHASE_WAIT);
		close_window(s, ops & OP_SAVE ? GPROF_SCHED_EV_SAVE : GPROF_SCHED_EV_DISCARD,
			     ts_ns);
	}
	if (ops & OP_WARMUP)
		open_window(s, GPROF_SCHED_EV_WARMUP, ts_ns, first_step);
	if (ops & OP_ACTIVE)
		open_window(s, GPROF_SCHED_EV_ACTIVE, ts_ns, first_step);
}

int gprof_stepper_init(struct gprof_stepper *s, const struct gprof_schedule *sched,
		       gprof_sched_cb cb, void *ctx)
{
	int err;

	memset(s, 0, sizeof(*s));
	err = pthread_mutex_init(&s->lock, NULL);
	if (err)
		return -err;
	s->sched = *sched;
	s->cb = cb;
	s->ctx = ctx;
	s->action = GPROF_SCHED_NONE;
	set_phase(s, GPROF_PHASE_IDLE);
	return 0;
}

void gprof_stepper_destroy(struct gprof_stepper *s)
{
	pthread_mutex_destroy(&s->lock);
}

void gprof_stepper_start(struct gprof_stepper *s, uint64_t ts_ns)
{
	pthread_mutex_lock(&s->lock);
	ts_ns = clamp(s, ts_ns);
	if (!s->started && !s->finished && s->sched.all) {
		/* The window's first step is the one in progress, or step 0 still to come. */
		uint64_t first = s->markers ? s->markers - 1 : 0;

		apply(s, transitions[s->action][GPROF_SCHED_RECORD], ts_ns, first);
		s->action = GPROF_SCHED_RECORD;
		set_phase(s, GPROF_PHASE_ACTIVE);
	}
	s->started = true;
	pthread_mutex_unlock(&s->lock);
}

void gprof_stepper_mark(struct gprof_stepper *s, uint64_t ts_ns, pid_t tid)
{
	pthread_mutex_lock(&s->lock);
	ts_ns = clamp(s, ts_ns);
	if (!s->finished) {
		uint64_t step = s->markers; /* the step this marker begins */
		enum gprof_sched_action next =
		    s->sched.all ? s->action : gprof_sched_action(&s->sched, step);

		end_step(s, ts_ns);
		apply(s, transitions[s->action][next], ts_ns, step);
		s->action = next;
		s->step_begin_ns = ts_ns;
		s->step_tid = tid;
		if (!s->sched.all)
			set_phase(s, gprof_sched_phase(&s->sched, step));
	}
	__atomic_store_n(&s->markers, s->markers + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&s->lock);
}

void gprof_stepper_finish(struct gprof_stepper *s, uint64_t ts_ns)
{
	pthread_mutex_lock(&s->lock);
	ts_ns = clamp(s, ts_ns);
	if (!s->finished) {
		end_step(s, ts_ns);
		apply(s, exit_ops[s->action], ts_ns, 0);
		s->action = GPROF_SCHED_NONE;
		s->finished = true;
	}
	set_phase(s, GPROF_PHASE_DONE);
	pthread_mutex_unlock(&s->lock);
}

enum gprof_sched_phase gprof_stepper_phase(const struct gprof_stepper *s)
{
	return (enum gprof_sched_phase)__atomic_load_n(&s->phase, __ATOMIC_ACQUIRE);
}

uint64_t gprof_stepper_markers(const struct gprof_stepper *s)
{
	return __atomic_load_n(&s->markers, __ATOMIC_ACQUIRE);
}
