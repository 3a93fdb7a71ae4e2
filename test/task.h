/*
 * Test helpers: every test is `TEST(name) { ... }`, listed once in test/test-list.h, and run
 * by test/runner.c in its own process with a timeout. Assertions print both sides and fail
 * the test's process.
 */
#ifndef GPROF_TEST_TASK_H
#define GPROF_TEST_TASK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST(name) void test_##name(void)

/* Every test's prototype, so test files need no declarations of their own. */
#define X(name) TEST(name);
#include "test-list.h"
#undef X

/* Exit status that marks a test as skipped (e.g. a tool it needs is missing). */
#define TEST_SKIP_STATUS 77
#define SKIP(fmt, ...)                                             \
	do {                                                       \
		fprintf(stderr, "skip: " fmt "\n", ##__VA_ARGS__); \
		exit(TEST_SKIP_STATUS);                            \
	} while (0)

#define FAIL(fmt, ...)                                                                  \
	do {                                                                            \
		fprintf(stderr, "%s:%d: " fmt "\n", __FILE__, __LINE__, ##__VA_ARGS__); \
		exit(1);                                                                \
	} while (0)

#define ASSERT(cond)                                         \
	do {                                                 \
		if (!(cond))                                 \
			FAIL("assertion failed: %s", #cond); \
	} while (0)

#define ASSERT_MSG(cond, fmt, ...)                                                \
	do {                                                                      \
		if (!(cond))                                                      \
			FAIL("assertion failed: %s: " fmt, #cond, ##__VA_ARGS__); \
	} while (0)

#define ASSERT_CMP_INT(a, op, b)                                                        \
	do {                                                                            \
		int64_t a_ = (int64_t)(a), b_ = (int64_t)(b);                           \
		if (!(a_ op b_))                                                        \
			FAIL("%s %s %s: %" PRId64 " vs %" PRId64, #a, #op, #b, a_, b_); \
	} while (0)

#define ASSERT_EQ(a, b) ASSERT_CMP_INT(a, ==, b)
#define ASSERT_NE(a, b) ASSERT_CMP_INT(a, !=, b)
#define ASSERT_LT(a, b) ASSERT_CMP_INT(a, <, b)
#define ASSERT_LE(a, b) ASSERT_CMP_INT(a, <=, b)
#define ASSERT_GT(a, b) ASSERT_CMP_INT(a, >, b)
#define ASSERT_GE(a, b) ASSERT_CMP_INT(a, >=, b)

/*
 * Checks each row of the array `table` with check(&row), which prints every mismatch it finds
 * and returns their count; fails if there were any, once every row has had its say.
 */
#define ASSERT_ROWS(table, check)                                                  \
	do {                                                                       \
		int bad_ = 0;                                                      \
		for (size_t i_ = 0; i_ < sizeof(table) / sizeof((table)[0]); i_++) \
			bad_ += check(&(table)[i_]);                               \
		ASSERT_EQ(bad_, 0);                                                \
	} while (0)

#define ASSERT_STR_EQ(a, b)                                                            \
	do {                                                                           \
		const char *a_ = (a), *b_ = (b);                                       \
		if (!a_ || !b_ || strcmp(a_, b_) != 0)                                 \
			FAIL("%s == %s: \"%s\" vs \"%s\"", #a, #b, a_ ? a_ : "(null)", \
			     b_ ? b_ : "(null)");                                      \
	} while (0)

#define ASSERT_STR_CONTAINS(hay, needle)                                                      \
	do {                                                                                  \
		const char *h_ = (hay), *n_ = (needle);                                       \
		if (!h_ || !strstr(h_, n_))                                                   \
			FAIL("%s contains \"%s\": got \"%s\"", #hay, n_, h_ ? h_ : "(null)"); \
	} while (0)

#endif
