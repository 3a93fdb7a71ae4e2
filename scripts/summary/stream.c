/*
 * A trace file's text a window at a time, gzip inflated or plain JSON copied in pieces, so that
 * reading a window of 100 M events takes no more memory than one of a thousand.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/compiler.h"
#include "scripts/summary/tool.h"

#define IN_BYTES 65536u /* file bytes read at a time */
/*
 * A value this long that is not whole yet grows the window by its own length rather than by
 * a chunk: it is scanned again after each growth, and doubling keeps that linear.
 */
#define LONG_ITEM 4096u

static int fail(struct tool_stream *s, const char *fmt, ...) GPROF_PRINTF(2, 3);
static int fail(struct tool_stream *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->why, sizeof(s->why), fmt, ap);
	va_end(ap);
	s->failed = true;
	return -1;
}

/* The file's next bytes when those held are used: 0 (file_end at its end), or -1. */
static int read_in(struct tool_stream *s)
{
	size_t n;

	if (s->zs.avail_in || s->file_end)
		return 0;
	n = fread(s->in, 1, IN_BYTES, s->f);
	if (ferror(s->f))
		return fail(s, "cannot read: %s", strerror(errno));
	s->file_end = n == 0;
	s->zs.next_in = s->in;
	s->zs.avail_in = (uInt)n;
	return 0;
}

/* Plain JSON: up to want bytes of the file after end. */
static int copy_text(struct tool_stream *s, size_t want)
{
	while (want && !s->eof) {
		size_t n = want < s->zs.avail_in ? want : s->zs.avail_in;

		memcpy(s->end, s->zs.next_in, n);
		s->end += n;
		want -= n;
		s->zs.next_in += n;
		s->zs.avail_in -= (uInt)n;
		if (read_in(s))
			return -1;
		s->eof = !s->zs.avail_in && s->file_end;
	}
	return 0;
}

/* After the gzip member: nothing more may follow. */
static int gzip_end(struct tool_stream *s)
{
	unsigned long long extra = s->zs.avail_in;

	s->zs.avail_in = 0;
	while (!s->file_end && !read_in(s)) {
		extra += s->zs.avail_in;
		s->zs.avail_in = 0;
	}
	if (s->failed)
		return -1;
	if (extra)
		return fail(s, "%llu bytes after the end of the gzip stream", extra);
	s->eof = true;
	return 0;
}

/* Gzip: up to want bytes of text after end. */
static int inflate_text(struct tool_stream *s, size_t want)
{
	int rc = Z_OK;

	while (want && !s->eof) {
		if (read_in(s))
			return -1;
		if (!s->zs.avail_in)
			return fail(s,
				    "cut short: the gzip stream ends after %llu bytes of text (a "
				    ".partial file? gprof-repair completes one)",
				    (unsigned long long)s->zs.total_out);
		s->zs.next_out = (Bytef *)s->end;
		s->zs.avail_out = (uInt)want;
		rc = inflate(&s->zs, Z_NO_FLUSH);
		want -= (size_t)((char *)s->zs.next_out - s->end);
		s->end = (char *)s->zs.next_out;
		if (rc == Z_STREAM_END)
			return gzip_end(s);
		if (rc != Z_OK && !(rc == Z_BUF_ERROR && !s->zs.avail_in)) /* that: input next */
			return fail(s, "not a readable gzip file: %s",
				    rc == Z_MEM_ERROR ? "out of memory"
				    : s->zs.msg	      ? s->zs.msg
						      : "zlib error");
	}
	return 0;
}

int tool_stream_open(struct tool_stream *s, const char *path, size_t chunk)
{
	*s = (struct tool_stream){.chunk = chunk ? chunk : TOOL_CHUNK_BYTES};
	s->f = fopen(path, "rb");
	if (!s->f)
		return fail(s, "cannot open: %s", strerror(errno));
	s->in = malloc(IN_BYTES);
	s->buf = malloc(s->chunk + 1);
	if (!s->in || !s->buf)
		return fail(s, "out of memory");
	s->cap = s->chunk;
	s->p = s->end = s->buf;
	*s->end = '\0';
	if (read_in(s))
		return -1;
	if (!s->zs.avail_in)
		return fail(s, "not a trace: the file is empty");
	s->gzip = s->zs.avail_in >= 2 && s->in[0] == 0x1f && s->in[1] == 0x8b;
	if (s->gzip && inflateInit2(&s->zs, 16 + MAX_WBITS) != Z_OK)
		return fail(s, "out of memory");
	s->inflating = s->gzip;
	return 0;
}

/* Room for n bytes after end (p and end move with the buffer). */
static int room(struct tool_stream *s, size_t n)
{
	size_t used = (size_t)(s->end - s->buf), cap = 2 * s->cap;
	char *b;

	if (s->cap - used >= n)
		return 0;
	cap = cap > used + n ? cap : used + n;
	b = realloc(s->buf, cap + 1);
	if (!b)
		return fail(s, "out of memory");
	s->p = b + (s->p - s->buf);
	s->end = b + used;
	s->buf = b;
	s->cap = cap;
	return 0;
}

int tool_stream_more(struct tool_stream *s)
{
	size_t keep = (size_t)(s->end - s->p), want = s->chunk;
	char *was;
	int rc;

	if (s->failed)
		return -1;
	if (s->eof)
		return 0;
	if (keep >= LONG_ITEM && keep > want)
		want = keep;
	s->base += (uint64_t)(s->p - s->buf);
	memmove(s->buf, s->p, keep);
	s->p = s->buf;
	s->end = s->buf + keep;
	if (room(s, want))
		return -1;
	was = s->end;
	rc = s->gzip ? inflate_text(s, want) : copy_text(s, want);
	*s->end = '\0';
	if (rc)
		return -1;
	return s->end > was;
}

int tool_stream_drain(struct tool_stream *s)
{
	int rc;

	s->chunk = s->chunk > TOOL_CHUNK_BYTES ? s->chunk : TOOL_CHUNK_BYTES;
	do {
		s->p = s->end;
		rc = tool_stream_more(s);
	} while (rc > 0);
	return rc;
}

void tool_stream_close(struct tool_stream *s)
{
	if (s->inflating)
		inflateEnd(&s->zs);
	if (s->f)
		fclose(s->f);
	free(s->in);
	free(s->buf);
	*s = (struct tool_stream){0};
}
