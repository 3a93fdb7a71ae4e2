/*
 * Windows of one process given one after another: their steps and GPU busy time added up, as
 * the library's summary would count them had the windows been back to back.
 */
#include <string.h>

#include "export/summary.h"
#include "scripts/summary/tool.h"

/* "<host>_<pid>" of the file name, and the process's fixed baseTimeNanoseconds. */
static bool same_process(const struct tool_total *s, const struct tool_trace *t)
{
	const char *name = strrchr(t->path, '/') ? strrchr(t->path, '/') + 1 : t->path;
	size_t len = strcspn(name, ".");

	return s->windows && len == strlen(s->who) && !strncmp(name, s->who, len) &&
	       s->base_ns == json_integer_value(json_object_get(t->head, "baseTimeNanoseconds"));
}

static void start(struct tool_total *s, const struct tool_trace *t)
{
	const char *name = strrchr(t->path, '/') ? strrchr(t->path, '/') + 1 : t->path;

	memset(s, 0, sizeof(*s));
	snprintf(s->who, sizeof(s->who), "%.*s", (int)strcspn(name, "."), name);
	s->base_ns = json_integer_value(json_object_get(t->head, "baseTimeNanoseconds"));
}

void tool_total_put(const struct tool_total *s, FILE *out)
{
	char t[2][32];

	if (s->windows < 2 || !s->steps)
		return;
	fprintf(out, "gprof: total of %u windows of %s: %llu steps in %s, mean step %s\n",
		s->windows, tool_clean(s->who), (unsigned long long)s->steps,
		gprof_summary_fmt_time(t[0], s->span_ns),
		gprof_summary_fmt_time(t[1], s->step_ns / s->steps));
	for (unsigned i = 0; i < s->n_dev; i++)
		fprintf(out, "gprof:   GPU %u: busy %.1f%% of step time (%s)\n", s->dev_id[i],
			s->span_ns ? 100.0 * (double)s->busy_ns[i] / (double)s->span_ns : 0.0,
			gprof_summary_fmt_time(t[0], s->busy_ns[i]));
}

void tool_total_add(struct tool_total *s, const struct tool_trace *t, FILE *out)
{
	unsigned k;

	if (!json_is_object(json_object_get(t->head, "gprof")))
		return; /* not libgprof's: no process to tell */
	if (!same_process(s, t)) {
		tool_total_put(s, out);
		start(s, t);
	}
	s->windows++;
	s->steps += t->n_steps;
	s->step_ns += t->step_ns;
	s->span_ns += t->step_end - t->step_begin;
	for (unsigned i = 0; t->n_steps && i < t->n_dev; i++) {
		for (k = 0; k < s->n_dev && s->dev_id[k] != t->dev[i].id; k++)
			;
		if (k == GPROF_EXPORT_MAX_DEVICES)
			continue;
		s->n_dev += k == s->n_dev;
		s->dev_id[k] = t->dev[i].id;
		s->busy_ns[k] += t->dev[i].busy_ns;
	}
}
