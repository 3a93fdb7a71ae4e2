/*
 * Reading a trace back: its text a window at a time (stream.c), the header's members parsed by
 * jansson, each event found by the scanner (scan.c) and turned into the event the library had,
 * for the library's own summary and for the tool's figures (figures.c). A window of 100 M
 * events is read in the memory of one of a thousand; a second reading finds its busy times.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "export/format.h"
#include "export/summary.h"
#include "scripts/summary/tool.h"

#define COPY_KINDS (GPROF_COPY_PTOP + 1)

struct walk {
	struct tool_stream *s;
	struct tool_trace *t;
	json_t *head; /* the top-level members read */
	bool second;  /* the second reading: GPU intervals for the busy times, nothing else */
	bool capped;  /* a value reached TOOL_ITEM_MAX */
	uint64_t base_ns;
	char *why;
	size_t why_len;
};

/* Where p is in the whole text. */
static size_t at(const struct walk *w, const char *p)
{
	return (size_t)(w->s->base + (uint64_t)(p - w->s->buf));
}

/* More text (what is before p is dropped): 1, 0 at its end, -1 (why says what). */
static int more(struct walk *w)
{
	int rc = tool_stream_more(w->s);

	if (rc < 0)
		gprof_why(w->why, w->why_len, "%s", w->s->why);
	return rc;
}

/* More text for the value at p, or 0 as at the end when it has grown to TOOL_ITEM_MAX. */
static int more_for_value(struct walk *w)
{
	w->capped = (size_t)(w->s->end - w->s->p) >= TOOL_ITEM_MAX;
	return w->capped ? 0 : more(w);
}

/* Past white space to text: 1, 0 at the end of the text, -1. */
static int skip_ws(struct walk *w)
{
	struct tool_stream *s = w->s;
	int rc = 1;

	while (rc > 0) {
		while (s->p < s->end &&
		       (*s->p == ' ' || *s->p == '\t' || *s->p == '\r' || *s->p == '\n'))
			s->p++;
		if (s->p < s->end)
			return 1;
		rc = more(w);
	}
	return rc;
}

static void cut_short(struct walk *w)
{
	gprof_why(w->why, w->why_len, "cut short: the text ends at byte %zu inside the trace",
		  at(w, w->s->end));
}

/* The next character, past white space, if it is one of `chars`. */
static char next_of(struct walk *w, const char *chars)
{
	struct tool_stream *s = w->s;
	int rc = skip_ws(w);

	if (rc > 0 && *s->p && strchr(chars, *s->p))
		return *s->p++;
	if (rc > 0)
		gprof_why(w->why, w->why_len, "not a trace: '%c' expected at byte %zu", *chars,
			  at(w, s->p));
	else if (!rc)
		cut_short(w);
	return 0;
}

/* The value at p whole in the window, as far as the scanner can tell: 0 or -1. */
static int hold_value(struct walk *w)
{
	bool need = true;
	int rc = 1;

	while (rc > 0 && !tool_scan_value(w->s->p, w->s->end, &need) && need)
		rc = more_for_value(w);
	return rc < 0 ? -1 : 0;
}

/* The JSON value at p (jansson), or NULL with why set. */
static json_t *next_value(struct walk *w)
{
	struct tool_stream *s = w->s;
	json_error_t err;
	json_t *v;
	int rc = skip_ws(w);

	if (!rc)
		cut_short(w);
	if (rc <= 0 || hold_value(w))
		return NULL;
	for (;;) { /* more text only where the scanner and jansson differ on where it ends */
		v = json_loadb(s->p, (size_t)(s->end - s->p),
			       JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK, &err);
		if (v || json_error_code(&err) != json_error_premature_end_of_input)
			break;
		rc = more_for_value(w);
		if (rc < 0)
			return NULL;
		if (!rc)
			break;
	}
	if (!v && json_error_code(&err) == json_error_premature_end_of_input && w->capped)
		gprof_why(w->why, w->why_len,
			  "not a trace this tool can read: a value of more than %u MiB at byte %zu",
			  TOOL_ITEM_MAX >> 20, at(w, s->p));
	else if (!v && json_error_code(&err) == json_error_premature_end_of_input)
		cut_short(w);
	else if (!v)
		gprof_why(w->why, w->why_len, "not valid JSON at byte %zu: %s",
			  at(w, s->p) + (size_t)err.position, err.text);
	else
		s->p += err.position;
	return v;
}

/*
 * A time in ns from its text in us: "%lld.%03lld", as the library writes it, read exactly;
 * anything else by strtod. The event's text goes on after the number, so both stop in time.
 */
static int64_t ns_of(const char *num)
{
	const char *p = num && *num == '-' ? num + 1 : num;
	int64_t us = 0, ns = 0;
	int digits = 0, decimals = 0;

	if (!num)
		return 0;
	for (; *p >= '0' && *p <= '9' && digits < 15; p++, digits++)
		us = us * 10 + (*p - '0');
	if (digits && *p == '.' && p[1] >= '0' && p[1] <= '9')
		for (p++; *p >= '0' && *p <= '9' && decimals < 3; p++, decimals++)
			ns = ns * 10 + (*p - '0');
	if (!digits || (*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E')
		return (int64_t)llround(strtod(num, NULL) * 1000.0);
	while (decimals++ < 3)
		ns *= 10;
	ns += us * 1000;
	return *num == '-' ? -ns : ns;
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

/*
 * The readers, one per summary class (export.h): e->kind is already the kind whose category
 * the event has (take_step alone chooses it).
 */

/* An operator: cpu_op, or one of PyTorch's scopes (user_annotation with a RecordFunction). */
static bool take_op(const struct tool_fields *f, struct gprof_export_event *e)
{
	e->name = name_of(&f->name);
	e->tid = (uint32_t)u64_of(f->tid);
	e->u.op.external = (uint32_t)u64_of(f->external);
	return true;
}

/* A user_annotation: a step span (ProfilerStep#N), an operator, else an NVTX range. */
static bool take_step(const struct tool_fields *f, struct gprof_export_event *e)
{
	const struct tool_text *n = &f->name;

	if (f->rf_id) {
		e->kind = GPROF_EXPORT_CPU_OP;
		return take_op(f, e);
	}
	if (n->len < 14 || memcmp(n->p, "ProfilerStep#", 13) || n->p[13] < '0' || n->p[13] > '9') {
		e->kind = GPROF_EXPORT_NVTX_RANGE;
		e->name = name_of(n);
		return true;
	}
	e->kind = GPROF_EXPORT_STEP;
	e->u.step = strtoull(n->p + 13, NULL, 10); /* stops at the closing quote */
	return true;
}

/* A CUDA call, or any event counted by name only (an NVTX range of a category of its own). */
static bool take_named(const struct tool_fields *f, struct gprof_export_event *e)
{
	e->name = name_of(&f->name);
	return true;
}

static bool take_kernel(const struct tool_fields *f, struct gprof_export_event *e)
{
	e->name = name_of(&f->name);
	e->device = device_of(f);
	e->u.kernel.external = (uint32_t)u64_of(f->external);
	return true;
}

/* "Memcpy HtoD (Pageable -> Device)": the kind is the second word. */
static bool take_memcpy(const struct tool_fields *f, struct gprof_export_event *e)
{
	const struct tool_text *n = &f->name;
	size_t len = 0;

	while (n->len > 7 + len && n->p[7 + len] != ' ')
		len++;
	e->device = device_of(f);
	e->u.copy.bytes = u64_of(f->bytes);
	e->u.copy.external = (uint32_t)u64_of(f->external);
	for (unsigned k = 0; k < COPY_KINDS && n->len > 7 && !memcmp(n->p, "Memcpy ", 7); k++)
		if (strlen(gprof_trace_copy_kind(k)) == len &&
		    !memcmp(n->p + 7, gprof_trace_copy_kind(k), len))
			e->u.copy.copy_kind = (uint8_t)k;
	return true;
}

static bool take_memset(const struct tool_fields *f, struct gprof_export_event *e)
{
	e->device = device_of(f);
	e->u.copy.bytes = u64_of(f->bytes);
	e->u.copy.external = (uint32_t)u64_of(f->external);
	return true;
}

static bool take_earlier(const struct tool_fields *f, struct gprof_export_event *e)
{
	e->device = device_of(f);
	return true;
}

static bool take_memory(const struct tool_fields *f, struct gprof_export_event *e)
{
	e->device = (uint32_t)u64_of(f->pid);
	e->u.memory.allocated = u64_of(f->allocated);
	if (f->pool_reserved) {
		e->flags |= GPROF_EXPORT_MEMORY_POOLS;
		e->u.memory.reserved = u64_of(f->pool_reserved);
	}
	return true;
}

/*
 * How an event is read back: as the first kind (common/activity.h's rows, in order) whose phase
 * and category it has and that the summaries count, by the reader of that kind's summary
 * class. So a kind of a class that exists needs nothing here (test export_kind_rows).
 */
typedef bool (*take_fn)(const struct tool_fields *f, struct gprof_export_event *e);
static const take_fn takes[GPROF_SUM_NONE + 1] = {
    [GPROF_SUM_KERNEL] = take_kernel, [GPROF_SUM_MEMCPY] = take_memcpy,
    [GPROF_SUM_MEMSET] = take_memset, [GPROF_SUM_EARLIER] = take_earlier,
    [GPROF_SUM_STEP] = take_step,     [GPROF_SUM_CALL] = take_named,
    [GPROF_SUM_RANGE] = take_named,   [GPROF_SUM_MEMORY] = take_memory,
    [GPROF_SUM_OP] = take_op,	      [GPROF_SUM_NONE] = NULL,
};

static const struct {
	char ph;
	const char *cat;
	size_t cat_len;
} kinds[GPROF_EXPORT_KINDS] = {
#define KIND(name, key, emitter, ph, cat, ...) [GPROF_EXPORT_##name] = {ph, cat, sizeof(cat) - 1},
    GPROF_EXPORT_KIND_TABLE(KIND)
#undef KIND
};

/* The kind of f, or GPROF_EXPORT_KINDS (a kind the summaries do not count). */
static unsigned kind_of(const struct tool_fields *f)
{
	unsigned k = 0;

	if (f->ph.len != 1 || f->ph.escaped || f->cat.escaped)
		return GPROF_EXPORT_KINDS;
	while (k < GPROF_EXPORT_KINDS &&
	       (!takes[gprof_export_summary_class(k)] || kinds[k].ph != *f->ph.p ||
		kinds[k].cat_len != f->cat.len || memcmp(kinds[k].cat, f->cat.p, f->cat.len)))
		k++;
	return k;
}

static int take_event(struct walk *w, const struct tool_fields *f)
{
	unsigned k = kind_of(f);
	struct gprof_export_event e = {.kind = (uint16_t)k};
	int64_t dur;

	if (k == GPROF_EXPORT_KINDS || !takes[gprof_export_summary_class(k)](f, &e))
		return 0;
	dur = ns_of(f->dur);
	e.ts_ns = w->base_ns + (uint64_t)ns_of(f->ts);
	e.dur_ns = dur > 0 ? (uint64_t)dur : 0;
	if (w->second ? tool_figures_busy(w->t, &e) : tool_figures_add(w->t, &e))
		return gprof_why(w->why, w->why_len, "out of memory");
	if (!w->second)
		gprof_summary_events(w->t->summary, &e, 1);
	return 0;
}

/* Why the scanner could not read the event at p: jansson says. */
static int bad_event(struct walk *w)
{
	json_t *v = next_value(w);

	if (v)
		gprof_why(w->why, w->why_len, "not a trace: %s at byte %zu",
			  json_is_object(v) ? "an event this tool cannot read"
					    : "an event is not an object",
			  at(w, w->s->p));
	json_decref(v);
	return -1;
}

/* The event at p scanned into f (which points into the window until more text is read). */
static int next_event(struct walk *w, struct tool_fields *f)
{
	struct tool_stream *s = w->s;
	const char *next;
	bool need;
	int rc = skip_ws(w);

	while (rc > 0) {
		next = tool_scan_event(s->p, s->end, f, &need);
		if (next) {
			s->p = (char *)next;
			return 0;
		}
		if (!need)
			break;
		rc = more_for_value(w);
	}
	return rc < 0 ? -1 : bad_event(w); /* not an event, or cut short: jansson says */
}

/* traceEvents: each event scanned and taken. */
static int walk_events(struct walk *w)
{
	char c = next_of(w, "[");
	struct tool_fields f;
	int rc = 0;

	w->base_ns = (uint64_t)json_integer_value(json_object_get(w->head, "baseTimeNanoseconds"));
	if (c && skip_ws(w) > 0 && *w->s->p == ']')
		c = *w->s->p++;
	while (c && c != ']' && !rc) {
		rc = next_event(w, &f);
		if (!rc)
			rc = take_event(w, &f);
		c = rc ? 0 : next_of(w, ",]");
	}
	return c ? 0 : -1;
}

/* The top-level object: members into w->head, traceEvents walked. */
static int walk_top(struct walk *w)
{
	bool events = false;
	json_t *key, *v;
	char c = next_of(w, "{");
	int rc;

	if (c && skip_ws(w) > 0 && *w->s->p == '}')
		c = *w->s->p++;
	while (c && c != '}') {
		key = next_value(w);
		if (key && !json_is_string(key))
			gprof_why(w->why, w->why_len, "not valid JSON: a key that is not a string");
		if (!json_is_string(key) || !next_of(w, ":")) {
			json_decref(key);
			return -1;
		}
		if (!strcmp(json_string_value(key), "traceEvents")) {
			events = true;
			v = walk_events(w) ? NULL : json_null();
		} else {
			v = next_value(w);
		}
		if (v)
			json_object_set_new(w->head, json_string_value(key), v);
		json_decref(key);
		c = v ? next_of(w, ",}") : 0;
	}
	rc = c ? skip_ws(w) : -1;
	if (rc > 0)
		return gprof_why(w->why, w->why_len, "not a trace: text after its end");
	if (!rc && !events)
		return gprof_why(w->why, w->why_len, "not a trace: no traceEvents");
	return rc;
}

/*
 * One reading of the file: the header into head, the events to the summary and the figures
 * (the second: to the busy times only). A file that is not whole gzip says so first, as it
 * would have before its text was read.
 */
static int read_trace(struct tool_trace *t, const struct tool_read *how, json_t *head, bool second,
		      char *why, size_t why_len)
{
	struct tool_stream s;
	struct walk w = {
	    .s = &s, .t = t, .head = head, .second = second, .why = why, .why_len = why_len};
	int rc = tool_stream_open(&s, t->path, how->chunk_bytes);

	if (rc)
		gprof_why(why, why_len, "%s", s.why);
	else if (!head)
		rc = gprof_why(why, why_len, "out of memory");
	else
		rc = walk_top(&w);
	if (rc && !s.failed && s.f && tool_stream_drain(&s))
		gprof_why(why, why_len, "%s", s.why);
	tool_stream_close(&s);
	return rc;
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

int tool_load(const char *path, const struct tool_read *how, struct tool_trace *t, char *why,
	      size_t why_len)
{
	static const struct tool_read defaults;
	json_t *scratch;
	int rc;

	how = how ? how : &defaults;
	*t = (struct tool_trace){.path = path, .head = json_object()};
	t->summary = gprof_summary_new();
	rc = t->summary ? read_trace(t, how, t->head, false, why, why_len)
			: gprof_why(why, why_len, "out of memory");
	if (!rc && tool_figures_steps(t))
		rc = gprof_why(why, why_len, "out of memory");
	if (!rc && t->spans_over && how->busy) {
		scratch = json_object(); /* the header again, as the first reading had it */
		rc = read_trace(t, how, scratch, true, why, why_len);
		json_decref(scratch);
	}
	if (!rc && tool_figures_finish(t))
		rc = gprof_why(why, why_len, "out of memory");
	if (!rc)
		result_of(t);
	return rc;
}

void tool_free(struct tool_trace *t)
{
	json_decref(t->head);
	gprof_summary_free(t->summary);
	tool_figures_free(t);
	*t = (struct tool_trace){0};
}
