/*
 * The stepper: counts step markers, compares the action of the step that ends with the action
 * of the step that begins (as torch.profiler.profile.step() does) and reports the transitions;
 * windows may also begin and end on requests and on time (scheduler.h's modes).
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

	if ((!recording(s->action) && !s->every_step) || s->markers == 0)
		return;
	/* A step that began before its window (`all`, triggers) is cut to the window. */
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

/* The current window ends at ts_ns with the steps before step `done` (those it reported). */
static void close_window(struct gprof_stepper *s, enum gprof_sched_event_kind kind, uint64_t ts_ns,
			 uint64_t done)
{
	uint64_t n = done > s->window_first ? done - s->window_first : 0;

	emit(s, (struct gprof_sched_event){
		    .kind = kind,
		    .window = s->window,
		    .first_step = s->window_first,
		    .last_step = n ? done - 1 : s->window_first,
		    .n_steps = n,
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
 * Runs the ops of one transition in order: close (the window's steps end before step `done`),
 * then open. While a window closes the phase reads WAIT, so hot paths stop recording before the
 * window is written; the caller publishes the new phase after the opening callbacks, once the
 * collector is ready.
 */
static void apply(struct gprof_stepper *s, unsigned ops, uint64_t ts_ns, uint64_t first_step,
		  uint64_t done)
{
	if (ops & (OP_SAVE | OP_DISCARD)) {
		set_phase(s, GPROF_PHASE_WAIT);
		close_window(s, ops & OP_SAVE ? GPROF_SCHED_EV_SAVE : GPROF_SCHED_EV_DISCARD, ts_ns,
			     done);
	}
	if (ops & OP_WARMUP)
		open_window(s, GPROF_SCHED_EV_WARMUP, ts_ns, first_step);
	if (ops & OP_ACTIVE)
		open_window(s, GPROF_SCHED_EV_ACTIVE, ts_ns, first_step);
}

static enum gprof_sched_phase phase_of(enum gprof_sched_action action)
{
	static const enum gprof_sched_phase phases[] = {
	    [GPROF_SCHED_NONE] = GPROF_PHASE_WAIT,
	    [GPROF_SCHED_WARMUP] = GPROF_PHASE_WARMUP,
	    [GPROF_SCHED_RECORD] = GPROF_PHASE_ACTIVE,
	    [GPROF_SCHED_RECORD_AND_SAVE] = GPROF_PHASE_ACTIVE,
	};

	return phases[action];
}

/*
 * The window in progress ends at ts_ns between two markers. whole: the step in progress ends
 * there too (a marker, or its own thread); otherwise it is left out of the window.
 */
static void close_now(struct gprof_stepper *s, uint64_t ts_ns, bool whole)
{
	uint64_t done = s->markers;

	if (whole)
		end_step(s, ts_ns);
	else if (done)
		done--;
	apply(s, exit_ops[s->action], ts_ns, 0, done);
	s->action = GPROF_SCHED_NONE;
	s->in_cycle = false;
	set_phase(s, GPROF_PHASE_WAIT);
}

/* A window that has recorded for the duration ends, and is no longer wanted. */
static void expire(struct gprof_stepper *s, uint64_t ts_ns, bool whole)
{
	uint64_t d = s->trig.duration_ns;

	if (!d || s->trig.mode == GPROF_STEPPER_SCHEDULE || !recording(s->action) ||
	    ts_ns - s->window_begin_ns < d)
		return;
	close_now(s, ts_ns, whole);
	s->want = false;
}

/* MANUAL: a wanted window opens once the delay is over, from the step in progress. */
static void open_wanted(struct gprof_stepper *s, uint64_t ts_ns)
{
	uint64_t first = s->markers ? s->markers - 1 : 0;

	if (s->trig.mode != GPROF_STEPPER_MANUAL || s->finished || !s->want ||
	    s->action != GPROF_SCHED_NONE || ts_ns < s->not_before_ns)
		return;
	apply(s, transitions[GPROF_SCHED_NONE][GPROF_SCHED_RECORD], ts_ns, first, s->markers);
	s->action = GPROF_SCHED_RECORD;
	set_phase(s, GPROF_PHASE_ACTIVE);
}

/* Requests and time between markers; tid is the thread that acts. */
static void evaluate(struct gprof_stepper *s, uint64_t ts_ns, pid_t tid)
{
	bool whole = s->markers && tid == s->step_tid;

	expire(s, ts_ns, whole);
	if (s->trig.mode == GPROF_STEPPER_MANUAL && !s->want && s->action != GPROF_SCHED_NONE)
		close_now(s, ts_ns, whole);
	open_wanted(s, ts_ns);
}

/* ARMED: the action of `step`, beginning the armed cycle at its marker. */
static enum gprof_sched_action armed_action(struct gprof_stepper *s, uint64_t step, uint64_t ts_ns)
{
	enum gprof_sched_action a;

	if (s->armed && !s->in_cycle && ts_ns >= s->not_before_ns && step >= s->armed_from) {
		s->armed = false;
		s->in_cycle = true;
		s->cycle_base = step;
	}
	if (!s->in_cycle)
		return GPROF_SCHED_NONE;
	a = gprof_sched_action(&s->cycle, step - s->cycle_base);
	s->in_cycle = a != GPROF_SCHED_NONE;
	return a;
}

/* The action of the step that marker number `step` begins. */
static enum gprof_sched_action next_action(struct gprof_stepper *s, uint64_t step, uint64_t ts_ns)
{
	switch (s->trig.mode) {
	case GPROF_STEPPER_SCHEDULE:
		return gprof_sched_action(&s->sched, step);
	case GPROF_STEPPER_ARMED:
		return armed_action(s, step, ts_ns);
	case GPROF_STEPPER_MANUAL:
		break;
	}
	return s->action;
}

/* Marker number s->markers at ts_ns: the step in progress ends, the next begins. */
static void step_marker(struct gprof_stepper *s, uint64_t ts_ns, pid_t tid)
{
	uint64_t step = s->markers;
	enum gprof_sched_action next = next_action(s, step, ts_ns);

	end_step(s, ts_ns);
	apply(s, transitions[s->action][next], ts_ns, step, step);
	s->action = next;
	s->step_begin_ns = ts_ns;
	s->step_tid = tid;
	if (s->trig.mode == GPROF_STEPPER_SCHEDULE)
		set_phase(s, gprof_sched_phase(&s->sched, step));
	else if (s->trig.mode == GPROF_STEPPER_ARMED)
		set_phase(s, phase_of(next));
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
	s->not_before_ns = UINT64_MAX;
	gprof_stepper_set_trigger(
	    s, &(struct gprof_stepper_trigger){
		   .mode = sched->all ? GPROF_STEPPER_MANUAL : GPROF_STEPPER_SCHEDULE,
		   .want = sched->all,
	       });
	set_phase(s, GPROF_PHASE_IDLE);
	return 0;
}

void gprof_stepper_set_trigger(struct gprof_stepper *s, const struct gprof_stepper_trigger *t)
{
	s->trig = *t;
	s->want = t->want;
	s->cycle = (struct gprof_schedule){
	    .warmup = s->sched.warmup, .active = s->sched.active, .repeat = 1};
}

int gprof_stepper_trigger_of(int trigger, bool all, struct gprof_seconds delay,
			     struct gprof_seconds duration, struct gprof_stepper_trigger *t)
{
	static const struct {
		enum gprof_stepper_mode mode;
		bool from_start;
	} rows[GPROF_TRIGGER_COUNT] = {
#define X(name, word, help, mode, start, steps, source, hint) \
	[GPROF_TRIGGER_##name] = {GPROF_STEPPER_##mode, start},
	    GPROF_TRIGGER_TABLE(X)
#undef X
	};

	if (trigger < 0 || trigger >= GPROF_TRIGGER_COUNT)
		return -EINVAL;
	*t = (struct gprof_stepper_trigger){
	    .mode = rows[trigger].mode,
	    /* `all` and the time window of such a trigger are wanted from the start */
	    .want = rows[trigger].from_start,
	    .delay_ns = delay.ns,
	    .duration_ns = duration.set ? duration.ns : 0,
	};
	if (all || (rows[trigger].from_start && (delay.set || duration.set)))
		t->mode = GPROF_STEPPER_MANUAL;
	return 0;
}

void gprof_stepper_every_step(struct gprof_stepper *s, bool on)
{
	s->every_step = on;
}

void gprof_stepper_destroy(struct gprof_stepper *s)
{
	pthread_mutex_destroy(&s->lock);
}

void gprof_stepper_start(struct gprof_stepper *s, uint64_t ts_ns)
{
	pthread_mutex_lock(&s->lock);
	ts_ns = clamp(s, ts_ns);
	if (!s->started && !s->finished) {
		s->not_before_ns = ts_ns + s->trig.delay_ns;
		open_wanted(s, ts_ns);
	}
	s->started = true;
	pthread_mutex_unlock(&s->lock);
}

void gprof_stepper_mark(struct gprof_stepper *s, uint64_t ts_ns, pid_t tid)
{
	pthread_mutex_lock(&s->lock);
	ts_ns = clamp(s, ts_ns);
	if (!s->finished) {
		/* A duration that ended before this marker: the step ending here is whole. */
		expire(s, ts_ns, true);
		step_marker(s, ts_ns, tid);
	}
	__atomic_store_n(&s->markers, s->markers + 1, __ATOMIC_RELEASE);
	/* A window wanted meanwhile (the timer is late) opens with the step begun here. */
	open_wanted(s, ts_ns);
	pthread_mutex_unlock(&s->lock);
}

enum gprof_stepper_result gprof_stepper_request(struct gprof_stepper *s, enum gprof_stepper_req r,
						uint64_t ts_ns, pid_t tid)
{
	enum gprof_stepper_result res = GPROF_STEPPER_TAKEN;

	pthread_mutex_lock(&s->lock);
	ts_ns = clamp(s, ts_ns);
	if (s->finished || s->trig.mode == GPROF_STEPPER_SCHEDULE) {
		res = GPROF_STEPPER_IGNORED;
	} else if (s->trig.mode == GPROF_STEPPER_ARMED) {
		if (r == GPROF_STEPPER_OFF)
			res = GPROF_STEPPER_IGNORED;
		else if (s->armed || s->in_cycle)
			res = GPROF_STEPPER_BUSY;
		else
			s->armed = true, s->armed_from = 0;
	} else {
		s->want = r == GPROF_STEPPER_TOGGLE ? !s->want : r == GPROF_STEPPER_ON;
		evaluate(s, ts_ns, tid);
	}
	pthread_mutex_unlock(&s->lock);
	return res;
}

void gprof_stepper_tick(struct gprof_stepper *s, uint64_t ts_ns, pid_t tid)
{
	pthread_mutex_lock(&s->lock);
	ts_ns = clamp(s, ts_ns);
	if (s->started && !s->finished)
		evaluate(s, ts_ns, tid);
	pthread_mutex_unlock(&s->lock);
}

uint64_t gprof_stepper_deadline(struct gprof_stepper *s)
{
	uint64_t d = UINT64_MAX;

	pthread_mutex_lock(&s->lock);
	if (!s->started || s->finished)
		d = UINT64_MAX;
	else if (s->trig.duration_ns && s->trig.mode != GPROF_STEPPER_SCHEDULE &&
		 recording(s->action))
		d = s->window_begin_ns + s->trig.duration_ns;
	else if (s->trig.mode == GPROF_STEPPER_MANUAL && s->want && s->action == GPROF_SCHED_NONE)
		d = s->not_before_ns;
	pthread_mutex_unlock(&s->lock);
	return d;
}

void gprof_stepper_arm_from(struct gprof_stepper *s, uint64_t marker)
{
	pthread_mutex_lock(&s->lock);
	if (s->armed)
		s->armed_from = marker;
	pthread_mutex_unlock(&s->lock);
}

uint64_t gprof_stepper_next_marker(struct gprof_stepper *s)
{
	return __atomic_load_n(&s->markers, __ATOMIC_ACQUIRE);
}

bool gprof_stepper_armed(struct gprof_stepper *s)
{
	bool armed;

	pthread_mutex_lock(&s->lock);
	armed = s->armed;
	pthread_mutex_unlock(&s->lock);
	return armed;
}

static void finish(struct gprof_stepper *s, uint64_t ts_ns, const pid_t *tid)
{
	pthread_mutex_lock(&s->lock);
	ts_ns = clamp(s, ts_ns);
	if (!s->finished) {
		close_now(s, ts_ns, s->markers && (!tid || *tid == s->step_tid));
		s->finished = true;
	}
	set_phase(s, GPROF_PHASE_DONE);
	pthread_mutex_unlock(&s->lock);
}

void gprof_stepper_finish(struct gprof_stepper *s, uint64_t ts_ns)
{
	finish(s, ts_ns, NULL);
}

void gprof_stepper_finish_on(struct gprof_stepper *s, uint64_t ts_ns, pid_t tid)
{
	finish(s, ts_ns, &tid);
}

enum gprof_sched_phase gprof_stepper_phase(const struct gprof_stepper *s)
{
	return (enum gprof_sched_phase)__atomic_load_n(&s->phase, __ATOMIC_ACQUIRE);
}

uint64_t gprof_stepper_markers(const struct gprof_stepper *s)
{
	return __atomic_load_n(&s->markers, __ATOMIC_ACQUIRE);
}

bool gprof_stepper_next_ends_window(const struct gprof_stepper *s)
{
	uint64_t m = gprof_stepper_markers(s);

	return s->trig.mode == GPROF_STEPPER_SCHEDULE && m > 0 &&
	       gprof_sched_action(&s->sched, m - 1) == GPROF_SCHED_RECORD_AND_SAVE;
}

bool gprof_stepper_next_records(const struct gprof_stepper *s)
{
	enum gprof_sched_phase p = gprof_stepper_phase(s);

	if (p != GPROF_PHASE_DONE && s->trig.mode == GPROF_STEPPER_SCHEDULE)
		p = gprof_sched_phase(&s->sched, gprof_stepper_markers(s));
	return p == GPROF_PHASE_WARMUP || p == GPROF_PHASE_ACTIVE;
}
