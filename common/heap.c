/* libgprof's own memory (heap.h). */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/compiler.h"
#include "common/heap.h"

/* More than any heap gives, as malloc's own bound (PTRDIFF_MAX): ENOMEM. */
static bool too_big(size_t n, size_t size)
{
	if (!size || n <= PTRDIFF_MAX / size)
		return false;
	errno = ENOMEM;
	return true;
}

#if ASAN

void gprof_heap_init(void)
{
}

void *gprof_malloc(size_t n)
{
	return too_big(n, 1) ? NULL : malloc(n);
}

void *gprof_calloc(size_t n, size_t size)
{
	return too_big(n, size) ? NULL : calloc(n, size);
}

void *gprof_realloc(void *p, size_t n)
{
	if (!n) {
		free(p);
		return NULL;
	}
	return too_big(n, 1) ? NULL : realloc(p, n);
}

void gprof_free(void *p)
{
	free(p);
}

#else

#define RUN_BYTES (256u << 10)
#define SMALL_MAX (32u << 10)
#define N_CLASSES 40 /* 16 to 128 bytes by 16, then four a doubling up to SMALL_MAX */
#define LARGE	  UINT32_MAX

/* Before each block: 16 bytes, so that blocks are aligned as malloc's. */
struct head {
	size_t bytes; /* a small block's room, or a large one's whole mapping */
	uint32_t cls; /* its size class, or LARGE */
	uint32_t unused;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *freed[N_CLASSES]; /* a freed block's first word: the next one of its class */
static char *run, *run_end;    /* what is left of the run small blocks are cut from */
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void lock_heap(void)
{
	pthread_mutex_lock(&lock);
}

static void unlock_heap(void)
{
	pthread_mutex_unlock(&lock);
}

/* fork() while another thread holds the lock: the child's copy is whole, and unlocked. */
static void handle_fork(void)
{
	pthread_atfork(lock_heap, unlock_heap, unlock_heap);
}

void gprof_heap_init(void)
{
	pthread_once(&fork_once, handle_fork);
}

/* The size class of an n-byte block (n <= SMALL_MAX), and the room it gives. */
static unsigned class_of(size_t n, size_t *room)
{
	unsigned lg, quarter;

	if (n <= 128) {
		unsigned c = n ? (unsigned)((n + 15) / 16) : 1;

		*room = c * 16;
		return c - 1;
	}
	lg = 63 - (unsigned)__builtin_clzll(n - 1); /* 2^lg < n <= 2^(lg + 1); lg >= 7 */
	quarter = lg - 2;
	*room = (n + ((size_t)1 << quarter) - 1) >> quarter << quarter;
	return 8 + (lg - 7) * 4 + (unsigned)(*room >> quarter) - 5;
}

static void *map(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* The whole mapping a large block of n bytes (not too_big) takes. */
static size_t large_bytes(size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (sizeof(struct head) + n + page - 1) / page * page;
}

static void *small(size_t n)
{
	size_t room;
	unsigned c = class_of(n, &room);
	struct head *h;

	gprof_heap_init();
	lock_heap();
	if ((h = freed[c])) {
		freed[c] = *(void **)h;
		h--;
	} else {
		/* The rest of a run too short for this block is left unused. */
		if ((size_t)(run_end - run) < sizeof(*h) + room) {
			char *r = map(RUN_BYTES);

			if (!r) {
				unlock_heap();
				return NULL;
			}
			run = r;
			run_end = r + RUN_BYTES;
		}
		h = (struct head *)run;
		run += sizeof(*h) + room;
		h->bytes = room;
		h->cls = c;
	}
	unlock_heap();
	return h + 1;
}

static void *large(size_t n)
{
	size_t bytes = large_bytes(n);
	struct head *h = map(bytes);

	if (!h)
		return NULL;
	h->bytes = bytes;
	h->cls = LARGE;
	return h + 1;
}

void *gprof_malloc(size_t n)
{
	void *p;

	if (too_big(n, 1))
		return NULL;
	p = n > SMALL_MAX ? large(n) : small(n);
	if (!p)
		errno = ENOMEM;
	return p;
}

void *gprof_calloc(size_t n, size_t size)
{
	void *p;

	if (too_big(n, size))
		return NULL;
	p = gprof_malloc(n * size);
	/* A large block is a new mapping: zeros already. */
	if (p && n * size <= SMALL_MAX)
		memset(p, 0, n * size);
	return p;
}

void gprof_free(void *p)
{
	struct head *h = p ? (struct head *)p - 1 : NULL;

	if (!h)
		return;
	if (h->cls == LARGE) {
		munmap(h, h->bytes);
		return;
	}
	lock_heap();
	*(void **)p = freed[h->cls];
	freed[h->cls] = p;
	unlock_heap();
}

void *gprof_realloc(void *p, size_t n)
{
	struct head *h = p ? (struct head *)p - 1 : NULL;
	size_t room;
	void *q;

	if (!h)
		return gprof_malloc(n);
	if (!n) {
		gprof_free(p);
		return NULL;
	}
	room = h->cls == LARGE ? h->bytes - sizeof(*h) : h->bytes;
	if (n <= room)
		return p;
	if (too_big(n, 1))
		return NULL;
	/* ThreadSanitizer does not see mremap() move a mapping: it would take the old range's
	 * accesses for another thread's in what is mapped there next. */
	if (h->cls == LARGE && !TSAN) {
		size_t bytes = large_bytes(n);

		q = mremap(h, h->bytes, bytes, MREMAP_MAYMOVE);
		if (q == MAP_FAILED) {
			errno = ENOMEM;
			return NULL;
		}
		h = q;
		h->bytes = bytes;
		return h + 1;
	}
	q = gprof_malloc(n);
	if (q) {
		memcpy(q, p, room);
		gprof_free(p);
	}
	return q;
}

#endif

char *gprof_strdup(const char *s)
{
	size_t len = strlen(s) + 1;
	char *d = gprof_malloc(len);

	return d ? memcpy(d, s, len) : NULL;
}

/* Sorts n elements at b stably, through scratch room for n. */
static void merge_sort(char *b, char *scratch, size_t n, size_t size,
		       int (*cmp)(const void *, const void *))
{
	size_t half = n / 2;
	char *l, *l_end, *r, *r_end, *out = scratch;

	if (n < 2)
		return;
	merge_sort(b, scratch, half, size, cmp);
	merge_sort(b + half * size, scratch, n - half, size, cmp);
	l = b;
	l_end = r = b + half * size;
	r_end = b + n * size;
	while (l < l_end && r < r_end) {
		char **from = cmp(r, l) < 0 ? &r : &l;

		memcpy(out, *from, size);
		*from += size;
		out += size;
	}
	/* What is left of the right half is in place already. */
	memcpy(out, l, (size_t)(l_end - l));
	out += l_end - l;
	memcpy(b, scratch, (size_t)(out - scratch));
}

static void swap(char *a, char *b, size_t size)
{
	while (size--) {
		char t = *a;

		*a++ = *b;
		*b++ = t;
	}
}

void gprof_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	char *b = base, *scratch;

	if (n < 2)
		return;
	scratch = n <= SIZE_MAX / size ? gprof_malloc(n * size) : NULL;
	if (scratch) {
		merge_sort(b, scratch, n, size, cmp);
		gprof_free(scratch);
		return;
	}
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j && cmp(b + (j - 1) * size, b + j * size) > 0; j--)
			swap(b + (j - 1) * size, b + j * size, size);
}
