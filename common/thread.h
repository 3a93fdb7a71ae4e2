/* Threads of libgprof's own: they take no signal, which belong to the application's threads. */
#ifndef GPROF_THREAD_H
#define GPROF_THREAD_H

#include <pthread.h>

/* Starts fn(arg) with every signal blocked; detached when t is NULL. 0 or a negative errno. */
int gprof_thread_start(pthread_t *t, void *(*fn)(void *arg), void *arg);

#endif
