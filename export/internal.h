/*
 * What export's files share with each other. Not an interface: use export.h, format.h and
 * summary.h. Tests may include it, as they may any module's private header, to test export's
 * internals.
 */
#ifndef GPROF_EXPORT_INTERNAL_H
#define GPROF_EXPORT_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "common/compiler.h"
#include "common/log.h"
#include "common/map.h"
#include "export/export.h"
#include "export/format.h"
#include "export/summary.h"

/* json.c: JSON syntax into a growable buffer. Appends after a failed growth are dropped. */
struct gprof_jbuf {
	char *p;
	size_t len, cap;
	bool failed; /* an allocation failed: the content is incomplete */
};

int gprof_jbuf_init(struct gprof_jbuf *b, size_t cap);
void gprof_jbuf_free(struct gprof_jbuf *b);
char *gprof_jbuf_grow(struct gprof_jbuf *b, size_t n);

/* Where n more bytes can be written, or NULL (then b->failed is set). */
static inline char *gprof_jbuf_room(struct gprof_jbuf *b, size_t n)
{
	if (likely(b->cap - b->len >= n))
		return b->p + b->len;
	return gprof_jbuf_grow(b, n);
}

static inline void gprof_jbuf_put(struct gprof_jbuf *b, const void *s, size_t n)
{
	char *d = gprof_jbuf_room(b, n);

	if (likely(d)) {
		memcpy(d, s, n);
		b->len += n;
	}
}

#define gprof_jbuf_lit(b, s) gprof_jbuf_put((b), "" s, sizeof(s) - 1)
/* `,"key":v` with v written by gprof_jbuf_<kind> (u64, i64, hex). */
#define gprof_jbuf_arg(b, key, kind, v)               \
	do {                                          \
		gprof_jbuf_lit((b), ",\"" key "\":"); \
		gprof_jbuf_##kind((b), (v));          \
	} while (0)

void gprof_jbuf_u64(struct gprof_jbuf *b, uint64_t v);
void gprof_jbuf_i64(struct gprof_jbuf *b, int64_t v);
/* ns written as µs with exactly three decimals ("%lld.%03lld"). */
void gprof_jbuf_usec(struct gprof_jbuf *b, int64_t ns);
/* num/den rounded to `decimals` (<= 6) places, trailing zeros trimmed to one: 1.5, 6.0. */
void gprof_jbuf_ratio(struct gprof_jbuf *b, uint64_t num, uint64_t den, unsigned decimals);
/* "0x1f" with the quotes: pointers as strings, since JSON numbers lose bits above 2^53. */
void gprof_jbuf_hex(struct gprof_jbuf *b, uint64_t v);
/* A JSON string: quotes around gprof_json_escape(s). */
void gprof_jbuf_str(struct gprof_jbuf *b, const char *s, size_t n);

/*
 * TRACE_FORMAT.md's escaping: `"` and `\` get a backslash, newline and tab become \n and \t,
 * other control bytes (0x00-0x1f, 0x7f) are dropped, and each maximal ill-formed UTF-8
 * subpart (overlong, surrogate, > U+10FFFF, truncated, stray continuation) becomes U+FFFD as
 * raw UTF-8. Never writes \u. dst needs GPROF_JSON_ESCAPED_MAX(n) bytes; returns the length.
 * With dst NULL it only counts.
 */
#define GPROF_JSON_ESCAPED_MAX(n) (3 * (size_t)(n))
size_t gprof_json_escape(char *dst, const char *src, size_t n);

/* strtab.c: the interned strings. */
void gprof_strtab_lock(void);
void gprof_strtab_unlock(void);

/* buffer.c: the producers' side, drained by the writer thread. */
#define GPROF_CHUNK_BYTES 65536u
/*
 * A chunk's bytes less a 64-byte header are lines of 64 bytes: an event takes two, a call
 * record one. Events in a chunk, when all are events: 511.
 */
#define GPROF_LINE_BYTES  64u
#define GPROF_CHUNK_LINES ((GPROF_CHUNK_BYTES - GPROF_LINE_BYTES) / GPROF_LINE_BYTES)
#define GPROF_CHUNK_EVENTS \
	(GPROF_CHUNK_LINES / (sizeof(struct gprof_export_event) / GPROF_LINE_BYTES))

/*
 * The chunks' address space, reserved when windows are first wanted (gprof_export_start at the
 * first CUDA call, or the first window), so that a process without CUDA maps nothing: cap_bytes,
 * but under `ulimit -v` at most a quarter of what is left, which the program keeps. 0 (at once when
 * reserved before), or a negative errno: too little is left, or the mapping failed.
 * gprof_buf_bytes(): what was reserved.
 */
int gprof_buf_reserve(size_t cap_bytes);
size_t gprof_buf_bytes(void);
/* Counted drops of events for a window, kept at its slot (gprof_export_window_slot). */
uint64_t gprof_buf_dropped(uint32_t window);
void gprof_buf_reset_dropped(uint32_t window);
uint64_t gprof_buf_dropped_total(void);
/*
 * Chunks holding events the writer has not passed on yet, beyond each producer's current one:
 * how far the writer is behind (approximate; writer thread only).
 */
size_t gprof_buf_backlog(void);
/* After fork in the child (and at shutdown): every later push is dropped. */
void gprof_buf_stop(void);

/*
 * One pass of the writer: calls fn on every run of committed events not yet read, from every
 * producer, then recycles consumed chunks and frees producers of exited threads. Every event
 * committed before the call started (happens-before) is passed. Writer thread only.
 */
typedef void (*gprof_buf_fn)(const struct gprof_export_event *ev, size_t n, void *arg);
size_t gprof_buf_drain(gprof_buf_fn fn, void *arg);

/* output.c: where files go. */
/* From RANK/WORLD_SIZE, OMPI_COMM_WORLD_*, SLURM_PROCID/SLURM_NTASKS, PMI_RANK/PMI_SIZE. */
void gprof_output_rank(char *const *env, struct gprof_rank *r);
/*
 * Expands %h %p %r %q{VAR} %% of tmpl into out; -ENAMETOOLONG if it does not fit, with what
 * fits in out.
 */
int gprof_output_expand(const char *tmpl, char *const *env, char *out, size_t size);
/* The first %q{VAR} of tmpl whose VAR is not set (and so expands to nothing), into name. */
bool gprof_output_unset(const char *tmpl, char *const *env, char *name, size_t size);
/*
 * The output folder: tmpl expanded from the process environment, made absolute against base
 * (the folder the process started in; "" leaves a relative one as it is). On an error, out
 * holds the expansion's beginning, to name it.
 */
int gprof_output_folder(const char *tmpl, const char *base, char *out, size_t size);
/* `<host>_<pid>.<unix_ns><suffix>` into out (suffix: a format's, gprof_format_row). */
int gprof_output_name(uint64_t unix_ns, const char *suffix, char *out, size_t size);
/*
 * Creates dir (mkdir -p) and the file for `<dir>/<name>.partial` (0644): an unnamed one
 * (O_TMPFILE, *unnamed true) that gprof_output_publish() names once its header is in, so that a
 * process killed in between leaves no file without one; where the file system has no
 * O_TMPFILE, the named file at once (O_EXCL, O_NOFOLLOW). Nothing at that name is followed or
 * replaced (-EEXIST). Returns the fd or a negative errno; on failure, `what` says which step.
 */
int gprof_output_create(const char *dir, const char *name, const char **what, bool *unnamed);
/*
 * Gives the unnamed file fd (`ours`: its fstat) its name `path` (`<dir>/<name>.partial`);
 * -EEXIST if something has it, -EBADF if fd is closed or no longer that file (the name is not
 * left to another), -EAGAIN if linkat is refused here: later files are created under their name.
 */
int gprof_output_publish(int fd, const struct stat *ours, const char *path);
/*
 * Renames <path>.partial to path without replacing anything; where renameat2 and link are
 * refused (a seccomp filter, vfat), rename() where nothing is.
 */
int gprof_output_commit(const char *path);

/* file.c: libgprof's descriptors in the program's table. */
/*
 * fd moved above the numbers a program uses (half its RLIMIT_NOFILE, at most 1024; never
 * 0-2), close-on-exec; fd itself is closed. The new descriptor, or -EMFILE.
 */
int gprof_fd_high(int fd);
/* fd's name in /proc for the calling thread, whose descriptor table may be its own (thread.h). */
void gprof_fd_proc_path(char *buf, size_t size, int fd);
/* A file libgprof writes: its descriptor, identity (st_dev, st_ino) and absolute path. */
struct gprof_file {
	int fd;
	dev_t dev;
	ino_t ino;
	char path[PATH_MAX];
};
/* Takes fd (see gprof_fd_high). 0 or a negative errno (f is unchanged then). */
int gprof_file_adopt(struct gprof_file *f, int fd);
/* The path f is opened again by, once an unnamed file has been given one. */
void gprof_file_named(struct gprof_file *f, const char *path);
/*
 * The descriptor to use now: f->fd while it is still the file; when the program closed it or
 * put a file of its own at its number, the file opened again by its path (and checked to be
 * the same file). -EBADF when it cannot be: nothing is written, and the program's
 * descriptor is never closed.
 */
int gprof_file_fd(struct gprof_file *f);
/* Closes the descriptor if it is still ours: 0 or a negative errno. */
int gprof_file_close(struct gprof_file *f);
/* Appends buf at *off, which it advances (pwrite: a file opened again has its own offset). */
int gprof_file_append(struct gprof_file *f, uint64_t *off, const void *buf, size_t len);
/*
 * A file's end: unless err, buf written at offset `at` (a final head over the first); the
 * descriptor closed either way. Returns err, or the write's or the close's error.
 */
int gprof_file_finish(struct gprof_file *f, const void *buf, size_t len, uint64_t at, int err);

/*
 * sink.c: the sinks a format writes into (export/format.h), for the writer to make and free.
 * A sink of each kind begins with struct gprof_sink; the calls keep its first error.
 */
struct gprof_sink_ops {
	int (*head)(struct gprof_sink *s, const char *head, size_t len);
	int (*write)(struct gprof_sink *s, const void *buf, size_t len);
	int (*sync)(struct gprof_sink *s);
	int (*finish)(struct gprof_sink *s, const char *head, size_t len);
	void (*free)(struct gprof_sink *s);
	/* NULL where a sink has no use for them: see gprof_sink_named and gprof_sink_threads. */
	void (*named)(struct gprof_sink *s, const char *path);
	void (*threads)(struct gprof_sink *s, unsigned max, size_t slice_bytes,
			bool (*behind)(void));
};

/*
 * A sink's ops from the prefix of its functions' names, as the kernel's DEFINE_SHOW_ATTRIBUTE():
 * GPROF_SINK_OPS(gz) sets .head = gz_head to .named = gz_named; .threads, where a sink has it,
 * follows in the table.
 */
#define GPROF_SINK_OPS(prefix)                                                 \
	.head = prefix##_head, .write = prefix##_write, .sync = prefix##_sync, \
	.finish = prefix##_finish, .free = prefix##_free, .named = prefix##_named

struct gprof_sink {
	const struct gprof_sink_ops *ops;
	size_t head_len; /* fixed by gprof_sink_head */
	bool started;	 /* the head (or body text) is in: no head may come now */
	int err;	 /* the first error; every later call returns it */
};
/*
 * The sink of that kind on fd (gzip at level 0-9). Takes fd on success (finish or free closes
 * it); on failure the caller keeps it.
 */
struct gprof_sink *gprof_sink_open(enum gprof_sink_kind kind, int fd, int level, int *err);
struct gprof_sink *gprof_sink_gzip(int fd, int level, int *err);
struct gprof_sink *gprof_sink_plain(int fd, int *err);
/*
 * Compressor threads for a gzip sink (other sinks ignore it; call it once, before any write).
 * While behind() says the writer falls behind (NULL: always), at a sync point the body goes
 * on in slices of slice_bytes instead of one stream: each is raw deflate of its own, primed
 * with the text before it (deflateSetDictionary) and ended by a sync flush, so that the slices
 * join in order into the same member; their CRC-32s are combined in order. At each slice's
 * end, while still behind, one more thread is started, up to `max` for all sinks together
 * (at most 16). The writer deflates a slice itself when no thread is free, or none could be
 * started (said once); threads end with the file. A sync seals the slice being filled and
 * waits until everything before it is in the file.
 */
void gprof_sink_threads(struct gprof_sink *s, unsigned max, size_t slice_bytes,
			bool (*behind)(void));
/* The file's path, once an unnamed file has one (gprof_output_publish); file sinks only. */
void gprof_sink_named(struct gprof_sink *s, const char *path);
/* Tests: from now on starting a compressor thread fails (EAGAIN), as pthread_create() can. */
void gprof_sink_fail_threads(bool fail);
/* The same calls into memory (tests): the text is kept uncompressed. NULL: out of memory. */
struct gprof_sink *gprof_sink_memory(void);
const char *gprof_sink_memory_text(const struct gprof_sink *s, size_t *len);
void gprof_sink_free(struct gprof_sink *s);

/* tracks.c: the tracks a window used, for its metadata events. */
struct gprof_seen {
	uint64_t *keys; /* in first-seen order */
	size_t n, cap;
	struct gprof_map index; /* the keys but 0, to their index */
	bool has_zero;
	uint64_t last; /* the last key added or found: most events repeat it */
};

struct gprof_tracks {
	struct gprof_seen threads, streams, devices; /* streams: device << 32 | stream */
	char (*comm)[16];			     /* names, parallel to threads.keys */
	size_t comm_cap;
};

/* Each returns 1 when the track is new, 0 when known, -ENOMEM. */
int gprof_tracks_thread(struct gprof_tracks *k, uint32_t tid);
int gprof_tracks_stream(struct gprof_tracks *k, uint32_t device, uint32_t stream);
int gprof_tracks_device(struct gprof_tracks *k, uint32_t device);
void gprof_tracks_free(struct gprof_tracks *k);
/* /proc/self/task/<tid>/comm, or "" when the thread is gone. */
void gprof_tracks_comm(uint32_t tid, char out[16]);

/* annotations.c: user annotations' spans on the GPU's streams (gpu_user_annotation). */
struct gprof_annotation_span {
	uint64_t start, end;
	uint32_t id, device, stream;
	const struct gprof_export_str *name; /* after finish: NULL for one not to write */
};

struct gprof_annotations {
	struct gprof_map names; /* External id -> its name (a gprof_export_str pointer) */
	struct gprof_map spans; /* (id, device, stream) -> index in v */
	struct gprof_annotation_span *v;
	size_t n, cap;
	bool failed; /* out of memory: some are missing */
};

/* An annotation's host event: its External id and name. */
void gprof_annotations_name(struct gprof_annotations *a, uint32_t id,
			    const struct gprof_export_str *name);
/* GPU work (ts_ns, dur_ns, device, stream) of annotation id. */
void gprof_annotations_work(struct gprof_annotations *a, uint32_t id,
			    const struct gprof_export_event *ev);
/* Sorts v by track and nesting, names each, NULL for those not to write; how many to write. */
size_t gprof_annotations_finish(struct gprof_annotations *a);
void gprof_annotations_free(struct gprof_annotations *a);

/* PyTorch's operators as its profiler kept them, by Kineto's External id (export/opargs.c). */
struct gprof_op_args;
struct gprof_op_entry {
	uint64_t kid;
	const struct gprof_export_str *name;
	size_t args_at, args_len;    /* its args object's members, without braces: see _text */
	uint64_t ts_ns, dur_ns, fwd; /* by PyTorch's clock; fwd: the forward operator's kid */
	uint32_t tid;
	bool user;    /* a record_function scope (user_annotation) */
	bool written; /* set by the writer */
};
/*
 * Parses [[kid, user, name, {args}, ts, dur, tid, fwd], ...] (since_ns: the window's start):
 * the table, or NULL and why.
 */
struct gprof_op_args *gprof_op_args_parse(const char *json, size_t len, uint64_t since_ns,
					  const char **why);
/* Adds what from holds to into (a later hand-over): 0 or -ENOMEM. */
int gprof_op_args_merge(struct gprof_op_args *into, const struct gprof_op_args *from);
size_t gprof_op_args_count(const struct gprof_op_args *a);
/* e's args text (args_len bytes, not NUL-ended). */
const char *gprof_op_args_text(const struct gprof_op_args *a, const struct gprof_op_entry *e);
struct gprof_op_entry *gprof_op_args_find(struct gprof_op_args *a, uint64_t kid);
/* From *i on, the next one not written that ran in the window (until until_ns); or NULL. */
struct gprof_op_entry *gprof_op_args_unwritten(struct gprof_op_args *a, size_t *i,
					       uint64_t until_ns);
void gprof_op_args_free(struct gprof_op_args *a);

/* trace.c: the Kineto schema (gprof_format_kineto). */
#define GPROF_TRACE_HEAD_BYTES 49152u /* the stored block: fixed, fits every header but warnings */
/* The header text, exactly GPROF_TRACE_HEAD_BYTES long, into b (exposed for tests). */
int gprof_trace_head(struct gprof_jbuf *b, const struct gprof_trace_meta *m,
		     const uint64_t *counts);

#endif
