/*
 * Tests of common/'s infrastructure: the hash map (owned and shared), the interval union, the
 * loaded-object finder, the thread starter, the clock and growing arrays, each against a plain
 * reference.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include "common/array.h"
#include "common/clock.h"
#include "common/compiler.h"
#include "common/dso.h"
#include "common/heap.h"
#include "common/map.h"
#include "common/spans.h"
#include "common/stats.h"
#include "common/thread.h"
#include "task.h"

static bool keep_even(uint64_t key, uint64_t val, void *arg)
{
	(void)key;
	(*(int *)arg)++;
	return val % 2 == 0;
}

/* The map against a plain array, through inserts, deletes (with clusters) and a filter. */
TEST(map_against_array)
{
	enum {
		N = 3072 /* 3/4 of 4096: full */
	};
	static uint64_t ref[N + 1];
	struct gprof_map m;
	uint64_t v;
	int seen = 0;

	ASSERT_EQ(gprof_map_init(&m, 4096), 0);
	ASSERT_EQ(gprof_map_put(&m, 0, 1), -EINVAL);
	for (uint64_t k = 1; k <= N; k++) {
		ASSERT_EQ(gprof_map_put(&m, k * 4096, k), 0); /* keys that collide a lot */
		ref[k] = k;
	}
	ASSERT_EQ(gprof_map_put(&m, 999999999, 1), -ENOSPC);
	for (uint64_t k = 1; k <= N; k += 3) {
		ASSERT(gprof_map_del(&m, k * 4096));
		ref[k] = 0;
	}
	ASSERT(!gprof_map_del(&m, 4096));
	gprof_map_filter(&m, keep_even, &seen);
	ASSERT_GE(seen, N - (N + 2) / 3);
	for (uint64_t k = 1; k <= N; k++) {
		bool want = ref[k] && k % 2 == 0;

		ASSERT_EQ(gprof_map_get(&m, k * 4096, &v), want);
		if (want)
			ASSERT_EQ(v, k);
	}
	ASSERT_EQ(gprof_map_grow(&m), 0);
	ASSERT_EQ(gprof_map_slots(&m), 8192);
	ASSERT(gprof_map_get(&m, 2 * 4096, &v) && v == 2);
	gprof_map_clear(&m);
	ASSERT_EQ(m.n, 0);
	ASSERT(!gprof_map_get(&m, 2 * 4096, &v));
	/* set() grows what put() finds full; a map never initialised starts small. */
	gprof_map_free(&m);
	for (uint64_t k = 1; k <= N; k++)
		ASSERT_EQ(gprof_map_set(&m, k, k + 1), 0);
	ASSERT_EQ(m.n, N);
	ASSERT(gprof_map_get(&m, N, &v) && v == N + 1);
	gprof_map_free(&m);
}

/* Threads inserting into one shared map at once: each key once, with the last value stored. */
#define SHARED_THREADS 4
#define SHARED_KEYS    2000

struct shared_arg {
	struct gprof_map *m;
	unsigned id;
	int failed;
};

static void *insert_shared(void *p)
{
	struct shared_arg *a = p;

	/* Every thread writes every key: the keys collide between threads, the values agree. */
	for (uint64_t k = 1; k <= SHARED_KEYS; k++)
		a->failed |= gprof_map_put_shared(a->m, k * 64, k) != 0;
	for (uint64_t k = 1; k <= SHARED_KEYS; k++)
		a->failed |= gprof_map_get_shared(a->m, k * 64) != k;
	return NULL;
}

TEST(map_shared_threads)
{
	struct shared_arg args[SHARED_THREADS];
	pthread_t t[SHARED_THREADS];
	struct gprof_map m;

	ASSERT_EQ(gprof_map_init(&m, 4 * SHARED_KEYS), 0);
	for (unsigned i = 0; i < SHARED_THREADS; i++) {
		args[i] = (struct shared_arg){.m = &m, .id = i};
		ASSERT_EQ(pthread_create(&t[i], NULL, insert_shared, &args[i]), 0);
	}
	for (unsigned i = 0; i < SHARED_THREADS; i++) {
		pthread_join(t[i], NULL);
		ASSERT_EQ(args[i].failed, 0);
	}
	ASSERT_EQ(m.n, SHARED_KEYS);
	ASSERT_EQ(gprof_map_get_shared(&m, 12345), 0);
	ASSERT_EQ(gprof_map_put_shared(&m, 0, 1), -EINVAL);
	/* A shared map grows only when asked: at 3/4 it refuses. */
	for (uint64_t k = SHARED_KEYS + 1; m.n < gprof_map_slots(&m) * 3 / 4; k++)
		ASSERT_EQ(gprof_map_put_shared(&m, k * 64, k), 0);
	ASSERT_EQ(gprof_map_put_shared(&m, 1, 1), -ENOSPC);
	gprof_map_free(&m);
}

/* A reader without a lock, while the writer grows the table under it many times. */
struct grow_reader {
	struct gprof_map *m;
	uint64_t published; /* keys 1..published are in: atomic */
	bool done;
	uint64_t passes; /* atomic */
	uint64_t misses, reads;
};

static void *read_while_growing(void *p)
{
	struct grow_reader *r = p;

	while (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE)) {
		uint64_t n = __atomic_load_n(&r->published, __ATOMIC_ACQUIRE);

		for (uint64_t k = 1; k <= n; k++, r->reads++)
			r->misses += gprof_map_get_shared(r->m, k) != k * 3;
		__atomic_fetch_add(&r->passes, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

TEST(map_shared_grows_under_readers)
{
	struct gprof_map m = {0};
	struct grow_reader r = {.m = &m};
	pthread_t t;

	ASSERT_EQ(pthread_create(&t, NULL, read_while_growing, &r), 0);
	for (uint64_t k = 1; k <= 20000; k++) {
		ASSERT_EQ(gprof_map_reserve_shared(&m), 0);
		ASSERT_EQ(gprof_map_put_shared(&m, k, k * 3), 0);
		__atomic_store_n(&r.published, k, __ATOMIC_RELEASE);
		/* Now and then the reader goes through what is there, so it reads during growth. */
		for (uint64_t p = __atomic_load_n(&r.passes, __ATOMIC_ACQUIRE);
		     k % 1000 == 0 && __atomic_load_n(&r.passes, __ATOMIC_ACQUIRE) < p + 2;)
			sched_yield();
	}
	__atomic_store_n(&r.done, true, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	ASSERT_EQ(r.misses, 0);
	ASSERT_GT(r.reads, 0);
	ASSERT_GE(gprof_map_slots(&m), 20000 * 4 / 3);
	ASSERT(m.t->older); /* the tables it outgrew are kept for readers */
	gprof_map_free(&m);
}

/*
 * Keys of bytes: equal for equal bytes and seed, blind to what lies past n, changed by any one
 * byte, the length or the seed; distinct over many kernel-like names (a 64-bit key collides
 * there only when the hash is broken).
 */
TEST(map_key_bytes)
{
	enum {
		NAMES = 20000
	};
	char a[48] = "void gemm<float, 128>(float const*, ...)", b[48];
	struct gprof_map seen = {0};
	uint64_t k, v;

	memcpy(b, a, sizeof(a));
	ASSERT_EQ(gprof_map_key_bytes(a, 20, 1), gprof_map_key_bytes(b, 20, 1));
	b[20] ^= 1;
	ASSERT_EQ(gprof_map_key_bytes(a, 20, 1), gprof_map_key_bytes(b, 20, 1));
	ASSERT_NE(gprof_map_key_bytes(a, 20, 1), gprof_map_key_bytes(a, 20, 2));
	ASSERT_NE(gprof_map_key_bytes(a, 20, 1), gprof_map_key_bytes(a, 19, 1));
	ASSERT_NE(gprof_map_key_bytes("", 0, 0), 0);
	for (size_t n = 1; n <= sizeof(a); n++)
		for (size_t i = 0; i < n; i++) {
			memcpy(b, a, sizeof(a));
			b[i] ^= 0x20;
			ASSERT_MSG(gprof_map_key_bytes(a, n, 0) != gprof_map_key_bytes(b, n, 0),
				   "byte %zu of %zu", i, n);
		}
	ASSERT_EQ(gprof_map_init(&seen, 2 * NAMES), 0);
	for (unsigned i = 0; i < NAMES; i++) {
		int len = snprintf(a, sizeof(a), "kernel_%u", i);

		k = gprof_map_key_bytes(a, (size_t)len, 0);
		ASSERT_MSG(!gprof_map_get(&seen, k, &v), "%s and kernel_%llu", a,
			   (unsigned long long)v);
		ASSERT_EQ(gprof_map_set(&seen, k, i), 0);
	}
	gprof_map_free(&seen);
}

/* The length of the union of intervals within [lo, hi), by a bitmap of 1-ns cells. */
static uint64_t union_ref(const uint64_t (*iv)[2], size_t n, uint64_t lo, uint64_t hi)
{
	static bool cell[4096];
	uint64_t len = 0;

	memset(cell, 0, sizeof(cell));
	for (size_t i = 0; i < n; i++)
		for (uint64_t t = iv[i][0]; t < iv[i][1]; t++)
			cell[t] = true;
	for (uint64_t t = lo; t < hi && t < ARRAY_SIZE(cell); t++)
		len += cell[t];
	return len;
}

/* Random intervals, mostly in order as GPU records come: the union as a bitmap has it. */
TEST(spans_union)
{
	static uint64_t iv[500][2];
	struct gprof_spans s = {.max = 1000};

	srand(7);
	for (size_t i = 0; i < ARRAY_SIZE(iv); i++) {
		uint64_t b = i * 7 + (uint64_t)(rand() % 40), len = (uint64_t)(rand() % 12);

		iv[i][0] = rand() % 10 ? b : b / 3; /* now and then one far back */
		iv[i][1] = iv[i][0] + len;
		ASSERT_EQ(gprof_spans_add(&s, iv[i][0], iv[i][1]), 0);
		for (size_t k = 1; k < s.n; k++)
			ASSERT_MSG(s.v[k - 1].end < s.v[k].begin, "spans %zu and %zu touch", k - 1,
				   k);
	}
	ASSERT_EQ(gprof_spans_within(&s, 0, s.n, 0, UINT64_MAX),
		  union_ref(iv, ARRAY_SIZE(iv), 0, 4096));
	ASSERT_EQ(gprof_spans_within(&s, 0, s.n, 1000, 2000),
		  union_ref(iv, ARRAY_SIZE(iv), 1000, 2000));
	gprof_spans_free(&s);
}

/* At max spans it refuses; retired spans' time is not added again by a later interval. */
TEST(spans_retire_and_floor)
{
	struct gprof_spans s = {.max = 4};

	for (uint64_t i = 0; i < 4; i++)
		ASSERT_EQ(gprof_spans_add(&s, i * 10, i * 10 + 5), 0);
	ASSERT_EQ(gprof_spans_add(&s, 100, 105), -ENOSPC);
	ASSERT_EQ(gprof_spans_add(&s, 0, 35), -ENOSPC); /* even one that would merge */
	ASSERT_EQ(gprof_spans_within(&s, 0, 2, 0, UINT64_MAX), 10);
	gprof_spans_retire(&s, 2);
	ASSERT_EQ(s.n, 2);
	ASSERT_EQ(s.floor, 15);
	/* [0, 25) adds [15, 20) only, merging with [20, 25). */
	ASSERT_EQ(gprof_spans_add(&s, 0, 22), 0);
	ASSERT_EQ(s.n, 2);
	ASSERT_EQ(s.v[0].begin, 15);
	ASSERT_EQ(s.v[0].end, 25);
	ASSERT_EQ(gprof_spans_add(&s, 3, 9), 0); /* all before the floor: nothing */
	ASSERT_EQ(gprof_spans_within(&s, 0, s.n, 0, UINT64_MAX), 15);
	gprof_spans_free(&s);
}

static void count_oldest(void *ctx, const struct gprof_spans *s, size_t n)
{
	*(uint64_t *)ctx += gprof_spans_within(s, 0, n, 0, UINT64_MAX);
}

/*
 * The summaries' way to bound memory: at max spans the oldest half is handed over to be counted
 * and retired, and the interval goes in; counted and held time add up to the union.
 */
TEST(spans_add_counting)
{
	struct gprof_spans s = {.max = 4};
	uint64_t counted = 0;

	for (uint64_t i = 0; i < 9; i++)
		ASSERT_EQ(gprof_spans_add_counting(&s, i * 10, i * 10 + 5, count_oldest, &counted),
			  0);
	ASSERT_EQ(counted, 30); /* two at the 5th, 7th and 9th: [0, 5) to [50, 55) */
	ASSERT_EQ(s.n, 3);
	ASSERT_EQ(counted + gprof_spans_within(&s, 0, s.n, 0, UINT64_MAX), 45);
	gprof_spans_free(&s);
}

static int count_libs(const char *path, void *arg)
{
	(void)path;
	(*(int *)arg)++;
	return 0;
}

TEST(dso_finds_loaded)
{
	char path[4096];
	int n = 0;

	ASSERT(gprof_dso_find("libc.so", path, sizeof(path)));
	ASSERT_STR_CONTAINS(path, "/libc.so");
	ASSERT(!gprof_dso_find("libno-such-thing.so", path, sizeof(path)));
	ASSERT(gprof_dso_find("libc.so", path, 5));
	ASSERT_EQ(strlen(path), 4);
	ASSERT_EQ(gprof_dso_each("lib", count_libs, &n), 0);
	ASSERT_GE(n, 3); /* libc, libjansson and libz at least */
}

/*
 * Symbols of loaded objects, found in them or their dependencies; an object the process has
 * not loaded answers NULL and stays unloaded (libanl.so.1, a glibc stub nothing here loads).
 */
TEST(dso_sym_of_loaded)
{
	char path[4096];

	ASSERT(gprof_dso_sym("libc.so.6", "gnu_get_libc_version") ==
	       dlsym(RTLD_DEFAULT, "gnu_get_libc_version"));
	ASSERT(gprof_dso_sym("libz.so.1", "zlibVersion") == (void *)zlibVersion);
	ASSERT(!gprof_dso_sym("libc.so.6", "gprof_no_such_symbol"));
	ASSERT(!gprof_dso_find("libanl.so", path, sizeof(path)));
	ASSERT(!gprof_dso_sym("libanl.so.1", "gnu_get_libc_version"));
	ASSERT(!gprof_dso_find("libanl.so", path, sizeof(path)));
	ASSERT(dlopen("libanl.so.1", RTLD_LAZY));
	ASSERT(gprof_dso_sym("libanl.so.1", "gnu_get_libc_version"));
}

struct mask_arg {
	sigset_t seen;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool got;
};

static void *report_mask(void *p)
{
	struct mask_arg *a = p;

	pthread_mutex_lock(&a->lock);
	pthread_sigmask(SIG_SETMASK, NULL, &a->seen);
	a->got = true;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

/* Joinable and detached threads start with every signal blocked; the caller's mask stays. */
TEST(thread_takes_no_signal)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGUSR1, SIGUSR2, SIGCHLD, SIGALRM};
	struct mask_arg a = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
	sigset_t before, after;
	pthread_t t;

	pthread_sigmask(SIG_SETMASK, NULL, &before);
	ASSERT_EQ(gprof_thread_start(&t, report_mask, &a), 0);
	pthread_join(t, NULL);
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		ASSERT_MSG(sigismember(&a.seen, sigs[i]) == 1, "signal %d", sigs[i]);
	a.got = false;
	sigemptyset(&a.seen);
	ASSERT_EQ(gprof_thread_start(NULL, report_mask, &a), 0);
	pthread_mutex_lock(&a.lock);
	while (!a.got)
		pthread_cond_wait(&a.cond, &a.lock);
	pthread_mutex_unlock(&a.lock);
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		ASSERT_MSG(sigismember(&a.seen, sigs[i]) == 1, "signal %d", sigs[i]);
	pthread_sigmask(SIG_SETMASK, NULL, &after);
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		ASSERT_EQ(sigismember(&after, sigs[i]), sigismember(&before, sigs[i]));
}

/* Fills n bytes at p from seed; checks them. */
static void heap_fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed + i * 7);
}

static bool heap_holds(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(seed + i * 7))
			return false;
	return true;
}

/*
 * libgprof's heap: blocks of every size class's edges and of a mapping of their own, aligned
 * as malloc's and apart (each keeps what was written in it while the others are written);
 * realloc keeps the contents when growing within, across and beyond the classes; calloc zeroes
 * a block that was used before; a freed block is used again; the failures are malloc's.
 */
TEST(heap_blocks)
{
	static const size_t sizes[] = {0,   1,	 15,   16,   17,    127,   128,	  129,	  255,
				       256, 257, 1000, 4096, 32767, 32768, 32769, 1 << 20};
	unsigned char *p[ARRAY_SIZE(sizes)], *q;
	char *text;

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		p[i] = gprof_malloc(sizes[i]);
		ASSERT(p[i]);
		ASSERT_EQ((uintptr_t)p[i] % 16, 0);
		heap_fill(p[i], sizes[i], (unsigned)i);
	}
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		ASSERT_MSG(heap_holds(p[i], sizes[i], (unsigned)i), "%zu bytes", sizes[i]);
		p[i] = gprof_realloc(p[i], sizes[i] * 3 + 40);
		ASSERT(p[i]);
		ASSERT_MSG(heap_holds(p[i], sizes[i], (unsigned)i), "%zu bytes grown", sizes[i]);
	}
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++)
		gprof_free(p[i]);

	q = gprof_malloc(200);
	heap_fill(q, 200, 9);
	gprof_free(q);
	q = gprof_calloc(25, 8);
	ASSERT(q);
	for (size_t i = 0; i < 200; i++)
		ASSERT_EQ(q[i], 0);
	ASSERT_EQ(gprof_realloc(q, 0), NULL);
	gprof_free(NULL);
	errno = 0;
	ASSERT_EQ(gprof_calloc(SIZE_MAX / 2, 4), NULL);
	ASSERT_EQ(errno, ENOMEM);
	ASSERT_EQ(gprof_malloc(SIZE_MAX - 64), NULL);
	text = gprof_strdup("a string");
	ASSERT_STR_EQ(text, "a string");
	gprof_free(text);
}

struct heap_worker {
	unsigned seed;
	bool ok;
};

/* Random sizes, each block checked before it is freed or grown. */
static void *heap_worker(void *arg)
{
	struct heap_worker *w = arg;
	unsigned char *held[64] = {0};
	size_t len[64] = {0};

	w->ok = true;
	for (int i = 0; i < 20000 && w->ok; i++) {
		unsigned r = rand_r(&w->seed), k = r % 64;
		size_t n = (r >> 8) % (r & 1 ? 200 : 40000);

		if (held[k] && !heap_holds(held[k], len[k], k + len[k]))
			w->ok = false;
		if (r & 2) {
			gprof_free(held[k]);
			held[k] = gprof_malloc(n);
		} else {
			unsigned char *g = gprof_realloc(held[k], n);

			if (!n || g)
				held[k] = g;
			n = g ? n : 0;
		}
		len[k] = held[k] ? n : 0;
		if (held[k])
			heap_fill(held[k], n, k + n);
	}
	for (int k = 0; k < 64; k++)
		gprof_free(held[k]);
	return NULL;
}

/* Four threads at once: no block is given twice. */
TEST(heap_threads)
{
	pthread_t t[4];
	struct heap_worker w[4];

	for (unsigned i = 0; i < 4; i++) {
		w[i] = (struct heap_worker){.seed = i + 1};
		ASSERT_EQ(pthread_create(&t[i], NULL, heap_worker, &w[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		ASSERT(w[i].ok);
	}
}

struct sort_item {
	int key;
	int order; /* its place before the sort */
	char pad[20];
};

static int by_key(const void *a, const void *b)
{
	const struct sort_item *x = a, *y = b;

	return (x->key > y->key) - (x->key < y->key);
}

/* gprof_sort orders as qsort's comparator says and keeps equal keys in their order (stable). */
TEST(heap_sort_stable)
{
	static const size_t counts[] = {0, 1, 2, 3, 10, 1000, 4097};
	unsigned seed = 7;

	for (size_t c = 0; c < ARRAY_SIZE(counts); c++) {
		size_t n = counts[c];
		struct sort_item *v = calloc(n + 1, sizeof(*v));

		for (size_t i = 0; i < n; i++)
			v[i] = (struct sort_item){.key = rand_r(&seed) % 50, .order = (int)i};
		gprof_sort(v, n, sizeof(*v), by_key);
		for (size_t i = 1; i < n; i++) {
			ASSERT_LE(v[i - 1].key, v[i].key);
			if (v[i - 1].key == v[i].key)
				ASSERT_LE(v[i - 1].order, v[i].order);
		}
		free(v);
	}
}

/*
 * Room by doubling from first, cut at max: the caps a table goes through, its elements kept;
 * refused at max and when the bytes would not fit a size_t, with the array as it was.
 */
TEST(array_room)
{
	static const size_t caps[] = {3, 6, 12, 20, 20};
	uint32_t *v = NULL;
	size_t cap = 0, n = 0;
	void *big = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(caps); i++) {
		for (; n < cap; n++) {
			ASSERT_EQ(gprof_array_room((void **)&v, &cap, n, sizeof(*v), 3, 20), 0);
			v[n] = (uint32_t)n * 7;
		}
		ASSERT_EQ(gprof_array_room((void **)&v, &cap, n, sizeof(*v), 3, 20),
			  n < 20 ? 0 : -ENOSPC);
		ASSERT_EQ(cap, caps[i]);
		for (size_t k = 0; k < n; k++)
			ASSERT_EQ(v[k], k * 7);
	}
	gprof_free(v);
	v = NULL;
	cap = 0;
	ASSERT_EQ(gprof_array_room((void **)&v, &cap, 0, sizeof(*v), 64, 5), 0);
	ASSERT_EQ(cap, 5); /* first is cut at max too */
	gprof_free(v);
	cap = 0;
	ASSERT_EQ(gprof_array_room(&big, &cap, 0, SIZE_MAX / 2, 4, SIZE_MAX), -ENOMEM);
	ASSERT(!big);
	ASSERT_EQ(cap, 0);
}

static uint64_t ns_of(struct timespec ts)
{
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The clocks against time() and each other; deadlines as a timed wait keeps them. */
TEST(clock_deadlines)
{
	const uint64_t wait_ns = 20 * 1000 * 1000;
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct timespec ts = gprof_clock_timespec(5 * 1000000000ull + 999999999);
	time_t wall = time(NULL);
	uint64_t real = gprof_realtime_ns(), before, after;
	pthread_condattr_t attr;
	pthread_cond_t cond;

	ASSERT_LE((uint64_t)wall - 1, real / 1000000000ull);
	ASSERT_LE(real / 1000000000ull, (uint64_t)wall + 1);
	ASSERT_EQ(ts.tv_sec, 5);
	ASSERT_EQ(ts.tv_nsec, 999999999);
	ts = gprof_clock_timespec(0);
	ASSERT_EQ(ts.tv_sec + ts.tv_nsec, 0);
	before = gprof_clock_ns(CLOCK_MONOTONIC);
	ts = gprof_clock_deadline(CLOCK_MONOTONIC, wait_ns);
	after = gprof_clock_ns(CLOCK_MONOTONIC);
	ASSERT_LT(ts.tv_nsec, 1000000000);
	ASSERT_LE(before + wait_ns, ns_of(ts));
	ASSERT_LE(ns_of(ts), after + wait_ns);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&cond, &attr);
	pthread_mutex_lock(&lock);
	ASSERT_EQ(pthread_cond_timedwait(&cond, &lock, &ts), ETIMEDOUT);
	pthread_mutex_unlock(&lock);
	ASSERT_LE(before + wait_ns, gprof_clock_ns(CLOCK_MONOTONIC));
	pthread_cond_destroy(&cond);
	pthread_condattr_destroy(&attr);
}

/* The smallest value with at least p% of v at or below it, by counting (v unsorted). */
static uint64_t rank_ref(const uint64_t *v, size_t n, unsigned p)
{
	uint64_t best = UINT64_MAX;

	for (size_t i = 0; i < n; i++) {
		size_t at_or_below = 0;

		for (size_t k = 0; k < n; k++)
			at_or_below += v[k] <= v[i];
		if (at_or_below * 100 >= n * p && v[i] < best)
			best = v[i];
	}
	return best;
}

/* The steps (a mean of 891 us hides a 203 us median), then random ones by counting. */
TEST(stats_steps)
{
	uint64_t three[] = {2275, 203, 195}, v[41], copy[41];
	struct gprof_stats st;

	ASSERT(!gprof_stats_of(three, 0, &st));
	ASSERT(gprof_stats_of(three, 3, &st));
	ASSERT_EQ(st.min, 195);
	ASSERT_EQ(st.median, 203);
	ASSERT_EQ(st.p90, 2275);
	ASSERT_EQ(st.max, 2275);
	ASSERT_EQ(st.mean, 891);
	srand(11);
	for (size_t n = 1; n <= ARRAY_SIZE(v); n++) {
		uint64_t sum = 0;

		for (size_t i = 0; i < n; i++)
			sum += copy[i] = v[i] = (uint64_t)(rand() % 50) * 1000;
		ASSERT(gprof_stats_of(v, n, &st));
		ASSERT_EQ(st.n, n);
		ASSERT_EQ(st.min, rank_ref(copy, n, 0));
		ASSERT_EQ(st.p25, rank_ref(copy, n, 25));
		ASSERT_EQ(st.p75, rank_ref(copy, n, 75));
		ASSERT_EQ(st.p90, rank_ref(copy, n, 90));
		ASSERT_EQ(st.max, rank_ref(copy, n, 100));
		ASSERT_EQ(st.mean, sum / n);
		/* as many at or below the median as at or above it */
		size_t below = 0, above = 0;
		for (size_t i = 0; i < n; i++) {
			below += copy[i] <= st.median;
			above += copy[i] >= st.median;
		}
		ASSERT(below * 2 >= n && above * 2 >= n);
		if (n % 2 == 0)
			ASSERT_EQ(st.median, (v[n / 2 - 1] + v[n / 2]) / 2);
	}
}

static void *hook_clock_reader(void *stop)
{
	uint64_t last = 0;

	while (!__atomic_load_n((int *)stop, __ATOMIC_RELAXED)) {
		uint64_t before = gprof_realtime_ns(), t = gprof_hook_ns();

		if (t + 1000 < before || t + 1000 < last)
			return (void *)1;
		last = t;
	}
	return NULL;
}

/*
 * The hooks' clock is CLOCK_REALTIME: each reading within 1 us of clock_gettime()'s around it,
 * for 400 ms of bursts and pauses (calibrations, the rate's span moved on twice) while another
 * thread reads it too; without the TSC it is clock_gettime() itself.
 */
TEST(clock_hook_ns_is_realtime)
{
	uint64_t n = 0, end;
	pthread_t other;
	void *late = NULL;
	int stop = 0;

	gprof_clock_setup(false);
	for (int i = 0; i < 1000; i++) {
		uint64_t before = gprof_realtime_ns(), t = gprof_hook_ns();

		ASSERT_LE(before, t);
		ASSERT_LE(t, gprof_realtime_ns());
	}
	if (!gprof_clock_kernel_tsc())
		SKIP("the kernel's clock source is not the TSC");
	gprof_clock_setup(true);
	ASSERT_EQ(pthread_create(&other, NULL, hook_clock_reader, &stop), 0);
	end = gprof_realtime_ns() + 400000000ull;
	while (gprof_realtime_ns() < end) {
		for (int i = 0; i < 1000; i++, n++) {
			uint64_t before = gprof_realtime_ns(), t = gprof_hook_ns();
			uint64_t after = gprof_realtime_ns();

			ASSERT_MSG(before <= t + 1000 && t <= after + 1000,
				   "reading %llu: %llu, clock_gettime %llu then %llu",
				   (unsigned long long)n, (unsigned long long)t,
				   (unsigned long long)before, (unsigned long long)after);
		}
		usleep((useconds_t)(n % 3000));
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(other, &late);
	ASSERT_MSG(!late, "the other thread's reading was over 1 us early");
}
