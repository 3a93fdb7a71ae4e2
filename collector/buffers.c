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

#define DISCARDS      4
#define DISCARD_BYTES (16u << 10)

static struct {
	pthread_mutex_t lock; /* everything below; never held while calling CUPTI */
	pthread_cond_t wake;  /* the collector thread sleeps on it */
	bool kicked;
	bool low;	/* a quarter of the pool or less is left: CUPTI should be flushed now */
	uint8_t **free; /* idle pool buffers */
	size_t n_free, made, max;
	struct gprof_coll_buf *done; /* completed buffers, a ring of `max + DISCARDS` */
	size_t head, n_done;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The budget: set once by gprof_coll_buffers_init(), then used and given back with atomics. */
static size_t mem_cap, mem_used;

static uint8_t discard[DISCARDS][DISCARD_BYTES] __attribute__((aligned(8)));
static int discard_busy[DISCARDS];

int gprof_coll_buffers_init(size_t cap_bytes)
{
	pthread_condattr_t attr;

	/* At least two buffers, whatever the cap. */
	mem_cap = cap_bytes > 2 * GPROF_COLL_BUF_BYTES ? cap_bytes : 2 * GPROF_COLL_BUF_BYTES;
	pool.max = mem_cap / GPROF_COLL_BUF_BYTES;
	pool.free = calloc(pool.max, sizeof(*pool.free));
	pool.done = calloc(pool.max + DISCARDS, sizeof(*pool.done));
	if (!pool.free || !pool.done)
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

/* A pool buffer, new if the budget allows, or NULL. Under pool.lock. */
static uint8_t *pool_get(void)
{
	uint8_t *b = NULL;

	if (pool.n_free)
		return pool.free[--pool.n_free];
	if (pool.made == pool.max || !gprof_coll_mem_take(GPROF_COLL_BUF_BYTES))
		return NULL;
	b = aligned_alloc(8, GPROF_COLL_BUF_BYTES);
	if (b)
		pool.made++;
	else
		gprof_coll_mem_give(GPROF_COLL_BUF_BYTES);
	return b;
}

static int discard_index(const uint8_t *buf)
{
	for (int i = 0; i < DISCARDS; i++)
		if (buf == discard[i])
			return i;
	return -1;
}

void CUPTIAPI gprof_coll_buffer_request(uint8_t **buf, size_t *size, size_t *max_records)
{
	uint8_t *b;

	pthread_mutex_lock(&pool.lock);
	b = pool_get();
	/*
	 * CUDA 13 gives each thread a buffer of its own, which comes back only when it fills or
	 * CUPTI is flushed: thousands of short-lived threads would take the pool one record at a
	 * time. Running low wakes the collector thread to flush them back before it runs out.
	 */
	if (!pool.low && pool.n_free + (pool.max - pool.made) < pool.max / 4) {
		pool.low = true;
		pthread_cond_signal(&pool.wake);
	}
	*size = GPROF_COLL_BUF_BYTES;
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
	(void)size;
	if (!buf)
		return;
	pthread_mutex_lock(&pool.lock);
	/* The ring holds every buffer that can be out at once, so it never overflows. */
	pool.done[(pool.head + pool.n_done) % (pool.max + DISCARDS)] = (struct gprof_coll_buf){
	    .buf = buf,
	    .valid = valid,
	    .discard = discard_index(buf) >= 0,
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
		pool.head = (pool.head + 1) % (pool.max + DISCARDS);
		pool.n_done--;
	}
	pthread_mutex_unlock(&pool.lock);
	return got;
}

void gprof_coll_buffers_give_back(const struct gprof_coll_buf *b)
{
	int d = discard_index(b->buf);

	pthread_mutex_lock(&pool.lock);
	if (d >= 0)
		discard_busy[d] = 0;
	else
		pool.free[pool.n_free++] = b->buf;
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
