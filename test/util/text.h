/* Counting in text a test captured: a program's output, a trace's raw text. */
#ifndef GPROF_TEST_TEXT_H
#define GPROF_TEST_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* How often needle occurs in text (overlapping occurrences too). */
int text_count(const char *text, const char *needle);

/* The lines of text that start with prefix ("": every line; a last one without '\n' counts). */
int text_lines(const char *text, const char *prefix);

/* Whether text is exactly one line: not empty, and its only '\n' is its last byte. */
bool text_one_line(const char *text);

/* The whole file at path, malloc'd with a NUL after its *len bytes; fails the test if unread. */
void text_read_file(const char *path, char **data, size_t *len);

#endif
