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

/* The fields scanned, top level or in "args". */
static const struct {
	const char *key;
	size_t offset;
	bool text, in_args;
} fields[] = {
    {.key = "ph", .offset = offsetof(struct tool_fields, ph), .text = true},
    {.key = "cat", .offset = offsetof(struct tool_fields, cat), .text = true},
    {.key = "name", .offset = offsetof(struct tool_fields, name), .text = true},
    {.key = "ts", .offset = offsetof(struct tool_fields, ts)},
    {.key = "dur", .offset = offsetof(struct tool_fields, dur)},
    {.key = "pid", .offset = offsetof(struct tool_fields, pid)},
    {.key = "device", .offset = offsetof(struct tool_fields, device), .in_args = true},
    {.key = "bytes", .offset = offsetof(struct tool_fields, bytes), .in_args = true},
    {.key = "allocated", .offset = offsetof(struct tool_fields, allocated), .in_args = true},
};

static const char *ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	return p;
}

/* Past the string at p (on its opening quote), or NULL. */
static const char *skip_string(const char *p, const char *end)
{
	for (p++; p < end; p++) {
		if (*p == '\\')
			p++;
		else if (*p == '"')
			return p + 1;
	}
	return NULL;
}

/* Past the object or array at p, by its brackets outside strings, or NULL. */
static const char *skip_nested(const char *p, const char *end)
{
	int depth = 0;

	while (p && p < end) {
		if (*p == '"') {
			p = skip_string(p, end);
			continue;
		}
		if (*p == '{' || *p == '[')
			depth++;
		else if ((*p == '}' || *p == ']') && --depth == 0)
			return p + 1;
		p++;
	}
	return NULL;
}

/* A character of a number, true, false or null (and of some words that are none). */
static bool is_scalar(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' || c == '+' ||
	       c == '.' || c == 'E';
}

/* Past the value at p (a string, object, array, number, true, false or null), or NULL. */
static const char *skip_value(const char *p, const char *end)
{
	const char *v = p;

	if (p < end && *p == '"')
		return skip_string(p, end);
	if (p < end && (*p == '{' || *p == '['))
		return skip_nested(p, end);
	while (p < end && is_scalar(*p))
		p++;
	return p > v && p < end ? p : NULL;
}

static const char *scan_object(const char *p, const char *end, struct tool_fields *f, bool in_args);

/* The value of key at v: noted when it is a field, scanned when it is "args"; past it. */
static const char *take(const char *key, size_t len, const char *v, const char *end,
			struct tool_fields *f, bool in_args)
{
	const char *after;

	if (!in_args && len == 4 && !memcmp(key, "args", 4) && v < end && *v == '{')
		return scan_object(v, end, f, true);
	after = skip_value(v, end);
	for (size_t i = 0; after && i < ARRAY_SIZE(fields); i++) {
		if (fields[i].in_args != in_args || strncmp(fields[i].key, key, len) ||
		    fields[i].key[len])
			continue;
		if (!fields[i].text)
			*(const char **)((char *)f + fields[i].offset) = v;
		else if (*v == '"')
			*(struct tool_text *)((char *)f + fields[i].offset) = (struct tool_text){
			    .p = v + 1,
			    .len = (size_t)(after - v - 2),
			    .escaped = memchr(v + 1, '\\', (size_t)(after - v - 2)) != NULL};
	}
	return after;
}

static const char *scan_object(const char *p, const char *end, struct tool_fields *f, bool in_args)
{
	const char *key, *v;

	p = ws(p, end);
	if (p == end || *p != '{')
		return NULL;
	p = ws(p + 1, end);
	if (p < end && *p == '}')
		return p + 1;
	while (p < end && *p == '"' && (v = skip_string(p, end))) {
		key = p + 1;
		p = ws(v, end);
		if (p == end || *p != ':')
			return NULL;
		p = take(key, (size_t)(v - key - 1), ws(p + 1, end), end, f, in_args);
		p = p ? ws(p, end) : end;
		if (p < end && *p == '}')
			return p + 1;
		if (p == end || *p != ',')
			return NULL;
		p = ws(p + 1, end);
	}
	return NULL;
}

const char *tool_scan_event(const char *p, const char *end, struct tool_fields *f)
{
	memset(f, 0, sizeof(*f));
	return scan_object(p, end, f, false);
}
