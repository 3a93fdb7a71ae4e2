/*
 * Tests of scheduler/: torch.profiler.schedule's table of actions, the stepper driven by
 * marker sequences (also from 8 threads at once), and step-marker matching.
 */
#include <limits.h>
#include <pthread.h>
#include <sched.h>

#include "scheduler/scheduler.h"
#include "common/compiler.h"
#include "task.h"
#include "util/sched-events.h"
#include "util/threads.h"

/*
 * Expected actions, written by hand from torch.profiler.schedule's documentation: "skip the
 * first skip_first steps, then wait for wait steps, then do the warmup for the next warmup
 * steps, then do the active recording for the next active steps and then repeat the cycle
 * starting with wait steps. The optional number of cycles is specified with the repeat
 * parameter, the zero value means that the cycles will continue until the profiling is
 * finished." The last active step of a cycle is RECORD_AND_SAVE. Phase: NONE is WAIT, or
 * DONE once every cycle has run.
 */
struct action_case {
	uint64_t step;
	enum gprof_sched_action action;
	enum gprof_sched_phase phase;
};

/* clang-format off */
#define N(k) {(k), GPROF_SCHED_NONE, GPROF_PHASE_WAIT}
#define D(k) {(k), GPROF_SCHED_NONE, GPROF_PHASE_DONE}
#define W(k) {(k), GPROF_SCHED_WARMUP, GPROF_PHASE_WARMUP}
#define R(k) {(k), GPROF_SCHED_RECORD, GPROF_PHASE_ACTIVE}
#define S(k) {(k), GPROF_SCHED_RECORD_AND_SAVE, GPROF_PHASE_ACTIVE}
/* clang-format on */

#define CASES(...)                                          \
	.cases = (const struct action_case[]){__VA_ARGS__}, \
	.n = sizeof((const struct action_case[]){__VA_ARGS__}) / sizeof(struct action_case)

struct action_table {
	const char *what;
	struct gprof_schedule sched;
	const struct action_case *cases;
	size_t n;
};

#define M   UINT_MAX
#define M64 UINT64_MAX

static const struct action_table action_tables[] = {
    /* Cycle of 5: step 0 waits, 1 warms up, 2-4 record (4 saves); one cycle, then nothing. */
    {"defaults",
     {.wait = 1, .warmup = 1, .active = 3, .repeat = 1},
     CASES(N(0), W(1), R(2), R(3), S(4), D(5), D(6), D(7), D(100))},
    /* Steps 0-1 skipped; then the cycle of 4 is steps 2 (wait), 3 (warmup), 4-5 (active). */
    {"skip_first=2",
     {.skip_first = 2, .wait = 1, .warmup = 1, .active = 2, .repeat = 1},
     CASES(N(0), N(1), N(2), W(3), R(4), S(5), D(6), D(7))},
    /* Cycles of 4: steps 0-3 and 4-7, each wait, warmup, record, save; from 8 on nothing. */
    {"repeat=2",
     {.wait = 1, .warmup = 1, .active = 2, .repeat = 2},
     CASES(N(0), W(1), R(2), S(3), N(4), W(5), R(6), S(7), D(8), D(9), D(1000))},
    /* The same cycle forever: step k does what step k % 4 does (4001 % 4 = 1, 4003 % 4 = 3). */
    {"repeat=0",
     {.wait = 1, .warmup = 1, .active = 2, .repeat = 0},
     CASES(N(0), W(1), R(2), S(3), N(4), W(5), R(6), S(7), N(8), W(9), R(10), S(11), W(4001),
	   S(4003))},
    /* Cycle of 3 without wait: warmup, record, save; twice. */
    {"wait=0",
     {.wait = 0, .warmup = 1, .active = 2, .repeat = 2},
     CASES(W(0), R(1), S(2), W(3), R(4), S(5), D(6))},
    /* No warmup: two wait steps, then straight to recording. */
    {"warmup=0",
     {.wait = 2, .warmup = 0, .active = 2, .repeat = 1},
     CASES(N(0), N(1), R(2), S(3), D(4))},
    /* One active step is RECORD_AND_SAVE at once (it is the cycle's last). */
    {"active=1",
     {.wait = 1, .warmup = 1, .active = 1, .repeat = 2},
     CASES(N(0), W(1), S(2), N(3), W(4), S(5), D(6))},
    /* A cycle of one active step: every step saves, for ever. */
    {"wait=0,warmup=0,active=1,repeat=0", {.active = 1}, CASES(S(0), S(1), S(2), S(M64))},
    /* UINT64_MAX = 18446744073709551615 ends in 5, so it is a multiple of 5: a cycle's wait. */
    {"defaults with repeat=0, huge steps",
     {.wait = 1, .warmup = 1, .active = 3},
     CASES(W(M64 - 4), R(M64 - 3), R(M64 - 2), S(M64 - 1), N(M64))},
    {"defaults, huge steps",
     {.wait = 1, .warmup = 1, .active = 3, .repeat = 1},
     CASES(D(M64 - 1), D(M64))},
    /* Cycles 0..M-1 run: the last is steps 5(M-1) to 5M-1; 5M starts cycle M, past the end. */
    {"repeat=UINT_MAX",
     {.wait = 1, .warmup = 1, .active = 3, .repeat = M},
     CASES(W(5ull * M - 4), S(5ull * M - 1), D(5ull * M), D(M64))},
    /* After M skipped steps, step M + j waits for j < M, warms up for j < 2M, records */
    /* for j < 3M (j = 3M - 1, the cycle's last, saves); then done. */
    {"huge counts",
     {.skip_first = M, .wait = M, .warmup = M, .active = M, .repeat = 1},
     CASES(N(M - 1ull), N(M), N(2ull * M - 1), W(2ull * M), W(3ull * M - 1), R(3ull * M),
	   R(4ull * M - 2), S(4ull * M - 1), D(4ull * M), D(M64))},
    /* `all`: every step records. */
    {"all", {.all = true}, CASES(R(0), R(7), R(M64))},
};

static int check_action_table(const struct action_table *t)
{
	int bad = 0;

	for (size_t i = 0; i < t->n; i++) {
		const struct action_case *c = &t->cases[i];
		enum gprof_sched_action a = gprof_sched_action(&t->sched, c->step);
		enum gprof_sched_phase p = gprof_sched_phase(&t->sched, c->step);

		if (a == c->action && p == c->phase)
			continue;
		fprintf(stderr, "%s: step %" PRIu64 ": action %d phase %d, expected %d %d\n",
			t->what, c->step, a, p, c->action, c->phase);
		bad++;
	}
	return bad;
}

TEST(sched_action_table)
{
	ASSERT_ROWS(action_tables, check_action_table);
}

/* The stepper. Marker k comes at T(k) from thread 100 + k; finish comes at T(markers). */
#define T(k) (1000ull * ((k) + 1))

/* Step k, begun by the marker of the same number, so on thread 100 + k. */
#define ESK(w, k, b, e) ES(w, k, b, e, 100 + (k))
/* clang-format off */
#define DEFAULTS {.wait = 1, .warmup = 1, .active = 3, .repeat = 1}
/* clang-format on */

struct scenario {
	const char *what;
	struct gprof_schedule sched;
	/* Markers before the start call, which comes at T(start_after) - 500. */
	unsigned start_after;
	unsigned markers;
	unsigned after_finish;	      /* markers after the finish call */
	enum gprof_sched_phase phase; /* after the markers, before finish */
	const struct gprof_sched_event *events;
	size_t n_events;
};

static const struct scenario scenarios[] = {
    /* Step 1 warms up, steps 2-4 record; marker 5 ends step 4, the save step. */
    {
	.what = "defaults over 10 markers",
	.sched = DEFAULTS,
	.markers = 10,
	.phase = GPROF_PHASE_DONE,
	EVENTS(EW(0, 1, T(1)), EA(0, 2, T(2)), ESK(0, 2, T(2), T(3)), ESK(0, 3, T(3), T(4)),
	       ESK(0, 4, T(4), T(5)), ESAVE(0, 2, 4, 3, T(2), T(5))),
    },
    /* Cycles of 4 (wait, warmup, record, save) over steps 0-3 and 4-7. */
    {
	.what = "repeat=2",
	.sched = {.wait = 1, .warmup = 1, .active = 2, .repeat = 2},
	.markers = 12,
	.phase = GPROF_PHASE_DONE,
	EVENTS(EW(0, 1, T(1)), EA(0, 2, T(2)), ESK(0, 2, T(2), T(3)), ESK(0, 3, T(3), T(4)),
	       ESAVE(0, 2, 3, 2, T(2), T(4)), EW(1, 5, T(5)), EA(1, 6, T(6)), ESK(1, 6, T(6), T(7)),
	       ESK(1, 7, T(7), T(8)), ESAVE(1, 6, 7, 2, T(6), T(8))),
    },
    /* Cycles of 4 until exit; 11 markers: the third window is recording step 10 at exit. */
    {
	.what = "repeat=0, finish while recording",
	.sched = {.wait = 1, .warmup = 1, .active = 2},
	.markers = 11,
	.phase = GPROF_PHASE_ACTIVE,
	EVENTS(EW(0, 1, T(1)), EA(0, 2, T(2)), ESK(0, 2, T(2), T(3)), ESK(0, 3, T(3), T(4)),
	       ESAVE(0, 2, 3, 2, T(2), T(4)), EW(1, 5, T(5)), EA(1, 6, T(6)), ESK(1, 6, T(6), T(7)),
	       ESK(1, 7, T(7), T(8)), ESAVE(1, 6, 7, 2, T(6), T(8)), EW(2, 9, T(9)),
	       EA(2, 10, T(10)), ESK(2, 10, T(10), T(11)), ESAVE(2, 10, 10, 1, T(10), T(11))),
    },
    /* Two wait steps, then warmup and active begin together at marker 2. */
    {
	.what = "warmup=0",
	.sched = {.wait = 2, .warmup = 0, .active = 2, .repeat = 1},
	.markers = 6,
	.phase = GPROF_PHASE_DONE,
	EVENTS(EW(0, 2, T(2)), EA(0, 2, T(2)), ESK(0, 2, T(2), T(3)), ESK(0, 3, T(3), T(4)),
	       ESAVE(0, 2, 3, 2, T(2), T(4))),
    },
    /* Every cycle is record, save: each window ends at the marker where the next begins. */
    {
	.what = "wait=0, warmup=0, back to back",
	.sched = {.active = 2, .repeat = 3},
	.markers = 8,
	.phase = GPROF_PHASE_DONE,
	EVENTS(EW(0, 0, T(0)), EA(0, 0, T(0)), ESK(0, 0, T(0), T(1)), ESK(0, 1, T(1), T(2)),
	       ESAVE(0, 0, 1, 2, T(0), T(2)), EW(1, 2, T(2)), EA(1, 2, T(2)), ESK(1, 2, T(2), T(3)),
	       ESK(1, 3, T(3), T(4)), ESAVE(1, 2, 3, 2, T(2), T(4)), EW(2, 4, T(4)), EA(2, 4, T(4)),
	       ESK(2, 4, T(4), T(5)), ESK(2, 5, T(5), T(6)), ESAVE(2, 4, 5, 2, T(4), T(6))),
    },
    /* Every step saves: a window of one step at each marker, twice. */
    {
	.what = "active=1, back to back",
	.sched = {.active = 1, .repeat = 2},
	.markers = 4,
	.phase = GPROF_PHASE_DONE,
	EVENTS(EW(0, 0, T(0)), EA(0, 0, T(0)), ESK(0, 0, T(0), T(1)), ESAVE(0, 0, 0, 1, T(0), T(1)),
	       EW(1, 1, T(1)), EA(1, 1, T(1)), ESK(1, 1, T(1), T(2)),
	       ESAVE(1, 1, 1, 1, T(1), T(2))),
    },
    /* Cycles of 2 (warmup, save): a save and the next warmup at one marker. */
    {
	.what = "wait=0, warmup=1, active=1",
	.sched = {.warmup = 1, .active = 1, .repeat = 2},
	.markers = 5,
	.phase = GPROF_PHASE_DONE,
	EVENTS(EW(0, 0, T(0)), EA(0, 1, T(1)), ESK(0, 1, T(1), T(2)), ESAVE(0, 1, 1, 1, T(1), T(2)),
	       EW(1, 2, T(2)), EA(1, 3, T(3)), ESK(1, 3, T(3), T(4)),
	       ESAVE(1, 3, 3, 1, T(3), T(4))),
    },
    /* Steps 0-1 skipped, 2 warms up, 3 saves. */
    {
	.what = "skip_first=2",
	.sched = {.skip_first = 2, .warmup = 1, .active = 1, .repeat = 1},
	.markers = 5,
	.phase = GPROF_PHASE_DONE,
	EVENTS(EW(0, 2, T(2)), EA(0, 3, T(3)), ESK(0, 3, T(3), T(4)),
	       ESAVE(0, 3, 3, 1, T(3), T(4))),
    },
    /* Exit during step 3: the window is saved with steps 2-3, step 3 ending at exit. */
    {
	.what = "finish while active",
	.sched = DEFAULTS,
	.markers = 4,
	.phase = GPROF_PHASE_ACTIVE,
	EVENTS(EW(0, 1, T(1)), EA(0, 2, T(2)), ESK(0, 2, T(2), T(3)), ESK(0, 3, T(3), T(4)),
	       ESAVE(0, 2, 3, 2, T(2), T(4))),
    },
    /* Exit during step 1, the warmup: nothing is saved; markers after exit change nothing. */
    {
	.what = "finish during warmup",
	.sched = DEFAULTS,
	.markers = 2,
	.after_finish = 5,
	.phase = GPROF_PHASE_WARMUP,
	EVENTS(EW(0, 1, T(1)), EDISC(0, 1, 1, 1, T(1), T(2))),
    },
    /* Exit during step 0, a wait step: no window. */
    {
	.what = "finish during wait",
	.sched = DEFAULTS,
	.markers = 1,
	.phase = GPROF_PHASE_WAIT,
    },
    {
	.what = "no marker ever",
	.sched = DEFAULTS,
	.phase = GPROF_PHASE_IDLE,
    },
    /* `all`: the window runs from the start (T(0) - 500) to exit; markers still make steps. */
    {
	.what = "all",
	.sched = {.all = true},
	.markers = 3,
	.phase = GPROF_PHASE_ACTIVE,
	EVENTS(EW(0, 0, 500), EA(0, 0, 500), ESK(0, 0, T(0), T(1)), ESK(0, 1, T(1), T(2)),
	       ESK(0, 2, T(2), T(3)), ESAVE(0, 0, 2, 3, 500, T(3))),
    },
    {
	.what = "all, no marker",
	.sched = {.all = true},
	.phase = GPROF_PHASE_ACTIVE,
	EVENTS(EW(0, 0, 500), EA(0, 0, 500), ESAVE(0, 0, 0, 0, 500, T(0))),
    },
    /* Start at T(2) - 500, during step 1: step 1 is cut to the window. */
    {
	.what = "all, markers before the start",
	.sched = {.all = true},
	.start_after = 2,
	.markers = 4,
	.phase = GPROF_PHASE_ACTIVE,
	EVENTS(EW(0, 1, T(2) - 500), EA(0, 1, T(2) - 500), ESK(0, 1, T(2) - 500, T(2)),
	       ESK(0, 2, T(2), T(3)), ESK(0, 3, T(3), T(4)), ESAVE(0, 1, 3, 3, T(2) - 500, T(4))),
    },
};

/* Events as the callback saw them, with the phase a hot path would have read meanwhile. */
struct event_log {
	struct gprof_sched_event ev[4096];
	enum gprof_sched_phase phase[4096];
	const struct gprof_stepper *st;
	size_t n;
};

static void log_event(const struct gprof_sched_event *ev, void *ctx)
{
	struct event_log *log = ctx;

	if (log->n < ARRAY_SIZE(log->ev)) {
		log->ev[log->n] = *ev;
		log->phase[log->n] = gprof_stepper_phase(log->st);
	}
	log->n++;
}

static struct event_log *new_log(void)
{
	struct event_log *log = calloc(1, sizeof(*log));

	ASSERT(log);
	return log;
}

/* A new log of st's events, st initialised with schedule `sched`. */
static struct event_log *start_logged(struct gprof_stepper *st, const struct gprof_schedule *sched)
{
	struct event_log *log = new_log();

	log->st = st;
	ASSERT_EQ(gprof_stepper_init(st, sched, log_event, log), 0);
	return log;
}

static int compare_events(const char *what, const struct gprof_sched_event *want, size_t n_want,
			  const struct event_log *got)
{
	return sched_events_differ(what, want, n_want, got->ev, got->n, ARRAY_SIZE(got->ev));
}

static int run_scenario(const struct scenario *sc)
{
	struct event_log *log = new_log();
	struct gprof_stepper st;
	unsigned k;
	int bad = 0;

	log->st = &st;
	if (gprof_stepper_init(&st, &sc->sched, log_event, log))
		FAIL("%s: gprof_stepper_init failed", sc->what);
	for (k = 0; k < sc->markers; k++) {
		if (k == sc->start_after)
			gprof_stepper_start(&st, T(k) - 500);
		gprof_stepper_mark(&st, T(k), 100 + k);
	}
	if (sc->start_after >= sc->markers)
		gprof_stepper_start(&st, T(sc->start_after) - 500);
	if (gprof_stepper_phase(&st) != sc->phase) {
		fprintf(stderr, "%s: phase %d, expected %d\n", sc->what, gprof_stepper_phase(&st),
			sc->phase);
		bad++;
	}
	gprof_stepper_finish(&st, T(k));
	for (k = 0; k < sc->after_finish; k++)
		gprof_stepper_mark(&st, T(sc->markers + 1 + k), 0);
	bad += gprof_stepper_phase(&st) != GPROF_PHASE_DONE;
	bad += gprof_stepper_markers(&st) != sc->markers + sc->after_finish;
	bad += compare_events(sc->what, sc->events, sc->n_events, log);
	gprof_stepper_destroy(&st);
	free(log);
	return bad;
}

TEST(sched_stepper_scenarios)
{
	ASSERT_ROWS(scenarios, run_scenario);
}

/*
 * Window w of wait=1, warmup=1, active=2, repeat=0 (cycles of 4 steps): warmup at step 4w+1,
 * recording steps 4w+2 and 4w+3, saved when step 4w+3 ends. Timestamps are not compared.
 */
static const struct gprof_schedule cycle4 = {.wait = 1, .warmup = 1, .active = 2};

static void expect_cycle4_window(const struct gprof_sched_event *ev, uint64_t w)
{
	static const struct {
		enum gprof_sched_event_kind kind;
		uint64_t first, last, n; /* offsets from the cycle's first step */
	} want[] = {
	    {GPROF_SCHED_EV_WARMUP, 1, 0, 0}, {GPROF_SCHED_EV_ACTIVE, 2, 0, 0},
	    {GPROF_SCHED_EV_STEP, 2, 2, 0},   {GPROF_SCHED_EV_STEP, 3, 3, 0},
	    {GPROF_SCHED_EV_SAVE, 2, 3, 2},
	};

	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		const struct gprof_sched_event *e = &ev[i];

		ASSERT_MSG(e->kind == want[i].kind, "window %" PRIu64 " event %zu", w, i);
		ASSERT_EQ(e->window, w);
		ASSERT_EQ(e->first_step, 4 * w + want[i].first);
		if (want[i].last)
			ASSERT_EQ(e->last_step, 4 * w + want[i].last);
		ASSERT_EQ(e->n_steps, want[i].n);
		if (e->kind == GPROF_SCHED_EV_STEP || e->kind == GPROF_SCHED_EV_SAVE)
			ASSERT_LE(e->begin_ns, e->end_ns);
	}
}

/* 1000 markers then exit: steps 0-999 make exactly 250 windows, the last saved at exit. */
TEST(sched_stepper_repeat0_many_steps)
{
	struct event_log *log;
	struct gprof_stepper st;

	log = start_logged(&st, &cycle4);
	for (unsigned k = 0; k < 1000; k++) {
		gprof_stepper_mark(&st, T(k), 100 + k);
		ASSERT_EQ(gprof_stepper_phase(&st), gprof_sched_phase(&cycle4, k));
	}
	gprof_stepper_finish(&st, T(1000));
	ASSERT_EQ(log->n, 250 * 5);
	for (uint64_t w = 0; w < 250; w++)
		expect_cycle4_window(&log->ev[5 * w], w);
	/* Timestamps are the markers' own: window w's save ends at marker 4w+4. */
	ASSERT_EQ(log->ev[5 * 249 + 4].end_ns, T(1000));
	ASSERT_EQ(log->ev[5 * 3 + 4].begin_ns, T(14));
	ASSERT_EQ(log->ev[5 * 3 + 4].end_ns, T(16));
	gprof_stepper_destroy(&st);
	free(log);
}

#define THREADS		 8
#define MARKS_PER_THREAD 250

struct marker_thread {
	struct gprof_stepper *st;
	pthread_barrier_t *go;
	uint64_t *clock;
	pid_t tid;
};

static void *mark_steps(void *arg)
{
	struct marker_thread *t = arg;

	pthread_barrier_wait(t->go);
	for (int i = 0; i < MARKS_PER_THREAD; i++) {
		uint64_t ts = __atomic_add_fetch(t->clock, 1, __ATOMIC_RELAXED);

		gprof_stepper_mark(t->st, ts, t->tid);
		if (i % 16 == 0)
			sched_yield();
	}
	return NULL;
}

/*
 * 8 threads mark 250 steps each at once: 2000 markers, each counted once, so steps 0-1999 in
 * cycles of 4 make exactly 500 windows in order, and time never runs backwards.
 */
TEST(sched_stepper_threads)
{
	struct event_log *log;
	struct marker_thread threads[THREADS];
	pthread_barrier_t go;
	struct gprof_stepper st;
	uint64_t clock = 0, prev_ns = 0;

	log = start_logged(&st, &cycle4);
	ASSERT_EQ(pthread_barrier_init(&go, NULL, THREADS), 0);
	for (int i = 0; i < THREADS; i++)
		threads[i] =
		    (struct marker_thread){.st = &st, .go = &go, .clock = &clock, .tid = i};
	threads_run(mark_steps, threads, sizeof(threads[0]), THREADS);
	gprof_stepper_finish(&st, clock + 1);

	ASSERT_EQ(gprof_stepper_markers(&st), THREADS * MARKS_PER_THREAD);
	ASSERT_EQ(log->n, 500 * 5);
	for (uint64_t w = 0; w < 500; w++)
		expect_cycle4_window(&log->ev[5 * w], w);
	/* An event happens at its end (STEP, SAVE) or its beginning (WARMUP, ACTIVE). */
	for (size_t i = 0; i < log->n; i++) {
		const struct gprof_sched_event *e = &log->ev[i];
		bool ends = e->kind == GPROF_SCHED_EV_STEP || e->kind == GPROF_SCHED_EV_SAVE;
		uint64_t at = ends ? e->end_ns : e->begin_ns;

		ASSERT_GE(at, prev_ns);
		if (ends)
			ASSERT_LE(e->begin_ns, e->end_ns);
		/* A step begins where the window's opening or the previous step left off. */
		if (e->kind == GPROF_SCHED_EV_STEP) {
			ASSERT_EQ(e->begin_ns, prev_ns);
			ASSERT(e->tid >= 0 && e->tid < THREADS);
		}
		prev_ns = at;
	}
	pthread_barrier_destroy(&go);
	gprof_stepper_destroy(&st);
	free(log);
}

/*
 * Under `all`, started at 500: a marker at 2000 on thread 100, then one at `second` on thread
 * 101, then the exit at 3000 on thread exit_tid (gprof_stepper_finish_on), or by
 * gprof_stepper_finish where exit_tid is -1.
 */
struct two_marks {
	const char *what;
	uint64_t second;
	pid_t exit_tid;
	const struct gprof_sched_event *events;
	size_t n_events;
};

/* Runs c, which must leave the stepper DONE: 0 if c's events came, else 1 (and says where). */
static int run_two_marks(const struct two_marks *c)
{
	static const struct gprof_schedule all = {.all = true};
	struct gprof_stepper st;
	struct event_log *log = start_logged(&st, &all);
	int bad;

	gprof_stepper_start(&st, 500);
	gprof_stepper_mark(&st, 2000, 100);
	gprof_stepper_mark(&st, c->second, 101);
	if (c->exit_tid < 0)
		gprof_stepper_finish(&st, 3000);
	else
		gprof_stepper_finish_on(&st, 3000, c->exit_tid);
	ASSERT_EQ(gprof_stepper_phase(&st), GPROF_PHASE_DONE);
	bad = compare_events(c->what, c->events, c->n_events, log);
	gprof_stepper_destroy(&st);
	free(log);
	return bad;
}

/* A marker whose timestamp is older than the last one seen gets the latest time instead. */
TEST(sched_stepper_time_never_runs_backwards)
{
	const struct two_marks clamp = {
	    .what = "clamp",
	    .second = 1000,
	    .exit_tid = -1,
	    EVENTS(EW(0, 0, 500), EA(0, 0, 500), ESK(0, 0, 2000, 2000), ESK(0, 1, 2000, 3000),
		   ESAVE(0, 0, 1, 2, 500, 3000)),
	};

	ASSERT_EQ(run_two_marks(&clamp), 0);
}

/*
 * Exit on a thread other than the one whose step is in progress: that step is left out (the
 * thread may be inside a call that outlasts the exit), the window saved with the steps before
 * it. On the step's own thread the step is kept, cut at the exit.
 */
TEST(sched_stepper_finish_on_thread)
{
	const struct two_marks cases[] = {
	    {
		.what = "other",
		.second = 2500,
		.exit_tid = 7,
		EVENTS(EW(0, 0, 500), EA(0, 0, 500), ESK(0, 0, 2000, 2500),
		       ESAVE(0, 0, 0, 1, 500, 3000)),
	    },
	    {
		.what = "same",
		.second = 2500,
		.exit_tid = 101,
		EVENTS(EW(0, 0, 500), EA(0, 0, 500), ESK(0, 0, 2000, 2500), ESK(0, 1, 2500, 3000),
		       ESAVE(0, 0, 1, 2, 500, 3000)),
	    },
	};

	ASSERT_ROWS(cases, run_two_marks);
}

/*
 * What a hot path reads: the phase of the step in progress after each marker, and while a
 * callback runs, never ACTIVE before the window is opened or while it is being saved.
 */
TEST(sched_stepper_phase_order)
{
	static const struct gprof_schedule sched = DEFAULTS;
	/* Step 0 waits, 1 warms up, 2-4 record, then done. */
	static const enum gprof_sched_phase after[] = {
	    GPROF_PHASE_WAIT,	GPROF_PHASE_WARMUP, GPROF_PHASE_ACTIVE, GPROF_PHASE_ACTIVE,
	    GPROF_PHASE_ACTIVE, GPROF_PHASE_DONE,   GPROF_PHASE_DONE,
	};
	/* Seen inside WARMUP, ACTIVE, 3 x STEP and SAVE. */
	static const enum gprof_sched_phase inside[] = {
	    GPROF_PHASE_WAIT,	GPROF_PHASE_WARMUP, GPROF_PHASE_ACTIVE,
	    GPROF_PHASE_ACTIVE, GPROF_PHASE_ACTIVE, GPROF_PHASE_WAIT,
	};
	struct event_log *log;
	struct gprof_stepper st;

	log = start_logged(&st, &sched);
	ASSERT_EQ(gprof_stepper_phase(&st), GPROF_PHASE_IDLE);
	gprof_stepper_start(&st, 1);
	ASSERT_EQ(gprof_stepper_phase(&st), GPROF_PHASE_IDLE);
	for (unsigned k = 0; k < ARRAY_SIZE(after); k++) {
		gprof_stepper_mark(&st, T(k), 100 + k);
		ASSERT_MSG(gprof_stepper_phase(&st) == after[k], "after marker %u", k);
	}
	ASSERT_EQ(log->n, ARRAY_SIZE(inside));
	for (size_t i = 0; i < ARRAY_SIZE(inside); i++)
		ASSERT_MSG(log->phase[i] == inside[i], "event %zu: phase %d", i, log->phase[i]);
	gprof_stepper_destroy(&st);
	free(log);
}

/*
 * What --torch's hook asks before each marker: whether the step it begins records, and
 * whether the step it ends is a window's last, also when the next window begins at once.
 */
TEST(sched_stepper_next_records_and_ends_window)
{
	static const struct gprof_schedule dflt = DEFAULTS,
					   back_to_back = {.active = 2, .repeat = 2};
	static const struct {
		const struct gprof_schedule *sched;
		bool records[7], ends[7]; /* before marker k */
	} cases[] = {
	    {&dflt, {0, 1, 1, 1, 1, 0, 0}, {0, 0, 0, 0, 0, 1, 0}},
	    {&back_to_back, {1, 1, 1, 1, 0, 0, 0}, {0, 0, 1, 0, 1, 0, 0}},
	};
	struct event_log *log = new_log();
	struct gprof_stepper st;

	log->st = &st;
	for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
		ASSERT_EQ(gprof_stepper_init(&st, cases[c].sched, log_event, log), 0);
		for (unsigned k = 0; k < 7; k++) {
			ASSERT_MSG(gprof_stepper_next_records(&st) == cases[c].records[k],
				   "case %zu, before marker %u", c, k);
			ASSERT_MSG(gprof_stepper_next_ends_window(&st) == cases[c].ends[k],
				   "case %zu, before marker %u", c, k);
			gprof_stepper_mark(&st, T(k), 100 + k);
		}
		gprof_stepper_destroy(&st);
		log->n = 0;
	}
	free(log);
}

struct marker_case {
	const char *marker;
	const char *msg;
	bool match;
};

static const struct marker_case marker_cases[] = {
    /* DESIGN.md: "step", "step 12", "step#12" count. */
    {"step", "step", true},
    {"step", "step 12", true},
    {"step", "step#12", true},
    {"step", "step 0", true},
    {"step", "step#007", true},
    {"step", "step 18446744073709551616999", true}, /* the number is not parsed */
    {"step", "stepper", false},
    {"step", "steps", false},
    {"step", "Step", false},
    {"step", "STEP", false},
    {"step", "step ", false},
    {"step", "step#", false},
    {"step", "step 12x", false},
    {"step", "step 12 ", false},
    {"step", "xstep", false},
    {"step", " step", false},
    {"step", "", false},
    {"step", "ste", false},
    {"step", "step #12", false}, /* one separator only */
    {"step", "step  12", false},
    {"step", "step 1 2", false},
    {"step", "step\t12", false},
    {"step", "step -1", false},
    {"step", "step 0x1f", false},
    {"step", "step\n", false},
    {"step", "step\xff", false},
    {"step", "step \xd9\xa1", false}, /* ARABIC-INDIC DIGIT ONE is not an ASCII digit */
    {"step", NULL, false},
    /* Another marker. */
    {"iter", "iter", true},
    {"iter", "iter 3", true},
    {"iter", "iter#3", true},
    {"iter", "step", false},
    {"iter", "step 3", false},
    {"iter", "iteration", false},
    {"iter", "iter x", false},
    /* A marker with '#' and one with a space: compared as bytes, the suffix rule follows. */
    {"batch#", "batch#", true},
    {"batch#", "batch# 5", true},
    {"batch#", "batch##5", true},
    {"batch#", "batch#5", false},
    {"batch#", "batch", false},
    {"train step", "train step", true},
    {"train step", "train step 4", true},
    {"train step", "train", false},
    {"train step", "train steps", false},
    /* No marker matches nothing, not even an empty message. */
    {"", "", false},
    {"", " 1", false},
    {NULL, "step", false},
    {NULL, NULL, false},
};

TEST(sched_marker_match)
{
	int bad = 0;

	for (size_t i = 0; i < ARRAY_SIZE(marker_cases); i++) {
		const struct marker_case *c = &marker_cases[i];

		if (gprof_sched_marker_match(c->marker, c->msg) == c->match)
			continue;
		fprintf(stderr, "marker \"%s\", message \"%s\": expected %s\n",
			c->marker ? c->marker : "(null)", c->msg ? c->msg : "(null)",
			c->match ? "a match" : "no match");
		bad++;
	}
	ASSERT_EQ(bad, 0);
}
