/*
 * The session ties preload/ together: it owns the configuration and the stepper, opens and
 * releases export windows on the stepper's transitions, drives the collector (CUPTI) from the
 * same transitions, hands the stepper what the triggers say (preload/trigger.c), and turns
 * hooked calls and NVTX events into trace events of the current window. While CUPTI records
 * the runtime API, hooked calls write no events of their own:
 * CUPTI's carry the correlation ids that link launches to GPU work (collector/collector.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PR_FMT ""
#include "common/config.h"
#include "common/demangle.h"
#include "common/log.h"
#include "collector/collector.h"
#include "export/export.h"
#include "preload/preload.h"
#include "preload/ptrmap.h"
#include "preload/session.h"
#include "scheduler/scheduler.h"

#include <cuda_runtime_api.h>

/* Written once by gprof_session_init (before any other thread), read everywhere. */
static struct gprof_config cfg;
static char schedule_str[GPROF_CONFIG_DESCRIBE_MAX];
static struct gprof_stepper stepper;
static bool inert = true;

/* The current export window: written by the stepper's callback, read by any thread. */
static uint32_t cur_window;
static int window_open;
static int cuda_used;
static int windows_opened;   /* any, ever: for the exit's hints */
static int profiler_started; /* cudaProfilerStart seen: for the exit's hints */

/* Kernel names by host stub or cudaKernel_t, and live allocations by pointer (bytes). */
static struct gprof_ptrmap kernel_names;
static struct gprof_ptrmap allocations;
static uint64_t allocated_bytes; /* change since the window opened */

/*
 * No CUDA calls of our own: on a thread inside the first-call path (maybe inside cuInit) or on
 * the timer's thread (never the program's), nor once the process exits (the runtime's own
 * atexit teardown has run: calls would crash).
 */
static GPROF_TLS bool no_own_calls;
static int exiting;

/* Share of GPROF_BUFFER_MB for CUPTI's activity buffers; the exporter gets the rest. */
#define CUPTI_SHARE	  4 /* a quarter */
#define CUPTI_MIN_BYTES	  (256u << 10)
#define DRAIN_MS	  2000 /* how long a window waits for late GPU records */
#define COLLECTOR_FINI_MS 3000

static void hot_set(int bit, bool on)
{
	if (on)
		__atomic_fetch_or(&gprof_hot, bit, __ATOMIC_RELAXED);
	else
		__atomic_fetch_and(&gprof_hot, ~bit, __ATOMIC_RELAXED);
}

/*
 * The window that application events go to. None once the process exits: the last step's span
 * ends at the exit's timestamp, taken after `exiting` is set, and a thread still running must
 * not add a call that outlasts that span on its track.
 */
static bool window_get(uint32_t *id)
{
	if (__atomic_load_n(&exiting, __ATOMIC_SEQ_CST) ||
	    !__atomic_load_n(&window_open, __ATOMIC_ACQUIRE))
		return false;
	*id = __atomic_load_n(&cur_window, __ATOMIC_RELAXED);
	return true;
}

static void push_step(const struct gprof_sched_event *ev)
{
	struct gprof_export_event e = {
	    .kind = GPROF_EXPORT_STEP,
	    .window = cur_window,
	    .ts_ns = ev->begin_ns,
	    .dur_ns = ev->end_ns - ev->begin_ns,
	    .tid = (uint32_t)ev->tid,
	    .u.step = ev->first_step,
	};

	gprof_export_push(&e);
}

/* cudaDeviceProp -> the header's device fields. */
static void device_of(const struct cudaDeviceProp *p, int id, struct gprof_export_device *d)
{
	*d = (struct gprof_export_device){
	    .id = id,
	    .total_global_mem = p->totalGlobalMem,
	    .compute_major = p->major,
	    .compute_minor = p->minor,
	    .max_threads_per_block = p->maxThreadsPerBlock,
	    .max_threads_per_mp = p->maxThreadsPerMultiProcessor,
	    .regs_per_block = p->regsPerBlock,
	    .regs_per_mp = p->regsPerMultiprocessor,
	    .warp_size = p->warpSize,
	    .shared_mem_per_block = (int)p->sharedMemPerBlock,
	    .shared_mem_per_block_optin = (int)p->sharedMemPerBlockOptin,
	    .shared_mem_per_mp = (int)p->sharedMemPerMultiprocessor,
	    .num_sms = p->multiProcessorCount,
	};
	snprintf(d->name, sizeof(d->name), "%s", p->name);
}

/*
 * Versions and deviceProperties from the runtime, once, when CUDA is in use and calling it is
 * safe (see in_first_call); without a libcudart in the process they stay unknown. CUPTI sees
 * these calls: the collector is told they are ours, not the program's.
 */
static void runtime_info(void)
{
	typedef cudaError_t (*int_fn)(int *);
	typedef cudaError_t (*props_fn)(struct cudaDeviceProp *, int);
	static struct gprof_export_process_info rt; /* written by the one caller that gets here */
	static int done;
	struct cudaDeviceProp p;
	int_fn rt_ver, drv_ver, count;
	props_fn props;
	int n = 0;

	if (__atomic_load_n(&done, __ATOMIC_ACQUIRE) || no_own_calls ||
	    __atomic_load_n(&exiting, __ATOMIC_ACQUIRE) ||
	    !__atomic_load_n(&cuda_used, __ATOMIC_RELAXED) ||
	    __atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
		return;
	gprof_collector_own_calls(true);
	rt_ver = (int_fn)gprof_resolve("cudaRuntimeGetVersion");
	drv_ver = (int_fn)gprof_resolve("cudaDriverGetVersion");
	count = (int_fn)gprof_resolve("cudaGetDeviceCount");
	props = (props_fn)gprof_resolve("cudaGetDeviceProperties");
	if (rt_ver)
		rt_ver(&rt.cuda_runtime_version);
	if (drv_ver)
		drv_ver(&rt.cuda_driver_version);
	if (!count || !props || count(&n) != cudaSuccess)
		n = 0;
	for (int i = 0; i < n && rt.n_devices < GPROF_EXPORT_MAX_DEVICES; i++)
		if (props(&p, i) == cudaSuccess)
			device_of(&p, i, &rt.devices[rt.n_devices++]);
	gprof_collector_own_calls(false);
	gprof_collector_set_runtime_info(&rt);
}

static void window_begin(const struct gprof_sched_event *ev)
{
	struct gprof_export_window_info info = {
	    .number = ev->window, .first_step = ev->first_step, .schedule = schedule_str};
	uint32_t id;
	int err = gprof_export_window_open(&info, &id);

	if (err) {
		pr_warn("window %llu (from step %llu) is not recorded: %s",
			(unsigned long long)ev->window, (unsigned long long)ev->first_step,
			strerror(-err));
		return;
	}
	__atomic_store_n(&allocated_bytes, 0, __ATOMIC_RELAXED);
	gprof_collector_window_begin(id, ev->window, ev->begin_ns);
	__atomic_store_n(&cur_window, id, __ATOMIC_RELAXED);
	__atomic_store_n(&window_open, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&windows_opened, 1, __ATOMIC_RELAXED);
	hot_set(GPROF_HOT_RECORDING, true);
	/* Its duration, if it has one, is the timer's next deadline. */
	gprof_trigger_wake();
}

static void window_end(const struct gprof_sched_event *ev)
{
	if (!__atomic_load_n(&window_open, __ATOMIC_ACQUIRE))
		return;
	hot_set(GPROF_HOT_RECORDING, false);
	__atomic_store_n(&window_open, 0, __ATOMIC_RELEASE);
	gprof_export_window_set_last_step(cur_window, ev->last_step);
	runtime_info();
	/* The collector drains the window's late GPU records on its own thread. */
	gprof_collector_window_end(cur_window, ev->end_ns);
	gprof_export_window_release(cur_window);
}

/* The stepper's callback, under its lock. */
static void on_sched_event(const struct gprof_sched_event *ev, void *ctx)
{
	(void)ctx;
	switch (ev->kind) {
	case GPROF_SCHED_EV_ACTIVE:
		window_begin(ev);
		break;
	case GPROF_SCHED_EV_STEP:
		if (window_open)
			push_step(ev);
		break;
	case GPROF_SCHED_EV_SAVE:
		window_end(ev);
		break;
	case GPROF_SCHED_EV_WARMUP:
		runtime_info();
		gprof_collector_warmup();
		break;
	case GPROF_SCHED_EV_DISCARD:
		gprof_collector_discard();
		break;
	}
}

/* GPROF_SUMMARY names a file: the summary is appended to it. */
static void append_summary(const char *text, const struct gprof_export_result *r)
{
	FILE *f;
	int err;

	errno = 0;
	f = fopen(cfg.summary, "ae");
	err = f ? 0 : errno;

	if (f && fputs(text, f) < 0)
		err = errno ? errno : EIO;
	if (f && fclose(f) && !err)
		err = errno ? errno : EIO;
	if (err)
		pr_warn_once("cannot append the end-of-window summary to '%.200s' (GPROF_SUMMARY): "
			     "%s; traces are still written (this one: %.200s)",
			     cfg.summary, strerror(err), r->path);
}

/* On the writer thread, when a window's file is complete (or failed: that was said already). */
static void on_window_done(const struct gprof_export_result *r, void *arg)
{
	char *text;

	(void)arg;
	if (r->error || strcmp(cfg.summary, "off") == 0)
		return;
	text = gprof_export_summary_text(r);
	if (!text) {
		gprof_log(GPROF_LOG_WARN, "trace written: %s (no summary: out of memory)", r->path);
		return;
	}
	if (strcmp(cfg.summary, "stderr") == 0)
		fputs(text, stderr);
	else
		append_summary(text, r);
	free(text);
}

int gprof_session_init(void)
{
	struct gprof_export_config ecfg = {0};
	struct gprof_collector_config ccfg = {0};
	struct gprof_stepper_trigger trig;
	size_t total, cupti;

	if (gprof_config_load(&cfg, NULL) != 0 || cfg.disable)
		return -1;
	gprof_log_level = cfg.log_level;
	gprof_config_describe(&cfg, schedule_str, sizeof(schedule_str));
	total = (size_t)cfg.buffer_mb << 20;
	cupti = total / CUPTI_SHARE > CUPTI_MIN_BYTES ? total / CUPTI_SHARE : CUPTI_MIN_BYTES;
	ecfg = (struct gprof_export_config){
	    .output = cfg.output,
	    .gzip_level = cfg.gzip_level,
	    .buffer_bytes = total - cupti,
	    .on_window_done = on_window_done,
	};
	ccfg = (struct gprof_collector_config){
	    .cupti_lib = cfg.cupti_lib,
	    .activities = cfg.activities,
	    .buffer_bytes = cupti,
	    .drain_ms = DRAIN_MS,
	};
	if (gprof_export_init(&ecfg) != 0 || gprof_collector_init(&ccfg) != 0 ||
	    gprof_stepper_init(&stepper, &cfg.schedule, on_sched_event, NULL) != 0) {
		pr_err("cannot start (out of memory?); libgprof is off for this process");
		return -1;
	}
	gprof_stepper_trigger_of(&cfg, &trig);
	gprof_stepper_set_trigger(&stepper, &trig);
	gprof_trigger_setup(cfg.trigger == GPROF_TRIGGER_SIGNAL, cfg.delay.set || cfg.duration.set);
	inert = false;
	__atomic_store_n(&gprof_hot, GPROF_HOT_FIRST_CALL, __ATOMIC_RELEASE);
	return 0;
}

/* SIGUSR2s received meanwhile: under `all` each starts or ends recording, else one arms. */
static void take_signals(void)
{
	unsigned n = gprof_trigger_take_signals();
	enum gprof_stepper_result r;

	if (!n || (cfg.schedule.all && n % 2 == 0))
		return;
	r = gprof_stepper_request(&stepper, GPROF_STEPPER_TOGGLE, gprof_now_ns(), gprof_tid());
	if (r == GPROF_STEPPER_BUSY || (!cfg.schedule.all && n > 1))
		pr_warn("SIGUSR2 ignored: a window armed by an earlier one is still to come or "
			"under way");
	else if (r == GPROF_STEPPER_TAKEN && !cfg.schedule.all)
		pr_info("SIGUSR2: a window of %u warmup and %u active steps begins at the next "
			"step marker",
			cfg.schedule.warmup, cfg.schedule.active);
	gprof_trigger_wake();
}

static void first_call(void)
{
	gprof_collector_note_thread((uint32_t)gprof_tid());
	/* CUPTI first, so that `all`'s window, opened just below, finds it ready. */
	no_own_calls = true;
	gprof_collector_start();
	gprof_stepper_start(&stepper, gprof_now_ns());
	/* The timer, which starts with the stepper's first deadline. */
	gprof_trigger_start();
	no_own_calls = false;
}

void gprof_session_first_cuda_call(void)
{
	int saved_errno = errno;

	if (inert)
		return;
	if (__atomic_fetch_and(&gprof_hot, ~GPROF_HOT_FIRST_CALL, __ATOMIC_ACQ_REL) &
	    GPROF_HOT_FIRST_CALL) {
		if (!__atomic_exchange_n(&cuda_used, 1, __ATOMIC_ACQ_REL))
			first_call();
		take_signals();
	}
	/* Loading CUPTI searches files: the program's errno must not notice. */
	errno = saved_errno;
}

void gprof_session_profiler_api(bool start)
{
	int saved_errno = errno;

	if (inert || cfg.trigger != GPROF_TRIGGER_PROFILER_API)
		return;
	gprof_collector_note_thread((uint32_t)gprof_tid());
	if (start)
		__atomic_store_n(&profiler_started, 1, __ATOMIC_RELAXED);
	gprof_stepper_request(&stepper, start ? GPROF_STEPPER_ON : GPROF_STEPPER_OFF,
			      gprof_now_ns(), gprof_tid());
	gprof_trigger_wake();
	errno = saved_errno;
}

uint64_t gprof_session_deadline(void)
{
	return inert ? UINT64_MAX : gprof_stepper_deadline(&stepper);
}

void gprof_session_tick(void)
{
	if (inert)
		return;
	no_own_calls = true; /* the timer's thread, never the program's */
	take_signals();
	gprof_stepper_tick(&stepper, gprof_now_ns(), gprof_tid());
}

void gprof_session_step_marker(uint64_t ts_ns)
{
	int saved_errno = errno;

	if (inert)
		return;
	gprof_collector_note_thread((uint32_t)gprof_tid());
	if (cfg.trigger == GPROF_TRIGGER_SIGNAL) {
		gprof_trigger_check_handler();
		/* An arm that came before this marker begins its window here. */
		take_signals();
	}
	/* Transitions may enable CUPTI or ask the runtime for its devices: errno stays. */
	gprof_stepper_mark(&stepper, ts_ns, gprof_tid());
	errno = saved_errno;
}

/* While recording or warming up: NVTX keeps copies of messages for ranges still open. */
bool gprof_session_recording(void)
{
	if (inert)
		return false;
	enum gprof_sched_phase p = gprof_stepper_phase(&stepper);

	return p == GPROF_PHASE_ACTIVE || p == GPROF_PHASE_WARMUP;
}

bool gprof_nvtx_is_step(const char *msg, size_t len)
{
	(void)len;
	return !inert && gprof_sched_marker_match(cfg.step_marker, msg);
}

void gprof_session_nvtx(int tid, const char *domain, const char *msg, size_t len, uint64_t start_ns,
			uint64_t end_ns, bool is_mark)
{
	struct gprof_export_event e = {
	    .kind = is_mark ? GPROF_EXPORT_NVTX_MARK : GPROF_EXPORT_NVTX_RANGE,
	    .ts_ns = start_ns,
	    .dur_ns = end_ns - start_ns,
	    .tid = (uint32_t)(tid ? tid : gprof_tid()),
	};

	if (!(cfg.activities & GPROF_ACT_NVTX) || !window_get(&e.window))
		return;
	if (!tid)
		gprof_collector_note_thread(e.tid);
	e.name = gprof_export_intern_n(msg, len);
	e.u.domain = domain ? gprof_export_intern(domain) : NULL;
	gprof_export_push(&e);
}

/* A runtime function found once and cached (a race only looks it up twice). */
static void *runtime_fn(void **cache, const char *symbol)
{
	void *fn = __atomic_load_n(cache, __ATOMIC_RELAXED);

	if (!fn) {
		fn = gprof_resolve(symbol);
		__atomic_store_n(cache, fn, __ATOMIC_RELAXED);
	}
	return fn;
}

/* The demangled name of a kernel, resolved once per host stub or cudaKernel_t. */
static const struct gprof_export_str *kernel_name(const void *func)
{
	typedef cudaError_t (*get_name_fn)(const char **, const void *);
	static void *cache;
	get_name_fn get_name;
	const struct gprof_export_str *s;
	const char *raw = NULL;
	char buf[GPROF_EXPORT_STR_MAX];

	s = (const void *)(uintptr_t)gprof_ptrmap_get(&kernel_names, (uintptr_t)func);
	if (s)
		return s;
	get_name = (get_name_fn)runtime_fn(&cache, "cudaFuncGetName");
	if (!get_name || get_name(&raw, func) != cudaSuccess || !raw)
		return NULL;
	s = gprof_export_intern(gprof_demangle(raw, buf, sizeof(buf)));
	gprof_ptrmap_set(&kernel_names, (uintptr_t)func, (uintptr_t)s);
	return s;
}

/* The device-memory counter: bytes allocated in this window minus those freed. */
static void push_memory(const struct gprof_api_call *c, uint32_t window)
{
	typedef cudaError_t (*get_device_fn)(int *);
	static void *cache;
	get_device_fn get_device;
	int64_t delta = 0;
	int device = 0;

	if (c->result != cudaSuccess || !c->ptr)
		return;
	if (gprof_hook_info[c->hook].family == GPROF_FAMILY_ALLOC) {
		if (gprof_ptrmap_set(&allocations, (uintptr_t)c->ptr, c->bytes))
			delta = (int64_t)c->bytes;
	} else {
		delta = -(int64_t)gprof_ptrmap_get(&allocations, (uintptr_t)c->ptr);
		gprof_ptrmap_set(&allocations, (uintptr_t)c->ptr, 0);
	}
	if (!delta)
		return;
	get_device = (get_device_fn)runtime_fn(&cache, "cudaGetDevice");
	if (get_device)
		get_device(&device);
	struct gprof_export_event e = {
	    .kind = GPROF_EXPORT_MEMORY,
	    .window = window,
	    .ts_ns = c->end_ns,
	    .device = (uint32_t)device,
	    .u.allocated = __atomic_add_fetch(&allocated_bytes, (uint64_t)delta, __ATOMIC_RELAXED),
	};
	gprof_export_push(&e);
}

/* The interned public and exact names of each hook, made on first use. */
static const struct gprof_export_str *hook_names[GPROF_HOOK_COUNT][2];

static const struct gprof_export_str *hook_name(enum gprof_hook h, int exact)
{
	const struct gprof_export_str *s = __atomic_load_n(&hook_names[h][exact], __ATOMIC_RELAXED);

	if (unlikely(!s)) {
		s = gprof_export_intern(exact ? gprof_hook_info[h].symbol
					      : gprof_hook_info[h].public_name);
		__atomic_store_n(&hook_names[h][exact], s, __ATOMIC_RELAXED);
	}
	return s;
}

static const uint16_t family_flags[] = {
    [GPROF_FAMILY_LAUNCH] = GPROF_EXPORT_ARG_LAUNCH | GPROF_EXPORT_ARG_STREAM,
    [GPROF_FAMILY_ALLOC] = GPROF_EXPORT_ARG_BYTES | GPROF_EXPORT_ARG_PTR,
    [GPROF_FAMILY_FREE] = GPROF_EXPORT_ARG_PTR,
    [GPROF_FAMILY_COPY] =
	GPROF_EXPORT_ARG_BYTES | GPROF_EXPORT_ARG_COPY_KIND | GPROF_EXPORT_ARG_STREAM,
    [GPROF_FAMILY_SET] = GPROF_EXPORT_ARG_BYTES | GPROF_EXPORT_ARG_PTR | GPROF_EXPORT_ARG_STREAM,
    [GPROF_FAMILY_PROFILER] = 0,
};

void gprof_session_api(const struct gprof_api_call *c)
{
	const struct gprof_hook_info *hi = &gprof_hook_info[c->hook];
	struct gprof_export_event e;
	uint32_t window, tid = (uint32_t)gprof_tid();
	unsigned mine;

	if (!window_get(&window))
		return;
	gprof_collector_note_thread(tid);
	/* For `all`, whose window opens in the first call: now that the call has returned. */
	runtime_info();
	/* Not timed (start_ns 0): the hook saw that CUPTI records all this call could give. */
	if (!c->start_ns)
		return;
	/* What CUPTI records is written from its records, not from here. */
	mine = cfg.activities & ~gprof_collector_covers();
	if ((hi->family == GPROF_FAMILY_ALLOC || hi->family == GPROF_FAMILY_FREE) &&
	    (mine & GPROF_ACT_MEMORY))
		push_memory(c, window);
	if (!(mine & GPROF_ACT_API))
		return;
	e = (struct gprof_export_event){
	    .kind = GPROF_EXPORT_RUNTIME,
	    .window = window,
	    .ts_ns = c->start_ns,
	    .dur_ns = c->end_ns - c->start_ns,
	    .tid = tid,
	    .flags = family_flags[hi->family] | GPROF_EXPORT_ARG_RESULT,
	    .name = hook_name(c->hook, 0),
	    .u.api =
		{
		    .api = hook_name(c->hook, 1),
		    .stream = (uintptr_t)c->stream,
		    .bytes = c->bytes,
		    .ptr = (uintptr_t)c->ptr,
		    .shared_bytes = (uint32_t)c->bytes,
		    .cbid = (uint32_t)hi->cbid,
		    .result = c->result,
		    .copy_kind = (uint8_t)c->copy_kind,
		},
	};
	if (hi->family == GPROF_FAMILY_LAUNCH) {
		e.u.api.kernel = kernel_name(c->func);
		memcpy(e.u.api.grid, c->grid, sizeof(c->grid));
		memcpy(e.u.api.block, c->block, sizeof(c->block));
	}
	gprof_export_push(&e);
}

/* At exit of a process that used CUDA: a line when its trigger never came, naming a way out. */
static void say_why_nothing(void)
{
	bool timed = cfg.delay.set || cfg.duration.set, stepped = gprof_stepper_markers(&stepper);

	if (cfg.trigger == GPROF_TRIGGER_STEPS && !cfg.schedule.all && !timed && !stepped)
		pr_warn("the program used CUDA but never marked a step ('%s'), so nothing was "
			"recorded: mark steps (e.g. torch.cuda.nvtx.mark(\"%s\")) or set "
			"GPROF_SCHEDULE=all",
			cfg.step_marker, cfg.step_marker);
	else if (cfg.trigger == GPROF_TRIGGER_SIGNAL && gprof_stepper_armed(&stepper))
		pr_warn("a SIGUSR2 armed a window, but no step marker ('%s') came after it, so "
			"nothing was recorded: mark steps or set GPROF_SCHEDULE=all, under which "
			"SIGUSR2 starts recording at once",
			cfg.step_marker);
	else if (cfg.trigger == GPROF_TRIGGER_PROFILER_API && !profiler_started)
		pr_warn("GPROF_TRIGGER=cuda-profiler-api, but the program never called "
			"cudaProfilerStart through a CUDA runtime libgprof sees, so nothing was "
			"recorded");
	else if (cfg.trigger == GPROF_TRIGGER_STEPS && cfg.delay.set && !windows_opened)
		pr_warn("the program ended before GPROF_DELAY had passed since its first CUDA "
			"call, so nothing was recorded");
}

void gprof_session_fini(int tid)
{
	if (inert)
		return;
	__atomic_store_n(&exiting, 1, __ATOMIC_SEQ_CST);
	gprof_trigger_stop();
	gprof_stepper_finish_on(&stepper, gprof_now_ns(), tid);
	gprof_collector_fini(COLLECTOR_FINI_MS);
	if (gprof_export_shutdown(10000) != 0)
		pr_warn("the trace writer did not finish in 10 s; a trace may be left as .partial");
	if (__atomic_load_n(&cuda_used, __ATOMIC_RELAXED))
		say_why_nothing();
}

void gprof_session_forked(void)
{
	/* The writer thread, CUPTI, the timer and the window belong to the parent. */
	inert = true;
	gprof_trigger_forked();
	gprof_collector_forked();
	__atomic_store_n(&gprof_hot, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&window_open, 0, __ATOMIC_RELAXED);
}
