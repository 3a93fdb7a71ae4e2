/*
 * PyTorch's own profiler (Kineto) for --torch, on libgprof's CUPTI. The start-up hook runs
 * torch.profiler's recorder with CPU activities only in warmup and active steps: it keeps each
 * operator's name and inputs, each tensor allocation and free, in memory, as cheaply as
 * torch.profiler does. Kineto would subscribe to CUPTI, which takes one subscriber, and libgprof
 * would have to hand its CUPTI over (handover.c). Once the hook claims it (gprof_torch_kineto),
 * CUPTI as PyTorch's libraries see it is served here instead: Kineto gets a subscription of its
 * own that reaches nothing, its activity calls do nothing, and the External ids it pushes around
 * every operator go onto libgprof's CUPTI under ids of libgprof's, so the API calls and the GPU
 * work each operator causes carry its id. An operator is kept by id, thread and time at its pop;
 * the hook hands over its name and args after the window (export/opargs.c joins them).
 */
#include <cupti.h>
#include <pthread.h>
#include <stdlib.h>

#include "collector/collector.h"
#include "common/clock.h"
#include "preload/preload.h"

#define KINETO_DEPTH 128

/* Kineto's subscription: a handle no CUPTI call ever sees. */
static int fake_subscriber;
#define FAKE ((CUpti_SubscriberHandle)&fake_subscriber)

static bool claimed;	     /* atomic: the hook asked; every Kineto call is served here */
static bool real_subscribed; /* atomic: a tool subscribed to the real CUPTI first */

struct kineto_frame {
	uint64_t kid;	   /* Kineto's External id */
	uint64_t start_ns; /* 0: pushed outside a window, not kept */
	uint32_t ext;	   /* libgprof's External id for it */
	bool pushed;	   /* on CUPTI's external correlation stack */
};

/* Per thread, per kind (CUSTOM0: operators, CUSTOM1: user scopes), as CUPTI's stacks. */
struct kineto_thread {
	unsigned session; /* the frames' (PyTorch's profiler started by the hook, from 1) */
	int depth[2];	  /* may exceed KINETO_DEPTH: frames beyond are counted, not kept */
	int step_at;	  /* a step marker waits for the depth (both kinds) to fall below it; 0 */
	struct kineto_frame frames[2][KINETO_DEPTH];
};

static struct gprof_thread_key thread_key = {PTHREAD_MUTEX_INITIALIZER, .free = free};
static unsigned session; /* atomic: how many times the hook started PyTorch's profiler */
static int open_frames;	 /* atomic: the session's open, on every thread */

/* The calling thread's frames; made first when make is true. NULL: none. */
static struct kineto_thread *thread_get(bool make)
{
	struct kineto_thread *t = gprof_thread_state_of(&thread_key);

	return t || !make ? t : gprof_thread_state(&thread_key, sizeof(*t));
}

static bool is_claimed(void)
{
	return __atomic_load_n(&claimed, __ATOMIC_ACQUIRE);
}

/*
 * For --torch's start-up hook, through ctypes, each time before it starts torch.profiler's
 * recorder: PyTorch's CUPTI calls are libgprof's from now on, in a new session. 0 when a tool
 * already holds the real CUPTI (Kineto has its handle: the hook must not start it).
 */
GPROF_EXPORT int gprof_torch_kineto(void)
{
	if (__atomic_load_n(&real_subscribed, __ATOMIC_ACQUIRE))
		return 0;
	__atomic_store_n(&claimed, true, __ATOMIC_RELEASE);
	__atomic_store_n(&open_frames, 0, __ATOMIC_RELAXED);
	__atomic_add_fetch(&session, 1, __ATOMIC_ACQ_REL);
	return 1;
}

/*
 * A thread's frames of an earlier session: an operator open when PyTorch's profiler stopped
 * ends without a pop. They go at the thread's first push of the next session, with what
 * libgprof pushed onto CUPTI for them.
 */
static void forget_earlier(struct kineto_thread *t)
{
	unsigned now = __atomic_load_n(&session, __ATOMIC_ACQUIRE);

	if (t->session == now)
		return;
	for (int user = 0; user < 2; user++)
		while (t->depth[user])
			if (--t->depth[user] < KINETO_DEPTH &&
			    t->frames[user][t->depth[user]].pushed)
				gprof_collector_external_end(user);
	t->step_at = 0;
	t->session = now;
}

bool gprof_kineto_subscribe(void *subscriber)
{
	if (!is_claimed()) {
		__atomic_store_n(&real_subscribed, true, __ATOMIC_RELEASE);
		return false;
	}
	if (subscriber)
		*(CUpti_SubscriberHandle *)subscriber = FAKE;
	return true;
}

int gprof_torch_kineto_open(void)
{
	return __atomic_load_n(&open_frames, __ATOMIC_RELAXED);
}

/* Frames open on the thread, both kinds. */
static int depth_of(const struct kineto_thread *t)
{
	return t ? t->depth[0] + t->depth[1] : 0;
}

bool gprof_kineto_in_op(void)
{
	return depth_of(thread_get(false)) > 0;
}

bool gprof_kineto_defer_step(void)
{
	struct kineto_thread *t = thread_get(false);

	if (!depth_of(t))
		return false;
	if (!t->step_at)
		t->step_at = depth_of(t);
	return true;
}

static CUptiResult push(CUpti_ExternalCorrelationKind kind, uint64_t kid)
{
	struct kineto_thread *t = thread_get(true);
	bool user = kind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1;

	if (!t || (!user && kind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0))
		return CUPTI_ERROR_INVALID_PARAMETER;
	forget_earlier(t);
	if (t->depth[user] < KINETO_DEPTH) {
		struct kineto_frame *f = &t->frames[user][t->depth[user]];

		*f = (struct kineto_frame){.kid = kid};
		if (gprof_session_recording()) {
			f->start_ns = gprof_realtime_ns();
			f->ext = gprof_events_next_external();
			f->pushed = gprof_collector_external_begin(user, f->ext);
		}
	}
	t->depth[user]++;
	__atomic_add_fetch(&open_frames, 1, __ATOMIC_RELAXED);
	return CUPTI_SUCCESS;
}

static CUptiResult pop(CUpti_ExternalCorrelationKind kind, uint64_t *kid)
{
	struct kineto_thread *t = thread_get(false);
	bool user = kind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1;

	if (!t || !t->depth[user])
		return CUPTI_ERROR_QUEUE_EMPTY;
	if (t->session == __atomic_load_n(&session, __ATOMIC_ACQUIRE))
		__atomic_sub_fetch(&open_frames, 1, __ATOMIC_RELAXED);
	if (--t->depth[user] < KINETO_DEPTH) {
		struct kineto_frame *f = &t->frames[user][t->depth[user]];

		if (kid)
			*kid = f->kid;
		if (f->pushed)
			gprof_collector_external_end(user);
		if (f->start_ns)
			gprof_session_kineto_op(f->kid, f->ext, user, f->start_ns,
						gprof_realtime_ns());
	}
	if (t->step_at && depth_of(t) < t->step_at) {
		t->step_at = 0;
		gprof_session_step_marker(gprof_realtime_ns());
	}
	return CUPTI_SUCCESS;
}

/*
 * The rest of what PyTorch's libraries call of CUPTI: served here once claimed (nothing to
 * do: Kineto records no GPU activity of its own), else passed on to the real CUPTI.
 */
#define PASS_ON(fn, ...)                                                                     \
	do {                                                                                 \
		static __typeof__(&fn) real;                                                 \
		__typeof__(&fn) real_fn = __atomic_load_n(&real, __ATOMIC_ACQUIRE);          \
		if (!real_fn) {                                                              \
			real_fn = (__typeof__(real_fn))gprof_resolve_in(#fn, "libcupti.so"); \
			__atomic_store_n(&real, real_fn, __ATOMIC_RELEASE);                  \
		}                                                                            \
		return real_fn ? real_fn(__VA_ARGS__) : CUPTI_ERROR_NOT_INITIALIZED;         \
	} while (0)

#define SERVED(fn, params, ...)                      \
	GPROF_EXPORT CUptiResult CUPTIAPI fn params; \
	GPROF_EXPORT CUptiResult CUPTIAPI fn params  \
	{                                            \
		if (is_claimed())                    \
			return CUPTI_SUCCESS;        \
		PASS_ON(fn, __VA_ARGS__);            \
	}

SERVED(cuptiActivityEnable, (CUpti_ActivityKind k), k)
SERVED(cuptiActivityDisable, (CUpti_ActivityKind k), k)
SERVED(cuptiActivityEnableCudaEventDeviceTimestamps, (uint8_t e), e)
SERVED(cuptiActivityEnableDriverApi, (CUpti_CallbackId c, uint8_t e), c, e)
SERVED(cuptiActivityEnableRuntimeApi, (CUpti_CallbackId c, uint8_t e), c, e)
SERVED(cuptiActivityFlushAll, (uint32_t flag), flag)
SERVED(cuptiActivityRegisterCallbacks,
       (CUpti_BuffersCallbackRequestFunc req, CUpti_BuffersCallbackCompleteFunc done), req, done)
SERVED(cuptiActivityRegisterTimestampCallback, (CUpti_TimestampCallbackFunc f), f)
SERVED(cuptiActivitySetAttribute, (CUpti_ActivityAttribute a, size_t *size, void *value), a, size,
       value)
SERVED(cuptiFinalize, (void))

GPROF_EXPORT CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid,
							     CUpti_Activity **record);
GPROF_EXPORT CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid,
							     CUpti_Activity **record)
{
	if (is_claimed())
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	PASS_ON(cuptiActivityGetNextRecord, buffer, valid, record);
}

GPROF_EXPORT CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream,
								    size_t *dropped);
GPROF_EXPORT CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream,
								    size_t *dropped)
{
	if (is_claimed()) {
		if (dropped)
			*dropped = 0;
		return CUPTI_SUCCESS;
	}
	PASS_ON(cuptiActivityGetNumDroppedRecords, ctx, stream, dropped);
}

GPROF_EXPORT CUptiResult CUPTIAPI
cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t id);
GPROF_EXPORT CUptiResult CUPTIAPI
cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t id)
{
	if (is_claimed())
		return push(kind, id);
	PASS_ON(cuptiActivityPushExternalCorrelationId, kind, id);
}

GPROF_EXPORT CUptiResult CUPTIAPI
cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t *id);
GPROF_EXPORT CUptiResult CUPTIAPI
cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t *id)
{
	if (is_claimed())
		return pop(kind, id);
	PASS_ON(cuptiActivityPopExternalCorrelationId, kind, id);
}

/* Kineto's own subscription is the fake one: calls on it do nothing. */
#define ON_FAKE(fn, params, sub, ...)                \
	GPROF_EXPORT CUptiResult CUPTIAPI fn params; \
	GPROF_EXPORT CUptiResult CUPTIAPI fn params  \
	{                                            \
		if (sub == FAKE)                     \
			return CUPTI_SUCCESS;        \
		PASS_ON(fn, __VA_ARGS__);            \
	}

ON_FAKE(cuptiUnsubscribe, (CUpti_SubscriberHandle s), s, s)
ON_FAKE(cuptiEnableCallback,
	(uint32_t e, CUpti_SubscriberHandle s, CUpti_CallbackDomain d, CUpti_CallbackId id), s, e,
	s, d, id)
ON_FAKE(cuptiEnableDomain, (uint32_t e, CUpti_SubscriberHandle s, CUpti_CallbackDomain d), s, e, s,
	d)
