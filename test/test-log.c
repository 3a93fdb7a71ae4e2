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
