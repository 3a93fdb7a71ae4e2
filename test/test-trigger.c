/*
 * Tests of the triggers (docs/TRIGGERS.md): the stepper's MANUAL and ARMED modes driven by
 * scripts of markers, requests and ticks; GPROF_TRIGGER, GPROF_DELAY and GPROF_DURATION parsed;
 * and test/apps/trig-app run under each trigger on the simulated GPU, its traces compared with
 * what it really did (its documented steps and the ground-truth log).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/compiler.h"
#include "common/config.h"
#include "scheduler/scheduler.h"
#include "task.h"
#include "util/e2e.h"
#include "util/gtlog.h"
#include "util/proc.h"
#include "util/sched-events.h"
#include "util/text.h"

/* What a script does, in order; `arg` is what the step expects back, when it says. */
enum op_kind {
	OP_START,
	OP_MARK, /* on thread tid */
	OP_ON,	 /* requests on thread tid; arg: the enum gprof_stepper_result */
	OP_OFF,
	OP_TOGGLE,
	OP_TICK, /* on thread tid */
	OP_FINISH,
	OP_DEADLINE, /* arg: gprof_stepper_deadline() */
	OP_PHASE,    /* arg: gprof_stepper_phase() */
	OP_ARMED,    /* arg: gprof_stepper_armed() */
	OP_ARM_FROM, /* ts: the marker number; arg: gprof_stepper_next_marker() before */
};

struct op {
	enum op_kind kind;
	uint64_t ts;
	pid_t tid;
	uint64_t arg;
};

/* clang-format off */
#define START(ts)         {OP_START, (ts), 0, 0}
#define MARK(ts, tid)     {OP_MARK, (ts), (tid), 0}
#define ON(ts, tid, r)    {OP_ON, (ts), (tid), GPROF_STEPPER_##r}
#define OFF(ts, tid, r)   {OP_OFF, (ts), (tid), GPROF_STEPPER_##r}
#define TOGGLE(ts, tid)   {OP_TOGGLE, (ts), (tid), GPROF_STEPPER_TAKEN}
#define TICK(ts, tid)     {OP_TICK, (ts), (tid), 0}
#define FINISH(ts)        {OP_FINISH, (ts), 0, 0}
#define DEADLINE(d)       {OP_DEADLINE, 0, 0, (d)}
#define PHASE(p)          {OP_PHASE, 0, 0, GPROF_PHASE_##p}
#define ARMED(b)          {OP_ARMED, 0, 0, (b)}
#define ARM_FROM(m, next) {OP_ARM_FROM, (m), 0, (next)}
/* clang-format on */

#define LIST(type, name, ...)                \
	.name = (const type[]){__VA_ARGS__}, \
	.n_##name = sizeof((const type[]){__VA_ARGS__}) / sizeof(type)
#define OPS(...) LIST(struct op, ops, __VA_ARGS__)

struct script {
	const char *what;
	struct gprof_schedule sched;
	struct gprof_stepper_trigger trig;
	const struct op *ops;
	size_t n_ops;
	const struct gprof_sched_event *events;
	size_t n_events;
};

#define NEVER UINT64_MAX
#define OTHER 999 /* a thread that began no step: the timer's, another thread's */

/*
 * Expected events, worked out by hand from scheduler.h's rules: a MANUAL window opens (warmup
 * and active at once) from the step in progress, which is cut to it; a window that ends
 * between markers keeps the step in progress only when its own thread ends it; ARMED runs
 * warmup then active steps from the first marker after the request and the delay; a duration
 * counts from the window's first active moment.
 */
static const struct script scripts[] = {
    {
	.what = "manual: start and stop on the thread that marks",
	.trig = {.mode = GPROF_STEPPER_MANUAL},
	OPS(START(500), MARK(1000, 100), MARK(2000, 101), PHASE(IDLE), ON(2500, 101, TAKEN),
	    PHASE(ACTIVE), MARK(3000, 102), MARK(4000, 103), OFF(4500, 103, TAKEN), PHASE(WAIT),
	    MARK(5000, 104), OFF(5500, 104, TAKEN), FINISH(6000), PHASE(DONE)),
	EVENTS(EW(0, 1, 2500), EA(0, 1, 2500), ES(0, 1, 2500, 3000, 101), ES(0, 2, 3000, 4000, 102),
	       ES(0, 3, 4000, 4500, 103), ESAVE(0, 1, 3, 3, 2500, 4500)),
    },
    {
	.what = "manual: stopped from another thread, the step in progress is left out",
	.trig = {.mode = GPROF_STEPPER_MANUAL},
	OPS(START(500), MARK(1000, 100), ON(1500, 100, TAKEN), MARK(2000, 101), MARK(3000, 102),
	    OFF(3500, OTHER, TAKEN), FINISH(4000)),
	EVENTS(EW(0, 0, 1500), EA(0, 0, 1500), ES(0, 0, 1500, 2000, 100), ES(0, 1, 2000, 3000, 101),
	       ESAVE(0, 0, 1, 2, 1500, 3500)),
    },
    {
	.what = "manual: started and stopped from another thread inside one step",
	.trig = {.mode = GPROF_STEPPER_MANUAL},
	OPS(START(500), MARK(1000, 100), ON(1200, OTHER, TAKEN), OFF(1800, OTHER, TAKEN),
	    FINISH(2000)),
	EVENTS(EW(0, 0, 1200), EA(0, 0, 1200), ESAVE(0, 0, 0, 0, 1200, 1800)),
    },
    {
	.what = "manual: two windows, the second started without a stop and saved at exit",
	.trig = {.mode = GPROF_STEPPER_MANUAL},
	OPS(START(500), MARK(1000, 100), ON(1100, 100, TAKEN), ON(1200, 100, TAKEN),
	    OFF(1900, 100, TAKEN), MARK(2000, 101), ON(2100, 101, TAKEN), MARK(3000, 102),
	    FINISH(3500)),
	EVENTS(EW(0, 0, 1100), EA(0, 0, 1100), ES(0, 0, 1100, 1900, 100),
	       ESAVE(0, 0, 0, 1, 1100, 1900), EW(1, 1, 2100), EA(1, 1, 2100),
	       ES(1, 1, 2100, 3000, 101), ES(1, 2, 3000, 3500, 102), ESAVE(1, 1, 2, 2, 2100, 3500)),
    },
    {
	.what = "manual: wanted before the start, and before any marker",
	.trig = {.mode = GPROF_STEPPER_MANUAL},
	OPS(ON(100, OTHER, TAKEN), PHASE(IDLE), DEADLINE(NEVER), START(500), PHASE(ACTIVE),
	    MARK(1000, 100), TOGGLE(1500, 100), FINISH(2000)),
	EVENTS(EW(0, 0, 500), EA(0, 0, 500), ES(0, 0, 1000, 1500, 100),
	       ESAVE(0, 0, 0, 1, 500, 1500)),
    },
    {
	.what = "manual: toggles",
	.trig = {.mode = GPROF_STEPPER_MANUAL},
	OPS(START(500), MARK(1000, 100), TOGGLE(1500, 100), TOGGLE(1600, 100), TOGGLE(1700, 100),
	    MARK(2000, 101), FINISH(2500)),
	EVENTS(EW(0, 0, 1500), EA(0, 0, 1500), ES(0, 0, 1500, 1600, 100),
	       ESAVE(0, 0, 0, 1, 1500, 1600), EW(1, 0, 1700), EA(1, 0, 1700),
	       ES(1, 0, 1700, 2000, 100), ES(1, 1, 2000, 2500, 101), ESAVE(1, 0, 1, 2, 1700, 2500)),
    },
    {
	.what = "time window: the delay counts from the start, markers before it are skipped",
	.trig = {.mode = GPROF_STEPPER_MANUAL, .want = true, .delay_ns = 1000},
	OPS(MARK(200, 100), START(500), DEADLINE(1500), MARK(1000, 101), TICK(1400, OTHER),
	    PHASE(IDLE), TICK(1500, OTHER), PHASE(ACTIVE), DEADLINE(NEVER), MARK(2000, 102),
	    FINISH(2500)),
	EVENTS(EW(0, 1, 1500), EA(0, 1, 1500), ES(0, 1, 1500, 2000, 101), ES(0, 2, 2000, 2500, 102),
	       ESAVE(0, 1, 2, 2, 1500, 2500)),
    },
    {
	.what = "time window: a late timer, the marker after the delay opens it",
	.trig = {.mode = GPROF_STEPPER_MANUAL, .want = true, .delay_ns = 1000},
	OPS(START(500), MARK(1000, 100), MARK(2000, 101), MARK(3000, 102), FINISH(3500)),
	EVENTS(EW(0, 1, 2000), EA(0, 1, 2000), ES(0, 1, 2000, 3000, 101), ES(0, 2, 3000, 3500, 102),
	       ESAVE(0, 1, 2, 2, 2000, 3500)),
    },
    {
	.what = "time window: the duration ends on the timer, not wanted again",
	.trig = {.mode = GPROF_STEPPER_MANUAL, .want = true, .duration_ns = 1500},
	OPS(START(500), DEADLINE(2000), MARK(1000, 100), TICK(1999, OTHER), PHASE(ACTIVE),
	    TICK(2050, OTHER), PHASE(WAIT), DEADLINE(NEVER), MARK(3000, 101), FINISH(3500)),
	EVENTS(EW(0, 0, 500), EA(0, 0, 500), ESAVE(0, 0, 0, 0, 500, 2050)),
    },
    {
	.what = "time window: the duration ends at a marker before the timer",
	.trig = {.mode = GPROF_STEPPER_MANUAL, .want = true, .duration_ns = 1500},
	OPS(START(500), MARK(1000, 100), MARK(2100, 101), PHASE(WAIT), TICK(2200, OTHER),
	    FINISH(3000)),
	EVENTS(EW(0, 0, 500), EA(0, 0, 500), ES(0, 0, 1000, 2100, 100),
	       ESAVE(0, 0, 0, 1, 500, 2100)),
    },
    {
	.what = "manual: delay and duration bound a started window",
	.trig = {.mode = GPROF_STEPPER_MANUAL, .delay_ns = 1000, .duration_ns = 700},
	OPS(START(500), ON(600, 100, TAKEN), DEADLINE(1500), MARK(1000, 100), OFF(1200, 100, TAKEN),
	    DEADLINE(NEVER), ON(1300, 100, TAKEN), TICK(1500, OTHER), DEADLINE(2200),
	    MARK(2000, 101), TICK(2200, 101), PHASE(WAIT), ON(2300, 101, TAKEN), FINISH(2400)),
	EVENTS(EW(0, 0, 1500), EA(0, 0, 1500), ES(0, 0, 1500, 2000, 100), ES(0, 1, 2000, 2200, 101),
	       ESAVE(0, 0, 1, 2, 1500, 2200), EW(1, 1, 2300), EA(1, 1, 2300),
	       ES(1, 1, 2300, 2400, 101), ESAVE(1, 1, 1, 1, 2300, 2400)),
    },
    {
	.what = "armed: warmup 1, active 2, from the next marker; busy until it ends",
	.sched = {.wait = 5, .warmup = 1, .active = 2, .repeat = 1},
	.trig = {.mode = GPROF_STEPPER_ARMED},
	OPS(START(500), MARK(1000, 100), ON(1500, OTHER, TAKEN), ARMED(1), PHASE(WAIT),
	    ON(1600, OTHER, BUSY), OFF(1700, OTHER, IGNORED), MARK(2000, 101), ARMED(0),
	    PHASE(WARMUP), MARK(3000, 102), PHASE(ACTIVE), ON(3500, OTHER, BUSY), MARK(4000, 103),
	    MARK(5000, 104), PHASE(WAIT), MARK(6000, 105), TOGGLE(6500, OTHER), MARK(7000, 106),
	    FINISH(7500)),
	EVENTS(EW(0, 1, 2000), EA(0, 2, 3000), ES(0, 2, 3000, 4000, 102), ES(0, 3, 4000, 5000, 103),
	       ESAVE(0, 2, 3, 2, 3000, 5000), EW(1, 6, 7000), EDISC(1, 6, 6, 1, 7000, 7500)),
    },
    {
	.what = "armed from marker 4 (a run's processes agree on it): markers 2 and 3 pass by",
	.sched = {.warmup = 1, .active = 1},
	.trig = {.mode = GPROF_STEPPER_ARMED},
	OPS(START(500), MARK(1000, 100), MARK(2000, 100), ON(2500, OTHER, TAKEN), ARM_FROM(4, 2),
	    MARK(3000, 100), ARMED(1), MARK(4000, 100), ARMED(1), MARK(5000, 100), ARMED(0),
	    PHASE(WARMUP), MARK(6000, 100), MARK(7000, 100), PHASE(WAIT), FINISH(7500)),
	EVENTS(EW(0, 4, 5000), EA(0, 5, 6000), ES(0, 5, 6000, 7000, 100),
	       ESAVE(0, 5, 5, 1, 6000, 7000)),
    },
    {
	.what = "armed: no warmup, active 1; before the delay's end a marker does not begin it",
	.sched = {.warmup = 0, .active = 1},
	.trig = {.mode = GPROF_STEPPER_ARMED, .delay_ns = 2000},
	OPS(ON(100, OTHER, TAKEN), START(500), MARK(1000, 100), MARK(2000, 101), ARMED(1),
	    MARK(3000, 102), ARMED(0), MARK(4000, 103), MARK(5000, 104), FINISH(5500)),
	EVENTS(EW(0, 2, 3000), EA(0, 2, 3000), ES(0, 2, 3000, 4000, 102),
	       ESAVE(0, 2, 2, 1, 3000, 4000)),
    },
    {
	.what = "armed: the duration ends the window between markers",
	.sched = {.warmup = 1, .active = 3},
	.trig = {.mode = GPROF_STEPPER_ARMED, .duration_ns = 1500},
	OPS(START(500), ON(600, OTHER, TAKEN), MARK(1000, 100), DEADLINE(NEVER), MARK(2000, 101),
	    DEADLINE(3500), MARK(3000, 102), TICK(3600, OTHER), PHASE(WAIT), MARK(4000, 103),
	    MARK(5000, 104), ON(5100, OTHER, TAKEN), FINISH(5500)),
	EVENTS(EW(0, 0, 1000), EA(0, 1, 2000), ES(0, 1, 2000, 3000, 101),
	       ESAVE(0, 1, 1, 1, 2000, 3600)),
    },
    {
	.what = "schedule: requests are ignored",
	.sched = {.wait = 1, .warmup = 0, .active = 1, .repeat = 1},
	OPS(START(500), ON(600, OTHER, IGNORED), MARK(1000, 100), MARK(2000, 101),
	    {OP_TOGGLE, 2500, OTHER, GPROF_STEPPER_IGNORED}, DEADLINE(NEVER), MARK(3000, 102),
	    FINISH(3500)),
	EVENTS(EW(0, 1, 2000), EA(0, 1, 2000), ES(0, 1, 2000, 3000, 101),
	       ESAVE(0, 1, 1, 1, 2000, 3000)),
    },
};

struct log {
	struct gprof_sched_event ev[64];
	size_t n;
};

static void log_event(const struct gprof_sched_event *ev, void *ctx)
{
	struct log *log = ctx;

	if (log->n < ARRAY_SIZE(log->ev))
		log->ev[log->n] = *ev;
	log->n++;
}

static int compare(const struct script *sc, const struct log *log)
{
	return sched_events_differ(sc->what, sc->events, sc->n_events, log->ev, log->n,
				   ARRAY_SIZE(log->ev));
}

/* Runs one op; returns what it gave back where the op checks it. */
static uint64_t run_op(struct gprof_stepper *st, const struct op *op)
{
	static const enum gprof_stepper_req reqs[] = {[OP_ON] = GPROF_STEPPER_ON,
						      [OP_OFF] = GPROF_STEPPER_OFF,
						      [OP_TOGGLE] = GPROF_STEPPER_TOGGLE};

	switch (op->kind) {
	case OP_START:
		gprof_stepper_start(st, op->ts);
		break;
	case OP_MARK:
		gprof_stepper_mark(st, op->ts, op->tid);
		break;
	case OP_ON:
	case OP_OFF:
	case OP_TOGGLE:
		return gprof_stepper_request(st, reqs[op->kind], op->ts, op->tid);
	case OP_TICK:
		gprof_stepper_tick(st, op->ts, op->tid);
		break;
	case OP_FINISH:
		gprof_stepper_finish(st, op->ts);
		break;
	case OP_DEADLINE:
		return gprof_stepper_deadline(st);
	case OP_PHASE:
		return gprof_stepper_phase(st);
	case OP_ARMED:
		return gprof_stepper_armed(st);
	case OP_ARM_FROM: {
		uint64_t next = gprof_stepper_next_marker(st);

		gprof_stepper_arm_from(st, op->ts);
		return next;
	}
	}
	return op->arg;
}

static int run_script(const struct script *sc)
{
	struct log log = {0};
	struct gprof_stepper st;
	int bad = 0;

	ASSERT_EQ(gprof_stepper_init(&st, &sc->sched, log_event, &log), 0);
	gprof_stepper_set_trigger(&st, &sc->trig);
	for (size_t i = 0; i < sc->n_ops; i++) {
		uint64_t got = run_op(&st, &sc->ops[i]);

		if (got == sc->ops[i].arg)
			continue;
		fprintf(stderr, "%s: op #%zu (kind %d) gave %" PRIu64 ", expected %" PRIu64 "\n",
			sc->what, i, sc->ops[i].kind, got, sc->ops[i].arg);
		bad++;
	}
	bad += compare(sc, &log);
	gprof_stepper_destroy(&st);
	return bad;
}

TEST(trigger_stepper_scripts)
{
	ASSERT_ROWS(scripts, run_script);
}

/* `all` without set_trigger is MANUAL, wanted from the start: the old behaviour, unchanged. */
TEST(trigger_stepper_all_is_manual)
{
	const struct script sc = {
	    .what = "all",
	    .sched = {.all = true},
	    .trig = {.mode = GPROF_STEPPER_MANUAL, .want = true},
	    OPS(MARK(200, 100), START(500), PHASE(ACTIVE), MARK(1000, 101), FINISH(1500)),
	    EVENTS(EW(0, 0, 500), EA(0, 0, 500), ES(0, 0, 500, 1000, 100),
		   ES(0, 1, 1000, 1500, 101), ESAVE(0, 0, 1, 2, 500, 1500)),
	};
	struct log log = {0};
	struct gprof_stepper st;

	ASSERT_EQ(run_script(&sc), 0);
	/* The same script without set_trigger: init alone makes `all` behave so. */
	ASSERT_EQ(gprof_stepper_init(&st, &sc.sched, log_event, &log), 0);
	for (size_t i = 0; i < sc.n_ops; i++)
		run_op(&st, &sc.ops[i]);
	ASSERT_EQ(compare(&sc, &log), 0);
	gprof_stepper_destroy(&st);
}

/* One gprof_config_load with the given entries; what it printed on stderr goes to out. */
static int load(struct gprof_config *cfg, char *const *env, char *out, size_t size)
{
	FILE *tmp = tmpfile();
	int fd = tmp ? fileno(tmp) : -1, saved = dup(STDERR_FILENO), rc;
	ssize_t n;

	ASSERT(fd >= 0 && saved >= 0);
	ASSERT(dup2(fd, STDERR_FILENO) == STDERR_FILENO);
	rc = gprof_config_load(cfg, env);
	dup2(saved, STDERR_FILENO);
	close(saved);
	n = pread(fd, out, size - 1, 0);
	out[n > 0 ? n : 0] = '\0';
	fclose(tmp);
	return rc;
}

/* The accepted forms, with the values the documentation gives them. */
TEST(trigger_config_forms)
{
	static const struct {
		const char *entry;
		int trigger;
		bool delay_set, duration_set;
		uint64_t delay_ns, duration_ns;
	} t[] = {
	    {"GPROF_LOG=warn", GPROF_TRIGGER_STEPS, false, false, 0, 0},
	    {"GPROF_TRIGGER=steps", GPROF_TRIGGER_STEPS, false, false, 0, 0},
	    {"GPROF_TRIGGER=cuda-profiler-api", GPROF_TRIGGER_PROFILER_API, false, false, 0, 0},
	    {"GPROF_TRIGGER=signal", GPROF_TRIGGER_SIGNAL, false, false, 0, 0},
	    {"GPROF_DELAY=0", GPROF_TRIGGER_STEPS, true, false, 0, 0},
	    {"GPROF_DELAY=30", GPROF_TRIGGER_STEPS, true, false, 30000000000ull, 0},
	    {"GPROF_DELAY=2.5", GPROF_TRIGGER_STEPS, true, false, 2500000000ull, 0},
	    {"GPROF_DELAY=0.000000001", GPROF_TRIGGER_STEPS, true, false, 1, 0},
	    {"GPROF_DELAY=007.010", GPROF_TRIGGER_STEPS, true, false, 7010000000ull, 0},
	    {"GPROF_DELAY=100000000", GPROF_TRIGGER_STEPS, true, false, 100000000000000000ull, 0},
	    {"GPROF_DURATION=10", GPROF_TRIGGER_STEPS, false, true, 0, 10000000000ull},
	    {"GPROF_DURATION=0.5", GPROF_TRIGGER_STEPS, false, true, 0, 500000000ull},
	    {"GPROF_DURATION=0.000000001", GPROF_TRIGGER_STEPS, false, true, 0, 1},
	};
	struct gprof_config cfg;
	char out[1024];

	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		char *env[] = {(char *)t[i].entry, NULL};

		ASSERT_MSG(load(&cfg, env, out, sizeof(out)) == 0 && !out[0], "%s: \"%s\"",
			   t[i].entry, out);
		ASSERT_MSG(cfg.trigger == t[i].trigger && cfg.delay.set == t[i].delay_set &&
			       cfg.duration.set == t[i].duration_set &&
			       cfg.delay.ns == t[i].delay_ns && cfg.duration.ns == t[i].duration_ns,
			   "%s: trigger %d, delay %d %" PRIu64 ", duration %d %" PRIu64, t[i].entry,
			   cfg.trigger, cfg.delay.set, cfg.delay.ns, cfg.duration.set,
			   cfg.duration.ns);
	}
	ASSERT_STR_EQ(gprof_config_trigger_name(GPROF_TRIGGER_PROFILER_API), "cuda-profiler-api");
}

/* Each bad value: -EINVAL and one line "gprof: VAR='value': <hint>...; expected ...". */
TEST(trigger_config_rejects)
{
	static const struct {
		const char *var, *value, *hint;
	} t[] = {
	    {"GPROF_TRIGGER", "", "empty"},
	    {"GPROF_TRIGGER", "Steps", "unknown"},
	    {"GPROF_TRIGGER", "signal ", "unknown"},
	    {"GPROF_TRIGGER", "cudaProfilerApi", "unknown"},
	    {"GPROF_TRIGGER", "signal,steps", "unknown"},
	    {"GPROF_TRIGGER", "usr2", "unknown"},
	    {"GPROF_DELAY", "", "empty"},
	    {"GPROF_DELAY", "-1", "not a number"},
	    {"GPROF_DELAY", "+1", "not a number"},
	    {"GPROF_DELAY", "1e3", "not a number"},
	    {"GPROF_DELAY", "5s", "not a number"},
	    {"GPROF_DELAY", "5.", "not a number"},
	    {"GPROF_DELAY", ".5", "not a number"},
	    {"GPROF_DELAY", "1,5", "not a number"},
	    {"GPROF_DELAY", " 1", "not a number"},
	    {"GPROF_DELAY", "1 ", "not a number"},
	    {"GPROF_DELAY", "0x10", "not a number"},
	    {"GPROF_DELAY", "1.2.3", "not a number"},
	    {"GPROF_DELAY", "0.0000000001", "decimals"},
	    {"GPROF_DELAY", "100000001", "range"},
	    {"GPROF_DELAY", "100000000.000000001", "range"},
	    {"GPROF_DELAY", "99999999999999999999999", "range"},
	    {"GPROF_DURATION", "0", "0 records nothing"},
	    {"GPROF_DURATION", "0.000", "0 records nothing"},
	    {"GPROF_DURATION", "-0.5", "not a number"},
	    {"GPROF_DURATION", "inf", "not a number"},
	    {"GPROF_DURATION", "nan", "not a number"},
	};
	struct gprof_config cfg;
	char out[1024];

	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		char entry[128], prefix[128];
		char *env[] = {entry, NULL};

		snprintf(entry, sizeof(entry), "%s=%s", t[i].var, t[i].value);
		snprintf(prefix, sizeof(prefix), "gprof: %s='%s': ", t[i].var, t[i].value);
		ASSERT_MSG(load(&cfg, env, out, sizeof(out)) == -EINVAL, "%s accepted", entry);
		ASSERT_MSG(!strncmp(out, prefix, strlen(prefix)) && strstr(out, "; expected ") &&
			       text_one_line(out),
			   "%s: \"%s\"", entry, out);
		ASSERT_MSG(strstr(out + strlen(prefix), t[i].hint), "%s: no \"%s\" in \"%s\"",
			   entry, t[i].hint, out);
	}
}

/* From a GPROF_CONFIG file: strings and integers; a JSON real is refused like everywhere. */
TEST(trigger_config_file)
{
	char path[] = P_tmpdir "/gprof-test-trigger-XXXXXX", entry[64], out[1024];
	char *env[] = {entry, NULL};
	struct gprof_config cfg;
	int fd = mkstemp(path);
	const char good[] = "{\"trigger\": \"signal\", \"delay\": 3, \"duration\": \"0.25\"}";
	const char real[] = "{\"duration\": 0.25}";

	ASSERT(fd >= 0);
	snprintf(entry, sizeof(entry), "GPROF_CONFIG=%s", path);
	ASSERT_EQ(write(fd, good, strlen(good)), (ssize_t)strlen(good));
	ASSERT_EQ(load(&cfg, env, out, sizeof(out)), 0);
	ASSERT_EQ(cfg.trigger, GPROF_TRIGGER_SIGNAL);
	ASSERT(cfg.delay.set && cfg.delay.ns == 3000000000ull);
	ASSERT(cfg.duration.set && cfg.duration.ns == 250000000ull);
	ASSERT_EQ(pwrite(fd, real, sizeof(real), 0), (ssize_t)sizeof(real));
	ASSERT_EQ(ftruncate(fd, (off_t)strlen(real)), 0);
	ASSERT_EQ(load(&cfg, env, out, sizeof(out)), -EINVAL);
	ASSERT_STR_CONTAINS(out, "gprof: GPROF_DURATION='0.25' (from ");
	close(fd);
	unlink(path);
}

/*
 * A step schedule with a trigger that counts no steps is refused, naming both; the default
 * schedule and `all` go with every trigger, and signal takes any schedule.
 */
TEST(trigger_config_combinations)
{
	static const struct {
		const char *a, *b;
		const char *error; /* NULL: accepted */
	} t[] = {
	    {"GPROF_TRIGGER=cuda-profiler-api", "GPROF_SCHEDULE=active=2",
	     "gprof: GPROF_SCHEDULE='skip_first=0,wait=1,warmup=1,active=2,repeat=1': "
	     "GPROF_TRIGGER=cuda-profiler-api does not count steps; expected all or the default"},
	    {"GPROF_DELAY=1", "GPROF_SCHEDULE=wait=0,active=1",
	     "gprof: GPROF_SCHEDULE='skip_first=0,wait=0,warmup=1,active=1,repeat=1': GPROF_DELAY "
	     "makes a time window"},
	    {"GPROF_DURATION=1", "GPROF_SCHEDULE=repeat=0", "GPROF_DURATION makes a time window"},
	    {"GPROF_TRIGGER=cuda-profiler-api", "GPROF_SCHEDULE=all", NULL},
	    {"GPROF_TRIGGER=cuda-profiler-api", "GPROF_SCHEDULE=wait=1,warmup=1,active=3,repeat=1",
	     NULL},
	    {"GPROF_TRIGGER=cuda-profiler-api", "GPROF_DURATION=2", NULL},
	    {"GPROF_DELAY=1", "GPROF_SCHEDULE=all", NULL},
	    {"GPROF_TRIGGER=signal", "GPROF_SCHEDULE=skip_first=3,warmup=0,active=1", NULL},
	    {"GPROF_TRIGGER=signal", "GPROF_DURATION=0.5", NULL},
	    {"GPROF_TRIGGER=steps", "GPROF_SCHEDULE=active=2", NULL},
	};
	struct gprof_config cfg;
	char out[1024];

	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		char *env[] = {(char *)t[i].a, (char *)t[i].b, NULL};
		int rc = load(&cfg, env, out, sizeof(out));

		if (!t[i].error) {
			ASSERT_MSG(rc == 0 && !out[0], "%s %s: \"%s\"", t[i].a, t[i].b, out);
			continue;
		}
		ASSERT_MSG(rc == -EINVAL && strstr(out, t[i].error) && text_one_line(out),
			   "%s %s: \"%s\"", t[i].a, t[i].b, out);
	}
	/* GPROF_DISABLE=1 silences it like any other error. */
	char *env[] = {"GPROF_TRIGGER=cuda-profiler-api", "GPROF_SCHEDULE=active=2",
		       "GPROF_DISABLE=1", NULL};

	ASSERT_EQ(load(&cfg, env, out, sizeof(out)), 0);
	ASSERT(cfg.disable && !out[0]);
}

/* End to end: trig-app on the simulated GPU. */

#define MAX_STEPS 4096

enum call {
	CALL_MALLOC,
	CALL_MEMCPY,
	CALL_LAUNCH,
	N_CALLS,
};

static const char *const call_names[N_CALLS] = {"cudaMalloc", "cudaMemcpy", "cudaLaunchKernel"};

/* What a run wrote or did: per call and step, how many; the step spans; steps run. */
struct seen {
	unsigned char calls[N_CALLS][MAX_STEPS];
	bool spans[MAX_STEPS];
	int steps;
};

/* trig-app's header: step k's calls carry (k+1) * 4096 bytes, (k+1) * 256 bytes, grid k+1. */
static int step_of(enum call c, long long bytes, long long grid_x)
{
	long long k = c == CALL_MALLOC	 ? bytes / 4096 - 1
		      : c == CALL_MEMCPY ? bytes / 256 - 1
					 : grid_x - 1;

	return k >= 0 && k < MAX_STEPS ? (int)k : -1;
}

static int call_of(const char *name)
{
	for (int c = 0; c < N_CALLS; c++)
		if (!strcmp(name, call_names[c]))
			return c;
	return -1;
}

static long long grid_x(const json_t *args)
{
	json_t *g = json_object_get(args, "grid");

	return json_is_array(g) ? json_integer_value(json_array_get(g, 0)) : -1;
}

/*
 * The calls a trace holds. Hooks only: the runtime events and their arguments. With CUPTI,
 * whose API records carry no arguments: the kernels, counted as launches by their grid.
 */
static void seen_in_trace(const struct trace *t, bool cupti, struct seen *s)
{
	size_t i;
	json_t *ev;

	memset(s, 0, sizeof(*s));
	json_array_foreach(t->events, i, ev)
	{
		json_t *args = json_object_get(ev, "args");
		const char *cat = trace_str(ev, "cat");
		int c = cupti
			    ? (!strcmp(cat, "kernel") ? CALL_LAUNCH : -1)
			    : (!strcmp(cat, "cuda_runtime") ? call_of(trace_str(ev, "name")) : -1);
		int k = c < 0 ? -1 : step_of(c, e2e_arg_int(ev, "bytes"), grid_x(args));
		unsigned n;

		if (k >= 0)
			s->calls[c][k]++;
		if (sscanf(trace_str(ev, "name"), "ProfilerStep#%u", &n) == 1 && n < MAX_STEPS)
			s->spans[n] = true;
	}
}

/* The number of steps trig-app says it ran. */
static int app_steps(const struct e2e_run *r)
{
	const char *p = strstr(r->res.out, "trig-app: ");
	int n = -1;

	ASSERT_MSG(p && sscanf(p, "trig-app: %d steps", &n) == 1 && n > 0 && n <= MAX_STEPS,
		   "trig-app's output: %s", r->res.out);
	return n;
}

/* The ground truth has each of the calls once per step, as trig-app's header says. */
static void check_ground_truth(const struct e2e_run *r, int steps)
{
	struct seen gt = {0};
	size_t i;
	json_t *ev;

	ASSERT(r->gt);
	json_array_foreach(r->gt, i, ev)
	{
		json_t *args = json_object_get(ev, "args");
		int c = strcmp(gtlog_str(ev, "type"), "api") ? -1 : call_of(gtlog_str(ev, "name"));
		int k = c < 0 ? -1 : step_of(c, gtlog_int(args, "bytes"), grid_x(args));

		if (k >= 0)
			gt.calls[c][k]++;
	}
	for (int c = 0; c < N_CALLS; c++)
		for (int k = 0; k < MAX_STEPS; k++)
			ASSERT_MSG(gt.calls[c][k] == (k < steps), "%s of step %d: %d in the log",
				   call_names[c], k, gt.calls[c][k]);
}

/* The run ended well, with no trace and one gprof line, which holds line. */
static void assert_no_trace_one_line(const struct e2e_run *r, const char *line)
{
	ASSERT_EQ(r->res.status, 0);
	ASSERT_EQ(r->n_traces, 0);
	ASSERT_STR_CONTAINS(r->res.err, line);
	ASSERT_EQ(text_count(r->res.err, "gprof:"), 1);
}

/* trig-app of that many steps with the variable env set: as assert_no_trace_one_line. */
static void check_no_trace(const char *steps, const char *env, const char *line)
{
	const char *argv[] = {proc_build_path("test/apps/trig-app"), "-s", steps, NULL};
	const char *envp[] = {env, NULL};
	struct e2e_run r;

	e2e_run(&r, argv, e2e_cupti(true), envp, true);
	assert_no_trace_one_line(&r, line);
	e2e_free(&r);
}

/* Trace i holds exactly the calls of steps first..last, and spans for span_first..span_last. */
static void check_window(const struct e2e_run *r, int i, bool cupti, int first, int last,
			 int span_last)
{
	struct seen s;

	ASSERT_MSG(i < r->n_traces, "%d traces, trace %d expected", r->n_traces, i);
	seen_in_trace(&r->traces[i], cupti, &s);
	for (int c = cupti ? CALL_LAUNCH : 0; c < N_CALLS; c++)
		for (int k = 0; k < MAX_STEPS; k++)
			ASSERT_MSG(s.calls[c][k] == (k >= first && k <= last),
				   "trace %d: %s of step %d: %d, steps %d-%d expected", i,
				   call_names[c], k, s.calls[c][k], first, last);
	for (int k = 0; k < MAX_STEPS; k++)
		ASSERT_MSG(s.spans[k] == (k >= first && k <= span_last),
			   "trace %d: ProfilerStep#%d %s, steps %d-%d expected", i, k,
			   s.spans[k] ? "present" : "missing", first, span_last);
}

/*
 * cudaProfilerStart after step 2's marker to cudaProfilerStop after step 4's calls, 7 to 8,
 * and 10 never stopped: three files with exactly those steps' calls and spans, the last
 * complete at exit; the calls still reach the runtime (the ground truth has them).
 */
TEST(trigger_profiler_api_windows)
{
	const char *argv[] = {proc_build_path("test/apps/trig-app"),
			      "-s",
			      "12",
			      "-p",
			      "2:4",
			      "-p",
			      "7:8",
			      "-p",
			      "10:-",
			      NULL};
	const char *env[] = {"GPROF_TRIGGER=cuda-profiler-api", NULL};

	for (int cupti = 0; cupti < 2; cupti++) {
		struct e2e_run r;

		e2e_run(&r, argv, e2e_cupti(cupti), env, true);
		ASSERT_EQ(r.res.status, 0);
		check_ground_truth(&r, app_steps(&r));
		ASSERT_EQ(gtlog_count(r.gt, "{\"type\":\"api\",\"name\":\"cudaProfilerStart\"}"),
			  3);
		ASSERT_EQ(gtlog_count(r.gt, "{\"type\":\"api\",\"name\":\"cudaProfilerStop\"}"), 2);
		ASSERT_EQ(r.n_traces, 3);
		check_window(&r, 0, cupti, 2, 4, 4);
		check_window(&r, 1, cupti, 7, 8, 8);
		check_window(&r, 2, cupti, 10, 11, 11);
		ASSERT_STR_CONTAINS(
		    trace_str(json_object_get(r.traces[0].root, "gprof"), "schedule"),
		    "trigger=cuda-profiler-api");
		e2e_free(&r);
	}
}

/* The trigger set, no cudaProfilerStart: no file, one line saying so. */
TEST(trigger_profiler_api_never_called)
{
	check_no_trace("4", "GPROF_TRIGGER=cuda-profiler-api",
		       "gprof: GPROF_TRIGGER=cuda-profiler-api, but the program never called "
		       "cudaProfilerStart");
}

/*
 * SIGUSR2 in steps 3, 5 and 9 with warmup=1, active=2: the one in step 3 arms a window that
 * warms up in step 4 and records 5-6; the one in step 5 comes while it is under way and is
 * ignored, with one line; the one in step 9 records 11-12.
 */
TEST(trigger_signal_steps)
{
	const char *argv[] = {proc_build_path("test/apps/trig-app"),
			      "-s",
			      "14",
			      "-u",
			      "3",
			      "-u",
			      "5",
			      "-u",
			      "9",
			      NULL};
	const char *env[] = {"GPROF_TRIGGER=signal", "GPROF_SCHEDULE=warmup=1,active=2", NULL};

	for (int cupti = 0; cupti < 2; cupti++) {
		struct e2e_run r;

		e2e_run(&r, argv, e2e_cupti(cupti), env, true);
		ASSERT_EQ(r.res.status, 0);
		check_ground_truth(&r, app_steps(&r));
		ASSERT_EQ(r.n_traces, 2);
		check_window(&r, 0, cupti, 5, 6, 6);
		check_window(&r, 1, cupti, 11, 12, 12);
		ASSERT_EQ(text_count(r.res.err, "gprof: SIGUSR2 ignored"), 1);
		e2e_free(&r);
	}
}

/*
 * Under `all`, SIGUSR2 in step 2 starts recording at the next call (step 2's first), the one
 * in step 5 ends it there (step 5 keeps a span, cut before its first call), the one in step 8
 * starts again until exit.
 */
static void check_signal_all(const struct e2e_run *r, bool cupti)
{
	ASSERT_EQ(r->res.status, 0);
	check_ground_truth(r, app_steps(r));
	ASSERT_EQ(r->n_traces, 2);
	check_window(r, 0, cupti, 2, 4, 5);
	check_window(r, 1, cupti, 8, 11, 11);
}

static const char *const signal_all_env[] = {"GPROF_TRIGGER=signal", "GPROF_SCHEDULE=all", NULL};

TEST(trigger_signal_all)
{
	const char *argv[] = {proc_build_path("test/apps/trig-app"),
			      "-s",
			      "12",
			      "-u",
			      "2",
			      "-u",
			      "5",
			      "-u",
			      "8",
			      NULL};

	for (int cupti = 0; cupti < 2; cupti++) {
		struct e2e_run r;

		e2e_run(&r, argv, e2e_cupti(cupti), signal_all_env, true);
		check_signal_all(&r, cupti);
		ASSERT_STR_CONTAINS(
		    trace_str(json_object_get(r.traces[1].root, "gprof"), "schedule"),
		    "all; trigger=signal");
		e2e_free(&r);
	}
}

/*
 * The program's own SIGUSR2 handler, which replaces libgprof's (installed when it is loaded):
 * before any CUDA call (-H) or later (-R), one line when libgprof notices and no window, the
 * program getting every signal; if the handler calls the one it replaced (-L) both get every
 * signal and the windows are as without it. SIGUSR2 ignored from the start (inherited from
 * the parent, which exec keeps): libgprof says so in one line and leaves it alone.
 */
/* SIGUSR2 ignored by the parent (exec keeps that): one line, no window, the program unharmed. */
static void check_signal_ignored(const char *app, const char *const *args, size_t n)
{
	const char *argv[16] = {"/bin/sh", "-c", "trap '' USR2; exec \"$0\" \"$@\"", app};
	struct e2e_run r;

	memcpy(argv + 4, args, n * sizeof(*args));
	e2e_run(&r, argv, e2e_cupti(true), signal_all_env, true);
	assert_no_trace_one_line(&r, "gprof: GPROF_TRIGGER=signal: SIGUSR2 is already ignored");
	ASSERT_STR_CONTAINS(r.res.out, "trig-app: 12 steps");
	e2e_free(&r);
}

/* A SIGUSR2 before any CUDA call (here in a program that never makes one) ends nothing. */
static void check_signal_before_cuda(void)
{
	const char *argv[] = {"/bin/sh", "-c", "kill -USR2 $$; echo alive", NULL};
	struct e2e_run r;

	e2e_run(&r, argv, e2e_cupti(true), signal_all_env, true);
	ASSERT_MSG(r.res.status == 0, "status %d: %.2000s", r.res.status, r.res.err);
	ASSERT_STR_EQ(r.res.out, "alive\n");
	ASSERT_EQ(r.n_traces, 0);
	e2e_free(&r);
}

TEST(trigger_signal_program_handlers)
{
	const char *app = proc_build_path("test/apps/trig-app");
	const char *common[] = {"-s", "12", "-u", "2", "-u", "5", "-u", "8"};
	const char *mode[] = {"-H", "-L", "-R"};

	for (size_t m = 0; m < ARRAY_SIZE(mode); m++) {
		const char *argv[12] = {app, mode[m]};
		struct e2e_run r;

		memcpy(argv + 2, common, sizeof(common));
		e2e_run(&r, argv, e2e_cupti(true), signal_all_env, true);
		ASSERT_EQ(r.res.status, 0);
		ASSERT_STR_CONTAINS(r.res.out, "usr2 3\n");
		ASSERT_EQ(text_count(r.res.err, "gprof: GPROF_TRIGGER=signal: "), 1);
		ASSERT_STR_CONTAINS(r.res.err, "a SIGUSR2 handler of its own in place");
		if (m == 1) {
			check_signal_all(&r, true);
		} else {
			ASSERT_EQ(r.n_traces, 0);
			ASSERT_EQ(text_count(r.res.err, "gprof:"), 1);
		}
		e2e_free(&r);
	}
	check_signal_ignored(app, common, ARRAY_SIZE(common));
	check_signal_before_cuda();
}

/* Armed, but no step marker ever comes: no file, one line naming the ways out. */
TEST(trigger_signal_no_marker)
{
	const char *argv[] = {
	    proc_build_path("test/apps/trig-app"), "-s", "4", "-n", "-u", "1", NULL};
	const char *env[] = {"GPROF_TRIGGER=signal", NULL};
	struct e2e_run r;

	e2e_run(&r, argv, e2e_cupti(true), env, true);
	assert_no_trace_one_line(&r, "gprof: a SIGUSR2 armed a window, but no step marker");
	ASSERT_STR_CONTAINS(r.res.err, "GPROF_SCHEDULE=all");
	e2e_free(&r);
}

/* Time windows: the program's hooked calls in time order (ground truth), each recorded or not. */
struct timeline {
	size_t n;
	long long first_call_ns; /* the program's first CUDA call, of any kind */
	long long *start_ns;
	int *call, *step;
	bool *recorded;
};

static void timeline_of(const struct e2e_run *r, const struct seen *s, struct timeline *tl)
{
	json_t *sorted = gtlog_sorted(r->gt, "{\"type\":\"api\"}", "start");
	size_t i, n = json_array_size(sorted);
	json_t *ev;

	ASSERT(sorted && n);
	memset(tl, 0, sizeof(*tl));
	tl->start_ns = calloc(n, sizeof(*tl->start_ns));
	tl->call = calloc(n, sizeof(*tl->call));
	tl->step = calloc(n, sizeof(*tl->step));
	tl->recorded = calloc(n, sizeof(*tl->recorded));
	ASSERT(tl->start_ns && tl->call && tl->step && tl->recorded);
	tl->first_call_ns = gtlog_int(json_array_get(sorted, 0), "start");
	json_array_foreach(sorted, i, ev)
	{
		json_t *args = json_object_get(ev, "args");
		int c = call_of(gtlog_str(ev, "name"));
		int k = c < 0 ? -1 : step_of(c, gtlog_int(args, "bytes"), grid_x(args));

		if (k < 0)
			continue;
		tl->start_ns[tl->n] = gtlog_int(ev, "start");
		tl->call[tl->n] = c;
		tl->step[tl->n] = k;
		tl->recorded[tl->n++] = s->calls[c][k] > 0;
	}
	json_decref(sorted);
}

static void timeline_free(struct timeline *tl)
{
	free(tl->start_ns);
	free(tl->call);
	free(tl->step);
	free(tl->recorded);
}

struct expect_time {
	double delay_s;	  /* < 0: the first call is recorded */
	int first_step;	  /* >= 0: the window begins with this step's first call */
	bool ends_before; /* a duration ends it while the program runs */
};

/*
 * One window over a run of trig-app: its calls are one unbroken run of the program's calls in
 * time order; with a delay none starts before the first CUDA call plus the delay (less a
 * quarter of it: libgprof's clock starts at its hook, a little before the log's); a window
 * that a duration ends misses the program's last calls (trig-app -W makes them come after the
 * file is written). Steps between the first and last spans have all their calls.
 */
static void check_time_window(const struct e2e_run *r, const struct expect_time *want)
{
	struct timeline tl;
	struct seen s;
	size_t i0 = SIZE_MAX, i1 = 0;
	int span_first = -1, span_last = -1;

	ASSERT_EQ(r->res.status, 0);
	ASSERT_EQ(r->n_traces, 1);
	check_ground_truth(r, app_steps(r));
	seen_in_trace(&r->traces[0], false, &s);
	timeline_of(r, &s, &tl);
	for (size_t i = 0; i < tl.n; i++) {
		if (tl.recorded[i] && i0 == SIZE_MAX)
			i0 = i;
		if (tl.recorded[i])
			i1 = i;
	}
	ASSERT_MSG(i0 != SIZE_MAX, "no call recorded");
	for (size_t i = i0; i <= i1; i++)
		ASSERT_MSG(tl.recorded[i], "call %zu of %zu (step %d) missing from the window", i,
			   tl.n, tl.step[i]);
	if (want->delay_s >= 0)
		ASSERT_MSG(tl.start_ns[i0] - tl.first_call_ns >=
			       (long long)(want->delay_s * 0.75e9),
			   "the window began %lld ns after the first call",
			   tl.start_ns[i0] - tl.first_call_ns);
	else if (want->first_step < 0)
		ASSERT_EQ(i0, 0);
	if (want->first_step >= 0)
		ASSERT_MSG(tl.step[i0] == want->first_step && tl.call[i0] == CALL_MALLOC,
			   "began at step %d, call %d", tl.step[i0], tl.call[i0]);
	ASSERT_MSG(want->ends_before ? i1 < tl.n - 1 : i1 == tl.n - 1, "ended at %zu of %zu", i1,
		   tl.n);
	for (int k = 0; k < MAX_STEPS; k++) {
		span_first = span_first < 0 && s.spans[k] ? k : span_first;
		span_last = s.spans[k] ? k : span_last;
	}
	ASSERT(span_first >= 0);
	for (int k = span_first + 1; k < span_last; k++)
		for (int c = 0; c < N_CALLS; c++)
			ASSERT_MSG(s.spans[k] && s.calls[c][k] == 1, "step %d inside the window",
				   k);
	timeline_free(&tl);
}

TEST(trigger_time_window)
{
	const char *app = proc_build_path("test/apps/trig-app");
	const char *waits[] = {app, "-s", "5", "-d", "10", "-W", NULL};
	const char *runs[] = {app, "-s", "40", "-d", "10", NULL};
	static const char *const both[] = {"GPROF_DELAY=0.3", "GPROF_DURATION=0.3", NULL};
	static const char *const duration[] = {"GPROF_DURATION=0.3", NULL};
	static const char *const delay[] = {"GPROF_DELAY=0.2", NULL};
	const struct {
		const char *const *argv, *const *env;
		struct expect_time want;
	} t[] = {
	    {waits, both, {.delay_s = 0.3, .first_step = -1, .ends_before = true}},
	    {waits, duration, {.delay_s = -1, .first_step = -1, .ends_before = true}},
	    {runs, delay, {.delay_s = 0.2, .first_step = -1, .ends_before = false}},
	};

	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		struct e2e_run r;

		e2e_run(&r, t[i].argv, e2e_cupti(false), t[i].env, true);
		check_time_window(&r, &t[i].want);
		if (i == 0)
			ASSERT_STR_EQ(
			    trace_str(json_object_get(r.traces[0].root, "gprof"), "schedule"),
			    "time window; delay=0.3; duration=0.3");
		e2e_free(&r);
	}
}

/*
 * A window the timer opens without CUPTI: its thread makes no CUDA calls, so what was in use
 * at the opening is unknown, and the program (-m) frees inside the window what it allocated
 * before it. The gpu_memory counter holds the window's own allocations: each step's block
 * while it lives, 0 between (it used to go below 0 and wrap past 2^63).
 */
TEST(trigger_time_window_memory)
{
	const char *argv[] = {
	    proc_build_path("test/apps/trig-app"), "-s", "12", "-d", "50", "-m", NULL};
	static const char *const env[] = {"GPROF_DELAY=0.2", "GPROF_DURATION=0.3", NULL};
	struct e2e_run r;
	int held = 0;
	size_t i;
	json_t *ev;

	e2e_run(&r, argv, e2e_cupti(false), env, true);
	ASSERT_MSG(r.res.status == 0 && r.n_traces == 1, "%s", r.res.err);
	json_array_foreach(r.traces[0].events, i, ev)
	{
		long long bytes;

		if (strcmp(trace_str(ev, "cat"), "gpu_memory"))
			continue;
		bytes = e2e_arg_int(ev, "allocated");
		/* step k allocates (k + 1) * 4096 bytes */
		ASSERT_MSG(bytes >= 0 && bytes % 4096 == 0 && bytes <= 12 * 4096, "allocated %lld",
			   bytes);
		held += bytes > 0;
	}
	ASSERT_GT(held, 0);
	e2e_free(&r);
}

/* A delay the program never reaches: no file, one line saying so. */
TEST(trigger_delay_not_reached)
{
	check_no_trace("3", "GPROF_DELAY=600",
		       "gprof: the program ended before GPROF_DELAY had passed");
}

/* GPROF_DURATION ends a window that cudaProfilerStart or SIGUSR2 began and nothing stopped. */
static void check_duration_bounds(const char *opt, const char *value, const char *const env[])
{
	const char *argv[] = {
	    proc_build_path("test/apps/trig-app"), "-s", "5", "-d", "10", opt, value, "-W", NULL};
	const struct expect_time want = {.delay_s = -1, .first_step = 2, .ends_before = true};
	struct e2e_run r;

	e2e_run(&r, argv, e2e_cupti(false), env, true);
	check_time_window(&r, &want);
	e2e_free(&r);
}

TEST(trigger_signal_duration)
{
	static const char *const env[] = {"GPROF_TRIGGER=signal", "GPROF_SCHEDULE=all",
					  "GPROF_DURATION=0.2", NULL};

	check_duration_bounds("-u", "2", env);
}

TEST(trigger_profiler_api_duration)
{
	static const char *const env[] = {"GPROF_TRIGGER=cuda-profiler-api", "GPROF_DURATION=0.2",
					  NULL};

	check_duration_bounds("-p", "2:-", env);
}

/* Each configuration's stepper mode, as docs/TRIGGERS.md's table says. */
TEST(trigger_config_to_stepper)
{
	static const struct {
		const char *a, *b;
		enum gprof_stepper_mode mode;
		bool want;
		uint64_t delay_ns, duration_ns;
	} t[] = {
	    {"GPROF_LOG=warn", NULL, GPROF_STEPPER_SCHEDULE, true, 0, 0},
	    {"GPROF_SCHEDULE=all", NULL, GPROF_STEPPER_MANUAL, true, 0, 0},
	    {"GPROF_DELAY=1.5", NULL, GPROF_STEPPER_MANUAL, true, 1500000000ull, 0},
	    {"GPROF_DURATION=2", "GPROF_SCHEDULE=all", GPROF_STEPPER_MANUAL, true, 0,
	     2000000000ull},
	    {"GPROF_TRIGGER=cuda-profiler-api", NULL, GPROF_STEPPER_MANUAL, false, 0, 0},
	    {"GPROF_TRIGGER=cuda-profiler-api", "GPROF_DURATION=3", GPROF_STEPPER_MANUAL, false, 0,
	     3000000000ull},
	    {"GPROF_TRIGGER=signal", NULL, GPROF_STEPPER_ARMED, false, 0, 0},
	    {"GPROF_TRIGGER=signal", "GPROF_SCHEDULE=all", GPROF_STEPPER_MANUAL, false, 0, 0},
	    {"GPROF_TRIGGER=signal", "GPROF_DELAY=4", GPROF_STEPPER_ARMED, false, 4000000000ull, 0},
	};
	struct gprof_config cfg;
	struct gprof_stepper_trigger trig;
	char out[1024];

	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		char *env[] = {(char *)t[i].a, (char *)t[i].b, NULL};

		ASSERT_MSG(load(&cfg, env, out, sizeof(out)) == 0, "%s: %s", t[i].a, out);
		ASSERT_EQ(gprof_stepper_trigger_of(cfg.trigger, cfg.schedule.all, cfg.delay,
						   cfg.duration, &trig),
			  0);
		ASSERT_MSG(
		    trig.mode == t[i].mode && trig.want == t[i].want &&
			trig.delay_ns == t[i].delay_ns && trig.duration_ns == t[i].duration_ns,
		    "%s %s: mode %d want %d delay %" PRIu64 " duration %" PRIu64, t[i].a,
		    t[i].b ? t[i].b : "", trig.mode, trig.want, trig.delay_ns, trig.duration_ns);
	}
}

/* The README's row of GPROF_TRIGGER, as the configuration table prints it. */
static char *trigger_readme_row(void)
{
	static char text[1 << 16];
	FILE *f = fmemopen(text, sizeof(text), "w");
	char *row;

	ASSERT(f);
	gprof_config_print_table(f);
	ASSERT(fclose(f) == 0);
	row = strstr(text, "| `GPROF_TRIGGER` |");
	ASSERT_MSG(row, "no GPROF_TRIGGER row in:\n%s", text);
	row[strcspn(row, "\n")] = '\0';
	return row;
}

/* Whether text names word as one of a list: after ": " or "; " (help) or as a cell. */
static bool names_trigger(const char *text, const char *fmt, const char *word)
{
	char needle[96];

	snprintf(needle, sizeof(needle), fmt, word);
	return strstr(text, needle) != NULL;
}

/*
 * Every GPROF_TRIGGER value has its row in GPROF_TRIGGER_TABLE, and what is written by hand
 * about triggers names it: its word parses back to it, the stepper has a mode for it, the
 * README's row (help and accepted forms), gprof-run's --trigger help and docs/TRIGGERS.md's
 * table name it. A value past the table is refused, never read past an array.
 */
TEST(trigger_table_whole)
{
	const struct gprof_seconds unset = {0};
	char *row = trigger_readme_row(), *accepted = strstr(row, "; accepted: "), *doc, *run;
	struct gprof_stepper_trigger trig;
	struct gprof_config cfg;
	size_t len;

	ASSERT_MSG(accepted, "no accepted forms in %s", row);
	text_read_file(proc_src_path("docs/TRIGGERS.md"), &doc, &len);
	text_read_file(proc_src_path("scripts/gprof-run"), &run, &len);
	ASSERT(strstr(run, "--trigger T"));
	run = strstr(run, "--trigger T");
	run[strcspn(run, "\n")] = '\0';
	for (int t = 0; t < GPROF_TRIGGER_COUNT; t++) {
		const char *word = gprof_config_trigger_name(t);
		char entry[64], out[1024], *env[] = {entry, NULL};

		ASSERT_MSG(strcmp(word, "?"), "trigger %d has no word", t);
		snprintf(entry, sizeof(entry), "GPROF_TRIGGER=%s", word);
		ASSERT_MSG(load(&cfg, env, out, sizeof(out)) == 0 && cfg.trigger == t,
			   "%s: trigger %d: %s", entry, cfg.trigger, out);
		ASSERT_EQ(gprof_stepper_trigger_of(t, false, unset, unset, &trig), 0);
		ASSERT_MSG(trig.mode == GPROF_STEPPER_SCHEDULE ||
			       trig.mode == GPROF_STEPPER_MANUAL ||
			       trig.mode == GPROF_STEPPER_ARMED,
			   "%s: mode %d", word, trig.mode);
		ASSERT_MSG(names_trigger(accepted, " %s", word), "%s not in %s", word, accepted);
		ASSERT_MSG(names_trigger(row, ": %s, ", word) || names_trigger(row, "; %s, ", word),
			   "%s not in the help of %s", word, row);
		ASSERT_MSG(names_trigger(run, " %s", word), "%s not in gprof-run's %s", word, run);
		ASSERT_MSG(names_trigger(doc, "\n| `%s`", word) ||
			       names_trigger(doc, "\n| `GPROF_TRIGGER=%s`", word),
			   "%s not in docs/TRIGGERS.md's table", word);
	}
	ASSERT_EQ(gprof_stepper_trigger_of(GPROF_TRIGGER_COUNT, false, unset, unset, &trig),
		  -EINVAL);
	ASSERT_EQ(gprof_stepper_trigger_of(-1, false, unset, unset, &trig), -EINVAL);
	ASSERT_STR_EQ(gprof_config_trigger_name(GPROF_TRIGGER_COUNT), "?");
}
