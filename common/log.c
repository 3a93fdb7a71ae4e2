/* Logging to stderr, and the store of warnings that traces carry in their metadata. */
#include <pthread.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/thread.h"
#include "common/utf8.h"

int gprof_log_level = GPROF_LOG_WARN;

/*
 * What descriptor 2 was when the library started (gprof_log_bind_stderr, before any thread
 * of ours): lines go there only while it is still that file, or a file the program opened
 * for appending (a log it moved its stderr to). Unbound (tests): always.
 */
enum {
	STDERR_UNBOUND,
	STDERR_OPEN,
	STDERR_CLOSED
};
static int stderr_state;
static dev_t stderr_dev;
static ino_t stderr_ino;

void gprof_log_bind_stderr(void)
{
	struct stat st;

	stderr_state = fstat(STDERR_FILENO, &st) == 0 ? STDERR_OPEN : STDERR_CLOSED;
	stderr_dev = st.st_dev;
	stderr_ino = st.st_ino;
}

/* Whether a line may go to descriptor 2 now: never into a file the program opened there. */
static bool stderr_usable(void)
{
	struct stat st;
	int flags;

	if (stderr_state != STDERR_OPEN)
		return stderr_state == STDERR_UNBOUND;
	if (fstat(STDERR_FILENO, &st) != 0)
		return false;
	if (st.st_dev == stderr_dev && st.st_ino == stderr_ino)
		return true;
	flags = fcntl(STDERR_FILENO, F_GETFL);
	return flags >= 0 && (flags & O_APPEND);
}

/* Ring of recent warning lines; written by any thread that warns, read by the exporter. */
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static char kept[GPROF_LOG_KEPT][GPROF_LOG_LINE_MAX];
static unsigned long kept_seq;

static void keep(const char *line)
{
	pthread_mutex_lock(&kept_lock);
	char *slot = kept[kept_seq % GPROF_LOG_KEPT];
	size_t len = strnlen(line, GPROF_LOG_LINE_MAX - 1);

	memcpy(slot, line, len);
	slot[len] = '\0';
	kept_seq++;
	pthread_mutex_unlock(&kept_lock);
}

char *gprof_log_clean(char *dst, size_t cap, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	size_t n = 0;

	while (p < end) {
		int k = gprof_utf8_printable(p, end);
		size_t need = k > 0 ? (size_t)k : 4;

		if (n + need >= cap)
			break;
		if (k > 0)
			memcpy(dst + n, p, need);
		else
			snprintf(dst + n, 5, "\\x%02x", *p);
		n += need;
		p += k > 0 ? k : 1;
	}
	if (cap)
		dst[n] = '\0';
	return dst;
}

void gprof_log(int level, const char *fmt, ...)
{
	char raw[GPROF_LOG_LINE_MAX], line[GPROF_LOG_LINE_MAX];
	int saved_errno = errno;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(raw, GPROF_LOG_LINE_MAX, fmt, ap);
	va_end(ap);
	if (n < 0)
		goto out;
	gprof_log_clean(line, sizeof(line), raw, strnlen(raw, sizeof(raw)));
	n = (int)strlen(line);
	if (level <= GPROF_LOG_WARN)
		keep(line);

	/* One write per line so lines from several threads and processes never interleave. */
	char out[sizeof("gprof: ") + GPROF_LOG_LINE_MAX];
	memcpy(out, "gprof: ", 7);
	memcpy(out + 7, line, (size_t)n);
	out[7 + n] = '\n';
	gprof_log_text(out, 8 + (size_t)n);
out:
	errno = saved_errno;
}

int gprof_why(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
	return -1;
}

int gprof_write_all(int fd, const char *text, size_t len)
{
	while (len) {
		ssize_t n = write(fd, text, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno : EIO;
		text += n;
		len -= (size_t)n;
	}
	return 0;
}

static void write_stderr(const char *text, size_t len)
{
	if (stderr_usable())
		gprof_write_all(STDERR_FILENO, text, len);
}

/*
 * A thread with a descriptor table of its own (thread.h) has no stderr: the relay, a thread of
 * the program's table, writes its text while it waits, one text at a time.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	const char *text;
	size_t len;
	unsigned long asked, done;
	bool running;
} relay = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static void *relay_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "gprof-log");
	pthread_mutex_lock(&relay.lock);
	for (;;) {
		while (relay.done == relay.asked)
			pthread_cond_wait(&relay.cond, &relay.lock);
		write_stderr(relay.text, relay.len);
		relay.done = relay.asked;
		pthread_cond_broadcast(&relay.cond);
	}
	return NULL;
}

/* fork(): the child has no relay thread; the lock may have been held by it. */
static void relay_forked(void)
{
	pthread_mutex_init(&relay.lock, NULL);
	pthread_cond_init(&relay.cond, NULL);
	relay.asked = relay.done = 0;
	relay.running = false;
}

static void relay_atfork(void)
{
	pthread_atfork(NULL, NULL, relay_forked);
}

int gprof_log_relay_start(void)
{
	static pthread_once_t atfork = PTHREAD_ONCE_INIT;
	int err = 0;

	pthread_mutex_lock(&relay.lock);
	if (!relay.running)
		err = gprof_thread_start(NULL, relay_main, NULL);
	relay.running = !err;
	pthread_mutex_unlock(&relay.lock);
	if (!err)
		pthread_once(&atfork, relay_atfork);
	return err;
}

static void relayed(const char *text, size_t len)
{
	unsigned long mine;

	pthread_mutex_lock(&relay.lock);
	while (relay.running && relay.done != relay.asked)
		pthread_cond_wait(&relay.cond, &relay.lock);
	if (relay.running) {
		relay.text = text;
		relay.len = len;
		mine = ++relay.asked;
		pthread_cond_broadcast(&relay.cond);
		while (relay.done != mine)
			pthread_cond_wait(&relay.cond, &relay.lock);
	}
	pthread_mutex_unlock(&relay.lock);
}

void gprof_log_text(const char *text, size_t len)
{
	int saved_errno = errno;

	if (gprof_thread_has_own_fds())
		relayed(text, len);
	else
		write_stderr(text, len);
	errno = saved_errno;
}

unsigned long gprof_log_seq(void)
{
	unsigned long seq;

	pthread_mutex_lock(&kept_lock);
	seq = kept_seq;
	pthread_mutex_unlock(&kept_lock);
	return seq;
}

size_t gprof_log_warnings(unsigned long from_seq, char out[][GPROF_LOG_LINE_MAX], size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&kept_lock);
	if (kept_seq > GPROF_LOG_KEPT && from_seq < kept_seq - GPROF_LOG_KEPT)
		from_seq = kept_seq - GPROF_LOG_KEPT;
	for (unsigned long s = from_seq; s < kept_seq && n < max; s++, n++)
		memcpy(out[n], kept[s % GPROF_LOG_KEPT], GPROF_LOG_LINE_MAX);
	pthread_mutex_unlock(&kept_lock);
	return n;
}
