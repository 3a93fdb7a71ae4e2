/*
 * libFuzzer target: the configuration parser (common/config.c) and the schedule syntax. The
 * input is NUL-separated "NAME=value" environment entries; when its first byte is odd, the
 * first entry is instead the content of a GPROF_CONFIG file. Whatever it gets, the parser
 * returns 0 or -EINVAL, fills every field within its documented range, and a schedule it
 * accepts reads back the same from gprof_config_schedule_str.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"

#define MAX_ENTRIES 32

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A rejected value prints its line at every run: quiet (the error path still runs). */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	gprof_log_level = -1;
	return 0;
}

static void check_fields(const struct gprof_config *c)
{
	if ((!c->schedule.all && !c->schedule.active) || c->gzip_level < 0 || c->gzip_level > 9 ||
	    c->buffer_mb < 1 || c->buffer_mb > 65536 || c->log_level < GPROF_LOG_ERROR ||
	    c->log_level > GPROF_LOG_DEBUG || (c->activities & ~((1u << GPROF_ACT_BITS) - 1)) ||
	    !c->step_marker[0] ||
	    strnlen(c->step_marker, sizeof(c->step_marker)) == sizeof(c->step_marker) ||
	    !c->output[0] || strnlen(c->output, sizeof(c->output)) == sizeof(c->output) ||
	    strnlen(c->cupti_lib, sizeof(c->cupti_lib)) == sizeof(c->cupti_lib))
		abort();
}

/* The schedule as text, parsed again, is the same schedule. */
static void check_roundtrip(const struct gprof_schedule *s)
{
	static struct gprof_config again;
	char text[GPROF_SCHEDULE_STR_MAX], entry[GPROF_SCHEDULE_STR_MAX + 32];
	char *env[] = {"GPROF_LOG=error", entry, NULL};
	const struct gprof_schedule *a = &again.schedule;

	if (gprof_config_schedule_str(s, text, sizeof(text)) != 0)
		abort();
	snprintf(entry, sizeof(entry), "GPROF_SCHEDULE=%s", text);
	if (gprof_config_load(&again, env) != 0 || a->all != s->all ||
	    (!s->all &&
	     (a->skip_first != s->skip_first || a->wait != s->wait || a->warmup != s->warmup ||
	      a->active != s->active || a->repeat != s->repeat)))
		abort();
}

/* A memory file holding the first entry, named for GPROF_CONFIG; -1 if none can be made. */
static int config_file(const char *text, char *entry, size_t size)
{
	int fd = memfd_create("gprof-fuzz-config", MFD_CLOEXEC);
	size_t len = strlen(text);

	if (fd < 0 || write(fd, text, len) != (ssize_t)len) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	snprintf(entry, size, "GPROF_CONFIG=/proc/self/fd/%d", fd);
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct gprof_config cfg;
	char *text = malloc(size + 1), *env[MAX_ENTRIES + 3], file_entry[64], *p;
	int n = 0, fd = -1, err;

	if (!text || !size)
		goto out;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	/* First: warnings off (an unknown GPROF_ name in the input would print one per run). */
	env[n++] = "GPROF_LOG=error";
	p = text;
	if (data[0] & 1) {
		fd = config_file(p, file_entry, sizeof(file_entry));
		if (fd >= 0)
			env[n++] = file_entry;
		p += strlen(p) + 1;
	}
	/* Only the memory file may be read: a fuzzed GPROF_CONFIG could name /dev/zero. */
	for (; p < text + size - 1 && n < MAX_ENTRIES; p += strlen(p) + 1)
		if (strncmp(p, "GPROF_CONFIG=", 13) && strncmp(p, "GPROF_LOG=", 10))
			env[n++] = p;
	env[n] = NULL;
	err = gprof_config_load(&cfg, env);
	if (err != 0 && err != -EINVAL)
		abort();
	if (!err && !cfg.disable) {
		check_fields(&cfg);
		check_roundtrip(&cfg.schedule);
	}
out:
	if (fd >= 0)
		close(fd);
	free(text);
	return 0;
}
