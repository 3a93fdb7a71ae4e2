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
#include <zlib.h>

#include "common/map.h"
#include "common/spans.h"
#include "common/stats.h"
#include "export/export.h"

#define TOOL_TOP_KERNELS 10	      /* as many as the library's summary lists */
#define TOOL_CHUNK_BYTES (256u << 10) /* text inflated and scanned at a time */
#define TOOL_ITEM_MAX	 (64u << 20)  /* an event or header value longer may be refused */
#define TOOL_SPANS_MAX	 (1u << 16)   /* GPU busy intervals held per device */

struct tool_step {
	uint64_t number;
	uint64_t ts_ns, dur_ns; /* CLOCK_REALTIME ns, as the library had them */
};

struct tool_device {
	uint32_t id;
	struct gprof_spans spans; /* the union of the GPU intervals not yet counted */
	uint64_t busy_ns;	  /* union within the steps' span (all of it without steps) */
	uint64_t *step_busy_ns;	  /* per step, parallel to tool_trace.steps */
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
	uint64_t *step_reach; /* per step: the latest end of it and those before */
	uint64_t step_begin, step_end, step_ns; /* span of the steps, sum of their durations */
	struct tool_device dev[GPROF_EXPORT_MAX_DEVICES];
	unsigned n_dev;
	bool spans_over; /* a device's busy time needs more than TOOL_SPANS_MAX intervals held */
	/* From the summary once read (tool_figures_finish): by total GPU time, largest first. */
	struct tool_kernel *kernels;
	size_t n_kernels;
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
	const char *ts, *dur, *pid, *tid;
	const char *device, *bytes, *allocated, *external, *rf_id; /* in "args" */
	const char *pool_reserved;				   /* "args" of gpu_memory */
};

/*
 * scan.c: the event object at p into f, or the value at p skipped: each returns the end of it,
 * or NULL if it is not one; then *more says whether it may be one once the text after end is
 * there.
 */
const char *tool_scan_event(const char *p, const char *end, struct tool_fields *f, bool *more);
const char *tool_scan_value(const char *p, const char *end, bool *more);

/*
 * stream.c: a trace file's text (gzip or plain JSON) a window at a time. The reader consumes
 * [p, end); tool_stream_more() drops the text before p and adds up to `chunk` bytes after end
 * (more when [p, end) is long itself): it returns 1, 0 at the end of the text (eof), or -1
 * when the file is unreadable, cut short or not gzip (why says so; -1 from then on).
 */
struct tool_stream {
	char *p, *end; /* *end is a NUL */
	char *buf;     /* p and end point into it; cap bytes and a NUL */
	size_t cap, chunk;
	uint64_t base; /* where buf[0] is in the text */
	bool eof, failed;
	char why[256];
	FILE *f;
	bool gzip, inflating, file_end;
	z_stream zs; /* the file's bytes not yet used, inflated or copied into the text */
	unsigned char *in;
};
int tool_stream_open(struct tool_stream *s, const char *path, size_t chunk);
int tool_stream_more(struct tool_stream *s);
/* Reads to the end: 0, or -1 when the file is at fault (why). */
int tool_stream_drain(struct tool_stream *s);
void tool_stream_close(struct tool_stream *s);

/*
 * figures.c: the tool's own figures. Each event of the first reading goes to add(); then
 * steps() orders the steps; when t->spans_over, a second reading passes the GPU events to
 * busy(); finish() counts the busy time held and orders the kernels. Each returns 0 or -1 when
 * out of memory. The busy times are exact unless a GPU interval comes TOOL_SPANS_MAX / 2 gaps
 * after later ones (then cut where those were counted, as the library's summary does).
 */
int tool_figures_add(struct tool_trace *t, const struct gprof_export_event *e);
int tool_figures_steps(struct tool_trace *t);
/* The order statistics of the trace's step times; false without steps or memory. */
bool tool_step_stats(const struct tool_trace *t, struct gprof_stats *st);
int tool_figures_busy(struct tool_trace *t, const struct gprof_export_event *e);
int tool_figures_finish(struct tool_trace *t);
void tool_figures_free(struct tool_trace *t);

/* How to read: 0 and false are the defaults. */
struct tool_read {
	size_t chunk_bytes; /* text at a time (tests); 0: TOOL_CHUNK_BYTES */
	bool busy;	    /* busy times are wanted even when they take a second reading */
};

/*
 * Reads path (gzip or plain JSON) in memory that does not grow with its events. Busy times are
 * counted once the steps are known: a trace whose GPU intervals leave more than TOOL_SPANS_MAX
 * gaps on a device is read again for them when how->busy, else its busy times (tool_device)
 * are left 0. Returns 0, or -1 with the reason in why.
 */
int tool_load(const char *path, const struct tool_read *how, struct tool_trace *t, char *why,
	      size_t why_len);
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

/* Times as the library's summary writes them (gprof_summary_fmt_time); signed: "+1.000 us". */
const char *tool_fmt_delta(char out[32], int64_t ns);
/* A name made safe for a terminal (control bytes as \xNN), in a static buffer. */
const char *tool_clean(const char *s);

#endif
