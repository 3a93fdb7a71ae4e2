/*
 * Clocks. CLOCK_REALTIME in ns is CUPTI's default clock, so every event's time is read with
 * gprof_realtime_ns(); timed waits take a deadline on the clock their condition uses.
 */
#ifndef GPROF_CLOCK_H
#define GPROF_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t gprof_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t gprof_realtime_ns(void)
{
	return gprof_clock_ns(CLOCK_REALTIME);
}

/* ns from now on clock, as pthread_cond_timedwait() and pthread_timedjoin_np() take it. */
static inline struct timespec gprof_clock_deadline(clockid_t clock, uint64_t ns)
{
	uint64_t t = gprof_clock_ns(clock) + ns;

	return (struct timespec){.tv_sec = (time_t)(t / 1000000000ull),
				 .tv_nsec = (long)(t % 1000000000ull)};
}

#endif
