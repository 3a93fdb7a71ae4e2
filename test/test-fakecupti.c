/*
 * Tests of the simulated CUPTI (test/fakecuda/libcupti.so.13 on libfakegpu.so): its documented
 * guarantees, and conformance of its buffers and answers with the real libcupti of the toolkit.
 */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/compiler.h"
#include "task.h"
#include "test/fakecuda/fakegpu.h"
#include "util/gtlog.h"
#include "util/proc.h"
#include "util/threads.h"

/* ---- loading the fake (and the real one) by path ---- */

#define CUPTI_FNS(X)                              \
	X(cuptiActivityEnable)                    \
	X(cuptiActivityDisable)                   \
	X(cuptiActivityRegisterCallbacks)         \
	X(cuptiActivityFlushAll)                  \
	X(cuptiActivityFlushPeriod)               \
	X(cuptiActivityGetNextRecord)             \
	X(cuptiActivityGetNumDroppedRecords)      \
	X(cuptiActivityPushExternalCorrelationId) \
	X(cuptiActivityPopExternalCorrelationId)  \
	X(cuptiActivitySetAttribute)              \
	X(cuptiActivityGetAttribute)              \
	X(cuptiSubscribe)                         \
	X(cuptiSubscribe_v2)                      \
	X(cuptiUnsubscribe)                       \
	X(cuptiEnableCallback)                    \
	X(cuptiEnableDomain)                      \
	X(cuptiGetCallbackState)                  \
	X(cuptiGetLastError)                      \
	X(cuptiGetResultString)                   \
	X(cuptiGetCallbackName)                   \
	X(cuptiActivityEnableRuntimeApi)          \
	X(cuptiActivityEnableDriverApi)           \
	X(cuptiActivityRegisterTimestampCallback) \
	X(cuptiGetTimestamp)                      \
	X(cuptiGetVersion)                        \
	X(cuptiGetDeviceId)                       \
	X(cuptiGetContextId)                      \
	X(cuptiSetThreadIdType)                   \
	X(cuptiGetThreadIdType)                   \
	X(cuptiFinalize)
#define CORE_FNS(X)                 \
	X(fakegpu_activity_emit)    \
	X(fakegpu_activity_enabled) \
	X(fakegpu_next_correlation) \
	X(fakegpu_thread_id)        \
	X(fakegpu_timestamp)        \
	X(fakegpu_callback)

#define MEMBER(f) __typeof__(&f) f;
static struct {
	CUPTI_FNS(MEMBER)
	CORE_FNS(MEMBER)
} fk;
static void *fake_handle;

#define LOAD(f)                                    \
	do {                                       \
		void *p_ = dlsym(fake_handle, #f); \
		ASSERT_MSG(p_, "%s", #f);          \
		memcpy(&fk.f, &p_, sizeof(p_));    \
	} while (0);

static void load_fake(void)
{
	const char *build = getenv("TEST_BUILD");
	char path[4096];

	ASSERT(build);
	snprintf(path, sizeof(path), "%s/fakecuda/libcupti.so.13", build);
	fake_handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	ASSERT_MSG(fake_handle, "%s", dlerror());
	CUPTI_FNS(LOAD)
	CORE_FNS(LOAD)
}

/* The toolkit's libcupti.so.13, by absolute path; NULL if the toolkit has none. */
static const char *real_cupti_path(void)
{
	static const char *const dirs[] = {"lib64", "lib", "extras/CUPTI/lib64"};
	static char path[4096];
	const char *home = getenv("CUDA_HOME") ? getenv("CUDA_HOME") : "/usr/local/cuda";

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s/libcupti.so.13", home, dirs[i]);
		if (access(path, R_OK) == 0)
			return path;
	}
	return NULL;
}

static void *load_real(void)
{
	const char *path = real_cupti_path();
	void *h;

	if (!path)
		SKIP("no libcupti.so.13 under $CUDA_HOME");
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	ASSERT_MSG(h, "%s", dlerror());
	return h;
}

/* ---- a CUPTI client that keeps every buffer it gets back ---- */

#define MAX_BUFS 512

struct got {
	uint8_t *buf;
	size_t size, valid;
	bool on_worker; /* completed on a thread other than the test's */
};

static struct {
	pthread_mutex_t mu;
	size_t size, max_records; /* what requests are answered with */
	int refuse_null, refuse_empty;
	uint8_t fill; /* new buffers' bytes */
	int requests, n;
	struct got got[MAX_BUFS];
	pthread_t test_thread;
} cl = {.mu = PTHREAD_MUTEX_INITIALIZER, .size = 1 << 16};

static void CUPTIAPI on_request(uint8_t **buf, size_t *size, size_t *max_records)
{
	pthread_mutex_lock(&cl.mu);
	cl.requests++;
	*buf = NULL;
	*size = cl.size;
	*max_records = cl.max_records;
	if (cl.refuse_null) {
		cl.refuse_null--;
	} else if (cl.refuse_empty) {
		cl.refuse_empty--;
		*buf = malloc(16);
		*size = 0;
	} else {
		*buf = aligned_alloc(8, cl.size);
		memset(*buf, cl.fill, cl.size);
	}
	pthread_mutex_unlock(&cl.mu);
}

static void CUPTIAPI on_complete(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
				 size_t valid)
{
	(void)ctx;
	(void)stream;
	pthread_mutex_lock(&cl.mu);
	if (cl.n < MAX_BUFS)
		cl.got[cl.n++] =
		    (struct got){buf, size, valid, !pthread_equal(pthread_self(), cl.test_thread)};
	pthread_mutex_unlock(&cl.mu);
}

static int completed(void)
{
	int n;

	pthread_mutex_lock(&cl.mu);
	n = cl.n;
	pthread_mutex_unlock(&cl.mu);
	return n;
}

/* Waits up to 5 s for `n` completed buffers. */
static bool wait_completed(int n)
{
	for (int i = 0; i < 5000 && completed() < n; i++)
		usleep(1000);
	return completed() >= n;
}

/* Loads the fake, registers the client with `size`-byte buffers and enables `kind`. */
static void setup(size_t size, CUpti_ActivityKind kind)
{
	cl.size = size;
	cl.test_thread = pthread_self();
	load_fake();
	ASSERT_EQ(fk.cuptiActivityRegisterCallbacks(on_request, on_complete), CUPTI_SUCCESS);
	ASSERT_EQ(fk.cuptiActivityEnable(kind), CUPTI_SUCCESS);
}

typedef __typeof__(&cuptiActivityGetNextRecord) next_fn;

/* Walks one buffer with `next`: the records into out[], the final status into *end. */
static int walk(next_fn next, const struct got *g, CUpti_Activity **out, int max, CUptiResult *end)
{
	CUpti_Activity *r = NULL;
	int n = 0;

	while ((*end = next(g->buf, g->valid, &r)) == CUPTI_SUCCESS && n < max)
		out[n++] = r;
	return n;
}

/* Correlation ids of the API records in every completed buffer, in order; all must end cleanly. */
static int collect_ids(uint32_t *ids, int max)
{
	CUpti_Activity *recs[4096];
	CUptiResult end;
	int n = 0;

	for (int b = 0; b < completed(); b++) {
		int k = walk(fk.cuptiActivityGetNextRecord, &cl.got[b], recs, 4096, &end);

		ASSERT_EQ(end, CUPTI_ERROR_MAX_LIMIT_REACHED);
		for (int i = 0; i < k && n < max; i++)
			ids[n++] = ((CUpti_ActivityAPI *)recs[i])->correlationId;
	}
	return n;
}

/* A runtime API record whose fields all derive from `corr`. */
static CUpti_ActivityAPI api_record(uint32_t corr)
{
	return (CUpti_ActivityAPI){
	    .kind = CUPTI_ACTIVITY_KIND_RUNTIME,
	    .cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
	    .start = 1000000ull * corr,
	    .end = 1000000ull * corr + 500,
	    .processId = 4242,
	    .threadId = 7,
	    .correlationId = corr,
	};
}

static void emit_api(uint32_t corr)
{
	CUpti_ActivityAPI r = api_record(corr);

	fk.fakegpu_activity_emit((const CUpti_Activity *)&r, sizeof(r));
}

#define ASSERT_IDS(ids, n, ...)                                                  \
	do {                                                                     \
		const uint32_t want_[] = {__VA_ARGS__};                          \
		ASSERT_EQ(n, sizeof(want_) / sizeof(want_[0]));                  \
		for (size_t i_ = 0; i_ < sizeof(want_) / sizeof(want_[0]); i_++) \
			ASSERT_EQ((ids)[i_], want_[i_]);                         \
	} while (0)

/* ---- conformance with the real libcupti ---- */

/* One record of each kind the simulation writes, every byte from `seed` but the kind. */
struct sample {
	CUpti_ActivityKind kind;
	size_t size;
	uint8_t bytes[256] __attribute__((aligned(8)));
};

static const struct {
	CUpti_ActivityKind kind;
	size_t size;
} sample_kinds[] = {
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, sizeof(CUpti_ActivityKernel10)},
    {CUPTI_ACTIVITY_KIND_MEMCPY, sizeof(CUpti_ActivityMemcpy6)},
    {CUPTI_ACTIVITY_KIND_MEMSET, sizeof(CUpti_ActivityMemset4)},
    {CUPTI_ACTIVITY_KIND_MEMORY2, sizeof(CUpti_ActivityMemory4)},
    {CUPTI_ACTIVITY_KIND_RUNTIME, sizeof(CUpti_ActivityAPI)},
    {CUPTI_ACTIVITY_KIND_DRIVER, sizeof(CUpti_ActivityAPI)},
    {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, sizeof(CUpti_ActivityExternalCorrelation)},
    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, sizeof(CUpti_ActivitySynchronization2)},
    {CUPTI_ACTIVITY_KIND_CUDA_EVENT, sizeof(CUpti_ActivityCudaEvent2)},
};
#define N_SAMPLE_KINDS (sizeof(sample_kinds) / sizeof(sample_kinds[0]))

static void make_sample(struct sample *s, int i, unsigned seed)
{
	s->kind = sample_kinds[i % N_SAMPLE_KINDS].kind;
	s->size = sample_kinds[i % N_SAMPLE_KINDS].size;
	for (size_t j = 0; j < s->size; j++)
		s->bytes[j] = (uint8_t)(seed * 31 + j * 7 + 1);
	memcpy(s->bytes, &s->kind, sizeof(s->kind));
}

/* Walks every buffer with both libraries: same records at the same places, as written. */
static int check_walks(next_fn real_next, struct sample *want, int n_want)
{
	CUpti_Activity *real[512], *fake[512];
	int seen = 0;

	for (int b = 0; b < completed(); b++) {
		CUptiResult real_end, fake_end;
		int nr = walk(real_next, &cl.got[b], real, 512, &real_end);
		int nf = walk(fk.cuptiActivityGetNextRecord, &cl.got[b], fake, 512, &fake_end);

		ASSERT_EQ(real_end, fake_end);
		ASSERT_EQ(nr, nf);
		for (int i = 0; i < nr; i++, seen++) {
			ASSERT(real[i] == fake[i]);
			ASSERT(seen < n_want);
			ASSERT_EQ(real[i]->kind, want[seen].kind);
			ASSERT_MSG(!memcmp(real[i], want[seen].bytes, want[seen].size),
				   "record %d (kind %d) differs", seen, want[seen].kind);
		}
		if (real_end == CUPTI_ERROR_INVALID_KIND)
			seen++; /* the unknown record the walk stops at */
		else
			ASSERT_EQ(real_end, CUPTI_ERROR_MAX_LIMIT_REACHED);
	}
	return seen;
}

TEST(fakecupti_conformance_real_walk)
{
	enum {
		N = 40
	};
	struct sample want[N + 2];
	void *real = load_real();
	next_fn real_next = (next_fn)dlsym(real, "cuptiActivityGetNextRecord");
	uint32_t id;
	int n = 0;

	setup(1024, CUPTI_ACTIVITY_KIND_RUNTIME); /* several buffers, each cut short */
	ASSERT(real_next && real_next != fk.cuptiActivityGetNextRecord);
	for (size_t i = 0; i < N_SAMPLE_KINDS; i++)
		ASSERT_EQ(fk.cuptiActivityEnable(sample_kinds[i].kind), CUPTI_SUCCESS);
	for (; n < N; n++) {
		make_sample(&want[n], n, (unsigned)n);
		fk.fakegpu_activity_emit((const CUpti_Activity *)want[n].bytes, want[n].size);
	}
	/* External correlation records made by the simulation itself, one per pushed kind. */
	ASSERT_EQ(fk.cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
							    0x1122334455667788ull),
		  CUPTI_SUCCESS);
	ASSERT_EQ(
	    fk.cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, 9),
	    CUPTI_SUCCESS);
	id = fk.fakegpu_next_correlation();
	for (int k = 0; k < 2; k++, n++) {
		CUpti_ActivityExternalCorrelation e = {
		    .kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
		    .externalKind = k ? CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2
				      : CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
		    .externalId = k ? 9 : 0x1122334455667788ull,
		    .correlationId = id,
		};

		want[n].kind = e.kind;
		want[n].size = sizeof(e);
		memcpy(want[n].bytes, &e, sizeof(e));
	}
	ASSERT_EQ(fk.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	ASSERT_GT(completed(), 2);
	ASSERT_EQ(check_walks(real_next, want, n), n);
}

/* The unknown kind and zeroed timestamps of fault injection read the same with the real one. */
TEST(fakecupti_conformance_faults)
{
	enum {
		N = 7
	};
	struct sample want[N];
	next_fn real_next;
	void *real = load_real();

	real_next = (next_fn)dlsym(real, "cuptiActivityGetNextRecord");
	setenv("FAKEGPU_CUPTI_UNKNOWN_KIND_EVERY", "3", 1);
	setenv("FAKEGPU_CUPTI_ZERO_TS_EVERY", "2", 1);
	setup(1 << 16, CUPTI_ACTIVITY_KIND_RUNTIME);
	for (int i = 0; i < N; i++) {
		CUpti_ActivityAPI r = api_record((uint32_t)i + 1);

		fk.fakegpu_activity_emit((const CUpti_Activity *)&r, sizeof(r));
		if ((i + 1) % 2 == 0)
			r.start = r.end = 0;
		want[i].kind = r.kind;
		want[i].size = sizeof(r);
		memcpy(want[i].bytes, &r, sizeof(r));
	}
	ASSERT_EQ(fk.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
	/* Records 3 and 6 are unknown and each ends its buffer: [1 2 ?] [4 5 ?] [7]. */
	ASSERT_EQ(completed(), 3);
	ASSERT_EQ(check_walks(real_next, want, N), N);
}

/* cuptiGetCallbackName: the same answer as the real one for every id of both API domains. */
static void check_callback_names(void *real)
{
	__typeof__(&cuptiGetCallbackName) real_name = dlsym(real, "cuptiGetCallbackName");
	const struct {
		CUpti_CallbackDomain domain;
		uint32_t size;
	} domains[] = {{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE},
		       {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE}};
	int named = 0;

	ASSERT(real_name);
	for (size_t d = 0; d < sizeof(domains) / sizeof(domains[0]); d++) {
		for (uint32_t cbid = 0; cbid <= domains[d].size; cbid++) {
			const char *s_real = NULL, *s_fake = NULL;
			CUptiResult r_real = real_name(domains[d].domain, cbid, &s_real);
			CUptiResult r_fake =
			    fk.cuptiGetCallbackName(domains[d].domain, cbid, &s_fake);

			ASSERT_MSG(r_fake == r_real, "domain %d cbid %u: %d, real %d",
				   domains[d].domain, cbid, r_fake, r_real);
			if (r_real == CUPTI_SUCCESS)
				ASSERT_STR_EQ(s_fake, s_real);
			named += r_real == CUPTI_SUCCESS;
		}
	}
	ASSERT_GT(named, 1000);
}

TEST(fakecupti_conformance_results)
{
	void *real = load_real();
	__typeof__(&cuptiGetResultString) real_str = dlsym(real, "cuptiGetResultString");
	__typeof__(&cuptiGetVersion) real_version = dlsym(real, "cuptiGetVersion");
	uint32_t v_real = 0, v_fake = 0;

	load_fake();
	ASSERT(real_str && real_version);
	for (int code = -1; code <= 1100; code++) {
		const char *s_real = NULL, *s_fake = NULL;
		CUptiResult r_real = real_str((CUptiResult)code, &s_real);
		CUptiResult r_fake = fk.cuptiGetResultString((CUptiResult)code, &s_fake);

		if (r_fake != CUPTI_SUCCESS && code > CUPTI_ERROR_UNKNOWN)
			continue; /* the real one names internal codes the headers do not have */
		ASSERT_EQ(r_fake, r_real);
		ASSERT_STR_EQ(s_fake, s_real);
	}
	ASSERT_EQ(real_version(&v_real), CUPTI_SUCCESS);
	ASSERT_EQ(fk.cuptiGetVersion(&v_fake), CUPTI_SUCCESS);
	ASSERT_EQ(v_fake, v_real);
	check_callback_names(real);
}

/* DT_SONAME of an ELF64 file, from its dynamic section. */
static void elf_soname(const char *path, char *out, size_t n)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	const uint8_t *f;
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh;

	ASSERT(fd >= 0 && fstat(fd, &st) == 0);
	f = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	ASSERT(f != MAP_FAILED);
	eh = (const Elf64_Ehdr *)f;
	sh = (const Elf64_Shdr *)(f + eh->e_shoff);
	out[0] = '\0';
	for (int i = 0; i < eh->e_shnum; i++) {
		const Elf64_Dyn *d = (const Elf64_Dyn *)(f + sh[i].sh_offset);

		if (sh[i].sh_type != SHT_DYNAMIC)
			continue;
		for (; d->d_tag != DT_NULL; d++)
			if (d->d_tag == DT_SONAME)
				snprintf(out, n, "%s",
					 (const char *)f + sh[sh[i].sh_link].sh_offset +
					     d->d_un.d_val);
	}
	munmap((void *)f, (size_t)st.st_size);
}

/* Same SONAME, and every entry point under the real library's version node, as in the real one. */
TEST(fakecupti_conformance_exports)
{
	char fake_path[4096], real_so[256], fake_so[256];
	const char *real_path = real_cupti_path();
	void *real = load_real();
	static const char *const names[] = {
#define NAME(f) #f,
	    CUPTI_FNS(NAME)
#undef NAME
	};

	load_fake();
	snprintf(fake_path, sizeof(fake_path), "%s/fakecuda/libcupti.so.13", getenv("TEST_BUILD"));
	elf_soname(real_path, real_so, sizeof(real_so));
	elf_soname(fake_path, fake_so, sizeof(fake_so));
	ASSERT_STR_EQ(fake_so, real_so);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		ASSERT_MSG(dlvsym(real, names[i], real_so), "real %s@%s", names[i], real_so);
		ASSERT_MSG(dlvsym(fake_handle, names[i], real_so), "fake %s@%s", names[i], real_so);
	}
}

/* ---- buffers and records ---- */

TEST(fakecupti_only_enabled_kinds)
{
	CUpti_ActivityAPI drv = api_record(2);
	uint32_t ids[16];
	size_t dropped = 1;
	int n;

	setup(1 << 16, CUPTI_ACTIVITY_KIND_RUNTIME);
	ASSERT(fk.fakegpu_activity_enabled(CUPTI_ACTIVITY_KIND_RUNTIME));
	ASSERT(!fk.fakegpu_activity_enabled(CUPTI_ACTIVITY_KIND_DRIVER));
	emit_api(1);
	drv.kind = CUPTI_ACTIVITY_KIND_DRIVER;
	fk.fakegpu_activity_emit((const CUpti_Activity *)&drv, sizeof(drv));
	emit_api(3);
	ASSERT_EQ(fk.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_INVALID), CUPTI_ERROR_INVALID_KIND);
	ASSERT_EQ(fk.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_COUNT), CUPTI_ERROR_INVALID_KIND);
	ASSERT_EQ(fk.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	n = collect_ids(ids, 16);
	ASSERT_IDS(ids, n, 1, 3);
	/* Records of disabled kinds are not recorded at all, so not dropped either. */
	ASSERT_EQ(fk.cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped), CUPTI_SUCCESS);
	ASSERT_EQ(dropped, 0);
}

/* cuptiActivityEnableRuntimeApi/DriverApi: one API on or off, whatever its kind says. */
TEST(fakecupti_per_api_enable)
{
	CUpti_ActivityAPI other = api_record(3);
	uint32_t ids[16];
	int n;

	setup(1 << 16, CUPTI_ACTIVITY_KIND_DRIVER);
	ASSERT_EQ(
	    fk.cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1),
	    CUPTI_SUCCESS);
	emit_api(1); /* cudaLaunchKernel: on by itself */
	other.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020;
	fk.fakegpu_activity_emit((const CUpti_Activity *)&other, sizeof(other)); /* kind off */
	ASSERT_EQ(fk.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), CUPTI_SUCCESS);
	ASSERT_EQ(fk.cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, 0),
		  CUPTI_SUCCESS);
	other.correlationId = 4;
	fk.fakegpu_activity_emit((const CUpti_Activity *)&other, sizeof(other)); /* off by itself */
	emit_api(5);
	ASSERT_EQ(fk.cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 0),
		  CUPTI_SUCCESS);
	other = api_record(6);
	other.kind = CUPTI_ACTIVITY_KIND_DRIVER;
	other.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
	fk.fakegpu_activity_emit((const CUpti_Activity *)&other, sizeof(other));
	other.correlationId = 7;
	other.cbid = CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2;
	fk.fakegpu_activity_emit((const CUpti_Activity *)&other, sizeof(other));
	ASSERT_EQ(fk.cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_SIZE, 1),
		  CUPTI_ERROR_INVALID_PARAMETER);
	ASSERT_EQ(fk.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	n = collect_ids(ids, 16);
	ASSERT_IDS(ids, n, 1, 5, 7);
}

static uint64_t client_ticks(void)
{
	struct timespec ts;

	/* another epoch and 3 ticks per ns, as a TSC would count */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return 3 * ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
}

/*
 * cuptiActivityRegisterTimestampCallback: records and cuptiGetTimestamp report the client's
 * clock, the same instants at its rate; the simulation keeps its own.
 */
TEST(fakecupti_timestamp_callback)
{
	const struct timespec pause = {.tv_nsec = 20000000};
	CUpti_Activity *recs[4];
	CUpti_ActivityAPI r;
	uint64_t before, after, got;
	CUptiResult end;

	setup(1 << 16, CUPTI_ACTIVITY_KIND_RUNTIME);
	ASSERT_EQ(fk.cuptiActivityRegisterTimestampCallback(NULL), CUPTI_ERROR_INVALID_PARAMETER);
	ASSERT_EQ(fk.cuptiActivityRegisterTimestampCallback(client_ticks), CUPTI_SUCCESS);
	nanosleep(&pause, NULL); /* long enough for the rate to be measured */
	r = api_record(1);
	before = client_ticks();
	r.start = fk.fakegpu_timestamp();
	r.end = r.start + 1000000; /* 1 ms of the simulation's clock */
	fk.fakegpu_activity_emit((const CUpti_Activity *)&r, sizeof(r));
	ASSERT_EQ(fk.cuptiGetTimestamp(&got), CUPTI_SUCCESS);
	after = client_ticks();
	ASSERT(before <= got && got <= after);
	ASSERT_EQ(fk.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	ASSERT_EQ(walk(fk.cuptiActivityGetNextRecord, &cl.got[0], recs, 4, &end), 1);
	r = *(CUpti_ActivityAPI *)recs[0];
	ASSERT(before <= r.start && r.start <= after);
	/* 3 ticks per ns, within 2% */
	ASSERT_GT(r.end - r.start, 2940000);
	ASSERT_LT(r.end - r.start, 3060000);
}

TEST(fakecupti_disable_stops_records)
{
	uint32_t ids[16];
	int n;

	setup(1 << 16, CUPTI_ACTIVITY_KIND_RUNTIME);
	emit_api(1);
	emit_api(2);
	ASSERT_EQ(fk.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME), CUPTI_SUCCESS);
	ASSERT(!fk.fakegpu_activity_enabled(CUPTI_ACTIVITY_KIND_RUNTIME));
	emit_api(3);
	emit_api(4);
	ASSERT_EQ(fk.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), CUPTI_SUCCESS);
	emit_api(5);
	ASSERT_EQ(fk.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	n = collect_ids(ids, 16);
	ASSERT_IDS(ids, n, 1, 2, 5);
}

/* A full buffer goes back from the worker without a flush; the partial one only on flush. */
TEST(fakecupti_buffer_full_completes_on_worker)
{
	uint32_t ids[16];
	int n;

	setup(3 * sizeof(CUpti_ActivityAPI) + 8, CUPTI_ACTIVITY_KIND_RUNTIME);
	for (uint32_t i = 1; i <= 7; i++)
		emit_api(i);
	ASSERT(wait_completed(2));
	usleep(50000);
	ASSERT_EQ(completed(), 2);
	for (int b = 0; b < 2; b++) {
		ASSERT(cl.got[b].on_worker);
		ASSERT_EQ(cl.got[b].size, 3 * sizeof(CUpti_ActivityAPI) + 8);
		ASSERT_EQ(cl.got[b].valid, 3 * sizeof(CUpti_ActivityAPI));
	}
	ASSERT_EQ(fk.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	ASSERT_EQ(completed(), 3);    /* delivered before FlushAll returned ... */
	ASSERT(!cl.got[2].on_worker); /* ... on the calling thread */
	n = collect_ids(ids, 16);
	ASSERT_IDS(ids, n, 1, 2, 3, 4, 5, 6, 7);
}

TEST(fakecupti_buffer_max_records)
{
	uint32_t ids[16];
	int n;

	cl.max_records = 2;
	setup(1 << 16, CUPTI_ACTIVITY_KIND_RUNTIME);
	for (uint32_t i = 1; i <= 5; i++)
		emit_api(i);
	ASSERT(wait_completed(2));
	ASSERT_EQ(fk.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	ASSERT_EQ(completed(), 3);
	ASSERT_EQ(cl.got[0].valid, 2 * sizeof(CUpti_ActivityAPI));
	ASSERT_EQ(cl.got[2].valid, 1 * sizeof(CUpti_ActivityAPI));
	n = collect_ids(ids, 16);
	ASSERT_IDS(ids, n, 1, 2, 3, 4, 5);
}

/* As documented, a periodic flush returns full buffers only. */
TEST(fakecupti_flush_period)
{
	setup(3 * sizeof(CUpti_ActivityAPI), CUPTI_ACTIVITY_KIND_RUNTIME);
	ASSERT_EQ(fk.cuptiActivityFlushPeriod(20), CUPTI_SUCCESS);
	emit_api(1);
	emit_api(2);
	usleep(200000); /* ten periods */
	ASSERT_EQ(completed(), 0);
	emit_api(3);
	emit_api(4); /* does not fit: the first buffer is full */
	ASSERT(wait_completed(1));
	ASSERT(cl.got[0].on_worker);
	ASSERT_EQ(cl.got[0].valid, 3 * sizeof(CUpti_ActivityAPI));
	ASSERT_EQ(fk.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	ASSERT_EQ(completed(), 2);
}

TEST(fakecupti_flush_all)
{
	load_fake();
	cl.test_thread = pthread_self();
	ASSERT_EQ(fk.cuptiActivityFlushAll(0), CUPTI_ERROR_INVALID_OPERATION);
	ASSERT_EQ(fk.cuptiActivityRegisterCallbacks(NULL, on_complete),
		  CUPTI_ERROR_INVALID_PARAMETER);
	ASSERT_EQ(fk.cuptiActivityRegisterCallbacks(on_request, on_complete), CUPTI_SUCCESS);
	ASSERT_EQ(fk.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), CUPTI_SUCCESS);
	ASSERT_EQ(fk.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
	ASSERT_EQ(completed(), 0); /* nothing held, nothing returned */
	emit_api(1);
	ASSERT_EQ(fk.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	ASSERT_EQ(completed(), 1);
	emit_api(2);
	ASSERT_EQ(fk.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
	ASSERT_EQ(completed(), 2);
	ASSERT(!cl.got[0].on_worker && !cl.got[1].on_worker);
	ASSERT_EQ(cl.requests, 2);
}

/* CUPTI zeroes the client's buffer unless told the client does (ZEROED_OUT_ACTIVITY_BUFFER). */
TEST(fakecupti_buffer_zeroed)
{
	uint8_t one = 1;
	size_t size = sizeof(one);

	cl.fill = 0xab;
	setup(4096, CUPTI_ACTIVITY_KIND_RUNTIME);
	emit_api(1);
	ASSERT_EQ(fk.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	ASSERT_EQ(cl.got[0].buf[sizeof(CUpti_ActivityAPI)], 0);
	ASSERT_EQ(cl.got[0].buf[4095], 0);
	ASSERT_EQ(fk.cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER,
					       &size, &one),
		  CUPTI_SUCCESS);
	emit_api(2);
	ASSERT_EQ(fk.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	ASSERT_EQ(cl.got[1].buf[sizeof(CUpti_ActivityAPI)], 0xab);
	ASSERT_EQ(cl.got[1].buf[4095], 0xab);
}

TEST(fakecupti_no_buffer_drops_counted)
{
	uint32_t ids[16];
	size_t dropped = 0;
	int n;

	load_fake();
	cl.test_thread = pthread_self();
	ASSERT_EQ(fk.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), CUPTI_SUCCESS);
	emit_api(1); /* no callbacks registered yet */
	ASSERT_EQ(fk.cuptiActivityRegisterCallbacks(on_request, on_complete), CUPTI_SUCCESS);
	cl.refuse_null = 2;
	cl.refuse_empty = 1;
	for (uint32_t i = 2; i <= 6; i++)
		emit_api(i);
	ASSERT_EQ(fk.cuptiActivityFlushAll(0), CUPTI_SUCCESS); /* the next record needs a buffer */
	cl.size = 16; /* too small for one record: comes back empty */
	emit_api(7);
	cl.size = 4096;
	emit_api(8);
	ASSERT_EQ(fk.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	ASSERT_EQ(fk.cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped), CUPTI_SUCCESS);
	ASSERT_EQ(dropped, 5); /* 1; 2 and 3 (NULL); 4 (size 0); 7 (too small) */
	ASSERT_EQ(fk.cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped), CUPTI_SUCCESS);
	ASSERT_EQ(dropped, 0); /* reset by reading */
	ASSERT_EQ(fk.cuptiActivityGetNumDroppedRecords(NULL, 0, NULL),
		  CUPTI_ERROR_INVALID_PARAMETER);
	n = collect_ids(ids, 16);
	ASSERT_IDS(ids, n, 5, 6, 8);
	ASSERT_EQ(cl.got[0].valid, 0); /* the size-0 buffer, handed back */
}

/* CUDA 13's default: each thread fills buffers of its own; the attribute turns that off. */
struct emitter {
	uint32_t first, count;
};

static void *emit_thread(void *arg)
{
	const struct emitter *e = arg;

	for (uint32_t i = 0; i < e->count; i++)
		emit_api(e->first + i);
	return NULL;
}

static void run_emitters(struct emitter *e, int n)
{
	threads_run(emit_thread, e, sizeof(*e), (unsigned)n);
}

TEST(fakecupti_per_thread_buffers)
{
	struct emitter e[2] = {{100, 2}, {200, 2}};
	uint8_t per_thread = 9, zero = 0;
	size_t size = sizeof(per_thread);
	uint32_t ids[16];
	int n;

	setup(1 << 16, CUPTI_ACTIVITY_KIND_RUNTIME);
	ASSERT_EQ(fk.cuptiActivityGetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER,
					       &size, &per_thread),
		  CUPTI_SUCCESS);
	ASSERT_EQ(per_thread, 1);
	run_emitters(e, 2); /* both threads have exited: their buffers still come back */
	ASSERT_EQ(fk.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	ASSERT_EQ(completed(), 2);
	for (int b = 0; b < 2; b++) {
		CUpti_ActivityAPI *r = (CUpti_ActivityAPI *)cl.got[b].buf;

		ASSERT_EQ(cl.got[b].valid, 2 * sizeof(*r));
		ASSERT_EQ(r[0].correlationId / 100, r[1].correlationId / 100);
	}
	ASSERT_EQ(fk.cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER,
					       &size, &zero),
		  CUPTI_SUCCESS);
	emit_api(1);
	run_emitters(e, 2);
	ASSERT_EQ(fk.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	ASSERT_EQ(completed(), 3);
	ASSERT_EQ(cl.got[2].valid, 5 * sizeof(CUpti_ActivityAPI));
	n = collect_ids(ids, 16);
	ASSERT_EQ(n, 9);
}

/* Threads emit while the test flushes: every record comes back exactly once. */
TEST(fakecupti_concurrent_emit)
{
	enum {
		THREADS = 4,
		EACH = 3000
	};
	struct emitter e[THREADS];
	static uint32_t ids[THREADS * EACH + 1];
	static bool seen[THREADS * EACH + 1];
	pthread_t t[THREADS];
	size_t dropped = 1;
	int n;

	setup(4096, CUPTI_ACTIVITY_KIND_RUNTIME);
	for (int i = 0; i < THREADS; i++) {
		e[i] = (struct emitter){1 + (uint32_t)i * EACH, EACH};
		ASSERT_EQ(pthread_create(&t[i], NULL, emit_thread, &e[i]), 0);
	}
	for (int i = 0; i < 20; i++) {
		ASSERT_EQ(fk.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
		usleep(500);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	ASSERT_EQ(fk.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	ASSERT_LT(completed(), MAX_BUFS);
	n = collect_ids(ids, THREADS * EACH + 1);
	ASSERT_EQ(n, THREADS * EACH);
	for (int i = 0; i < n; i++) {
		ASSERT(ids[i] >= 1 && ids[i] <= THREADS * EACH && !seen[ids[i]]);
		seen[ids[i]] = true;
	}
	ASSERT_EQ(fk.cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped), CUPTI_SUCCESS);
	ASSERT_EQ(dropped, 0);
}

/* ---- fault injection ---- */

TEST(fakecupti_fault_drop_every)
{
	uint32_t ids[16];
	size_t dropped = 0;
	int n;

	setenv("FAKEGPU_CUPTI_DROP_EVERY", "3", 1);
	setup(1 << 16, CUPTI_ACTIVITY_KIND_RUNTIME);
	for (uint32_t i = 1; i <= 9; i++)
		emit_api(i);
	ASSERT_EQ(fk.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	n = collect_ids(ids, 16);
	ASSERT_IDS(ids, n, 1, 2, 4, 5, 7, 8);
	ASSERT_EQ(fk.cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped), CUPTI_SUCCESS);
	ASSERT_EQ(dropped, 3);
}

/* Every second record: start and end (and a kernel's completed, a memory record's timestamp). */
TEST(fakecupti_fault_zero_ts_every)
{
	CUpti_ActivityKernel10 k = {.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
				    .start = 10,
				    .end = 20,
				    .completed = 20,
				    .correlationId = 1};
	CUpti_ActivityMemory4 m = {
	    .kind = CUPTI_ACTIVITY_KIND_MEMORY2, .timestamp = 30, .bytes = 64};
	CUpti_Activity *r[8];
	CUptiResult end;

	setenv("FAKEGPU_CUPTI_ZERO_TS_EVERY", "2", 1);
	setup(1 << 16, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	ASSERT_EQ(fk.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2), CUPTI_SUCCESS);
	for (int i = 0; i < 2; i++) {
		fk.fakegpu_activity_emit((const CUpti_Activity *)&k, sizeof(k));
		fk.fakegpu_activity_emit((const CUpti_Activity *)&m, sizeof(m));
	}
	ASSERT_EQ(fk.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	ASSERT_EQ(walk(fk.cuptiActivityGetNextRecord, &cl.got[0], r, 8, &end), 4);
	ASSERT_EQ(((CUpti_ActivityKernel10 *)r[0])->start, 10);
	ASSERT_EQ(((CUpti_ActivityMemory4 *)r[1])->timestamp, 0);
	ASSERT_EQ(((CUpti_ActivityMemory4 *)r[1])->bytes, 64);
	ASSERT_EQ(((CUpti_ActivityKernel10 *)r[2])->end, 20);
	ASSERT_EQ(((CUpti_ActivityMemory4 *)r[3])->timestamp, 0);
	/* Kernels as the 2nd and 4th records. */
	fk.fakegpu_activity_emit((const CUpti_Activity *)&m, sizeof(m));
	fk.fakegpu_activity_emit((const CUpti_Activity *)&k, sizeof(k));
	ASSERT_EQ(fk.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	ASSERT_EQ(walk(fk.cuptiActivityGetNextRecord, &cl.got[1], r, 8, &end), 2);
	ASSERT_EQ(((CUpti_ActivityKernel10 *)r[1])->start, 0);
	ASSERT_EQ(((CUpti_ActivityKernel10 *)r[1])->end, 0);
	ASSERT_EQ(((CUpti_ActivityKernel10 *)r[1])->completed, 0);
	ASSERT_EQ(((CUpti_ActivityKernel10 *)r[1])->correlationId, 1);
}

/* The walk stops at the unknown record, which ends its buffer, so only it is lost. */
TEST(fakecupti_fault_unknown_kind_every)
{
	CUpti_Activity *r[8];
	CUptiResult end;
	uint32_t got[8];
	int n = 0;

	setenv("FAKEGPU_CUPTI_UNKNOWN_KIND_EVERY", "3", 1);
	setup(1 << 16, CUPTI_ACTIVITY_KIND_RUNTIME);
	for (uint32_t i = 1; i <= 7; i++)
		emit_api(i);
	ASSERT_EQ(fk.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	ASSERT_EQ(completed(), 3);
	for (int b = 0; b < 3; b++) {
		int k = walk(fk.cuptiActivityGetNextRecord, &cl.got[b], r, 8, &end);

		ASSERT_EQ(end, b < 2 ? CUPTI_ERROR_INVALID_KIND : CUPTI_ERROR_MAX_LIMIT_REACHED);
		ASSERT_EQ(cl.got[b].valid, (b < 2 ? 3 : 1) * sizeof(CUpti_ActivityAPI));
		for (int i = 0; i < k; i++)
			got[n++] = ((CUpti_ActivityAPI *)r[i])->correlationId;
		if (b < 2)
			ASSERT(r[k - 1] ==
			       (CUpti_Activity *)(cl.got[b].buf + sizeof(CUpti_ActivityAPI)));
	}
	ASSERT_IDS(got, n, 1, 2, 4, 5, 7);
	ASSERT_EQ(*(uint32_t *)(cl.got[0].buf + 2 * sizeof(CUpti_ActivityAPI)),
		  FAKEGPU_UNKNOWN_KIND);
}

TEST(fakecupti_fault_subscribe_taken)
{
	CUpti_SubscriberHandle h = (CUpti_SubscriberHandle)&h;
	char old[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = "";
	CUpti_SubscriberParams p = {
	    .structSize = CUpti_SubscriberParams_STRUCT_SIZE,
	    .subscriberName = "test",
	    .oldSubscriberName = old,
	    .oldSubscriberSize = sizeof(old),
	};

	setenv("FAKEGPU_CUPTI_SUBSCRIBE_TAKEN", "1", 1);
	load_fake();
	ASSERT_EQ(fk.cuptiSubscribe(&h, NULL, NULL),
		  CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
	ASSERT(h == NULL);
	ASSERT_EQ(fk.cuptiSubscribe_v2(&h, NULL, NULL, &p),
		  CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
	ASSERT_STR_CONTAINS(old, "CUPTI for ");
	ASSERT_EQ(fk.cuptiGetLastError(), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
}

static void enable_fail_all(void)
{
	setenv("FAKEGPU_CUPTI_ENABLE_FAIL", "all", 1);
	load_fake();
	ASSERT_EQ(fk.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), CUPTI_ERROR_UNKNOWN);
	ASSERT_EQ(fk.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2), CUPTI_ERROR_UNKNOWN);
	exit(0);
}

TEST(fakecupti_fault_enable_fail)
{
	int status;
	pid_t pid = fork();

	ASSERT(pid >= 0);
	if (pid == 0)
		enable_fail_all();
	ASSERT(waitpid(pid, &status, 0) == pid && WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);
	/* A list of kinds: those fail, others work. */
	setenv("FAKEGPU_CUPTI_ENABLE_FAIL", "10,49", 1);
	load_fake();
	ASSERT_EQ(fk.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
		  CUPTI_ERROR_UNKNOWN);
	ASSERT(!fk.fakegpu_activity_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
	ASSERT_EQ(fk.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), CUPTI_SUCCESS);
	ASSERT_EQ(fk.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2), CUPTI_ERROR_UNKNOWN);
	ASSERT_EQ(fk.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMORY2), CUPTI_SUCCESS);
	ASSERT_EQ(fk.cuptiGetLastError(), CUPTI_ERROR_UNKNOWN);
	ASSERT_EQ(fk.cuptiGetLastError(), CUPTI_SUCCESS);
}

/* ---- external correlation ---- */

struct ext {
	uint32_t kind, id; /* id: externalId, or correlationId for API records */
	uint32_t corr;
};

static int collect_ext(struct ext *out, int max)
{
	CUpti_Activity *r[64];
	CUptiResult end;
	int n = 0;

	for (int b = 0; b < completed(); b++) {
		int k = walk(fk.cuptiActivityGetNextRecord, &cl.got[b], r, 64, &end);

		for (int i = 0; i < k && n < max; i++) {
			const CUpti_ActivityExternalCorrelation *e = (void *)r[i];
			const CUpti_ActivityAPI *a = (void *)r[i];

			if (r[i]->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)
				out[n++] = (struct ext){e->externalKind, (uint32_t)e->externalId,
							e->correlationId};
			else
				out[n++] = (struct ext){0, 0, a->correlationId};
		}
	}
	return n;
}

static void *push_other_thread(void *arg)
{
	(void)arg;
	fk.cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, 99);
	return NULL;
}

/* One API call of the simulated runtime: a correlation id, and its record at exit. */
static uint32_t api_call(void)
{
	uint32_t id = fk.fakegpu_next_correlation();

	emit_api(id);
	return id;
}

TEST(fakecupti_external_correlation)
{
	const CUpti_ExternalCorrelationKind c0 = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
	const CUpti_ExternalCorrelationKind c1 = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1;
	uint64_t last = 0;
	struct ext e[16];
	uint32_t a, b, c, d;
	pthread_t t;

	setup(1 << 16, CUPTI_ACTIVITY_KIND_RUNTIME);
	ASSERT_EQ(fk.cuptiActivityPushExternalCorrelationId(c0, 10), CUPTI_SUCCESS);
	a = api_call(); /* EXTERNAL_CORRELATION not enabled yet */
	ASSERT_EQ(fk.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION), CUPTI_SUCCESS);
	ASSERT_EQ(fk.cuptiActivityPushExternalCorrelationId(c0, 11), CUPTI_SUCCESS);
	ASSERT_EQ(fk.cuptiActivityPushExternalCorrelationId(c1, 20), CUPTI_SUCCESS);
	ASSERT_EQ(pthread_create(&t, NULL, push_other_thread, NULL), 0);
	pthread_join(t, NULL); /* another thread's stack is not ours */
	b = api_call();
	ASSERT_EQ(fk.cuptiActivityPopExternalCorrelationId(c0, &last), CUPTI_SUCCESS);
	ASSERT_EQ(last, 11);
	c = api_call();
	ASSERT_EQ(fk.cuptiActivityPopExternalCorrelationId(c0, NULL), CUPTI_SUCCESS);
	ASSERT_EQ(fk.cuptiActivityPopExternalCorrelationId(c1, NULL), CUPTI_SUCCESS);
	ASSERT_EQ(fk.cuptiActivityPopExternalCorrelationId(c1, &last), CUPTI_ERROR_QUEUE_EMPTY);
	ASSERT_EQ(
	    fk.cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_INVALID, 1),
	    CUPTI_ERROR_INVALID_PARAMETER);
	ASSERT_EQ(
	    fk.cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_SIZE, 1),
	    CUPTI_ERROR_INVALID_PARAMETER);
	d = api_call();
	ASSERT(a >= 1 && b == a + 1 && c == b + 1 && d == c + 1);
	/* Without RUNTIME or DRIVER records there is nothing to precede. */
	ASSERT_EQ(fk.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME), CUPTI_SUCCESS);
	ASSERT_EQ(fk.cuptiActivityPushExternalCorrelationId(c0, 30), CUPTI_SUCCESS);
	api_call();
	ASSERT_EQ(fk.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	/* Each API record is preceded by one record per kind whose stack is not empty. */
	const struct ext want[] = {
	    {0, 0, a},	 {c0, 11, b}, {c1, 20, b}, {0, 0, b},
	    {c0, 10, c}, {c1, 20, c}, {0, 0, c},   {0, 0, d},
	};
	ASSERT_EQ(collect_ext(e, 16), 8);
	for (int i = 0; i < 8; i++) {
		ASSERT_EQ(e[i].kind, want[i].kind);
		ASSERT_EQ(e[i].id, want[i].id);
		ASSERT_EQ(e[i].corr, want[i].corr);
	}
}

/* ---- callback API ---- */

static struct {
	int calls;
	void *userdata;
	CUpti_CallbackDomain domain;
	CUpti_CallbackId cbid;
	CUpti_ApiCallbackSite site;
	uint32_t correlation;
	const char *function;
} seen_cb;

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
				 const void *data)
{
	const CUpti_CallbackData *d = data;

	seen_cb.calls++;
	seen_cb.userdata = userdata;
	seen_cb.domain = domain;
	seen_cb.cbid = cbid;
	seen_cb.site = d->callbackSite;
	seen_cb.correlation = d->correlationId;
	seen_cb.function = d->functionName;
}

static void deliver(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, CUpti_ApiCallbackSite site,
		    uint32_t corr)
{
	CUpti_CallbackData d = {
	    .callbackSite = site,
	    .functionName = "cudaLaunchKernel",
	    .correlationId = corr,
	};

	fk.fakegpu_callback(domain, cbid, &d);
}

TEST(fakecupti_second_subscriber)
{
	CUpti_SubscriberHandle h = NULL, h2 = NULL;

	load_fake();
	ASSERT_EQ(fk.cuptiSubscribe(NULL, on_callback, NULL), CUPTI_ERROR_INVALID_PARAMETER);
	ASSERT_EQ(fk.cuptiSubscribe(&h, on_callback, NULL), CUPTI_SUCCESS);
	ASSERT(h);
	ASSERT_EQ(fk.cuptiSubscribe(&h2, on_callback, NULL),
		  CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
	ASSERT_EQ(fk.cuptiGetLastError(), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
	ASSERT_EQ(fk.cuptiUnsubscribe((CUpti_SubscriberHandle)&h), CUPTI_ERROR_INVALID_PARAMETER);
	ASSERT_EQ(fk.cuptiUnsubscribe(h), CUPTI_SUCCESS);
	ASSERT_EQ(fk.cuptiUnsubscribe(h), CUPTI_ERROR_INVALID_PARAMETER);
	ASSERT_EQ(fk.cuptiSubscribe(&h2, on_callback, NULL), CUPTI_SUCCESS);
}

TEST(fakecupti_callbacks)
{
	const CUpti_CallbackId launch = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
	const CUpti_CallbackId malloc_ = CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020;
	CUpti_SubscriberHandle h = NULL;
	uint32_t state = 9, corr;
	int marker;

	load_fake();
	ASSERT_EQ(fk.cuptiSubscribe(&h, on_callback, &marker), CUPTI_SUCCESS);
	deliver(CUPTI_CB_DOMAIN_RUNTIME_API, launch, CUPTI_API_ENTER, 1);
	ASSERT_EQ(seen_cb.calls, 0); /* subscribing enables nothing */
	ASSERT_EQ(fk.cuptiEnableCallback(1, h, CUPTI_CB_DOMAIN_RUNTIME_API, launch), CUPTI_SUCCESS);
	ASSERT_EQ(fk.cuptiGetCallbackState(&state, h, CUPTI_CB_DOMAIN_RUNTIME_API, launch),
		  CUPTI_SUCCESS);
	ASSERT_EQ(state, 1);
	corr = fk.fakegpu_next_correlation();
	deliver(CUPTI_CB_DOMAIN_RUNTIME_API, launch, CUPTI_API_ENTER, corr);
	ASSERT_EQ(seen_cb.calls, 1);
	ASSERT(seen_cb.userdata == &marker);
	ASSERT_EQ(seen_cb.domain, CUPTI_CB_DOMAIN_RUNTIME_API);
	ASSERT_EQ(seen_cb.cbid, launch);
	ASSERT_EQ(seen_cb.site, CUPTI_API_ENTER);
	ASSERT_EQ(seen_cb.correlation, corr);
	ASSERT_STR_EQ(seen_cb.function, "cudaLaunchKernel");
	deliver(CUPTI_CB_DOMAIN_RUNTIME_API, launch, CUPTI_API_EXIT, corr);
	ASSERT_EQ(seen_cb.calls, 2);
	ASSERT_EQ(seen_cb.site, CUPTI_API_EXIT);
	deliver(CUPTI_CB_DOMAIN_RUNTIME_API, malloc_, CUPTI_API_ENTER, corr + 1);
	ASSERT_EQ(seen_cb.calls, 2); /* another cbid */
	ASSERT_EQ(fk.cuptiEnableDomain(1, h, CUPTI_CB_DOMAIN_DRIVER_API), CUPTI_SUCCESS);
	deliver(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER,
		5);
	ASSERT_EQ(seen_cb.calls, 3);
	ASSERT_EQ(seen_cb.domain, CUPTI_CB_DOMAIN_DRIVER_API);
	ASSERT_EQ(fk.cuptiEnableDomain(0, h, CUPTI_CB_DOMAIN_DRIVER_API), CUPTI_SUCCESS);
	deliver(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER,
		6);
	ASSERT_EQ(seen_cb.calls, 3);
	ASSERT_EQ(fk.cuptiEnableDomain(1, h, CUPTI_CB_DOMAIN_SIZE), CUPTI_ERROR_INVALID_PARAMETER);
	ASSERT_EQ(fk.cuptiEnableCallback(1, h, CUPTI_CB_DOMAIN_RUNTIME_API,
					 CUPTI_RUNTIME_TRACE_CBID_SIZE),
		  CUPTI_ERROR_INVALID_PARAMETER);
	ASSERT_EQ(fk.cuptiEnableCallback(1, NULL, CUPTI_CB_DOMAIN_RUNTIME_API, launch),
		  CUPTI_ERROR_INVALID_PARAMETER);
	ASSERT_EQ(fk.cuptiUnsubscribe(h), CUPTI_SUCCESS);
	deliver(CUPTI_CB_DOMAIN_RUNTIME_API, launch, CUPTI_API_ENTER, 7);
	ASSERT_EQ(seen_cb.calls, 3);
}

/* ---- the rest of the API ---- */

/* Records name threads by pthread_self() cut to 32 bits, or by gettid() once asked to. */
TEST(fakecupti_thread_id_type)
{
	CUpti_ActivityThreadIdType type = CUPTI_ACTIVITY_THREAD_ID_TYPE_SIZE;

	load_fake();
	ASSERT_EQ(fk.cuptiGetThreadIdType(&type), CUPTI_SUCCESS);
	ASSERT_EQ(type, CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT);
	ASSERT_EQ(fk.fakegpu_thread_id(), (uint32_t)pthread_self());
	ASSERT_EQ(fk.cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM), CUPTI_SUCCESS);
	ASSERT_EQ(fk.cuptiGetThreadIdType(&type), CUPTI_SUCCESS);
	ASSERT_EQ(type, CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
	ASSERT_EQ(fk.fakegpu_thread_id(), (uint32_t)syscall(SYS_gettid));
	ASSERT_EQ(fk.cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SIZE),
		  CUPTI_ERROR_NOT_SUPPORTED);
	ASSERT_EQ(fk.cuptiGetThreadIdType(&type), CUPTI_SUCCESS);
	ASSERT_EQ(type, CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM); /* a refused type changes nothing */
	ASSERT_EQ(fk.cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT), CUPTI_SUCCESS);
	ASSERT_EQ(fk.fakegpu_thread_id(), (uint32_t)pthread_self());
	ASSERT_EQ(fk.cuptiGetThreadIdType(NULL), CUPTI_ERROR_INVALID_PARAMETER);
}

TEST(fakecupti_attributes)
{
	size_t v = 0, size = sizeof(v), big = 1 << 20;

	load_fake();
	ASSERT_EQ(fk.cuptiActivityGetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &size, &v),
		  CUPTI_SUCCESS);
	ASSERT_EQ(v, 3200000); /* the documented default */
	ASSERT_EQ(size, sizeof(size_t));
	ASSERT_EQ(fk.cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &size, &big),
		  CUPTI_SUCCESS);
	ASSERT_EQ(fk.cuptiActivityGetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &size, &v),
		  CUPTI_SUCCESS);
	ASSERT_EQ(v, big);
	size = 4;
	ASSERT_EQ(fk.cuptiActivityGetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &size, &v),
		  CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT);
	size = sizeof(v);
	ASSERT_EQ(
	    fk.cuptiActivityGetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_FORCE_INT, &size, &v),
	    CUPTI_ERROR_INVALID_PARAMETER);
	ASSERT_EQ(fk.cuptiActivityGetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, NULL, &v),
		  CUPTI_ERROR_INVALID_PARAMETER);
}

TEST(fakecupti_timestamp_version_errors)
{
	struct timespec a, b;
	uint64_t ts = 0;
	uint32_t v = 0, dev = 0;
	const char *s = NULL;

	load_fake();
	clock_gettime(CLOCK_REALTIME, &a);
	ASSERT_EQ(fk.cuptiGetTimestamp(&ts), CUPTI_SUCCESS);
	clock_gettime(CLOCK_REALTIME, &b);
	ASSERT_GE(ts, (uint64_t)a.tv_sec * 1000000000u + (uint64_t)a.tv_nsec);
	ASSERT_LE(ts, (uint64_t)b.tv_sec * 1000000000u + (uint64_t)b.tv_nsec);
	ASSERT_EQ(fk.cuptiGetVersion(&v), CUPTI_SUCCESS);
	ASSERT_EQ(v, CUPTI_API_VERSION);
	ASSERT_EQ(fk.cuptiGetResultString(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, &s),
		  CUPTI_SUCCESS);
	ASSERT_STR_EQ(s, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED");
	ASSERT_EQ(fk.cuptiGetLastError(), CUPTI_SUCCESS);
	ASSERT_EQ(fk.cuptiGetTimestamp(NULL), CUPTI_ERROR_INVALID_PARAMETER);
	ASSERT_EQ(fk.cuptiGetLastError(), CUPTI_ERROR_INVALID_PARAMETER);
	ASSERT_EQ(fk.cuptiGetLastError(), CUPTI_SUCCESS);
	/* No fake driver in this process: CUPTI has nobody to ask. */
	ASSERT_EQ(fk.cuptiGetDeviceId(NULL, &dev), CUPTI_ERROR_NOT_INITIALIZED);
}

/* Ids come from the fake driver when it is loaded in the global scope. */
TEST(fakecupti_device_and_context_ids)
{
	CUresult (*init)(unsigned int);
	void *(*context)(int);
	uint32_t (*context_id)(int);
	uint32_t id = 0, dev = 9;
	char path[4096];
	void *drv, *ctx;

	snprintf(path, sizeof(path), "%s/fakecuda/libcuda.so.1", getenv("TEST_BUILD"));
	if (access(path, R_OK))
		SKIP("no fake libcuda.so.1");
	drv = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	ASSERT_MSG(drv, "%s", dlerror());
	load_fake();
	init = (CUresult(*)(unsigned int))dlsym(drv, "cuInit");
	context = (void *(*)(int))dlsym(drv, "fakecuda_context");
	context_id = (uint32_t(*)(int))dlsym(drv, "fakecuda_context_id");
	ASSERT(init && context && context_id);
	ASSERT_EQ(init(0), CUDA_SUCCESS);
	ctx = context(0);
	ASSERT(ctx);
	ASSERT_EQ(fk.cuptiGetContextId(ctx, &id), CUPTI_SUCCESS);
	ASSERT_EQ(id, context_id(0));
	ASSERT_EQ(fk.cuptiGetDeviceId(ctx, &dev), CUPTI_SUCCESS);
	ASSERT_EQ(dev, 0);
	ASSERT_EQ(fk.cuptiGetContextId(NULL, &id), CUPTI_ERROR_INVALID_CONTEXT);
}

TEST(fakecupti_finalize)
{
	CUpti_SubscriberHandle h = NULL;

	setup(1 << 16, CUPTI_ACTIVITY_KIND_RUNTIME);
	ASSERT_EQ(fk.cuptiSubscribe(&h, on_callback, NULL), CUPTI_SUCCESS);
	emit_api(1);
	ASSERT_EQ(fk.cuptiFinalize(), CUPTI_SUCCESS);
	ASSERT_EQ(completed(), 1); /* what it held is returned */
	ASSERT_EQ(cl.got[0].valid, sizeof(CUpti_ActivityAPI));
	ASSERT(!fk.fakegpu_activity_enabled(CUPTI_ACTIVITY_KIND_RUNTIME));
	ASSERT_EQ(fk.cuptiActivityFlushAll(0), CUPTI_ERROR_INVALID_OPERATION);
	/* Attaching again works. */
	ASSERT_EQ(fk.cuptiSubscribe(&h, on_callback, NULL), CUPTI_SUCCESS);
	ASSERT_EQ(fk.cuptiActivityRegisterCallbacks(on_request, on_complete), CUPTI_SUCCESS);
	ASSERT_EQ(fk.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), CUPTI_SUCCESS);
	emit_api(2);
	ASSERT_EQ(fk.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	ASSERT_EQ(completed(), 2);
}

/* ---- the simulated driver's synchronisation and CUDA event records ---- */

/* The records of `kind` in every completed buffer, in order; returns how many (at most max). */
static int records_of(CUpti_ActivityKind kind, CUpti_Activity **out, int max)
{
	CUpti_Activity *recs[512];
	CUptiResult end;
	int n = 0;

	for (int b = 0; b < completed(); b++) {
		int k = walk(fk.cuptiActivityGetNextRecord, &cl.got[b], recs, 512, &end);

		ASSERT_EQ(end, CUPTI_ERROR_MAX_LIMIT_REACHED);
		for (int i = 0; i < k; i++)
			if (recs[i]->kind == kind && n < max)
				out[n++] = recs[i];
	}
	return n;
}

/* The successful DRIVER record of `cbid` (the first, if several). */
static const CUpti_ActivityAPI *driver_call(CUpti_CallbackId cbid)
{
	CUpti_Activity *recs[64];
	int n = records_of(CUPTI_ACTIVITY_KIND_DRIVER, recs, 64);

	for (int i = 0; i < n; i++) {
		const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)recs[i];

		if (a->cbid == cbid && a->returnValue == CUDA_SUCCESS)
			return a;
	}
	ASSERT_MSG(0, "no DRIVER record of cbid %u", cbid);
	return NULL;
}

#define INVALID CUPTI_SYNCHRONIZATION_INVALID_VALUE

/* What one synchronisation record must say. */
struct want_sync {
	CUpti_CallbackId cbid; /* of its driver call */
	CUpti_ActivitySynchronizationType type;
	const char *log_kind;
	uint32_t stream;
	int event;	/* 0: e, 1: e2 (never recorded), -1: none */
	int record;	/* the CUDA_EVENT record it waits on, -1: none */
	bool after_set; /* it returned after the 2 ms memset ended */
};

static void *drv_sym(void *drv, const char *name)
{
	void *p = dlsym(drv, name);

	ASSERT_MSG(p, "%s", name);
	return p;
}

/* A synchronisation record and its ground-truth line say what `w` and the event records say. */
static void check_sync(const CUpti_ActivitySynchronization2 *y, const struct want_sync *w,
		       const CUpti_ActivityCudaEvent2 *const rec[2], uint64_t set_end, json_t *log)
{
	const CUpti_ActivityAPI *call = driver_call(w->cbid);
	const CUpti_ActivityCudaEvent2 *r = w->record >= 0 ? rec[w->record] : NULL;
	char match[512];

	ASSERT_EQ(y->type, w->type);
	ASSERT_EQ(y->correlationId, call->correlationId);
	ASSERT_EQ(y->start, call->start);
	ASSERT(y->end >= y->start && y->end <= call->end);
	ASSERT(!w->after_set || y->end >= set_end);
	ASSERT_EQ(y->contextId, 1);
	ASSERT_EQ(y->streamId, w->stream);
	ASSERT_EQ(y->returnValue, CUDA_SUCCESS);
	if (w->event < 0)
		ASSERT_EQ(y->cudaEventId, INVALID);
	else if (w->event == 0)
		ASSERT_EQ(y->cudaEventId, rec[0]->eventId);
	else
		ASSERT(y->cudaEventId != INVALID && y->cudaEventId != rec[0]->eventId);
	ASSERT_EQ(y->cudaEventSyncId, r ? r->cudaEventSyncId : INVALID);
	snprintf(match, sizeof(match),
		 "{\"type\":\"sync\",\"kind\":\"%s\",\"corr\":%u,\"device\":0,\"stream\":%lld,"
		 "\"event_record_corr\":%lld,\"event_record_stream\":%lld,\"start\":%llu,"
		 "\"end\":%llu}",
		 w->log_kind, y->correlationId, w->stream == INVALID ? -1LL : (long long)w->stream,
		 r ? (long long)r->correlationId : -1LL, r ? (long long)r->streamId : -1LL,
		 (unsigned long long)y->start, (unsigned long long)y->end);
	ASSERT_MSG(gtlog_count(log, match) == 1, "%s", match);
}

/*
 * The simulated driver called directly (not under a runtime): one SYNCHRONIZATION record per
 * successful stream, event and context synchronisation and stream wait, one CUDA_EVENT record
 * per event record, with the driver calls' correlation ids and times, their streams and event
 * sync ids, and the same in the ground-truth log; none while the kinds are off (the log still
 * has the call), none for a failed call.
 */
TEST(fakecupti_driver_sync_records)
{
	const char *log_path = proc_tmp_file();
	CUstream s, pt = CU_STREAM_PER_THREAD;
	unsigned long long s_id = 0, pt_id = 0;
	CUpti_Activity *syncs[32], *events[8];
	const CUpti_ActivityCudaEvent2 *rec[2];
	char path[4096];
	CUdeviceptr d;
	CUevent e, e2;
	uint64_t set_end;
	json_t *log, *set;
	void *drv;

	setenv("FAKEGPU_LOG", log_path, 1);
	setenv("FAKEGPU_COPY_NS", "2000000", 1);
	snprintf(path, sizeof(path), "%s/fakecuda/libcuda.so.1", getenv("TEST_BUILD"));
	drv = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	ASSERT_MSG(drv, "%s", dlerror());
	setup(1 << 16, CUPTI_ACTIVITY_KIND_RUNTIME);
#define CU(name, type, ...) ((CUresult(*) type)drv_sym(drv, #name))(__VA_ARGS__)
	ASSERT_EQ(CU(cuInit, (unsigned), 0), CUDA_SUCCESS);
	ASSERT_EQ(CU(cuMemAlloc_v2, (CUdeviceptr *, size_t), &d, 4096), CUDA_SUCCESS);
	ASSERT_EQ(CU(cuStreamCreate, (CUstream *, unsigned), &s, 0), CUDA_SUCCESS);
	ASSERT_EQ(CU(cuEventCreate, (CUevent *, unsigned), &e, 0), CUDA_SUCCESS);
	ASSERT_EQ(CU(cuEventCreate, (CUevent *, unsigned), &e2, 0), CUDA_SUCCESS);
	ASSERT_EQ(CU(cuStreamGetId, (CUstream, unsigned long long *), s, &s_id), CUDA_SUCCESS);
	ASSERT_EQ(CU(cuStreamGetId, (CUstream, unsigned long long *), pt, &pt_id), CUDA_SUCCESS);
	/* The kinds are off: the log has these, CUPTI nothing. */
	ASSERT_EQ(CU(cuEventRecord, (CUevent, CUstream), e, s), CUDA_SUCCESS);
	ASSERT_EQ(CU(cuStreamSynchronize, (CUstream), s), CUDA_SUCCESS);

	ASSERT_EQ(fk.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER), CUPTI_SUCCESS);
	ASSERT_EQ(fk.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION), CUPTI_SUCCESS);
	ASSERT_EQ(fk.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CUDA_EVENT), CUPTI_SUCCESS);
	ASSERT_EQ(
	    CU(cuMemsetD8Async, (CUdeviceptr, unsigned char, size_t, CUstream), d, 0, 4096, s),
	    CUDA_SUCCESS);
	ASSERT_EQ(CU(cuEventRecord, (CUevent, CUstream), e, s), CUDA_SUCCESS);
	ASSERT_EQ(CU(cuStreamWaitEvent_ptsz, (CUstream, CUevent, unsigned), NULL, e, 0),
		  CUDA_SUCCESS);
	ASSERT_EQ(CU(cuEventRecordWithFlags_ptsz, (CUevent, CUstream, unsigned), e, NULL, 0),
		  CUDA_SUCCESS);
	ASSERT_EQ(CU(cuEventSynchronize, (CUevent), e), CUDA_SUCCESS);
	ASSERT_EQ(CU(cuStreamSynchronize, (CUstream), s), CUDA_SUCCESS);
	ASSERT_EQ(CU(cuStreamSynchronize_ptsz, (CUstream), NULL), CUDA_SUCCESS);
	ASSERT_EQ(CU(cuStreamWaitEvent, (CUstream, CUevent, unsigned), NULL, e2, 0), CUDA_SUCCESS);
	ASSERT_EQ(CU(cuCtxSynchronize, (void)), CUDA_SUCCESS);
	ASSERT_EQ(CU(cuCtxSynchronize_v2, (CUcontext), NULL), CUDA_SUCCESS);
	ASSERT_EQ(CU(cuEventSynchronize, (CUevent), NULL), CUDA_ERROR_INVALID_HANDLE);
#undef CU
	ASSERT_EQ(fk.cuptiActivityFlushAll(0), CUPTI_SUCCESS);

	/* e on s, then on the per-thread stream: one event id, a newer sync id each time */
	ASSERT_EQ(records_of(CUPTI_ACTIVITY_KIND_CUDA_EVENT, events, 8), 2);
	for (int i = 0; i < 2; i++) {
		rec[i] = (const CUpti_ActivityCudaEvent2 *)events[i];
		ASSERT_EQ(rec[i]->correlationId,
			  driver_call(i ? CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz
					: CUPTI_DRIVER_TRACE_CBID_cuEventRecord)
			      ->correlationId);
		ASSERT_EQ(rec[i]->streamId, i ? pt_id : s_id);
		ASSERT_EQ(rec[i]->contextId, 1);
		ASSERT_EQ(rec[i]->deviceId, 0);
		ASSERT_EQ(rec[i]->eventId, rec[0]->eventId);
	}
	ASSERT_GT(rec[0]->cudaEventSyncId, 1); /* the record made while the kind was off had 1 */
	ASSERT_GT(rec[1]->cudaEventSyncId, rec[0]->cudaEventSyncId);

	const struct want_sync want[] = {
	    {CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz,
	     CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, "stream_wait_event",
	     (uint32_t)pt_id, 0, 0, false},
	    {CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize,
	     CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, "event", INVALID, 0, 1, true},
	    {CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
	     CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, "stream", (uint32_t)s_id, -1,
	     -1, true},
	    {CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz,
	     CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, "stream", (uint32_t)pt_id, -1,
	     -1, true},
	    {CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent,
	     CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, "stream_wait_event", 7, 1, -1,
	     true},
	    {CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
	     CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, "context", INVALID, -1, -1,
	     true},
	    {CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2,
	     CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, "context", INVALID, -1, -1,
	     true},
	};

	log = gtlog_load(log_path);
	ASSERT(log);
	/* one more in the log: the stream sync while the kinds were off */
	ASSERT_EQ(gtlog_count(log, "{\"type\":\"sync\"}"), ARRAY_SIZE(want) + 1);
	set = gtlog_filter(log, "{\"type\":\"gpu\",\"kind\":\"memset\"}");
	ASSERT_EQ(json_array_size(set), 1);
	set_end = (uint64_t)gtlog_int(json_array_get(set, 0), "end");
	ASSERT_EQ(records_of(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, syncs, 32), ARRAY_SIZE(want));
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		check_sync((const CUpti_ActivitySynchronization2 *)syncs[i], &want[i], rec, set_end,
			   log);
	json_decref(set);
	json_decref(log);
}
