/* The state every hook reads first, and the calling thread's id (preload.h). */
#include <sys/syscall.h>
#include <unistd.h>

#include "common/clock.h"
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
