/*
 * The producers' side: per-thread single-producer chunks of events from one fixed pool (the
 * memory cap), published with release stores and read by the writer thread with acquire loads.
 */
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define PR_FMT "export: "
#include "common/heap.h"
#include "common/log.h"
#include "common/thread.h"
#include "export/internal.h"

/*
 * Chunks the writer keeps faulted in on the free stack, so that producers, which take from the
 * stack first, rarely touch a page for the first time: a first touch costs microseconds (2.4
 * to 3.2 on the machine of docs/PERFORMANCE.md), which is what a hooked call must not. The
 * writer starts with RESERVE_MIN and doubles the reserve, up to RESERVE_MAX and a quarter of
 * the pool, each time it finds that a producer had to take a never-used chunk once the stack
 * was filled, which happens only while the producers outrun it. It faults chunks in
 * RESERVE_BATCH at a time, so that the first ones are on the stack while it faults the rest.
 */
#define RESERVE_MIN   64u
#define RESERVE_MAX   1024u
#define RESERVE_BATCH 16u
#define PAGE_BYTES    4096u

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/*
 * A chunk belongs to one producer from the moment it takes it from the pool until the writer
 * has read it full and seen the producer move on (next set); then the writer recycles it.
 */
struct chunk {
	uint32_t committed; /* events readable: producer stores (release), writer loads (acquire) */
	uint32_t read;	    /* events the writer has passed on; writer only */
	uint32_t free_next; /* pool link: index + 1 of the next free chunk (relaxed atomics) */
	uint32_t idx;	    /* its index in the pool, set when it is first handed out */
	struct chunk *next; /* the producer's following chunk, published with release */
	char pad1[40];
	/* records, each an event (two lines) or a call (one); committed and read count lines */
	unsigned char line[GPROF_CHUNK_LINES][GPROF_LINE_BYTES];
};
_Static_assert(sizeof(struct chunk) <= GPROF_CHUNK_BYTES, "a chunk fits its bytes");
_Static_assert(sizeof(struct gprof_export_event) == 2 * GPROF_LINE_BYTES, "events: two lines");
_Static_assert(sizeof(struct gprof_export_call) == GPROF_LINE_BYTES, "calls: one line");
_Static_assert(offsetof(struct gprof_export_call, kind) ==
		   offsetof(struct gprof_export_event, kind),
	       "a record's kind says what it is");
_Static_assert(GPROF_EXPORT_KINDS < GPROF_EXPORT_CALL, "no event has the calls' kind");

#define EVENT_LINES (sizeof(struct gprof_export_event) / GPROF_LINE_BYTES)

struct gprof_export_call_type gprof_export_call_types[GPROF_EXPORT_CALL_TYPES];

/*
 * The pool: chunks in segments of SEGMENT_CHUNKS, each mmap'd when a chunk in it is first handed
 * out (so the address space the pool takes grows with what recording needs: under `ulimit -v`
 * the program keeps the rest), pages touched only when a chunk is first used; and a lock-free
 * stack of free ones. The stack top carries a tag that changes on every push and pop, so a pop
 * that raced with a pop and a push of the same chunk fails its CAS (ABA).
 */
#define SEGMENT_SHIFT  6 /* 64 chunks: 4 MiB */
#define SEGMENT_CHUNKS (1u << SEGMENT_SHIFT)

static struct {
	char **segment;	      /* atomic entries: each segment's base, NULL until mapped */
	uint32_t n;	      /* chunks the pool may hold; fixed at init */
	uint32_t mapped_out;  /* atomic: a segment could not be mapped: chunks from here none */
	uint32_t reserve;     /* chunks the writer keeps on the stack; writer only after init */
	uint32_t reserve_max; /* fixed at init */
	uint32_t fresh;	      /* atomic: chunks [fresh, n) were never handed out */
	uint32_t n_free;      /* atomic: chunks on the stack (a pop may briefly lag) */
	uint32_t misses;      /* atomic: never-used chunks producers took (the stack was empty) */
	uint32_t misses_seen; /* writer only */
	bool filled;	      /* writer only: the reserve was there once (misses count from then) */
	uint64_t free_top;    /* atomic: tag << 32 | (index + 1), 0 when empty */
} pool;

struct producer {
	struct chunk *cur; /* producer only */
	size_t n;	   /* lines used in cur; producer only */
	/* Producer stores (release), writer loads (acquire). */
	struct chunk *first; /* the first chunk; the others hang off chunk->next */
	int exited;	     /* the thread is gone: nothing more will be committed */
	struct producer *incoming_next;
	/* Writer only. */
	struct chunk *head; /* oldest chunk not yet recycled */
	struct producer *next;
};

/* Set by gprof_buf_reserve, cleared by gprof_buf_stop(); read on every chunk refill. */
static bool live;
/* New producers, pushed by their threads and taken all at once by the writer. */
static struct producer *incoming;
/* Every producer the writer knows, and how many; writer only. */
static struct producer *producers;
static size_t n_producers;
/* Drops per window slot and in all, counted by producers, read by the writer (relaxed). */
static uint64_t dropped[GPROF_EXPORT_WINDOWS], dropped_total;

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static bool exit_key_ok;
static GPROF_TLS struct producer *self;
/* What self points at after the thread's exit destructor ran: every push is dropped. */
static struct producer gone = {.n = GPROF_CHUNK_LINES};

/* A chunk handed out before: its segment is mapped. */
static struct chunk *chunk_at(uint32_t i)
{
	char *base = __atomic_load_n(&pool.segment[i >> SEGMENT_SHIFT], __ATOMIC_ACQUIRE);

	return (struct chunk *)(base + (size_t)(i & (SEGMENT_CHUNKS - 1)) * GPROF_CHUNK_BYTES);
}

/*
 * A never-used chunk: its segment is mapped first if need be (whoever gets there first maps
 * it). NULL when it cannot be: the address space is taken (`ulimit -v`), and the pool grows
 * no more.
 */
static struct chunk *chunk_new(uint32_t i)
{
	char **at = &pool.segment[i >> SEGMENT_SHIFT],
	     *base = __atomic_load_n(at, __ATOMIC_ACQUIRE);
	char *none = NULL;
	struct chunk *c;

	if (!base) {
		uint32_t first = i & ~(SEGMENT_CHUNKS - 1), out;
		size_t bytes =
		    (size_t)(pool.n - first < SEGMENT_CHUNKS ? pool.n - first : SEGMENT_CHUNKS) *
		    GPROF_CHUNK_BYTES;

		base = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (base == MAP_FAILED) {
			out = __atomic_load_n(&pool.mapped_out, __ATOMIC_RELAXED);
			while (first < out &&
			       !__atomic_compare_exchange_n(&pool.mapped_out, &out, first, true,
							    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
				;
			return NULL;
		}
		if (!__atomic_compare_exchange_n(at, &none, base, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE)) {
			munmap(base, bytes);
			base = none;
		}
	}
	c = chunk_at(i);
	c->idx = i;
	return c;
}

/* Chunks the pool may still hand out for the first time end here. */
static uint32_t pool_end(void)
{
	uint32_t out = __atomic_load_n(&pool.mapped_out, __ATOMIC_RELAXED);

	return out < pool.n ? out : pool.n;
}

static void pool_push(struct chunk *c)
{
	uint32_t idx = c->idx + 1;
	uint64_t top = __atomic_load_n(&pool.free_top, __ATOMIC_RELAXED), next;

	c->read = 0;
	do {
		__atomic_store_n(&c->free_next, (uint32_t)top, __ATOMIC_RELAXED);
		next = ((top >> 32) + 1) << 32 | idx;
	} while (!__atomic_compare_exchange_n(&pool.free_top, &top, next, true, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
	__atomic_fetch_add(&pool.n_free, 1, __ATOMIC_RELAXED);
}

static struct chunk *pool_pop(void)
{
	uint64_t top = __atomic_load_n(&pool.free_top, __ATOMIC_ACQUIRE), next;
	uint32_t i;

	while ((uint32_t)top) {
		struct chunk *c = chunk_at((uint32_t)top - 1);

		next = ((top >> 32) + 1) << 32 | __atomic_load_n(&c->free_next, __ATOMIC_RELAXED);
		if (__atomic_compare_exchange_n(&pool.free_top, &top, next, true, __ATOMIC_ACQUIRE,
						__ATOMIC_ACQUIRE)) {
			__atomic_fetch_sub(&pool.n_free, 1, __ATOMIC_RELAXED);
			return c;
		}
	}
	if (__atomic_load_n(&pool.fresh, __ATOMIC_RELAXED) >= pool_end())
		return NULL;
	i = __atomic_fetch_add(&pool.fresh, 1, __ATOMIC_RELAXED);
	if (i >= pool_end())
		return NULL;
	__atomic_fetch_add(&pool.misses, 1, __ATOMIC_RELAXED);
	return chunk_new(i);
}

/*
 * Writer thread: tops the stack up to the reserve with never-used chunks, faulted in here.
 * The chunks are claimed as producers claim them, so no one else writes them meanwhile.
 * Returns how many it pushed: 0 once the stack holds the reserve or the arena is all in use.
 */
static uint32_t pool_reserve_batch(void)
{
	uint32_t n_free = __atomic_load_n(&pool.n_free, __ATOMIC_RELAXED), i, k;

	if (n_free >= pool.reserve || __atomic_load_n(&pool.fresh, __ATOMIC_RELAXED) >= pool_end())
		return 0;
	k = pool.reserve - n_free < RESERVE_BATCH ? pool.reserve - n_free : RESERVE_BATCH;
	/* within one segment: SEGMENT_CHUNKS is a multiple of RESERVE_BATCH */
	i = __atomic_fetch_add(&pool.fresh, k, __ATOMIC_RELAXED);
	if (i >= pool_end() || !chunk_new(i))
		return 0;
	k = k < pool_end() - i ? k : pool_end() - i;
	k = k < SEGMENT_CHUNKS - (i & (SEGMENT_CHUNKS - 1))
		? k
		: SEGMENT_CHUNKS - (i & (SEGMENT_CHUNKS - 1));
	/* Without MADV_POPULATE_WRITE (before Linux 5.14): a write to every page. */
	if (madvise(chunk_at(i), (size_t)k * GPROF_CHUNK_BYTES, MADV_POPULATE_WRITE) != 0)
		for (size_t off = 0; off < (size_t)k * GPROF_CHUNK_BYTES; off += PAGE_BYTES)
			((volatile char *)chunk_at(i))[off] = 0;
	for (uint32_t j = k; j--;)
		pool_push(chunk_new(i + j));
	return k;
}

/* Grows the reserve when producers ran past it, then tops it up: at most twice its size. */
static void pool_reserve(void)
{
	uint32_t misses = __atomic_load_n(&pool.misses, __ATOMIC_RELAXED), k;

	if (pool_end() < pool.n)
		pr_warn_once("the event buffer cannot grow past %u MiB of its %u MiB: the address "
			     "space is taken (ulimit -v); events past it are dropped and counted",
			     (unsigned)((size_t)pool_end() * GPROF_CHUNK_BYTES >> 20),
			     (unsigned)((size_t)pool.n * GPROF_CHUNK_BYTES >> 20));

	if (misses != pool.misses_seen && pool.filled)
		pool.reserve =
		    pool.reserve * 2 < pool.reserve_max ? pool.reserve * 2 : pool.reserve_max;
	pool.misses_seen = misses;
	for (uint32_t budget = 2 * pool.reserve; budget && (k = pool_reserve_batch());)
		budget = budget > k ? budget - k : 0;
	pool.filled = true;
}

/* The thread's exit: its committed events stay readable; the writer frees the rest. */
static void producer_exit(void *arg)
{
	struct producer *p = arg;

	self = &gone;
	__atomic_store_n(&p->exited, 1, __ATOMIC_RELEASE);
}

static void make_exit_key(void)
{
	exit_key_ok = pthread_key_create(&exit_key, producer_exit) == 0;
}

/* The thread's first push: one allocation, then the writer learns of it through `incoming`. */
static struct producer *producer_new(void)
{
	struct producer *p;

	pthread_once(&exit_key_once, make_exit_key);
	p = gprof_calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->n = GPROF_CHUNK_LINES;
	if (exit_key_ok && pthread_setspecific(exit_key, p) != 0) {
		gprof_free(p);
		return NULL;
	}
	p->incoming_next = __atomic_load_n(&incoming, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&incoming, &p->incoming_next, p, true, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		;
	self = p;
	return p;
}

/* The slow path of a push: a first chunk, or the next one. NULL: drop the event. */
static struct producer *refill(struct producer *p)
{
	struct chunk *c;

	if (!__atomic_load_n(&live, __ATOMIC_RELAXED) || p == &gone)
		return NULL;
	if (!p && !(p = producer_new()))
		return NULL;
	c = pool_pop();
	if (!c)
		return NULL;
	__atomic_store_n(&c->committed, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&c->next, NULL, __ATOMIC_RELAXED);
	if (p->cur)
		__atomic_store_n(&p->cur->next, c, __ATOMIC_RELEASE);
	else
		__atomic_store_n(&p->first, c, __ATOMIC_RELEASE);
	p->cur = c;
	p->n = 0;
	return p;
}

static void drop(uint32_t window)
{
	__atomic_fetch_add(&dropped[gprof_export_window_slot(window)], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&dropped_total, 1, __ATOMIC_RELAXED);
}

/*
 * The slot after the thread's last committed record: only this thread writes it, and the
 * writer reads no further than `committed`, so the slot is the producer's until the commit.
 */
static __attribute__((noinline)) void *reserve_refill(struct producer *p, uint32_t window)
{
	if (!(p = refill(p))) {
		drop(window);
		return NULL;
	}
	return p->cur->line[p->n];
}

/* A slot of `lines`. Out of line, the refill keeps this path free of saved registers. */
static inline void *reserve(uint32_t window, size_t lines)
{
	struct producer *p = self;

	if (unlikely(!p || p->n + lines > GPROF_CHUNK_LINES))
		return reserve_refill(p, window);
	return p->cur->line[p->n];
}

static inline void commit(size_t lines)
{
	struct producer *p = self;

	p->n += lines;
	__atomic_store_n(&p->cur->committed, (uint32_t)p->n, __ATOMIC_RELEASE);
}

struct gprof_export_event *gprof_export_reserve(uint32_t window)
{
	return reserve(window, EVENT_LINES);
}

void gprof_export_commit(void)
{
	commit(EVENT_LINES);
}

struct gprof_export_call *gprof_export_reserve_call(uint32_t window)
{
	return reserve(window, 1);
}

void gprof_export_commit_call(void)
{
	commit(1);
}

int gprof_export_push(const struct gprof_export_event *ev)
{
	struct gprof_export_event *slot = gprof_export_reserve(ev->window);

	if (!slot)
		return -ENOBUFS;
	*slot = *ev;
	gprof_export_commit();
	return 0;
}

/* The RUNTIME event a call record stands for. */
static void call_record_event(struct gprof_export_event *e, const struct gprof_export_call *r)
{
	const struct gprof_export_call_type *t = &gprof_export_call_types[r->type];

	*e = (struct gprof_export_event){
	    .ts_ns = r->ts_ns,
	    .dur_ns = r->dur_ns,
	    .name = t->name,
	    .window = r->window,
	    .tid = r->tid,
	    .kind = GPROF_EXPORT_RUNTIME,
	    .flags = t->flags,
	    .u.api = {.api = t->api,
		      .kernel = r->kernel,
		      .stream = r->stream,
		      .grid = {r->grid_x, r->grid_yz[0], r->grid_yz[1]},
		      .block = {r->block[0], r->block[1], r->block[2]},
		      .shared_bytes = r->shared_bytes,
		      .cbid = t->cbid,
		      .result = r->result,
		      .external = r->external},
	};
}

static bool is_call(const unsigned char *line)
{
	return ((const struct gprof_export_event *)(const void *)line)->kind == GPROF_EXPORT_CALL;
}

/*
 * Passes on c's records up to line n, runs of events as they lie, each call as its event, and
 * adds them to *total. Returns whether there were any.
 */
static bool pass_on(struct chunk *c, uint32_t n, gprof_buf_fn fn, void *arg, size_t *total)
{
	bool any = c->read < n;

	while (c->read < n) {
		uint32_t end = c->read;

		while (end < n && !is_call(c->line[end]))
			end += EVENT_LINES;
		if (end > c->read) {
			fn((const void *)c->line[c->read], (end - c->read) / EVENT_LINES, arg);
			*total += (end - c->read) / EVENT_LINES;
		} else {
			struct gprof_export_event e;

			call_record_event(&e, (const void *)c->line[end++]);
			fn(&e, 1, arg);
			++*total;
		}
		c->read = end;
	}
	return any;
}

/* Passes on what p committed; recycles chunks it has filled and left. */
static size_t drain_one(struct producer *p, gprof_buf_fn fn, void *arg)
{
	size_t total = 0;

	if (!p->head)
		p->head = __atomic_load_n(&p->first, __ATOMIC_ACQUIRE);
	/* At most a pool's worth per pass: a producer refilling as fast as we read can't pin us. */
	for (uint32_t budget = pool.n; p->head && budget; budget--) {
		struct chunk *c = p->head, *next;

		/* Formatting takes a while: meanwhile producers used the reserve. */
		if (pass_on(c, __atomic_load_n(&c->committed, __ATOMIC_ACQUIRE), fn, arg, &total))
			pool_reserve();
		/* Once the producer has moved on, what it committed to c is all there is. */
		next = __atomic_load_n(&c->next, __ATOMIC_ACQUIRE);
		if (!next)
			break;
		pass_on(c, __atomic_load_n(&c->committed, __ATOMIC_ACQUIRE), fn, arg, &total);
		p->head = next;
		pool_push(c);
	}
	return total;
}

static void producer_free(struct producer *p)
{
	struct chunk *c = p->head ? p->head : p->first;

	while (c) {
		struct chunk *next = c->next;

		pool_push(c);
		c = next;
	}
	gprof_free(p);
}

size_t gprof_buf_drain(gprof_buf_fn fn, void *arg)
{
	struct producer *p = __atomic_exchange_n(&incoming, NULL, __ATOMIC_ACQUIRE), *next;
	size_t total = 0;

	pool_reserve();
	for (; p; p = next) {
		next = p->incoming_next;
		p->next = producers;
		producers = p;
		n_producers++;
	}
	for (struct producer **pp = &producers; (p = *pp);) {
		/* Loaded before the drain: when set, every commit of the thread is visible. */
		bool exited = __atomic_load_n(&p->exited, __ATOMIC_ACQUIRE);

		total += drain_one(p, fn, arg);
		if (exited) {
			*pp = p->next;
			producer_free(p);
			n_producers--;
		} else {
			pp = &p->next;
		}
	}
	return total;
}

/*
 * Under `ulimit -v` the pool takes at most 1/SPACE_SHARE of what is left, and no window is
 * recorded when that is less than MIN_POOL_BYTES.
 */
#define SPACE_SHARE    4
#define MIN_POOL_BYTES (1u << 20)

int gprof_buf_reserve(size_t cap_bytes)
{
	size_t left, n;

	if (pool.segment)
		return 0;
	left = gprof_address_space_left();
	if (cap_bytes > left / SPACE_SHARE) {
		if (left / SPACE_SHARE < MIN_POOL_BYTES)
			return -ENOMEM;
		cap_bytes = left / SPACE_SHARE;
	}
	n = cap_bytes / GPROF_CHUNK_BYTES;
	if (n < 1)
		n = 1;
	if (n > UINT32_MAX / 2)
		n = UINT32_MAX / 2;
	pool.segment =
	    gprof_calloc((n + SEGMENT_CHUNKS - 1) >> SEGMENT_SHIFT, sizeof(*pool.segment));
	if (!pool.segment)
		return -ENOMEM;
	pool.n = pool.mapped_out = (uint32_t)n;
	/* the first segment now: a pool that cannot have one records nothing */
	if (!chunk_new(0)) {
		gprof_free(pool.segment);
		pool.segment = NULL;
		return -ENOMEM;
	}
	pool.reserve_max = pool.n / 4 < RESERVE_MAX ? pool.n / 4 : RESERVE_MAX;
	pool.reserve = pool.reserve_max < RESERVE_MIN ? pool.reserve_max : RESERVE_MIN;
	__atomic_store_n(&live, true, __ATOMIC_RELEASE);
	return 0;
}

size_t gprof_buf_bytes(void)
{
	return (size_t)pool.n * GPROF_CHUNK_BYTES;
}

void gprof_buf_stop(void)
{
	__atomic_store_n(&live, false, __ATOMIC_RELEASE);
}

uint64_t gprof_buf_dropped(uint32_t window)
{
	return __atomic_load_n(&dropped[gprof_export_window_slot(window)], __ATOMIC_RELAXED);
}

void gprof_buf_reset_dropped(uint32_t window)
{
	__atomic_store_n(&dropped[gprof_export_window_slot(window)], 0, __ATOMIC_RELAXED);
}

size_t gprof_buf_backlog(void)
{
	uint32_t fresh = __atomic_load_n(&pool.fresh, __ATOMIC_RELAXED);
	uint32_t n_free = __atomic_load_n(&pool.n_free, __ATOMIC_RELAXED);
	size_t handed = fresh < pool.n ? fresh : pool.n;
	/* n_free may briefly lag a pop: never below zero. */
	size_t used = handed > n_free ? handed - n_free : 0;

	return used > n_producers ? used - n_producers : 0;
}

uint64_t gprof_buf_dropped_total(void)
{
	return __atomic_load_n(&dropped_total, __ATOMIC_RELAXED);
}
