/*
 * gprof-summary: its summary is the library's text to the byte; bad files each get one line;
 * --compare and --html against figures computed here from the traces (and from the simulated
 * GPU's kernel table); the page rendered by headless Chromium and its pixels measured.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "common/compiler.h"
#include "task.h"
#include "util/e2e.h"
#include "util/text.h"

#define MAX_ARGS  16
#define MAX_STEPS 64
#define MAX_KERN  32

/*
 * gprof-summary with GPROF_SUMMARY_CHUNK=chunk (0: unset) and the arguments in ap (NULL-ended);
 * its output in res.
 */
static void run_tool_args(struct proc_result *res, unsigned chunk, va_list ap)
{
	const char *argv[MAX_ARGS] = {proc_build_path("gprof-summary")};
	char env_chunk[64] = "GPROF_SUMMARY_CHUNK";
	const char *env[] = {"LD_PRELOAD", env_chunk, NULL};
	int n = 1;

	if (chunk)
		snprintf(env_chunk, sizeof(env_chunk), "GPROF_SUMMARY_CHUNK=%u", chunk);
	while ((argv[n] = va_arg(ap, const char *)))
		ASSERT(++n < MAX_ARGS);
	ASSERT_EQ(proc_run(argv, env, 120, res), 0);
	ASSERT(!res->timed_out);
}

/* gprof-summary with these arguments (NULL-terminated); its output in res. */
static void run_tool(struct proc_result *res, ...)
{
	va_list ap;

	va_start(ap, res);
	run_tool_args(res, 0, ap);
	va_end(ap);
}

/* The whole file (binary or text), NUL-terminated. */
static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	char *data;

	ASSERT_MSG(f && !fstat(fileno(f), &st), "cannot open %s", path);
	data = malloc((size_t)st.st_size + 1);
	ASSERT(data);
	*len = fread(data, 1, (size_t)st.st_size, f);
	ASSERT_EQ(*len, st.st_size);
	data[*len] = '\0';
	fclose(f);
	return data;
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	ASSERT(f);
	ASSERT_EQ(fwrite(data, 1, len, f), len);
	ASSERT_EQ(fclose(f), 0);
}

/* "<dir>/<name>" in one of 8 static buffers. */
static const char *in_dir(const struct e2e_run *r, const char *name)
{
	static char paths[8][PATH_MAX + 64];
	static int n;
	char *p = paths[n++ % 8];

	snprintf(p, PATH_MAX + 64, "%s/%s", r->dir, name);
	return p;
}

static const char *trace_file(const struct e2e_run *r, int i)
{
	return in_dir(r, trace_str(r->traces[i].root, "traceName"));
}

/* steps-app under libgprof on the simulated GPU; extra: NULL-terminated environment changes. */
static void run_steps_app(struct e2e_run *r, const char *const *app_args, const char *const *extra)
{
	const char *argv[MAX_ARGS] = {proc_build_path("test/apps/steps-app")};

	for (int i = 0; app_args[i]; i++) {
		ASSERT(i + 2 < MAX_ARGS);
		argv[i + 1] = app_args[i];
	}
	e2e_run(r, argv, e2e_cupti(true), extra, true);
	ASSERT_MSG(r->res.status == 0, "steps-app: %s", r->res.err);
	ASSERT_GE(r->n_traces, 1);
}

/* The summaries in text: its lines from each "gprof: trace written: " on. */
static int summaries_in(const char *text, char paths[][PATH_MAX + 64], int max)
{
	const char *p = text;
	int n = 0;

	while ((p = strstr(p, "gprof: trace written: "))) {
		size_t len;

		p += 22;
		len = strcspn(p, "\n");
		if (strstr(p, " (") && (size_t)(strstr(p, " (") - p) < len)
			len = (size_t)(strstr(p, " (") - p); /* the one-line form */
		ASSERT(n < max && len < PATH_MAX + 64);
		memcpy(paths[n], p, len);
		paths[n++][len] = '\0';
	}
	return n;
}

/* The library's text as the tool says it: "gprof: trace read: " for "gprof: trace written: ". */
static char *as_read(const char *lib)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	const char *p;

	ASSERT(f);
	while ((p = strstr(lib, "gprof: trace written: "))) {
		fprintf(f, "%.*sgprof: trace read: ", (int)(p - lib), lib);
		lib = p + 22;
	}
	fputs(lib, f);
	ASSERT(!fclose(f));
	return out;
}

/* From the first summary line to the last "gprof:   " line after it, as the tool says it. */
static char *summary_block(const char *err)
{
	const char *b = strstr(err, "gprof: trace written: "), *e;
	char *lib, *out;

	ASSERT_MSG(b, "no summary in: %s", err);
	e = b + strcspn(b, "\n") + 1;
	while (!strncmp(e, "gprof:   ", 9))
		e += strcspn(e, "\n") + 1;
	lib = strndup(b, (size_t)(e - b));
	out = as_read(lib);
	free(lib);
	return out;
}

/* The trace of r whose file is path. */
static const struct trace *trace_at(const struct e2e_run *r, const char *path)
{
	for (int i = 0; i < r->n_traces; i++)
		if (!strcmp(trace_file(r, i), path))
			return &r->traces[i];
	FAIL("no trace %s", path);
}

/*
 * A trace not from libgprof (no "gprof" header: the steps come from the events), a kernel name
 * with escapes and a tab, arguments in another order, white space anywhere: the summary
 * written out by hand from these events.
 */
TEST(summary_tool_foreign_trace)
{
	static const char text[] =
	    "{ \"traceEvents\" : [\n"
	    " { \"args\": {\"bytes\": 4096, \"device\": 0}, \"name\": \"Memcpy DtoH (Device -> "
	    "Pinned)\", \"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"ts\": 60, \"dur\": 4.096, "
	    "\"pid\": 0 } ,\n"
	    "  {\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#3\",\"pid\":1,"
	    "\"tid\":1,\"ts\":0.000,\"dur\":100.000},\n"
	    "  {\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"f<\\\"q\\\\\\\">\\tx\",\"pid\":0,"
	    "\"tid\":7,\"ts\":1.000,\"dur\":10.000,\"args\":{\"grid\":[1,[2,{\"}\":\"]\"}]],"
	    "\"device\":0}},\n"
	    "  {\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":1,\"pid\":1,\"tid\":1,"
	    "\"ts\":0.5}\n"
	    "], \"displayTimeUnit\": \"ms\" }\n";
	char dir[] = "/tmp/gprof-summary-tool-XXXXXX", path[64], *want;
	struct proc_result res;

	ASSERT(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/foreign.json", dir);
	write_file(path, text, sizeof(text) - 1);
	ASSERT(asprintf(&want,
			"gprof: trace read: %s\n"
			"gprof:   steps 3-3: 1 in 100.000 us, mean step 100.000 us\n"
			"gprof:   GPU 0: busy 14.1%% of step time (14.096 us); kernels 10.000 us, "
			"memcpy 4.096 us, memset 0 ns\n"
			"gprof:   host-bound: the GPU waited 85.9%% of the step time\n"
			"gprof:   top 1 of 1 kernels by GPU time:\n"
			"gprof:      calls        total         mean   GPU%%  name\n"
			"gprof:          1    10.000 us    10.000 us   70.9  f<\"q\\\">?x\n"
			"gprof:   copies      count        bytes         time      GB/s\n"
			"gprof:   DtoH            1     4.00 KiB     4.096 us      1.00\n",
			path) > 0);
	run_tool(&res, path, NULL);
	ASSERT_MSG(res.status == 0, "status %d: %s", res.status, res.err);
	ASSERT_STR_EQ(res.out, want);
	proc_result_free(&res);
	free(want);
	ASSERT_EQ(unlink(path), 0);
	ASSERT_EQ(rmdir(dir), 0);
}

/*
 * A real trace cut anywhere or with a byte changed to JSON punctuation: each file gets its
 * summary or one line, never a crash (under ASan: never a bad read).
 */
TEST(summary_tool_damaged_traces)
{
	enum {
		N = 40
	};
	static const char punct[] = "\"{}[],:\\ x0";
	const char *argv[N + 2] = {proc_build_path("gprof-summary")};
	const char *args[] = {"-s", "5", NULL}, *env[] = {"LD_PRELOAD", NULL};
	char name[32], *text;
	struct proc_result res;
	struct e2e_run r;
	size_t len;
	int lines = 0;

	run_steps_app(&r, args, NULL);
	len = r.traces[0].len;
	text = malloc(len);
	ASSERT(text);
	srand(1);
	for (int i = 0; i < N; i++) {
		size_t at = (size_t)rand() % len;

		memcpy(text, r.traces[0].raw, len);
		text[at] = punct[rand() % (sizeof(punct) - 1)];
		snprintf(name, sizeof(name), "damaged-%d.json", i);
		argv[i + 1] = strdup(in_dir(&r, name));
		write_file(argv[i + 1], text,
			   i % 2 ? len : at); /* odd: a byte changed; even: cut */
	}
	ASSERT_EQ(proc_run(argv, env, 120, &res), 0);
	ASSERT_MSG(res.status == 0 || res.status == 1, "status %d: %s", res.status, res.err);
	for (const char *l = res.err; *l; l = strchr(l, '\n') + 1, lines++)
		ASSERT_MSG(!strncmp(l, "gprof-summary: ", 15) && strchr(l, '\n'), "'%s'", l);
	ASSERT_EQ(lines + text_count(res.out, "gprof: trace read: "), N);
	ASSERT_GE(lines, N / 2); /* every cut one at least */
	proc_result_free(&res);
	for (int i = 0; i < N; i++)
		free((char *)argv[i + 1]);
	free(text);
	e2e_free(&r);
}

/* Figures computed here from a trace's events. */

struct span {
	long long b, e;
};

struct kern {
	char name[256];
	long long calls, ns;
};

struct truth {
	long long step_no[MAX_STEPS], step_ts[MAX_STEPS], step_dur[MAX_STEPS];
	int n_steps;
	long long step_ns, span_b, span_e;
	struct span spans[4096]; /* device 0's GPU intervals */
	size_t n_spans;
	struct kern k[MAX_KERN];
	int n_k;
	long long gpu_ns;
};

static long long ns_of(const json_t *ev, const char *key)
{
	double us = json_number_value(json_object_get(ev, key));

	return (long long)(us * 1000.0 + (us < 0 ? -0.5 : 0.5));
}

/* fabs without libm, which the test runner does not link */
static double absd(double x)
{
	return x < 0 ? -x : x;
}

static void truth_step(struct truth *t, const json_t *ev)
{
	int i = t->n_steps++;

	ASSERT(i < MAX_STEPS);
	/* insertion in time order */
	for (; i > 0 && t->step_ts[i - 1] > ns_of(ev, "ts"); i--) {
		t->step_no[i] = t->step_no[i - 1];
		t->step_ts[i] = t->step_ts[i - 1];
		t->step_dur[i] = t->step_dur[i - 1];
	}
	t->step_no[i] = atoll(trace_str(ev, "name") + 13);
	t->step_ts[i] = ns_of(ev, "ts");
	t->step_dur[i] = ns_of(ev, "dur");
	t->step_ns += t->step_dur[i];
}

static void truth_gpu(struct truth *t, const json_t *ev, bool kernel)
{
	long long ts = ns_of(ev, "ts"), dur = ns_of(ev, "dur");
	int i = 0;

	ASSERT_EQ(json_integer_value(json_object_get(ev, "pid")), 0); /* one device */
	ASSERT(t->n_spans < ARRAY_SIZE(t->spans));
	t->spans[t->n_spans++] = (struct span){ts, ts + dur};
	t->gpu_ns += dur;
	if (!kernel)
		return;
	while (i < t->n_k && strcmp(t->k[i].name, trace_str(ev, "name")))
		i++;
	if (i == t->n_k) {
		ASSERT(t->n_k < MAX_KERN);
		snprintf(t->k[t->n_k++].name, 256, "%s", trace_str(ev, "name"));
	}
	t->k[i].calls++;
	t->k[i].ns += dur;
}

static int cmp_kern(const void *a, const void *b)
{
	const struct kern *x = a, *y = b;

	return x->ns > y->ns ? -1 : x->ns < y->ns;
}

static void truth_of(const struct trace *tr, struct truth *t)
{
	const json_t *ev;
	size_t i;

	memset(t, 0, sizeof(*t));
	json_array_foreach(tr->events, i, ev)
	{
		const char *cat = trace_str(ev, "cat"), *ph = trace_str(ev, "ph");

		if (strcmp(ph, "X"))
			continue;
		if (!strcmp(cat, "user_annotation") &&
		    !strncmp(trace_str(ev, "name"), "ProfilerStep#", 13))
			truth_step(t, ev);
		else if (!strcmp(cat, "kernel") || !strcmp(cat, "gpu_memcpy") ||
			 !strcmp(cat, "gpu_memset"))
			truth_gpu(t, ev, !strcmp(cat, "kernel"));
	}
	qsort(t->k, (size_t)t->n_k, sizeof(t->k[0]), cmp_kern);
	ASSERT_GT(t->n_steps, 0);
	t->span_b = t->step_ts[0];
	t->span_e = t->step_ts[t->n_steps - 1] + t->step_dur[t->n_steps - 1];
}

static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->b < y->b ? -1 : x->b > y->b;
}

/* Length of the union of the GPU intervals within [lo, hi): sorted by start, swept. */
static long long busy_in(const struct truth *t, long long lo, long long hi)
{
	struct span s[ARRAY_SIZE(t->spans)];
	long long total = 0, reached = lo;

	memcpy(s, t->spans, t->n_spans * sizeof(*s));
	qsort(s, t->n_spans, sizeof(*s), cmp_span);
	for (size_t i = 0; i < t->n_spans; i++) {
		long long b = s[i].b > reached ? s[i].b : reached;
		long long e = s[i].e < hi ? s[i].e : hi;

		total += e > b ? e - b : 0;
		reached = e > reached ? e : reached;
	}
	return total;
}

/* --compare's output, read back. */

/* A printed figure and how far printing may have moved it (half its last digit). */
struct qty {
	double v, tol;
	bool absent; /* printed "-" */
};

/* "<number> <unit>" (as ns) or "-" at *p, which moves past it. */
static struct qty read_time(const char **p)
{
	static const struct {
		const char *unit;
		double scale;
	} units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
	char unit[8];
	double v;
	int n = 0;

	*p += strspn(*p, " ");
	if (**p == '-' && (!(*p)[1] || (*p)[1] == ' ')) {
		*p += 1;
		return (struct qty){.absent = true};
	}
	ASSERT_MSG(sscanf(*p, "%lf %7[a-z]%n", &v, unit, &n) == 2, "not a time: '%s'", *p);
	*p += n;
	for (size_t i = 0; i < ARRAY_SIZE(units); i++)
		if (!strcmp(unit, units[i].unit))
			return (struct qty){.v = v * units[i].scale,
					    .tol =
						units[i].scale == 1 ? 0.5 : 5e-4 * units[i].scale};
	FAIL("unknown unit '%s'", unit);
}

static void check_qty(struct qty got, double want, const char *what)
{
	ASSERT_MSG(!got.absent && absd(got.v - want) <= got.tol + 1e-9 * absd(want),
		   "%s: printed %.3f, the trace says %.3f", what, got.v, want);
}

static void check_pct(double got, double want, const char *what)
{
	ASSERT_MSG(absd(got - want) <= 0.05 + 1e-9, "%s: printed %.1f, the trace says %.3f", what,
		   got, want);
}

struct crow {
	long long calls[2];
	struct qty total[2], change, mean[2];
	char pct[16];
	double share[2];
	char name[256];
};

static void parse_row(const char *l, struct crow *c)
{
	int n = 0;

	memset(c, 0, sizeof(*c));
	ASSERT_MSG(sscanf(l, "%lld %lld%n", &c->calls[0], &c->calls[1], &n) == 2, "row '%s'", l);
	l += n;
	c->total[0] = read_time(&l);
	c->total[1] = read_time(&l);
	c->change = read_time(&l);
	ASSERT(sscanf(l, "%15s%n", c->pct, &n) == 1);
	l += n;
	c->mean[0] = read_time(&l);
	c->mean[1] = read_time(&l);
	ASSERT(sscanf(l, "%lf %lf  %255[^\n]", &c->share[0], &c->share[1], c->name) == 3);
}

/* The kernel rows, in order. */
static int parse_rows(const char *out, struct crow *rows, int max)
{
	const char *l = strstr(out, "\nkernels: ");
	int n = 0;

	ASSERT_MSG(l, "no kernel table: %s", out);
	l = strchr(l + 1, '\n') + 1;
	ASSERT(!strncmp(l, " calls A  calls B", 17));
	for (l = strchr(l, '\n') + 1; *l; l = strchr(l, '\n') + 1) {
		ASSERT(n < max);
		parse_row(l, &rows[n++]);
	}
	return n;
}

static const struct kern *kern_in(const struct truth *t, const char *name)
{
	for (int i = 0; i < t->n_k; i++)
		if (!strcmp(t->k[i].name, name))
			return &t->k[i];
	return NULL;
}

/* One kernel's row against both traces. */
static void check_row(const struct crow *c, const struct truth *a, const struct truth *b)
{
	const struct kern *ka = kern_in(a, c->name), *kb = kern_in(b, c->name);
	const struct kern none = {.calls = 0};
	const struct kern *k[2] = {ka ? ka : &none, kb ? kb : &none};
	const struct truth *t[2] = {a, b};

	ASSERT_MSG(ka || kb, "a kernel in neither trace: %s", c->name);
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(c->calls[i], k[i]->calls);
		check_qty(c->total[i], (double)k[i]->ns, "total");
		ASSERT_EQ(c->mean[i].absent, !k[i]->calls);
		if (k[i]->calls)
			check_qty(c->mean[i], (double)(k[i]->ns / k[i]->calls), "mean");
		check_pct(c->share[i], 100.0 * (double)k[i]->ns / (double)t[i]->gpu_ns, "GPU%");
	}
	check_qty(c->change, (double)(k[1]->ns - k[0]->ns), "change");
	if (!ka || !kb)
		ASSERT_STR_EQ(c->pct, ka ? "gone" : "new");
	else
		check_pct(atof(c->pct), 100.0 * (double)(kb->ns - ka->ns) / (double)ka->ns, "%");
}

static const char *line_of(const char *out, const char *label)
{
	const char *l = strstr(out, label);

	ASSERT_MSG(l, "no line '%s' in: %s", label + 1, out);
	return l + strlen(label);
}

static int cmp_ll(const void *x, const void *y)
{
	long long a = *(const long long *)x, b = *(const long long *)y;

	return a < b ? -1 : a > b;
}

/* Order statistics of the truth's steps: the median, nearest-rank percentiles. */
struct order {
	double median, p25, p75;
};

static struct order order_of(const struct truth *t)
{
	long long d[MAX_STEPS];
	int n = t->n_steps;

	memcpy(d, t->step_dur, (size_t)n * sizeof(*d));
	qsort(d, (size_t)n, sizeof(*d), cmp_ll);
	return (struct order){
	    .median = n % 2 ? (double)d[n / 2] : (d[n / 2 - 1] + d[n / 2]) / 2.0,
	    .p25 = (double)d[(n + 3) / 4 - 1],
	    .p75 = (double)d[(3 * n + 3) / 4 - 1],
	};
}

/*
 * "median step  A  B  change change%[ (noise...)]": noise when the change is within the larger
 * of the two runs' p75 - p25.
 */
static void check_median(const char *out, const struct truth *a, const struct truth *b)
{
	struct order oa = order_of(a), ob = order_of(b);
	double spread = oa.p75 - oa.p25 > ob.p75 - ob.p25 ? oa.p75 - oa.p25 : ob.p75 - ob.p25;
	const char *l = line_of(out, "\nmedian step ");
	size_t len = strcspn(l, "\n");

	check_qty(read_time(&l), oa.median, "median step A");
	check_qty(read_time(&l), ob.median, "median step B");
	check_qty(read_time(&l), ob.median - oa.median, "median step change");
	if (fabs(fabs(ob.median - oa.median) - spread) > 2000) /* clear of rounding: say which */
		ASSERT_EQ(memmem(l, len, "(noise", 6) != NULL,
			  fabs(ob.median - oa.median) <= spread);
}

/* The steps and device lines against both traces. */
static void check_steps(const char *out, const struct truth *a, const struct truth *b)
{
	double mean[2] = {(double)(a->step_ns / a->n_steps), (double)(b->step_ns / b->n_steps)};
	double busy[2] = {(double)busy_in(a, a->span_b, a->span_e),
			  (double)busy_in(b, b->span_b, b->span_e)};
	double pct[3], span[2] = {(double)(a->span_e - a->span_b), (double)(b->span_e - b->span_b)};
	const char *l = line_of(out, "\nsteps ");
	long long n[2];

	ASSERT(sscanf(l, "%lld %lld", &n[0], &n[1]) == 2);
	ASSERT_EQ(n[0], a->n_steps);
	ASSERT_EQ(n[1], b->n_steps);
	check_median(out, a, b);
	l = line_of(out, "\nmean step ");
	check_qty(read_time(&l), mean[0], "mean step A");
	check_qty(read_time(&l), mean[1], "mean step B");
	check_qty(read_time(&l), mean[1] - mean[0], "mean step change");
	check_pct(atof(l), 100.0 * (mean[1] - mean[0]) / mean[0], "mean step %");
	l = line_of(out, "\nGPU 0 busy  ");
	ASSERT(sscanf(l, "%lf%% %lf%% %lf points", &pct[0], &pct[1], &pct[2]) == 3);
	check_pct(pct[0], 100.0 * busy[0] / span[0], "busy % A");
	check_pct(pct[1], 100.0 * busy[1] / span[1], "busy % B");
	check_pct(pct[2], 100.0 * (busy[1] / span[1] - busy[0] / span[0]), "busy points");
	l = line_of(out, "\nGPU 0 busy time ");
	check_qty(read_time(&l), busy[0], "busy A");
	check_qty(read_time(&l), busy[1], "busy B");
	check_qty(read_time(&l), busy[1] - busy[0], "busy change");
}

/* Every figure of a comparison, and every kernel of either trace once, by absolute change. */
static int check_compare(const char *out, const struct truth *a, const struct truth *b,
			 struct crow *rows)
{
	int n = parse_rows(out, rows, MAX_KERN), in_both = 0;

	check_steps(out, a, b);
	for (int i = 0; i < n; i++) {
		check_row(&rows[i], a, b);
		in_both += kern_in(a, rows[i].name) && kern_in(b, rows[i].name);
		for (int j = 0; j < i; j++)
			ASSERT(strcmp(rows[i].name, rows[j].name));
		if (i)
			ASSERT_LE(absd(rows[i].change.v), absd(rows[i - 1].change.v) + 1e-9);
	}
	ASSERT_EQ(n, a->n_k + b->n_k - in_both);
	return n;
}

/*
 * The lines after the summaries of two windows of one process: steps, step time and busy time
 * of both, as the traces have them.
 */
static void check_total(const char *text, const struct e2e_run *r)
{
	struct truth *t = calloc(1, sizeof(*t));
	long long steps = 0, step_ns = 0, span = 0, busy = 0, printed;
	const char *name = strrchr(trace_file(r, 0), '/') + 1, *l;
	char who[64];
	unsigned windows;
	double pct;
	int n = 0;

	ASSERT(t);
	for (int i = 0; i < r->n_traces; i++) {
		truth_of(&r->traces[i], t);
		steps += t->n_steps;
		step_ns += t->step_ns;
		span += t->span_e - t->span_b;
		busy += busy_in(t, t->span_b, t->span_e);
	}
	ASSERT_MSG(sscanf(text, "gprof: total of %u windows of %63[^:]: %lld steps in%n", &windows,
			  who, &printed, &n) == 3 &&
		       n,
		   "'%s'", text);
	ASSERT_EQ(windows, r->n_traces);
	ASSERT_EQ(printed, steps);
	ASSERT_EQ(strlen(who), strcspn(name, "."));
	ASSERT(!strncmp(who, name, strlen(who)));
	l = text + n;
	check_qty(read_time(&l), (double)span, "total span");
	ASSERT(!strncmp(l, ", mean step", 11));
	l += 11;
	check_qty(read_time(&l), (double)(step_ns / steps), "total mean step");
	ASSERT(sscanf(l, "\ngprof:   GPU 0: busy %lf%% of step time (%n", &pct, &n) == 1);
	check_pct(pct, 100.0 * (double)busy / (double)span, "total busy %");
	l += n;
	check_qty(read_time(&l), (double)busy, "total busy");
	ASSERT_STR_EQ(l, ")\n");
	free(t);
}

/*
 * The library's line for a later window, from the tool's whole summary [b, e) of it, as the tool
 * says it: "gprof: trace read: P (<steps>; GPU d <busy>; GPU d peak device memory in use X; dropped ...)".
 */
static char *one_line_of(const char *b, const char *e)
{
	char *whole = strndup(b, (size_t)(e - b)), *save = NULL, *l, *out = NULL, *more;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	ASSERT(whole && f);
	for (l = strtok_r(whole, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		int id, n = 0;

		if (!strncmp(l, "gprof: trace read: ", 19)) {
			fprintf(f, "%s (", l);
		} else if (!strncmp(l, "gprof:   steps ", 15)) {
			fputs(l + 9, f);
		} else if (sscanf(l, "gprof:   GPU %d: %n", &id, &n) == 1 && n) {
			fprintf(f, "; GPU %d %.*s", id, (int)(strstr(l, "; kernels") - (l + n)),
				l + n);
			if ((more = strstr(l, "; peak device memory in use ")))
				fprintf(f, "; GPU %d %.*s", id, (int)strcspn(more + 2, ";"),
					more + 2);
		} else if (!strncmp(l, "gprof:   dropped records: ", 26)) {
			fprintf(f, "; %s", l + 9);
		}
	}
	fputs(")\n", f);
	ASSERT(!fclose(f));
	free(whole);
	return out;
}

/*
 * Two windows, CUPTI dropping records, overlapping streams, a kernel running past the first
 * window: gprof-summary on both files prints what the library appended to GPROF_SUMMARY, byte
 * for byte, for the first; the library's one line for the second has the tool's figures; a
 * plain .json copy gives the same but for the path.
 */
TEST(summary_tool_matches_library)
{
	const char *file = proc_tmp_file(), *plain;
	const char *args[] = {"-s", "9", "-t", "2", "-l", "3", NULL};
	char env[PATH_MAX], paths[4][PATH_MAX + 64], *lib, *libr, *want, *line;
	const char *second, *total;
	const char *extra[] = {env, "GPROF_SCHEDULE=wait=1,warmup=1,active=2,repeat=2",
			       "FAKEGPU_KERNEL_TABLE=slow=300000000,scale=20000000",
			       "FAKEGPU_CUPTI_DROP_EVERY=7", NULL};
	const struct trace *first;
	struct proc_result res;
	struct e2e_run r;
	size_t len;

	snprintf(env, sizeof(env), "GPROF_SUMMARY=%s", file);
	run_steps_app(&r, args, extra);
	ASSERT_EQ(r.n_traces, 2);
	lib = read_file(file, &len);
	ASSERT_EQ(summaries_in(lib, paths, 4), 2);
	ASSERT_STR_CONTAINS(lib, "kernels by GPU time");
	ASSERT_STR_CONTAINS(lib, "dropped records: ");
	run_tool(&res, paths[0], paths[1], NULL);
	ASSERT_MSG(res.status == 0, "status %d: %s", res.status, res.err);
	ASSERT_STR_EQ(res.err, "");
	second = strstr(res.out + 1, "gprof: trace read: ");
	total = strstr(res.out, "gprof: total of ");
	ASSERT(second && total);
	line = one_line_of(second, total);
	ASSERT(asprintf(&want, "%.*s%s%s", (int)(second - res.out), res.out,
			"gprof: later windows get one line each here; gprof-summary FILE prints a "
			"window's whole summary\n",
			line) > 0);
	ASSERT_STR_EQ(libr = as_read(lib), want);
	check_total(total, &r);
	free(line);
	free(want);
	proc_result_free(&res);

	first = trace_at(&r, paths[0]);
	plain = in_dir(&r, "plain.json");
	write_file(plain, first->raw, first->len);
	*strstr(libr, "gprof: later windows ") = '\0';
	ASSERT(asprintf(&want, "gprof: trace read: %s%s", plain, libr + 19 + strlen(paths[0])) > 0);
	run_tool(&res, plain, NULL);
	ASSERT_MSG(res.status == 0, "status %d: %s", res.status, res.err);
	ASSERT_STR_EQ(res.out, want);
	proc_result_free(&res);
	free(want);
	free(lib);
	free(libr);
	e2e_free(&r);
}

/* Without CUPTI the library prints one line; so does the tool. */
TEST(summary_tool_one_line)
{
	const char *args[] = {"-s", "6", NULL};
	const char *extra[] = {"GPROF_CUPTI_LIB=/nonexistent/libcupti.so.13", NULL};
	struct proc_result res;
	struct e2e_run r;
	char *want;

	run_steps_app(&r, args, extra);
	want = summary_block(r.res.err);
	ASSERT_STR_CONTAINS(want, "no GPU activity recorded");
	run_tool(&res, trace_file(&r, 0), NULL);
	ASSERT_MSG(res.status == 0, "status %d: %s", res.status, res.err);
	ASSERT_STR_EQ(res.out, want);
	proc_result_free(&res);
	free(want);
	e2e_free(&r);
}

/* res.err holds exactly one "gprof-summary: <path>: ..." line per path, in order. */
static void check_error_lines(const struct proc_result *res, const char *const *paths, int n)
{
	const char *l = res->err;

	for (int i = 0; i < n; i++) {
		size_t len = strlen(paths[i]);

		ASSERT_MSG(!strncmp(l, "gprof-summary: ", 15) && !strncmp(l + 15, paths[i], len) &&
			       !strncmp(l + 15 + len, ": ", 2),
			   "line %d for %s: %s", i, paths[i], l);
		ASSERT(strchr(l, '\n'));
		l = strchr(l, '\n') + 1;
	}
	ASSERT_STR_EQ(l, "");
}

/* Files that are not whole traces: one line each, exit status 1, the good file still done. */
TEST(summary_tool_bad_files)
{
	static const struct {
		const char *name, *text, *says;
	} bad[] = {
	    {"missing.json", NULL, "cannot open"},
	    {"empty.json", "", "empty"},
	    {"garbage.gz", "\x1f\x8b not gzip", "gzip"},
	    {"hello.json", "hello", "not a trace"},
	    {"other.json", "{\"a\": [1, 2]}", "no traceEvents"},
	    {"cut.pt.trace.json.gz", NULL, "cut short"},
	    {"cut.json", NULL, "cut short"},
	};
	char paths[ARRAY_SIZE(bad)][PATH_MAX + 64], *want, *gz;
	const char *args[] = {"-s", "6", NULL}, *p[ARRAY_SIZE(bad)];
	struct proc_result res;
	struct e2e_run r;
	size_t len;

	run_steps_app(&r, args, NULL);
	want = summary_block(r.res.err);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		p[i] = strcpy(paths[i], in_dir(&r, bad[i].name));
		if (bad[i].text)
			write_file(p[i], bad[i].text, strlen(bad[i].text));
	}
	gz = read_file(trace_file(&r, 0), &len);
	write_file(p[5], gz, len / 2);
	write_file(p[6], r.traces[0].raw, r.traces[0].len * 3 / 5);
	run_tool(&res, p[0], p[1], p[2], p[3], trace_file(&r, 0), p[4], p[5], p[6], NULL);
	ASSERT_EQ(res.status, 1);
	ASSERT_STR_EQ(res.out, want);
	check_error_lines(&res, p, ARRAY_SIZE(bad));
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		ASSERT_MSG(strstr(strstr(res.err, p[i]), bad[i].says), "%s: %s", p[i], res.err);
	proc_result_free(&res);

	/* A page that cannot be written: one line, and the summary. */
	p[0] = in_dir(&r, "no-such-folder/page.html");
	run_tool(&res, "--html", p[0], trace_file(&r, 0), NULL);
	ASSERT_EQ(res.status, 1);
	ASSERT_STR_EQ(res.out, want);
	ASSERT(!strncmp(res.err, "gprof-summary: cannot write ", 28));
	ASSERT_STR_CONTAINS(res.err, p[0]);
	ASSERT_MSG(text_one_line(res.err), "%s", res.err);
	proc_result_free(&res);
	free(gz);
	free(want);
	e2e_free(&r);
}

/* --help, and each misuse: one line and exit status 2. */
TEST(summary_tool_usage)
{
	static const char *const misuse[][4] = {
	    {NULL},
	    {"--bogus", "x.json", NULL},
	    {"--compare", "a.json", NULL},
	    {"--compare", "a.json", "b.json", "c.json"},
	    {"--html", "page.html", "a.json", "b.json"},
	    {"--html", NULL},
	};
	struct proc_result res;

	run_tool(&res, "--help", NULL);
	ASSERT_MSG(res.status == 0, "status %d: %s", res.status, res.err);
	ASSERT(!strncmp(res.out, "Usage: gprof-summary ", 21));
	ASSERT_STR_CONTAINS(res.out, "--compare A B");
	ASSERT_STR_CONTAINS(res.out, "--html OUT.html");
	proc_result_free(&res);
	for (size_t i = 0; i < ARRAY_SIZE(misuse); i++) {
		run_tool(&res, misuse[i][0], misuse[i][1], misuse[i][2], misuse[i][3], NULL);
		ASSERT_MSG(res.status == 2, "case %zu: %d", i, res.status);
		ASSERT(!strncmp(res.err, "gprof-summary: ", 15));
		ASSERT_MSG(text_one_line(res.err), "%s", res.err);
		ASSERT_STR_EQ(res.out, "");
		proc_result_free(&res);
	}
}

/*
 * Two runs of known different work (FAKEGPU_KERNEL_TABLE, times FAKEGPU_TIME_SCALE 0.1): scale
 * takes 200 us in A and 300 us in B; B alone runs slow, 100 us. Three steps of two threads,
 * one scale each per step; slow once per thread. Then the same comparison the other way.
 */
TEST(summary_tool_compare)
{
	const char *args_a[] = {"-s", "6", "-t", "2", NULL};
	const char *args_b[] = {"-s", "6", "-t", "2", "-l", "3", NULL};
	const char *env_a[] = {"FAKEGPU_KERNEL_TABLE=scale=2000000", NULL};
	const char *env_b[] = {"FAKEGPU_KERNEL_TABLE=scale=3000000,slow=1000000", NULL};
	struct truth *t = calloc(2, sizeof(*t));
	struct crow rows[MAX_KERN];
	struct proc_result res;
	struct e2e_run a, b;

	ASSERT(t);
	run_steps_app(&a, args_a, env_a);
	run_steps_app(&b, args_b, env_b);
	truth_of(&a.traces[0], &t[0]);
	truth_of(&b.traces[0], &t[1]);
	run_tool(&res, "--compare", trace_file(&a, 0), trace_file(&b, 0), NULL);
	ASSERT_MSG(res.status == 0, "%s", res.err);
	ASSERT_EQ(check_compare(res.out, &t[0], &t[1], rows), 2);
	ASSERT_STR_CONTAINS(rows[0].name, "scale"); /* demangled or not, by the name's source */
	ASSERT(rows[0].calls[0] == 6 && rows[0].calls[1] == 6);
	check_qty(rows[0].total[0], 6 * 200e3, "scale in A");
	check_qty(rows[0].total[1], 6 * 300e3, "scale in B");
	check_qty(rows[0].change, 6 * 100e3, "scale's change");
	ASSERT_STR_EQ(rows[0].pct, "+50.0%");
	ASSERT_STR_CONTAINS(rows[1].name, "slow");
	ASSERT(rows[1].calls[0] == 0 && rows[1].calls[1] == 2);
	check_qty(rows[1].mean[1], 100e3, "slow in B");
	ASSERT_STR_EQ(rows[1].pct, "new");
	proc_result_free(&res);

	run_tool(&res, "--compare", trace_file(&b, 0), trace_file(&a, 0), NULL);
	ASSERT_MSG(res.status == 0, "status %d: %s", res.status, res.err);
	ASSERT_EQ(check_compare(res.out, &t[1], &t[0], rows), 2);
	ASSERT_STR_EQ(rows[0].pct, "-33.3%");
	check_qty(rows[1].change, -2 * 100e3, "slow's change");
	ASSERT_STR_EQ(rows[1].pct, "gone");
	proc_result_free(&res);

	run_tool(&res, "--compare", trace_file(&a, 0), trace_file(&a, 0), NULL);
	ASSERT_MSG(res.status == 0, "status %d: %s", res.status, res.err);
	check_median(res.out, &t[0], &t[0]);
	ASSERT_STR_CONTAINS(line_of(res.out, "\nmedian step "), "(noise");
	proc_result_free(&res);
	free(t);
	e2e_free(&a);
	e2e_free(&b);
}

/* --html. */

/* HTML's five escapes, into a static buffer. */
static const char *html_text(const char *s)
{
	static char out[65536];
	size_t n = 0;

	for (; *s; s++) {
		ASSERT(n + 8 < sizeof(out));
		const char *e = *s == '&'    ? "&amp;"
				: *s == '<'  ? "&lt;"
				: *s == '>'  ? "&gt;"
				: *s == '"'  ? "&quot;"
				: *s == '\'' ? "&#39;"
					     : NULL;

		n += (size_t)snprintf(out + n, sizeof(out) - n, "%s", e ? e : (char[2]){*s, 0});
	}
	out[n] = '\0';
	return out;
}

/* Six steps; slow, launched in step 5, keeps the GPU busy into step 6. Returns the page. */
static char *make_page(struct e2e_run *r, struct truth *t, char **summary)
{
	const char *args[] = {"-s", "10", "-t", "2", "-l", "5", NULL};
	const char *extra[] = {"GPROF_SCHEDULE=wait=1,warmup=1,active=6",
			       "FAKEGPU_KERNEL_TABLE=slow=300000000,scale=20000000", NULL};
	const char *page;
	struct proc_result res;
	char *html;
	size_t len;

	run_steps_app(r, args, extra);
	truth_of(&r->traces[0], t);
	ASSERT_EQ(t->n_steps, 6);
	page = in_dir(r, "page.html");
	run_tool(&res, "--html", page, trace_file(r, 0), NULL);
	ASSERT_MSG(res.status == 0, "%s", res.err);
	ASSERT_STR_EQ(res.err, "");
	html = read_file(page, &len);
	*summary = strdup(res.out);
	proc_result_free(&res);
	return html;
}

/* Nothing the page refers to is outside it. */
static void check_self_contained(const char *html)
{
	static const char *const refs[] = {"://",   "src=",    "href=",	  "url(", "@import",
					   "<link", "<script", "<iframe", "<img"};

	ASSERT(!strncmp(html, "<!DOCTYPE html>", 15));
	for (size_t i = 0; i < ARRAY_SIZE(refs); i++)
		ASSERT_MSG(!strstr(html, refs[i]), "the page has %s", refs[i]);
	ASSERT_EQ(text_count(html, "<svg"), text_count(html, "</svg>"));
	ASSERT_EQ(text_count(html, "<g "), text_count(html, "</g>"));
	ASSERT_STR_CONTAINS(html, "</html>\n");
}

/* Each step's column: its time and its GPU busy time within it; each top kernel's bar. */
static void check_bars(const char *html, const struct truth *t)
{
	int top = t->n_k < 10 ? t->n_k : 10;
	char want[1024];

	ASSERT_EQ(text_count(html, "<g class=\"step\""), t->n_steps);
	for (int i = 0; i < t->n_steps; i++) {
		long long b = t->step_ts[i], e = b + t->step_dur[i];

		snprintf(want, sizeof(want),
			 "<g class=\"step\" data-step=\"%lld\" data-dur-ns=\"%lld\" "
			 "data-busy-ns=\"%lld\">",
			 t->step_no[i], t->step_dur[i], busy_in(t, b, e));
		ASSERT_STR_CONTAINS(html, want);
	}
	ASSERT_EQ(text_count(html, "<g class=\"kernel\""), top);
	for (int i = 0; i < top; i++) {
		snprintf(want, sizeof(want),
			 "<g class=\"kernel\" data-rank=\"%d\" data-calls=\"%lld\" "
			 "data-total-ns=\"%lld\"><title>%s</title>",
			 i + 1, t->k[i].calls, t->k[i].ns, html_text(t->k[i].name));
		ASSERT_STR_CONTAINS(html, want);
	}
}

/* The header's schedule, steps and device, and the summary the tool printed. */
static void check_header(const char *html, const struct trace *tr, const struct truth *t,
			 const char *summary)
{
	const json_t *dev = json_array_get(json_object_get(tr->root, "deviceProperties"), 0);
	const json_t *g = json_object_get(tr->root, "gprof");
	const char *l;
	char want[512];

	snprintf(want, sizeof(want), "<th>schedule</th><td>%s",
		 html_text(trace_str(g, "schedule")));
	ASSERT_STR_CONTAINS(html, want);
	snprintf(want, sizeof(want), "<th>steps</th><td>%lld&ndash;%lld: %d in ", t->step_no[0],
		 t->step_no[t->n_steps - 1], t->n_steps);
	ASSERT_STR_CONTAINS(html, want);
	l = strstr(html, want);
	l = strstr(l, "mean step ") ? strstr(l, "; median ") : NULL;
	ASSERT_MSG(l, "no step statistics in the steps row");
	l += strlen("; median ");
	check_qty(read_time(&l), order_of(t).median, "page's median step");
	snprintf(want, sizeof(want), "<th>device 0</th><td>%s, ",
		 html_text(trace_str(dev, "name")));
	ASSERT_STR_CONTAINS(html, want);
	ASSERT_STR_CONTAINS(summary, "gprof: trace read: ");
	ASSERT_STR_CONTAINS(html, html_text(summary));
	/* the header's runtime version, "unknown" for 0 (it said "0.0") */
	long long rt = json_integer_value(json_object_get(tr->root, "cuda_runtime_version"));

	if (rt > 0)
		snprintf(want, sizeof(want), "<th>CUDA</th><td>runtime %lld.%lld, driver ",
			 rt / 1000, rt % 1000 / 10);
	else
		snprintf(want, sizeof(want), "<th>CUDA</th><td>runtime unknown, driver ");
	ASSERT_STR_CONTAINS(html, want);
	/* the kinds of records the window has, not the others with 0 ("earlier 0, cpu_op 0") */
	l = strstr(html, "<th>records</th><td>");
	ASSERT(l && strstr(l, "</td>"));
	snprintf(want, sizeof(want), "%.*s,", (int)(strstr(l, "</td>") - l), l);
	ASSERT_MSG(!strstr(want, " 0,"), "%s", want);
	ASSERT_STR_CONTAINS(html, "a kernel's GPU time"); /* the kernel chart's legend */
}

TEST(summary_tool_html)
{
	struct truth *t = calloc(1, sizeof(*t));
	char *html, *summary;
	struct e2e_run r;

	ASSERT(t);
	html = make_page(&r, t, &summary);
	check_self_contained(html);
	check_bars(html, t);
	check_header(html, &r.traces[0], t, summary);
	free(html);
	free(summary);
	free(t);
	e2e_free(&r);
}

/* The page in headless Chromium: a screenshot, decoded here, its charts measured. */

struct image {
	unsigned w, h;
	unsigned char *rgb; /* 3 bytes a pixel, rows top down */
};

struct box {
	unsigned x0, y0, x1, y1; /* x1, y1 exclusive */
};

static unsigned be32(const unsigned char *p)
{
	return (unsigned)p[0] << 24 | (unsigned)p[1] << 16 | (unsigned)p[2] << 8 | p[3];
}

static int paeth(int a, int b, int c)
{
	int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);

	return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* Undoes the row filters (PNG specification, section 9) of the inflated image data. */
static void unfilter(const unsigned char *raw, unsigned bpp, struct image *im)
{
	size_t stride = (size_t)im->w * bpp;
	unsigned char *cur = malloc(stride), *prev = calloc(1, stride);

	ASSERT(cur && prev);
	for (unsigned y = 0; y < im->h; y++) {
		const unsigned char *in = raw + y * (stride + 1);

		ASSERT(in[0] <= 4);
		for (size_t x = 0; x < stride; x++) {
			int a = x >= bpp ? cur[x - bpp] : 0, b = prev[x];
			int c = x >= bpp ? prev[x - bpp] : 0;
			int pred = (int[]){0, a, b, (a + b) / 2, paeth(a, b, c)}[in[0]];

			cur[x] = (unsigned char)(in[1 + x] + pred);
		}
		for (unsigned x = 0; x < im->w; x++)
			memcpy(im->rgb + ((size_t)y * im->w + x) * 3, cur + (size_t)x * bpp, 3);
		memcpy(prev, cur, stride);
	}
	free(cur);
	free(prev);
}

/* An 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes). */
static void png_load(const char *path, struct image *im)
{
	size_t len, idat_len = 0, p;
	unsigned char *d = (unsigned char *)read_file(path, &len), *idat = malloc(len), *raw;
	unsigned bpp = 0;
	uLongf raw_len;

	ASSERT(idat && len > 8 && !memcmp(d, "\x89PNG\r\n\x1a\n", 8));
	for (p = 8; p + 12 <= len && p + 12 + be32(d + p) <= len; p += 12 + be32(d + p)) {
		const unsigned char *c = d + p + 8;

		if (!memcmp(d + p + 4, "IHDR", 4)) {
			im->w = be32(c);
			im->h = be32(c + 4);
			ASSERT_MSG(c[8] == 8 && (c[9] == 2 || c[9] == 6) && c[12] == 0,
				   "PNG bit depth %d, colour type %d, interlace %d", c[8], c[9],
				   c[12]);
			bpp = c[9] == 2 ? 3 : 4;
		} else if (!memcmp(d + p + 4, "IDAT", 4)) {
			memcpy(idat + idat_len, c, be32(d + p));
			idat_len += be32(d + p);
		}
	}
	ASSERT(bpp && im->w && im->h);
	raw_len = (uLongf)im->h * (1 + (uLongf)im->w * bpp);
	raw = malloc(raw_len);
	im->rgb = malloc((size_t)im->w * im->h * 3);
	ASSERT(raw && im->rgb);
	ASSERT_EQ(uncompress(raw, &raw_len, idat, (uLong)idat_len), Z_OK);
	ASSERT_EQ(raw_len, (uLongf)im->h * (1 + (uLongf)im->w * bpp));
	unfilter(raw, bpp, im);
	free(raw);
	free(idat);
	free(d);
}

static bool px_is(const struct image *im, unsigned x, unsigned y, const unsigned char c[3])
{
	return !memcmp(im->rgb + ((size_t)y * im->w + x) * 3, c, 3);
}

/* The fill the page's style gives rect.<cls>. */
static void colour_of(const char *html, const char *cls, unsigned char c[3])
{
	char key[64];
	const char *p;
	unsigned v;

	snprintf(key, sizeof(key), "rect.%s{fill:#", cls);
	p = strstr(html, key);
	ASSERT_MSG(p && sscanf(p + strlen(key), "%6x", &v) == 1, "no fill for %s", cls);
	c[0] = (unsigned char)(v >> 16);
	c[1] = (unsigned char)(v >> 8);
	c[2] = (unsigned char)v;
}

/* Where the pixels of colour c are (the plot's background: its bars lie inside). */
static struct box box_of(const struct image *im, const unsigned char c[3])
{
	struct box b = {im->w, im->h, 0, 0};

	for (unsigned y = 0; y < im->h; y++)
		for (unsigned x = 0; x < im->w; x++)
			if (px_is(im, x, y, c)) {
				b.x0 = x < b.x0 ? x : b.x0;
				b.y0 = y < b.y0 ? y : b.y0;
				b.x1 = x + 1 > b.x1 ? x + 1 : b.x1;
				b.y1 = y + 1 > b.y1 ? y + 1 : b.y1;
			}
	ASSERT_MSG(b.x1 > b.x0, "colour %02x%02x%02x not in the screenshot", c[0], c[1], c[2]);
	return b;
}

/* A column of the step chart: pixels of each colour, and which one is lowest. */
struct column {
	unsigned busy, idle;
	bool busy_at_bottom;
};

static struct column column_at(const struct image *im, const struct box *b, unsigned x,
			       const unsigned char busy[3], const unsigned char idle[3])
{
	struct column c = {0};

	for (unsigned y = b->y0; y < b->y1; y++) {
		bool is_busy = px_is(im, x, y, busy), is_idle = px_is(im, x, y, idle);

		c.busy += is_busy;
		c.idle += is_idle;
		if (is_busy || is_idle)
			c.busy_at_bottom = is_busy;
	}
	return c;
}

/*
 * One column per step, left to right in step order: its height in proportion to the step's
 * time, its busy part (at the bottom) to the GPU busy time within the step. Heights are whole
 * pixels: a pixel either way.
 */
static void check_step_pixels(const struct image *im, const char *html, const struct truth *t)
{
	unsigned char plot[3], busy[3], idle[3];
	struct column col[MAX_STEPS];
	long long max_ns = 0;
	unsigned max_px = 0;
	int n = 0;
	struct box b;

	colour_of(html, "plot-steps", plot);
	colour_of(html, "busy", busy);
	colour_of(html, "idle", idle);
	b = box_of(im, plot);
	for (unsigned x = b.x0, e; x < b.x1; x = e + 1) {
		for (e = x; e < b.x1; e++) {
			struct column c = column_at(im, &b, e, busy, idle);

			if (!c.busy && !c.idle)
				break;
		}
		if (e == x)
			continue;
		ASSERT(n < MAX_STEPS);
		col[n++] = column_at(im, &b, (x + e) / 2, busy, idle);
	}
	ASSERT_EQ(n, t->n_steps);
	for (int i = 0; i < n; i++) {
		max_ns = t->step_dur[i] > max_ns ? t->step_dur[i] : max_ns;
		max_px = col[i].busy + col[i].idle > max_px ? col[i].busy + col[i].idle : max_px;
	}
	ASSERT_GE(max_px, 100);
	for (int i = 0; i < n; i++) {
		double scale = (double)max_px / (double)max_ns;
		long long busy_ns = busy_in(t, t->step_ts[i], t->step_ts[i] + t->step_dur[i]);

		ASSERT_MSG(absd(col[i].busy + col[i].idle - (double)t->step_dur[i] * scale) <= 1.01,
			   "step %d: %u px for %lld ns", i, col[i].busy + col[i].idle,
			   t->step_dur[i]);
		ASSERT_MSG(absd(col[i].busy - (double)busy_ns * scale) <= 1.01,
			   "step %d: %u busy px for %lld ns", i, col[i].busy, busy_ns);
		ASSERT(col[i].busy_at_bottom || !col[i].busy);
	}
}

/* One bar per top kernel, top down by total, its length in proportion to the total. */
static void check_kernel_pixels(const struct image *im, const char *html, const struct truth *t)
{
	unsigned char plot[3], bar[3];
	unsigned len[MAX_KERN];
	int n = 0;
	struct box b;

	colour_of(html, "plot-kernels", plot);
	colour_of(html, "kernel", bar);
	b = box_of(im, plot);
	for (unsigned y = b.y0, run = 0; y <= b.y1; y++) {
		unsigned px = 0;

		for (unsigned x = b.x0; y < b.y1 && x < b.x1; x++)
			px += px_is(im, x, y, bar);
		if (px && !run++) {
			ASSERT(n < MAX_KERN);
			len[n++] = px;
		}
		run = px ? run : 0;
	}
	ASSERT_EQ(n, t->n_k < 10 ? t->n_k : 10);
	ASSERT(n > 0 && len[0] >= 100);
	for (int i = 0; i < n; i++)
		ASSERT_MSG(absd(len[i] - (double)t->k[i].ns / (double)t->k[0].ns * len[0]) <= 1.01,
			   "kernel %d: %u px for %lld ns", i, len[i], t->k[i].ns);
}

/* Chromium from $CHROMIUM or PATH, or NULL. */
static const char *find_browser(void)
{
	static const char *const names[] = {"chromium", "chromium-browser", "google-chrome",
					    "google-chrome-stable"};
	static char path[PATH_MAX];
	const char *env = getenv("CHROMIUM"), *dirs = getenv("PATH");

	if (env && *env)
		return env;
	for (const char *d = dirs ? dirs : ""; *d;
	     d += strcspn(d, ":") + (d[strcspn(d, ":")] == ':'))
		for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
			snprintf(path, sizeof(path), "%.*s/%s", (int)strcspn(d, ":"), d, names[i]);
			if (!access(path, X_OK))
				return path;
		}
	return NULL;
}

/* A 1200 x 1400 screenshot of the page into png; false (and why) when Chromium can't. */
static bool screenshot(const char *browser, const struct e2e_run *r, const char *png, char *why,
		       size_t why_len)
{
	char profile[PATH_MAX + 32], shot[PATH_MAX + 32], url[PATH_MAX + 32];
	const char *argv[] = {browser,
			      "--headless",
			      "--no-sandbox",
			      "--disable-gpu",
			      "--disable-dev-shm-usage",
			      "--hide-scrollbars",
			      "--no-first-run",
			      "--disable-extensions",
			      "--force-device-scale-factor=1",
			      profile,
			      "--window-size=1200,1400",
			      shot,
			      url,
			      NULL};
	const char *env[] = {"LD_PRELOAD", NULL};
	struct proc_result res;
	struct stat st;
	bool ok;

	snprintf(profile, sizeof(profile), "--user-data-dir=%s", in_dir(r, "chromium"));
	snprintf(shot, sizeof(shot), "--screenshot=%s", png);
	snprintf(url, sizeof(url), "file://%s", in_dir(r, "page.html"));
	if (proc_run(argv, env, 120, &res)) {
		snprintf(why, why_len, "%.200s cannot be run", browser);
		return false;
	}
	ok = !stat(png, &st) && st.st_size > 0;
	if (!ok)
		snprintf(why, why_len, "%.200s wrote no screenshot (exit status %d%s): %.200s",
			 browser, res.status, res.timed_out ? ", timed out" : "", res.err);
	proc_result_free(&res);
	return ok;
}

TEST(summary_tool_html_render)
{
	const char *browser = find_browser(), *png;
	struct truth *t = calloc(1, sizeof(*t));
	char *html, *summary, why[512];
	struct image im = {0};
	struct e2e_run r;

	ASSERT(t);
	if (!browser) {
		free(t);
		SKIP("no Chromium: none of chromium, chromium-browser, google-chrome in PATH, and "
		     "CHROMIUM not set");
	}
	html = make_page(&r, t, &summary);
	png = in_dir(&r, "page.png");
	if (!screenshot(browser, &r, png, why, sizeof(why))) {
		free(html);
		free(summary);
		free(t);
		e2e_free(&r);
		SKIP("%s", why);
	}
	png_load(png, &im);
	ASSERT_EQ(im.w, 1200);
	ASSERT_EQ(im.h, 1400);
	check_step_pixels(&im, html, t);
	check_kernel_pixels(&im, html, t);
	free(im.rgb);
	free(html);
	free(summary);
	free(t);
	e2e_free(&r);
}

/* Reading in pieces. */

/* gprof-summary with GPROF_SUMMARY_CHUNK=chunk (0: unset) and these arguments (NULL-ended). */
static void run_chunked(struct proc_result *res, unsigned chunk, ...)
{
	va_list ap;

	va_start(ap, chunk);
	run_tool_args(res, chunk, ap);
	va_end(ap);
}

/* A gzip file written a piece at a time, and how much text went in. */
struct gz_out {
	FILE *f;
	z_stream zs;
	char text[1 << 16];
	size_t len;
	long long text_bytes;
};

static void gz_flush(struct gz_out *g, int flush)
{
	unsigned char out[1 << 16];

	g->zs.next_in = (unsigned char *)g->text;
	g->zs.avail_in = (uInt)g->len;
	do {
		g->zs.next_out = out;
		g->zs.avail_out = sizeof(out);
		ASSERT(deflate(&g->zs, flush) != Z_STREAM_ERROR);
		ASSERT_EQ(fwrite(out, 1, sizeof(out) - g->zs.avail_out, g->f),
			  sizeof(out) - g->zs.avail_out);
	} while (g->zs.avail_out == 0);
	g->text_bytes += (long long)g->len;
	g->len = 0;
}

static void gz_open(struct gz_out *g, const char *path)
{
	memset(g, 0, sizeof(*g));
	g->f = fopen(path, "wb");
	ASSERT(g->f);
	ASSERT_EQ(deflateInit2(&g->zs, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
}

static void gz_printf(struct gz_out *g, const char *fmt, ...) GPROF_PRINTF(2, 3);
static void gz_printf(struct gz_out *g, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (g->len > sizeof(g->text) - 1024)
		gz_flush(g, Z_NO_FLUSH);
	va_start(ap, fmt);
	n = vsnprintf(g->text + g->len, sizeof(g->text) - g->len, fmt, ap);
	va_end(ap);
	ASSERT(n >= 0 && (size_t)n < sizeof(g->text) - g->len);
	g->len += (size_t)n;
}

static void gz_close(struct gz_out *g)
{
	gz_flush(g, Z_FINISH);
	ASSERT_EQ(deflateEnd(&g->zs), Z_OK);
	ASSERT_EQ(fclose(g->f), 0);
}

/*
 * The large trace: steps of groups 10 us apart, each with a launch (not GPU work), two
 * kernels on device 0 that may overlap (written out of order every third group), one on
 * device 1 (the last of a step runs 500 ns into the next step), every fourth group a copy on
 * device 0 and a memset on device 1, every hundredth a memory counter on each. The steps'
 * events come after their GPU work, as libgprof writes them.
 */
#define BIG_STEPS    20
#define BIG_GROUPS   22200 /* per step: 2 M events in all */
#define BIG_GROUP_NS 10000
#define BIG_STEP_NS  (BIG_GROUPS * BIG_GROUP_NS + 5000LL)
#define BIG_T0_NS    1000000LL /* the first step's start after baseTimeNanoseconds */
#define BIG_NAMES    5

static const char *const big_names[BIG_NAMES] = {
    "void gemm<float, 128>(float const*, float*, int)", "relu(float*, int)",
    "softmax_forward(float*, float const*, int, int)", "reduce_sum(float const*, float*)",
    "adam_step(float*, float*, float const*, float, long)"};

/* What the summary must say, computed as the trace is written. */
struct big_truth {
	long long events;
	long long busy[2][BIG_STEPS]; /* union of each device's GPU time per step */
	long long calls[BIG_NAMES], kern_ns[BIG_NAMES]; /* per kernel name */
	long long kind_ns[2][3];			/* per device: kernels, memcpy, memset */
	long long copies, copy_bytes, copy_ns, sets, set_bytes, set_ns;
	long long peak[2];
};

/* ns as the trace writes us: "%lld.%03lld". */
static const char *us(char out[32], long long ns)
{
	snprintf(out, 32, "%lld.%03lld", ns / 1000, ns % 1000);
	return out;
}

/* [b, e), apart from the device's other intervals, split among the steps it meets. */
static void big_busy(struct big_truth *t, int dev, long long b, long long e)
{
	for (int s = 0; s < BIG_STEPS; s++) {
		long long lo = BIG_T0_NS + s * BIG_STEP_NS, hi = lo + BIG_STEP_NS;
		long long x = b > lo ? b : lo, y = e < hi ? e : hi;

		t->busy[dev][s] += y > x ? y - x : 0;
	}
}

static void big_gpu(struct gz_out *g, struct big_truth *t, const char *cat, const char *name,
		    int dev, int stream, long long b, long long dur, long long bytes)
{
	char ts[32], d[32];

	gz_printf(g,
		  "{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%s,"
		  "\"dur\":%s,\"args\":{\"device\":%d",
		  cat, name, dev, stream, us(ts, b), us(d, dur), dev);
	if (bytes)
		gz_printf(g, ",\"bytes\":%lld", bytes);
	gz_printf(g, "}},\n");
	t->events++;
}

/* Kernels A and B on device 0 (B from o after A), and C on device 1. */
static void big_kernels(struct gz_out *g, struct big_truth *t, long long k, long long at, bool last)
{
	long long a = 500 + k * 37 % 2500, o = k * 53 % 2000, b = 300 + k * 71 % 2700;
	long long c = last ? 14500 : 200 + k * 29 % 2000;
	int na = (int)(k % BIG_NAMES), nb = (int)((k + 2) % BIG_NAMES), nc = (int)((k * 3) % 5);

	for (int i = 0; i < 2; i++) /* B first every third group */
		if ((i == 0) == (k % 3 == 0))
			big_gpu(g, t, "kernel", big_names[nb], 0, 13, at + o, b, 0);
		else
			big_gpu(g, t, "kernel", big_names[na], 0, 7, at, a, 0);
	big_gpu(g, t, "kernel", big_names[nc], 1, 3, at + 1000, c, 0);
	if (o <= a) {
		big_busy(t, 0, at, at + (a > o + b ? a : o + b));
	} else {
		big_busy(t, 0, at, at + a);
		big_busy(t, 0, at + o, at + o + b);
	}
	big_busy(t, 1, at + 1000, at + 1000 + c);
	t->calls[na]++, t->calls[nb]++, t->calls[nc]++;
	t->kern_ns[na] += a, t->kern_ns[nb] += b, t->kern_ns[nc] += c;
	t->kind_ns[0][0] += a + b;
	t->kind_ns[1][0] += c;
}

static void big_copies(struct gz_out *g, struct big_truth *t, long long k, long long at)
{
	long long m = 100 + k * 13 % 1400, mb = 4096 * (1 + k % 8);
	long long s = 100 + k * 17 % 800, sb = 1024 * (1 + k % 4);

	big_gpu(g, t, "gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 0, 7, at + 6000, m, mb);
	big_gpu(g, t, "gpu_memset", "Memset (Device)", 1, 3, at + 7000, s, sb);
	big_busy(t, 0, at + 6000, at + 6000 + m);
	big_busy(t, 1, at + 7000, at + 7000 + s);
	t->kind_ns[0][1] += m;
	t->kind_ns[1][2] += s;
	t->copies++, t->copy_bytes += mb, t->copy_ns += m;
	t->sets++, t->set_bytes += sb, t->set_ns += s;
}

static void big_group(struct gz_out *g, struct big_truth *t, long long k, long long at, bool last)
{
	char ts[32];

	gz_printf(g,
		  "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,"
		  "\"tid\":1,\"ts\":%s,\"dur\":2.000},\n",
		  us(ts, at));
	t->events++;
	big_kernels(g, t, k, at, last);
	if (k % 4 == 0 && !last)
		big_copies(g, t, k, at);
	for (int dev = 0; dev < 2 && k % 100 == 0; dev++) {
		long long v = (k * 7919 + dev * 104729) % 1000003 * 4096;

		gz_printf(g,
			  "{\"ph\":\"C\",\"cat\":\"gpu_memory\",\"name\":\"GPU %d memory\","
			  "\"pid\":%d,\"ts\":%s,\"args\":{\"allocated\":%lld}},\n",
			  dev, dev, us(ts, at + 8000), v);
		t->peak[dev] = v > t->peak[dev] ? v : t->peak[dev];
		t->events++;
	}
}

static void big_trace(const char *path, struct big_truth *t, struct gz_out *g)
{
	char ts[32], dur[32];
	long long k = 0;

	memset(t, 0, sizeof(*t));
	gz_open(g, path);
	gz_printf(g, "{\n  \"schemaVersion\": 1,\n  \"baseTimeNanoseconds\": 1700000000000000000,\n"
		     "  \"traceEvents\": [\n");
	for (int s = 0; s < BIG_STEPS; s++) {
		long long start = BIG_T0_NS + s * BIG_STEP_NS;

		for (int i = 0; i < BIG_GROUPS; i++, k++)
			big_group(g, t, k, start + (long long)i * BIG_GROUP_NS,
				  i == BIG_GROUPS - 1);
		gz_printf(g,
			  "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#%d\","
			  "\"pid\":1,\"tid\":1,\"ts\":%s,\"dur\":%s}%s\n",
			  s, us(ts, start), us(dur, BIG_STEP_NS), s + 1 < BIG_STEPS ? "," : "");
		t->events++;
	}
	gz_printf(g, "  ],\n  \"traceName\": \"big\"\n}\n");
	gz_close(g);
}

/* "1.50 MiB" or "512 B" at *p as bytes, how far printing may have moved it; past it. */
static struct qty read_bytes(const char **p)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB"};
	char unit[8];
	double v, scale = 1;
	int n = 0;

	ASSERT_MSG(sscanf(*p, " %lf %7[a-zA-Z]%n", &v, unit, &n) == 2, "not a size: '%s'", *p);
	*p += n;
	for (size_t i = 0; i < ARRAY_SIZE(units); i++, scale *= 1024)
		if (!strcmp(unit, units[i]))
			return (struct qty){.v = v * scale, .tol = i ? 0.005 * scale : 0.5};
	FAIL("unknown unit '%s'", unit);
}

/* "gprof:   GPU d: busy ..." against the truth. */
static void check_big_device(const char *out, const struct big_truth *t, int dev)
{
	long long busy = 0;
	char label[64];
	const char *l;
	double pct;
	int n = 0;

	for (int s = 0; s < BIG_STEPS; s++)
		busy += t->busy[dev][s];
	snprintf(label, sizeof(label), "\ngprof:   GPU %d: busy ", dev);
	l = line_of(out, label);
	ASSERT(sscanf(l, "%lf%% of step time (%n", &pct, &n) == 1 && n);
	check_pct(pct, 100.0 * (double)busy / (double)(BIG_STEPS * BIG_STEP_NS), "busy %");
	l += n;
	check_qty(read_time(&l), (double)busy, "busy");
	ASSERT(!strncmp(l, "); kernels", 10));
	l += 10;
	check_qty(read_time(&l), (double)t->kind_ns[dev][0], "kernels");
	ASSERT(!strncmp(l, ", memcpy", 8));
	l += 8;
	check_qty(read_time(&l), (double)t->kind_ns[dev][1], "memcpy");
	ASSERT(!strncmp(l, ", memset", 8));
	l += 8;
	check_qty(read_time(&l), (double)t->kind_ns[dev][2], "memset");
	ASSERT(!strncmp(l, "; peak device memory in use", 27));
	l += 27;
	check_qty(read_bytes(&l), (double)t->peak[dev], "peak device memory in use");
}

/* A copies row ("HtoD", "memset"): count, bytes, time, GB/s. */
static void check_big_copies(const char *out, const char *what, long long count, long long bytes,
			     long long ns)
{
	char label[32];
	const char *l;
	long long n_printed;
	double gbs;
	int n = 0;

	snprintf(label, sizeof(label), "\ngprof:   %-8s ", what);
	l = line_of(out, label);
	ASSERT(sscanf(l, "%lld%n", &n_printed, &n) == 1);
	ASSERT_EQ(n_printed, count);
	l += n;
	check_qty(read_bytes(&l), (double)bytes, "bytes");
	check_qty(read_time(&l), (double)ns, "copy time");
	ASSERT(sscanf(l, "%lf", &gbs) == 1);
	ASSERT_MSG(absd(gbs - (double)bytes / (double)ns) <= 0.005 + 0.001 * gbs, "%s GB/s %.3f",
		   what, gbs);
}

/* The summary's figures: steps, both devices, every kernel, the copies. */
static void check_big_summary(const char *out, const struct big_truth *t)
{
	const char *l = line_of(out, "\ngprof:   steps ");
	long long first, last, steps, gpu_ns = 0;
	int n = 0, rows = 0;

	ASSERT(sscanf(l, "%lld-%lld: %lld in%n", &first, &last, &steps, &n) == 3 && n);
	ASSERT(first == 0 && last == BIG_STEPS - 1 && steps == BIG_STEPS);
	l += n;
	check_qty(read_time(&l), (double)(BIG_STEPS * BIG_STEP_NS), "steps' span");
	ASSERT(!strncmp(l, ", mean step", 11));
	l += 11;
	check_qty(read_time(&l), (double)BIG_STEP_NS, "mean step");
	for (int dev = 0; dev < 2; dev++) {
		check_big_device(out, t, dev);
		for (int k = 0; k < 3; k++)
			gpu_ns += t->kind_ns[dev][k];
	}
	l = line_of(out, "GPU%  name\n");
	for (double prev = 1e300; !strncmp(l, "gprof:   ", 9) && isdigit(l[9 + strspn(l + 9, " ")]);
	     l = strchr(l, '\n') + 1, rows++) {
		struct qty total, mean;
		long long calls;
		double share;
		char name[256];
		int i = 0;

		ASSERT(sscanf(l + 9, "%lld%n", &calls, &n) == 1);
		l += 9 + n;
		total = read_time(&l);
		mean = read_time(&l);
		ASSERT(sscanf(l, "%lf  %255[^\n]", &share, name) == 2);
		while (i < BIG_NAMES && strcmp(big_names[i], name))
			i++;
		ASSERT_MSG(i < BIG_NAMES, "kernel '%s'", name);
		ASSERT_EQ(calls, t->calls[i]);
		check_qty(total, (double)t->kern_ns[i], "kernel total");
		check_qty(mean, (double)(t->kern_ns[i] / t->calls[i]), "kernel mean");
		check_pct(share, 100.0 * (double)t->kern_ns[i] / (double)gpu_ns, "GPU%");
		ASSERT_MSG(total.v <= prev, "kernel '%s' after a smaller total", name);
		prev = total.v;
	}
	ASSERT_EQ(rows, BIG_NAMES);
	check_big_copies(out, "HtoD", t->copies, t->copy_bytes, t->copy_ns);
	check_big_copies(out, "memset", t->sets, t->set_bytes, t->set_ns);
}

/* The page's per-step busy time of each device and its kernels, to the nanosecond. */
static void check_big_page(const char *html, const struct big_truth *t)
{
	char want[512];
	const char *chart;

	for (int dev = 0; dev < 2; dev++) {
		snprintf(want, sizeof(want), "<svg class=\"steps\" data-device=\"%d\"", dev);
		chart = strstr(html, want);
		ASSERT_MSG(chart, "no chart for GPU %d", dev);
		for (int s = 0; s < BIG_STEPS; s++) {
			snprintf(want, sizeof(want),
				 "<g class=\"step\" data-step=\"%d\" data-dur-ns=\"%lld\" "
				 "data-busy-ns=\"%lld\">",
				 s, BIG_STEP_NS, t->busy[dev][s]);
			chart = strstr(chart, want);
			ASSERT_MSG(chart, "GPU %d: no '%s'", dev, want);
		}
	}
	for (int i = 0; i < BIG_NAMES; i++) { /* ranks: by total, largest first, then by name */
		int rank = 1;

		for (int j = 0; j < BIG_NAMES; j++)
			rank += t->kern_ns[j] > t->kern_ns[i] ||
				(t->kern_ns[j] == t->kern_ns[i] &&
				 strcmp(big_names[j], big_names[i]) < 0);
		snprintf(want, sizeof(want),
			 "<g class=\"kernel\" data-rank=\"%d\" data-calls=\"%lld\" "
			 "data-total-ns=\"%lld\"><title>%s</title>",
			 rank, t->calls[i], t->kern_ns[i], html_text(big_names[i]));
		ASSERT_STR_CONTAINS(html, want);
	}
}

/* The largest resident size of the children waited for so far, in bytes. */
static long long children_max_rss(void)
{
	struct rusage ru;

	ASSERT_EQ(getrusage(RUSAGE_CHILDREN, &ru), 0);
	return (long long)ru.ru_maxrss * 1024;
}

/*
 * 2 M events (267 MB of text) summarised, and drawn as a page (a second reading for the busy
 * times per step), each in a quarter of the text's size or less (8 MB and 25 MB measured,
 * plain and under ASan; a child starts with this process's pages); every figure as computed
 * here while writing the trace.
 */
TEST(summary_tool_bounded_memory)
{
	char dir[] = "/tmp/gprof-summary-big-XXXXXX", path[64], page[64];
	long long bound = (getenv("TEST_SAN") && *getenv("TEST_SAN") ? 48LL : 24LL) << 20;
	struct big_truth *t = calloc(1, sizeof(*t));
	struct gz_out *g = calloc(1, sizeof(*g));
	struct proc_result res;
	size_t len;
	char *html;

	ASSERT(t && g && mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/big.pt.trace.json.gz", dir);
	snprintf(page, sizeof(page), "%s/big.html", dir);
	big_trace(path, t, g);
	ASSERT_GE(t->events, 2000000);
	ASSERT_GE(g->text_bytes, 4 * bound);
	run_tool(&res, path, NULL);
	ASSERT_MSG(res.status == 0, "status %d: %s", res.status, res.err);
	check_big_summary(res.out, t);
	ASSERT_MSG(children_max_rss() < bound, "%lld bytes resident for %lld of text",
		   children_max_rss(), g->text_bytes);
	proc_result_free(&res);
	run_tool(&res, "--html", page, path, NULL);
	ASSERT_MSG(res.status == 0, "status %d: %s", res.status, res.err);
	html = read_file(page, &len);
	check_big_page(html, t);
	ASSERT_MSG(children_max_rss() < bound, "%lld bytes resident for %lld of text",
		   children_max_rss(), g->text_bytes);
	free(html);
	proc_result_free(&res);
	free(t);
	free(g);
	ASSERT_EQ(unlink(page), 0);
	ASSERT_EQ(unlink(path), 0);
	ASSERT_EQ(rmdir(dir), 0);
}

/* Chunk sizes: 1 puts a boundary after every byte, the others at other offsets of each event. */
static const unsigned chunks[] = {1, 2, 3, 7, 64, 1000};

/* The tool's output and messages, each chunk size against the default (whole small files). */
static void check_chunked(const char *a, const char *b, const char *c)
{
	struct proc_result ref, res;

	run_chunked(&ref, 0, a, b, c, NULL);
	for (size_t i = 0; i < ARRAY_SIZE(chunks); i++) {
		run_chunked(&res, chunks[i], a, b, c, NULL);
		ASSERT_EQ(res.status, ref.status);
		ASSERT_MSG(!strcmp(res.out, ref.out) && !strcmp(res.err, ref.err),
			   "GPROF_SUMMARY_CHUNK=%u:\n%s%s\nthe default:\n%s%s", chunks[i], res.out,
			   res.err, ref.out, ref.err);
		proc_result_free(&res);
	}
	proc_result_free(&ref);
}

/* Strings with brackets, quotes, backslashes and escapes; white space; nested arguments. */
static const char tricky_trace[] =
    "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"name\": \"GPU \\\"x\\\" "
    "]}[{\"}], \"baseTimeNanoseconds\": 1000000000000,\n  \"traceEvents\" : [\n"
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#7\",\"pid\":1,"
    "\"tid\":1,\"ts\":0.000,\"dur\":50.000},\n"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"a{b}[c]\\\"d\\\\\",\"pid\":0,\"tid\":7,"
    "\"ts\":1.000,\"dur\":5.000,\"args\":{\"note\":\"}]{[,:\\\\\\\"\",\"list\":[{\"x\":\"]\"},"
    "[]],\"device\":0}},\n"
    "  { \"ph\" : \"X\" , \"cat\" :\"kernel\",\n \"name\" : \"a{b}[c]\\\"d\\\\\" ,\"ts\": 10.5,"
    "\t\"dur\":2.25 , \"pid\" : 0 , \"args\" : { \"device\" : 0 } } ,\n"
    "{\"ph\":\"X\",\"cat\":\"gpu_memset\",\"name\":\"Memset (Device)\",\"pid\":0,\"tid\":7,"
    "\"ts\":20,\"dur\":1e0,\"args\":{\"device\":0,\"bytes\":512}},\n"
    "{\"ph\":\"C\",\"cat\":\"gpu_memory\",\"name\":\"GPU 0\",\"pid\":0,\"ts\":21,"
    "\"args\":{\"allocated\":3145728}},\n"
    "{\"ph\":\"i\",\"cat\":\"user_annotation\",\"name\":\"{\\\"mark\\\": [1, 2]}\",\"pid\":1,"
    "\"ts\":30, \"args\": {\"a\": [true, false, null, -1.5e3, {\"b\": {}}]}}\n"
    "], \"traceName\": \"t\\\\u\" }\n";

/* A trace with a kernel name of 64 KiB and an NVTX message of 16 MiB. */
static void write_long_events(const char *path)
{
	FILE *f = fopen(path, "w");

	ASSERT(f);
	fputs("{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"Profiler"
	      "Step#1\",\"pid\":1,\"tid\":1,\"ts\":0.000,\"dur\":100.000},\n"
	      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"",
	      f);
	for (int i = 0; i < 65536; i++)
		fputc('k', f);
	fputs("\",\"pid\":0,\"tid\":7,\"ts\":1.000,\"dur\":30.000,\"args\":{\"device\":0}},\n"
	      "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"",
	      f);
	for (int i = 0; i < 16 << 20; i++)
		fputc('m', f);
	fputs("\",\"pid\":1,\"tid\":1,\"ts\":2.000,\"dur\":3.000},\n"
	      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"short\",\"pid\":0,\"tid\":7,"
	      "\"ts\":40.000,\"dur\":10.000,\"args\":{\"device\":0}}]}\n",
	      f);
	ASSERT_EQ(fclose(f), 0);
}

/*
 * An event across every chunk boundary: GPROF_SUMMARY_CHUNK from 1 byte up gives what one
 * piece gives for a libgprof trace (gzip and plain: the summary, --compare, --html, a cut
 * copy's message), for a trace with everything a scanner can trip on, and for events longer
 * than the window.
 */
TEST(summary_tool_chunk_boundaries)
{
	const char *args[] = {"-s", "5", "-t", "2", NULL};
	const char *plain, *cut, *tricky, *page, *longer;
	struct proc_result res;
	struct e2e_run r;

	run_steps_app(&r, args, NULL);
	plain = in_dir(&r, "plain.json");
	write_file(plain, r.traces[0].raw, r.traces[0].len);
	cut = in_dir(&r, "cut.json");
	write_file(cut, r.traces[0].raw, r.traces[0].len / 2);
	tricky = in_dir(&r, "tricky.json");
	write_file(tricky, tricky_trace, sizeof(tricky_trace) - 1);
	page = in_dir(&r, "page.html");
	check_chunked(trace_file(&r, 0), plain, tricky);
	check_chunked("--compare", trace_file(&r, 0), plain);
	check_chunked("--html", page, trace_file(&r, 0));
	check_chunked(cut, NULL, NULL);

	run_tool(&res, tricky, NULL);
	ASSERT_STR_CONTAINS(res.out, "steps 7-7: 1 in 50.000 us, mean step 50.000 us\n");
	ASSERT_STR_CONTAINS(res.out,
			    ": busy 16.5% of step time (8.250 us); kernels 7.250 us, "
			    "memcpy 0 ns, memset 1.000 us; peak device memory in use 3.00 MiB\n");
	ASSERT_STR_CONTAINS(res.out, " 2     7.250 us     3.625 us   87.9  a{b}[c]\"d\\\n");
	proc_result_free(&res);

	longer = in_dir(&r, "long.json");
	write_long_events(longer);
	check_chunked(longer, NULL, NULL);
	run_tool(&res, longer, NULL);
	ASSERT_STR_CONTAINS(res.out, "busy 40.0% of step time (40.000 us)");
	ASSERT_STR_CONTAINS(res.out, " 1    30.000 us    30.000 us   75.0  kkkkkkkk");
	ASSERT_STR_CONTAINS(res.out, " 1    10.000 us    10.000 us   25.0  short\n");
	proc_result_free(&res);
	e2e_free(&r);
}
