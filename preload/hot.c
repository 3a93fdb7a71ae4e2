/* The state every hook reads first, the calling thread's id and the clock (preload.h). */
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "preload/preload.h"

int gprof_hot;

static GPROF_TLS int cached_tid;

int gprof_tid(void)
{
	if (unlikely(!cached_tid))
		cached_tid = (int)syscall(SYS_gettid);
	return cached_tid;
}

void gprof_tid_forget(void)
{
	cached_tid = 0;
}

uint64_t gprof_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
