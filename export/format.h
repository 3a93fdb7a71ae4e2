/*
 * Output formats: what export's writer calls to turn a window's events into a file. A format
 * is a row of gprof_formats: its ops, the sink its bytes go through and its file names' end.
 * A new one is a file defining its ops, its row in export/format.c, and its suffix in
 * scripts/gprof-run's trace_suffixes (test tools_run_counts_every_format holds them alike).
 */
#ifndef GPROF_EXPORT_FORMAT_H
#define GPROF_EXPORT_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/log.h"
#include "export/export.h"

/* Where a trace's bytes go (export/sink.c): the writer makes the sink, the format fills it. */
struct gprof_sink;
enum gprof_sink_kind {
	/*
	 * A gzip member, written by hand so the header can be final yet come first: 10-byte
	 * gzip header, then the head as one deflate STORED block (its size is fixed at open),
	 * then the body as raw deflate from zlib with a sync flush every GPROF_SINK_SYNC_BYTES
	 * of input (and on gprof_sink_sync), then a final block, CRC-32 and size. finish()
	 * pwrite()s the new head over the stored block (same length) and computes the CRC with
	 * crc32_combine(). A file cut short after a sync flush still inflates to the head and the
	 * body up to that flush.
	 */
	GPROF_SINK_GZIP,
	/* The text as it is; finish() pwrite()s the new head over the first. */
	GPROF_SINK_PLAIN,
};
#define GPROF_SINK_SYNC_BYTES (1u << 20)
/*
 * zlib's memLevel: a 2^13-entry hash instead of the default 2^15. zlib shifts the whole hash
 * table every 32 KiB of input, which at level 1 was a third of deflate's instructions; on
 * trace JSON the smaller table costs no compression (measured in docs/PERFORMANCE.md).
 */
#define GPROF_SINK_MEM_LEVEL 6
/*
 * The first bytes, once, before any write: a head of fixed length (at most 64 KiB - 1 for
 * gzip), which finish() replaces. Each call returns 0 or the sink's first error.
 */
int gprof_sink_head(struct gprof_sink *s, const char *head, size_t len);
int gprof_sink_write(struct gprof_sink *s, const void *buf, size_t len);
int gprof_sink_sync(struct gprof_sink *s);
/* Writes the end and the final head (same length as the first); a file sink's file is closed. */
int gprof_sink_finish(struct gprof_sink *s, const char *head, size_t len);

struct gprof_rank {
	long rank, world_size;
};

struct gprof_op_args;

/* What a window's header says, whatever the format; counts and names come from the format. */
struct gprof_trace_meta {
	const struct gprof_export_process_info *proc;
	struct gprof_rank rank;
	uint64_t base_ns;
	uint64_t window;
	const char *schedule;
	uint64_t first_step, last_step;
	bool has_last_step;
	uint64_t dropped_buffer, dropped_cupti, dropped_late;
	uint64_t left_out;  /* API calls not written (GPROF_EXPORT_QUIET): set by the format */
	bool tensor_memory; /* gprof_export_config.tensor_memory */
	bool torch_ops;	    /* gprof_export_config.torch_ops */
	/* The window's operators' inputs (gprof_export_window_op_args), at its close; or NULL */
	struct gprof_op_args *op_args;
	char (*warnings)[GPROF_LOG_LINE_MAX];
	size_t n_warnings;
	size_t warnings_lost; /* printed in the window but no longer kept by common/log */
	const char *trace_name;
};

/* One window's output: each format's own state begins with it. */
struct gprof_format {
	const struct gprof_format_ops *ops;
};

struct gprof_format_ops {
	const char *name; /* for people: "Kineto JSON" */
	/*
	 * Writes the first header (m->proc is copied) as sink s's head. s stays the caller's, to
	 * free after the format. NULL and *err on failure.
	 */
	struct gprof_format *(*open)(const struct gprof_trace_meta *m, uint64_t open_ns,
				     struct gprof_sink *s, int *err);
	/* Formats events (the writer's inner loop). */
	void (*events)(struct gprof_format *f, const struct gprof_export_event *ev, size_t n);
	/* Every pass of the writer: hands text to the sink, sync-flushes now and then. */
	int (*tick)(struct gprof_format *f, uint64_t now_ns);
	/* Newer process facts (devices, versions) for later events and the final header. */
	void (*set_proc)(struct gprof_format *f, const struct gprof_export_process_info *p);
	/*
	 * The end of the file and the final head (m->proc may become the format's copy), then
	 * gprof_sink_finish. Returns 0 or the first error, of the format or its sink.
	 */
	int (*close)(struct gprof_format *f, struct gprof_trace_meta *m);
	/* Events written, per enum gprof_export_kind (GPROF_EXPORT_KINDS of them). */
	const uint64_t *(*counts)(const struct gprof_format *f);
	/* Frees f (NULL is fine), not its sink. */
	void (*free)(struct gprof_format *f);
};

/*
 * A format's functions from their names' prefix, as GPROF_SINK_OPS: GPROF_FORMAT_OPS(trace) sets
 * .open = trace_open to .free = trace_free; .name is the table's own.
 */
#define GPROF_FORMAT_OPS(prefix)                                                           \
	.open = prefix##_open, .events = prefix##_events, .tick = prefix##_tick,           \
	.set_proc = prefix##_set_proc, .close = prefix##_close, .counts = prefix##_counts, \
	.free = prefix##_free

/* A format as the writer makes its files (gprof_export_config.format). */
struct gprof_format_row {
	const struct gprof_format_ops *ops;
	enum gprof_sink_kind sink;
	const char *suffix; /* of the file name, the sink's part too: ".pt.trace.json.gz" */
};

/* The formats libgprof writes, the default first; a row without ops ends the table. */
extern const struct gprof_format_row gprof_formats[];

/* trace.c: the Kineto schema of shared/TRACE_FORMAT.md. */
extern const struct gprof_format_ops gprof_format_kineto;
/* "HtoD", "DtoH", ... for enum gprof_export_copy_kind ("Unknown" when out of range). */
const char *gprof_trace_copy_kind(unsigned k);

#endif
