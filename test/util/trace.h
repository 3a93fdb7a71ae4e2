/*
 * Test helpers for trace files: load one (gunzip, keep the raw text, parse with jansson) and
 * check it against shared/TRACE_FORMAT.md. Every end-to-end test runs trace_check() on every
 * trace it gets.
 */
#ifndef GPROF_TEST_TRACE_H
#define GPROF_TEST_TRACE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct trace {
	char *raw; /* the decompressed text, NUL-terminated */
	size_t len;
	json_t *root;
	json_t *events; /* root's "traceEvents" (borrowed) */
};

/*
 * Inflates one gzip member. allow_cut: input that ends before the member does is fine (a file
 * cut short); otherwise it is an error, and so is anything after the member. Returns 0, or -1
 * with the reason in why.
 */
int trace_gunzip(const void *gz, size_t len, bool allow_cut, char **out, size_t *out_len, char *why,
		 size_t why_len);

/* Parses text (copied) with jansson, strictly (duplicate keys rejected). */
int trace_parse(const char *text, size_t len, struct trace *t, char *why, size_t why_len);

/* Reads a file (gunzipped when its name ends in .gz) and parses it. */
int trace_load(const char *path, struct trace *t, char *why, size_t why_len);

/*
 * The format contract, on the raw text and on the parsed trace: header keys in order with
 * `"rank": N`; ts/dur with exactly three decimals, no negative dur; no raw control byte, no
 * escape but \" \\ \n \t; every X event has name, cat, ts, dur, pid, tid; the arguments each
 * category needs; `stream` only on GPU events; step names ProfilerStep#N; events of one track
 * nest or don't overlap; GPU events of one stream never overlap; flows pair s/f by id with f
 * not before s. Returns 0, or -1 with the first problem in why.
 */
int trace_check(const struct trace *t, char *why, size_t why_len);

void trace_free(struct trace *t);

/* The event's string member, or "" (never NULL). */
const char *trace_str(const json_t *obj, const char *key);

#endif
