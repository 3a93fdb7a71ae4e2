/*
 * Unit tests of collector/ without a GPU: API names, the record translation from records built
 * here in CUDA 13 layouts, the buffer pool, and the attribution of records to a
 * window (with a record walker of our own in place of CUPTI's) down to the trace file.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collector/internal.h"
#include "common/clock.h"
#include "common/config.h"
#include "task.h"
#include "util/e2e.h"
#include "util/trace.h"

static const struct gprof_export_str *S(const char *s)
{
	return gprof_export_intern(s);
}

/* CUPTI names -> (entry point, public name), as TRACE_FORMAT.md asks. */
TEST(collector_clean_names)
{
	static const char *const cases[][3] = {
	    {"cudaLaunchKernel_v7000", "cudaLaunchKernel", "cudaLaunchKernel"},
	    {"__cudaLaunchKernel_v13000", "__cudaLaunchKernel", "cudaLaunchKernel"},
	    {"__cudaLaunchKernel_ptsz_v13000", "__cudaLaunchKernel_ptsz", "cudaLaunchKernel"},
	    {"cudaLaunchKernel_ptsz_v7000", "cudaLaunchKernel_ptsz", "cudaLaunchKernel"},
	    {"cudaMemcpyAsync_ptsz_v7000", "cudaMemcpyAsync_ptsz", "cudaMemcpyAsync"},
	    {"cudaMemcpy_ptds_v7000", "cudaMemcpy_ptds", "cudaMemcpy"},
	    {"cudaMalloc_v3020", "cudaMalloc", "cudaMalloc"},
	    {"cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2", "cuMemcpyHtoD"},
	    {"cuMemcpyHtoDAsync_v2_ptsz", "cuMemcpyHtoDAsync_v2_ptsz", "cuMemcpyHtoDAsync"},
	    {"cuLaunchKernel", "cuLaunchKernel", "cuLaunchKernel"},
	    {"cuLaunchKernelEx_ptsz", "cuLaunchKernelEx_ptsz", "cuLaunchKernelEx"},
	    {"cudaRuntimeApi#77", "cudaRuntimeApi#77", "cudaRuntimeApi#77"},
	    {"", "", ""},
	};
	char api[64], pub[64];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		gprof_coll_clean_name(cases[i][0], api, pub, sizeof(api));
		ASSERT_STR_EQ(api, cases[i][1]);
		ASSERT_STR_EQ(pub, cases[i][2]);
	}
	gprof_coll_clean_name("cudaLaunchKernel_v7000", api, pub, 5);
	ASSERT_STR_EQ(api, "cuda");
}

static CUptiResult CUPTIAPI fake_callback_name(CUpti_CallbackDomain d, uint32_t cbid,
					       const char **name)
{
	if (d == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == 4242) {
		*name = "cudaFancyCopy_ptsz_v12345";
		return CUPTI_SUCCESS;
	}
	return CUPTI_ERROR_INVALID_PARAMETER;
}

/* Names by callback id: the built-in table, CUPTI's own names, and made-up ones. */
TEST(collector_api_names)
{
	static const struct {
		bool driver;
		uint32_t cbid;
		const char *name, *api;
		unsigned launches;
	} cases[] = {
	    {false, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel",
	     "cudaLaunchKernel", GPROF_ACT_KERNEL},
	    {false, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000, "cudaLaunchKernel",
	     "__cudaLaunchKernel_ptsz", GPROF_ACT_KERNEL},
	    {false, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, "cudaLaunchKernelExC",
	     "cudaLaunchKernelExC", GPROF_ACT_KERNEL},
	    {false, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000, "cudaMemcpyAsync",
	     "cudaMemcpyAsync_ptsz", GPROF_ACT_MEMCPY},
	    {false, CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020, "cudaMemset", "cudaMemset",
	     GPROF_ACT_MEMSET},
	    {false, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc", "cudaMalloc", 0},
	    {false, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000, "cudaLaunchHostFunc",
	     "cudaLaunchHostFunc", 0},
	    {false, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, "cudaStreamSynchronize",
	     "cudaStreamSynchronize", 0},
	    {true, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", "cuLaunchKernel",
	     GPROF_ACT_KERNEL},
	    {true, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, "cuLaunchKernelEx", "cuLaunchKernelEx",
	     GPROF_ACT_KERNEL},
	    {true, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, "cuMemcpyHtoD", "cuMemcpyHtoD_v2",
	     GPROF_ACT_MEMCPY},
	    {true, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, "cuMemAlloc", "cuMemAlloc_v2", 0},
	    {false, 9999, "cudaRuntimeApi#9999", "cudaRuntimeApi#9999", 0},
	    {true, 99999, "cuDriverApi#99999", "cuDriverApi#99999", 0},
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const struct gprof_coll_api *a =
		    gprof_coll_api_name(cases[i].driver, cases[i].cbid);

		ASSERT_MSG(a->name == S(cases[i].name), "case %zu", i);
		ASSERT_MSG(a->api == S(cases[i].api), "case %zu", i);
		ASSERT_EQ(a->launches, cases[i].launches);
		ASSERT(gprof_coll_api_name(cases[i].driver, cases[i].cbid) == a);
	}
	/* With the loaded CUPTI's names: its name first, the table after. */
	gprof_coll_names_use(fake_callback_name);
	ASSERT(gprof_coll_api_name(false, 4242)->name == S("cudaFancyCopy"));
	ASSERT(gprof_coll_api_name(false, 4242)->api == S("cudaFancyCopy_ptsz"));
	ASSERT_EQ(gprof_coll_api_name(false, 4242)->launches, 0);
	ASSERT(gprof_coll_api_name(false, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020)->name ==
	       S("cudaFree"));
	gprof_coll_names_use(NULL);
}

/* Translates rec, a CUPTI record of any layout, into r; returns r's class. */
static enum gprof_coll_class translate(const void *rec, struct gprof_coll_rec *r)
{
	gprof_coll_translate(rec, r);
	return r->cls;
}

static bool have_demangler(void)
{
	return dlsym(RTLD_DEFAULT, "__cxa_demangle") != NULL;
}

TEST(collector_translate_api)
{
	CUpti_ActivityAPI a = {
	    .kind = CUPTI_ACTIVITY_KIND_RUNTIME,
	    .cbid = CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
	    .start = 1000,
	    .end = 1500,
	    .processId = 12,
	    .threadId = 0xdeadbeef,
	    .correlationId = 5,
	    .returnValue = 0,
	};
	struct gprof_coll_rec r;

	ASSERT_EQ(translate(&a, &r), GPROF_COLL_API);
	ASSERT_EQ(r.ev.kind, GPROF_EXPORT_RUNTIME);
	ASSERT_EQ(r.ev.ts_ns, 1000);
	ASSERT_EQ(r.ev.dur_ns, 500);
	ASSERT(r.ev.name == S("cudaLaunchKernel"));
	ASSERT(r.ev.u.api.api == S("__cudaLaunchKernel"));
	ASSERT_EQ(r.ev.u.api.cbid, 505);
	ASSERT_EQ(r.ev.correlation, 5);
	ASSERT_EQ(r.thread, 0xdeadbeef);
	ASSERT_EQ(r.launches, GPROF_ACT_KERNEL);
	ASSERT_EQ(r.ev.u.api.result, 0);
	ASSERT(r.ev.flags & GPROF_EXPORT_ARG_RESULT);
	ASSERT(!(r.ev.flags & GPROF_EXPORT_FLOW));

	/* A failed launch queues nothing; a driver call is a DRIVER event. */
	a.returnValue = 98;
	translate(&a, &r);
	ASSERT_EQ(r.launches, 0);
	ASSERT_EQ(r.ev.u.api.result, 98);
	a = (CUpti_ActivityAPI){.kind = CUPTI_ACTIVITY_KIND_DRIVER,
				.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
				.start = 7,
				.end = 9,
				.correlationId = 6};
	translate(&a, &r);
	ASSERT_EQ(r.ev.kind, GPROF_EXPORT_DRIVER);
	ASSERT(r.ev.name == S("cuLaunchKernelEx"));
	ASSERT_EQ(r.ev.u.api.cbid, 652);

	/* Untimed records are skipped. */
	a.start = 0;
	ASSERT_EQ(translate(&a, &r), GPROF_COLL_UNTIMED);
}

TEST(collector_translate_kernel)
{
	CUpti_ActivityKernel10 k = {
	    .kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
	    .registersPerThread = 40,
	    .start = 2000,
	    .end = 2600,
	    .completed = 2600,
	    .deviceId = 1,
	    .contextId = 2,
	    .streamId = 13,
	    .gridX = 3,
	    .gridY = 2,
	    .gridZ = 1,
	    .blockX = 128,
	    .blockY = 1,
	    .blockZ = 4,
	    .staticSharedMemory = 16,
	    .dynamicSharedMemory = 32,
	    .correlationId = 9,
	    .name = "_Z5scaleIfEvPT_i",
	};
	const char *name = have_demangler() ? "void scale<float>(float*, int)" : "_Z5scaleIfEvPT_i";
	struct gprof_coll_rec r;

	for (int pass = 0; pass < 2; pass++) {
		ASSERT_EQ(translate(&k, &r), GPROF_COLL_GPU);
		ASSERT_EQ(r.ev.kind, GPROF_EXPORT_KERNEL);
		ASSERT(r.ev.name == S(name));
		ASSERT_EQ(r.ev.ts_ns, 2000);
		ASSERT_EQ(r.ev.dur_ns, 600);
		ASSERT_EQ(r.ev.device, 1);
		ASSERT_EQ(r.ev.stream, 13);
		ASSERT_EQ(r.ev.correlation, 9);
		ASSERT_EQ(r.ev.u.kernel.grid[0] * 100 + r.ev.u.kernel.grid[1] * 10 +
			      r.ev.u.kernel.grid[2],
			  321);
		ASSERT_EQ(r.ev.u.kernel.block[0], 128);
		ASSERT_EQ(r.ev.u.kernel.block[2], 4);
		ASSERT_EQ(r.ev.u.kernel.registers, 40);
		ASSERT_EQ(r.ev.u.kernel.shared_bytes, 48);
		ASSERT_EQ(r.ev.u.kernel.context, 2);
		/* CUPTI reports KERNEL the same way when only that kind is on. */
		k.kind = CUPTI_ACTIVITY_KIND_KERNEL;
	}
	/* A name that is not mangled stays as it is; each distinct name is made once. */
	k.name = "triton_poi_fused_add_0";
	translate(&k, &r);
	ASSERT(r.ev.name == S("triton_poi_fused_add_0"));
	ASSERT(gprof_coll_kernel_name("triton_poi_fused_add_0") == r.ev.name);
	ASSERT(gprof_coll_kernel_name(NULL) == S(""));
	k.end = 0;
	ASSERT_EQ(translate(&k, &r), GPROF_COLL_UNTIMED);
}

TEST(collector_translate_copies_and_memory)
{
	CUpti_ActivityMemcpy6 c = {
	    .kind = CUPTI_ACTIVITY_KIND_MEMCPY,
	    .copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH,
	    .srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
	    .dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
	    .bytes = 4096,
	    .start = 10,
	    .end = 30,
	    .deviceId = 0,
	    .contextId = 1,
	    .streamId = 7,
	    .correlationId = 3,
	};
	CUpti_ActivityMemset4 s = {
	    .kind = CUPTI_ACTIVITY_KIND_MEMSET,
	    .bytes = 128,
	    .start = 40,
	    .end = 41,
	    .streamId = 14,
	    .correlationId = 4,
	    .memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
	};
	CUpti_ActivityMemory4 m = {
	    .kind = CUPTI_ACTIVITY_KIND_MEMORY2,
	    .memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
	    .memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
	    .address = 0x7f0000001000,
	    .bytes = 1 << 20,
	    .timestamp = 50,
	    .deviceId = 2,
	};
	CUpti_ActivityExternalCorrelation x = {.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};
	struct gprof_coll_rec r;

	ASSERT_EQ(translate(&c, &r), GPROF_COLL_GPU);
	ASSERT_EQ(r.ev.kind, GPROF_EXPORT_MEMCPY);
	ASSERT_EQ(r.ev.u.copy.copy_kind, GPROF_COPY_DTOH);
	ASSERT_EQ(r.ev.u.copy.src_kind, GPROF_MEM_DEVICE);
	ASSERT_EQ(r.ev.u.copy.dst_kind, GPROF_MEM_PINNED);
	ASSERT_EQ(r.ev.u.copy.bytes, 4096);
	ASSERT_EQ(r.ev.u.copy.context, 1);
	ASSERT_EQ(r.ev.stream, 7);
	ASSERT_EQ(r.ev.dur_ns, 20);
	ASSERT_EQ(r.ev.correlation, 3);

	translate(&s, &r);
	ASSERT_EQ(r.ev.kind, GPROF_EXPORT_MEMSET);
	ASSERT_EQ(r.ev.u.copy.dst_kind, GPROF_MEM_DEVICE);
	ASSERT_EQ(r.ev.u.copy.bytes, 128);
	ASSERT_EQ(r.ev.stream, 14);

	ASSERT_EQ(translate(&m, &r), GPROF_COLL_MEMORY);
	ASSERT_EQ(r.delta, 1 << 20);
	ASSERT_EQ(r.address, 0x7f0000001000);
	ASSERT_EQ(r.ev.device, 2);
	ASSERT_EQ(r.ev.ts_ns, 50);
	m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
	translate(&m, &r);
	ASSERT_EQ(r.delta, -(1 << 20));
	/* Pinned host memory is not the GPU's; untimed records are skipped. */
	m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
	ASSERT_EQ(translate(&m, &r), GPROF_COLL_OTHER);
	m.timestamp = 0;
	ASSERT_EQ(translate(&m, &r), GPROF_COLL_UNTIMED);
	c.start = 0;
	ASSERT_EQ(translate(&c, &r), GPROF_COLL_UNTIMED);
	ASSERT_EQ(translate(&x, &r), GPROF_COLL_OTHER);
}

/*
 * common/activity.h's tables reach every table made from them (issue #19): each word parses
 * to its bit, every bit but the host's is given by some CUPTI kind enabled for it, every CUPTI
 * kind has a decoder. Taking a row out of GPROF_CUPTI_KIND_TABLE fails here.
 */
TEST(collector_kind_tables)
{
	static const struct {
		const char *word;
		unsigned bit;
	} words[] = {
#define WORD(name, word, ...) {word, GPROF_ACT_##name},
	    GPROF_ACTIVITY_TABLE(WORD)
#undef WORD
	};
	static const struct {
		const char *name;
		CUpti_ActivityKind kind;
		unsigned gives, acts;
	} kinds[] = {
#define KIND(name, gives, acts, decoder, ...) {#name, CUPTI_ACTIVITY_KIND_##name, (gives), (acts)},
	    GPROF_CUPTI_KIND_TABLE(KIND)
#undef KIND
	};
	/* Big enough for any record layout; zeroed, so every timed kind comes out untimed. */
	union {
		CUpti_Activity rec;
		uint64_t bytes[128];
	} buf;
	unsigned given = 0;
	struct gprof_coll_rec r;

	ASSERT_EQ(ARRAY_SIZE(words), GPROF_ACT_BITS);
	for (size_t i = 0; i < ARRAY_SIZE(words); i++) {
		char entry[64];
		char *env[] = {entry, NULL};
		struct gprof_config cfg;

		snprintf(entry, sizeof(entry), "GPROF_ACTIVITIES=%s", words[i].word);
		ASSERT_MSG(gprof_config_load(&cfg, env) == 0, "%s", entry);
		ASSERT_MSG(cfg.activities == words[i].bit, "%s", entry);
	}
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		memset(&buf, 0, sizeof(buf));
		buf.rec.kind = kinds[i].kind;
		translate(&buf.rec, &r);
		ASSERT_MSG(r.cls != GPROF_COLL_UNKNOWN, "CUPTI kind %s has no decoder",
			   kinds[i].name);
		/* A kind gives only what it is enabled for. */
		ASSERT_MSG((kinds[i].gives & kinds[i].acts) == kinds[i].gives || !kinds[i].acts,
			   "CUPTI kind %s", kinds[i].name);
		given |= kinds[i].acts & kinds[i].gives;
	}
	for (size_t i = 0; i < ARRAY_SIZE(words); i++)
		ASSERT_MSG((given | GPROF_ACT_HOST) & words[i].bit,
			   "GPROF_ACTIVITIES=%s: no CUPTI kind enabled for it gives it",
			   words[i].word);
	ASSERT_EQ(given & GPROF_ACT_HOST, 0);
	/* A kind without a row is ignored, not guessed at. */
	memset(&buf, 0, sizeof(buf));
	buf.rec.kind = CUPTI_ACTIVITY_KIND_MARKER;
	ASSERT_EQ(translate(&buf.rec, &r), GPROF_COLL_UNKNOWN);
}

/* libgprof's own external correlation kind only, and the ids it gives API and GPU events. */
TEST(collector_translate_external)
{
	CUpti_ActivityExternalCorrelation x = {
	    .kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
	    .externalKind = GPROF_COLL_EXTERNAL_KIND,
	    .externalId = 7,
	    .correlationId = 9,
	};
	struct gprof_export_event kernel = {.kind = GPROF_EXPORT_KERNEL, .correlation = 9};
	struct gprof_export_event api = {.kind = GPROF_EXPORT_RUNTIME, .correlation = 9};
	struct gprof_export_event copy = {.kind = GPROF_EXPORT_MEMCPY, .correlation = 10};
	struct gprof_coll_rec r;

	ASSERT_EQ(translate(&x, &r), GPROF_COLL_EXTERNAL);
	ASSERT_EQ(r.ev.correlation, 9);
	ASSERT_EQ(r.external, 7);
	x.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0; /* Kineto's */
	ASSERT_EQ(translate(&x, &r), GPROF_COLL_OTHER);
	x.externalKind = GPROF_COLL_EXTERNAL_KIND;
	x.externalId = 0;
	ASSERT_EQ(translate(&x, &r), GPROF_COLL_OTHER);

	/* a user annotation's kind, on a stack of its own */
	x.externalKind = GPROF_COLL_ANNOTATION_KIND;
	x.externalId = 5;
	ASSERT_EQ(translate(&x, &r), GPROF_COLL_EXTERNAL);
	ASSERT(r.annotation);
	ASSERT_EQ(r.external, 5);

	gprof_coll_external_note(9, false, 7);
	gprof_coll_external_note(9, true, 5);
	gprof_coll_external_apply(&kernel);
	gprof_coll_external_apply(&api);
	gprof_coll_external_apply(&copy);
	ASSERT_EQ(kernel.u.kernel.external, 7);
	ASSERT_EQ(kernel.u.kernel.annotation, 5);
	ASSERT_EQ(api.u.api.external, 7);
	ASSERT_EQ(copy.u.copy.external, 0);
	ASSERT_EQ(copy.u.copy.annotation, 0);
	/* a much later call in the same slot: the old one is forgotten, not misattributed */
	gprof_coll_external_note(9 + GPROF_COLL_EXTERNAL_SLOTS, false, 8);
	gprof_coll_external_apply(&kernel);
	ASSERT_EQ(kernel.u.kernel.external, 0);
	ASSERT_EQ(kernel.u.kernel.annotation, 0);
}

static void *request_one(void *size)
{
	uint8_t *b;
	size_t max;

	gprof_coll_buffer_request(&b, size, &max);
	return b;
}

/*
 * The pool: a thread's first buffer is small and its later ones big, all within the cap (small
 * ones once no big one fits), then the discard buffers, then none; completed ones in order, each
 * back to its own kind.
 */
TEST(collector_buffers)
{
	enum {
		MAX = 64
	};
	uint8_t *b[MAX];
	size_t size[MAX], max, pooled = 0, other_size;
	struct gprof_coll_buf got;
	pthread_t other;
	void *other_buf;
	int n;

	ASSERT_EQ(gprof_coll_buffers_init(2 * GPROF_COLL_BUF_BYTES), 0);
	for (n = 0; n < MAX; n++) {
		gprof_coll_buffer_request(&b[n], &size[n], &max);
		ASSERT_EQ((uintptr_t)b[n] % 8, 0);
		if (!b[n])
			break;
	}
	ASSERT_EQ(size[0], GPROF_COLL_SMALL_BYTES);
	ASSERT_EQ(size[1], GPROF_COLL_BUF_BYTES);
	/* The second big one is over the cap: small ones fill it, then 4 discard buffers. */
	ASSERT_EQ(n,
		  2 + (GPROF_COLL_BUF_BYTES - GPROF_COLL_SMALL_BYTES) / GPROF_COLL_SMALL_BYTES + 4);
	for (int i = 0; i < n - 4; i++)
		pooled += size[i];
	ASSERT_EQ(pooled, 2 * GPROF_COLL_BUF_BYTES);
	ASSERT_EQ(size[n], 0);
	ASSERT(!gprof_coll_buffers_take(&got));
	for (int i = 0; i < n; i++)
		gprof_coll_buffer_complete(NULL, 0, b[i], size[i], (size_t)i * 8);
	for (int i = 0; i < n; i++) {
		ASSERT(gprof_coll_buffers_take(&got));
		ASSERT(got.buf == b[i]);
		ASSERT_EQ(got.valid, (size_t)i * 8);
		ASSERT_EQ(got.discard, i >= n - 4);
		ASSERT_EQ(got.small, i != 1 && i < n - 4);
		gprof_coll_buffers_give_back(&got);
	}
	ASSERT(!gprof_coll_buffers_take(&got));
	/* What came back is handed out again: the big one here, a small one to a new thread. */
	gprof_coll_buffer_request(&b[0], &size[0], &max);
	ASSERT(b[0] == b[1]);
	ASSERT_EQ(pthread_create(&other, NULL, request_one, &other_size), 0);
	ASSERT_EQ(pthread_join(other, &other_buf), 0);
	ASSERT_EQ(other_size, GPROF_COLL_SMALL_BYTES);
	ASSERT(other_buf == b[n - 5]);
}

/*
 * Attribution: the records of a small program, in the order CUPTI's buffers could bring them,
 * walked by a stand-in for cuptiActivityGetNextRecord.
 */
struct fake_buf {
	const void *recs[16];
	size_t n;
};

static CUptiResult CUPTIAPI fake_next(uint8_t *buf, size_t valid, CUpti_Activity **rec)
{
	const struct fake_buf *b = (const struct fake_buf *)buf;
	size_t i = 0;

	(void)valid;
	while (*rec && i < b->n && b->recs[i] != *rec)
		i++;
	i = *rec ? i + 1 : 0;
	if (i >= b->n)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*rec = (CUpti_Activity *)b->recs[i];
	return CUPTI_SUCCESS;
}

/* CUPTI as attrib.c sees it: a record walker over a struct fake_buf. */
static const struct gprof_cupti fake_cupti = {.next_record = fake_next};

#define T0 1751410836000000000ull

static CUpti_ActivityAPI api_rec(uint32_t cbid, uint32_t corr, uint64_t start)
{
	return (CUpti_ActivityAPI){.kind = CUPTI_ACTIVITY_KIND_RUNTIME,
				   .cbid = cbid,
				   .start = start,
				   .end = start + 100,
				   .threadId = 4242,
				   .correlationId = corr};
}

static CUpti_ActivityKernel10 kernel_rec(uint32_t corr, uint64_t start)
{
	return (CUpti_ActivityKernel10){.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
					.start = start,
					.end = start + 50,
					.streamId = 13,
					.gridX = 1,
					.gridY = 1,
					.gridZ = 1,
					.blockX = 32,
					.blockY = 1,
					.blockZ = 1,
					.correlationId = corr,
					.name = "k"};
}

static void walk(const struct fake_buf *b)
{
	struct gprof_coll_buf cb = {.buf = (uint8_t *)b, .valid = b->n};

	gprof_coll_attrib_buffer(&cb);
}

static int count_with(const struct trace *t, const char *ph, const char *cat, long long corr)
{
	size_t i;
	json_t *ev;
	int n = 0;

	json_array_foreach(t->events, i, ev)
	{
		json_t *c = json_object_get(json_object_get(ev, "args"), "correlation");

		if (!strcmp(trace_str(ev, "ph"), ph) &&
		    (!cat || !strcmp(trace_str(ev, "cat"), cat)) &&
		    (ph[0] == 'X' ? json_integer_value(c)
				  : json_integer_value(json_object_get(ev, "id"))) == corr)
			n++;
	}
	return n;
}

static long long tid_of(const struct trace *t, long long corr)
{
	size_t i;
	json_t *ev;

	json_array_foreach(t->events, i, ev)
	{
		json_t *c = json_object_get(json_object_get(ev, "args"), "correlation");

		if (!strcmp(trace_str(ev, "cat"), "cuda_runtime") && json_integer_value(c) == corr)
			return json_integer_value(json_object_get(ev, "tid"));
	}
	return -1;
}

static void load_only_trace(const char *dir, struct trace *t)
{
	char path[PATH_MAX * 2], why[512];
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	ASSERT(d);
	while ((de = readdir(d))) {
		if (!strstr(de->d_name, ".pt.trace.json.gz"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		n++;
	}
	closedir(d);
	ASSERT_EQ(n, 1);
	ASSERT_MSG(trace_load(path, t, why, sizeof(why)) == 0, "%s", why);
	ASSERT_MSG(trace_check(t, why, sizeof(why)) == 0, "%s", why);
	unlink(path);
}

/*
 * Export into dir (a mkdtemp template) with one window open, attributed by window slot 0 from
 * begin_ns on, records of the acts kinds taken from fake buffers; the window's export id.
 */
static uint32_t open_window(char *dir, unsigned acts, uint64_t begin_ns)
{
	struct gprof_export_config cfg = {
	    .output = dir, .gzip_level = 1, .buffer_bytes = 1 << 20, .base_ns = T0};
	struct gprof_export_window_info info = {.schedule = "test", .begin_ns = begin_ns};
	uint32_t id;

	ASSERT(mkdtemp(dir));
	ASSERT_EQ(gprof_export_init(&cfg), 0);
	ASSERT_EQ(gprof_export_window_open(&info, &id), 0);
	ASSERT_EQ(gprof_coll_attrib_init(gprof_coll.wins, &fake_cupti, acts), 0);
	gprof_coll.wins[0] = (struct gprof_coll_win){.id = id};
	return id;
}

/* Releases window id and loads its file, written within wait_ms, from dir into t. */
static void window_trace(uint32_t id, unsigned wait_ms, const char *dir, struct trace *t)
{
	gprof_export_window_release(id);
	ASSERT_EQ(gprof_export_window_wait(id, wait_ms), 0);
	load_only_trace(dir, t);
}

/* After window_trace: frees t, shuts the export down and removes dir. */
static void window_done(const char *dir, struct trace *t)
{
	trace_free(t);
	gprof_export_shutdown(5000);
	rmdir(dir);
}

TEST(collector_attribution)
{
	const uint64_t begin = T0 + 1000000, end = T0 + 9000000;
	/* Calls: 10 launch (GPU first), 11 launch (API first), 12 malloc, 13 launch before the
	 * window, 14 sync whose GPU record is not a launch's, 15 launch whose kernel never comes,
	 * 16 launch after the window. */
	CUpti_ActivityAPI a10 = api_rec(211, 10, begin + 100), a11 = api_rec(211, 11, begin + 300),
			  a12 = api_rec(20, 12, begin + 500), a13 = api_rec(211, 13, begin - 500),
			  a14 = api_rec(131, 14, begin + 700), a15 = api_rec(211, 15, begin + 900),
			  a16 = api_rec(211, 16, end + 10);
	CUpti_ActivityKernel10 k10 = kernel_rec(10, begin + 200), k11 = kernel_rec(11, begin + 400),
			       k13 = kernel_rec(13, begin + 100), k14 = kernel_rec(14, begin + 800),
			       k16 = kernel_rec(16, end + 20);
	struct fake_buf gpu = {{&k10, &k13, &k16}, 3};
	struct fake_buf host = {{&a13, &a10, &a11, &a12, &a14, &a15, &a16}, 7};
	struct fake_buf late = {{&k11, &k14}, 2};
	struct gprof_coll_win *w = &gprof_coll.wins[0];
	char dir[] = "/tmp/gprof-test-collector-XXXXXX";
	uint32_t id = open_window(dir, GPROF_ACT_KERNEL | GPROF_ACT_API, begin);
	struct trace t;

	/* This thread says who it is; CUPTI's other thread ids stay as they are. */
	a12.threadId = (uint32_t)(uintptr_t)pthread_self();
	gprof_collector_note_thread(777);

	walk(&gpu);
	/* The window ends (SAVE) before any record of a call made after it exists. */
	gprof_export_window_end(w->id, end);
	walk(&host);
	ASSERT_EQ(w->pending, 2); /* 11 and 15 wait for their kernels */
	walk(&late);
	ASSERT_EQ(w->pending, 1);
	gprof_coll_attrib_finish(w);
	ASSERT_EQ(w->unlinked, 1); /* k14 */
	window_trace(id, 20000, dir, &t);

	/* Linked pairs, each once, both ways round. */
	for (long long c = 10; c <= 11; c++) {
		ASSERT_EQ(count_with(&t, "X", "cuda_runtime", c), 1);
		ASSERT_EQ(count_with(&t, "X", "kernel", c), 1);
		ASSERT_EQ(count_with(&t, "s", NULL, c), 1);
		ASSERT_EQ(count_with(&t, "f", NULL, c), 1);
	}
	/* Calls without GPU work, or whose work never came: written, unlinked. */
	ASSERT_EQ(count_with(&t, "X", "cuda_runtime", 12) + count_with(&t, "X", "cuda_runtime", 15),
		  2);
	ASSERT_EQ(count_with(&t, "s", NULL, 15), 0);
	/* GPU work whose call queued no work CUPTI knows of: placed by correlation, unlinked. */
	ASSERT_EQ(count_with(&t, "X", "kernel", 14), 1);
	ASSERT_EQ(count_with(&t, "f", NULL, 14), 0);
	/* Outside the window: neither the calls nor their work. */
	for (long long c = 13; c <= 16; c += 3) {
		ASSERT_EQ(count_with(&t, "X", "cuda_runtime", c), 0);
		ASSERT_EQ(count_with(&t, "X", "kernel", c), 0);
	}
	ASSERT_EQ(tid_of(&t, 10), 4242);
	ASSERT_EQ(tid_of(&t, 12), 777);
	window_done(dir, &t);
}

/*
 * With CUPTI naming threads by gettid() its ids are kernel tids, taken as they are: the id
 * that equals this thread's pthread_self() key is not mapped to the tid the thread noted.
 */
TEST(collector_system_tids)
{
	const uint64_t begin = T0 + 1000000;
	CUpti_ActivityAPI a12 = api_rec(20, 12, begin + 500);
	struct fake_buf host = {{&a12}, 1};
	struct gprof_coll_win *w = &gprof_coll.wins[0];
	char dir[] = "/tmp/gprof-test-collector-XXXXXX";
	uint32_t id = open_window(dir, GPROF_ACT_API, begin);
	struct trace t;

	gprof_coll_attrib_system_tids(true);
	gprof_export_window_end(w->id, begin + 1000);
	a12.threadId = (uint32_t)(uintptr_t)pthread_self();
	gprof_collector_note_thread(777);

	walk(&host);
	gprof_coll_attrib_finish(w);
	window_trace(id, 20000, dir, &t);
	ASSERT_EQ(count_with(&t, "X", "cuda_runtime", 12), 1);
	ASSERT_EQ(tid_of(&t, 12), (long long)a12.threadId);
	window_done(dir, &t);
}

/*
 * libgprof's own calls are told apart by thread and time however late their records come,
 * also once newer own calls have begun; and a GPU record from before the window's calls whose
 * launch record never comes is written as earlier work where it ran in the window's span, as
 * it is when its launch record comes first.
 */
TEST(collector_own_calls_and_orphans)
{
	const uint64_t begin = gprof_realtime_ns() - 1000000000ull;
	uint32_t me = (uint32_t)syscall(SYS_gettid);
	CUpti_ActivityAPI own1, program, own2;
	CUpti_ActivityKernel10 orphan = kernel_rec(5, begin + 100);
	struct fake_buf host = {{&own1, &program, &own2}, 3}, gpu = {{&orphan}, 1};
	struct gprof_coll_win *w = &gprof_coll.wins[0];
	char dir[] = "/tmp/gprof-test-collector-XXXXXX";
	uint32_t id = open_window(dir, GPROF_ACT_KERNEL | GPROF_ACT_API, begin);
	struct trace t;

	gprof_coll_attrib_system_tids(true);
	gprof_collector_own_calls(true);
	own1 = api_rec(20, 21, gprof_realtime_ns());
	gprof_collector_own_calls(false);
	program = api_rec(20, 22, gprof_realtime_ns());
	gprof_collector_own_calls(true); /* still open when the records are read */
	own2 = api_rec(20, 23, gprof_realtime_ns());
	own1.threadId = program.threadId = own2.threadId = me;

	walk(&gpu);
	walk(&host);
	gprof_export_window_end(w->id, gprof_realtime_ns());
	gprof_collector_own_calls(false);
	gprof_coll_attrib_finish(w);
	ASSERT_EQ(w->unlinked, 0);
	window_trace(id, 20000, dir, &t);
	ASSERT_EQ(count_with(&t, "X", "cuda_runtime", 21), 0);
	ASSERT_EQ(count_with(&t, "X", "cuda_runtime", 22), 1);
	ASSERT_EQ(count_with(&t, "X", "cuda_runtime", 23), 0);
	ASSERT_EQ(count_with(&t, "X", "kernel", 5), 0);
	ASSERT_EQ(e2e_count(&t, "gpu_earlier", "k"), 1);
	window_done(dir, &t);
}

static CUpti_ActivitySynchronization2 sync_rec(CUpti_ActivitySynchronizationType type,
					       uint32_t corr, uint32_t stream, uint64_t event_sync,
					       uint64_t start)
{
	return (CUpti_ActivitySynchronization2){
	    .kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
	    .type = type,
	    .start = start,
	    .end = start + 50,
	    .correlationId = corr,
	    .contextId = 7,
	    .streamId = stream,
	    .cudaEventId = event_sync == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? event_sync : 3,
	    .cudaEventSyncId = event_sync,
	};
}

/* The cuda_sync event of a correlation id: one, or the test fails. */
static const json_t *sync_of(const struct trace *t, long long corr)
{
	const json_t *found = NULL, *ev;
	size_t i;

	json_array_foreach(t->events, i, ev)
	{
		if (strcmp(trace_str(ev, "cat"), "cuda_sync") ||
		    json_integer_value(
			json_object_get(json_object_get(ev, "args"), "correlation")) != corr)
			continue;
		ASSERT_MSG(!found, "two cuda_sync events of correlation %lld", corr);
		found = ev;
	}
	ASSERT_MSG(found, "no cuda_sync event of correlation %lld", corr);
	return found;
}

static long long arg_of(const json_t *ev, const char *key)
{
	const json_t *v = json_object_get(json_object_get(ev, "args"), key);

	ASSERT_MSG(json_is_integer(v), "no integer args.%s", key);
	return json_integer_value(v);
}

/*
 * CUPTI's synchronisation records become Kineto's cuda_sync events of the window their call
 * began in, on a lane beside the stream's track, on the device of their context; a wait on an
 * event names the stream and call that recorded it, also when that record comes later.
 */
TEST(collector_syncs)
{
	const uint64_t begin = T0 + 1000000, none = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
	CUpti_ActivityKernel10 k = kernel_rec(40, begin + 100);
	CUpti_ActivitySynchronization2
	    stream = sync_rec(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 41, 13, none,
			      begin + 200),
	    wait = sync_rec(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, 43, 13, 99,
			    begin + 600),
	    event = sync_rec(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, 44, none, 100,
			     begin + 700),
	    context = sync_rec(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 45, none,
			       none, begin + 800),
	    outside = sync_rec(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 46, none,
			       none, begin - 500);
	CUpti_ActivityCudaEvent2 recorded = {.kind = CUPTI_ACTIVITY_KIND_CUDA_EVENT,
					     .correlationId = 42,
					     .contextId = 7,
					     .streamId = 14,
					     .eventId = 3,
					     .deviceId = 2,
					     .cudaEventSyncId = 99};
	struct fake_buf first = {{&k, &stream, &wait, &event, &context, &outside}, 6};
	struct fake_buf later = {{&recorded}, 1};
	struct gprof_coll_win *w = &gprof_coll.wins[0];
	char dir[] = "/tmp/gprof-test-collector-XXXXXX";
	uint32_t id = open_window(dir, GPROF_ACT_KERNEL | GPROF_ACT_SYNC, begin);
	const json_t *ev;
	struct trace t;

	k.contextId = 7;
	k.deviceId = 2;
	walk(&first);
	walk(&later);
	gprof_export_window_end(w->id, begin + 1000);
	gprof_coll_attrib_finish(w);
	window_trace(id, 20000, dir, &t);

	ev = sync_of(&t, 41);
	ASSERT_STR_EQ(trace_str(ev, "name"), "Stream Sync");
	ASSERT_STR_EQ(trace_str(json_object_get(ev, "args"), "cuda_sync_kind"), "Stream Sync");
	ASSERT_EQ(arg_of(ev, "stream"), 13);
	ASSERT_EQ(arg_of(ev, "device"), 2);
	ASSERT_EQ(arg_of(ev, "context"), 7);
	ASSERT_EQ(json_integer_value(json_object_get(ev, "pid")), 2);
	ASSERT(json_integer_value(json_object_get(ev, "tid")) != 13); /* not the stream's track */
	ASSERT(!json_object_get(json_object_get(ev, "args"), "wait_on_stream"));

	ev = sync_of(&t, 43);
	ASSERT_STR_EQ(trace_str(ev, "name"), "Stream Wait Event");
	ASSERT_EQ(arg_of(ev, "wait_on_stream"), 14);
	ASSERT_EQ(arg_of(ev, "wait_on_cuda_event_record_corr_id"), 42);
	ASSERT_EQ(arg_of(ev, "wait_on_cuda_event_id"), 3);

	ev = sync_of(&t, 44); /* its event's record never came */
	ASSERT_STR_EQ(trace_str(ev, "name"), "Event Sync");
	ASSERT_EQ(arg_of(ev, "wait_on_stream"), -1);
	ASSERT_EQ(arg_of(ev, "wait_on_cuda_event_record_corr_id"), -1);
	ASSERT_EQ(arg_of(ev, "stream"), -1);

	ev = sync_of(&t, 45);
	ASSERT_STR_EQ(trace_str(ev, "name"), "Context Sync");
	ASSERT_EQ(arg_of(ev, "stream"), -1);
	ASSERT_EQ(count_with(&t, "X", "cuda_sync", 46), 0); /* before the window */
	window_done(dir, &t);
}

static CUpti_ActivityMemory4 memory_rec(bool alloc, uint64_t ts)
{
	return (CUpti_ActivityMemory4){
	    .kind = CUPTI_ACTIVITY_KIND_MEMORY2,
	    .memoryOperationType = alloc ? CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION
					 : CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE,
	    .memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
	    .address = 0x7f0000100000,
	    .bytes = 1 << 20,
	    .timestamp = ts,
	};
}

/*
 * One address allocated, released, allocated again and released (an allocator reusing it), the
 * allocations in one thread's buffer and the releases in another's, which comes later: the
 * gpu_memory counter follows time, without the opening's figure (from the allocations seen)
 * and with one taken between the first release and the second allocation (5 MiB: the first
 * pair is in it). A release that arrived after its address was allocated again was lost
 * (CI's TSan run: a counter 1 MiB too high from there on).
 */
static void memory_out_of_order(bool known)
{
	const uint64_t begin = T0 + 1000000, mib = 1 << 20;
	CUpti_ActivityMemory4 a1 = memory_rec(true, begin + 100),
			      f1 = memory_rec(false, begin + 200),
			      a2 = memory_rec(true, begin + 300),
			      f2 = memory_rec(false, begin + 400);
	struct fake_buf allocs = {{&a1, &a2}, 2}, releases = {{&f1, &f2}, 2};
	const struct gprof_memory_base figure = {
	    .device = 0, .bytes = 5 * mib, .ts_ns = begin + 250};
	/* the counter at begin (when the figure is known), +100, +200, +300, +400 */
	const long long want[2][5] = {{-1, mib, 0, mib, 0},
				      {5 * mib, 6 * mib, 5 * mib, 6 * mib, 5 * mib}};
	struct gprof_coll_win *w = &gprof_coll.wins[0];
	char dir[] = "/tmp/gprof-test-collector-XXXXXX";
	uint32_t id = open_window(dir, GPROF_ACT_MEMORY, begin);
	long long got[5] = {-1, -1, -1, -1, -1};
	struct trace t;
	size_t i;
	json_t *ev;
	int n = 0;

	gprof_coll_win_memory_base(w, known ? &figure : NULL);
	gprof_export_window_end(w->id, begin + 1000);
	walk(&allocs);
	walk(&releases);
	gprof_coll_attrib_finish(w);
	window_trace(id, 20000, dir, &t);
	json_array_foreach(t.events, i, ev)
	{
		long long at =
		    (long long)(json_number_value(json_object_get(ev, "ts")) * 1000.0 + 0.5) -
		    1000000;

		if (strcmp(trace_str(ev, "cat"), "gpu_memory"))
			continue;
		ASSERT_MSG(at >= 0 && at <= 400 && at % 100 == 0, "counter at +%lld", at);
		got[at / 100] =
		    json_integer_value(json_object_get(json_object_get(ev, "args"), "allocated"));
		n++;
	}
	ASSERT_EQ(n, known ? 5 : 4);
	for (int k = 0; k < 5; k++)
		ASSERT_MSG(got[k] == want[known][k], "at +%d00 %lld, not %lld", k, got[k],
			   want[known][k]);
	window_done(dir, &t);
}

TEST(collector_memory_out_of_order)
{
	memory_out_of_order(false);
}

TEST(collector_memory_out_of_order_with_figure)
{
	memory_out_of_order(true);
}

/* A launch waiting for its GPU record is kept short: made again, it is the same event. */
TEST(collector_api_pack_roundtrip)
{
	const CUpti_ActivityAPI recs[] = {
	    {.kind = CUPTI_ACTIVITY_KIND_RUNTIME,
	     .cbid = CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
	     .start = T0 + 10,
	     .end = T0 + 7000000000ull, /* a launch that blocked for 7 s */
	     .threadId = 0xfeedf00d,
	     .correlationId = 4000000000u},
	    {.kind = CUPTI_ACTIVITY_KIND_DRIVER,
	     .cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
	     .start = T0,
	     .end = T0 + 1,
	     .threadId = 1,
	     .correlationId = 1},
	};

	for (size_t i = 0; i < ARRAY_SIZE(recs); i++) {
		struct gprof_coll_held_api held;
		struct gprof_export_event ev;
		struct gprof_coll_rec r;

		ASSERT_EQ(translate(&recs[i], &r), GPROF_COLL_API);
		r.ev.tid = 31337; /* attribution names the thread before it holds the launch */
		gprof_coll_api_pack(&r.ev, &held);
		memset(&ev, 0xa5, sizeof(ev));
		gprof_coll_api_unpack(&held, recs[i].correlationId, &ev);
		ASSERT_EQ(ev.kind, r.ev.kind);
		ASSERT_EQ(ev.ts_ns, recs[i].start);
		ASSERT_EQ(ev.dur_ns, recs[i].end - recs[i].start);
		ASSERT(ev.name == r.ev.name);
		ASSERT_EQ(ev.tid, 31337);
		ASSERT_EQ(ev.correlation, recs[i].correlationId);
		ASSERT_EQ(ev.flags, r.ev.flags);
		ASSERT(ev.u.api.api == r.ev.u.api.api);
		ASSERT_EQ(ev.u.api.cbid, recs[i].cbid);
		ASSERT_EQ(ev.u.api.result, 0);
		ASSERT(ev.u.api.kernel == NULL && ev.u.api.stream == 0 && ev.u.api.bytes == 0);
	}
}

/*
 * The held tables grow within half of the collector's budget and leave the other half to
 * CUPTI's buffers; a reset gives back all but the first size.
 */
TEST(collector_held_budget)
{
	static struct gprof_coll_held h; /* static: what it holds stays reachable to the end */
	const size_t cap = 8u << 20;
	size_t n = 0;

	ASSERT_EQ(gprof_coll_buffers_init(cap), 0);
	ASSERT_EQ(gprof_coll_held_init(&h), 0);
	while (gprof_coll_held_alloc(&h, GPROF_COLL_HELD_GPU))
		n++;
	ASSERT_EQ(gprof_coll_held_count(&h, GPROF_COLL_HELD_GPU), n);
	ASSERT_LE(n * sizeof(struct gprof_coll_held_gpu), cap / 2);
	ASSERT_GE(n * sizeof(struct gprof_coll_held_gpu), cap / 8);
	/* The other half is there for the buffers, and no more. */
	ASSERT(gprof_coll_mem_take(cap / 2));
	ASSERT(!gprof_coll_mem_take(cap / 4));
	gprof_coll_mem_give(cap / 2);
	/* Launches still find room in their own table, up to what is left of the half. */
	ASSERT(gprof_coll_held_alloc(&h, GPROF_COLL_HELD_API));
	gprof_coll_held_reset(&h);
	ASSERT_EQ(gprof_coll_held_count(&h, GPROF_COLL_HELD_GPU), 0);
	ASSERT_EQ(gprof_coll_held_count(&h, GPROF_COLL_HELD_API), 0);
	ASSERT(gprof_coll_mem_take(cap / 8 * 7));
}

/* A stand-in for cuptiActivityGetNextRecord over an array of record pointers, O(1) a step. */
struct seq_buf {
	const void **recs;
	size_t n, next;
};

static CUptiResult CUPTIAPI seq_next(uint8_t *buf, size_t valid, CUpti_Activity **rec)
{
	struct seq_buf *b = (struct seq_buf *)buf;

	(void)valid;
	if (!*rec)
		b->next = 0;
	if (b->next >= b->n)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*rec = (CUpti_Activity *)b->recs[b->next++];
	return CUPTI_SUCCESS;
}

static const struct gprof_cupti seq_cupti = {.next_record = seq_next};

static void walk_seq(const void **recs, size_t n)
{
	struct seq_buf b = {.recs = recs, .n = n};
	struct gprof_coll_buf cb = {.buf = (uint8_t *)&b, .valid = n};

	gprof_coll_attrib_buffer(&cb);
}

/* Per correlation id: launch events, kernel events, flow starts and ends in the trace. */
struct tally {
	uint8_t api, gpu, s, f;
};

static void tally_trace(const struct trace *t, struct tally *by_corr, size_t n)
{
	size_t i;
	json_t *ev;

	json_array_foreach(t->events, i, ev)
	{
		const char *ph = trace_str(ev, "ph"), *cat = trace_str(ev, "cat");
		long long c =
		    json_integer_value(json_object_get(json_object_get(ev, "args"), "correlation"));

		if (ph[0] == 's' || ph[0] == 'f')
			c = json_integer_value(json_object_get(ev, "id"));
		else if (strcmp(cat, "cuda_runtime") && strcmp(cat, "kernel"))
			continue;
		ASSERT_MSG(c >= 1 && (size_t)c <= n, "event %zu: correlation %lld", i, c);
		if (ph[0] == 's')
			by_corr[c - 1].s++;
		else if (ph[0] == 'f')
			by_corr[c - 1].f++;
		else if (!strcmp(cat, "kernel"))
			by_corr[c - 1].gpu++;
		else
			by_corr[c - 1].api++;
	}
}

/* A window of its own for records made up by a test, with a collector budget of `budget`. */
struct made_up {
	char dir[64];
	uint32_t id;
	CUpti_ActivityAPI *a; /* a[c - 1]: the launch of correlation id c */
	CUpti_ActivityKernel10 *k;
	const void **recs;
	uint32_t n;
};

static void made_up_begin(struct made_up *m, size_t budget, uint32_t n)
{
	struct gprof_export_config cfg = {
	    .gzip_level = 1, .buffer_bytes = 256u << 20, .base_ns = T0};
	struct gprof_export_window_info info = {.schedule = "test", .begin_ns = T0};

	*m = (struct made_up){.dir = "/tmp/gprof-test-collector-XXXXXX", .n = n};
	m->a = calloc(n, sizeof(*m->a));
	m->k = calloc(n, sizeof(*m->k));
	m->recs = calloc(n, sizeof(*m->recs));
	ASSERT(m->a && m->k && m->recs && mkdtemp(m->dir));
	cfg.output = m->dir;
	ASSERT_EQ(gprof_export_init(&cfg), 0);
	ASSERT_EQ(gprof_export_window_open(&info, &m->id), 0);
	ASSERT_EQ(gprof_coll_buffers_init(budget), 0);
	ASSERT_EQ(
	    gprof_coll_attrib_init(gprof_coll.wins, &seq_cupti, GPROF_ACT_KERNEL | GPROF_ACT_API),
	    0);
	gprof_coll.wins[0] = (struct gprof_coll_win){.id = m->id};
	/* 32 threads launching on a stream each, 1 us apart. */
	for (uint32_t c = 1; c <= n; c++) {
		m->a[c - 1] = api_rec(211, c, T0 + c * 1000ull);
		m->a[c - 1].threadId = 100 + c % 32;
		m->k[c - 1] = kernel_rec(c, T0 + c * 1000ull + 600);
		m->k[c - 1].streamId = 13 + c % 32;
	}
}

/* The launches (api) or kernels of correlation ids [from, to], of threads t % 32 == thread. */
static void made_up_walk(struct made_up *m, bool api, uint32_t from, uint32_t to, int thread)
{
	size_t n = 0;

	for (uint32_t c = from; c <= to; c++)
		if (thread < 0 || c % 32 == (uint32_t)thread)
			m->recs[n++] =
			    api ? (const void *)&m->a[c - 1] : (const void *)&m->k[c - 1];
	walk_seq(m->recs, n);
}

/* Finishes the window; its counters, and the trace's tally per correlation id in by_corr. */
static struct gprof_coll_win made_up_end(struct made_up *m, struct tally *by_corr)
{
	struct gprof_coll_win got;
	struct trace t;

	gprof_coll_attrib_finish(&gprof_coll.wins[0]);
	got = gprof_coll.wins[0];
	window_trace(m->id, 60000, m->dir, &t);
	tally_trace(&t, by_corr, m->n);
	window_done(m->dir, &t);
	free(m->a);
	free(m->k);
	free(m->recs);
	return got;
}

/*
 * Records in the orders CUDA 13's per-thread buffers bring them under load: for ids
 * [1, split] every kernel first and then each thread's launches in a block of its own (API
 * records wait in their thread's buffer); after that each launch first and its kernel later
 * (the GPU behind).
 */
static struct gprof_coll_win run_load(size_t budget, uint32_t n, uint32_t split,
				      struct tally *by_corr)
{
	struct made_up m;

	made_up_begin(&m, budget, n);
	made_up_walk(&m, false, 1, split, -1);
	for (int thread = 0; thread < 32; thread++)
		made_up_walk(&m, true, 1, split, thread);
	made_up_walk(&m, true, split + 1, n, -1);
	made_up_walk(&m, false, split + 1, n, -1);
	return made_up_end(&m, by_corr);
}

/* Fixed bug 1 of docs/RELIABILITY.md: tens of thousands waiting are all written, all linked. */
TEST(collector_attribution_load)
{
	enum {
		N = 40000
	};
	struct tally *by = calloc(N, sizeof(*by));
	struct gprof_coll_win w;

	ASSERT(by);
	w = run_load(64u << 20, N, N / 2, by);
	for (size_t c = 0; c < N; c++)
		ASSERT_MSG(by[c].api == 1 && by[c].gpu == 1 && by[c].s == 1 && by[c].f == 1,
			   "correlation %zu: %d launches, %d kernels, %d s, %d f", c + 1, by[c].api,
			   by[c].gpu, by[c].s, by[c].f);
	ASSERT_EQ(w.pending, 0);
	ASSERT_EQ(w.unheld, 0);
	ASSERT_EQ(w.unlinked, 0);
	ASSERT_EQ(w.dropped, 0);
	free(by);
}

/*
 * A budget too small to hold what waits: still every launch and kernel once, every flow whole,
 * and each event written without its link counted once (unheld, or pending/unlinked when it
 * waited until the window finished).
 */
TEST(collector_attribution_held_limit)
{
	enum {
		N = 12000
	};
	struct tally *by = calloc(N, sizeof(*by));
	struct gprof_coll_win w;
	long long linked = 0;

	ASSERT(by);
	w = run_load(256u << 10, N, N / 2, by);
	for (size_t c = 0; c < N; c++) {
		ASSERT_MSG(by[c].api == 1 && by[c].gpu == 1 && by[c].s == by[c].f && by[c].s <= 1,
			   "correlation %zu: %d launches, %d kernels, %d s, %d f", c + 1, by[c].api,
			   by[c].gpu, by[c].s, by[c].f);
		linked += by[c].s;
	}
	ASSERT_LT(linked, N);
	ASSERT_GT(w.unheld, 0);
	ASSERT_EQ(w.unheld + w.pending + w.unlinked + w.no_gpu, 2 * (N - linked));
	ASSERT_EQ(w.dropped, 0);
	free(by);
}

/*
 * Under a budget too small for what waits, records whose partner was lost (CUPTI dropped it)
 * are let go once they are old enough, so that the tables do not stay full of them.
 */
TEST(collector_attribution_expiry)
{
	/* Lost: the launches of 2..2000, the kernels of 2101..5100. */
	enum {
		LOST_API = 2000,
		WHOLE = 2100,
		LOST_GPU = 5100,
		N = 5200
	};
	struct tally *by = calloc(N, sizeof(*by));
	long long alone = 0;
	struct gprof_coll_win w;
	struct made_up m;
	struct gprof_coll_held *held = gprof_coll_attrib_held();

	ASSERT(by);
	made_up_begin(&m, 256u << 10, N);
	made_up_walk(&m, true, 1, 1, -1);
	made_up_walk(&m, false, 1, LOST_API, -1);
	made_up_walk(&m, true, LOST_API + 1, WHOLE, -1);
	ASSERT(gprof_coll_held_refused(held, false));
	ASSERT_GT(gprof_coll_held_count(held, GPROF_COLL_HELD_GPU), 0);
	/* Too young yet: nothing goes. 1 s later, with later launches seen, the kernels do. */
	gprof_coll_attrib_expire(5000, 2000);
	ASSERT_GT(gprof_coll_held_count(held, GPROF_COLL_HELD_GPU), 0);
	gprof_coll_attrib_expire(6100, 2000);
	ASSERT_EQ(gprof_coll_held_count(held, GPROF_COLL_HELD_GPU), 0);
	ASSERT_EQ(gprof_coll_held_count(held, GPROF_COLL_HELD_API), WHOLE - LOST_API);
	made_up_walk(&m, false, LOST_API + 1, WHOLE, -1);
	made_up_walk(&m, true, WHOLE + 1, N, -1);
	ASSERT(gprof_coll_held_refused(held, false));
	ASSERT_GT(gprof_coll_held_count(held, GPROF_COLL_HELD_API), 0);
	/* The last kernels come; 2 s after the launches were seen, theirs are given up. */
	made_up_walk(&m, false, LOST_GPU + 1, N, -1);
	gprof_coll_attrib_expire(7000, 2000);
	gprof_coll_attrib_expire(8500, 2000);
	ASSERT_GT(gprof_coll_held_count(held, GPROF_COLL_HELD_API), 0);
	gprof_coll_attrib_expire(9100, 2000);
	ASSERT_EQ(gprof_coll_held_count(held, GPROF_COLL_HELD_API), 0);
	ASSERT(!gprof_coll_held_refused(held, false));
	w = made_up_end(&m, by);
	for (size_t c = 1; c <= N; c++) {
		bool api = c == 1 || c > LOST_API, gpu = c <= WHOLE || c > LOST_GPU;

		ASSERT_MSG(by[c - 1].api == api && by[c - 1].gpu == gpu &&
			       by[c - 1].s == by[c - 1].f && by[c - 1].s <= (api && gpu),
			   "correlation %zu: %d launches, %d kernels, %d s, %d f", c, by[c - 1].api,
			   by[c - 1].gpu, by[c - 1].s, by[c - 1].f);
		alone += (by[c - 1].api + by[c - 1].gpu) * !by[c - 1].s;
	}
	/* Each launch or kernel written without its partner is counted once. */
	ASSERT_GE(alone, (LOST_API - 1) + (LOST_GPU - WHOLE));
	ASSERT_EQ(w.unheld + w.unlinked + w.no_gpu + w.pending, alone);
	ASSERT_EQ(w.pending, 0);
	free(by);
}
