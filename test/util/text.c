/* Counting in captured text, and reading a file whole (text.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/task.h"
#include "test/util/text.h"

int text_count(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

int text_lines(const char *text, const char *prefix)
{
	size_t len = strlen(prefix);
	int n = 0;

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		n += !strncmp(p, prefix, len);
	return n;
}

bool text_one_line(const char *text)
{
	const char *nl = strchr(text, '\n');

	return nl && nl[1] == '\0';
}

void text_read_file(const char *path, char **data, size_t *len)
{
	FILE *f = fopen(path, "rb");
	long n;

	ASSERT_MSG(f, "%s", path);
	ASSERT(fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0);
	*data = malloc((size_t)n + 1);
	ASSERT(*data && fread(*data, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	(*data)[n] = '\0';
	*len = (size_t)n;
}
