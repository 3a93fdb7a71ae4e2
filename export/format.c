/* The formats libgprof writes (export/format.h), the default first. */
#include "export/format.h"

const struct gprof_format_row gprof_formats[] = {
    {.ops = &gprof_format_kineto, .sink = GPROF_SINK_GZIP, .suffix = ".pt.trace.json.gz"},
    {.ops = NULL},
};
