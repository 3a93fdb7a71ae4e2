/* Loaders and filters for the ground-truth log and cupti-dump output (see gtlog.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/util/gtlog.h"

/* Calls parse(line) for every line of `path` and appends what it returns to an array. */
static json_t *load_lines(const char *path, json_t *(*parse)(char *line))
{
	FILE *f = fopen(path, "r");
	json_t *all = json_array();
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (!f || !all)
		goto fail;
	while ((n = getline(&line, &cap, f)) > 0) {
		json_t *entry;

		if (line[n - 1] == '\n')
			line[n - 1] = '\0';
		entry = parse(line);
		if (!entry || json_array_append_new(all, entry))
			goto fail;
	}
	free(line);
	fclose(f);
	return all;
fail:
	free(line);
	if (f)
		fclose(f);
	json_decref(all);
	return NULL;
}

static json_t *parse_json(char *line)
{
	json_error_t error;
	json_t *obj = json_loads(line, 0, &error);

	if (!obj)
		fprintf(stderr, "gtlog: %s: %s\n", error.text, line);
	return obj;
}

json_t *gtlog_load(const char *path)
{
	return load_lines(path, parse_json);
}

static json_t *value_of(const char *v)
{
	char *end;
	long long n = strtoll(v, &end, 10);

	return *v && !*end ? json_integer(n) : json_string(v);
}

static json_t *parse_dump(char *line)
{
	json_t *obj = json_object();
	char *save = NULL, *tok = strtok_r(line, " ", &save);

	if (!obj)
		return NULL;
	json_object_set_new(obj, "type", json_string(tok ? tok : ""));
	while ((tok = strtok_r(NULL, " ", &save))) {
		char *eq = strchr(tok, '=');

		if (!eq)
			continue;
		*eq = '\0';
		json_object_set_new(obj, tok, value_of(eq + 1));
	}
	return obj;
}

json_t *gtlog_load_dump(const char *path)
{
	return load_lines(path, parse_dump);
}

static int matches(json_t *entry, json_t *match)
{
	const char *key;
	json_t *want;

	json_object_foreach(match, key, want)
	{
		if (!json_equal(json_object_get(entry, key), want))
			return 0;
	}
	return 1;
}

json_t *gtlog_filter(json_t *log, const char *match)
{
	json_t *m = json_loads(match, 0, NULL), *out = json_array(), *entry;
	size_t i;

	if (!m || !out) {
		json_decref(m);
		json_decref(out);
		return NULL;
	}
	json_array_foreach(log, i, entry)
	{
		if (matches(entry, m))
			json_array_append(out, entry);
	}
	json_decref(m);
	return out;
}

/* Insertion sort: the arrays of a test are small, and it keeps equal keys in order. */
json_t *gtlog_sorted(json_t *log, const char *match, const char *key)
{
	json_t *out = gtlog_filter(log, match);
	size_t n = json_array_size(out);

	for (size_t i = 1; i < n; i++) {
		for (size_t j = i; j > 0; j--) {
			json_t *a = json_array_get(out, j - 1), *b = json_array_get(out, j);

			if (gtlog_int(a, key) <= gtlog_int(b, key))
				break;
			json_incref(a);
			json_array_set(out, j - 1, b);
			json_array_set_new(out, j, a);
		}
	}
	return out;
}

size_t gtlog_count(json_t *log, const char *match)
{
	json_t *hits = gtlog_filter(log, match);
	size_t n = json_array_size(hits);

	json_decref(hits);
	return n;
}

long long gtlog_int(json_t *entry, const char *key)
{
	json_t *v = json_object_get(entry, key);

	return json_is_integer(v) ? json_integer_value(v) : -1;
}

const char *gtlog_str(json_t *entry, const char *key)
{
	const char *s = json_string_value(json_object_get(entry, key));

	return s ? s : "";
}
