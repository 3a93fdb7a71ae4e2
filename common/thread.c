/* The thread starter of thread.h. */
#include <signal.h>

#include "common/thread.h"

int gprof_thread_start(pthread_t *t, void *(*fn)(void *arg), void *arg)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t tmp;
	int rc;

	pthread_attr_init(&attr);
	if (!t)
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* The new thread inherits the mask: blocked from its first instruction. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(t ? t : &tmp, &attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return -rc;
}
