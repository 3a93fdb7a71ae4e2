/*
 * Where a trace's bytes go: one hand-framed gzip member in a file (the header in a stored
 * block rewritten at the end, the events as raw deflate), or memory for tests.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include "export/internal.h"

struct sink_ops {
	int (*write)(struct gprof_sink *s, const void *buf, size_t len);
	int (*sync)(struct gprof_sink *s);
	int (*finish)(struct gprof_sink *s, const char *head, size_t len);
	void (*free)(struct gprof_sink *s);
};

struct gprof_sink {
	const struct sink_ops *ops;
	size_t head_len; /* fixed at open */
	int err;	 /* the first error; every later call returns it */
};

/*
 * The member: gzip header (10 bytes), a stored block holding the head (5 bytes of block
 * header, then head_len bytes at GZ_HEAD_AT), zlib's raw deflate of the body, CRC-32, ISIZE.
 * The stored block is not final, and ends on a byte boundary, where zlib's stream begins.
 */
#define GZ_HEAD_AT 15
#define GZ_OUT	   (256u << 10)

struct gz_sink {
	struct gprof_sink base;
	struct gprof_file file;
	uint64_t off; /* bytes written so far: where the next write goes */
	z_stream zs;
	uLong crc;	     /* of the body */
	uint64_t body_len;   /* uncompressed */
	uint64_t since_sync; /* body bytes since the last sync flush */
	size_t out_len;
	unsigned char out[GZ_OUT];
};

/* Appends buf to the file (pwrite: a file opened again has its own offset). */
static int write_all(struct gz_sink *g, const void *buf, size_t len)
{
	const char *p = buf;
	int fd = gprof_file_fd(&g->file);

	while (len && fd >= 0) {
		ssize_t n = pwrite(fd, p, len, (off_t)g->off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
		g->off += (uint64_t)n;
	}
	return fd < 0 ? fd : 0;
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

static int gz_sync(struct gprof_sink *s)
{
	struct gz_sink *g = (struct gz_sink *)s;
	int err;

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
	int err = gz_deflate(g, NULL, 0, Z_FINISH), fd, close_err;

	if (!err)
		err = gz_out(g);
	put_le32(trailer, (uint32_t)crc32_combine(crc, g->crc, (z_off_t)g->body_len));
	put_le32(trailer + 4, (uint32_t)(len + g->body_len));
	if (!err)
		err = write_all(g, trailer, sizeof(trailer));
	fd = err ? -1 : gprof_file_fd(&g->file);
	if (!err && fd < 0)
		err = fd;
	if (!err && pwrite(fd, head, len, GZ_HEAD_AT) != (ssize_t)len)
		err = errno ? -errno : -EIO;
	close_err = gprof_file_close(&g->file);
	return err ? err : close_err;
}

static void gz_free(struct gprof_sink *s)
{
	struct gz_sink *g = (struct gz_sink *)s;

	deflateEnd(&g->zs);
	gprof_file_close(&g->file);
	free(g);
}

static const struct sink_ops gz_ops = {
    .write = gz_write,
    .sync = gz_sync,
    .finish = gz_finish,
    .free = gz_free,
};

/* gzip header (no name, no mtime, OS unix), then the stored block's header. */
static int gz_begin(struct gz_sink *g, const char *head, size_t len)
{
	unsigned char start[GZ_HEAD_AT] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0};

	start[11] = (unsigned char)len;
	start[12] = (unsigned char)(len >> 8);
	start[13] = (unsigned char)~len;
	start[14] = (unsigned char)(~len >> 8);
	memcpy(g->out, start, sizeof(start));
	memcpy(g->out + sizeof(start), head, len);
	g->out_len = sizeof(start) + len;
	return gz_out(g);
}

struct gprof_sink *gprof_sink_gzip(int fd, int level, const char *head, size_t len, int *err)
{
	struct gz_sink *g = calloc(1, sizeof(*g));

	*err = -ENOMEM;
	if (!g)
		return NULL;
	g->base = (struct gprof_sink){.ops = &gz_ops, .head_len = len};
	g->file.fd = -1;
	if (len > 0xffff || deflateInit2(&g->zs, level, Z_DEFLATED, -15, GPROF_SINK_MEM_LEVEL,
					 Z_DEFAULT_STRATEGY)) {
		*err = len > 0xffff ? -EINVAL : -ENOMEM;
		free(g);
		return NULL;
	}
	*err = gprof_file_adopt(&g->file, fd);
	g->crc = crc32(0, NULL, 0);
	if (!*err)
		*err = gz_begin(g, head, len);
	if (*err) {
		g->file.fd = -1; /* the caller still owns it */
		gz_free(&g->base);
		return NULL;
	}
	return &g->base;
}

/* The memory sink: the text as it would decompress. */
struct mem_sink {
	struct gprof_sink base;
	struct gprof_jbuf text;
};

static int mem_write(struct gprof_sink *s, const void *buf, size_t len)
{
	struct mem_sink *m = (struct mem_sink *)s;

	gprof_jbuf_put(&m->text, buf, len);
	return m->text.failed ? -ENOMEM : 0;
}

static int mem_sync(struct gprof_sink *s)
{
	(void)s;
	return 0;
}

static int mem_finish(struct gprof_sink *s, const char *head, size_t len)
{
	struct mem_sink *m = (struct mem_sink *)s;

	memcpy(m->text.p, head, len);
	return m->text.failed ? -ENOMEM : 0;
}

static void mem_free(struct gprof_sink *s)
{
	struct mem_sink *m = (struct mem_sink *)s;

	gprof_jbuf_free(&m->text);
	free(m);
}

static const struct sink_ops mem_ops = {
    .write = mem_write,
    .sync = mem_sync,
    .finish = mem_finish,
    .free = mem_free,
};

struct gprof_sink *gprof_sink_memory(const char *head, size_t len)
{
	struct mem_sink *m = calloc(1, sizeof(*m));

	if (!m || gprof_jbuf_init(&m->text, len + 4096)) {
		free(m);
		return NULL;
	}
	m->base = (struct gprof_sink){.ops = &mem_ops, .head_len = len};
	gprof_jbuf_put(&m->text, head, len);
	return &m->base;
}

const char *gprof_sink_memory_text(const struct gprof_sink *s, size_t *len)
{
	const struct mem_sink *m = (const struct mem_sink *)s;

	*len = m->text.len;
	return m->text.p;
}

/* The calls below keep the first error: after it nothing more is written. */
int gprof_sink_write(struct gprof_sink *s, const void *buf, size_t len)
{
	if (!s->err && len)
		s->err = s->ops->write(s, buf, len);
	return s->err;
}

int gprof_sink_sync(struct gprof_sink *s)
{
	if (!s->err)
		s->err = s->ops->sync(s);
	return s->err;
}

int gprof_sink_finish(struct gprof_sink *s, const char *head, size_t len)
{
	if (!s->err)
		s->err = len == s->head_len ? s->ops->finish(s, head, len) : -EINVAL;
	return s->err;
}

void gprof_sink_free(struct gprof_sink *s)
{
	if (s)
		s->ops->free(s);
}
