/*
 * gprof-summary: reads libgprof traces back and prints what libgprof printed at the end of the
 * window (export/summary.c, the same code), compares two traces, or draws one as a web page.
 */
#ifndef GPROF_SUMMARY_TOOL_H
#define GPROF_SUMMARY_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "export/export.h"

#define TOOL_TOP_KERNELS 10 /* as many as the library's summary lists */

struct tool_step {
	uint64_t number;
	uint64_t ts_ns, dur_ns; /* CLOCK_REALTIME ns, as the library had them */
};

struct tool_span {
	uint64_t begin, end; /* ns, end exclusive */
};

struct tool_device {
	uint32_t id;
	struct tool_span *spans; /* every GPU interval, then (tool_load) their union, sorted */
	size_t n_spans, cap;
	uint64_t busy_ns;	/* union within the steps' span (all of it without steps) */
	uint64_t *step_busy_ns; /* per step, parallel to tool_trace.steps */
};

struct tool_kernel {
	const char *name; /* interned: equal names of two traces have equal pointers */
	uint64_t calls, ns;
};

/* One trace, read back. */
struct tool_trace {
	const char *path;
	json_t *head; /* every top-level member but traceEvents */
	struct gprof_export_summary *summary;
	struct gprof_export_result result; /* what the library passed to the summary */
	struct tool_step *steps;	   /* in time order */
	size_t n_steps, steps_cap;
	uint64_t step_begin, step_end, step_ns; /* span of the steps, sum of their durations */
	struct tool_device dev[GPROF_EXPORT_MAX_DEVICES];
	unsigned n_dev;
	struct tool_kernel *kernels; /* by total GPU time, largest first */
	size_t n_kernels, kernels_cap;
	uint64_t gpu_ns; /* kernels, copies and memsets of every device: the base of GPU% */
};

/* A string value as the text has it, between its quotes. */
struct tool_text {
	const char *p;
	size_t len;
	bool escaped; /* holds a backslash: to be decoded before use */
};

/* The fields of one event that the summary uses; a number is where its text starts, or NULL. */
struct tool_fields {
	struct tool_text ph, cat, name;
	const char *ts, *dur, *pid;
	const char *device, *bytes, *allocated; /* in "args" */
};

/* Scans the event object at p into f: returns the end of it, or NULL if it is not one. */
const char *tool_scan_event(const char *p, const char *end, struct tool_fields *f);

/* Reads path (gzip or plain JSON). Returns 0, or -1 with the reason in why. */
int tool_load(const char *path, struct tool_trace *t, char *why, size_t why_len);
void tool_free(struct tool_trace *t);

/* The per-kernel comparison of a with b, to out. */
void tool_compare(const struct tool_trace *a, const struct tool_trace *b, FILE *out);

/* A self-contained page for t (summary: the summary text), to out. */
void tool_html(const struct tool_trace *t, const char *summary, FILE *out);

/*
 * Totals of consecutive windows of one process (same "<host>_<pid>" and baseTimeNanoseconds):
 * add() prints the total of the windows before when t starts another process; put() prints
 * what is held (nothing for fewer than two windows).
 */
struct tool_total {
	char who[256];
	json_int_t base_ns;
	unsigned windows;
	uint64_t steps, step_ns, span_ns;
	unsigned n_dev;
	uint32_t dev_id[GPROF_EXPORT_MAX_DEVICES];
	uint64_t busy_ns[GPROF_EXPORT_MAX_DEVICES]; /* within each window's steps */
};
void tool_total_add(struct tool_total *s, const struct tool_trace *t, FILE *out);
void tool_total_put(const struct tool_total *s, FILE *out);

/* "12.345 ms", as the library's summary writes times; signed: "+1.000 us", "-3 ns". */
const char *tool_fmt_time(char out[32], uint64_t ns);
const char *tool_fmt_delta(char out[32], int64_t ns);
/* A name made safe for a terminal (control bytes as \xNN), in a static buffer. */
const char *tool_clean(const char *s);

#endif
