/* Threads for a test (threads.h). */
#include <pthread.h>

#include "test/task.h"
#include "test/util/threads.h"

void threads_run(void *(*fn)(void *), void *args, size_t size, unsigned n)
{
	pthread_t t[64];

	ASSERT(n <= sizeof(t) / sizeof(t[0]));
	for (unsigned i = 0; i < n; i++)
		ASSERT_EQ(pthread_create(&t[i], NULL, fn, (char *)args + i * size), 0);
	for (unsigned i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}
