/*
 * Reading a trace back: gunzip, walk the JSON one event at a time (a window's text can be
 * hundreds of MB; its parsed tree would be ten times that), and turn each event into the event
 * the library had, for the library's own summary and for the tool's per-step figures.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "export/internal.h"
#include "scripts/summary/tool.h"

#define COPY_KINDS (GPROF_COPY_PTOP + 1)

struct walk {
	const char *start, *p, *end;
	char *why;
	size_t why_len;
};

static int fail(char *why, size_t n, const char *fmt, ...) GPROF_PRINTF(3, 4);
static int fail(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
	return -1;
}

static int read_file(const char *path, char **data, size_t *len, char *why, size_t why_len)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 0, got;
	char *p;
	int rc = 0;

	*data = NULL;
	*len = 0;
	if (!f)
		return fail(why, why_len, "cannot open: %s", strerror(errno));
	do {
		if (cap - *len < 65536) {
			p = realloc(*data, cap = cap ? 2 * cap : 1 << 20);
			if (!p) {
				rc = fail(why, why_len, "out of memory");
				goto out;
			}
			*data = p;
		}
		got = fread(*data + *len, 1, cap - *len - 1, f);
		*len += got;
	} while (got);
	(*data)[*len] = '\0';
	if (ferror(f))
		rc = fail(why, why_len, "cannot read: %s", strerror(errno));
out:
	fclose(f);
	return rc;
}

/* One whole gzip member, nothing after it. */
static int gunzip(const char *gz, size_t len, char **out, size_t *out_len, char *why, size_t n)
{
	z_stream zs = {.next_in = (Bytef *)gz, .avail_in = (uInt)len};
	size_t cap = 4 * len + 65536, used = 0;
	char *p;
	int rc = Z_OK;

	*out = NULL;
	*out_len = 0;
	if (len > UINT_MAX) /* avail_in is 32 bits: 40 bytes an event, 100 M events */
		return fail(why, n, "larger than 4 GiB compressed: gunzip it first");
	*out = malloc(cap);
	if (!*out || inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
		return fail(why, n, "out of memory");
	while (rc == Z_OK) {
		if (cap - used < 65536) {
			p = realloc(*out, 2 * cap);
			if (!p)
				break;
			*out = p;
			cap *= 2;
		}
		zs.next_out = (Bytef *)*out + used;
		zs.avail_out = (uInt)(cap - used - 1 > UINT_MAX ? UINT_MAX : cap - used - 1);
		rc = inflate(&zs, Z_NO_FLUSH);
		used = (size_t)((char *)zs.next_out - *out);
	}
	inflateEnd(&zs);
	(*out)[used] = '\0';
	*out_len = used;
	if (rc == Z_BUF_ERROR && !zs.avail_in)
		return fail(why, n,
			    "cut short: the gzip stream ends after %zu bytes of text (a "
			    ".partial file? gprof-repair completes one)",
			    used);
	if (rc != Z_STREAM_END)
		return fail(why, n, "not a readable gzip file: %s",
			    rc == Z_OK ? "out of memory"
			    : zs.msg   ? zs.msg
				       : "zlib error");
	if (zs.avail_in)
		return fail(why, n, "%u bytes after the end of the gzip stream", zs.avail_in);
	return 0;
}

static void skip_ws(struct walk *w)
{
	while (w->p < w->end && (*w->p == ' ' || *w->p == '\t' || *w->p == '\r' || *w->p == '\n'))
		w->p++;
}

/* The next character, past white space, if it is one of `chars`. */
static char next_of(struct walk *w, const char *chars)
{
	skip_ws(w);
	if (w->p < w->end && *w->p && strchr(chars, *w->p))
		return *w->p++;
	if (w->p == w->end)
		fail(w->why, w->why_len, "cut short: the text ends at byte %zu inside the trace",
		     (size_t)(w->end - w->start));
	else
		fail(w->why, w->why_len, "not a trace: '%c' expected at byte %zu", *chars,
		     (size_t)(w->p - w->start));
	return 0;
}

/* The JSON value at w->p (jansson), or NULL with why set. */
static json_t *next_value(struct walk *w)
{
	json_error_t err;
	json_t *v;

	skip_ws(w);
	v = json_loadb(w->p, (size_t)(w->end - w->p), JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK,
		       &err);
	if (!v && json_error_code(&err) == json_error_premature_end_of_input)
		fail(w->why, w->why_len, "cut short: the text ends at byte %zu inside the trace",
		     (size_t)(w->end - w->start));
	else if (!v)
		fail(w->why, w->why_len, "not valid JSON at byte %zu: %s",
		     (size_t)(w->p - w->start) + (size_t)err.position, err.text);
	else
		w->p += err.position;
	return v;
}

static bool text_is(const struct tool_text *t, const char *s)
{
	return !t->escaped && t->len == strlen(s) && !memcmp(t->p, s, t->len);
}

/* A number's value; the text ends in a NUL, so strtod stops in time. */
static int64_t ns_of(const char *num)
{
	return num ? (int64_t)llround(strtod(num, NULL) * 1000.0) : 0;
}

static uint64_t u64_of(const char *num)
{
	long long v = num ? strtoll(num, NULL, 10) : 0;

	return v > 0 ? (uint64_t)v : 0;
}

/* The device of a GPU event: args.device, as the trace's pid says too. */
static uint32_t device_of(const struct tool_fields *f)
{
	return (uint32_t)u64_of(f->device ? f->device : f->pid);
}

/* A kernel's name, interned; escapes undone by jansson (names rarely have any). */
static const struct gprof_export_str *name_of(const struct tool_text *t)
{
	const struct gprof_export_str *s;
	json_t *v;

	if (!t->escaped)
		return gprof_export_intern_n(t->p, t->len);
	v = json_loadb(t->p - 1, t->len + 2, JSON_DECODE_ANY, NULL);
	s = json_is_string(v) ? gprof_export_intern_n(json_string_value(v), json_string_length(v))
			      : gprof_export_intern_n(t->p, t->len);
	json_decref(v);
	return s;
}

static bool take_step(const struct tool_fields *f, struct gprof_export_event *e)
{
	const struct tool_text *n = &f->name;

	if (n->len < 14 || memcmp(n->p, "ProfilerStep#", 13) || n->p[13] < '0' || n->p[13] > '9')
		return false;
	e->kind = GPROF_EXPORT_STEP;
	e->u.step = strtoull(n->p + 13, NULL, 10); /* stops at the closing quote */
	return true;
}

static bool take_kernel(const struct tool_fields *f, struct gprof_export_event *e)
{
	e->kind = GPROF_EXPORT_KERNEL;
	e->name = name_of(&f->name);
	e->device = device_of(f);
	return true;
}

/* "Memcpy HtoD (Pageable -> Device)": the kind is the second word. */
static bool take_memcpy(const struct tool_fields *f, struct gprof_export_event *e)
{
	const struct tool_text *n = &f->name;
	size_t len = 0;

	while (n->len > 7 + len && n->p[7 + len] != ' ')
		len++;
	e->kind = GPROF_EXPORT_MEMCPY;
	e->device = device_of(f);
	e->u.copy.bytes = u64_of(f->bytes);
	for (unsigned k = 0; k < COPY_KINDS && n->len > 7 && !memcmp(n->p, "Memcpy ", 7); k++)
		if (strlen(gprof_trace_copy_kind(k)) == len &&
		    !memcmp(n->p + 7, gprof_trace_copy_kind(k), len))
			e->u.copy.copy_kind = (uint8_t)k;
	return true;
}

static bool take_memset(const struct tool_fields *f, struct gprof_export_event *e)
{
	e->kind = GPROF_EXPORT_MEMSET;
	e->device = device_of(f);
	e->u.copy.bytes = u64_of(f->bytes);
	return true;
}

static bool take_memory(const struct tool_fields *f, struct gprof_export_event *e)
{
	e->kind = GPROF_EXPORT_MEMORY;
	e->device = (uint32_t)u64_of(f->pid);
	e->u.allocated = u64_of(f->allocated);
	return true;
}

/* The events the summary counts, by TRACE_FORMAT.md's table. */
static const struct {
	const char *ph, *cat;
	bool (*take)(const struct tool_fields *f, struct gprof_export_event *e);
} kinds[] = {
    {.ph = "X", .cat = "user_annotation", .take = take_step},
    {.ph = "X", .cat = "kernel", .take = take_kernel},
    {.ph = "X", .cat = "gpu_memcpy", .take = take_memcpy},
    {.ph = "X", .cat = "gpu_memset", .take = take_memset},
    {.ph = "C", .cat = "gpu_memory", .take = take_memory},
};

static bool grow(void **p, size_t *cap, size_t n, size_t size)
{
	size_t c = *cap ? 2 * *cap : 64;
	void *q;

	if (n < *cap)
		return true;
	q = realloc(*p, c * size);
	if (!q)
		return false;
	*p = q;
	*cap = c;
	return true;
}

static struct tool_device *device(struct tool_trace *t, uint32_t id)
{
	for (unsigned i = 0; i < t->n_dev; i++)
		if (t->dev[i].id == id)
			return &t->dev[i];
	if (t->n_dev == GPROF_EXPORT_MAX_DEVICES)
		return NULL; /* the summary says it is incomplete */
	t->dev[t->n_dev].id = id;
	return &t->dev[t->n_dev++];
}

/* The tool's own figures: steps, GPU intervals per device, kernel calls. */
static bool add_figures(struct tool_trace *t, const struct gprof_export_event *e)
{
	struct tool_device *d;

	if (e->kind == GPROF_EXPORT_STEP) {
		if (!grow((void **)&t->steps, &t->steps_cap, t->n_steps, sizeof(*t->steps)))
			return false;
		t->steps[t->n_steps++] = (struct tool_step){e->u.step, e->ts_ns, e->dur_ns};
		return true;
	}
	if (e->kind == GPROF_EXPORT_MEMORY || !(d = device(t, e->device)))
		return true;
	if (!grow((void **)&d->spans, &d->cap, d->n_spans, sizeof(*d->spans)))
		return false;
	d->spans[d->n_spans++] = (struct tool_span){e->ts_ns, e->ts_ns + e->dur_ns};
	t->gpu_ns += e->dur_ns;
	if (e->kind != GPROF_EXPORT_KERNEL)
		return true;
	if (!grow((void **)&t->kernels, &t->kernels_cap, t->n_kernels, sizeof(*t->kernels)))
		return false;
	t->kernels[t->n_kernels++] = (struct tool_kernel){e->name->raw, 1, e->dur_ns};
	return true;
}

static int take_event(struct walk *w, struct tool_trace *t, const struct tool_fields *f,
		      uint64_t base_ns)
{
	struct gprof_export_event e = {0};
	int64_t dur = ns_of(f->dur);
	size_t i = 0;

	while (i < ARRAY_SIZE(kinds) &&
	       !(text_is(&f->ph, kinds[i].ph) && text_is(&f->cat, kinds[i].cat)))
		i++;
	if (i == ARRAY_SIZE(kinds) || !kinds[i].take(f, &e))
		return 0;
	e.ts_ns = base_ns + (uint64_t)ns_of(f->ts);
	e.dur_ns = dur > 0 ? (uint64_t)dur : 0;
	gprof_summary_events(t->summary, &e, 1);
	if (!add_figures(t, &e))
		return fail(w->why, w->why_len, "out of memory");
	return 0;
}

/* Why the scanner could not read the event at w->p: jansson says. */
static int bad_event(struct walk *w)
{
	json_t *v = next_value(w);

	if (v)
		fail(w->why, w->why_len, "not a trace: %s at byte %zu",
		     json_is_object(v) ? "an event this tool cannot read"
				       : "an event is not an object",
		     (size_t)(w->p - w->start));
	json_decref(v);
	return -1;
}

/* traceEvents: each event scanned and taken. */
static int walk_events(struct walk *w, struct tool_trace *t)
{
	uint64_t base_ns =
	    (uint64_t)json_integer_value(json_object_get(t->head, "baseTimeNanoseconds"));
	char c = next_of(w, "[");
	struct tool_fields f;
	const char *next;
	int rc = 0;

	skip_ws(w);
	if (c && w->p < w->end && *w->p == ']')
		c = *w->p++;
	while (c && c != ']' && !rc) {
		skip_ws(w);
		next = tool_scan_event(w->p, w->end, &f);
		if (!next)
			return bad_event(w);
		w->p = next;
		rc = take_event(w, t, &f, base_ns);
		c = rc ? 0 : next_of(w, ",]");
	}
	return c ? 0 : -1;
}

/* The top-level object: members into t->head, traceEvents walked. */
static int walk_top(struct walk *w, struct tool_trace *t)
{
	bool events = false;
	json_t *key, *v;
	char c = next_of(w, "{");

	skip_ws(w);
	if (c && w->p < w->end && *w->p == '}')
		c = *w->p++;
	while (c && c != '}') {
		key = next_value(w);
		if (key && !json_is_string(key))
			fail(w->why, w->why_len, "not valid JSON: a key that is not a string");
		if (!json_is_string(key) || !next_of(w, ":")) {
			json_decref(key);
			return -1;
		}
		if (!strcmp(json_string_value(key), "traceEvents")) {
			events = true;
			v = walk_events(w, t) ? NULL : json_null();
		} else {
			v = next_value(w);
		}
		if (v)
			json_object_set_new(t->head, json_string_value(key), v);
		json_decref(key);
		c = v ? next_of(w, ",}") : 0;
	}
	skip_ws(w);
	if (c && w->p != w->end)
		return fail(w->why, w->why_len, "not a trace: text after its end");
	if (c && !events)
		return fail(w->why, w->why_len, "not a trace: no traceEvents");
	return c ? 0 : -1;
}

/* qsort, which must not be given NULL even for no elements */
static void sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n)
		qsort(base, n, size, cmp);
}

static int cmp_step(const void *a, const void *b)
{
	const struct tool_step *x = a, *y = b;

	return x->ts_ns < y->ts_ns ? -1 : x->ts_ns > y->ts_ns;
}

static int cmp_span(const void *a, const void *b)
{
	const struct tool_span *x = a, *y = b;

	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static int cmp_name(const void *a, const void *b)
{
	const struct tool_kernel *x = a, *y = b;

	return x->name < y->name ? -1 : x->name > y->name;
}

/* Largest total first; equal totals by name, so the order does not depend on the input's. */
static int cmp_total(const void *a, const void *b)
{
	const struct tool_kernel *x = a, *y = b;

	return x->ns != y->ns ? (x->ns > y->ns ? -1 : 1) : strcmp(x->name, y->name);
}

/* One row per kernel name (the list held one per call). */
static void tally_kernels(struct tool_trace *t)
{
	size_t n = 0;

	sort(t->kernels, t->n_kernels, sizeof(*t->kernels), cmp_name);
	for (size_t i = 0; i < t->n_kernels; i++) {
		if (n && t->kernels[n - 1].name == t->kernels[i].name) {
			t->kernels[n - 1].calls++;
			t->kernels[n - 1].ns += t->kernels[i].ns;
		} else {
			t->kernels[n++] = t->kernels[i];
		}
	}
	t->n_kernels = n;
	sort(t->kernels, n, sizeof(*t->kernels), cmp_total);
}

/* |union ∩ [b, e)|; the union is sorted and disjoint. */
static uint64_t busy_in(const struct tool_device *d, uint64_t b, uint64_t e)
{
	size_t lo = 0, hi = d->n_spans;
	uint64_t ns = 0;

	while (lo < hi) { /* the first span ending after b */
		size_t mid = lo + (hi - lo) / 2;

		if (d->spans[mid].end <= b)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < d->n_spans && d->spans[lo].begin < e; lo++) {
		uint64_t x = d->spans[lo].begin > b ? d->spans[lo].begin : b;
		uint64_t y = d->spans[lo].end < e ? d->spans[lo].end : e;

		ns += y > x ? y - x : 0;
	}
	return ns;
}

/* The device's intervals become their union; then busy time overall and per step. */
static int busy_times(struct tool_trace *t, struct tool_device *d)
{
	size_t n = 0;

	sort(d->spans, d->n_spans, sizeof(*d->spans), cmp_span);
	for (size_t i = 0; i < d->n_spans; i++) {
		if (n && d->spans[i].begin <= d->spans[n - 1].end) {
			if (d->spans[i].end > d->spans[n - 1].end)
				d->spans[n - 1].end = d->spans[i].end;
		} else {
			d->spans[n++] = d->spans[i];
		}
	}
	d->n_spans = n;
	d->busy_ns =
	    t->n_steps ? busy_in(d, t->step_begin, t->step_end) : busy_in(d, 0, UINT64_MAX);
	d->step_busy_ns = calloc(t->n_steps + 1, sizeof(*d->step_busy_ns));
	if (!d->step_busy_ns)
		return -1;
	for (size_t i = 0; i < t->n_steps; i++)
		d->step_busy_ns[i] =
		    busy_in(d, t->steps[i].ts_ns, t->steps[i].ts_ns + t->steps[i].dur_ns);
	return 0;
}

static uint64_t head_u64(const struct tool_trace *t, const char *obj, const char *key)
{
	const json_t *o = json_object_get(t->head, "gprof");

	o = obj ? json_object_get(o, obj) : o;
	return (uint64_t)json_integer_value(json_object_get(o, key));
}

/* What the library's summary was given besides the events: the header's steps and drops. */
static void result_of(struct tool_trace *t)
{
	const json_t *g = json_object_get(t->head, "gprof");
	struct gprof_export_result *r = &t->result;

	*r = (struct gprof_export_result){.path = t->path, .summary = t->summary};
	if (json_is_integer(json_object_get(g, "first_step"))) {
		r->first_step = head_u64(t, NULL, "first_step");
		r->last_step = r->first_step; /* null until the window's last step is known */
		if (json_is_integer(json_object_get(g, "last_step")))
			r->last_step = head_u64(t, NULL, "last_step");
	} else if (t->n_steps) { /* not libgprof's: the steps it holds */
		r->first_step = t->steps[0].number;
		r->last_step = t->steps[t->n_steps - 1].number;
	}
	r->dropped = head_u64(t, "dropped", "buffer_full");
	r->cupti_dropped = head_u64(t, "dropped", "cupti");
}

static int finish(struct tool_trace *t, char *why, size_t why_len)
{
	sort(t->steps, t->n_steps, sizeof(*t->steps), cmp_step);
	for (size_t i = 0; i < t->n_steps; i++) {
		const struct tool_step *s = &t->steps[i];

		if (!i || s->ts_ns < t->step_begin)
			t->step_begin = s->ts_ns;
		if (!i || s->ts_ns + s->dur_ns > t->step_end)
			t->step_end = s->ts_ns + s->dur_ns;
		t->step_ns += s->dur_ns;
	}
	tally_kernels(t);
	for (unsigned i = 0; i < t->n_dev; i++)
		if (busy_times(t, &t->dev[i]))
			return fail(why, why_len, "out of memory");
	result_of(t);
	return 0;
}

int tool_load(const char *path, struct tool_trace *t, char *why, size_t why_len)
{
	struct walk w = {.why = why, .why_len = why_len};
	char *data = NULL, *text = NULL;
	size_t len = 0, text_len = 0;
	int rc;

	*t = (struct tool_trace){.path = path, .head = json_object()};
	t->summary = gprof_summary_new();
	rc = t->head && t->summary ? read_file(path, &data, &len, why, why_len)
				   : fail(why, why_len, "out of memory");
	if (!rc && !len)
		rc = fail(why, why_len, "not a trace: the file is empty");
	if (!rc && len >= 2 && (unsigned char)data[0] == 0x1f && (unsigned char)data[1] == 0x8b)
		rc = gunzip(data, len, &text, &text_len, why, why_len);
	else if (!rc) { /* plain JSON */
		text = data;
		text_len = len;
		data = NULL;
	}
	if (!rc) {
		w.start = w.p = text;
		w.end = text + text_len;
		rc = walk_top(&w, t);
	}
	if (!rc)
		rc = finish(t, why, why_len);
	free(data);
	free(text);
	return rc;
}

void tool_free(struct tool_trace *t)
{
	json_decref(t->head);
	gprof_summary_free(t->summary);
	free(t->steps);
	free(t->kernels);
	for (unsigned i = 0; i < t->n_dev; i++) {
		free(t->dev[i].spans);
		free(t->dev[i].step_busy_ns);
	}
	*t = (struct tool_trace){0};
}
