/*
 * Tests of export's JSON layer: string escaping per TRACE_FORMAT.md "Strings" (expected
 * values written from the rules, by hand) and the printf-free number formatting.
 */
#include <jansson.h>
#include <stdint.h>

#include "export/internal.h"
#include "task.h"

#define FFFD "\xef\xbf\xbd"

/* Escapes raw[0..n) as a JSON string; returns the text (caller frees) and its length. */
static char *escape(const char *raw, size_t n, size_t *len)
{
	struct gprof_jbuf b;
	char *text;

	ASSERT_EQ(gprof_jbuf_init(&b, 16), 0);
	gprof_jbuf_str(&b, raw, n);
	ASSERT(!b.failed);
	*len = b.len;
	text = malloc(b.len + 1);
	ASSERT(text);
	memcpy(text, b.p, b.len);
	text[b.len] = '\0';
	gprof_jbuf_free(&b);
	return text;
}

/* The text must hold no raw control byte and no \u, parse strictly, and decode to `want`. */
static void expect_decoded(const char *text, size_t len, const char *want, size_t want_len)
{
	json_error_t err;
	json_t *j;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];

		ASSERT_MSG(c >= 0x20 && c != 0x7f, "raw control byte 0x%02x at %zu", c, i);
		ASSERT_MSG(!(c == '\\' && text[i + 1] == 'u'), "\\u escape at %zu", i);
		i += c == '\\';
	}
	j = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &err);
	ASSERT_MSG(j && json_is_string(j), "jansson: %s", err.text);
	ASSERT_EQ(json_string_length(j), want_len);
	ASSERT_MSG(!memcmp(json_string_value(j), want, want_len), "decoded \"%s\", want \"%s\"",
		   json_string_value(j), want);
	json_decref(j);
}

static void expect_text(const char *raw, size_t n, const char *want_text)
{
	size_t len;
	char *text = escape(raw, n, &len);

	ASSERT_EQ(len, strlen(want_text));
	ASSERT_MSG(!memcmp(text, want_text, len), "\"%.*s\" vs \"%s\"", (int)len, text, want_text);
	free(text);
}

TEST(json_escape_quotes_backslashes)
{
	static const char raw[] = "say \"hi\" \\ path\\to\\\"file\" \\\\";
	size_t len;
	char *text;

	expect_text("a\"b", 3, "\"a\\\"b\"");
	expect_text("a\\b", 3, "\"a\\\\b\"");
	expect_text("", 0, "\"\"");
	text = escape(raw, strlen(raw), &len);
	expect_decoded(text, len, raw, strlen(raw));
	free(text);
}

TEST(json_escape_control_bytes)
{
	char all[34], want[4];
	size_t n = 0, len;
	char *text;

	/* Each control byte alone between two letters: \n and \t kept escaped, others dropped. */
	for (int c = 0; c <= 0x7f; c++) {
		char raw[3] = {'x', (char)c, 'y'};

		if (c >= 0x20 && c != 0x7f)
			continue;
		if (c == '\n')
			expect_text(raw, 3, "\"x\\ny\"");
		else if (c == '\t')
			expect_text(raw, 3, "\"x\\ty\"");
		else
			expect_text(raw, 3, "\"xy\"");
	}
	/* All of them in one string decode to just the newline and the tab. */
	for (int c = 0; c < 0x20; c++)
		all[n++] = (char)c;
	all[n++] = 0x7f;
	text = escape(all, n, &len);
	memcpy(want, "\t\n", 2);
	expect_decoded(text, len, want, 2);
	free(text);
}

/* Input bytes and what they decode to, by Unicode's "maximal subpart" substitution. */
static const struct {
	const char *raw, *want;
} utf8_cases[] = {
    /* overlong forms: the lead (or its second byte) is ill-formed, each byte alone */
    {"\xc0\x80", FFFD FFFD},
    {"\xc1\xbf", FFFD FFFD},
    {"\xe0\x80\x80", FFFD FFFD FFFD},
    {"\xe0\x9f\xbf", FFFD FFFD FFFD},
    {"\xf0\x80\x80\x80", FFFD FFFD FFFD FFFD},
    {"\xf0\x8f\xbf\xbf", FFFD FFFD FFFD FFFD},
    /* surrogates U+D800, U+DFFF */
    {"\xed\xa0\x80", FFFD FFFD FFFD},
    {"\xed\xbf\xbf", FFFD FFFD FFFD},
    /* beyond U+10FFFF, and bytes that never occur */
    {"\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD},
    {"\xf5\x80\x80\x80", FFFD FFFD FFFD FFFD},
    {"\xf8\x88\x80\x80\x80", FFFD FFFD FFFD FFFD FFFD},
    {"\xfe\xff", FFFD FFFD},
    /* truncated sequences: the started part is one subpart */
    {"\xc3x", FFFD "x"},
    {"\xe2\x82x", FFFD "x"},
    {"\xf0\x9f\x98x", FFFD "x"},
    {"\xf0\x9f\x98", FFFD},
    {"\xe2\x82\xe2\x82\xac", FFFD "\xe2\x82\xac"},
    /* stray continuation bytes */
    {"\x80", FFFD},
    {"a\xbf\x80z", "a" FFFD FFFD "z"},
    /* valid: kept byte for byte, including the edges of each range */
    {"\xc2\x80 \xc3\xa9 \xdf\xbf", "\xc2\x80 \xc3\xa9 \xdf\xbf"},
    {"\xe0\xa0\x80 \xe2\x82\xac \xed\x9f\xbf \xee\x80\x80 \xef\xbf\xbf",
     "\xe0\xa0\x80 \xe2\x82\xac \xed\x9f\xbf \xee\x80\x80 \xef\xbf\xbf"},
    {"\xf0\x90\x80\x80 \xf0\x9d\x84\x9e \xf4\x8f\xbf\xbf",
     "\xf0\x90\x80\x80 \xf0\x9d\x84\x9e \xf4\x8f\xbf\xbf"},
};

TEST(json_escape_invalid_utf8)
{
	for (size_t i = 0; i < ARRAY_SIZE(utf8_cases); i++) {
		const char *raw = utf8_cases[i].raw, *want = utf8_cases[i].want;
		size_t len;
		char *text = escape(raw, strlen(raw), &len);

		/* Replacement characters are raw UTF-8 in the text, not escapes. */
		ASSERT_EQ(len, strlen(want) + 2);
		ASSERT_MSG(!memcmp(text + 1, want, strlen(want)), "case %zu", i);
		expect_decoded(text, len, want, strlen(want));
		free(text);
	}
}

/* A byte string that needs every rule, 1 MiB and more, from the cases above plus ASCII. */
TEST(json_escape_1mib)
{
	size_t cap = (1u << 20) + 4096, n = 0, w = 0, len;
	char *raw = malloc(cap), *want = malloc(3 * cap), *text; /* U+FFFD: 3 bytes for 1 */
	unsigned seed = 12345;

	ASSERT(raw && want);
	while (n < (1u << 20)) {
		size_t k = (seed = seed * 1103515245 + 12345) >> 16 & 31;

		if (k < ARRAY_SIZE(utf8_cases)) {
			const char *r = utf8_cases[k].raw, *e = utf8_cases[k].want;

			memcpy(raw + n, r, strlen(r));
			n += strlen(r);
			memcpy(want + w, e, strlen(e));
			w += strlen(e);
		} else {
			static const char *const ascii[] = {"\"",   "\\",    "\n",   "\t", "\x01",
							    "\x7f", "plain", "\x1f", "\r", "\x1b"};
			const char *r = ascii[(k - ARRAY_SIZE(utf8_cases)) % ARRAY_SIZE(ascii)];

			memcpy(raw + n, r, strlen(r));
			n += strlen(r);
			if (r[0] == '\\' || r[0] == '"' || r[0] == '\n' || r[0] == '\t' ||
			    r[0] == 'p')
				memcpy(want + w, r, strlen(r)), w += strlen(r);
		}
		/* A letter after each piece keeps a cut sequence from merging with the next. */
		raw[n++] = '.';
		want[w++] = '.';
	}
	text = escape(raw, n, &len);
	expect_decoded(text, len, want, w);
	free(text);
	free(raw);
	free(want);
}

static void expect_num(void (*put)(struct gprof_jbuf *, int64_t), int64_t v, const char *want)
{
	struct gprof_jbuf b;

	ASSERT_EQ(gprof_jbuf_init(&b, 1), 0);
	put(&b, v);
	ASSERT_MSG(b.len == strlen(want) && !memcmp(b.p, want, b.len), "%lld: \"%.*s\" vs \"%s\"",
		   (long long)v, (int)b.len, b.p, want);
	gprof_jbuf_free(&b);
}

static void put_u64(struct gprof_jbuf *b, int64_t v)
{
	gprof_jbuf_u64(b, (uint64_t)v);
}

static void put_hex(struct gprof_jbuf *b, int64_t v)
{
	gprof_jbuf_hex(b, (uint64_t)v);
}

static uint64_t ratio_args[2];
static unsigned ratio_decimals;

static void put_ratio(struct gprof_jbuf *b, int64_t v)
{
	(void)v;
	gprof_jbuf_ratio(b, ratio_args[0], ratio_args[1], ratio_decimals);
}

static void expect_ratio(uint64_t num, uint64_t den, unsigned decimals, const char *want)
{
	ratio_args[0] = num;
	ratio_args[1] = den;
	ratio_decimals = decimals;
	expect_num(put_ratio, 0, want);
}

TEST(json_numbers)
{
	char want[64];
	uint64_t x = 88172645463325252ull;

	expect_num(gprof_jbuf_usec, 0, "0.000");
	expect_num(gprof_jbuf_usec, 1, "0.001");
	expect_num(gprof_jbuf_usec, 999, "0.999");
	expect_num(gprof_jbuf_usec, 1000, "1.000");
	expect_num(gprof_jbuf_usec, 300125, "300.125");
	expect_num(gprof_jbuf_usec, -1500, "-1.500");
	expect_num(gprof_jbuf_usec, -7, "-0.007");
	expect_num(gprof_jbuf_usec, INT64_MAX, "9223372036854775.807");
	expect_num(put_u64, 0, "0");
	expect_num(put_u64, 99, "99");
	expect_num(put_u64, 100, "100");
	expect_num(put_u64, -1, "18446744073709551615");
	expect_num(gprof_jbuf_i64, INT64_MIN, "-9223372036854775808");
	expect_num(put_hex, 0, "\"0x0\"");
	expect_num(put_hex, 0x7f00deadbeefll, "\"0x7f00deadbeef\"");
	expect_ratio(1048576, 20000, 4, "52.4288");
	expect_ratio(198, 132, 3, "1.5");
	expect_ratio(6, 1, 3, "6.0");
	expect_ratio(2, 3, 3, "0.667");
	expect_ratio(5, 0, 3, "0.0");
	expect_ratio(1, 8, 0, "0.0");
	/* A second computation: printf's "%lld.%03lld" over many values. */
	for (int i = 0; i < 100000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		int64_t ns = (int64_t)(x >> (x & 31)) * (x & 64 ? -1 : 1);
		uint64_t u = ns < 0 ? -(uint64_t)ns : (uint64_t)ns;

		snprintf(want, sizeof(want), "%s%llu.%03llu", ns < 0 ? "-" : "",
			 (unsigned long long)(u / 1000), (unsigned long long)(u % 1000));
		expect_num(gprof_jbuf_usec, ns, want);
		snprintf(want, sizeof(want), "%llu", (unsigned long long)x);
		expect_num(put_u64, (int64_t)x, want);
	}
}
