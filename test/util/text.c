/* Counting in captured text (text.h). */
#include <string.h>

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
