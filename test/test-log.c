/* Tests of common/log: line format and the warnings kept for trace metadata. */
#include <fcntl.h>
#include <unistd.h>

#include "common/log.h"
#include "task.h"

TEST(log_prefix_and_kept_warnings)
{
	char path[] = "/tmp/gprof-test-log-XXXXXX";
	int fd = mkstemp(path);
	char buf[4096] = {0};
	char kept_lines[4][GPROF_LOG_LINE_MAX];

	ASSERT(fd >= 0);
	unlink(path);
	dup2(fd, STDERR_FILENO);
	unsigned long seq = gprof_log_seq();
	pr_warn("first %d", 1);
	pr_info("hidden at the default level");
	pr_err("second");
	ASSERT_EQ(gprof_log_warnings(seq, kept_lines, 4), 2);
	ASSERT_STR_EQ(kept_lines[0], "first 1");
	ASSERT_STR_EQ(kept_lines[1], "second");
	ASSERT(pread(fd, buf, sizeof(buf) - 1, 0) > 0);
	ASSERT_STR_EQ(buf, "gprof: first 1\ngprof: second\n");
}

/* A value with a newline, a control byte and ill-formed UTF-8 still prints as one line. */
TEST(log_line_made_safe)
{
	char path[] = "/tmp/gprof-test-log-XXXXXX";
	int fd = mkstemp(path);
	char buf[4096] = {0}, small[7];

	ASSERT(fd >= 0);
	unlink(path);
	dup2(fd, STDERR_FILENO);
	pr_warn("marker '%s'", "a\nb\x1b[2J\xff\xe2\x82\xac\xe2\x82 \x7f");
	ASSERT(pread(fd, buf, sizeof(buf) - 1, 0) > 0);
	/* U+20AC is well formed; E2 82 then a space is a cut sequence: byte by byte. */
	ASSERT_STR_EQ(buf, "gprof: marker 'a\\x0ab\\x1b[2J\\xff\xe2\x82\xac\\xe2\\x82 \\x7f'\n");
	/* Cut where a whole escape or character does not fit. */
	ASSERT_STR_EQ(gprof_log_clean(small, sizeof(small), "ab\ncd", 5), "ab\\x0a");
	ASSERT_STR_EQ(gprof_log_clean(small, sizeof(small), "abcd\xe2\x82\xac", 7), "abcd");
}
