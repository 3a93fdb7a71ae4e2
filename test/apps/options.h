/*
 * A test app's command-line options from a table: "-x N" sets an int to N, a flag "-x" (no
 * argument) sets its int to 1.
 */
#ifndef GPROF_TEST_APPS_OPTIONS_H
#define GPROF_TEST_APPS_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

struct app_option {
	char letter;
	bool flag; /* takes no argument */
	int *value;
};

/* Parses argv by options[0..n), n <= 16: 0, or -1 at an option that is not in the table. */
static inline int app_options(int argc, char **argv, const struct app_option *options, size_t n)
{
	char spec[2 * 16 + 1];
	size_t len = 0, i;
	int opt;

	for (i = 0; i < n && i < 16; i++) {
		spec[len++] = options[i].letter;
		if (!options[i].flag)
			spec[len++] = ':';
	}
	spec[len] = '\0';
	while ((opt = getopt(argc, argv, spec)) != -1) {
		for (i = 0; i < n && options[i].letter != opt; i++)
			;
		if (i == n)
			return -1;
		*options[i].value = options[i].flag ? 1 : atoi(optarg);
	}
	return 0;
}

/* app_options() of a table array. */
#define APP_OPTIONS(argc, argv, table) \
	app_options(argc, argv, table, sizeof(table) / sizeof((table)[0]))

#endif
