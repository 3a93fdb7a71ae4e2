/*
 * Simulated device and pinned host memory: real host memory, so copies move real bytes. A
 * sorted table of allocations tells device, pinned and pageable addresses apart; MEMORY2 and
 * MEMORY_POOL records and FAKEGPU_MALLOC_FAIL_ABOVE fault injection happen here, and the
 * stream-ordered allocator's pools (a device's default one and those cuMemPoolCreate makes).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test/fakecuda/fakegpu.h"
#include "test/fakecuda/sim.h"

/* Real cudaMalloc returns 256-byte aligned (or better) addresses. */
#define ALIGN 256

/*
 * A stream-ordered memory pool. It reserves device memory in whole granules as its allocations
 * need it, keeps what they free, and gives back what is unused above its release threshold
 * when the program synchronises (or trims it): reserved counts as in use on the device, used
 * is what its allocations hold.
 */
#define POOL_GRANULE (2ull << 20)
#define POOLS_MAX    64

struct fakecuda_pool {
	int device;
	unsigned id; /* the ground truth's name: 1, 2, ... in the order made */
	bool made, destroyed;
	uint64_t threshold, reserved, used, reserved_high, used_high;
	uint64_t reuse[3]; /* the REUSE_* attributes, kept as set */
};

struct alloc {
	uintptr_t addr;
	size_t bytes;
	CUpti_ActivityMemoryKind kind;
	int device;
	struct fakecuda_pool *pool; /* a stream-ordered allocation's */
};

/*
 * The allocation table, sorted by address, per-device bytes in use and the pools (the first
 * FAKECUDA_MAX_DEVICES are the devices' default ones); under mem_lock.
 */
static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static struct alloc *allocs;
static size_t n_allocs, cap_allocs;
static uint64_t in_use[FAKECUDA_MAX_DEVICES];
static struct fakecuda_pool pools[POOLS_MAX];
static struct fakecuda_pool *current_pool[FAKECUDA_MAX_DEVICES];
static unsigned n_pools = FAKECUDA_MAX_DEVICES, pool_ids;

/* Index of the first allocation whose address is > addr. */
static size_t upper_bound(uintptr_t addr)
{
	size_t lo = 0, hi = n_allocs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (allocs[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int table_insert(const struct alloc *a)
{
	size_t i;

	if (n_allocs == cap_allocs) {
		size_t cap = cap_allocs ? 2 * cap_allocs : 64;
		struct alloc *p = realloc(allocs, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		allocs = p;
		cap_allocs = cap;
	}
	i = upper_bound(a->addr);
	memmove(allocs + i + 1, allocs + i, (n_allocs - i) * sizeof(*allocs));
	allocs[i] = *a;
	n_allocs++;
	return 0;
}

/* FAKEGPU_MALLOC_FAIL_ABOVE=bytes: device allocations larger than this fail (0: none). */
static uint64_t fail_above;

/*
 * FAKEGPU_MEMINFO_RACE=1: the first reading of the bytes in use (cudaMemGetInfo, cuMemGetInfo)
 * is followed, before its call returns, by another thread's next device allocation or free, as
 * when the scheduler stops the reading thread there (it waits up to a second for one); that
 * thread then stops for RACE_PAUSE_NS once out of its call, so the reading's returns first.
 * Under mem_lock, with the count of those made so far.
 */
#define RACE_PAUSE_NS 20000000

static bool meminfo_race, race_waiting;
static uint64_t device_ops;
static pthread_cond_t device_op_made = PTHREAD_COND_INITIALIZER;
static __thread bool race_paused;

void fakecuda_mem_init(void)
{
	const char *env = getenv("FAKEGPU_MALLOC_FAIL_ABOVE");

	if (env && *env)
		__atomic_store_n(&fail_above, strtoull(env, NULL, 0) + 1, __ATOMIC_RELAXED);
	env = getenv("FAKEGPU_MEMINFO_RACE");
	pthread_mutex_lock(&mem_lock);
	meminfo_race = env && !strcmp(env, "1");
	pthread_mutex_unlock(&mem_lock);
}

/* A device allocation or free was recorded. Under mem_lock. */
static void device_op(void)
{
	device_ops++;
	race_paused = race_waiting;
	race_waiting = false;
	pthread_cond_broadcast(&device_op_made);
}

/* After mem_lock is released: the thread whose operation the reading waited for stops. */
static void race_pause(void)
{
	if (race_paused) {
		race_paused = false;
		nanosleep(&(struct timespec){.tv_nsec = RACE_PAUSE_NS}, NULL);
	}
}

/* The reading's thread, stopped until another thread allocates or frees. Under mem_lock. */
static void race_reading(void)
{
	uint64_t seen = device_ops;
	struct timespec until;

	meminfo_race = false;
	race_waiting = true;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 1;
	while (device_ops == seen &&
	       pthread_cond_timedwait(&device_op_made, &mem_lock, &until) != ETIMEDOUT)
		;
}

static bool injected_failure(size_t bytes, CUpti_ActivityMemoryKind kind)
{
	uint64_t above = __atomic_load_n(&fail_above, __ATOMIC_RELAXED);

	return kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE && above && bytes > above - 1;
}

static void emit_memory(const struct alloc *a, CUpti_ActivityMemoryOperationType op,
			uint32_t correlation, uint32_t stream_id)
{
	CUpti_ActivityMemory4 rec = {
	    .kind = CUPTI_ACTIVITY_KIND_MEMORY2,
	    .memoryOperationType = op,
	    .memoryKind = a->kind,
	    .correlationId = correlation,
	    .address = a->addr,
	    .bytes = a->bytes,
	    .timestamp = fakegpu_timestamp(),
	    .processId = (uint32_t)getpid(),
	    .deviceId = (uint32_t)a->device,
	    .contextId = fakecuda_context_id(a->device),
	    .streamId = stream_id,
	    .isAsync = stream_id != CUPTI_INVALID_STREAM_ID,
	};

	const struct fakecuda_pool *pool = a->pool;
	char pool_text[160] = "";

	if (rec.isAsync)
		rec.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
	if (pool) { /* the pool as this operation leaves it */
		rec.memoryPoolConfig.address = (uintptr_t)pool;
		rec.memoryPoolConfig.releaseThreshold = pool->threshold;
		rec.memoryPoolConfig.pool.size = pool->reserved;
		rec.memoryPoolConfig.utilizedSize = pool->used;
		snprintf(pool_text, sizeof(pool_text),
			 ",\"pool\":%u,\"pool_handle\":%llu,\"pool_reserved\":%llu,"
			 "\"pool_used\":%llu",
			 pool->id, (unsigned long long)(uintptr_t)pool,
			 (unsigned long long)pool->reserved, (unsigned long long)pool->used);
	}
	if (fakegpu_activity_enabled(CUPTI_ACTIVITY_KIND_MEMORY2))
		fakegpu_activity_emit((const CUpti_Activity *)&rec, sizeof(rec));
	fakecuda_log("\"type\":\"memory\",\"pid\":%d,\"op\":\"%s\",\"memory_kind\":\"%s\","
		     "\"address\":%llu,\"bytes\":%llu,\"device\":%d,\"stream\":%d,\"corr\":%u,"
		     "\"time\":%llu%s",
		     (int)getpid(),
		     op == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION ? "alloc" : "free",
		     a->kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE ? "device" : "pinned",
		     (unsigned long long)a->addr, (unsigned long long)a->bytes, a->device,
		     stream_id == CUPTI_INVALID_STREAM_ID ? -1 : (int)stream_id, correlation,
		     (unsigned long long)rec.timestamp, pool_text);
}

/*
 * What happened to a pool as a whole ("create", "release" at a synchronisation, "trim",
 * "destroy"): the ground-truth line, and for what a program asked (all but a release) CUPTI's
 * MEMORY_POOL record. Under mem_lock.
 */
static void emit_pool(const struct fakecuda_pool *p, const char *op,
		      CUpti_ActivityMemoryPoolOperationType type, uint64_t keep,
		      uint32_t correlation)
{
	CUpti_ActivityMemoryPool3 rec = {
	    .kind = CUPTI_ACTIVITY_KIND_MEMORY_POOL,
	    .memoryPoolOperationType = type,
	    .memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL,
	    .correlationId = correlation,
	    .processId = (uint32_t)getpid(),
	    .deviceId = (uint32_t)p->device,
	    .minBytesToKeep = keep,
	    .address = (uintptr_t)p,
	    .size = p->reserved,
	    .releaseThreshold = p->threshold,
	    .timestamp = fakegpu_timestamp(),
	    .utilizedSize = p->used,
	};

	if (type != CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_INVALID &&
	    fakegpu_activity_enabled(CUPTI_ACTIVITY_KIND_MEMORY_POOL))
		fakegpu_activity_emit((const CUpti_Activity *)&rec, sizeof(rec));
	fakecuda_log("\"type\":\"pool\",\"pid\":%d,\"op\":\"%s\",\"pool\":%u,\"pool_handle\":%llu,"
		     "\"device\":%d,\"reserved\":%llu,\"used\":%llu,\"threshold\":%llu,"
		     "\"corr\":%u,\"time\":%llu",
		     (int)getpid(), op, p->id, (unsigned long long)(uintptr_t)p, p->device,
		     (unsigned long long)p->reserved, (unsigned long long)p->used,
		     (unsigned long long)p->threshold, correlation,
		     (unsigned long long)rec.timestamp);
}

static uint64_t granules(uint64_t bytes)
{
	return (bytes + POOL_GRANULE - 1) / POOL_GRANULE * POOL_GRANULE;
}

/* What the device gives a pool for `bytes` more: the granules its free reserve lacks. */
static uint64_t pool_growth(const struct fakecuda_pool *p, size_t bytes)
{
	return p->used + bytes > p->reserved ? granules(p->used + bytes - p->reserved) : 0;
}

static void pool_take(struct fakecuda_pool *p, size_t bytes, uint64_t growth)
{
	p->reserved += growth;
	p->used += bytes;
	in_use[p->device] += growth;
	p->reserved_high = p->reserved > p->reserved_high ? p->reserved : p->reserved_high;
	p->used_high = p->used > p->used_high ? p->used : p->used_high;
}

/* Gives back what the pool holds unused above `keep` (whole granules); true if it did. */
static bool pool_shrink(struct fakecuda_pool *p, uint64_t keep)
{
	uint64_t floor = granules(p->used) > keep ? granules(p->used) : keep;

	if (p->reserved <= floor)
		return false;
	in_use[p->device] -= p->reserved - floor;
	p->reserved = floor;
	return true;
}

/*
 * An allocation; with `record` false, one that no record reports (a module's variables); with
 * a pool, one from it (device memory on the pool's device, counted as the pool grows).
 */
static int mem_alloc(void **out, size_t bytes, CUpti_ActivityMemoryKind kind, int device,
		     uint32_t correlation, uint32_t stream_id, bool record,
		     struct fakecuda_pool *pool)
{
	struct alloc a = {.bytes = bytes, .kind = kind, .device = device, .pool = pool};
	bool device_mem = kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	void *p = NULL;
	int err = -ENOMEM;
	uint64_t growth;

	*out = NULL;
	if (bytes == 0)
		return 0; /* success with a NULL pointer, as the real runtime */
	if (injected_failure(bytes, kind))
		return -ENOMEM;
	pthread_mutex_lock(&mem_lock);
	growth = pool ? pool_growth(pool, bytes) : device_mem && record ? bytes : 0;
	if (device_mem &&
	    in_use[device] + (pool ? growth : bytes) > fakecuda_device_total_mem(device))
		goto out;
	p = aligned_alloc(ALIGN, (bytes + ALIGN - 1) / ALIGN * ALIGN);
	if (!p)
		goto out;
	a.addr = (uintptr_t)p;
	err = table_insert(&a);
	if (err) {
		free(p);
		goto out;
	}
	if (pool)
		pool_take(pool, bytes, growth);
	else /* a module's memory: not the program's to count */
		in_use[device] += growth;
	*out = p;
	if (record)
		emit_memory(&a, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, correlation,
			    stream_id);
	if (record && device_mem)
		device_op();
out:
	pthread_mutex_unlock(&mem_lock);
	race_pause();
	return err;
}

int fakecuda_mem_alloc(void **out, size_t bytes, CUpti_ActivityMemoryKind kind, int device,
		       uint32_t correlation, uint32_t stream_id)
{
	return mem_alloc(out, bytes, kind, device, correlation, stream_id, true, NULL);
}

int fakecuda_mem_module(void **out, size_t bytes, int device)
{
	return mem_alloc(out, bytes, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, device, 0,
			 CUPTI_INVALID_STREAM_ID, false, NULL);
}

uint64_t fakecuda_mem_in_use(int device)
{
	uint64_t bytes;

	pthread_mutex_lock(&mem_lock);
	bytes = device >= 0 && device < FAKECUDA_MAX_DEVICES ? in_use[device] : 0;
	if (meminfo_race)
		race_reading();
	pthread_mutex_unlock(&mem_lock);
	return bytes;
}

int fakecuda_mem_range(const void *ptr, void **base, size_t *bytes)
{
	uintptr_t addr = (uintptr_t)ptr;
	int err = -EINVAL;
	size_t i;

	pthread_mutex_lock(&mem_lock);
	i = upper_bound(addr);
	if (i > 0 && addr < allocs[i - 1].addr + allocs[i - 1].bytes) {
		*base = (void *)allocs[i - 1].addr;
		*bytes = allocs[i - 1].bytes;
		err = 0;
	}
	pthread_mutex_unlock(&mem_lock);
	return err;
}

int fakecuda_mem_free(void *ptr, CUpti_ActivityMemoryKind kind, uint32_t correlation,
		      uint32_t stream_id)
{
	size_t i;
	struct alloc a;

	if (!ptr)
		return 0;
	pthread_mutex_lock(&mem_lock);
	i = upper_bound((uintptr_t)ptr);
	if (i == 0 || allocs[i - 1].addr != (uintptr_t)ptr || allocs[i - 1].kind != kind) {
		pthread_mutex_unlock(&mem_lock);
		return -EINVAL;
	}
	a = allocs[i - 1];
	memmove(allocs + i - 1, allocs + i, (n_allocs - i) * sizeof(*allocs));
	n_allocs--;
	if (a.pool) /* back to its pool, which keeps it */
		a.pool->used -= a.bytes;
	else if (kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE)
		in_use[a.device] -= a.bytes;
	/* Under the lock, so the release is reported before the address can be handed out again. */
	emit_memory(&a, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, correlation, stream_id);
	if (kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE)
		device_op();
	/* A pool destroyed with allocations out goes once the last one is back. */
	if (a.pool && a.pool->destroyed && !a.pool->used && pool_shrink(a.pool, 0))
		emit_pool(a.pool, "release", CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_INVALID, 0,
			  correlation);
	pthread_mutex_unlock(&mem_lock);
	race_pause();
	free(ptr);
	return 0;
}

CUpti_ActivityMemoryKind fakecuda_mem_kind(const void *ptr)
{
	CUpti_ActivityMemoryKind kind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
	uintptr_t addr = (uintptr_t)ptr;
	size_t i;

	pthread_mutex_lock(&mem_lock);
	i = upper_bound(addr);
	if (i > 0 && addr < allocs[i - 1].addr + allocs[i - 1].bytes)
		kind = allocs[i - 1].kind;
	pthread_mutex_unlock(&mem_lock);
	return kind;
}

/* ---- stream-ordered pools ---- */

static void pool_init(struct fakecuda_pool *p, int device)
{
	*p = (struct fakecuda_pool){.device = device, .id = ++pool_ids, .made = true};
	for (int i = 0; i < 3; i++)
		p->reuse[i] = 1; /* each reuse policy is on by default */
}

/* Under mem_lock: a device's default pool, made when first asked for. */
static struct fakecuda_pool *default_pool(int device)
{
	struct fakecuda_pool *p = &pools[device];

	if (!p->made)
		pool_init(p, device);
	return p;
}

/* Under mem_lock: a pool a program may use (made, not destroyed), by its handle. */
static bool pool_valid(const struct fakecuda_pool *p)
{
	uintptr_t at = (uintptr_t)p, lo = (uintptr_t)pools;

	return at >= lo && at < (uintptr_t)(pools + POOLS_MAX) && (at - lo) % sizeof(*pools) == 0 &&
	       p->made && !p->destroyed;
}

static bool device_ok(int device)
{
	return device >= 0 && device < fakecuda_device_count();
}

struct fakecuda_pool *fakecuda_pool_default(int device)
{
	struct fakecuda_pool *p = NULL;

	if (!device_ok(device))
		return NULL;
	pthread_mutex_lock(&mem_lock);
	p = default_pool(device);
	pthread_mutex_unlock(&mem_lock);
	return p;
}

struct fakecuda_pool *fakecuda_pool_current(int device)
{
	struct fakecuda_pool *p = NULL;

	if (!device_ok(device))
		return NULL;
	pthread_mutex_lock(&mem_lock);
	p = current_pool[device] ? current_pool[device] : default_pool(device);
	pthread_mutex_unlock(&mem_lock);
	return p;
}

int fakecuda_pool_set_current(int device, struct fakecuda_pool *p)
{
	int err = -EINVAL;

	pthread_mutex_lock(&mem_lock);
	if (device_ok(device) && pool_valid(p) && p->device == device) {
		current_pool[device] = p;
		err = 0;
	}
	pthread_mutex_unlock(&mem_lock);
	return err;
}

int fakecuda_pool_create(struct fakecuda_pool **out, int device, uint32_t correlation)
{
	int err = -ENOMEM;

	if (!device_ok(device))
		return -EINVAL;
	pthread_mutex_lock(&mem_lock);
	if (n_pools < POOLS_MAX) {
		*out = &pools[n_pools++];
		pool_init(*out, device);
		emit_pool(*out, "create", CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED, 0,
			  correlation);
		err = 0;
	}
	pthread_mutex_unlock(&mem_lock);
	return err;
}

/* A default pool is the device's for ever; another one goes once its allocations are back. */
int fakecuda_pool_destroy(struct fakecuda_pool *p, uint32_t correlation)
{
	int err = -EINVAL;

	pthread_mutex_lock(&mem_lock);
	if (pool_valid(p) && p >= pools + FAKECUDA_MAX_DEVICES) {
		p->destroyed = true;
		if (current_pool[p->device] == p)
			current_pool[p->device] = NULL;
		if (!p->used)
			pool_shrink(p, 0);
		emit_pool(p, "destroy", CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED, 0,
			  correlation);
		err = 0;
	}
	pthread_mutex_unlock(&mem_lock);
	return err;
}

int fakecuda_pool_trim(struct fakecuda_pool *p, uint64_t keep, uint32_t correlation)
{
	int err = -EINVAL;

	pthread_mutex_lock(&mem_lock);
	if (pool_valid(p)) {
		pool_shrink(p, keep);
		emit_pool(p, "trim", CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED, keep,
			  correlation);
		err = 0;
	}
	pthread_mutex_unlock(&mem_lock);
	return err;
}

int fakecuda_pool_alloc(void **out, size_t bytes, struct fakecuda_pool *p, uint32_t correlation,
			uint32_t stream_id)
{
	bool valid;

	pthread_mutex_lock(&mem_lock);
	valid = pool_valid(p);
	pthread_mutex_unlock(&mem_lock);
	if (!valid)
		return -EINVAL;
	return mem_alloc(out, bytes, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, p->device, correlation,
			 stream_id, true, p);
}

void fakecuda_pools_release(int device)
{
	pthread_mutex_lock(&mem_lock);
	for (unsigned i = 0; i < n_pools; i++) {
		struct fakecuda_pool *p = &pools[i];

		if (p->made && !p->destroyed && p->device == device && pool_shrink(p, p->threshold))
			emit_pool(p, "release", CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_INVALID,
				  0, 0);
	}
	pthread_mutex_unlock(&mem_lock);
}

/* A figure a program may read: where it is, and whether a program may set it (to what). */
static uint64_t *pool_figure(struct fakecuda_pool *p, CUmemPool_attribute attr, bool *settable,
			     bool *only_zero)
{
	*settable = *only_zero = false;
	switch (attr) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		*settable = true;
		return &p->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		*settable = true;
		return &p->threshold;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
		return &p->reserved;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
		*settable = *only_zero = true;
		return &p->reserved_high;
	case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
		return &p->used;
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		*settable = *only_zero = true;
		return &p->used_high;
	default:
		return NULL;
	}
}

/*
 * The reuse policies are ints, the rest cuuint64_t. Setting a high-water mark (to 0 only)
 * resets it to the current figure, as the driver does.
 */
int fakecuda_pool_attribute(struct fakecuda_pool *p, CUmemPool_attribute attr, void *value,
			    bool set)
{
	bool settable, only_zero,
	    is_int = attr <= CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES;
	uint64_t *v, given;
	int err = -EINVAL;

	pthread_mutex_lock(&mem_lock);
	if (!value || !pool_valid(p) || !(v = pool_figure(p, attr, &settable, &only_zero)))
		goto out;
	if (!set) {
		if (is_int)
			*(int *)value = (int)*v;
		else
			*(cuuint64_t *)value = *v;
		err = 0;
		goto out;
	}
	given = is_int ? (uint64_t)(*(int *)value != 0) : *(cuuint64_t *)value;
	if (!settable || (only_zero && given))
		goto out;
	*v = !only_zero ? given : attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH ? p->reserved : p->used;
	err = 0;
out:
	pthread_mutex_unlock(&mem_lock);
	return err;
}

/* CUPTI's copy kind, indexed by [source is device][destination is device]. */
static const uint8_t copy_kinds[2][2] = {
    {CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD},
    {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD},
};

void fakecuda_memcpy_kinds(struct fakecuda_op *op, const void *dst, const void *src, bool src_dev,
			   bool dst_dev)
{
	op->memcpy.copy_kind = copy_kinds[src_dev][dst_dev];
	op->memcpy.src_kind = src_dev ? CUPTI_ACTIVITY_MEMORY_KIND_DEVICE : fakecuda_mem_kind(src);
	op->memcpy.dst_kind = dst_dev ? CUPTI_ACTIVITY_MEMORY_KIND_DEVICE : fakecuda_mem_kind(dst);
}

bool fakecuda_memcpy_blocks(const struct fakecuda_op *op)
{
	return op->memcpy.src_kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE &&
	       op->memcpy.dst_kind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
}
