/*
 * JSON syntax for the trace writer: a growable text buffer, integer and fixed-point numbers
 * without printf (the writer formats a million events a second), and string escaping.
 */
#include <errno.h>
#include <stdlib.h>

#include "common/heap.h"
#include "common/utf8.h"
#include "export/internal.h"

int gprof_jbuf_init(struct gprof_jbuf *b, size_t cap)
{
	*b = (struct gprof_jbuf){.cap = cap};
	b->p = gprof_malloc(cap ? cap : 1);
	return b->p ? 0 : -ENOMEM;
}

void gprof_jbuf_free(struct gprof_jbuf *b)
{
	gprof_free(b->p);
	*b = (struct gprof_jbuf){0};
}

char *gprof_jbuf_grow(struct gprof_jbuf *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 64;
	char *p;

	if (b->failed)
		return NULL;
	while (cap - b->len < n)
		cap *= 2;
	p = gprof_realloc(b->p, cap);
	if (!p) {
		b->failed = true;
		return NULL;
	}
	b->p = p;
	b->cap = cap;
	return p + b->len;
}

static const char digit_pairs[201] = "00010203040506070809"
				     "10111213141516171819"
				     "20212223242526272829"
				     "30313233343536373839"
				     "40414243444546474849"
				     "50515253545556575859"
				     "60616263646566676869"
				     "70717273747576777879"
				     "80818283848586878889"
				     "90919293949596979899";

/* Writes v's digits so that they end just before `end`; returns where they start. */
static char *digits_before(char *end, uint64_t v)
{
	while (v >= 100) {
		end -= 2;
		memcpy(end, digit_pairs + 2 * (v % 100), 2);
		v /= 100;
	}
	if (v >= 10) {
		end -= 2;
		memcpy(end, digit_pairs + 2 * v, 2);
	} else {
		*--end = (char)('0' + v);
	}
	return end;
}

void gprof_jbuf_u64(struct gprof_jbuf *b, uint64_t v)
{
	char tmp[20], *s = digits_before(tmp + sizeof(tmp), v);

	gprof_jbuf_put(b, s, (size_t)(tmp + sizeof(tmp) - s));
}

void gprof_jbuf_i64(struct gprof_jbuf *b, int64_t v)
{
	if (v < 0)
		gprof_jbuf_lit(b, "-");
	gprof_jbuf_u64(b, v < 0 ? -(uint64_t)v : (uint64_t)v);
}

void gprof_jbuf_usec(struct gprof_jbuf *b, int64_t ns)
{
	uint64_t u = ns < 0 ? -(uint64_t)ns : (uint64_t)ns;
	char tmp[24], *end = tmp + sizeof(tmp), *s;

	end -= 4;
	end[0] = '.';
	memcpy(end + 1, digit_pairs + 2 * (u % 1000 / 10), 2);
	end[3] = (char)('0' + u % 10);
	s = digits_before(end, u / 1000);
	if (ns < 0)
		*--s = '-';
	gprof_jbuf_put(b, s, (size_t)(tmp + sizeof(tmp) - s));
}

void gprof_jbuf_ratio(struct gprof_jbuf *b, uint64_t num, uint64_t den, unsigned decimals)
{
	static const uint64_t pow10[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
	uint64_t scale, whole, frac;
	unsigned __int128 scaled;
	char tmp[8];

	if (decimals > 6)
		decimals = 6;
	scale = pow10[decimals];
	scaled = den ? ((unsigned __int128)num * scale + den / 2) / den : 0;
	whole = (uint64_t)(scaled / scale);
	frac = (uint64_t)(scaled % scale);
	gprof_jbuf_u64(b, whole);
	gprof_jbuf_lit(b, ".");
	for (unsigned i = decimals; i-- > 0; frac /= 10)
		tmp[i] = (char)('0' + frac % 10);
	while (decimals > 1 && tmp[decimals - 1] == '0')
		decimals--;
	if (decimals == 0)
		tmp[decimals++] = '0';
	gprof_jbuf_put(b, tmp, decimals);
}

void gprof_jbuf_hex(struct gprof_jbuf *b, uint64_t v)
{
	static const char hex[] = "0123456789abcdef";
	char tmp[20], *s = tmp + sizeof(tmp);

	*--s = '"';
	do {
		*--s = hex[v & 15];
		v >>= 4;
	} while (v);
	*--s = 'x';
	*--s = '0';
	*--s = '"';
	gprof_jbuf_put(b, s, (size_t)(tmp + sizeof(tmp) - s));
}

void gprof_jbuf_str(struct gprof_jbuf *b, const char *s, size_t n)
{
	char *d = gprof_jbuf_room(b, GPROF_JSON_ESCAPED_MAX(n) + 2);

	if (!d)
		return;
	d[0] = '"';
	n = gprof_json_escape(d + 1, s, n);
	d[n + 1] = '"';
	b->len += n + 2;
}

/* What one ASCII byte becomes: itself, two bytes, or nothing. */
static size_t escape_ascii(char *d, unsigned c)
{
	static const char two[][2] = {{'\\', '"'}, {'\\', '\\'}, {'\\', 'n'}, {'\\', 't'}};
	int k = c == '"' ? 0 : c == '\\' ? 1 : c == '\n' ? 2 : c == '\t' ? 3 : -1;

	if (k >= 0) {
		if (d)
			memcpy(d, two[k], 2);
		return 2;
	}
	if (c < 0x20 || c == 0x7f)
		return 0;
	if (d)
		*d = (char)c;
	return 1;
}

size_t gprof_json_escape(char *dst, const char *src, size_t n)
{
	static const char fffd[3] = {(char)0xef, (char)0xbf, (char)0xbd};
	const unsigned char *s = (const unsigned char *)src, *end = s + n;
	size_t len = 0;

	while (s < end) {
		const unsigned char *run = s;

		/* The common case: printable ASCII that needs nothing, copied in one go. */
		while (s < end && *s >= 0x20 && *s < 0x7f && *s != '"' && *s != '\\')
			s++;
		if (dst)
			memcpy(dst + len, run, (size_t)(s - run));
		len += (size_t)(s - run);
		if (s == end)
			break;
		if (*s < 0x80) {
			len += escape_ascii(dst ? dst + len : NULL, *s++);
			continue;
		}
		int k = gprof_utf8_seq(s, end);
		const void *out = k > 0 ? (const void *)s : fffd;
		size_t out_len = k > 0 ? (size_t)k : sizeof(fffd);

		if (dst)
			memcpy(dst + len, out, out_len);
		len += out_len;
		s += k > 0 ? k : -k;
	}
	return len;
}
