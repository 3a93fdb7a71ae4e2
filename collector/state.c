/*
 * The collector's shared state (internal.h, struct gprof_coll): its lock, the state machine
 * that cupti.c drives and the collector thread reads, the configuration and the window slots.
 * Only cupti.c's entry points (and tests) name it; every other function is passed it.
 */
#include "collector/internal.h"

struct gprof_coll gprof_coll = {.lock = PTHREAD_MUTEX_INITIALIZER, .contexts = -1};
unsigned gprof_coll_covers;

enum gprof_coll_state gprof_coll_state(const struct gprof_coll *c)
{
	return (enum gprof_coll_state)__atomic_load_n(&c->state, __ATOMIC_ACQUIRE);
}
