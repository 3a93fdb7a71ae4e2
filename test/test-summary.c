/*
 * The end-of-window summary (GPROF_SUMMARY): its figures are parsed back from the text and
 * compared with the same figures computed here, independently, from the trace file itself
 * (end to end) or from the events fed in (unit tests, against a brute-force union).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/compiler.h"
#include "common/heap.h"
#include "export/internal.h"
#include "task.h"
#include "util/e2e.h"
#include "util/text.h"

#define MAX_ROWS 16

/* A printed figure and how far printing may have moved it (half its last digit). */
struct qty {
	double v, tol;
};

struct sum_kernel {
	char name[256];
	long long calls;
	struct qty total, mean, pct;
};

/* A "top N of M ..." table: its rows (kernels, CUDA calls, NVTX ranges). */
struct sum_table {
	int shown, distinct, n;
	struct sum_kernel rows[MAX_ROWS];
};

struct sum_copy {
	char kind[16];
	long long count;
	struct qty bytes, time, gbps; /* gbps.v < 0: printed "-" */
};

struct sum_dev {
	int id;
	struct qty busy_pct, busy, kinds[3], peak; /* peak.v < 0: not printed */
	struct qty start; /* memory in use at the steps' start; v < 0: not printed */
	struct qty after; /* busy after the last step; v < 0: not printed */
};

/* The summary text, parsed. */
struct summary {
	char path[4096];
	long long first, last, steps;
	struct qty span, mean;
	struct qty median, min, p90, max; /* median.v < 0: not printed */
	int n_dev, n_copies;
	struct sum_dev dev[MAX_ROWS];
	struct sum_table kernels, calls, ranges;
	struct sum_copy copies[MAX_ROWS];
	/* "GPU-bound: the GPU was busy P%", "host-bound: the GPU waited P%" or "mixed: ..." */
	char bound[16];
	struct qty bound_pct; /* v < 0: no such line */
	char bound_call[256]; /* "; <call> took <time> of CPU per step", or "" */
	struct qty bound_call_ns;
	long long dropped, dropped_buffer, dropped_cupti; /* 0 when not printed */
	bool one_line;					  /* the one-line form */
	bool no_gpu;					  /* "no GPU activity recorded" */
};

/* "12.345 ms", "1.50 MiB": value in ns or bytes, and its tolerance. */
static struct qty qty_of(double v, const char *unit)
{
	static const struct {
		const char *unit;
		double scale;
	} units[] = {{"ns", 1},
		     {"us", 1e3},
		     {"ms", 1e6},
		     {"s", 1e9},
		     {"B", 1},
		     {"KiB", 1024.0},
		     {"MiB", 1048576.0},
		     {"GiB", 1073741824.0},
		     {"TiB", 1099511627776.0}};

	for (size_t i = 0; i < ARRAY_SIZE(units); i++)
		if (!strcmp(unit, units[i].unit)) {
			bool whole = units[i].scale == 1;
			double digit =
			    strstr(unit, "iB") ? 0.01 : 0.001; /* "%.2f KiB", "%.3f ms" */

			return (struct qty){v * units[i].scale,
					    whole ? 0.5 : 0.5 * digit * units[i].scale + 1e-6};
		}
	FAIL("unknown unit '%s'", unit);
}

static struct qty plain(double v, double last_digit)
{
	return (struct qty){v, 0.5 * last_digit + 1e-9};
}

static double absd(double x)
{
	return x < 0 ? -x : x;
}

static void check_qty(struct qty got, double want, const char *what)
{
	ASSERT_MSG(absd(got.v - want) <= got.tol + 1e-9 * absd(want),
		   "%s: summary says %.3f, the trace %.3f (tolerance %.3f)", what, got.v, want,
		   got.tol);
}

static bool parse_gpu(struct summary *s, const char *l)
{
	struct sum_dev *d = &s->dev[s->n_dev];
	char u[5][8];
	double v[5], peak;
	int n = 0, m = 0;

	if (sscanf(l,
		   "gprof:   GPU %d: busy %lf%% of step time (%lf %7[^)]); kernels %lf %7[^,], "
		   "memcpy %lf %7[^,], memset %lf %7[^;\n]%n",
		   &d->id, &d->busy_pct.v, &v[0], u[0], &v[1], u[1], &v[2], u[2], &v[3], u[3],
		   &n) != 10)
		return false;
	ASSERT(s->n_dev < MAX_ROWS);
	d->busy_pct = plain(d->busy_pct.v, 0.1);
	d->busy = qty_of(v[0], u[0]);
	for (int k = 0; k < 3; k++)
		d->kinds[k] = qty_of(v[k + 1], u[k + 1]);
	d->peak.v = -1;
	d->start.v = -1;
	d->after.v = -1;
	if (sscanf(l + n, "; peak device memory in use %lf %7[A-Za-z]%n", &peak, u[4], &m) == 2) {
		d->peak = qty_of(peak, u[4]);
		n += m;
	}
	if (sscanf(l + n, ", %lf %7[A-Za-z] at the start%n", &peak, u[4], &m) == 2) {
		d->start = qty_of(peak, u[4]);
		n += m;
	}
	if (sscanf(l + n, "; busy after the last step: %lf %7s", &peak, u[4]) == 2)
		d->after = qty_of(peak, u[4]);
	s->n_dev++;
	return true;
}

static bool parse_row(struct sum_table *t, const char *l)
{
	struct sum_kernel *k = &t->rows[t->n];
	char u1[8], u2[8];
	double total, mean, pct;

	if (sscanf(l, "gprof:   %lld %lf %7s %lf %7s %lf  %255[^\n]", &k->calls, &total, u1, &mean,
		   u2, &pct, k->name) != 7)
		return false;
	ASSERT(t->n < MAX_ROWS);
	k->total = qty_of(total, u1);
	k->mean = qty_of(mean, u2);
	k->pct = plain(pct, 0.1);
	t->n++;
	return true;
}

/* The line that names what bounds the steps. */
static bool parse_bound(struct summary *s, const char *l)
{
	char u[8], bound[16];
	double v, t;
	int n = 0;

	if (sscanf(l, "gprof:   GPU-bound: the GPU was busy %lf%% of the step time%n", &v, &n) ==
		1 &&
	    n)
		snprintf(bound, sizeof(bound), "GPU-bound");
	else if (sscanf(l, "gprof:   %15[a-z-]: the GPU waited %lf%% of the step time%n", bound, &v,
			&n) != 2 ||
		 !n)
		return false;
	snprintf(s->bound, sizeof(s->bound), "%s", bound);
	s->bound_pct = plain(v, 0.1);
	s->bound_call[0] = '\0';
	if (sscanf(l + n, "; %255s took %lf %7s of CPU per step", s->bound_call, &t, u) == 3)
		s->bound_call_ns = qty_of(t, u);
	return true;
}

static bool parse_copy(struct summary *s, const char *l)
{
	struct sum_copy *c = &s->copies[s->n_copies];
	char u1[8], u2[8], gbps[32];
	double bytes, time;

	if (sscanf(l, "gprof:   %15s %lld %lf %7s %lf %7s %31s", c->kind, &c->count, &bytes, u1,
		   &time, u2, gbps) != 7)
		return false;
	ASSERT(s->n_copies < MAX_ROWS);
	c->bytes = qty_of(bytes, u1);
	c->time = qty_of(time, u2);
	/* 3 significant digits or more: off by at most half a percent */
	c->gbps = strcmp(gbps, "-") ? (struct qty){atof(gbps), 0.0051 * atof(gbps) + 1e-12}
				    : (struct qty){-1, 0};
	s->n_copies++;
	return true;
}

static bool parse_steps(struct summary *s, const char *p)
{
	char u1[8], u2[8];
	double span, mean;

	if (sscanf(p, "steps %lld-%lld: %lld in %lf %7s mean step %lf %7[a-z]", &s->first, &s->last,
		   &s->steps, &span, u1, &mean, u2) != 7)
		return false;
	u1[strcspn(u1, ",")] = '\0';
	s->span = qty_of(span, u1);
	s->mean = qty_of(mean, u2);
	const char *eol = strchr(p, '\n');

	s->median.v = -1;
	p = strstr(p, "; median ");
	if (p && (!eol || p < eol)) {
		double v[4];
		char u[4][8];

		ASSERT_MSG(
		    sscanf(p, "; median %lf %7s (min %lf %7[^,], p90 %lf %7[^,], max %lf %7[^)])",
			   &v[0], u[0], &v[1], u[1], &v[2], u[2], &v[3], u[3]) == 8,
		    "step statistics: '%.100s'", p);
		s->median = qty_of(v[0], u[0]);
		s->min = qty_of(v[1], u[1]);
		s->p90 = qty_of(v[2], u[2]);
		s->max = qty_of(v[3], u[3]);
	}
	return true;
}

static bool parse_dropped(struct summary *s, const char *p)
{
	return sscanf(p, "dropped records: %lld (buffer full %lld, CUPTI %lld)", &s->dropped,
		      &s->dropped_buffer, &s->dropped_cupti) == 3;
}

/* The device of this id, added when new. */
static struct sum_dev *device_of(struct summary *s, int id)
{
	for (int i = 0; i < s->n_dev; i++)
		if (s->dev[i].id == id)
			return &s->dev[i];
	ASSERT(s->n_dev < MAX_ROWS);
	s->dev[s->n_dev] = (struct sum_dev){.id = id, .busy_pct.v = -1, .peak.v = -1};
	return &s->dev[s->n_dev++];
}

/*
 * "(steps ...[; no GPU activity recorded][; GPU d busy P% of step time (T)][; GPU d peak device memory in use
 * X][; dropped records: ...])"
 */
static void parse_one_line(struct summary *s, const char *p)
{
	char unit[8];
	double v, t;
	int id;

	s->one_line = true;
	ASSERT_MSG(parse_steps(s, p), "steps: '%s'", p);
	for (p = strstr(p, "; "); p; p = strstr(p + 1, "; ")) {
		if (parse_dropped(s, p + 2) || !strncmp(p, "; median ", 9))
			continue;
		if (!strncmp(p, "; no GPU activity recorded", 26)) {
			s->no_gpu = true;
		} else if (sscanf(p, "; GPU %d busy %lf%% of step time (%lf %7[^)])", &id, &v, &t,
				  unit) == 4) {
			struct sum_dev *d = device_of(s, id);

			d->busy_pct = plain(v, 0.1);
			d->busy = qty_of(t, unit);
		} else {
			ASSERT_MSG(sscanf(p, "; GPU %d peak device memory in use %lf %7[A-Za-z]",
					  &id, &v, unit) == 3,
				   "'%s'", p);
			device_of(s, id)->peak = qty_of(v, unit);
		}
	}
}

/* A line after the first; `table` is the table the previous lines opened (NULL, or copies). */
static void parse_line(struct summary *s, const char *l, struct sum_table **table, bool *copies)
{
	static const struct {
		const char *what;
		size_t offset;
	} tables[] = {{"kernels by GPU time", offsetof(struct summary, kernels)},
		      {"CUDA calls by CPU time", offsetof(struct summary, calls)},
		      {"NVTX ranges by time", offsetof(struct summary, ranges)}};
	int shown, distinct, n = 0;
	char what[32];

	if (parse_steps(s, l + 9) || parse_dropped(s, l + 9) || parse_bound(s, l))
		return;
	if (sscanf(l, "gprof:   top %d of %d %31[^:]:%n", &shown, &distinct, what, &n) == 3 && n) {
		for (size_t i = 0; i < ARRAY_SIZE(tables); i++)
			if (!strcmp(what, tables[i].what)) {
				*table = (struct sum_table *)((char *)s + tables[i].offset);
				(*table)->shown = shown;
				(*table)->distinct = distinct;
				*copies = false;
				return;
			}
	}
	if (!strncmp(l, "gprof:   copies ", 16)) {
		*table = NULL;
		*copies = true;
		return;
	}
	if (parse_gpu(s, l) || (*table && parse_row(*table, l)) || (*copies && parse_copy(s, l)) ||
	    strstr(l, " calls "))
		return;
	FAIL("a summary line this test does not know: '%s'", l);
}

/* The summary at the start of text: its first line, and the indented ones after it. */
static void parse_summary(const char *text, struct summary *s)
{
	char *copy = strdup(text), *save = NULL, *l;
	struct sum_table *table = NULL;
	bool copies = false;
	int n = 0;

	memset(s, 0, sizeof(*s));
	s->bound_pct.v = -1;
	ASSERT(copy);
	l = strtok_r(copy, "\n", &save);
	ASSERT_MSG(l && sscanf(l, "gprof: trace written: %4095s%n", s->path, &n) == 1,
		   "not a summary: '%s'", text);
	if (!strncmp(l + n, " (", 2))
		parse_one_line(s, l + n + 2);
	while ((l = strtok_r(NULL, "\n", &save)) && !strncmp(l, "gprof:   ", 9))
		parse_line(s, l, &table, &copies);
	free(copy);
	ASSERT_MSG(s->steps, "no steps in the summary:\n%s", text);
}

/* Figures computed from a trace file. */

struct span {
	long long b, e;
};

struct truth_kernel {
	char *name;
	long long calls, ns;
};

struct truth_copy {
	char kind[16];
	long long count, bytes, ns;
};

struct truth {
	long long steps, step_ns, step_b, step_e;
	long long step_dur[4096];
	struct truth_kernel kernels[64], calls[64], ranges[64];
	int n_kernels, n_calls, n_ranges;
	struct truth_copy copies[MAX_ROWS];
	int n_copies;
	long long gpu_ns; /* every GPU event's duration, all devices */
	int devices[MAX_ROWS], n_devices;
	long long kind_ns[MAX_ROWS][3], peak[MAX_ROWS];
	long long start_ts[MAX_ROWS], start[MAX_ROWS]; /* each gpu_memory counter's at step_b */
	struct span *spans[MAX_ROWS];		       /* per device, every GPU interval */
	size_t n_spans[MAX_ROWS];
	long long dropped_buffer, dropped_cupti;
};

/* µs with three decimals -> ns */
static long long ns_of(const json_t *ev, const char *key)
{
	double us = json_number_value(json_object_get(ev, key));

	return (long long)(us * 1000.0 + (us < 0 ? -0.5 : 0.5));
}

static long long arg_int(const json_t *ev, const char *key)
{
	return e2e_arg_int(ev, key);
}

static int device_index(struct truth *t, int dev)
{
	for (int i = 0; i < t->n_devices; i++)
		if (t->devices[i] == dev)
			return i;
	ASSERT(t->n_devices < MAX_ROWS);
	t->devices[t->n_devices] = dev;
	t->peak[t->n_devices] = -1;
	t->start[t->n_devices] = -1;
	return t->n_devices++;
}

/* ev's duration added to the row of its name among rows[0, *n), a new one if none is. */
static void truth_named(struct truth_kernel *rows, int *n, const json_t *ev, long long dur)
{
	const char *name = trace_str(ev, "name");
	int i = 0;

	while (i < *n && strcmp(rows[i].name, name))
		i++;
	if (i == *n) {
		ASSERT(*n < 64);
		rows[(*n)++] = (struct truth_kernel){.name = strdup(name)};
		ASSERT(rows[*n - 1].name);
	}
	rows[i].calls++;
	rows[i].ns += dur;
}

/* "Memcpy HtoD (Pageable -> Device)" -> "HtoD"; memsets are "memset". */
static void truth_copy(struct truth *t, const json_t *ev, long long dur)
{
	char kind[16] = "memset";
	int i = 0;

	if (!strcmp(trace_str(ev, "cat"), "gpu_memcpy"))
		ASSERT(sscanf(trace_str(ev, "name"), "Memcpy %15s", kind) == 1);
	while (i < t->n_copies && strcmp(t->copies[i].kind, kind))
		i++;
	if (i == t->n_copies) {
		ASSERT(t->n_copies < MAX_ROWS);
		snprintf(t->copies[t->n_copies++].kind, 16, "%s", kind);
	}
	t->copies[i].count++;
	t->copies[i].bytes += arg_int(ev, "bytes");
	t->copies[i].ns += dur;
}

/* [ts, ts + dur) among device d's busy spans. */
static void truth_span(struct truth *t, int d, long long ts, long long dur)
{
	if (!(t->n_spans[d] & (t->n_spans[d] - 1))) { /* 0, 1, 2, 4, ...: double */
		t->spans[d] = realloc(t->spans[d], 2 * (t->n_spans[d] + 1) * sizeof(struct span));
		ASSERT(t->spans[d]);
	}
	t->spans[d][t->n_spans[d]++] = (struct span){ts, ts + dur};
}

static void truth_gpu(struct truth *t, const json_t *ev, int kind)
{
	long long ts = ns_of(ev, "ts"), dur = ns_of(ev, "dur");
	int d = device_index(t, (int)json_integer_value(json_object_get(ev, "pid")));

	ASSERT_EQ(arg_int(ev, "device"), t->devices[d]);
	if (kind == 0)
		truth_named(t->kernels, &t->n_kernels, ev, dur);
	else
		truth_copy(t, ev, dur);
	t->kind_ns[d][kind] += dur;
	t->gpu_ns += dur;
	truth_span(t, d, ts, dur);
}

static void truth_event(struct truth *t, const json_t *ev)
{
	static const char *const gpu[] = {"kernel", "gpu_memcpy", "gpu_memset"};
	const char *cat = trace_str(ev, "cat"), *name = trace_str(ev, "name");

	for (int k = 0; k < 3; k++) {
		if (!strcmp(cat, gpu[k]) && !strcmp(trace_str(ev, "ph"), "X")) {
			truth_gpu(t, ev, k);
			return;
		}
	}
	/* work launched before the window: busy time, and nothing else */
	if (!strcmp(cat, "gpu_earlier")) {
		truth_span(t, device_index(t, (int)json_integer_value(json_object_get(ev, "pid"))),
			   ns_of(ev, "ts"), ns_of(ev, "dur"));
		return;
	}
	if (!strcmp(cat, "user_annotation") && !strncmp(name, "ProfilerStep#", 13)) {
		long long b = ns_of(ev, "ts"), e = b + ns_of(ev, "dur");

		t->step_b = t->steps && t->step_b < b ? t->step_b : b;
		t->step_e = t->steps && t->step_e > e ? t->step_e : e;
		t->step_ns += e - b;
		if (t->steps < (long long)ARRAY_SIZE(t->step_dur))
			t->step_dur[t->steps] = e - b;
		t->steps++;
	} else if (!strcmp(cat, "user_annotation") && !strcmp(trace_str(ev, "ph"), "X")) {
		truth_named(t->ranges, &t->n_ranges, ev, ns_of(ev, "dur"));
	} else if (!strcmp(cat, "cuda_runtime") || !strcmp(cat, "cuda_driver")) {
		truth_named(t->calls, &t->n_calls, ev, ns_of(ev, "dur"));
	} else if (!strcmp(cat, "gpu_memory")) {
		int d = device_index(t, (int)json_integer_value(json_object_get(ev, "pid")));
		long long v = arg_int(ev, "allocated");

		t->peak[d] = v > t->peak[d] ? v : t->peak[d];
	}
}

/* Each counter's value where the steps start: its latest point there or before. */
static void truth_start(struct truth *t, const json_t *ev)
{
	long long ts = ns_of(ev, "ts");
	int d;

	if (strcmp(trace_str(ev, "cat"), "gpu_memory") || !t->steps || ts > t->step_b)
		return;
	d = device_index(t, (int)json_integer_value(json_object_get(ev, "pid")));
	if (t->start[d] < 0 || ts >= t->start_ts[d]) {
		t->start_ts[d] = ts;
		t->start[d] = arg_int(ev, "allocated");
	}
}

static void truth_of(const struct trace *tr, struct truth *t)
{
	json_t *dropped = json_object_get(json_object_get(tr->root, "gprof"), "dropped"), *ev;
	size_t i;

	memset(t, 0, sizeof(*t));
	json_array_foreach(tr->events, i, ev) truth_event(t, ev);
	json_array_foreach(tr->events, i, ev) truth_start(t, ev);
	t->dropped_buffer = json_integer_value(json_object_get(dropped, "buffer_full"));
	t->dropped_cupti = json_integer_value(json_object_get(dropped, "cupti"));
}

static void truth_free(struct truth *t)
{
	for (int i = 0; i < MAX_ROWS; i++)
		free(t->spans[i]);
	for (int i = 0; i < t->n_kernels; i++)
		free(t->kernels[i].name);
	for (int i = 0; i < t->n_calls; i++)
		free(t->calls[i].name);
	for (int i = 0; i < t->n_ranges; i++)
		free(t->ranges[i].name);
}

static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->b < y->b ? -1 : x->b > y->b;
}

/* Length of the union of spans within [lo, hi): sort by start, sweep. */
static long long union_ns(struct span *s, size_t n, long long lo, long long hi)
{
	long long total = 0, cur_b = 0, cur_e = 0;
	bool open = false;

	qsort(s, n, sizeof(*s), cmp_span);
	for (size_t i = 0; i <= n; i++) {
		if (i < n && open && s[i].b <= cur_e) {
			cur_e = s[i].e > cur_e ? s[i].e : cur_e;
			continue;
		}
		if (open) {
			long long b = cur_b < lo ? lo : cur_b, e = cur_e > hi ? hi : cur_e;

			total += e > b ? e - b : 0;
		}
		if (i < n) {
			cur_b = s[i].b;
			cur_e = s[i].e;
			open = true;
		}
	}
	return total;
}

/* The summary's device lines against the trace. */
static void compare_devices(const struct summary *s, struct truth *t)
{
	long long span = t->step_e - t->step_b;

	ASSERT_EQ(s->n_dev, t->n_devices);
	for (int i = 0; i < s->n_dev; i++) {
		const struct sum_dev *d = &s->dev[i];
		int k = device_index(t, d->id);
		long long busy = union_ns(t->spans[k], t->n_spans[k], t->step_b, t->step_e);

		check_qty(d->busy, (double)busy, "busy time");
		check_qty(d->busy_pct, 100.0 * (double)busy / (double)span, "busy %");
		long long after = union_ns(t->spans[k], t->n_spans[k], t->step_e, LLONG_MAX);
		ASSERT_MSG((d->after.v >= 0) == (after > 0), "busy after the last step: %lld ns",
			   after);
		if (after > 0)
			check_qty(d->after, (double)after, "busy after the last step");
		for (int j = 0; j < 3; j++)
			check_qty(d->kinds[j], (double)t->kind_ns[k][j], "time per kind");
		ASSERT_EQ(d->peak.v >= 0, t->peak[k] >= 0);
		if (t->peak[k] >= 0)
			check_qty(d->peak, (double)t->peak[k], "peak device memory in use");
		/* what was in use at the start: the counter's value there, if it has one */
		ASSERT_EQ(d->start.v >= 0, t->start[k] >= 0);
		if (d->start.v >= 0)
			check_qty(d->start, (double)t->start[k], "memory at the start");
	}
}

static int cmp_kernel_total(const void *a, const void *b)
{
	const struct truth_kernel *x = a, *y = b;

	return x->ns > y->ns ? -1 : x->ns < y->ns;
}

/*
 * A table (kernels: top 10, by GPU time; CUDA calls and NVTX ranges: top 5): the largest
 * totals, in order, with their calls, total, mean and share of `whole`.
 */
static void compare_table(const struct sum_table *st, struct truth_kernel *rows, int n, int top,
			  long long whole)
{
	top = n < top ? n : top;
	qsort(rows, (size_t)n, sizeof(rows[0]), cmp_kernel_total);
	ASSERT_EQ(st->distinct, (top ? n : 0));
	ASSERT_EQ(st->shown, top);
	ASSERT_EQ(st->n, top);
	for (int i = 0; i < top; i++) {
		const struct sum_kernel *k = &st->rows[i];
		const struct truth_kernel *w = &rows[i];

		/* Equal totals may come in either order. */
		if (strcmp(k->name, w->name) && i + 1 < top && w->ns == rows[i + 1].ns)
			w = &rows[i + 1];
		ASSERT_STR_EQ(k->name, w->name);
		ASSERT_EQ(k->calls, w->calls);
		check_qty(k->total, (double)w->ns, "total");
		check_qty(k->mean, (double)(w->ns / w->calls), "mean");
		check_qty(k->pct, 100.0 * (double)w->ns / (double)whole, "share");
	}
}

/* What bounds the steps: the busiest device's share of the step span, and the costliest call. */
static void compare_bound(const struct summary *s, struct truth *t)
{
	long long span = t->step_e - t->step_b, best = 0;

	for (int k = 0; k < t->n_devices; k++) {
		long long busy = union_ns(t->spans[k], t->n_spans[k], t->step_b, t->step_e);

		best = busy > best ? busy : best;
	}
	double busy = 100.0 * (double)best / (double)span;

	ASSERT_STR_EQ(s->bound, busy >= 80 ? "GPU-bound" : busy < 50 ? "host-bound" : "mixed");
	check_qty(s->bound_pct, busy >= 80 ? busy : 100.0 - busy, "bound's share");
	ASSERT_EQ(s->bound_call[0] != '\0', busy < 80 && t->n_calls > 0);
	if (s->bound_call[0]) { /* rows sorted by compare_table */
		ASSERT_STR_EQ(s->bound_call, t->calls[0].name);
		check_qty(s->bound_call_ns, (double)(t->calls[0].ns / t->steps), "CPU per step");
	}
}

static void compare_copies(const struct summary *s, const struct truth *t)
{
	ASSERT_EQ(s->n_copies, t->n_copies);
	for (int i = 0; i < t->n_copies; i++) {
		const struct truth_copy *w = &t->copies[i];
		const struct sum_copy *c = NULL;

		for (int j = 0; j < s->n_copies; j++)
			c = strcmp(s->copies[j].kind, w->kind) ? c : &s->copies[j];
		ASSERT_MSG(c, "no summary line for copies %s", w->kind);
		ASSERT_EQ(c->count, w->count);
		check_qty(c->bytes, (double)w->bytes, "copy bytes");
		check_qty(c->time, (double)w->ns, "copy time");
		ASSERT(w->ns > 0);
		check_qty(c->gbps, (double)w->bytes / (double)w->ns, "GB/s");
	}
}

/* The one-line form: each device's busy time, or no GPU work at all; memory peaks. */
static void compare_one_line(const struct summary *s, struct truth *t)
{
	int with_memory = 0, printed = 0;

	ASSERT_EQ(s->no_gpu, t->gpu_ns == 0);
	if (s->no_gpu)
		ASSERT_EQ(t->n_kernels + t->n_copies, 0);
	for (int i = 0; i < t->n_devices; i++)
		with_memory += t->peak[i] >= 0;
	for (int i = 0; i < s->n_dev; i++) {
		const struct sum_dev *d = &s->dev[i];
		int k = device_index(t, d->id);

		if (d->peak.v >= 0) {
			check_qty(d->peak, (double)t->peak[k], "peak device memory in use");
			printed++;
		}
		ASSERT_EQ(d->busy_pct.v >= 0, !s->no_gpu);
		if (d->busy_pct.v >= 0) {
			long long span = t->step_e - t->step_b;
			long long busy = union_ns(t->spans[k], t->n_spans[k], t->step_b, t->step_e);

			check_qty(d->busy, (double)busy, "busy time");
			check_qty(d->busy_pct, 100.0 * (double)busy / (double)span, "busy %");
		}
	}
	ASSERT_EQ(printed, with_memory);
	if (!s->no_gpu)
		ASSERT_EQ(s->n_dev, t->n_devices);
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

/* Median, min, p90 (nearest rank) and max of the trace's steps, printed from two steps on. */
static void check_step_stats(const struct summary *s, struct truth *t)
{
	long long n = t->steps, *d = t->step_dur;

	ASSERT_EQ(s->median.v >= 0, n >= 2);
	if (n < 2)
		return;
	ASSERT(n <= (long long)ARRAY_SIZE(t->step_dur));
	qsort(d, (size_t)n, sizeof(*d), cmp_ll);
	check_qty(s->median, n % 2 ? (double)d[n / 2] : (d[n / 2 - 1] + d[n / 2]) / 2.0,
		  "median step");
	check_qty(s->min, (double)d[0], "min step");
	check_qty(s->p90, (double)d[(9 * n + 9) / 10 - 1], "p90 step");
	check_qty(s->max, (double)d[n - 1], "max step");
}

/* Every figure of the summary against the trace it describes. */
static void compare(const struct summary *s, const struct trace *tr, const char *path)
{
	struct truth t;

	truth_of(tr, &t);
	ASSERT_STR_EQ(s->path, path);
	ASSERT_EQ(s->steps, t.steps);
	ASSERT_EQ(s->last - s->first + 1, t.steps);
	check_qty(s->span, (double)(t.step_e - t.step_b), "step span");
	check_qty(s->mean, (double)(t.step_ns / t.steps), "mean step");
	check_step_stats(s, &t);
	if (s->one_line) {
		compare_one_line(s, &t);
	} else {
		compare_devices(s, &t);
		compare_table(&s->kernels, t.kernels, t.n_kernels, 10, t.gpu_ns);
		compare_table(&s->calls, t.calls, t.n_calls, 5, t.step_ns);
		compare_table(&s->ranges, t.ranges, t.n_ranges, 5, t.step_ns);
		compare_bound(s, &t);
		compare_copies(s, &t);
	}
	ASSERT_EQ(s->dropped_buffer, t.dropped_buffer);
	ASSERT_EQ(s->dropped_cupti, t.dropped_cupti);
	ASSERT_EQ(s->dropped, t.dropped_buffer + t.dropped_cupti);
	truth_free(&t);
}

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "r");
	char *text = NULL;
	size_t cap = 0;
	ssize_t n;

	ASSERT(f);
	n = getdelim(&text, &cap, '\0', f);
	fclose(f);
	if (n < 0) {
		free(text);
		return strdup("");
	}
	return text;
}

/* The trace file of run r (its only one). */
static const char *trace_path(const struct e2e_run *r)
{
	static char path[PATH_MAX * 2];

	ASSERT_EQ(r->n_traces, 1);
	snprintf(path, sizeof(path), "%s/%s", r->dir, trace_str(r->traces[0].root, "traceName"));
	return path;
}

/* steps-app under libgprof; env1 and env2 (or NULL) add to the environment. */
static void run_steps_app(struct e2e_run *r, const char *env1, const char *env2)
{
	const char *argv[] = {
	    proc_build_path("test/apps/steps-app"), "-s", "7", "-t", "3", "-l", "4", NULL};
	/*
	 * 2 ms kernels on 3 streams overlap; the one left running outlives the window; copies
	 * slow enough to weigh in the kernels' share of GPU time.
	 */
	const char *env[] = {"FAKEGPU_KERNEL_TABLE=slow=300000000,scale=20000000",
			     "FAKEGPU_COPY_GBPS=0.001", env1, env2, NULL};

	e2e_run(r, argv, e2e_cupti(true), env, true);
	ASSERT_EQ(r->res.status, 0);
	ASSERT_EQ(r->n_traces, 1);
}

/* This run exercises what it should: overlapping GPU work, and work past the last step. */
static void check_run_shape(const struct trace *tr)
{
	struct truth t;
	long long sum = 0, inside, all;

	truth_of(tr, &t);
	ASSERT_EQ(t.n_devices, 1);
	ASSERT_GE(t.n_kernels, 2);
	for (size_t i = 0; i < t.n_spans[0]; i++)
		sum += t.spans[0][i].e - t.spans[0][i].b;
	inside = union_ns(t.spans[0], t.n_spans[0], t.step_b, t.step_e);
	all = union_ns(t.spans[0], t.n_spans[0], 0, LLONG_MAX);
	ASSERT_GT(sum, all);	/* streams overlap: a sum of durations is not the union */
	ASSERT_GT(all, inside); /* the late kernel runs past the last step */
	truth_free(&t);
}

/* GPROF_SUMMARY=<file>: appended there, every figure as the trace has it; nothing on stderr. */
TEST(summary_matches_trace)
{
	const char *file = proc_tmp_file();
	char env[PATH_MAX];
	struct summary s;
	struct e2e_run r;
	char *text;

	snprintf(env, sizeof(env), "GPROF_SUMMARY=%s", file);
	run_steps_app(&r, env, NULL);
	check_run_shape(&r.traces[0]);
	text = read_all(file);
	parse_summary(text, &s);
	compare(&s, &r.traces[0], trace_path(&r));
	ASSERT(!strstr(r.res.err, "trace written"));
	ASSERT(!strstr(r.res.err, "busy"));
	free(text);
	e2e_free(&r);
}

/* The default goes to stderr, with drops when there were; GPROF_SUMMARY=off prints none of it. */
/*
 * repeat=0: the first window's summary whole, then one line saying so, then one line per
 * window with its steps and busy time, each against its own trace (issue #15: 261 lines for
 * 100 steps before).
 */
TEST(summary_later_windows_one_line)
{
	const char *argv[] = {proc_build_path("test/apps/steps-app"), "-s", "10", NULL};
	const char *env[] = {"GPROF_SCHEDULE=wait=0,warmup=0,active=2,repeat=0", NULL};
	struct e2e_run r;
	const char *p;
	int n = 0;

	e2e_run(&r, argv, e2e_cupti(true), env, true);
	ASSERT_EQ(r.res.status, 0);
	ASSERT_EQ(r.n_traces, 5);
	ASSERT_EQ(text_count(r.res.err, "kernels by GPU time:"), 1);
	ASSERT_EQ(text_count(r.res.err, "later windows get one line each"), 1);
	p = strstr(r.res.err, "later windows get one line each");
	for (const char *q = r.res.err; q < p; q++)
		n += *q == '\n';
	/* whole (each of its lines parsed below), the note, one line each */
	ASSERT_EQ(text_count(r.res.err, "\n"), n + 1 + 4);
	n = 0;
	for (p = strstr(r.res.err, "gprof: trace written: "); p;
	     p = strstr(p + 1, "gprof: trace written: "), n++) {
		struct summary s;
		char path[PATH_MAX * 2];

		parse_summary(p, &s);
		ASSERT_EQ(s.one_line, n > 0);
		ASSERT(!s.no_gpu);
		snprintf(path, sizeof(path), "%s/%s", r.dir,
			 trace_str(r.traces[n].root, "traceName"));
		compare(&s, &r.traces[n], path);
	}
	ASSERT_EQ(n, 5);
	e2e_free(&r);
}

TEST(summary_stderr_and_off)
{
	struct summary s;
	struct e2e_run r;
	const char *at;

	run_steps_app(&r, "GPROF_SUMMARY", "FAKEGPU_CUPTI_DROP_EVERY=5");
	at = strstr(r.res.err, "gprof: trace written: ");
	ASSERT_MSG(at, "stderr: %s", r.res.err);
	parse_summary(at, &s);
	ASSERT_GT(s.dropped_cupti, 0);
	compare(&s, &r.traces[0], trace_path(&r));
	e2e_free(&r);

	run_steps_app(&r, "GPROF_SUMMARY=off", NULL);
	ASSERT_MSG(!strstr(r.res.err, "trace written") && !strstr(r.res.err, "busy") &&
		       !strstr(r.res.err, "kernels"),
		   "stderr: %s", r.res.err);
	e2e_free(&r);
}

/* Without CUPTI there is no GPU work to tabulate: one line, with the steps and memory peak. */
TEST(summary_hooks_only)
{
	struct summary s;
	struct e2e_run r;
	const char *at;

	run_steps_app(&r, "GPROF_CUPTI_LIB=/nonexistent/libcupti.so.13", NULL);
	at = strstr(r.res.err, "gprof: trace written: ");
	ASSERT_MSG(at, "stderr: %s", r.res.err);
	parse_summary(at, &s);
	ASSERT(s.one_line);
	ASSERT_EQ(s.n_dev, 1);
	compare(&s, &r.traces[0], trace_path(&r));
	e2e_free(&r);
}

/* A summary file that can't be opened: one gprof: line that says so, and the trace. */
TEST(summary_unwritable_file)
{
	struct e2e_run r;
	const char *line;

	run_steps_app(&r, "GPROF_SUMMARY=/nonexistent-gprof-dir/summary.txt", NULL);
	line = strstr(r.res.err, "GPROF_SUMMARY");
	ASSERT_MSG(line, "stderr: %s", r.res.err);
	ASSERT(!strstr(line + 1, "GPROF_SUMMARY"));
	while (line > r.res.err && line[-1] != '\n')
		line--;
	ASSERT(!strncmp(line, "gprof: ", 7));
	ASSERT_STR_CONTAINS(line, "/nonexistent-gprof-dir/summary.txt");
	ASSERT_STR_CONTAINS(line, trace_path(&r));
	ASSERT(!strstr(r.res.err, "busy"));
	e2e_free(&r);
}

/* Unit tests: events fed straight to the tally, figures computed here from the same events. */

static const char *const copy_names[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
					 "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};

/* What the trace would say about ev, as JSON. */
static json_t *event_json(const struct gprof_export_event *ev)
{
	long long b = (long long)ev->ts_ns, e = b + (long long)ev->dur_ns;
	int k = ev->kind == GPROF_EXPORT_KERNEL ? 0 : ev->kind == GPROF_EXPORT_MEMCPY ? 1 : 2;
	char name[64];

	if (ev->kind == GPROF_EXPORT_STEP || ev->kind == GPROF_EXPORT_MEMORY)
		return json_pack("{s:s, s:s, s:I, s:f, s:f, s:{s:I}}", "cat",
				 ev->kind == GPROF_EXPORT_STEP ? "user_annotation" : "gpu_memory",
				 "name", "ProfilerStep#1", "pid", (json_int_t)ev->device, "ts",
				 (double)b / 1000.0, "dur", (double)(e - b) / 1000.0, "args",
				 "allocated", (json_int_t)ev->u.memory.allocated);
	snprintf(
	    name, sizeof(name), "Memcpy %s (Device -> Device)",
	    copy_names[ev->u.copy.copy_kind < ARRAY_SIZE(copy_names) ? ev->u.copy.copy_kind : 0]);
	return json_pack("{s:s, s:s, s:s, s:I, s:f, s:f, s:{s:I, s:I}}", "ph", "X", "cat",
			 k == 0	  ? "kernel"
			 : k == 1 ? "gpu_memcpy"
				  : "gpu_memset",
			 "name", k == 0 ? ev->name->raw : name, "pid", (json_int_t)ev->device, "ts",
			 (double)b / 1000.0, "dur", (double)(e - b) / 1000.0, "args", "device",
			 (json_int_t)ev->device, "bytes", (json_int_t)ev->u.copy.bytes);
}

/* What the trace would say about the n events, into t (as truth_of does from the file). */
static void truth_add(struct truth *t, const struct gprof_export_event *ev, size_t n)
{
	json_t *j;

	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < n; i++) {
			j = event_json(&ev[i]);
			(pass ? truth_start : truth_event)(t, j);
			json_decref(j);
		}
}

static void feed_and_compare(const struct gprof_export_event *ev, size_t n)
{
	struct gprof_export_summary *sum = gprof_summary_new();
	struct gprof_export_result r = {.path = "x", .first_step = 1, .last_step = 1};
	struct summary s;
	struct truth t;
	char *text;

	memset(&t, 0, sizeof(t));
	ASSERT(sum);
	for (size_t i = 0, run; i < n; i += run) {
		run = 1 + (size_t)rand() % 64;
		run = run < n - i ? run : n - i;
		gprof_summary_events(sum, ev + i, run);
	}
	truth_add(&t, ev, n);
	r.summary = sum;
	text = gprof_export_summary_text(&r);
	ASSERT(text);
	parse_summary(text, &s);
	check_qty(s.span, (double)(t.step_e - t.step_b), "step span");
	compare_devices(&s, &t);
	compare_table(&s.kernels, t.kernels, t.n_kernels, 10, t.gpu_ns);
	compare_bound(&s, &t);
	compare_copies(&s, &t);
	gprof_free(text);
	gprof_summary_free(sum);
	truth_free(&t);
}

static struct gprof_export_event gpu_event(uint32_t device, uint64_t ts, uint64_t dur)
{
	static const char *const names[] = {"k00", "k01", "k02", "k03", "k04", "k05", "k06", "k07",
					    "k08", "k09", "k10", "k11", "k12", "k13", "k14"};
	struct gprof_export_event e = {.ts_ns = ts, .dur_ns = dur, .device = device};
	int r = rand() % 10;

	if (r < 6) {
		e.kind = GPROF_EXPORT_KERNEL;
		/* Skewed, so that totals differ and the top 10 of 15 is a real choice. */
		e.name = gprof_export_intern(names[(rand() % 15) * (rand() % 15) / 14]);
	} else {
		e.kind = r < 9 ? GPROF_EXPORT_MEMCPY : GPROF_EXPORT_MEMSET;
		e.u.copy.bytes = 1 + (uint64_t)rand() % 100000;
		e.u.copy.copy_kind = (uint8_t)(rand() % 13); /* 11, 12: out of range */
	}
	return e;
}

/* Overlapping GPU work on two devices in random order, steps, memory; some of it outside. */
TEST(summary_random_events)
{
	enum {
		N = 6000
	};
	struct gprof_export_event *ev = calloc(N, sizeof(*ev));
	uint64_t base = 5000000000ull; /* small enough for µs in a double to keep the ns */

	ASSERT(ev);
	srand(42);
	for (size_t i = 0; i < N; i++) {
		uint64_t ts = base + (uint64_t)rand() % 40000000, dur = (uint64_t)rand() % 30000;

		ev[i] = gpu_event(i % 3 ? 0 : 3, ts, dur);
		if (i % 50 == 0)
			ev[i] = (struct gprof_export_event){.kind = GPROF_EXPORT_MEMORY,
							    .ts_ns = ts,
							    .device = i % 100 ? 0 : 3,
							    .u.memory.allocated = (uint64_t)rand()
										  << 12};
	}
	/* Steps from 5 ms to 35 ms: GPU work before and after is outside. */
	for (size_t k = 0; k < 3; k++)
		ev[N / 2 + k] = (struct gprof_export_event){.kind = GPROF_EXPORT_STEP,
							    .ts_ns = base + 5000000 + k * 10000000,
							    .dur_ns = 10000000};
	feed_and_compare(ev, N);
	free(ev);
}

/* More gaps than the tally keeps (it folds the oldest): still exact when they come in order. */
TEST(summary_many_spans)
{
	enum {
		N = 150000 /* 2.3 times the spans the tally keeps */
	};
	struct gprof_export_event *ev = calloc(N, sizeof(*ev));
	uint64_t base = 1000000000;

	ASSERT(ev);
	srand(7);
	ev[0] = (struct gprof_export_event){
	    .kind = GPROF_EXPORT_STEP, .ts_ns = base, .dur_ns = (uint64_t)N * 1000};
	for (size_t i = 1; i < N; i++) {
		/* Mostly disjoint; now and then one overlapping its recent predecessors. */
		uint64_t ts = base + i * 1000 - (i % 97 ? 0 : 2500);

		ev[i] = gpu_event(1, ts, 100 + (uint64_t)rand() % (i % 97 ? 800 : 3000));
	}
	feed_and_compare(ev, N);
	free(ev);
}

/* A window without GPU work (one line); names shown for a terminal; a window without steps. */
TEST(summary_text_edges)
{
	char name[300];
	struct gprof_export_summary *sum = gprof_summary_new();
	struct gprof_export_result r = {
	    .path = "p", .summary = sum, .first_step = 5, .last_step = 5, .dropped = 3};
	struct gprof_export_event ev[] = {
	    {.kind = GPROF_EXPORT_STEP, .ts_ns = 10, .dur_ns = 1000},
	    {.kind = GPROF_EXPORT_MEMORY, .ts_ns = 20, .device = 1, .u.memory.allocated = 2048},
	    {.kind = GPROF_EXPORT_MEMORY, .ts_ns = 30, .device = 1, .u.memory.allocated = 1024},
	};
	char *text, *row;

	ASSERT(sum);
	gprof_summary_events(sum, ev, ARRAY_SIZE(ev));
	text = gprof_export_summary_text(&r);
	ASSERT_STR_EQ(
	    text,
	    "gprof: trace written: p (steps 5-5: 1 in 1.000 us, mean step 1.000 us; "
	    "no GPU activity recorded; GPU 1 peak device memory in use 2.00 KiB; dropped records: "
	    "3 (buffer full 3, CUPTI 0))\n");
	gprof_free(text);
	gprof_summary_free(sum);
	r.dropped = 0;

	/* 94 bytes, then a 3-byte character across the cut at 96, a newline, more. */
	memset(name, 'a', sizeof(name));
	memcpy(name + 94, "\xe2\x9c\x93\n", 4);
	name[sizeof(name) - 1] = '\0';
	ev[0] = (struct gprof_export_event){.kind = GPROF_EXPORT_KERNEL,
					    .ts_ns = 10,
					    .dur_ns = 5,
					    .device = 2,
					    .name = gprof_export_intern(name)};
	r.summary = sum = gprof_summary_new();
	gprof_summary_events(sum, ev, 1);
	text = gprof_export_summary_text(&r);
	/* not "no steps marked": a time window may end before a program that marks steps marks one */
	ASSERT_STR_CONTAINS(text, "gprof:   no step marker in this window\n");
	ASSERT(!strstr(text, "dropped"));
	ASSERT_STR_CONTAINS(text, "gprof:   GPU 2: busy 5 ns; kernels 5 ns, memcpy 0 ns");
	row = strstr(text, "  aaaa");
	ASSERT(row);
	ASSERT_EQ(strcspn(row + 2, "\n"), 94 + 3); /* cut before the character, then "..." */
	ASSERT(!strncmp(row + 2 + 94, "...\n", 4));
	gprof_free(text);
	gprof_summary_free(sum);
}
