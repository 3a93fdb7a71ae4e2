/*
 * The sources of triggers that act between step markers (docs/TRIGGERS.md), each a table of
 * operations: SIGUSR2 for GPROF_TRIGGER=signal (GPROF_TRIGGER_TABLE's source column) and the
 * timer of GPROF_DELAY and GPROF_DURATION. The handler only counts signals; they are acted on
 * at the next hooked call or step marker, as requests to the session's stepper. The timer is a
 * thread of ours, started at the first CUDA call, that sleeps until the stepper's next deadline.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PR_FMT ""
#include "common/clock.h"
#include "common/config.h"
#include "common/log.h"
#include "common/thread.h"
#include "preload/preload.h"
#include "scheduler/scheduler.h"

/* Written once by gprof_trigger_setup (the constructor); read afterwards. */
static const struct gprof_config *cfg;
static struct gprof_trigger_session session;

/* A source of trigger events: what it does at each point of the session; NULL: nothing. */
struct source {
	void (*setup)(void);	  /* the session's init (the constructor) */
	void (*first_call)(void); /* the first CUDA call, before recording can start */
	void (*start)(void);	  /* the first CUDA call, once the stepper has started */
	void (*take)(void);	  /* what came since acts: after GPROF_HOT_SIGNAL, at a tick */
	void (*marker)(void);	  /* a step marker, before the stepper counts it */
	void (*wake)(void);	  /* the stepper's next deadline may have changed */
	void (*stop)(void);	  /* exit */
	void (*forked)(void);	  /* a child after fork(): none of the parent's goes on */
};

/*
 * The sources in use, set by gprof_trigger_setup and emptied in a fork child: the trigger's
 * (its row's source) and the timer when GPROF_DELAY or GPROF_DURATION is set.
 */
static const struct source *sources[2];

/* Runs operation `op` of every source in use that has it. */
#define EACH_SOURCE(op)                                             \
	do {                                                        \
		for (size_t i_ = 0; i_ < ARRAY_SIZE(sources); i_++) \
			if (sources[i_] && sources[i_]->op)         \
				sources[i_]->op();                  \
	} while (0)

/* SIGUSR2s not acted on yet: added to by the handler, taken by the session. */
static unsigned pending;
/* Our handler is installed in this process: written by usr2's setup and at fork. */
static int installed;

static void on_usr2(int sig)
{
	(void)sig;
	/* Lock-free atomics only, which are async-signal-safe; errno is untouched. */
	__atomic_add_fetch(&pending, 1, __ATOMIC_RELEASE);
	/* The next hooked call (or marker) looks at the session. */
	gprof_hot_set(GPROF_HOT_SIGNAL, true);
}

static bool ours(const struct sigaction *sa)
{
	return !(sa->sa_flags & SA_SIGINFO) && sa->sa_handler == on_usr2;
}

/*
 * Only where SIGUSR2 is at its default. A plain sa_handler, so a handler the program installs
 * later and that calls the previous one the old way (`old(sig)`) still reaches us; SA_RESTART,
 * so the program's system calls go on as they would have.
 */
static void install_handler(void)
{
	struct sigaction sa = {.sa_handler = on_usr2, .sa_flags = SA_RESTART}, old;

	if (sigaction(SIGUSR2, NULL, &old) != 0)
		return;
	if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) {
		pr_warn("GPROF_TRIGGER=signal: SIGUSR2 is already ignored or handled in this "
			"process, which libgprof leaves alone, so kill -USR2 records nothing; use "
			"GPROF_TRIGGER=cuda-profiler-api or GPROF_DELAY instead");
		return;
	}
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR2, &sa, NULL) == 0)
		__atomic_store_n(&installed, 1, __ATOMIC_RELEASE);
}

static unsigned take_pending(void)
{
	return __atomic_exchange_n(&pending, 0, __ATOMIC_ACQ_REL);
}

static void check_handler(void)
{
	static int warned;
	struct sigaction cur;

	if (!__atomic_load_n(&installed, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&warned, __ATOMIC_RELAXED) || sigaction(SIGUSR2, NULL, &cur) != 0 ||
	    ours(&cur) || __atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		return;
	pr_warn("GPROF_TRIGGER=signal: the program put a SIGUSR2 handler of its own in place of "
		"libgprof's; kill -USR2 starts windows only if that handler calls the one it "
		"replaced");
}

/*
 * A window armed by the run's n-th SIGUSR2 begins at the next step marker; in a gprof-run
 * (GPROF_RUN_DIR), at the step the run's first process to act chose, one after its next, so
 * that processes a step apart record the same steps.
 */
static void arm_window(unsigned n)
{
	uint64_t next = gprof_stepper_next_marker(session.stepper);
	uint64_t at = gprof_run_agree(n, gprof_run_given() ? next + 1 : next);

	gprof_stepper_arm_from(session.stepper, at > next ? at : next);
	pr_info("SIGUSR2: a window of %u warmup and %u active steps begins at step %" PRIu64,
		cfg->schedule.warmup, cfg->schedule.active, at > next ? at : next);
}

/* SIGUSR2s received meanwhile: under `all` each starts or ends recording, else one arms. */
static void take_signals(void)
{
	static unsigned taken; /* SIGUSR2s acted on: the run's processes count them alike */
	unsigned n = take_pending(), nth;
	enum gprof_stepper_result r;

	if (!n || (cfg->schedule.all && n % 2 == 0))
		return;
	nth = __atomic_add_fetch(&taken, n, __ATOMIC_RELAXED);
	r = gprof_stepper_request(session.stepper, GPROF_STEPPER_TOGGLE, gprof_realtime_ns(),
				  gprof_tid());
	if (r == GPROF_STEPPER_BUSY || (!cfg->schedule.all && n > 1))
		pr_warn("SIGUSR2 ignored: a window armed by an earlier one is still to come or "
			"under way");
	else if (r == GPROF_STEPPER_TAKEN && !cfg->schedule.all)
		arm_window(nth);
	gprof_trigger_wake();
}

/* At a step marker: an arm that came before it begins its window there. */
static void usr2_marker(void)
{
	check_handler();
	take_signals();
}

/* In a child after fork(): it gets SIGUSR2's default action back. */
static void usr2_forked(void)
{
	struct sigaction cur, dfl = {.sa_handler = SIG_DFL};

	if (__atomic_load_n(&installed, __ATOMIC_ACQUIRE) && sigaction(SIGUSR2, NULL, &cur) == 0 &&
	    ours(&cur))
		sigaction(SIGUSR2, &dfl, NULL);
	__atomic_store_n(&installed, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&pending, 0, __ATOMIC_RELEASE);
}

/*
 * The handler goes in at once (a sigaction, no CUDA call): a SIGUSR2 sent before the first CUDA
 * call must not end the process by its default action; the session acts on it at that call. The
 * process joins its gprof-run (run.c) at its first CUDA call, before recording can start.
 */
static void usr2_setup(void)
{
	gprof_run_setup();
	install_handler();
}

static const struct source usr2_source = {
    .setup = usr2_setup,
    .first_call = gprof_run_register,
    .take = take_signals,
    .marker = usr2_marker,
    .forked = usr2_forked,
};

/* The timer's callbacks, on its thread (never the program's). */
static uint64_t timer_deadline(void)
{
	return session.inert() ? UINT64_MAX : gprof_stepper_deadline(session.stepper);
}

static void timer_tick(void)
{
	if (session.inert())
		return;
	session.own_thread();
	gprof_trigger_take_signals();
	gprof_stepper_tick(session.stepper, gprof_realtime_ns(), gprof_tid());
}

/*
 * The timer. timer_gen changes on every wake-up call, so a deadline computed before the call
 * is looked at again. Lock order: the stepper's lock, then timer_lock (wake-up calls come from
 * the stepper's callbacks); the thread never takes the stepper's lock under timer_lock.
 */
static pthread_mutex_t timer_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t timer_cond = PTHREAD_COND_INITIALIZER;
static unsigned timer_gen;
static bool timer_quit;

/* Under timer_lock: sleeps until deadline_ns (CLOCK_REALTIME, the condition's clock). */
static void sleep_until(uint64_t deadline_ns)
{
	struct timespec ts = gprof_clock_timespec(deadline_ns);

	if (deadline_ns == UINT64_MAX)
		pthread_cond_wait(&timer_cond, &timer_lock);
	else
		pthread_cond_timedwait(&timer_cond, &timer_lock, &ts);
}

static void *timer_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "gprof-timer");
	for (;;) {
		unsigned gen;
		uint64_t deadline;
		bool quit;

		pthread_mutex_lock(&timer_lock);
		gen = timer_gen;
		pthread_mutex_unlock(&timer_lock);
		deadline = timer_deadline();
		pthread_mutex_lock(&timer_lock);
		while (!timer_quit && gen == timer_gen && gprof_realtime_ns() < deadline)
			sleep_until(deadline);
		quit = timer_quit;
		pthread_mutex_unlock(&timer_lock);
		if (quit)
			return NULL;
		timer_tick();
	}
}

/* A detached thread that takes no signal: the program's handlers run on its own threads. */
static void start_timer(void)
{
	int err = gprof_thread_start(NULL, timer_main, NULL);
	char why[GPROF_SPACE_ERROR_MAX];

	if (err)
		pr_warn("cannot start the timer of GPROF_DELAY and GPROF_DURATION (%s): their "
			"windows begin and end at step markers only",
			gprof_space_error(err, why, sizeof(why)));
}

static void timer_wake(void)
{
	pthread_mutex_lock(&timer_lock);
	timer_gen++;
	pthread_cond_signal(&timer_cond);
	pthread_mutex_unlock(&timer_lock);
}

static void timer_stop(void)
{
	pthread_mutex_lock(&timer_lock);
	timer_quit = true;
	pthread_cond_signal(&timer_cond);
	pthread_mutex_unlock(&timer_lock);
}

static const struct source timer_source = {
    .start = start_timer,
    .wake = timer_wake,
    .stop = timer_stop,
};

/* The source of each GPROF_TRIGGER_TABLE row's source column. */
#define SOURCE_NONE NULL
#define SOURCE_USR2 (&usr2_source)

void gprof_trigger_setup(const struct gprof_config *config,
			 const struct gprof_trigger_session *lent)
{
	static const struct source *const of_trigger[GPROF_TRIGGER_COUNT] = {
#define X(name, word, help, mode, start, steps, source, hint) \
	[GPROF_TRIGGER_##name] = SOURCE_##source,
	    GPROF_TRIGGER_TABLE(X)
#undef X
	};

	cfg = config;
	session = *lent;
	if (cfg->trigger >= 0 && cfg->trigger < GPROF_TRIGGER_COUNT)
		sources[0] = of_trigger[cfg->trigger];
	if (cfg->delay.set || cfg->duration.set)
		sources[1] = &timer_source;
	EACH_SOURCE(setup);
}

void gprof_trigger_first_call(void)
{
	EACH_SOURCE(first_call);
}

void gprof_trigger_start(void)
{
	static int started;

	if (!__atomic_exchange_n(&started, 1, __ATOMIC_ACQ_REL))
		EACH_SOURCE(start);
}

void gprof_trigger_take_signals(void)
{
	EACH_SOURCE(take);
}

void gprof_trigger_marker(void)
{
	EACH_SOURCE(marker);
}

void gprof_trigger_wake(void)
{
	EACH_SOURCE(wake);
}

void gprof_trigger_stop(void)
{
	EACH_SOURCE(stop);
}

/* In a child after fork(): it has no timer, and gets SIGUSR2's default action back. */
void gprof_trigger_forked(void)
{
	EACH_SOURCE(forked);
	memset(sources, 0, sizeof(sources));
}
