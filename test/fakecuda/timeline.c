/*
 * The simulated GPU timeline: per-stream FIFO queues with start/end times computed when work is
 * queued, and a completion thread that emits each operation's records when its simulated end
 * time is reached on the wall clock. Synchronize calls wait for that completion.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test/fakecuda/fakegpu.h"
#include "test/fakecuda/sim.h"

/* Stream ids as real devices number them: 7 for the legacy default stream, then 13, 14, ... */
#define LEGACY_STREAM_ID 7
#define FIRST_STREAM_ID	 13

struct fakecuda_stream {
	int device;
	uint32_t id;
	bool legacy;
	bool blocking;			/* serialises with the legacy stream */
	uint64_t tail_ns;		/* end of the last operation queued */
	uint64_t not_before_ns;		/* from cudaStreamWaitEvent */
	uint64_t queued, completed;	/* operations queued and completed so far */
	struct fakecuda_graph *capture; /* while capturing: where its operations go */
	struct fakecuda_stream *next;
};

/* A CUDA graph: the operations captured, in order; each replay queues them again. */
struct fakecuda_graph {
	struct fakecuda_op *ops;
	size_t n, cap;
};

struct device_streams {
	struct fakecuda_stream legacy;
	struct fakecuda_stream *all; /* every stream of the device, legacy included */
	uint32_t next_id;
};

struct pending {
	struct fakecuda_op op;
	struct fakecuda_stream *stream;
	uint64_t seq;	/* in its stream */
	uint64_t order; /* global, breaks ties between equal end times */
};

/* All timeline state is under tl_lock; `work_cv` wakes the completion thread, `done_cv` waiters. */
static pthread_mutex_t tl_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static struct device_streams devices[FAKECUDA_MAX_DEVICES];
static struct pending **heap; /* min-heap on (op.end_ns, order) */
static size_t heap_len, heap_cap;
static uint64_t next_order;

/* The cost model, read once by start_once() (FAKEGPU_TIME_SCALE, _COPY_*, _LAUNCH_NS). */
static double time_scale = 1.0;
static uint64_t launch_latency_ns = 1000;
static double copy_bytes_per_ns = 25.0;
static uint64_t copy_latency_ns = 1000;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static __thread struct fakecuda_stream *per_thread[FAKECUDA_MAX_DEVICES];

static bool before(const struct pending *a, const struct pending *b)
{
	return a->op.end_ns < b->op.end_ns || (a->op.end_ns == b->op.end_ns && a->order < b->order);
}

static void swap(size_t i, size_t j)
{
	struct pending *t = heap[i];

	heap[i] = heap[j];
	heap[j] = t;
}

static int heap_push(struct pending *p)
{
	size_t i;

	if (heap_len == heap_cap) {
		size_t cap = heap_cap ? 2 * heap_cap : 256;
		struct pending **h = realloc(heap, cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		heap = h;
		heap_cap = cap;
	}
	heap[heap_len] = p;
	for (i = heap_len++; i > 0 && before(heap[i], heap[(i - 1) / 2]); i = (i - 1) / 2)
		swap(i, (i - 1) / 2);
	return 0;
}

static struct pending *heap_pop(void)
{
	struct pending *top = heap[0];
	size_t i = 0;

	heap[0] = heap[--heap_len];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < heap_len && before(heap[l], heap[m]))
			m = l;
		if (r < heap_len && before(heap[r], heap[m]))
			m = r;
		if (m == i)
			return top;
		swap(i, m);
		i = m;
	}
}

static struct timespec to_timespec(uint64_t ns)
{
	return (struct timespec){.tv_sec = (time_t)(ns / 1000000000u),
				 .tv_nsec = (long)(ns % 1000000000u)};
}

/* Completes operations in end-time order once the wall clock (CLOCK_REALTIME) reaches them. */
static void *completion_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&tl_lock);
	for (;;) {
		struct pending *p;
		struct timespec ts;

		if (!heap_len) {
			pthread_cond_wait(&work_cv, &tl_lock);
			continue;
		}
		if (fakegpu_timestamp() < heap[0]->op.end_ns) {
			ts = to_timespec(heap[0]->op.end_ns);
			pthread_cond_timedwait(&work_cv, &tl_lock, &ts);
			continue;
		}
		p = heap_pop();
		pthread_mutex_unlock(&tl_lock);
		fakecuda_emit_op(&p->op, p->stream->device, p->stream->id);
		pthread_mutex_lock(&tl_lock);
		p->stream->completed = p->seq;
		free(p);
		pthread_cond_broadcast(&done_cv);
	}
	return NULL;
}

/* A non-negative number from the environment, or `dflt`. */
static double env_double(const char *name, double dflt)
{
	const char *v = getenv(name);
	double d = v && *v ? strtod(v, NULL) : dflt;

	return d >= 0 ? d : dflt;
}

/* The completion thread started (not under a `ulimit -v` too tight for its stack). */
static bool completing;

static void start_once(void)
{
	pthread_attr_t attr;
	pthread_t thread;

	time_scale = env_double("FAKEGPU_TIME_SCALE", time_scale);
	copy_bytes_per_ns = env_double("FAKEGPU_COPY_GBPS", copy_bytes_per_ns);
	if (copy_bytes_per_ns == 0)
		copy_bytes_per_ns = 25.0;
	copy_latency_ns = (uint64_t)env_double("FAKEGPU_COPY_NS", (double)copy_latency_ns);
	launch_latency_ns = (uint64_t)env_double("FAKEGPU_LAUNCH_NS", (double)launch_latency_ns);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	completing = pthread_create(&thread, &attr, completion_thread, NULL) == 0;
	pthread_attr_destroy(&attr);
}

/* Simulated duration of an operation, after FAKEGPU_TIME_SCALE. */
static uint64_t duration_ns(const struct fakecuda_op *op)
{
	double ns = 0;

	if (op->kind == FAKECUDA_OP_KERNEL)
		ns = (double)op->kernel.kernel->duration_ns;
	else if (op->kind == FAKECUDA_OP_MEMCPY)
		ns = (double)copy_latency_ns + (double)op->memcpy.bytes / copy_bytes_per_ns;
	else if (op->kind == FAKECUDA_OP_MEMSET)
		ns = (double)copy_latency_ns + (double)op->memset.bytes / copy_bytes_per_ns;
	return (uint64_t)(ns * time_scale);
}

/* The device's stream list, creating its legacy stream on first use; called under tl_lock. */
static struct device_streams *device_streams(int device)
{
	struct device_streams *d = &devices[device];

	if (!d->all) {
		d->legacy = (struct fakecuda_stream){
		    .device = device, .id = LEGACY_STREAM_ID, .legacy = true, .blocking = true};
		d->all = &d->legacy;
		d->next_id = FIRST_STREAM_ID;
	}
	return d;
}

static struct fakecuda_stream *new_stream(int device, bool blocking)
{
	struct fakecuda_stream *s = calloc(1, sizeof(*s));
	struct device_streams *d;

	if (!s)
		return NULL;
	pthread_mutex_lock(&tl_lock);
	d = device_streams(device);
	s->device = device;
	s->blocking = blocking;
	s->id = d->next_id++;
	s->next = d->all;
	d->all = s;
	pthread_mutex_unlock(&tl_lock);
	return s;
}

struct fakecuda_stream *fakecuda_stream_get(void *handle, bool per_thread_default)
{
	int device = fakecuda_device_current();
	struct fakecuda_stream *s;

	if (handle == FAKECUDA_STREAM_PER_THREAD || (!handle && per_thread_default)) {
		if (!per_thread[device])
			per_thread[device] = new_stream(device, true);
		return per_thread[device];
	}
	if (handle && handle != FAKECUDA_STREAM_LEGACY)
		return handle;
	pthread_mutex_lock(&tl_lock);
	s = &device_streams(device)->legacy;
	pthread_mutex_unlock(&tl_lock);
	return s;
}

struct fakecuda_stream *fakecuda_stream_create(unsigned int flags)
{
	return new_stream(fakecuda_device_current(), !(flags & 1 /* cudaStreamNonBlocking */));
}

/* Streams are never freed: queued operations point at them, and finish after destruction. */
void fakecuda_stream_destroy(struct fakecuda_stream *stream)
{
	(void)stream;
}

uint32_t fakecuda_stream_id(const struct fakecuda_stream *stream)
{
	return stream->id;
}

int fakecuda_stream_device(const struct fakecuda_stream *stream)
{
	return stream->device;
}

/*
 * Earliest start on `s`: the launch latency after the call, its own queue, and the legacy
 * stream's implicit synchronisation with blocking streams.
 */
static uint64_t earliest_start(struct fakecuda_stream *s, uint64_t now)
{
	struct device_streams *d = device_streams(s->device);
	uint64_t t = now + (uint64_t)((double)launch_latency_ns * time_scale);

	if (s->tail_ns > t)
		t = s->tail_ns;
	if (s->not_before_ns > t)
		t = s->not_before_ns;
	if (s->legacy) {
		for (struct fakecuda_stream *o = d->all; o; o = o->next)
			if (o->blocking && o->tail_ns > t)
				t = o->tail_ns;
	} else if (s->blocking && d->legacy.tail_ns > t) {
		t = d->legacy.tail_ns;
	}
	return t;
}

/* Appends op to the graph being captured; under tl_lock. Markers take no part in a graph. */
static void capture(struct fakecuda_graph *g, const struct fakecuda_op *op)
{
	struct fakecuda_op *more;

	if (op->kind == FAKECUDA_OP_MARKER)
		return;
	if (g->n == g->cap) {
		more = realloc(g->ops, (g->cap ? 2 * g->cap : 8) * sizeof(*more));
		if (!more)
			return; /* out of memory: the replay lacks it */
		g->ops = more;
		g->cap = g->cap ? 2 * g->cap : 8;
	}
	g->ops[g->n++] = *op;
}

/*
 * CUPTI's resource callback for a node that capture added, as a driver gives it: on the
 * capturing thread, inside the call that made it, with no lock of the simulation's held.
 */
static void node_created(struct fakecuda_graph *g, const struct fakecuda_op *op)
{
	CUpti_GraphData gd = {
	    .graph = (CUgraph)g,
	    .node = (CUgraphNode)(uintptr_t)g->n,
	    .nodeType = op->kind == FAKECUDA_OP_KERNEL	 ? CU_GRAPH_NODE_TYPE_KERNEL
			: op->kind == FAKECUDA_OP_MEMCPY ? CU_GRAPH_NODE_TYPE_MEMCPY
							 : CU_GRAPH_NODE_TYPE_MEMSET,
	};
	CUpti_ResourceData rd = {.resourceDescriptor = &gd};

	fakegpu_callback(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, &rd);
}

void fakecuda_timeline_init(void)
{
	pthread_once(&once, start_once);
}

uint64_t fakecuda_op_enqueue(struct fakecuda_stream *stream, struct fakecuda_op *op)
{
	struct pending *p;
	uint64_t seq;

	pthread_mutex_lock(&tl_lock);
	if (stream->capture) {
		struct fakecuda_graph *g = stream->capture;
		bool added = op->kind != FAKECUDA_OP_MARKER;

		capture(g, op);
		pthread_mutex_unlock(&tl_lock);
		if (added)
			node_created(g, op);
		return 0; /* nothing to wait for */
	}
	pthread_mutex_unlock(&tl_lock);
	p = malloc(sizeof(*p));
	pthread_once(&once, start_once);
	op->queued_ns = fakegpu_timestamp();
	pthread_mutex_lock(&tl_lock);
	op->start_ns = earliest_start(stream, op->queued_ns);
	op->end_ns = op->start_ns + duration_ns(op);
	stream->tail_ns = op->end_ns;
	seq = ++stream->queued;
	if (!p || !completing ||
	    (*p = (struct pending){*op, stream, seq, next_order++}, heap_push(p))) {
		/* Out of memory: the operation completes without records. */
		free(p);
		stream->completed = seq;
	}
	pthread_cond_signal(&work_cv);
	pthread_mutex_unlock(&tl_lock);
	return seq;
}

void fakecuda_stream_wait(struct fakecuda_stream *stream, uint64_t seq)
{
	pthread_mutex_lock(&tl_lock);
	while (stream->completed < seq)
		pthread_cond_wait(&done_cv, &tl_lock);
	pthread_mutex_unlock(&tl_lock);
}

bool fakecuda_stream_done(struct fakecuda_stream *stream, uint64_t seq)
{
	bool done;

	pthread_mutex_lock(&tl_lock);
	done = stream->completed >= seq;
	pthread_mutex_unlock(&tl_lock);
	return done;
}

void fakecuda_sync(struct fakecuda_stream *stream, int device)
{
	struct fakecuda_stream *s;

	pthread_mutex_lock(&tl_lock);
	s = stream ? stream : device_streams(device)->all;
	for (; s; s = stream ? NULL : s->next) {
		uint64_t target = s->queued;

		while (s->completed < target)
			pthread_cond_wait(&done_cv, &tl_lock);
	}
	pthread_mutex_unlock(&tl_lock);
}

void fakecuda_stream_wait_until(struct fakecuda_stream *stream, uint64_t time_ns)
{
	pthread_mutex_lock(&tl_lock);
	if (time_ns > stream->not_before_ns)
		stream->not_before_ns = time_ns;
	pthread_mutex_unlock(&tl_lock);
}

int fakecuda_capture_begin(struct fakecuda_stream *stream)
{
	struct fakecuda_graph *g = calloc(1, sizeof(*g));
	int err = g ? 0 : -ENOMEM;

	pthread_mutex_lock(&tl_lock);
	if (!err && stream->capture)
		err = -EBUSY;
	if (!err)
		stream->capture = g;
	pthread_mutex_unlock(&tl_lock);
	if (err)
		free(g);
	return err;
}

struct fakecuda_graph *fakecuda_capture_end(struct fakecuda_stream *stream)
{
	struct fakecuda_graph *g;

	pthread_mutex_lock(&tl_lock);
	g = stream->capture;
	stream->capture = NULL;
	pthread_mutex_unlock(&tl_lock);
	return g;
}

bool fakecuda_capturing(struct fakecuda_stream *stream)
{
	bool capturing;

	pthread_mutex_lock(&tl_lock);
	capturing = stream->capture != NULL;
	pthread_mutex_unlock(&tl_lock);
	return capturing;
}

size_t fakecuda_graph_size(const struct fakecuda_graph *graph)
{
	return graph->n;
}

size_t fakecuda_graph_nodes(const struct fakecuda_graph *graph, void **nodes, size_t room)
{
	size_t n = 0;

	for (size_t i = 0; i < graph->n; i++) {
		if (graph->ops[i].kind == FAKECUDA_OP_MARKER)
			continue;
		if (n < room)
			nodes[n] = (void *)(uintptr_t)(i + 1); /* as node_created names it */
		n++;
	}
	return n;
}

struct fakecuda_graph *fakecuda_graph_copy(const struct fakecuda_graph *graph)
{
	struct fakecuda_graph *g = calloc(1, sizeof(*g));

	if (g && graph->n && !(g->ops = malloc(graph->n * sizeof(*g->ops)))) {
		free(g);
		return NULL;
	}
	if (g && graph->n)
		memcpy(g->ops, graph->ops, graph->n * sizeof(*g->ops));
	if (g)
		g->n = g->cap = graph->n;
	return g;
}

void fakecuda_graph_free(struct fakecuda_graph *graph)
{
	if (graph)
		free(graph->ops);
	free(graph);
}

uint64_t fakecuda_graph_launch(const struct fakecuda_graph *graph, struct fakecuda_stream *stream,
			       uint32_t correlation, bool runtime)
{
	uint64_t seq = 0;

	for (size_t i = 0; i < graph->n; i++) {
		struct fakecuda_op op = graph->ops[i];

		op.correlation = correlation;
		op.runtime = runtime;
		op.async = true;
		seq = fakecuda_op_enqueue(stream, &op);
	}
	return seq;
}

/* Process-wide: an id per event from 1, and a new sync id per record call from 1. */
static uint32_t next_event_id = 1;
static uint64_t next_sync_id = 1;

struct fakecuda_event *fakecuda_event_create(unsigned int flags)
{
	struct fakecuda_event *e = calloc(1, sizeof(*e));

	if (e) {
		e->flags = flags;
		e->id = __atomic_fetch_add(&next_event_id, 1, __ATOMIC_RELAXED);
	}
	return e;
}

void fakecuda_event_record(struct fakecuda_event *event, struct fakecuda_stream *stream,
			   uint32_t correlation, bool runtime)
{
	struct fakecuda_op marker = {
	    .kind = FAKECUDA_OP_MARKER, .correlation = correlation, .runtime = runtime};

	event->seq = fakecuda_op_enqueue(stream, &marker);
	event->stream = stream;
	event->time_ns = marker.end_ns;
	event->sync_id = __atomic_fetch_add(&next_sync_id, 1, __ATOMIC_RELAXED);
	event->record_correlation = correlation;
	fakecuda_emit_event(event, stream);
}

void fakecuda_event_sync(const struct fakecuda_event *event)
{
	if (event->stream)
		fakecuda_stream_wait(event->stream, event->seq);
}

bool fakecuda_event_done(const struct fakecuda_event *event)
{
	return !event->stream || fakecuda_stream_done(event->stream, event->seq);
}

int fakecuda_event_elapsed(const struct fakecuda_event *start, const struct fakecuda_event *end,
			   float *ms)
{
	if (!start->stream || !end->stream || ((start->flags | end->flags) & 2 /* no timing */))
		return -EINVAL;
	if (!fakecuda_event_done(start) || !fakecuda_event_done(end))
		return -EAGAIN;
	*ms = (float)((double)((int64_t)(end->time_ns - start->time_ns)) / 1e6);
	return 0;
}
