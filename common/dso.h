/* The shared objects loaded in the process, found by the start of their file name. */
#ifndef GPROF_DSO_H
#define GPROF_DSO_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Calls fn(path, arg) for each loaded object whose file name (after the last '/') starts with
 * prefix, in load order, until fn returns non-zero; returns that, or 0.
 */
int gprof_dso_each(const char *prefix, int (*fn)(const char *path, void *arg), void *arg);
/* The path of the first such object into out (cut to size): true, or false when none is. */
bool gprof_dso_find(const char *prefix, char *out, size_t size);

#endif
