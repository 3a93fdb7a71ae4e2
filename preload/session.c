/*
 * The session ties preload/ together: it owns the stepper, hands its window transitions to
 * preload/windows.c, drives the collector (CUPTI) from the others, lends the stepper to the
 * triggers (preload/trigger.c), and passes the hooks' calls and NVTX events of the current
 * window on to preload/events.c.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PR_FMT ""
#include "collector/collector.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/log.h"
#include "common/thread.h"
#include "export/export.h"
#include "preload/preload.h"
#include "scheduler/scheduler.h"

/* Written once by gprof_session_init (before any other thread), read everywhere. */
static const struct gprof_config *cfg;
static char schedule_str[GPROF_CONFIG_DESCRIBE_MAX];
static struct gprof_stepper stepper;
/* Cleared by gprof_session_init, set again in a fork child; read by any thread. */
static bool inert = true;

static bool is_inert(void)
{
	return __atomic_load_n(&inert, __ATOMIC_ACQUIRE);
}

/*
 * --torch's start-up hook holds the window it recorded past the step marker that ends it
 * (gprof_session_torch_hold): which one (its span is export's).
 */
static uint32_t torch_held;
static int cuda_used;
static pid_t forked_from; /* a child of fork() that has not exec'd: its parent's pid */
/*
 * The first CUDA call's set-up is done. Until then no thread of the program may call CUDA from
 * here: that call may be inside the runtime's initialisation (CUDA_INJECTION64_PATH), waiting
 * for the stepper's lock that a step marker holds while its warmup asks for the runtime's facts.
 */
static int cuda_ready;
static int profiler_started; /* cudaProfilerStart seen: for the exit's hints */

/*
 * No CUDA calls of our own: on a thread inside the first-call path (maybe inside cuInit) or on
 * the timer's thread (never the program's), nor once the process exits (the runtime's own
 * atexit teardown has run: calls would crash).
 */
static GPROF_TLS bool no_own_calls;
static int exiting;

#define COLLECTOR_FINI_MS 3000
#define EXPORT_FINI_MS	  10000

/*
 * The window that application events go to: gprof_hot's recording word. None once the process
 * exits: the last step's span ends at the exit's timestamp, taken after the word is cleared,
 * and a thread still running must not add a call that outlasts that span on its track.
 */
static bool window_get(uint32_t *id)
{
	*id = gprof_hot_window(__atomic_load_n(&gprof_hot, __ATOMIC_ACQUIRE));
	return *id != 0;
}

/* CUDA is in use and calling it from this thread is safe now (see no_own_calls). */
static bool own_calls_safe(void)
{
	return !no_own_calls && !__atomic_load_n(&exiting, __ATOMIC_ACQUIRE) &&
	       __atomic_load_n(&cuda_ready, __ATOMIC_ACQUIRE);
}

/* The runtime's facts, once, when own calls are safe. */
static int facts_done;

static void runtime_facts_now(void)
{
	if (!own_calls_safe() || __atomic_exchange_n(&facts_done, 1, __ATOMIC_ACQ_REL))
		return;
	gprof_runtime_facts();
}

/* Inline: every hooked call in a window asks. */
static inline void runtime_facts(void)
{
	if (!__atomic_load_n(&facts_done, __ATOMIC_ACQUIRE))
		runtime_facts_now();
}

/*
 * Window `id` opens at begin_ns: its device memory counter starts from what the driver says is
 * in use on this thread's device, as one gpu_memory event at the window's start.
 */
static void memory_at_open(uint32_t id, uint64_t begin_ns, struct gprof_memory_base *base)
{
	int device = 0;
	uint64_t at_ns = 0;
	int64_t in_use = (cfg->activities & GPROF_ACT_MEMORY) && own_calls_safe()
			     ? gprof_runtime_memory_in_use(&device, &at_ns)
			     : -1;
	struct gprof_export_event e = {
	    .kind = GPROF_EXPORT_MEMORY, .window = id, .ts_ns = begin_ns};

	*base = (struct gprof_memory_base){.device = device, .bytes = in_use, .ts_ns = at_ns};
	gprof_memory_reset(in_use, base->ts_ns);
	/* From CUPTI's records, the collector writes it with the changes since begin_ns out. */
	if (in_use < 0 || (gprof_collector_covers() & GPROF_ACT_MEMORY))
		return;
	e.device = (uint32_t)device;
	e.u.memory.allocated = (uint64_t)in_use;
	gprof_export_push(&e);
}

/* The process exits: a window opened now records nothing, and none merges into it. */
static bool is_exiting(void)
{
	return __atomic_load_n(&exiting, __ATOMIC_SEQ_CST);
}

/* The stepper's callback, under its lock. */
static void on_sched_event(const struct gprof_sched_event *ev, void *ctx)
{
	(void)ctx;
	switch (ev->kind) {
	case GPROF_SCHED_EV_ACTIVE:
		gprof_windows_begin(ev);
		break;
	case GPROF_SCHED_EV_STEP:
		gprof_windows_step(ev);
		break;
	case GPROF_SCHED_EV_SAVE:
		gprof_windows_end(ev);
		break;
	case GPROF_SCHED_EV_WARMUP:
		runtime_facts();
		gprof_collector_warmup();
		break;
	case GPROF_SCHED_EV_DISCARD:
		gprof_windows_discard(ev);
		gprof_collector_discard();
		break;
	}
}

/* The timer's thread is libgprof's: it makes no CUDA call of its own (see no_own_calls). */
static void own_thread(void)
{
	no_own_calls = true;
}

int gprof_session_init(const struct gprof_config *config)
{
	static const struct gprof_trigger_session lent = {&stepper, is_inert, own_thread};
	static const struct gprof_windows_session window_lent = {
	    .exiting = is_exiting,
	    .memory_at_open = memory_at_open,
	    .closed = runtime_facts,
	};
	struct gprof_stepper_trigger trig;
	int err;

	cfg = config;
	gprof_config_describe(cfg, schedule_str, sizeof(schedule_str));
	err = gprof_stepper_init(&stepper, &cfg->schedule, on_sched_event, NULL);
	if (err)
		return err;
	gprof_windows_init(cfg, schedule_str, &stepper, &window_lent);
	gprof_events_init(cfg->activities);
	if (gprof_stepper_trigger_of(cfg->trigger, cfg->schedule.all, cfg->delay, cfg->duration,
				     &trig) == 0)
		gprof_stepper_set_trigger(&stepper, &trig);
	gprof_trigger_setup(cfg, &lent);
	__atomic_store_n(&inert, false, __ATOMIC_RELEASE);
	__atomic_store_n(&gprof_hot, GPROF_HOT_FIRST_CALL, __ATOMIC_RELEASE);
	return 0;
}

static void first_call(void)
{
	gprof_collector_note_thread((uint32_t)gprof_tid());
	gprof_trigger_first_call();
	/* CUPTI first, so that `all`'s window, opened just below, finds it ready. */
	no_own_calls = true;
	gprof_collector_start();
	gprof_stepper_start(&stepper, gprof_realtime_ns());
	/* The timer, which starts with the stepper's first deadline. */
	gprof_trigger_start();
	no_own_calls = false;
	__atomic_store_n(&cuda_ready, 1, __ATOMIC_RELEASE);
}

/*
 * Under `ulimit -v`, the address space recording needs at the first CUDA call: CUPTI, the
 * stacks of libgprof's threads and the event buffer (a quarter of what is left then). With
 * less, libgprof stays out of the way of what the program needs next.
 */
#define ROOM_TO_RECORD (16u << 20)

/*
 * The first call's: room to record, the hooks' tables, the event buffer and the writer thread
 * (a process without CUDA has none). Without one: one line, and nothing more from libgprof.
 */
static bool ready_to_record(void)
{
	size_t left = gprof_address_space_left();
	char why[GPROF_EXPORT_WHY_MAX];

	if (left < ROOM_TO_RECORD)
		snprintf(why, sizeof(why),
			 "ulimit -v leaves %zu MiB of address space, less than the %u MiB it "
			 "needs to record",
			 left >> 20, ROOM_TO_RECORD >> 20);
	else if (gprof_memory_init() != 0 || gprof_kernels_init() != 0)
		snprintf(why, sizeof(why), "out of memory");
	else if (gprof_export_start(why) == 0)
		return true;
	pr_err("libgprof is off from the first CUDA call, and nothing is recorded in this "
	       "process: %s",
	       why);
	__atomic_store_n(&inert, true, __ATOMIC_RELEASE);
	__atomic_store_n(&cuda_ready, 1, __ATOMIC_RELEASE);
	return false;
}

/*
 * Another thread's first call is setting up: a hooked call waits until CUPTI and `all`'s window
 * are there, or its launch would run unrecorded (no record, no event, nothing counted). Only a
 * hook waits: it holds no lock of CUDA's, while a thread in InitializeInjection is inside cuInit,
 * which the first call's CUPTI may itself need. The first call's own thread never waits.
 */
static void wait_cuda_ready(void)
{
	const struct timespec pause = {.tv_nsec = 50000};

	for (unsigned spins = 0; !__atomic_load_n(&cuda_ready, __ATOMIC_ACQUIRE); spins++)
		if (spins < 64)
			sched_yield();
		else
			nanosleep(&pause, NULL);
}

/*
 * The FIRST_CALL bit stays set until the first call's set-up is done, so that a call of another
 * thread comes here meanwhile; from_hook: may wait for it (wait_cuda_ready).
 */
void gprof_session_cuda_call(bool from_hook)
{
	int saved_errno = errno;
	bool first = false;

	if (is_inert()) {
		/* a forked child's first CUDA call: the one line that says it is not recorded */
		if (forked_from &&
		    (__atomic_fetch_and(&gprof_hot, ~GPROF_HOT_SESSION, __ATOMIC_ACQ_REL) &
		     GPROF_HOT_FIRST_CALL))
			pr_warn("process %ld, forked from %ld without exec, uses CUDA: libgprof "
				"records a forked process only after it execs (as spawn start "
				"methods do), so its CUDA work is in no trace",
				(long)getpid(), (long)forked_from);
		errno = saved_errno;
		return;
	}
	if (gprof_hot_load() & GPROF_HOT_FIRST_CALL) {
		first = !__atomic_exchange_n(&cuda_used, 1, __ATOMIC_ACQ_REL);
		if (first) {
			if (ready_to_record())
				first_call();
			gprof_hot_set(GPROF_HOT_FIRST_CALL, false);
		} else if (from_hook && !no_own_calls) {
			wait_cuda_ready();
		}
		if (is_inert()) {
			errno = saved_errno;
			return;
		}
	}
	/* the first call also takes a SIGUSR2 that came before the session's bits were set */
	if ((__atomic_fetch_and(&gprof_hot, ~GPROF_HOT_SIGNAL, __ATOMIC_ACQ_REL) &
	     GPROF_HOT_SIGNAL) ||
	    first)
		gprof_trigger_take_signals();
	/* Loading CUPTI searches files: the program's errno must not notice. */
	errno = saved_errno;
}

void gprof_session_profiler_api(bool start)
{
	int saved_errno = errno;

	if (is_inert() || cfg->trigger != GPROF_TRIGGER_PROFILER_API)
		return;
	gprof_collector_note_thread((uint32_t)gprof_tid());
	if (start)
		__atomic_store_n(&profiler_started, 1, __ATOMIC_RELAXED);
	gprof_stepper_request(&stepper, start ? GPROF_STEPPER_ON : GPROF_STEPPER_OFF,
			      gprof_realtime_ns(), gprof_tid());
	gprof_trigger_wake();
	errno = saved_errno;
}

/* Under the steps schedule (not `all`, whose steps begin with the window). */
void gprof_session_step_zero(void)
{
	if (!is_inert() && cfg->trigger == GPROF_TRIGGER_STEPS && !cfg->schedule.all)
		gprof_session_step_marker(gprof_realtime_ns());
}

void gprof_session_step_marker(uint64_t ts_ns)
{
	int saved_errno = errno;

	if (is_inert())
		return;
	gprof_collector_note_thread((uint32_t)gprof_tid());
	/* An arm that came before this marker begins its window here. */
	gprof_trigger_marker();
	/* Transitions may enable CUPTI or ask the runtime for its devices: errno stays. */
	gprof_stepper_mark(&stepper, ts_ns, gprof_tid());
	errno = saved_errno;
}

/* While recording or warming up: NVTX keeps copies of messages for ranges still open. */
bool gprof_session_nvtx_recorded(void)
{
	return cfg && (cfg->activities & GPROF_ACT_NVTX);
}

bool gprof_session_recording(void)
{
	if (is_inert())
		return false;
	enum gprof_sched_phase p = gprof_stepper_phase(&stepper);

	return p == GPROF_PHASE_ACTIVE || p == GPROF_PHASE_WARMUP;
}

void gprof_session_nvtx(int tid, const char *domain, const char *msg, size_t len, uint64_t start_ns,
			uint64_t end_ns, bool is_mark, uint32_t external)
{
	uint32_t window;

	if (!(cfg->activities & GPROF_ACT_NVTX) || !window_get(&window))
		return;
	if (!tid) {
		tid = gprof_tid();
		gprof_collector_note_thread((uint32_t)tid);
	}
	gprof_events_nvtx(window, (uint32_t)tid, domain, msg, len, start_ns, end_ns, is_mark,
			  external);
}

uint32_t gprof_session_call(const struct gprof_hooked_call *c, const void *mem_ptr,
			    size_t mem_bytes)
{
	uint32_t window;

	if (!window_get(&window))
		return 0;
	gprof_collector_note_thread((uint32_t)gprof_tid());
	/* For `all`, whose window opens in the first call: now that the call has returned. */
	runtime_facts();
	if (!c->writes)
		return 0;
	if ((c->writes & GPROF_ACT_MEMORY) && mem_ptr)
		gprof_memory_event(window, c, mem_ptr, mem_bytes);
	return (c->writes & GPROF_ACT_API) ? window : 0;
}

int gprof_session_torch_wants(void)
{
	if (is_inert())
		return 0;
	return gprof_stepper_next_records(&stepper) | gprof_stepper_next_ends_window(&stepper) << 1;
}

void gprof_session_torch_op(const struct gprof_torch_frame *f, const char *msg, uint64_t start_ns,
			    uint64_t end_ns)
{
	uint32_t window, tid = (uint32_t)gprof_tid();

	if (!(cfg->activities & GPROF_ACT_NVTX) || !window_get(&window))
		return;
	gprof_collector_note_thread(tid);
	gprof_events_torch_op(window, tid, f, msg, start_ns, end_ns);
}

void gprof_session_kineto_op(uint64_t kid, uint32_t ext, bool user, uint64_t start_ns,
			     uint64_t end_ns)
{
	uint32_t window, tid = (uint32_t)gprof_tid();

	/* one begun before the window (in warmup), as torch.profiler, is not the window's */
	if (!(cfg->activities & GPROF_ACT_NVTX) || !window_get(&window) ||
	    start_ns < gprof_export_window_span(window).begin)
		return;
	gprof_collector_note_thread(tid);
	gprof_events_kineto_op(window, tid, kid, ext, user, start_ns, end_ns);
}

/*
 * --torch's start-up hook holds the window it recorded past the step marker that ends it,
 * and hands over what PyTorch kept of it (tensor memory, operators' inputs) after that
 * marker, out of the step's time; then releases it.
 */

bool gprof_session_torch_hold(void)
{
	uint32_t id;

	gprof_session_torch_release();
	if (cfg->torch != GPROF_TORCH_ON || !window_get(&id) || !gprof_export_window_hold(id))
		return false;
	__atomic_store_n(&torch_held, id, __ATOMIC_RELEASE);
	return true;
}

void gprof_session_torch_release(void)
{
	uint32_t id = __atomic_exchange_n(&torch_held, 0, __ATOMIC_ACQ_REL);

	if (id)
		gprof_export_window_release(id);
}

int gprof_session_torch_ops(const char *json, size_t len, const char **why)
{
	uint32_t id = __atomic_load_n(&torch_held, __ATOMIC_ACQUIRE);

	*why = NULL;
	return id ? gprof_export_window_op_args(id, json, len, why) : -ESRCH;
}

void gprof_session_tensor_memory(uint64_t ts_ns, uint64_t address, int64_t bytes,
				 uint64_t allocated, uint64_t reserved, uint32_t device)
{
	struct gprof_export_event e = {
	    .kind = GPROF_EXPORT_MEMORY,
	    .flags = GPROF_EXPORT_MEMORY_TENSOR,
	    .ts_ns = ts_ns,
	    .window = __atomic_load_n(&torch_held, __ATOMIC_ACQUIRE),
	    .device = device,
	    .u.memory = {.allocated = allocated,
			 .address = address,
			 .bytes = bytes,
			 .reserved = reserved},
	};
	struct gprof_span span;

	if (!(cfg->activities & GPROF_ACT_MEMORY) || !e.window)
		return;
	span = gprof_export_window_span(e.window);
	if (ts_ns < span.begin || ts_ns > span.end)
		return;
	e.tid = (uint32_t)gprof_tid();
	gprof_collector_note_thread(e.tid);
	gprof_export_push(&e);
}

void gprof_session_nccl(const struct gprof_nccl_call *c)
{
	uint32_t window, tid = (uint32_t)gprof_tid();

	if (!(cfg->activities & GPROF_ACT_API) || !window_get(&window))
		return;
	gprof_collector_note_thread(tid);
	gprof_events_nccl(window, tid, c);
}

static bool nvtx_foreign;

void gprof_session_nvtx_foreign(void)
{
	__atomic_store_n(&nvtx_foreign, true, __ATOMIC_RELAXED);
}

void gprof_session_fini(int tid)
{
	struct gprof_report_exit report;

	if (is_inert())
		return;
	__atomic_store_n(&exiting, 1, __ATOMIC_SEQ_CST);
	gprof_hot_set_window(0);
	gprof_trigger_stop();
	gprof_stepper_finish_on(&stepper, gprof_realtime_ns(), tid);
	gprof_collector_fini(COLLECTOR_FINI_MS);
	if (gprof_export_shutdown(EXPORT_FINI_MS) != 0)
		pr_warn("the trace writer did not finish in %u s; a trace may be left as .partial",
			EXPORT_FINI_MS / 1000);
	gprof_windows_report_exit();
	/* A process that made no context (a launcher that counts devices) did no GPU work. */
	if (!__atomic_load_n(&cuda_used, __ATOMIC_RELAXED) || !gprof_collector_contexts_made())
		return;
	report = (struct gprof_report_exit){
	    .markers = gprof_stepper_markers(&stepper),
	    .marked = gprof_stepper_markers(&stepper) > 0,
	    .nvtx_foreign = __atomic_load_n(&nvtx_foreign, __ATOMIC_RELAXED),
	    .armed = gprof_stepper_armed(&stepper),
	    .profiler_started = __atomic_load_n(&profiler_started, __ATOMIC_RELAXED),
	    .window_due = gprof_windows_due(),
	};
	gprof_report_exit(cfg, &report);
}

void gprof_session_forked(void)
{
	/*
	 * The writer thread, CUPTI, the timer and the window belong to the parent. The child's
	 * first CUDA call, if it makes one, says that it is not recorded.
	 */
	__atomic_store_n(&inert, true, __ATOMIC_RELEASE);
	gprof_trigger_forked();
	gprof_collector_forked();
	forked_from = getppid();
	__atomic_store_n(&gprof_hot, GPROF_HOT_FIRST_CALL, __ATOMIC_RELAXED);
	gprof_windows_forked();
}
