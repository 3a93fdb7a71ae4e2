/* UTF-8 well-formedness, shared by the JSON escaper and the text printed on a terminal. */
#ifndef GPROF_UTF8_H
#define GPROF_UTF8_H

/*
 * Length of the well-formed UTF-8 sequence of 2-4 bytes at s, or minus the length of its
 * maximal ill-formed subpart (Unicode's "substitution of maximal subparts": one U+FFFD each).
 * The lead byte fixes the length and the range of the second byte, which excludes overlong
 * forms (C0, C1, E0 80-9F, F0 80-8F), surrogates (ED A0-BF) and > U+10FFFF (F4 90+, F5-FF).
 * For s[0] < 0x80 the answer is -1: ASCII is the caller's to handle.
 */
static inline int gprof_utf8_seq(const unsigned char *s, const unsigned char *end)
{
	unsigned c = s[0], lo = 0x80, hi = 0xbf;
	int n;

	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return -1;
	lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : lo;
	hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : hi;
	for (int i = 1; i < n; i++) {
		if (s + i >= end || s[i] < lo || s[i] > hi)
			return -i;
		lo = 0x80;
		hi = 0xbf;
	}
	return n;
}

/*
 * Length of the printable character at s (ASCII or well-formed UTF-8), or -1 for a control byte
 * or a byte of an ill-formed sequence, which a terminal must not get as it is.
 */
static inline int gprof_utf8_printable(const unsigned char *s, const unsigned char *end)
{
	if (*s >= 0x80)
		return gprof_utf8_seq(s, end) > 0 ? gprof_utf8_seq(s, end) : -1;
	return *s < 0x20 || *s == 0x7f ? -1 : 1;
}

#endif
