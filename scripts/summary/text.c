/*
 * The tool's text: times and names as its tables and messages write them (compare.c, total.c
 * and main.c use them; they call none of those).
 */
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "export/summary.h"
#include "scripts/summary/tool.h"

const char *tool_fmt_delta(char out[32], int64_t ns)
{
	char t[32];

	snprintf(out, 32, "%c%s", ns < 0 ? '-' : '+',
		 gprof_summary_fmt_time(t, ns < 0 ? -(uint64_t)ns : (uint64_t)ns));
	return out;
}

const char *tool_clean(const char *s)
{
	static char buf[1024];

	return gprof_log_clean(buf, sizeof(buf), s, strlen(s));
}
