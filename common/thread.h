/* Threads of libgprof's own: they take no signal, which belong to the application's threads. */
#ifndef GPROF_THREAD_H
#define GPROF_THREAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * Starts fn(arg) with every signal blocked; detached when t is NULL. 0 or a negative errno.
 * A thread started by one with a descriptor table of its own shares that table (and knows it).
 */
int gprof_thread_start(pthread_t *t, void *(*fn)(void *arg), void *arg);

/*
 * Gives the calling thread a descriptor table of its own, apart from the program's: what it
 * opens then is out of the program's reach (a closefrom() or dup2() of the program's cannot
 * close or replace it). The program's descriptors copied into the new table are let go at
 * once (a pipe's reader waits for its last writer), and 0-2 there are /dev/null: the thread's
 * stderr is reached as gprof_thread_fds_ready() set up before the thread was started, from the
 * program's table (log.h's relay); ready is what it returned. 0, or a negative errno (ready's,
 * when not 0) and the table stays the program's.
 */
int gprof_thread_own_fds(int ready);
/*
 * In the thread that starts one that will call gprof_thread_own_fds(): reach_stderr(), or
 * -ENOTSUP where a thread may not have a table of its own. Called there, not in the new
 * thread, so that the new thread starts no thread itself: a thread's start allocates in its
 * starter's malloc arena, and a thread that never mallocs takes none (64 MiB of address space).
 */
int gprof_thread_fds_ready(int (*reach_stderr)(void));

/* Whether the calling thread's descriptor table is not the program's. */
bool gprof_thread_has_own_fds(void);

/*
 * Bytes the process may still map under `ulimit -v` (RLIMIT_AS): what thread stacks and the
 * event buffer take from the program. SIZE_MAX without a limit (or when it can't be known).
 */
size_t gprof_address_space_left(void);

/*
 * strerror(-err), with what `ulimit -v` leaves when there is a limit: the cause of a thread or
 * a reservation that failed. Returns buf.
 */
const char *gprof_space_error(int err, char *buf, size_t size);
#define GPROF_SPACE_ERROR_MAX 160

#endif
