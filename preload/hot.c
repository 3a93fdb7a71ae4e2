/*
 * The state every hook reads first, the calling thread's id and the CPU operator it is in
 * (preload.h).
 */
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/clock.h"
#include "preload/preload.h"

uint64_t gprof_hot;

void gprof_hot_set_window(uint32_t id)
{
	uint64_t hot = gprof_hot_load(), next;

	do
		next = (hot & ((1ull << GPROF_HOT_WINDOW_SHIFT) - 1)) |
		       (uint64_t)id << GPROF_HOT_WINDOW_SHIFT;
	while (!__atomic_compare_exchange_n(&gprof_hot, &hot, next, true, __ATOMIC_SEQ_CST,
					    __ATOMIC_RELAXED));
}

GPROF_TLS int gprof_cached_tid;
GPROF_TLS uint32_t gprof_current_op_id;

int gprof_tid_fetch(void)
{
	gprof_cached_tid = (int)syscall(SYS_gettid);
	return gprof_cached_tid;
}

void gprof_tid_forget(void)
{
	gprof_cached_tid = 0;
}

void *gprof_thread_state(struct gprof_thread_key *k, size_t size)
{
	void *p = calloc(1, size);

	pthread_mutex_lock(&k->lock);
	if (!k->made && pthread_key_create(&k->key, k->free) == 0)
		__atomic_store_n(&k->made, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&k->lock);
	if (p && k->made && pthread_setspecific(k->key, p)) {
		free(p);
		p = NULL;
	}
	return p;
}

void *gprof_thread_state_of(struct gprof_thread_key *k)
{
	return __atomic_load_n(&k->made, __ATOMIC_ACQUIRE) ? pthread_getspecific(k->key) : NULL;
}
