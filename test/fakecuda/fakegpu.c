/*
 * The simulated CUPTI core (libfakegpu.so): which activity kinds are on, the client's activity
 * buffers and their delivery, fault injection, external correlation and the callback subscriber.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <time.h>

#include "test/fakecuda/fakegpu.h"

#define EXT_DEPTH  64	/* external ids per thread and kind */
#define CBID_MAX   1024 /* above every domain's CBID_SIZE */
#define RECORD_MAX 256	/* above every layout's size */

#define N_KINDS	    CUPTI_ACTIVITY_KIND_COUNT
#define N_EXT_KINDS CUPTI_EXTERNAL_CORRELATION_KIND_SIZE

/* A record layout the simulation writes, and where its timestamps are (offset 0: none). */
struct layout {
	size_t size;
	size_t ts[3];
};

#define KERNEL_TS                                                                       \
	offsetof(CUpti_ActivityKernel10, start), offsetof(CUpti_ActivityKernel10, end), \
	    offsetof(CUpti_ActivityKernel10, completed)
#define API_TS offsetof(CUpti_ActivityAPI, start), offsetof(CUpti_ActivityAPI, end)

static const struct layout layouts[N_KINDS] = {
    [CUPTI_ACTIVITY_KIND_KERNEL] = {.size = sizeof(CUpti_ActivityKernel10), .ts = {KERNEL_TS}},
    [CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] = {.size = sizeof(CUpti_ActivityKernel10),
					       .ts = {KERNEL_TS}},
    [CUPTI_ACTIVITY_KIND_MEMCPY] = {.size = sizeof(CUpti_ActivityMemcpy6),
				    .ts = {offsetof(CUpti_ActivityMemcpy6, start),
					   offsetof(CUpti_ActivityMemcpy6, end)}},
    [CUPTI_ACTIVITY_KIND_MEMSET] = {.size = sizeof(CUpti_ActivityMemset4),
				    .ts = {offsetof(CUpti_ActivityMemset4, start),
					   offsetof(CUpti_ActivityMemset4, end)}},
    [CUPTI_ACTIVITY_KIND_MEMORY2] = {.size = sizeof(CUpti_ActivityMemory4),
				     .ts = {offsetof(CUpti_ActivityMemory4, timestamp)}},
    [CUPTI_ACTIVITY_KIND_MEMORY_POOL] = {.size = sizeof(CUpti_ActivityMemoryPool3),
					 .ts = {offsetof(CUpti_ActivityMemoryPool3, timestamp)}},
    [CUPTI_ACTIVITY_KIND_RUNTIME] = {.size = sizeof(CUpti_ActivityAPI), .ts = {API_TS}},
    [CUPTI_ACTIVITY_KIND_DRIVER] = {.size = sizeof(CUpti_ActivityAPI), .ts = {API_TS}},
    [CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION] = {.size =
						      sizeof(CUpti_ActivityExternalCorrelation)},
    [CUPTI_ACTIVITY_KIND_SYNCHRONIZATION] = {.size = sizeof(CUpti_ActivitySynchronization2),
					     .ts = {offsetof(CUpti_ActivitySynchronization2, start),
						    offsetof(CUpti_ActivitySynchronization2, end)}},
    /* Its deviceTimestamp stays 0 (cuptiActivityEnableCudaEventDeviceTimestamps is off). */
    [CUPTI_ACTIVITY_KIND_CUDA_EVENT] = {.size = sizeof(CUpti_ActivityCudaEvent2)},
    [CUPTI_ACTIVITY_KIND_OVERHEAD] = {.size = sizeof(CUpti_ActivityOverhead3),
				      .ts = {offsetof(CUpti_ActivityOverhead3, start),
					     offsetof(CUpti_ActivityOverhead3, end)}},
};

/* Fault injection, read from the environment when the library loads; read-only after. */
static struct {
	unsigned long drop_every, zero_ts_every, unknown_every;
	bool subscribe_taken;
	bool enable_fail[N_KINDS];
} faults;

/* One flag per kind: written by cuptiActivityEnable/Disable, read by every emit. */
static bool enabled[N_KINDS];
static unsigned long record_seq; /* records offered while enabled: the "N-th record" of faults */
static size_t dropped;
static uint32_t correlation;
static bool client_zeroes; /* CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER */
static bool system_tids;   /* cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) */

/* A buffer being filled: one per thread (CUDA 13's default) or the one shared lane. */
struct lane {
	pthread_mutex_t mu; /* the fields below but next */
	struct lane *next;  /* in lanes.list, under lanes.mu */
	bool orphan;	    /* its thread has exited: freed once its buffer is returned */
	uint8_t *buf;
	size_t size, used, max_records, records;
};

static struct {
	pthread_mutex_t mu; /* the list */
	struct lane *list;
	struct lane shared;
	bool per_thread; /* CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER */
	pthread_key_t key;
} lanes = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .shared = {.mu = PTHREAD_MUTEX_INITIALIZER},
    .per_thread = true,
};

/* A buffer returned to the client, waiting in the queue for the completion callback. */
struct done {
	struct done *next;
	uint8_t *buf;
	size_t size, valid;
};

static struct {
	pthread_mutex_t mu; /* the queue, callbacks, period and worker state */
	pthread_cond_t wake;
	struct done *head, **tail;
	CUpti_BuffersCallbackRequestFunc request;
	CUpti_BuffersCallbackCompleteFunc complete;
	uint32_t period_ms;
	bool running, stop;
	pthread_t worker;
	/* Held while completion callbacks run: keeps buffers in order, makes a flush wait. */
	pthread_mutex_t deliver;
	/* Held while the client's request callback runs: one buffer request at a time. */
	pthread_mutex_t request_mu;
} q = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .tail = &q.head,
    .deliver = PTHREAD_MUTEX_INITIALIZER,
    .request_mu = PTHREAD_MUTEX_INITIALIZER,
};

/* The one callback subscriber; fn and the flags are read without the lock by every callback. */
static struct {
	pthread_mutex_t mu;
	bool taken;
	CUpti_CallbackFunc fn;
	void *userdata;
	bool on[CUPTI_CB_DOMAIN_SIZE][CBID_MAX];
} sub = {.mu = PTHREAD_MUTEX_INITIALIZER};

static const uint32_t cbid_count[CUPTI_CB_DOMAIN_SIZE] = {
    [CUPTI_CB_DOMAIN_DRIVER_API] = CUPTI_DRIVER_TRACE_CBID_SIZE,
    [CUPTI_CB_DOMAIN_RUNTIME_API] = CUPTI_RUNTIME_TRACE_CBID_SIZE,
    [CUPTI_CB_DOMAIN_RESOURCE] = CUPTI_CBID_RESOURCE_SIZE,
    [CUPTI_CB_DOMAIN_SYNCHRONIZE] = CUPTI_CBID_SYNCHRONIZE_SIZE,
    [CUPTI_CB_DOMAIN_NVTX] = CUPTI_CBID_NVTX_SIZE,
    [CUPTI_CB_DOMAIN_STATE] = CUPTI_CBID_STATE_SIZE,
};
_Static_assert(CUPTI_DRIVER_TRACE_CBID_SIZE <= CBID_MAX &&
		   CUPTI_RUNTIME_TRACE_CBID_SIZE <= CBID_MAX,
	       "CBID_MAX too small");

static __thread struct lane *my_lane;
static __thread bool in_request, in_delivery, in_overhead;
static __thread uint64_t ext_stack[N_EXT_KINDS][EXT_DEPTH];
static __thread unsigned ext_depth[N_EXT_KINDS];

static void lane_thread_exit(void *arg);
static void flush_lanes(void);
static void overhead(CUpti_ActivityOverheadKind kind, const char *what, uint64_t start_ns);

/* "all" or a comma-separated list of kind numbers. */
static void parse_kind_list(const char *s, bool *out)
{
	char *end;

	if (!strcmp(s, "all")) {
		memset(out, 1, N_KINDS * sizeof(*out));
		return;
	}
	while (*s) {
		unsigned long kind = strtoul(s, &end, 10);

		if (end == s)
			break;
		if (kind < N_KINDS)
			out[kind] = true;
		s = *end == ',' ? end + 1 : end;
	}
}

static unsigned long env_ulong(const char *name)
{
	const char *s = getenv(name);

	return s ? strtoul(s, NULL, 10) : 0;
}

__attribute__((constructor)) static void fakegpu_load(void)
{
	const char *s = getenv("FAKEGPU_CUPTI_ENABLE_FAIL");

	faults.drop_every = env_ulong("FAKEGPU_CUPTI_DROP_EVERY");
	faults.zero_ts_every = env_ulong("FAKEGPU_CUPTI_ZERO_TS_EVERY");
	faults.unknown_every = env_ulong("FAKEGPU_CUPTI_UNKNOWN_KIND_EVERY");
	faults.subscribe_taken = env_ulong("FAKEGPU_CUPTI_SUBSCRIBE_TAKEN") != 0;
	if (s)
		parse_kind_list(s, faults.enable_fail);
	lanes.list = &lanes.shared;
	if (pthread_key_create(&lanes.key, lane_thread_exit))
		lanes.per_thread = false;
}

uint64_t fakegpu_timestamp(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * The client's clock (cuptiActivityRegisterTimestampCallback), for what CUPTI reports, and where
 * it stood against the simulation's when it came: its rate (Kineto's counts TSC ticks) is
 * measured from there.
 */
static struct {
	CUpti_TimestampCallbackFunc fn; /* set last, with release */
	uint64_t sim0, client0;
} client;

int fakegpu_timestamp_callback(CUpti_TimestampCallbackFunc fn)
{
	if (!fn)
		return -EINVAL;
	client.sim0 = fakegpu_timestamp();
	client.client0 = fn();
	__atomic_store_n(&client.fn, fn, __ATOMIC_RELEASE);
	return 0;
}

uint64_t fakegpu_reported_now(void)
{
	CUpti_TimestampCallbackFunc fn = __atomic_load_n(&client.fn, __ATOMIC_ACQUIRE);

	return fn ? fn() : fakegpu_timestamp();
}

/* A time of the simulation's clock as the client's clock reads the same instant. */
static uint64_t reported(uint64_t t)
{
	CUpti_TimestampCallbackFunc fn = __atomic_load_n(&client.fn, __ATOMIC_ACQUIRE);
	uint64_t sim, now;
	double rate = 1.0;

	if (!fn || !t || t >= 1ull << 63)
		return t;
	sim = fakegpu_timestamp();
	now = fn();
	if (sim > client.sim0 + 1000000 && now > client.client0)
		rate = (double)(now - client.client0) / (double)(sim - client.sim0);
	return now + (uint64_t)(int64_t)((double)(int64_t)(t - sim) * rate);
}

size_t fakegpu_record_size(CUpti_ActivityKind kind)
{
	return (unsigned)kind < N_KINDS ? layouts[kind].size : 0;
}

bool fakegpu_activity_enabled(CUpti_ActivityKind kind)
{
	return (unsigned)kind < N_KINDS && __atomic_load_n(&enabled[kind], __ATOMIC_ACQUIRE);
}

/* Per API: 0 follows its kind, 1 on, -1 off (cuptiActivityEnableRuntimeApi/DriverApi). */
static int8_t runtime_api[CUPTI_RUNTIME_TRACE_CBID_SIZE], driver_api[CUPTI_DRIVER_TRACE_CBID_SIZE];

static int8_t *api_override(CUpti_ActivityKind kind, uint32_t cbid)
{
	if (kind == CUPTI_ACTIVITY_KIND_RUNTIME && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE)
		return &runtime_api[cbid];
	if (kind == CUPTI_ACTIVITY_KIND_DRIVER && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE)
		return &driver_api[cbid];
	return NULL;
}

bool fakegpu_api_enabled(CUpti_ActivityKind kind, uint32_t cbid)
{
	int8_t *o = api_override(kind, cbid);
	int8_t v = o ? __atomic_load_n(o, __ATOMIC_ACQUIRE) : 0;

	return v ? v > 0 : fakegpu_activity_enabled(kind);
}

int fakegpu_api_set_enabled(CUpti_ActivityKind kind, uint32_t cbid, bool on)
{
	int8_t *o = api_override(kind, cbid);

	if (!o)
		return -EINVAL;
	__atomic_store_n(o, on ? 1 : -1, __ATOMIC_RELEASE);
	return 0;
}

int fakegpu_activity_set_enabled(CUpti_ActivityKind kind, bool on)
{
	if ((unsigned)kind >= N_KINDS || kind == CUPTI_ACTIVITY_KIND_INVALID)
		return -EINVAL;
	if (on && faults.enable_fail[kind])
		return -EIO;
	__atomic_store_n(&enabled[kind], on, __ATOMIC_RELEASE);
	return 0;
}

size_t fakegpu_activity_take_dropped(void)
{
	return __atomic_exchange_n(&dropped, 0, __ATOMIC_RELAXED);
}

static void count_drop(void)
{
	__atomic_add_fetch(&dropped, 1, __ATOMIC_RELAXED);
}

void fakegpu_activity_set_per_thread(bool per_thread)
{
	__atomic_store_n(&lanes.per_thread, per_thread, __ATOMIC_RELEASE);
}

void fakegpu_activity_set_client_zeroes(bool zeroes)
{
	__atomic_store_n(&client_zeroes, zeroes, __ATOMIC_RELAXED);
}

void fakegpu_activity_set_system_tids(bool system)
{
	__atomic_store_n(&system_tids, system, __ATOMIC_RELAXED);
}

bool fakegpu_activity_system_tids(void)
{
	return __atomic_load_n(&system_tids, __ATOMIC_RELAXED);
}

uint32_t fakegpu_thread_id(void)
{
	if (fakegpu_activity_system_tids())
		return (uint32_t)syscall(SYS_gettid);
	return (uint32_t)pthread_self();
}

/* ---- delivery: a FIFO of returned buffers, drained by the worker or by a flush ---- */

static void queue_push(uint8_t *buf, size_t size, size_t valid)
{
	struct done *d = malloc(sizeof(*d));

	if (!d) {
		fprintf(stderr, "fakegpu: out of memory, a %zu-byte activity buffer is lost\n",
			size);
		return;
	}
	*d = (struct done){.buf = buf, .size = size, .valid = valid};
	pthread_mutex_lock(&q.mu);
	*q.tail = d;
	q.tail = &d->next;
	if (!q.period_ms)
		pthread_cond_signal(&q.wake);
	pthread_mutex_unlock(&q.mu);
}

/*
 * Calls the completion callback for every queued buffer, in order. With `flush`, first returns
 * every lane's buffer, under the same lock, so that they are delivered here and not by the worker.
 */
static void deliver_pending(bool flush)
{
	pthread_mutex_lock(&q.deliver);
	if (flush)
		flush_lanes();
	in_delivery = true;
	for (;;) {
		CUpti_BuffersCallbackCompleteFunc complete;
		struct done *d;

		pthread_mutex_lock(&q.mu);
		d = q.head;
		complete = q.complete;
		if (d && !(q.head = d->next))
			q.tail = &q.head;
		pthread_mutex_unlock(&q.mu);
		if (!d)
			break;
		if (complete)
			complete(NULL, 0, d->buf, d->size, d->valid);
		free(d);
	}
	in_delivery = false;
	pthread_mutex_unlock(&q.deliver);
}

/* Without a flush period, wakes when a buffer is full; with one, at every period. */
static void *worker_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&q.mu);
	while (!q.stop) {
		if (q.period_ms) {
			struct timespec t;
			uint64_t at = fakegpu_timestamp() + q.period_ms * 1000000ull;

			t.tv_sec = (time_t)(at / 1000000000u);
			t.tv_nsec = (long)(at % 1000000000u);
			pthread_cond_timedwait(&q.wake, &q.mu, &t);
		} else if (!q.head) {
			pthread_cond_wait(&q.wake, &q.mu);
		}
		pthread_mutex_unlock(&q.mu);
		deliver_pending(false);
		pthread_mutex_lock(&q.mu);
	}
	pthread_mutex_unlock(&q.mu);
	return NULL;
}

int fakegpu_activity_register(CUpti_BuffersCallbackRequestFunc request,
			      CUpti_BuffersCallbackCompleteFunc complete)
{
	int ret = 0;

	if (!request || !complete)
		return -EINVAL;
	pthread_mutex_lock(&q.mu);
	q.request = request;
	q.complete = complete;
	q.stop = false;
	if (!q.running) {
		ret = -pthread_create(&q.worker, NULL, worker_main, NULL);
		q.running = !ret;
	}
	pthread_mutex_unlock(&q.mu);
	return ret;
}

void fakegpu_activity_flush_period(uint32_t period_ms)
{
	pthread_mutex_lock(&q.mu);
	q.period_ms = period_ms;
	pthread_cond_signal(&q.wake);
	pthread_mutex_unlock(&q.mu);
}

/* ---- lanes: where records are written ---- */

/* Hands the lane's buffer to the delivery queue; the caller holds l->mu. */
static void lane_retire(struct lane *l)
{
	if (!l->buf)
		return;
	queue_push(l->buf, l->size, l->used);
	l->buf = NULL;
	l->size = l->used = l->records = l->max_records = 0;
}

static bool lane_fits(const struct lane *l, size_t size)
{
	return l->buf && l->used + size <= l->size &&
	       (!l->max_records || l->records < l->max_records);
}

static struct lane *current_lane(void)
{
	struct lane *l;

	if (!__atomic_load_n(&lanes.per_thread, __ATOMIC_ACQUIRE))
		return &lanes.shared;
	if (my_lane)
		return my_lane;
	l = calloc(1, sizeof(*l));
	if (!l)
		return &lanes.shared;
	pthread_mutex_init(&l->mu, NULL);
	pthread_mutex_lock(&lanes.mu);
	l->next = lanes.list;
	lanes.list = l;
	pthread_mutex_unlock(&lanes.mu);
	pthread_setspecific(lanes.key, l);
	my_lane = l;
	return l;
}

/* Its buffer stays until the next flush returns it, as a live thread's would. */
static void lane_thread_exit(void *arg)
{
	struct lane *l = arg;

	pthread_mutex_lock(&l->mu);
	l->orphan = true;
	pthread_mutex_unlock(&l->mu);
	my_lane = NULL;
}

/* Returns every lane's buffer that holds records; frees the lanes of exited threads. */
static void flush_lanes(void)
{
	pthread_mutex_lock(&lanes.mu);
	for (struct lane **p = &lanes.list; *p;) {
		struct lane *l = *p;
		bool gone;

		pthread_mutex_lock(&l->mu);
		if (l->used)
			lane_retire(l);
		gone = l->orphan && !l->buf;
		pthread_mutex_unlock(&l->mu);
		if (!gone) {
			p = &l->next;
			continue;
		}
		*p = l->next;
		pthread_mutex_destroy(&l->mu);
		free(l);
	}
	pthread_mutex_unlock(&lanes.mu);
}

/*
 * Gets the client a chance to give `l` a buffer of at least `need` bytes. Client code runs with
 * no lock of ours held but request_mu, so it may call back into CUPTI.
 */
static int lane_refill(struct lane *l, size_t need)
{
	CUpti_BuffersCallbackRequestFunc request;
	size_t size = 0, max = 0;
	uint64_t start_ns = 0;
	uint8_t *buf = NULL;
	bool have;
	int ret = 0;

	pthread_mutex_lock(&q.request_mu);
	pthread_mutex_lock(&l->mu);
	have = l->buf != NULL; /* another thread refilled the shared lane meanwhile */
	pthread_mutex_unlock(&l->mu);
	pthread_mutex_lock(&q.mu);
	request = q.request;
	pthread_mutex_unlock(&q.mu);
	if (have)
		goto out;
	ret = -EPERM;
	if (!request)
		goto out;
	in_request = true;
	start_ns = fakegpu_timestamp();
	request(&buf, &size, &max);
	in_request = false;
	ret = -ENOBUFS;
	if (!buf)
		goto out;
	if (size < need) { /* size 0 too: the client gets its buffer back unused */
		queue_push(buf, size, 0);
		goto out;
	}
	if (!__atomic_load_n(&client_zeroes, __ATOMIC_RELAXED))
		memset(buf, 0, size);
	pthread_mutex_lock(&l->mu);
	l->buf = buf;
	l->size = size;
	l->max_records = max;
	l->used = l->records = 0;
	pthread_mutex_unlock(&l->mu);
	ret = 0;
out:
	pthread_mutex_unlock(&q.request_mu);
	/* Its record needs the buffer it asked for: without one, none (nor a request for it). */
	if (!ret && start_ns)
		overhead(CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST, "buffer_request",
			 start_ns);
	return ret;
}

static void lane_write(struct lane *l, const uint8_t *rec, size_t size, bool last)
{
	pthread_mutex_lock(&l->mu);
	while (!lane_fits(l, size)) {
		lane_retire(l);
		pthread_mutex_unlock(&l->mu);
		if (lane_refill(l, size) < 0) {
			count_drop();
			return;
		}
		pthread_mutex_lock(&l->mu);
	}
	memcpy(l->buf + l->used, rec, size);
	l->used += size;
	l->records++;
	if (last || (l->max_records && l->records >= l->max_records))
		lane_retire(l);
	pthread_mutex_unlock(&l->mu);
}

static bool nth(unsigned long every, unsigned long n)
{
	return every && n % every == 0;
}

void fakegpu_activity_emit(const CUpti_Activity *record, size_t size)
{
	uint8_t rec[RECORD_MAX] __attribute__((aligned(8)));
	static const CUpti_ActivityKind unknown = FAKEGPU_UNKNOWN_KIND;
	const struct layout *lay;
	unsigned long n;

	if (!record ||
	    !(record->kind == CUPTI_ACTIVITY_KIND_RUNTIME ||
		      record->kind == CUPTI_ACTIVITY_KIND_DRIVER
		  ? fakegpu_api_enabled(record->kind, ((const CUpti_ActivityAPI *)record)->cbid)
		  : fakegpu_activity_enabled(record->kind)))
		return;
	lay = &layouts[record->kind];
	if (size != lay->size) {
		fprintf(stderr,
			"fakegpu: record of kind %d has %zu bytes, its layout %zu: ignored\n",
			record->kind, size, lay->size);
		return;
	}
	n = __atomic_add_fetch(&record_seq, 1, __ATOMIC_RELAXED);
	if (nth(faults.drop_every, n) || in_request) {
		count_drop();
		return;
	}
	memcpy(rec, record, size);
	for (int i = 0; i < 3 && lay->ts[i]; i++) {
		uint64_t t;

		memcpy(&t, rec + lay->ts[i], sizeof(t));
		t = nth(faults.zero_ts_every, n) ? 0 : reported(t);
		memcpy(rec + lay->ts[i], &t, sizeof(t));
	}
	if (nth(faults.unknown_every, n))
		memcpy(rec, &unknown, sizeof(unknown));
	/* A client stops walking a buffer at an unknown kind: end the buffer there. */
	lane_write(current_lane(), rec, size, nth(faults.unknown_every, n));
}

/* The fake driver's ground-truth log, when it is loaded in the global scope. */
static void (*log_line)(const char *fmt, ...);
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static void find_log(void)
{
	*(void **)&log_line = dlsym(RTLD_DEFAULT, "fakecuda_log");
}

/*
 * CUPTI's own time on the calling thread, from start_ns to now: its OVERHEAD record (when the
 * kind is enabled, in the thread's buffer like any other) and its log line, which is written
 * either way. The record's own buffer request, if it needs one, is not recorded again.
 */
static void overhead(CUpti_ActivityOverheadKind kind, const char *what, uint64_t start_ns)
{
	CUpti_ActivityOverhead3 rec = {
	    .kind = CUPTI_ACTIVITY_KIND_OVERHEAD,
	    .overheadKind = kind,
	    .objectKind = CUPTI_ACTIVITY_OBJECT_THREAD,
	    .objectId.pt = {.processId = (uint32_t)getpid(), .threadId = fakegpu_thread_id()},
	    .start = start_ns,
	    .end = fakegpu_timestamp(),
	};

	if (in_overhead)
		return;
	in_overhead = true;
	fakegpu_activity_emit((const CUpti_Activity *)&rec, sizeof(rec));
	in_overhead = false;
	pthread_once(&log_once, find_log);
	if (log_line)
		log_line("\"type\":\"overhead\",\"kind\":\"%s\",\"pid\":%d,\"tid\":%ld,"
			 "\"start\":%llu,\"end\":%llu",
			 what, (int)getpid(), (long)syscall(SYS_gettid),
			 (unsigned long long)rec.start, (unsigned long long)rec.end);
}

int fakegpu_activity_flush_all(void)
{
	uint64_t start_ns = fakegpu_timestamp();
	bool registered;

	pthread_mutex_lock(&q.mu);
	registered = q.request != NULL;
	pthread_mutex_unlock(&q.mu);
	if (!registered)
		return -EPERM;
	/* From inside a completion callback, the delivery loop under way returns them. */
	if (in_delivery)
		flush_lanes();
	else
		deliver_pending(true);
	/* Its record waits in the calling thread's buffer for the next flush. */
	overhead(CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH, "buffer_flush", start_ns);
	return 0;
}

/* ---- external correlation ---- */

static bool ext_kind_ok(CUpti_ExternalCorrelationKind kind)
{
	return kind > CUPTI_EXTERNAL_CORRELATION_KIND_INVALID && kind < N_EXT_KINDS;
}

int fakegpu_external_push(CUpti_ExternalCorrelationKind kind, uint64_t id)
{
	if (!ext_kind_ok(kind))
		return -EINVAL;
	if (ext_depth[kind] == EXT_DEPTH)
		return -ENOSPC;
	ext_stack[kind][ext_depth[kind]++] = id;
	return 0;
}

int fakegpu_external_pop(CUpti_ExternalCorrelationKind kind, uint64_t *id)
{
	if (!ext_kind_ok(kind))
		return -EINVAL;
	if (!ext_depth[kind])
		return -ENOENT;
	ext_depth[kind]--;
	if (id)
		*id = ext_stack[kind][ext_depth[kind]];
	return 0;
}

uint32_t fakegpu_next_correlation(void)
{
	uint32_t id = __atomic_add_fetch(&correlation, 1, __ATOMIC_RELAXED);

	/* They precede an API record: none while neither RUNTIME nor DRIVER is recorded. */
	if (!fakegpu_activity_enabled(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) ||
	    !(fakegpu_activity_enabled(CUPTI_ACTIVITY_KIND_RUNTIME) ||
	      fakegpu_activity_enabled(CUPTI_ACTIVITY_KIND_DRIVER)))
		return id;
	for (int kind = CUPTI_EXTERNAL_CORRELATION_KIND_UNKNOWN; kind < N_EXT_KINDS; kind++) {
		CUpti_ActivityExternalCorrelation r = {
		    .kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
		    .externalKind = (CUpti_ExternalCorrelationKind)kind,
		    .correlationId = id,
		};

		if (!ext_depth[kind])
			continue;
		r.externalId = ext_stack[kind][ext_depth[kind] - 1];
		fakegpu_activity_emit((const CUpti_Activity *)&r, sizeof(r));
	}
	return id;
}

/* ---- the callback API ---- */

int fakegpu_subscribe(CUpti_CallbackFunc callback, void *userdata)
{
	int ret = -EBUSY;

	if (faults.subscribe_taken)
		return ret;
	pthread_mutex_lock(&sub.mu);
	if (!sub.taken) {
		sub.taken = true;
		__atomic_store_n(&sub.userdata, userdata, __ATOMIC_RELAXED);
		__atomic_store_n(&sub.fn, callback, __ATOMIC_RELEASE);
		ret = 0;
	}
	pthread_mutex_unlock(&sub.mu);
	return ret;
}

static void set_range(CUpti_CallbackDomain domain, uint32_t from, uint32_t to, bool on)
{
	for (uint32_t i = from; i < to; i++)
		__atomic_store_n(&sub.on[domain][i], on, __ATOMIC_RELAXED);
}

int fakegpu_unsubscribe(void)
{
	int ret = -EINVAL;

	pthread_mutex_lock(&sub.mu);
	if (sub.taken) {
		for (int d = 0; d < CUPTI_CB_DOMAIN_SIZE; d++)
			set_range((CUpti_CallbackDomain)d, 0, CBID_MAX, false);
		__atomic_store_n(&sub.fn, NULL, __ATOMIC_RELEASE);
		sub.taken = false;
		ret = 0;
	}
	pthread_mutex_unlock(&sub.mu);
	return ret;
}

static bool cbid_ok(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	return domain > CUPTI_CB_DOMAIN_INVALID && domain < CUPTI_CB_DOMAIN_SIZE && cbid > 0 &&
	       cbid < cbid_count[domain];
}

int fakegpu_callback_set_enabled(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, bool on)
{
	int ret = -EINVAL;
	bool all = cbid == FAKEGPU_ALL_CBIDS;

	if (!cbid_ok(domain, all ? 1 : cbid))
		return ret;
	pthread_mutex_lock(&sub.mu);
	if (sub.taken) {
		set_range(domain, all ? 1 : cbid, all ? cbid_count[domain] : cbid + 1, on);
		ret = 0;
	}
	pthread_mutex_unlock(&sub.mu);
	return ret;
}

int fakegpu_callback_get_enabled(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, bool *on)
{
	int ret = -EINVAL;

	if (!cbid_ok(domain, cbid) || !on)
		return ret;
	pthread_mutex_lock(&sub.mu);
	if (sub.taken) {
		*on = __atomic_load_n(&sub.on[domain][cbid], __ATOMIC_RELAXED);
		ret = 0;
	}
	pthread_mutex_unlock(&sub.mu);
	return ret;
}

void fakegpu_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
	CUpti_CallbackFunc fn;

	if (!cbid_ok(domain, cbid) || !__atomic_load_n(&sub.on[domain][cbid], __ATOMIC_RELAXED))
		return;
	fn = __atomic_load_n(&sub.fn, __ATOMIC_ACQUIRE);
	if (fn)
		fn(__atomic_load_n(&sub.userdata, __ATOMIC_RELAXED), domain, cbid, data);
}

/* ---- detaching ---- */

static void stop_worker(void)
{
	bool running;

	pthread_mutex_lock(&q.mu);
	running = q.running;
	q.running = false;
	q.stop = true;
	pthread_cond_broadcast(&q.wake);
	pthread_mutex_unlock(&q.mu);
	if (!running)
		return;
	if (pthread_equal(q.worker, pthread_self()))
		pthread_detach(q.worker); /* cuptiFinalize from a completion callback */
	else
		pthread_join(q.worker, NULL);
}

void fakegpu_finalize(void)
{
	for (int kind = 0; kind < N_KINDS; kind++)
		__atomic_store_n(&enabled[kind], false, __ATOMIC_RELEASE);
	fakegpu_unsubscribe();
	flush_lanes();
	stop_worker();
	if (!in_delivery)
		deliver_pending(false);
	pthread_mutex_lock(&q.mu);
	q.request = NULL;
	q.complete = NULL;
	q.period_ms = 0;
	pthread_mutex_unlock(&q.mu);
}
