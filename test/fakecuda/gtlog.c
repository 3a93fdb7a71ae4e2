/*
 * The ground-truth log: with FAKEGPU_LOG=path every API call and every completed GPU operation
 * is appended to `path` as one JSON line, whether or not a CUPTI client listens.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test/fakecuda/sim.h"

/* Opened once by open_log(); -1 when FAKEGPU_LOG is unset or cannot be opened. */
static int log_fd = -1;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static void open_log(void)
{
	const char *path = getenv("FAKEGPU_LOG");

	if (!path || !*path)
		return;
	log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (log_fd < 0)
		perror("fakecuda: FAKEGPU_LOG");
}

bool fakecuda_log_enabled(void)
{
	pthread_once(&log_once, open_log);
	return log_fd >= 0;
}

/*
 * Lines are written with one write(2) to an O_APPEND file, so lines of concurrent threads (and
 * processes) never interleave and no lock is held; a line costs one system call.
 */
void fakecuda_log_v(const char *fmt, va_list ap)
{
	char small[1024], *line = small;
	va_list ap2;
	int n;

	if (!fakecuda_log_enabled())
		return;
	va_copy(ap2, ap);
	n = vsnprintf(small + 1, sizeof(small) - 2, fmt, ap);
	if (n < 0)
		goto out;
	if ((size_t)n + 3 > sizeof(small)) {
		line = malloc((size_t)n + 3);
		if (!line)
			goto out;
		vsnprintf(line + 1, (size_t)n + 1, fmt, ap2);
	}
	line[0] = '{';
	line[n + 1] = '}';
	line[n + 2] = '\n';
	if (write(log_fd, line, (size_t)n + 3) < 0)
		perror("fakecuda: FAKEGPU_LOG");
	if (line != small)
		free(line);
out:
	va_end(ap2);
}

void fakecuda_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fakecuda_log_v(fmt, ap);
	va_end(ap);
}

/* Length of the valid UTF-8 sequence at s, or 0 if it is not one. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;

	/* No overlong forms, surrogates or code points past U+10FFFF (what jansson accepts). */
	if (s[0] >= 0xf5 || (s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* Escapes for JSON: quotes, backslashes and control bytes; invalid UTF-8 becomes U+FFFD. */
char *fakecuda_log_str(char *buf, size_t size, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t o = 0;

	buf[o++] = '"';
	while (*p && o + 8 < size) {
		size_t n = *p < 0x80 ? 1 : utf8_len(p);

		if (*p == '"' || *p == '\\') {
			buf[o++] = '\\';
			buf[o++] = (char)*p++;
		} else if (*p < 0x20) {
			o += (size_t)snprintf(buf + o, size - o, "\\u%04x", *p++);
		} else if (n == 0) {
			memcpy(buf + o, "\xef\xbf\xbd", 3);
			o += 3;
			p++;
		} else {
			memcpy(buf + o, p, n);
			o += n;
			p += n;
		}
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}
