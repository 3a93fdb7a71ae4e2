/*
 * The end-of-window summary: tallies the events of a window on the writer thread as they are
 * written (kernel, CUDA call and NVTX range totals by interned name, copies by direction, GPU
 * busy time per device, peak device memory, step times), and formats them as "gprof: " lines
 * when the file is complete.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/heap.h"
#include "common/log.h"
#include "common/map.h"
#include "common/spans.h"
#include "common/stats.h"
#include "common/utf8.h"
#include "export/internal.h"

#define TOP_KERNELS 10
#define TOP_CALLS   5	       /* CUDA calls and NVTX ranges */
#define TOP_OPS_GPU 10	       /* operators by the GPU time of their work */
#define TOP_OPS_CPU 5	       /* and by self CPU time */
#define OPS_MAX	    (1u << 18) /* operators kept per window (40 bytes each) */
#define NAME_COLS   96	       /* bytes of a kernel name shown */
/* Names a tally keeps apart (NVTX messages may differ in every range); the rest as "others". */
#define TALLY_NAMES 1024
/* GPU busy over step time from which a window is GPU-bound, and below which host-bound. */
#define GPU_BOUND_PCT  80.0
#define HOST_BOUND_PCT 50.0
/*
 * Busy spans kept per device before the oldest half is folded into a total. Records arrive
 * nearly in time order, so folding only matters for windows with more gaps than this.
 */
#define SPANS_MAX  (1u << 16)
#define COPY_KINDS (GPROF_COPY_PTOP + 1)

/* GPU time by what it was: the summary classes of GPU work (export.h). */
enum gpu_kind {
	GPU_KERNEL = GPROF_SUM_KERNEL,
	GPU_MEMCPY = GPROF_SUM_MEMCPY,
	GPU_MEMSET = GPROF_SUM_MEMSET,
	GPU_KINDS
};

struct name_total {
	const struct gprof_export_str *name; /* interned: the pointer is the name's identity */
	uint64_t calls, ns;
};

/* Totals by name, in first-seen order; past max names, the rest add up in `others`. */
struct tally {
	struct name_total *rows;
	size_t n, cap, max;
	struct gprof_map index; /* name -> index + 1 in rows */
	struct name_total others;
};

struct memory_point {
	uint64_t ts_ns, bytes;
};

struct device {
	uint32_t id;
	struct gprof_spans busy; /* the union of the GPU intervals */
	uint64_t folded_ns;	 /* the time of spans retired to bound memory */
	uint64_t peak_bytes;
	struct memory_point *points; /* the counter's values, in the order written */
	size_t n_points, cap_points;
	bool points_cut; /* more than OPS_MAX: the value at the steps' start is unknown */
	bool has_memory;
	uint64_t tensor_peak, reserved_peak; /* PyTorch's allocator: tensors, its reserve */
	bool has_tensors;
	uint64_t pools_peak; /* what the stream-ordered pools held together, at most */
	bool has_pools;
	uint64_t kind_ns[GPU_KINDS]; /* sum of durations */
};

struct copy_total {
	uint64_t count, bytes, ns;
};

/* One operator (CPU_OP), for self times and the GPU time of the work tied to it. */
struct op_rec {
	const struct gprof_export_str *name; /* NULL: PyTorch's profiler's, named at the end */
	uint64_t ts, end, child_ns;	     /* child_ns: of the operators right inside it */
	uint64_t kid; /* PyTorch's profiler's id (GPROF_EXPORT_OP_KINETO); 0 */
	uint32_t tid, external;
};

/* An operator's figures by name, as torch.profiler's key_averages has them. */
struct op_total {
	const struct gprof_export_str *name;
	uint64_t calls, cpu_ns, self_ns, gpu_ns;
};

struct gprof_export_summary {
	struct tally kernels, calls, ranges; /* kernels, CUDA runtime/driver calls, NVTX ranges */
	struct op_rec *ops;		     /* in the order written; at most OPS_MAX */
	size_t n_ops, cap_ops;
	bool ops_cut;		 /* more than OPS_MAX */
	struct gprof_map op_gpu; /* External id -> GPU ns of the work that carries it */
	struct copy_total copies[COPY_KINDS], memsets;
	struct device dev[GPROF_EXPORT_MAX_DEVICES];
	unsigned n_dev;
	uint64_t steps, step_ns, step_begin, step_end;
	uint64_t *step_durs; /* each step's duration, in the order written */
	size_t cap_steps;
	uint64_t gpu_events; /* kernels, memcpys, memsets */
	bool failed;	     /* out of memory, or too many devices: figures are incomplete */
};

static void tally_free(struct tally *t)
{
	gprof_map_free(&t->index);
	gprof_free(t->rows);
}

struct gprof_export_summary *gprof_summary_new(void)
{
	struct gprof_export_summary *s = gprof_calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->kernels.max = SIZE_MAX;
	s->calls.max = s->ranges.max = TALLY_NAMES;
	if (gprof_map_init(&s->kernels.index, 64) || gprof_map_init(&s->calls.index, 64) ||
	    gprof_map_init(&s->ranges.index, 64) || gprof_map_init(&s->op_gpu, 64)) {
		gprof_summary_free(s);
		return NULL;
	}
	return s;
}

void gprof_summary_free(struct gprof_export_summary *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < s->n_dev; i++) {
		gprof_spans_free(&s->dev[i].busy);
		gprof_free(s->dev[i].points);
	}
	tally_free(&s->kernels);
	tally_free(&s->calls);
	tally_free(&s->ranges);
	gprof_map_free(&s->op_gpu);
	gprof_free(s->ops);
	gprof_free(s->step_durs);
	gprof_free(s);
}

/* The name's row, added when new (others past t->max names); NULL when out of memory. */
static struct name_total *row_of(struct tally *t, const struct gprof_export_str *name)
{
	uint64_t key = (uintptr_t)name, i;

	if (gprof_map_get(&t->index, key, &i))
		return &t->rows[i - 1];
	if (t->n == t->max)
		return &t->others;
	if (gprof_array_room((void **)&t->rows, &t->cap, t->n, sizeof(*t->rows), 64, SIZE_MAX))
		return NULL;
	if (gprof_map_set(&t->index, key, t->n + 1))
		return NULL;
	t->rows[t->n] = (struct name_total){.name = name};
	return &t->rows[t->n++];
}

static void add_named(struct gprof_export_summary *s, struct tally *t,
		      const struct gprof_export_event *ev, uint64_t dur)
{
	struct name_total *k = row_of(t, ev->name);

	if (!k) {
		s->failed = true;
		return;
	}
	k->calls++;
	k->ns += dur;
}

static struct device *device_of(struct gprof_export_summary *s, uint32_t id)
{
	for (unsigned i = 0; i < s->n_dev; i++)
		if (s->dev[i].id == id)
			return &s->dev[i];
	if (s->n_dev == GPROF_EXPORT_MAX_DEVICES) {
		s->failed = true;
		return NULL;
	}
	s->dev[s->n_dev] = (struct device){.id = id, .busy.max = SPANS_MAX};
	return &s->dev[s->n_dev++];
}

/*
 * Adds [b, e) to the device's union. When it holds SPANS_MAX spans, its oldest half is
 * folded into folded_ns, to bound memory: a record that comes later for that time is counted
 * only after where they end (an undercount at worst), and folded time is not cut to the
 * steps' span: both need 32K gaps between a record and its arrival.
 */
static void fold(void *ctx, const struct gprof_spans *busy, size_t n)
{
	struct device *d = ctx;

	d->folded_ns += gprof_spans_within(busy, 0, n, 0, UINT64_MAX);
}

static void add_span(struct gprof_export_summary *s, struct device *d, uint64_t b, uint64_t e)
{
	s->failed |= gprof_spans_add_counting(&d->busy, b, e, fold, d) != 0;
}

static void add_gpu(struct gprof_export_summary *s, const struct gprof_export_event *ev,
		    enum gpu_kind kind, uint64_t dur)
{
	struct device *d = device_of(s, ev->device);

	if (!d)
		return;
	s->gpu_events++;
	d->kind_ns[kind] += dur;
	add_span(s, d, ev->ts_ns, ev->ts_ns + dur);
}

static void add_earlier(struct gprof_export_summary *s, const struct gprof_export_event *ev,
			uint64_t dur)
{
	struct device *d = device_of(s, ev->device);

	if (d)
		add_span(s, d, ev->ts_ns, ev->ts_ns + dur);
}

static void add_copy(struct gprof_export_summary *s, const struct gprof_export_event *ev,
		     bool memset, uint64_t dur)
{
	unsigned k = ev->u.copy.copy_kind < COPY_KINDS ? ev->u.copy.copy_kind : GPROF_COPY_UNKNOWN;
	struct copy_total *c = memset ? &s->memsets : &s->copies[k];

	c->count++;
	c->bytes += ev->u.copy.bytes;
	c->ns += dur;
}

static void add_step(struct gprof_export_summary *s, const struct gprof_export_event *ev,
		     uint64_t dur)
{
	uint64_t end = ev->ts_ns + dur;

	if (!s->steps || ev->ts_ns < s->step_begin)
		s->step_begin = ev->ts_ns;
	if (!s->steps || end > s->step_end)
		s->step_end = end;
	/* Once it failed, steps stay past cap_steps: no later step is kept out of order. */
	if (s->steps == s->cap_steps &&
	    gprof_array_room((void **)&s->step_durs, &s->cap_steps, s->steps, sizeof(*s->step_durs),
			     64, SIZE_MAX))
		s->failed = true;
	if (s->steps < s->cap_steps)
		s->step_durs[s->steps] = dur;
	s->steps++;
	s->step_ns += dur;
}

static void add_memory(struct gprof_export_summary *s, const struct gprof_export_event *ev)
{
	struct device *d = ev->device == GPROF_EXPORT_HOST ? NULL : device_of(s, ev->device);

	if (d && (ev->flags & GPROF_EXPORT_MEMORY_TENSOR)) {
		if (ev->u.memory.allocated > d->tensor_peak)
			d->tensor_peak = ev->u.memory.allocated;
		if (ev->u.memory.reserved > d->reserved_peak)
			d->reserved_peak = ev->u.memory.reserved;
		d->has_tensors = true;
		return;
	}
	if (!d)
		return;
	if (ev->flags & GPROF_EXPORT_MEMORY_POOLS) {
		if (ev->u.memory.reserved > d->pools_peak)
			d->pools_peak = ev->u.memory.reserved;
		d->has_pools = true;
	}
	if (!d->has_memory || ev->u.memory.allocated > d->peak_bytes)
		d->peak_bytes = ev->u.memory.allocated;
	d->has_memory = true;
	if (d->points_cut || gprof_array_room((void **)&d->points, &d->cap_points, d->n_points,
					      sizeof(*d->points), 64, OPS_MAX)) {
		d->points_cut = true;
		return;
	}
	d->points[d->n_points++] = (struct memory_point){ev->ts_ns, ev->u.memory.allocated};
}

static void add_op(struct gprof_export_summary *s, const struct gprof_export_event *ev,
		   uint64_t dur)
{
	if (s->n_ops == OPS_MAX) {
		s->ops_cut = true;
		return;
	}
	if (gprof_array_room((void **)&s->ops, &s->cap_ops, s->n_ops, sizeof(*s->ops), 1024,
			     OPS_MAX)) {
		s->failed = true;
		return;
	}
	s->ops[s->n_ops++] =
	    (struct op_rec){.name = ev->name,
			    .ts = ev->ts_ns,
			    .end = ev->ts_ns + dur,
			    .kid = ev->flags & GPROF_EXPORT_OP_KINETO ? ev->u.op.rf_id : 0,
			    .tid = ev->tid,
			    .external = ev->u.op.external};
}

void gprof_summary_name_ops(struct gprof_export_summary *s, struct gprof_op_args *args)
{
	size_t kept = 0;

	for (size_t i = 0; s && i < s->n_ops; i++) {
		struct op_rec o = s->ops[i];
		const struct gprof_op_entry *e = o.kid ? gprof_op_args_find(args, o.kid) : NULL;

		if (e)
			o.name = e->name;
		/* one PyTorch's profiler did not hand over is not written either */
		if (o.name)
			s->ops[kept++] = o;
	}
	if (s)
		s->n_ops = kept;
}

/* GPU work tied to an operator (its External id): added to the operator's GPU time. */
static void add_op_gpu(struct gprof_export_summary *s, uint32_t external, uint64_t dur)
{
	uint64_t ns = 0;

	if (!external)
		return;
	if (!gprof_map_get(&s->op_gpu, external, &ns) && s->op_gpu.n >= OPS_MAX) {
		s->ops_cut = true;
		return;
	}
	if (gprof_map_set(&s->op_gpu, external, ns + dur))
		s->failed = true;
}

/* An event of a kind whose row counts it as GPU work (GPROF_SUM_KERNEL, MEMCPY or MEMSET). */
static void add_work(struct gprof_export_summary *s, const struct gprof_export_event *e,
		     enum gprof_summary_class c, uint64_t dur)
{
	if (c == GPROF_SUM_KERNEL)
		add_named(s, &s->kernels, e, dur);
	else
		add_copy(s, e, c == GPROF_SUM_MEMSET, dur);
	add_gpu(s, e, (enum gpu_kind)c, dur);
	add_op_gpu(s, gprof_export_external(e), dur);
}

void gprof_summary_events(struct gprof_export_summary *s, const struct gprof_export_event *ev,
			  size_t n)
{
	for (size_t i = 0; s && i < n; i++) {
		const struct gprof_export_event *e = &ev[i];
		enum gprof_summary_class c = gprof_export_summary_class(e->kind);
		/* As the trace writes it: a wrapped negative duration is 0. */
		uint64_t dur = (int64_t)e->dur_ns < 0 ? 0 : e->dur_ns;

		switch (c) {
		case GPROF_SUM_KERNEL:
		case GPROF_SUM_MEMCPY:
		case GPROF_SUM_MEMSET:
			add_work(s, e, c, dur);
			break;
		case GPROF_SUM_EARLIER: /* busy time only: it is no work of the window's */
			add_earlier(s, e, dur);
			break;
		case GPROF_SUM_STEP:
			add_step(s, e, dur);
			break;
		case GPROF_SUM_CALL:
			/* as the trace: without the calls it leaves out */
			if (!(e->flags & GPROF_EXPORT_QUIET))
				add_named(s, &s->calls, e, dur);
			break;
		case GPROF_SUM_RANGE:
			add_named(s, &s->ranges, e, dur);
			break;
		case GPROF_SUM_MEMORY:
			add_memory(s, e);
			break;
		case GPROF_SUM_OP:
			add_op(s, e, dur);
			break;
		case GPROF_SUM_NONE:
			break;
		}
	}
}

/* Formatting. */

static void putf(struct gprof_jbuf *b, const char *fmt, ...) GPROF_PRINTF(2, 3);
static void putf(struct gprof_jbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !gprof_jbuf_room(b, (size_t)n + 1))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

const char *gprof_summary_fmt_time(char out[32], uint64_t ns)
{
	static const struct {
		uint64_t ns;
		const char *unit;
	} units[] = {{1000000000ull, "s"}, {1000000ull, "ms"}, {1000ull, "us"}};

	for (size_t i = 0; i < ARRAY_SIZE(units); i++)
		if (ns >= units[i].ns) {
			snprintf(out, 32, "%.3f %s", (double)ns / (double)units[i].ns,
				 units[i].unit);
			return out;
		}
	snprintf(out, 32, "%llu ns", (unsigned long long)ns);
	return out;
}

/* "1.50 MiB", or "512 B" */
static const char *fmt_bytes(char out[32], uint64_t bytes)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	size_t u = 0;

	if (bytes < 1024) {
		snprintf(out, 32, "%llu B", (unsigned long long)bytes);
		return out;
	}
	for (v /= 1024; v >= 1024 && u + 1 < ARRAY_SIZE(units); u++)
		v /= 1024;
	snprintf(out, 32, "%.2f %s", v, units[u]);
	return out;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* |union of d's spans ∩ [begin, end)| plus what was folded. */
static uint64_t busy_ns(const struct device *d, uint64_t begin, uint64_t end)
{
	return d->folded_ns + gprof_spans_within(&d->busy, 0, d->busy.n, begin, end);
}

/* "steps 2-4: 3 in 30.000 ms, mean step 10.000 ms" */
static void put_steps(struct gprof_jbuf *b, const struct gprof_export_result *r,
		      const struct gprof_export_summary *s)
{
	char t1[32], t2[32];

	if (!s->steps) {
		gprof_jbuf_lit(b, "no step marker in this window");
		return;
	}
	putf(b, "steps %llu-%llu: %llu in %s, mean step %s", (unsigned long long)r->first_step,
	     (unsigned long long)r->last_step, (unsigned long long)s->steps,
	     gprof_summary_fmt_time(t1, s->step_end - s->step_begin),
	     gprof_summary_fmt_time(t2, s->step_ns / s->steps));
	if (s->steps < 2 || s->steps > s->cap_steps)
		return;
	uint64_t *durs = gprof_malloc(s->steps * sizeof(*durs));
	struct gprof_stats st;
	char line[128];

	if (!durs)
		return;
	memcpy(durs, s->step_durs, s->steps * sizeof(*durs));
	gprof_stats_of(durs, s->steps, &st);
	gprof_free(durs);
	putf(b, "; %s", gprof_summary_fmt_stats(line, sizeof(line), &st));
}

char *gprof_summary_fmt_stats(char *out, size_t len, const struct gprof_stats *st)
{
	char t[4][32];

	snprintf(out, len, "median %s (min %s, p90 %s, max %s)",
		 gprof_summary_fmt_time(t[0], st->median), gprof_summary_fmt_time(t[1], st->min),
		 gprof_summary_fmt_time(t[2], st->p90), gprof_summary_fmt_time(t[3], st->max));
	return out;
}

/*
 * The counter's value at `ts_ns`: its latest point there or before (points may come out of time
 * order: the session's and the collector's); false when it has none then.
 */
static bool memory_at(const struct device *d, uint64_t ts_ns, uint64_t *bytes)
{
	const struct memory_point *at = NULL;

	if (d->points_cut)
		return false;
	for (size_t i = 0; i < d->n_points; i++)
		if (d->points[i].ts_ns <= ts_ns && (!at || d->points[i].ts_ns >= at->ts_ns))
			at = &d->points[i];
	if (at)
		*bytes = at->bytes;
	return at != NULL;
}

/*
 * "peak device memory in use 3.00 MiB, 1.00 MiB at the start": the counter's highest value, and
 * its value where the steps start when it has one then (what was in use before the first step);
 * "; stream-ordered pools: peak 4.00 MiB reserved": what cudaMallocAsync's pools held, at most.
 */
static void put_memory(struct gprof_jbuf *b, const struct gprof_export_summary *s,
		       const struct device *d, const char *sep)
{
	char t[2][32];
	uint64_t start;

	if (!d->has_memory)
		return;
	putf(b, "%speak device memory in use %s", sep, fmt_bytes(t[0], d->peak_bytes));
	if (s->steps && memory_at(d, s->step_begin, &start))
		putf(b, ", %s at the start", fmt_bytes(t[1], start));
	if (d->has_pools)
		putf(b, "; stream-ordered pools: peak %s reserved", fmt_bytes(t[0], d->pools_peak));
	if (d->has_tensors)
		putf(b, "; PyTorch's tensors: peak %s allocated, %s reserved by its allocator",
		     fmt_bytes(t[0], d->tensor_peak), fmt_bytes(t[1], d->reserved_peak));
}

/* "busy 12.5% of step time (1.000 ms)", or "busy 1.000 ms" without steps. */
static void put_busy(struct gprof_jbuf *b, const struct gprof_export_summary *s,
		     const struct device *d)
{
	uint64_t span = s->step_end - s->step_begin;
	uint64_t busy =
	    s->steps ? busy_ns(d, s->step_begin, s->step_end) : busy_ns(d, 0, UINT64_MAX);
	char t[32];

	if (s->steps && span)
		putf(b, "busy %.1f%% of step time (%s)", pct(busy, span),
		     gprof_summary_fmt_time(t, busy));
	else
		putf(b, "busy %s", gprof_summary_fmt_time(t, busy));
}

static void put_devices(struct gprof_jbuf *b, const struct gprof_export_summary *s)
{
	char t[3][32];

	for (unsigned i = 0; i < s->n_dev; i++) {
		const struct device *d = &s->dev[i];

		putf(b, "gprof:   GPU %u: ", d->id);
		put_busy(b, s, d);
		putf(b, "; kernels %s, memcpy %s, memset %s",
		     gprof_summary_fmt_time(t[0], d->kind_ns[GPU_KERNEL]),
		     gprof_summary_fmt_time(t[1], d->kind_ns[GPU_MEMCPY]),
		     gprof_summary_fmt_time(t[2], d->kind_ns[GPU_MEMSET]));
		put_memory(b, s, d, "; ");
		/* Work of the last steps (the CPU ran ahead) still running when they ended. */
		uint64_t after =
		    s->steps ? gprof_spans_within(&d->busy, 0, d->busy.n, s->step_end, UINT64_MAX)
			     : 0;
		if (after)
			putf(b, "; busy after the last step: %s",
			     gprof_summary_fmt_time(t[0], after));
		gprof_jbuf_lit(b, "\n");
	}
}

/* Kernel name for a terminal: control bytes and ill-formed UTF-8 as '?', cut at a character. */
static void put_name(struct gprof_jbuf *b, const struct gprof_export_str *name)
{
	const char *raw = name ? name->raw : "";
	size_t len = name ? name->raw_len : 0, n = len;
	char *d;

	if (name && !len) { /* the table-full placeholder has text only */
		raw = name->text;
		len = n = name->len;
	}

	if (n > NAME_COLS) {
		n = NAME_COLS;
		while (n && ((unsigned char)raw[n] & 0xc0) == 0x80)
			n--;
	}
	d = gprof_jbuf_room(b, n);
	if (!d)
		return;
	for (size_t i = 0; i < n;) {
		const unsigned char *p = (const unsigned char *)raw + i;
		int k = gprof_utf8_printable(p, p + (n - i));

		memcpy(d, k > 0 ? (const void *)p : "?", k > 0 ? (size_t)k : 1);
		d += k > 0 ? k : 1;
		i += k > 0 ? (size_t)k : 1;
	}
	b->len = (size_t)(d - b->p);
	if (n < len || (name && name->cut))
		gprof_jbuf_lit(b, "...");
}

/* The index of the row with the largest total not yet shown (shown[]; NULL: none), or -1. */
static long next_row(const struct tally *t, const bool *shown)
{
	long best = -1;

	for (size_t i = 0; i < t->n; i++)
		if (!(shown && shown[i]) && (best < 0 || t->rows[i].ns > t->rows[best].ns))
			best = (long)i;
	return best;
}

/*
 * The top rows of t by total time, under "top N of M <what>:": calls, total, mean, the total's
 * share of `whole` (a column headed share_head; none when share_head is NULL), name.
 */
static void put_table(struct gprof_jbuf *b, const struct tally *t, size_t top_max, const char *what,
		      const char *share_head, uint64_t whole)
{
	size_t top = t->n < top_max ? t->n : top_max;
	bool *shown = gprof_calloc(t->n + 1, sizeof(*shown));
	char t1[32], t2[32];

	if (!top || !shown)
		goto out;
	putf(b, "gprof:   top %zu of %zu %s:\n", top, t->n + (t->others.calls ? 1 : 0), what);
	putf(b, "gprof:   %8s %12s %12s %6s  %s\n", "calls", "total", "mean",
	     share_head ? share_head : "", "name");
	for (size_t n = 0; n < top; n++) {
		long i = next_row(t, shown);
		const struct name_total *k = &t->rows[i];

		shown[i] = true;
		putf(b, "gprof:   %8llu %12s %12s ", (unsigned long long)k->calls,
		     gprof_summary_fmt_time(t1, k->ns),
		     gprof_summary_fmt_time(t2, k->ns / k->calls));
		if (share_head)
			putf(b, "%6.1f  ", pct(k->ns, whole));
		else
			putf(b, "%6s  ", "");
		put_name(b, k->name);
		gprof_jbuf_lit(b, "\n");
	}
out:
	gprof_free(shown);
}

/* By thread, then start, the outer of two that start together first. */
static int op_order(const void *a, const void *b)
{
	const struct op_rec *x = a, *y = b;

	return gprof_span_order(x->tid, x->ts, x->end, y->tid, y->ts, y->end);
}

/*
 * The operators' figures by name (*n of them; NULL when out of memory): each operator's self
 * time is its own less that of the operators right inside it on its thread, its GPU time that
 * of the work carrying its External id (the innermost operator's, as Kineto's "self").
 */
static struct op_total *op_totals(const struct gprof_export_summary *s, size_t *n)
{
	struct op_total *rows = gprof_calloc(s->n_ops, sizeof(*rows));
	struct op_rec *ops = gprof_malloc(s->n_ops * sizeof(*ops));
	size_t *stack = gprof_calloc(s->n_ops, sizeof(*stack)), depth = 0;
	struct gprof_map index = {0};
	bool failed = !rows || !ops || !stack || gprof_map_init(&index, 64);

	*n = 0;
	for (size_t i = 0; i < s->n_ops && !failed; i++) {
		ops[i] = s->ops[i];
		ops[i].child_ns = 0;
	}
	if (!failed)
		gprof_sort(ops, s->n_ops, sizeof(*ops), op_order);
	for (size_t i = 0; i < s->n_ops && !failed; i++) {
		struct op_rec *o = &ops[i];

		while (depth &&
		       (ops[stack[depth - 1]].tid != o->tid || ops[stack[depth - 1]].end < o->end))
			depth--;
		if (depth)
			ops[stack[depth - 1]].child_ns += o->end - o->ts;
		stack[depth++] = i;
	}
	for (size_t i = 0; i < s->n_ops && !failed; i++) {
		const struct op_rec *o = &ops[i];
		uint64_t k, gpu = 0, dur = o->end - o->ts;

		if (!gprof_map_get(&index, (uintptr_t)o->name, &k)) {
			k = (*n)++;
			rows[k].name = o->name;
			failed = gprof_map_set(&index, (uintptr_t)o->name, k) != 0;
		}
		gprof_map_get(&s->op_gpu, o->external, &gpu);
		rows[k].calls++;
		rows[k].cpu_ns += dur;
		rows[k].self_ns += dur - (o->child_ns < dur ? o->child_ns : dur);
		rows[k].gpu_ns += gpu;
	}
	gprof_map_free(&index);
	gprof_free(stack);
	gprof_free(ops);
	if (failed) {
		gprof_free(rows);
		return NULL;
	}
	return rows;
}

/* Larger first; ties by the other figures, then by name, so that every reader agrees. */
static int op_cmp(uint64_t a1, uint64_t b1, uint64_t a2, uint64_t b2, const struct op_total *x,
		  const struct op_total *y)
{
	if (a1 != b1)
		return a1 > b1 ? -1 : 1;
	if (a2 != b2)
		return a2 > b2 ? -1 : 1;
	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	return strcmp(x->name->text, y->name->text);
}

static int by_gpu(const void *a, const void *b)
{
	const struct op_total *x = a, *y = b;

	return op_cmp(x->gpu_ns, y->gpu_ns, x->self_ns, y->self_ns, x, y);
}

static int by_self(const void *a, const void *b)
{
	const struct op_total *x = a, *y = b;

	return op_cmp(x->self_ns, y->self_ns, x->gpu_ns, y->gpu_ns, x, y);
}

static void put_op_table(struct gprof_jbuf *b, struct op_total *rows, size_t n, size_t top,
			 int (*order)(const void *, const void *), const char *what)
{
	char t[3][32];

	gprof_sort(rows, n, sizeof(*rows), order);
	top = n < top ? n : top;
	putf(b, "gprof:   top %zu of %zu operators by %s:\n", top, n, what);
	putf(b, "gprof:   %8s %12s %12s %12s  %s\n", "calls", "GPU", "CPU self", "CPU total",
	     "name");
	for (size_t i = 0; i < top; i++) {
		putf(b, "gprof:   %8llu %12s %12s %12s  ", (unsigned long long)rows[i].calls,
		     gprof_summary_fmt_time(t[0], rows[i].gpu_ns),
		     gprof_summary_fmt_time(t[1], rows[i].self_ns),
		     gprof_summary_fmt_time(t[2], rows[i].cpu_ns));
		put_name(b, rows[i].name);
		gprof_jbuf_lit(b, "\n");
	}
}

/* PyTorch's (and NCCL's) operators, as key_averages() tabulates them: by GPU time, by self CPU. */
static void put_ops(struct gprof_jbuf *b, const struct gprof_export_summary *s)
{
	size_t n;
	struct op_total *rows = s->n_ops ? op_totals(s, &n) : NULL;

	if (!rows) {
		if (s->n_ops)
			gprof_jbuf_lit(b, "gprof:   (operators: out of memory)\n");
		return;
	}
	put_op_table(b, rows, n, TOP_OPS_GPU, by_gpu, "GPU time of their work");
	put_op_table(b, rows, n, TOP_OPS_CPU, by_self, "self CPU time");
	if (s->ops_cut)
		putf(b, "gprof:   (operators: the first %u of the window only)\n", OPS_MAX);
	gprof_free(rows);
}

/* The highest share of step time a device was busy; -1 without steps or GPU work. */
static double busiest_pct(const struct gprof_export_summary *s)
{
	uint64_t span = s->step_end - s->step_begin;
	double best = -1;

	for (unsigned i = 0; s->steps && span && i < s->n_dev; i++) {
		double p = pct(busy_ns(&s->dev[i], s->step_begin, s->step_end), span);

		best = p > best ? p : best;
	}
	return best;
}

/*
 * What bounds the steps: "GPU-bound: ..." when a device was busy most of the step time,
 * "host-bound: the GPU waited N% of the step time; <call> took <time> of CPU per step" (the
 * CUDA call with the most time) when it waited most of it, else "mixed: ..." the same way.
 */
static void put_bound(struct gprof_jbuf *b, const struct gprof_export_summary *s)
{
	double busy = busiest_pct(s);
	long top = next_row(&s->calls, NULL);
	char t[32];

	if (busy < 0)
		return;
	if (busy >= GPU_BOUND_PCT) {
		putf(b, "gprof:   GPU-bound: the GPU was busy %.1f%% of the step time\n", busy);
		return;
	}
	putf(b, "gprof:   %s: the GPU waited %.1f%% of the step time",
	     busy < HOST_BOUND_PCT ? "host-bound" : "mixed", 100.0 - busy);
	if (top >= 0) {
		gprof_jbuf_lit(b, "; ");
		put_name(b, s->calls.rows[top].name);
		putf(b, " took %s of CPU per step",
		     gprof_summary_fmt_time(t, s->calls.rows[top].ns / s->steps));
	}
	gprof_jbuf_lit(b, "\n");
}

static void put_copy(struct gprof_jbuf *b, const char *what, const struct copy_total *c)
{
	char t1[32], t2[32];

	if (!c->count)
		return;
	putf(b, "gprof:   %-8s %8llu %12s %12s", what, (unsigned long long)c->count,
	     fmt_bytes(t1, c->bytes), gprof_summary_fmt_time(t2, c->ns));
	if (c->ns) /* bytes/ns = GB/s, to at least 3 significant digits */
		putf(b, (double)c->bytes < (double)c->ns ? " %9.3g\n" : " %9.2f\n",
		     (double)c->bytes / (double)c->ns);
	else
		putf(b, " %9s\n", "-");
}

static void put_copies(struct gprof_jbuf *b, const struct gprof_export_summary *s)
{
	uint64_t n = s->memsets.count;

	for (unsigned k = 0; k < COPY_KINDS; k++)
		n += s->copies[k].count;
	if (!n)
		return;
	putf(b, "gprof:   %-8s %8s %12s %12s %9s\n", "copies", "count", "bytes", "time", "GB/s");
	for (unsigned k = 0; k < COPY_KINDS; k++)
		put_copy(b, gprof_trace_copy_kind(k), &s->copies[k]);
	put_copy(b, "memset", &s->memsets);
}

/* "dropped records: 12 (buffer full 10, CUPTI 2)", or nothing when none were. */
static void put_dropped(struct gprof_jbuf *b, const char *before,
			const struct gprof_export_result *r)
{
	if (!r->dropped && !r->cupti_dropped)
		return;
	putf(b, "%sdropped records: %llu (buffer full %llu, CUPTI %llu)", before,
	     (unsigned long long)(r->dropped + r->cupti_dropped), (unsigned long long)r->dropped,
	     (unsigned long long)r->cupti_dropped);
}

/* The first line, with the path made safe for a terminal (the user chose it). */
static void put_written(struct gprof_jbuf *b, const struct gprof_export_result *r)
{
	char path[4096];

	putf(b, "gprof: trace written: %s",
	     gprof_log_clean(path, sizeof(path), r->path, strlen(r->path)));
}

/*
 * One line: for a window without GPU activity (no CUPTI), where there is nothing to tabulate,
 * and for a process's later windows, with each device's busy time.
 */
static void put_one_line(struct gprof_jbuf *b, const struct gprof_export_result *r,
			 const struct gprof_export_summary *s)
{
	put_written(b, r);
	gprof_jbuf_lit(b, " (");
	put_steps(b, r, s);
	if (!s->gpu_events)
		gprof_jbuf_lit(b, "; no GPU activity recorded");
	for (unsigned i = 0; i < s->n_dev; i++) {
		if (s->gpu_events) {
			putf(b, "; GPU %u ", s->dev[i].id);
			put_busy(b, s, &s->dev[i]);
		}
		if (s->dev[i].has_memory) {
			putf(b, "; GPU %u ", s->dev[i].id);
			put_memory(b, s, &s->dev[i], "");
		}
	}
	put_dropped(b, "; ", r);
	gprof_jbuf_lit(b, ")\n");
}

uint64_t gprof_summary_gpu_ns(const struct gprof_export_summary *s)
{
	uint64_t gpu_ns = 0;

	for (unsigned i = 0; i < s->n_dev; i++)
		for (unsigned k = 0; k < GPU_KINDS; k++)
			gpu_ns += s->dev[i].kind_ns[k];
	return gpu_ns;
}

size_t gprof_summary_kernels(const struct gprof_export_summary *s)
{
	return s->kernels.n;
}

void gprof_summary_kernel(const struct gprof_export_summary *s, size_t i,
			  const struct gprof_export_str **name, uint64_t *calls, uint64_t *ns)
{
	*name = s->kernels.rows[i].name;
	*calls = s->kernels.rows[i].calls;
	*ns = s->kernels.rows[i].ns;
}

static void put_long(struct gprof_jbuf *b, const struct gprof_export_result *r,
		     const struct gprof_export_summary *s)
{
	uint64_t gpu_ns = gprof_summary_gpu_ns(s);

	put_written(b, r);
	gprof_jbuf_lit(b, "\ngprof:   ");
	put_steps(b, r, s);
	gprof_jbuf_lit(b, "\n");
	put_devices(b, s);
	put_bound(b, s);
	put_table(b, &s->kernels, TOP_KERNELS, "kernels by GPU time", "GPU%", gpu_ns);
	put_copies(b, s);
	put_table(b, &s->calls, TOP_CALLS, "CUDA calls by CPU time", s->step_ns ? "step%" : NULL,
		  s->step_ns);
	put_table(b, &s->ranges, TOP_CALLS, "NVTX ranges by time", s->step_ns ? "step%" : NULL,
		  s->step_ns);
	put_ops(b, s);
	put_dropped(b, "gprof:   ", r);
	if (r->dropped || r->cupti_dropped)
		gprof_jbuf_lit(b, "\n");
}

static char *summary_text(const struct gprof_export_result *r, bool one_line)
{
	const struct gprof_export_summary *s = r->summary;
	struct gprof_jbuf b;

	if (!s || gprof_jbuf_init(&b, 4096))
		return NULL;
	if (s->gpu_events && !one_line)
		put_long(&b, r, s);
	else
		put_one_line(&b, r, s);
	if (s->failed)
		gprof_jbuf_lit(&b, "gprof:   (out of memory, or more than 16 devices: the summary "
				   "is incomplete)\n");
	gprof_jbuf_put(&b, "", 1);
	if (b.failed) {
		gprof_jbuf_free(&b);
		return NULL;
	}
	return b.p;
}

char *gprof_export_summary_text(const struct gprof_export_result *r)
{
	return summary_text(r, false);
}

char *gprof_export_summary_line(const struct gprof_export_result *r)
{
	return summary_text(r, true);
}
