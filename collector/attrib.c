/*
 * Which window a record belongs to. An API record belongs to the window in which its call
 * started; a GPU record to the window of the API record with its correlation id, whichever of
 * the two arrives first (they come in different buffers, in any order). A launch and its first
 * GPU record are written together, linked by an ac2g flow; what waits for its partner is held
 * (held.c) and written without a link when the window finishes, or at once when held.c is at
 * its limit (counted). Collector thread only.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PR_FMT "collector: "
#include "collector/internal.h"
#include "common/array.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/heap.h"
#include "common/log.h"

#define ALLOCS_MAX   65536 /* device allocations followed for the memory counter */
#define DEVICES_MAX  64
#define CONTEXTS_MAX 64
#define EVENTS_MAX   65536 /* event records remembered for the waits on them */
#define SYNCS_MAX    16384 /* waits on events held per window; past it written unresolved */
#define THREADS_BITS 12	   /* 4096 threads followed at once */
#define THREADS_MAX  (1u << THREADS_BITS)
/*
 * GPU halves of links whose launch is written but which the memory cap dropped: tried again
 * before each later event, and before the window finishes (then up to OWED_TRIES, 1 ms apart).
 */
#define OWED_MAX      16
#define OWED_TRIES    1000
#define OWED_PAUSE_NS 1000000
/*
 * A GPU record whose launch record has not come this long after later API records did (with
 * CUPTI flushed in between) will never get it: the launch record was lost.
 */
#define GPU_PATIENCE_MS 1000

static unsigned activities; /* GPROF_ACT_* to record, from the configuration */
/* The window slots (gprof_coll.wins), given at init: claimed elsewhere, filled here. */
static struct gprof_coll_win *wins;
/* Whose next_record walks a buffer (gprof_coll.cupti, or a test's), given at init. */
static const struct gprof_cupti *cupti;

/* The correlation map's values: what is known of a correlation id. */
enum link_kind {
	LINK_OUTSIDE = 1, /* a launch outside every window: its GPU records are dropped */
	LINK_API,	  /* a launch of window `slot`, waiting in the API table; 0: API events
			   * are not recorded, or it was written unlinked (the table was full) */
	LINK_GPU,	  /* GPU records waiting for their launch: a chain in the GPU table; 0:
			   * written unlinked (the table was full) */
};
#define LINK(kind, slot, held) ((uint64_t)(kind) << 48 | (uint64_t)(slot) << 32 | (held))
#define LINK_KIND(v)	       ((enum link_kind)((v) >> 48))
#define LINK_SLOT(v)	       ((unsigned)((v) >> 32) & 0xffff)
#define LINK_HELD(v)	       ((uint32_t)(v)) /* index + 1, 0 for none */

static struct gprof_export_event owed[OWED_MAX];
static unsigned n_owed;

/*
 * How long a record has waited, by correlation id: the highest id of API records seen so far,
 * and what it was every SAMPLE_MS or so, for the last SAMPLES times.
 */
#define SAMPLES	  64
#define SAMPLE_MS 100
struct corr_sample {
	uint64_t ms; /* CLOCK_MONOTONIC */
	uint32_t corr;
};
static struct corr_sample samples[SAMPLES];
static unsigned n_samples;
static uint32_t corr_seen;
static bool expiring; /* the last sweep let records go */

static struct gprof_map allocs; /* device address -> bytes, for the memory counter */
/* CUPTI's id of an event's record -> its stream << 32 | its call's correlation id. */
static struct gprof_map event_records;
/* Context id -> device, from the records that carry both (a sync record has the context). */
static uint32_t contexts[CONTEXTS_MAX][2];
static unsigned n_contexts;
static struct gprof_coll_held tables; /* what waits for its partner (held.c) */

/*
 * libgprof's own calls (the runtime's facts; what is in use at each window's opening), made on
 * the program's threads: CUPTI's thread id and the time range of each of the last OWN_RANGES,
 * since the collector thread reads their records later. Each range is written under its
 * sequence count (odd while written), so that a reader never takes half of an old range and
 * half of a new one for one of ours (which once hid a window's launches).
 */
#define OWN_RANGES 8
static struct own_range {
	unsigned seq;
	uint32_t thread;
	uint64_t from_ns, to_ns;
} own[OWN_RANGES];
static unsigned own_next;
/* This thread's range in progress, and what it wrote there. */
static GPROF_TLS struct {
	struct own_range *r;
	uint32_t thread;
	uint64_t from_ns;
} own_open;

/* CUPTI names threads by gettid(); else by pthread_self(), mapped by the table below. */
static bool system_tids;
/* pthread_self() as CUPTI reports it -> kernel tid; filled by any thread, lock-free. */
static uint32_t thread_keys[THREADS_MAX], thread_tids[THREADS_MAX];

void gprof_coll_attrib_system_tids(bool system)
{
	__atomic_store_n(&system_tids, system, __ATOMIC_RELEASE);
}

static bool cupti_names_tids(void)
{
	return __atomic_load_n(&system_tids, __ATOMIC_ACQUIRE);
}

/* The calling thread's id as CUPTI's records name it. */
static uint32_t cupti_thread_id(void)
{
	return cupti_names_tids() ? (uint32_t)syscall(SYS_gettid)
				  : (uint32_t)(uintptr_t)pthread_self();
}

struct gprof_coll_held *gprof_coll_attrib_held(void)
{
	return &tables;
}

int gprof_coll_attrib_init(struct gprof_coll_win *slots, const struct gprof_cupti *walker,
			   unsigned acts)
{
	wins = slots;
	cupti = walker;
	activities = acts;
	if (gprof_coll_held_init(&tables) || gprof_map_init(&allocs, ALLOCS_MAX) ||
	    gprof_map_init(&event_records, EVENTS_MAX))
		return -ENOMEM;
	gprof_coll_attrib_reset();
	return 0;
}

static uint32_t thread_slot(uint32_t key)
{
	/* Fibonacci hashing: the product's top THREADS_BITS bits. */
	return (key * 0x9e3779b1u) >> (32 - THREADS_BITS);
}

GPROF_TLS uint32_t gprof_coll_noted_tid;

/*
 * Noted once per thread (and tid, which a fork changes): CUPTI names threads by pthread_self()
 * or by system ids from when it is set up, and only the first needs the table.
 */
void gprof_coll_note_thread(uint32_t tid)
{
	uint32_t key = (uint32_t)(uintptr_t)pthread_self();

	gprof_coll_noted_tid = tid;
	if (cupti_names_tids() || !key)
		return;
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
	if (cupti_names_tids())
		return key;
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

static void own_write(struct own_range *r, uint32_t thread, uint64_t from_ns, uint64_t to_ns)
{
	unsigned seq = __atomic_load_n(&r->seq, __ATOMIC_RELAXED);

	/* Two writers on one range only when OWN_RANGES others began meanwhile: one waits. */
	while ((seq & 1) || !__atomic_compare_exchange_n(&r->seq, &seq, seq + 1, false,
							 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		seq = __atomic_load_n(&r->seq, __ATOMIC_RELAXED);
	/* Release: a reader that sees one of them sees the odd count after it. */
	__atomic_store_n(&r->thread, thread, __ATOMIC_RELEASE);
	__atomic_store_n(&r->from_ns, from_ns, __ATOMIC_RELEASE);
	__atomic_store_n(&r->to_ns, to_ns, __ATOMIC_RELEASE);
	__atomic_store_n(&r->seq, seq + 2, __ATOMIC_RELEASE);
}

void gprof_collector_own_calls(bool begin)
{
	if (begin) {
		own_open.r = &own[__atomic_fetch_add(&own_next, 1, __ATOMIC_RELAXED) % OWN_RANGES];
		own_open.thread = cupti_thread_id();
		own_open.from_ns = gprof_realtime_ns();
		own_write(own_open.r, own_open.thread, own_open.from_ns, UINT64_MAX);
	} else if (own_open.r) {
		own_write(own_open.r, own_open.thread, own_open.from_ns, gprof_realtime_ns());
		own_open.r = NULL;
	}
}

static bool own_range_has(struct own_range *r, const struct gprof_coll_rec *rec)
{
	for (;;) {
		unsigned seq = __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE);
		uint32_t thread = __atomic_load_n(&r->thread, __ATOMIC_ACQUIRE);
		uint64_t from = __atomic_load_n(&r->from_ns, __ATOMIC_ACQUIRE),
			 to = __atomic_load_n(&r->to_ns, __ATOMIC_ACQUIRE);

		if (!(seq & 1) && __atomic_load_n(&r->seq, __ATOMIC_RELAXED) == seq)
			return thread == rec->thread && from <= rec->ev.ts_ns &&
			       rec->ev.ts_ns <= to;
		sched_yield();
	}
}

static bool is_own_call(const struct gprof_coll_rec *r)
{
	for (unsigned i = 0; i < OWN_RANGES; i++)
		if (own_range_has(&own[i], r))
			return true;
	return false;
}

/* The window whose calls started in [begin, end) and that ts falls in. */
static struct gprof_coll_win *window_at(uint64_t ts)
{
	for (unsigned i = 0; i < GPROF_COLL_WINDOWS; i++) {
		struct gprof_span span;

		if (gprof_coll_win_span(&wins[i], &span) && span.begin <= ts && ts < span.end)
			return &wins[i];
	}
	return NULL;
}

/* Where counts without a time go: the window recording now, else the oldest still draining. */
static struct gprof_coll_win *collecting(void)
{
	struct gprof_coll_win *best = NULL;

	for (unsigned i = 0; i < GPROF_COLL_WINDOWS; i++) {
		struct gprof_coll_win *w = &wins[i];
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

/* Writes what is owed while the memory cap lets it: true when nothing is owed any more. */
static bool pay_owed(void)
{
	while (n_owed && gprof_export_push(&owed[n_owed - 1]) == 0)
		n_owed--;
	return !n_owed;
}

static void push(struct gprof_export_event *ev, struct gprof_coll_win *w, bool flow)
{
	ev->window = w->id;
	ev->flags = flow ? ev->flags | GPROF_EXPORT_FLOW : ev->flags & ~GPROF_EXPORT_FLOW;
	gprof_coll_external_apply(ev);
	if (n_owed)
		pay_owed();
	/* On failure the exporter counts the drop in the window's metadata itself. */
	gprof_export_push(ev);
}

/*
 * A launch and its first GPU record, linked. A flow half without the other makes the trace
 * invalid: once the launch is written, its GPU event is owed until the cap lets it through
 * (the cap counts that drop although the event comes later).
 */
static void push_linked(struct gprof_export_event *api, struct gprof_export_event *gpu,
			struct gprof_coll_win *w)
{
	const struct timespec pause = {.tv_nsec = OWED_PAUSE_NS};

	if (n_owed)
		pay_owed();
	api->window = gpu->window = w->id;
	api->flags |= GPROF_EXPORT_FLOW;
	gpu->flags |= GPROF_EXPORT_FLOW;
	gprof_coll_external_apply(api);
	gprof_coll_external_apply(gpu);
	if (gprof_export_push(api) != 0) {
		/* unlinked: on failure the exporter counts the drop itself */
		gpu->flags &= ~GPROF_EXPORT_FLOW;
		gprof_export_push(gpu);
		return;
	}
	if (gprof_export_push(gpu) == 0)
		return;
	/* Only at a full chunk with none free: the next events fail too until one is. */
	for (unsigned i = 0; n_owed == OWED_MAX && i < OWED_TRIES && !pay_owed(); i++)
		nanosleep(&pause, NULL);
	if (n_owed < OWED_MAX)
		owed[n_owed++] = *gpu;
}

/*
 * GPU work of a launch outside every window: a window whose span it ran in gets that part as
 * EARLIER work (GPU busy time that no launch of the window's caused: the CPU ran ahead).
 */
static void earlier(const struct gprof_export_event *gpu)
{
	uint64_t end = gpu->ts_ns + gpu->dur_ns;

	for (unsigned i = 0; i < GPROF_COLL_WINDOWS; i++) {
		struct gprof_coll_win *w = &wins[i];
		struct gprof_span span;
		struct gprof_export_event ev = *gpu;

		if (!gprof_coll_win_span(w, &span) || end <= span.begin || gpu->ts_ns >= span.end)
			continue;
		ev.kind = GPROF_EXPORT_EARLIER;
		if (gpu->kind != GPROF_EXPORT_KERNEL)
			ev.name = gprof_export_intern(gpu->kind == GPROF_EXPORT_MEMCPY ? "Memcpy"
										       : "Memset");
		ev.ts_ns = gpu->ts_ns > span.begin ? gpu->ts_ns : span.begin;
		ev.dur_ns = (end < span.end ? end : span.end) - ev.ts_ns;
		push(&ev, w, false);
		return;
	}
}

/* How many GPU records a chain of held ones holds. */
static uint64_t chain_length(uint32_t index1)
{
	uint64_t n = 0;

	for (; index1; index1 = tables.gpus[index1 - 1].next)
		n++;
	return n;
}

/*
 * Writes (to w) or drops every GPU event of a chain; the earliest is linked to api if given
 * (a CUDA graph's launch has one correlation id for all its work: the flow goes to the first).
 */
static void chain_release(uint32_t index1, struct gprof_coll_win *w, struct gprof_export_event *api,
			  bool api_outside)
{
	uint32_t earliest = index1;

	if (w && api && !index1)
		push(api, w, false);
	for (uint32_t i = index1; i; i = tables.gpus[i - 1].next)
		if (tables.gpus[i - 1].ev.ts_ns < tables.gpus[earliest - 1].ev.ts_ns)
			earliest = i;
	while (index1) {
		struct gprof_coll_held_gpu *h = &tables.gpus[index1 - 1];
		uint32_t next = h->next;

		if (w && api && index1 == earliest)
			push_linked(api, &h->ev, w);
		else if (w)
			push(&h->ev, w, false);
		else if (api_outside)
			earlier(&h->ev);
		gprof_coll_held_free(&tables, GPROF_COLL_HELD_GPU, index1);
		index1 = next;
	}
}

static bool api_wanted(void)
{
	return activities & GPROF_ACT_API;
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
	uint32_t index1 = api_wanted() ? gprof_coll_held_alloc(&tables, GPROF_COLL_HELD_API) : 0;
	bool known =
	    gprof_coll_links_put(&tables, r->ev.correlation, LINK(LINK_API, w - wins, index1)) == 0;

	w->pending += known;
	if (index1 && known) {
		gprof_coll_api_pack(&r->ev, &tables.apis[index1 - 1]);
		return;
	}
	/* No room to wait: written now, unlinked, and so will its GPU work be. */
	if (index1)
		gprof_coll_held_free(&tables, GPROF_COLL_HELD_API, index1);
	if (api_wanted()) {
		w->unheld++;
		push(&r->ev, w, false);
	}
}

static void on_api(struct gprof_coll_rec *r)
{
	struct gprof_coll_win *w = window_at(r->ev.ts_ns);
	uint32_t corr = r->ev.correlation;
	uint64_t link = 0;
	bool waiting = gprof_map_get(&tables.links, corr, &link) && LINK_KIND(link) == LINK_GPU,
	     launch, captured;

	r->ev.tid = thread_tid(r->thread);
	if (corr > corr_seen)
		corr_seen = corr;
	if (waiting)
		gprof_map_del(&tables.links, corr);
	/* A call that stream capture made into a node queued nothing (capture.c). */
	launch = !waiting && (r->launches & activities);
	captured =
	    launch && gprof_coll_capture_made(r->ev.tid, r->ev.ts_ns, r->ev.ts_ns + r->ev.dur_ns);
	if (captured)
		r->ev.flags |= GPROF_EXPORT_ARG_CAPTURED;
	if (!w) {
		if (waiting)
			chain_release(LINK_HELD(link), NULL, NULL, true);
		else if (launch && !captured)
			gprof_coll_links_put(&tables, corr, LINK(LINK_OUTSIDE, 0, 0));
		return;
	}
	note_corr(w, corr);
	if (waiting) {
		/* No chain: its GPU work was written unlinked (the table was full); so is it. */
		w->unheld += api_wanted() && !LINK_HELD(link);
		chain_release(LINK_HELD(link), w, api_wanted() ? &r->ev : NULL, false);
	} else if (launch && !captured) {
		hold_api(r, w);
	} else if (api_wanted()) {
		push(&r->ev, w, false);
	}
}

/* A live window whose API records so far span corr, for a GPU record that cannot wait. */
static struct gprof_coll_win *window_of_corr(uint32_t corr)
{
	for (unsigned i = 0; i < GPROF_COLL_WINDOWS; i++) {
		struct gprof_coll_win *w = &wins[i];

		if (__atomic_load_n(&w->id, __ATOMIC_ACQUIRE) && w->hi && w->lo <= corr &&
		    corr <= w->hi)
			return w;
	}
	return NULL;
}

/* A GPU record before its launch record: held, chained to others of the same correlation. */
static void hold_gpu(struct gprof_coll_rec *r, uint64_t link)
{
	uint32_t corr = r->ev.correlation,
		 index1 = gprof_coll_held_alloc(&tables, GPROF_COLL_HELD_GPU);
	struct gprof_coll_win *w;

	if (index1 && gprof_coll_links_put(&tables, corr, LINK(LINK_GPU, 0, index1)) == 0) {
		tables.gpus[index1 - 1].ev = r->ev;
		tables.gpus[index1 - 1].next = LINK_HELD(link);
		return;
	}
	if (index1)
		gprof_coll_held_free(&tables, GPROF_COLL_HELD_GPU, index1);
	/*
	 * No room to wait: written now, unlinked, to the window its correlation id places it in
	 * (or the one recording); its launch, when it comes, is written unlinked too.
	 */
	w = window_of_corr(corr);
	if (!w)
		w = collecting();
	if (!w)
		return;
	w->unheld++;
	if (!link)
		gprof_coll_links_put(&tables, corr, LINK(LINK_GPU, 0, 0));
	push(&r->ev, w, false);
}

static void on_gpu(struct gprof_coll_rec *r)
{
	uint32_t corr = r->ev.correlation;
	struct gprof_export_event api;
	struct gprof_coll_win *w;
	uint64_t link;

	if (!gprof_map_get(&tables.links, corr, &link)) {
		hold_gpu(r, 0);
		return;
	}
	if (LINK_KIND(link) == LINK_GPU) {
		hold_gpu(r, link);
		return;
	}
	gprof_map_del(&tables.links, corr);
	if (LINK_KIND(link) == LINK_OUTSIDE) {
		earlier(&r->ev);
		return;
	}
	w = &wins[LINK_SLOT(link)];
	w->pending--;
	if (!LINK_HELD(link)) {
		/* API events are not recorded, or the launch was written unlinked. */
		w->unheld += api_wanted();
		push(&r->ev, w, false);
		return;
	}
	gprof_coll_api_unpack(&tables.apis[LINK_HELD(link) - 1], corr, &api);
	gprof_coll_held_free(&tables, GPROF_COLL_HELD_API, LINK_HELD(link));
	push_linked(&api, &r->ev, w);
}

/*
 * What m says its pool holds now; the device's pools' total into *reserved. False while the
 * window has seen no pool of the device (or more pools than it follows).
 */
static bool pools_reserved(struct gprof_coll_win *w, const struct gprof_coll_mem *m,
			   uint64_t *reserved)
{
	bool any = false;
	unsigned i;

	for (i = 0; m->pool && i < w->n_pools && w->pools[i].pool != m->pool; i++)
		;
	if (m->pool && i == w->n_pools && w->n_pools < GPROF_COLL_POOLS)
		w->pools[w->n_pools++] = (struct gprof_coll_pool){m->pool, 0, m->device};
	if (m->pool && i < w->n_pools)
		w->pools[i].size = m->pool_size;
	*reserved = 0;
	for (i = 0; i < w->n_pools; i++)
		if (w->pools[i].device == m->device) {
			*reserved += w->pools[i].size;
			any = true;
		}
	return any;
}

/*
 * One change of the window's gpu_memory counter, written (address 0: the counter alone), with
 * what the device's stream-ordered pools hold once it has seen one.
 */
static void push_memory(struct gprof_coll_win *w, const struct gprof_coll_mem *m)
{
	uint64_t *now = &w->memory[m->device];
	struct gprof_export_event ev = {
	    .kind = GPROF_EXPORT_MEMORY,
	    .ts_ns = m->ts_ns,
	    .device = m->device,
	    .tid = (uint32_t)getpid(), /* CUPTI does not say which thread: the main one */
	};

	*now = m->delta < 0 && (uint64_t)-m->delta > *now ? 0 : *now + (uint64_t)m->delta;
	ev.u.memory.allocated = *now;
	ev.u.memory.address = m->address;
	ev.u.memory.bytes = m->delta;
	if (pools_reserved(w, m, &ev.u.memory.reserved))
		ev.flags |= GPROF_EXPORT_MEMORY_POOLS;
	push(&ev, w, false);
}

/*
 * What one allocation (raw > 0) or release changes in the counter of w (NULL: none). With the
 * opening's figure, every record counts as it is; without it, only the releases of allocations
 * seen count, which needs the records in time order (CUPTI's come per thread, out of it: an
 * address the allocator reuses may be allocated again before its release arrives).
 */
static int64_t counted(const struct gprof_coll_win *w, uint32_t dev, uint64_t address, int64_t raw)
{
	uint64_t bytes = 0;

	if (w && (w->memory_known >> dev & 1))
		return raw;
	if (raw > 0)
		return gprof_map_put(&allocs, address, (uint64_t)raw) ? 0 : raw;
	if (gprof_map_get(&allocs, address, &bytes) && gprof_map_del(&allocs, address))
		return -(int64_t)bytes;
	return 0;
}

/*
 * The gpu_memory counter of the window: from what was in use at its opening, the allocations
 * CUPTI reports and the releases of those it saw, or of any when the opening's figure is known
 * (which holds the earlier ones). Held until the window finishes, to be counted in time order.
 */
static void on_memory(struct gprof_coll_rec *r)
{
	uint32_t dev = r->ev.device;
	struct gprof_coll_win *w = window_at(r->ev.ts_ns);
	int64_t delta;

	if (dev >= DEVICES_MAX || dev >= GPROF_COLL_MEMORY_DEVICES)
		return;
	if (!w || !(activities & GPROF_ACT_MEMORY)) {
		counted(NULL, dev, r->address, r->delta); /* the allocations seen, kept */
		return;
	}
	/* Past the limit, or out of memory, counted and pushed at once. */
	if (!gprof_array_room((void **)&w->mem, &w->cap_mem, w->n_mem, sizeof(*w->mem), 64,
			      GPROF_COLL_MEM_MAX)) {
		w->mem[w->n_mem++] = (struct gprof_coll_mem){r->ev.ts_ns, r->address, r->delta,
							     dev,	  r->pool,    r->pool_size};
		return;
	}
	delta = counted(w, dev, r->address, r->delta);
	if (delta || r->pool)
		push_memory(w, &(struct gprof_coll_mem){r->ev.ts_ns, r->address, delta, dev,
							r->pool, r->pool_size});
}

static void context_note(uint32_t context, uint32_t device)
{
	for (unsigned i = 0; i < n_contexts; i++)
		if (contexts[i][0] == context)
			return;
	if (n_contexts < CONTEXTS_MAX) {
		contexts[n_contexts][0] = context;
		contexts[n_contexts++][1] = device;
	}
}

static uint32_t context_device(uint32_t context)
{
	for (unsigned i = 0; i < n_contexts; i++)
		if (contexts[i][0] == context)
			return contexts[i][1];
	return 0;
}

/* An event's record: what a wait on it will name. Past the limit the oldest are forgotten. */
static void on_event(const struct gprof_coll_rec *r)
{
	uint64_t v = (uint64_t)r->ev.stream << 32 | r->ev.correlation;

	context_note(r->ev.u.sync.context, r->ev.device);
	if (!r->event_sync)
		return;
	if (gprof_map_put(&event_records, r->event_sync, v) != 0) {
		gprof_map_clear(&event_records);
		gprof_map_put(&event_records, r->event_sync, v);
	}
}

/* The stream and call that recorded the event a wait waits on, where known. */
static void sync_resolve(struct gprof_export_event *ev, uint64_t event_sync)
{
	uint64_t v;

	if (event_sync && gprof_map_get(&event_records, event_sync, &v)) {
		ev->u.sync.wait_stream = (int32_t)(v >> 32);
		ev->u.sync.wait_corr = (uint32_t)v;
	}
}

/*
 * A wait of the host's goes to the window its call began in. A wait on an event waits there
 * until the window finishes, for the event's record (from another thread's buffer, maybe).
 */
static void on_sync(struct gprof_coll_rec *r)
{
	struct gprof_coll_win *w = window_at(r->ev.ts_ns);

	if (!w)
		return;
	r->ev.device = context_device(r->ev.u.sync.context);
	if (r->event_sync && !gprof_array_room((void **)&w->syncs, &w->cap_syncs, w->n_syncs,
					       sizeof(*w->syncs), 16, SYNCS_MAX)) {
		w->syncs[w->n_syncs++] = (struct gprof_coll_sync){r->ev, r->event_sync};
		return;
	}
	sync_resolve(&r->ev, r->event_sync);
	push(&r->ev, w, false);
}

/*
 * A host-side record of CUPTI's own (its overhead): in the window its start falls in, on the
 * track of the thread CUPTI names (0: the process's main thread, the emitter's choice).
 */
static void on_host(struct gprof_coll_rec *r)
{
	struct gprof_coll_win *w = window_at(r->ev.ts_ns);

	if (!w)
		return;
	if (r->ev.tid)
		r->ev.tid = thread_tid(r->ev.tid);
	push(&r->ev, w, false);
}

/* The window's held waits on events, with what is known of their events by now. */
static void release_syncs(struct gprof_coll_win *w)
{
	for (size_t i = 0; i < w->n_syncs; i++) {
		sync_resolve(&w->syncs[i].ev, w->syncs[i].event_sync);
		push(&w->syncs[i].ev, w, false);
	}
	gprof_free(w->syncs);
	w->syncs = NULL;
	w->n_syncs = w->cap_syncs = 0;
}

static int by_time(const void *a, const void *b)
{
	const struct gprof_coll_mem *x = a, *y = b;

	return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
}

/*
 * The window's held allocations and frees, in time order, as its gpu_memory counter, after its
 * value at the opening: the driver's figure, taken a little after the opening (while the
 * program's other threads went on), less the changes between the two, which it holds.
 */
static void release_memory(struct gprof_coll_win *w)
{
	struct gprof_span span = {0, 0};

	gprof_coll_win_span(w, &span);
	if (w->n_mem)
		gprof_sort(w->mem, w->n_mem, sizeof(*w->mem), by_time);
	for (uint32_t dev = 0; dev < GPROF_COLL_MEMORY_DEVICES; dev++) {
		int64_t held = 0;

		if (!(w->memory_known >> dev & 1))
			continue;
		for (size_t i = 0; i < w->n_mem && w->mem[i].ts_ns < w->memory_ns; i++)
			held += w->mem[i].device == dev ? w->mem[i].delta : 0;
		push_memory(w, &(struct gprof_coll_mem){span.begin, 0, -held, dev, 0, 0});
	}
	for (size_t i = 0; i < w->n_mem; i++) {
		struct gprof_coll_mem m = w->mem[i];

		m.delta = counted(w, m.device, m.address, m.delta);
		if (m.delta || m.pool)
			push_memory(w, &m);
	}
	gprof_free(w->mem);
	w->mem = NULL;
	w->n_mem = w->cap_mem = 0;
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
		context_note(r.ev.kind == GPROF_EXPORT_KERNEL ? r.ev.u.kernel.context
							      : r.ev.u.copy.context,
			     r.ev.device);
		on_gpu(&r);
		break;
	case GPROF_COLL_SYNC:
		on_sync(&r);
		break;
	case GPROF_COLL_EVENT:
		on_event(&r);
		break;
	case GPROF_COLL_HOST:
		on_host(&r);
		break;
	case GPROF_COLL_MEMORY:
		on_memory(&r);
		break;
	case GPROF_COLL_EXTERNAL:
		gprof_coll_external_note(r.ev.correlation, r.annotation, r.external);
		break;
	case GPROF_COLL_OTHER:
	case GPROF_COLL_UNKNOWN:
		break;
	}
}

void gprof_coll_attrib_buffer(const struct gprof_coll_buf *b)
{
	CUpti_Activity *rec = NULL;
	struct gprof_coll_win *w;
	uint64_t n = 0;
	CUptiResult r;

	while ((r = cupti->next_record(b->buf, b->valid, &rec)) == CUPTI_SUCCESS) {
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

/*
 * Whether a held call may have queued nothing: a copy or memset of 0 bytes has no GPU record
 * (cuBLASLt makes such memsets in every GEMM), which is no loss to report. A kernel launch that
 * returned 0 always has one.
 */
static bool may_queue_nothing(const struct gprof_coll_held_api *a)
{
	return !(gprof_coll_api_name(a->driver, a->cbid)->launches & GPROF_ACT_KERNEL);
}

/* The sweep of gprof_coll_attrib_finish(), over every correlation id still known. */
static bool sweep(uint64_t corr, uint64_t link, void *arg)
{
	struct gprof_coll_win *w = arg;
	bool mine = w->hi && w->lo <= corr && corr <= w->hi;

	switch (LINK_KIND(link)) {
	case LINK_API:
		if (&wins[LINK_SLOT(link)] != w)
			return true;
		if (LINK_HELD(link)) {
			struct gprof_export_event api;

			w->pending -= may_queue_nothing(&tables.apis[LINK_HELD(link) - 1]);
			gprof_coll_api_unpack(&tables.apis[LINK_HELD(link) - 1], (uint32_t)corr,
					      &api);
			push(&api, w, false);
			gprof_coll_held_free(&tables, GPROF_COLL_HELD_API, LINK_HELD(link));
		} else if (api_wanted()) {
			w->pending--; /* written at once, counted in unheld then */
		}
		return false;
	case LINK_GPU:
		/*
		 * Its launch record is lost (or not one we know): placed by correlation order.
		 * Below the window's, its launch came before it (in warmup): work that ran in
		 * a window's span is written there as earlier work, as when the launch's record
		 * comes first.
		 */
		if (!mine && !(w->hi && corr < w->lo))
			return true;
		if (mine)
			w->unlinked += chain_length(LINK_HELD(link));
		chain_release(LINK_HELD(link), mine ? w : NULL, NULL, !mine);
		return false;
	case LINK_OUTSIDE:
		return !(w->hi && corr <= w->hi);
	}
	return false;
}

struct gpu_waiting {
	const struct gprof_coll_win *w;
	bool found;
};

static bool find_gpu_waiting(uint64_t corr, uint64_t link, void *arg)
{
	struct gpu_waiting *g = arg;

	g->found |= LINK_KIND(link) == LINK_GPU && g->w->hi && g->w->lo <= corr && corr <= g->w->hi;
	return true;
}

bool gprof_coll_attrib_gpu_waiting(const struct gprof_coll_win *w)
{
	struct gpu_waiting g = {w, false};

	gprof_map_filter(&tables.links, find_gpu_waiting, &g);
	return g.found;
}

void gprof_coll_attrib_finish(struct gprof_coll_win *w)
{
	const struct timespec pause = {.tv_nsec = OWED_PAUSE_NS};

	gprof_map_filter(&tables.links, sweep, w);
	release_memory(w);
	release_syncs(w);
	/* The window's owed events must be in before it is released. */
	for (unsigned i = 0; i < OWED_TRIES && !pay_owed(); i++)
		nanosleep(&pause, NULL);
}

/* The highest correlation id of API records seen by time ms (CLOCK_MONOTONIC), 0 if unknown. */
static uint32_t corr_by(uint64_t ms)
{
	for (unsigned i = n_samples; i > 0 && i + SAMPLES > n_samples; i--)
		if (samples[(i - 1) % SAMPLES].ms <= ms)
			return samples[(i - 1) % SAMPLES].corr;
	return 0;
}

struct expiry {
	uint32_t gpu_before, api_before; /* ids below these have waited long enough */
	uint64_t gone;			 /* correlation ids let go */
};

/* The sweep of gprof_coll_attrib_expire(): what has waited too long is written unlinked. */
static bool expire(uint64_t corr, uint64_t link, void *arg)
{
	struct expiry *e = arg;
	struct gprof_coll_win *w;

	if (corr >= (LINK_KIND(link) == LINK_GPU ? e->gpu_before : e->api_before))
		return true;
	e->gone++;
	switch (LINK_KIND(link)) {
	case LINK_GPU:
		/* Its launch record was lost: placed by correlation order, or as earlier work. */
		w = window_of_corr((uint32_t)corr);
		if (w)
			w->unlinked += chain_length(LINK_HELD(link));
		chain_release(LINK_HELD(link), w, NULL, !w);
		return false;
	case LINK_API:
		w = &wins[LINK_SLOT(link)];
		w->pending--;
		if (LINK_HELD(link) ? !may_queue_nothing(&tables.apis[LINK_HELD(link) - 1])
				    : !api_wanted())
			w->no_gpu++;
		if (LINK_HELD(link)) {
			struct gprof_export_event api;

			gprof_coll_api_unpack(&tables.apis[LINK_HELD(link) - 1], (uint32_t)corr,
					      &api);
			push(&api, w, false);
			gprof_coll_held_free(&tables, GPROF_COLL_HELD_API, LINK_HELD(link));
		}
		return false;
	case LINK_OUTSIDE:
		break;
	}
	return false;
}

void gprof_coll_attrib_expire(uint64_t now_ms, unsigned patience_ms)
{
	struct expiry e;

	if (!n_samples || now_ms >= samples[(n_samples - 1) % SAMPLES].ms + SAMPLE_MS)
		samples[n_samples++ % SAMPLES] = (struct corr_sample){now_ms, corr_seen};
	if (!gprof_coll_held_refused(&tables, false) && !expiring)
		return;
	e = (struct expiry){
	    .gpu_before = now_ms > GPU_PATIENCE_MS ? corr_by(now_ms - GPU_PATIENCE_MS) : 0,
	    .api_before = now_ms > patience_ms ? corr_by(now_ms - patience_ms) : 0,
	};
	/* Until something is old enough to go, each flush looks again. */
	if (!e.gpu_before && !e.api_before)
		return;
	gprof_map_filter(&tables.links, expire, &e);
	/* While it lets records go, it looks again: what made room may not have been the last. */
	expiring = e.gone > 0;
	if (e.gone)
		gprof_coll_held_refused(&tables, true);
}

void gprof_coll_attrib_reset(void)
{
	gprof_coll_held_reset(&tables);
	corr_seen = n_samples = n_owed = 0;
	expiring = false;
	gprof_map_clear(&allocs);
	gprof_map_clear(&event_records);
}
