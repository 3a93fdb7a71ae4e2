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
 * stderr is reached as reach_stderr sets up first, from the program's table (log.h's relay).
 * 0, or a negative errno and the table stays the program's.
 */
int gprof_thread_own_fds(int (*reach_stderr)(void));

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
