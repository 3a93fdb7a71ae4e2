/*
 * Simulated device and pinned host memory: real host memory, so copies move real bytes. A
 * sorted table of allocations tells device, pinned and pageable addresses apart; MEMORY2
 * records and FAKEGPU_MALLOC_FAIL_ABOVE fault injection happen here.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test/fakecuda/fakegpu.h"
#include "test/fakecuda/sim.h"

/* Real cudaMalloc returns 256-byte aligned (or better) addresses. */
#define ALIGN 256

struct alloc {
	uintptr_t addr;
	size_t bytes;
	CUpti_ActivityMemoryKind kind;
	int device;
};

/* The allocation table, sorted by address, and per-device bytes in use; under mem_lock. */
static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static struct alloc *allocs;
static size_t n_allocs, cap_allocs;
static uint64_t in_use[FAKECUDA_MAX_DEVICES];

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

void fakecuda_mem_init(void)
{
	const char *env = getenv("FAKEGPU_MALLOC_FAIL_ABOVE");

	if (env && *env)
		__atomic_store_n(&fail_above, strtoull(env, NULL, 0) + 1, __ATOMIC_RELAXED);
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

	if (rec.isAsync)
		rec.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
	if (fakegpu_activity_enabled(CUPTI_ACTIVITY_KIND_MEMORY2))
		fakegpu_activity_emit((const CUpti_Activity *)&rec, sizeof(rec));
	fakecuda_log("\"type\":\"memory\",\"pid\":%d,\"op\":\"%s\",\"memory_kind\":\"%s\","
		     "\"address\":%llu,\"bytes\":%llu,\"device\":%d,\"stream\":%d,\"corr\":%u,"
		     "\"time\":%llu",
		     (int)getpid(),
		     op == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION ? "alloc" : "free",
		     a->kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE ? "device" : "pinned",
		     (unsigned long long)a->addr, (unsigned long long)a->bytes, a->device,
		     stream_id == CUPTI_INVALID_STREAM_ID ? -1 : (int)stream_id, correlation,
		     (unsigned long long)rec.timestamp);
}

/* An allocation; with `record` false, one that no record reports (a module's variables). */
static int mem_alloc(void **out, size_t bytes, CUpti_ActivityMemoryKind kind, int device,
		     uint32_t correlation, uint32_t stream_id, bool record)
{
	struct alloc a = {.bytes = bytes, .kind = kind, .device = device};
	bool device_mem = kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	void *p = NULL;
	int err = -ENOMEM;

	*out = NULL;
	if (bytes == 0)
		return 0; /* success with a NULL pointer, as the real runtime */
	if (injected_failure(bytes, kind))
		return -ENOMEM;
	pthread_mutex_lock(&mem_lock);
	if (device_mem && in_use[device] + bytes > fakecuda_device_total_mem(device))
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
	if (device_mem && record) /* a module's memory: not the program's to count */
		in_use[device] += bytes;
	*out = p;
	if (record)
		emit_memory(&a, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, correlation,
			    stream_id);
out:
	pthread_mutex_unlock(&mem_lock);
	return err;
}

int fakecuda_mem_alloc(void **out, size_t bytes, CUpti_ActivityMemoryKind kind, int device,
		       uint32_t correlation, uint32_t stream_id)
{
	return mem_alloc(out, bytes, kind, device, correlation, stream_id, true);
}

int fakecuda_mem_module(void **out, size_t bytes, int device)
{
	return mem_alloc(out, bytes, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, device, 0,
			 CUPTI_INVALID_STREAM_ID, false);
}

uint64_t fakecuda_mem_in_use(int device)
{
	uint64_t bytes;

	pthread_mutex_lock(&mem_lock);
	bytes = device >= 0 && device < FAKECUDA_MAX_DEVICES ? in_use[device] : 0;
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
	if (kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE)
		in_use[a.device] -= a.bytes;
	/* Under the lock, so the release is reported before the address can be handed out again. */
	emit_memory(&a, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, correlation, stream_id);
	pthread_mutex_unlock(&mem_lock);
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
