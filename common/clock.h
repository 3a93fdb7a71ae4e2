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

/* A time in ns on some clock as pthread_cond_timedwait() and pthread_timedjoin_np() take it. */
static inline struct timespec gprof_clock_timespec(uint64_t ns)
{
	return (struct timespec){.tv_sec = (time_t)(ns / 1000000000ull),
				 .tv_nsec = (long)(ns % 1000000000ull)};
}

/* ns from now on clock, as a deadline for those waits. */
static inline struct timespec gprof_clock_deadline(clockid_t clock, uint64_t ns)
{
	return gprof_clock_timespec(gprof_clock_ns(clock) + ns);
}

#endif
