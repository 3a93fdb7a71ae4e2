/*
 * Memory of libgprof's own for what its trace writer touches (export/ and the containers it
 * uses), apart from the program's malloc. glibc gives each thread that first calls malloc, or
 * frees a chunk of it, a malloc arena of its own: 64 MiB of address space, which under
 * `ulimit -v` the program may need later for a thread's stack. The writer and its compressors
 * then take none. Small blocks come from 256 KiB runs mapped as needed, in size classes a
 * quarter of a power of two apart, and go back to their class's list when freed; a block over
 * 32 KiB is a mapping of its own. Thread-safe; fork()'s child may go on using it. Under
 * AddressSanitizer these are the program's malloc and free, which it checks.
 *
 * Memory from here goes back here: never to free(), nor from malloc() to gprof_free().
 */
#ifndef GPROF_HEAP_H
#define GPROF_HEAP_H

#include <stddef.h>

/*
 * Makes the heap safe across fork(): its lock is the last one taken before a fork and the
 * first let go after it, in both processes. Call it before libgprof's other pthread_atfork
 * handlers are registered, whose locks are held while the heap's is taken (gprof_export_init
 * does); later calls do nothing.
 */
void gprof_heap_init(void);

void *gprof_malloc(size_t n);
void *gprof_calloc(size_t n, size_t size);
/* As realloc(): a NULL p allocates; on failure p stays as it was. n == 0 frees p. */
void *gprof_realloc(void *p, size_t n);
void gprof_free(void *p);
char *gprof_strdup(const char *s);

/*
 * qsort() without its scratch memory (glibc's takes it from malloc for more than 1 KiB):
 * a stable merge sort whose scratch comes from here; an insertion sort where none is left.
 */
void gprof_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

#endif
