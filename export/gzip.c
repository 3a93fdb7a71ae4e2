/*
 * The gzip sink: one hand-framed gzip member in a file (the header in a stored block rewritten
 * at the end, the events as raw deflate). While the writer falls behind, compressor threads
 * deflate slices of the body beside it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#define PR_FMT "export: "
#include "common/heap.h"
#include "common/thread.h"
#include "export/internal.h"

/*
 * The member: gzip header (10 bytes), a stored block holding the head (5 bytes of block
 * header, then head_len bytes at GZ_HEAD_AT), zlib's raw deflate of the body, CRC-32, ISIZE.
 * The stored block is not final, and ends on a byte boundary, where zlib's stream begins.
 */
#define GZ_HEAD_AT 15
#define GZ_OUT	   (256u << 10)

/*
 * Slices: once compressor threads are wanted (gz_sink.sliced), the body is cut into slices of
 * par.slice_bytes, each deflated on its own (by a helper thread or the writer) as raw deflate
 * primed with the 32 KiB of text before it and ending in a sync flush, so that they join in
 * order into one stream. Each has its own CRC-32, combined in order as the slices are written.
 */
#define DICT_BYTES    32768u
#define HELPERS_MAX   16u /* the most a sink starts (GPROF_WRITER_THREADS' bound) */
#define IN_FLIGHT_PER 2u  /* sealed slices held per compressor (memory bound) */

enum slice_state {
	SLICE_QUEUED,
	SLICE_BUSY,
	SLICE_DONE
};

struct slice {
	struct slice *next; /* sealed: the next in order; spare: the next spare */
	enum slice_state state;
	int err;
	size_t len; /* of in, which holds par.slice_bytes */
	size_t dict_len, out_len, out_cap;
	uLong crc; /* of in */
	unsigned char *in, *out;
	unsigned char dict[DICT_BYTES]; /* the text before in (its last dict_len bytes) */
};

struct gz_par {
	/* lock guards the sealed list, the slices' states and stop. */
	pthread_mutex_t lock;
	pthread_cond_t work;	   /* helpers wait for a queued slice */
	pthread_cond_t done;	   /* the writer waits for a slice to be done */
	struct slice *head, *tail; /* sealed, in the body's order */
	unsigned sealed, queued;   /* slices on the list, and those not taken yet */
	bool stop;
	/* Writer only. */
	struct slice *fill;  /* taking text, not sealed yet */
	struct slice *spare; /* written, to be reused */
	unsigned max_helpers, n_helpers;
	pthread_t helpers[HELPERS_MAX];
	size_t slice_bytes;
	bool (*behind)(void);
	int level;
	size_t hist_len;
	unsigned char hist[DICT_BYTES]; /* the last body text sealed */
};

struct gz_sink {
	struct gprof_sink base;
	struct gprof_file file;
	uint64_t off; /* bytes written so far: where the next write goes */
	z_stream zs;
	uLong crc;	     /* of the body */
	uint64_t body_len;   /* uncompressed */
	uint64_t since_sync; /* body bytes since the last sync flush */
	bool sliced;	     /* the body goes on in slices (par), not through zs as a stream */
	bool lock_ok;	     /* par's lock and conditions are initialised */
	struct gz_par par;
	size_t out_len;
	unsigned char out[GZ_OUT];
};

/* Compressor threads of every sink together: at most GPROF_WRITER_THREADS (atomic). */
static unsigned helpers_running;
/* Set by tests only: starting a compressor thread fails as pthread_create() can. */
static bool fail_threads;

/* Appends buf to the file. */
static int write_all(struct gz_sink *g, const void *buf, size_t len)
{
	return gprof_file_append(&g->file, &g->off, buf, len);
}

static int gz_out(struct gz_sink *g)
{
	int err = write_all(g, g->out, g->out_len);

	g->out_len = 0;
	return err;
}

/* Feeds zlib until it has taken all input and, for a flush, emitted everything. */
static int gz_deflate(struct gz_sink *g, const void *buf, size_t len, int flush)
{
	int rc, err;

	g->zs.next_in = (Bytef *)buf;
	g->zs.avail_in = (uInt)len;
	for (;;) {
		if (g->out_len == sizeof(g->out) && (err = gz_out(g)))
			return err;
		g->zs.next_out = g->out + g->out_len;
		g->zs.avail_out = (uInt)(sizeof(g->out) - g->out_len);
		rc = deflate(&g->zs, flush);
		g->out_len = sizeof(g->out) - g->zs.avail_out;
		if (rc == Z_STREAM_ERROR)
			return -EIO;
		if (flush == Z_FINISH ? rc == Z_STREAM_END
				      : g->zs.avail_in == 0 && g->zs.avail_out != 0)
			return 0;
	}
}

/* Deflates one slice with zs: primed with the text before it, ended by a sync flush. */
static int slice_deflate(z_stream *zs, struct slice *sl)
{
	int rc;

	sl->crc = crc32(crc32(0, NULL, 0), sl->in, (uInt)sl->len);
	sl->out_len = 0;
	if (deflateReset(zs) != Z_OK ||
	    (sl->dict_len && deflateSetDictionary(zs, sl->dict, (uInt)sl->dict_len) != Z_OK))
		return -EIO;
	zs->next_in = sl->in;
	zs->avail_in = (uInt)sl->len;
	for (;;) {
		if (sl->out_len == sl->out_cap) {
			size_t cap = sl->out_cap ? 2 * sl->out_cap : sl->len / 4 + 256;
			void *p = gprof_realloc(sl->out, cap);

			if (!p)
				return -ENOMEM;
			sl->out = p;
			sl->out_cap = cap;
		}
		zs->next_out = sl->out + sl->out_len;
		zs->avail_out = (uInt)(sl->out_cap - sl->out_len);
		rc = deflate(zs, Z_SYNC_FLUSH);
		sl->out_len = sl->out_cap - zs->avail_out;
		if (rc == Z_STREAM_ERROR)
			return -EIO;
		if (zs->avail_in == 0 && zs->avail_out != 0)
			return 0;
	}
}

/* Under par.lock: the oldest slice no one has taken, now taken; NULL if none. */
static struct slice *take(struct gz_par *par)
{
	for (struct slice *sl = par->head; sl && par->queued; sl = sl->next) {
		if (sl->state == SLICE_QUEUED) {
			sl->state = SLICE_BUSY;
			par->queued--;
			return sl;
		}
	}
	return NULL;
}

/* Under par.lock, which is let go meanwhile: deflates a taken slice. */
static void deflate_taken(struct gz_par *par, z_stream *zs, struct slice *sl)
{
	int err;

	pthread_mutex_unlock(&par->lock);
	err = slice_deflate(zs, sl);
	pthread_mutex_lock(&par->lock);
	sl->err = err;
	sl->state = SLICE_DONE;
	pthread_cond_broadcast(&par->done);
}

static voidpf z_alloc(voidpf opaque, uInt items, uInt size)
{
	(void)opaque;
	return gprof_calloc(items, size);
}

static void z_free(voidpf opaque, voidpf p)
{
	(void)opaque;
	gprof_free(p);
}

/* A raw deflate stream whose state is on libgprof's heap, as the writer's every buffer. */
static int deflate_init(z_stream *zs, int level)
{
	*zs = (z_stream){.zalloc = z_alloc, .zfree = z_free};
	return deflateInit2(zs, level, Z_DEFLATED, -15, GPROF_SINK_MEM_LEVEL, Z_DEFAULT_STRATEGY);
}

/* A compressor thread: deflates queued slices until the sink stops it. */
static void *helper_main(void *arg)
{
	struct gz_par *par = arg;
	z_stream zs;
	bool ok = deflate_init(&zs, par->level) == Z_OK;
	struct slice *sl;

	pthread_setname_np(pthread_self(), "gprof-deflate");
	/* Without a stream of its own it leaves the work to the writer. */
	pthread_mutex_lock(&par->lock);
	while (ok && !par->stop) {
		if ((sl = take(par)))
			deflate_taken(par, &zs, sl);
		else
			pthread_cond_wait(&par->work, &par->lock);
	}
	pthread_mutex_unlock(&par->lock);
	if (ok)
		deflateEnd(&zs);
	return NULL;
}

static bool is_behind(const struct gz_par *par)
{
	return !par->behind || par->behind();
}

/* One more compressor thread, while the writer is behind and the bound allows it. */
static void start_helper(struct gz_par *par)
{
	unsigned n = __atomic_load_n(&helpers_running, __ATOMIC_RELAXED);
	int rc;

	if (par->n_helpers >= par->max_helpers || !is_behind(par))
		return;
	do {
		if (n >= par->max_helpers)
			return;
	} while (!__atomic_compare_exchange_n(&helpers_running, &n, n + 1, true, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	rc = fail_threads ? -EAGAIN
			  : gprof_thread_start(&par->helpers[par->n_helpers], helper_main, par);
	if (rc) {
		char why[GPROF_SPACE_ERROR_MAX];

		__atomic_fetch_sub(&helpers_running, 1, __ATOMIC_RELAXED);
		par->max_helpers = par->n_helpers; /* no more tries for this file */
		pr_warn_once("cannot start a trace compressor thread: %s; the writer thread "
			     "compresses alone, which only takes longer (GPROF_WRITER_THREADS=0 "
			     "says so from the start)",
			     gprof_space_error(rc, why, sizeof(why)));
		return;
	}
	par->n_helpers++;
}

static void stop_helpers(struct gz_par *par)
{
	if (!par->n_helpers)
		return;
	pthread_mutex_lock(&par->lock);
	par->stop = true;
	pthread_cond_broadcast(&par->work);
	pthread_mutex_unlock(&par->lock);
	while (par->n_helpers) {
		pthread_join(par->helpers[--par->n_helpers], NULL);
		__atomic_fetch_sub(&helpers_running, 1, __ATOMIC_RELAXED);
	}
}

/*
 * Writes the slices that are done at the front of the list, in order, combining their CRCs;
 * while more than `keep` remain, deflates queued ones itself or waits for the helpers.
 */
static int put_done(struct gz_sink *g, unsigned keep)
{
	struct gz_par *par = &g->par;
	struct slice *sl;
	int err = 0;

	pthread_mutex_lock(&par->lock);
	while (!err && (sl = par->head) && (sl->state == SLICE_DONE || par->sealed > keep)) {
		if (sl->state != SLICE_DONE) {
			struct slice *mine = take(par);

			if (mine)
				deflate_taken(par, &g->zs, mine);
			else
				pthread_cond_wait(&par->done, &par->lock);
			continue;
		}
		par->head = sl->next;
		par->tail = par->head ? par->tail : NULL;
		par->sealed--;
		pthread_mutex_unlock(&par->lock);
		err = sl->err ? sl->err : write_all(g, sl->out, sl->out_len);
		g->crc = crc32_combine(g->crc, sl->crc, (z_off_t)sl->len);
		g->body_len += sl->len;
		sl->next = par->spare;
		par->spare = sl;
		pthread_mutex_lock(&par->lock);
	}
	pthread_mutex_unlock(&par->lock);
	return err;
}

/* Gives sl the text before it as its dictionary (no longer than sl), then takes sl's end. */
static void prime(struct gz_par *par, struct slice *sl)
{
	size_t keep;

	sl->dict_len = par->hist_len < sl->len ? par->hist_len : sl->len;
	memcpy(sl->dict, par->hist + par->hist_len - sl->dict_len, sl->dict_len);
	if (sl->len >= DICT_BYTES) {
		memcpy(par->hist, sl->in + sl->len - DICT_BYTES, DICT_BYTES);
		par->hist_len = DICT_BYTES;
		return;
	}
	keep = par->hist_len < DICT_BYTES - sl->len ? par->hist_len : DICT_BYTES - sl->len;
	memmove(par->hist, par->hist + par->hist_len - keep, keep);
	memcpy(par->hist + keep, sl->in, sl->len);
	par->hist_len = keep + sl->len;
}

/* The slice being filled goes on the list, for a helper or, when too many wait, the writer. */
static int seal(struct gz_sink *g)
{
	struct gz_par *par = &g->par;
	struct slice *sl = par->fill;

	if (!sl || !sl->len)
		return 0;
	par->fill = NULL;
	prime(par, sl);
	sl->next = NULL;
	sl->state = SLICE_QUEUED;
	start_helper(par);
	pthread_mutex_lock(&par->lock);
	if (par->tail)
		par->tail->next = sl;
	else
		par->head = sl;
	par->tail = sl;
	par->sealed++;
	par->queued++;
	/* The writer alone formats: it deflates only what the helpers leave waiting. */
	if (par->queued > 2 * par->n_helpers)
		deflate_taken(par, &g->zs, take(par));
	else
		pthread_cond_signal(&par->work);
	pthread_mutex_unlock(&par->lock);
	return put_done(g, IN_FLIGHT_PER * (par->n_helpers + 1));
}

static struct slice *slice_get(struct gz_par *par)
{
	struct slice *sl = par->spare;

	if (sl) {
		par->spare = sl->next;
	} else if ((sl = gprof_calloc(1, sizeof(*sl)))) {
		sl->in = gprof_malloc(par->slice_bytes);
		if (!sl->in) {
			gprof_free(sl);
			return NULL;
		}
	}
	sl->len = 0;
	return sl;
}

static int slices_write(struct gz_sink *g, const char *buf, size_t len)
{
	struct gz_par *par = &g->par;
	int err = 0;

	while (len && !err) {
		struct slice *sl = par->fill ? par->fill : (par->fill = slice_get(par));
		size_t n;

		if (!sl)
			return -ENOMEM;
		n = par->slice_bytes - sl->len < len ? par->slice_bytes - sl->len : len;
		memcpy(sl->in + sl->len, buf, n);
		sl->len += n;
		buf += n;
		len -= n;
		if (sl->len == par->slice_bytes)
			err = seal(g);
	}
	return err;
}

/* Everything sealed and written, the helpers gone, zs ready for the final block. */
static int slices_end(struct gz_sink *g)
{
	int err = seal(g);

	if (!err)
		err = put_done(g, 0);
	stop_helpers(&g->par);
	if (!err && deflateReset(&g->zs) != Z_OK)
		err = -EIO;
	return err;
}

static void slices_free(struct gz_par *par)
{
	struct slice *lists[] = {par->head, par->spare, par->fill};

	stop_helpers(par);
	for (size_t i = 0; i < ARRAY_SIZE(lists); i++) {
		for (struct slice *sl = lists[i], *next; sl; sl = next) {
			next = i < 2 ? sl->next : NULL;
			gprof_free(sl->in);
			gprof_free(sl->out);
			gprof_free(sl);
		}
	}
	pthread_mutex_destroy(&par->lock);
	pthread_cond_destroy(&par->work);
	pthread_cond_destroy(&par->done);
}

/*
 * At a sync point of the stream (since_sync 0): from here on the body goes in slices if
 * compressor threads are allowed and the writer is behind. The stream's window primes the
 * first slice.
 */
static void maybe_slice(struct gz_sink *g)
{
	uInt n = DICT_BYTES;

	if (g->sliced || !g->lock_ok || g->since_sync || !is_behind(&g->par))
		return;
	g->par.hist_len = deflateGetDictionary(&g->zs, g->par.hist, &n) == Z_OK ? n : 0;
	g->sliced = true;
}

static int gz_sync(struct gprof_sink *s)
{
	struct gz_sink *g = (struct gz_sink *)s;
	int err;

	if (g->sliced)
		return (err = seal(g)) ? err : put_done(g, 0);
	if (!g->since_sync)
		return 0;
	g->since_sync = 0;
	err = gz_deflate(g, NULL, 0, Z_SYNC_FLUSH);
	return err ? err : gz_out(g);
}

static int gz_write(struct gprof_sink *s, const void *buf, size_t len)
{
	struct gz_sink *g = (struct gz_sink *)s;
	int err;

	for (size_t n; len; buf = (const char *)buf + n, len -= n) {
		if (!g->since_sync)
			maybe_slice(g);
		if (g->sliced)
			return slices_write(g, buf, len);
		n = len < GPROF_SINK_SYNC_BYTES ? len : GPROF_SINK_SYNC_BYTES;
		g->crc = crc32(g->crc, buf, (uInt)n);
		g->body_len += n;
		g->since_sync += n;
		err = gz_deflate(g, buf, n, Z_NO_FLUSH);
		if (!err && g->since_sync >= GPROF_SINK_SYNC_BYTES)
			err = gz_sync(s);
		if (err)
			return err;
	}
	return 0;
}

static void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static int gz_finish(struct gprof_sink *s, const char *head, size_t len)
{
	struct gz_sink *g = (struct gz_sink *)s;
	unsigned char trailer[8];
	uLong crc = crc32(0, (const Bytef *)head, (uInt)len);
	int err = g->sliced ? slices_end(g) : 0;

	if (!err)
		err = gz_deflate(g, NULL, 0, Z_FINISH);

	if (!err)
		err = gz_out(g);
	put_le32(trailer, (uint32_t)crc32_combine(crc, g->crc, (z_off_t)g->body_len));
	put_le32(trailer + 4, (uint32_t)(len + g->body_len));
	if (!err)
		err = write_all(g, trailer, sizeof(trailer));
	return gprof_file_finish(&g->file, head, len, GZ_HEAD_AT, err);
}

static void gz_free(struct gprof_sink *s)
{
	struct gz_sink *g = (struct gz_sink *)s;

	if (g->lock_ok)
		slices_free(&g->par);
	deflateEnd(&g->zs);
	gprof_file_close(&g->file);
	gprof_free(g);
}

/* gzip header (no name, no mtime, OS unix), then the head as a stored block. */
static int gz_head(struct gprof_sink *s, const char *head, size_t len)
{
	struct gz_sink *g = (struct gz_sink *)s;
	unsigned char start[GZ_HEAD_AT] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0};

	if (len > 0xffff)
		return -EINVAL;
	start[11] = (unsigned char)len;
	start[12] = (unsigned char)(len >> 8);
	start[13] = (unsigned char)~len;
	start[14] = (unsigned char)(~len >> 8);
	memcpy(g->out, start, sizeof(start));
	memcpy(g->out + sizeof(start), head, len);
	g->out_len = sizeof(start) + len;
	return gz_out(g);
}

static void gz_threads(struct gprof_sink *s, unsigned max, size_t slice_bytes, bool (*behind)(void))
{
	struct gz_sink *g = (struct gz_sink *)s;
	struct gz_par *par = &g->par;

	if (g->lock_ok || !max || !slice_bytes)
		return;
	g->lock_ok = true;
	pthread_mutex_init(&par->lock, NULL);
	pthread_cond_init(&par->work, NULL);
	pthread_cond_init(&par->done, NULL);
	par->max_helpers = max < HELPERS_MAX ? max : HELPERS_MAX;
	par->slice_bytes = slice_bytes;
	par->behind = behind;
}

static void gz_named(struct gprof_sink *s, const char *path)
{
	gprof_file_named(&((struct gz_sink *)s)->file, path);
}

static const struct gprof_sink_ops gz_ops = {
    GPROF_SINK_OPS(gz),
    .threads = gz_threads,
};

struct gprof_sink *gprof_sink_gzip(int fd, int level, int *err)
{
	struct gz_sink *g = gprof_calloc(1, sizeof(*g));

	*err = -ENOMEM;
	if (!g)
		return NULL;
	g->base = (struct gprof_sink){.ops = &gz_ops};
	g->file.fd = -1;
	g->par.level = level;
	if (deflate_init(&g->zs, level)) {
		gprof_free(g);
		return NULL;
	}
	*err = gprof_file_adopt(&g->file, fd);
	g->crc = crc32(0, NULL, 0);
	if (*err) {
		g->file.fd = -1; /* the caller still owns it */
		gz_free(&g->base);
		return NULL;
	}
	return &g->base;
}

void gprof_sink_fail_threads(bool fail)
{
	fail_threads = fail;
}
