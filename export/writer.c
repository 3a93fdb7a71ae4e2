/*
 * The writer thread and the windows it writes: opens a window's file, routes drained events to
 * it, and finishes it once its holders released it and everything committed before is in.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PR_FMT "export: "
#include "common/clock.h"
#include "common/config.h"
#include "common/heap.h"
#include "common/thread.h"
#include "export/internal.h"

#define PASS_NS (5 * 1000000ull)   /* between passes while a window is in use */
#define IDLE_NS (200 * 1000000ull) /* between passes otherwise */
/*
 * baseTimeNanoseconds: the start of the week (UTC, counted from the epoch) in every process,
 * so that the processes of a job share one (HTA lines ranks up by their raw ts). Kineto floors
 * to three months; within a week a ts in us with three decimals is exact as a double.
 */
#define BASE_PERIOD_NS (7 * 86400 * 1000000000ull)
/*
 * The writer is behind when events of this many chunks wait (8 K events, several ms of its
 * work): then compressor threads may start.
 */
#define BEHIND_CHUNKS 16
#define CREATE_TRIES  3 /* a window's file is created again when the program closed it */

struct window {
	/* Under ctl.lock. The id stays after the window is done, until the slot's next claim. */
	uint32_t id;
	enum gprof_window_life life;
	unsigned holds;
	uint64_t number, first_step, last_step, cupti_dropped;
	bool has_last_step;
	char schedule[GPROF_CONFIG_DESCRIBE_MAX]; /* as the session describes it */
	unsigned long log_seq; /* warnings from this one on belong to the window */
	uint64_t open_ns;
	/* Atomics, read without the lock (gprof_export_window_span); end UINT64_MAX until set. */
	uint64_t begin_ns, end_ns;
	struct gprof_op_args *op_args; /* gprof_export_window_op_args; the writer's at finish */
	/* Writer only. */
	uint32_t wid;		    /* the id this slot's trace was opened for, 0 if none */
	struct gprof_sink *sink;    /* the trace's file; NULL with trace */
	struct gprof_format *trace; /* of ctl.format; NULL: not opened yet, or failed */
	struct gprof_export_summary *summary; /* tallied with the trace; may be NULL */
	int error;			      /* why the window failed */
	struct gprof_rank rank;
	char path[PATH_MAX]; /* the final name; the file is path + ".partial" until done */
	dev_t dev;	     /* the .partial file's identity, checked before it is renamed */
	ino_t ino;	     /* or removed: another file at its name is not ours */
};

/* The writer and the control calls meet here. `lock` is never held during I/O. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* the writer sleeps on it */
	pthread_cond_t done; /* window_wait, shutdown and pause sleep on it */
	bool inited, live, started, running, stop, paused;
	bool reading; /* a pass planned unpaused runs: it may read events */
	bool kick;    /* something changed: the writer makes a pass before sleeping */
	pthread_t thread;
	struct gprof_export_config cfg;
	const struct gprof_format_row *format; /* cfg.format, or the default */
	char output[PATH_MAX];		       /* the template, for messages */
	/*
	 * Resolved by gprof_export_init (and in a child after fork, which has no other thread
	 * yet): the environment is never read again, and a later chdir changes nothing.
	 */
	char start_cwd[PATH_MAX];
	char dir[PATH_MAX];
	int dir_err; /* why dir could not be resolved */
	struct gprof_rank rank;
	uint64_t base_ns;
	uint32_t last_id;
	struct window win[GPROF_EXPORT_WINDOWS];
	struct gprof_export_process_info proc;
	unsigned proc_gen;
	struct gprof_export_stats stats; /* written, late, windows_*: published by the writer */
} ctl = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The writer thread's own state. */
static struct {
	struct gprof_export_process_info proc;
	unsigned proc_gen;
	uint64_t written, late, late_since_finish;
	/* Events of windows opened after the pass was planned: routed by the next pass. */
	struct gprof_export_event *held;
	size_t n_held, cap_held;
} wr;

/* The writer sleeps, and waiters wait, on conditions of this clock (gprof_export_init). */
static struct timespec deadline(uint64_t ns)
{
	return gprof_clock_deadline(CLOCK_MONOTONIC, ns);
}

/* Opened and not yet finished: the window takes holds, events and facts. */
static bool live(const struct window *w)
{
	return w->life >= GPROF_WINDOW_ACTIVE && w->life <= GPROF_WINDOW_CLOSING;
}

/* Under ctl.lock: window id while it is live, else NULL. */
static struct window *window_of(uint32_t id)
{
	struct window *w = &ctl.win[gprof_export_window_slot(id)];

	return id && w->id == id && live(w) ? w : NULL;
}

/* The steps a window's life may take (export.h), from each state. */
#define STEP(to) (1u << GPROF_WINDOW_##to)
static const unsigned life_next[] = {
    [GPROF_WINDOW_FREE] = STEP(ACTIVE),
    [GPROF_WINDOW_ACTIVE] = STEP(DRAINING) | STEP(CLOSING),
    [GPROF_WINDOW_DRAINING] = STEP(CLOSING),
    [GPROF_WINDOW_CLOSING] = STEP(WRITTEN) | STEP(GIVEN_UP),
    [GPROF_WINDOW_WRITTEN] = STEP(ACTIVE),
    [GPROF_WINDOW_GIVEN_UP] = STEP(ACTIVE),
};
#undef STEP

/* Under ctl.lock: the one place a window's life moves on. A step not in the table is a bug. */
static void set_life(struct window *w, enum gprof_window_life to)
{
	if (!(life_next[w->life] & 1u << to)) {
		pr_err("window %u: no step from %s to %s (a bug in libgprof)", w->id,
		       gprof_window_life_name(w->life), gprof_window_life_name(to));
		return;
	}
	w->life = to;
}

/* The window whose trace takes the events of window `id`, from the writer's side. */
static struct window *writing(uint32_t id)
{
	struct window *w = &ctl.win[gprof_export_window_slot(id)];

	return id && w->wid == id && w->trace ? w : NULL;
}

struct pass {
	uint32_t last_id; /* the newest window the pass knows of */
	bool open[GPROF_EXPORT_WINDOWS], finish[GPROF_EXPORT_WINDOWS];
	struct gprof_trace_meta meta[GPROF_EXPORT_WINDOWS];
	bool proc_changed, paused, in_use;
};

/* Keeps events of a window newer than the pass for the next one; false if out of memory. */
static bool hold(const struct gprof_export_event *ev, size_t n)
{
	if (wr.n_held + n > wr.cap_held) {
		size_t cap = (wr.n_held + n) * 2;
		void *p = gprof_realloc(wr.held, cap * sizeof(*ev));

		if (!p)
			return false;
		wr.held = p;
		wr.cap_held = cap;
	}
	memcpy(wr.held + wr.n_held, ev, n * sizeof(*ev));
	wr.n_held += n;
	return true;
}

static void route(const struct gprof_export_event *ev, size_t n, void *arg)
{
	const struct pass *p = arg;

	while (n) {
		struct window *w = writing(ev->window);
		size_t run = 1;

		while (run < n && ev[run].window == ev->window)
			run++;
		if (w) {
			w->trace->ops->events(w->trace, ev, run);
			gprof_summary_events(w->summary, ev, run);
			wr.written += run;
		} else if ((int32_t)(ev->window - p->last_id) > 0 && hold(ev, run)) {
			/* Opened after this pass was planned: not late, just early. */
		} else {
			wr.late += run;
			wr.late_since_finish += run;
		}
		ev += run;
		n -= run;
	}
}

/* Whether <path>.partial is still the file this window created; its name into partial. */
static bool partial_ours(const struct window *w, char partial[PATH_MAX + 8])
{
	struct stat st;

	snprintf(partial, PATH_MAX + 8, "%s.partial", w->path);
	return lstat(partial, &st) == 0 && st.st_dev == w->dev && st.st_ino == w->ino;
}

static void partial_remove(const struct window *w)
{
	char partial[PATH_MAX + 8];

	if (partial_ours(w, partial))
		unlink(partial);
}

/* Frees the window's trace, the sink under it (closing the file) and its tally. */
static void drop_trace(struct window *w)
{
	if (w->trace)
		w->trace->ops->free(w->trace);
	gprof_sink_free(w->sink);
	gprof_summary_free(w->summary);
	w->trace = NULL;
	w->sink = NULL;
	w->summary = NULL;
}

/* What to do about a window's file that err lost. */
static const char *remedy(int err)
{
	switch (-err) {
	case EBADF:
		return "The program closed or replaced libgprof's descriptor of it, and it could "
		       "not be opened again; the program's files are left alone.";
	case ENOSPC:
	case EDQUOT:
		return "Free space or point GPROF_OUTPUT at another folder.";
	default:
		return "Point GPROF_OUTPUT at a folder where files can be written.";
	}
}

/* The window is lost: say so once, remove what was written; its events are dropped. */
static void abandon(struct window *w, int err, const char *what)
{
	pr_err("window %llu is not recorded: %s '%.200s.partial': %s; the file is removed. %s",
	       (unsigned long long)w->number, what, w->path, strerror(-err), remedy(err));
	drop_trace(w);
	w->error = err;
	partial_remove(w);
}

/* The header's facts of a window; called under ctl.lock (steps and drops change). */
static void meta_of(const struct window *w, struct gprof_trace_meta *m)
{
	const char *slash = strrchr(w->path, '/');

	*m = (struct gprof_trace_meta){
	    .proc = &wr.proc,
	    .rank = w->rank,
	    .base_ns = ctl.base_ns,
	    .window = w->number,
	    .schedule = w->schedule,
	    .first_step = w->first_step,
	    .last_step = w->last_step,
	    .has_last_step = w->has_last_step,
	    .dropped_cupti = w->cupti_dropped,
	    .tensor_memory = ctl.cfg.tensor_memory,
	    .torch_ops = ctl.cfg.torch_ops,
	    .trace_name = slash ? slash + 1 : w->path,
	};
}

static bool writer_behind(void)
{
	return gprof_buf_backlog() >= BEHIND_CHUNKS;
}

/*
 * Creates the window's file, writes its header and names it <path>.partial. Until it has that
 * name the file lives only in its descriptor: -EBADF when the program closed the descriptor
 * meanwhile (closefrom on another thread), and the file is gone with it. *what says which
 * step failed until the file exists, then *created is set.
 */
static int create_file(struct window *w, struct gprof_trace_meta *m, const char *name,
		       const char **what, bool *created)
{
	char partial[PATH_MAX + 8];
	bool unnamed = false;
	struct stat st;
	int fd = gprof_output_create(ctl.dir, name, what, &unnamed), err;

	*created = fd >= 0;
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) != 0)
		return -EBADF;
	w->dev = st.st_dev;
	w->ino = st.st_ino;
	w->sink = gprof_sink_open(ctl.format->sink, fd, ctl.cfg.gzip_level, &err);
	if (!w->sink) {
		close(fd);
		return err;
	}
	w->trace = ctl.format->ops->open(m, w->open_ns, w->sink, &err);
	if (w->trace && unnamed) {
		snprintf(partial, sizeof(partial), "%s.partial", w->path);
		err = gprof_output_publish(fd, &st, partial);
		if (err == -EAGAIN) {
			/* linkat is refused here: the file made under its name at once */
			drop_trace(w);
			return create_file(w, m, name, what, created);
		}
	}
	if (err) {
		drop_trace(w);
		return err;
	}
	if (unnamed)
		gprof_sink_named(w->sink, partial);
	return 0;
}

/* Creates the folder and the .partial file, and writes the first header. */
static void open_window(struct window *w, struct gprof_trace_meta *m)
{
	const char *what = "cannot name a trace file in", *slash;
	char name[NAME_MAX + 1];
	int err = ctl.dir_err, tries = 0;
	unsigned helpers;
	bool created = false;

	w->wid = w->id;
	w->path[0] = '\0';
	w->error = 0;
	w->rank = ctl.rank;
	if (!err)
		err = gprof_output_name(w->open_ns, ctl.format->suffix, name, sizeof(name));
	if (!err &&
	    snprintf(w->path, sizeof(w->path), "%s/%s", ctl.dir, name) >= (int)sizeof(w->path))
		err = -ENAMETOOLONG;
	m->rank = w->rank;
	slash = strrchr(w->path, '/');
	m->trace_name = slash ? slash + 1 : w->path;
	/* Nothing was written but into the lost file: a program's closefrom costs a new one. */
	while (!err && (err = create_file(w, m, name, &what, &created)) == -EBADF &&
	       ++tries < CREATE_TRIES)
		;
	if (err && !created) {
		pr_err("window %llu is not recorded: %s '%.200s': %s. Point GPROF_OUTPUT (now "
		       "'%.200s') at a writable folder.",
		       (unsigned long long)w->number, what, ctl.dir, strerror(-err), ctl.output);
		w->error = err;
		return;
	}
	if (err) {
		abandon(w, err, "cannot write the trace file");
		return;
	}
	pr_dbg("window %llu: %s into '%.200s.partial'", (unsigned long long)w->number,
	       ctl.format->ops->name, w->path);
	w->summary = gprof_summary_new();
	/* A thread's start allocates in its starter's malloc arena, which the writer has none of
	 * (common/heap.h): under `ulimit -v` the writer compresses alone. */
	helpers = gprof_address_space_left() == SIZE_MAX ? ctl.cfg.writer_threads : 0;
	gprof_sink_threads(w->sink, helpers, GPROF_SINK_SYNC_BYTES, writer_behind);
}

static void report(const struct window *w, const struct gprof_trace_meta *m, const uint64_t *counts,
		   int error)
{
	struct gprof_export_result r = {
	    .id = w->id,
	    .number = w->number,
	    .error = error,
	    .path = w->path,
	    .first_step = m->first_step,
	    .last_step = m->last_step,
	    .dropped = gprof_buf_dropped(w->id),
	    .cupti_dropped = m->dropped_cupti,
	    .summary = error ? NULL : w->summary,
	};

	if (counts)
		memcpy(r.events, counts, sizeof(r.events));
	if (ctl.cfg.on_window_done)
		ctl.cfg.on_window_done(&r, ctl.cfg.arg);
}

/* Everything committed before the close is in: the end, the final header, the rename. */
static void finish_window(struct window *w, struct gprof_trace_meta *m)
{
	char warnings[GPROF_LOG_KEPT][GPROF_LOG_LINE_MAX], partial[PATH_MAX + 8];
	int err = w->error ? w->error : -EIO;

	if (!w->trace)
		goto out;
	m->dropped_buffer = gprof_buf_dropped(w->id);
	m->dropped_late = wr.late_since_finish;
	m->warnings = warnings;
	m->n_warnings = gprof_log_warnings(w->log_seq, warnings, GPROF_LOG_KEPT);
	m->warnings_lost = gprof_log_seq() - w->log_seq - m->n_warnings;
	err = w->trace->ops->close(w->trace, m);
	if (err) {
		abandon(w, err, "cannot write the trace file");
		goto out;
	}
	wr.late_since_finish = 0;
	gprof_summary_name_ops(w->summary, m->op_args);
	err = partial_ours(w, partial) ? gprof_output_commit(w->path) : -ESTALE;
	if (err == -ESTALE)
		pr_err("window %llu: '%.200s' is no longer the file libgprof wrote (the program "
		       "replaced it): it is not renamed, and the window is not recorded.",
		       (unsigned long long)w->number, partial);
	else if (err)
		pr_err("window %llu: cannot rename '%.200s.partial' to its final name: %s; the "
		       "trace stays there, complete: rename it without .partial.",
		       (unsigned long long)w->number, w->path, strerror(-err));
out:
	report(w, m, w->trace ? w->trace->ops->counts(w->trace) : NULL, err);
	drop_trace(w);
	gprof_op_args_free(m->op_args);
	w->error = err;
}

/* What one pass does, decided under the lock. */

static void plan(struct pass *p)
{
	p->last_id = ctl.last_id;
	p->in_use = false;
	for (unsigned i = 0; i < GPROF_EXPORT_WINDOWS; i++) {
		struct window *w = &ctl.win[i];

		p->open[i] = live(w) && w->wid != w->id;
		/* Paused: nothing is read, so nothing may be finished. */
		p->finish[i] = w->life == GPROF_WINDOW_CLOSING && !ctl.paused;
		p->in_use |= live(w);
		if (live(w))
			meta_of(w, &p->meta[i]);
		if (p->finish[i]) {
			/* the finish takes them: the window's are complete once it closes */
			p->meta[i].op_args = w->op_args;
			w->op_args = NULL;
		}
	}
	p->paused = ctl.paused;
	p->proc_changed = ctl.proc_gen != wr.proc_gen;
	if (p->proc_changed) {
		wr.proc = ctl.proc;
		wr.proc_gen = ctl.proc_gen;
	}
}

static void pass(struct pass *p)
{
	uint64_t now = gprof_realtime_ns();
	struct window *w;

	for (unsigned i = 0; i < GPROF_EXPORT_WINDOWS; i++)
		if (p->open[i])
			open_window(&ctl.win[i], &p->meta[i]);
	for (unsigned i = 0; i < GPROF_EXPORT_WINDOWS && p->proc_changed; i++)
		if (ctl.win[i].trace)
			ctl.win[i].trace->ops->set_proc(ctl.win[i].trace, &wr.proc);
	if (!p->paused) {
		struct gprof_export_event *held = wr.held;
		size_t n_held = wr.n_held;

		wr.held = NULL;
		wr.n_held = wr.cap_held = 0;
		route(held, n_held, p);
		gprof_free(held);
		gprof_buf_drain(route, p);
	}
	for (unsigned i = 0; i < GPROF_EXPORT_WINDOWS; i++)
		if (p->finish[i])
			finish_window(&ctl.win[i], &p->meta[i]);
	for (unsigned i = 0; i < GPROF_EXPORT_WINDOWS; i++) {
		w = &ctl.win[i];
		int err = w->trace ? w->trace->ops->tick(w->trace, now) : 0;

		if (err)
			abandon(w, err, "cannot write the trace file");
	}
}

/* Back under the lock: finished slots become free, waiters learn of it. */
static void publish(const struct pass *p)
{
	for (unsigned i = 0; i < GPROF_EXPORT_WINDOWS; i++) {
		struct window *w = &ctl.win[i];

		if (!p->finish[i])
			continue;
		if (w->error)
			ctl.stats.windows_failed++;
		else
			ctl.stats.windows_done++;
		set_life(w, w->error ? GPROF_WINDOW_GIVEN_UP : GPROF_WINDOW_WRITTEN);
		w->wid = 0;
	}
	ctl.stats.written = wr.written;
	ctl.stats.late = wr.late;
	pthread_cond_broadcast(&ctl.done);
}

/* arg: what gprof_thread_fds_ready() said before the thread was started. */
static void *writer_main(void *arg)
{
	struct pass p;
	int err;

	pthread_setname_np(pthread_self(), "gprof-writer");
	/* Its files out of the program's reach; its lines reach stderr by the log's relay. */
	err = gprof_thread_own_fds((int)(intptr_t)arg);
	if (err)
		pr_dbg("the trace writer shares the program's descriptor table (%s): its files are "
		       "checked before each use",
		       strerror(-err));
	pthread_mutex_lock(&ctl.lock);
	for (;;) {
		plan(&p);
		ctl.kick = false;
		if (ctl.stop && !p.in_use)
			break;
		ctl.reading = !p.paused;
		pthread_mutex_unlock(&ctl.lock);
		pass(&p);
		pthread_mutex_lock(&ctl.lock);
		ctl.reading = false;
		publish(&p);
		if (!ctl.kick) {
			struct timespec until = deadline(p.in_use ? PASS_NS : IDLE_NS);

			pthread_cond_timedwait(&ctl.wake, &ctl.lock, &until);
		}
	}
	ctl.running = false;
	pthread_cond_broadcast(&ctl.done);
	pthread_mutex_unlock(&ctl.lock);
	return NULL;
}

/*
 * Under ctl.lock: what windows need, once: the event buffer and the writer thread (which takes
 * no signal: they belong to the application's threads). 0, or a negative errno and why.
 */
static int start_locked(char why[GPROF_EXPORT_WHY_MAX])
{
	static bool said_capped;
	char cause[GPROF_SPACE_ERROR_MAX];
	const char *what = "no room for the event buffer";
	int err = -ENODEV;

	if (ctl.live && !(err = gprof_buf_reserve(ctl.cfg.buffer_bytes)) && !ctl.started) {
		int ready = gprof_thread_fds_ready(gprof_log_relay_start);

		what = "cannot start the trace writer thread";
		err = gprof_thread_start(&ctl.thread, writer_main, (void *)(intptr_t)ready);
		ctl.started = ctl.running = !err;
	}
	if (err == -ENODEV)
		snprintf(why, GPROF_EXPORT_WHY_MAX,
			 "libgprof's trace writer has stopped (exit, or a fork's child)");
	else if (err)
		snprintf(why, GPROF_EXPORT_WHY_MAX, "%s: %s", what,
			 gprof_space_error(err, cause, sizeof(cause)));
	else if (gprof_buf_bytes() < ctl.cfg.buffer_bytes && !said_capped) {
		said_capped = true;
		pr_warn("ulimit -v: the event buffer has %zu of its %zu MiB, a quarter of the "
			"address space that was left (events beyond it are dropped and counted)",
			gprof_buf_bytes() >> 20, ctl.cfg.buffer_bytes >> 20);
	}
	return err;
}

int gprof_export_start(char why[GPROF_EXPORT_WHY_MAX])
{
	int err;

	pthread_mutex_lock(&ctl.lock);
	err = start_locked(why);
	pthread_mutex_unlock(&ctl.lock);
	return err;
}

/* Under ctl.lock: the next id, in the slot it maps to. Writer-only fields are not touched. */
static int claim(const struct gprof_export_window_info *info, uint32_t *id)
{
	uint32_t nid = ctl.last_id + 1 ? ctl.last_id + 1 : 1;
	struct window *w = &ctl.win[gprof_export_window_slot(nid)];

	if (live(w))
		return -EBUSY;
	ctl.last_id = nid;
	w->id = nid;
	set_life(w, GPROF_WINDOW_ACTIVE);
	w->holds = 1;
	w->number = info->number;
	w->first_step = w->last_step = info->first_step;
	w->has_last_step = false;
	w->cupti_dropped = 0;
	snprintf(w->schedule, sizeof(w->schedule), "%s", info->schedule ? info->schedule : "");
	w->log_seq = gprof_log_seq();
	w->open_ns = gprof_realtime_ns();
	__atomic_store_n(&w->begin_ns, info->begin_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&w->end_ns, UINT64_MAX, __ATOMIC_RELAXED);
	gprof_buf_reset_dropped(nid);
	*id = nid;
	return 0;
}

static void kick(void)
{
	ctl.kick = true;
	pthread_cond_signal(&ctl.wake);
}

int gprof_export_window_open(const struct gprof_export_window_info *info, uint32_t *id)
{
	char why[GPROF_EXPORT_WHY_MAX];
	int err;

	pthread_mutex_lock(&ctl.lock);
	err = start_locked(why);
	if (err)
		pr_err("window %" PRIu64 " (from step %" PRIu64 ") is not recorded: %s",
		       info->number, info->first_step, why);
	else
		err = claim(info, id);
	if (!err)
		kick();
	pthread_mutex_unlock(&ctl.lock);
	return err;
}

bool gprof_export_window_can_open(void)
{
	uint32_t nid;
	bool free_slot;

	pthread_mutex_lock(&ctl.lock);
	nid = ctl.last_id + 1 ? ctl.last_id + 1 : 1;
	free_slot = !live(&ctl.win[gprof_export_window_slot(nid)]);
	pthread_mutex_unlock(&ctl.lock);
	return free_slot;
}

bool gprof_export_window_hold(uint32_t id)
{
	pthread_mutex_lock(&ctl.lock);
	struct window *w = window_of(id);
	bool held = w && w->life != GPROF_WINDOW_CLOSING;

	if (held)
		w->holds++;
	pthread_mutex_unlock(&ctl.lock);
	return held;
}

/* Under ctl.lock: one hold less; the last one's release starts the finish. */
static void release(struct window *w)
{
	if (w && w->holds && --w->holds == 0) {
		set_life(w, GPROF_WINDOW_CLOSING);
		kick();
	}
}

void gprof_export_window_release(uint32_t id)
{
	pthread_mutex_lock(&ctl.lock);
	release(window_of(id));
	pthread_mutex_unlock(&ctl.lock);
}

void gprof_export_window_close(uint32_t id)
{
	pthread_mutex_lock(&ctl.lock);
	struct window *w = window_of(id);

	if (w && w->life == GPROF_WINDOW_ACTIVE) {
		set_life(w, GPROF_WINDOW_DRAINING);
		release(w);
	}
	pthread_mutex_unlock(&ctl.lock);
}

void gprof_export_window_end(uint32_t id, uint64_t end_ns)
{
	pthread_mutex_lock(&ctl.lock);
	struct window *w = window_of(id);

	if (w)
		__atomic_store_n(&w->end_ns, end_ns, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ctl.lock);
}

struct gprof_span gprof_export_window_span(uint32_t id)
{
	const struct window *w = &ctl.win[gprof_export_window_slot(id)];

	return (struct gprof_span){__atomic_load_n(&w->begin_ns, __ATOMIC_ACQUIRE),
				   __atomic_load_n(&w->end_ns, __ATOMIC_ACQUIRE)};
}

enum gprof_window_life gprof_export_window_life(uint32_t id)
{
	pthread_mutex_lock(&ctl.lock);
	const struct window *w = &ctl.win[gprof_export_window_slot(id)];
	enum gprof_window_life life = id && w->id == id ? w->life : GPROF_WINDOW_FREE;

	pthread_mutex_unlock(&ctl.lock);
	return life;
}

uint64_t gprof_export_window_number(uint32_t id)
{
	pthread_mutex_lock(&ctl.lock);
	const struct window *w = window_of(id);
	uint64_t number = w ? w->number : UINT64_MAX;

	pthread_mutex_unlock(&ctl.lock);
	return number;
}

void gprof_export_window_set_last_step(uint32_t id, uint64_t step)
{
	pthread_mutex_lock(&ctl.lock);
	struct window *w = window_of(id);

	if (w) {
		w->last_step = step;
		w->has_last_step = true;
	}
	pthread_mutex_unlock(&ctl.lock);
}

int gprof_export_window_op_args(uint32_t id, const char *json, size_t len, const char **why)
{
	struct gprof_op_args *a =
	    gprof_op_args_parse(json, len, gprof_export_window_span(id).begin, why);
	int n = a ? (int)gprof_op_args_count(a) : -EINVAL;

	pthread_mutex_lock(&ctl.lock);
	struct window *w = window_of(id);

	if (w && w->life == GPROF_WINDOW_CLOSING)
		w = NULL;
	if (a && w && w->op_args) {
		/* a later hand-over adds to the earlier ones */
		if (gprof_op_args_merge(w->op_args, a)) {
			*why = "out of memory";
			n = -ENOMEM;
		}
	} else if (a && w) {
		w->op_args = a;
		a = NULL;
	} else if (a) {
		*why = "the window is no longer held";
		n = -ESRCH;
	}
	pthread_mutex_unlock(&ctl.lock);
	gprof_op_args_free(a);
	return n;
}

void gprof_export_window_add_cupti_dropped(uint32_t id, uint64_t n)
{
	pthread_mutex_lock(&ctl.lock);
	struct window *w = window_of(id);

	if (w)
		w->cupti_dropped += n;
	pthread_mutex_unlock(&ctl.lock);
}

int gprof_export_window_wait(uint32_t id, unsigned timeout_ms)
{
	struct timespec until = deadline(timeout_ms * 1000000ull);
	int err = 0;

	pthread_mutex_lock(&ctl.lock);
	while (window_of(id) && ctl.running && !err)
		err = -pthread_cond_timedwait(&ctl.done, &ctl.lock, &until);
	pthread_mutex_unlock(&ctl.lock);
	return err;
}

void gprof_export_set_process_info(const struct gprof_export_process_info *info)
{
	pthread_mutex_lock(&ctl.lock);
	ctl.proc = *info;
	ctl.proc_gen++;
	pthread_mutex_unlock(&ctl.lock);
}

void gprof_export_get_stats(struct gprof_export_stats *st)
{
	pthread_mutex_lock(&ctl.lock);
	*st = ctl.stats;
	pthread_mutex_unlock(&ctl.lock);
	st->dropped = gprof_buf_dropped_total();
}

void gprof_export_pause(bool paused)
{
	pthread_mutex_lock(&ctl.lock);
	ctl.paused = paused;
	kick();
	while (paused && ctl.reading)
		pthread_cond_wait(&ctl.done, &ctl.lock);
	pthread_mutex_unlock(&ctl.lock);
}

int gprof_export_shutdown(unsigned timeout_ms)
{
	struct timespec until = deadline(timeout_ms * 1000000ull);
	bool join = false;
	int err = 0;

	pthread_mutex_lock(&ctl.lock);
	ctl.live = false;
	ctl.stop = true;
	ctl.paused = false;
	for (unsigned i = 0; i < GPROF_EXPORT_WINDOWS; i++)
		if (live(&ctl.win[i]) && ctl.win[i].life != GPROF_WINDOW_CLOSING)
			set_life(&ctl.win[i], GPROF_WINDOW_CLOSING);
	kick();
	while (ctl.running && !err)
		err = -pthread_cond_timedwait(&ctl.done, &ctl.lock, &until);
	join = ctl.started && !ctl.running;
	ctl.started = join ? false : ctl.started;
	pthread_mutex_unlock(&ctl.lock);
	gprof_buf_stop();
	if (join)
		pthread_join(ctl.thread, NULL);
	if (err)
		pr_warn("the trace writer did not finish within %u ms: unfinished traces stay as "
			".partial files",
			timeout_ms);
	return err;
}

/* The folder and rank, from the environment as it is now: only while no thread of ours runs. */
static void resolve_output(void)
{
	ctl.dir_err = gprof_output_folder(ctl.output, ctl.start_cwd, ctl.dir, sizeof(ctl.dir));
	gprof_output_rank(NULL, &ctl.rank);
}

/*
 * fork(): no lock may be inherited held. A child of a process whose writer runs gets no
 * thread and writes nothing (pushes are dropped); a child forked before any window (say a
 * launcher's worker) keeps a working exporter of its own.
 */
static void fork_prepare(void)
{
	gprof_strtab_lock();
	pthread_mutex_lock(&ctl.lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&ctl.lock);
	gprof_strtab_unlock();
}

static void fork_child(void)
{
	resolve_output(); /* %p, and the child's own environment */
	if (ctl.started) {
		ctl.live = false;
		gprof_buf_stop();
	}
	ctl.started = ctl.running = false;
	fork_parent();
}

int gprof_export_init(const struct gprof_export_config *cfg)
{
	char unset[64];
	pthread_condattr_t attr;
	int err;

	gprof_heap_init(); /* before fork_prepare: the heap's lock is taken inside ctl.lock */
	pthread_mutex_lock(&ctl.lock);
	err = ctl.inited ? -EALREADY : 0;
	if (err)
		goto out;
	ctl.cfg = *cfg;
	ctl.format = cfg->format ? cfg->format : &gprof_formats[0];
	ctl.cfg.gzip_level = cfg->gzip_level < 0 ? 0 : cfg->gzip_level > 9 ? 9 : cfg->gzip_level;
	snprintf(ctl.output, sizeof(ctl.output), "%s", cfg->output ? cfg->output : ".");
	ctl.cfg.output = ctl.output;
	if (!getcwd(ctl.start_cwd, sizeof(ctl.start_cwd)))
		ctl.start_cwd[0] = '\0';
	resolve_output();
	if (gprof_output_unset(ctl.output, NULL, unset, sizeof(unset)))
		pr_warn(
		    "GPROF_OUTPUT='%.200s': %%q{%s} expands to nothing, as %s is not set in this "
		    "process: set it, or leave it out",
		    ctl.output, unset, unset);
	ctl.base_ns =
	    cfg->base_ns ? cfg->base_ns : gprof_realtime_ns() / BASE_PERIOD_NS * BASE_PERIOD_NS;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&ctl.wake, &attr);
	pthread_cond_init(&ctl.done, &attr);
	pthread_condattr_destroy(&attr);
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	ctl.inited = ctl.live = true;
out:
	pthread_mutex_unlock(&ctl.lock);
	return err;
}
