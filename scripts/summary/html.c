/*
 * --html: one self-contained page (inline CSS and SVG, no script, nothing from the network) with
 * the trace's header, a per-step GPU busy/idle chart per device, a top-kernels chart and the
 * summary. Every bar carries its figures in data- attributes and a tooltip.
 */
#include <math.h>
#include <string.h>

#include "export/summary.h"
#include "scripts/summary/tool.h"

#define STEPS_W	    600.0 /* px of the step chart's plot, at most 2 px a step beyond 300 */
#define STEPS_H	    200.0
#define STEPS_X	    72.0 /* left edge of the plot: room for the axis labels */
#define STEPS_Y	    34.0 /* top edge: room for the legend */
#define LEGEND_H    24.0 /* the kernel chart's legend, above its plot */
#define BAR_MAX_W   40.0
#define KERNELS_W   360.0 /* px of the largest kernel's bar */
#define KERNEL_ROW  24.0
#define KERNEL_NAME 100 /* bytes of a name shown beside its bar; the tooltip has all of it */
#define PLOT_PAD    4.0

/* Fills by class: the tests read them from here too. */
static const char style[] =
    "body{font:14px/1.45 sans-serif;margin:16px;color:#212529;background:#fff}\n"
    "h1{font-size:19px;margin:0 0 10px}h2{font-size:15px;margin:20px 0 6px}\n"
    "table.head{border-collapse:collapse}table.head th{text-align:left;padding:1px 16px 1px 0;"
    "font-weight:600;vertical-align:top}table.head td{padding:1px 0}\n"
    "pre{font:12px/1.35 monospace;background:#f8f9fa;padding:8px;overflow-x:auto}\n"
    "svg{display:block}svg text{font:12px sans-serif;fill:#212529}\n"
    "rect.busy{fill:#2f9e44}rect.idle{fill:#ced4da}rect.kernel{fill:#1971c2}\n"
    "rect.plot-steps{fill:#fff9db}rect.plot-kernels{fill:#f3f0ff}\n";

/* Text for HTML content and attribute values; control bytes but newline and tab dropped. */
static void put_esc(FILE *out, const char *s)
{
	static const char *const ent[256] = {
	    ['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;", ['"'] = "&quot;", ['\''] = "&#39;",
	};

	for (; *s; s++) {
		if (((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t') || *s == 0x7f)
			continue;
		if (ent[(unsigned char)*s])
			fputs(ent[(unsigned char)*s], out);
		else
			fputc(*s, out);
	}
}

/* The first n bytes of s, cut at a character boundary, with "…" when cut. */
static void put_esc_cut(FILE *out, const char *s, size_t n)
{
	char buf[KERNEL_NAME + 1];
	size_t len = strlen(s);

	if (len <= n) {
		put_esc(out, s);
		return;
	}
	while (n && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	memcpy(buf, s, n);
	buf[n] = '\0';
	put_esc(out, buf);
	fputs("\xe2\x80\xa6", out);
}

static const char *jstr(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

static long long jint(const json_t *o, const char *key)
{
	return (long long)json_integer_value(json_object_get(o, key));
}

static void th(FILE *out, const char *what)
{
	fprintf(out, "<tr><th>%s</th><td>", what);
}

static void put_devices(FILE *out, const json_t *head)
{
	const json_t *d;
	char label[32];
	size_t i;

	json_array_foreach(json_object_get(head, "deviceProperties"), i, d)
	{
		snprintf(label, sizeof(label), "device %lld", jint(d, "id"));
		th(out, label);
		put_esc(out, jstr(d, "name"));
		fprintf(out, ", %.2f GiB, compute capability %lld.%lld, %lld SMs</td></tr>\n",
			(double)jint(d, "totalGlobalMem") / 1073741824.0, jint(d, "computeMajor"),
			jint(d, "computeMinor"), jint(d, "numSms"));
	}
}

/* The "gprof" object: record counts, drops, CUPTI, warnings. */
static void put_gprof(FILE *out, const json_t *g)
{
	const json_t *dropped = json_object_get(g, "dropped"), *cupti = json_object_get(g, "cupti");
	const char *key, *sep = "";
	const json_t *v;
	size_t i;

	th(out, "records");
	json_object_foreach((json_t *)json_object_get(g, "records"), key, v)
	{
		if (!json_integer_value(v)) /* the kinds this window has, not every kind there is */
			continue;
		fputs(sep, out);
		put_esc(out, key);
		fprintf(out, " %lld", (long long)json_integer_value(v));
		sep = ", ";
	}
	fprintf(out, "</td></tr>\n");
	th(out, "dropped");
	fprintf(out, "buffer full %lld, CUPTI %lld, late %lld</td></tr>\n",
		jint(dropped, "buffer_full"), jint(dropped, "cupti"), jint(dropped, "late"));
	th(out, "CUPTI");
	fprintf(out, "version %lld, ", jint(cupti, "version"));
	put_esc(out, jstr(cupti, "library"));
	fputs(" (", out);
	put_esc(out, jstr(cupti, "status"));
	fputs(")</td></tr>\n", out);
	th(out, "warnings");
	json_array_foreach(json_object_get(g, "warnings"), i, v)
	{
		put_esc(out, json_string_value(v) ? json_string_value(v) : "");
		fputs("<br>", out);
	}
	fprintf(out, "%s</td></tr>\n",
		json_array_size(json_object_get(g, "warnings")) ? "" : "none");
}

static void put_steps_row(FILE *out, const struct tool_trace *t)
{
	char span[32], mean[32], stats[128];
	struct gprof_stats st;

	th(out, "steps");
	if (!t->n_steps) {
		fputs("no step marker in this trace</td></tr>\n", out);
		return;
	}
	fprintf(out, "%llu&ndash;%llu: %zu in %s, mean step %s",
		(unsigned long long)t->result.first_step, (unsigned long long)t->result.last_step,
		t->n_steps, gprof_summary_fmt_time(span, t->step_end - t->step_begin),
		gprof_summary_fmt_time(mean, t->step_ns / t->n_steps));
	if (t->n_steps > 1 && tool_step_stats(t, &st))
		fprintf(out, "; %s", gprof_summary_fmt_stats(stats, sizeof(stats), &st));
	fputs("</td></tr>\n", out);
}

/* CUDA's versions are 1000 * major + 10 * minor; 0: libgprof could not ask (a static runtime). */
static void put_version(FILE *out, const char *what, long long v)
{
	if (v > 0)
		fprintf(out, "%s %lld.%lld", what, v / 1000, v % 1000 / 10);
	else
		fprintf(out, "%s unknown", what);
}

static void put_versions(FILE *out, const json_t *head)
{
	th(out, "CUDA");
	put_version(out, "runtime", jint(head, "cuda_runtime_version"));
	put_version(out, ", driver", jint(head, "cuda_driver_version"));
	fputs("</td></tr>\n", out);
}

static void put_head(FILE *out, const struct tool_trace *t)
{
	const json_t *g = json_object_get(t->head, "gprof"), *rank;

	fputs("<table class=\"head\">\n", out);
	th(out, "file");
	put_esc(out, t->path);
	fputs("</td></tr>\n", out);
	th(out, "schedule");
	put_esc(out, jstr(g, "schedule"));
	fprintf(out, " (window %lld)</td></tr>\n", jint(g, "window"));
	put_steps_row(out, t);
	put_devices(out, t->head);
	rank = json_object_get(t->head, "distributedInfo");
	th(out, "rank");
	fprintf(out, "%lld of %lld</td></tr>\n", jint(rank, "rank"), jint(rank, "world_size"));
	put_versions(out, t->head);
	if (g)
		put_gprof(out, g);
	th(out, "libgprof");
	put_esc(out, jstr(g, "version"));
	fputs("</td></tr>\n</table>\n", out);
}

static void put_legend(FILE *out)
{
	fputs("<rect class=\"busy\" x=\"0\" y=\"4\" width=\"12\" height=\"12\"/>"
	      "<text x=\"18\" y=\"14\">GPU busy (kernels, copies, memsets)</text>"
	      "<rect class=\"idle\" x=\"260\" y=\"4\" width=\"12\" height=\"12\"/>"
	      "<text x=\"278\" y=\"14\">idle</text>\n",
	      out);
}

/* One step's column: its height is the step time, the busy part at the bottom. */
static void put_step_bar(FILE *out, const struct tool_trace *t, const struct tool_device *d,
			 size_t i, double x, double w, uint64_t max_ns)
{
	const struct tool_step *s = &t->steps[i];
	double h = round((double)s->dur_ns / (double)max_ns * STEPS_H);
	double hb = fmin(h, round((double)d->step_busy_ns[i] / (double)max_ns * STEPS_H));
	double bottom = STEPS_Y + STEPS_H;
	char dur[32], busy[32];

	fprintf(out,
		"<g class=\"step\" data-step=\"%llu\" data-dur-ns=\"%llu\" data-busy-ns=\"%llu\">"
		"<title>step %llu: %s, GPU busy %s (%.1f%%)</title>",
		(unsigned long long)s->number, (unsigned long long)s->dur_ns,
		(unsigned long long)d->step_busy_ns[i], (unsigned long long)s->number,
		gprof_summary_fmt_time(dur, s->dur_ns),
		gprof_summary_fmt_time(busy, d->step_busy_ns[i]),
		s->dur_ns ? 100.0 * (double)d->step_busy_ns[i] / (double)s->dur_ns : 0.0);
	fprintf(out,
		"<rect class=\"idle\" x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\"/>"
		"<rect class=\"busy\" x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\"/></g>\n",
		x, bottom - h, w, h - hb, x, bottom - hb, w, hb);
}

/* Step numbers under the columns, at most about 20 of them. */
static void put_step_labels(FILE *out, const struct tool_trace *t, double slot)
{
	size_t every = (t->n_steps + 19) / 20;

	for (size_t i = 0; i < t->n_steps; i += every)
		fprintf(out, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%llu</text>",
			STEPS_X + ((double)i + 0.5) * slot, STEPS_Y + STEPS_H + 18,
			(unsigned long long)t->steps[i].number);
	fputs("\n", out);
}

static void put_step_chart(FILE *out, const struct tool_trace *t, const struct tool_device *d)
{
	size_t n = t->n_steps;
	double slot = n <= 300 ? STEPS_W / (double)n : 2.0, plot_w = slot * (double)n;
	/* Columns start on whole pixels at least floor(slot) apart: one pixel between them. */
	double w = fmax(1.0, fmin(fmin(BAR_MAX_W, floor(slot * 0.75)), floor(slot) - 1));
	uint64_t max_ns = 1;
	char top[32];

	for (size_t i = 0; i < n; i++)
		max_ns = t->steps[i].dur_ns > max_ns ? t->steps[i].dur_ns : max_ns;
	fprintf(out, "<h2>GPU %u: busy and idle time in each step</h2>\n", d->id);
	fprintf(out,
		"<svg class=\"steps\" data-device=\"%u\" width=\"%.0f\" height=\"%.0f\" "
		"shape-rendering=\"crispEdges\">\n",
		d->id, STEPS_X + plot_w + 24, STEPS_Y + STEPS_H + 30);
	put_legend(out);
	fprintf(
	    out,
	    "<rect class=\"plot-steps\" x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\"/>\n",
	    STEPS_X - PLOT_PAD, STEPS_Y - PLOT_PAD, plot_w + 2 * PLOT_PAD, STEPS_H + 2 * PLOT_PAD);
	fprintf(out,
		"<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%s</text>"
		"<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">0</text>\n",
		STEPS_X - 8, STEPS_Y + 8, gprof_summary_fmt_time(top, max_ns), STEPS_X - 8,
		STEPS_Y + STEPS_H);
	for (size_t i = 0; i < n; i++)
		put_step_bar(out, t, d, i, floor(STEPS_X + (double)i * slot + (slot - w) / 2), w,
			     max_ns);
	put_step_labels(out, t, slot);
	fputs("</svg>\n", out);
}

static void put_kernel_bar(FILE *out, const struct tool_trace *t, size_t i, double y)
{
	const struct tool_kernel *k = &t->kernels[i];
	double w =
	    round((double)k->ns / (double)(t->kernels[0].ns ? t->kernels[0].ns : 1) * KERNELS_W);
	double share = t->gpu_ns ? 100.0 * (double)k->ns / (double)t->gpu_ns : 0.0;
	char total[32], mean[32];

	fprintf(out,
		"<g class=\"kernel\" data-rank=\"%zu\" data-calls=\"%llu\" data-total-ns=\"%llu\">"
		"<title>",
		i + 1, (unsigned long long)k->calls, (unsigned long long)k->ns);
	put_esc(out, k->name);
	fprintf(
	    out,
	    "</title><rect class=\"kernel\" x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"16\"/>"
	    "<text x=\"%.0f\" y=\"%.0f\">%s \xc2\xb7 %.1f%% \xc2\xb7 %llu calls, mean %s \xc2\xb7 ",
	    PLOT_PAD, y, w, KERNELS_W + 3 * PLOT_PAD, y + 13, gprof_summary_fmt_time(total, k->ns),
	    share, (unsigned long long)k->calls, gprof_summary_fmt_time(mean, k->ns / k->calls));
	put_esc_cut(out, k->name, KERNEL_NAME);
	fputs("</text></g>\n", out);
}

static void put_kernel_chart(FILE *out, const struct tool_trace *t)
{
	size_t top = t->n_kernels < TOOL_TOP_KERNELS ? t->n_kernels : TOOL_TOP_KERNELS;
	double h = (double)top * KERNEL_ROW;

	fprintf(out, "<h2>Top %zu of %zu kernels by GPU time</h2>\n", top, t->n_kernels);
	if (!top)
		return;
	fprintf(
	    out,
	    "<svg class=\"kernels\" width=\"1100\" height=\"%.0f\" shape-rendering=\"crispEdges\">"
	    "\n<rect class=\"kernel\" x=\"0\" y=\"4\" width=\"12\" height=\"12\"/>"
	    "<text x=\"18\" y=\"14\">a kernel's GPU time (the longest bar: the top kernel's), "
	    "then its total, share of all GPU time, calls and mean</text>"
	    "\n<rect class=\"plot-kernels\" x=\"0\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\"/>\n",
	    LEGEND_H + h + 2 * PLOT_PAD, LEGEND_H, KERNELS_W + 2 * PLOT_PAD, h + PLOT_PAD);
	for (size_t i = 0; i < top; i++)
		put_kernel_bar(out, t, i, LEGEND_H + PLOT_PAD + (double)i * KERNEL_ROW);
	fputs("</svg>\n", out);
}

void tool_html(const struct tool_trace *t, const char *summary, FILE *out)
{
	const char *name = strrchr(t->path, '/') ? strrchr(t->path, '/') + 1 : t->path;

	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>",
	      out);
	put_esc(out, name);
	fprintf(out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>libgprof trace ", style);
	put_esc(out, name);
	fputs("</h1>\n", out);
	put_head(out, t);
	if (!t->n_steps || !t->n_dev)
		fprintf(out, "<h2>GPU time per step</h2>\n<p>%s</p>\n",
			!t->n_steps ? "No step marker in this trace."
				    : "No GPU activity recorded.");
	for (unsigned i = 0; t->n_steps && i < t->n_dev; i++)
		put_step_chart(out, t, &t->dev[i]);
	put_kernel_chart(out, t);
	fputs("<h2>Summary</h2>\n<pre>", out);
	put_esc(out, summary);
	fputs("</pre>\n</body>\n</html>\n", out);
}
