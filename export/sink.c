/*
 * Where a trace's bytes go: the calls every sink answers (the first error is kept), the sink
 * of each kind, and the plain text sink, in a file or in memory for tests. The gzip sink is
 * export/gzip.c.
 */
#include <errno.h>
#include <stdlib.h>

#include "common/heap.h"
#include "export/internal.h"

/*
 * The text as it is: in memory (tests), or in a file, where text holds what is not written
 * yet, handed on at a sync or when TEXT_OUT bytes wait.
 */
#define TEXT_OUT (256u << 10)

struct text_sink {
	struct gprof_sink base;
	struct gprof_jbuf text;
	bool in_file;
	struct gprof_file file;
	uint64_t off; /* bytes written to the file so far */
};

static int text_out(struct text_sink *t)
{
	int err = gprof_file_append(&t->file, &t->off, t->text.p, t->text.len);

	t->text.len = 0;
	return err;
}

static int text_write(struct gprof_sink *s, const void *buf, size_t len)
{
	struct text_sink *t = (struct text_sink *)s;

	gprof_jbuf_put(&t->text, buf, len);
	if (t->text.failed)
		return -ENOMEM;
	return t->in_file && t->text.len >= TEXT_OUT ? text_out(t) : 0;
}

static int text_head(struct gprof_sink *s, const char *head, size_t len)
{
	return text_write(s, head, len);
}

static int text_sync(struct gprof_sink *s)
{
	struct text_sink *t = (struct text_sink *)s;

	return t->in_file ? text_out(t) : 0;
}

static int text_finish(struct gprof_sink *s, const char *head, size_t len)
{
	struct text_sink *t = (struct text_sink *)s;

	if (t->in_file)
		return gprof_file_finish(&t->file, head, len, 0, text_out(t));
	memcpy(t->text.p, head, len);
	return t->text.failed ? -ENOMEM : 0;
}

static void text_free(struct gprof_sink *s)
{
	struct text_sink *t = (struct text_sink *)s;

	gprof_jbuf_free(&t->text);
	if (t->in_file)
		gprof_file_close(&t->file);
	gprof_free(t);
}

static void text_named(struct gprof_sink *s, const char *path)
{
	gprof_file_named(&((struct text_sink *)s)->file, path);
}

static const struct gprof_sink_ops text_ops = {
    GPROF_SINK_OPS(text),
};

/* A text sink in the file fd, or in memory (fd -1). */
static struct gprof_sink *text_new(int fd, int *err)
{
	struct text_sink *t = gprof_calloc(1, sizeof(*t));

	*err = -ENOMEM;
	if (!t || gprof_jbuf_init(&t->text, 65536)) {
		gprof_free(t);
		return NULL;
	}
	t->base = (struct gprof_sink){.ops = &text_ops};
	t->in_file = fd >= 0;
	t->file.fd = -1;
	*err = t->in_file ? gprof_file_adopt(&t->file, fd) : 0;
	if (*err) {
		t->in_file = false; /* the caller still owns fd */
		text_free(&t->base);
		return NULL;
	}
	return &t->base;
}

struct gprof_sink *gprof_sink_plain(int fd, int *err)
{
	return text_new(fd, err);
}

struct gprof_sink *gprof_sink_memory(void)
{
	int err;

	return text_new(-1, &err);
}

const char *gprof_sink_memory_text(const struct gprof_sink *s, size_t *len)
{
	const struct text_sink *t = (const struct text_sink *)s;

	*len = t->text.len;
	return t->text.p;
}

struct gprof_sink *gprof_sink_open(enum gprof_sink_kind kind, int fd, int level, int *err)
{
	switch (kind) {
	case GPROF_SINK_GZIP:
		return gprof_sink_gzip(fd, level, err);
	case GPROF_SINK_PLAIN:
		return gprof_sink_plain(fd, err);
	}
	*err = -EINVAL;
	return NULL;
}

void gprof_sink_threads(struct gprof_sink *s, unsigned max, size_t slice_bytes,
			bool (*behind)(void))
{
	if (s->ops->threads)
		s->ops->threads(s, max, slice_bytes, behind);
}

void gprof_sink_named(struct gprof_sink *s, const char *path)
{
	if (s->ops->named)
		s->ops->named(s, path);
}

/* The calls below keep the first error: after it nothing more is written. */
int gprof_sink_head(struct gprof_sink *s, const char *head, size_t len)
{
	if (s->started)
		return s->err = s->err ? s->err : -EINVAL;
	s->started = true;
	s->head_len = len;
	if (!s->err)
		s->err = s->ops->head(s, head, len);
	return s->err;
}

int gprof_sink_write(struct gprof_sink *s, const void *buf, size_t len)
{
	if (!s->err && len)
		s->err = s->ops->write(s, buf, len);
	s->started = true;
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
