/* Kernel-name demangling with the process's own C++ runtime, when it has one. */
#ifndef GPROF_DEMANGLE_H
#define GPROF_DEMANGLE_H

#include <stddef.h>

/*
 * Writes the demangled form of name into out (size bytes, NUL-terminated, cut if longer) and
 * returns out; a name that is not mangled, or a process without __cxa_demangle, gives the name
 * as it is. Allocates (through __cxa_demangle): call it once per distinct name, off hot paths.
 */
const char *gprof_demangle(const char *name, char *out, size_t size);

#endif
