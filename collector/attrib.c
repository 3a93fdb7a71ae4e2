/*
 * Which window a record belongs to. An API record belongs to the window in which its call
 * started; a GPU record to the window of the API record with its correlation id, whichever of
 * the two arrives first (they come in different buffers, in any order). A launch and its first
 * GPU record are written together, linked by an ac2g flow; what waits for its partner is held
 * here, bounded, and written without a link when the window finishes. Collector thread only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PR_FMT "collector: "
#include "collector/internal.h"
#include "common/config.h"
#include "common/log.h"

#define HELD_MAX    16384 /* events waiting for their partner */
#define ALLOCS_MAX  65536 /* device allocations followed for the memory counter */
#define DEVICES_MAX 64
#define THREADS_MAX 4096

struct gprof_coll_win gprof_coll_wins[GPROF_COLL_WINDOWS];
unsigned gprof_coll_activities;

/* The correlation map's values: what is known of a correlation id. */
enum link_kind {
	LINK_OUTSIDE = 1, /* a launch outside every window: its GPU records are dropped */
	LINK_API,	  /* a launch of window `slot`, its event held (or 0 when not written) */
	LINK_GPU,	  /* GPU records waiting for their launch: a chain of held events */
};
#define LINK(kind, slot, held) ((uint64_t)(kind) << 48 | (uint64_t)(slot) << 32 | (held))
#define LINK_KIND(v)	       ((enum link_kind)((v) >> 48))
#define LINK_SLOT(v)	       ((unsigned)((v) >> 32) & 0xffff)
#define LINK_HELD(v)	       ((uint32_t)(v)) /* index + 1, 0 for none */

struct held {
	struct gprof_export_event ev;
	uint32_t next; /* index + 1 of the next GPU event of the same correlation, 0 at the end */
};

static struct held *held;
static uint32_t *free_held, n_free_held;
static struct gprof_coll_map links;  /* correlation id -> LINK(...) */
static struct gprof_coll_map allocs; /* device address -> bytes, for the memory counter */
static uint64_t in_use[DEVICES_MAX]; /* device bytes CUPTI saw allocated and not yet freed */

/* libgprof's own calls: CUPTI's thread id and a time range (written by one thread, once). */
static struct {
	uint32_t thread;
	uint64_t from_ns, to_ns;
} own;

/* pthread_self() as CUPTI reports it -> kernel tid; filled by any thread, lock-free. */
static uint32_t thread_keys[THREADS_MAX], thread_tids[THREADS_MAX];

int gprof_coll_attrib_init(void)
{
	held = calloc(HELD_MAX, sizeof(*held));
	free_held = calloc(HELD_MAX, sizeof(*free_held));
	if (!held || !free_held || gprof_coll_map_init(&links, HELD_MAX * 2) ||
	    gprof_coll_map_init(&allocs, ALLOCS_MAX))
		return -ENOMEM;
	gprof_coll_attrib_reset();
	return 0;
}

static uint32_t thread_slot(uint32_t key)
{
	return (key * 0x9e3779b1u) >> 20 & (THREADS_MAX - 1);
}

void gprof_collector_note_thread(uint32_t tid)
{
	static GPROF_TLS uint32_t noted;
	uint32_t key = (uint32_t)(uintptr_t)pthread_self();

	if (noted == tid || !key)
		return;
	noted = tid;
	for (uint32_t i = thread_slot(key), n = 0; n < THREADS_MAX;
	     n++, i = (i + 1) % THREADS_MAX) {
		uint32_t k = __atomic_load_n(&thread_keys[i], __ATOMIC_ACQUIRE);

		if (!k && __atomic_compare_exchange_n(&thread_keys[i], &k, key, false,
						      __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			k = key;
		if (k == key) {
			__atomic_store_n(&thread_tids[i], tid, __ATOMIC_RELEASE);
			return;
		}
	}
}

/* The kernel tid of CUPTI's thread id, or CUPTI's id when the thread never made itself known. */
static uint32_t thread_tid(uint32_t key)
{
	for (uint32_t i = thread_slot(key), n = 0; n < THREADS_MAX;
	     n++, i = (i + 1) % THREADS_MAX) {
		uint32_t k = __atomic_load_n(&thread_keys[i], __ATOMIC_ACQUIRE);
		uint32_t tid = __atomic_load_n(&thread_tids[i], __ATOMIC_ACQUIRE);

		if (!k)
			break;
		if (k == key && tid)
			return tid;
	}
	return key;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void gprof_collector_own_calls(bool begin)
{
	if (begin) {
		__atomic_store_n(&own.to_ns, UINT64_MAX, __ATOMIC_RELAXED);
		__atomic_store_n(&own.from_ns, realtime_ns(), __ATOMIC_RELAXED);
		__atomic_store_n(&own.thread, (uint32_t)(uintptr_t)pthread_self(),
				 __ATOMIC_RELEASE);
	} else {
		__atomic_store_n(&own.to_ns, realtime_ns(), __ATOMIC_RELEASE);
	}
}

static bool is_own_call(const struct gprof_coll_rec *r)
{
	return r->thread == __atomic_load_n(&own.thread, __ATOMIC_ACQUIRE) &&
	       r->ev.ts_ns >= __atomic_load_n(&own.from_ns, __ATOMIC_RELAXED) &&
	       r->ev.ts_ns <= __atomic_load_n(&own.to_ns, __ATOMIC_ACQUIRE);
}

bool gprof_coll_win_ended(const struct gprof_coll_win *w)
{
	return __atomic_load_n(&w->id, __ATOMIC_ACQUIRE) &&
	       __atomic_load_n(&w->end_ns, __ATOMIC_ACQUIRE) != UINT64_MAX;
}

/* The window whose calls started in [begin, end) and that ts falls in. */
static struct gprof_coll_win *window_at(uint64_t ts)
{
	for (unsigned i = 0; i < GPROF_COLL_WINDOWS; i++) {
		struct gprof_coll_win *w = &gprof_coll_wins[i];

		if (__atomic_load_n(&w->id, __ATOMIC_ACQUIRE) &&
		    __atomic_load_n(&w->begin_ns, __ATOMIC_ACQUIRE) <= ts &&
		    ts < __atomic_load_n(&w->end_ns, __ATOMIC_ACQUIRE))
			return w;
	}
	return NULL;
}

/* Where counts without a time go: the window recording now, else the oldest still draining. */
static struct gprof_coll_win *collecting(void)
{
	struct gprof_coll_win *best = NULL;

	for (unsigned i = 0; i < GPROF_COLL_WINDOWS; i++) {
		struct gprof_coll_win *w = &gprof_coll_wins[i];
		uint32_t id = __atomic_load_n(&w->id, __ATOMIC_ACQUIRE);

		if (!id)
			continue;
		if (!gprof_coll_win_ended(w))
			return w;
		if (!best || id < best->id)
			best = w;
	}
	return best;
}

void gprof_coll_attrib_dropped(uint64_t n)
{
	struct gprof_coll_win *w = n ? collecting() : NULL;

	if (w)
		w->dropped += n;
}

static void push(struct gprof_export_event *ev, struct gprof_coll_win *w, bool flow)
{
	ev->window = w->id;
	ev->flags = flow ? ev->flags | GPROF_EXPORT_FLOW : ev->flags & ~GPROF_EXPORT_FLOW;
	/* On failure the exporter counts the drop in the window's metadata itself. */
	gprof_export_push(ev);
}

static struct held *held_alloc(uint32_t *index1)
{
	if (!n_free_held)
		return NULL;
	*index1 = free_held[--n_free_held] + 1;
	return &held[*index1 - 1];
}

static void held_free(uint32_t index1)
{
	free_held[n_free_held++] = index1 - 1;
}

/* Writes (to w) or drops every GPU event of a chain, and frees it. */
static void chain_release(uint32_t index1, struct gprof_coll_win *w, bool flow_first)
{
	while (index1) {
		uint32_t next = held[index1 - 1].next;

		if (w)
			push(&held[index1 - 1].ev, w, flow_first);
		flow_first = false;
		held_free(index1);
		index1 = next;
	}
}

static bool api_wanted(void)
{
	return gprof_coll_activities & GPROF_ACT_API;
}

static void note_corr(struct gprof_coll_win *w, uint32_t corr)
{
	if (!w->hi || corr < w->lo)
		w->lo = corr;
	if (corr > w->hi)
		w->hi = corr;
}

/* A launch of window w whose GPU record has not come yet. */
static void hold_api(struct gprof_coll_rec *r, struct gprof_coll_win *w)
{
	uint32_t index1 = 0;
	struct held *h = api_wanted() ? held_alloc(&index1) : NULL;

	if (h)
		h->ev = r->ev;
	if (gprof_coll_map_put(&links, r->ev.correlation,
			       LINK(LINK_API, w - gprof_coll_wins, index1)) == 0) {
		w->pending++;
		return;
	}
	/* No room to wait for the partner: written now, unlinked. */
	if (index1)
		held_free(index1);
	if (api_wanted())
		push(&r->ev, w, false);
}

static void on_api(struct gprof_coll_rec *r)
{
	struct gprof_coll_win *w = window_at(r->ev.ts_ns);
	uint32_t corr = r->ev.correlation;
	uint64_t link = 0;
	bool waiting = gprof_coll_map_get(&links, corr, &link) && LINK_KIND(link) == LINK_GPU;

	r->ev.tid = thread_tid(r->thread);
	if (waiting)
		gprof_coll_map_del(&links, corr);
	if (!w) {
		if (waiting)
			chain_release(LINK_HELD(link), NULL, false);
		else if (r->launches & gprof_coll_activities)
			gprof_coll_map_put(&links, corr, LINK(LINK_OUTSIDE, 0, 0));
		return;
	}
	note_corr(w, corr);
	if (waiting) {
		if (api_wanted())
			push(&r->ev, w, true);
		chain_release(LINK_HELD(link), w, api_wanted());
	} else if (r->launches & gprof_coll_activities) {
		hold_api(r, w);
	} else if (api_wanted()) {
		push(&r->ev, w, false);
	}
}

/* A live window whose API records so far span corr, for a GPU record that cannot wait. */
static struct gprof_coll_win *window_of_corr(uint32_t corr)
{
	for (unsigned i = 0; i < GPROF_COLL_WINDOWS; i++) {
		struct gprof_coll_win *w = &gprof_coll_wins[i];

		if (__atomic_load_n(&w->id, __ATOMIC_ACQUIRE) && w->hi && w->lo <= corr &&
		    corr <= w->hi)
			return w;
	}
	return NULL;
}

/* A GPU record before its launch record: held, chained to others of the same correlation. */
static void hold_gpu(struct gprof_coll_rec *r, uint64_t link)
{
	uint32_t corr = r->ev.correlation, index1 = 0;
	struct held *h = held_alloc(&index1);
	struct gprof_coll_win *w;

	if (h) {
		h->ev = r->ev;
		h->next = link ? LINK_HELD(link) : 0;
		if (gprof_coll_map_put(&links, corr, LINK(LINK_GPU, 0, index1)) == 0)
			return;
		held_free(index1);
	}
	w = window_of_corr(corr);
	if (w) {
		w->unlinked++;
		push(&r->ev, w, false);
	} else {
		gprof_coll_attrib_dropped(1);
	}
}

static void on_gpu(struct gprof_coll_rec *r)
{
	uint32_t corr = r->ev.correlation;
	struct gprof_coll_win *w;
	uint64_t link;

	if (!gprof_coll_map_get(&links, corr, &link)) {
		hold_gpu(r, 0);
		return;
	}
	if (LINK_KIND(link) == LINK_GPU) {
		hold_gpu(r, link);
		return;
	}
	gprof_coll_map_del(&links, corr);
	if (LINK_KIND(link) == LINK_OUTSIDE)
		return;
	w = &gprof_coll_wins[LINK_SLOT(link)];
	w->pending--;
	if (LINK_HELD(link)) {
		push(&held[LINK_HELD(link) - 1].ev, w, true);
		held_free(LINK_HELD(link));
	}
	push(&r->ev, w, LINK_HELD(link) != 0);
}

/* The gpu_memory counter: device bytes allocated and not freed, of the allocations seen. */
static void on_memory(struct gprof_coll_rec *r)
{
	uint32_t dev = r->ev.device;
	struct gprof_coll_win *w;
	uint64_t bytes;

	if (dev >= DEVICES_MAX)
		return;
	if (r->delta > 0 && gprof_coll_map_put(&allocs, r->address, (uint64_t)r->delta) == 0)
		in_use[dev] += (uint64_t)r->delta;
	else if (r->delta > 0 || !gprof_coll_map_get(&allocs, r->address, &bytes))
		return; /* not followed: the table is full, or it was allocated before */
	else if (gprof_coll_map_del(&allocs, r->address))
		in_use[dev] -= bytes;
	w = window_at(r->ev.ts_ns);
	if (!w || !(gprof_coll_activities & GPROF_ACT_MEMORY))
		return;
	r->ev.u.allocated = in_use[dev];
	push(&r->ev, w, false);
}

static void on_record(const CUpti_Activity *rec)
{
	struct gprof_coll_rec r;
	struct gprof_coll_win *w;

	gprof_coll_translate(rec, &r);
	switch (r.cls) {
	case GPROF_COLL_UNTIMED:
		if ((w = collecting()))
			w->untimed++;
		break;
	case GPROF_COLL_API:
		if (!is_own_call(&r))
			on_api(&r);
		break;
	case GPROF_COLL_GPU:
		on_gpu(&r);
		break;
	case GPROF_COLL_MEMORY:
		on_memory(&r);
		break;
	case GPROF_COLL_OTHER:
		break;
	}
}

void gprof_coll_attrib_buffer(const struct gprof_coll_buf *b)
{
	CUpti_Activity *rec = NULL;
	struct gprof_coll_win *w;
	uint64_t n = 0;
	CUptiResult r;

	while ((r = gprof_cupti.next_record(b->buf, b->valid, &rec)) == CUPTI_SUCCESS) {
		n++;
		if (!b->discard)
			on_record(rec);
	}
	if (b->discard)
		gprof_coll_attrib_dropped(n);
	/* CUPTI cannot step over a kind it does not know: the rest of the buffer is lost. */
	if (r == CUPTI_ERROR_INVALID_KIND && (w = collecting()))
		w->unknown++;
}

/* The sweep of gprof_coll_attrib_finish(), over every correlation id still known. */
static bool sweep(uint64_t corr, uint64_t link, void *arg)
{
	struct gprof_coll_win *w = arg;
	bool mine = w->hi && w->lo <= corr && corr <= w->hi;

	switch (LINK_KIND(link)) {
	case LINK_API:
		if (&gprof_coll_wins[LINK_SLOT(link)] != w)
			return true;
		if (LINK_HELD(link)) {
			push(&held[LINK_HELD(link) - 1].ev, w, false);
			held_free(LINK_HELD(link));
		}
		return false;
	case LINK_GPU:
		/* Its launch record is lost (or not one we know): placed by correlation order. */
		if (!mine && !(w->hi && corr < w->lo))
			return true;
		for (uint32_t i = LINK_HELD(link); mine && i; i = held[i - 1].next)
			w->unlinked++;
		chain_release(LINK_HELD(link), mine ? w : NULL, false);
		return false;
	case LINK_OUTSIDE:
		return !(w->hi && corr <= w->hi);
	}
	return false;
}

void gprof_coll_attrib_finish(struct gprof_coll_win *w)
{
	gprof_coll_map_filter(&links, sweep, w);
}

void gprof_coll_attrib_reset(void)
{
	gprof_coll_map_clear(&links);
	gprof_coll_map_clear(&allocs);
	memset(in_use, 0, sizeof(in_use));
	n_free_held = 0;
	for (uint32_t i = HELD_MAX; i > 0; i--)
		free_held[n_free_held++] = i - 1;
}
