/*
 * The collector's state machine: CUPTI loaded and subscribed once per process, activity kinds
 * enabled while a window warms up, records or drains, and the process facts for trace headers.
 * Everything here runs on the application's threads, under `coll.lock`; the collector thread
 * (thread.c) does the rest.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define PR_FMT "collector: "
#include "collector/internal.h"
#include "common/config.h"
#include "common/log.h"

/* Each kind to enable and the GPROF_ACTIVITIES bits that need it (0: never enabled). */
static const struct {
	CUpti_ActivityKind kind;
	unsigned acts;
} kinds[] = {
#define KIND(name, gives, acts, decoder) {CUPTI_ACTIVITY_KIND_##name, (acts)},
    GPROF_CUPTI_KIND_TABLE(KIND)
#undef KIND
};

/* Every bit that enables some kind: without one of them CUPTI has nothing to do. */
#define KIND_ACTS(name, gives, acts, decoder) | (acts)
#define ANY_ACTS			      (0u GPROF_CUPTI_KIND_TABLE(KIND_ACTS))

static void set_state(enum gprof_coll_state s)
{
	__atomic_store_n(&gprof_coll.state, (int)s, __ATOMIC_RELEASE);
}

/* Under lock: the trace headers' view of CUPTI from now on. */
static void publish_status(const char *status)
{
	snprintf(gprof_coll.proc.cupti_status, sizeof(gprof_coll.proc.cupti_status), "%s", status);
	gprof_export_set_process_info(&gprof_coll.proc);
}

/* Under lock: CUPTI is out for good; the hooks' events stand from now on. */
static void give_up(const char *status)
{
	set_state(GPROF_COLL_FAILED);
	__atomic_store_n(&gprof_coll.covers, 0, __ATOMIC_RELEASE);
	publish_status(status);
	if (!gprof_coll.thread_running)
		gprof_coll_windows_release_all(gprof_coll.wins);
	gprof_coll_kick();
}

/* Under lock: give_up(), said once. */
static void fail(const char *why)
{
	char status[sizeof(gprof_coll.proc.cupti_status)];

	pr_warn("GPU activity is not recorded: %s. Traces hold host-side events only.", why);
	snprintf(status, sizeof(status), "not used: %.240s", why);
	give_up(status);
}

static void disable_kinds(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if (kinds[i].acts & gprof_coll.cfg.activities)
			gprof_cupti.disable(kinds[i].kind);
	__atomic_store_n(&gprof_coll.covers, 0, __ATOMIC_RELEASE);
}

/* Under lock, from READY: every kind GPROF_ACTIVITIES needs, or none at all. */
static void enable_kinds(void)
{
	char why[512], err[128];

	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		CUptiResult r;

		if (!(kinds[i].acts & gprof_coll.cfg.activities))
			continue;
		r = gprof_cupti.enable(kinds[i].kind);
		if (r == CUPTI_SUCCESS)
			continue;
		disable_kinds();
		snprintf(why, sizeof(why), "cuptiActivityEnable(kind %d) failed: %s",
			 (int)kinds[i].kind, gprof_coll_strerror(r, err, sizeof(err)));
		fail(why);
		return;
	}
	set_state(GPROF_COLL_ENABLED);
	__atomic_store_n(&gprof_coll.covers,
			 gprof_coll.cfg.activities & (GPROF_ACT_API | GPROF_ACT_MEMORY),
			 __ATOMIC_RELEASE);
}

/* The collector thread, once no window needs records: back to READY. */
bool gprof_coll_disable_if_idle(void)
{
	bool idle;

	pthread_mutex_lock(&gprof_coll.lock);
	idle = gprof_coll_state(&gprof_coll) == GPROF_COLL_ENABLED && !gprof_coll.want &&
	       !gprof_coll_windows_in_use(gprof_coll.wins);
	if (idle) {
		disable_kinds();
		set_state(GPROF_COLL_READY);
	}
	pthread_mutex_unlock(&gprof_coll.lock);
	return idle;
}

int gprof_collector_init(const struct gprof_collector_config *cfg)
{
	int err;

	gprof_coll.cfg = *cfg;
	gprof_coll_load_env();
	snprintf(gprof_coll.lib, sizeof(gprof_coll.lib), "%s",
		 cfg->cupti_lib ? cfg->cupti_lib : "");
	gprof_coll.cfg.cupti_lib = gprof_coll.lib;
	gprof_coll.drain_ms = cfg->drain_ms ? cfg->drain_ms : 2000;
	pthread_mutex_lock(&gprof_coll.lock);
	if (!(cfg->activities & ANY_ACTS)) {
		set_state(GPROF_COLL_OFF);
		publish_status("not used: GPROF_ACTIVITIES asks for no GPU activity");
		pthread_mutex_unlock(&gprof_coll.lock);
		return 0;
	}
	err = gprof_coll_buffers_init(cfg->buffer_bytes);
	set_state(err ? GPROF_COLL_OFF : GPROF_COLL_IDLE);
	publish_status(err ? "not used: out of memory" : "not loaded yet: no CUDA call so far");
	pthread_mutex_unlock(&gprof_coll.lock);
	return err;
}

/* Subscribing claims CUPTI: a second client (torch.profiler, nsys, ncu) would get 39. */
static void CUPTIAPI on_callback(void *arg, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
				 const void *data)
{
	(void)arg;
	(void)domain;
	(void)cbid;
	(void)data;
}

/* Without the lock: may re-enter CUDA's initialisation, which may call start() again. */
static int attach(char *why, size_t len)
{
	CUptiResult r;
	char err[128];
	int rc = gprof_coll_load(gprof_coll.lib, why, len);

	if (rc)
		return rc;
	r = gprof_cupti.subscribe(&gprof_coll.sub, on_callback, NULL);
	if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		snprintf(why, len,
			 "another tool holds CUPTI (torch.profiler, Nsight Systems or "
			 "Nsight Compute in this process?): cuptiSubscribe said %s",
			 gprof_coll_strerror(r, err, sizeof(err)));
		return -EBUSY;
	}
	if (r == CUPTI_SUCCESS)
		r = gprof_cupti.register_callbacks(gprof_coll_buffer_request,
						   gprof_coll_buffer_complete);
	/* A CUPTI that refuses system ids (or lacks the call) keeps pthread ids, mapped. */
	if (r == CUPTI_SUCCESS && gprof_cupti.set_thread_id_type)
		gprof_coll_attrib_system_tids(
		    gprof_cupti.set_thread_id_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) ==
		    CUPTI_SUCCESS);
	if (r != CUPTI_SUCCESS) {
		snprintf(why, len, "CUPTI (%s) cannot be set up: %s", gprof_cupti.path,
			 gprof_coll_strerror(r, err, sizeof(err)));
		return -EIO;
	}
	return gprof_coll_attrib_init(gprof_coll.wins, gprof_coll.cfg.activities);
}

void gprof_collector_start(void)
{
	int idle = GPROF_COLL_IDLE;
	char why[PATH_MAX + 512] = "";
	int rc;

	if (!__atomic_compare_exchange_n(&gprof_coll.state, &idle, GPROF_COLL_LOADING, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	rc = attach(why, sizeof(why));
	if (!rc)
		rc = gprof_coll_thread_start(&gprof_coll, gprof_coll_disable_if_idle);
	pthread_mutex_lock(&gprof_coll.lock);
	gprof_coll.thread_running = !rc;
	if (gprof_coll_state(&gprof_coll) != GPROF_COLL_LOADING) {
		pthread_mutex_unlock(&gprof_coll.lock);
		return;
	}
	if (rc) {
		fail(why[0] ? why : "the collector thread cannot start");
	} else {
		snprintf(gprof_coll.proc.cupti_path, sizeof(gprof_coll.proc.cupti_path), "%s",
			 gprof_cupti.path);
		gprof_coll.proc.cupti_version = (int)gprof_cupti.version;
		set_state(GPROF_COLL_READY);
		publish_status("in use");
		pr_info("CUPTI %s (API version %u) in use", gprof_cupti.path, gprof_cupti.version);
		if (gprof_coll.want)
			enable_kinds();
	}
	pthread_mutex_unlock(&gprof_coll.lock);
}

void gprof_collector_yield(void)
{
	enum gprof_coll_state s;

	pthread_mutex_lock(&gprof_coll.lock);
	s = gprof_coll_state(&gprof_coll);
	if (s == GPROF_COLL_READY || s == GPROF_COLL_ENABLED) {
		disable_kinds();
		/* Every buffer comes back here before the other tool's callbacks replace ours. */
		gprof_cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
		if (gprof_cupti.unsubscribe)
			gprof_cupti.unsubscribe(gprof_coll.sub);
		pr_warn(
		    "another tool in this process subscribed to CUPTI (torch.profiler, Nsight?): "
		    "libgprof handed it over. The GPU activity recorded so far is kept; from "
		    "now on traces hold host-side events only.");
		give_up("handed over to another tool in this process");
	}
	pthread_mutex_unlock(&gprof_coll.lock);
}

void gprof_collector_warmup(void)
{
	pthread_mutex_lock(&gprof_coll.lock);
	gprof_coll.want = true;
	if (gprof_coll_state(&gprof_coll) == GPROF_COLL_READY)
		enable_kinds();
	pthread_mutex_unlock(&gprof_coll.lock);
}

void gprof_collector_discard(void)
{
	pthread_mutex_lock(&gprof_coll.lock);
	gprof_coll.want = false;
	pthread_mutex_unlock(&gprof_coll.lock);
	gprof_coll_kick();
}

static bool usable(void)
{
	enum gprof_coll_state s = gprof_coll_state(&gprof_coll);

	return s == GPROF_COLL_IDLE || s == GPROF_COLL_LOADING || s == GPROF_COLL_READY ||
	       s == GPROF_COLL_ENABLED;
}

void gprof_collector_window_begin(uint32_t id, uint64_t number, uint64_t begin_ns,
				  const struct gprof_memory_base *memory)
{
	static bool said;

	pthread_mutex_lock(&gprof_coll.lock);
	/* An export slot was free, so one of ours is too (each is freed first): never expected. */
	if (usable() && !gprof_coll_win_claim(gprof_coll.wins, id, number, begin_ns, memory) &&
	    !said) {
		said = true;
		pr_warn("window %llu: every collector slot is in use; its GPU activity is not "
			"recorded (a libgprof bug: please report it)",
			(unsigned long long)number);
	}
	pthread_mutex_unlock(&gprof_coll.lock);
}

void gprof_collector_window_end(uint32_t id, uint64_t end_ns)
{
	pthread_mutex_lock(&gprof_coll.lock);
	gprof_coll.want = false;
	for (unsigned i = 0; i < GPROF_COLL_WINDOWS; i++) {
		struct gprof_coll_win *w = &gprof_coll.wins[i];

		if (__atomic_load_n(&w->id, __ATOMIC_ACQUIRE) != id)
			continue;
		__atomic_store_n(&w->end_ns, end_ns, __ATOMIC_RELEASE);
		/* CUPTI never ran for it: nothing can come. */
		if (!gprof_coll.thread_running)
			gprof_coll_win_release(w);
	}
	pthread_mutex_unlock(&gprof_coll.lock);
	gprof_coll_kick();
}

bool gprof_collector_external_begin(uint32_t id)
{
	if (gprof_coll_state(&gprof_coll) != GPROF_COLL_ENABLED || !gprof_cupti.push_external ||
	    !gprof_cupti.pop_external)
		return false;
	return gprof_cupti.push_external(GPROF_COLL_EXTERNAL_KIND, id) == CUPTI_SUCCESS;
}

void gprof_collector_external_end(void)
{
	uint64_t id;

	gprof_cupti.pop_external(GPROF_COLL_EXTERNAL_KIND, &id);
}

unsigned gprof_collector_covers(void)
{
	return __atomic_load_n(&gprof_coll.covers, __ATOMIC_ACQUIRE);
}

void gprof_collector_set_runtime_info(const struct gprof_export_process_info *rt)
{
	struct gprof_export_process_info *p = &gprof_coll.proc;

	pthread_mutex_lock(&gprof_coll.lock);
	p->cuda_runtime_version = rt->cuda_runtime_version;
	p->cuda_driver_version = rt->cuda_driver_version;
	p->n_devices =
	    rt->n_devices < GPROF_EXPORT_MAX_DEVICES ? rt->n_devices : GPROF_EXPORT_MAX_DEVICES;
	memcpy(p->devices, rt->devices, p->n_devices * sizeof(p->devices[0]));
	gprof_export_set_process_info(p);
	pthread_mutex_unlock(&gprof_coll.lock);
}

void gprof_collector_fini(unsigned timeout_ms)
{
	pthread_mutex_lock(&gprof_coll.lock);
	gprof_coll.want = false;
	__atomic_store_n(&gprof_coll.stop, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&gprof_coll.lock);
	gprof_coll_thread_stop(&gprof_coll, timeout_ms);
	pthread_mutex_lock(&gprof_coll.lock);
	if (gprof_coll_state(&gprof_coll) == GPROF_COLL_ENABLED)
		disable_kinds();
	if (!gprof_coll.thread_running)
		gprof_coll_windows_release_all(gprof_coll.wins);
	set_state(GPROF_COLL_OFF);
	pthread_mutex_unlock(&gprof_coll.lock);
}

void gprof_collector_forked(void)
{
	/* The parent's thread and CUPTI session are not ours; the exporter writes nothing here. */
	set_state(GPROF_COLL_OFF);
	__atomic_store_n(&gprof_coll.covers, 0, __ATOMIC_RELEASE);
	gprof_coll.thread_running = false;
	gprof_coll.want = false;
	gprof_coll_windows_forget(gprof_coll.wins);
	/* Another thread may have held it at fork(). */
	pthread_mutex_init(&gprof_coll.lock, NULL);
}
