/*
 * Logging: every line starts with "gprof: " and goes to stderr in one write(2).
 * A file may define PR_FMT (e.g. "collector: ") before including this header.
 */
#ifndef GPROF_LOG_H
#define GPROF_LOG_H

#include <stddef.h>
#include "common/compiler.h"

#ifndef PR_FMT
#define PR_FMT ""
#endif

enum gprof_log_level {
	GPROF_LOG_ERROR,
	GPROF_LOG_WARN,
	GPROF_LOG_INFO,
	GPROF_LOG_DEBUG,
};

/* Written once by the library's init from GPROF_LOG; read by every macro below. */
extern int gprof_log_level;

/*
 * From the library's start-up: remembers which file descriptor 2 is. Lines then go to it only
 * while it is still that file (or one the program opened for appending there): with stderr
 * closed at start, a file the program opens later takes number 2 and must not get our lines.
 */
void gprof_log_bind_stderr(void);
/* Text already made of gprof: lines (the summary), to stderr by the same rule. */
void gprof_log_text(const char *text, size_t len);
/*
 * Starts the thread that writes the lines of threads with a descriptor table of their own
 * (thread.h): call it from a thread of the program's table, as gprof_thread_fds_ready does.
 * 0 (also when it runs already) or a negative errno.
 */
int gprof_log_relay_start(void);
/* All of text to fd, through short writes and EINTR: 0 or an errno. */
int gprof_write_all(int fd, const char *text, size_t len);

/*
 * For the callers that hand a failure's reason back rather than print it (gprof-summary, the
 * tests' trace checker): formats it into why (n bytes with the NUL) and returns -1.
 */
int gprof_why(char *why, size_t n, const char *fmt, ...) GPROF_PRINTF(3, 4);

/* Every line is made safe for a terminal first (gprof_log_clean), whatever its values hold. */
void gprof_log(int level, const char *fmt, ...) GPROF_PRINTF(2, 3);

/*
 * Copies s[0..len) into dst (cap bytes with the NUL) so it prints as one line: valid UTF-8 as
 * it is, every control byte and every byte of an invalid sequence as \xNN; cut at a whole
 * character where it does not fit. Returns dst.
 */
char *gprof_log_clean(char *dst, size_t cap, const char *s, size_t len);

/*
 * Warnings kept for the trace metadata: each warning line printed is also stored here
 * (the newest GPROF_LOG_KEPT of them). gprof_log_warnings() copies those with a sequence
 * number >= from_seq into out[] and returns how many; gprof_log_seq() is the next number.
 */
#define GPROF_LOG_KEPT	   32
#define GPROF_LOG_LINE_MAX 512
unsigned long gprof_log_seq(void);
size_t gprof_log_warnings(unsigned long from_seq, char out[][GPROF_LOG_LINE_MAX], size_t max);

#define pr_log(lvl, fmt, ...)                                        \
	do {                                                         \
		if (unlikely(gprof_log_level >= (lvl)))              \
			gprof_log((lvl), PR_FMT fmt, ##__VA_ARGS__); \
	} while (0)

#define pr_err(fmt, ...)  pr_log(GPROF_LOG_ERROR, fmt, ##__VA_ARGS__)
#define pr_warn(fmt, ...) pr_log(GPROF_LOG_WARN, fmt, ##__VA_ARGS__)
#define pr_info(fmt, ...) pr_log(GPROF_LOG_INFO, fmt, ##__VA_ARGS__)
#define pr_dbg(fmt, ...)  pr_log(GPROF_LOG_DEBUG, fmt, ##__VA_ARGS__)

/* Warn once per call site for conditions that repeat. */
#define pr_warn_once(fmt, ...)                                           \
	do {                                                             \
		static int warned_;                                      \
		if (!__atomic_exchange_n(&warned_, 1, __ATOMIC_RELAXED)) \
			pr_warn(fmt, ##__VA_ARGS__);                     \
	} while (0)

#endif
