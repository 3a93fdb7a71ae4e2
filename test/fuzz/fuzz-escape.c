/*
 * libFuzzer target: the JSON string escaper (export/json.c) against TRACE_FORMAT.md's rules,
 * checked by undoing it: the output is valid UTF-8 without control bytes or a quote that has
 * no backslash, its only escapes are \" \\ \n \t, and unescaped it is the input with control
 * bytes but \n and \t removed and each ill-formed sequence replaced by U+FFFD.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "export/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const unsigned char fffd[] = {0xef, 0xbf, 0xbd};

/* The length of a well-formed UTF-8 sequence at s[0..n), decoded to check its range; 0 if none. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
	size_t len = s[0] < 0x80		   ? 1
		     : s[0] >= 0xc0 && s[0] < 0xe0 ? 2
		     : s[0] >= 0xe0 && s[0] < 0xf0 ? 3
		     : s[0] >= 0xf0 && s[0] < 0xf8 ? 4
						   : 0;
	uint32_t cp = len == 1 ? s[0] : s[0] & (0xff >> (len + 1));

	if (!len || len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	return cp >= min[len] && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff) ? len : 0;
}

/* What the input must become: kept, dropped or U+FFFD, with runs of U+FFFD made one. */
static size_t expect(const unsigned char *s, size_t n, unsigned char *out)
{
	size_t len = 0;

	for (size_t i = 0, k; i < n; i += k ? k : 1) {
		bool rep;

		k = utf8_len(s + i, n - i);
		rep = !k || (k == 3 && !memcmp(s + i, fffd, 3)); /* U+FFFD, made or given */
		if (k == 1 && (s[i] < 0x20 || s[i] == 0x7f) && s[i] != '\n' && s[i] != '\t')
			continue; /* dropped */
		if (rep && len >= 3 && !memcmp(out + len - 3, fffd, 3))
			continue; /* runs of U+FFFD made one */
		memcpy(out + len, rep ? fffd : s + i, rep ? 3 : k);
		len += rep ? 3 : k;
	}
	return len;
}

/* Undoes the escapes of out[0..n) in place; aborts on anything the rules forbid. */
static size_t unescape(unsigned char *out, size_t n)
{
	size_t len = 0;

	for (size_t i = 0, k; i < n; i += k) {
		k = utf8_len(out + i, n - i);
		if (!k || out[i] < 0x20 || out[i] == 0x7f || out[i] == '"')
			abort();
		if (out[i] == '\\') {
			if (i + 1 == n || !strchr("\"\\nt", out[i + 1]) || !out[i + 1])
				abort();
			out[len++] = out[i + 1] == 'n'	 ? '\n'
				     : out[i + 1] == 't' ? '\t'
							 : out[i + 1];
			k = 2;
			continue;
		}
		/* Runs of U+FFFD made one, as expect() does. */
		if (k == 3 && !memcmp(out + i, fffd, 3) && len >= 3 &&
		    !memcmp(out + len - 3, fffd, 3))
			continue;
		memmove(out + len, out + i, k);
		len += k;
	}
	return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char *out = malloc(GPROF_JSON_ESCAPED_MAX(size) + 1);
	unsigned char *want = malloc(3 * size + 1);
	size_t len, want_len;

	if (!out || !want)
		abort();
	len = gprof_json_escape((char *)out, (const char *)data, size);
	if (len > GPROF_JSON_ESCAPED_MAX(size) ||
	    len != gprof_json_escape(NULL, (const char *)data, size))
		abort();
	want_len = expect(data, size, want);
	len = unescape(out, len);
	if (len != want_len || memcmp(out, want, len))
		abort();
	free(out);
	free(want);
	return 0;
}
