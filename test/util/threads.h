/* Threads for a test that runs the same function on several threads at once. */
#ifndef GPROF_TEST_THREADS_H
#define GPROF_TEST_THREADS_H

#include <stddef.h>

/*
 * Runs fn on n threads (at most 64) at once, thread i on the i-th of the n elements of `size`
 * bytes at args; returns when all have. A thread that cannot start fails the test.
 */
void threads_run(void *(*fn)(void *), void *args, size_t size, unsigned n);

#endif
