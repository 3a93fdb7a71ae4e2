/*
 * The end-of-window figures (export.h's gprof_export_summary_text), tallied from the events of
 * one window as they are written: on the writer thread (export/summary.c), or by gprof-summary
 * from the events it reads back from a trace file. NULL when out of memory; events() accepts
 * a NULL summary.
 */
#ifndef GPROF_EXPORT_SUMMARY_H
#define GPROF_EXPORT_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#include "export/export.h"

struct gprof_op_args;
struct gprof_stats;

struct gprof_export_summary *gprof_summary_new(void);
void gprof_summary_events(struct gprof_export_summary *s, const struct gprof_export_event *ev,
			  size_t n);
void gprof_summary_free(struct gprof_export_summary *s);
/*
 * What gprof-summary's figures take from the summary: the GPU time of all devices' work
 * (kernels, copies, memsets), and the kernels' totals by name, i < kernels(s), first seen first.
 */
uint64_t gprof_summary_gpu_ns(const struct gprof_export_summary *s);
size_t gprof_summary_kernels(const struct gprof_export_summary *s);
void gprof_summary_kernel(const struct gprof_export_summary *s, size_t i,
			  const struct gprof_export_str **name, uint64_t *calls, uint64_t *ns);
/* Names the operators of PyTorch's profiler by what the hook handed over (the rest go). */
void gprof_summary_name_ops(struct gprof_export_summary *s, struct gprof_op_args *args);
/* "12.345 ms": three decimals of the largest unit that fits (gprof-summary's times too). */
const char *gprof_summary_fmt_time(char out[32], uint64_t ns);
/* "median 1.000 ms (min 0.900 ms, p90 1.200 ms, max 3.000 ms)": step times beside the mean. */
char *gprof_summary_fmt_stats(char *out, size_t len, const struct gprof_stats *st);

#endif
