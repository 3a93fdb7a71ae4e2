/*
 * One trace event's fields, found in the text without building a tree: jansson spends tens of
 * microseconds on an event with its arguments, this well under one. Values the summary does
 * not use are skipped by their quotes and brackets, not checked: a text this accepts may not
 * be JSON, but all JSON is accepted (load.c asks jansson why when this fails).
 */
#include <stddef.h>
#include <string.h>

#include "common/compiler.h"
#include "scripts/summary/tool.h"

/* The scan of one value: where the text ends, where the scan stopped when it failed. */
struct scan {
	const char *end;
	const char *stop; /* end itself: the text ended first, more of it may complete the value */
	struct tool_fields *f;
	bool escaped; /* the last string skipped holds a backslash */
};

#define FIELD(k, member, is_text, args)                                                         \
	{                                                                                       \
		.key = k, .len = sizeof(k) - 1, .offset = offsetof(struct tool_fields, member), \
		.text = is_text, .in_args = args                                                \
	}

/* The fields scanned, top level or in "args". */
static const struct {
	const char *key;
	size_t len, offset;
	bool text, in_args;
} fields[] = {
    FIELD("ph", ph, true, false),
    FIELD("cat", cat, true, false),
    FIELD("name", name, true, false),
    FIELD("ts", ts, false, false),
    FIELD("dur", dur, false, false),
    FIELD("pid", pid, false, false),
    FIELD("device", device, false, true),
    FIELD("bytes", bytes, false, true),
    FIELD("allocated", allocated, false, true),
    FIELD("pool reserved", pool_reserved, false, true),
    FIELD("tid", tid, false, false),
    FIELD("External id", external, false, true),
    FIELD("Record function id", rf_id, false, true),
};

/* NULL, having noted where the scan stopped. */
static const char *stop(struct scan *s, const char *p)
{
	s->stop = p;
	return NULL;
}

static const char *ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	return p;
}

/* Past the string at p (on its opening quote); s->escaped says whether it holds a backslash. */
static const char *skip_string(struct scan *s, const char *p)
{
	s->escaped = false;
	for (p++; p < s->end; p++) {
		if (*p == '\\') {
			s->escaped = true;
			p++;
		} else if (*p == '"') {
			return p + 1;
		}
	}
	return stop(s, s->end);
}

/* Past the object or array at p, by its brackets outside strings. */
static const char *skip_nested(struct scan *s, const char *p)
{
	int depth = 0;

	while (p && p < s->end) {
		if (*p == '"') {
			p = skip_string(s, p);
			continue;
		}
		if (*p == '{' || *p == '[')
			depth++;
		else if ((*p == '}' || *p == ']') && --depth == 0)
			return p + 1;
		p++;
	}
	return p ? stop(s, s->end) : NULL;
}

/* The characters of a number, true, false or null (and of some words that are none). */
static const bool scalar[256] = {
    ['0' ... '9'] = true, ['a' ... 'z'] = true, ['-'] = true,
    ['+'] = true,	  ['.'] = true,		['E'] = true,
};

/* Past the value at p (a string, object, array, number, true, false or null). */
static const char *skip_value(struct scan *s, const char *p)
{
	const char *v = p;

	if (p < s->end && *p == '"')
		return skip_string(s, p);
	if (p < s->end && (*p == '{' || *p == '['))
		return skip_nested(s, p);
	while (p < s->end && scalar[(unsigned char)*p])
		p++;
	if (p == s->end) /* a number may go on */
		return stop(s, p);
	return p > v ? p : stop(s, p);
}

static const char *scan_object(struct scan *s, const char *p, bool in_args);

/* Notes the value v..after when key is a field. */
static void note(const struct scan *s, const char *key, size_t len, const char *v,
		 const char *after, bool in_args)
{
	for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
		if (fields[i].len != len || fields[i].key[0] != key[0] ||
		    fields[i].in_args != in_args || memcmp(fields[i].key, key, len))
			continue;
		if (!fields[i].text)
			*(const char **)((char *)s->f + fields[i].offset) = v;
		else if (*v == '"')
			*(struct tool_text *)((char *)s->f + fields[i].offset) = (struct tool_text){
			    .p = v + 1, .len = (size_t)(after - v - 2), .escaped = s->escaped};
		return;
	}
}

/* The value of key at v: noted when it is a field, scanned when it is "args"; past it. */
static const char *take(struct scan *s, const char *key, size_t len, const char *v, bool in_args)
{
	const char *after;

	if (!in_args && len == 4 && !memcmp(key, "args", 4) && v < s->end && *v == '{')
		return scan_object(s, v, true);
	after = skip_value(s, v);
	if (after)
		note(s, key, len, v, after, in_args);
	return after;
}

static const char *scan_object(struct scan *s, const char *p, bool in_args)
{
	const char *key, *v, *end = s->end;

	p = ws(p, end);
	if (p == end || *p != '{')
		return stop(s, p);
	p = ws(p + 1, end);
	if (p < end && *p == '}')
		return p + 1;
	while (p < end && *p == '"' && (v = skip_string(s, p))) {
		key = p + 1;
		p = ws(v, end);
		if (p == end || *p != ':')
			return stop(s, p);
		p = take(s, key, (size_t)(v - key - 1), ws(p + 1, end), in_args);
		if (!p)
			return NULL;
		p = ws(p, end);
		if (p < end && *p == '}')
			return p + 1;
		if (p == end || *p != ',')
			return stop(s, p);
		p = ws(p + 1, end);
	}
	if (p < end && *p == '"')
		return NULL; /* skip_string stopped */
	return stop(s, p);
}

const char *tool_scan_event(const char *p, const char *end, struct tool_fields *f, bool *more)
{
	struct scan s = {.end = end, .f = f};
	const char *after;

	memset(f, 0, sizeof(*f));
	after = scan_object(&s, p, false);
	*more = !after && s.stop == end;
	return after;
}

const char *tool_scan_value(const char *p, const char *end, bool *more)
{
	struct tool_fields f;
	struct scan s = {.end = end, .f = &f};
	const char *after = skip_value(&s, p);

	*more = !after && s.stop == end;
	return after;
}
