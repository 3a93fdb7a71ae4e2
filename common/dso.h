/*
 * The shared objects loaded in the process, found by the start of their file name, and symbols
 * in them; none is ever loaded here.
 */
#ifndef GPROF_DSO_H
#define GPROF_DSO_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Calls fn(path, arg) for each loaded object whose file name (after the last '/') starts with
 * prefix, in load order, until fn returns non-zero; returns that, or 0. fn runs inside
 * dl_iterate_phdr, under the loader's lock: it must not load or open objects itself.
 */
int gprof_dso_each(const char *prefix, int (*fn)(const char *path, void *arg), void *arg);
/* The path of the first such object into out (cut to size): true, or false when none is. */
bool gprof_dso_find(const char *prefix, char *out, size_t size);
/*
 * The address of symbol in the object named name (a soname or a path) when the process has
 * loaded it, found in it or its dependencies; else NULL. The object is not held open: the
 * process holds it (preload/resolve.c keeps its handle, for hooks that outlive a dlclose).
 */
void *gprof_dso_sym(const char *name, const char *symbol);

#endif
