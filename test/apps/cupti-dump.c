/*
 * A minimal CUPTI client to LD_PRELOAD into any CUDA program (or load as CUDA_INJECTION64_PATH):
 * it enables activity kinds and the runtime and driver callbacks at load, and writes one line
 * per record and per callback to CUPTI_DUMP_OUT (default stderr). Works with the fake libcupti
 * and with the real one.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#define BUFFER_BYTES (1 << 20)

/* Kinds enabled unless CUPTI_DUMP_KINDS says "all" or lists numbers: what a profiler uses. */
static const CUpti_ActivityKind default_kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,	CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_MEMORY2,	   CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
};

/* Opened by the constructor; every line is one fprintf (stdio locks the stream). */
static FILE *out;
static CUpti_SubscriberHandle subscriber;

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*buffer = aligned_alloc(8, BUFFER_BYTES);
	*size = *buffer ? BUFFER_BYTES : 0;
	*max_records = 0;
}

static void print_kernel(const CUpti_ActivityKernel10 *k)
{
	fprintf(out,
		"KERNEL kind=%d corr=%u name=%s start=%" PRIu64 " end=%" PRIu64 " queued=%" PRIu64
		" completed=%" PRIu64 " device=%u context=%u stream=%u grid=%d,%d,%d block=%d,%d,%d"
		" regs=%u shared_static=%d shared_dynamic=%d launch_type=%u\n",
		(int)k->kind, k->correlationId, k->name ? k->name : "-", k->start, k->end,
		k->queued, k->completed, k->deviceId, k->contextId, k->streamId, k->gridX, k->gridY,
		k->gridZ, k->blockX, k->blockY, k->blockZ, k->registersPerThread,
		k->staticSharedMemory, k->dynamicSharedMemory, (unsigned)k->launchType);
}

static void print_memcpy(const CUpti_ActivityMemcpy6 *m)
{
	fprintf(out,
		"MEMCPY corr=%u runtime_corr=%u copy_kind=%u src_kind=%u dst_kind=%u flags=%u"
		" bytes=%" PRIu64 " start=%" PRIu64 " end=%" PRIu64
		" device=%u context=%u stream=%u\n",
		m->correlationId, m->runtimeCorrelationId, m->copyKind, m->srcKind, m->dstKind,
		m->flags, m->bytes, m->start, m->end, m->deviceId, m->contextId, m->streamId);
}

static void print_memset(const CUpti_ActivityMemset4 *m)
{
	fprintf(out,
		"MEMSET corr=%u value=%u flags=%u memory_kind=%u bytes=%" PRIu64 " start=%" PRIu64
		" end=%" PRIu64 " device=%u context=%u stream=%u\n",
		m->correlationId, m->value, m->flags, m->memoryKind, m->bytes, m->start, m->end,
		m->deviceId, m->contextId, m->streamId);
}

static void print_memory(const CUpti_ActivityMemory4 *m)
{
	fprintf(out,
		"MEMORY2 corr=%u op=%d memory_kind=%d address=%" PRIu64 " bytes=%" PRIu64
		" timestamp=%" PRIu64 " device=%u context=%u stream=%u async=%u pool_type=%d"
		" pool=%" PRIu64 " pool_size=%" PRIu64 " pool_used=%" PRIu64 "\n",
		m->correlationId, (int)m->memoryOperationType, (int)m->memoryKind, m->address,
		m->bytes, m->timestamp, m->deviceId, m->contextId, m->streamId, m->isAsync,
		(int)m->memoryPoolConfig.memoryPoolType, m->memoryPoolConfig.address,
		m->memoryPoolConfig.pool.size, m->memoryPoolConfig.utilizedSize);
}

static void print_pool(const CUpti_ActivityMemoryPool3 *p)
{
	fprintf(out,
		"MEMORY_POOL corr=%u op=%d pool_type=%d device=%u keep=%zu pool=%" PRIu64
		" size=%" PRIu64 " threshold=%" PRIu64 " used=%" PRIu64 " timestamp=%" PRIu64 "\n",
		p->correlationId, (int)p->memoryPoolOperationType, (int)p->memoryPoolType,
		p->deviceId, p->minBytesToKeep, p->address, p->size, p->releaseThreshold,
		p->utilizedSize, p->timestamp);
}

static void print_api(const CUpti_ActivityAPI *a)
{
	fprintf(out, "%s corr=%u cbid=%u start=%" PRIu64 " end=%" PRIu64 " pid=%u tid=%u ret=%u\n",
		a->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? "RUNTIME" : "DRIVER", a->correlationId,
		a->cbid, a->start, a->end, a->processId, a->threadId, a->returnValue);
}

static void print_sync(const CUpti_ActivitySynchronization2 *y)
{
	fprintf(out,
		"SYNC corr=%u sync_type=%d start=%" PRIu64 " end=%" PRIu64
		" context=%u stream=%u event=%u event_sync=%" PRIu64 " ret=%u\n",
		y->correlationId, (int)y->type, y->start, y->end, y->contextId, y->streamId,
		y->cudaEventId, y->cudaEventSyncId, y->returnValue);
}

static void print_cuda_event(const CUpti_ActivityCudaEvent2 *e)
{
	fprintf(out,
		"CUDA_EVENT corr=%u device=%u context=%u stream=%u event=%u event_sync=%" PRIu64
		"\n",
		e->correlationId, e->deviceId, e->contextId, e->streamId, e->eventId,
		e->cudaEventSyncId);
}

static void print_record(const CUpti_Activity *r)
{
	switch (r->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		return print_kernel((const CUpti_ActivityKernel10 *)r);
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		return print_memcpy((const CUpti_ActivityMemcpy6 *)r);
	case CUPTI_ACTIVITY_KIND_MEMSET:
		return print_memset((const CUpti_ActivityMemset4 *)r);
	case CUPTI_ACTIVITY_KIND_MEMORY2:
		return print_memory((const CUpti_ActivityMemory4 *)r);
	case CUPTI_ACTIVITY_KIND_MEMORY_POOL:
		return print_pool((const CUpti_ActivityMemoryPool3 *)r);
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER:
		return print_api((const CUpti_ActivityAPI *)r);
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		return print_sync((const CUpti_ActivitySynchronization2 *)r);
	case CUPTI_ACTIVITY_KIND_CUDA_EVENT:
		return print_cuda_event((const CUpti_ActivityCudaEvent2 *)r);
	default:
		fprintf(out, "OTHER kind=%d\n", (int)r->kind);
	}
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
				      size_t size, size_t valid)
{
	CUpti_Activity *record = NULL;
	size_t dropped = 0;
	CUptiResult r;

	(void)size;
	while ((r = cuptiActivityGetNextRecord(buffer, valid, &record)) == CUPTI_SUCCESS)
		print_record(record);
	if (r != CUPTI_ERROR_MAX_LIMIT_REACHED)
		fprintf(out, "WALK result=%d\n", (int)r);
	if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS && dropped)
		fprintf(out, "DROPPED count=%zu\n", dropped);
	free(buffer);
}

static void CUPTIAPI callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			      const void *cbdata)
{
	const CUpti_CallbackData *d = cbdata;

	(void)userdata;
	if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API)
		return;
	fprintf(out, "CB domain=%d site=%s cbid=%u corr=%u func=%s symbol=%s\n", (int)domain,
		d->callbackSite == CUPTI_API_ENTER ? "enter" : "exit", cbid, d->correlationId,
		d->functionName ? d->functionName : "-", d->symbolName ? d->symbolName : "-");
}

static void enable(CUpti_ActivityKind kind)
{
	CUptiResult r = cuptiActivityEnable(kind);

	if (r != CUPTI_SUCCESS)
		fprintf(out, "ENABLE kind=%d result=%d\n", (int)kind, (int)r);
}

/* CUPTI_DUMP_KINDS: unset for default_kinds, "all", or a comma-separated list of numbers. */
static void enable_kinds(void)
{
	const char *list = getenv("CUPTI_DUMP_KINDS");
	char *end;

	if (!list) {
		for (size_t i = 0; i < sizeof(default_kinds) / sizeof(default_kinds[0]); i++)
			enable(default_kinds[i]);
	} else if (!strcmp(list, "all")) {
		for (int k = 1; k < CUPTI_ACTIVITY_KIND_COUNT; k++)
			if (k != CUPTI_ACTIVITY_KIND_KERNEL) /* it serialises all kernels */
				enable((CUpti_ActivityKind)k);
	} else {
		for (; *list; list = *end ? end + 1 : end)
			enable((CUpti_ActivityKind)strtol(list, &end, 10));
	}
}

__attribute__((constructor)) static void dump_start(void)
{
	const char *path = getenv("CUPTI_DUMP_OUT");

	out = path ? fopen(path, "w") : NULL;
	if (!out)
		out = stderr;
	setvbuf(out, NULL, _IOLBF, 0);
	cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
	enable_kinds();
	if (getenv("CUPTI_DUMP_CALLBACKS") && !strcmp(getenv("CUPTI_DUMP_CALLBACKS"), "0"))
		return;
	if (cuptiSubscribe(&subscriber, callback, NULL) != CUPTI_SUCCESS) {
		fprintf(out, "SUBSCRIBE failed\n");
		return;
	}
	cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
	cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
}

/*
 * Loaded as CUDA_INJECTION64_PATH instead of preloaded, the driver calls this at cuInit (after
 * the constructor has run); the line tells when the client came in.
 */
__attribute__((visibility("default"))) int InitializeInjection(void);
int InitializeInjection(void)
{
	fprintf(out, "INJECTION\n");
	return 1;
}

/* Records still in CUPTI's buffers arrive through buffer_completed during the flush. */
__attribute__((destructor)) static void dump_end(void)
{
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	fprintf(out, "END\n");
	fflush(out);
}
