/*
 * The state every hook reads first, the calling thread's id and the CPU operator it is in
 * (preload.h).
 */
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

/* Written by nccl.c around a collective's real call, read by the hooks' events inside it. */
static GPROF_TLS uint32_t current_op;

uint32_t gprof_current_op(void)
{
	return current_op;
}

void gprof_set_current_op(uint32_t external)
{
	current_op = external;
}
