/*
 * The collector's state machine: CUPTI loaded and subscribed once per process, activity kinds
 * enabled while a window warms up, records or drains, and the process facts for trace headers.
 * Everything here runs on the application's threads, under the state's lock; the collector
 * thread (thread.c) does the rest. Each entry point names the state, gprof_coll, once and
 * passes it on.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PR_FMT "collector: "
#include "collector/internal.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/dso.h"
#include "common/log.h"
#include "common/thread.h"

/*
 * Each kind to enable, the GPROF_ACTIVITIES bits that need it (0: never enabled), and what is
 * lost when it cannot be (0: all GPU activity).
 */
static const struct {
	CUpti_ActivityKind kind;
	unsigned acts;
	const char *lost;
} kinds[] = {
#define KIND(name, gives, acts, decoder, lost) {CUPTI_ACTIVITY_KIND_##name, (acts), (lost)},
    GPROF_CUPTI_KIND_TABLE(KIND)
#undef KIND
};

/* Every bit that enables some kind: without one of them CUPTI has nothing to do. */
#define KIND_ACTS(name, gives, acts, ...) | (acts)
#define ANY_ACTS			  (0u GPROF_CUPTI_KIND_TABLE(KIND_ACTS))

static void set_state(struct gprof_coll *c, enum gprof_coll_state s)
{
	__atomic_store_n(&c->state, (int)s, __ATOMIC_RELEASE);
}

/* Under lock: the trace headers' view of CUPTI from now on. */
static void publish_status(struct gprof_coll *c, const char *status)
{
	snprintf(c->proc.cupti_status, sizeof(c->proc.cupti_status), "%s", status);
	gprof_export_set_process_info(&c->proc);
}

/*
 * Under lock: CUPTI is out for good; the hooks' events stand from now on. Contexts made from
 * now on are not seen: none so far says nothing.
 */
static void give_up(struct gprof_coll *c, const char *status)
{
	int none = 0;

	__atomic_compare_exchange_n(&c->contexts, &none, -1, false, __ATOMIC_RELAXED,
				    __ATOMIC_RELAXED);
	set_state(c, GPROF_COLL_FAILED);
	__atomic_store_n(&gprof_coll_covers, 0, __ATOMIC_RELEASE);
	publish_status(c, status);
	if (!c->thread_running)
		gprof_coll_windows_release_all(c->wins);
	gprof_coll_kick();
}

/* Under lock: give_up(), said once. */
static void fail(struct gprof_coll *c, const char *why)
{
	char status[sizeof(c->proc.cupti_status)];

	pr_warn("GPU activity is not recorded: %s. Traces hold host-side events only.", why);
	snprintf(status, sizeof(status), "not used: %.240s", why);
	give_up(c, status);
}

static void disable_kinds(struct gprof_coll *c)
{
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if (kinds[i].acts & c->cfg.activities)
			c->cupti.disable(kinds[i].kind);
	__atomic_store_n(&gprof_coll_covers, 0, __ATOMIC_RELEASE);
}

/* Whether kinds[i]'s loss was said: bit j of said is kinds[j]'s, said or the same as one said. */
static bool lost_said(unsigned said, size_t i)
{
	for (size_t j = 0; j < ARRAY_SIZE(kinds); j++)
		if ((said >> j & 1) && kinds[j].lost && !strcmp(kinds[j].lost, kinds[i].lost))
			return true;
	return false;
}

/*
 * Under lock, from READY: every kind GPROF_ACTIVITIES needs, or none at all; but an optional
 * kind's failure costs one line (once for what it loses), and the rest goes on.
 */
static void enable_kinds(struct gprof_coll *c)
{
	static unsigned said; /* bit i: kinds[i]'s loss was said */
	char why[512], err[128];

	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		CUptiResult r;

		if (!(kinds[i].acts & c->cfg.activities))
			continue;
		r = c->cupti.enable(kinds[i].kind);
		if (r == CUPTI_SUCCESS)
			continue;
		if (kinds[i].lost) {
			if (!lost_said(said, i))
				pr_warn("%s: cuptiActivityEnable(kind %d) failed: %s",
					kinds[i].lost, (int)kinds[i].kind,
					gprof_coll_strerror(&c->cupti, r, err, sizeof(err)));
			said |= 1u << i;
			continue;
		}
		disable_kinds(c);
		snprintf(why, sizeof(why), "cuptiActivityEnable(kind %d) failed: %s",
			 (int)kinds[i].kind, gprof_coll_strerror(&c->cupti, r, err, sizeof(err)));
		fail(c, why);
		return;
	}
	set_state(c, GPROF_COLL_ENABLED);
	__atomic_store_n(&gprof_coll_covers, c->cfg.activities & (GPROF_ACT_API | GPROF_ACT_MEMORY),
			 __ATOMIC_RELEASE);
}

/* The collector thread, once no window needs records: back to READY. */
bool gprof_coll_disable_if_idle(struct gprof_coll *c)
{
	bool idle;

	pthread_mutex_lock(&c->lock);
	idle = gprof_coll_state(c) == GPROF_COLL_ENABLED && !c->want &&
	       !gprof_coll_windows_in_use(c->wins);
	if (idle) {
		disable_kinds(c);
		set_state(c, GPROF_COLL_READY);
	}
	pthread_mutex_unlock(&c->lock);
	return idle;
}

int gprof_collector_init(const struct gprof_collector_config *cfg)
{
	struct gprof_coll *c = &gprof_coll;
	int err;

	c->cfg = *cfg;
	gprof_coll_load_env();
	snprintf(c->lib, sizeof(c->lib), "%s", cfg->cupti_lib ? cfg->cupti_lib : "");
	c->cfg.cupti_lib = c->lib;
	c->drain_ms = cfg->drain_ms ? cfg->drain_ms : GPROF_COLLECTOR_DRAIN_MS;
	gprof_coll_names_keep_all(cfg->all_api_calls);
	pthread_mutex_lock(&c->lock);
	if (!(cfg->activities & ANY_ACTS)) {
		set_state(c, GPROF_COLL_OFF);
		publish_status(c, "not used: GPROF_ACTIVITIES asks for no GPU activity");
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	err = gprof_coll_buffers_init(cfg->buffer_bytes);
	set_state(c, err ? GPROF_COLL_OFF : GPROF_COLL_IDLE);
	publish_status(c, err ? "not used: out of memory" : "not loaded yet: no CUDA call so far");
	pthread_mutex_unlock(&c->lock);
	return err;
}

/*
 * Subscribing claims CUPTI: a second client (torch.profiler, nsys, ncu) would get 39. The
 * callbacks taken: a graph node that stream capture made (capture.c), not one a graph's
 * instantiation copied from another; a context made (the process does GPU work).
 */
static void CUPTIAPI on_callback(void *arg, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
				 const void *data)
{
	const CUpti_ResourceData *rd = data;
	const CUpti_GraphData *gd = rd ? rd->resourceDescriptor : NULL;

	(void)arg;
	if (domain != CUPTI_CB_DOMAIN_RESOURCE)
		return;
	if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED && gd && !gd->originalNode)
		gprof_coll_capture_note((uint32_t)syscall(SYS_gettid), gprof_realtime_ns());
	else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED)
		__atomic_store_n(&gprof_coll.contexts, 1, __ATOMIC_RELAXED);
}

/*
 * The resource callbacks on_callback takes. A context made is known from the first time its
 * callback is on (CUPTI's first set-up, at the first CUDA call, before any context); a later
 * one (CUPTI taken again after another tool had it) keeps what is known.
 */
static void enable_callbacks(struct gprof_coll *c)
{
	int unknown = -1;

	if (!c->cupti.enable_callback)
		return;
	c->cupti.enable_callback(1, c->sub, CUPTI_CB_DOMAIN_RESOURCE,
				 CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED);
	if (c->cupti.enable_callback(1, c->sub, CUPTI_CB_DOMAIN_RESOURCE,
				     CUPTI_CBID_RESOURCE_CONTEXT_CREATED) == CUPTI_SUCCESS)
		__atomic_compare_exchange_n(&c->contexts, &unknown, 0, false, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED);
}

/* Without the lock: may re-enter CUDA's initialisation, which may call start() again. */
static int attach(struct gprof_coll *c, char *why, size_t len)
{
	CUptiResult r;
	char err[128];
	int rc = gprof_coll_load(&c->cupti, c->lib, why, len);

	if (rc)
		return rc;
	r = c->cupti.subscribe(&c->sub, on_callback, NULL);
	if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		snprintf(why, len,
			 "another tool holds CUPTI (torch.profiler, Nsight Systems or "
			 "Nsight Compute in this process?): cuptiSubscribe said %s",
			 gprof_coll_strerror(&c->cupti, r, err, sizeof(err)));
		return -EBUSY;
	}
	if (r == CUPTI_SUCCESS)
		enable_callbacks(c);
	if (r == CUPTI_SUCCESS)
		r = c->cupti.register_callbacks(gprof_coll_buffer_request,
						gprof_coll_buffer_complete);
	/* A CUPTI that refuses system ids (or lacks the call) keeps pthread ids, mapped. */
	if (r == CUPTI_SUCCESS && c->cupti.set_thread_id_type)
		gprof_coll_attrib_system_tids(
		    c->cupti.set_thread_id_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) ==
		    CUPTI_SUCCESS);
	if (r != CUPTI_SUCCESS) {
		char driver[512] = "none is loaded";

		/* A CUPTI of another CUDA version than the driver's says CUPTI_ERROR_UNKNOWN. */
		gprof_dso_find("libcuda.so", driver, sizeof(driver));
		snprintf(why, len,
			 "CUPTI (%s) cannot be set up: %s; check that it is the CUPTI of the CUDA "
			 "driver in use (%s), or point GPROF_CUPTI_LIB at that one",
			 c->cupti.path, gprof_coll_strerror(&c->cupti, r, err, sizeof(err)),
			 driver);
		return -EIO;
	}
	return gprof_coll_attrib_init(c->wins, &c->cupti, c->cfg.activities);
}

void gprof_collector_start(void)
{
	struct gprof_coll *c = &gprof_coll;
	int idle = GPROF_COLL_IDLE;
	char why[PATH_MAX + 512] = "";
	int rc;

	if (!__atomic_compare_exchange_n(&c->state, &idle, GPROF_COLL_LOADING, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	rc = attach(c, why, sizeof(why));
	if (!rc)
		rc = gprof_coll_thread_start(c, gprof_coll_disable_if_idle);
	pthread_mutex_lock(&c->lock);
	c->thread_running = !rc;
	if (gprof_coll_state(c) != GPROF_COLL_LOADING) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	if (rc && !why[0]) {
		char cause[GPROF_SPACE_ERROR_MAX];

		snprintf(why, sizeof(why), "the collector thread cannot start: %s",
			 gprof_space_error(rc, cause, sizeof(cause)));
	}
	if (rc) {
		fail(c, why);
	} else {
		/* Both are PATH_MAX long; the precision tells gcc so. */
		snprintf(c->proc.cupti_path, sizeof(c->proc.cupti_path), "%.*s",
			 (int)sizeof(c->proc.cupti_path) - 1, c->cupti.path);
		c->proc.cupti_version = (int)c->cupti.version;
		set_state(c, GPROF_COLL_READY);
		publish_status(c, "in use");
		pr_info("CUPTI %s (API version %u) in use", c->cupti.path, c->cupti.version);
		if (c->want)
			enable_kinds(c);
	}
	pthread_mutex_unlock(&c->lock);
}

void gprof_collector_yield(void)
{
	struct gprof_coll *c = &gprof_coll;
	enum gprof_coll_state s;

	pthread_mutex_lock(&c->lock);
	s = gprof_coll_state(c);
	if (s == GPROF_COLL_READY || s == GPROF_COLL_ENABLED) {
		disable_kinds(c);
		/* Every buffer comes back here before the other tool's callbacks replace ours. */
		c->cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
		if (c->cupti.unsubscribe)
			c->cupti.unsubscribe(c->sub);
		pr_warn(
		    "another tool in this process subscribed to CUPTI (torch.profiler, Nsight?): "
		    "libgprof handed it over. The GPU activity recorded so far is kept; from "
		    "now on traces hold host-side events only.");
		give_up(c, "handed over to another tool in this process");
	}
	pthread_mutex_unlock(&c->lock);
}

void gprof_collector_warmup(void)
{
	struct gprof_coll *c = &gprof_coll;

	pthread_mutex_lock(&c->lock);
	c->want = true;
	if (gprof_coll_state(c) == GPROF_COLL_READY)
		enable_kinds(c);
	pthread_mutex_unlock(&c->lock);
}

void gprof_collector_discard(void)
{
	struct gprof_coll *c = &gprof_coll;

	pthread_mutex_lock(&c->lock);
	c->want = false;
	pthread_mutex_unlock(&c->lock);
	gprof_coll_kick();
}

static bool usable(const struct gprof_coll *c)
{
	enum gprof_coll_state s = gprof_coll_state(c);

	return s == GPROF_COLL_IDLE || s == GPROF_COLL_LOADING || s == GPROF_COLL_READY ||
	       s == GPROF_COLL_ENABLED;
}

void gprof_collector_window_begin(uint32_t id, const struct gprof_memory_base *memory)
{
	struct gprof_coll *c = &gprof_coll;
	static bool said;

	pthread_mutex_lock(&c->lock);
	/* Export's slot was free, so ours is too (each holder frees it first): never expected. */
	if (usable(c) && !gprof_coll_win_claim(c->wins, id, memory) && !said) {
		said = true;
		pr_warn("window %llu: every collector slot is in use; its GPU activity is not "
			"recorded (a libgprof bug: please report it)",
			(unsigned long long)gprof_export_window_number(id));
	}
	pthread_mutex_unlock(&c->lock);
}

void gprof_collector_window_end(uint32_t id)
{
	struct gprof_coll *c = &gprof_coll;
	struct gprof_coll_win *w;

	pthread_mutex_lock(&c->lock);
	c->want = false;
	w = gprof_coll_win_of(c->wins, id);
	/* CUPTI never ran for it: nothing can come. */
	if (w && !c->thread_running)
		gprof_coll_win_release(w);
	pthread_mutex_unlock(&c->lock);
	gprof_coll_kick();
}

static CUpti_ExternalCorrelationKind external_kind(bool annotation)
{
	return annotation ? GPROF_COLL_ANNOTATION_KIND : GPROF_COLL_EXTERNAL_KIND;
}

bool gprof_collector_external_begin(bool annotation, uint32_t id)
{
	struct gprof_coll *c = &gprof_coll;

	if (gprof_coll_state(c) != GPROF_COLL_ENABLED || !c->cupti.push_external ||
	    !c->cupti.pop_external)
		return false;
	return c->cupti.push_external(external_kind(annotation), id) == CUPTI_SUCCESS;
}

void gprof_collector_external_end(bool annotation)
{
	struct gprof_coll *c = &gprof_coll;
	uint64_t id;

	c->cupti.pop_external(external_kind(annotation), &id);
}

int gprof_collector_contexts_made(void)
{
	return __atomic_load_n(&gprof_coll.contexts, __ATOMIC_RELAXED);
}

void gprof_collector_set_runtime_info(const struct gprof_export_process_info *rt)
{
	struct gprof_coll *c = &gprof_coll;
	struct gprof_export_process_info *p = &c->proc;

	pthread_mutex_lock(&c->lock);
	p->cuda_runtime_version = rt->cuda_runtime_version;
	p->cuda_driver_version = rt->cuda_driver_version;
	p->n_devices =
	    rt->n_devices < GPROF_EXPORT_MAX_DEVICES ? rt->n_devices : GPROF_EXPORT_MAX_DEVICES;
	memcpy(p->devices, rt->devices, p->n_devices * sizeof(p->devices[0]));
	gprof_export_set_process_info(p);
	pthread_mutex_unlock(&c->lock);
}

void gprof_collector_fini(unsigned timeout_ms)
{
	struct gprof_coll *c = &gprof_coll;

	pthread_mutex_lock(&c->lock);
	c->want = false;
	__atomic_store_n(&c->stop, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&c->lock);
	gprof_coll_thread_stop(c, timeout_ms);
	pthread_mutex_lock(&c->lock);
	if (gprof_coll_state(c) == GPROF_COLL_ENABLED)
		disable_kinds(c);
	if (!c->thread_running)
		gprof_coll_windows_release_all(c->wins);
	set_state(c, GPROF_COLL_OFF);
	pthread_mutex_unlock(&c->lock);
}

void gprof_collector_forked(void)
{
	struct gprof_coll *c = &gprof_coll;

	/* The parent's thread and CUPTI session are not ours; the exporter writes nothing here. */
	set_state(c, GPROF_COLL_OFF);
	__atomic_store_n(&gprof_coll_covers, 0, __ATOMIC_RELEASE);
	c->thread_running = false;
	c->want = false;
	gprof_coll_windows_forget(c->wins);
	/* Another thread may have held it at fork(). */
	pthread_mutex_init(&c->lock, NULL);
}
