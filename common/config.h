/*
 * Configuration: every GPROF_* variable is one row of the table in config.c (name, type,
 * default, accepted range, help). Values come from defaults, then GPROF_CONFIG (a JSON file),
 * then the environment.
 */
#ifndef GPROF_CONFIG_H
#define GPROF_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/activity.h"

/* torch.profiler.schedule's keys; `all` records everything from the first CUDA call to exit. */
struct gprof_schedule {
	unsigned skip_first;
	unsigned wait;
	unsigned warmup;
	unsigned active; /* >= 1 */
	unsigned repeat; /* 0: cycles repeat until exit */
	bool all;
};

/*
 * GPROF_TRIGGER: what begins and ends windows (docs/TRIGGERS.md), one row per value:
 * X(name, word, help, stepper mode, wanted from the start, counts steps, source, exit hint)
 * - name: GPROF_TRIGGER_<name>; word: GPROF_TRIGGER's value; help: what it does, in the
 *   variable's help (the README's table);
 * - stepper mode: GPROF_STEPPER_<mode> (scheduler.h); under GPROF_SCHEDULE=all every trigger
 *   is MANUAL, and so is SCHEDULE with GPROF_DELAY or GPROF_DURATION (a time window);
 * - wanted from the start: under `all`, and with GPROF_DELAY or GPROF_DURATION (a time
 *   window), its window opens at the first CUDA call (after the delay), not on a request;
 * - counts steps: GPROF_SCHEDULE's counts mean something (config.c refuses them otherwise);
 * - source: what tells it besides step markers and hooks, SOURCE_<source> of preload/trigger.c;
 * - exit hint: preload/report.c's function that says at exit why nothing was recorded.
 */
#define GPROF_TRIGGER_TABLE(X)                                                                     \
	X(STEPS, "steps", "the schedule over step markers", SCHEDULE, true, true, NONE,            \
	  exit_hint_steps)                                                                         \
	X(PROFILER_API, "cuda-profiler-api",                                                       \
	  "each cudaProfilerStart until the next cudaProfilerStop", MANUAL, false, false, NONE,    \
	  exit_hint_profiler_api)                                                                  \
	X(SIGNAL, "signal",                                                                        \
	  "each kill -USR2 arms the schedule's warmup and active steps from the next step marker " \
	  "(under GPROF_SCHEDULE=all one USR2 starts recording and the next ends it)",             \
	  ARMED, false, true, USR2, exit_hint_signal)

enum gprof_trigger {
#define X(name, word, help, mode, want, steps, source, hint) GPROF_TRIGGER_##name,
	GPROF_TRIGGER_TABLE(X)
#undef X
	GPROF_TRIGGER_COUNT
};

/* GPROF_TORCH: what the start-up hook does in a PyTorch program (scripts/torch-steps/). */
enum gprof_torch {
	GPROF_TORCH_OFF,
	GPROF_TORCH_STEPS, /* a step at each optimizer step */
	GPROF_TORCH_ON,	   /* that, and operators in windows */
};

/* GPROF_API_CALLS: which runtime and driver calls traces hold. */
enum gprof_api_calls {
	GPROF_API_CALLS_LEAN, /* not those that queue no work (collector/names.c) */
	GPROF_API_CALLS_ALL,
};

/* GPROF_DELAY and GPROF_DURATION; `set` is false when the variable is not given. */
struct gprof_seconds {
	uint64_t ns;
	bool set;
};

#define GPROF_MARKER_MAX 256

struct gprof_config {
	struct gprof_schedule schedule;
	char step_marker[GPROF_MARKER_MAX];
	char output[PATH_MAX];	  /* template: %h host, %p pid, %r rank, %q{VAR} */
	unsigned activities;	  /* enum gprof_activity bits */
	int gzip_level;		  /* 0..9 */
	unsigned buffer_mb;	  /* cap on memory held for records not yet written */
	unsigned writer_threads;  /* compressor threads beside the trace writer, at most */
	char summary[PATH_MAX];	  /* "stderr", "off" or a file path */
	int log_level;		  /* enum gprof_log_level */
	char cupti_lib[PATH_MAX]; /* empty: search for it */
	bool disable;
	bool signals;		       /* finish the window on SIGTERM/SIGINT (preload/init.c) */
	int trigger;		       /* enum gprof_trigger */
	int torch;		       /* enum gprof_torch */
	int torch_shapes;	       /* 0 or 1: for the start-up hook */
	int api_calls;		       /* enum gprof_api_calls */
	struct gprof_seconds delay;    /* from the first CUDA call to the time window's start */
	struct gprof_seconds duration; /* longest a window records */
};

/*
 * Fills *cfg from defaults, the GPROF_CONFIG file and env (an environ-style array; NULL means
 * the process environment). A bad value prints exactly one line
 *   gprof: GPROF_X='value': <what is wrong>; expected <accepted form>
 * and returns -EINVAL: the caller then turns the library off. With GPROF_DISABLE=1 it returns
 * 0 with cfg->disable set and says nothing.
 */
int gprof_config_load(struct gprof_config *cfg, char *const *env);

/*
 * Writes the schedule as GPROF_SCHEDULE accepts it ("all" or every key=count) into buf;
 * -ENOSPC if it doesn't fit (GPROF_SCHEDULE_STR_MAX always does).
 */
#define GPROF_SCHEDULE_STR_MAX 96
int gprof_config_schedule_str(const struct gprof_schedule *s, char *buf, size_t len);

/*
 * What makes the windows, for the trace header's "schedule": GPROF_SCHEDULE where it counts
 * steps ("time window", or nothing, where it does not), then "; trigger=..." unless steps, and
 * "; delay=S" and "; duration=S" when set. Cut short to fit len.
 */
#define GPROF_CONFIG_DESCRIBE_MAX (GPROF_SCHEDULE_STR_MAX + 96)
void gprof_config_describe(const struct gprof_config *c, char *buf, size_t len);

/* GPROF_TRIGGER's word for an enum gprof_trigger value. */
const char *gprof_config_trigger_name(int trigger);

/* The README's configuration table (markdown), generated from the same table. */
void gprof_config_print_table(FILE *out);

#endif
