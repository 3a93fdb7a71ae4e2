/*
 * Tests of common/config: the defaults, every accepted form, every rejection and its one-line
 * message, the GPROF_CONFIG file, GPROF_DISABLE, hostile values and the README's table.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"
#include "task.h"
#include "util/proc.h"
#include "util/text.h"

/* Present only in sanitizer builds: lets a test check that nothing outlives the call. */
int __lsan_do_recoverable_leak_check(void) __attribute__((weak));

#define OUT_MAX 4096

/* One gprof_config_load call and what it printed on stderr. */
struct run {
	int rc;
	size_t len; /* bytes printed, also beyond OUT_MAX */
	char out[OUT_MAX];
	struct gprof_config cfg;
};

static void load(struct run *r, char *const *env)
{
	FILE *tmp = tmpfile();
	int fd = tmp ? fileno(tmp) : -1, saved = dup(STDERR_FILENO);
	ssize_t n;

	ASSERT(fd >= 0 && saved >= 0);
	ASSERT(dup2(fd, STDERR_FILENO) == STDERR_FILENO);
	r->rc = gprof_config_load(&r->cfg, env);
	dup2(saved, STDERR_FILENO);
	close(saved);
	r->len = (size_t)lseek(fd, 0, SEEK_END);
	n = pread(fd, r->out, OUT_MAX - 1, 0);
	r->out[n > 0 ? n : 0] = '\0';
	fclose(tmp);
}

/* Loads with the single environment entry `entry` (NULL: an empty environment). */
static void load1(struct run *r, const char *entry)
{
	char *env[] = {(char *)entry, NULL};

	load(r, env);
}

static void assert_ok_silent(const struct run *r, const char *what)
{
	ASSERT_MSG(r->rc == 0 && r->len == 0, "%s: rc %d, printed \"%s\"", what, r->rc, r->out);
}

/* NULL when the output is one line of printable ASCII, short, ending in a newline. */
static const char *one_safe_line(const struct run *r)
{
	if (r->len == 0 || r->len > 600)
		return "not one short line";
	if (!text_one_line(r->out) || strlen(r->out) != r->len)
		return "not exactly one line";
	for (size_t i = 0; i + 1 < r->len; i++)
		if ((unsigned char)r->out[i] < 0x20 || (unsigned char)r->out[i] >= 0x7f)
			return "a raw control or non-ASCII byte";
	return NULL;
}

/* NULL when r is a rejection: -EINVAL, one safe line "gprof: <var>='...': ...; expected ...". */
static const char *error_problem(const struct run *r, const char *var)
{
	char prefix[64];

	snprintf(prefix, sizeof(prefix), "gprof: %s='", var);
	if (r->rc != -EINVAL)
		return "did not return -EINVAL";
	if (one_safe_line(r))
		return one_safe_line(r);
	if (strncmp(r->out, prefix, strlen(prefix)))
		return "does not start with gprof: VAR='";
	if (!strstr(r->out, "; expected "))
		return "does not say what is expected";
	return NULL;
}

#define ASSERT_REJECTED(r, var, label)                                    \
	do {                                                              \
		const char *p_ = error_problem((r), (var));               \
		ASSERT_MSG(!p_, "%s: %s: \"%s\"", (label), p_, (r)->out); \
	} while (0)

struct reject {
	const char *var;
	const char *value; /* printable, without ' or \, so it is quoted as it is */
	const char *hint;  /* a part of what-is-wrong: the offending piece */
};

/* Every rejection of the brief, variable by variable. */
static const struct reject rejects[] = {
    {"GPROF_SCHEDULE", "", "empty"},
    {"GPROF_SCHEDULE", "bogus=1", "'bogus'"},
    {"GPROF_SCHEDULE", "Wait=1", "'Wait'"},
    {"GPROF_SCHEDULE", "wait=1,wait=2", "wait given twice"},
    {"GPROF_SCHEDULE", "wait=-1", "'-1'"},
    {"GPROF_SCHEDULE", "wait=+1", "'+1'"},
    {"GPROF_SCHEDULE", "wait=x", "'x'"},
    {"GPROF_SCHEDULE", "wait=", "''"},
    {"GPROF_SCHEDULE", "wait", "no =count"},
    {"GPROF_SCHEDULE", "=3", "''"},
    {"GPROF_SCHEDULE", "wait=4294967296", "'4294967296'"},
    {"GPROF_SCHEDULE", "repeat=99999999999999999999999", "'99999999999999999999999'"},
    {"GPROF_SCHEDULE", "active=0", "active=0"},
    {"GPROF_SCHEDULE", "wait=2,active=0,repeat=1", "active=0"},
    {"GPROF_SCHEDULE", "wait=3x", "'3x'"},
    {"GPROF_SCHEDULE", "wait=3 ", "'3 '"},
    {"GPROF_SCHEDULE", "wait=0x3", "'0x3'"},
    {"GPROF_SCHEDULE", " wait=3", "' wait'"},
    {"GPROF_SCHEDULE", "wait=1,,active=2", "empty item"},
    {"GPROF_SCHEDULE", "wait=1,", "empty item"},
    {"GPROF_SCHEDULE", ",wait=1", "empty item"},
    {"GPROF_SCHEDULE", ",", "empty item"},
    {"GPROF_SCHEDULE", "ALL", "'ALL'"},
    {"GPROF_SCHEDULE", "all,active=2", "'all'"},
    {"GPROF_SCHEDULE", "wait=1;active=2", "'1;active=2'"},
    {"GPROF_STEP_MARKER", "", "empty"},
    {"GPROF_OUTPUT", "", "empty"},
    {"GPROF_OUTPUT", "out/%x", "'%x'"},
    {"GPROF_OUTPUT", "out/%H", "'%H'"},
    {"GPROF_OUTPUT", "out/%", "'%'"},
    {"GPROF_OUTPUT", "out/%q", "%q"},
    {"GPROF_OUTPUT", "out/%q{}", "%q"},
    {"GPROF_OUTPUT", "out/%q{JOB", "%q"},
    {"GPROF_OUTPUT", "out/%q{JOB-ID}", "%q"},
    {"GPROF_OUTPUT", "%%%", "'%'"},
    {"GPROF_ACTIVITIES", "", "empty"},
    {"GPROF_ACTIVITIES", "kernel,bogus", "'bogus'"},
    {"GPROF_ACTIVITIES", "Kernel", "'Kernel'"},
    {"GPROF_ACTIVITIES", "kernels", "'kernels'"},
    {"GPROF_ACTIVITIES", "kernel,,api", "empty item"},
    {"GPROF_ACTIVITIES", "kernel,", "empty item"},
    {"GPROF_ACTIVITIES", ",", "empty item"},
    {"GPROF_ACTIVITIES", "kernel,kernel", "kernel given twice"},
    {"GPROF_ACTIVITIES", "all,kernel", "'all'"},
    {"GPROF_ACTIVITIES", "kernel api", "'kernel api'"},
    {"GPROF_GZIP_LEVEL", "", "empty"},
    {"GPROF_GZIP_LEVEL", "12", "range"},
    {"GPROF_GZIP_LEVEL", "10", "range"},
    {"GPROF_GZIP_LEVEL", "-1", "not a decimal integer"},
    {"GPROF_GZIP_LEVEL", "1.5", "not a decimal integer"},
    {"GPROF_GZIP_LEVEL", "one", "not a decimal integer"},
    {"GPROF_GZIP_LEVEL", " 1", "not a decimal integer"},
    {"GPROF_GZIP_LEVEL", "1 ", "not a decimal integer"},
    {"GPROF_GZIP_LEVEL", "99999999999999999999999", "range"},
    {"GPROF_WRITER_THREADS", "17", "range"},
    {"GPROF_WRITER_THREADS", "-1", "not a decimal integer"},
    {"GPROF_WRITER_THREADS", "two", "not a decimal integer"},
    {"GPROF_BUFFER_MB", "", "empty"},
    {"GPROF_BUFFER_MB", "0", "range"},
    {"GPROF_BUFFER_MB", "65537", "range"},
    {"GPROF_BUFFER_MB", "4294967360", "range"}, /* 65536 + 2^32: must not wrap to 64 */
    {"GPROF_BUFFER_MB", "-64", "not a decimal integer"},
    {"GPROF_BUFFER_MB", "64MB", "not a decimal integer"},
    {"GPROF_SUMMARY", "", "empty"},
    {"GPROF_LOG", "", "empty"},
    {"GPROF_LOG", "verbose", "level"},
    {"GPROF_LOG", "WARN", "level"},
    {"GPROF_LOG", "warning", "level"},
    {"GPROF_LOG", "2", "level"},
    {"GPROF_CUPTI_LIB", "", "empty"},
    {"GPROF_DISABLE", "", "empty"},
    {"GPROF_DISABLE", "2", "neither 0 nor 1"},
    {"GPROF_DISABLE", "yes", "neither 0 nor 1"},
    {"GPROF_DISABLE", "true", "neither 0 nor 1"},
    {"GPROF_DISABLE", "01", "neither 0 nor 1"},
    {"GPROF_DISABLE", " 1", "neither 0 nor 1"},
    {"GPROF_CONFIG", "", "empty"},
};

TEST(config_rejects)
{
	for (size_t i = 0; i < ARRAY_SIZE(rejects); i++) {
		const struct reject *t = &rejects[i];
		char entry[256], prefix[256];
		struct run r;

		snprintf(entry, sizeof(entry), "%s=%s", t->var, t->value);
		snprintf(prefix, sizeof(prefix), "gprof: %s='%s': ", t->var, t->value);
		load1(&r, entry);
		ASSERT_REJECTED(&r, t->var, entry);
		ASSERT_MSG(!strncmp(r.out, prefix, strlen(prefix)), "%s: \"%s\"", entry, r.out);
		ASSERT_MSG(strstr(r.out + strlen(prefix), t->hint), "%s: no \"%s\" in \"%s\"",
			   entry, t->hint, r.out);
	}
}

#define FIELD_SIZE(f) sizeof(((struct gprof_config *)0)->f)

/* A value one byte longer than its field: too long, and quoted cut short. */
TEST(config_rejects_too_long)
{
	static const struct {
		const char *var;
		size_t field;
	} t[] = {
	    {"GPROF_STEP_MARKER", FIELD_SIZE(step_marker)},
	    {"GPROF_OUTPUT", FIELD_SIZE(output)},
	    {"GPROF_SUMMARY", FIELD_SIZE(summary)},
	    {"GPROF_CUPTI_LIB", FIELD_SIZE(cupti_lib)},
	};
	static char entry[64 + PATH_MAX + 1];

	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		size_t n = (size_t)snprintf(entry, 64, "%s=", t[i].var);
		struct run r;

		memset(entry + n, 'a', t[i].field);
		entry[n + t[i].field] = '\0';
		load1(&r, entry);
		ASSERT_REJECTED(&r, t[i].var, t[i].var);
		ASSERT_STR_CONTAINS(r.out, "...'");
		ASSERT_STR_CONTAINS(r.out, "too long");
		/* One byte fewer fits. */
		entry[n + t[i].field - 1] = '\0';
		load1(&r, entry);
		assert_ok_silent(&r, t[i].var);
	}
}

/* DESIGN.md's table of defaults. */
TEST(config_defaults)
{
	struct run r;

	load1(&r, NULL);
	assert_ok_silent(&r, "empty environment");
	ASSERT(!r.cfg.schedule.all);
	ASSERT_EQ(r.cfg.schedule.skip_first, 0);
	ASSERT_EQ(r.cfg.schedule.wait, 1);
	ASSERT_EQ(r.cfg.schedule.warmup, 1);
	ASSERT_EQ(r.cfg.schedule.active, 3);
	ASSERT_EQ(r.cfg.schedule.repeat, 1);
	ASSERT_STR_EQ(r.cfg.step_marker, "step");
	ASSERT_STR_EQ(r.cfg.output, "./gprof_traces");
	ASSERT_EQ(r.cfg.activities, GPROF_ACT_KERNEL | GPROF_ACT_MEMCPY | GPROF_ACT_MEMSET |
					GPROF_ACT_MEMORY | GPROF_ACT_API | GPROF_ACT_NVTX);
	ASSERT_EQ(r.cfg.gzip_level, 1);
	ASSERT_EQ(r.cfg.buffer_mb, 64);
	ASSERT_EQ(r.cfg.writer_threads, 1);
	ASSERT_STR_EQ(r.cfg.summary, "stderr");
	ASSERT_EQ(r.cfg.log_level, GPROF_LOG_WARN);
	ASSERT_STR_EQ(r.cfg.cupti_lib, "");
	ASSERT(!r.cfg.disable);
}

struct sched_case {
	const char *value;
	struct gprof_schedule want;
};

/* Keys not given keep the default schedule's values: skip_first=0 wait=1 warmup=1 active=3 repeat=1. */
static const struct sched_case sched_cases[] = {
    {"all", {.all = true}},
    {"wait=1,warmup=1,active=3,repeat=1", {0, 1, 1, 3, 1, false}},
    {"active=3", {0, 1, 1, 3, 1, false}},
    {"active=5", {0, 1, 1, 5, 1, false}},
    {"skip_first=10,wait=0,warmup=0,active=1,repeat=0", {10, 0, 0, 1, 0, false}},
    {"repeat=2,active=2,wait=3", {0, 3, 1, 2, 2, false}},
    {"warmup=007", {0, 1, 7, 3, 1, false}},
    {"skip_first=4294967295,active=4294967295", {4294967295u, 1, 1, 4294967295u, 1, false}},
    {"repeat=0", {0, 1, 1, 3, 0, false}},
};

TEST(config_schedule_forms)
{
	for (size_t i = 0; i < ARRAY_SIZE(sched_cases); i++) {
		const struct sched_case *t = &sched_cases[i];
		const struct gprof_schedule *s;
		char entry[128];
		struct run r;

		snprintf(entry, sizeof(entry), "GPROF_SCHEDULE=%s", t->value);
		load1(&r, entry);
		assert_ok_silent(&r, entry);
		s = &r.cfg.schedule;
		ASSERT_MSG(s->all == t->want.all, "%s", entry);
		if (t->want.all)
			continue;
		ASSERT_MSG(s->skip_first == t->want.skip_first && s->wait == t->want.wait &&
			       s->warmup == t->want.warmup && s->active == t->want.active &&
			       s->repeat == t->want.repeat,
			   "%s: got %u,%u,%u,%u,%u", entry, s->skip_first, s->wait, s->warmup,
			   s->active, s->repeat);
	}
}

TEST(config_activity_forms)
{
	static const struct {
		const char *value;
		unsigned want;
	} t[] = {
	    {"all", 0xff},
	    {"kernel", GPROF_ACT_KERNEL},
	    {"memcpy", GPROF_ACT_MEMCPY},
	    {"memset", GPROF_ACT_MEMSET},
	    {"memory", GPROF_ACT_MEMORY},
	    {"api", GPROF_ACT_API},
	    {"nvtx", GPROF_ACT_NVTX},
	    {"api,nvtx", GPROF_ACT_API | GPROF_ACT_NVTX},
	    {"nvtx,kernel,memcpy,memset,memory,api", 0x3f},
	    {"sync", GPROF_ACT_SYNC},
	    {"nvtx,kernel,memcpy,memset,memory,api,sync", 0x7f},
	    {"overhead", GPROF_ACT_OVERHEAD},
	    {"nvtx,kernel,memcpy,memset,memory,api,sync,overhead", 0xff},
	};

	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		char entry[128];
		struct run r;

		snprintf(entry, sizeof(entry), "GPROF_ACTIVITIES=%s", t[i].value);
		load1(&r, entry);
		assert_ok_silent(&r, entry);
		ASSERT_MSG(r.cfg.activities == t[i].want, "%s: 0x%x", entry, r.cfg.activities);
	}
}

TEST(config_value_forms)
{
	static const struct {
		const char *entry;
		int log_level, gzip_level, buffer_mb;
	} nums[] = {
	    {"GPROF_LOG=error", GPROF_LOG_ERROR, 1, 64},
	    {"GPROF_LOG=warn", GPROF_LOG_WARN, 1, 64},
	    {"GPROF_LOG=info", GPROF_LOG_INFO, 1, 64},
	    {"GPROF_LOG=debug", GPROF_LOG_DEBUG, 1, 64},
	    {"GPROF_GZIP_LEVEL=0", GPROF_LOG_WARN, 0, 64},
	    {"GPROF_GZIP_LEVEL=9", GPROF_LOG_WARN, 9, 64},
	    {"GPROF_BUFFER_MB=1", GPROF_LOG_WARN, 1, 1},
	    {"GPROF_BUFFER_MB=65536", GPROF_LOG_WARN, 1, 65536},
	};
	static const struct {
		const char *entry;
		unsigned threads;
	} threads[] = {{"GPROF_WRITER_THREADS=0", 0}, {"GPROF_WRITER_THREADS=16", 16}};
	static const struct {
		const char *entry;
		size_t field; /* where the string it sets is in struct gprof_config */
		const char *want;
	} strs[] = {
	    {"GPROF_OUTPUT=/data/%h/%p_%r_%q{SLURM_JOB_ID}_100%%",
	     offsetof(struct gprof_config, output), "/data/%h/%p_%r_%q{SLURM_JOB_ID}_100%%"},
	    {"GPROF_SUMMARY=off", offsetof(struct gprof_config, summary), "off"},
	    {"GPROF_SUMMARY=logs/summary.txt", offsetof(struct gprof_config, summary),
	     "logs/summary.txt"},
	    {"GPROF_CUPTI_LIB=auto", offsetof(struct gprof_config, cupti_lib), ""},
	    {"GPROF_CUPTI_LIB=/opt/cuda/lib64/libcupti.so.13",
	     offsetof(struct gprof_config, cupti_lib), "/opt/cuda/lib64/libcupti.so.13"},
	    {"GPROF_STEP_MARKER=train step", offsetof(struct gprof_config, step_marker),
	     "train step"},
	};
	struct run r;

	for (size_t i = 0; i < ARRAY_SIZE(threads); i++) {
		load1(&r, threads[i].entry);
		assert_ok_silent(&r, threads[i].entry);
		ASSERT_MSG(r.cfg.writer_threads == threads[i].threads, "%s", threads[i].entry);
	}
	for (size_t i = 0; i < ARRAY_SIZE(nums); i++) {
		load1(&r, nums[i].entry);
		assert_ok_silent(&r, nums[i].entry);
		ASSERT_MSG(r.cfg.log_level == nums[i].log_level &&
			       r.cfg.gzip_level == nums[i].gzip_level &&
			       (int)r.cfg.buffer_mb == nums[i].buffer_mb,
			   "%s", nums[i].entry);
	}
	for (size_t i = 0; i < ARRAY_SIZE(strs); i++) {
		const char *got = (const char *)&r.cfg + strs[i].field;

		load1(&r, strs[i].entry);
		assert_ok_silent(&r, strs[i].entry);
		ASSERT_MSG(!strcmp(got, strs[i].want), "%s: \"%s\"", strs[i].entry, got);
	}
	load1(&r, "GPROF_DISABLE=0");
	assert_ok_silent(&r, "GPROF_DISABLE=0");
	ASSERT(!r.cfg.disable);
}

/* env NULL reads the process environment; a later duplicate entry is ignored like getenv. */
TEST(config_process_environment)
{
	char *env[] = {"GPROF_GZIP_LEVEL=4", "GPROF_GZIP_LEVEL=12", NULL};
	struct run r;

	setenv("GPROF_LOG", "debug", 1);
	setenv("GPROF_SCHEDULE", "active=2", 1);
	load(&r, NULL);
	assert_ok_silent(&r, "process environment");
	ASSERT_EQ(r.cfg.log_level, GPROF_LOG_DEBUG);
	ASSERT_EQ(r.cfg.schedule.active, 2);
	setenv("GPROF_LOG", "loud", 1);
	load(&r, NULL);
	ASSERT_REJECTED(&r, "GPROF_LOG", "process environment");
	load(&r, env);
	assert_ok_silent(&r, "duplicate entry");
	ASSERT_EQ(r.cfg.gzip_level, 4);
}

/* Writes a temporary JSON file; its path goes to path[] (unlink it). */
static void write_file(char path[64], const char *text)
{
	int fd;

	strcpy(path, P_tmpdir "/gprof-test-cfg-XXXXXX");
	fd = mkstemp(path);
	ASSERT(fd >= 0);
	ASSERT_EQ(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* Loads with GPROF_CONFIG naming a file holding text, plus up to two more entries. */
static void load_file(struct run *r, const char *text, const char *e1, const char *e2)
{
	char path[64], entry[128];
	char *env[] = {entry, (char *)e1, (char *)e2, NULL};

	write_file(path, text);
	snprintf(entry, sizeof(entry), "GPROF_CONFIG=%s", path);
	load(r, env);
	unlink(path);
}

/* Loads with the one entry GPROF_CONFIG=path. */
static void load_config(struct run *r, const char *path)
{
	char entry[64 + PATH_MAX];

	snprintf(entry, sizeof(entry), "GPROF_CONFIG=%s", path);
	load1(r, entry);
}

static void assert_no_leak(void)
{
	if (__lsan_do_recoverable_leak_check)
		ASSERT_EQ(__lsan_do_recoverable_leak_check(), 0);
}

TEST(config_file_good)
{
	struct run r;

	load_file(&r,
		  "{\"schedule\": \"skip_first=2,active=1\", \"step_marker\": \"iter\",\n"
		  " \"output\": \"out/%p\", \"activities\": \"kernel,api\", \"gzip_level\": 6,\n"
		  " \"buffer_mb\": \"128\", \"summary\": \"off\", \"log\": \"info\",\n"
		  " \"cupti_lib\": \"/x/libcupti.so\", \"disable\": false}\n",
		  NULL, NULL);
	assert_ok_silent(&r, "good file");
	ASSERT_EQ(r.cfg.schedule.skip_first, 2);
	ASSERT_EQ(r.cfg.schedule.wait, 1);
	ASSERT_EQ(r.cfg.schedule.active, 1);
	ASSERT_STR_EQ(r.cfg.step_marker, "iter");
	ASSERT_STR_EQ(r.cfg.output, "out/%p");
	ASSERT_EQ(r.cfg.activities, GPROF_ACT_KERNEL | GPROF_ACT_API);
	ASSERT_EQ(r.cfg.gzip_level, 6);
	ASSERT_EQ(r.cfg.buffer_mb, 128);
	ASSERT_STR_EQ(r.cfg.summary, "off");
	ASSERT_EQ(r.cfg.log_level, GPROF_LOG_INFO);
	ASSERT_STR_EQ(r.cfg.cupti_lib, "/x/libcupti.so");
	ASSERT(!r.cfg.disable);

	/* Numbers and booleans may also come as strings, booleans as 0/1; {} changes nothing. */
	load_file(&r, "{\"gzip_level\": \"0\", \"buffer_mb\": 1, \"disable\": 0}", NULL, NULL);
	assert_ok_silent(&r, "strings for numbers");
	ASSERT_EQ(r.cfg.gzip_level, 0);
	ASSERT_EQ(r.cfg.buffer_mb, 1);
	load_file(&r, "{}", NULL, NULL);
	assert_ok_silent(&r, "empty object");
	ASSERT_EQ(r.cfg.gzip_level, 1);
	assert_no_leak();
}

TEST(config_file_env_overrides)
{
	struct run r;

	load_file(&r, "{\"gzip_level\": 6, \"log\": \"info\", \"schedule\": \"all\"}",
		  "GPROF_GZIP_LEVEL=2", "GPROF_SCHEDULE=active=4");
	assert_ok_silent(&r, "env over file");
	ASSERT_EQ(r.cfg.gzip_level, 2);
	ASSERT_EQ(r.cfg.log_level, GPROF_LOG_INFO);
	ASSERT(!r.cfg.schedule.all);
	ASSERT_EQ(r.cfg.schedule.active, 4);

	/* A bad value in the environment is still an error, reported without "(from". */
	load_file(&r, "{\"gzip_level\": 6}", "GPROF_GZIP_LEVEL=12", NULL);
	ASSERT_REJECTED(&r, "GPROF_GZIP_LEVEL", "env");
	ASSERT(!strstr(r.out, "(from"));
}

/* A GPROF_CONFIG file's text, the variable its rejection names, and a part of the line. */
struct file_reject {
	const char *json, *var, *hint;
};

/* Loads a file holding each row's text: each is rejected under its variable, with its hint. */
static void check_file_rejects(const struct file_reject *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct run r;

		load_file(&r, t[i].json, NULL, NULL);
		ASSERT_REJECTED(&r, t[i].var, t[i].json);
		ASSERT_MSG(strstr(r.out, t[i].hint), "%s: no \"%s\" in \"%s\"", t[i].json,
			   t[i].hint, r.out);
	}
	assert_no_leak();
}

/* The file's bad values are reported as their variable "(from <path>)". */
TEST(config_file_bad_values)
{
	static const struct file_reject t[] = {
	    {"{\"gzip_level\": 12}", "GPROF_GZIP_LEVEL", "'12' (from " P_tmpdir "/gprof-test-cfg-"},
	    {"{\"gzip_level\": \"12\"}", "GPROF_GZIP_LEVEL", "'12' (from "},
	    {"{\"gzip_level\": -1}", "GPROF_GZIP_LEVEL", "'-1' (from "},
	    {"{\"gzip_level\": 2.5}", "GPROF_GZIP_LEVEL", "'2.5' (from "},
	    {"{\"gzip_level\": [1]}", "GPROF_GZIP_LEVEL", "'[1]' (from "},
	    {"{\"gzip_level\": true}", "GPROF_GZIP_LEVEL", "'true' (from "},
	    {"{\"buffer_mb\": 0}", "GPROF_BUFFER_MB", "'0' (from "},
	    {"{\"schedule\": 3}", "GPROF_SCHEDULE", "'3' (from "},
	    {"{\"schedule\": \"wait=1,,active=2\"}", "GPROF_SCHEDULE", "'wait=1,,active=2' (from "},
	    {"{\"schedule\": {\"wait\": 1}}", "GPROF_SCHEDULE", "(from "},
	    {"{\"log\": null}", "GPROF_LOG", "'null' (from "},
	    {"{\"log\": \"loud\"}", "GPROF_LOG", "'loud' (from "},
	    {"{\"activities\": \"\"}", "GPROF_ACTIVITIES", "'' (from "},
	    {"{\"activities\": [\"kernel\"]}", "GPROF_ACTIVITIES", "(from "},
	    {"{\"disable\": \"yes\"}", "GPROF_DISABLE", "'yes' (from "},
	    {"{\"disable\": 2}", "GPROF_DISABLE", "'2' (from "},
	    {"{\"output\": \"x/%z\"}", "GPROF_OUTPUT", "'x/%z' (from "},
	    {"{\"shedule\": \"all\"}", "GPROF_CONFIG", "'shedule'"},
	    {"{\"GZIP_LEVEL\": 1}", "GPROF_CONFIG", "'GZIP_LEVEL'"},
	    {"{\"gprof_log\": \"info\"}", "GPROF_CONFIG", "'gprof_log'"},
	    {"{\"config\": \"other.json\"}", "GPROF_CONFIG", "'config'"},
	    {"{\"log\": \"info\", \"bogus\": 1}", "GPROF_CONFIG", "'bogus'"},
	};

	check_file_rejects(t, ARRAY_SIZE(t));
}

TEST(config_file_unreadable)
{
	char dir[] = P_tmpdir "/gprof-test-cfgdir-XXXXXX";
	struct run r;

	load1(&r, "GPROF_CONFIG=/nonexistent-gprof-dir/config.json");
	ASSERT_REJECTED(&r, "GPROF_CONFIG", "missing file");
	ASSERT_STR_CONTAINS(r.out, "GPROF_CONFIG='/nonexistent-gprof-dir/config.json': ");
	ASSERT_STR_CONTAINS(r.out, "No such file or directory");

	ASSERT(mkdtemp(dir));
	load_config(&r, dir);
	rmdir(dir);
	ASSERT_REJECTED(&r, "GPROF_CONFIG", "directory");
	ASSERT_STR_CONTAINS(r.out, "a directory, not a regular file");
	assert_no_leak();
}

/* GPROF_CONFIG naming a pipe (of the load's own process: /proc/self/fd/N) that holds text. */
static void load_pipe(struct run *r, int fds[2], const char *text, bool close_writer)
{
	char path[64];

	ASSERT_EQ(pipe(fds), 0);
	ASSERT_EQ(write(fds[1], text, strlen(text)), (ssize_t)strlen(text));
	if (close_writer)
		close(fds[1]);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[0]);
	load_config(r, path);
}

/* The pipe still holds all of text: nothing was read from it. */
static void assert_unread(int fd, const char *text)
{
	char buf[256] = "";

	ASSERT_EQ(read(fd, buf, sizeof(buf) - 1), (ssize_t)strlen(text));
	ASSERT_STR_EQ(buf, text);
}

/*
 * Only a regular file is read, once, at most 1 MiB of it. A FIFO without a writer (it blocked
 * the program before main), a pipe holding a valid object (a process substitution <(...)),
 * the program's stdin as a pipe (/dev/stdin: its input must stay its own), a device: one line,
 * nothing read.
 */
TEST(config_file_not_regular)
{
	static const char object[] = "{\"schedule\": \"all\"}";
	char dir[] = P_tmpdir "/gprof-test-cfgfifo-XXXXXX", fifo[128], big[64];
	int fds[2], saved_stdin;
	struct run r;
	FILE *f;

	ASSERT(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	ASSERT_EQ(mkfifo(fifo, 0600), 0);
	load_config(&r, fifo); /* the old code blocked here in fopen until the test's timeout */
	unlink(fifo);
	rmdir(dir);
	ASSERT_REJECTED(&r, "GPROF_CONFIG", "FIFO");
	ASSERT_STR_CONTAINS(r.out, "a pipe or FIFO");

	load_pipe(&r, fds, object, true);
	ASSERT_REJECTED(&r, "GPROF_CONFIG", "pipe holding an object");
	assert_unread(fds[0], object);
	close(fds[0]);

	/* /dev/stdin with the writer still open (a program reading its input). */
	saved_stdin = dup(STDIN_FILENO);
	load_pipe(&r, fds, object, false);
	ASSERT_EQ(dup2(fds[0], STDIN_FILENO), STDIN_FILENO);
	load1(&r, "GPROF_CONFIG=/dev/stdin");
	ASSERT_REJECTED(&r, "GPROF_CONFIG", "/dev/stdin");
	ASSERT(fcntl(STDIN_FILENO, F_SETFL, O_NONBLOCK) == 0);
	assert_unread(STDIN_FILENO, object);
	dup2(saved_stdin, STDIN_FILENO);
	close(saved_stdin);
	close(fds[0]);
	close(fds[1]);

	load1(&r, "GPROF_CONFIG=/dev/null");
	ASSERT_REJECTED(&r, "GPROF_CONFIG", "/dev/null");
	ASSERT_STR_CONTAINS(r.out, "a character device");

	/* More than 1 MiB of valid JSON: refused by its size. */
	strcpy(big, P_tmpdir "/gprof-test-cfgbig-XXXXXX");
	f = fdopen(mkstemp(big), "w");
	ASSERT(f);
	fprintf(f, "{\"schedule\": \"all\"%*s}", 1 << 20, "");
	fclose(f);
	load_config(&r, big);
	unlink(big);
	ASSERT_REJECTED(&r, "GPROF_CONFIG", "over 1 MiB");
	ASSERT_STR_CONTAINS(r.out, "more than the 1048576");
	assert_no_leak();
}

TEST(config_file_malformed)
{
	static const struct file_reject t[] = {
	    /* The stray '}' is the first character of line 4. */
	    {"{\n  \"gzip_level\": 3,\n  \"log\": \n}\n", "GPROF_CONFIG", "line 4, column 1"},
	    {"{\"log\": \"info\",}", "GPROF_CONFIG", "line 1"},
	    {"{\"log\": \"info\", \"log\": \"warn\"}", "GPROF_CONFIG", "duplicate"},
	    {"", "GPROF_CONFIG", "malformed"},
	    {"{\"log\": \"in\x01fo\"}", "GPROF_CONFIG", "malformed"},
	    {"[\"log\", \"info\"]", "GPROF_CONFIG", "an array, not an object"},
	    {"\"log=info\"", "GPROF_CONFIG", "a string, not an object"},
	    {"3", "GPROF_CONFIG", "an integer, not an object"},
	};

	check_file_rejects(t, ARRAY_SIZE(t));
}

/* GPROF_DISABLE=1 wins over every error and silences every message. */
TEST(config_disable_silences)
{
	char *env[] = {"GPROF_SCHEDULE=bogus", "GPROF_CONFIG=/nonexistent-gprof/c.json",
		       "GPROF_SCHEDUEL=1",     "GPROF_LOG=\x01loud",
		       "GPROF_DISABLE=1",      NULL};
	struct run r;

	load(&r, env);
	assert_ok_silent(&r, "env GPROF_DISABLE=1");
	ASSERT(r.cfg.disable);

	/* From the file when the environment doesn't say, also over the file's own errors. */
	load_file(&r, "{\"gzip_level\": 12, \"disable\": true, \"bogus\": 1}", "GPROF_LOG=loud",
		  "GPROF_TYPO=1");
	assert_ok_silent(&r, "file disable true");
	ASSERT(r.cfg.disable);
	load_file(&r, "{\"disable\": \"1\"}", NULL, NULL);
	assert_ok_silent(&r, "file disable \"1\"");
	ASSERT(r.cfg.disable);
	load_file(&r, "{\"disable\": 1, \"log\": }", "GPROF_DISABLE=1", NULL);
	assert_ok_silent(&r, "malformed file, env disable");
	ASSERT(r.cfg.disable);

	/* The environment's 0 overrides the file's true. */
	load_file(&r, "{\"disable\": true}", "GPROF_DISABLE=0", NULL);
	assert_ok_silent(&r, "env 0 over file true");
	ASSERT(!r.cfg.disable);
}

/* Control bytes, quotes and megabytes come out as one short line of printable ASCII. */
TEST(config_hostile_values)
{
	static const char *const vars[] = {"GPROF_SCHEDULE", "GPROF_LOG", "GPROF_STEP_MARKER",
					   "GPROF_ACTIVITIES", "GPROF_CONFIG"};
	size_t big = 1 << 20;
	char *entry = malloc(big + 64);
	struct run r;

	ASSERT(entry);
	load1(&r, "GPROF_LOG=\x01\x1b[2J\r\n'\\\x7f\xff\"");
	ASSERT_REJECTED(&r, "GPROF_LOG", "control bytes");
	ASSERT_STR_CONTAINS(r.out, "='\\x01\\x1b[2J\\x0d\\x0a\\'\\\\\\x7f\\xff\"': ");

	for (size_t i = 0; i < ARRAY_SIZE(vars); i++) {
		size_t n = (size_t)sprintf(entry, "%s=", vars[i]);

		for (size_t j = 0; j < big; j++)
			entry[n + j] = (char)(j % 7 ? 'a' + j % 26 : 1 + j % 31);
		entry[n + big] = '\0';
		load1(&r, entry);
		ASSERT_REJECTED(&r, vars[i], vars[i]);
		ASSERT_STR_CONTAINS(r.out, "...'");
	}
	free(entry);

	/* A file value and key with control bytes, and a hostile file name. */
	load_file(&r, "{\"log\": \"\\u0007\\n\\t\"}", NULL, NULL);
	ASSERT_REJECTED(&r, "GPROF_LOG", "file value");
	ASSERT_STR_CONTAINS(r.out, "'\\x07\\x0a\\x09' (from ");
	load_file(&r, "{\"\\u001b[31m\": 1}", NULL, NULL);
	ASSERT_REJECTED(&r, "GPROF_CONFIG", "file key");
	load1(&r, "GPROF_CONFIG=/nonexistent\n\x1b/x.json");
	ASSERT_REJECTED(&r, "GPROF_CONFIG", "file name");
}

/* entry's name is a typo of meant: one line names both, and the load goes on. */
static void assert_typo_named(const char *entry, const char *meant)
{
	size_t name_len = strcspn(entry, "=");
	struct run r;

	load1(&r, entry);
	ASSERT_MSG(r.rc == 0 && !one_safe_line(&r), "%s: rc %d \"%s\"", entry, r.rc, r.out);
	ASSERT_MSG(!strncmp(r.out, "gprof: ", 7) && !strncmp(r.out + 7, entry, name_len),
		   "%s: \"%s\"", entry, r.out);
	ASSERT_MSG(strstr(r.out + 7 + name_len, meant), "%s: \"%s\"", entry, r.out);
}

/* A typo in a variable's name is named with the variable probably meant, and not fatal. */
TEST(config_unknown_variable_warns)
{
	char *quiet[] = {"GPROF_LOG=error", "GPROF_SCHEDUEL=1", NULL};
	struct run r;

	assert_typo_named("GPROF_SCHEDUEL=active=2", "GPROF_SCHEDULE");
	assert_typo_named("GPROF_OUTPT=/x", "GPROF_OUTPUT");
	assert_typo_named("GPROF_GZIP=3", "GPROF_GZIP_LEVEL");
	assert_typo_named("GPROF_ACTIVITY=all", "GPROF_ACTIVITIES");
	assert_typo_named("GPROF_DISABLED=1", "GPROF_DISABLE");
	assert_typo_named("GPROF_schedule=all", "GPROF_SCHEDULE");
	assert_typo_named("GPROF_CUPTI=/x", "GPROF_CUPTI_LIB");
	load1(&r, "GPROF_\x1b[31m=1");
	ASSERT_MSG(r.rc == 0 && !one_safe_line(&r), "hostile name: \"%s\"", r.out);
	load1(&r, "GPROFX=1");
	assert_ok_silent(&r, "outside the GPROF_ namespace");
	load(&r, quiet);
	assert_ok_silent(&r, "GPROF_LOG=error");
}

TEST(config_schedule_str)
{
	struct gprof_schedule dflt = {0, 1, 1, 3, 1, false}, all = {.all = true};
	struct gprof_schedule big = {4294967295u, 4294967295u, 4294967295u,
				     4294967295u, 4294967295u, false};
	char buf[GPROF_SCHEDULE_STR_MAX], entry[16 + GPROF_SCHEDULE_STR_MAX];
	struct run r;

	ASSERT_EQ(gprof_config_schedule_str(&dflt, buf, sizeof(buf)), 0);
	ASSERT_STR_EQ(buf, "skip_first=0,wait=1,warmup=1,active=3,repeat=1");
	ASSERT_EQ(gprof_config_schedule_str(&all, buf, sizeof(buf)), 0);
	ASSERT_STR_EQ(buf, "all");
	ASSERT_EQ(gprof_config_schedule_str(&dflt, buf, 10), -ENOSPC);

	/* The longest one fits and parses back to the same schedule. */
	ASSERT_EQ(gprof_config_schedule_str(&big, buf, sizeof(buf)), 0);
	snprintf(entry, sizeof(entry), "GPROF_SCHEDULE=%s", buf);
	load1(&r, entry);
	assert_ok_silent(&r, entry);
	ASSERT_EQ(r.cfg.schedule.skip_first, 4294967295u);
	ASSERT_EQ(r.cfg.schedule.repeat, 4294967295u);
}

static char *table_text(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	ASSERT(f);
	gprof_config_print_table(f);
	ASSERT(fclose(f) == 0);
	return text;
}

/* The printed table has DESIGN.md's rows, with DESIGN.md's defaults (copied from it here). */
TEST(config_print_table)
{
	static const char *const rows[] = {
	    "| `GPROF_SCHEDULE` | `wait=1,warmup=1,active=3,repeat=1` | ",
	    "| `GPROF_STEP_MARKER` | `step` | ",
	    "| `GPROF_OUTPUT` | `./gprof_traces` | ",
	    "| `GPROF_ACTIVITIES` | `kernel,memcpy,memset,memory,api,nvtx` | ",
	    "| `GPROF_GZIP_LEVEL` | `1` | ",
	    "| `GPROF_BUFFER_MB` | `64` | ",
	    "| `GPROF_WRITER_THREADS` | `1` | ",
	    "| `GPROF_SUMMARY` | `stderr` | ",
	    "| `GPROF_API_CALLS` | `lean` | ",
	    "| `GPROF_LOG` | `warn` | ",
	    "| `GPROF_CUPTI_LIB` | auto | ",
	    "| `GPROF_DISABLE` | `0` | ",
	    "| `GPROF_SIGNALS` | `0` | ",
	    "| `GPROF_TRIGGER` | `steps` | ",
	    "| `GPROF_TORCH` | `off` | ",
	    "| `GPROF_TORCH_SHAPES` | `1` | ",
	    "| `GPROF_DELAY` | unset | ",
	    "| `GPROF_DURATION` | unset | ",
	    "| `GPROF_CONFIG` | ",
	};
	static const char header[] = "| variable | default | meaning |\n| --- | --- | --- |\n";
	char *text = table_text(), *line;
	size_t lines = 0;

	ASSERT_MSG(!strncmp(text, header, strlen(header)), "header of:\n%s", text);
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		line = strstr(text, rows[i]);
		ASSERT_MSG(line && (line == text || line[-1] == '\n'), "no row %s in:\n%s", rows[i],
			   text);
		ASSERT_MSG(line[strlen(rows[i])] != ' ' && line[strlen(rows[i])] != '|',
			   "empty meaning: %s", rows[i]);
	}
	/* Every line is a row of exactly three cells. */
	for (line = text; *line; line = strchr(line, '\n') + 1, lines++) {
		size_t len = strcspn(line, "\n"), bars = 0;

		for (size_t i = 0; i < len; i++)
			bars += line[i] == '|';
		ASSERT_MSG(bars == 4 && line[0] == '|' && !strncmp(line + len - 2, " |", 2),
			   "bad row %.*s", (int)len, line);
		ASSERT(line[len] == '\n');
	}
	ASSERT_EQ(lines, 2 + ARRAY_SIZE(rows));
	free(text);
}

/* Drops blank lines at both ends of text[0..len). */
static const char *trim_blank_lines(const char *text, size_t *len)
{
	while (*len && text[0] == '\n') {
		text++;
		(*len)--;
	}
	while (*len > 1 && text[*len - 1] == '\n' && text[*len - 2] == '\n')
		(*len)--;
	return text;
}

TEST(config_readme_table)
{
	static const char begin[] = "<!-- config-table -->\n", end[] = "<!-- /config-table -->";
	char *readme, *want = table_text();
	const char *from, *to;
	size_t len;
	FILE *f;

	f = fopen(proc_src_path("README.md"), "r");
	if (!f)
		SKIP("no README.md yet; the table to put between markers:\n%s%s%s\n", begin, want,
		     end);
	readme = calloc(1, 1 << 20);
	ASSERT(readme);
	ASSERT(fread(readme, 1, (1 << 20) - 1, f) > 0 || !ferror(f));
	fclose(f);
	from = strstr(readme, begin);
	to = from ? strstr(from, end) : NULL;
	if (!from || !to)
		SKIP("README.md has no %s...%s markers; put this between them:\n%s",
		     "<!-- config-table -->", end, want);
	from += strlen(begin);
	len = (size_t)(to - from);
	from = trim_blank_lines(from, &len);
	ASSERT_MSG(len == strlen(want) && !memcmp(from, want, len),
		   "README.md's configuration table is stale; put this between the markers:\n%s",
		   want);
	free(readme);
	free(want);
}

/*
 * Every GPROF_ACTIVITIES word of common/activity.h's table is in gprof-run's --activities help,
 * and the default (from the same table) asks for each word its row says it does.
 */
TEST(config_activity_words_everywhere)
{
	static const struct {
		const char *word;
		unsigned bit;
		bool on;
	} words[] = {
#define ON			    true
#define OFF			    false
#define WORD(name, word, dflt, ...) {word, GPROF_ACT_##name, dflt},
	    GPROF_ACTIVITY_TABLE(WORD)
#undef WORD
#undef OFF
#undef ON
	};
	FILE *f = fopen(proc_src_path("scripts/gprof-run"), "r");
	char line[512], *help = NULL;
	struct run r;

	ASSERT(f);
	while (!help && fgets(line, sizeof(line), f))
		help = strstr(line, "--activities LIST");
	fclose(f);
	ASSERT_MSG(help, "gprof-run has no --activities help line");
	load1(&r, "GPROF_SCHEDULE=all");
	assert_ok_silent(&r, "defaults");
	for (size_t i = 0; i < ARRAY_SIZE(words); i++) {
		ASSERT_MSG(strstr(help, words[i].word), "gprof-run's help lacks '%s': %s",
			   words[i].word, help);
		ASSERT_MSG(!(r.cfg.activities & words[i].bit) == !words[i].on,
			   "the default and the row of '%s' disagree", words[i].word);
	}
}
