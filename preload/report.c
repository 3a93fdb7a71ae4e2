/*
 * What the user reads on stderr besides warnings: the end-of-window summary (GPROF_SUMMARY)
 * and, at exit, why nothing was recorded when a trigger never came.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PR_FMT ""
#include "common/config.h"
#include "common/heap.h"
#include "common/log.h"
#include "export/export.h"
#include "preload/preload.h"

/*
 * GPROF_SUMMARY names a file: the summary is appended to it unless it is a symbolic link
 * another user owns (one planted in a shared folder), or neither a regular file nor a
 * character device (a FIFO would block: opened O_NONBLOCK, it is refused). 0 or an errno;
 * *why says what the file is instead.
 */
static int append_to(const char *path, const char *text, const char **why)
{
	uid_t me = geteuid();
	struct stat st;
	int fd, err = 0;

	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && st.st_uid != me && st.st_uid != 0) {
		*why = "it is a symbolic link another user owns";
		return EPERM;
	}
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);
	if (fd < 0) {
		*why = errno == ENXIO ? "it is a FIFO" : "";
		return errno;
	}
	if (fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISCHR(st.st_mode))) {
		*why = "it is neither a regular file nor a terminal or device";
		err = EPERM;
	}
	if (!err)
		err = gprof_write_all(fd, text, strlen(text));
	if (close(fd) != 0 && !err)
		err = errno;
	return err;
}

static void append_summary(const char *path, const char *text, const struct gprof_export_result *r)
{
	const char *why = "";
	int err = append_to(path, text, &why);

	if (err)
		pr_warn_once("cannot append the end-of-window summary to '%.200s' (GPROF_SUMMARY): "
			     "%s; traces are still written (this one: %.200s)",
			     path, why[0] ? why : strerror(err), r->path);
}

static void report_text(const struct gprof_config *cfg, const char *text,
			const struct gprof_export_result *r)
{
	if (strcmp(cfg->summary, "stderr") == 0)
		gprof_log_text(text, strlen(text));
	else
		append_summary(cfg->summary, text, r);
}

/*
 * A failed window was reported already. The first window's summary is whole; the later ones
 * (repeat, triggers) get one line each, so a long run does not print pages: the first of them
 * says so.
 */
void gprof_report_window_done(const struct gprof_export_result *r, void *arg)
{
	static unsigned long summaries;
	const struct gprof_config *cfg = arg;
	unsigned long n;
	char *text;

	if (r->error || strcmp(cfg->summary, "off") == 0)
		return;
	n = __atomic_fetch_add(&summaries, 1, __ATOMIC_RELAXED);
	if (n == 1)
		report_text(cfg,
			    "gprof: later windows get one line each here; gprof-summary FILE "
			    "prints a window's whole summary\n",
			    r);
	text = n ? gprof_export_summary_line(r) : gprof_export_summary_text(r);
	if (!text) {
		gprof_log(GPROF_LOG_WARN, "trace written: %s (no summary: out of memory)", r->path);
		return;
	}
	report_text(cfg, text, r);
	gprof_free(text);
}

/*
 * gprof-run --torch-steps asked for the start-up hook (GPROF_TORCH_STEPS=requested), this is a
 * Python, and the hook did not run in it (it writes "hooked <its pid>").
 */
static bool torch_steps_unhooked(void)
{
	const char *v = getenv("GPROF_TORCH_STEPS");
	char hooked[32];

	if (!v || strncmp(program_invocation_short_name, "python", 6))
		return false;
	snprintf(hooked, sizeof(hooked), "hooked %ld", (long)getpid());
	return strcmp(v, hooked) != 0;
}

/* GPROF_TRIGGER=steps: no marker, no window of the schedule reached, or the delay not over. */
static void exit_hint_steps(const struct gprof_config *cfg, const struct gprof_report_exit *e)
{
	const struct gprof_schedule *s = &cfg->schedule;
	char sched[GPROF_SCHEDULE_STR_MAX];

	if (s->all || cfg->delay.set || cfg->duration.set) {
		if (cfg->delay.set && !e->window_due)
			pr_warn("the program ended before GPROF_DELAY had passed since its first "
				"CUDA call, so nothing was recorded");
	} else if (!e->marked && e->nvtx_foreign) {
		pr_warn("no step marker reached libgprof, as NVTX_INJECTION64_PATH names another "
			"tool, so nothing was recorded: unset it, or set GPROF_SCHEDULE=all");
	} else if (!e->marked && torch_steps_unhooked()) {
		pr_warn(
		    "--torch-steps: its start-up hook never ran in this Python (python -E or -I "
		    "ignores PYTHONPATH, where gprof-run puts it), so no step was marked and "
		    "nothing was recorded: run python without -E and -I, or mark steps in the "
		    "program (torch.cuda.nvtx.mark(\"%s\"))",
		    cfg->step_marker);
	} else if (!e->marked) {
		pr_warn("the program used CUDA but never marked a step ('%s'), so nothing was "
			"recorded: mark steps (e.g. torch.cuda.nvtx.mark(\"%s\")) or set "
			"GPROF_SCHEDULE=all",
			cfg->step_marker, cfg->step_marker);
	} else if (!e->window_due && gprof_config_schedule_str(s, sched, sizeof(sched)) >= 0) {
		pr_warn(
		    "the program ended at step %llu, before step %u, the first that "
		    "GPROF_SCHEDULE=%s records, so nothing was recorded: lower skip_first, wait "
		    "or warmup",
		    (unsigned long long)(e->markers - 1), s->skip_first + s->wait + s->warmup,
		    sched);
	}
}

static void exit_hint_signal(const struct gprof_config *cfg, const struct gprof_report_exit *e)
{
	if (e->armed)
		pr_warn("a SIGUSR2 armed a window, but no step marker ('%s') came after it, so "
			"nothing was recorded: mark steps or set GPROF_SCHEDULE=all, under which "
			"SIGUSR2 starts recording at once",
			cfg->step_marker);
}

static void exit_hint_profiler_api(const struct gprof_config *cfg,
				   const struct gprof_report_exit *e)
{
	(void)cfg;
	if (!e->profiler_started)
		pr_warn("GPROF_TRIGGER=cuda-profiler-api, but the program never called "
			"cudaProfilerStart through a CUDA runtime libgprof sees, so nothing was "
			"recorded");
}

void gprof_report_exit(const struct gprof_config *cfg, const struct gprof_report_exit *e)
{
	/* Each trigger's, from its row of GPROF_TRIGGER_TABLE. */
	static void (*const hints[GPROF_TRIGGER_COUNT])(const struct gprof_config *,
							const struct gprof_report_exit *) = {
#define X(name, word, help, mode, start, steps, source, hint) [GPROF_TRIGGER_##name] = hint,
	    GPROF_TRIGGER_TABLE(X)
#undef X
	};

	if (cfg->trigger >= 0 && cfg->trigger < GPROF_TRIGGER_COUNT)
		hints[cfg->trigger](cfg, e);
}
