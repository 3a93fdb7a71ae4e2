/*
 * --compare A B: what changed from trace A to trace B, per kernel (largest absolute change in
 * total GPU time first) and for the steps and each device's busy time.
 */
#include <stdlib.h>
#include <string.h>

#include "export/summary.h"
#include "scripts/summary/tool.h"

/* A kernel of either trace; a or b is NULL when the other trace alone ran it. */
struct row {
	const char *name;
	const struct tool_kernel *a, *b;
	int64_t delta_ns; /* total in B - total in A */
};

static const struct tool_kernel none;

static uint64_t abs64(int64_t v)
{
	return v < 0 ? -(uint64_t)v : (uint64_t)v;
}

static int cmp_row_name(const void *x, const void *y)
{
	const struct row *a = x, *b = y;

	return a->name < b->name ? -1 : a->name > b->name;
}

/* Largest absolute change first; equal changes by name, for a stable order. */
static int cmp_row_delta(const void *x, const void *y)
{
	const struct row *a = x, *b = y;
	uint64_t da = abs64(a->delta_ns), db = abs64(b->delta_ns);

	return da != db ? (da > db ? -1 : 1) : strcmp(a->name, b->name);
}

/* Rows of both traces' kernels, one per name (interned: equal names, equal pointers). */
static struct row *join(const struct tool_trace *a, const struct tool_trace *b, size_t *n)
{
	struct row *r = calloc(a->n_kernels + b->n_kernels + 1, sizeof(*r));
	size_t m = 0;

	if (!r)
		return NULL;
	for (size_t i = 0; i < a->n_kernels; i++)
		r[m++] = (struct row){.name = a->kernels[i].name, .a = &a->kernels[i]};
	for (size_t i = 0; i < b->n_kernels; i++)
		r[m++] = (struct row){.name = b->kernels[i].name, .b = &b->kernels[i]};
	qsort(r, m, sizeof(*r), cmp_row_name);
	*n = 0;
	for (size_t i = 0; i < m; i++) {
		if (*n && r[*n - 1].name == r[i].name)
			r[*n - 1].b = r[i].b;
		else
			r[(*n)++] = r[i];
	}
	for (size_t i = 0; i < *n; i++)
		r[i].delta_ns = (int64_t)((r[i].b ? r[i].b->ns : 0) - (r[i].a ? r[i].a->ns : 0));
	qsort(r, *n, sizeof(*r), cmp_row_delta);
	return r;
}

/* "+20.0%", or "-" when there is nothing to relate the change to. */
static const char *fmt_change(char out[32], uint64_t a, uint64_t b)
{
	if (!a)
		return "-";
	snprintf(out, 32, "%+.1f%%", 100.0 * ((double)b - (double)a) / (double)a);
	return out;
}

static double share(uint64_t ns, uint64_t whole)
{
	return whole ? 100.0 * (double)ns / (double)whole : 0.0;
}

static void put_kernel(FILE *out, const struct row *r, const struct tool_trace *ta,
		       const struct tool_trace *tb)
{
	const struct tool_kernel *a = r->a ? r->a : &none, *b = r->b ? r->b : &none;
	char t[6][32];

	fprintf(out, "%8llu %8llu %12s %12s %12s %8s %12s %12s %7.1f %7.1f  %s\n",
		(unsigned long long)a->calls, (unsigned long long)b->calls,
		gprof_summary_fmt_time(t[0], a->ns), gprof_summary_fmt_time(t[1], b->ns),
		tool_fmt_delta(t[2], r->delta_ns),
		!r->a	? "new"
		: !r->b ? "gone"
			: fmt_change(t[3], a->ns, b->ns),
		a->calls ? gprof_summary_fmt_time(t[4], a->ns / a->calls) : "-",
		b->calls ? gprof_summary_fmt_time(t[5], b->ns / b->calls) : "-",
		share(a->ns, ta->gpu_ns), share(b->ns, tb->gpu_ns), tool_clean(r->name));
}

static void put_kernels(FILE *out, const struct tool_trace *a, const struct tool_trace *b)
{
	size_t n = 0, only_a = 0, only_b = 0;
	struct row *r = join(a, b, &n);

	if (!r) {
		fputs("kernels: out of memory\n", out);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		only_a += !r[i].b;
		only_b += !r[i].a;
	}
	fprintf(out,
		"kernels: %zu in A, %zu in B (%zu only in A, %zu only in B), by absolute change "
		"in total GPU time:\n",
		a->n_kernels, b->n_kernels, only_a, only_b);
	fprintf(out, "%8s %8s %12s %12s %12s %8s %12s %12s %7s %7s  %s\n", "calls A", "calls B",
		"total A", "total B", "change", "change%", "mean A", "mean B", "GPU% A", "GPU% B",
		"name");
	for (size_t i = 0; i < n; i++)
		put_kernel(out, &r[i], a, b);
	free(r);
}

/* "label  A  B  change" */
static void put_line(FILE *out, const char *label, const char *a, const char *b, const char *change)
{
	fprintf(out, "%-18s %14s %14s  %s\n", label, a, b, change);
}

/* One step figure of A and B ("-" for a trace without steps) and the change from A to B. */
static void put_step_line(FILE *out, const char *label, size_t na, uint64_t va, size_t nb,
			  uint64_t vb, const char *note)
{
	char t[4][32], change[96];

	snprintf(change, sizeof(change), "%s %s%s",
		 na && nb ? tool_fmt_delta(t[2], (int64_t)(vb - va)) : "-",
		 na && nb ? fmt_change(t[3], va, vb) : "", note);
	put_line(out, label, na ? gprof_summary_fmt_time(t[0], va) : "-",
		 nb ? gprof_summary_fmt_time(t[1], vb) : "-", change);
}

/*
 * The median step first: a mean moves with one slow step. A change of the median within the
 * larger of the two runs' own step-to-step spread (p75 - p25) is marked as noise.
 */
static void put_steps(FILE *out, const struct tool_trace *a, const struct tool_trace *b)
{
	struct gprof_stats sa = {0}, sb = {0};
	bool have = tool_step_stats(a, &sa) & tool_step_stats(b, &sb);
	uint64_t moved = sb.median > sa.median ? sb.median - sa.median : sa.median - sb.median;
	uint64_t spread = gprof_stats_spread(&sa) > gprof_stats_spread(&sb)
			      ? gprof_stats_spread(&sa)
			      : gprof_stats_spread(&sb);
	char t[2][32];

	put_line(out, "", "A", "B", "change");
	snprintf(t[0], 32, "%zu", a->n_steps);
	snprintf(t[1], 32, "%zu", b->n_steps);
	put_line(out, "steps", t[0], t[1], "");
	put_step_line(out, "median step", sa.n, sa.median, sb.n, sb.median,
		      have && moved <= spread ? " (noise: within the steps' own spread)" : "");
	put_step_line(out, "mean step", sa.n, sa.mean, sb.n, sb.mean, "");
	put_step_line(out, "min step", sa.n, sa.min, sb.n, sb.min, "");
	put_step_line(out, "p90 step", sa.n, sa.p90, sb.n, sb.p90, "");
	put_step_line(out, "max step", sa.n, sa.max, sb.n, sb.max, "");
}

static const struct tool_device *device_in(const struct tool_trace *t, uint32_t id)
{
	for (unsigned i = 0; i < t->n_dev; i++)
		if (t->dev[i].id == id)
			return &t->dev[i];
	return NULL;
}

/* Busy share of the steps' span ("-" without steps or without the device), busy time. */
static void busy_of(const struct tool_trace *t, const struct tool_device *d, char pct[32],
		    char time[32])
{
	uint64_t span = t->step_end - t->step_begin;

	snprintf(pct, 32, "-");
	snprintf(time, 32, "-");
	if (!d)
		return;
	if (t->n_steps && span)
		snprintf(pct, 32, "%.1f%%", share(d->busy_ns, span));
	gprof_summary_fmt_time(time, d->busy_ns);
}

static void put_device(FILE *out, const struct tool_trace *a, const struct tool_trace *b,
		       uint32_t id)
{
	const struct tool_device *da = device_in(a, id), *db = device_in(b, id);
	char label[32], pa[32], pb[32], ta[32], tb[32], c[2][32], line[72];
	uint64_t sa = a->step_end - a->step_begin, sb = b->step_end - b->step_begin;

	busy_of(a, da, pa, ta);
	busy_of(b, db, pb, tb);
	snprintf(line, sizeof(line), "-");
	if (da && db && a->n_steps && b->n_steps && sa && sb)
		snprintf(line, sizeof(line), "%+.1f points",
			 share(db->busy_ns, sb) - share(da->busy_ns, sa));
	snprintf(label, sizeof(label), "GPU %u busy", id);
	put_line(out, label, pa, pb, line);
	snprintf(line, sizeof(line), "-");
	if (da && db)
		snprintf(line, sizeof(line), "%s %s",
			 tool_fmt_delta(c[0], (int64_t)(db->busy_ns - da->busy_ns)),
			 fmt_change(c[1], da->busy_ns, db->busy_ns));
	snprintf(label, sizeof(label), "GPU %u busy time", id);
	put_line(out, label, ta, tb, line);
}

void tool_compare(const struct tool_trace *a, const struct tool_trace *b, FILE *out)
{
	fprintf(out, "A: %s\n", tool_clean(a->path));
	fprintf(out, "B: %s\n", tool_clean(b->path));
	put_steps(out, a, b);
	for (unsigned i = 0; i < a->n_dev; i++)
		put_device(out, a, b, a->dev[i].id);
	for (unsigned i = 0; i < b->n_dev; i++)
		if (!device_in(a, b->dev[i].id))
			put_device(out, a, b, b->dev[i].id);
	put_kernels(out, a, b);
}
