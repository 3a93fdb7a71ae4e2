/*
 * The collector thread: works through completed CUPTI buffers, flushing CUPTI while its kinds
 * are on; drains each window that ended (flushes CUPTI until every launch of the window has its
 * GPU record and every GPU record of its launches its launch record, or drain_ms passes),
 * finishes and releases it; disables CUPTI's kinds when no window needs them. The application
 * never waits for any of this.
 */
#define PR_FMT "collector: "
#include "collector/internal.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/thread.h"

#define SETTLE_MS 5    /* after a window ends: time for API calls in flight elsewhere to return */
#define POLL_MS	  10   /* flush period while a window waits for GPU records */
#define IDLE_MS	  1000 /* nothing to drain: sleep until kicked, looking now and then */
/*
 * With CUDA 13's per-thread buffers a thread's API records reach us only when its buffer fills
 * (thousands of calls) or at a flush, while GPU records come as the GPU finishes: until then
 * each GPU record waits in the held table. Flushing at least every FLUSH_MS, and sooner once
 * CROWDED records wait (at most every CROWDED_MS), keeps that table small however many
 * threads launch.
 */
#define FLUSH_MS   100
#define CROWDED	   4096
#define CROWDED_MS 2

static uint64_t flushed_ms; /* when flush_if_due() last flushed; the thread's own */

static uint64_t mono_ms(void)
{
	return gprof_clock_ns(CLOCK_MONOTONIC) / 1000000;
}

static void drain_queue(const struct gprof_coll *c)
{
	struct gprof_coll_buf b;
	size_t n;

	while (gprof_coll_buffers_take(&b)) {
		if (b.valid)
			gprof_coll_attrib_buffer(&b);
		gprof_coll_buffers_give_back(&b);
		/* CUPTI's count of records it had no buffer room for, since the last call. */
		if (c->cupti.dropped(NULL, 0, &n) == CUPTI_SUCCESS && n)
			gprof_coll_attrib_dropped(n);
	}
}

/* One line per kind of loss, printed before the release so the window's metadata has it. */
static void report(const struct gprof_coll *c, const struct gprof_coll_win *w)
{
	unsigned long long num = (unsigned long long)gprof_export_window_number(w->id);
	struct gprof_coll_held *held = gprof_coll_attrib_held();
	uint32_t gpu_peak = gprof_coll_held_peak(held, GPROF_COLL_HELD_GPU, true);
	uint32_t api_peak = gprof_coll_held_peak(held, GPROF_COLL_HELD_API, true);

	if (w->dropped)
		pr_warn("window %llu: %llu CUPTI activity records were dropped (activity buffers "
			"full); raise GPROF_BUFFER_MB",
			num, (unsigned long long)w->dropped);
	if (w->untimed || w->unknown)
		pr_warn("window %llu: skipped CUPTI records: %llu without timestamps, %llu "
			"buffers cut at a record of an unknown kind",
			num, (unsigned long long)w->untimed, (unsigned long long)w->unknown);
	if (w->pending + w->no_gpu)
		pr_warn(
		    "window %llu: %llu launches had no GPU record %u ms after they were made or "
		    "the window ended (still running, or lost); written without it",
		    num, (unsigned long long)(w->pending + w->no_gpu), c->drain_ms);
	if (w->unheld)
		pr_warn("window %llu: %llu launch and GPU records written without their ac2g link: "
			"the table of those waiting for their partner was full (%.1f MiB, half of "
			"what GPROF_BUFFER_MB gives the collector); raise GPROF_BUFFER_MB",
			num, (unsigned long long)w->unheld,
			(double)gprof_coll_mem_cap() / 2 / (1 << 20));
	if (w->unlinked)
		pr_info("window %llu: %llu GPU records without their launch record", num,
			(unsigned long long)w->unlinked);
	pr_dbg("window %llu: at most %u GPU records waited for their launch, %u launches for their "
	       "GPU record",
	       num, gpu_peak, api_peak);
}

static void finish(const struct gprof_coll *c, struct gprof_coll_win *w)
{
	gprof_coll_attrib_finish(w);
	report(c, w);
	if (w->dropped)
		gprof_export_window_add_cupti_dropped(w->id, w->dropped);
	gprof_coll_win_release(w);
}

/* The ended window with the smallest id above `after` (windows finish in order), or NULL. */
static struct gprof_coll_win *next_ended(struct gprof_coll *c, uint32_t after)
{
	struct gprof_coll_win *best = NULL;

	for (unsigned i = 0; i < GPROF_COLL_WINDOWS; i++) {
		struct gprof_coll_win *w = &c->wins[i];
		uint32_t id = __atomic_load_n(&w->id, __ATOMIC_ACQUIRE);

		if (id > after && gprof_coll_win_ended(w) && (!best || id < best->id))
			best = w;
	}
	return best;
}

/* While the kinds are on: flushes when it is time; returns how long to sleep. */
static unsigned flush_if_due(const struct gprof_coll *c)
{
	uint64_t now = mono_ms();

	if (gprof_coll_state(c) != GPROF_COLL_ENABLED)
		return IDLE_MS;
	if (gprof_coll_buffers_low() || now >= flushed_ms + FLUSH_MS ||
	    (now >= flushed_ms + CROWDED_MS &&
	     gprof_coll_held_count(gprof_coll_attrib_held(), GPROF_COLL_HELD_GPU) >= CROWDED)) {
		c->cupti.flush_all(0);
		drain_queue(c);
		flushed_ms = now;
		gprof_coll_attrib_expire(now, c->drain_ms);
	}
	return (unsigned)(flushed_ms + FLUSH_MS - now);
}

/* Flushes and finishes what it can; returns how long to sleep. */
static unsigned drain_windows(struct gprof_coll *c)
{
	uint64_t now = mono_ms();
	struct gprof_coll_win *w;
	bool settled = false;

	for (w = next_ended(c, 0); w; w = next_ended(c, w->id)) {
		if (!w->ended_ms)
			w->ended_ms = now;
		settled |= now >= w->ended_ms + SETTLE_MS;
	}
	if (!settled)
		return next_ended(c, 0) ? SETTLE_MS : IDLE_MS;
	c->cupti.flush_all(0);
	drain_queue(c);
	now = mono_ms();
	/* finished once every launch has its GPU record and every GPU record its launch's */
	while ((w = next_ended(c, 0)) && w->ended_ms && now >= w->ended_ms + SETTLE_MS &&
	       ((!w->pending && !gprof_coll_attrib_gpu_waiting(w)) ||
		now >= w->ended_ms + c->drain_ms))
		finish(c, w);
	return next_ended(c, 0) ? POLL_MS : IDLE_MS;
}

/* CUPTI failed or was turned off: nothing more comes; let every window go. */
static void finish_all(struct gprof_coll *c)
{
	struct gprof_coll_win *w;

	for (unsigned i = 0; i < GPROF_COLL_WINDOWS; i++) {
		w = &c->wins[i];
		if (__atomic_load_n(&w->id, __ATOMIC_ACQUIRE))
			finish(c, w);
	}
}

/* cupti.c's: the kinds are turned off when no window needs them (true if they were). */
static bool (*idle_off)(struct gprof_coll *c);

/* No window: kinds off, their last records read and forgotten. */
static void go_idle(struct gprof_coll *c)
{
	if (!idle_off(c))
		return;
	c->cupti.flush_all(0);
	drain_queue(c);
	pthread_mutex_lock(&c->lock);
	if (!gprof_coll_windows_in_use(c->wins))
		gprof_coll_attrib_reset();
	pthread_mutex_unlock(&c->lock);
}

static void *run(void *arg)
{
	struct gprof_coll *c = arg;
	unsigned wait = IDLE_MS, flush_wait;

	for (;;) {
		enum gprof_coll_state s;

		gprof_coll_wait(wait);
		drain_queue(c);
		s = gprof_coll_state(c);
		if (s == GPROF_COLL_FAILED || s == GPROF_COLL_OFF) {
			finish_all(c);
			break;
		}
		wait = drain_windows(c);
		flush_wait = flush_if_due(c);
		wait = flush_wait < wait ? flush_wait : wait;
		if (!gprof_coll_windows_in_use(c->wins))
			go_idle(c);
		if (__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE) &&
		    !gprof_coll_windows_in_use(c->wins))
			break;
	}
	return NULL;
}

int gprof_coll_thread_start(struct gprof_coll *c, bool (*disable_if_idle)(struct gprof_coll *c))
{
	idle_off = disable_if_idle;
	return gprof_thread_start(&c->thread, run, c);
}

void gprof_coll_thread_stop(struct gprof_coll *c, unsigned timeout_ms)
{
	struct timespec until;
	bool running;

	pthread_mutex_lock(&c->lock);
	running = c->thread_running;
	pthread_mutex_unlock(&c->lock);
	if (!running)
		return;
	gprof_coll_kick();
	until = gprof_clock_deadline(CLOCK_REALTIME, timeout_ms * 1000000ull);
	if (pthread_timedjoin_np(c->thread, NULL, &until) != 0) {
		pr_warn("CUPTI records were still being drained after %u ms; the last window may "
			"miss some GPU activity",
			timeout_ms);
		return;
	}
	pthread_mutex_lock(&c->lock);
	c->thread_running = false;
	pthread_mutex_unlock(&c->lock);
}
