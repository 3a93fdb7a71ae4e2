/* Counting in text a test captured: a program's output, a trace's raw text. */
#ifndef GPROF_TEST_TEXT_H
#define GPROF_TEST_TEXT_H

/* How often needle occurs in text (overlapping occurrences too). */
int text_count(const char *text, const char *needle);

/* The lines of text that start with prefix ("": every line; a last one without '\n' counts). */
int text_lines(const char *text, const char *prefix);

#endif
