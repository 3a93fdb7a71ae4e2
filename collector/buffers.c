/*
 * CUPTI's activity buffers: a pool within the collector's memory budget (shared with held.c),
 * the two buffer callbacks, and the queue of completed buffers that the collector thread works
 * through. The callbacks never fail and never wait for anything but this file's short lock: when
 * the pool is empty CUPTI gets a static discard buffer (its records are counted as dropped), and
 * when those are in use too, none.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/internal.h"
#include "common/clock.h"
#include "common/compiler.h"

#define DISCARDS      4
#define DISCARD_BYTES (16u << 10)
#define SMALLS	      8192 /* at most this many small buffers */

/* Buffers of one size: made as needed, within the budget, up to max. */
struct class
{
	size_t bytes, max;
	uint8_t **free; /* idle ones */
	size_t n_free, made;
};

static struct {
	pthread_mutex_t lock; /* everything below; never held while calling CUPTI */
	pthread_cond_t wake;  /* the collector thread sleeps on it */
	bool kicked;
	bool low; /* a quarter of a class or less is left: CUPTI should be flushed now */
	struct class big, small;
	struct gprof_coll_buf *done; /* completed buffers, a ring of `ring` */
	size_t head, n_done, ring;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The budget: set once by gprof_coll_buffers_init(), then used and given back with atomics. */
static size_t mem_cap, mem_used;

static uint8_t discard[DISCARDS][DISCARD_BYTES] __attribute__((aligned(8)));
static int discard_busy[DISCARDS];

int gprof_coll_buffers_init(size_t cap_bytes)
{
	pthread_condattr_t attr;

	/* At least two big buffers, whatever the cap. */
	mem_cap = cap_bytes > 2 * GPROF_COLL_BUF_BYTES ? cap_bytes : 2 * GPROF_COLL_BUF_BYTES;
	pool.big.bytes = GPROF_COLL_BUF_BYTES;
	pool.big.max = mem_cap / GPROF_COLL_BUF_BYTES;
	pool.small.bytes = GPROF_COLL_SMALL_BYTES;
	pool.small.max =
	    mem_cap / GPROF_COLL_SMALL_BYTES < SMALLS ? mem_cap / GPROF_COLL_SMALL_BYTES : SMALLS;
	pool.big.free = calloc(pool.big.max, sizeof(*pool.big.free));
	pool.small.free = calloc(pool.small.max, sizeof(*pool.small.free));
	pool.ring = pool.big.max + pool.small.max + DISCARDS;
	pool.done = calloc(pool.ring, sizeof(*pool.done));
	if (!pool.big.free || !pool.small.free || !pool.done)
		return -ENOMEM;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&pool.wake, &attr);
	pthread_condattr_destroy(&attr);
	return 0;
}

size_t gprof_coll_mem_cap(void)
{
	return mem_cap;
}

bool gprof_coll_mem_take(size_t bytes)
{
	size_t used = __atomic_load_n(&mem_used, __ATOMIC_RELAXED);

	do {
		if (bytes > mem_cap - used)
			return false;
	} while (!__atomic_compare_exchange_n(&mem_used, &used, used + bytes, true,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return true;
}

void gprof_coll_mem_give(size_t bytes)
{
	__atomic_fetch_sub(&mem_used, bytes, __ATOMIC_RELAXED);
}

/* A buffer of class c, new if the budget allows, or NULL. Under pool.lock. */
static uint8_t *class_get(struct class *c)
{
	uint8_t *b = NULL;

	if (c->n_free)
		return c->free[--c->n_free];
	if (c->made == c->max || !gprof_coll_mem_take(c->bytes))
		return NULL;
	b = aligned_alloc(8, c->bytes);
	if (b)
		c->made++;
	else
		gprof_coll_mem_give(c->bytes);
	return b;
}

static int discard_index(const uint8_t *buf)
{
	for (int i = 0; i < DISCARDS; i++)
		if (buf == discard[i])
			return i;
	return -1;
}

/* How many more buffers of class c there can be: idle ones and those not made yet. */
static size_t left(const struct class *c)
{
	return c->n_free + (c->max - c->made);
}

/*
 * CUDA 13 gives each thread a buffer of its own, which comes back only when it fills or CUPTI is
 * flushed, so thousands of short-lived threads would take the pool a few records at a time: a
 * thread's first buffer is a small one, and it gets big ones once it has filled that. Running low
 * wakes the collector thread to flush them back before the pool runs out.
 */
void CUPTIAPI gprof_coll_buffer_request(uint8_t **buf, size_t *size, size_t *max_records)
{
	static GPROF_TLS bool asked; /* this thread has had a buffer */
	struct class *c = asked ? &pool.big : &pool.small;
	uint8_t *b;

	asked = true;
	pthread_mutex_lock(&pool.lock);
	if (!pool.low &&
	    (left(&pool.big) < pool.big.max / 4 || left(&pool.small) < pool.small.max / 4)) {
		pool.low = true;
		pthread_cond_signal(&pool.wake);
	}
	if (!(b = class_get(c)))
		b = class_get(c = c == &pool.big ? &pool.small : &pool.big);
	*size = c->bytes;
	for (int i = 0; !b && i < DISCARDS; i++) {
		if (!discard_busy[i]) {
			discard_busy[i] = 1;
			b = discard[i];
			*size = DISCARD_BYTES;
		}
	}
	if (!b)
		*size = 0; /* CUPTI drops the records and counts them */
	pthread_mutex_unlock(&pool.lock);
	*buf = b;
	*max_records = 0;
}

void CUPTIAPI gprof_coll_buffer_complete(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
					 size_t valid)
{
	(void)ctx;
	(void)stream;
	if (!buf)
		return;
	pthread_mutex_lock(&pool.lock);
	/* The ring holds every buffer that can be out at once, so it never overflows. */
	pool.done[(pool.head + pool.n_done) % pool.ring] = (struct gprof_coll_buf){
	    .buf = buf,
	    .valid = valid,
	    .discard = discard_index(buf) >= 0,
	    .small = size == GPROF_COLL_SMALL_BYTES,
	};
	pool.n_done++;
	pthread_cond_signal(&pool.wake);
	pthread_mutex_unlock(&pool.lock);
}

bool gprof_coll_buffers_take(struct gprof_coll_buf *b)
{
	bool got;

	pthread_mutex_lock(&pool.lock);
	got = pool.n_done > 0;
	if (got) {
		*b = pool.done[pool.head];
		pool.head = (pool.head + 1) % pool.ring;
		pool.n_done--;
	}
	pthread_mutex_unlock(&pool.lock);
	return got;
}

void gprof_coll_buffers_give_back(const struct gprof_coll_buf *b)
{
	int d = discard_index(b->buf);
	struct class *c = b->small ? &pool.small : &pool.big;

	pthread_mutex_lock(&pool.lock);
	if (d >= 0)
		discard_busy[d] = 0;
	else
		c->free[c->n_free++] = b->buf;
	pthread_mutex_unlock(&pool.lock);
}

bool gprof_coll_buffers_low(void)
{
	bool low;

	pthread_mutex_lock(&pool.lock);
	low = pool.low;
	pool.low = false;
	pthread_mutex_unlock(&pool.lock);
	return low;
}

void gprof_coll_wait(unsigned timeout_ms)
{
	struct timespec until = gprof_clock_deadline(CLOCK_MONOTONIC, timeout_ms * 1000000ull);

	pthread_mutex_lock(&pool.lock);
	while (!pool.kicked && !pool.n_done && !pool.low)
		if (pthread_cond_timedwait(&pool.wake, &pool.lock, &until))
			break;
	pool.kicked = false;
	pthread_mutex_unlock(&pool.lock);
}

void gprof_coll_kick(void)
{
	pthread_mutex_lock(&pool.lock);
	pool.kicked = true;
	pthread_cond_signal(&pool.wake);
	pthread_mutex_unlock(&pool.lock);
}
