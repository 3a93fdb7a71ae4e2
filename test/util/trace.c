/*
 * Loads traces and checks them against shared/TRACE_FORMAT.md: a strict scan of the raw text
 * (its own small JSON parser, independent of the writer and of jansson), then jansson.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/log.h"
#include "trace.h"

int trace_gunzip(const void *gz, size_t len, bool allow_cut, char **out, size_t *out_len, char *why,
		 size_t why_len)
{
	z_stream zs = {.next_in = (Bytef *)gz, .avail_in = (uInt)len};
	size_t cap = len * 4 + 4096, used = 0;
	char *buf = malloc(cap);
	int rc = Z_OK;

	if (!buf || inflateInit2(&zs, 16 + 15) != Z_OK) {
		free(buf);
		return gprof_why(why, why_len, "out of memory");
	}
	while (rc == Z_OK) {
		if (cap - used < 65536) {
			char *p = realloc(buf, cap *= 2);

			if (!p)
				break;
			buf = p;
		}
		zs.next_out = (Bytef *)buf + used;
		zs.avail_out = (uInt)(cap - used - 1);
		rc = inflate(&zs, Z_NO_FLUSH);
		used = (size_t)((char *)zs.next_out - buf);
		if (rc == Z_BUF_ERROR && zs.avail_in == 0 && allow_cut)
			rc = Z_STREAM_END;
	}
	inflateEnd(&zs);
	buf[used] = '\0';
	*out = buf;
	*out_len = used;
	if (rc != Z_STREAM_END)
		return gprof_why(why, why_len, "inflate: %s (zlib %d) after %zu bytes",
				 zs.msg ? zs.msg : "truncated", rc, used);
	if (zs.avail_in && !allow_cut)
		return gprof_why(why, why_len, "%u bytes after the gzip member", zs.avail_in);
	return 0;
}

int trace_parse(const char *text, size_t len, struct trace *t, char *why, size_t why_len)
{
	json_error_t err;

	*t = (struct trace){.raw = malloc(len + 1), .len = len};
	if (!t->raw)
		return gprof_why(why, why_len, "out of memory");
	memcpy(t->raw, text, len);
	t->raw[len] = '\0';
	t->root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
	if (!t->root)
		return gprof_why(why, why_len, "jansson: %s at line %d column %d", err.text,
				 err.line, err.column);
	t->events = json_object_get(t->root, "traceEvents");
	return 0;
}

int trace_load(const char *path, struct trace *t, char *why, size_t why_len)
{
	FILE *f = fopen(path, "rb");
	size_t n = strlen(path), len = 0, cap = 1 << 16, text_len;
	char *data = malloc(cap), *text;
	int rc;

	*t = (struct trace){0};
	if (!f || !data) {
		if (f)
			fclose(f);
		free(data);
		return gprof_why(why, why_len, "cannot read %s: %s", path, strerror(errno));
	}
	for (size_t got; (got = fread(data + len, 1, cap - len, f)) > 0;) {
		len += got;
		if (len == cap)
			data = realloc(data, cap *= 2);
	}
	fclose(f);
	if (n > 3 && !strcmp(path + n - 3, ".gz")) {
		rc = trace_gunzip(data, len, false, &text, &text_len, why, why_len);
		if (rc == 0)
			rc = trace_parse(text, text_len, t, why, why_len);
		free(text);
	} else {
		rc = trace_parse(data, len, t, why, why_len);
	}
	free(data);
	return rc;
}

void trace_free(struct trace *t)
{
	free(t->raw);
	json_decref(t->root);
	*t = (struct trace){0};
}

const char *trace_str(const json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));

	return s ? s : "";
}

/* The raw scan: a recursive-descent JSON reader that enforces the format's text rules. */
struct scan {
	const char *s, *p, *end;
	char *why;
	size_t why_len;
	int err;
	char top[16][64]; /* the top-level keys in order */
	int n_top;
	bool rank_seen;
};

static int scan_fail(struct scan *sc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int scan_fail(struct scan *sc, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (sc->err)
		return -1;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(sc->why, sc->why_len, "%s at byte %zu", msg, (size_t)(sc->p - sc->s));
	sc->err = -1;
	return -1;
}

static void skip_ws(struct scan *sc)
{
	while (sc->p < sc->end && strchr(" \n\r\t", *sc->p) && *sc->p)
		sc->p++;
}

/* A string; its content (escapes kept) is copied to out when out is not NULL. */
static int scan_string(struct scan *sc, char *out, size_t out_len)
{
	size_t n = 0;

	if (*sc->p != '"')
		return scan_fail(sc, "expected a string");
	for (sc->p++; sc->p < sc->end && *sc->p != '"'; sc->p++) {
		unsigned char c = (unsigned char)*sc->p;

		if (c < 0x20 || c == 0x7f)
			return scan_fail(sc, "raw control byte 0x%02x in a string", c);
		if (c == '\\' && (sc->p + 1 >= sc->end || !sc->p[1] || !strchr("\"\\nt", sc->p[1])))
			return scan_fail(sc, "escape \\%c (only \\\" \\\\ \\n \\t are written)",
					 sc->p + 1 < sc->end ? sc->p[1] : '?');
		if (c == '\\')
			sc->p++;
		if (out && n + 2 < out_len) {
			if (c == '\\')
				out[n++] = '\\';
			out[n++] = *sc->p;
		}
	}
	if (sc->p >= sc->end)
		return scan_fail(sc, "unterminated string");
	sc->p++;
	if (out)
		out[n < out_len ? n : out_len - 1] = '\0';
	return 0;
}

/* A number; time keys need exactly three decimals and no exponent. */
static int scan_number(struct scan *sc, bool is_time)
{
	const char *start = sc->p;
	size_t decimals = 0;
	bool dot = false;

	if (*sc->p == '-')
		sc->p++;
	if (sc->p >= sc->end || !isdigit((unsigned char)*sc->p))
		return scan_fail(sc, "bad value");
	while (sc->p < sc->end && (isdigit((unsigned char)*sc->p) || strchr(".eE+-", *sc->p))) {
		decimals += dot && isdigit((unsigned char)*sc->p);
		dot |= *sc->p == '.';
		if (is_time && strchr("eE+-", *sc->p))
			break;
		sc->p++;
	}
	if (is_time && (!dot || decimals != 3))
		return scan_fail(sc, "time %.*s: not µs with exactly three decimals",
				 (int)(sc->p - start), start);
	return 0;
}

static int scan_value(struct scan *sc, int depth, const char *key);

static int scan_member(struct scan *sc, int depth)
{
	char key[64];
	const char *key_at = sc->p;

	if (scan_string(sc, key, sizeof(key)))
		return -1;
	if (depth == 1 && sc->n_top < 16)
		snprintf(sc->top[sc->n_top++], sizeof(sc->top[0]), "%s", key);
	if (!strcmp(key, "rank") && depth == 2) {
		/* HTA reads the rank with "rank":\s+(\d+) over the raw text. */
		if (strncmp(key_at, "\"rank\": ", 8) || !isdigit((unsigned char)key_at[8]))
			return scan_fail(sc, "rank not written as \"rank\": N");
		sc->rank_seen = true;
	}
	skip_ws(sc);
	if (sc->p >= sc->end || *sc->p != ':')
		return scan_fail(sc, "expected ':'");
	sc->p++;
	skip_ws(sc);
	return scan_value(sc, depth, key);
}

/* An object's members or an array's elements up to `close`. */
static int scan_items(struct scan *sc, int depth, char close)
{
	sc->p++;
	skip_ws(sc);
	if (sc->p < sc->end && *sc->p == close) {
		sc->p++;
		return 0;
	}
	for (;;) {
		int rc =
		    close == '}' ? scan_member(sc, depth + 1) : scan_value(sc, depth + 1, NULL);

		if (rc)
			return -1;
		skip_ws(sc);
		if (sc->p < sc->end && *sc->p == close) {
			sc->p++;
			return 0;
		}
		if (sc->p >= sc->end || *sc->p != ',')
			return scan_fail(sc, "expected ',' or '%c'", close);
		sc->p++;
		skip_ws(sc);
	}
}

static int scan_value(struct scan *sc, int depth, const char *key)
{
	static const char *const words[] = {"true", "false", "null"};
	bool is_time = key && (!strcmp(key, "ts") || !strcmp(key, "dur"));

	if (sc->p >= sc->end)
		return scan_fail(sc, "unexpected end");
	if (*sc->p == '{' || *sc->p == '[')
		return scan_items(sc, depth, *sc->p == '{' ? '}' : ']');
	if (*sc->p == '"')
		return is_time ? scan_fail(sc, "time as a string") : scan_string(sc, NULL, 0);
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		size_t n = strlen(words[i]);

		if ((size_t)(sc->end - sc->p) >= n && !strncmp(sc->p, words[i], n)) {
			sc->p += n;
			return is_time ? scan_fail(sc, "time is %s", words[i]) : 0;
		}
	}
	return scan_number(sc, is_time);
}

static const char *const top_keys[] = {
    "schemaVersion",	    "deviceProperties",	   "distributedInfo", "cupti_version",
    "cuda_runtime_version", "cuda_driver_version", "gprof",	      "displayTimeUnit",
    "baseTimeNanoseconds",  "traceEvents",	   "traceName",
};

static int check_raw(const struct trace *t, char *why, size_t why_len)
{
	struct scan sc = {
	    .s = t->raw, .p = t->raw, .end = t->raw + t->len, .why = why, .why_len = why_len};
	size_t n_keys = sizeof(top_keys) / sizeof(top_keys[0]);

	if (memchr(t->raw, 0x7f, t->len))
		return gprof_why(why, why_len, "raw DEL byte");
	skip_ws(&sc);
	if (sc.p >= sc.end || *sc.p != '{')
		return gprof_why(why, why_len, "the trace is not an object");
	if (scan_items(&sc, 0, '}'))
		return -1;
	skip_ws(&sc);
	if (sc.p != sc.end)
		return scan_fail(&sc, "bytes after the top-level object");
	for (size_t i = 0; i < n_keys; i++)
		if ((int)i >= sc.n_top || strcmp(sc.top[i], top_keys[i]))
			return gprof_why(why, why_len,
					 "top-level key %zu is \"%s\", expected \"%s\"", i,
					 (int)i < sc.n_top ? sc.top[i] : "(none)", top_keys[i]);
	if (sc.n_top != (int)n_keys)
		return gprof_why(why, why_len, "extra top-level key \"%s\"", sc.top[n_keys]);
	if (!sc.rank_seen)
		return gprof_why(why, why_len, "no \"rank\" in distributedInfo");
	return 0;
}

/*
 * What the X events of each category carry in args; only GPU ones may have "stream". Host
 * events sit on a thread's track (TensorBoard's plugin builds its operator tree of them);
 * gpu_earlier and gpu_user_annotation sit on a stream's, without the GPU events' args.
 */
static const struct {
	const char *cat;
	bool gpu, host;
	const char *args[13];
} cat_rules[] = {
    {"kernel",
     true,
     false,
     {"queued", "device", "context", "stream", "correlation", "registers per thread",
      "shared memory", "blocks per SM", "warps per SM", "grid", "block",
      "est. achieved occupancy %"}},
    {"gpu_memcpy",
     true,
     false,
     {"device", "context", "stream", "correlation", "bytes", "memory bandwidth (GB/s)"}},
    {"gpu_memset",
     true,
     false,
     {"device", "context", "stream", "correlation", "bytes", "memory bandwidth (GB/s)"}},
    {"gpu_earlier", false, false, {"device", "launched"}},
    {"cuda_runtime", false, true, {"correlation", "cbid"}},
    {"cuda_driver", false, true, {"correlation", "cbid"}},
    {"user_annotation", false, true, {NULL}},
    {"gpu_user_annotation", false, false, {NULL}},
    {"cpu_op", false, true, {"External id"}},
    {"python_function", false, true, {"Python id", "Python parent id", "Python module id"}},
    {"cuda_sync", false, false, {"cuda_sync_kind", "stream", "device", "context", "correlation"}},
    {"overhead", false, true, {NULL}},
};

static const char *const meta_names[] = {"process_name", "process_labels", "process_sort_index",
					 "thread_name", "thread_sort_index"};

/* An X event's interval on its track, and for GPU events on its stream. */
struct span {
	char track[80];
	long long start, end;
	double fstart, fend; /* ts and ts + dur in µs as doubles, as viewers add them */
	bool gpu, host;
	size_t idx;
};

struct flow {
	long long id, ts;
	size_t idx;
	char ph;
};

struct check {
	char *why;
	size_t why_len;
	struct span *spans, *streams;
	size_t n_spans, n_streams;
	struct flow *flows;
	size_t n_flows;
};

static long long ns_of(const json_t *v)
{
	double us = json_number_value(v);

	/* rounded by hand: the runner links without libm */
	return (long long)(us * 1000.0 + (us < 0 ? -0.5 : 0.5));
}

/* pid or tid as text: numbers and strings both occur (Kineto writes "" sometimes). */
static void ident(const json_t *v, char *out, size_t n)
{
	if (json_is_integer(v))
		snprintf(out, n, "%lld", (long long)json_integer_value(v));
	else
		snprintf(out, n, "%s", json_is_string(v) ? json_string_value(v) : "?");
}

static bool has_ids(const json_t *ev)
{
	const json_t *pid = json_object_get(ev, "pid"), *tid = json_object_get(ev, "tid");

	return (json_is_integer(pid) || json_is_string(pid)) &&
	       (json_is_integer(tid) || json_is_string(tid));
}

static int check_args(struct check *c, size_t i, const json_t *ev, const char *cat, bool *gpu,
		      bool *host)
{
	const json_t *args = json_object_get(ev, "args");

	for (size_t r = 0; r < sizeof(cat_rules) / sizeof(cat_rules[0]); r++) {
		if (strcmp(cat_rules[r].cat, cat))
			continue;
		*gpu = cat_rules[r].gpu;
		*host = cat_rules[r].host;
		/* A host's wait names the stream it waits for, on a lane of its own. */
		if (!*gpu && strcmp(cat, "cuda_sync") && json_object_get(args, "stream"))
			return gprof_why(c->why, c->why_len,
					 "event %zu (%s): \"stream\" on a host event", i, cat);
		for (const char *const *a = cat_rules[r].args; *a; a++)
			if (!json_object_get(args, *a))
				return gprof_why(c->why, c->why_len,
						 "event %zu (%s): no args.\"%s\"", i, cat, *a);
		return 0;
	}
	return gprof_why(c->why, c->why_len, "event %zu: unknown cat \"%s\"", i, cat);
}

static int check_step_name(struct check *c, size_t i, const char *name)
{
	const char *d;

	if (strncmp(name, "ProfilerStep", 12))
		return 0;
	d = name + 12; /* then '#' and digits, nothing else */
	if (*d != '#' || !d[1] || strspn(d + 1, "0123456789") != strlen(d + 1))
		return gprof_why(c->why, c->why_len, "event %zu: step name \"%s\"", i, name);
	return 0;
}

static int check_x(struct check *c, size_t i, const json_t *ev)
{
	const json_t *ts = json_object_get(ev, "ts"), *dur = json_object_get(ev, "dur");
	const json_t *cat = json_object_get(ev, "cat"), *args = json_object_get(ev, "args");
	char pid[32], tid[32];
	struct span *s;
	bool gpu = false, host = false;

	if (!json_is_string(cat) || !json_is_number(ts) || !json_is_number(dur) || !has_ids(ev))
		return gprof_why(c->why, c->why_len,
				 "event %zu: X without cat, ts, dur, pid or tid", i);
	if (json_number_value(dur) < 0)
		return gprof_why(c->why, c->why_len, "event %zu: negative dur", i);
	if (check_args(c, i, ev, json_string_value(cat), &gpu, &host) ||
	    check_step_name(c, i, trace_str(ev, "name")))
		return -1;
	ident(json_object_get(ev, "pid"), pid, sizeof(pid));
	ident(json_object_get(ev, "tid"), tid, sizeof(tid));
	s = &c->spans[c->n_spans++];
	snprintf(s->track, sizeof(s->track), "%s/%s", pid, tid);
	s->start = ns_of(ts);
	s->end = s->start + ns_of(dur);
	s->fstart = json_number_value(ts);
	s->fend = json_number_value(ts) + json_number_value(dur);
	s->gpu = gpu;
	s->host = host;
	s->idx = i;
	if (gpu) {
		c->streams[c->n_streams] = *s;
		snprintf(c->streams[c->n_streams++].track, sizeof(s->track), "%s/stream %lld", pid,
			 (long long)json_integer_value(json_object_get(args, "stream")));
	}
	return 0;
}

static int check_flow(struct check *c, size_t i, const json_t *ev, char ph)
{
	const json_t *id = json_object_get(ev, "id"), *ts = json_object_get(ev, "ts");
	/* launch -> GPU links, and forward -> backward ones (ids of their own) */
	bool fwdbwd = !strcmp(trace_str(ev, "cat"), "fwdbwd");

	if (!json_is_integer(id) || !json_is_number(ts) || !has_ids(ev) ||
	    (strcmp(trace_str(ev, "cat"), "ac2g") && !fwdbwd))
		return gprof_why(c->why, c->why_len,
				 "event %zu: flow without id, ts, pid, tid or cat", i);
	if (ph == 'f' && strcmp(trace_str(ev, "bp"), "e"))
		return gprof_why(c->why, c->why_len, "event %zu: flow end without \"bp\": \"e\"",
				 i);
	c->flows[c->n_flows++] =
	    (struct flow){json_integer_value(id) * 2 + fwdbwd, ns_of(ts), i, ph};
	return 0;
}

static int check_other(struct check *c, size_t i, const json_t *ev, char ph)
{
	const json_t *args = json_object_get(ev, "args");
	const char *name = trace_str(ev, "name");

	if (ph != 'M' && (!json_is_number(json_object_get(ev, "ts")) ||
			  !json_is_integer(json_object_get(ev, "pid"))))
		return gprof_why(c->why, c->why_len, "event %zu (%c): no ts or pid", i, ph);
	if (ph == 'i' && (!has_ids(ev) || !json_is_string(json_object_get(ev, "cat"))))
		return gprof_why(c->why, c->why_len, "event %zu: instant without cat, pid or tid",
				 i);
	if (ph == 'C' && !strcmp(trace_str(ev, "cat"), "gpu_memory") &&
	    !json_is_integer(json_object_get(args, "allocated")))
		return gprof_why(c->why, c->why_len, "event %zu: gpu_memory without allocated", i);
	if (ph != 'M')
		return 0;
	for (size_t k = 0; k < sizeof(meta_names) / sizeof(meta_names[0]); k++)
		if (!strcmp(name, meta_names[k]))
			return json_is_object(args) && has_ids(ev)
				   ? 0
				   : gprof_why(c->why, c->why_len, "event %zu: bad %s", i, name);
	return gprof_why(c->why, c->why_len, "event %zu: unknown metadata \"%s\"", i, name);
}

static int check_event(struct check *c, size_t i, const json_t *ev)
{
	const char *ph = trace_str(ev, "ph");

	if (!json_is_object(ev) || !json_is_string(json_object_get(ev, "name")))
		return gprof_why(c->why, c->why_len, "event %zu: not an object with a name", i);
	if (strlen(ph) != 1 || !strchr("XisfCM", ph[0]))
		return gprof_why(c->why, c->why_len, "event %zu: ph \"%s\"", i, ph);
	if (ph[0] == 'X')
		return check_x(c, i, ev);
	if (ph[0] == 's' || ph[0] == 'f')
		return check_flow(c, i, ev, ph[0]);
	return check_other(c, i, ev, ph[0]);
}

static int span_order(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	int k = strcmp(x->track, y->track);

	if (k)
		return k;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end;
}

/* On one track every event nests in, or stays clear of, the ones that started before it. */
static int check_nesting(struct check *c)
{
	size_t *stack = malloc((c->n_spans + 1) * sizeof(*stack)), depth = 0;
	int rc = 0;

	qsort(c->spans, c->n_spans, sizeof(*c->spans), span_order);
	for (size_t i = 0; i < c->n_spans && !rc; i++) {
		const struct span *s = &c->spans[i];

		if (i && strcmp(s->track, c->spans[i - 1].track))
			depth = 0;
		while (!rc && depth && c->spans[stack[depth - 1]].end <= s->start) {
			/* TensorBoard's plugin reads a host event that ends where the next
			 * begins, in doubles, as overlapping ("ranges on the same thread should
			 * not intersect"), and drops it */
			if (s->host && c->spans[stack[depth - 1]].fend > s->fstart)
				rc = gprof_why(c->why, c->why_len,
					       "events %zu and %zu overlap on track %s as ts + dur "
					       "in doubles (%.17g > %.17g)",
					       c->spans[stack[depth - 1]].idx, s->idx, s->track,
					       c->spans[stack[depth - 1]].fend, s->fstart);
			depth--;
		}
		if (!rc && depth && s->end > c->spans[stack[depth - 1]].end)
			rc = gprof_why(c->why, c->why_len, "events %zu and %zu overlap on track %s",
				       c->spans[stack[depth - 1]].idx, s->idx, s->track);
		stack[depth++] = i;
	}
	free(stack);
	return rc;
}

static int check_streams(struct check *c)
{
	qsort(c->streams, c->n_streams, sizeof(*c->streams), span_order);
	for (size_t i = 1; i < c->n_streams; i++) {
		const struct span *a = &c->streams[i - 1], *b = &c->streams[i];

		if (!strcmp(a->track, b->track) && b->start < a->end)
			return gprof_why(c->why, c->why_len, "GPU events %zu and %zu overlap on %s",
					 a->idx, b->idx, b->track);
	}
	return 0;
}

static int flow_order(const void *a, const void *b)
{
	const struct flow *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return (x->ph == 'f') - (y->ph == 'f'); /* s first */
}

/* Each id: one s, then one f that does not start before it. */
static int check_flows(struct check *c)
{
	qsort(c->flows, c->n_flows, sizeof(*c->flows), flow_order);
	for (size_t i = 0; i < c->n_flows; i += 2) {
		const struct flow *s = &c->flows[i], *f = i + 1 < c->n_flows ? s + 1 : NULL;

		if (!f || f->id != s->id || s->ph != 's' || f->ph != 'f')
			return gprof_why(c->why, c->why_len,
					 "flow id %lld (event %zu) is not one s and one f", s->id,
					 s->idx);
		if (i + 2 < c->n_flows && c->flows[i + 2].id == s->id)
			return gprof_why(c->why, c->why_len, "flow id %lld used more than once",
					 s->id);
		if (f->ts < s->ts)
			return gprof_why(c->why, c->why_len, "flow %lld ends before it starts",
					 s->id);
	}
	return 0;
}

static int check_header(const struct trace *t, char *why, size_t why_len)
{
	const json_t *r = t->root, *di = json_object_get(r, "distributedInfo");
	const json_t *g = json_object_get(r, "gprof");
	const char *name = trace_str(r, "traceName");
	size_t n = strlen(name), suffix = strlen(".pt.trace.json.gz");
	json_int_t rank = json_integer_value(json_object_get(di, "rank"));
	json_int_t world = json_integer_value(json_object_get(di, "world_size"));

	if (json_integer_value(json_object_get(r, "schemaVersion")) != 1 ||
	    !json_is_array(json_object_get(r, "deviceProperties")) ||
	    strcmp(trace_str(r, "displayTimeUnit"), "ms") ||
	    json_integer_value(json_object_get(r, "baseTimeNanoseconds")) <= 0)
		return gprof_why(why, why_len,
				 "bad schemaVersion, deviceProperties, displayTimeUnit "
				 "or baseTimeNanoseconds");
	if (rank < 0 || world < 1 || rank >= world)
		return gprof_why(why, why_len, "distributedInfo rank %lld of %lld", (long long)rank,
				 (long long)world);
	if (!json_is_string(json_object_get(g, "version")) ||
	    !json_is_integer(json_object_get(g, "window")) ||
	    !json_is_object(json_object_get(g, "records")) ||
	    !json_is_object(json_object_get(g, "dropped")) ||
	    !json_is_array(json_object_get(g, "warnings")))
		return gprof_why(why, why_len, "gprof metadata incomplete");
	if (n <= suffix || strcmp(name + n - suffix, ".pt.trace.json.gz") || strchr(name, '/'))
		return gprof_why(why, why_len, "traceName \"%s\"", name);
	if (!json_is_array(t->events))
		return gprof_why(why, why_len, "traceEvents is not an array");
	return 0;
}

int trace_check(const struct trace *t, char *why, size_t why_len)
{
	size_t n = json_array_size(t->events);
	struct check c = {.why = why, .why_len = why_len};
	int rc;

	if (!t->raw || check_raw(t, why, why_len))
		return t->raw ? -1 : gprof_why(why, why_len, "no trace");
	if (!t->root || check_header(t, why, why_len))
		return t->root ? -1 : gprof_why(why, why_len, "not parsed by jansson");
	c.spans = calloc(n + 1, sizeof(*c.spans));
	c.streams = calloc(n + 1, sizeof(*c.streams));
	c.flows = calloc(n + 1, sizeof(*c.flows));
	rc = c.spans && c.streams && c.flows ? 0 : gprof_why(why, why_len, "out of memory");
	for (size_t i = 0; i < n && !rc; i++)
		rc = check_event(&c, i, json_array_get(t->events, i));
	if (!rc)
		rc = check_nesting(&c);
	if (!rc)
		rc = check_streams(&c);
	if (!rc)
		rc = check_flows(&c);
	free(c.spans);
	free(c.streams);
	free(c.flows);
	return rc;
}
