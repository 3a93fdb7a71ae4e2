/*
 * The state every hook reads first, the calling thread's id and the CPU operator it is in
 * (preload.h).
 */
#include <sys/syscall.h>
#include <unistd.h>

#include "common/clock.h"
#include "preload/preload.h"

int gprof_hot;

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
